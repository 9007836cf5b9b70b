// Hot reload in a real C++ plugin: a physics plugin on Box2D (Debian's
// libbox2d-dev, a C++ library with vtables and callbacks that nobody here
// wrote), linked by hotlink with -l box2d and driven through HotModule from
// several threads while versions replace each other. What a game engine
// relies on:
// - a pinned batch runs one version's code, and no call ever runs a version
//   before reload() made it current, with and without forwarding and state;
// - a guarded call's fault names the version whose code faulted, and only
//   that version is rolled back (never an innocent current one);
// - an exception or a longjmp leaving a guarded call leaves no guard armed:
//   the host's own handler sees the next fault.
#include "hotlink/hot_module.h"
#include "hotlink/link_service.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace hotlink::loader {
namespace {

using test::Bytes;

// The plugin. Each image's plugin_serial is set by the host (on_load) to
// the version number the image is loaded as, so a result names the
// version whose code computed it. Macros choose a variant: WITH_STATE
// (the frame count is HOTLINK_STATE), FAULT_IN_BOX2D (step() hands Box2D
// a null body, which faults inside libbox2d), FAULT_IN_LISTENER (the
// contact listener writes through null).
const char *kPlugin = R"(
#include <box2d/box2d.h>
#include <hotlink/state.h>
#include <stdexcept>

extern "C" int plugin_serial = 0;
#ifdef WITH_STATE
static long HOTLINK_STATE frames = 0;
#else
static long frames = 0;
#endif
static int *volatile nowhere = nullptr;

namespace {
// Reads the serial again after a while: a single call whose two reads
// differ ran two versions' code.
[[gnu::noinline]] int serial_again() {
  for (volatile int i = 0; i < 100; ++i) {
  }
  return __atomic_load_n(&plugin_serial, __ATOMIC_RELAXED);
}

// Called by Box2D's solver for every touching contact at every step.
struct Listener final : b2ContactListener {
  int max_serial = 0;
  void PreSolve(b2Contact *, const b2Manifold *) override {
#ifdef FAULT_IN_LISTENER
    *nowhere = 1;
#endif
    if (plugin_serial > max_serial)
      max_serial = plugin_serial;
  }
};

struct Scene {
  b2World world{b2Vec2(0.f, -10.f)};
  Listener listener;
};
} // namespace

extern "C" {
Scene *scene_make(int bodies) {
  Scene *s = new Scene;
  s->world.SetContactListener(&s->listener);
  b2BodyDef ground_def;
  b2Body *ground = s->world.CreateBody(&ground_def);
  b2PolygonShape floor;
  floor.SetAsBox(50.f, 1.f);
  ground->CreateFixture(&floor, 0.f);
  for (int i = 0; i < bodies; ++i) {
    b2BodyDef bd;
    bd.type = b2_dynamicBody;
    bd.allowSleep = false;
    bd.position.Set(-20.f + (i % 10) * 1.5f, 1.5f + (i / 10) * 1.05f);
    b2Body *b = s->world.CreateBody(&bd);
    b2PolygonShape box;
    box.SetAsBox(0.5f, 0.5f);
    b->CreateFixture(&box, 1.f);
  }
  return s;
}
int scene_free(Scene *s) {
  delete s;
  return 0;
}
int step(Scene *s) {
#ifdef FAULT_IN_BOX2D
  s->world.DestroyBody(nullptr);
#endif
  s->world.Step(1.f / 60.f, 8, 3);
  __atomic_add_fetch(&frames, 1, __ATOMIC_RELAXED);
  int a = plugin_serial, b = serial_again();
  return a == b ? a : -1;
}
// The largest serial whose listener code ran since the last ask.
int listener_max(Scene *s) {
  int m = s->listener.max_serial;
  s->listener.max_serial = 0;
  return m;
}
int tag(int) { return plugin_serial; }
int mix(int) {
  int a = __atomic_load_n(&plugin_serial, __ATOMIC_RELAXED), b = serial_again();
  return a == b ? a : -1;
}
long frames_done(int) { return __atomic_load_n(&frames, __ATOMIC_RELAXED); }
int throws(int x) {
  if (x < 0)
    throw std::runtime_error("the plugin threw");
  return plugin_serial;
}
int call_host(void (*host)()) {
  host();
  return plugin_serial;
}
}
)";

const std::vector<std::string> kExports = {"plugin_serial", "scene_make", "scene_free", "step",
                                           "listener_max",  "tag",        "mix",        "frames_done",
                                           "throws",        "call_host"};

// The plugin compiled with `defines` and linked by hotlink, in-process,
// against the system's libbox2d.
Bytes plugin(const std::vector<std::string> &defines) {
  std::vector<std::string> args = {HOTLINK_TEST_CLANG, "--target=x86_64-linux-gnu", "-O1", "-g", "-x", "c++",
                                   "-c", "-fPIC", "-I" HOTLINK_TEST_SOURCE_DIR "/include"};
  for (const std::string &d : defines)
    args.push_back("-D" + d);
  Bytes obj = test::compile_with(args, kPlugin, ".o");
  if (obj.empty())
    return {};
  static LinkService service;
  LinkRequest req;
  req.inputs = {Input::memory("plugin.o", obj)};
  req.libraries = {"box2d"};
  req.exports = exports::ExportPolicy::list(kExports);
  LinkResult r = service.link(req);
  EXPECT_TRUE(r.ok()) << r.error->to_string();
  return r.artifact;
}

struct Plugins {
  Bytes a, b, state_a, state_b, fault_in_box2d, fault_in_listener;
};

const Plugins &plugins() {
  static const Plugins p = [] {
    Plugins p;
    p.a = plugin({"VARIANT=1"});
    p.b = plugin({"VARIANT=2"});
    p.state_a = plugin({"VARIANT=1", "WITH_STATE"});
    p.state_b = plugin({"VARIANT=2", "WITH_STATE"});
    p.fault_in_box2d = plugin({"FAULT_IN_BOX2D"});
    p.fault_in_listener = plugin({"FAULT_IN_LISTENER"});
    return p;
  }();
  return p;
}

struct Scene;

// A module over the plugin whose on_load gives each image the version
// number it is loaded as (only the test's own thread reloads, so the next
// number is known).
struct Host {
  std::atomic<int> next_serial{1};
  HotModule module;
  HotModule::Entry<Scene *(int)> scene_make;
  HotModule::Entry<int(Scene *)> scene_free, step, listener_max;
  HotModule::Entry<int(int)> tag, mix, throws;
  HotModule::Entry<long(int)> frames_done;
  HotModule::Entry<int(void (*)())> call_host;

  static ModuleOptions with_serials(ModuleOptions o, std::atomic<int> *next) {
    o.on_load = [next](const Library &fresh, const Library *) -> std::optional<Error> {
      *static_cast<int *>(fresh.symbol("plugin_serial")) = next->load();
      return std::nullopt;
    };
    return o;
  }
  explicit Host(ModuleOptions o = {})
      : module(with_serials(std::move(o), &next_serial)),
        scene_make(module.entry<Scene *(int)>("scene_make").value()),
        scene_free(module.entry<int(Scene *)>("scene_free").value()),
        step(module.entry<int(Scene *)>("step").value()),
        listener_max(module.entry<int(Scene *)>("listener_max").value()), tag(module.entry<int(int)>("tag").value()),
        mix(module.entry<int(int)>("mix").value()), throws(module.entry<int(int)>("throws").value()),
        frames_done(module.entry<long(int)>("frames_done").value()),
        call_host(module.entry<int(void (*)())>("call_host").value()) {}

  // A world made by the current version, which `keep` then holds mapped
  // (its listener's code is that version's).
  Scene *world_kept_mapped(HotModule::Keep &keep) {
    HotModule::Pin pin = module.pin();
    keep = module.keep_mapped(pin);
    return pin.get(scene_make)(10);
  }

  // Reloads `bytes` as the next version; its number, or 0 (and a failure).
  std::uint64_t load(const Bytes &bytes, const std::string &name) {
    auto err = module.reload(bytes, name);
    EXPECT_FALSE(err) << err->to_string();
    if (err)
      return 0;
    std::uint64_t n = module.current()->number;
    EXPECT_EQ(n, static_cast<std::uint64_t>(next_serial.load()));
    ++next_serial;
    return n;
  }
};

// ---------------------------------------------------------------------------
// The frame loop: threads step their own worlds in pinned batches while the
// test's thread alternates two versions.

struct Tally {
  std::atomic<long> batches{0}, calls{0}, steps{0};
  std::atomic<long> wrong_pinned{0};     // a pinned call ran another version's code
  std::atomic<long> mixed{0};            // one call ran two versions' code
  std::atomic<long> unpublished{0};      // code of a version not yet published ran
  std::atomic<long> kept_calls{0}, kept_moved{0};
};

struct FrameLoop {
  bool forward = false, state = false;
};

void run_frame_loop(const FrameLoop &mode, Tally &t) {
  const Plugins &p = plugins();
  ModuleOptions o;
  o.forward_old_versions = mode.forward;
  Host h(o);
  const Bytes &va = mode.state ? p.state_a : p.a;
  const Bytes &vb = mode.state ? p.state_b : p.b;
  ASSERT_EQ(h.load(va, "plugin_a.so"), 1u);
  // The worlds are made by version 1: their listeners' vtables are its.
  // Without forwarding the host keeps version 1 mapped while they live.
  HotModule::Keep keep_v1;
  int (*kept_tag)(int) = nullptr;
  Scene *worlds[2];
  {
    HotModule::Pin pin = h.module.pin();
    keep_v1 = h.module.keep_mapped(pin);
    kept_tag = pin.get(h.tag);
    for (Scene *&w : worlds)
      w = pin.get(h.scene_make)(50);
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (Scene *world : worlds)
    threads.emplace_back([&, world] {
      while (!stop.load()) {
        HotModule::Pin pin = h.module.pin();
        const int v = static_cast<int>(pin.version());
        for (int i = 0; i < 4; ++i) {
          int r[3] = {pin.get(h.tag)(0), pin.get(h.mix)(0), pin.get(h.step)(world)};
          t.calls += 3;
          ++t.steps;
          for (int x : r) {
            t.mixed += x == -1;
            t.wrong_pinned += x != -1 && x != v;
          }
        }
        // The listener is version 1's object, called by Box2D: a kept pointer.
        int seen = pin.get(h.listener_max)(world);
        if (seen > static_cast<int>(h.module.generation()))
          ++t.unpublished;
        if (!mode.forward && seen != 1 && seen != 0)
          ++t.wrong_pinned; // without forwarding it runs version 1's own code
        ++t.batches;
      }
    });
  // A thread calling a pointer kept from version 1, with no pin.
  threads.emplace_back([&] {
    while (!stop.load()) {
      int r = kept_tag(0);
      ++t.kept_calls;
      if (r > static_cast<int>(h.module.generation()))
        ++t.unpublished;
      t.kept_moved += r != 1;
      if (!mode.forward && r != 1)
        ++t.wrong_pinned;
    }
  });
  // At least 1.5 s (3 s sanitized) and 40 reloads, at most 20 s: a busy
  // machine gives fewer reloads in the same time.
  std::uint64_t last = 1;
  auto start = std::chrono::steady_clock::now();
  auto at_least = start + std::chrono::milliseconds(test::kSanitized ? 3000 : 1500);
  auto at_most = start + std::chrono::seconds(20);
  for (int i = 0; std::chrono::steady_clock::now() < at_most && (i < 40 || std::chrono::steady_clock::now() < at_least);
       ++i) {
    last = h.load(i % 2 ? va : vb, i % 2 ? "plugin_a.so" : "plugin_b.so");
    if (!last)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  stop = true;
  for (auto &th : threads)
    th.join();
  {
    HotModule::Pin pin = h.module.pin();
    if (mode.state) { // every step of every version counted into one carried variable
      EXPECT_EQ(pin.get(h.frames_done)(0), t.steps.load());
    }
    for (Scene *w : worlds)
      pin.get(h.scene_free)(w);
  }
  EXPECT_GT(last, 40u) << "too few reloads to mean anything";
  std::printf("forwarding %s, state %s: %ld pinned calls in %ld batches and %ld kept-pointer calls (%ld ran a newer "
              "version) during %llu reloads\n",
              mode.forward ? "on" : "off", mode.state ? "on" : "off", t.calls.load(), t.batches.load(),
              t.kept_calls.load(), t.kept_moved.load(), static_cast<unsigned long long>(last - 1));
}

void expect_truthful(const FrameLoop &mode) {
  Tally t;
  run_frame_loop(mode, t);
  EXPECT_GT(t.batches.load(), 20);
  EXPECT_EQ(t.wrong_pinned.load(), 0) << "of " << t.calls.load() << " calls in " << t.batches.load() << " batches";
  EXPECT_EQ(t.mixed.load(), 0);
  EXPECT_EQ(t.unpublished.load(), 0);
  if (mode.forward) {
    EXPECT_GT(t.kept_moved.load(), 0) << "the kept pointer never ran a newer version: forwarding did nothing";
  }
}

TEST(Plugin, FrameLoopIsTruthfulWithoutForwarding) { expect_truthful({false, false}); }
TEST(Plugin, FrameLoopIsTruthfulWithForwarding) { expect_truthful({true, false}); }
TEST(Plugin, FrameLoopIsTruthfulWithState) { expect_truthful({false, true}); }
TEST(Plugin, FrameLoopIsTruthfulWithForwardingAndState) { expect_truthful({true, true}); }

// ---------------------------------------------------------------------------
// Faults are blamed by address.

// Version 2 hands Box2D a null body: the fault is inside libbox2d, called
// from version 2's code, which is rolled back.
TEST(Plugin, AFaultInsideBox2DNamesTheVersionThatCalledIt) {
  Host h;
  ASSERT_EQ(h.load(plugins().a, "plugin_a.so"), 1u);
  Scene *world = h.module.pin().get(h.scene_make)(10);
  ASSERT_EQ(h.load(plugins().fault_in_box2d, "plugin_bad.so"), 2u);
  auto r = h.module.guarded(h.step, world);
  ASSERT_FALSE(r.ok());
  const std::string &m = r.error().message;
  EXPECT_NE(m.find("version 2 raised SIGSEGV in libbox2d.so"), std::string::npos) << m;
  EXPECT_NE(m.find("rolled back to version 1"), std::string::npos) << m;
  EXPECT_EQ(r.error().input, "plugin_bad.so");
  EXPECT_EQ(h.module.current()->number, 1u);
  EXPECT_EQ(h.module.guarded(h.step, world).value(), 1);
  h.module.pin().get(h.scene_free)(world);
}

// Without forwarding, a world made by version 1 keeps calling version 1's
// listener. Once version 1 is unmapped (two reloads later) the next step
// faults at an address no image holds now: the error says so, and the
// innocent current version keeps serving.
TEST(Plugin, ACallbackThatOutlivedItsVersionIsBlamedOnIt) {
  Host h;
  ASSERT_EQ(h.load(plugins().a, "plugin_a.so"), 1u);
  Scene *world = h.module.pin().get(h.scene_make)(10);
  ASSERT_EQ(h.load(plugins().b, "plugin_b.so"), 2u);
  ASSERT_EQ(h.load(plugins().a, "plugin_a.so"), 3u); // version 1 is unmapped here
  ASSERT_EQ(h.module.mapped_versions(), 2u);
  auto r = h.module.guarded(h.step, world);
  ASSERT_FALSE(r.ok());
  const std::string &m = r.error().message;
  EXPECT_NE(m.find("retired version 1 (unmapped) was reached inside a guarded call into version 3: SIGSEGV"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nothing was rolled back"), std::string::npos) << m;
  EXPECT_NE(r.error().hint.find("Keep"), std::string::npos) << r.error().hint;
  EXPECT_EQ(h.module.current()->number, 3u) << "an innocent version was rolled back";
  // The world's listener is gone; the module serves on.
  EXPECT_EQ(h.module.guarded(h.tag, 0).value(), 3);
  h.module.pin().get(h.scene_free)(world);
}

// The same world with version 1 kept mapped: its listener runs, nothing faults.
TEST(Plugin, AKeepHoldsAVersionMappedForTheCallbacksItMade) {
  Host h;
  ASSERT_EQ(h.load(plugins().a, "plugin_a.so"), 1u);
  HotModule::Keep keep;
  Scene *world = h.world_kept_mapped(keep);
  EXPECT_EQ(keep.version(), 1u);
  for (int i = 0; i < 4; ++i)
    h.load(i % 2 ? plugins().a : plugins().b, "plugin.so");
  EXPECT_EQ(h.module.mapped_versions(), 3u); // the current, the rollback target, and the kept version 1
  EXPECT_EQ(h.module.guarded(h.step, world).value(), 5);
  EXPECT_EQ(h.module.pin().get(h.listener_max)(world), 1); // version 1's listener ran
  h.module.pin().get(h.scene_free)(world);
  keep = HotModule::Keep();
  EXPECT_EQ(h.module.collect(), 1u);
  EXPECT_EQ(h.module.mapped_versions(), 2u);
}

// A replaced version's listener (kept mapped) faults during a guarded call
// into the current version: the replaced version is named, the current
// one is not rolled back.
TEST(Plugin, AFaultInAReplacedVersionsCodeRollsNothingBack) {
  Host h;
  ASSERT_EQ(h.load(plugins().fault_in_listener, "plugin_bad_listener.so"), 1u);
  HotModule::Keep keep;
  Scene *world = h.world_kept_mapped(keep);
  ASSERT_EQ(h.load(plugins().a, "plugin_a.so"), 2u);
  ASSERT_EQ(h.load(plugins().b, "plugin_b.so"), 3u);
  auto r = h.module.guarded(h.step, world);
  ASSERT_FALSE(r.ok());
  const std::string &m = r.error().message;
  EXPECT_NE(m.find("version 1 raised SIGSEGV inside a guarded call into version 3"), std::string::npos) << m;
  EXPECT_EQ(r.error().input, "plugin_bad_listener.so");
  EXPECT_EQ(h.module.current()->number, 3u) << "an innocent version was rolled back";
  h.module.pin().get(h.scene_free)(world);
}

// With forwarding, version 1's listener jumps into the current version's
// listener. When that code faults, the current version is named (not
// version 1, whose jump led there) and rolled back.
TEST(Plugin, WithForwardingTheFaultingVersionIsTheOneWhoseCodeRan) {
  ModuleOptions o;
  o.forward_old_versions = true;
  Host h(o);
  ASSERT_EQ(h.load(plugins().a, "plugin_a.so"), 1u);
  Scene *world = h.module.pin().get(h.scene_make)(10);
  ASSERT_EQ(h.load(plugins().b, "plugin_b.so"), 2u);
  ASSERT_EQ(h.load(plugins().fault_in_listener, "plugin_bad_listener.so"), 3u);
  auto info = h.module.current();
  ASSERT_TRUE(info->forwarding.unavailable.empty()) << info->forwarding.unavailable;
  auto r = h.module.guarded(h.step, world);
  ASSERT_FALSE(r.ok());
  const std::string &m = r.error().message;
  EXPECT_NE(m.find("version 3 raised SIGSEGV inside a guarded call"), std::string::npos) << m;
  EXPECT_NE(m.find("rolled back to version 2"), std::string::npos) << m;
  EXPECT_EQ(r.error().input, "plugin_bad_listener.so");
  // Rolled back: version 1's listener jumps to version 2's again. (The
  // abandoned step left Box2D in its contact update, which the next step
  // redoes.)
  EXPECT_EQ(h.module.current()->number, 2u);
  EXPECT_EQ(h.module.guarded(h.step, world).value(), 2);
  EXPECT_EQ(h.module.pin().get(h.listener_max)(world), 2);
  h.module.pin().get(h.scene_free)(world);
}

// ---------------------------------------------------------------------------
// However a guarded call ends, the host's own handler sees the next fault.

// The page the host means to fault on: its handler says so only for a
// fault there (a fault a stale guard swallowed would come back elsewhere).
void *volatile g_fault_page = nullptr;

void host_handler(int, siginfo_t *info, void *) {
  static const char said[] = "the host's handler ran\n";
  if (info->si_addr != g_fault_page)
    ::_exit(43);
  (void)!::write(2, said, sizeof said - 1);
  ::_exit(42);
}

void install_host_handler() {
  struct sigaction sa = {};
  sa.sa_sigaction = host_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
}

// A page nothing may touch: a fault without undefined behaviour that a
// sanitizer would report first (a store through null).
int *no_access() {
  void *p = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_fault_page = p;
  return p == MAP_FAILED ? nullptr : static_cast<int *>(p);
}

// The repro: the host installs its handler, a guarded call throws through
// to the host's catch, and a later fault outside guarded calls must reach
// the host's handler (it jumped into the dead guarded frame and died in
// __longjmp).
void throw_then_fault(int exceptions) {
  install_host_handler();
  Host h;
  if (!h.load(plugins().a, "plugin_a.so"))
    ::_exit(3);
  for (int i = 0; i < exceptions; ++i) {
    try {
      (void)h.module.guarded(h.throws, -1);
      ::_exit(4); // it did not throw
    } catch (const std::runtime_error &) {
    }
  }
  if (h.module.guarded(h.throws, 1).value() != 1) // guarded calls still work between
    ::_exit(5);
  *no_access() = 1; // outside any guarded call
  ::_exit(6);
}

TEST(PluginGuard, AnExceptionLeavingAGuardedCallDisarmsItsGuard) {
  GTEST_FLAG_SET(death_test_style, "threadsafe"); // the child starts afresh: no threads forked
  (void)plugins();
  EXPECT_EXIT(throw_then_fault(1), ::testing::ExitedWithCode(42), "the host's handler ran");
  EXPECT_EXIT(throw_then_fault(100), ::testing::ExitedWithCode(42), "the host's handler ran");
}

sigjmp_buf g_host_escape;
void escape_to_host() { siglongjmp(g_host_escape, 1); }

// The host's callback longjmps out of a guarded call (as a host's
// watchdog or error handler may), to a sigsetjmp in this frame.
void escape_a_guarded_call(Host &h) {
  install_host_handler();
  if (!h.load(plugins().a, "plugin_a.so"))
    ::_exit(3);
  if (sigsetjmp(g_host_escape, 1) == 0) {
    (void)h.module.guarded(h.call_host, &escape_to_host);
    ::_exit(4); // did not jump
  }
}

// The guard left behind must not catch a later fault.
void longjmp_then_fault() {
  Host h;
  escape_a_guarded_call(h);
  *no_access() = 1;
  ::_exit(6);
}

// Faults `depth` calls deeper than its caller, each with a frame of its own.
[[gnu::noinline]] int fault_deep(int depth) {
  volatile char frame[256];
  frame[0] = static_cast<char>(depth);
  if (depth == 0) {
    *no_access() = 1;
    return 0;
  }
  return fault_deep(depth - 1) + frame[0];
}

// After the longjmp the host calls guarded() again, then faults deeper on
// its stack than the abandoned guarded call was: the stale guard was
// dropped when the next one was armed.
void longjmp_guard_again_then_fault_deep() {
  Host h;
  escape_a_guarded_call(h);
  if (h.module.guarded(h.tag, 0).value() != 1)
    ::_exit(5);
  (void)fault_deep(64);
  ::_exit(6);
}

TEST(PluginGuard, ALongjmpOutOfAGuardedCallDisarmsItsGuard) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  (void)plugins();
  EXPECT_EXIT(longjmp_then_fault(), ::testing::ExitedWithCode(42), "the host's handler ran");
  EXPECT_EXIT(longjmp_guard_again_then_fault_deep(), ::testing::ExitedWithCode(42), "the host's handler ran");
}

// Exceptions and returns on several threads at once: each reaches its own
// caller (each thread's guards are its own).
TEST(PluginGuard, ExceptionsOnManyThreadsReachEachCaller) {
  Host h;
  ASSERT_EQ(h.load(plugins().a, "plugin_a.so"), 1u);
  std::atomic<int> thrown{0}, returned{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        try {
          auto r = h.module.guarded(h.throws, (i + t) % 2 ? -1 : 1);
          returned += r.ok() && r.value() == 1;
        } catch (const std::runtime_error &) {
          ++thrown;
        }
      }
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(thrown.load(), 400);
  EXPECT_EQ(returned.load(), 400);
}

} // namespace
} // namespace hotlink::loader
