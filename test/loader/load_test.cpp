// The loader as an engine uses it: nothing is mapped before it is verified,
// every refusal is named, reloads swap atomically while threads call, and a
// version is unmapped only after its last call returned.
#include "hotlink/hot_module.h"
#include "hotlink/load.h"
#include "exports/recovery.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <malloc.h>
#include <map>
#include <mutex>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::loader {
namespace {

using test::Bytes;

const char *kHost = "x86_64-linux-gnu";

std::string kernel_source(int tag, int dims = 2, const char *extra = "") {
  return test::metadata_kernel(tag, dims, extra);
}

Bytes kernel(int tag, int dims = 2, const char *extra = "") { return test::compile_so(kHost, kernel_source(tag, dims, extra)); }

ExpectedAbi expected_abi() {
  return ExpectedAbi{1, {{"input", 1, 2, 1, 8}, {"scale", 0, 0, 2, 32}}};
}

// ---------------------------------------------------------------------------
// Static verification: each refusal on a real wrong input.

TEST(Verify, AcceptsAHostSharedObjectAndHashesIt) {
  Bytes so = kernel(1);
  auto v = verify(so, "k.so", {{"f", "f_argv", "f_metadata"}});
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  // Nothing asked for by name: the identity is the (fast) BLAKE3.
  EXPECT_EQ(v->blake3, blake3_hex(so));
  EXPECT_EQ(v->blake3.size(), 64u);
  EXPECT_TRUE(v->sha256.empty());
  VerifyOptions o;
  o.blake3 = blake3_hex(so);
  EXPECT_TRUE(verify(so, "k.so", o).ok());
}

TEST(Verify, RefusesAnObjectFile) {
  auto v = verify(test::compile_c(kHost, "int f(void){return 1;}"), "k.o");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::NotASharedObject);
  EXPECT_EQ(v.error().input, "k.o");
}

TEST(Verify, RefusesGarbage) {
  std::string text = "#!/bin/sh\necho not an image\n";
  auto v = verify(Bytes(text.begin(), text.end()), "script.so");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::NotASharedObject);
}

// Section headers overwritten with garbage: the loader (which reads the
// dynamic section) would still map it, but its exports cannot be read.
// That is damage, said as such, not "missing-export".
TEST(Verify, RefusesDamagedSectionHeadersAsDamage) {
  Bytes so = kernel(1);
  std::uint64_t shoff = 0;
  std::memcpy(&shoff, so.data() + 0x28, 8);
  ASSERT_LT(shoff, so.size());
  std::fill(so.begin() + static_cast<std::ptrdiff_t>(shoff), so.end(), 0x5a);
  auto v = verify(so, "k.so", {{"f"}});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::NotASharedObject) << v.error().to_string();
  EXPECT_NE(v.error().message.find("section headers are damaged"), std::string::npos) << v.error().to_string();
  EXPECT_EQ(v.error().hint, "the file is damaged: link it again");
}

TEST(Verify, RefusesAWindowsDll) {
  Bytes dll = test::compile_so("x86_64-pc-windows-msvc", "int f(void){return 1;} int _DllMainCRTStartup(void){return 1;}");
  auto v = verify(dll, "k.dll");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::FormatMismatch) << v.error().to_string();
}

TEST(Verify, RefusesAnAarch64SharedObject) {
  auto v = verify(test::compile_so("aarch64-linux-gnu", "int f(void){return 1;}"), "arm.so");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::ArchMismatch);
}

TEST(Verify, RefusesAMissingExport) {
  auto v = verify(kernel(1), "k.so", {{"f", "g_argv"}});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::MissingExport);
  EXPECT_EQ(v.error().symbol, "g_argv");
}

TEST(Verify, RefusesTamperedBytes) {
  Bytes so = kernel(1);
  VerifyOptions o;
  o.sha256 = sha256_hex(so);
  so[so.size() / 2] ^= 0x40;
  auto v = verify(so, "k.so", o);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::HashMismatch);
  EXPECT_NE(v.error().message.find(o.sha256), std::string::npos);
}

TEST(Verify, RefusesAnImportNothingProvides) {
  auto v = verify(test::compile_so(kHost, "int hotlink_no_such_symbol(int); int f(int x){return hotlink_no_such_symbol(x);}"),
                  "k.so");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::UnresolvedSymbol);
  EXPECT_EQ(v.error().symbol, "hotlink_no_such_symbol");
  // An import the process has (libc's memcpy) is fine.
  EXPECT_TRUE(verify(test::compile_so(kHost, "void *memcpy(void *, const void *, unsigned long);"
                                             "void f(char *d, const char *s){ memcpy(d, s, 100); }"),
                     "k.so")
                  .ok());
}

// ---------------------------------------------------------------------------
// Private copies and the ABI check.

TEST(Load, TheSamePathLoadsAgainWhileTheOldCopyStaysMapped) {
  std::string path = test::temp_dir() + "/kernel.so";
  test::write_file(path, kernel(1));
  auto a = read_artifact_file(path);
  auto one = load_private(a.value(), path);
  ASSERT_TRUE(one.ok()) << one.error().to_string();
  // Publish a new version by rename, as a writer should.
  test::write_file(path + ".tmp", kernel(2));
  ASSERT_EQ(std::rename((path + ".tmp").c_str(), path.c_str()), 0);
  auto two = load_private(read_artifact_file(path).value(), path);
  ASSERT_TRUE(two.ok());
  auto tag1 = reinterpret_cast<int (*)()>(one.value()->symbol("tag_a"));
  auto tag2 = reinterpret_cast<int (*)()>(two.value()->symbol("tag_a"));
  ASSERT_TRUE(tag1 && tag2);
  EXPECT_EQ(tag1(), 1); // the old image is still there
  EXPECT_EQ(tag2(), 2); // and the loader did not hand back a cached one
}

// A JIT's cache hits load the same bytes over and over: the post-mortem
// store keeps as many copies as are mapped at once (each load maps a copy
// of its own), not one per load; a copy whose bytes changed is not reused.
TEST(Load, TheSameBytesLoadedOverAndOverKeepOneCopyPerLibraryMappedAtOnce) {
  LoadOptions o;
  o.keep_images = test::temp_dir() + "/kept";
  Bytes so = kernel(3);
  auto call = [](const Library &lib) { return reinterpret_cast<int (*)(int)>(lib.symbol("f"))(1); };
  std::string first, second;
  {
    auto a = load_private(so, "k.so", o), b = load_private(so, "k.so", o);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE(a.value()->path(), b.value()->path()) << "two libraries mapped at once share a copy";
    EXPECT_EQ(call(*a.value()), call(*b.value()));
    first = a.value()->path();
    second = b.value()->path();
  }
  for (int i = 0; i < 50; ++i) {
    auto again = load_private(so, "k.so", o);
    ASSERT_TRUE(again.ok()) << again.error().to_string();
    EXPECT_EQ(again.value()->path(), first) << "load " << i << " wrote a new copy";
    EXPECT_EQ(call(*again.value()), call(*load_private(so, "k.so", o).value()));
  }
  std::vector<std::string> files = test::files_in(o.keep_images);
  EXPECT_EQ(test::count_with(files, "k."), 2u) << "the store holds a copy per load";
  // A copy whose bytes changed after it was unmapped (forwarding writes
  // into a mapped copy) is never mapped again.
  ASSERT_EQ(::chmod(first.c_str(), 0700), 0);
  {
    int fd = ::open(first.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "X", 1, static_cast<off_t>(so.size() - 1)), 1);
    ::close(fd);
  }
  auto after = load_private(so, "k.so", o);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after.value()->path(), first);
}

// A copy this process compared once with the bytes it was to map, and
// whose identity had settled, is checked again by that identity (a stat),
// not read: a JIT's hits open the copy only to map it. Whatever changes it
// on disk changes its identity (the ctime, even when the mtime is put
// back), and then the bytes are compared again: a changed copy is never
// mapped.
TEST(Load, ACopyComparedOnceIsCheckedByItsIdentityAndAChangedOneIsNeverMapped) {
  LoadOptions o;
  o.keep_images = test::temp_dir() + "/kept";
  Bytes so = kernel(5);
  auto call = [](const Library &lib) { return reinterpret_cast<int (*)(int)>(lib.symbol("f"))(1); };
  int want = call(*load_private(so, "k.so", o).value()); // writes the copy
  std::string copy = load_private(so, "k.so", o).value()->path();
  std::this_thread::sleep_for(std::chrono::milliseconds(150)); // past base::kSettledNs
  ASSERT_EQ(load_private(so, "k.so", o).value()->path(), copy); // compared, its identity kept
  test::OpenCounter opens({copy});
  for (int i = 0; i < 20; ++i) {
    auto again = load_private(so, "k.so", o);
    ASSERT_TRUE(again.ok()) << again.error().to_string();
    ASSERT_EQ(again.value()->path(), copy);
    EXPECT_EQ(call(*again.value()), want);
    // (Read at each load: inotify folds repeated events not yet read.)
    EXPECT_EQ(opens.opens(), 1u) << "load " << i << " read the copy back, not only mapped it";
  }

  struct stat before;
  ASSERT_EQ(::stat(copy.c_str(), &before), 0);
  ASSERT_EQ(::chmod(copy.c_str(), 0700), 0);
  {
    int fd = ::open(copy.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "X", 1, static_cast<off_t>(so.size() - 1)), 1);
    ::close(fd);
  }
  ASSERT_EQ(::chmod(copy.c_str(), 0500), 0);
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, copy.c_str(), times, 0), 0); // its size and mtime as they were
  auto after = load_private(so, "k.so", o);
  ASSERT_TRUE(after.ok()) << after.error().to_string();
  EXPECT_NE(after.value()->path(), copy) << "a copy changed on disk was mapped";
  EXPECT_EQ(call(*after.value()), want);
}

TEST(Load, AbiCheckAcceptsTheExpectedMetadataAndNamesTheFirstDifference) {
  auto good = load_private(kernel(1), "k.so");
  ASSERT_TRUE(good.ok());
  EXPECT_FALSE(check_abi(*good.value(), "f_metadata", expected_abi()).has_value());
  auto other = load_private(kernel(1, /*dims=*/3), "k3.so");
  auto err = check_abi(*other.value(), "f_metadata", expected_abi());
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->code, ErrorCode::AbiMismatch);
  EXPECT_EQ(err->symbol, "input");
  EXPECT_NE(err->message.find("3 dimensions, expected 2"), std::string::npos) << err->message;
  ExpectedAbi fewer = expected_abi();
  fewer.arguments.pop_back();
  EXPECT_NE(check_abi(*good.value(), "f_metadata", fewer)->message.find("takes 2 arguments"), std::string::npos);
}

// ---------------------------------------------------------------------------
// HotModule.

struct Kernels {
  Bytes v[5];
  Kernels() {
    for (int i = 1; i <= 4; ++i)
      v[i] = kernel(i);
  }
};

const Kernels &kernels() {
  static Kernels k;
  return k;
}

ModuleOptions abi_options() {
  ModuleOptions o;
  o.abi = expected_abi();
  o.metadata_symbol = "f_metadata";
  return o;
}

TEST(HotModule, ReloadSwapsAndRollbackReturns) {
  HotModule m(abi_options());
  auto f = m.entry<int(int)>("f");
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(m.pin());
  ASSERT_FALSE(m.reload(kernels().v[1], "v1").has_value());
  EXPECT_EQ((*f)(4), 41);
  ASSERT_FALSE(m.reload(kernels().v[2], "v2").has_value());
  EXPECT_EQ((*f)(4), 42);
  EXPECT_EQ(m.current()->number, 2u);
  EXPECT_EQ(m.current()->identity, "blake3:" + blake3_hex(kernels().v[2]));
  ASSERT_FALSE(m.rollback().has_value());
  EXPECT_EQ((*f)(4), 41);
  EXPECT_EQ(m.current()->number, 1u);
  EXPECT_EQ(m.generation(), 3u);
  EXPECT_TRUE(m.rollback().has_value()); // only one step back is kept
}

TEST(HotModule, FailedReloadsKeepTheOldVersionServing) {
  int refuse_next = 0;
  ModuleOptions o = abi_options();
  o.on_load = [&](const Library &fresh, const Library *old) -> std::optional<Error> {
    if (refuse_next)
      return make_error(ErrorCode::InitFailed, "state transfer refused");
    return std::nullopt;
  };
  HotModule m(o);
  auto f = m.entry<int(int)>("f");
  ASSERT_FALSE(m.reload(kernels().v[1], "v1").has_value());

  auto bad_abi = m.reload(kernel(9, /*dims=*/4), "bad-abi");
  ASSERT_TRUE(bad_abi.has_value());
  EXPECT_EQ(bad_abi->code, ErrorCode::AbiMismatch);

  Bytes no_f = test::compile_so(kHost, "int g(int x){return x;}");
  auto missing = m.reload(no_f, "missing");
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->code, ErrorCode::MissingExport);

  refuse_next = 1;
  auto init = m.reload(kernels().v[3], "v3");
  ASSERT_TRUE(init.has_value());
  EXPECT_EQ(init->code, ErrorCode::InitFailed);
  EXPECT_EQ(init->input, "v3");

  Bytes garbage(100, 0x7f);
  EXPECT_EQ(m.reload(garbage, "garbage")->code, ErrorCode::NotASharedObject);

  EXPECT_EQ((*f)(4), 41); // still version 1, after four refusals
  EXPECT_EQ(m.current()->number, 1u);
  EXPECT_EQ(m.generation(), 1u);
  EXPECT_EQ(m.mapped_versions(), 1u); // the refused images were unmapped
}

TEST(HotModule, OnLoadSeesTheOldVersion) {
  int old_tag = -1;
  ModuleOptions o;
  o.on_load = [&](const Library &fresh, const Library *old) -> std::optional<Error> {
    if (old)
      old_tag = reinterpret_cast<int (*)()>(old->symbol("tag_a"))();
    return std::nullopt;
  };
  HotModule m(o);
  ASSERT_FALSE(m.reload(kernels().v[1], "v1").has_value());
  ASSERT_FALSE(m.reload(kernels().v[2], "v2").has_value());
  EXPECT_EQ(old_tag, 1);
}

TEST(HotModule, RetiredVersionsAreUnmappedOnlyWhenNoCallIsInside) {
  std::vector<std::uint64_t> unloaded;
  ModuleOptions o;
  o.on_unload = [&](std::uint64_t v) { unloaded.push_back(v); };
  HotModule m(o);
  auto tag = m.entry<int()>("tag_a").value();
  ASSERT_FALSE(m.reload(kernels().v[1], "v1").has_value());
  HotModule::Pin held = m.pin(); // a call "inside" version 1
  ASSERT_FALSE(m.reload(kernels().v[2], "v2").has_value());
  ASSERT_FALSE(m.reload(kernels().v[3], "v3").has_value()); // retires v1
  EXPECT_TRUE(unloaded.empty());
  EXPECT_EQ(held.get(tag)(), 1); // still mapped, still callable
  EXPECT_EQ(m.collect(), 0u);
  { HotModule::Pin gone = std::move(held); }
  EXPECT_EQ(m.collect(), 1u);
  EXPECT_EQ(unloaded, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(tag(), 3);
}

const char *kDivideByZero = "int f(int x) { volatile int z = x - x; return x / z; }";

// Kernel `tag` with f replaced by `body` (a definition of f that faults).
Bytes faulting_kernel(int tag, const std::string &body) {
  const std::string f = "int f(int x) { return x * 10 + tag_data; }";
  std::string src = kernel_source(tag, 2, "");
  return test::compile_so(kHost, src.replace(src.find(f), f.size(), body));
}

TEST(HotModule, GuardedCallRollsBackAFaultingVersion) {
  HotModule m;
  auto f = m.entry<int(int)>("f").value();
  ASSERT_FALSE(m.reload(kernels().v[1], "v1").has_value());
  auto ok = m.guarded(f, 4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), 41);
  // Version 2 dereferences null; version 3 divides by zero.
  Bytes segv = faulting_kernel(2, "int f(int x) { return *(volatile int *)(long)(x - x) + tag_data; }");
  ASSERT_FALSE(m.reload(segv, "v2-segv").has_value());
  auto crashed = m.guarded(f, 4);
  ASSERT_FALSE(crashed.ok());
  EXPECT_EQ(crashed.error().code, ErrorCode::LoadFailed);
  EXPECT_NE(crashed.error().message.find("SIGSEGV"), std::string::npos) << crashed.error().message;
  EXPECT_NE(crashed.error().message.find("rolled back"), std::string::npos);
  EXPECT_EQ(crashed.error().input, "v2-segv");
  EXPECT_EQ(m.current()->number, 1u); // back on version 1
  EXPECT_EQ(m.guarded(f, 5).value(), 51);

  Bytes fpe = faulting_kernel(3, kDivideByZero);
  ASSERT_FALSE(m.reload(fpe, "v3-fpe").has_value());
  auto div = m.guarded(f, 4);
  ASSERT_FALSE(div.ok());
  EXPECT_NE(div.error().message.find("SIGFPE"), std::string::npos);
  EXPECT_EQ(m.guarded(f, 6).value(), 61);
  // The process's own handling of faults outside guarded calls is unchanged.
  struct sigaction now;
  sigaction(SIGSEGV, nullptr, &now);
  EXPECT_TRUE(now.sa_flags & SA_SIGINFO);
}

// The stress a user ran: threads call guarded() into whatever serves while
// the main thread alternates reload() between a version that divides by
// zero and a good one. Each reload verifies inside LLVM's crash recovery,
// which swaps the process's fault handlers in and out: a guarded fault
// must never kill the process (it did in 2 of 7 runs), and a rollback
// must undo only the version that faulted, never the good version that
// reload() had just published and returned success for (18 of 300
// cycles), and say what happened.
TEST(HotModule, GuardedCallsStaySafeWhileReloadsRace) {
  HotModule m;
  auto f = m.entry<int(int)>("f").value();
  Bytes fpe = faulting_kernel(3, kDivideByZero);
  ASSERT_FALSE(m.reload(kernels().v[1], "good").has_value());
  std::atomic<bool> stop{false};
  std::atomic<int> faults{0}, calls{0}, wrong{0};
  std::mutex mu;
  std::vector<std::string> bad_messages;
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      while (!stop.load()) {
        auto r = m.guarded(f, 4);
        ++calls;
        if (r.ok()) {
          if (r.value() != 41)
            ++wrong;
          continue;
        }
        ++faults;
        const std::string &msg = r.error().message;
        bool named = msg.find("SIGFPE") != std::string::npos && r.error().input == "fpe" &&
                     (msg.find("rolled back to version") != std::string::npos ||
                      msg.find("already replaced it") != std::string::npos);
        if (!named) {
          std::lock_guard<std::mutex> lock(mu);
          bad_messages.push_back(r.error().to_string());
        }
      }
    });
  int rolled_back_good = 0;
  for (int cycle = 0; cycle < 300; ++cycle) {
    ASSERT_FALSE(m.reload(fpe, "fpe").has_value());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    ASSERT_FALSE(m.reload(kernels().v[1], "good").has_value());
    std::uint64_t published = m.current()->number;
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    // Nothing but this thread reloads: only a wrong rollback moves it.
    if (m.current()->number != published)
      ++rolled_back_good;
  }
  stop = true;
  for (auto &t : callers)
    t.join();
  EXPECT_EQ(rolled_back_good, 0) << "a good version reload() had published was rolled back";
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(faults.load(), 0) << "the faulting version was never called (" << calls.load() << " calls)";
  EXPECT_TRUE(bad_messages.empty()) << bad_messages.front();
  EXPECT_EQ(m.guarded(f, 5).value(), 51);
}

// LLVM's crash recovery (on while any thread verifies or links) swaps the
// process's fault handlers in and puts back what it found when it is turned
// off. A process whose first guarded call ran while it was on lost the
// guard when it was turned off: the next fault in a guarded call killed
// the process with SIGFPE. Each case runs in a fresh process (the guard is
// installed once per process).
void fpe_after_recovery_scope(bool guard_first_inside_scope) {
  HotModule m;
  auto f = m.entry<int(int)>("f").value();
  ASSERT_FALSE(m.reload(kernels().v[1], "good").has_value());
  {
    exports::RecoveryScope verifying; // another thread verifying a reload
    if (guard_first_inside_scope) {
      ASSERT_EQ(m.guarded(f, 4).value(), 41);
    }
  }
  if (!guard_first_inside_scope) {
    ASSERT_EQ(m.guarded(f, 4).value(), 41);
  }
  {
    exports::RecoveryScope linking;
    Bytes fpe = faulting_kernel(3, kDivideByZero);
    ASSERT_FALSE(m.reload(fpe, "fpe").has_value());
    // A fault while recovery is on, on a thread outside it.
    auto r = m.guarded(f, 4);
    ASSERT_FALSE(r.ok());
  }
  Bytes fpe2 = faulting_kernel(4, kDivideByZero);
  ASSERT_FALSE(m.reload(fpe2, "fpe2").has_value());
  auto r = m.guarded(f, 4); // recovery off again
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("SIGFPE"), std::string::npos);
  std::exit(::testing::Test::HasFailure() ? 1 : 0);
}

TEST(HotModuleDeathTest, AGuardInstalledUnderLLVMsRecoverySurvivesItsEnd) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fpe_after_recovery_scope(true), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(fpe_after_recovery_scope(false), ::testing::ExitedWithCode(0), "");
}

TEST(HotModule, EntryMissingFromTheCurrentVersionIsRefused) {
  HotModule m;
  ASSERT_FALSE(m.reload(kernels().v[1], "v1").has_value());
  auto e = m.entry<int()>("not_exported");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, ErrorCode::MissingExport);
}

// Four threads call two entry points of one version in a tight loop while
// another swaps versions 1,000 times. Every call sees one whole version,
// and no version is unmapped while a call is inside it.
TEST(HotModule, FourCallersAndAThousandSwaps) {
  constexpr int kSwaps = 1000;
  std::map<std::uint64_t, int> tag_of; // version number -> tag (set before publish)
  std::mutex tag_mu;
  std::atomic<int> inflight[kSwaps + 8] = {};
  std::atomic<int> violations{0};
  ModuleOptions o;
  o.on_unload = [&](std::uint64_t v) {
    if (inflight[v].load() != 0)
      ++violations;
  };
  HotModule m(o);
  auto a = m.entry<int()>("tag_a").value();
  auto b = m.entry<int()>("tag_b").value();
  ASSERT_FALSE(m.reload(kernels().v[1], "v1").has_value());
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0}, torn{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        HotModule::Pin p = m.pin();
        std::uint64_t v = p.version();
        inflight[v].fetch_add(1);
        int x = p.get(a)(), y = p.get(b)();
        if (x != y || x < 1 || x > 4)
          ++torn;
        inflight[v].fetch_sub(1);
        ++calls;
      }
    });
  for (int i = 0; i < kSwaps; ++i) {
    auto err = m.reload(kernels().v[1 + (i + 1) % 4], "v");
    ASSERT_FALSE(err.has_value()) << err->to_string();
  }
  stop = true;
  for (auto &t : callers)
    t.join();
  m.collect();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(calls.load(), 0);
  EXPECT_LE(m.mapped_versions(), 2u); // current + rollback target
  EXPECT_EQ(m.generation(), static_cast<std::uint64_t>(kSwaps + 1));
}

// An engine reloads for as long as it runs: the module's memory follows
// the versions mapped at once, not the reloads served. (Each reload used to
// leave its ~700-byte record behind: 1.2 MB after these 1,800.)
TEST(HotModule, MemoryDoesNotGrowWithReloads) {
  ModuleOptions o;
  o.load.keep_images = "off"; // the post-mortem store's bookkeeping aside
  HotModule m(o);
  auto a = m.entry<int()>("tag_a").value();
  auto heap = [] { return mallinfo2().uordblks; };
  std::size_t after_200 = 0;
  for (int i = 1; i <= 2000; ++i) {
    ASSERT_FALSE(m.reload(kernels().v[1 + i % 2], "v").has_value());
    ASSERT_EQ(a(), 1 + i % 2);
    if (i == 200)
      after_200 = heap();
  }
  EXPECT_EQ(m.mapped_versions(), 2u);
  EXPECT_EQ(m.current()->number, 2000u);
  EXPECT_LT(heap(), after_200 + (128u << 10)) << "the heap grew by " << (heap() - after_200) << " bytes";
}

// ---------------------------------------------------------------------------
// Watching.

bool wait_for(const std::function<bool()> &cond, int ms = 5000) {
  for (int i = 0; i < ms / 10; ++i) {
    if (cond())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

void publish(const std::string &path, const Bytes &b) {
  test::write_file(path + ".part", b);
  ASSERT_EQ(std::rename((path + ".part").c_str(), path.c_str()), 0);
}

class WatcherTest : public ::testing::TestWithParam<bool> {};

TEST_P(WatcherTest, PicksUpAReplacedArtifact) {
  std::string path = test::temp_dir() + "/kernel.so";
  publish(path, kernels().v[1]);
  HotModule m;
  auto tag = m.entry<int()>("tag_a").value();
  ASSERT_FALSE(m.reload(path).has_value());
  Watcher w(m, path, {std::chrono::milliseconds(30), std::chrono::milliseconds(20), GetParam()});
  EXPECT_EQ(w.polling(), GetParam());
  publish(path, kernels().v[2]);
  ASSERT_TRUE(wait_for([&] { return w.reloads() >= 1; })) << "no reload";
  EXPECT_EQ(tag(), 2);
  publish(path, kernels().v[3]);
  ASSERT_TRUE(wait_for([&] { return w.reloads() >= 2; }));
  EXPECT_EQ(tag(), 3);
  EXPECT_EQ(w.failures(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, WatcherTest, ::testing::Values(false, true),
                         [](const auto &i) { return i.param ? "polling" : "inotify"; });

TEST(Watcher, AFileBeingWrittenIsNotLoadedEarly) {
  std::string path = test::temp_dir() + "/kernel.so";
  publish(path, kernels().v[1]);
  HotModule m;
  auto tag = m.entry<int()>("tag_a").value();
  ASSERT_FALSE(m.reload(path).has_value());
  Watcher w(m, path, {std::chrono::milliseconds(30), std::chrono::milliseconds(20), false});
  const Bytes &next = kernels().v[2];
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, next.data(), next.size() / 2), static_cast<ssize_t>(next.size() / 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // well past the debounce
  EXPECT_EQ(w.reloads() + w.failures(), 0u) << "a half-written file was picked up";
  EXPECT_EQ(tag(), 1);
  ASSERT_EQ(::write(fd, next.data() + next.size() / 2, next.size() - next.size() / 2),
            static_cast<ssize_t>(next.size() - next.size() / 2));
  ::close(fd);
  ASSERT_TRUE(wait_for([&] { return w.reloads() >= 1; }));
  EXPECT_EQ(tag(), 2);
}

TEST(Watcher, AnInvalidReplacementIsRefusedAndTheOldVersionServes) {
  std::string path = test::temp_dir() + "/kernel.so";
  publish(path, kernels().v[1]);
  HotModule m;
  auto tag = m.entry<int()>("tag_a").value();
  ASSERT_FALSE(m.reload(path).has_value());
  Watcher w(m, path, {std::chrono::milliseconds(30), std::chrono::milliseconds(20), false});
  std::string junk = "not an elf file";
  publish(path, Bytes(junk.begin(), junk.end()));
  ASSERT_TRUE(wait_for([&] { return w.failures() >= 1; }));
  EXPECT_EQ(w.last_error()->code, ErrorCode::NotASharedObject);
  EXPECT_EQ(tag(), 1);
}

} // namespace
} // namespace hotlink::loader
