// Loading on POSIX hosts: a private memfd copy, dlopen'ed by its
// /proc/self/fd path.
#include "loader/loader.h"
#include "loader/platform.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace hotlink::loader {

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
  if (fd_ >= 0)
    ::close(fd_);
}

void *Library::symbol(const std::string &name) const { return dlsym(handle_, name.c_str()); }

Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &bytes,
                                                const std::string &name) {
  std::unique_ptr<Library> lib(new Library);
  lib->name_ = name;
  // A memfd per version: a private copy nobody can change after we verified
  // it, with its own inode so glibc never confuses it with an earlier one.
  lib->fd_ = ::memfd_create(("hotlink:" + name.substr(name.rfind('/') + 1)).c_str(), MFD_CLOEXEC);
  if (lib->fd_ < 0)
    return make_error(ErrorCode::LoadFailed, std::string("memfd_create failed: ") + std::strerror(errno),
                      name);
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(lib->fd_, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return make_error(ErrorCode::LoadFailed, std::string("cannot write the private copy: ") +
                                                   std::strerror(errno), name);
    off += static_cast<std::size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(lib->fd_);
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char *why = dlerror();
    return make_error(ErrorCode::LoadFailed, std::string("dlopen refused it: ") + (why ? why : "?"), name,
                      {}, "verify() it first; an unresolved import is the usual cause");
  }
  return lib;
}

} // namespace hotlink::loader
