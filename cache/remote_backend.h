// The storage under RemoteStore (hotlink/remote_cache.h): a Redis server,
// a Redis Cluster or an HTTP server (remote_redis.cpp, remote_cluster.cpp,
// remote_http.cpp). RemoteStore
// keeps what every backend shares: the publish queue and its events, the
// size limits, the lease protocol's waiting. A backend keeps its own
// connections and backoff, since one cluster node that fails must not stop
// the others.
#pragma once

#include "hotlink/remote_cache.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hotlink::cache {

class RemoteBackend {
public:
  using Got = RemoteStore::Got;
  using Status = RemoteStore::Status;
  // A part of an entry to read, at most `size` bytes of it, into `out`.
  struct Part {
    const char *name;
    std::uint64_t size;
    std::vector<std::uint8_t> *out;
  };

  virtual ~RemoteBackend() = default;
  // The manifest of `key`, at most `limit` bytes of it (blobs.manifest);
  // Miss when absent. Skipped, as every call, while the server that holds
  // the key is in backoff; Error (with its text) when it failed now.
  virtual Got get_manifest(const std::string &key, std::uint64_t limit) = 0;
  // Reads each part into its `out`, at most its size: a part that is gone
  // reads empty (RemoteStore compares the lengths with the manifest's).
  virtual Got get_parts(const std::string &key, const std::vector<Part> &parts) = 0;
  // Takes the build lease of `key` for `holder` (Hit), or finds another
  // holder's (Miss).
  virtual Got take_lease(const std::string &key, const std::string &holder, std::chrono::milliseconds lease) = 0;
  // Drops the lease if `holder` still holds it.
  virtual void release_lease(const std::string &key, const std::string &holder) = 0;
  // Hit while someone holds the lease of `key`, Miss when it is gone.
  virtual Got lease_held(const std::string &key) = 0;
  // Writes an entry at once, so that no reader sees its new manifest with
  // older files, and drops its lease (Hit).
  virtual Got publish(const std::string &key, const RemoteStore::Blobs &blobs, std::chrono::seconds ttl) = 0;
  // False while every server is in backoff.
  virtual bool usable() const = 0;
};

// redis:// and redis+unix://: one server.
std::unique_ptr<RemoteBackend> make_redis_backend(const RemoteConfig &config, const RemoteUrl &url);
// redis+cluster://: a Redis Cluster (remote_cluster.cpp).
std::unique_ptr<RemoteBackend> make_cluster_backend(const RemoteConfig &config, const RemoteUrl &url);
// http:// and https:// (remote_http.cpp). Errors: the credentials file.
Expected<std::unique_ptr<RemoteBackend>> make_http_backend(const RemoteConfig &config, const RemoteUrl &url);

} // namespace hotlink::cache
