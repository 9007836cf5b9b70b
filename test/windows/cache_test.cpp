// The cache on a Windows host, under Wine: a directory the Linux build's
// `hotlink link --cache` filled (and signed) is a hit here, verified and
// loaded; entries written here are built once per key while threads race
// for it (LockFileEx), removed and pruned while open elsewhere, and left
// for the Linux build's `hotlink cache verify` to read (CMakeLists.txt).
//   cache_test.exe FIXTURE_DIR [gtest flags]
#include "hotlink/cache.h"
#include "hotlink/cache_entry.h"
#include "hotlink/signature.h"

#include "test/windows/fixtures.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

using namespace hotlink;
using namespace hotlink::test_windows;

namespace {

cache::Config config_for(const std::string &dir) {
  cache::Config c;
  c.dir = dir;
  auto trusted = signature::read_public_key(fixture("key.pub"));
  EXPECT_TRUE(trusted) << trusted.error().to_string();
  if (trusted)
    c.trusted_keys = {*trusted};
  return c;
}

cache::Artifact artifact_a() {
  cache::Artifact a;
  a.bytes = read_bytes(fixture("reload_a.dll"));
  a.name = "reload_a.dll";
  a.target = "x86_64-w64-windows-gnu";
  a.exports = {"f", "g"};
  return a;
}

} // namespace

TEST(WindowsCache, AnEntryTheLinuxBuildStoredIsAHitHereAndLoads) {
  std::ifstream json(fixture("linux-cache.json"));
  nlohmann::json linked = nlohmann::json::parse(json);
  auto key = cache::Key::parse(linked.at("cache_key").get<std::string>());
  ASSERT_TRUE(key) << key.error().to_string();
  cache::Config c = config_for(fixture("linux-cache"));
  c.create = false;
  auto opened = cache::Cache::open(c);
  ASSERT_TRUE(opened) << opened.error().to_string();
  cache::Cache &cache = **opened;
  std::uint64_t hits = cache.stats().hits;
  cache::Lookup l = cache.lookup(*key);
  ASSERT_TRUE(l.entry) << l.corrupt;
  EXPECT_FALSE(l.remote);
  EXPECT_EQ(cache.stats().hits, hits + 1);
  // Verified against its manifest, the Linux build's signature and this
  // host, and loaded; a stranger's key alone does not vouch for it.
  auto stranger = signature::read_public_key(fixture("stranger.pub"));
  ASSERT_TRUE(stranger);
  auto refused = loader::load(*l.entry, {*stranger});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::UntrustedSigner) << refused.error().to_string();
  auto lib = loader::load(*l.entry, cache.trust());
  ASSERT_TRUE(lib) << lib.error().to_string();
  auto f = reinterpret_cast<int (*)(int)>((*lib)->symbol("f"));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f(5), 1010);
  cache::VerifyReport r = cache.verify();
  EXPECT_EQ(r.checked, r.ok);
  EXPECT_TRUE(r.corrupt.empty());
}

TEST(WindowsCache, AnEntryIsBuiltOnceWhileFourThreadsAskForIt) {
  std::string dir = fixture("wine-cache");
  cache::Key key = cache::Key::of_caller("windows:reload_a:" + std::to_string(GetTickCount64()));
  std::atomic<int> built{0}, hits{0}, failures{0};
  std::mutex why_lock;
  std::string why;
  auto failed = [&](const std::string &reason) {
    ++failures;
    std::lock_guard<std::mutex> guard(why_lock);
    why += reason + "\n";
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      // Each its own Cache: its own handles, whose locks exclude each other
      // as another process's would.
      auto opened = cache::Cache::open(config_for(dir));
      if (!opened) {
        failed(opened.error().to_string());
        return;
      }
      auto got = (*opened)->get_or_build(key, [&]() -> Expected<cache::Artifact> {
        ++built;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return artifact_a();
      });
      if (!got)
        failed(got.error().to_string());
      else if (got->entry.artifact.bytes != read_bytes(fixture("reload_a.dll")))
        failed("the entry's bytes are not reload_a.dll's");
      else if (got->hit)
        ++hits;
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0) << why;
  EXPECT_EQ(built.load(), 1);
  EXPECT_EQ(hits.load(), 3);
}

TEST(WindowsCache, AnEntryOpenElsewhereIsReplacedAndClearedAndItsNameIsFreeAtOnce) {
  std::string dir = fixture("wine-cache-clear");
  auto opened = cache::Cache::open(config_for(dir));
  ASSERT_TRUE(opened) << opened.error().to_string();
  cache::Cache &cache = **opened;
  cache::Key key = cache::Key::of_caller("windows:replaced");
  ASSERT_FALSE(cache.store(key, artifact_a()));
  cache::Lookup first = cache.lookup(key);
  ASSERT_TRUE(first.entry);
  // A reader holds the artifact open (as a tool copying it out would).
  HANDLE reader = CreateFileA(first.entry->artifact_path.c_str(), GENERIC_READ,
                              FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                              FILE_ATTRIBUTE_NORMAL, nullptr);
  ASSERT_NE(reader, INVALID_HANDLE_VALUE);
  cache::Artifact b = artifact_a();
  b.bytes = read_bytes(fixture("reload_b.dll"));
  b.name = "reload_b.dll";
  ASSERT_FALSE(cache.store(key, b)); // replaces the entry the reader holds
  cache::Lookup second = cache.lookup(key);
  ASSERT_TRUE(second.entry);
  EXPECT_EQ(second.entry->artifact.bytes, b.bytes);
  EXPECT_FALSE(cache.clear());
  EXPECT_FALSE(cache.lookup(key).entry);
  CloseHandle(reader);
  cache::PruneReport r = cache.prune();
  EXPECT_EQ(r.entries, 0u);
}

TEST(WindowsCache, ARemoteCacheIsRefusedByNameOnThisHost) {
  cache::Config c = config_for(fixture("wine-cache-remote"));
  cache::RemoteConfig remote;
  remote.url = "redis://cache.example:6379/2";
  c.remote = remote;
  auto opened = cache::Cache::open(c);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().input, "redis://cache.example:6379/2");
  EXPECT_NE(opened.error().message.find("no Redis client"), std::string::npos) << opened.error().to_string();
  remote.url = "http://cache.example/c"; // nor an HTTP one: no libcurl for mingw-w64 either
  c.remote = remote;
  auto http = cache::Cache::open(c);
  ASSERT_FALSE(http);
  EXPECT_NE(http.error().message.find("no remote cache"), std::string::npos) << http.error().to_string();
  remote.url = "memcached://cache.example";
  c.remote = remote;
  auto bad = cache::Cache::open(c);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("scheme"), std::string::npos) << bad.error().to_string();
}

int main(int argc, char **argv) { return test_windows::run_all(argc, argv, "cache_test"); }
