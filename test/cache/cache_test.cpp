// The host-side cache as its users rely on it: keys that change exactly when
// the link would, entries that are never returned corrupt, one build per key
// across processes, crash safety under kill -9, bounded size with LRU, a
// private directory, and loading through the verifying loader.
#include "hotlink/cache.h"
#include "hotlink/symbols.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"
#include "hotlink/cache_entry.h"
#include "hotlink/load.h"
#include "test/support.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <future>
#include <random>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace hotlink {
namespace {

using cache::Cache;
using cache::Key;
using test::Bytes;

std::string kernel_source(int k) {
  return "int f(int x) { return x * " + std::to_string(k) +
         "; }\n" HOTLINK_TEST_F_ARGV;
}

Bytes kernel(int k = 3) { return test::compile_c(host_target(), kernel_source(k)); }

std::shared_ptr<Cache> open_cache(const std::string &dir, cache::Limits limits = {}) {
  auto c = Cache::open({dir, limits});
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().to_string());
  return c.ok() ? c.value() : nullptr;
}

std::string new_cache_dir() { return test::temp_dir() + "/cache"; }

LinkRequest request(const Bytes &obj) {
  LinkRequest r;
  r.inputs.push_back(Input::memory("k.o", obj));
  return r;
}

std::string entry_file(const std::string &dir, const std::string &key, const char *ext) {
  return dir + "/" + key.substr(0, 2) + "/" + key + ext;
}

Bytes random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  Bytes b(n);
  for (auto &x : b)
    x = static_cast<std::uint8_t>(g());
  return b;
}

cache::Artifact artifact_of(Bytes bytes, const std::string &name = "a.so") {
  cache::Artifact a;
  a.bytes = std::move(bytes);
  a.name = name;
  a.target = host_target();
  a.exports = {"f"};
  return a;
}

// Runs `body` in a child process; returns its pid.
pid_t spawn(const std::function<int()> &body) {
  pid_t p = ::fork();
  if (p == 0) {
    int rc = 1;
    rc = body();
    ::_exit(rc);
  }
  return p;
}

int wait_exit(pid_t p) {
  int status = 0;
  if (::waitpid(p, &status, 0) != p)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

using test::count_with;
using test::files_in;

// ---------------------------------------------------------------------------
// Keys.

TEST(CacheKey, EachFieldOfTheLinkChangesTheKey) {
  LinkService svc;
  // `extra` is exported by the `all` policy but not by entry points.
  Bytes a = test::compile_c(host_target(), kernel_source(3) + "int extra(int x) { return x; }\n");
  Bytes b = test::compile_c(host_target(), kernel_source(5) + "int extra(int x) { return x; }\n");
  Bytes helper = test::compile_c(host_target(), "int helper(int x) { return x + 1; }");
  auto key = [&](const LinkRequest &r) {
    auto k = svc.cache_key(r);
    EXPECT_TRUE(k.ok()) << (k.ok() ? "" : k.error().to_string());
    return k.ok() ? k->hex() : std::string();
  };
  LinkRequest base = request(a);
  std::string k0 = key(base);
  ASSERT_EQ(k0.size(), 64u);

  std::vector<std::pair<std::string, LinkRequest>> variants;
  auto vary = [&](const std::string &what, const std::function<void(LinkRequest &)> &change) {
    LinkRequest r = base;
    change(r);
    variants.emplace_back(what, std::move(r));
  };
  vary("input bytes", [&](LinkRequest &r) { r.inputs[0] = Input::memory("k.o", b); });
  vary("another input", [&](LinkRequest &r) { r.inputs.push_back(Input::memory("h.o", helper)); });
  vary("target", [&](LinkRequest &r) { r.target = "x86_64-unknown-linux-musl"; });
  vary("output name (soname)", [&](LinkRequest &r) { r.output_path = test::temp_dir() + "/other.so"; });
  vary("export policy", [&](LinkRequest &r) { r.exports = ExportPolicy::all(); });
  vary("export list", [&](LinkRequest &r) { r.exports = ExportPolicy::list({"f"}); });
  vary("export include glob", [&](LinkRequest &r) {
    r.inputs.push_back(Input::memory("h.o", helper));
    r.exports.include = {"help*"};
  });
  vary("undefined mode", [&](LinkRequest &r) { r.undefined = Undefined::Error; });
  vary("library", [&](LinkRequest &r) { r.libraries = {"m"}; });
  vary("library path", [&](LinkRequest &r) { r.library_paths = {test::temp_dir()}; });
  vary("sysroot", [&](LinkRequest &r) { r.sysroot = test::temp_dir(); });
  vary("extra flag", [&](LinkRequest &r) { r.extra_flags = {"--gc-sections"}; });

  std::set<std::string> seen = {k0};
  for (const auto &[what, r] : variants) {
    std::string k = key(r);
    EXPECT_NE(k, k0) << what << " did not change the key";
    EXPECT_TRUE(seen.insert(k).second) << what << " collides with another variant";
  }

  // Input order matters to the linker, so it matters to the key.
  LinkRequest ab = base, ba = base;
  ab.inputs.push_back(Input::memory("h.o", helper));
  ba.inputs.insert(ba.inputs.begin(), Input::memory("h.o", helper));
  EXPECT_NE(key(ab), key(ba));

  // Extra flags are hashed in order.
  LinkRequest f1 = base, f2 = base;
  f1.extra_flags = {"--gc-sections", "--icf=all"};
  f2.extra_flags = {"--icf=all", "--gc-sections"};
  EXPECT_NE(key(f1), key(f2));
}

TEST(CacheKey, CoffSupportObjectsAndImportLibraryChangeTheKey) {
  LinkService svc;
  // A large local array makes clang call __chkstk: a support object.
  Bytes obj = test::compile_c("x86_64-pc-windows-msvc",
                              "int f(int x) { volatile char b[8192]; b[x] = 1; return b[0]; }\n"
                              HOTLINK_TEST_F_ARGV);
  LinkRequest r = request(obj);
  r.target = "x86_64-pc-windows-msvc";
  auto k0 = svc.cache_key(r);
  ASSERT_TRUE(k0.ok()) << k0.error().to_string();
  LinkRequest no_support = r;
  no_support.coff.support_objects = false;
  LinkRequest with_implib = r;
  with_implib.coff.want_implib = true;
  auto k1 = svc.cache_key(no_support), k2 = svc.cache_key(with_implib);
  ASSERT_TRUE(k1.ok() && k2.ok());
  EXPECT_NE(k0->hex(), k1->hex());
  EXPECT_NE(k0->hex(), k2->hex());
}

TEST(CacheKey, NoOpDifferencesKeepTheKey) {
  LinkService svc;
  Bytes a = kernel(3);
  Bytes helper = test::compile_c(host_target(),
                                 "int helper(int x) { return x + 1; } int hello(void) { return 0; }");
  auto key = [&](const LinkRequest &r) {
    auto k = svc.cache_key(r);
    EXPECT_TRUE(k.ok()) << (k.ok() ? "" : k.error().to_string());
    return k.ok() ? k->hex() : std::string();
  };
  LinkRequest base = request(a);
  base.inputs.push_back(Input::memory("h.o", helper));
  base.exports = ExportPolicy::list({"f", "f_argv", "helper"});
  base.exports.include = {"hel*", "he*"};
  std::string k0 = key(base);

  LinkRequest r = base;
  r.exports = ExportPolicy::list({"helper", "f_argv", "f"}); // names reordered
  r.exports.include = {"he*", "hel*"};                        // globs reordered
  EXPECT_EQ(key(r), k0) << "reordering the export names or globs changed the key";

  r = base;
  r.threads = 4;
  r.execution = Execution::Isolated;
  r.timeout = std::chrono::milliseconds(5);
  EXPECT_EQ(key(r), k0) << "threads, execution or timeout changed the key";

  r = base;
  r.inputs[0].name = "/some/where/else/kernel-v7.o"; // names are not content
  EXPECT_EQ(key(r), k0) << "an input's name changed the key";

  // The same bytes from a file are the same input.
  std::string path = test::temp_dir() + "/k.o";
  test::write_file(path, a);
  r = base;
  r.inputs[0] = Input::file(path);
  EXPECT_EQ(key(r), k0) << "a file input with the same bytes changed the key";

  // The output's directory is not part of the artifact; its name is.
  r = base;
  LinkRequest r2 = base;
  r.output_path = test::temp_dir() + "/x/hotlink.so";
  r2.output_path = test::temp_dir() + "/y/hotlink.so";
  EXPECT_EQ(key(r), key(r2));
}

TEST(CacheKey, KeysAreHexOnly) {
  EXPECT_FALSE(Key::parse("../../etc/passwd").ok());
  EXPECT_FALSE(Key::parse(std::string(63, 'a')).ok());
  EXPECT_FALSE(Key::parse(std::string(63, 'a') + "/").ok());
  auto k = Key::parse(std::string(64, 'A'));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->hex(), std::string(64, 'a'));
  auto err = Key::parse("x/../y");
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().input, "x/../y");
  // A caller's key of any bytes becomes hex.
  Key c = Key::of_caller("../../../../tmp/evil\n\0zz");
  EXPECT_EQ(c.hex().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(Key::of_caller("a").hex(), Key::of_caller("b").hex());
}

// ---------------------------------------------------------------------------
// The directory.

TEST(CacheDir, IsCreatedPrivate) {
  std::string dir = test::temp_dir() + "/a/b/cache";
  ASSERT_TRUE(open_cache(dir));
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(test::exists(dir + "/hotlink-cache"));
  EXPECT_TRUE(test::exists(dir + "/CACHEDIR.TAG"));
}

TEST(CacheDir, RefusesADirectoryOthersCanWrite) {
  for (mode_t mode : {0770, 0707, 0777, 01777}) {
    std::string dir = new_cache_dir() + std::to_string(mode);
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    auto c = Cache::open({dir});
    ASSERT_FALSE(c.ok()) << "mode " << std::oct << mode;
    EXPECT_EQ(c.error().code, ErrorCode::CacheUnsafe);
    EXPECT_EQ(c.error().input, dir);
    EXPECT_NE(c.error().message.find("writable by"), std::string::npos) << c.error().message;
    EXPECT_NE(c.error().hint.find("chmod 700"), std::string::npos);
    EXPECT_FALSE(test::exists(dir + "/hotlink-cache")) << "a refused directory was written to";
  }
}

TEST(CacheDir, RefusesADirectoryOfAnotherUser) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to chown a directory to another user";
  std::string dir = new_cache_dir();
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  auto c = Cache::open({dir});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::CacheUnsafe);
  EXPECT_NE(c.error().message.find("another user"), std::string::npos);
}

TEST(CacheDir, RefusesANonEmptyDirectoryThatIsNotACache) {
  std::string dir = new_cache_dir();
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  test::write_file(dir + "/notes.txt", Bytes{'h', 'i'});
  auto c = Cache::open({dir});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::CacheError);
  EXPECT_TRUE(test::exists(dir + "/notes.txt"));
}

// ---------------------------------------------------------------------------
// Entries and corruption.

TEST(CacheEntry, StoredEntryReadsBackVerified) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  Key k = Key::of_caller("entry");
  cache::Artifact a = artifact_of(random_bytes(5000, 1), "k.dll");
  a.def = "LIBRARY k.dll\nEXPORTS\n  f\n";
  a.implib = random_bytes(700, 2);
  ASSERT_FALSE(c->store(k, a));
  cache::Lookup l = c->lookup(k);
  ASSERT_TRUE(l.entry);
  EXPECT_EQ(l.entry->artifact.bytes, a.bytes);
  EXPECT_EQ(l.entry->artifact.def, a.def);
  EXPECT_EQ(l.entry->artifact.implib, a.implib);
  EXPECT_EQ(l.entry->manifest.key, k.hex());
  EXPECT_EQ(l.entry->manifest.size, 5000u);
  EXPECT_EQ(l.entry->manifest.exports, a.exports);
  EXPECT_EQ(l.entry->manifest.blake3, loader::blake3_hex(a.bytes));
  EXPECT_EQ(test::read_file(l.entry->artifact_path), a.bytes);
  for (const std::string &f : files_in(dir)) {
    struct stat st;
    ASSERT_EQ(::stat((dir + "/" + f).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 077, 0u) << f << " is readable by others";
  }
  EXPECT_FALSE(c->lookup(Key::of_caller("absent")).entry);
  cache::Stats s = c->stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.stores, 1u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_GT(s.bytes, 5700u);
}

enum class Damage { FlipArtifactByte, TruncateArtifact, DeleteManifest, ReplaceArtifact,
                    FlipManifestByte, ManifestOfAnotherKey, EmptyManifest, DeleteCompanion };

std::string damage_name(const ::testing::TestParamInfo<Damage> &i) {
  static const char *const names[] = {"FlipArtifactByte", "TruncateArtifact", "DeleteManifest",
                                      "ReplaceArtifact", "FlipManifestByte",
                                      "ManifestOfAnotherKey", "EmptyManifest", "DeleteCompanion"};
  return names[static_cast<int>(i.param)];
}

class CacheCorruption : public ::testing::TestWithParam<Damage> {};

void damage(Damage d, const std::string &dir, const std::string &key, const std::string &other) {
  std::string art = entry_file(dir, key, ".a"), man = entry_file(dir, key, ".m");
  switch (d) {
  case Damage::FlipArtifactByte: {
    Bytes b = test::read_file(art);
    b[b.size() / 2] ^= 0x40;
    test::write_file(art, b);
    break;
  }
  case Damage::TruncateArtifact: {
    Bytes b = test::read_file(art);
    b.resize(b.size() / 2);
    test::write_file(art, b);
    break;
  }
  case Damage::DeleteManifest:
    ::unlink(man.c_str());
    break;
  case Damage::ReplaceArtifact: // another valid artifact of the same size
    test::write_file(art, test::read_file(entry_file(dir, other, ".a")));
    break;
  case Damage::FlipManifestByte: {
    Bytes b = test::read_file(man);
    b[20] ^= 0x01;
    test::write_file(man, b);
    break;
  }
  case Damage::ManifestOfAnotherKey:
    test::write_file(man, test::read_file(entry_file(dir, other, ".m")));
    break;
  case Damage::EmptyManifest:
    test::write_file(man, Bytes{});
    break;
  case Damage::DeleteCompanion:
    ::unlink(entry_file(dir, key, ".def").c_str());
    break;
  }
}

// Through the service: the damaged entry is never loaded; the link is redone
// and re-stored, and the next request is a hit again.
// Two entries linked through `svc` (COFF ones, whose .def is a companion,
// when the damage is to a companion): the one to damage, made from
// kernel `tag`, and another of the same size (for ReplaceArtifact).
struct TwoEntries {
  LinkRequest req;
  LinkResult first, other;
};
TwoEntries link_two(LinkService &svc, Damage d, int tag) {
  bool coff = d == Damage::DeleteCompanion;
  auto object = [&](int t) { return coff ? test::compile_c("x86_64-pc-windows-msvc", kernel_source(t)) : kernel(t); };
  TwoEntries e{request(object(tag)), {}, {}};
  LinkRequest other = request(object(tag + 1));
  if (coff) {
    e.req.target = other.target = "x86_64-pc-windows-msvc";
    e.req.coff.def_output = test::temp_dir() + "/k.def";
    other.coff.def_output = test::temp_dir() + "/o.def";
  }
  e.first = svc.link(e.req);
  e.other = svc.link(other);
  return e;
}

TEST_P(CacheCorruption, IsAMissThenRelinkedAndStored) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  LinkService svc({.cache = c});
  auto [req, first, o] = link_two(svc, GetParam(), 3);
  ASSERT_TRUE(first.ok() && o.ok()) << (first.ok() ? o.error->to_string() : first.error->to_string());
  ASSERT_EQ(first.cache, CacheUse::Miss);
  ASSERT_EQ(first.artifact.size(), o.artifact.size()); // needed by ReplaceArtifact

  damage(GetParam(), dir, first.cache_key, o.cache_key);

  std::uint64_t corrupt_before = c->stats().corrupt;
  LinkResult again = svc.link(req);
  ASSERT_TRUE(again.ok()) << again.error->to_string();
  EXPECT_EQ(again.cache, CacheUse::Miss) << "a damaged entry was served";
  EXPECT_EQ(again.artifact, first.artifact) << "the relinked artifact differs";
  EXPECT_NE(again.executed_by, "cache");
  bool expect_corrupt = GetParam() != Damage::DeleteManifest;
  EXPECT_EQ(c->stats().corrupt - corrupt_before, expect_corrupt ? 1u : 0u);
  if (expect_corrupt) {
    bool warned = false;
    for (const Diagnostic &d : again.diagnostics)
      warned |= d.severity == Severity::Warning && d.message.find("corrupt") != std::string::npos;
    EXPECT_TRUE(warned) << "the corrupt entry was not reported";
  }
  LinkResult hit = svc.link(req);
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit.cache, CacheUse::Hit);
  EXPECT_EQ(hit.artifact, first.artifact);
  EXPECT_TRUE(c->verify().corrupt.empty());
}

// The same damages to an entry this Cache already read, verified and
// knows (Cache::Impl::known: its files' identities had settled): each
// changes an identity, so the entry is read and checked again, never
// answered from what the Cache knew.
TEST_P(CacheCorruption, IsSeenInAnEntryTheCacheAlreadyKnows) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  LinkService svc({.cache = c});
  auto [req, first, o] = link_two(svc, GetParam(), 5);
  ASSERT_TRUE(first.ok() && o.ok()) << (first.ok() ? o.error->to_string() : first.error->to_string());
  ASSERT_EQ(first.artifact.size(), o.artifact.size());
  std::this_thread::sleep_for(std::chrono::milliseconds(150)); // past base::kSettledNs
  for (int i = 0; i < 3; ++i) // read and verified, then known
    ASSERT_EQ(svc.link(req).cache, CacheUse::Hit);

  damage(GetParam(), dir, first.cache_key, o.cache_key);

  std::uint64_t corrupt_before = c->stats().corrupt;
  LinkResult again = svc.link(req);
  ASSERT_TRUE(again.ok()) << again.error->to_string();
  EXPECT_EQ(again.cache, CacheUse::Miss) << "a damaged entry was served from what the cache knew";
  EXPECT_EQ(again.artifact, first.artifact);
  EXPECT_EQ(c->stats().corrupt - corrupt_before, GetParam() != Damage::DeleteManifest ? 1u : 0u);
  EXPECT_EQ(svc.link(req).cache, CacheUse::Hit);
}

// What the Cache knows serves: once an entry's files were read and
// verified (twice: a process that reads an entry once keeps no copy) with
// settled identities, a hit stats them and opens none; a
// file changed in place, even with its size and mtime put back, is read
// and checked again.
TEST(CacheEntry, AKnownEntryIsAnsweredWithoutReadingItsFilesUntilOneChanges) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  Key k = Key::of_caller("known");
  cache::Artifact a = artifact_of(random_bytes(5000, 3));
  ASSERT_FALSE(c->store(k, a));
  std::this_thread::sleep_for(std::chrono::milliseconds(150)); // past base::kSettledNs
  for (int i = 0; i < 2; ++i) // read and verified twice: then known
    ASSERT_TRUE(c->lookup(k).entry);
  std::string art = entry_file(dir, k.hex(), ".a"), man = entry_file(dir, k.hex(), ".m");
  test::OpenCounter opens({art, man});
  for (int i = 0; i < 10; ++i) {
    cache::Lookup l = c->lookup(k);
    ASSERT_TRUE(l.entry);
    EXPECT_EQ(l.entry->artifact.bytes, a.bytes);
  }
  EXPECT_EQ(opens.opens(), 0u) << "a known entry's files were read again";
  EXPECT_EQ(c->stats().hits, 12u);

  struct stat before;
  ASSERT_EQ(::stat(art.c_str(), &before), 0);
  Bytes b = test::read_file(art);
  b[100] ^= 0x01;
  test::write_file(art, b);
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, art.c_str(), times, 0), 0);
  opens.opens();
  EXPECT_FALSE(c->lookup(k).entry) << "a tampered artifact was answered from memory";
  EXPECT_GT(opens.opens(), 0u);
  EXPECT_EQ(c->stats().corrupt, 1u);
}

// A Cache keeps no copy of an entry larger than a quarter of what it may
// hold in memory (Cache::Impl::known): a 5 MB artifact is read from its
// file at every hit, not held a second time in the process.
TEST(CacheEntry, ALargeEntryIsReadAtEveryHitNotKeptInMemory) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  Key k = Key::of_caller("large");
  cache::Artifact a = artifact_of(random_bytes(5 << 20, 4));
  ASSERT_FALSE(c->store(k, a));
  std::this_thread::sleep_for(std::chrono::milliseconds(150)); // past base::kSettledNs
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(c->lookup(k).entry);
  test::OpenCounter opens({entry_file(dir, k.hex(), ".a")});
  for (int i = 0; i < 3; ++i) {
    cache::Lookup l = c->lookup(k);
    ASSERT_TRUE(l.entry);
    EXPECT_EQ(l.entry->artifact.bytes.size(), a.bytes.size());
    EXPECT_EQ(opens.opens(), 1u) << "hit " << i << " was answered from a copy in memory";
  }
}

INSTANTIATE_TEST_SUITE_P(AllDamages, CacheCorruption,
                         ::testing::Values(Damage::FlipArtifactByte, Damage::TruncateArtifact,
                                           Damage::DeleteManifest, Damage::ReplaceArtifact,
                                           Damage::FlipManifestByte,
                                           Damage::ManifestOfAnotherKey, Damage::EmptyManifest,
                                           Damage::DeleteCompanion),
                         damage_name);

TEST(CacheEntry, VerifyFindsAndRemovesCorruptEntries) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  Key good = Key::of_caller("good"), bad = Key::of_caller("bad");
  ASSERT_FALSE(c->store(good, artifact_of(random_bytes(3000, 3))));
  ASSERT_FALSE(c->store(bad, artifact_of(random_bytes(3000, 4))));
  damage(Damage::FlipArtifactByte, dir, bad.hex(), good.hex());
  cache::VerifyReport r = c->verify();
  EXPECT_EQ(r.checked, 2u);
  EXPECT_EQ(r.ok, 1u);
  ASSERT_EQ(r.corrupt.size(), 1u);
  EXPECT_EQ(r.corrupt[0].first, bad.hex());
  EXPECT_NE(r.corrupt[0].second.find("BLAKE3"), std::string::npos) << r.corrupt[0].second;
  EXPECT_FALSE(test::exists(entry_file(dir, bad.hex(), ".m")));
  EXPECT_FALSE(test::exists(entry_file(dir, bad.hex(), ".a")));
  EXPECT_TRUE(c->lookup(good).entry);
}

// ---------------------------------------------------------------------------
// The service.

TEST(CacheService, MissThenHitGivesTheSameArtifactWithoutLld) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  LinkService svc({.cache = c});
  LinkRequest req = request(kernel(3));
  req.output_path = test::temp_dir() + "/k.so";
  LinkResult miss = svc.link(req);
  ASSERT_TRUE(miss.ok()) << miss.error->to_string();
  EXPECT_EQ(miss.cache, CacheUse::Miss);
  Bytes linked = test::read_file(req.output_path);
  ::unlink(req.output_path.c_str());

  LinkResult hit = svc.link(req);
  ASSERT_TRUE(hit.ok()) << hit.error->to_string();
  EXPECT_EQ(hit.cache, CacheUse::Hit);
  EXPECT_EQ(hit.executed_by, "cache");
  EXPECT_EQ(hit.cache_key, miss.cache_key);
  EXPECT_EQ(hit.exports, (std::vector<std::string>{"f", "f_argv"}));
  EXPECT_EQ(test::read_file(req.output_path), linked) << "the hit published other bytes";
  EXPECT_EQ(hit.artifact_blake3, loader::blake3_hex(linked));
  ServiceStats st = svc.stats();
  EXPECT_EQ(st.in_process + st.in_worker, 1u) << "lld ran for the hit";
  EXPECT_EQ(st.cache_hits, 1u);
  EXPECT_EQ(st.cache_misses, 1u);

  // use_cache = false links and leaves the cache alone.
  req.use_cache = false;
  LinkResult off = svc.link(req);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off.cache, CacheUse::Off);
  EXPECT_EQ(svc.stats().in_process + svc.stats().in_worker, 2u);
}

TEST(CacheService, CoffHitRepublishesDefAndImportLibrary) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  LinkService svc({.cache = c});
  LinkRequest req = request(test::compile_c("x86_64-pc-windows-msvc", test::halide_style_kernel()));
  req.target = "x86_64-pc-windows-msvc";
  std::string out = test::temp_dir();
  req.output_path = out + "/kernel.dll";
  req.coff.def_output = out + "/kernel.def";
  req.coff.implib_output = out + "/kernel.lib";
  LinkResult miss = svc.link(req);
  ASSERT_TRUE(miss.ok()) << miss.error->to_string();
  Bytes dll = test::read_file(req.output_path), def = test::read_file(req.coff.def_output),
        lib = test::read_file(req.coff.implib_output);
  ASSERT_FALSE(lib.empty());
  for (const std::string &p : {req.output_path, req.coff.def_output, req.coff.implib_output})
    ::unlink(p.c_str());
  LinkResult hit = svc.link(req);
  ASSERT_TRUE(hit.ok()) << hit.error->to_string();
  EXPECT_EQ(hit.cache, CacheUse::Hit);
  EXPECT_EQ(test::read_file(req.output_path), dll);
  EXPECT_EQ(test::read_file(req.coff.def_output), def);
  EXPECT_EQ(test::read_file(req.coff.implib_output), lib);
}

TEST(CacheService, AStoreThatFailsIsAWarningNotAFailedLink) {
  std::string dir = new_cache_dir();
  cache::Limits tiny;
  tiny.max_bytes = 100; // smaller than any artifact
  auto c = open_cache(dir, tiny);
  LinkService svc({.cache = c});
  LinkResult r = svc.link(request(kernel(3)));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.cache, CacheUse::Miss);
  EXPECT_FALSE(r.artifact.empty());
  bool warned = false;
  for (const Diagnostic &d : r.diagnostics)
    warned |= d.severity == Severity::Warning && d.message.find("max_bytes") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_EQ(c->stats().store_errors, 1u);
  EXPECT_EQ(count_with(files_in(dir), ".a"), 0u) << "a refused store left an artifact";
  EXPECT_EQ(count_with(files_in(dir), ".tmp-"), 0u);
}

TEST(CacheService, AFailedLinkStoresNothing) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  LinkService svc({.cache = c});
  LinkRequest req = request(test::compile_c("x86_64-pc-windows-msvc",
                                            "int nope(void); int f(void) { return nope(); }"));
  req.target = "x86_64-pc-windows-msvc";
  req.exports = ExportPolicy::list({"f"});
  LinkResult r = svc.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::UndefinedSymbol);
  EXPECT_EQ(c->stats().stores, 0u);
  EXPECT_EQ(count_with(files_in(dir), ".m"), 0u);
}

// ---------------------------------------------------------------------------
// Loader integration.

TEST(CacheLoader, LoadsAHitAndRefusesBytesChangedAfterTheStore) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  LinkService svc({.cache = c});
  LinkRequest req = request(kernel(7));
  ASSERT_TRUE(svc.link(req).ok());
  auto key = svc.cache_key(req);
  ASSERT_TRUE(key.ok());
  cache::Lookup l = c->lookup(key.value());
  ASSERT_TRUE(l.entry);

  auto lib = loader::load(*l.entry);
  ASSERT_TRUE(lib.ok()) << lib.error().to_string();
  auto f = reinterpret_cast<int (*)(int)>(lib.value()->symbol("f"));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f(6), 42);

  cache::Entry tampered = *l.entry;
  tampered.artifact.bytes[tampered.artifact.bytes.size() - 1] ^= 1;
  auto refused = loader::load(tampered);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::HashMismatch);

  loader::HotModule module;
  auto entry = module.entry<int(int)>("f");
  ASSERT_TRUE(entry.ok());
  ASSERT_FALSE(loader::reload(module, *l.entry));
  EXPECT_EQ(entry.value()(2), 14);
  auto err = loader::reload(module, tampered);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, ErrorCode::HashMismatch);
  EXPECT_EQ(module.current()->number, 1u) << "a tampered entry replaced the module";

  // The published file, changed after it was stored, is refused by the
  // loader given the manifest's hash.
  test::Bytes changed = test::read_file(l.entry->artifact_path);
  changed[100] ^= 1;
  std::string path = test::temp_dir() + "/changed.so";
  test::write_file(path, changed);
  auto r = module.reload(path, loader::verify_options(*l.entry));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, ErrorCode::HashMismatch);
}

// ---------------------------------------------------------------------------
// Many processes.

TEST(CacheProcesses, EightProcessesOnOneMissingKeyBuildOnce) {
  std::string dir = new_cache_dir();
  ASSERT_TRUE(open_cache(dir));
  std::string counter = test::temp_dir() + "/builds";
  Key key = Key::of_caller("one build");
  Bytes expected = random_bytes(200000, 9);
  std::vector<pid_t> kids;
  for (int i = 0; i < 8; ++i)
    kids.push_back(spawn([&] {
      auto c = Cache::open({dir});
      if (!c)
        return 10;
      auto got = c.value()->get_or_build(key, [&]() -> Expected<cache::Artifact> {
        int fd = ::open(counter.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        (void)!::write(fd, "x", 1);
        ::close(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(300)); // a slow JIT
        return artifact_of(expected);
      });
      if (!got)
        return 11;
      return got->entry.artifact.bytes == expected ? 0 : 12;
    }));
  for (pid_t p : kids)
    EXPECT_EQ(wait_exit(p), 0);
  EXPECT_EQ(test::read_file(counter).size(), 1u) << "the producer ran more than once";
  auto c = open_cache(dir);
  cache::Stats s = c->stats();
  EXPECT_EQ(s.stores, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 7u);
}

TEST(CacheProcesses, EightThreadsOfOneServiceOnOneMissingKeyLinkOnce) {
  auto c = open_cache(new_cache_dir());
  LinkService svc({.workers = 2, .cache = c});
  std::vector<std::future<LinkResult>> results;
  for (int i = 0; i < 8; ++i)
    results.push_back(svc.submit(request(kernel(13))));
  int misses = 0;
  Bytes first;
  for (auto &f : results) {
    LinkResult r = f.get();
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    misses += r.cache == CacheUse::Miss;
    if (first.empty())
      first = r.artifact;
    EXPECT_EQ(r.artifact, first);
  }
  EXPECT_EQ(misses, 1);
  ServiceStats st = svc.stats();
  EXPECT_EQ(st.in_process + st.in_worker, 1u);
  EXPECT_EQ(c->stats().stores, 1u);
}

TEST(CacheProcesses, EightCliLinksOfOneMissingKeyLinkOnce) {
  std::string dir = new_cache_dir();
  std::string in = test::temp_dir() + "/k.o";
  test::write_file(in, kernel(11));
  std::vector<pid_t> kids;
  std::vector<std::string> outs;
  for (int i = 0; i < 8; ++i) {
    std::string out = test::temp_dir() + "/out" + std::to_string(i);
    outs.push_back(out);
    std::string so = test::temp_dir() + "/d" + std::to_string(i);
    ::mkdir(so.c_str(), 0700);
    so += "/k.so"; // one file name: one key
    pid_t p = ::fork();
    if (p == 0) {
      int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      std::string bin = test::bin_dir() + "/hotlink";
      ::execl(bin.c_str(), bin.c_str(), "link", "--cache", dir.c_str(), "--json", "-o",
              so.c_str(), in.c_str(), (char *)nullptr);
      ::_exit(127);
    }
    kids.push_back(p);
  }
  int misses = 0, hits = 0;
  for (std::size_t i = 0; i < kids.size(); ++i) {
    int code = wait_exit(kids[i]);
    Bytes text = test::read_file(outs[i]);
    std::string shown(text.begin(), text.end());
    EXPECT_EQ(code, 0) << "process " << i << " printed:\n" << shown;
    auto v = llvm::json::parse(shown);
    ASSERT_TRUE(bool(v)) << shown;
    auto cache_use = v->getAsObject()->getString("cache");
    ASSERT_TRUE(cache_use) << shown;
    misses += *cache_use == "miss";
    hits += *cache_use == "hit";
  }
  EXPECT_EQ(misses, 1);
  EXPECT_EQ(hits, 7);
  test::Run r = test::run({test::bin_dir() + "/hotlink", "cache", "stats", "--dir", dir, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto v = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(v)) << r.out;
  EXPECT_EQ(v->getAsObject()->getInteger("stores"), 1);
  EXPECT_EQ(v->getAsObject()->getInteger("hits"), 7);
  EXPECT_EQ(v->getAsObject()->getInteger("entries"), 1);
}

TEST(CacheProcesses, ABuilderKilledHoldingTheLockDoesNotBlockOthers) {
  std::string dir = new_cache_dir();
  ASSERT_TRUE(open_cache(dir));
  Key key = Key::of_caller("dies while building");
  std::string started = test::temp_dir() + "/started";
  pid_t owner = spawn([&] {
    auto c = Cache::open({dir});
    (void)c.value()->get_or_build(key, [&]() -> Expected<cache::Artifact> {
      test::write_file(started, Bytes{1});
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return artifact_of(Bytes{1});
    });
    return 0;
  });
  while (!test::exists(started))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(owner, SIGKILL);
  EXPECT_EQ(wait_exit(owner), 128 + SIGKILL);

  auto c = open_cache(dir);
  auto t0 = std::chrono::steady_clock::now();
  auto got = c->get_or_build(key, [] { return Expected<cache::Artifact>(artifact_of(Bytes(64, 7))); });
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->hit);
  EXPECT_TRUE(got->warnings.empty()) << got->warnings[0];
  // Not a timing assertion on speed: only that the dead owner's lock was not
  // waited out (the lock timeout is 120 s).
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(c->stats().lock_timeouts, 0u);
  EXPECT_TRUE(c->lookup(key).entry);
}

TEST(CacheCrash, FiftyKillsDuringStoresLeaveNoVisiblePartialEntry) {
  std::string dir = new_cache_dir();
  ASSERT_TRUE(open_cache(dir));
  std::mt19937 rng(1234);
  // Made before the children fork, so that they spend their time storing.
  std::vector<cache::Artifact> payloads;
  for (unsigned i = 0; i < 4; ++i) {
    payloads.push_back(artifact_of(random_bytes((1 + i) << 20, i)));
    payloads.back().def = "LIBRARY a.dll\nEXPORTS\n  f\n";
    payloads.back().implib = random_bytes(4096, 100 + i);
  }
  std::string progress = test::temp_dir() + "/stores";
  for (int trial = 0; trial < 50; ++trial) {
    ::unlink(progress.c_str());
    pid_t p = spawn([&] {
      auto c = Cache::open({dir});
      if (!c)
        return 10;
      // Replaces a few keys over and over with 1-4 MB artifacts and
      // companions, so that a kill lands anywhere in a store.
      for (unsigned i = 0;; ++i) {
        (void)c.value()->store(Key::of_caller("k" + std::to_string(i % 3)),
                               payloads[(i + trial) % payloads.size()]);
        int fd = ::open(progress.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        (void)!::write(fd, "x", 1);
        ::close(fd);
      }
    });
    while (!test::exists(progress)) // at least one store done: the loop runs
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 30000));
    ::kill(p, SIGKILL);
    EXPECT_EQ(wait_exit(p), 128 + SIGKILL);

    auto c = open_cache(dir);
    cache::VerifyReport r = c->verify();
    ASSERT_TRUE(r.corrupt.empty()) << "trial " << trial << ": a visible entry was partial: "
                                   << r.corrupt[0].second;
    for (int k = 0; k < 3; ++k) {
      cache::Lookup l = c->lookup(Key::of_caller("k" + std::to_string(k)));
      EXPECT_TRUE(l.corrupt.empty()) << l.corrupt;
      if (l.entry) {
        EXPECT_EQ(loader::blake3_hex(l.entry->artifact.bytes), l.entry->manifest.blake3);
      }
    }
  }
  // Later stores succeed; the dead writers' temporaries are cleaned at
  // once: nobody holds their locks.
  auto c = open_cache(dir);
  ASSERT_FALSE(c->store(Key::of_caller("after"), artifact_of(Bytes(1000, 1))));
  EXPECT_TRUE(c->lookup(Key::of_caller("after")).entry);
  std::vector<std::string> files = files_in(dir);
  std::size_t temps = count_with(files, ".tmp-");
  cache::PruneReport pr = c->prune();
  EXPECT_EQ(pr.temporaries_removed, temps);
  EXPECT_EQ(count_with(files_in(dir), ".tmp-"), 0u);
  EXPECT_TRUE(c->verify().corrupt.empty());
  EXPECT_TRUE(c->lookup(Key::of_caller("after")).entry);
  std::printf("kill -9 trials left %zu temporaries (removed by prune) and %llu partial files\n",
              temps, static_cast<unsigned long long>(pr.orphans_removed));
}

// ---------------------------------------------------------------------------
// Bounds.

void set_last_use(const std::string &dir, const Key &k, std::time_t when) {
  struct timespec t[2] = {{when, 0}, {when, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, entry_file(dir, k.hex(), ".m").c_str(), t, 0), 0);
}

TEST(CachePrune, EvictsLeastRecentlyUsedFirst) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  Key a = Key::of_caller("a"), b = Key::of_caller("b"), d = Key::of_caller("d");
  for (const Key *k : {&a, &b, &d})
    ASSERT_FALSE(c->store(*k, artifact_of(random_bytes(10000, k->hex()[0]))));
  std::time_t now = std::time(nullptr);
  set_last_use(dir, a, now - 300); // stored first...
  set_last_use(dir, b, now - 200);
  set_last_use(dir, d, now - 100);
  ASSERT_TRUE(c->lookup(a).entry); // ...but used last
  cache::Limits two;
  two.max_entries = 2;
  cache::PruneReport r = c->prune(two);
  EXPECT_EQ(r.evicted, 1u);
  EXPECT_EQ(r.entries, 2u);
  EXPECT_TRUE(c->lookup(a).entry);
  EXPECT_FALSE(c->lookup(b).entry) << "the least recently used entry survived";
  EXPECT_TRUE(c->lookup(d).entry);
  EXPECT_EQ(c->stats().evictions, 1u);

  // A byte limit: down to 90% of it.
  cache::Limits bytes;
  bytes.max_bytes = 15000;
  r = c->prune(bytes);
  EXPECT_LE(r.bytes, 13500u);
  EXPECT_EQ(r.entries, 1u);
  EXPECT_EQ(c->stats().bytes, r.bytes);
}

TEST(CachePrune, RemovesEntriesUnusedForLongerThanMaxAge) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  Key old = Key::of_caller("old"), fresh = Key::of_caller("fresh");
  ASSERT_FALSE(c->store(old, artifact_of(Bytes(100, 1))));
  ASSERT_FALSE(c->store(fresh, artifact_of(Bytes(100, 2))));
  set_last_use(dir, old, std::time(nullptr) - 7200);
  cache::Limits age;
  age.max_age = std::chrono::hours(1);
  cache::PruneReport r = c->prune(age);
  EXPECT_EQ(r.evicted, 1u);
  EXPECT_FALSE(c->lookup(old).entry);
  EXPECT_TRUE(c->lookup(fresh).entry);
}

TEST(CachePrune, NeverRemovesAnEntryWhileItIsRead) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  Key k = Key::of_caller("in use");
  ASSERT_FALSE(c->store(k, artifact_of(Bytes(5000, 1))));
  // A reader holds the manifest's shared lock, as lookup() does while it
  // reads the entry.
  int fd = ::open(entry_file(dir, k.hex(), ".m").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_SH), 0);
  cache::Limits none;
  none.max_entries = 1;
  none.max_bytes = 1;
  cache::PruneReport r = c->prune(none);
  EXPECT_EQ(r.evicted, 0u);
  EXPECT_EQ(r.skipped_in_use, 1u);
  EXPECT_TRUE(test::exists(entry_file(dir, k.hex(), ".a")));
  ::close(fd);
  r = c->prune(none);
  EXPECT_EQ(r.evicted, 1u);
}

TEST(CachePrune, ReadersInAnotherProcessNeverFailWhileItPrunes) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  constexpr int kKeys = 24;
  auto content = [](int i) { return random_bytes(40000 + i * 512, 100 + i); };
  for (int i = 0; i < kKeys; ++i)
    ASSERT_FALSE(c->store(Key::of_caller("r" + std::to_string(i)), artifact_of(content(i))));
  std::string stop = test::temp_dir() + "/stop";
  pid_t reader = spawn([&] {
    auto rc = Cache::open({dir});
    if (!rc)
      return 10;
    unsigned reads = 0;
    while (!test::exists(stop) || reads < 200) {
      int i = static_cast<int>(reads++ % kKeys);
      auto got = rc.value()->get_or_build(Key::of_caller("r" + std::to_string(i)), [&] {
        return Expected<cache::Artifact>(artifact_of(content(i)));
      });
      if (!got)
        return 11;
      if (got->entry.artifact.bytes != content(i))
        return 12; // a wrong or partial artifact
      if (!got->warnings.empty())
        return 13; // a corrupt entry was seen
    }
    return 0;
  });
  cache::Limits small;
  small.max_bytes = 6 * 41000; // about a quarter of the entries
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::uint64_t evicted = 0;
  while (std::chrono::steady_clock::now() < deadline)
    evicted += c->prune(small).evicted;
  test::write_file(stop, Bytes{1});
  EXPECT_EQ(wait_exit(reader), 0) << "a reader failed while the cache was pruned";
  EXPECT_GT(evicted, 0u);
  EXPECT_TRUE(c->verify().corrupt.empty());
}

TEST(CachePrune, RemovesFilesWithoutAManifestUnlessABuilderHoldsTheKey) {
  std::string dir = new_cache_dir();
  auto c = open_cache(dir);
  Key k = Key::of_caller("orphan"), busy = Key::of_caller("being built");
  ASSERT_FALSE(c->store(k, artifact_of(Bytes(3000, 1))));
  ASSERT_FALSE(c->store(busy, artifact_of(Bytes(3000, 2))));
  // A store killed between its artifact and its manifest looks like this:
  ::unlink(entry_file(dir, k.hex(), ".m").c_str());
  ::unlink(entry_file(dir, busy.hex(), ".m").c_str());
  // ...and a builder that is alive holds its key's lock.
  int lock = ::open(entry_file(dir, busy.hex(), ".lock").c_str(), O_RDWR);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);
  cache::PruneReport r = c->prune();
  EXPECT_EQ(r.orphans_removed, 1u);
  EXPECT_FALSE(test::exists(entry_file(dir, k.hex(), ".a")));
  EXPECT_TRUE(test::exists(entry_file(dir, busy.hex(), ".a"))) << "a live builder's file was removed";
  EXPECT_EQ(r.entries, 0u);
  ::close(lock);
  EXPECT_EQ(c->prune().orphans_removed, 1u);
}

// A writer's temporary is its own while it holds it locked, however old;
// once nobody does, a prune removes it at once (no age is guessed).
TEST(CachePrune, ATemporaryIsRemovedExactlyWhenNoWriterHoldsIt) {
  std::string dir = new_cache_dir();
  Key k = Key::of_caller("being written");
  auto c = open_cache(dir);
  ASSERT_FALSE(c->store(k, artifact_of(Bytes(3000, 1))));
  std::string temp = entry_file(dir, k.hex(), ".a.tmp-1-0");
  test::write_file(temp, Bytes(10, 1));
  int writer = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  ASSERT_EQ(::flock(writer, LOCK_EX), 0); // a live writer, as write_file_atomically holds it
  struct timespec old[2] = {{std::time(nullptr) - 7200, 0}, {std::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, temp.c_str(), old, 0), 0);
  EXPECT_EQ(c->prune().temporaries_removed, 0u);
  EXPECT_TRUE(test::exists(temp)) << "a live writer's temporary was removed";
  ::close(writer); // the writer is gone: its fresh temporary goes now
  ASSERT_EQ(::utimensat(AT_FDCWD, temp.c_str(), nullptr, 0), 0);
  EXPECT_EQ(c->prune().temporaries_removed, 1u);
  EXPECT_FALSE(test::exists(temp));
  EXPECT_TRUE(c->lookup(k).entry);
}

TEST(CachePrune, OpeningADirectoryNotPrunedForAnHourPrunesIt) {
  std::string dir = new_cache_dir();
  Key k = Key::of_caller("left by a killed store");
  {
    auto c = open_cache(dir);
    ASSERT_FALSE(c->store(k, artifact_of(Bytes(3000, 1))));
  }
  ::unlink(entry_file(dir, k.hex(), ".m").c_str()); // a store killed before its manifest
  std::string temp = entry_file(dir, k.hex(), ".a.tmp-1-0");
  test::write_file(temp, Bytes(10, 1));
  struct timespec old[2] = {{std::time(nullptr) - 7200, 0}, {std::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, temp.c_str(), old, 0), 0);
  ASSERT_TRUE(open_cache(dir)); // pruned a moment ago: nothing happens
  EXPECT_TRUE(test::exists(temp));
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir + "/prune.lock").c_str(), old, 0), 0);
  ASSERT_TRUE(open_cache(dir));
  EXPECT_FALSE(test::exists(temp)) << "an old temporary survived";
  EXPECT_FALSE(test::exists(entry_file(dir, k.hex(), ".a"))) << "a partial entry survived";
}

TEST(CachePrune, StoresBeyondTheLimitPruneAutomatically) {
  std::string dir = new_cache_dir();
  cache::Limits lim;
  lim.max_bytes = 100000;
  auto c = open_cache(dir, lim);
  for (int i = 0; i < 30; ++i)
    ASSERT_FALSE(c->store(Key::of_caller("s" + std::to_string(i)), artifact_of(Bytes(10000, i))));
  cache::Stats s = c->stats();
  EXPECT_LE(s.bytes, lim.max_bytes);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_TRUE(c->lookup(Key::of_caller("s29")).entry) << "the newest entry was evicted";
}

// ---------------------------------------------------------------------------
// CLI.

TEST(CacheCli, LinkReportsHitMissAndOff) {
  std::string dir = new_cache_dir();
  std::string in = test::temp_dir() + "/k.o", out = test::temp_dir() + "/k.so";
  test::write_file(in, kernel(2));
  std::string bin = test::bin_dir() + "/hotlink";
  auto cache_field = [&](const std::vector<std::string> &extra) {
    std::vector<std::string> argv = {bin, "link", "--json", "-o", out, in};
    argv.insert(argv.end(), extra.begin(), extra.end());
    test::Run r = test::run(argv);
    EXPECT_EQ(r.code, 0) << r.err << r.out;
    auto v = llvm::json::parse(r.out);
    if (!v)
      return std::string("unparsable");
    auto s = v->getAsObject()->getString("cache");
    return s ? s->str() : std::string("absent");
  };
  EXPECT_EQ(cache_field({}), "off");
  EXPECT_EQ(cache_field({"--cache", dir}), "miss");
  EXPECT_EQ(cache_field({"--cache", dir}), "hit");
  test::Run text = test::run({bin, "link", "--cache", dir, "-o", out, in});
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("cache hit"), std::string::npos) << text.out;
}

TEST(CacheCli, CacheCommands) {
  std::string dir = new_cache_dir();
  std::string bin = test::bin_dir() + "/hotlink";
  auto c = open_cache(dir);
  Key a = Key::of_caller("a"), b = Key::of_caller("b");
  ASSERT_FALSE(c->store(a, artifact_of(random_bytes(2000, 1))));
  ASSERT_FALSE(c->store(b, artifact_of(random_bytes(2000, 2))));
  ASSERT_FALSE(c->flush_stats());

  test::Run r = test::run({bin, "cache", "stats", "--dir", dir});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("entries       2"), std::string::npos) << r.out;

  EXPECT_EQ(test::run({bin, "cache", "verify", "--dir", dir}).code, 0);
  damage(Damage::TruncateArtifact, dir, b.hex(), a.hex());
  r = test::run({bin, "cache", "verify", "--dir", dir, "--json"});
  EXPECT_EQ(r.code, 1) << "verify must fail when it found a corrupt entry";
  auto v = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(v)) << r.out;
  ASSERT_EQ(v->getAsObject()->getArray("corrupt")->size(), 1u);
  EXPECT_EQ(test::run({bin, "cache", "verify", "--dir", dir}).code, 0) << "not removed";

  r = test::run({bin, "cache", "prune", "--dir", dir, "--max-entries", "0", "--max-bytes", "1K",
                 "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  v = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(v));
  EXPECT_EQ(v->getAsObject()->getInteger("evicted"), 1);

  ASSERT_FALSE(c->store(b, artifact_of(random_bytes(2000, 2))));
  EXPECT_EQ(test::run({bin, "cache", "clear", "--dir", dir}).code, 0);
  EXPECT_EQ(count_with(files_in(dir), ".m"), 0u);
  EXPECT_TRUE(test::exists(dir + "/hotlink-cache"));

  ::chmod(dir.c_str(), 0777);
  r = test::run({bin, "cache", "stats", "--dir", dir});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cache-unsafe"), std::string::npos) << r.err;
  ::chmod(dir.c_str(), 0700);
  EXPECT_EQ(test::run({bin, "cache", "frobnicate", "--dir", dir}).code, 2);
  EXPECT_EQ(test::run({bin, "cache", "stats"}).code, 2);
}

} // namespace
} // namespace hotlink
