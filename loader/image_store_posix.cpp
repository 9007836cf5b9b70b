// image_store_host.h on POSIX hosts: the store under the XDG cache, copies
// on tmpfs when it is off, build-id links, and what makes a store unusable
// (not this user's, not 0700, mounted noexec).
#include "loader/image_store_host.h"

#include "image/image.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <pthread.h>
#include <set>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace hotlink::loader::store::host {

namespace {

// This process's user, asked once (a load would otherwise ask at each copy).
uid_t my_uid() {
  static const uid_t uid = ::getuid();
  return uid;
}

bool make_dirs(const std::string &path, mode_t mode) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) // the usual case: one system call
    return true;
  for (std::size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') {
      std::string p = path.substr(0, i);
      if (::mkdir(p.c_str(), mode) != 0 && errno != EEXIST)
        return false;
    }
  return true;
}

// make_dirs once per directory and process (a reload would otherwise make
// a system call for each component of the store's path).
bool made_once(const std::string &path) {
  static std::mutex mu;
  static std::set<std::string> made;
  std::lock_guard<std::mutex> lock(mu);
  if (made.count(path))
    return true;
  if (!make_dirs(path, 0700))
    return false;
  made.insert(path);
  return true;
}

} // namespace

std::string default_store() {
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    return std::string(x) + "/hotlink/images";
  if (const char *h = std::getenv("HOME"); h && *h == '/')
    return std::string(h) + "/.cache/hotlink/images";
  return {};
}

std::vector<std::string> temporary_bases() {
  std::vector<std::string> bases;
  if (const char *e = std::getenv("HOTLINK_TMPDIR"); e && *e)
    bases.push_back(e);
  bases.push_back("/dev/shm");
  if (const char *t = std::getenv("TMPDIR"); t && *t)
    bases.push_back(t);
  bases.push_back("/tmp");
  return bases;
}

std::string unusable(const std::string &store) {
  struct stat st;
  if (::lstat(store.c_str(), &st) != 0) { // the usual case: one system call for a store that is there
    if (!make_dirs(store, 0700))
      return std::string("cannot create it: ") + std::strerror(errno);
    if (::lstat(store.c_str(), &st) != 0)
      return std::string("cannot read it: ") + std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode))
    return "it is not a directory";
  if (st.st_uid != my_uid())
    return "it belongs to another user";
  if ((st.st_mode & 0777) != 0700 && ::chmod(store.c_str(), 0700) != 0)
    return "its mode is not 0700 and cannot be made so";
  struct statvfs vfs;
  if (::statvfs(store.c_str(), &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))
    return "it is on a file system mounted noexec, where nothing can be mapped to run";
  return {};
}

bool removes_mapped_files() { return true; }

void index_copy(const std::string &store, const std::string &path, const std::vector<std::uint8_t> &bytes,
                const std::string *build_id) {
  Expected<std::string> id = build_id ? Expected<std::string>(*build_id)
                                      : image::read_elf_build_id(bytes.data(), bytes.size(), path);
  if (!id || id->size() <= 2)
    return;
  std::string sub = store + "/.build-id/" + id->substr(0, 2);
  if (!made_once(sub))
    return;
  std::string rest = sub + "/" + id->substr(2);
  for (const std::string &link : {rest + ".debug", rest}) {
    // A build-id names its bytes: a link that is there already, of the
    // same size, is an earlier copy of this image (a process's start then
    // skips two metadata writes of the file system's journal).
    struct stat st;
    if (::lstat(link.c_str(), &st) == 0 && S_ISREG(st.st_mode) && std::uint64_t(st.st_size) == bytes.size())
      continue;
    ::unlink(link.c_str());
    (void)::link(path.c_str(), link.c_str()); // the path alone still serves gdb and perf
  }
}

char separator() { return '/'; }

namespace {
// getpid(2) is a system call at each load without it; a forked child
// asks again.
std::atomic<pid_t> g_pid{0};
void forget_pid() { g_pid = 0; }
} // namespace

std::uint64_t process_id() {
  static const bool registered = ::pthread_atfork(nullptr, nullptr, forget_pid) == 0;
  pid_t pid = g_pid;
  if (!registered || pid == 0)
    g_pid = pid = ::getpid();
  return static_cast<std::uint64_t>(pid);
}

} // namespace hotlink::loader::store::host
