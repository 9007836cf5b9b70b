#include "exports/recovery.h"

#include "base/fault_signals.h"

#include "llvm/Support/CrashRecoveryContext.h"

#include <mutex>

namespace hotlink::exports {

namespace {

std::mutex g_mutex;
int g_users = 0;
bool g_host_enabled = false; // the host had enabled it when the first scope opened

// Whether crash recovery is on (a context created now would catch crashes).
bool enabled_now() {
  bool enabled = false;
  llvm::CrashRecoveryContext probe;
  probe.RunSafely([&] { enabled = llvm::CrashRecoveryContext::GetCurrent() != nullptr; });
  return enabled;
}

} // namespace

RecoveryScope::RecoveryScope() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_users++ == 0) {
    g_host_enabled = enabled_now();
    if (!g_host_enabled) {
      llvm::CrashRecoveryContext::Enable();
      base::llvm_recovery_changed(true);
    }
  }
}

RecoveryScope::~RecoveryScope() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_users == 0 && !g_host_enabled) {
    llvm::CrashRecoveryContext::Disable();
    base::llvm_recovery_changed(false);
  }
}

bool recover(const std::function<void()> &fn) {
  RecoveryScope scope;
  base::RecoveringThread recovering;
  llvm::CrashRecoveryContext context;
  return context.RunSafely(fn);
}

} // namespace hotlink::exports
