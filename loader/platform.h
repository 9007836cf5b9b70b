// Internal. What loading needs from the platform: load_posix.cpp or
// load_windows.cpp implements it, and Library's mapping.
#pragma once

#include <string>

namespace hotlink::loader {

// True when a symbol of that name is already loaded in this process (an
// import the dynamic loader can bind).
bool process_provides(const std::string &symbol);

} // namespace hotlink::loader
