// The .def reader over arbitrary text. Never crash; an error names the
// input and a line that exists. And what hotlink writes back from a parsed
// file (write_def) must parse to the same exports, or the writer must have
// refused the name.
#include "exports/writers.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

using namespace hotlink::exports;

namespace {
[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "fuzz_def: %s\n", what.c_str());
  std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size < 1)
    return 0;
  const Arch arches[] = {Arch::X86_64, Arch::X86, Arch::AArch64};
  Arch arch = arches[data[0] % 3];
  std::string text(reinterpret_cast<const char *>(data + 1), size - 1);
  auto def = parse_def(text, arch, "fuzz.def");
  if (!def) {
    if (def.error().input != "fuzz.def")
      fail("error does not name the input: " + def.error().to_string());
    std::size_t line = def_error_line(text, arch);
    std::size_t lines = std::count(text.begin(), text.end(), '\n') + 1;
    if (line == 0 || line > lines)
      fail("error line " + std::to_string(line) + " of " + std::to_string(lines));
    return 0;
  }
  std::vector<Export> exports;
  for (const DefExport &e : def->exports)
    exports.push_back(Export{e.name, e.name, e.data});
  auto written = write_def(exports, "fuzz.dll");
  if (!written)
    return 0; // refused a name: allowed
  auto again = parse_def(written.value(), arch, "written.def");
  if (!again)
    fail("write_def wrote what parse_def refuses:\n" + written.value());
  if (again->exports.size() != exports.size())
    fail("round trip changed the number of exports:\n" + written.value());
  for (std::size_t i = 0; i < exports.size(); ++i)
    if (again->exports[i].name != exports[i].name || again->exports[i].data != exports[i].data)
      fail("round trip changed '" + exports[i].name + "' into '" + again->exports[i].name +
           "':\n" + written.value());
  return 0;
}
