// Loading on POSIX hosts: each private copy is a real file in a directory
// of this process's own (on tmpfs), dlopen'ed by its path, so that gdb,
// perf and valgrind open the image by the name the dynamic loader lists.
// (A memfd, the earlier design, showed them /proc/self/fd/N: gdb opened its
// own fd N and hung, perf and valgrind named no function.)
#include "loader/loader.h"
#include "base/files.h"
#include "loader/platform.h"

#include "exports/symbols.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::loader {

namespace {

// --- The process's load directory ---------------------------------------------

constexpr const char *kPrefix = "hotlink-load-";

// Removes the load directories of processes that are gone: each holds a
// .lock its owner keeps flock'ed for its lifetime (the kernel drops the
// lock when the owner dies, however it dies). One without a .lock is a
// directory whose owner died between making it and locking it; it is left
// a minute for an owner that is still starting.
void remove_abandoned(const std::string &base, const std::string &mine) {
  DIR *d = ::opendir(base.c_str());
  if (!d)
    return;
  std::vector<std::string> dead;
  while (struct dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind(kPrefix, 0) != 0)
      continue;
    std::string dir = base + "/" + n;
    struct stat st;
    if (dir == mine || ::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
      continue;
    int fd = ::open((dir + "/.lock").c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      if (errno == ENOENT && ::time(nullptr) - st.st_mtime > 60)
        dead.push_back(dir);
      continue;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0)
      dead.push_back(dir);
    ::close(fd);
  }
  ::closedir(d);
  for (const std::string &dir : dead)
    base::remove_tree(dir);
}

struct LoadDirectory {
  std::string path;
  std::string error;
  int lock_fd = -1;
  pid_t owner = ::getpid();
  // At exit the directory goes, with whatever copies are left (a mapping
  // outlives its file); a forked child leaves its parent's alone.
  ~LoadDirectory() {
    if (!path.empty() && ::getpid() == owner)
      base::remove_tree(path);
  }
};

// Made on first use: $HOTLINK_TMPDIR, else /dev/shm, else $TMPDIR, else
// /tmp. Kept for the process's life (the lock with it).
const LoadDirectory &load_directory() {
  static LoadDirectory dir = [] {
    LoadDirectory d;
    std::vector<std::string> bases;
    if (const char *e = std::getenv("HOTLINK_TMPDIR"); e && *e)
      bases.push_back(e);
    bases.push_back("/dev/shm");
    if (const char *t = std::getenv("TMPDIR"); t && *t)
      bases.push_back(t);
    bases.push_back("/tmp");
    for (const std::string &b : bases) {
      std::string templ = b + "/" + kPrefix + "XXXXXX";
      std::vector<char> buf(templ.begin(), templ.end());
      buf.push_back('\0');
      if (!::mkdtemp(buf.data())) { // mode 0700
        d.error = "cannot create a directory in " + b + ": " + std::strerror(errno);
        continue;
      }
      d.path = buf.data();
      d.lock_fd = ::open((d.path + "/.lock").c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (d.lock_fd >= 0)
        ::flock(d.lock_fd, LOCK_EX);
      remove_abandoned(b, d.path);
      break;
    }
    return d;
  }();
  return dir;
}

// --- Names ----------------------------------------------------------------------

std::string base_name(const std::string &name) { return name.substr(name.rfind('/') + 1); }

// "kernel.so" -> {"kernel", ".so"}; "libz.so.1" -> {"libz", ".so.1"}.
std::pair<std::string, std::string> split_extension(const std::string &file) {
  std::size_t so = file.find(".so");
  if (so != std::string::npos && so > 0)
    return {file.substr(0, so), file.substr(so)};
  std::size_t dot = file.rfind('.');
  if (dot == std::string::npos || dot == 0)
    return {file, ".so"};
  return {file.substr(0, dot), file.substr(dot)};
}

// Keeps what a file name may hold in a path and a debugger's output.
std::string clean(const std::string &s) {
  std::string out;
  for (char c : s.substr(0, 96))
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+') ? c : '_';
  return out.empty() ? "artifact" : out;
}

std::string default_file_name(const std::vector<std::uint8_t> &bytes, const std::string &name) {
  static std::atomic<std::uint64_t> count{0};
  auto [stem, ext] = split_extension(clean(base_name(name)));
  return stem + "." + std::to_string(++count) + "." + blake3_hex(bytes).substr(0, 8) + ext;
}

// --- Post-mortem images ----------------------------------------------------------

bool make_dirs(const std::string &path) {
  for (std::size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') {
      std::string p = path.substr(0, i);
      if (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST)
        return false;
    }
  return true;
}

// Removes the oldest images (every name of one inode together) while DIR
// holds more than `max_bytes`.
void bound_kept(const std::string &dir, std::uint64_t max_bytes) {
  struct Image {
    std::uint64_t size = 0;
    std::int64_t mtime = 0;
    std::vector<std::string> names;
  };
  std::map<std::pair<dev_t, ino_t>, Image> images;
  auto scan = [&](const std::string &d) {
    DIR *h = ::opendir(d.c_str());
    if (!h)
      return;
    while (struct dirent *e = ::readdir(h)) {
      std::string p = d + "/" + e->d_name;
      struct stat st;
      if (e->d_name[0] == '.' || ::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        continue;
      Image &im = images[{st.st_dev, st.st_ino}];
      im.size = std::uint64_t(st.st_size);
      im.mtime = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
      im.names.push_back(p);
    }
    ::closedir(h);
  };
  scan(dir);
  if (DIR *h = ::opendir((dir + "/.build-id").c_str())) {
    while (struct dirent *e = ::readdir(h))
      if (e->d_name[0] != '.')
        scan(dir + "/.build-id/" + e->d_name);
    ::closedir(h);
  }
  std::uint64_t total = 0;
  std::vector<const Image *> order;
  for (const auto &[id, im] : images) {
    total += im.size;
    order.push_back(&im);
  }
  std::sort(order.begin(), order.end(), [](const Image *a, const Image *b) { return a->mtime < b->mtime; });
  for (const Image *im : order) {
    if (total <= max_bytes)
      break;
    for (const std::string &n : im->names)
      ::unlink(n.c_str());
    total -= im->size;
  }
}

// Writes the image under the names gdb and perf look for (see LoadOptions).
void keep_image(const std::vector<std::uint8_t> &bytes, const std::string &file_name,
                const LoadOptions &options) {
  std::string dir = options.keep_images;
  if (dir.empty())
    if (const char *e = std::getenv("HOTLINK_KEEP_IMAGES"))
      dir = e;
  if (dir.empty() || !make_dirs(dir))
    return;
  std::string by_name = dir + "/" + file_name;
  base::AtomicWrite how;
  how.mode = 0644;
  if (base::write_file_atomically(by_name, bytes.data(), bytes.size(), how))
    return;
  auto info = exports::read_artifact(bytes.data(), bytes.size(), file_name);
  if (info && info->build_id.size() > 2) {
    std::string sub = dir + "/.build-id/" + info->build_id.substr(0, 2);
    if (make_dirs(sub)) {
      std::string rest = sub + "/" + info->build_id.substr(2);
      for (const std::string &link : {rest + ".debug", rest}) {
        ::unlink(link.c_str());
        if (::link(by_name.c_str(), link.c_str()) != 0) {
          // Another file system would need a copy; the name alone is enough
          // for gdb's solib-search-path.
        }
      }
    }
  }
  bound_kept(dir, options.keep_max_bytes);
}

// The loaded segments of the image `handle` maps, and its base.
void find_ranges(void *handle, std::uintptr_t &base, std::vector<ImageRange> &ranges) {
  struct link_map *map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map)
    return;
  struct Search {
    const struct link_map *map;
    std::vector<ImageRange> *ranges;
  } search{map, &ranges};
  base = map->l_addr;
  ::dl_iterate_phdr(
      [](struct dl_phdr_info *info, std::size_t, void *data) -> int {
        auto *s = static_cast<Search *>(data);
        if (info->dlpi_addr != s->map->l_addr || !info->dlpi_name || std::strcmp(info->dlpi_name, s->map->l_name) != 0)
          return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_LOAD)
            s->ranges->push_back({info->dlpi_addr + info->dlpi_phdr[i].p_vaddr,
                                  info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz});
        return 1;
      },
      &search);
}

} // namespace

std::optional<Unresolved> unresolved_import(const std::vector<std::string> &imports,
                                            const std::vector<std::string> &needed) {
  // The needed libraries, opened as the artifact's own load would open
  // them (a library the process has already is only referenced again).
  std::vector<void *> handles;
  std::optional<Unresolved> missing;
  for (const std::string &lib : needed) {
    void *h = dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
      const char *why = dlerror();
      missing = Unresolved{{}, lib, why ? why : "not found"};
      break;
    }
    handles.push_back(h);
  }
  if (!missing)
    for (const std::string &imp : imports) {
      bool found = dlsym(RTLD_DEFAULT, imp.c_str()) != nullptr;
      for (void *h : handles)
        found = found || dlsym(h, imp.c_str()) != nullptr;
      if (!found) {
        missing = Unresolved{imp, {}, {}};
        break;
      }
    }
  for (void *h : handles)
    dlclose(h);
  return missing;
}

Library::~Library() {
  if (handle_)
    dlclose(handle_);
  if (!copy_path_.empty())
    ::unlink(copy_path_.c_str());
}

void *Library::symbol(const std::string &name) const { return dlsym(handle_, name.c_str()); }

Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &bytes,
                                                const std::string &name, const LoadOptions &options) {
  const LoadDirectory &dir = load_directory();
  if (dir.path.empty())
    return make_error(ErrorCode::LoadFailed, "no directory for private copies: " + dir.error, name, {},
                      "make /dev/shm or $TMPDIR writable, or set HOTLINK_TMPDIR");
  std::unique_ptr<Library> lib(new Library);
  lib->name_ = name;
  std::string file = options.file_name.empty() ? default_file_name(bytes, name) : clean(options.file_name);
  // The name is unique in this process; a forked child shares the
  // directory, so a clash gets the pid too.
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    std::string f = attempt == 0 ? file : std::to_string(::getpid()) + "-" + file;
    lib->copy_path_ = dir.path + "/" + f;
    fd = ::open(lib->copy_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (fd >= 0)
      file = f;
  }
  if (fd < 0) {
    int e = errno;
    lib->copy_path_.clear();
    return make_error(ErrorCode::LoadFailed, "cannot create the private copy in " + dir.path + ": " + std::strerror(e),
                      name);
  }
  bool ok = base::write_all(fd, bytes.data(), bytes.size());
  int e = errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok)
    return make_error(ErrorCode::LoadFailed, std::string("cannot write the private copy: ") + std::strerror(e),
                      name); // ~Library removes it
  ::chmod(lib->copy_path_.c_str(), 0500); // nobody changes it after it was verified
  lib->handle_ = dlopen(lib->copy_path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char *why = dlerror();
    return make_error(ErrorCode::LoadFailed, std::string("dlopen refused it: ") + (why ? why : "?"), name,
                      {}, "verify() it first; an unresolved import is the usual cause");
  }
  find_ranges(lib->handle_, lib->base_, lib->ranges_);
  if (!options.keep_images.empty() || std::getenv("HOTLINK_KEEP_IMAGES"))
    keep_image(bytes, file, options);
  return lib;
}

} // namespace hotlink::loader
