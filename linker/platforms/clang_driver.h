// Internal. clang's driver as a library: the jobs `clang ARGS` would run,
// computed in-process (nothing runs). Platforms ask it what a compiler
// driver knows about their target (the runtime environment of an ELF
// link, a GPU's link flags and device libraries) instead of writing that
// knowledge down a second time.
//
// Contract:
// - Compiles nothing and needs no input to exist; errors carry the
//   driver's own diagnostics, naming `flag` with `hint`.
// - An answer kept on disk is replayed while every path the driver looked
//   at is unchanged (driver_replay.h): then nothing of clang loads.
// - Otherwise the driver runs in-process from libhotlink-driver.so
//   (driver_module/abi.h), loaded on first need: a process that links
//   only with replayed answers never maps libclang-cpp.
#pragma once

#include "hotlink/error.h"

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

// The input that stands for a link's inputs in `args` below.
inline constexpr const char *kDriverInputs = "hotlink-inputs.o";

// The link job of `clang ARGS` (which name kDriverInputs once): the
// linker's arguments without argv[0], -o and its value, split around the
// inputs' place.
struct DriverLinkLine {
  std::vector<std::string> before, after;
};
Expected<DriverLinkLine> driver_link_job(const std::string &triple, const std::vector<std::string> &args,
                                         const std::string &flag, const std::string &hint);

} // namespace hotlink::detail
