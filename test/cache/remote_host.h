// A host of the remote tier's tests: its own cache directory and link
// service over one remote, publishing synchronously, with short timeouts.
#pragma once

#include "hotlink/cache.h"
#include "hotlink/link_service.h"
#include "hotlink/remote_cache.h"
#include "hotlink/signature.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>

namespace hotlink::test {

// A cache over one remote, publishing synchronously, with short timeouts
// and backoff (a dead server costs the tests little).
inline cache::Config short_remote_config(const std::string &dir, const std::string &url,
                                         const std::optional<signature::SecretKey> &sign,
                                         const std::vector<signature::PublicKey> &trust) {
  cache::Config c;
  c.dir = dir;
  c.sign_key = sign;
  c.trusted_keys = trust;
  c.remote = cache::RemoteConfig{};
  c.remote->url = url;
  c.remote->synchronous_publish = true;
  c.remote->connect_timeout = c.remote->io_timeout = std::chrono::milliseconds(500);
  c.remote->backoff_min = std::chrono::milliseconds(50);
  c.remote->backoff_max = std::chrono::milliseconds(200);
  return c;
}

struct RemoteHost {
  std::shared_ptr<cache::Cache> cache;
  std::unique_ptr<LinkService> service;
  std::optional<Error> error; // why the cache did not open

  explicit RemoteHost(const cache::Config &c) {
    auto opened = cache::Cache::open(c);
    if (!opened.ok()) {
      error = opened.error();
      return;
    }
    cache = opened.value();
    ServiceConfig sc;
    sc.cache = cache;
    service = std::make_unique<LinkService>(sc);
  }
  RemoteHost(const std::string &dir, const std::string &url, const std::optional<signature::SecretKey> &sign,
             const std::vector<signature::PublicKey> &trust,
             const std::function<void(cache::RemoteConfig &)> &tweak = {})
      : RemoteHost(tweaked(short_remote_config(dir, url, sign, trust), tweak)) {}
  LinkResult link(const LinkRequest &r) { return service->link(r); }

  static cache::Config tweaked(cache::Config c, const std::function<void(cache::RemoteConfig &)> &tweak) {
    if (tweak)
      tweak(*c.remote);
    return c;
  }
};

inline std::string warnings_of(const LinkResult &r) {
  std::string w;
  for (const Diagnostic &d : r.diagnostics)
    w += d.message + "\n";
  return w;
}

} // namespace hotlink::test
