// Publishing what a link writes: reserved before lld runs, renamed into
// place after (plan.h's OutputReservation).
#include "linker/plan.h"

#include "base/files.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::detail {

namespace {

// The process's umask, read without changing it (umask() would race with
// other threads creating files): /proc/self/status has it since Linux 4.7.
unsigned process_umask() {
  static const unsigned mask = [] {
    unsigned m = 022;
    if (std::FILE *f = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "Umask: %o", &m) == 1)
          break;
      std::fclose(f);
    }
    return m;
  }();
  return mask;
}

} // namespace

Expected<OutputReservation> OutputReservation::reserve(const std::string &path, unsigned mode) {
  OutputReservation r;
  r.path_ = path;
  r.mode_ = mode;
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  if (llvm::sys::path::filename(path).empty() || llvm::sys::fs::is_directory(path))
    return make_error(ErrorCode::OutputError, "the output path names a directory",
                      path, "-o", "name a file");
  std::string base = llvm::sys::path::filename(path).str();
  for (int attempt = 0; attempt < 100 && r.fd_ < 0; ++attempt) {
    r.temp_ = std::string(dir.str()) + "/." + base + ".hotlink-" +
              std::to_string(::getpid()) + "-" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007) +
              "-" + std::to_string(attempt) + ".tmp";
    r.fd_ = ::open(r.temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (r.fd_ < 0 && errno != EEXIST)
      break;
  }
  if (r.fd_ < 0) {
    int e = errno;
    r.temp_.clear();
    return make_error(ErrorCode::OutputError,
                      std::string("cannot write in the output directory '") +
                          dir.str().str() + "': " + std::strerror(e),
                      path, "-o", "choose a directory that exists and that you can write to");
  }
  return r;
}

OutputReservation::OutputReservation(OutputReservation &&o) noexcept
    : path_(std::move(o.path_)), temp_(std::move(o.temp_)), fd_(o.fd_), mode_(o.mode_) {
  o.fd_ = -1;
  o.temp_.clear();
}

OutputReservation::~OutputReservation() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!temp_.empty())
    ::unlink(temp_.c_str());
}

Error OutputReservation::failed(const char *what, int err) const {
  return make_error(ErrorCode::OutputError, std::string(what) + " '" + temp_ + "': " + std::strerror(err), path_,
                    "-o", "check free space and permissions of the output directory");
}

Error OutputReservation::write_error(int err) const { return failed("cannot write", err); }

std::optional<Error> OutputReservation::publish(const std::vector<std::uint8_t> &b) {
  if (!base::write_all(fd_, b.data(), b.size()))
    return write_error(errno);
  return commit();
}

std::optional<Error> OutputReservation::commit() {
  // Like a linker's output: the mode asked for, less the umask (the
  // temporary was created 0600 so nobody reads it half-written).
  ::fchmod(fd_, mode_ & ~process_umask());
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0)
    return failed("cannot close", errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    return failed("cannot rename", errno);
  temp_.clear();
  return std::nullopt;
}

} // namespace hotlink::detail
