// Internal. hotlink's handlers for hardware faults (SIGSEGV, SIGBUS,
// SIGILL, SIGFPE), which turn a fault inside a guarded call
// (HotModule::guarded) into a return instead of the end of the process.
//
// Contract:
// - run_catching_faults(call) runs call on this thread and returns a
//   Fault whose signal is 0, or the signal a fault inside it raised on
//   this thread with where it happened. The first call installs the
//   handlers, process-wide, once.
// - However the call ends, the guard it armed is disarmed: a return, a C++
//   exception leaving it (disarmed as the exception passes), or a longjmp
//   out of it (a host's handler jumping to its own sigsetjmp): a guard
//   whose frame the thread's stack has left is dropped, never jumped into,
//   when the thread next arms a guard (the stale one's frame lies below the
//   new call's) or faults with its stack pointer above that frame.
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

#include <cstdint>
#include <functional>

namespace hotlink::base {

// Where a guarded call faulted.
struct Fault {
  int signal = 0;             // 0: the call returned
  // The host's name of it: "SIGSEGV", or on Windows the exception's
  // ("EXCEPTION_INT_DIVIDE_BY_ZERO"); `memory`: an access to an address
  // (SIGSEGV, SIGBUS, an access violation), which `address` names.
  const char *name = "";
  bool memory = false;
  std::uintptr_t address = 0; // the address the fault names (si_addr)
  // frames[0] is the faulting instruction; then the return addresses of
  // the calls it was inside, innermost first, as far as the unwinder finds
  // them (code with no unwind tables, or an unmapped address, ends the walk).
  static constexpr int kMaxFrames = 48;
  std::uintptr_t frames[kMaxFrames] = {};
  int frame_count = 0;
};

Fault run_catching_faults(const std::function<void()> &call);

// The instruction and stack pointers a signal interrupted, from its
// handler's ucontext_t (0 on a host this does not know).
std::uintptr_t interrupted_pc(const void *ucontext);
std::uintptr_t interrupted_sp(const void *ucontext);

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
