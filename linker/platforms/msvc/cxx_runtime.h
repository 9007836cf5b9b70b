// Internal. The MSVC C++ runtime for *-windows-msvc links against a
// mingw-w64 sysroot, which has none: what MSVC's vcruntime.lib / msvcrt.lib
// would add, made by hotlink.
//
// - Import libraries, from .def files kept here (the names are the DLLs'
//   documented exports, checked against Wine's builds of them by the
//   tests): vcruntime140.dll (exception handling, RTTI casts,
//   __std_terminate, type_info helpers), vcruntime140_1.dll
//   (__CxxFrameHandler4), msvcp140.dll (the std::_X* throw helpers,
//   threads, mutexes, condition variables) with the UCRT; with msvcrt.dll,
//   an import library for the C++ functions msvcrt.dll exports that
//   mingw-w64's libmsvcrt.a leaves out (__CxxFrameHandler3, ...).
// - Support code, compiled in-process from LLVM IR, one object per symbol
//   in one archive, so lld takes only what the link references and nothing
//   defines: operator new / delete in every form (plain, array, sized,
//   nothrow, aligned) over the CRT's malloc / free / _aligned_malloc (a
//   failed allocation throws std::bad_alloc through msvcp140's
//   std::_Xbad_alloc with the UCRT, and aborts with msvcrt.dll, whose
//   runtime has no std::bad_alloc to throw); std::nothrow; type_info's
//   vftable; MSVC's thread-safe local statics (_Init_thread_header /
//   _footer / _abort / _epoch); and the DLL entry point
//   _DllMainCRTStartup, which runs the .CRT$XI* and .CRT$XC* initializers
//   (static constructors) on attach, calls the DLL's own DllMain if it has
//   one, and on detach runs what atexit / _onexit registered, in reverse
//   (static destructors run when the DLL is unloaded, not at process
//   exit, as with MSVC's DLL CRT).
#pragma once

#include "hotlink/error.h"
#include "linker/platforms/platform.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hotlink::detail {

struct MsvcCxxRuntime {
  struct Library {
    std::string name; // e.g. "vcruntime140.lib", "hotlink-msvc-cxx.lib"
    std::vector<std::uint8_t> bytes;
  };
  // Linked before the CRT's import library: the support archive, and with
  // the UCRT the vcruntime140 / msvcp140 import libraries (C++ runtime
  // functions bind to vcruntime140.dll, as MSVC links them).
  std::vector<Library> before_crt;
  // Linked after it: with msvcrt.dll, the import library that fills what
  // libmsvcrt.a lacks.
  std::vector<Library> after_crt;
  std::string entry; // the DLL entry point's name, for -entry:
  // What the libraries in before_crt define (support code, and the import
  // libraries' functions and __imp_ entries).
  std::vector<std::string> provides;
};

// Memoized per (target, crt); crt is "ucrt" or "msvcrt".
Expected<std::shared_ptr<const MsvcCxxRuntime>> msvc_cxx_runtime(const TargetInfo &target, const std::string &crt);

// Whether an undefined symbol is one the MSVC C++ runtime (or the DLL
// entry point's exit-function table) resolves: a cheap test that spares C
// links the runtime.
bool may_need_msvc_cxx(const std::string &symbol);

// Whether referencing `symbol` means the DLL needs its entry point
// (exit functions registered with atexit / _onexit run when it unloads).
bool is_exit_registration(const std::string &symbol);

} // namespace hotlink::detail
