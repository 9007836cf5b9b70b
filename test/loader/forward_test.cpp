// Pointers that follow the reload: with ModuleOptions::forward_old_versions,
// a raw function pointer taken from an entry, a callback the kernel handed
// out (a static function) and an object the kernel made (its vtable lives in
// the kernel) all run the newest version's code, from any thread, while no
// page of the process is ever writable and executable.
#include "hotlink/hot_module.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

// What the host knows of the kernel's objects. Not in an unnamed namespace:
// there, the compiler sees that nothing in this file implements area() and
// calls the pure virtual handler instead.
struct Shape {
  virtual int area() const = 0;
  virtual ~Shape() {}
};

namespace hotlink::loader {
namespace {

using test::Bytes;

// Version `v` of a C++ kernel: values differ by version.
std::string kernel_source(int v) {
  std::string V = std::to_string(v);
  return "#include <hotlink/state.h>\n"
         "struct Shape { virtual int area() const = 0; virtual ~Shape() {} };\n"
         "static int HOTLINK_STATE calls = 0;\n"
         "struct Square final : Shape {\n"
         "  Square(int s, int *d) : side(s), destroyed(d) {}\n"
         "  int area() const override { return side * side * " + V + "; }\n"
         "  ~Square() override { *destroyed = " + V + "; }\n"
         "  int side; int *destroyed;\n"
         "};\n"
         "static int on_event(int x) { return x * 3 + 100 * " + V + "; }\n"
         "extern \"C\" int value(void) { __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED); return 10 * " + V + "; }\n"
         "extern \"C\" int count(void) { return __atomic_load_n(&calls, __ATOMIC_RELAXED); }\n"
         "extern \"C\" int tiny(void) { return 0; }\n"
         // lea eax, [rdi + V]; ret: 4 bytes, shorter than a jump (a C++ getter often is)
         "extern \"C\" int getter(int x) { return x + " + V + "; }\n"
         "typedef int (*Callback)(int);\n"
         "extern \"C\" Callback callback(void) { return &on_event; }\n"
         "extern \"C\" Shape *make_square(int side, int *destroyed) { return new Square(side, destroyed); }\n";
}

Bytes kernel(int v) {
  return test::compile_with({HOTLINK_TEST_CLANG, "--target=x86_64-linux-gnu", "-O1", "-x", "c++", "-shared", "-fPIC",
                             "-fuse-ld=lld", "-fno-exceptions", "-I" HOTLINK_TEST_SOURCE_DIR "/include", "-lstdc++"},
                            kernel_source(v), ".so");
}

using Callback = int (*)(int);

struct Kernel {
  HotModule module;
  HotModule::Entry<int()> value, count;
  HotModule::Entry<Callback()> callback;
  HotModule::Entry<Shape *(int, int *)> make;
  explicit Kernel(ModuleOptions o)
      : module(std::move(o)), value(module.entry<int()>("value").value()),
        count(module.entry<int()>("count").value()), callback(module.entry<Callback()>("callback").value()),
        make(module.entry<Shape *(int, int *)>("make_square").value()) {}
};

ModuleOptions forwarding() {
  ModuleOptions o;
  o.forward_old_versions = true;
  return o;
}

// What the host kept from the version current when it was called.
struct Kept {
  int (*value)() = nullptr;
  Callback callback = nullptr;
  Shape *shape = nullptr;
};

Kept keep(Kernel &k, int *destroyed) {
  auto pin = k.module.pin();
  return {pin.get(k.value), pin.get(k.callback)(), pin.get(k.make)(3, destroyed)};
}

bool has(const std::vector<std::string> &list, const std::string &part) {
  return std::any_of(list.begin(), list.end(), [&](const std::string &s) { return s.find(part) != std::string::npos; });
}

TEST(Forward, KeptPointerCallbackAndObjectRunTheNewVersion) {
  Bytes v1 = kernel(1), v2 = kernel(2);
  Kernel k(forwarding());
  ASSERT_FALSE(k.module.reload(v1, "shapes.so"));
  int destroyed = 0;
  Kept kept = keep(k, &destroyed);
  EXPECT_EQ(kept.value(), 10);
  EXPECT_EQ(kept.callback(1), 103);
  EXPECT_EQ(kept.shape->area(), 9);
  auto getter = k.module.entry<int(int)>("getter").value();
  int (*kept_getter)(int) = k.module.pin().get(getter);
  const auto *code = reinterpret_cast<const unsigned char *>(kept_getter);
  ASSERT_EQ(code[3], 0xC3) << "the getter is not the 4-byte function this test is about";
  EXPECT_EQ(kept_getter(5), 6);

  ASSERT_FALSE(k.module.reload(v2, "shapes.so"));
  EXPECT_EQ(kept.value(), 20);         // a raw pointer from Pin::get
  EXPECT_EQ(kept.callback(1), 203);    // a static function the kernel handed out
  EXPECT_EQ(kept.shape->area(), 18);   // a virtual call through version 1's vtable
  // The state was carried before the jumps were written: version 2 counts on.
  EXPECT_EQ(k.count(), 2);
  auto info = k.module.current();
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->forwarding.unavailable.empty()) << info->forwarding.unavailable;
  EXPECT_GE(info->forwarding.forwarded, 6u); // value, count, callback, make_square, on_event, area, ~Square
  // Shorter than a jump: reached through the padding after it (a short
  // jump to a near jump there), not kept running version 1.
  std::string reasons;
  for (const std::string &r : info->forwarding.kept_reasons)
    reasons += r + "\n";
  EXPECT_FALSE(has(info->forwarding.kept_reasons, "getter")) << reasons;
  EXPECT_FALSE(has(info->forwarding.kept_reasons, "tiny")) << reasons;
  EXPECT_EQ(kept_getter(5), 7) << "a kept pointer to a 4-byte function runs version 1";

  // Rollback forwards back.
  ASSERT_FALSE(k.module.rollback());
  EXPECT_EQ(kept_getter(5), 6);
  EXPECT_EQ(kept.value(), 10);
  EXPECT_EQ(kept.callback(2), 106);
  EXPECT_EQ(k.value(), 10);
  ASSERT_FALSE(k.module.reload(v2, "shapes.so"));
  EXPECT_EQ(kept.callback(2), 206);
  delete kept.shape; // version 2's destructor
  EXPECT_EQ(destroyed, 2);
}

TEST(Forward, OffByDefaultKeptPointersRunTheirOwnVersion) {
  Kernel k(ModuleOptions{});
  ASSERT_FALSE(k.module.reload(kernel(1), "shapes.so"));
  int destroyed = 0;
  Kept kept = keep(k, &destroyed);
  ASSERT_FALSE(k.module.reload(kernel(2), "shapes.so"));
  EXPECT_EQ(k.value(), 20);
  EXPECT_EQ(kept.value(), 10);
  EXPECT_EQ(kept.callback(1), 103);
  EXPECT_EQ(kept.shape->area(), 9);
  delete kept.shape;
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(k.module.current()->forwarding.forwarded, 0u);
}

// Pages of this process that are writable and executable at once.
std::vector<std::string> writable_and_executable() {
  std::vector<std::string> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::size_t sp = line.find(' ');
    if (sp != std::string::npos && line.size() > sp + 3 && line[sp + 2] == 'w' && line[sp + 3] == 'x')
      out.push_back(line);
  }
  return out;
}

TEST(Forward, FourThreadsCallKeptPointersThrough400Reloads) {
  Bytes v1 = kernel(1), v2 = kernel(2);
  Kernel k(forwarding());
  ASSERT_FALSE(k.module.reload(v1, "shapes.so"));
  int destroyed = 0;
  Kept kept = keep(k, &destroyed);
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0}, wrong{0}, saw_v2{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        int v = kept.value(), c = kept.callback(0), a = kept.shape->area();
        wrong += (v != 10 && v != 20) + (c != 100 && c != 200) + (a != 9 && a != 18);
        saw_v2 += (v == 20) + (c == 200) + (a == 18);
        calls += 3;
      }
    });
  std::vector<std::string> wx;
  std::thread maps_checker([&] {
    while (!stop.load() && wx.empty())
      wx = writable_and_executable();
  });
  int refused = 0;
  for (int i = 0; i < 400; ++i)
    refused += k.module.reload(i % 2 ? v1 : v2, "shapes.so").has_value();
  stop = true;
  for (auto &t : callers)
    t.join();
  maps_checker.join();
  EXPECT_EQ(refused, 0);
  EXPECT_EQ(wrong.load(), 0) << "of " << calls.load() << " calls";
  EXPECT_GT(calls.load(), 400);
  EXPECT_GT(saw_v2.load(), 0); // version 1's pointers reached version 2's code
  EXPECT_TRUE(wx.empty()) << wx.front();
  EXPECT_EQ(kept.value(), 10); // the last reload (i = 399) made version 1's code current
  auto info = k.module.current();
  EXPECT_TRUE(info->forwarding.unavailable.empty()) << info->forwarding.unavailable;
  delete kept.shape;
  EXPECT_EQ(destroyed, 1);
}

TEST(Forward, QuiesceUnmapsAllButTheNewestReplacedVersions) {
  Bytes v1 = kernel(1), v2 = kernel(2);
  std::vector<std::uint64_t> unloaded;
  ModuleOptions o = forwarding();
  o.forward_keep_versions = 2;
  o.on_unload = [&](std::uint64_t n) { unloaded.push_back(n); };
  Kernel k(std::move(o));
  for (int i = 0; i < 6; ++i)
    ASSERT_FALSE(k.module.reload(i % 2 ? v2 : v1, "shapes.so"));
  EXPECT_EQ(k.module.collect(), 0u);
  EXPECT_EQ(k.module.mapped_versions(), 6u); // forwarded versions stay until quiesce()
  int destroyed = 0;
  Kept kept = keep(k, &destroyed); // from version 6, the current one
  // Versions 1 to 3 go; 4 and 5 are the two newest replaced ones; 6 serves.
  EXPECT_EQ(k.module.quiesce(), 3u);
  EXPECT_EQ(unloaded, (std::vector<std::uint64_t>{3, 2, 1}));
  EXPECT_EQ(k.module.mapped_versions(), 3u);
  ASSERT_FALSE(k.module.reload(v1, "shapes.so"));
  EXPECT_EQ(kept.value(), 10);
  EXPECT_EQ(kept.shape->area(), 9);
  delete kept.shape;
  EXPECT_EQ(destroyed, 1);
}

// A host whose own handler holds the signal forwarding uses: reload() says
// once that forwarding is off, and kept pointers run their own version.
TEST(ForwardDeathTest, WithoutItsSignalReloadSaysSoOnceAndBehavesAsWithout) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Bytes v1 = kernel(1), v2 = kernel(2);
  EXPECT_EXIT(
      {
        struct sigaction sa = {};
        sa.sa_handler = [](int) {};
        sigaction(SIGRTMAX - 3, &sa, nullptr);
        Kernel k(forwarding());
        bool ok = !k.module.reload(v1, "shapes.so");
        int destroyed = 0;
        Kept kept = keep(k, &destroyed);
        ok = ok && !k.module.reload(v2, "shapes.so") && kept.value() == 10 && k.value() == 20 &&
             k.module.current()->forwarding.unavailable.find("SIGRTMAX-3") != std::string::npos;
        ok = ok && !k.module.reload(v1, "shapes.so") && k.value() == 10; // said once, not again
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "forward_old_versions is off for this module: signal .* \\(SIGRTMAX-3\\)");
}

// LLVM's x86 disassembler is a module loaded on the first forward
// (loader/decoder/decoder.h). Without it, reloads still work; forwarding
// is off, and the message names the module and where it was looked for.
TEST(ForwardDeathTest, WithoutTheDecoderModuleReloadSaysWhereItLookedAndBehavesAsWithout) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Bytes v1 = kernel(1), v2 = kernel(2);
  EXPECT_EXIT(
      {
        ::setenv("HOTLINK_DECODER_MODULE", "/nonexistent/libhotlink-x86-decoder.so", 1);
        Kernel k(forwarding());
        bool ok = !k.module.reload(v1, "shapes.so");
        int destroyed = 0;
        Kept kept = keep(k, &destroyed);
        ok = ok && !k.module.reload(v2, "shapes.so") && kept.value() == 10 && k.value() == 20 &&
             k.module.current()->forwarding.forwarded == 0;
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0),
      "forward_old_versions is off for this module: .*libhotlink-x86-decoder-[0-9.]+so.*/nonexistent/");
}

} // namespace
} // namespace hotlink::loader
