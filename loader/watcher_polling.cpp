// loader/watcher.h where hotlink uses no notification of the host's yet
// (Windows, macOS): the Watcher polls the file's identity.
#include "loader/watcher.h"

namespace hotlink::loader {

std::unique_ptr<FileNotifier> file_notifier(const std::string &) { return nullptr; }

} // namespace hotlink::loader
