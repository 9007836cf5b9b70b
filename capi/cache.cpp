// The C API's cache: opening one, and get_or_build with the caller's keys
// and a C producer callback (hotlink/cache.h).
#include "capi/objects.h"

#include "hotlink/signature.h"

using namespace hotlink;
using capi::str;

namespace {

// The remote tier and the keys of `o`, as cache::Config takes them.
std::optional<Error> add_trust(const hotlink_cache_options &o, const char *auth_file, cache::Config &config) {
  for (size_t i = 0; o.trusted_key_files && i < o.trusted_key_count; ++i) {
    if (!o.trusted_key_files[i])
      return capi::bad_argument("hotlink_cache_open", "trusted_key_files[i]");
    auto key = signature::read_public_key(o.trusted_key_files[i]);
    if (!key)
      return key.take_error();
    config.trusted_keys.push_back(std::move(*key));
  }
  if (o.sign_key_file && *o.sign_key_file) {
    auto key = signature::read_secret_key(o.sign_key_file);
    if (!key)
      return key.take_error();
    config.sign_key = std::move(*key);
  }
  if (o.remote_url && *o.remote_url) {
    cache::RemoteConfig remote;
    remote.url = o.remote_url;
    remote.auth_file = auth_file ? auth_file : "";
    config.remote = std::move(remote);
  }
  config.require_signed = o.require_signed != 0;
  return std::nullopt;
}

} // namespace

extern "C" {

hotlink_cache *hotlink_cache_open(const hotlink_cache_options *options, hotlink_error **error) {
  return hotlink_cache_open_with_auth(options, nullptr, error);
}

hotlink_cache *hotlink_cache_open_with_auth(const hotlink_cache_options *options, const char *remote_auth_file,
                                            hotlink_error **error) {
  return capi::guarded(error, static_cast<hotlink_cache *>(nullptr), [&]() -> hotlink_cache * {
    if (!options)
      return capi::report(error, capi::bad_argument("hotlink_cache_open", "options")), nullptr;
    if (!options->dir || !*options->dir)
      return capi::report(error, capi::bad_argument("hotlink_cache_open", "options->dir")), nullptr;
    cache::Config config;
    config.dir = options->dir;
    config.create = options->no_create == 0;
    if (options->max_bytes)
      config.limits.max_bytes = options->max_bytes;
    config.limits.max_entries = options->max_entries;
    config.limits.max_age = std::chrono::seconds(options->max_age_seconds);
    if (auto e = add_trust(*options, remote_auth_file, config))
      return capi::report(error, std::move(*e)), nullptr;
    auto opened = cache::Cache::open(std::move(config));
    if (!opened)
      return capi::report(error, opened.take_error()), nullptr;
    return new hotlink_cache{std::move(*opened)};
  });
}

void hotlink_cache_close(hotlink_cache *cache) { delete cache; }

// --- What a producer hands back --------------------------------------------------

void hotlink_build_set_artifact(hotlink_build *b, const void *data, size_t size, const char *name,
                                const char *target) {
  if (!b)
    return;
  capi::quietly(b->broken, [&] {
    if (!data && size) {
      b->failure = capi::bad_argument("hotlink_build_set_artifact", "data");
      return;
    }
    const auto *p = static_cast<const std::uint8_t *>(data);
    b->artifact.bytes.assign(p, p + size);
    b->artifact.name = str(name);
    b->artifact.target = target && *target ? std::string(target) : host_target();
    b->has_artifact = true;
  });
}

void hotlink_build_add_export(hotlink_build *b, const char *name) {
  if (b && name)
    capi::quietly(b->broken, [&] { b->artifact.exports.push_back(name); });
}

void hotlink_build_set_result(hotlink_build *b, const hotlink_result *r) {
  if (!b)
    return;
  capi::quietly(b->broken, [&] {
    if (!r) {
      b->failure = capi::bad_argument("hotlink_build_set_result", "result");
      return;
    }
    auto artifact = cache_artifact(r->result); // a copy: the result stays the caller's
    if (!artifact) {
      b->failure = artifact.take_error();
      return;
    }
    b->artifact = std::move(*artifact);
    b->has_artifact = true;
  });
}

void hotlink_build_fail(hotlink_build *b, const char *message) {
  if (b)
    capi::quietly(b->broken, [&] {
      b->failure = Error{ErrorCode::LinkFailed, message && *message ? message : "the producer failed", {}, {},
                         "see the producer's own report"};
    });
}

// --- get_or_build -----------------------------------------------------------------

hotlink_entry *hotlink_cache_get_or_build(hotlink_cache *cache, const void *key, size_t key_size,
                                          hotlink_build_fn produce, void *user, hotlink_error **error) {
  return capi::guarded(error, static_cast<hotlink_entry *>(nullptr), [&]() -> hotlink_entry * {
    if (!cache)
      return capi::report(error, capi::bad_argument("hotlink_cache_get_or_build", "cache")), nullptr;
    if (!key && key_size)
      return capi::report(error, capi::bad_argument("hotlink_cache_get_or_build", "key")), nullptr;
    if (!produce)
      return capi::report(error, capi::bad_argument("hotlink_cache_get_or_build", "produce")), nullptr;
    cache::Key k = cache::Key::of_caller(std::string(static_cast<const char *>(key), key_size));
    auto fetched = cache->cache->get_or_build(k, [&]() -> Expected<cache::Artifact> {
      hotlink_build build;
      produce(user, &build); // C: cannot throw
      if (build.broken)
        return capi::internal_error("out of memory while the producer handed back its artifact");
      if (build.failure)
        return std::move(*build.failure);
      if (!build.has_artifact)
        return Error{ErrorCode::BadRequest, "the producer returned without an artifact", {}, {},
                     "call hotlink_build_set_artifact, hotlink_build_set_result or hotlink_build_fail"};
      return std::move(build.artifact);
    });
    if (!fetched)
      return capi::report(error, fetched.take_error()), nullptr;
    auto *e = new hotlink_entry;
    e->entry = std::move(fetched->entry);
    e->hit = fetched->hit;
    e->trust = cache->cache->trust();
    return e;
  });
}

void hotlink_entry_destroy(hotlink_entry *entry) { delete entry; }

int hotlink_entry_hit(const hotlink_entry *e) { return e && e->hit ? 1 : 0; }

const uint8_t *hotlink_entry_bytes(const hotlink_entry *e, size_t *size) {
  if (size)
    *size = e ? e->entry.artifact.bytes.size() : 0;
  return e ? e->entry.artifact.bytes.data() : nullptr;
}

const char *hotlink_entry_name(const hotlink_entry *e) { return e ? e->entry.artifact.name.c_str() : ""; }
const char *hotlink_entry_blake3(const hotlink_entry *e) { return e ? e->entry.manifest.blake3.c_str() : ""; }
double hotlink_entry_build_ms(const hotlink_entry *e) { return e ? e->entry.manifest.build_ms : 0; }

} // extern "C"
