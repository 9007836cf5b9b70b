// State that survives a reload: HOTLINK_STATE variables keep their values
// across versions, a version whose state no longer fits is refused while the
// old one keeps serving, and no call's update is lost to a reload.
#include "hotlink/hot_module.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <thread>

namespace hotlink::loader {
namespace {

using test::Bytes;

// A kernel with an int and a struct in state. `pair_type` and `counter_type`
// let a version change them; `version` tells the versions apart.
std::string kernel_source(int version, const std::string &counter_type = "int",
                          const std::string &pair_type = "struct Pair { int a; int b; }", const std::string &extra = "") {
  return "#include <hotlink/state.h>\n" + pair_type + ";\n" + "static " + counter_type +
         " HOTLINK_STATE counter = 0;\n"
         "static struct Pair HOTLINK_STATE pair = {0, 0};\n"
         "int version(void) { return " +
         std::to_string(version) +
         "; }\n"
         "int bump(void) { pair.a += 1; pair.b += 2; return (int)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED); }\n"
         "int count(void) { return (int)__atomic_load_n(&counter, __ATOMIC_RELAXED); }\n"
         "int pair_a(void) { return pair.a; }\n"
         "int pair_b(void) { return pair.b; }\n" +
         extra;
}

Bytes kernel(const std::string &source, std::vector<std::string> flags = {}) {
  std::vector<std::string> args = {HOTLINK_TEST_CLANG, "--target=x86_64-linux-gnu", "-O1", "-x", "c", "-shared",
                                   "-nostdlib", "-fuse-ld=lld", "-fPIC", "-fno-stack-protector",
                                   "-I" HOTLINK_TEST_SOURCE_DIR "/include"};
  args.insert(args.end(), flags.begin(), flags.end());
  return test::compile_with(args, source, ".so");
}

struct Kernel {
  HotModule module;
  HotModule::Entry<int()> version, bump, count, a, b;
  explicit Kernel(ModuleOptions o = {})
      : module(std::move(o)), version(module.entry<int()>("version").value()),
        bump(module.entry<int()>("bump").value()), count(module.entry<int()>("count").value()),
        a(module.entry<int()>("pair_a").value()), b(module.entry<int()>("pair_b").value()) {}
};

bool has(const std::vector<std::string> &list, const std::string &part) {
  return std::any_of(list.begin(), list.end(), [&](const std::string &s) { return s.find(part) != std::string::npos; });
}

TEST(State, AnIntAndAStructSurvive50Reloads) {
  Bytes v1 = kernel(kernel_source(1)), v2 = kernel(kernel_source(2), {"-g"});
  Kernel k;
  int calls = 0;
  for (int i = 0; i < 50; ++i) {
    ASSERT_FALSE(k.module.reload(i % 2 ? v2 : v1, "k.so")) << "reload " << i;
    EXPECT_EQ(k.version(), i % 2 ? 2 : 1);
    for (int j = 0; j <= i % 3; ++j, ++calls)
      k.bump();
    ASSERT_EQ(k.count(), calls) << "after reload " << i;
    ASSERT_EQ(k.a(), calls);
    ASSERT_EQ(k.b(), 2 * calls);
  }
  auto info = k.module.current();
  ASSERT_TRUE(info);
  EXPECT_TRUE(has(info->state.carried, "counter"));
  EXPECT_TRUE(has(info->state.carried, "pair"));
}

TEST(State, AnIntThatBecomesLongLongIsRefusedAndTheOldVersionKeepsCounting) {
  Kernel k;
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(1)), "k.so"));
  k.bump();
  k.bump();
  auto err = k.module.reload(kernel(kernel_source(2, "long long")), "k2.so");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, ErrorCode::StateMismatch) << err->to_string();
  EXPECT_EQ(err->symbol, "counter");
  EXPECT_NE(err->message.find("size changed from 4 to 8"), std::string::npos) << err->message;
  EXPECT_EQ(err->input, "k2.so");
  EXPECT_EQ(k.version(), 1);
  k.bump();
  EXPECT_EQ(k.count(), 3);
  EXPECT_EQ(k.module.mapped_versions(), 1u); // the refused version is gone
}

TEST(State, SwappedFieldsOfTheSameSizeAreRefusedWhenTheKernelHasDebugInfo) {
  const std::string swapped = "struct Pair { int b; int a; }";
  {
    Kernel k;
    ASSERT_FALSE(k.module.reload(kernel(kernel_source(1), {"-g"}), "k.so"));
    k.bump();
    auto err = k.module.reload(kernel(kernel_source(2, "int", swapped), {"-g"}), "k.so");
    ASSERT_TRUE(err);
    EXPECT_EQ(err->code, ErrorCode::StateMismatch);
    EXPECT_EQ(err->symbol, "pair");
    EXPECT_NE(err->message.find("layout changed at the same size"), std::string::npos) << err->message;
    EXPECT_NE(err->message.find("a@0:int(4);b@4:int(4)"), std::string::npos) << err->message;
    EXPECT_EQ(k.version(), 1);
    EXPECT_EQ(k.a(), 1);
  }
  // int -> float at the same size and offset is a layout change too.
  {
    Kernel k;
    ASSERT_FALSE(k.module.reload(kernel(kernel_source(1), {"-g"}), "k.so"));
    auto err = k.module.reload(kernel(kernel_source(2, "int", "struct Pair { int a; float b; }"), {"-g"}), "k.so");
    ASSERT_TRUE(err);
    EXPECT_NE(err->message.find("float(4)"), std::string::npos) << err->message;
  }
  // Without debug info only the size can be compared (documented): carried.
  Kernel k;
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(1)), "k.so"));
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(2, "int", swapped)), "k.so"));
}

TEST(State, AStatePointerIntoTheOldImageIsRefusedOnTheNextReload) {
  const std::string keeps = "static const char *HOTLINK_STATE label = 0;\n"
                            "void remember(void) { label = \"a literal of this version\"; }\n";
  const std::string pair = "struct Pair { int a; int b; }";
  Bytes v1 = kernel(kernel_source(1, "int", pair, keeps)), v2 = kernel(kernel_source(2, "int", pair, keeps));
  Kernel k;
  auto remember = k.module.entry<void()>("remember").value();
  ASSERT_FALSE(k.module.reload(v1, "k.so"));
  ASSERT_FALSE(k.module.reload(v2, "k.so")) << "a null pointer is carried";
  remember(); // version 2 keeps a pointer to its own read-only data
  auto err = k.module.reload(v1, "k.so");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, ErrorCode::StateMismatch) << err->to_string();
  EXPECT_EQ(err->symbol, "label");
  EXPECT_NE(err->message.find("offset 0 points into the old version's image"), std::string::npos) << err->message;
  EXPECT_EQ(k.version(), 2);
  // Reset lets the new version start it afresh, and says so.
  ModuleOptions o;
  o.state_mismatch = StateMismatchPolicy::Reset;
  Kernel r(o);
  auto r_remember = r.module.entry<void()>("remember").value();
  ASSERT_FALSE(r.module.reload(v1, "k.so"));
  r.bump();
  r_remember();
  ASSERT_FALSE(r.module.reload(v2, "k.so"));
  auto info = r.module.current();
  EXPECT_TRUE(has(info->state.reset, "label"));
  EXPECT_TRUE(has(info->state.warnings, "label"));
  EXPECT_TRUE(has(info->state.carried, "counter"));
  EXPECT_EQ(r.count(), 1);
}

TEST(State, AMigrationHookReceivesBothLayoutsAndWritesTheNewValue) {
  ModuleOptions o;
  o.state_mismatch = StateMismatchPolicy::Migrate;
  std::vector<std::string> seen;
  o.migrate_state = [&](const StateVariable &old, const StateVariable &fresh) -> std::optional<Error> {
    seen.push_back(old.name + " " + old.layout + " -> " + fresh.layout);
    if (old.size == 4 && fresh.size == 8) { // int -> long long: widen
      long long v = *static_cast<const int *>(old.address);
      *static_cast<long long *>(fresh.address) = v;
      return std::nullopt;
    }
    return make_error(ErrorCode::StateMismatch, "no migration for " + old.name);
  };
  Kernel k(o);
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(1), {"-g"}), "k.so"));
  for (int i = 0; i < 5; ++i)
    k.bump();
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(2, "long long"), {"-g"}), "k.so"));
  EXPECT_EQ(k.count(), 5);
  EXPECT_EQ(k.version(), 2);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("counter int(4) -> long long(8)"), std::string::npos) << seen[0];
  EXPECT_TRUE(has(k.module.current()->state.migrated, "counter"));
  // A hook that refuses refuses the reload.
  auto err = k.module.reload(kernel(kernel_source(3, "int", "struct Pair { int b; int a; }"), {"-g"}), "k.so");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, ErrorCode::StateMismatch);
  EXPECT_EQ(k.version(), 2);
}

TEST(State, StateAddedStartsAtItsInitialValueAndRemovedStateIsDropped) {
  Kernel k;
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(1)), "k.so"));
  k.bump();
  std::string more = "static int HOTLINK_STATE fresh_one = 42;\nint fresh_value(void) { return fresh_one; }\n";
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(2, "int", "struct Pair { int a; int b; }", more)), "k.so"));
  auto info = k.module.current();
  EXPECT_TRUE(has(info->state.added, "fresh_one"));
  EXPECT_EQ(k.count(), 1);
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(3)), "k.so"));
  EXPECT_TRUE(has(k.module.current()->state.dropped, "fresh_one"));
  EXPECT_EQ(k.count(), 1);
}

TEST(State, RollbackCarriesTheStateBack) {
  Kernel k;
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(1)), "k.so"));
  k.bump();
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(2)), "k.so"));
  k.bump();
  k.bump();
  ASSERT_FALSE(k.module.rollback());
  EXPECT_EQ(k.version(), 1);
  EXPECT_EQ(k.count(), 3) << "the calls made in version 2 count after the rollback";
}

TEST(State, ACallThatStaysInsideTheOldVersionMakesTheReloadWaitThenRefuse) {
  ModuleOptions o;
  o.state_drain_timeout = std::chrono::milliseconds(50);
  Kernel k(o);
  ASSERT_FALSE(k.module.reload(kernel(kernel_source(1)), "k.so"));
  auto err = [&] {
    HotModule::Pin busy = k.module.pin(); // as a call that has not returned
    return k.module.reload(kernel(kernel_source(2)), "k.so");
  }();
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, ErrorCode::StateBusy) << err->to_string();
  EXPECT_EQ(k.version(), 1);
  EXPECT_FALSE(k.module.reload(kernel(kernel_source(2)), "k.so")) << "once the call returned";
  EXPECT_EQ(k.version(), 2);
}

// Calls from several threads while another reloads: every call's increment
// reaches the state the next version starts from.
TEST(State, NoUpdateIsLostWhileThreadsCallDuring200Reloads) {
  Bytes v1 = kernel(kernel_source(1)), v2 = kernel(kernel_source(2));
  Kernel k;
  ASSERT_FALSE(k.module.reload(v1, "k.so"));
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      while (!stop.load()) {
        k.bump();
        calls.fetch_add(1);
      }
    });
  int refused = 0;
  for (int i = 0; i < 200; ++i)
    if (auto err = k.module.reload(i % 2 ? v1 : v2, "k.so")) {
      ADD_FAILURE() << err->to_string();
      ++refused;
    }
  stop = true;
  for (auto &t : callers)
    t.join();
  EXPECT_EQ(refused, 0);
  EXPECT_GT(calls.load(), 0);
  EXPECT_EQ(k.count(), calls.load());
}

// The layouts come from the DWARF module (loader/dwarf/dwarf.h), loaded
// on the first reload of an image with state. Without it, such a reload is
// refused with an error that names the module and where it was looked for,
// and the version before keeps serving with its state.
TEST(StateDeathTest, WithoutTheDwarfModuleAStateReloadIsRefusedByNameAndTheOldVersionServes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Bytes stateless = kernel("int version(void) { return 7; }\n"
                           "int bump(void) { return 0; } int count(void) { return 0; }\n"
                           "int pair_a(void) { return 0; } int pair_b(void) { return 0; }\n");
  Bytes with_state = kernel(kernel_source(1), {"-g"});
  EXPECT_EXIT(
      {
        ::setenv("HOTLINK_DWARF_MODULE", "/nonexistent/libhotlink-dwarf.so", 1);
        Kernel k;
        bool ok = !k.module.reload(stateless, "plain.so") && k.version() == 7; // needs no module
        auto refused = k.module.reload(with_state, "k.so");
        if (refused)
          std::fprintf(stderr, "%s\n", refused->to_string().c_str());
        ok = ok && refused.has_value() && k.version() == 7;
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "libhotlink-dwarf-[0-9.]+so.*/nonexistent/");
}

} // namespace
} // namespace hotlink::loader
