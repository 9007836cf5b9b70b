// Publishing what a link writes: reserved before lld runs, published after
// (output.h's OutputReservation, over base/pending_file.h).
#include "linker/output.h"
#include "hotlink/link.h"

#include "base/files.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace hotlink::detail {

namespace {

// The directory part of `path` ("." for a bare name, "/" for one in the
// root) and its last part ("" when it ends in '/').
std::string directory_of(const std::string &path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}
std::string name_of(const std::string &path) { return path.substr(path.rfind('/') + 1); }

bool is_directory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Removes the named temporaries of `base` in `dir` (BASE.tmp-PID-RANDOM:
// base/pending_file.h) that no link holds, so that those of killed links
// do not pile up.
void sweep_dead_temporaries(const std::string &dir, const std::string &base) {
  std::string prefix = base + ".tmp-";
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  std::vector<std::string> found;
  while (struct dirent *e = ::readdir(d))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
      found.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  for (const std::string &t : found)
    base::remove_if_abandoned(t);
}

// Once per process and output where the reservation is unnamed (a killed
// link leaves a temporary only in the instant of its commit); at every
// link where the file system makes it named.
void sweep(const std::string &dir, const std::string &base, bool named) {
  static std::mutex mu;
  static std::set<std::string> swept;
  std::lock_guard<std::mutex> lock(mu);
  if (swept.insert(dir + "/" + base).second || named)
    sweep_dead_temporaries(dir, base);
}

} // namespace

Expected<OutputReservation> OutputReservation::reserve(const std::string &path, unsigned mode) {
  OutputReservation r;
  r.path_ = path;
  std::string dir = directory_of(path);
  if (name_of(path).empty() || name_of(path) == "." || name_of(path) == ".." || is_directory(path))
    return make_error(ErrorCode::OutputError, "the output path names a directory",
                      path, "-o", "name a file");
  // An existing file that is not a regular one (/dev/null, a FIFO, a
  // terminal) is written in place, as ld.lld does: renaming over it would
  // replace a device node with a regular file.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    r.in_place_fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (r.in_place_fd_ < 0) {
      int e = errno;
      return make_error(ErrorCode::OutputError, std::string("cannot open the output for writing: ") + std::strerror(e),
                        path, "-o", "name a file you can write to");
    }
    return r;
  }
  // The mode asked for, less the umask, as a linker's output.
  base::Publish how;
  how.mode = mode;
  how.umask = true;
  if (auto failed = base::PendingFile::reserve(path, how, r.file_))
    return r.cannot_reserve(dir, failed->errnum);
  sweep(dir, name_of(path), !r.file_.temporary().empty());
  return r;
}

Error OutputReservation::cannot_reserve(const std::string &dir, int err) const {
  return make_error(ErrorCode::OutputError,
                    "cannot write in the output directory '" + dir + "': " + std::strerror(err), path_, "-o",
                    "choose a directory that exists and that you can write to");
}

OutputReservation::OutputReservation(OutputReservation &&o) noexcept
    : path_(std::move(o.path_)), file_(std::move(o.file_)), in_place_fd_(o.in_place_fd_) {
  o.in_place_fd_ = -1;
}

OutputReservation::~OutputReservation() {
  if (in_place_fd_ >= 0)
    ::close(in_place_fd_);
}

int OutputReservation::fd() const { return in_place() ? in_place_fd_ : file_.fd(); }

Error OutputReservation::failed(const std::string &what, int err) const {
  const std::string &file = file_.temporary().empty() ? path_ : file_.temporary();
  return make_error(ErrorCode::OutputError, what + " '" + file + "': " + std::strerror(err), path_, "-o",
                    "check free space and permissions of the output directory");
}

Error OutputReservation::write_error(int err) const { return failed("cannot write", err); }

std::optional<Error> OutputReservation::publish(const std::vector<std::uint8_t> &b) {
  if (!base::write_all(fd(), b.data(), b.size()))
    return write_error(errno);
  return commit();
}

std::optional<Error> OutputReservation::commit() {
  if (in_place()) {
    int rc = ::close(in_place_fd_);
    in_place_fd_ = -1;
    return rc == 0 ? std::nullopt : std::optional<Error>(failed("cannot close", errno));
  }
  if (auto f = file_.commit())
    return failed(f->step, f->errnum);
  return std::nullopt;
}

} // namespace hotlink::detail

namespace hotlink {

std::optional<Error> write_output_file(const std::string &path, const std::vector<std::uint8_t> &bytes,
                                       unsigned mode) {
  auto out = detail::OutputReservation::reserve(path, mode);
  if (!out)
    return out.take_error();
  return out->publish(bytes);
}

} // namespace hotlink
