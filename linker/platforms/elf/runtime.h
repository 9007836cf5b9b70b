// Internal. The runtime environment of an ELF link: what a compiler driver
// adds to `-shared` for a target (startup objects, library directories,
// -lc with its symbol versions, libgcc / libgcc_s, the C++ runtime,
// --eh-frame-hdr, --build-id, --hash-style=gnu). hotlink does not know any
// platform's link line itself: clang's driver (libclang-cpp) computes it,
// exactly as `clang -shared -fuse-ld=lld --target=T [--sysroot=S]` would.
//
// Contract:
// - runtime_environment() computes an environment once per (target,
//   sysroot, C++ runtime) and process, and hands back the same one after
//   that: a warm link never asks the driver or probes the file system
//   again (a C library upgraded under a running process is seen by the
//   next process; the fingerprints in the cache key say which files it
//   used).
// - An environment without a C library (a cross target with no toolchain
//   installed and no --sysroot) says so (has_libc false, `missing` says
//   what was looked for); the planner then links bare and warns.
// - runtime_link() gives the arguments of one link. lld's cost grows with
//   every symbol of every library it reads (libc.so.6 alone has ~3,000:
//   ~1 ms), so by default the shared libraries reach lld as interface
//   stubs that hold only the symbols this link's objects name, with their
//   versions, types and sonames; archives nothing can reference are left
//   out. lld resolves against them as against the real files (the tests
//   check the artifacts are byte-identical); `exact` passes the real line.
#pragma once

#include "hotlink/error.h"
#include "hotlink/symbols.h"
#include "linker/job.h"
#include "linker/platforms/platform.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace hotlink::detail {

enum class CxxLibrary { None, Libstdcxx, Libcxx };
const char *to_string(CxxLibrary c); // "none", "libstdc++", "libc++"
enum class OpenMpLibrary { None, Libomp, Libgomp };
const char *to_string(OpenMpLibrary o); // "none", "libomp", "libgomp"

// The runtimes a compiler driver adds for what the inputs are: the C++
// runtime (clang++), the OpenMP runtime (-fopenmp=libomp / libgomp),
// gfortran's libgfortran (with libm, as its libgfortran.spec has it) and
// libquadmath, and libm.
struct RuntimeSelection {
  CxxLibrary cxx = CxxLibrary::None;
  OpenMpLibrary openmp = OpenMpLibrary::None;
  bool fortran = false, quadmath = false, libm = false;
  auto tie() const { return std::tie(cxx, openmp, fortran, quadmath, libm); }
  bool operator<(const RuntimeSelection &o) const { return tie() < o.tie(); }
  bool operator==(const RuntimeSelection &o) const { return tie() == o.tie(); }
};

// The link line `clang -shared -fuse-ld=lld --target=T [--sysroot=S]`
// (--driver-mode=g++ with a C++ library, -fopenmp=LIB, and -lgfortran,
// -lquadmath, -lm after the inputs) runs, from clang's driver as a
// library: the linker's arguments without argv[0], -o and its value, and
// with the inputs' place marked.
struct DriverLine {
  std::vector<std::string> args;
  std::size_t input_position = 0;
};
Expected<DriverLine> driver_link_line(const TargetInfo &target, const std::string &sysroot,
                                      const RuntimeSelection &selection);

// One dynamic symbol definition of a shared library, as a stub repeats it.
struct StubSymbol {
  std::uint8_t info = 0, other = 0;
  std::uint16_t versym = 1; // with VERSYM_HIDDEN for name@VER (non-default)
  std::uint64_t value = 0, size = 0;
};

// What a stub needs of one shared library: its identity and its dynamic
// symbols, looked up by name through the library's own GNU hash table as
// the dynamic loader does (libc.so.6 has ~3,000 definitions and a link asks
// about a few: indexing them all was 2.6 of the 3.5 million instructions
// of planning a process's first link).
// The tables are copied out of the file, which is not kept open or mapped.
class SharedLibrary {
public:
  std::string path;   // the real file
  std::string soname; // DT_SONAME (the file name without one)
  unsigned char ident[16] = {};
  std::uint16_t machine = 0;
  std::uint32_t flags = 0;
  struct Version {
    std::uint16_t ndx = 0, flags = 0;
    std::uint32_t hash = 0;
    std::string name;
  };
  std::vector<Version> versions; // its version definitions, in file order
  llvm::StringSet<> undefined;   // unversioned references of its own

  // Its definitions of `name`, every version, in symbol-table order.
  std::vector<StubSymbol> definitions(llvm::StringRef name) const;
  bool defines(llvm::StringRef name) const;
  // Every name it defines (once per version), in symbol-table order.
  void each_defined(const std::function<void(llvm::StringRef)> &each) const;

private:
  friend Expected<SharedLibrary> read_shared_library(const std::string &path);
  struct Sym {
    std::uint32_t name;
    std::uint8_t info, other;
    std::uint16_t shndx;
    std::uint64_t value, size;
  };
  bool is_named_global(std::uint32_t i) const;
  bool is_definition(std::uint32_t i) const;
  llvm::StringRef name_of(std::uint32_t i) const;
  template <class Each> void find(llvm::StringRef name, Each each) const;
  // Reads the DT_GNU_HASH table (ignored unless whole).
  void read_gnu_hash(llvm::ArrayRef<std::uint8_t> table);
  // Indexes the definitions the hash table does not reach, and collects
  // the library's own references.
  void index_the_rest();

  std::vector<Sym> syms_;           // .dynsym
  std::vector<std::uint16_t> versyms_;
  std::string strtab_;              // .dynstr
  std::uint32_t first_global_ = 0;  // .dynsym's sh_info
  // The GNU hash table: symbols from symoffset_ on are found through it;
  // the definitions before (none in a library a linker wrote with one, all
  // in one without) by by_name_.
  std::vector<std::uint32_t> buckets_, chains_;
  std::uint32_t symoffset_ = 0;
  llvm::StringMap<std::vector<std::uint32_t>> by_name_;
};

// What the closure over archives needs of one archive: every name its
// members define and reference.
struct ArchiveSymbols {
  std::string path;
  llvm::StringSet<> defined; // from the archive's symbol table
  // Every name its members define or reference: read on first use (an
  // archive such as libgcc.a has hundreds of members, and most links
  // never include it).
  const std::vector<std::string> &names() const;
  struct Lazy {
    std::once_flag once;
    std::vector<std::string> names;
  };
  std::shared_ptr<Lazy> lazy = std::make_shared<Lazy>();
  // Names the environment's shared libraries reference that it defines.
  std::vector<std::string> shared_references;
};

struct RuntimeItem {
  enum class Kind { Flag, Object, Archive, Shared };
  Kind kind = Kind::Flag;
  std::string text; // the flag, or the file's path
  bool as_needed = false;
  int index = -1; // Archive: into archives; Shared: into shared
};

struct RuntimeEnvironment {
  std::string triple;
  std::string sysroot;
  RuntimeSelection selection;
  bool has_libc = false;
  std::string missing; // without a C library: what was looked for, where
  // The driver's link line, minus -o and its placeholder input; the
  // inputs go at `input_position`.
  std::vector<std::string> line;
  std::size_t input_position = 0;
  // The same line with every -l resolved to files and every linker script
  // (libc.so, libgcc_s.so, ...) expanded, when that was possible; stubs
  // stand in for its shared libraries.
  bool expanded = false;
  std::string not_expanded; // why not
  // -l NAMEs of the line that no library directory holds for the target
  // (e.g. -lomp for a cross target without its OpenMP runtime).
  std::vector<std::string> not_found;
  // The line's library directories (-L), in order, as lld searches them.
  std::vector<std::string> search_dirs;
  std::vector<RuntimeItem> before, after;
  // Deques: a StringMap's move is not noexcept, so a vector would copy
  // every library's tables each time it grew.
  std::deque<SharedLibrary> shared;
  std::deque<ArchiveSymbols> archives;
  std::vector<std::string> startup_names; // of the startup objects
  // "path size mtime" of every file the line resolves to: in the cache key.
  std::vector<std::string> fingerprints;
  // File names of the libraries and objects it adds, for LinkResult.
  std::vector<std::string> summary;
  double build_ms = 0; // what computing it took (driver + indexing)
  // runtime_link()'s answers by the set of names they were asked for (a
  // JIT links kernels that name the same functions again and again).
  mutable std::mutex memo_mutex;
  mutable std::unordered_map<std::string, std::shared_ptr<const struct RuntimeLink>> memo;
};

Expected<std::shared_ptr<const RuntimeEnvironment>>
runtime_environment(const TargetInfo &target, const std::string &sysroot, const RuntimeSelection &selection);

// Whether one of the environment's libraries defines `name` (versions
// stripped): what the link resolves without the inputs' help.
bool environment_defines(const RuntimeEnvironment &env, std::string_view name);

// The ELF machine (EM_*) of a target.
std::uint16_t elf_machine(const TargetInfo &target);

// Calls `each` with every name a library file defines as lld would read it
// for -l: a shared object's dynamic definitions (a linker script's members
// followed, as libc.so and libm.so are), or an archive's symbol table.
// false when it is not for `machine` or cannot be read.
bool library_definitions(const std::string &path, const std::string &sysroot, std::uint16_t machine,
                         const std::function<void(llvm::StringRef)> &each);

// The environment's part of one link.
struct RuntimeLink {
  std::vector<Arg> before, after;
  std::vector<JobFile> files; // the stubs
  std::vector<std::pair<std::string, std::string>> display_names;
  std::vector<std::string> used; // file names of what reached lld
  // Objects or archives reach lld besides the inputs and the stubs (the
  // startup objects, libgcc.a, libc_nonshared.a, or the line as it is):
  // their symbols can be exported too.
  bool adds_objects = false;
};

struct RuntimeChoice {
  bool exact = false;           // the driver's line as it is: real files, every startup object
  bool startup_objects = false; // the link needs the startup objects (or asked for them)
};

// `names` holds every symbol name the link's own objects reference (C++
// names mangled, versions stripped). The startup objects are linked when
// `choice.startup_objects` or when anything the link includes references
// __dso_handle. Memoized per environment, choice and set of names; the
// answer's stubs stay valid as long as it is held.
std::shared_ptr<const RuntimeLink> runtime_link(const RuntimeEnvironment &env,
                                                const std::unordered_set<std::string_view> &names,
                                                RuntimeChoice choice);

// An ELF shared object that lld reads as `lib` holding only the symbols in
// `names` (definitions with every version, and the library's own
// undefined references among them).
std::vector<std::uint8_t> write_stub(const SharedLibrary &lib,
                                     const std::vector<std::string_view> &sorted_names);

// Reads what a stub needs of a shared library. Errors name the file.
Expected<SharedLibrary> read_shared_library(const std::string &path);

// "path size mtime" of a file the runtime resolved, for the cache key;
// empty when it cannot be read.
std::string file_fingerprint(const std::string &path);

// Whether a symbol name is one the C++ runtime provides or that C++ code
// reaches it through (operator new/delete, __cxa_*, personality, std::).
bool is_cxx_runtime_symbol(std::string_view name);

// One pass over the inputs' symbols for what a runtime environment needs:
// every undefined name, versions stripped (what the stubs must hold),
// whether one looks like the C++ runtime's, and whether an input defines
// a .symver'ed name. Shared by the platforms whose runtime clang's driver
// computes (ELF, mingw).
struct SymbolScan {
  std::unordered_set<std::string_view> undefined;
  bool cxx_reference = false, versioned_definition = false;
  // A name each runtime defines, when an input references one: clang's
  // OpenMP entry points (__kmpc_*), GCC's (GOMP_*), the OpenMP API
  // (omp_*), gfortran's runtime (_gfortran_*).
  std::string_view kmpc, gomp, omp_api, gfortran;
};
SymbolScan scan_symbols(const PlanContext &ctx);

// The C++ runtime a link gets: the request's choice, or with Auto
// libstdc++ when an input references the C++ runtime and none defines it.
CxxLibrary cxx_library(const PlanContext &ctx, const SymbolScan &scan);

// "name@VER" -> "name".
std::string_view base_name(std::string_view symbol);

} // namespace hotlink::detail
