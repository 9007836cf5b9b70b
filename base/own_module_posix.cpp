// base/own_module_host.h on POSIX hosts.
#include "base/own_module_host.h"

#include <dlfcn.h>
#include <sys/stat.h>

namespace hotlink::host {

std::string file_of_code(const void *address) {
  Dl_info info;
  if (!address || !::dladdr(address, &info) || !info.dli_fname)
    return {};
  return info.dli_fname;
}

std::string directory_of_code(const void *address) {
  std::string file = file_of_code(address);
  return file.empty() || file[0] != '/' ? std::string() : file.substr(0, file.rfind('/'));
}

bool file_exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// RTLD_NOW: a missing dependency is reported here; RTLD_LOCAL: what the
// module links stays its own.
void *load_library(const std::string &path, std::string &why) {
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = ::dlerror();
    why = e ? e : "dlopen failed";
  }
  return handle;
}

void *library_symbol(void *library, const char *name) { return ::dlsym(library, name); }

} // namespace hotlink::host
