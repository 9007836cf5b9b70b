#include "hotlink/rebuild.h"

#include "base/files.h"
#include "rebuild/compile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace hotlink::rebuild {

struct Rebuilder::Source {
  std::string path;        // absolute
  CompileCommand command;  // from the database, ready to run
  std::vector<std::uint8_t> object; // the last good object; empty before the first
  std::vector<std::string> headers; // absolute, from the last good compile's depfile
  bool stale = true;                // changed since its last good compile
};

Rebuilder::Rebuilder(loader::HotModule &module, LinkService &service, Options options)
    : module_(module), service_(service), options_(std::move(options)) {
  scratch_ = make_scratch_directory();
  auto commands = read_compile_commands(options_.compile_commands, options_.sources, scratch_);
  if (!commands) {
    finish(commands.take_error());
    return;
  }
  for (CompileCommand &c : commands.value()) {
    auto s = std::make_unique<Source>();
    s->path = c.source;
    s->command = std::move(c);
    sources_.push_back(std::move(s));
  }
  inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (::pipe2(wake_, O_CLOEXEC) != 0)
    wake_[0] = wake_[1] = -1;
  build({});
  watch_files();
  thread_ = std::thread([this] { run(); });
}

Rebuilder::~Rebuilder() {
  stop_ = true;
  if (wake_[1] >= 0) {
    char c = 0;
    (void)!::write(wake_[1], &c, 1);
  }
  if (thread_.joinable())
    thread_.join();
  for (int fd : {inotify_, wake_[0], wake_[1]})
    if (fd >= 0)
      ::close(fd);
  if (!scratch_.empty())
    base::remove_tree(scratch_);
}

std::optional<Error> Rebuilder::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

bool Rebuilder::wait_past(std::uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return done_.wait_for(lock, timeout, [&] { return rebuilds_.load() + failures_.load() > seen; });
}

std::vector<std::string> Rebuilder::watched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watched_;
}

void Rebuilder::finish(std::optional<Error> err) {
  std::lock_guard<std::mutex> lock(mu_);
  last_error_ = std::move(err);
  (last_error_ ? failures_ : rebuilds_).fetch_add(1);
  done_.notify_all();
}

// Compiles what `changed` touches (every source, the first time, and every
// source whose last compile failed), then links and reloads.
void Rebuilder::build(const std::set<std::string> &changed) {
  for (auto &s : sources_)
    s->stale = s->stale || changed.count(s->path) ||
               std::any_of(s->headers.begin(), s->headers.end(), [&](const std::string &h) { return changed.count(h); });
  for (auto &s : sources_) {
    if (!s->stale)
      continue;
    if (auto err = compile(*s)) {
      finish(std::move(err));
      return;
    }
  }
  finish(link_and_reload());
}

std::optional<Error> Rebuilder::compile(Source &s) {
  // What the compile reads is hashed before it runs: an edit made while it
  // runs is a change the next round sees.
  std::map<std::string, std::uint64_t> before;
  for (const std::string &f : s.headers)
    before[f] = hash_file(f);
  before[s.path] = hash_file(s.path);
  compiles_.fetch_add(1);
  auto result = run_compile(s.command);
  if (!result)
    return result.take_error();
  s.object = std::move(result->object);
  s.headers = std::move(result->headers);
  s.stale = false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto &[f, h] : before)
    file_hashes_[f] = h;
  for (const std::string &f : s.headers)
    if (!before.count(f))
      file_hashes_[f] = hash_file(f);
  return std::nullopt;
}

std::optional<Error> Rebuilder::link_and_reload() {
  LinkRequest req = options_.request;
  for (const auto &s : sources_)
    req.inputs.push_back(Input::memory(s->path.substr(s->path.rfind('/') + 1) + ".o", s->object));
  LinkResult r = service_.link(req);
  if (!r.ok())
    return *r.error;
  return module_.reload(r.artifact, options_.name);
}

// Watches the directory of every source and header (a rename onto a name
// is an event of its directory, not of the replaced file).
void Rebuilder::watch_files() {
  std::set<std::string> files;
  for (const auto &s : sources_) {
    files.insert(s->path);
    files.insert(s->headers.begin(), s->headers.end());
  }
  std::set<std::string> dirs;
  for (const std::string &f : files)
    dirs.insert(f.substr(0, f.rfind('/')));
  for (const std::string &d : dirs) {
    if (inotify_ < 0)
      break;
    int wd = ::inotify_add_watch(inotify_, d.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE);
    if (wd >= 0)
      watch_dirs_[wd] = d; // adding a directory twice gives the same descriptor
  }
  std::lock_guard<std::mutex> lock(mu_);
  watched_.assign(files.begin(), files.end());
}

void Rebuilder::run() {
  std::set<std::string> touched; // watched files named by events since the last build
  while (!stop_) {
    struct pollfd fds[2] = {{wake_[0], POLLIN, 0}, {inotify_, POLLIN, 0}};
    int timeout = touched.empty() ? -1 : static_cast<int>(options_.debounce.count());
    int r = ::poll(fds, inotify_ >= 0 ? 2 : 1, timeout);
    if (stop_)
      return;
    if (r > 0 && (fds[1].revents & POLLIN)) {
      std::vector<std::string> watched = this->watched();
      for (const std::string &name : read_events(inotify_, watch_dirs_))
        if (std::binary_search(watched.begin(), watched.end(), name))
          touched.insert(name);
      continue; // quiet for `debounce` first
    }
    if (r != 0 || touched.empty())
      continue;
    std::set<std::string> changed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const std::string &f : touched)
        if (::access(f.c_str(), F_OK) == 0 && hash_file(f) != file_hashes_[f])
          changed.insert(f);
    }
    touched.clear();
    if (changed.empty())
      continue; // the same bytes again
    build(changed);
    watch_files();
  }
}

} // namespace hotlink::rebuild
