// Internal. What loading needs from the platform: load_posix.cpp or
// load_windows.cpp implements Library's mapping.
#pragma once

#include <optional>
#include <string>

namespace hotlink::loader {

#include <vector>

} // namespace hotlink::loader
