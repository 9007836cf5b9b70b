// Finding and opening hotlink's own modules (own_module.h): where to look,
// and the errors, are the same on every host; what the host does
// (dladdr/dlopen, GetModuleFileNameW/LoadLibraryExW) is
// own_module_posix.cpp's and own_module_windows.cpp's.
#include "base/own_module.h"
#include "base/own_module_host.h"

#include <cstdlib>

namespace hotlink {

std::vector<std::string> own_module_candidates(const OwnModule &m) {
  if (const char *env = std::getenv(m.env.c_str()); env && *env)
    return {env};
  std::vector<std::string> dirs;
  if (std::string here = host::directory_of_code(m.anchor); !here.empty()) {
    dirs.push_back(here);
    dirs.push_back(here + "/../lib");
  }
  for (const std::string &d : m.dirs)
    if (!d.empty()) // a build with no installation directory (Windows)
      dirs.push_back(d);
  std::vector<std::string> files;
  for (const std::string &d : dirs)
    files.push_back(d + "/" + m.file);
  return files;
}

Expected<std::string> find_own_module(const OwnModule &m, const std::string &why_needed) {
  std::vector<std::string> candidates = own_module_candidates(m);
  for (const std::string &path : candidates)
    if (host::file_exists(path))
      return path;
  std::string looked;
  for (const std::string &c : candidates)
    looked += " " + c;
  return make_error(ErrorCode::Internal,
                    why_needed + " needs hotlink's module " + m.file + ", which is not installed (looked for" + looked +
                        ")",
                    m.file, {}, "install it with hotlink, or set " + m.env + " to its path");
}

Expected<OpenedModule> open_own_module(const OwnModule &m, const std::string &why_needed, const char *symbol,
                                 const std::string &load_hint) {
  auto path = find_own_module(m, why_needed);
  if (!path)
    return path.take_error();
  std::string why;
  void *handle = host::load_library(*path, why);
  if (!handle)
    return make_error(ErrorCode::Internal, "cannot load " + m.file + ": " + why, *path, {}, load_hint);
  void *entry = host::library_symbol(handle, symbol);
  if (!entry)
    return make_error(ErrorCode::Internal, m.file + " has no " + symbol + " (it is not one of hotlink's modules)",
                      *path, {}, "reinstall hotlink, or point " + m.env + " at the right file");
  return OpenedModule{*path, entry};
}

Error foreign_module(const std::string &what, const std::string &path, const std::string &env) {
  return make_error(ErrorCode::Internal, what + " is not this libhotlink's (another version or build of hotlink)", path,
                    {}, "install libhotlink and its modules from one build, or point " + env + " at the right one");
}

} // namespace hotlink
