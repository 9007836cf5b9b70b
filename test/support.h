// Test helpers: fixtures are produced at test time with clang-22, llvm-mc-22
// and llvm-ar-22 (never committed), and cached per build under
// build/test-fixtures so that parallel test processes share them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::test {

// Built with HOTLINK_SANITIZE (ASan/UBSan or TSan).
#ifdef HOTLINK_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// While alive, LeakSanitizer ignores what this thread allocates: for a call
// that is expected to crash inside LLVM and be recovered, which abandons
// what the crashed code allocated by design (exports/recovery.h).
class IgnoreLeaks {
public:
  IgnoreLeaks();
  ~IgnoreLeaks();
  IgnoreLeaks(const IgnoreLeaks &) = delete;
  IgnoreLeaks &operator=(const IgnoreLeaks &) = delete;
};

using Bytes = std::vector<std::uint8_t>;

// The fixtures' kernel convention, as C source to follow a kernel's
// `int f(int x)`: its companion f_argv(a) stores f(*a[0]) in *a[1] and
// returns 0, which makes f an entry point for hotlink's default export
// policy. A string literal, so that it joins the literal before it.
#define HOTLINK_TEST_F_ARGV "int f_argv(void **a) { *(int *)a[1] = f(*(int *)a[0]); return 0; }\n"

// Compiles C `source` for `triple` (clang-22 -O1 -c) and returns the object.
// Aborts the test (ADD_FAILURE + empty result) if clang fails.
Bytes compile_c(const std::string &triple, const std::string &source,
                const std::vector<std::string> &flags = {});

// Compiles C `source` into a shared object for `triple` (clang-22 -shared).
Bytes compile_so(const std::string &triple, const std::string &source,
                 const std::vector<std::string> &flags = {});

// Assembles `source` for `triple` with llvm-mc-22.
Bytes assemble(const std::string &triple, const std::string &source);

// Makes an archive (llvm-ar-22 rcs) of the given members; returns its path.
std::string make_archive(const std::vector<std::pair<std::string, Bytes>> &members);

// A fresh private directory, removed at process exit.
std::string temp_dir();

// Every file below `dir` (recursing into folders), as paths relative to it.
std::vector<std::string> files_in(const std::string &dir);
// How many of `files` contain `part`.
std::size_t count_with(const std::vector<std::string> &files, const std::string &part);

Bytes read_file(const std::string &path);
void write_file(const std::string &path, const Bytes &bytes);
bool exists(const std::string &path);
// Number of entries in a directory (0 if it does not exist).
std::size_t count_entries(const std::string &dir);

// Counts the opens of the files it watches (inotify IN_OPEN), from its
// making: what a test asks to tell a file read from one only stat'ed.
class OpenCounter {
public:
  explicit OpenCounter(const std::vector<std::string> &paths);
  ~OpenCounter();
  OpenCounter(const OpenCounter &) = delete;
  OpenCounter &operator=(const OpenCounter &) = delete;
  // The opens since the last call (inotify folds an open into the last
  // one not yet read: call it after each step to count).
  std::size_t opens();

private:
  int fd_ = -1;
};

// Resident set size of this process, in KiB.
long rss_kib();

// Runs a program; returns its exit code and captures stdout/stderr.
struct Run {
  int code = -1;
  std::string out, err;
  bool timed_out = false;
};
Run run(const std::vector<std::string> &argv);

struct RunOptions {
  std::vector<std::string> env; // NAME=VALUE, added to this process's environment
  unsigned timeout_seconds = 0; // 0: none
  std::string cwd;
};
// Runs a program in a process group of its own. On timeout, and after it
// exits, the whole group is killed: it and everything it started (a
// debugger's inferior, an emulator's children). code is -1 on timeout, and
// 128 + the signal when a signal ended it.
Run run(const std::vector<std::string> &argv, const RunOptions &options);

// Runs `tool_args` SOURCE -o OUT with `source` written to SOURCE (its name
// ends in `ext` + ".in"; pass -x LANG), cached like compile_c.
Bytes compile_with(const std::vector<std::string> &tool_args, const std::string &source,
                   const std::string &ext = ".o");

// Paths of the built tools.
std::string bin_dir();

// A Halide-style kernel: f, f_argv, f_metadata and an internal helper.
std::string halide_style_kernel();

// A kernel whose f_metadata() reports two arguments, input (buffer, `dims`
// dimensions, uint8) and scale (scalar float32), and whose tag_a()/tag_b()
// return `tag`; f(x) = x * 10 + tag. `extra` is appended.
std::string metadata_kernel(int tag, int dims = 2, const std::string &extra = "");

} // namespace hotlink::test
