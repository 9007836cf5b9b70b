// The link request and its result: JIT objects in, a platform shared object
// out (ELF .so, PE .dll, Mach-O .dylib, wasm module), linked by lld.
//
// Contract:
// - A request is plain data; building one never touches the disk.
// - In-memory inputs are never required to exist as files: any temporary
//   storage is hotlink's (on tmpfs when available) and is removed after the
//   link, whether it succeeded or failed.
// - An output path is written atomically: the artifact appears complete
//   under its final name or not at all. With no output path the artifact is
//   returned as bytes.
// - lld's diagnostics are captured into LinkResult::diagnostics; nothing is
//   written to the host's stdout or stderr, and lld never exits the host.
// Links are run by a LinkService (service.h).
#pragma once

#include "hotlink/error.h"
#include "hotlink/export_policy.h"
#include "hotlink/symbols.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotlink {

using exports::ExportPolicy;

// One object file or archive, from a path or from memory; for ELF, a
// shared library too, from a path (linked against where it stands, as
// ld.lld takes one: DT_NEEDED on its soname, or on the path as given).
struct HOTLINK_API Input {
  std::string name;            // shown in diagnostics; the path for files
  std::string path;            // empty for in-memory inputs
  std::vector<std::uint8_t> bytes;

  static Input file(std::string path);
  static Input memory(std::string name, std::vector<std::uint8_t> bytes);
  static Input memory(std::string name, const void *data, std::size_t size);
  bool in_memory() const { return path.empty(); }
};

// Where the link runs. Auto: in-process when lld is free and usable, else an
// idle out-of-process worker; always a worker once in-process lld became
// unusable (or when the request carries -mllvm options, whose parse errors
// exit the process).
enum class Execution { Auto, InProcess, Isolated };

// What to do with symbols nothing defines. TargetDefault: allowed for ELF
// (resolved at load time) and Mach-O (-undefined dynamic_lookup), an error
// for COFF (a DLL must resolve everything) and wasm.
enum class Undefined { TargetDefault, Error, Allow };

// COFF with a sysroot: which C runtime's import library resolves CRT calls.
// Auto is the UCRT (ucrtbase.dll; what MSVC has targeted since 2015, and
// what /DEFAULTLIB:msvcrt means in MSVC objects); Msvcrt is the legacy
// msvcrt.dll that mingw-w64 toolchains built for it target.
enum class WindowsCrt { Auto, Ucrt, Msvcrt };

// ELF: the runtime environment a link gets. Auto: what `clang -shared`
// links for the target (startup objects, libc with its symbol versions,
// libgcc and libgcc_s, --eh-frame-hdr, --build-id; the C++ runtime when
// the inputs use it), computed by clang's driver, whenever a C library for
// the target is found (the host's, an installed cross toolchain, or the
// sysroot); without one, a bare link and a warning. None: a bare link, the
// inputs alone (for self-contained kernels).
enum class Runtime { Auto, None };

// ELF: the C++ runtime. Auto: libstdc++ when the inputs reference the C++
// runtime (operator new/delete, __cxa_*, the personality routine, std::
// symbols), else none.
enum class CxxRuntime { Auto, Libstdcxx, Libcxx, None };

// ELF: the OpenMP runtime, added through clang's driver (-fopenmp=LIB).
// Auto: libomp when an input calls clang's entry points (__kmpc_*; libomp
// also implements GCC's GOMP_*, so a link mixing clang- and GCC-built
// OpenMP objects gets libomp too), libgomp when the inputs call only
// GCC's (GOMP_*), and for calls to the OpenMP API alone (omp_*) libomp
// where it is installed, else libgomp; none when nothing calls OpenMP.
// None: no OpenMP runtime (the loading process provides one).
enum class OpenMpRuntime { Auto, Libomp, Libgomp, None };

// ELF with the runtime environment: when the startup objects (crti.o,
// crtbeginS.o, crtendS.o, crtn.o) are linked. Needed: when the link uses
// what they provide: __dso_handle (atexit, pthread_atfork, C++ static and
// thread_local destructors: crtbeginS.o runs __cxa_finalize for them at
// unload), .init/.fini/.ctors/.dtors/.tm_clone_table sections, profiling
// (mcount, __gmon_start__), or bitcode (whose sections are not known
// before LTO); otherwise they would run nothing, and lld spends ~20% of a
// small link on them. Always: every link, as `clang -shared`.
enum class StartupObjects { Needed, Always };

// Options only ELF links read (-linux-gnu targets).
struct HOTLINK_API ElfOptions {
  std::string soname; // DT_SONAME; empty = the output's file name
  // A version script of the user's (e.g. a library's version nodes),
  // merged with the export policy: the names its nodes list are exported
  // with their versions, the policy's other exports unversioned, and
  // everything else stays local.
  std::string version_script;
  // References to the artifact's own non-weak functions bind inside it
  // (-Bsymbolic-non-weak). Distribution static libraries are built as PIE,
  // whose code reaches its own functions PC-relative; without this such
  // code cannot go into a shared object. Exported variables and weak
  // definitions (C++ inline functions, typeinfo) stay preemptible, so a
  // host's copy relocation and the library see one variable; a variable
  // that PIE code reaches PC-relative is bound inside, with a warning
  // naming it. false: every exported symbol is preemptible, as with a
  // plain `clang -shared`.
  bool symbolic = true;
  // With the runtime environment, shared libraries reach lld as stubs
  // holding only the symbols the link names (a fraction of lld's time;
  // the startup objects only when needed, see StartupObjects); false
  // passes the driver's line as it is (the real files, and every startup
  // object).
  bool runtime_stubs = true;
  StartupObjects startup_objects = StartupObjects::Needed;
};

// Options only COFF links read (-windows-msvc; the .def, import library
// and PDB also for -w64-mingw32).
struct HOTLINK_API CoffOptions {
  std::string def_input;     // a user .def merged into the exports
  std::string def_output;    // also write the .def here
  std::string implib_output; // also write the import library here
  bool want_implib = false;  // return it in LinkResult::implib
  // A PDB of the DLL's debug info, written beside it (atomically, like the
  // .def and .lib); the DLL's CodeView record names its file name
  // (-pdbaltpath), and the PDB's GUID follows from the content, so a
  // debugger never pairs a DLL with another version's PDB. With `debug`
  // and an output path, it defaults to OUTPUT with the extension .pdb;
  // without an output path it is returned in LinkResult::pdb.
  std::string pdb_output;
  bool debug = false; // link the inputs' CodeView debug info into a PDB
  // -windows-msvc with a sysroot: which C runtime's import library resolves
  // CRT calls.
  WindowsCrt windows_crt = WindowsCrt::Auto;
  // -windows-msvc: link a console executable starting at `entry` instead
  // of a DLL (e.g. a small host program that loads JIT DLLs).
  bool executable = false;
  std::string entry;
  bool support_objects = true; // generate _fltused/__chkstk without a CRT
};

// GPU device code objects: where the device libraries come from.
// Auto: when the inputs leave a symbol undefined (a kernel calling
// __ocml_sin_f32), the device libraries clang's ROCm toolchain links for
// the processor (ocml, ockl, the oclc_* controls), from `device_libs_dir`
// or the installed ones (Debian's rocm-device-libs, /opt/rocm), linked
// lazily through LTO so only what is referenced is compiled in. None:
// never (an undefined symbol is then an error naming it).
enum class DeviceLibs { Auto, None };

// Options only GPU device links read (amdgcn-amd-amdhsa, nvptx64-nvidia-cuda).
struct HOTLINK_API GpuOptions {
  // The processor. AMD: a target ID, "gfx90a", "gfx90a:xnack+",
  // "gfx90a:sramecc-:xnack+"; a feature left out means the code object
  // runs with either setting, so every input must allow both. NVIDIA: the
  // SM architecture, "sm_90", "sm_90a", "sm_100f". Required.
  std::string processor;
  DeviceLibs device_libs = DeviceLibs::Auto;
  std::string device_libs_dir; // the bitcode folder; empty = the installed one
};

struct HOTLINK_API LinkRequest {
  std::string target;                 // LLVM triple; empty = the host
  std::vector<Input> inputs;
  std::string output_path;            // empty = return the bytes
  // What the artifact exports. Default: the entry-point convention (f with
  // f_argv / f_metadata); ExportPolicy::list({...}) for explicit names.
  exports::ExportPolicy exports;
  std::vector<std::string> libraries; // -l names (or archive paths)
  std::vector<std::string> library_paths;
  // ELF: the target's root (libc, GCC's libraries). *-windows-msvc: a
  // mingw-w64 sysroot (e.g. /usr/x86_64-w64-mingw32) or an MSVC / Windows
  // SDK library folder; with it, CRT and Win32 calls resolve against its
  // import libraries (LinkResult::system_libraries says which), and C++
  // gets hotlink's MSVC C++ runtime. *-w64-mingw32: that folder, or the
  // toolchain root holding it and lib/gcc/<triple>/ (default: clang's
  // driver finds the installed toolchain). Mach-O: -syslibroot. wasm: its
  // lib/ is searched.
  std::string sysroot;
  // The runtime environment a compiler driver adds (ELF and *-w64-mingw32).
  Runtime runtime = Runtime::Auto;
  CxxRuntime cxx_runtime = CxxRuntime::Auto;
  OpenMpRuntime openmp_runtime = OpenMpRuntime::Auto; // ELF
  // Archive members to leave out: "member.o" (in any archive input) or
  // "libx.a(member.o)"; globs allowed. Their symbols are not exported.
  std::vector<std::string> exclude_members;
  std::vector<std::string> extra_flags; // raw lld flags, appended last
  unsigned threads = 1;               // lld's thread count
  Undefined undefined = Undefined::TargetDefault;
  Execution execution = Execution::Auto;
  std::chrono::milliseconds timeout{60000}; // for a worker link
  bool use_cache = true; // when the service has a cache (service.h)
  // Options of one family of targets; a platform refuses those of another
  // family that are set (BadRequest naming the flag).
  ElfOptions elf;
  CoffOptions coff;
  GpuOptions gpu;
};

enum class Severity { Note, Warning, Error };

// Whether the service's cache answered: Off (no cache, or use_cache false),
// Hit (the artifact came from the cache; lld did not run), Miss (linked,
// then stored).
// RemoteHit: the local cache missed and its remote tier had the entry,
// signed by a trusted key (hotlink/remote_cache.h); lld did not run.
enum class CacheUse { Off, Hit, Miss, RemoteHit };
HOTLINK_API const char *to_string(CacheUse use); // "off", "hit", "miss", "remote-hit"

struct HOTLINK_API Diagnostic {
  Severity severity = Severity::Error;
  std::string message;
  std::string file;   // the input lld named, mapped back to Input::name
  std::string symbol; // the symbol lld named, if any
};

struct HOTLINK_API Timings {
  double validate_ms = 0; // reading and checking inputs
  double prepare_ms = 0;  // support objects, export lists, temporary files
  double link_ms = 0;     // lld itself
  double cache_ms = 0;    // cache lookup, and store after a miss
  double publish_ms = 0;  // moving the artifact to its place
  double total_ms = 0;
};

struct HOTLINK_API LinkResult {
  std::optional<Error> error;          // set when the link failed
  std::string target;                  // the normalized triple
  std::string artifact_path;           // when an output path was given
  std::string artifact_name;           // its file name: the output's, else
                                       // "hotlink.so" (.dll, .dylib, .wasm)
  std::vector<std::uint8_t> artifact;  // when no output path was given
  std::vector<std::string> exports;    // the C names the link exported
  std::string export_file;             // the version script / .def / list used
  std::string def_path, implib_path;   // when def_output / implib_output
  std::vector<std::uint8_t> implib;    // the import library, when asked for
                                       // without an implib_output path
  std::string pdb_path;                // COFF: where the PDB was published
  std::vector<std::uint8_t> pdb;       // COFF: the PDB, with `debug` and no paths
  std::vector<std::string> support_objects; // symbols hotlink provided
  std::vector<std::string> system_libraries; // COFF sysroot: libraries that
                                             // resolved a symbol
  std::vector<std::string> import_thunks;    // COFF sysroot: functions made
                                             // callable from __imp_ entries
  std::string windows_crt;                   // "ucrt" or "msvcrt", with a sysroot
  // What the runtime environment added, as file names, in link order:
  // ELF ("crti.o", "libc.so.6", "libgcc.a", ...), *-w64-mingw32
  // ("dllcrt2.o", "libmingwex.a", ...), and for MSVC-ABI C++ against a
  // mingw-w64 sysroot hotlink's own libraries ("hotlink-msvc-cxx.lib",
  // "vcruntime140.lib", ...); empty for a bare link.
  std::vector<std::string> runtime;
  // ELF: the libraries added for what the inputs call, each with why:
  // "-lm: exp, lgamma are libm's", "-fopenmp=libomp: __kmpc_fork_call".
  std::vector<std::string> runtime_added;
  std::vector<Diagnostic> diagnostics; // everything lld said
  // lld's command line, one argument per element (argv[0] is the flavor);
  // files hotlink writes for lld are named "<scratch>/NAME". Empty on a
  // cache hit.
  std::vector<std::string> command;
  std::string executed_by;             // "in-process", "worker" or "cache"
  CacheUse cache = CacheUse::Off;
  bool cache_stored = false;           // the host cache holds the artifact now
                                       // (false after a miss it could not store:
                                       // a full disk; the warning says why)
  std::string cache_key;               // 64 hex digits, when cached
  std::string artifact_blake3;         // the manifest's hash, when cached:
                                       // give it to the loader
                                       // (VerifyOptions::blake3)
  Timings timings;

  bool ok() const { return !error.has_value(); }
};

// The host's triple, as hotlink spells it (e.g. "x86_64-unknown-linux-gnu").
HOTLINK_API std::string host_target();

// The triples hotlink links for, one per line of the README's table.
HOTLINK_API std::vector<std::string> supported_targets();

// The triple of that table an artifact of this format and arch is linked
// for (e.g. COFF x86 -> "i686-pc-windows-msvc"); empty when none is.
HOTLINK_API std::string triple_for(exports::Format format, exports::Arch arch);

// The format and arch a triple of supported_targets() ("" = this host)
// links to. BadRequest naming the triple, and listing the supported ones,
// for any other.
struct HOTLINK_API TargetFormat {
  exports::Format format = exports::Format::Unknown;
  exports::Arch arch = exports::Arch::Unknown;
};
HOTLINK_API Expected<TargetFormat> target_format(const std::string &triple);

// The import library of a DLL that a module-definition file describes, as
// `llvm-lib /def:` writes it: objects link against the DLL without its SDK.
// The .def is read by LLVM's parser (the one lld-link and llvm-lib use); a
// syntax error names the .def and its line.
struct HOTLINK_API ImportLibrary {
  std::vector<std::uint8_t> bytes;  // an archive of short import objects
  std::string dll_name;             // what the importing image will load
  std::vector<std::string> exports; // the names it declares, in .def order
};
// `machine`: x64 (amd64, x86_64), x86 (i386, i686) or arm64 (aarch64).
// `dll_name` overrides the .def's LIBRARY name (needed when it has none).
// `mingw`: read the .def as llvm-dlltool does (mingw-w64's own .def files):
// on i386, `ExitProcess@4` gets its C underscore (`_ExitProcess@4`); by
// default it is read as llvm-lib does, where it stays `ExitProcess@4`.
HOTLINK_API Expected<ImportLibrary> import_library_from_def(const std::string &def_text, const std::string &def_name,
                                                            const std::string &machine,
                                                            const std::string &dll_name = {}, bool mingw = false);

// Writes `bytes` to `path` as a link writes its output: into an unnamed
// file beside it, renamed over `path` only when complete, so that nobody
// sees a partial file; an existing path that is not a regular file (a
// device such as /dev/null, a FIFO) is written in place, never replaced.
// `mode` is the file's mode before the umask. OutputError names the path.
HOTLINK_API std::optional<Error> write_output_file(const std::string &path, const std::vector<std::uint8_t> &bytes,
                                                   unsigned mode = 0644);

// hotlink's version ("0.1.0"), lld's version line ("LLD 22.1.0 (...)";
// "" when the linker module cannot load) and the LLVM version hotlink was
// built against ("22.1.0"; "" in a build without LLVM: the Windows runtime).
HOTLINK_API std::string version();
HOTLINK_API std::string lld_version();
HOTLINK_API std::string llvm_version();

} // namespace hotlink
