// The remote cache on a host without a Redis client or libcurl (Windows:
// Debian builds neither for mingw-w64). RemoteStore::create reads the URL, so a
// malformed one is still named as such, and then refuses with what is
// missing; no RemoteStore is ever made, so a Cache configured with a
// remote fails to open with that error instead of running without it.
#include "hotlink/remote_cache.h"

namespace hotlink::cache {

struct HOTLINK_HIDDEN RemoteStore::Impl {
  RemoteConfig cfg;
  RemoteUrl url;
};

RemoteStore::RemoteStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RemoteStore::~RemoteStore() = default;

Expected<std::unique_ptr<RemoteStore>> RemoteStore::create(RemoteConfig config) {
  auto url = parse_remote_url(config.url);
  if (!url)
    return url.take_error();
  return make_error(ErrorCode::BadRequest,
                    "this build of hotlink has no remote cache: its host (Windows) has no Redis client "
                    "and no libcurl (Debian builds neither for mingw-w64)",
                    url->display, "--remote",
                    "use the local cache on this host; a Linux host can fill it (the on-disk format is the same)");
}

namespace {
RemoteStore::Got unavailable() {
  RemoteStore::Got g;
  g.status = RemoteStore::Status::Skipped;
  g.error = "no remote cache on this host";
  return g;
}
} // namespace

RemoteStore::Got RemoteStore::get_manifest(const std::string &) { return unavailable(); }
RemoteStore::Got RemoteStore::get_files(const std::string &, std::uint64_t,
                                        const std::vector<std::pair<std::string, std::uint64_t>> &) {
  return unavailable();
}
RemoteStore::Got RemoteStore::take_lease(const std::string &) { return unavailable(); }
void RemoteStore::release_lease(const std::string &) {}
RemoteStore::Got RemoteStore::wait_for_manifest(const std::string &) { return unavailable(); }
void RemoteStore::publish(const std::string &, Blobs) {}
void RemoteStore::on_event(std::function<void(Event, const std::string &)>) {}
bool RemoteStore::usable() const { return false; }
const RemoteConfig &RemoteStore::config() const { return impl_->cfg; }
const RemoteUrl &RemoteStore::url() const { return impl_->url; }

} // namespace hotlink::cache
