#include "hotlink/hot_module.h"
#include "loader/module_version.h"
#include "loader/version_image.h"
#include "base/fault_signals.h"
#include "base/own_module_host.h"

#include <algorithm>
#include <cstring>

namespace hotlink::loader {

HotModule::HotModule(ModuleOptions options) : options_(std::move(options)) {}

HotModule::~HotModule() {
  // Oldest first: a forwarded version's finalizers may jump into newer ones.
  for (auto &v : versions_)
    v.reset();
}

// A record for a new version: an unmapped one's when there is one. A
// record is never freed while the module lives: pin() may have read it as
// current_ just before a reload replaced it, and increments its count
// before it sees that (and gives the pin back). Reused, that count only
// delays the record's next unmapping; and a pin that finds the reused
// record current again holds the version it now is, whose entry points
// were stored before it was published.
std::unique_ptr<HotModule::Version> HotModule::fresh_record() {
  if (spare_.empty())
    return std::make_unique<Version>();
  std::unique_ptr<Version> v = std::move(spare_.back());
  spare_.pop_back();
  v->info = VersionInfo{};
  v->state.clear();
  for (auto &slot : v->slots)
    slot.store(nullptr, std::memory_order_relaxed);
  v->retired = false;
  return v;
}

// Takes back a record whose version is unmapped or was never published.
void HotModule::recycle(std::unique_ptr<Version> v) {
  if (!v)
    return;
  v->lib.reset();
  v->forward.reset();
  spare_.push_back(std::move(v));
}

// Moves the records of unmapped versions from versions_ to the spares,
// keeping versions_ oldest first.
void HotModule::recycle_unmapped() {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < versions_.size(); ++i)
    if (!versions_[i]->lib)
      recycle(std::move(versions_[i]));
    else if (kept++ != i)
      versions_[kept - 1] = std::move(versions_[i]);
  versions_.resize(kept);
}

namespace {
// Out of line and cold, so the call path keeps its few instructions.
[[gnu::noinline, gnu::cold]] void wait_for_gate() { std::this_thread::yield(); }
} // namespace


HotModule::Pin HotModule::pin() const {
  for (;;) {
    Version *v = current_.load(std::memory_order_seq_cst);
    if (!v)
      return Pin();
    if (v == gate()) { // a reload is copying state: wait for it
      wait_for_gate();
      continue;
    }
    v->pins.fetch_add(1, std::memory_order_seq_cst);
    // Still current after the pin: a reclaimer that retires v from now on
    // sees the pin (both are seq_cst). Otherwise a swap raced us: unpin and
    // take the new version; v's code is never entered.
    if (current_.load(std::memory_order_seq_cst) == v)
      return Pin(v);
    v->pins.fetch_sub(1, std::memory_order_seq_cst);
  }
}

HotModule::Pin::~Pin() {
  if (v_)
    v_->pins.fetch_sub(1, std::memory_order_seq_cst);
}

std::uint64_t HotModule::Pin::version() const { return v_ ? v_->info.number : 0; }

void *HotModule::Pin::slot(int i) const { return v_->slots[i].load(std::memory_order_acquire); }

void *HotModule::Pin::address(int i) const {
  return v_ && i >= 0 && i < kMaxEntries ? slot(i) : nullptr;
}

HotModule::Keep HotModule::keep_mapped(const Pin &p) const {
  if (!p.v_)
    return Keep();
  p.v_->holds.fetch_add(1, std::memory_order_seq_cst); // the pin keeps it mapped meanwhile
  return Keep(p.v_);
}

HotModule::Keep &HotModule::Keep::operator=(Keep &&o) noexcept {
  if (this != &o) {
    if (v_)
      v_->holds.fetch_sub(1, std::memory_order_seq_cst);
    v_ = o.v_;
    o.v_ = nullptr;
  }
  return *this;
}

HotModule::Keep::~Keep() {
  if (v_)
    v_->holds.fetch_sub(1, std::memory_order_seq_cst);
}

std::uint64_t HotModule::Keep::version() const { return v_ ? v_->info.number : 0; }

Expected<int> HotModule::register_entry(const std::string &name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(entries_.begin(), entries_.end(), name);
  if (it != entries_.end())
    return static_cast<int>(it - entries_.begin());
  if (entries_.size() >= static_cast<std::size_t>(kMaxEntries))
    return make_error(ErrorCode::BadRequest, "too many entry points (at most " + std::to_string(kMaxEntries) + ")",
                      {}, name, "call the others through one Pin and Library::symbol");
  int slot = static_cast<int>(entries_.size());
  // Every mapped version must provide it; the current one is checked now.
  if (Version *v = current_.load()) {
    void *p = v->lib->symbol(name);
    if (!p)
      return make_error(ErrorCode::MissingExport, "is not exported by the current version", v->info.source,
                        name, "register entries before the first reload, or reload a version that has it");
    v->slots[slot].store(p, std::memory_order_release);
  }
  entries_.push_back(name);
  return slot;
}

std::optional<Error> HotModule::reload(const std::string &path, const VerifyOptions &extra) {
  auto bytes = read_artifact_file(path);
  if (!bytes)
    return bytes.take_error();
  return reload(bytes.value(), path, extra);
}

Expected<std::unique_ptr<HotModule::Version>> HotModule::map_version(const std::vector<std::uint8_t> &bytes,
                                                                      const std::string &name,
                                                                      const VerifyOptions &extra) {
  // 1. Verify before mapping.
  VerifyOptions vo = extra;
  vo.expected_exports.insert(vo.expected_exports.end(), options_.required_exports.begin(),
                             options_.required_exports.end());
  vo.expected_exports.insert(vo.expected_exports.end(), entries_.begin(), entries_.end());
  if (options_.abi && !options_.metadata_symbol.empty())
    vo.expected_exports.push_back(options_.metadata_symbol);
  // 2. Map a private copy, named after the version.
  LoadOptions load = options_.load;
  load.version = next_number_;
  auto loaded = load_verified(bytes, name, vo, load);
  if (!loaded)
    return loaded.take_error();
  const Verified *verified = &loaded->verified;
  std::string identity = verified->sha256.empty() ? "blake3:" + verified->blake3 : verified->sha256;
  std::unique_ptr<Library> &lib = loaded->library;
  // 3. The ABI, before any reader can see the version.
  if (options_.abi)
    if (auto err = check_abi(*lib, options_.metadata_symbol, *options_.abi))
      return *err; // lib unmaps here
  void *slots[kMaxEntries] = {};
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (!(slots[i] = lib->symbol(entries_[i])))
      return make_error(ErrorCode::MissingExport, "is not resolvable in the mapped image", name, entries_[i]);
  // 4. Its symbol table, read once: its state variables, where they are
  // mapped, and its functions, for forwarding.
  std::vector<StateVariable> state;
  std::unique_ptr<ForwardImage> forward;
  bool forwarding = options_.forward_old_versions && forwarding_off_.empty();
  if (image::kind_of(bytes.data(), bytes.size()) == image::Kind::Elf) {
    auto table = read_symbol_table(bytes, name, forwarding);
    if (!table)
      return table.take_error();
    auto vars = state_variables_of(std::move(table->state), bytes, name, lib->base(), identity);
    if (!vars)
      return vars.take_error();
    state = std::move(vars.value());
    if (forwarding) {
      auto image = forward_image_of(table->code, name, *lib, next_number_);
      if (image)
        forward = std::move(image.value());
      else
        forwarding_off(image.error().message);
    }
  } else if (forwarding) {
    forwarding_off(forward_image(bytes, name, *lib, next_number_).error().message); // says why not
  }
  std::unique_ptr<Version> v = fresh_record();
  v->info = VersionInfo{next_number_, identity, name, {}};
  for (std::size_t i = 0; i < entries_.size(); ++i)
    v->slots[i].store(slots[i], std::memory_order_relaxed);
  v->state = std::move(state);
  v->forward = std::move(forward);
  v->lib = std::move(lib);
  return v;
}

std::optional<Error> HotModule::reload(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                       const VerifyOptions &extra) {
  std::lock_guard<std::mutex> lock(mu_);
  auto mapped = map_version(bytes, name, extra);
  if (!mapped)
    return mapped.take_error();
  std::unique_ptr<Version> v = std::move(mapped.value());
  Version *old = current_.load();
  static const std::vector<StateVariable> none;
  auto plan = plan_state_carry(old ? old->state : none, v->state, options_.state_mismatch, name);
  std::optional<Error> err;
  if (!plan) {
    err = plan.take_error();
  } else if (plan->empty()) { // nothing to carry: nothing waits
    v->info.state = plan->report;
    err = run_on_load(*v, old);
  } else {
    err = publish_with_state(old, v.get(), plan.value());
  }
  if (err) {
    recycle(std::move(v)); // the new version unmaps here
    return err;
  }
  Version *fresh = v.get();
  versions_.push_back(std::move(v));
  if (plan->empty())
    publish(fresh, old);
  return std::nullopt;
}

std::optional<Error> HotModule::run_on_load(const Version &fresh, const Version *old) {
  if (!options_.on_load)
    return std::nullopt;
  auto err = options_.on_load(*fresh.lib, old ? old->lib.get() : nullptr);
  if (!err)
    return std::nullopt;
  Error e = *err;
  e.code = ErrorCode::InitFailed;
  if (e.input.empty())
    e.input = fresh.info.source;
  return e;
}

// Closes the module to new calls, carries the state once no call is inside
// `old`, runs on_load and publishes `fresh`; on any refusal `old` serves again.
std::optional<Error> HotModule::publish_with_state(Version *old, Version *fresh, StateCarry &plan) {
  const std::string &name = fresh->info.source;
  if (!close_and_drain(old)) {
    current_.store(old, std::memory_order_seq_cst);
    return make_error(ErrorCode::StateBusy,
                      "calls stayed inside version " + std::to_string(old->info.number) + " for " +
                          std::to_string(options_.state_drain_timeout.count()) +
                          " ms, so its state could not be copied without losing their updates",
                      name, {},
                      "reload between calls (a thread that holds a Pin, or calls reload() from inside a call, "
                      "keeps the old version busy), or raise ModuleOptions::state_drain_timeout");
  }
  std::optional<Error> err =
      carry_state(plan, old->lib->ranges(), options_.state_mismatch, options_.migrate_state, name);
  fresh->info.state = plan.report;
  if (!err)
    err = run_on_load(*fresh, old);
  if (err) {
    current_.store(old, std::memory_order_seq_cst);
    return err;
  }
  publish(fresh, old);
  return std::nullopt;
}

bool HotModule::close_and_drain(Version *old) {
  current_.store(gate(), std::memory_order_seq_cst);
  // A pin taken from now on sees the gate on its second load and backs off
  // (pin()), so old's count only falls.
  return wait_unpinned(old);
}

// Waits up to state_drain_timeout for the calls inside `v`, which is not
// current (or behind the gate): its pin count only falls.
bool HotModule::wait_unpinned(Version *v) const {
  auto deadline = std::chrono::steady_clock::now() + options_.state_drain_timeout;
  for (int spins = 0; v->pins.load(std::memory_order_seq_cst) != 0; ++spins) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

// Publishes first, then forwards: no call reaches `fresh` before it is
// current, and a pinned call in `old` finishes in old's own code.
void HotModule::publish(Version *fresh, Version *old) {
  own_code_again(fresh);
  ++next_number_;
  current_.store(fresh, std::memory_order_seq_cst);
  generation_.fetch_add(1);
  if (previous_)
    retire_locked(previous_);
  previous_ = old;
  forward_to(fresh, old);
  collect_locked();
}

std::optional<Error> HotModule::rollback() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!previous_ || !previous_->lib)
    return make_error(ErrorCode::BadRequest, "there is no previous version to roll back to", {}, {},
                      "rollback() is possible once after each successful reload");
  rollback_locked();
  return std::nullopt;
}

void HotModule::rollback_locked() {
  Version *bad = current_.load();
  Version *back = previous_;
  carry_back(bad, back);
  own_code_again(back);
  current_.store(back, std::memory_order_seq_cst);
  generation_.fetch_add(1);
  previous_ = nullptr;
  if (bad)
    retire_locked(bad);
  forward_to(back, bad);
  collect_locked();
}

// Rollback carries the current state back; what does not fit keeps the
// previous version's own value. Never refuses: a rollback must happen.
void HotModule::carry_back(Version *bad, Version *prev) {
  if (!bad || (bad->state.empty() && prev->state.empty()))
    return;
  auto plan = plan_state_carry(bad->state, prev->state, StateMismatchPolicy::Reset, prev->info.source);
  if (!plan) // Reset never refuses; a plan always comes back
    return;
  if (!plan->empty()) {
    if (close_and_drain(bad))
      (void)carry_state(plan.value(), bad->lib->ranges(), StateMismatchPolicy::Reset, {}, prev->info.source);
    else
      plan->report.warnings.push_back("calls stayed inside version " + std::to_string(bad->info.number) +
                                      "; its state was not carried back");
  }
  prev->info.state = plan->report;
}

void HotModule::retire_locked(Version *v) { v->retired = true; }

std::size_t HotModule::collect() {
  std::lock_guard<std::mutex> lock(mu_);
  forward_pending_locked();
  return collect_locked();
}

std::size_t HotModule::collect_locked() {
  std::size_t n = 0;
  for (auto &v : versions_) {
    if (!v->retired || !v->lib || v->forward || v->pins.load(std::memory_order_seq_cst) != 0 ||
        v->holds.load(std::memory_order_seq_cst) != 0)
      continue;
    unmap_locked(v.get());
    ++n;
  }
  recycle_unmapped();
  return n;
}

void HotModule::unmap_locked(Version *v) {
  if (options_.on_unload)
    options_.on_unload(v->info.number);
  if (unmapped_.size() >= 64)
    unmapped_.erase(unmapped_.begin());
  unmapped_.push_back({v->info.number, v->info.source, v->lib->ranges()});
  v->lib.reset(); // dlclose
  v->forward.reset();
}

std::optional<VersionInfo> HotModule::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  Version *v = current_.load();
  if (!v)
    return std::nullopt;
  return v->info;
}

std::size_t HotModule::mapped_versions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::count_if(versions_.begin(), versions_.end(), [](const auto &v) { return v->lib != nullptr; });
}

// ---------------------------------------------------------------------------
// Guarded calls.

// Whose code an address is: a mapped version's, or one unmapped lately.
struct HotModule::Blame {
  const Version *version = nullptr;       // mapped
  const Unmapped *unmapped = nullptr;     // or gone
  int frame = -1;                         // which frame was theirs: 0, the faulting instruction
};

HotModule::Blame HotModule::blame_locked(bool memory, std::uintptr_t address, const std::uintptr_t *frames,
                                         int count) const {
  // Newest first: an address range a later mapping reuses is the later one's.
  auto gone = [&](std::uintptr_t a) -> const Unmapped * {
    for (auto it = unmapped_.rbegin(); it != unmapped_.rend(); ++it)
      if (within(it->ranges, a))
        return &*it;
    return nullptr;
  };
  auto mapped = [&](std::uintptr_t a) -> const Version * {
    for (const auto &v : versions_)
      if (v->lib && within(v->lib->ranges(), a))
        return v.get();
    return nullptr;
  };
  Blame b;
  // An access to what an unmapped version held (its vtable, its code)
  // through a pointer that outlived it: that version, whoever's code
  // followed the pointer.
  if (memory && !mapped(address))
    if ((b.unmapped = gone(address))) {
      b.frame = within(b.unmapped->ranges, frames[0]) ? 0 : 1;
      return b;
    }
  for (int i = 0; i < count; ++i) {
    // A return address is just past its call, which may be a version's last instruction.
    std::uintptr_t a = i == 0 ? frames[0] : frames[i] - 1;
    if ((b.version = mapped(a)) || (b.unmapped = gone(a))) {
      b.frame = i;
      return b;
    }
  }
  return b;
}

namespace {

// The shared object holding `address`, for a fault outside the module.
std::string object_of(std::uintptr_t address) {
  std::string f = host::file_of_code(reinterpret_cast<const void *>(address));
  if (f.empty())
    return "code outside any loaded image";
  return f.substr(f.find_last_of("/\\") + 1);
}

} // namespace

std::optional<Error> HotModule::call_guarded(Pin p, const std::function<void()> &call) {
  base::Fault fault = base::run_catching_faults(call);
  if (fault.signal == 0)
    return std::nullopt;
  const std::string name = fault.name;
  const std::uint64_t called = p.version();
  const std::string called_source = p.v_->info.source;
  // Blamed while the pin keeps the called version mapped, then released
  // (the abandoned call is inside it no more), then rolled back under the
  // same lock: a version published after the faulting one (by reload() on
  // another thread) is never rolled back.
  std::lock_guard<std::mutex> lock(mu_);
  Blame b = blame_locked(fault.memory, fault.address, fault.frames, fault.frame_count);
  std::uint64_t number = b.version ? b.version->info.number : b.unmapped ? b.unmapped->number : called;
  std::string source = b.version ? b.version->info.source : b.unmapped ? b.unmapped->source : called_source;
  std::string where;
  if (b.frame > 0)
    where = " in " + object_of(fault.frames[0]) + ", called from its code";
  else if (b.frame < 0)
    where = " in " + object_of(fault.frames[0]) + " (no caller on the stack is a version's code)";
  { Pin released = std::move(p); }
  Version *now = current_.load();
  std::string what, outcome;
  if (b.unmapped) {
    char at[32];
    std::snprintf(at, sizeof at, "%#llx",
                  static_cast<unsigned long long>(b.frame == 0 ? fault.frames[0] : fault.address));
    what = "retired version " + std::to_string(number) + " (unmapped) was reached inside a guarded call into version " +
           std::to_string(called) + ": " + name + " at " + at + (b.frame == 0 ? ", in its code" : ", in its data") +
           " (a pointer that outlived it, such as an object it made)";
    outcome = "; nothing was rolled back: no mapped version's code faulted";
  } else {
    what = "version " + std::to_string(number) + " raised " + name + where + " inside a guarded call";
    if (number != called)
      what += " into version " + std::to_string(called);
    if (!now) {
      outcome = "; no version is loaded now";
    } else if (now->info.number != number) {
      // By a reload, or by a rollback after another call's fault.
      outcome = "; version " + std::to_string(now->info.number) + " already replaced it, and serves";
    } else if (previous_ && previous_->lib) {
      outcome = "; rolled back to version " + std::to_string(previous_->info.number);
      rollback_locked();
    } else {
      outcome = "; no previous version to roll back to, so it still serves";
    }
  }
  std::string fix = b.unmapped ? "a pointer into version " + std::to_string(number) +
                                     " outlived it (a callback or object it made): drop such pointers in "
                                     "ModuleOptions::on_unload, hold a HotModule::Keep while they live, or turn on "
                                     "forward_old_versions"
                               : "fix the kernel; the faulting call's side effects were abandoned";
  return make_error(ErrorCode::LoadFailed, what + outcome, source, {}, fix);
}

} // namespace hotlink::loader
