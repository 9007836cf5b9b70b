// A real nginx serving WebDAV (PUT, DELETE) for tests and benchmarks, as a
// user would put one in front of the remote tier: on a free loopback port,
// in one process (master_process off) with every path in a private
// directory; stopped (SIGKILL) and restarted on demand. With a token, it
// answers 401 to requests without "Authorization: Bearer TOKEN".
#pragma once

#include "test/redis_server.h" // free_port()
#include "test/support.h"

#include <fstream>

#include <sys/stat.h>

#ifndef HOTLINK_NGINX_PATH
#define HOTLINK_NGINX_PATH "/usr/sbin/nginx"
#endif

namespace hotlink::test {

class NginxServer {
public:
  explicit NginxServer(std::string dir, std::string token = {})
      : dir_(std::move(dir)), token_(std::move(token)), port_(free_port()) {}
  NginxServer(const NginxServer &) = delete;
  NginxServer &operator=(const NginxServer &) = delete;

  bool start(std::string *why) {
    if (process_.running())
      return true;
    ::mkdir(root().c_str(), 0700);
    ::mkdir((dir_ + "/tmp").c_str(), 0700);
    std::string conf = dir_ + "/nginx.conf";
    {
      std::ofstream c(conf);
      c << "daemon off;\nmaster_process off;\nworker_processes 1;\npid " << dir_ << "/nginx.pid;\n"
        << "error_log " << dir_ << "/error.log;\nevents {}\nhttp {\n  access_log off;\n"
        << "  client_body_temp_path " << dir_ << "/tmp;\n  proxy_temp_path " << dir_ << "/tmp;\n"
        << "  fastcgi_temp_path " << dir_ << "/tmp;\n  uwsgi_temp_path " << dir_ << "/tmp;\n"
        << "  scgi_temp_path " << dir_ << "/tmp;\n  client_max_body_size 256m;\n"
        << "  server {\n    listen 127.0.0.1:" << port_ << ";\n    root " << root() << ";\n"
        << "    location / {\n      dav_methods PUT DELETE;\n      create_full_put_path on;\n";
      if (!token_.empty())
        c << "      if ($http_authorization != \"Bearer " << token_ << "\") { return 401; }\n";
      c << "    }\n  }\n}\n";
    }
    return process_.start({HOTLINK_NGINX_PATH, "-p", dir_, "-c", conf, "-e", dir_ + "/error.log"},
                          [this] { return answers(); }, dir_ + "/error.log", why);
  }

  void stop() { process_.stop(); }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/cache"; }
  // Where the objects under url() lie on disk.
  std::string root() const { return dir_ + "/www"; }
  std::string objects() const { return root() + "/cache"; }

private:
  bool answers() const {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    bool ok = ::connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
    ::close(s);
    return ok;
  }

  std::string dir_, token_;
  int port_;
  ServerProcess process_;
};

} // namespace hotlink::test
