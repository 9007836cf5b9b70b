#include "linker/worker.h"

#include "base/files.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/io.hpp>
#include <boost/process/pipe.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace bp = boost::process;

namespace hotlink::detail {

namespace {

// Writes all of `data`; a closed pipe gives false instead of SIGPIPE.
bool write_to_pipe(int fd, const char *data, std::size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  bool ok = base::write_all(fd, data, n);
  if (!ok) {
    // Consume the SIGPIPE this thread raised, so it is not delivered later.
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

bool write_frame(int fd, const std::string &payload) {
  char len[8];
  std::uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<char>(n >> (8 * i));
  return write_to_pipe(fd, len, 8) && write_to_pipe(fd, payload.data(), payload.size());
}

enum class ReadStatus { Ok, Eof, Timeout, Error };

// Reads exactly n bytes before `deadline` (no deadline when it is max()).
ReadStatus read_exact(int fd, char *buf, std::size_t n,
                      std::chrono::steady_clock::time_point deadline) {
  while (n > 0) {
    if (deadline != std::chrono::steady_clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return ReadStatus::Timeout;
      struct pollfd p = {fd, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return ReadStatus::Error;
      if (r == 0)
        return ReadStatus::Timeout;
    }
    ssize_t got = ::read(fd, buf, n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return ReadStatus::Error;
    if (got == 0)
      return ReadStatus::Eof;
    buf += got;
    n -= static_cast<std::size_t>(got);
  }
  return ReadStatus::Ok;
}

constexpr std::uint64_t kMaxFrame = 4ull << 30; // 4 GiB
constexpr std::size_t kKeptReplyBytes = 4u << 20; // a reply buffer kept for the next link, at most

ReadStatus read_frame(int fd, std::string &payload,
                      std::chrono::steady_clock::time_point deadline) {
  char len[8];
  ReadStatus s = read_exact(fd, len, 8, deadline);
  if (s != ReadStatus::Ok)
    return s;
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= std::uint64_t(static_cast<unsigned char>(len[i])) << (8 * i);
  if (n > kMaxFrame)
    return ReadStatus::Error;
  payload.resize(n);
  return read_exact(fd, payload.data(), n, deadline);
}

void set_cloexec(int fd) { ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC); }

} // namespace

struct Worker::Process {
  bp::pipe to_child, from_child;
  bp::child child;
  // The worker makes its scratch directories in here (its HOTLINK_TMPDIR).
  // A worker that is killed mid-link (a timeout, a crash) cannot remove
  // what it was writing, often the inputs on tmpfs; this process removes
  // the whole directory once the worker is gone.
  std::string scratch;
};

Expected<std::unique_ptr<Worker>> Worker::start(const std::string &exe) {
  std::unique_ptr<Worker> w(new Worker);
  w->proc_ = std::make_unique<Process>();
  Process &p = *w->proc_;
  for (int fd : {p.to_child.native_source(), p.to_child.native_sink(),
                 p.from_child.native_source(), p.from_child.native_sink()})
    set_cloexec(fd);
#ifdef F_SETPIPE_SZ
  // A job or a reply of a few hundred KB then crosses in one write instead
  // of 64 KiB at a time, each a wake-up of the other process (measured:
  // ~1.2 ms of a 2.8 ms worker link of the ~150 KB object). May be refused
  // (pipe-max-size): then 64 KiB.
  for (int fd : {p.to_child.native_sink(), p.from_child.native_sink()})
    (void)::fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#endif
  std::string why;
  p.scratch = make_scratch(why, "hotlink-worker");
  if (p.scratch.empty())
    return make_error(ErrorCode::WorkerFailed, "cannot start the link worker: " + why, exe, {},
                      "make /dev/shm, $TMPDIR or /tmp writable, or set HOTLINK_TMPDIR");
  std::error_code ec;
  bp::environment env = boost::this_process::environment();
  env["HOTLINK_TMPDIR"] = p.scratch;
  p.child = bp::child(exe, "--worker", bp::std_in < p.to_child,
                      bp::std_out > p.from_child, bp::std_err > bp::null, env, ec);
  if (ec || !p.child.valid()) {
    base::remove_tree(p.scratch);
    return make_error(ErrorCode::WorkerFailed,
                      "cannot start the link worker: " + ec.message(), exe, {},
                      "build hotlink-ld, or point HOTLINK_WORKER at it");
  }
  w->alive_ = true;
  return w;
}

Worker::~Worker() {
  if (!proc_)
    return;
  std::error_code ec;
  // Closing its stdin asks the worker to exit; kill it if it is stuck.
  proc_->to_child.close();
  if (alive_ && proc_->child.running(ec)) {
    if (!proc_->child.wait_for(std::chrono::milliseconds(200), ec))
      proc_->child.terminate(ec);
  }
  if (proc_->child.valid() && proc_->child.joinable())
    proc_->child.wait(ec);
  base::remove_tree(proc_->scratch); // the worker is gone: nothing writes there now
}

Expected<JobOutput> Worker::run(const Job &job,
                                std::chrono::milliseconds timeout) {
  Process &p = *proc_;
  auto die = [&](ErrorCode code, std::string why) -> Error {
    alive_ = false;
    std::error_code ec;
    // A worker that closed its pipe is exiting: let it finish, so that its
    // real exit status is known. One that hangs is killed.
    bool exited = code != ErrorCode::WorkerTimeout &&
                  p.child.wait_for(std::chrono::milliseconds(500), ec);
    if (!exited) {
      p.child.terminate(ec);
      p.child.wait(ec);
    } else {
      int status = p.child.native_exit_code();
      if (WIFSIGNALED(status))
        why += " (worker killed by signal " + std::to_string(WTERMSIG(status)) + ")";
      else if (WIFEXITED(status))
        why += " (worker exited with code " + std::to_string(WEXITSTATUS(status)) + ")";
    }
    return make_error(code, std::move(why), {}, {},
                      code == ErrorCode::WorkerTimeout
                          ? "raise the request's timeout, or check the input"
                          : "retry; if it repeats, run the link with "
                            "--isolated and report the input");
  };
  if (!alive_)
    return die(ErrorCode::WorkerFailed, "the worker is not running");
  if (!write_frame(p.to_child.native_sink(), encode(job)))
    return die(ErrorCode::WorkerFailed, "the worker closed its input");
  auto deadline = std::chrono::steady_clock::now() + timeout;
  switch (read_frame(p.from_child.native_source(), reply_, deadline)) {
  case ReadStatus::Ok:
    break;
  case ReadStatus::Timeout:
    return die(ErrorCode::WorkerTimeout,
               "the worker did not finish within " +
                   std::to_string(timeout.count()) + " ms");
  case ReadStatus::Eof:
  case ReadStatus::Error:
    return die(ErrorCode::WorkerFailed, "the worker died during the link");
  }
  JobOutput out;
  bool garbled = !decode(reply_, out);
  if (reply_.capacity() > kKeptReplyBytes)
    std::string().swap(reply_); // a large image's frame is not held between links
  if (garbled)
    return die(ErrorCode::WorkerFailed, "the worker sent a garbled reply");
  if (!out.can_run_again)
    alive_ = false; // it exits after this reply
  return out;
}

std::string find_worker(const std::string &configured) {
  if (!configured.empty())
    return configured;
  if (const char *env = std::getenv("HOTLINK_WORKER"); env && *env)
    return env;
  std::vector<std::string> dirs;
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  if (!self.empty())
    dirs.push_back(llvm::sys::path::parent_path(self).str());
  dirs.push_back(HOTLINK_BUILD_BINDIR);
  dirs.push_back(HOTLINK_INSTALL_BINDIR);
  for (const std::string &d : dirs) {
    std::string p = d + "/hotlink-ld";
    if (llvm::sys::fs::can_execute(p))
      return p;
  }
  return dirs.front() + "/hotlink-ld";
}

int worker_main() {
  // Descriptors the host leaked without O_CLOEXEC must not stay open here
  // (they would keep the host's pipes and files alive). Boost 1.81's
  // limit_handles would do this in the child but also closes the redirected
  // stdout, so the worker does it itself.
  ::close_range(3, ~0u, 0);
  // The protocol owns the original stdout; anything else that writes to
  // fd 1 (it should not) goes to stderr instead of corrupting a frame.
  int proto_out = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  const auto forever = std::chrono::steady_clock::time_point::max();
  std::string frame; // kept: the next job's frame reuses it
  for (;;) {
    if (read_frame(STDIN_FILENO, frame, forever) != ReadStatus::Ok)
      return 0; // the service closed the pipe
    Job job;
    JobOutput out;
    if (is_job_of_another_version(frame))
      out.setup_error = "the worker (hotlink-ld) is from another version of hotlink than the "
                        "library that sent the job; install the hotlink-ld built with it";
    else if (!decode(frame, job))
      out.setup_error = "the worker received a garbled job";
    else
      out = run_in_process(job);
    if (!write_frame(proto_out, encode(out)))
      return 1;
    if (!out.can_run_again)
      return 0; // lld's state is gone: a fresh process takes the next job
  }
}

} // namespace hotlink::detail
