// Internal. hotlink's handlers for hardware faults (SIGSEGV, SIGBUS,
// SIGILL, SIGFPE), which turn a fault inside a guarded call
// (HotModule::guarded) into a return instead of the end of the process.
//
// Contract:
// - run_catching_faults(call) runs call on this thread and returns 0, or
//   the signal a fault inside it raised on this thread. The first call
//   installs the handlers, process-wide, once.
// - A fault on a thread outside such a call goes where it went before: on
//   a thread inside LLVM's crash recovery (a RecoveringThread scope, which
//   exports/recovery opens) to LLVM's handler, else to the host's handler,
//   else the default action.
// - LLVM's crash recovery installs its handlers when it is turned on and
//   puts back what it found when turned off, so code that turns it on or
//   off calls llvm_recovery_changed() right after: hotlink's handlers go
//   back on top. Without that, a guarded fault reaching LLVM's handler
//   (which turns recovery off and re-raises) or a handler LLVM put back
//   (the host's, often the default action) killed the process.
#pragma once

#include <functional>

namespace hotlink::base {

int run_catching_faults(const std::function<void()> &call);

// Marks this thread as inside LLVM's crash recovery (a RunSafely call) for
// the scope's lifetime: its faults go to LLVM's handler.
class RecoveringThread {
public:
  RecoveringThread();
  ~RecoveringThread();
  RecoveringThread(const RecoveringThread &) = delete;
  RecoveringThread &operator=(const RecoveringThread &) = delete;

private:
  bool outer_;
};

// `on`: LLVM's crash recovery was just turned on (its handlers are on top);
// otherwise just turned off.
void llvm_recovery_changed(bool on);

} // namespace hotlink::base
