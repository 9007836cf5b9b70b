// What base/files.h does the same way on every host; files_posix.cpp and
// files_windows.cpp hold the rest.
#include "base/files.h"
#include "base/pending_file.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <unistd.h> // getpid (mingw-w64 declares it too)

namespace hotlink::base {

std::string unique_suffix() {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t seed = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  std::uint64_t v = seed ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull);
  char buf[64];
  std::snprintf(buf, sizeof buf, ".tmp-%d-%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(v));
  return buf;
}

std::string FileError::to_string() const { return std::string(step) + ": " + std::strerror(errnum); }

std::optional<FileError> write_file_atomically(const std::string &path, const void *data, std::size_t size,
                                               Publish how) {
  PendingFile file;
  if (auto failed = PendingFile::reserve(path, how, file))
    return failed;
  if (auto failed = file.write(data, size))
    return failed;
  return file.commit();
}

} // namespace hotlink::base
