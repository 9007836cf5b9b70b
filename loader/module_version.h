// Internal. What HotModule keeps of one mapped version (hot_module.h),
// shared by its files: hot_module.cpp (reload, pins, retirement, guarded
// calls) and module_forward.cpp (forwarding).
#pragma once

#include "hotlink/hot_module.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace hotlink::loader {

struct HotModule::Version {
  VersionInfo info;
  std::unique_ptr<Library> lib;            // null once unmapped
  std::vector<StateVariable> state;        // addresses in lib's image
  std::atomic<void *> slots[kMaxEntries] = {};
  std::atomic<std::int64_t> pins{0};       // calls inside (Pin)
  std::atomic<std::int64_t> holds{0};      // Keeps: mapped, but no call inside
  bool retired = false;                    // under mu_
  std::unique_ptr<ForwardImage> forward;   // with forward_old_versions
};

// current_ holds this while reload() or rollback() copies state: pin()
// waits instead of entering either version. Compared (with an immediate),
// never dereferenced; no Version lives at address 1.
inline HotModule::Version *HotModule::gate() { return reinterpret_cast<Version *>(std::uintptr_t{1}); }

} // namespace hotlink::loader
