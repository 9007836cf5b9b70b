// base/fault_signals.h's guarded calls on Windows: a vectored exception
// handler takes a hardware exception (access violation, divide by zero,
// illegal instruction, ...) raised inside a guarded call on its thread,
// and resumes the thread in a landing function that jumps back to the
// guard (the thread's own context is redirected: nothing unwinds through
// the faulted frames, as siglongjmp skips them on POSIX). Any other
// exception, or one outside a guarded call, goes on to the process's
// other handlers as if hotlink were not there.
//
// The handler is vectored, so it runs before frame-based handlers: a
// __try/__except inside the guarded code does not see a hardware fault
// there (docs/limits.md). A stack overflow is not caught: there is no
// stack left to land on.
#include "base/fault_signals.h"

#include <csignal>
#include <mutex>

#include <windows.h>

namespace hotlink::base {

namespace {

// The guards armed on this thread, innermost last (as on POSIX). Each
// entry keeps its guard's frame address here, not in the guarded frame: a
// guard left by a longjmp is recognised without reading its dead frame.
struct Guard {
  void *jump[5]; // __builtin_setjmp's buffer, in run_catching_faults' frame
};
struct Armed {
  Guard *guard;
  std::uintptr_t frame;
};
constexpr int kMaxDepth = 8;
thread_local Armed t_guards[kMaxDepth];
thread_local int t_depth = 0;
thread_local Guard *t_landing = nullptr; // the guard the landing function jumps to
thread_local Fault t_fault;

int signal_of(DWORD code) {
  switch (code) {
  case EXCEPTION_ACCESS_VIOLATION:
  case EXCEPTION_IN_PAGE_ERROR:
  case EXCEPTION_ARRAY_BOUNDS_EXCEEDED: return SIGSEGV;
  case EXCEPTION_DATATYPE_MISALIGNMENT: return 7; // SIGBUS's number on Linux: Windows has none
  case EXCEPTION_ILLEGAL_INSTRUCTION:
  case EXCEPTION_PRIV_INSTRUCTION: return SIGILL;
  case EXCEPTION_INT_DIVIDE_BY_ZERO:
  case EXCEPTION_INT_OVERFLOW:
  case EXCEPTION_FLT_DIVIDE_BY_ZERO:
  case EXCEPTION_FLT_INVALID_OPERATION:
  case EXCEPTION_FLT_OVERFLOW:
  case EXCEPTION_FLT_UNDERFLOW:
  case EXCEPTION_FLT_INEXACT_RESULT:
  case EXCEPTION_FLT_DENORMAL_OPERAND:
  case EXCEPTION_FLT_STACK_CHECK: return SIGFPE;
  default: return 0; // not a fault a guarded call turns into a return
  }
}

const char *name_of(DWORD code) {
  switch (code) {
  case EXCEPTION_ACCESS_VIOLATION: return "EXCEPTION_ACCESS_VIOLATION";
  case EXCEPTION_IN_PAGE_ERROR: return "EXCEPTION_IN_PAGE_ERROR";
  case EXCEPTION_ARRAY_BOUNDS_EXCEEDED: return "EXCEPTION_ARRAY_BOUNDS_EXCEEDED";
  case EXCEPTION_DATATYPE_MISALIGNMENT: return "EXCEPTION_DATATYPE_MISALIGNMENT";
  case EXCEPTION_ILLEGAL_INSTRUCTION: return "EXCEPTION_ILLEGAL_INSTRUCTION";
  case EXCEPTION_PRIV_INSTRUCTION: return "EXCEPTION_PRIV_INSTRUCTION";
  case EXCEPTION_INT_DIVIDE_BY_ZERO: return "EXCEPTION_INT_DIVIDE_BY_ZERO";
  case EXCEPTION_INT_OVERFLOW: return "EXCEPTION_INT_OVERFLOW";
  case EXCEPTION_FLT_DIVIDE_BY_ZERO: return "EXCEPTION_FLT_DIVIDE_BY_ZERO";
  case EXCEPTION_FLT_INVALID_OPERATION: return "EXCEPTION_FLT_INVALID_OPERATION";
  case EXCEPTION_FLT_OVERFLOW: return "EXCEPTION_FLT_OVERFLOW";
  case EXCEPTION_FLT_UNDERFLOW: return "EXCEPTION_FLT_UNDERFLOW";
  case EXCEPTION_FLT_INEXACT_RESULT: return "EXCEPTION_FLT_INEXACT_RESULT";
  case EXCEPTION_FLT_DENORMAL_OPERAND: return "EXCEPTION_FLT_DENORMAL_OPERAND";
  default: return "EXCEPTION_FLT_STACK_CHECK";
  }
}

[[noreturn, gnu::noinline]] void land() { __builtin_longjmp(t_landing->jump, 1); }

// The faulting instruction, then the return addresses of the calls it was
// inside, from the unwind tables (RtlVirtualUnwind).
void walk(const CONTEXT &at, Fault &r) {
  CONTEXT c = at;
  r.frames[0] = c.Rip;
  r.frame_count = 1;
  while (r.frame_count < Fault::kMaxFrames) {
    DWORD64 image = 0;
    PRUNTIME_FUNCTION fn = RtlLookupFunctionEntry(c.Rip, &image, nullptr);
    if (!fn) { // a leaf: its return address is on top of the stack
      c.Rip = *reinterpret_cast<DWORD64 *>(c.Rsp);
      c.Rsp += 8;
    } else {
      void *data = nullptr;
      DWORD64 frame = 0;
      RtlVirtualUnwind(UNW_FLAG_NHANDLER, image, c.Rip, fn, &c, &data, &frame, nullptr);
    }
    if (c.Rip == 0)
      break;
    r.frames[r.frame_count++] = c.Rip;
  }
}

LONG CALLBACK handler(EXCEPTION_POINTERS *e) {
  int sig = signal_of(e->ExceptionRecord->ExceptionCode);
  if (sig == 0 || t_depth == 0)
    return EXCEPTION_CONTINUE_SEARCH;
  Guard *g = t_guards[--t_depth].guard; // disarmed: the jump leaves the call
  Fault &r = t_fault;
  r = Fault{};
  r.signal = sig;
  r.name = name_of(e->ExceptionRecord->ExceptionCode);
  r.memory = e->ExceptionRecord->ExceptionCode == EXCEPTION_ACCESS_VIOLATION ||
             e->ExceptionRecord->ExceptionCode == EXCEPTION_IN_PAGE_ERROR;
  r.address = e->ExceptionRecord->ExceptionCode == EXCEPTION_ACCESS_VIOLATION &&
                      e->ExceptionRecord->NumberParameters >= 2
                  ? static_cast<std::uintptr_t>(e->ExceptionRecord->ExceptionInformation[1])
                  : reinterpret_cast<std::uintptr_t>(e->ExceptionRecord->ExceptionAddress);
  walk(*e->ContextRecord, r);
  // Resume in land() on this thread's stack, below what the fault left.
  t_landing = g;
  CONTEXT &c = *e->ContextRecord;
  c.Rsp = ((c.Rsp - 512) & ~DWORD64(15)) - 8; // as if land() had been called
  c.Rip = reinterpret_cast<DWORD64>(&land);
  return EXCEPTION_CONTINUE_EXECUTION;
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] { AddVectoredExceptionHandler(/*first=*/1, handler); });
}

// Arms the guard for the call; disarms it however the call ends here.
[[gnu::noinline]] void call_armed(int depth, Guard *g, const std::function<void()> &call) {
  struct Disarm {
    int depth;
    ~Disarm() { t_depth = depth; }
  } disarm{depth};
  t_guards[depth] = Armed{g, reinterpret_cast<std::uintptr_t>(g)};
  t_depth = depth + 1;
  call();
}

} // namespace

Fault run_catching_faults(const std::function<void()> &call) {
  install_once();
  Guard g;
  // A guard whose frame lies below this one was left by a longjmp out of
  // its call: a live outer guard's frame is above every call it made.
  while (t_depth > 0 && t_guards[t_depth - 1].frame < reinterpret_cast<std::uintptr_t>(&g))
    --t_depth;
  const int depth = t_depth;
  if (depth >= kMaxDepth) { // nested deeper than any real use: the outer guards catch
    call();
    return Fault{};
  }
  if (__builtin_setjmp(g.jump)) {
    t_depth = depth;
    return t_fault; // written by the handler
  }
  call_armed(depth, &g, call);
  return Fault{};
}

// No ucontext_t on Windows: the POSIX code writer (code_write_linux.cpp)
// is their only user.
std::uintptr_t interrupted_pc(const void *) { return 0; }
std::uintptr_t interrupted_sp(const void *) { return 0; }

} // namespace hotlink::base
