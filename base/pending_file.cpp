// What base/pending_file.h does the same way on every host;
// pending_file_posix.cpp and pending_file_windows.cpp hold the rest.
#include "base/pending_file.h"

#include <utility>

namespace hotlink::base {

PendingFile::PendingFile(PendingFile &&o) noexcept
    : path_(std::move(o.path_)), temp_(std::move(o.temp_)), how_(o.how_), native_(o.native_) {
  o.native_ = -1;
  o.temp_.clear();
}

PendingFile &PendingFile::operator=(PendingFile &&o) noexcept {
  if (this != &o) {
    drop();
    path_ = std::move(o.path_);
    temp_ = std::move(o.temp_);
    how_ = o.how_;
    native_ = o.native_;
    o.native_ = -1;
    o.temp_.clear();
  }
  return *this;
}

} // namespace hotlink::base
