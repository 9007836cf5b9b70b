// The remote cache's URL (remote_cache.h): read the same on every host,
// whether or not the host has a Redis client (remote_unavailable.cpp).
#include "hotlink/remote_cache.h"

#include <cstdlib>

namespace hotlink::cache {

namespace {

Error bad_url(const std::string &url, const std::string &what) {
  return make_error(ErrorCode::BadRequest, "bad remote cache URL: " + what, url, "--remote",
                    "use redis://HOST[:PORT][/DB] or redis+unix:///PATH");
}

bool parse_int(const std::string &s, int lo, int hi, int &out) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::atoi(s.c_str());
  return out >= lo && out <= hi;
}

} // namespace

Expected<RemoteUrl> parse_remote_url(const std::string &url) {
  RemoteUrl u;
  std::string rest;
  if (url.rfind("redis://", 0) == 0) {
    rest = url.substr(8);
  } else if (url.rfind("redis+unix://", 0) == 0) {
    u.unix_socket = true;
    rest = url.substr(13);
  } else {
    return bad_url(url, "the scheme is not redis:// or redis+unix://");
  }
  if (std::size_t at = rest.find('@'); at != std::string::npos) {
    std::string auth = rest.substr(0, at);
    rest = rest.substr(at + 1);
    std::size_t colon = auth.find(':');
    u.password = colon == std::string::npos ? auth : auth.substr(colon + 1);
    if (u.password.empty())
      return bad_url(url, "an empty password");
  }
  if (u.unix_socket) {
    std::string query;
    if (std::size_t q = rest.find('?'); q != std::string::npos) {
      query = rest.substr(q + 1);
      rest = rest.substr(0, q);
    }
    if (rest.empty() || rest[0] != '/')
      return bad_url(url, "a unix socket path must be absolute (redis+unix:///run/redis.sock)");
    u.path = rest;
    if (!query.empty() && (query.rfind("db=", 0) != 0 || !parse_int(query.substr(3), 0, 65535, u.db)))
      return bad_url(url, "the only query is db=N");
    u.display = "redis+unix://" + u.path + (u.db ? "?db=" + std::to_string(u.db) : "");
    return u;
  }
  std::string hostport = rest, db;
  if (std::size_t slash = rest.find('/'); slash != std::string::npos) {
    hostport = rest.substr(0, slash);
    db = rest.substr(slash + 1);
  }
  if (!db.empty() && !parse_int(db, 0, 65535, u.db))
    return bad_url(url, "the database '" + db + "' is not a number");
  std::size_t colon = hostport.rfind(':');
  if (!hostport.empty() && hostport[0] == '[') { // [::1]:6379
    std::size_t close = hostport.find(']');
    if (close == std::string::npos)
      return bad_url(url, "an IPv6 address lacks its ']'");
    u.host = hostport.substr(1, close - 1);
    colon = hostport.size() > close + 1 && hostport[close + 1] == ':' ? close + 1 : std::string::npos;
    if (colon == std::string::npos && hostport.size() != close + 1)
      return bad_url(url, "junk after the IPv6 address");
  } else {
    u.host = hostport.substr(0, colon);
  }
  if (u.host.empty())
    return bad_url(url, "no host");
  if (colon != std::string::npos && !parse_int(hostport.substr(colon + 1), 1, 65535, u.port))
    return bad_url(url, "the port '" + hostport.substr(colon + 1) + "' is not 1-65535");
  u.display = "redis://" + (hostport[0] == '[' ? "[" + u.host + "]" : u.host) + ":" +
              std::to_string(u.port) + (u.db ? "/" + std::to_string(u.db) : "");
  return u;
}

} // namespace hotlink::cache
