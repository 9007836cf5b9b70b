// The symbol reader over arbitrary bytes: objects of every format, archives,
// and (through read_artifact) linked images. Contract under test
// (hotlink/symbols.h): never crash or abort; return an Error that names
// the input instead.
#include "hotlink/symbols.h"

#include <cstdio>
#include <cstdlib>

namespace {
void check_error_names_input(const hotlink::Error &e, const char *what) {
  if (e.input != "fuzz.o") {
    std::fprintf(stderr, "%s: error does not name the input: %s\n", what, e.to_string().c_str());
    std::abort();
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  for (bool branch_info : {false, true}) {
    auto info = hotlink::exports::read_object(data, size, "fuzz.o", branch_info);
    if (!info)
      check_error_names_input(info.error(), "read_object");
  }
  auto art = hotlink::exports::read_artifact(data, size, "fuzz.o");
  if (!art)
    check_error_names_input(art.error(), "read_artifact");
  return 0;
}
