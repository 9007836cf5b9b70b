// HotModule: a module that keeps serving calls while new versions replace
// it.
//
// Contract:
// - A call pins the current version: one atomic load of the current
//   pointer, an atomic increment of that version's pin count and a second
//   load to confirm it is still current; no lock. Pin::get() then reads the
//   entry point's address for that version, so several calls through one
//   Pin all reach the same version.
// - reload() verifies (loader.h), maps a private copy, checks the ABI,
//   carries the state variables (below), runs on_load, and only then
//   publishes the version with one atomic store. If any step fails, the old
//   version keeps serving and the error says which step and why.
// - State (hotlink/state.h, hotlink/state_carry.h): when the old or the new
//   version has HOTLINK_STATE variables, reload() first checks that each
//   pair fits (same layout, else StateMismatch before anything waits), then
//   closes the module to new calls (they wait in pin()), waits until no call
//   is inside the old version (past state_drain_timeout it reopens and
//   refuses with StateBusy), copies the values, runs on_load and publishes:
//   no update made by a call in the old version is lost or torn. A thread
//   that holds a Pin while it calls reload() (or across it) makes that wait
//   time out. Without state variables nothing waits. rollback() carries the
//   state back the same way (what does not fit keeps the previous version's
//   own value, with a warning).
// - Forwarding (forward_old_versions) keeps this: a call through a Pin runs
//   the pinned version's own code to its return. reload() publishes first,
//   then waits (up to state_drain_timeout) for the pinned calls inside the
//   version it replaced, then points the older versions at the new one; a
//   pointer the host kept runs the current version's code (or, while that
//   wait lasts, its own). No caller runs a version before it is published.
// - A replaced version stays mapped as the rollback target; the one before
//   it is retired. A retired version is unmapped by the next reload(),
//   rollback() or collect() after its pin count is zero and no Keep holds
//   it: never while a call is inside it. With forward_old_versions, replaced versions stay mapped
//   until quiesce() (each costs its image's mappings, an open file and its
//   file in the image store).
// - reload(), rollback() and collect() are serialized; calls may come from
//   any thread at any time. Destroy the module only after calls stopped.
// - Memory: a version's 600-byte record (plus its names and reports) is
//   never freed while the module lives, since a late reader may still
//   touch the record of a version it saw a moment before the swap; once
//   the version is unmapped, its record serves a later version. So a
//   module holds as many records as it ever had versions mapped at once,
//   however many reloads it served, and unmapping walks only the mapped
//   ones.
#pragma once

#include "hotlink/error.h"
#include "hotlink/forward.h"
#include "hotlink/load.h"
#include "hotlink/state_carry.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace hotlink::loader {

struct HOTLINK_API ModuleOptions {
  std::vector<std::string> required_exports; // besides registered entries
  std::optional<ExpectedAbi> abi;            // checked through metadata_symbol
  std::string metadata_symbol;               // e.g. "f_metadata"
  // After mapping and the ABI check, before publishing: may move state from
  // `old` (null for the first version) into `fresh`. An Error refuses the
  // version (InitFailed) and the old one keeps serving.
  // It runs after the state variables were carried.
  std::function<std::optional<Error>(const Library &fresh, const Library *old)> on_load;
  // A state variable that cannot be carried as it is (its layout changed, or
  // it points into the old image): refuse the reload (the default), let the
  // new version start it afresh, or call migrate_state.
  StateMismatchPolicy state_mismatch = StateMismatchPolicy::Refuse;
  StateMigration migrate_state;
  // How long reload() waits for calls inside the old version to return
  // before it copies the state (new calls wait meanwhile).
  std::chrono::milliseconds state_drain_timeout{1000};
  // Forwarding (hotlink/forward.h). When a version is made current (reload
  // or rollback), every function of the versions before it that has a
  // counterpart in it starts with a jump there, so a function pointer, a
  // callback or a C++ object's vtable the host kept from an older version
  // runs the current code. Off by default. Linux x86_64; elsewhere (or when
  // this process cannot stop its threads) reload() says so once on stderr
  // and in VersionInfo::forwarding, and behaves as without it.
  bool forward_old_versions = false;
  // With forwarding, replaced versions stay mapped (a kept pointer may
  // still enter them): quiesce() unmaps all but this many of the newest.
  std::size_t forward_keep_versions = 4;
  // Just before a retired version is unmapped (for cleanup or tests).
  std::function<void(std::uint64_t version)> on_unload;
  // How versions are mapped: each is a file named NAME.vN.<hash>.EXT (the
  // artifact's name, its version number, the first 8 hex digits of its
  // identity), so a backtrace or a profile says which version ran;
  // `load.keep_images` keeps them for post-mortem tools (loader.h).
  // load.file_name is ignored.
  LoadOptions load;
};

struct HOTLINK_API VersionInfo {
  std::uint64_t number = 0; // 1 for the first version loaded, then 2, ...
  std::string identity;     // "blake3:<hex>" of the artifact, or its SHA-256
                            // when reload() was given one to check
                            // (VerifyOptions::sha256)
  std::string source;       // the path or name it was loaded from
  StateReport state;        // what its reload (or the rollback to it) did with state
  ForwardReport forwarding; // with forward_old_versions: what was pointed at it
};

class HOTLINK_API HotModule {
  struct Version;

public:
  static constexpr int kMaxEntries = 32;

  template <class Fn> class Entry;
  class Pin;

  explicit HotModule(ModuleOptions options = {});
  ~HotModule();
  HotModule(const HotModule &) = delete;
  HotModule &operator=(const HotModule &) = delete;

  // Registers an entry point that every version must export. Register
  // before the first reload, or the current version is checked for it now.
  template <class Fn> Expected<Entry<Fn>> entry(const std::string &name) {
    auto slot = register_entry(name);
    if (!slot)
      return slot.take_error();
    return Entry<Fn>(this, slot.value());
  }

  std::optional<Error> reload(const std::string &path, const VerifyOptions &extra = {});
  std::optional<Error> reload(const std::vector<std::uint8_t> &bytes, const std::string &name,
                              const VerifyOptions &extra = {});
  // Makes the previous version current again and retires the current one.
  std::optional<Error> rollback();
  // Unmaps retired versions that no call is inside; returns how many. With
  // forwarding, replaced versions are not unmapped here: see quiesce().
  std::size_t collect();
  // With forwarding: the host holds no pointer into replaced versions
  // beyond the newest forward_keep_versions (call it, say, between frames,
  // after re-taking the pointers it keeps). Unmaps those no call is inside,
  // and what collect() would; returns how many.
  std::size_t quiesce();

  std::optional<VersionInfo> current() const;
  std::uint64_t generation() const { return generation_.load(); } // publishes so far
  std::size_t mapped_versions() const;

  // Holds one version for a batch of calls. Empty when nothing is loaded.
  class HOTLINK_API Pin {
  public:
    Pin() = default;
    Pin(Pin &&o) noexcept : v_(o.v_) { o.v_ = nullptr; }
    Pin &operator=(Pin &&) = delete;
    ~Pin();
    explicit operator bool() const { return v_ != nullptr; }
    std::uint64_t version() const;
    template <class Fn> Fn *get(const Entry<Fn> &e) const {
      return reinterpret_cast<Fn *>(slot(e.slot_));
    }
    // The address of the entry registered at `slot` (Entry::slot()) in
    // this version, untyped; nullptr when the pin is empty or the slot was
    // never registered. For bindings that cannot name the entry's type.
    void *address(int slot) const;

  private:
    friend class HotModule;
    explicit Pin(Version *v) : v_(v) {}
    void *slot(int i) const;
    Version *v_ = nullptr;
  };

  Pin pin() const;

  // Keeps the version `p` holds mapped for the Keep's lifetime, without
  // counting as a call inside it: reload() neither waits for it (state)
  // nor holds back forwarding for it. For pointers into a version the host
  // keeps past its calls with forwarding off (a callback object a version
  // made and a library keeps calling): without a Keep such a version is
  // unmapped two reloads later, and the next call through the pointer
  // faults. Empty when `p` is.
  class HOTLINK_API Keep {
  public:
    Keep() = default;
    Keep(Keep &&o) noexcept : v_(o.v_) { o.v_ = nullptr; }
    Keep &operator=(Keep &&o) noexcept;
    ~Keep();
    explicit operator bool() const { return v_ != nullptr; }
    std::uint64_t version() const;

  private:
    friend class HotModule;
    explicit Keep(Version *v) : v_(v) {}
    Version *v_ = nullptr;
  };
  Keep keep_mapped(const Pin &p) const;

  // Linux only. Calls `e` like operator(), but a hardware fault (SIGSEGV,
  // SIGBUS, SIGILL, SIGFPE) raised on this thread inside the call returns a
  // LoadFailed error instead of killing the process. The error names the
  // version whose code faulted, found by address: the faulting
  // instruction, or when it lies in a library (libc, a C++ library the
  // module links) the innermost caller that is a version's code. When that
  // is the current version, the module rolls back to the previous one; a
  // fault in a replaced version's code (a pointer the host kept), or in
  // code of a version already unmapped ("code of retired version N
  // (unmapped)"), rolls nothing back: the current version is innocent.
  //
  // What this does and does not make safe: it is for the moment right after
  // a reload, when a fresh version may be wrong. The faulting call is
  // abandoned mid-way (siglongjmp): its stack is discarded without running
  // destructors, and any lock it held (its own, or the C library's if it
  // faulted inside malloc) stays held, any memory it was writing stays
  // half-written. Use it for kernels that compute into buffers the host
  // owns and can discard; do not use it for code that takes locks or owns
  // resources. However the call ends (a return, a C++ exception passing
  // through to the host, a longjmp out of it), its guard is disarmed: later
  // faults outside guarded calls, faults on other threads, and stack
  // overflows (no alternate stack is installed) reach the process's own
  // handlers as before.
  template <class R, class... A>
  Expected<R> guarded(const Entry<R(A...)> &e, A... args) {
    static_assert(!std::is_void_v<R>, "guarded() needs a value-returning entry point");
    Pin p = pin();
    if (!p)
      return make_error(ErrorCode::BadRequest, "no version is loaded", {}, {}, "reload() first");
    auto fn = p.get(e);
    R result{};
    if (auto fault = call_guarded(std::move(p), [&] { result = fn(std::forward<A>(args)...); }))
      return *fault;
    return result;
  }

  template <class R, class... A> class Entry<R(A...)> {
  public:
    // Calls the current version. Precondition: a version is loaded.
    R operator()(A... args) const {
      Pin p = module_->pin();
      if (!p) {
        std::fprintf(stderr, "hotlink: HotModule entry called before any version was loaded\n");
        std::abort();
      }
      return p.get(*this)(std::forward<A>(args)...);
    }
    int slot() const { return slot_; }

  private:
    friend class HotModule;
    friend class Pin;
    Entry(HotModule *m, int slot) : module_(m), slot_(slot) {}
    HotModule *module_;
    int slot_;
  };

private:
  // Runs `call` inside `p`'s version; on a fault, releases the pin and
  // returns what faulted, rolling back where that is the current version.
  std::optional<Error> call_guarded(Pin p, const std::function<void()> &call);
  struct Blame;
  Blame blame_locked(bool memory, std::uintptr_t address, const std::uintptr_t *frames, int count) const;
  void rollback_locked(); // previous_ is mapped; mu_ held
  Expected<int> register_entry(const std::string &name);
  Expected<std::unique_ptr<Version>> map_version(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                                 const VerifyOptions &extra);
  std::optional<Error> run_on_load(const Version &fresh, const Version *old);
  std::optional<Error> publish_with_state(Version *old, Version *fresh, StateCarry &plan);
  bool close_and_drain(Version *old);
  void publish(Version *fresh, Version *old);
  void carry_back(Version *bad, Version *prev);
  static Version *gate();
  void retire_locked(Version *v);
  std::size_t collect_locked();
  std::unique_ptr<Version> fresh_record();
  void recycle(std::unique_ptr<Version> v);
  void recycle_unmapped();
  void own_code_again(Version *v);
  void forward_to(Version *target, Version *replaced);
  void forward_pending_locked();
  bool wait_unpinned(Version *v) const;
  void forwarding_off(const std::string &why);
  std::vector<ForwardImage *> forwarded_except(const Version *v, std::vector<std::uint64_t> *pinned = nullptr) const;

  ModuleOptions options_;
  mutable std::mutex mu_; // reload, rollback, collect, registration
  std::atomic<Version *> current_{nullptr};
  Version *previous_ = nullptr;
  std::vector<std::unique_ptr<Version>> versions_; // mapped, oldest first
  std::vector<std::unique_ptr<Version>> spare_;    // records of unmapped versions, reused
  std::vector<std::string> entries_;
  std::atomic<std::uint64_t> generation_{0};
  std::uint64_t next_number_ = 1;
  std::string forwarding_off_; // why forwarding does not run here (said once)
  bool forward_pending_ = false; // a replaced version was pinned when forwarding ran
  // Versions unmapped lately, so that a fault at an address they held is
  // named as theirs (the newest 64).
  struct Unmapped {
    std::uint64_t number;
    std::string source;
    std::vector<ImageRange> ranges;
  };
  std::vector<Unmapped> unmapped_;
  void unmap_locked(Version *v);
};

// Reloads a module when its artifact file is replaced. Linux: inotify on
// the file's directory (a rename onto the name, or a writer closing it);
// Windows: ReadDirectoryChangesW on it; elsewhere, or when neither is
// available, polling the file's identity (inode, size, mtime). Changes are debounced: a reload starts only after
// `debounce` without further events. Since artifacts are published by
// rename, a file still being written is never loaded; one written in place
// is loaded after its writer closes it, and if it is not a valid artifact
// the old version keeps serving.
class HOTLINK_API Watcher {
public:
  struct Options {
    std::chrono::milliseconds debounce{50};
    std::chrono::milliseconds poll{100};
    bool force_polling = false;
  };
  Watcher(HotModule &module, std::string path, Options options);
  ~Watcher(); // stops and joins
  Watcher(const Watcher &) = delete;
  Watcher &operator=(const Watcher &) = delete;

  std::uint64_t reloads() const;  // succeeded
  std::uint64_t failures() const; // refused
  std::optional<Error> last_error() const;
  bool polling() const;

private:
  struct Impl; // loader/watcher.cpp, over the host's notification (watcher_linux.cpp)
  std::unique_ptr<Impl> impl_;
};

} // namespace hotlink::loader
