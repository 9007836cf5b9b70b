// http:// and https://: one object per part of an entry, fetched with GET,
// stored with PUT, checked with HEAD, as ccache's HTTP storage does, so
// that nginx's WebDAV, bazel-remote or an object store's gateway serves
// it: BASE/<prefix><key>.<part>, the prefix's ':' written '-'.
//
// libcurl is opened on the first call (dlopen of libcurl.so.4), not linked:
// a process that never names an http:// remote maps none of it, and one
// without libcurl gets an error that says so. A publish puts the files
// first and the manifest last, so a reader that finds a manifest finds the
// files it names (or a part of another size: a miss). HTTP has no atomic
// "set if absent", so there are no build leases: each host that misses
// links.
#include "base/files.h"
#include "cache/backoff.h"
#include "cache/remote_backend.h"

#include <curl/curl.h>
#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <type_traits>

namespace hotlink::cache {

namespace {

// The libcurl entry points the backend calls, from libcurl.so.4.
struct Curl {
  CURLcode (*global_init)(long);
  CURL *(*easy_init)();
  CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
  CURLcode (*easy_perform)(CURL *);
  CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
  void (*easy_reset)(CURL *);
  void (*easy_cleanup)(CURL *);
  const char *(*easy_strerror)(CURLcode);
  curl_slist *(*slist_append)(curl_slist *, const char *);
  void (*slist_free_all)(curl_slist *);
  std::string error; // why libcurl cannot be used, when it cannot
};

const Curl &curl() {
  static const Curl c = [] {
    Curl c{};
    void *h = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      c.error = "libcurl.so.4 cannot be loaded (Debian: apt-get install libcurl4): " + std::string(::dlerror());
      return c;
    }
    bool ok = true;
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      ok = ok && fn;
    };
    sym(c.global_init, "curl_global_init");
    sym(c.easy_init, "curl_easy_init");
    sym(c.easy_setopt, "curl_easy_setopt");
    sym(c.easy_perform, "curl_easy_perform");
    sym(c.easy_getinfo, "curl_easy_getinfo");
    sym(c.easy_reset, "curl_easy_reset");
    sym(c.easy_cleanup, "curl_easy_cleanup");
    sym(c.easy_strerror, "curl_easy_strerror");
    sym(c.slist_append, "curl_slist_append");
    sym(c.slist_free_all, "curl_slist_free_all");
    if (!ok)
      c.error = "libcurl.so.4 lacks the functions hotlink calls";
    else if (c.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      c.error = "libcurl's global initialization failed";
    return c;
  }();
  return c;
}

// RFC 4648 base64, for Basic credentials.
std::string base64(const std::string &in) {
  static const char *kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t v = std::uint32_t(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size())
      v |= std::uint32_t(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size())
      v |= static_cast<unsigned char>(in[i + 2]);
    out += kDigits[v >> 18 & 63];
    out += kDigits[v >> 12 & 63];
    out += i + 1 < in.size() ? kDigits[v >> 6 & 63] : '=';
    out += i + 2 < in.size() ? kDigits[v & 63] : '=';
  }
  return out;
}

// One response: its status and up to `limit` bytes of its body.
struct Response {
  long status = 0;
  std::vector<std::uint8_t> body;
  std::uint64_t limit = 0;
  bool over = false; // the body was longer than the limit
};

std::size_t collect(char *data, std::size_t size, std::size_t n, void *user) {
  auto *r = static_cast<Response *>(user);
  std::size_t len = size * n;
  if (r->body.size() + len > r->limit) {
    r->over = true;
    return 0; // aborts the transfer
  }
  r->body.insert(r->body.end(), data, data + len);
  return len;
}

// A PUT's or an error's response body: read and dropped (libcurl's default
// would write it to the host's stdout).
std::size_t discard(char *, std::size_t size, std::size_t n, void *) { return size * n; }

struct Upload {
  const std::uint8_t *data;
  std::size_t size, at = 0;
};

std::size_t feed(char *buf, std::size_t size, std::size_t n, void *user) {
  auto *u = static_cast<Upload *>(user);
  std::size_t len = std::min(size * n, u->size - u->at);
  std::memcpy(buf, u->data + u->at, len);
  u->at += len;
  return len;
}

// Reads and writes go on their own connections, as on Redis.
constexpr int kReader = 0, kWriter = 1;

class HttpStore final : public RemoteBackend {
public:
  HttpStore(const RemoteConfig &cfg, const RemoteUrl &url, std::string authorization)
      : cfg_(cfg), url_(url), authorization_(std::move(authorization)), backoff_(cfg.backoff_min, cfg.backoff_max) {
    for (char c : cfg.prefix)
      prefix_ += c == ':' || c == '/' ? '-' : c;
  }
  ~HttpStore() override {
    for (Conn &c : conns_)
      if (c.handle)
        curl().easy_cleanup(c.handle);
  }

  bool usable() const override { return backoff_.usable(); }

  Got get_manifest(const std::string &key, std::uint64_t limit) override {
    Got g;
    Response r;
    r.limit = limit;
    g.status = request(kReader, "GET", object(key, "m"), nullptr, r, g.error);
    if (g.status == Status::Hit) {
      g.blobs.manifest.assign(r.body.begin(), r.body.end());
      g.status = g.blobs.manifest.empty() ? Status::Miss : Status::Hit;
    }
    return g;
  }

  Got get_parts(const std::string &key, const std::vector<Part> &parts) override {
    Got g;
    g.status = Status::Hit;
    for (const Part &p : parts) {
      if (p.size == 0)
        continue;
      Response r;
      r.limit = p.size + 1; // one byte more tells a longer object from one of the size asked
      g.status = request(kReader, "GET", object(key, p.name), nullptr, r, g.error);
      if (g.status != Status::Hit)
        return g;
      *p.out = std::move(r.body);
    }
    return g;
  }

  // No atomic "create if absent" in HTTP: no leases (Hit: build).
  Got take_lease(const std::string &, const std::string &, std::chrono::milliseconds) override {
    Got g;
    g.status = Status::Hit;
    return g;
  }
  void release_lease(const std::string &, const std::string &) override {}
  Got lease_held(const std::string &) override { return Got{}; }

  Got publish(const std::string &key, const RemoteStore::Blobs &b, std::chrono::seconds) override {
    Got g;
    // Another host may have published it meanwhile: HEAD says so at the
    // cost of one round trip, not of the artifact's bytes.
    Response head;
    g.status = request(kWriter, "HEAD", object(key, "m"), nullptr, head, g.error);
    if (g.status != Status::Hit || head.status == 200)
      return g;
    std::vector<std::pair<std::string, const std::vector<std::uint8_t> *>> puts = {{"a", &b.artifact}};
    for (const auto &[part, bytes] : b.companions)
      if (!bytes.empty())
        puts.emplace_back(part, &bytes);
    std::vector<std::uint8_t> manifest(b.manifest.begin(), b.manifest.end());
    puts.emplace_back("m", &manifest); // last: a reader finds the files it names
    for (const auto &[part, bytes] : puts) {
      Response r;
      g.status = request(kWriter, "PUT", object(key, part.c_str()), bytes, r, g.error);
      if (g.status != Status::Hit)
        return g;
    }
    return g;
  }

private:
  struct Conn {
    std::mutex mu;
    CURL *handle = nullptr;
  };

  std::string object(const std::string &key, const char *part) const {
    return url_.base + "/" + prefix_ + key + "." + part;
  }

  // One request. Hit with the response (a GET's 404 reads as an empty
  // body), Skipped in backoff, Error (with the backoff started) when the
  // server cannot be reached, times out or answers another status.
  Status request(int role, const char *method, const std::string &target,
                 const std::vector<std::uint8_t> *upload, Response &r, std::string &error) {
    const Curl &c = curl();
    if (!c.error.empty()) {
      error = url_.display + ": " + c.error;
      return Status::Error;
    }
    if (!backoff_.usable())
      return Status::Skipped;
    Conn &conn = conns_[role];
    std::lock_guard<std::mutex> lock(conn.mu);
    if (!conn.handle)
      conn.handle = c.easy_init();
    else
      c.easy_reset(conn.handle); // keeps its connections
    CURL *h = conn.handle;
    if (!h) {
      error = url_.display + ": cannot allocate a request";
      return Status::Error;
    }
    curl_slist *headers = nullptr;
    if (!authorization_.empty())
      headers = c.slist_append(headers, ("Authorization: " + authorization_).c_str());
    std::string range;
    bool get = std::string(method) == "GET", head = std::string(method) == "HEAD";
    if (get) {
      range = "0-" + std::to_string(r.limit - 1);
      c.easy_setopt(h, CURLOPT_RANGE, range.c_str());
      c.easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
      c.easy_setopt(h, CURLOPT_WRITEDATA, &r);
    } else {
      c.easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
      if (head)
        c.easy_setopt(h, CURLOPT_NOBODY, 1L);
    }
    Upload up{upload ? upload->data() : nullptr, upload ? upload->size() : 0};
    if (upload) {
      c.easy_setopt(h, CURLOPT_UPLOAD, 1L);
      c.easy_setopt(h, CURLOPT_READFUNCTION, feed);
      c.easy_setopt(h, CURLOPT_READDATA, &up);
      c.easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(up.size));
    }
    c.easy_setopt(h, CURLOPT_URL, target.c_str());
    c.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    c.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    c.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(cfg_.connect_timeout.count()));
    c.easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(cfg_.connect_timeout.count() + cfg_.io_timeout.count()));
    c.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = c.easy_perform(h);
    c.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    c.slist_free_all(headers);
    std::string what;
    if (r.over)
      what = std::string(method) + " " + target + " answered more than the " + std::to_string(r.limit) +
             " bytes asked for";
    else if (rc != CURLE_OK)
      what = c.easy_strerror(rc);
    else if (get && (r.status == 404 || r.status == 416))
      r.body.clear(); // absent (or empty): a miss
    else if ((head && r.status == 404) || (r.status >= 200 && r.status < 300))
      ; // fine
    else
      what = std::string(method) + " " + target + " answered HTTP " + std::to_string(r.status) +
             (r.status == 401 || r.status == 403 ? " (check the credentials in the auth file)" : "");
    if (!what.empty()) {
      auto b = backoff_.failed();
      error = url_.display + ": " + what + " (not used for the next " + std::to_string(b.count()) + " ms)";
      return Status::Error;
    }
    backoff_.succeeded();
    return Status::Hit;
  }

  RemoteConfig cfg_;
  RemoteUrl url_;
  std::string authorization_, prefix_;
  Backoff backoff_;
  Conn conns_[2];
};

} // namespace

Expected<std::unique_ptr<RemoteBackend>> make_http_backend(const RemoteConfig &config, const RemoteUrl &url) {
  std::string authorization;
  if (!config.auth_file.empty()) {
    if (auto mode = base::open_to_others(config.auth_file))
      return make_error(ErrorCode::BadRequest, "the remote's credentials file can be read by others (mode " + *mode + ")",
                        config.auth_file, "--remote-auth-file", "chmod 600 " + config.auth_file);
    std::vector<std::uint8_t> bytes;
    if (auto err = base::read_file(config.auth_file, bytes, 4096))
      return make_error(ErrorCode::InputNotFound, "cannot read the remote's credentials: " + err->to_string(),
                        config.auth_file, "--remote-auth-file", "give a file holding 'Bearer TOKEN' or 'USER:PASSWORD'");
    std::string text(bytes.begin(), bytes.end());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
      text.pop_back();
    if (text.empty() || text.find('\n') != std::string::npos)
      return make_error(ErrorCode::BadRequest, "the remote's credentials file must hold one line", config.auth_file,
                        "--remote-auth-file", "write 'Bearer TOKEN' or 'USER:PASSWORD' on its first line");
    if (text.rfind("Bearer ", 0) == 0)
      authorization = text;
    else if (text.find(':') != std::string::npos)
      authorization = "Basic " + base64(text);
    else
      return make_error(ErrorCode::BadRequest, "the remote's credentials are neither 'Bearer TOKEN' nor 'USER:PASSWORD'",
                        config.auth_file, "--remote-auth-file", "write one of those forms");
  }
  return std::unique_ptr<RemoteBackend>(new HttpStore(config, url, std::move(authorization)));
}

} // namespace hotlink::cache
