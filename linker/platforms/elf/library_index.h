// Internal. Which library of a link's search path defines a symbol: what
// tells the libraries a compiler driver adds implicitly (libm, gfortran's
// libquadmath) and names the home of a symbol a link leaves undefined
// ("crc32 is defined by libz.so: add -l z").
//
// Contract:
// - Each directory is listed once per process (per sysroot and machine):
//   the libraries lld would take there for -l NAME (lib*.so, linker
//   scripts followed, before lib*.a; files for another machine skipped;
//   sanitizer runtimes, which intercept libc's functions, left out). A
//   shared library answers through its own GNU hash table, opened on first
//   use and kept mapped; archives are searched in the user's -L
//   directories only (the toolchain's hold LLVM's static libraries). A
//   library installed under a running process is seen by the next one, as
//   the runtime environment is.
// - A warm link pays one hash lookup per library and name it leaves
//   undefined (~200 libraries in Debian's directories with LLVM and GCC
//   installed), and nothing when it leaves none.
// - home() answers as lld's search does: the first directory, in the
//   order given, with a library that defines the name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hotlink::detail {

struct LibraryHome {
  std::string name; // as -l takes it: "z" for libz.so
  std::string path; // the file lld would read
};

class DirectoryIndex;

class LibrarySearch {
public:
  // `dirs` in lld's search order ("=" and "$SYSROOT" prefixes resolved
  // against `sysroot`), the first `user_dirs` of them the user's -L;
  // `machine` an EM_* value.
  LibrarySearch(const std::vector<std::string> &dirs, std::size_t user_dirs, const std::string &sysroot,
                std::uint16_t machine);
  // The library that defines `symbol` (no version suffix), or null.
  const LibraryHome *home(std::string_view symbol) const;

private:
  std::vector<std::shared_ptr<const DirectoryIndex>> dirs_;
};

} // namespace hotlink::detail
