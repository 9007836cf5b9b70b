// bench/startup_bench's C++ process: a HotModule reload of a verified
// shared object from bytes read from the file, and a call through its
// entry; exits 0 when the kernel returned 41.
//   startup_reload ARTIFACT
#include "hotlink/hot_module.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2)
    return std::fprintf(stderr, "usage: startup_reload ARTIFACT\n"), 2;
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  hotlink::loader::HotModule module;
  auto f = module.entry<int(int)>("f");
  if (!f)
    return std::fprintf(stderr, "%s\n", f.error().to_string().c_str()), 1;
  if (auto err = module.reload(bytes, "k.so"))
    return std::fprintf(stderr, "%s\n", err->to_string().c_str()), 1;
  return (*f)(20) == 41 ? 0 : 1;
}
