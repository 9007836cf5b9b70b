// The remote cache's URL (remote_cache.h): read the same on every host,
// whether or not the host has a Redis client (remote_unavailable.cpp).
#include "hotlink/remote_cache.h"

#include <algorithm>
#include <cstdlib>

namespace hotlink::cache {

namespace {

Error bad_url(const std::string &url, const std::string &what) {
  return make_error(ErrorCode::BadRequest, "bad remote cache URL: " + what, url, "--remote",
                    "use redis://HOST[:PORT][/DB], redis+unix:///PATH, redis+cluster://HOST:PORT[,HOST:PORT...] "
                    "or http[s]://HOST[:PORT]/PATH");
}

bool parse_int(const std::string &s, int lo, int hi, int &out) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::atoi(s.c_str());
  return out >= lo && out <= hi;
}

// HOST[:PORT] or [IPV6][:PORT] into u.host and u.port; an error text.
std::string parse_host_port(const std::string &hostport, RemoteUrl &u) {
  std::size_t colon = hostport.rfind(':');
  if (!hostport.empty() && hostport[0] == '[') { // [::1]:6379
    std::size_t close = hostport.find(']');
    if (close == std::string::npos)
      return "an IPv6 address lacks its ']'";
    u.host = hostport.substr(1, close - 1);
    colon = hostport.size() > close + 1 && hostport[close + 1] == ':' ? close + 1 : std::string::npos;
    if (colon == std::string::npos && hostport.size() != close + 1)
      return "junk after the IPv6 address";
  } else {
    u.host = hostport.substr(0, colon);
  }
  if (u.host.empty())
    return "no host";
  if (colon != std::string::npos && !parse_int(hostport.substr(colon + 1), 1, 65535, u.port))
    return "the port '" + hostport.substr(colon + 1) + "' is not 1-65535";
  return {};
}

std::string host_port_text(const std::string &host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// redis+cluster://: a comma-separated list of nodes, no database (a
// cluster has only database 0).
Expected<RemoteUrl> parse_cluster(const std::string &url, const std::string &rest, RemoteUrl u) {
  u.cluster = true;
  if (rest.find('/') != std::string::npos || rest.find('?') != std::string::npos)
    return bad_url(url, "a cluster has no database to choose (only 0): remove the '/...'");
  std::string display;
  for (std::size_t start = 0; start <= rest.size();) {
    std::size_t comma = std::min(rest.find(',', start), rest.size());
    RemoteUrl node;
    if (std::string why = parse_host_port(rest.substr(start, comma - start), node); !why.empty())
      return bad_url(url, "node " + std::to_string(u.seeds.size() + 1) + ": " + why);
    u.seeds.emplace_back(node.host, node.port);
    display += (display.empty() ? "" : ",") + host_port_text(node.host, node.port);
    start = comma + 1;
  }
  u.host = u.seeds[0].first;
  u.port = u.seeds[0].second;
  u.display = "redis+cluster://" + display;
  return u;
}

// http[s]://HOST[:PORT][/PATH]: objects go under PATH. Credentials come
// from a file (RemoteConfig::auth_file), never from the URL, which is
// printed in messages and seen by other users in a process list.
Expected<RemoteUrl> parse_http(const std::string &url) {
  RemoteUrl u;
  u.http = true;
  bool tls = url[4] == 's';
  std::string rest = url.substr(tls ? 8 : 7);
  std::size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash), path = slash == std::string::npos ? "" : rest.substr(slash);
  if (std::size_t at = hostport.find('@'); at != std::string::npos) // named without them
    return make_error(ErrorCode::BadRequest, "bad remote cache URL: credentials in the URL",
                      url.substr(0, tls ? 8 : 7) + "***" + url.substr((tls ? 8 : 7) + at), "--remote",
                      "put 'Bearer TOKEN' or 'USER:PASSWORD' in a file only you can read, and name it with "
                      "--remote-auth-file");
  if (path.find_first_of("?#") != std::string::npos)
    return bad_url(url, "a query or fragment: objects are named by their path alone");
  u.port = tls ? 443 : 80;
  if (std::string why = parse_host_port(hostport, u); !why.empty())
    return bad_url(url, why);
  while (!path.empty() && path.back() == '/')
    path.pop_back();
  u.base = std::string(tls ? "https://" : "http://") + host_port_text(u.host, u.port) + path;
  u.display = u.base;
  return u;
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
  } else if (url.rfind("redis+cluster://", 0) == 0) {
    u.cluster = true;
    rest = url.substr(16);
  } else if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
    return parse_http(url);
  } else {
    return bad_url(url, "the scheme is not redis://, redis+unix://, redis+cluster://, http:// or https://");
  }
  if (std::size_t at = rest.find('@'); at != std::string::npos) {
    std::string auth = rest.substr(0, at);
    rest = rest.substr(at + 1);
    std::size_t colon = auth.find(':');
    u.password = colon == std::string::npos ? auth : auth.substr(colon + 1);
    if (u.password.empty())
      return bad_url(url, "an empty password");
  }
  if (u.cluster)
    return parse_cluster(url, rest, std::move(u));
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
  if (std::string why = parse_host_port(hostport, u); !why.empty())
    return bad_url(url, why);
  u.display = "redis://" + host_port_text(u.host, u.port) + (u.db ? "/" + std::to_string(u.db) : "");
  return u;
}

} // namespace hotlink::cache
