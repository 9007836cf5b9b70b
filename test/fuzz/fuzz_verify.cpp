// The static verifier over arbitrary bytes: hotlink::verify (format, arch,
// exports, hash, imports; it never maps what it reads), the Mach-O
// structural checks, and the signed-statement parser that reads what a
// remote cache serves. None may crash; every refusal names the artifact.
#include "hotlink/load.h"
#include "hotlink/signature.h"
#include "verify/structure.h"

#include <cstdio>
#include <cstdlib>

namespace {
void named(const hotlink::Error &e, const char *name, const char *what) {
  if (e.input != name) {
    std::fprintf(stderr, "%s: error does not name '%s': %s\n", what, name, e.to_string().c_str());
    std::abort();
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  hotlink::VerifyOptions options;
  options.expected_exports = {"f", "f_argv"};
  options.blake3 = hotlink::loader::blake3_hex(bytes); // passes: the parse is what is fuzzed
  auto v = hotlink::verify(bytes, "fuzz.so", options);
  if (!v)
    named(v.error(), "fuzz.so", "verify");
  auto m = hotlink::check_macho_dylib(bytes, "fuzz.dylib");
  if (!m)
    named(m.error(), "fuzz.dylib", "check_macho_dylib");
  std::string text(reinterpret_cast<const char *>(data), size);
  auto s = hotlink::signature::parse_statement(text, "fuzz.sig");
  if (!s)
    named(s.error(), "fuzz.sig", "parse_statement");
  return 0;
}
