// Internal. clang's driver answers from the file system: which GCC
// installation, startup objects and library directories a target has.
// Its answers are kept on disk, each with every path the driver asked
// about and what that path was then (absent, or type, size, mtime, inode);
// a later process replays an answer while every one of those paths is
// still the same, and asks the driver again (and keeps the new answer)
// as soon as one differs: a toolchain installed, upgraded or removed.
//
// Where: $HOTLINK_DRIVER_REPLAYS, else $XDG_CACHE_HOME/hotlink/driver,
// else $HOME/.cache/hotlink/driver; "off" keeps nothing. A replay is one
// small file written atomically (a reader sees the old or the new one);
// a file that cannot be read or parsed is ignored and replaced.
//
// The key is the driver's whole input apart from the file system: the
// clang executable (path and identity), LLVM's version, the triple, the
// arguments and the environment variables the driver reads.
#pragma once

#include "linker/platforms/clang_driver.h"

#include <optional>
#include <string>
#include <vector>

namespace hotlink::detail {

struct DriverAnswer {
  std::vector<DriverJob> jobs;
  std::vector<std::string> probes; // the paths the driver looked at
};

// The key of `clang ARGS` for `triple` with the clang executable `clang`.
std::string driver_replay_key(const std::string &clang, const std::string &triple,
                              const std::vector<std::string> &args);

// The kept answer for `key`, if one is kept and its paths are unchanged.
std::optional<std::vector<DriverJob>> replay_driver_answer(const std::string &key);

// Keeps `answer` for `key` (nothing when replays are off or the directory
// cannot be written).
void keep_driver_answer(const std::string &key, const DriverAnswer &answer);

// The records of abi.h (a module's answer, or a replay file's body) read
// into `answer`; false with `error` set when they hold the driver's error
// or are malformed.
bool read_driver_records(const char *data, std::size_t size, DriverAnswer &answer, std::string &error);

} // namespace hotlink::detail
