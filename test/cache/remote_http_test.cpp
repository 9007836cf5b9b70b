// The remote tier over HTTP (http://), against a real nginx serving WebDAV
// on loopback (test/http_server.h): two processes share entries through
// it; a stopped server is one warning and then a backoff; an object
// changed on the server is refused; credentials come from a file only.
#include "hotlink/cache.h"
#include "hotlink/link.h"
#include "hotlink/remote_cache.h"
#include "hotlink/signature.h"
#include "test/cache/remote_host.h"
#include "test/http_server.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>

namespace hotlink {
namespace {

using signature::SecretKey;
using test::Bytes;
using test::NginxServer;
using test::RemoteHost;
using test::warnings_of;

Bytes kernel(int k) {
  return test::compile_c(host_target(), "int f(int x) { return x * " + std::to_string(k) +
                                            "; }\n" HOTLINK_TEST_F_ARGV);
}

LinkRequest request(const Bytes &obj, const std::string &out) {
  LinkRequest r;
  r.inputs.push_back(Input::memory("k.o", obj));
  r.output_path = out;
  return r;
}

std::vector<std::string> objects_in(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (e->d_name[0] != '.')
        names.push_back(e->d_name);
    ::closedir(d);
  }
  return names;
}

TEST(HttpUrl, TakesAPathAndRefusesCredentialsInTheUrl) {
  auto u = cache::parse_remote_url("http://cache.lan:8080/hotlink/");
  ASSERT_TRUE(u.ok()) << u.error().to_string();
  EXPECT_TRUE(u->http);
  EXPECT_EQ(u->base, "http://cache.lan:8080/hotlink");
  EXPECT_EQ(cache::parse_remote_url("https://[::1]/c")->base, "https://[::1]:443/c");
  auto secret = cache::parse_remote_url("http://user:secret@cache.lan/c");
  ASSERT_FALSE(secret.ok());
  EXPECT_NE(secret.error().hint.find("--remote-auth-file"), std::string::npos) << secret.error().to_string();
  EXPECT_EQ(secret.error().to_string().find("secret"), std::string::npos) << "the error repeats the password";
  EXPECT_FALSE(cache::parse_remote_url("http://cache.lan:0/c").ok());
  EXPECT_FALSE(cache::parse_remote_url("http://cache.lan/c?x=1").ok());
}

// Two `hotlink link` processes with their own cache directories: the
// first links and PUTs the entry, the second GETs it and runs no lld.
TEST(Http, TwoProcessesShareEntriesThroughNginx) {
  std::string dir = test::temp_dir();
  NginxServer nginx(dir);
  std::string why;
  ASSERT_TRUE(nginx.start(&why)) << why;
  SecretKey key = SecretKey::generate();
  ASSERT_FALSE(signature::write_key_pair(key, dir + "/ci").has_value());
  test::write_file(dir + "/k.o", kernel(3));
  std::string hotlink = test::bin_dir() + "/hotlink";
  ::mkdir((dir + "/a").c_str(), 0700);
  ::mkdir((dir + "/b").c_str(), 0700);
  test::Run a = test::run({hotlink, "link", "--cache", dir + "/cache-a", "--remote", nginx.url(), "--sign-key",
                           dir + "/ci", "--remote-sync", "--json", "-o", dir + "/a/k.so", dir + "/k.o"});
  ASSERT_EQ(a.code, 0) << a.out << a.err;
  EXPECT_NE(a.out.find("\"cache\": \"miss\""), std::string::npos) << a.out;
  std::vector<std::string> objects = objects_in(nginx.objects());
  EXPECT_EQ(objects.size(), 2u) << "the manifest and the artifact";
  test::Run b = test::run({hotlink, "link", "--cache", dir + "/cache-b", "--remote", nginx.url(), "--trusted-key",
                           dir + "/ci.pub", "--json", "-o", dir + "/b/k.so", dir + "/k.o"});
  ASSERT_EQ(b.code, 0) << b.out << b.err;
  EXPECT_NE(b.out.find("\"cache\": \"remote-hit\""), std::string::npos) << b.out << b.err;
  EXPECT_EQ(test::read_file(dir + "/a/k.so"), test::read_file(dir + "/b/k.so"));
}

// nginx is gone: the first link warns once, naming the server; the next
// ones do not ask it until the backoff passes.
TEST(Http, AStoppedServerIsOneWarningThenABackoff) {
  std::string dir = test::temp_dir();
  NginxServer nginx(dir);
  std::string why;
  ASSERT_TRUE(nginx.start(&why)) << why;
  nginx.stop();
  RemoteHost h(dir + "/cache", nginx.url(), SecretKey::generate(), {},
               [](cache::RemoteConfig &r) { r.backoff_min = std::chrono::milliseconds(60000); });
  ASSERT_TRUE(h.service) << h.error->to_string();
  LinkResult first = h.link(request(kernel(5), dir + "/k5.so"));
  ASSERT_TRUE(first.ok()) << first.error->to_string();
  EXPECT_NE(warnings_of(first).find(nginx.url()), std::string::npos) << warnings_of(first);
  for (int k = 6; k < 9; ++k) {
    LinkResult r = h.link(request(kernel(k), dir + "/k" + std::to_string(k) + ".so"));
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(warnings_of(r), "") << "asked the server during its backoff";
  }
  cache::Stats s = h.cache->stats();
  EXPECT_EQ(s.remote_errors, 1u);
  EXPECT_GE(s.remote_skipped, 3u);
}

// A byte of the artifact changed on the server: the signed manifest's
// BLAKE3 no longer matches, so the entry is refused and linked here.
TEST(Http, AnObjectChangedOnTheServerIsRefused) {
  std::string dir = test::temp_dir();
  NginxServer nginx(dir);
  std::string why;
  ASSERT_TRUE(nginx.start(&why)) << why;
  SecretKey key = SecretKey::generate();
  std::string out_a = test::temp_dir(), out_b = test::temp_dir();
  RemoteHost a(dir + "/a", nginx.url(), key, {});
  ASSERT_TRUE(a.service) << a.error->to_string();
  ASSERT_TRUE(a.link(request(kernel(11), out_a + "/k.so")).ok());
  std::string artifact;
  for (const std::string &o : objects_in(nginx.objects()))
    if (o.size() > 2 && o.compare(o.size() - 2, 2, ".a") == 0)
      artifact = nginx.objects() + "/" + o;
  ASSERT_FALSE(artifact.empty());
  Bytes bytes = test::read_file(artifact);
  bytes[bytes.size() / 2] ^= 0x40;
  test::write_file(artifact, bytes);
  RemoteHost b(dir + "/b", nginx.url(), std::nullopt, {key.public_key()});
  LinkResult r = b.link(request(kernel(11), out_b + "/k.so"));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.cache, CacheUse::Miss);
  EXPECT_NE(warnings_of(r).find("refused"), std::string::npos) << warnings_of(r);
  EXPECT_EQ(b.cache->stats().remote_refused, 1u);
}

// A server that wants a token: without one each call is refused (and
// named); with the auth file it works; a file others can read is refused
// before anything is sent.
TEST(Http, CredentialsComeFromAFileOnlyItsOwnerReads) {
  std::string dir = test::temp_dir();
  NginxServer nginx(dir, "s3cret");
  std::string why;
  ASSERT_TRUE(nginx.start(&why)) << why;
  SecretKey key = SecretKey::generate();
  {
    RemoteHost none(dir + "/none", nginx.url(), key, {});
    LinkResult r = none.link(request(kernel(21), dir + "/none.so"));
    ASSERT_TRUE(r.ok());
    EXPECT_NE(warnings_of(r).find("HTTP 401"), std::string::npos) << warnings_of(r);
  }
  std::string auth = dir + "/token";
  test::write_file(auth, Bytes{'B', 'e', 'a', 'r', 'e', 'r', ' ', 's', '3', 'c', 'r', 'e', 't', '\n'});
  ::chmod(auth.c_str(), 0644);
  RemoteHost loose(dir + "/loose", nginx.url(), key, {}, [&](cache::RemoteConfig &r) { r.auth_file = auth; });
  ASSERT_TRUE(loose.error.has_value()) << "a credentials file others can read was used";
  EXPECT_EQ(loose.error->input, auth);
  ::chmod(auth.c_str(), 0600);
  RemoteHost with(dir + "/with", nginx.url(), key, {}, [&](cache::RemoteConfig &r) { r.auth_file = auth; });
  ASSERT_TRUE(with.service) << with.error->to_string();
  LinkResult r = with.link(request(kernel(22), dir + "/with.so"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(warnings_of(r), "");
  EXPECT_EQ(with.cache->stats().published, 1u);
}

} // namespace
} // namespace hotlink
