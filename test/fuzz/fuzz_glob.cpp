// Differential: hotlink's glob matcher (base/glob.h) against LLVM's
// GlobPattern, which lld uses for version-script patterns. The input is a
// pattern, a NUL, and names separated by NULs. Both must agree on whether
// the pattern is valid and, when it is, on every name.
#include "base/glob.h"

#include "llvm/Support/GlobPattern.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char *>(data), size);
  std::size_t nul = in.find('\0');
  std::string_view pattern = in.substr(0, nul);
  auto ours = hotlink::base::Glob::compile(pattern);
  auto theirs = llvm::GlobPattern::create(llvm::StringRef(pattern.data(), pattern.size()));
  if (ours.ok() != bool(theirs)) {
    std::fprintf(stderr, "fuzz_glob: '%.*s' is %s here and %s for LLVM\n", int(pattern.size()), pattern.data(),
                 ours.ok() ? "valid" : "invalid", theirs ? "valid" : "invalid");
    std::abort();
  }
  if (!theirs) {
    llvm::consumeError(theirs.takeError());
    return 0;
  }
  std::string_view names = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  for (;;) {
    std::size_t end = names.find('\0');
    std::string_view name = names.substr(0, end);
    if (ours->match(name) != theirs->match(llvm::StringRef(name.data(), name.size()))) {
      std::fprintf(stderr, "fuzz_glob: '%.*s' against '%.*s': %d here, %d for LLVM\n", int(pattern.size()),
                   pattern.data(), int(name.size()), name.data(), ours->match(name), !ours->match(name));
      std::abort();
    }
    if (end == std::string_view::npos)
      break;
    names.remove_prefix(end + 1);
  }
  return 0;
}
