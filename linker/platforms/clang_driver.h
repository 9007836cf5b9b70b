// Internal. clang's driver as a library: the jobs `clang ARGS` would run,
// computed in-process (nothing runs). Platforms ask it what a compiler
// driver knows about their target (the runtime environment of an ELF
// link, a GPU's link flags and device libraries) instead of writing that
// knowledge down a second time.
//
// Contract: compiles nothing and needs no input to exist; errors carry
// the driver's own diagnostics, naming `flag` with `hint`.
#pragma once

#include "exports/error.h"

#include <string>
#include <vector>

namespace hotlink::detail {

struct DriverJob {
  std::string tool;               // the creator's name: "clang", "ld.lld", ...
  bool link = false;              // the link job
  std::vector<std::string> args;  // without argv[0]
};

// The jobs of `clang ARGS` for `triple` (args[0] is argv[0], "clang").
Expected<std::vector<DriverJob>> driver_jobs(const std::string &triple, const std::vector<std::string> &args,
                                             const std::string &flag, const std::string &hint);

} // namespace hotlink::detail
