// Internal. The entry point of libhotlink-driver.so, the module that holds
// clang's driver (libclang-cpp). hotlink loads it with dlopen only when a
// link needs the driver's answer and no replay of it is on disk
// (clang_driver.h): libclang-cpp costs a process ~18 ms of relocations at
// start, which every process that merely links with hotlink would
// otherwise pay.
//
// The answer is a buffer of NUL-terminated records, each a tag byte then
// its text: a job's tool (kJob), its being the link job (kLink), one of
// its arguments (kArg), a path the driver asked the file system about
// (kProbe), or the driver's error (kError). The module and the library
// that loads it come from one build: the entry point's name carries the
// format's version.
#pragma once

#include <stddef.h>

namespace hotlink::detail::driver_abi {

inline constexpr char kJob = 'T', kLink = 'L', kArg = 'A', kProbe = 'P', kError = 'E';
inline constexpr const char *kModuleFile = "libhotlink-driver.so";
inline constexpr const char *kJobsSymbol = "hotlink_driver_jobs_v1";
inline constexpr const char *kFreeSymbol = "hotlink_driver_free_v1";

// The jobs of `clang ARGV` (argv[0] is "clang") for `triple`, clang's
// executable being `clang` (its resource directory and configuration
// files); the records' size in *size. Never null; freed with kFreeSymbol.
using JobsFn = char *(*)(const char *clang, const char *triple, const char *const *argv, size_t argc,
                         size_t *size);
using FreeFn = void (*)(char *);

} // namespace hotlink::detail::driver_abi
