// Internal. What opening one of hotlink's own modules (own_module.cpp)
// asks of the host: own_module_posix.cpp (dladdr, dlopen) and
// own_module_windows.cpp (GetModuleFileNameW, LoadLibraryExW).
#pragma once

#include <string>

namespace hotlink::host {

// The file of the library or program whose code holds `address`; "" when
// no image holds it.
std::string file_of_code(const void *address);

// The directory of the library or program whose code holds `address`;
// "" when it is not known (or not an absolute path).
std::string directory_of_code(const void *address);

bool file_exists(const std::string &path);

// Loads the library at `path` now, with its dependencies, for the process's
// life; null with `why` when the host's loader refuses it.
void *load_library(const std::string &path, std::string &why);

void *library_symbol(void *library, const char *name);

} // namespace hotlink::host
