// The cache's remote tier: one Redis server, a Redis Cluster or an HTTP
// server, shared by many hosts.
//
// Contract:
// - A remote entry is four Redis strings, PREFIX<key>:m (the manifest, a
//   signed statement: hotlink/signature.h), :a (the artifact), :d and :l
//   (COFF .def and import library, when present). A publish writes them in
//   one MULTI/EXEC, so a reader never sees a new manifest with old files;
//   each has the configured TTL. In a cluster they are PREFIX{<key>}:m and
//   so on: the hash tag puts an entry in one slot, so one node serves it
//   and its MULTI/EXEC.
// - Reads are bounded: the manifest is read with GETRANGE up to 16 MiB,
//   then each file up to the size the manifest declares (which the cache
//   checks against max_entry_bytes first), so a hostile server cannot make
//   the host allocate more than that.
// - Every call is bounded by connect_timeout and io_timeout and never
//   throws. After a failure (unreachable, timeout, protocol error, a reply
//   of the wrong type) the store stays unused for a backoff period that
//   doubles up to backoff_max, then is tried again; calls during the
//   backoff return Skipped at once. In a cluster each node has its own
//   backoff: a dead master's entries are misses while the others' hit.
// - A cluster's slots are read from any reachable node (CLUSTER SLOTS),
//   again after a node fails or answers MOVED; ASK is followed for the one
//   command. A master's promoted replica is found by that refresh; until
//   then its slots are Skipped, never answered by another node.
// - A remote miss by a host that can publish takes a lease on the key
//   (SET NX PX), so that hosts missing the same key at once link it once:
//   the others wait for the entry (at most lease_wait), then link anyway.
//   HTTP has no atomic "set if absent": there, each host that misses links.
// - Over HTTP an entry is objects BASE/<prefix><key>.m|a|d|l (the prefix's
//   ':' written '-'); a publish HEADs the manifest (another host may have
//   published it), PUTs the files, then the manifest; no TTL is sent (the
//   server's own expiry rules apply).
// - publish() is asynchronous unless `synchronous_publish`: a background
//   thread sends queued entries (at most max_queued; more are dropped and
//   counted). Destroying the store drains the queue for at most
//   drain_timeout.
#pragma once

#include "hotlink/error.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hotlink::cache {

struct HOTLINK_API RemoteUrl {
  bool unix_socket = false;
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string path;     // redis+unix:// socket path
  int db = 0;           // SELECTed after connecting
  std::string password; // AUTH, from redis://:PASSWORD@host
  std::string display;  // the URL without its password, for messages
  // redis+cluster://: the nodes asked for the cluster's slots (host and
  // port above are the first of them).
  bool cluster = false;
  std::vector<std::pair<std::string, int>> seeds;
  // http:// or https://: the URL objects are put under, without a
  // trailing '/' (host and port above are its server's).
  bool http = false;
  std::string base;
};

// redis://[:PASSWORD@]HOST[:PORT][/DB], redis+unix://[:PASSWORD@]/PATH[?db=N]
// or redis+cluster://[:PASSWORD@]HOST:PORT[,HOST:PORT...] (a Redis Cluster:
// any of its nodes; keys are routed by slot, each entry's parts share one),
// or http[s]://HOST[:PORT][/PATH] (one object per part under PATH, with
// GET, PUT and HEAD: a WebDAV server, bazel-remote, an object store's
// gateway; credentials never in the URL, see RemoteConfig::auth_file).
// Errors (BadRequest) name the URL and the part that is wrong.
HOTLINK_API Expected<RemoteUrl> parse_remote_url(const std::string &url);

struct HOTLINK_API RemoteConfig {
  std::string url; // see parse_remote_url()
  std::chrono::milliseconds connect_timeout{500};
  std::chrono::milliseconds io_timeout{2000}; // per reply
  std::chrono::seconds ttl{7 * 24 * 3600};    // of published entries; 0 = none
  std::uint64_t max_entry_bytes = 64ull << 20; // larger entries are neither sent nor read
  bool synchronous_publish = false; // publish before store()/get_or_build() return
  std::chrono::milliseconds backoff_min{1000}, backoff_max{60000};
  std::chrono::milliseconds drain_timeout{5000};
  std::size_t max_queued = 64;
  std::string prefix = "hotlink:1:";
  // http[s]://: a file (readable by its owner only) whose one line is
  // "Bearer TOKEN" or "USER:PASSWORD" (Basic), sent with every request.
  std::string auth_file;
  // One build per key across hosts: a host that misses takes a lease
  // (PREFIX<key>:b, SET NX with this expiry) before building; the others
  // wait up to lease_wait for its entry, then build themselves. A builder
  // that dies only delays the others until then. 0 = no leases.
  std::chrono::milliseconds lease{30000};
  std::chrono::milliseconds lease_wait{5000};
};

class HOTLINK_API RemoteStore {
public:
  struct Blobs {
    std::string manifest;
    std::vector<std::uint8_t> artifact;
    // The companions, by the Redis part that holds each (a publish lists
    // every part the cache knows: an empty one is deleted).
    std::vector<std::pair<std::string, std::vector<std::uint8_t>>> companions;
  };
  enum class Status { Hit, Miss, Error, Skipped };
  struct Got {
    Status status = Status::Miss;
    Blobs blobs;
    std::string error; // Status::Error: what failed; Status::Miss of a part: which
    // get_files(), Status::Miss: true when a part is there with another size
    // than its manifest says (damage), false when it is gone (evicted,
    // expired: an ordinary miss).
    bool damaged = false;
  };
  enum class Event { Published, PublishFailed, Dropped, Skipped };

  // Does not connect (the first call does). Errors: the URL.
  static Expected<std::unique_ptr<RemoteStore>> create(RemoteConfig config);
  ~RemoteStore();
  RemoteStore(const RemoteStore &) = delete;
  RemoteStore &operator=(const RemoteStore &) = delete;

  // The manifest of `key`; Miss when absent.
  Got get_manifest(const std::string &key);
  // The files of `key`, exactly as long as given (Miss when one is shorter:
  // it expired or was replaced since the manifest was read).
  // `companions`: each part's name and size (0: absent); blobs.companions
  // comes back in the same order.
  Got get_files(const std::string &key, std::uint64_t artifact_size,
                const std::vector<std::pair<std::string, std::uint64_t>> &companions);
  // Takes the build lease of `key`: Hit = taken (or leases are off), Miss =
  // another host holds it, Error/Skipped = the server failed (build anyway).
  Got take_lease(const std::string &key);
  // Gives up a lease this process holds (its build failed), so that other
  // hosts need not wait for it to expire.
  void release_lease(const std::string &key);
  // Polls for the manifest of `key` until it appears, the lease on it goes
  // away, or lease_wait passes (Miss).
  Got wait_for_manifest(const std::string &key);
  // Writes an entry (see the contract for when), releasing its lease. `on_event` reports the
  // outcome, from the publishing thread when asynchronous.
  void publish(const std::string &key, Blobs blobs);
  void on_event(std::function<void(Event, const std::string &)> callback);

  // True unless a backoff is running.
  bool usable() const;
  const RemoteConfig &config() const;
  const RemoteUrl &url() const;

  struct Impl;

private:
  explicit RemoteStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace hotlink::cache
