// Internal. What an ELF link's inputs ask of the runtime environment
// beyond the C library, decided as the compiler drivers decide it, and
// what they leave undefined that a library in the search path defines.
//
// - The C++ runtime (clang++), the OpenMP runtime (clang's -fopenmp=LIB),
//   gfortran's libgfortran with libm (its libgfortran.spec), from the
//   names the inputs call (runtime.h's SymbolScan);
// - the libraries the drivers add implicitly: libm whenever a name the
//   link leaves undefined is libm's (clang++ and gfortran always add it;
//   a C kernel calling exp then binds exp@GLIBC_2.29 as `-lm` gives),
//   libquadmath when gfortran code calls it;
// - every other undefined name that a library of the search path defines
//   (the environment's directories, the sysroot's, -L) and the link does
//   not include: a warning naming the symbol, the library and -l NAME.
// The environment computed for the final selection is returned with it.
#pragma once

#include "linker/platforms/elf/library_index.h"
#include "linker/platforms/elf/runtime.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hotlink::detail {

struct RuntimeNeeds {
  std::shared_ptr<const RuntimeEnvironment> env; // has_libc false: none was found
  std::vector<std::string> added;                // LinkResult::runtime_added
  std::vector<Diagnostic> warnings;              // undefined names with a home
  std::map<std::string, LibraryHome, std::less<>> homes; // of those names, for the hint of a failed link
};

Expected<RuntimeNeeds> runtime_needs(const PlanContext &ctx, const SymbolScan &scan);

} // namespace hotlink::detail
