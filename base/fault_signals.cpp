#include "base/fault_signals.h"

#include <atomic>
#include <csetjmp>
#include <csignal>
#include <iterator>
#include <mutex>

namespace hotlink::base {

namespace {

const int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};

thread_local sigjmp_buf *t_guard = nullptr; // set while this thread is in a guarded call
thread_local bool t_recovering = false;      // inside LLVM's crash recovery

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

void handler(int sig, siginfo_t *info, void *ctx) {
  if (sigjmp_buf *jb = t_guard) {
    t_guard = nullptr;
    siglongjmp(*jb, sig);
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

} // namespace

RecoveringThread::RecoveringThread() : outer_(t_recovering) { t_recovering = true; }
RecoveringThread::~RecoveringThread() { t_recovering = outer_; }

int run_catching_faults(const std::function<void()> &call) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_installed) {
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
  }
  sigjmp_buf jb;
  sigjmp_buf *outer = t_guard;
  if (int sig = sigsetjmp(jb, /*savemask=*/1)) {
    t_guard = outer;
    return sig;
  }
  t_guard = &jb;
  call();
  t_guard = outer;
  return 0;
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
