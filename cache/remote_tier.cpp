// The remote tier as the cache uses it: fetching a signed entry from the
// shared Redis store (remote.h) and publishing what this process built.
#include "cache/store.h"

namespace hotlink::cache {

// The key's manifest from the remote. A miss by a host that will publish
// takes the key's build lease, or waits for the host that holds it.
RemoteStore::Got Cache::Impl::remote_manifest(const Key &k) {
  RemoteStore::Got g = remote->get_manifest(k.hex());
  if (g.status == RemoteStore::Status::Miss && cfg.sign_key) {
    RemoteStore::Got lease = remote->take_lease(k.hex());
    if (lease.status == RemoteStore::Status::Hit) {
      // Published between our read and the lease (whose holder had just
      // released it): use that rather than link it again.
      RemoteStore::Got again = remote->get_manifest(k.hex());
      if (again.status == RemoteStore::Status::Hit) {
        remote->release_lease(k.hex());
        g = std::move(again);
      }
    } else if (lease.status == RemoteStore::Status::Miss) {
      g = remote->wait_for_manifest(k.hex());
      if (g.status == RemoteStore::Status::Hit)
        count(kRemoteLeaseWaits);
    } else if (lease.status == RemoteStore::Status::Error) {
      g = lease;
    }
  }
  return g;
}

bool Cache::Impl::fetch_remote(const Key &k, Entry &out, std::vector<std::string> &warnings) {
  if (!remote)
    return false;
  RemoteStore::Got g = remote_manifest(k);
  switch (g.status) {
  case RemoteStore::Status::Skipped:
    count(kRemoteSkipped);
    return false;
  case RemoteStore::Status::Error:
    count(kRemoteErrors);
    warnings.push_back("remote cache " + g.error + "; built here instead");
    return false;
  case RemoteStore::Status::Miss:
    count(kRemoteMisses);
    return false;
  case RemoteStore::Status::Hit:
    break;
  }
  auto refuse = [&](const std::string &why) {
    count(kRemoteRefused);
    warnings.push_back("remote cache entry " + k.hex() + " from " + remote->url().display +
                       " refused: " + why + "; built here instead");
    return false;
  };
  Entry e;
  e.statement = std::move(g.blobs.manifest);
  std::string why = decode_manifest(e.statement, e.manifest);
  if (!why.empty())
    return refuse(why);
  why = check_signed(e.statement, e.manifest, "remote manifest");
  if (!why.empty())
    return refuse(why);
  if (e.manifest.key != k.hex())
    return refuse("its manifest belongs to another key");
  const Manifest &m = e.manifest;
  std::uint64_t total = m.size;
  std::vector<std::pair<std::string, std::uint64_t>> parts;
  for (const Companion &c : kCompanions) {
    std::uint64_t size = (m.*c.blake3).empty() ? 0 : m.*c.size;
    parts.emplace_back(c.remote_part, size);
    total += size;
  }
  if (total > remote->config().max_entry_bytes)
    return refuse("it is " + std::to_string(total) + " bytes, over the limit of " +
                  std::to_string(remote->config().max_entry_bytes));
  RemoteStore::Got files = remote->get_files(k.hex(), m.size, parts);
  if (files.status == RemoteStore::Status::Error) {
    count(kRemoteErrors);
    warnings.push_back("remote cache " + files.error + "; built here instead");
    return false;
  }
  if (files.status == RemoteStore::Status::Skipped) {
    count(kRemoteSkipped);
    return false;
  }
  if (files.status == RemoteStore::Status::Miss && files.damaged)
    return refuse("it is incomplete (" + files.error + ")");
  if (files.status == RemoteStore::Status::Miss) {
    // Part of the entry is gone (Redis evicted or expired a key): a miss,
    // not a refusal; nothing here suggests tampering.
    count(kRemoteMisses);
    warnings.push_back("remote cache entry " + k.hex() + " from " + remote->url().display +
                       " is incomplete (" + files.error + ": evicted or expired); a miss, built here instead");
    return false;
  }
  RemoteStore::Blobs &b = files.blobs;
  if (trust::blake3_hex(b.artifact.data(), b.artifact.size()) != m.blake3)
    return refuse("its artifact does not match the BLAKE3 its manifest signs");
  for (std::size_t i = 0; i < std::size(kCompanions); ++i) {
    const Companion &c = kCompanions[i];
    std::vector<std::uint8_t> &got = b.companions[i].second;
    if (parts[i].second && trust::blake3_hex(got.data(), got.size()) != m.*c.blake3)
      return refuse(std::string("its ") + c.what + " does not match the BLAKE3 its manifest signs");
    set_companion(e.artifact, i, std::move(got));
  }
  e.artifact.bytes = std::move(b.artifact);
  e.artifact.name = m.name;
  e.artifact.target = m.target;
  e.artifact.exports = m.exports;
  e.artifact.linker_version = m.linker_version;
  e.artifact.build_ms = m.build_ms;
  count(kRemoteHits);
  count(kSavedUs, static_cast<std::uint64_t>(m.build_ms * 1000));
  out = std::move(e);
  return true;
}

void Cache::Impl::publish(const Key &k, const Artifact &a, const std::string &text) {
  if (!remote || !cfg.sign_key)
    return;
  RemoteStore::Blobs b;
  b.manifest = text;
  b.artifact = a.bytes;
  for (std::size_t i = 0; i < std::size(kCompanions); ++i) {
    auto [data, size] = companion_bytes(a, i);
    b.companions.emplace_back(kCompanions[i].remote_part, std::vector<std::uint8_t>(data, data + size));
  }
  remote->publish(k.hex(), std::move(b));
}

} // namespace hotlink::cache
