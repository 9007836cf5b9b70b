// HotModule on a Windows host, under Wine, reloading DLLs the Linux build
// linked (CMakeLists.txt): 200 reloads while 4 threads call through pins
// give no wrong result; each refused version (wrong machine, missing entry
// point, tampered bytes, a stranger's signature) leaves the old one serving
// and says why; a guarded divide by zero and access violation leave the
// process alive and name the version, which is rolled back.
//   hot_reload_test.exe FIXTURE_DIR [gtest flags]
#include "hotlink/hot_module.h"
#include "hotlink/load.h"
#include "hotlink/signature.h"

#include "base/file_handle.h"
#include "test/windows/fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

using namespace hotlink;
using namespace hotlink::test_windows;
using loader::HotModule;

namespace {

// The bytes with the first `from` replaced by `to` (of the same length).
std::vector<std::uint8_t> patched(std::vector<std::uint8_t> bytes, const std::string &from, const std::string &to) {
  auto at = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
  EXPECT_NE(at, bytes.end()) << from;
  if (at != bytes.end())
    std::copy(to.begin(), to.end(), at);
  return bytes;
}

// f(x) = 2x + 1000 in reload_a (MinGW), 2x + 2000 in reload_b (MSVC).
int expected(std::uint64_t version, int x) { return 2 * x + (version % 2 ? 1000 : 2000); }

} // namespace

TEST(WindowsHotReload, TwoHundredReloadsWhileFourThreadsCallThroughPins) {
  HotModule m;
  auto f = m.entry<int(int)>("f");
  ASSERT_TRUE(f) << f.error().to_string();
  const std::vector<std::uint8_t> a = read_bytes(fixture("reload_a.dll")), b = read_bytes(fixture("reload_b.dll"));
  ASSERT_FALSE(m.reload(a, fixture("reload_a.dll")));
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0}, wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int x = t; !stop.load(); x = (x + 7) % 1000) {
        HotModule::Pin p = m.pin();
        int got = p.get(*f)(x);
        if (got != expected(p.version(), x))
          ++wrong;
        ++calls;
      }
    });
  int refused = 0;
  std::string why;
  for (int i = 0; i < 200; ++i) {
    bool odd_next = (m.current()->number + 1) % 2 == 1;
    auto err = odd_next ? m.reload(a, fixture("reload_a.dll")) : m.reload(b, fixture("reload_b.dll"));
    if (err) {
      ++refused;
      why += err->to_string() + "\n";
    }
    m.collect();
  }
  stop = true;
  for (auto &t : callers)
    t.join();
  EXPECT_EQ(refused, 0) << why;
  EXPECT_EQ(m.current()->number, 201u);
  EXPECT_EQ(wrong.load(), 0) << "of " << calls.load() << " calls";
  EXPECT_GT(calls.load(), 200);
  m.collect();
  EXPECT_EQ(m.mapped_versions(), 1u + (m.current()->number > 1)); // the current and its rollback
  // Each version was a private copy: the published DLLs are not locked.
  std::string copy = fixture("reload_a.copy.dll");
  ASSERT_TRUE(CopyFileA(fixture("reload_a.dll").c_str(), copy.c_str(), FALSE));
  ASSERT_FALSE(m.reload(copy));
  EXPECT_TRUE(DeleteFileA(copy.c_str())) << "the reloaded DLL is locked: " << GetLastError();
}

struct Refusal {
  const char *what;
  std::string path;
  std::vector<std::uint8_t> bytes;
  VerifyOptions extra;
  ErrorCode code;
};

TEST(WindowsHotReload, EachRefusedVersionLeavesTheOldOneServingAndSaysWhy) {
  auto trusted = signature::read_public_key(fixture("key.pub"));
  ASSERT_TRUE(trusted) << trusted.error().to_string();
  HotModule m;
  auto f = m.entry<int(int)>("f");
  ASSERT_TRUE(f);
  ASSERT_FALSE(m.reload(fixture("reload_b.dll")));
  VerifyOptions signed_by_us;
  signed_by_us.trusted_keys = {*trusted};
  signed_by_us.statement = read_text(fixture("reload_a.dll.sig"));
  VerifyOptions signed_by_stranger = signed_by_us;
  signed_by_stranger.statement = read_text(fixture("reload_a.dll.stranger.sig"));
  const std::vector<std::uint8_t> a = read_bytes(fixture("reload_a.dll"));
  std::vector<std::uint8_t> tampered = a;
  tampered[tampered.size() / 2] ^= 0x20;
  // Imports that Windows' loader could not bind: a function KERNEL32.dll
  // lacks, a DLL that is nowhere.
  std::vector<std::uint8_t> no_function = patched(a, std::string("Sleep\0", 6), std::string("Sleeq\0", 6));
  std::vector<std::uint8_t> no_dll = patched(a, "KERNEL32.dll", "KERNEL99.dll");
  std::vector<Refusal> refusals = {
      {"a DLL for i386", fixture("i686-pc-windows-msvc.dll"), {}, {}, ErrorCode::ArchMismatch},
      {"a DLL for arm64", fixture("aarch64-pc-windows-msvc.dll"), {}, {}, ErrorCode::ArchMismatch},
      {"a Linux shared object", fixture("x86_64-linux-gnu.so"), {}, {}, ErrorCode::FormatMismatch},
      {"a version without f", fixture("reload_no_f.dll"), {}, {}, ErrorCode::MissingExport},
      {"an import KERNEL32.dll lacks", fixture("reload_a.dll"), no_function, {}, ErrorCode::UnresolvedSymbol},
      {"an import from a DLL that is nowhere", fixture("reload_a.dll"), no_dll, {}, ErrorCode::UnresolvedSymbol},
      {"tampered bytes", fixture("reload_a.dll"), tampered, signed_by_us, ErrorCode::HashMismatch},
      {"a stranger's signature", fixture("reload_a.dll"), {}, signed_by_stranger, ErrorCode::UntrustedSigner},
  };
  for (const Refusal &r : refusals) {
    SCOPED_TRACE(r.what);
    auto err = r.bytes.empty() ? m.reload(r.path, r.extra) : m.reload(r.bytes, r.path, r.extra);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->code, r.code) << err->to_string();
    EXPECT_EQ(err->input, r.path) << err->to_string();
    if (r.code == ErrorCode::MissingExport) {
      EXPECT_EQ(err->symbol, "f");
    }
    if (r.bytes == no_function) {
      EXPECT_EQ(err->symbol, "KERNEL32.dll!Sleeq");
    }
    if (r.bytes == no_dll) {
      EXPECT_EQ(err->symbol, "KERNEL99.dll");
    }
    EXPECT_EQ(m.current()->number, 1u);
    EXPECT_EQ((*f)(5), 2010) << "the old version serves";
  }
  // What the Linux build signed loads.
  EXPECT_FALSE(m.reload(fixture("reload_a.dll"), signed_by_us));
  EXPECT_EQ((*f)(5), 1010);
}

TEST(WindowsHotReload, AGuardedFaultLeavesTheProcessAliveNamesTheVersionAndRollsItBack) {
  HotModule m;
  auto divide = m.entry<int(int)>("divide");
  auto peek = m.entry<int(int *)>("peek");
  ASSERT_TRUE(divide && peek);
  ASSERT_FALSE(m.reload(fixture("reload_a.dll")));
  ASSERT_FALSE(m.reload(fixture("reload_b.dll")));
  auto ok = m.guarded(*divide, 4);
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(*ok, 50000);

  auto by_zero = m.guarded(*divide, 0);
  ASSERT_FALSE(by_zero);
  std::string msg = by_zero.error().message;
  EXPECT_NE(msg.find("version 2 raised EXCEPTION_INT_DIVIDE_BY_ZERO"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rolled back to version 1"), std::string::npos) << msg;
  EXPECT_EQ(by_zero.error().input, fixture("reload_b.dll"));
  EXPECT_EQ(m.current()->number, 1u);

  int value = 7;
  auto fine = m.guarded(*peek, &value);
  ASSERT_TRUE(fine);
  EXPECT_EQ(*fine, 1007);
  auto violation = m.guarded(*peek, static_cast<int *>(nullptr));
  ASSERT_FALSE(violation);
  msg = violation.error().message;
  EXPECT_NE(msg.find("version 1 raised EXCEPTION_ACCESS_VIOLATION"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no previous version"), std::string::npos) << msg;
  EXPECT_EQ(m.current()->number, 1u);
  // And the process goes on calling.
  auto after = m.guarded(*divide, 5);
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, 20000);
}

// Publishes `bytes` at `path` as a build does: a temporary, then a rename.
void publish(const std::string &path, const std::vector<std::uint8_t> &bytes) {
  std::string temp = path + ".tmp";
  std::ofstream(temp, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  ASSERT_TRUE(MoveFileExA(temp.c_str(), path.c_str(), MOVEFILE_REPLACE_EXISTING)) << GetLastError();
}

bool wait_for(const std::function<bool()> &done) {
  for (int i = 0; i < 200 && !done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return done();
}

TEST(WindowsHotReload, TheWatcherReloadsAPublishedDllAndKeepsServingPastADamagedOne) {
  std::string path = fixture("watched.dll");
  publish(path, read_bytes(fixture("reload_a.dll")));
  HotModule m;
  auto f = m.entry<int(int)>("f");
  ASSERT_TRUE(f);
  ASSERT_FALSE(m.reload(path));
  // Notified by ReadDirectoryChangesW, then by polling: both see a DLL
  // published by rename, and a damaged one leaves the old version serving.
  for (bool polling : {false, true}) {
    SCOPED_TRACE(polling ? "polling" : "notified");
    loader::Watcher::Options options;
    options.force_polling = polling;
    std::uint64_t at = m.current()->number;
    loader::Watcher watcher(m, path, options);
    EXPECT_EQ(watcher.polling(), polling);
    publish(path, read_bytes(fixture(at % 2 ? "reload_b.dll" : "reload_a.dll")));
    ASSERT_TRUE(wait_for([&] { return watcher.reloads() == 1; }));
    EXPECT_EQ((*f)(5), at % 2 ? 2010 : 1010);
    publish(path, std::vector<std::uint8_t>(4096, 0x90));
    ASSERT_TRUE(wait_for([&] { return watcher.failures() == 1; }));
    ASSERT_TRUE(watcher.last_error());
    EXPECT_EQ(watcher.last_error()->input, path) << watcher.last_error()->to_string();
    EXPECT_EQ((*f)(5), at % 2 ? 2010 : 1010) << "the old version serves";
  }
}

namespace {

namespace fs = std::filesystem;

// A fresh directory among the fixtures.
std::string fresh_dir(const std::string &name) {
  std::string dir = fixture(name + "-" + std::to_string(GetTickCount64()));
  fs::remove_all(fs::u8path(dir));
  fs::create_directories(fs::u8path(dir));
  return dir;
}

void write_file(const fs::path &path, const std::vector<std::uint8_t> &bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

} // namespace

// Each copy stays in the store after it is unmapped (a minidump names it
// by that path), the same bytes under the same name serve again, and a
// leftover of other bytes under a copy's name (an earlier owner of the
// slot, a process whose id this one reuses) is passed over, not a failed
// load: the old %TEMP%\hotlink-PID-N copies failed with "already exists".
TEST(WindowsImageStore, ACopyOutlivesItsLibraryServesAgainAndALeftoverOfOtherBytesIsPassedOver) {
  std::string store = fresh_dir("image-store");
  std::vector<std::uint8_t> a = read_bytes(fixture("reload_a.dll")), b = read_bytes(fixture("reload_b.dll"));
  std::string name = "reload_a." + trust::blake3_hex(a).substr(0, 8) + ".dll";
  fs::path slot = fs::u8path(store) / "hotlink-load-0";
  write_file(slot / name / "reload_a.dll", b); // another copy under the name this load takes first
  loader::LoadOptions o;
  o.keep_images = store;
  std::string first;
  {
    auto lib = loader::load_private(a, fixture("reload_a.dll"), o);
    ASSERT_TRUE(lib) << lib.error().to_string();
    auto f = reinterpret_cast<int (*)(int)>((*lib)->symbol("f"));
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f(5), 1010);
    first = (*lib)->path();
    EXPECT_EQ(fs::u8path(first), slot / ("reload_a." + trust::blake3_hex(a).substr(0, 8) + ".2.dll") / "reload_a.dll");
  }
  EXPECT_TRUE(fs::exists(fs::u8path(first))) << "unmapped, it stays for post-mortem tools";
  EXPECT_EQ(read_bytes(slot.u8string() + "/" + name + "/reload_a.dll"), b) << "the leftover is not touched";
  auto again = loader::load_private(a, fixture("reload_a.dll"), o);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ((*again)->path(), first) << "the same bytes serve again";
  auto second = loader::load_private(a, fixture("reload_a.dll"), o);
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_NE((*second)->path(), first) << "a copy mapped now is never a second load's";
}

// A bounded store on Windows: a prune removes the oldest images and the
// slots of processes that are gone, and leaves whole the slot of a live
// process (its mapped DLLs could not be removed) and this process's
// mapped copy.
TEST(WindowsImageStore, APruneRemovesWhatTheGoneLeftAndNothingALiveProcessHolds) {
  std::string store = fresh_dir("image-store-pruned");
  std::vector<std::uint8_t> a = read_bytes(fixture("reload_a.dll")), b = read_bytes(fixture("reload_b.dll"));
  fs::path root = fs::u8path(store);
  write_file(root / "hotlink-load-0" / "old.v1.00000000.dll" / "old.dll", b); // a slot whose owner is gone
  write_file(root / "hotlink-load-1" / "live.v1.00000000.dll" / "live.dll", b);
  // Slot 1's owner is alive: it holds its .lock (another handle's lock
  // excludes this process's store as another process's would).
  base::FileHandle live = base::FileHandle::open((root / "hotlink-load-1" / ".lock").u8string(),
                                                 base::FileHandle::Access::ReadWrite);
  ASSERT_TRUE(live && live.try_lock(base::FileHandle::Lock::Exclusive));
  loader::LoadOptions o;
  o.keep_images = store;
  o.keep_max_bytes = a.size() + 1; // room for this process's copy alone
  auto lib = loader::load_private(a, fixture("reload_a.dll"), o);
  ASSERT_TRUE(lib) << lib.error().to_string();
  EXPECT_EQ(fs::u8path((*lib)->path()).parent_path().parent_path(), root / "hotlink-load-0")
      << "the first free slot, taken over from its gone owner";
  EXPECT_FALSE(fs::exists(root / "hotlink-load-0" / "old.v1.00000000.dll")) << "the gone owner's image is pruned";
  EXPECT_TRUE(fs::exists(root / "hotlink-load-1" / "live.v1.00000000.dll" / "live.dll"));
  EXPECT_TRUE(fs::exists(fs::u8path((*lib)->path())));
  auto f = reinterpret_cast<int (*)(int)>((*lib)->symbol("f"));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f(5), 1010);
}

// With the store off, copies live as long as their Library, in a
// directory of this process's own; what a killed process left beside it
// is removed (its .lock is free), what a live one holds is not.
TEST(WindowsImageStore, OffCopiesGoWithTheirLibraryAndAKilledProcesssDirectoryIsRemoved) {
  std::string tmp = fresh_dir("image-tmp");
  fs::path root = fs::u8path(tmp);
  write_file(root / "hotlink-load-killed" / "k.v1.00000000.dll" / "k.dll", {1, 2, 3});
  write_file(root / "hotlink-load-live" / "l.v1.00000000.dll" / "l.dll", {1, 2, 3});
  base::FileHandle live = base::FileHandle::open((root / "hotlink-load-live" / ".lock").u8string(),
                                                 base::FileHandle::Access::ReadWrite);
  ASSERT_TRUE(live && live.try_lock(base::FileHandle::Lock::Exclusive));
  ASSERT_TRUE(SetEnvironmentVariableW(L"HOTLINK_TMPDIR", fs::u8path(tmp).wstring().c_str()));
  loader::LoadOptions o;
  o.keep_images = "off";
  std::string path;
  {
    auto lib = loader::load_private(read_bytes(fixture("reload_a.dll")), fixture("reload_a.dll"), o);
    ASSERT_TRUE(lib) << lib.error().to_string();
    path = (*lib)->path();
    EXPECT_EQ(fs::u8path(path).parent_path().parent_path().parent_path(), root) << path;
    EXPECT_FALSE(fs::exists(root / "hotlink-load-killed"));
    EXPECT_TRUE(fs::exists(root / "hotlink-load-live" / "l.v1.00000000.dll" / "l.dll"));
  }
  EXPECT_FALSE(fs::exists(fs::u8path(path)));
  EXPECT_FALSE(fs::exists(fs::u8path(path).parent_path())) << "its directory goes with it";
}

int main(int argc, char **argv) { return test_windows::run_all(argc, argv, "hot_reload_test"); }
