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

bool process_provides(const std::string &symbol) { return dlsym(RTLD_DEFAULT, symbol.c_str()) != nullptr; }

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
