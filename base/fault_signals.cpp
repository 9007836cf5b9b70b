#include "base/fault_signals.h"

#include <atomic>
#include <csetjmp>
#include <csignal>
#include <iterator>
#include <mutex>
#include <pthread.h>
#include <ucontext.h>
#include <unwind.h>

namespace hotlink::base {

namespace {

const int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};

// The guards armed on this thread, innermost last. Kept here, not in the
// guarded frames: a guard left by a longjmp is recognised without reading
// its dead frame.
struct Guard {
  sigjmp_buf *jump;
  std::uintptr_t frame; // an address in the guarded call's frame
};
constexpr int kMaxDepth = 8;
thread_local Guard t_guards[kMaxDepth];
thread_local int t_depth = 0;
thread_local std::uintptr_t t_stack_low = 0, t_stack_high = 0; // this thread's stack; 0: not known
thread_local bool t_recovering = false; // inside LLVM's crash recovery
thread_local Fault t_fault;             // the last guarded fault, written by the handler

std::mutex g_mutex;                 // installation and the two tables below
bool g_installed = false;
std::atomic<bool> g_llvm_on{false}; // LLVM's crash recovery is on (read by the handler)
struct sigaction g_host[NSIG];      // what the host had: for faults outside both
struct sigaction g_llvm[NSIG];      // LLVM's handler while recovery is on

void handler(int sig, siginfo_t *info, void *ctx);

bool ours(const struct sigaction &a) {
  return (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == handler;
}

void forward(const struct sigaction &to, int sig, siginfo_t *info, void *ctx) {
  if (to.sa_flags & SA_SIGINFO) {
    if (to.sa_sigaction && to.sa_sigaction != handler) {
      to.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (to.sa_handler != SIG_DFL && to.sa_handler != SIG_IGN) {
    to.sa_handler(sig);
    return;
  }
  // The default action: restore it and let the fault happen again.
  signal(sig, SIG_DFL);
  raise(sig);
}

// A guard whose call this thread has left without returning through it (a
// longjmp out): the stack pointer at the fault is above its frame, on this
// thread's own stack. On another stack (a fiber the guarded call switched
// to) nothing can be told, and the guard stands.
bool on_own_stack(std::uintptr_t a) { return t_stack_high != 0 && a >= t_stack_low && a < t_stack_high; }

bool left_behind(const Guard &g, std::uintptr_t sp) { return on_own_stack(sp) && on_own_stack(g.frame) && sp >= g.frame; }

struct Walk {
  Fault *report;
  std::uintptr_t pc;
  bool past_signal_frame;
};

// Collects the return addresses beyond the faulting instruction: the walk
// starts in this handler and passes the signal frame, whose resumption
// address is the fault's pc.
_Unwind_Reason_Code collect_frame(struct _Unwind_Context *uc, void *arg) {
  auto *w = static_cast<Walk *>(arg);
  int before = 0;
  auto ip = static_cast<std::uintptr_t>(_Unwind_GetIPInfo(uc, &before));
  if (!w->past_signal_frame) {
    w->past_signal_frame = ip == w->pc;
    return _URC_NO_REASON;
  }
  if (ip == 0 || w->report->frame_count >= Fault::kMaxFrames)
    return _URC_END_OF_STACK;
  w->report->frames[w->report->frame_count++] = ip;
  return _URC_NO_REASON;
}

void handler(int sig, siginfo_t *info, void *ctx) {
  std::uintptr_t sp = interrupted_sp(ctx);
  while (t_depth > 0 && left_behind(t_guards[t_depth - 1], sp))
    --t_depth; // a call left by a longjmp: its frame is gone
  if (t_depth > 0) {
    Guard &g = t_guards[--t_depth]; // disarmed: the jump leaves the call
    Fault *r = &t_fault;
    r->signal = sig;
    r->name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL" : "SIGFPE";
    r->memory = sig == SIGSEGV || sig == SIGBUS;
    r->address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    Walk w{r, interrupted_pc(ctx), false};
    r->frames[0] = w.pc;
    r->frame_count = 1;
    // libgcc finds unwind tables with _dl_find_object (glibc 2.35), which
    // takes no lock: safe on a thread that faulted anywhere.
    _Unwind_Backtrace(collect_frame, &w);
    siglongjmp(*g.jump, sig);
  }
  // Not a guarded call: as if hotlink were not here. LLVM's handler only
  // for its own threads: on any other it turns recovery off for everyone
  // and re-raises. The tables are read without the lock (a handler cannot
  // take it); they change only when LLVM's recovery is turned on or off.
  forward(g_llvm_on && t_recovering ? g_llvm[sig] : g_host[sig], sig, info, ctx);
}

void install_locked(int sig) {
  struct sigaction sa = {};
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

void install_once() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_installed)
    return;
  for (int sig : kSignals) {
    struct sigaction now;
    sigaction(sig, nullptr, &now);
    // Under an open recovery scope what is there is LLVM's; the
    // host's comes back when recovery is turned off.
    (g_llvm_on ? g_llvm : g_host)[sig] = now;
    install_locked(sig);
  }
  g_installed = true;
}

void learn_stack() {
  if (t_stack_high != 0)
    return;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    return;
  void *low = nullptr;
  std::size_t size = 0;
  if (pthread_attr_getstack(&attr, &low, &size) == 0 && size != 0) {
    t_stack_low = reinterpret_cast<std::uintptr_t>(low);
    t_stack_high = t_stack_low + size;
  }
  pthread_attr_destroy(&attr);
}

// Arms guard `depth` for the call; disarms it however the call ends here
// (a return, or an exception passing through). A fault's jump disarms it
// in the handler and never comes back through this frame.
[[gnu::noinline]] void call_armed(int depth, sigjmp_buf *jump, std::uintptr_t frame,
                                  const std::function<void()> &call) {
  struct Disarm {
    int depth;
    ~Disarm() { t_depth = depth; }
  } disarm{depth};
  t_guards[depth] = Guard{jump, frame};
  t_depth = depth + 1;
  call();
}

} // namespace

// One register of the interrupted context: x86_64 names it by its index
// in gregs, aarch64 by its field.
std::uintptr_t interrupted_pc(const void *ucontext) {
  const auto &m = static_cast<const ucontext_t *>(ucontext)->uc_mcontext;
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(m.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(m.pc);
#else
  (void)m;
  return 0;
#endif
}

std::uintptr_t interrupted_sp(const void *ucontext) {
  const auto &m = static_cast<const ucontext_t *>(ucontext)->uc_mcontext;
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(m.gregs[REG_RSP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(m.sp);
#else
  (void)m;
  return 0;
#endif
}

RecoveringThread::RecoveringThread() : outer_(t_recovering) { t_recovering = true; }
RecoveringThread::~RecoveringThread() { t_recovering = outer_; }

Fault run_catching_faults(const std::function<void()> &call) {
  install_once();
  learn_stack();
  sigjmp_buf jump;
  // A guard whose frame lies below this one was left by a longjmp: a live
  // outer guard's frame is above every call it made (on the same stack).
  while (t_depth > 0 && left_behind(t_guards[t_depth - 1], reinterpret_cast<std::uintptr_t>(&jump)))
    --t_depth;
  const int depth = t_depth;
  if (depth >= kMaxDepth) { // nested deeper than any real use: the outer guards catch
    call();
    return Fault{};
  }
  if (sigsetjmp(jump, /*savemask=*/1)) {
    t_depth = depth;
    return t_fault; // written by the handler
  }
  call_armed(depth, &jump, reinterpret_cast<std::uintptr_t>(&jump), call);
  return Fault{};
}

void llvm_recovery_changed(bool on) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_llvm_on = on;
  if (!g_installed)
    return;
  for (int sig : kSignals) {
    struct sigaction now;
    sigaction(sig, nullptr, &now);
    if (ours(now))
      continue; // LLVM put ours back (turned off), or a fault turned it off already
    // On: LLVM's handler is on top, for threads inside recover(). Off:
    // LLVM put back what it found, which was the host's.
    (on ? g_llvm : g_host)[sig] = now;
    install_locked(sig);
  }
}

} // namespace hotlink::base
