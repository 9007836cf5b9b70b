// Loading on POSIX hosts: each private copy is a real file in a directory
// of this process's own (on tmpfs), dlopen'ed by its path, so that gdb,
// perf and valgrind open the image by the name the dynamic loader lists.
// (A memfd, the earlier design, showed them /proc/self/fd/N: gdb opened its
// own fd N and hung, perf and valgrind named no function.)
#include "hotlink/load.h"
#include "base/files.h"
#include "loader/image_store.h"
#include "loader/platform.h"
#include "trust/recent_digests.h"

#include "hotlink/symbols.h"

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

Library::~Library() {
  if (handle_)
    dlclose(handle_);
  if (copy_path_.empty())
    return;
  if (kept_)
    store::unmapped(copy_path_); // stays for post-mortem tools
  else
    ::unlink(copy_path_.c_str());
}

void *Library::symbol(const std::string &name) const { return dlsym(handle_, name.c_str()); }

Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &bytes,
                                                const std::string &name, const LoadOptions &options) {
  return load_copy(bytes, name, options, nullptr, nullptr);
}

Expected<std::unique_ptr<Library>> load_copy(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                             const LoadOptions &options, const std::string *build_id,
                                             const std::string *known_blake3) {
  const store::CopyDirectory &dir = store::copy_directory(options);
  if (dir.path.empty())
    return make_error(ErrorCode::LoadFailed, "no directory for private copies: " + dir.error, name, {},
                      "make /dev/shm or $TMPDIR writable, or set HOTLINK_TMPDIR");
  std::unique_ptr<Library> lib(new Library);
  lib->name_ = name;
  std::string blake3 = known_blake3 ? *known_blake3 : trust::artifact_blake3_hex(bytes.data(), bytes.size());
  std::string file = clean_file_name(options.file_name.empty() ? copy_file_name(name, options.version, blake3)
                                                     : options.file_name);
  // The name is taken when this process (or a forked child, which shares
  // the directory) maps a copy of the same bytes under it, or when another
  // copy is there: then NAME[.vN].<hash>.K.so, K = 2, 3, ... A copy of the
  // same bytes that an earlier owner left, or that this process has
  // unmapped, is this load's copy (store::reuse).
  int fd = -1;
  bool reused = false;
  base::FileIdentity seen;
  auto [stem, ext] = split_extension(file);
  for (int attempt = 1; attempt <= 1000 && fd < 0 && !reused; ++attempt) {
    std::string f = attempt == 1 ? file : stem + "." + std::to_string(attempt) + ext;
    lib->copy_path_ = dir.path + "/" + f;
    // The copy that serves again is looked for first: a JIT's cache hits
    // find it, and a name that is free costs one failed open.
    if ((reused = store::reuse(dir, lib->copy_path_, bytes, blake3, seen)))
      break;
    // Read-only from its creation: nobody changes it after it was verified
    // (the descriptor opened here still writes it).
    fd = ::open(lib->copy_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0500);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0 && !reused) {
    int e = errno;
    lib->copy_path_.clear();
    return make_error(ErrorCode::LoadFailed, "cannot create the private copy in " + dir.path + ": " + std::strerror(e),
                      name);
  }
  if (!reused) {
    bool ok = base::write_all(fd, bytes.data(), bytes.size());
    int e = errno;
    ok = ::close(fd) == 0 && ok;
    if (!ok)
      return make_error(ErrorCode::LoadFailed, std::string("cannot write the private copy: ") + std::strerror(e),
                        name); // ~Library removes it
  }
  lib->handle_ = dlopen(lib->copy_path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char *why = dlerror();
    return make_error(ErrorCode::LoadFailed, std::string("dlopen refused it: ") + (why ? why : "?"), name,
                      {}, "verify() it first; an unresolved import is the usual cause");
  }
  find_ranges(lib->handle_, lib->base_, lib->ranges_);
  lib->kept_ = dir.kept;
  store::kept(dir, lib->copy_path_, bytes, build_id, /*written=*/!reused, options, blake3, seen);
  return lib;
}

} // namespace hotlink::loader
