// Crash recovery around LLVM code that reads untrusted bytes (and around
// lld, in linker/driver.cpp). Internal to hotlink: not installed.
//
// Contract:
// - recover(fn) runs fn on the calling thread. If fn crashes (SIGSEGV,
//   SIGBUS, ...) or LLVM calls report_fatal_error (which aborts), the crash
//   is undone by a longjmp out of fn and recover() returns false instead of
//   the process ending. Whatever fn allocated is leaked, and fn must hold
//   no lock that others need; it returns true when fn returned.
// - LLVM's crash recovery is process-wide (its signal handlers): a
//   RecoveryScope enables it while any thread is inside one and disables it
//   when the last one leaves, unless the host had enabled it itself, in
//   which case it is left as the host set it.
// - A crash on a thread outside any scope while one is open is not
//   recovered: LLVM disables crash recovery and re-raises the signal, so
//   the host's own handler (or the default action) sees it.
// Why: LLVM's object readers are not hardened against hostile input
// (fuzzing found report_fatal_error in the wasm and COFF readers and an
// out-of-bounds read in XCOFF's), and lld's fatal() exits the process
// unless crash recovery is on.
#pragma once

#include "hotlink/error.h"

#include <functional>
#include <optional>

namespace hotlink::exports {

class RecoveryScope {
public:
  RecoveryScope();
  ~RecoveryScope();
  RecoveryScope(const RecoveryScope &) = delete;
  RecoveryScope &operator=(const RecoveryScope &) = delete;
};

bool recover(const std::function<void()> &fn);

// Runs `read` (returning Expected<T>) under recover(): a crash or fatal
// error inside it becomes an error of `code` naming `name`.
template <class T, class F> Expected<T> read_guarded(const std::string &name, ErrorCode code, F read) {
  std::optional<Expected<T>> result;
  if (!recover([&] { result.emplace(read()); }) || !result)
    return make_error(code,
                      "LLVM's reader crashed or stopped with a fatal error on this file; "
                      "it is malformed",
                      name, {}, "regenerate the file; if a compiler produced it as is, report it");
  return std::move(*result);
}

} // namespace hotlink::exports
