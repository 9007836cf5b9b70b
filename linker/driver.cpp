// The in-process lld driver: the one place that calls lld::lldMain.
//
// lld keeps one process-wide context, so calls are serialized by one lock.
// After a call that reports canRunAgain == false, lld's state may be
// corrupt: the driver refuses to call it again in this process.
#include "exports/recovery.h"
#include "exports/targets.h"
#include "base/fault_signals.h"
#include "linker/job.h"
#include "linker/platforms/platform.h"

#include "base/clock.h"
#include "base/files.h"
#include "linker/lld_arenas.h"
#include "linker/llvm_options.h"
#include "linker/image_sink.h"
#include "linker/thread_files.h"

#include "lld/Common/Driver.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <pthread.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <mutex>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <utility>
#include <unistd.h>

LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(mingw)
LLD_HAS_DRIVER(macho)
LLD_HAS_DRIVER(wasm)

namespace hotlink::detail {

namespace {

std::mutex g_lld_mutex;            // lld's process-wide context
std::atomic<bool> g_usable{true};  // false once lld said it cannot run again

// hotlink's own thread for lld, used when lld cannot run on the calling
// thread: an image that might not fit in the output pipe (someone must
// drain it while lld writes), a scratch-directory link (its FIFO), a
// caller with little stack left, or ServiceConfig::lld_on_own_thread.
// lld's thread-local arenas are released after each link
// (lld_arenas.h), so the thread lives as long as the process.
// Used only with g_lld_mutex held.
class LldThread {
public:
  // Starts `task` on the lld thread; returns at once.
  void start(std::function<void()> task) {
    if (!thread_.joinable())
      thread_ = std::thread([this] { loop(); });
    task_ = std::move(task);
    state_.store(kReady, std::memory_order_release);
    wake();
  }
  // Waits for the task given to start(): spins for a while (the result is
  // usually a link's time away), then sleeps.
  void wait() {
    if (!spin_until(kDone, spin_wait()) ) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return state_.load(std::memory_order_acquire) == kDone; });
    }
    state_.store(kIdle, std::memory_order_relaxed);
  }
  // Whether the task given to start() is done (then call finish()).
  bool done() const { return state_.load(std::memory_order_acquire) == kDone; }
  void finish() { state_.store(kIdle, std::memory_order_relaxed); }
  // After fork() the child has no lld thread: forget it (never join it).
  void forget_after_fork() {
    new (&mu_) std::mutex();
    new (&cv_) std::condition_variable();
    // The handle names a thread of the parent: it is overwritten, never
    // detached (pthread_detach of a thread the child does not have is
    // undefined; clang's ThreadSanitizer aborts on it).
    new (&thread_) std::thread();
    task_ = nullptr;
    state_.store(kIdle);
  }

  // How long each side spins before it sleeps. A JIT links in bursts: with
  // both spinning, a link in a burst is handed over and back without a
  // thread going to sleep (each wake-up costs ~30-40 us on this kind of
  // VM). Bounded, so that an idle process burns no CPU.
  // HOTLINK_LLD_SPIN_US=0 turns the spinning off (e.g. to count a link's
  // instructions, or for a host that must not spin).
  static std::chrono::microseconds spin_idle() {
    static const long us = [] {
      const char *e = std::getenv("HOTLINK_LLD_SPIN_US");
      return e ? std::atol(e) : 200L;
    }();
    return std::chrono::microseconds(us);
  }
  static std::chrono::microseconds spin_wait() {
    return spin_idle().count() ? std::chrono::microseconds(5000) : std::chrono::microseconds(0);
  }

private:
  enum : int { kIdle, kReady, kDone };

  bool spin_until(int want, std::chrono::microseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    for (unsigned i = 0;; ++i) {
      if (state_.load(std::memory_order_acquire) == want)
        return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
      if ((i & 63) == 0 && std::chrono::steady_clock::now() > until)
        return false;
    }
  }
  void wake() {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }
  void loop() {
    for (;;) {
      if (!spin_until(kReady, spin_idle())) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return state_.load(std::memory_order_acquire) == kReady; });
      }
      auto task = std::move(task_);
      task_ = nullptr;
      task();
      state_.store(kDone, std::memory_order_release);
      wake();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> state_{kIdle};
  std::function<void()> task_; // handed over by state_'s release/acquire
  std::thread thread_;
};

// Never destroyed: at exit the thread may be parked on its condition
// variable, and exit() ends it.
LldThread &lld_thread() {
  static LldThread *t = [] {
    auto *p = new LldThread;
    // fork() while a link runs must neither copy a held lock into the child
    // nor leave the child waiting on a thread it does not have.
    pthread_atfork([] { g_lld_mutex.lock(); }, [] { g_lld_mutex.unlock(); },
                   [] {
                     new (&g_lld_mutex) std::mutex();
                     lld_thread().forget_after_fork();
                   });
    return p;
  }();
  return *t;
}

// Signal dispositions are process state that lld can change: LLVM
// installs its crash and interrupt handlers once per process, the first
// time something registers a file to remove on a signal (lld-link does,
// for an import library or PDB), and crash recovery installs its own while
// enabled (RecoveryScope puts them back itself). These are the signals
// LLVM's Signals.inc and CrashRecoveryContext.cpp handle; after a call,
// each one that changed is put back as the host had it. Checking all 16
// costs 32 system calls a link, so a link first compares three sentinels
// that LLVM's registration changes together and crash recovery never
// touches: only when one moved is every signal compared and restored from
// the snapshot, taken again whenever the host changed a sentinel itself
// between links. The guard is taken before this link's RecoveryScope
// opens and checked after it closed.
const int kLLVMSignals[] = {SIGHUP, SIGINT,  SIGTERM, SIGUSR2, SIGILL, SIGTRAP,
                            SIGABRT, SIGFPE, SIGBUS,  SIGSEGV, SIGQUIT, SIGSYS,
                            SIGXCPU, SIGXFSZ, SIGPIPE, SIGUSR1};
const int kSentinels[] = {SIGHUP, SIGINT, SIGTERM};

// The bytes of a mask the kernel fills: 64 signals on Linux. glibc's
// sigset_t has room for 1024 and copies all of it from a buffer the kernel
// filled only that far, so the bytes beyond differ from call to call (which
// made every link compare and restore all 16 signals: 54 system calls).
constexpr std::size_t kKernelMaskBytes = sizeof(sigset_t) < 8 ? sizeof(sigset_t) : 8;

bool same_action(const struct sigaction &a, const struct sigaction &b) {
  return a.sa_handler == b.sa_handler && a.sa_flags == b.sa_flags &&
         std::memcmp(&a.sa_mask, &b.sa_mask, kKernelMaskBytes) == 0;
}

// Used only with g_lld_mutex held.
class SignalGuard {
public:
  void before() {
    bool fresh = !taken_;
    for (std::size_t i = 0; i < std::size(kSentinels) && !fresh; ++i) {
      struct sigaction now;
      sigaction(kSentinels[i], nullptr, &now);
      fresh = !same_action(now, sentinel(i));
    }
    if (fresh) { // first link, or the host changed its handlers since
      for (std::size_t i = 0; i < std::size(kLLVMSignals); ++i)
        sigaction(kLLVMSignals[i], nullptr, &snapshot_[i]);
      taken_ = true;
    }
  }
  void after() const {
    bool moved = false;
    for (std::size_t i = 0; i < std::size(kSentinels) && !moved; ++i) {
      struct sigaction now;
      sigaction(kSentinels[i], nullptr, &now);
      moved = !same_action(now, sentinel(i));
    }
    if (!moved)
      return;
    for (std::size_t i = 0; i < std::size(kLLVMSignals); ++i) {
      struct sigaction now;
      sigaction(kLLVMSignals[i], nullptr, &now);
      if (!same_action(now, snapshot_[i]))
        sigaction(kLLVMSignals[i], &snapshot_[i], nullptr);
    }
  }
  void forget() { taken_ = false; }

private:
  const struct sigaction &sentinel(std::size_t i) const {
    for (std::size_t j = 0; j < std::size(kLLVMSignals); ++j)
      if (kLLVMSignals[j] == kSentinels[i])
        return snapshot_[j];
    return snapshot_[0];
  }
  struct sigaction snapshot_[std::size(kLLVMSignals)] = {};
  bool taken_ = false;
};

SignalGuard &signal_guard() {
  static SignalGuard g;
  return g;
}


void replace_all(std::string &s, const std::string &from, const std::string &to) {
  if (from.empty())
    return;
  for (std::size_t p = s.find(from); p != std::string::npos;
       p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

// lld's output arrives through a FIFO in the scratch directory. For an
// output path that is not a regular file, LLVM's FileOutputBuffer builds the
// image in memory and writes it out on commit; for a regular file it
// creates a temporary file that it registers with RemoveFileOnSignal, a
// process-wide list that never shrinks (each link would leave an entry that
// every later link walks). The FIFO also hands hotlink the bytes without a
// file to read back.
//
// lld writes the whole image with one write(); the pipe hands it over a
// pipe-buffer at a time, each a wake-up of this thread. The buffer is
// raised to 1 MiB (the unprivileged limit) so that a 20 MB image takes 20
// hand-overs rather than 320, and the bytes are read straight into the
// result, sized from `hint` (the inputs' size).
std::vector<std::uint8_t> read_fifo(const std::string &path, std::uint64_t hint) {
  std::vector<std::uint8_t> bytes;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return bytes;
#ifdef F_SETPIPE_SZ
  if (hint > (64u << 10))
    (void)::fcntl(fd, F_SETPIPE_SZ, 1 << 20); // may be refused: then 64 KiB
#endif
  // Room for the expected image plus a margin; doubled when it fills up.
  bytes.resize(static_cast<std::size_t>(std::min<std::uint64_t>(hint, 1ull << 32)) + (64u << 10));
  std::size_t used = 0;
  for (;;) {
    if (used == bytes.size())
      bytes.resize(bytes.size() * 2);
    ssize_t n = ::read(fd, bytes.data() + used, bytes.size() - used);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  bytes.resize(used);
  if (bytes.capacity() - used > used / 2 + (64u << 10))
    bytes.shrink_to_fit(); // the inputs overstated it (e.g. archives): do not hold the rest
  return bytes;
}

} // namespace

std::string make_scratch(std::string &error, const char *prefix) {
  const char *env = std::getenv("HOTLINK_TMPDIR");
  std::vector<std::string> bases;
  if (env && *env)
    bases.push_back(env);
  bases.push_back("/dev/shm");
  if (const char *t = std::getenv("TMPDIR"))
    bases.push_back(t);
  bases.push_back("/tmp");
  for (const std::string &b : bases) {
    std::string templ = b + "/" + prefix + "-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()))
      return buf.data();
    error = "cannot create a scratch directory in " + b + ": " +
            std::strerror(errno);
  }
  return {};
}

bool in_process_usable() { return g_usable.load(); }

void while_lld_is_idle(const std::function<void()> &fn) {
  std::lock_guard<std::mutex> lock(g_lld_mutex);
  fn();
}

namespace {

// Where a job's files live for lld, and how lld's output comes back.
//
// In-memory links keep everything in memory: each file is a memfd lld opens as
// /proc/self/fd/N, and the image goes to a pipe lld opens the same way (both
// kept by the thread for its next link: ThreadFiles). For
// an output that is not a regular file, LLVM's FileOutputBuffer builds the
// image in memory and writes it with one write() on commit (no temporary
// file, so no RemoveFileOnSignal entry, no rename, no signal handlers).
// The pipe is raised to 1 MiB, so a small image waits in it until lld has
// returned; the caller drains it while it waits, so a larger one never
// blocks lld. Creating, writing and removing a scratch directory cost more
// than the rest of a small link's overhead. The platform says whether its
// link may run so (Job::in_memory: ld.lld embeds no input or output path
// in an ELF image; lld-link derives a DLL's name and its PDB paths from
// them); the others keep the scratch directory and take the image through
// a FIFO in it.
class Materialized {
public:
  explicit Materialized(const Job &job) : job_(job), in_memory_(job.in_memory) {}
  ~Materialized() {
    for (int fd : fds_)
      ::close(fd);
    if (kept_)
      kept_->release_large();
    if (!dir_.empty())
      base::remove_tree(dir_);
  }

  // Creates the files; false (error() says why) when they cannot be made.
  bool create() { return in_memory_ ? create_memfds() : create_scratch(); }
  const std::string &error() const { return error_; }

  std::vector<std::string> argv() const {
    std::vector<std::string> args;
    args.reserve(job_.args.size() + 1);
    args.push_back(job_.flavor);
    for (const Arg &a : job_.args)
      args.push_back(a.before + (a.in_workdir ? where(a.after) : a.after));
    return args;
  }
  bool reads_through_fifo() const { return !in_memory_; }
  const std::string &output_path() const { return output_path_; }

  int pipe_fd() const { return pipe_read_; }
  int done_fd() const { return done_fd_; }
  // The eventfd the lld thread signals when done: made only for a link
  // that runs there (without one, the waiter polls the pipe every 1 ms).
  void make_done_fd() {
    if (done_fd_ < 0 && (done_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) >= 0)
      fds_.push_back(done_fd_);
  }
  void signal_done() const {
    if (done_fd_ < 0)
      return;
    std::uint64_t one = 1;
    (void)!::write(done_fd_, &one, sizeof one);
  }
  std::uint64_t pipe_capacity() const { return pipe_capacity_; }

  // A further file lld wrote (COFF's import library or PDB).
  std::vector<std::uint8_t> read_file(const std::string &name) const {
    std::ifstream f(dir_ + "/" + name, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), {});
  }

  // lld names the paths it was given; show them as the job's file names so
  // that diagnostics map back to the caller's input names.
  void rename_in(std::string &text) const {
    if (!dir_.empty())
      replace_all(text, dir_ + "/", "");
    for (auto it = shown_.rbegin(); it != shown_.rend(); ++it) // /proc/self/fd/12 before /1
      replace_all(text, it->first, it->second);
  }

private:
  std::string where(const std::string &name) const {
    if (!in_memory_)
      return dir_ + "/" + name;
    if (name == job_.output_name)
      return output_path_;
    for (const auto &[path, shown] : shown_)
      if (shown == name)
        return path;
    return name;
  }

  bool create_memfds() {
    kept_ = &ThreadFiles::mine();
    for (std::size_t i = 0; i < job_.files.size(); ++i) {
      const JobFile &f = job_.files[i];
      int fd = kept_->hold(i, f.name, f.bytes());
      if (fd < 0)
        return fail("cannot hold " + f.name + " in memory: " + std::strerror(errno));
      shown_.emplace_back("/proc/self/fd/" + std::to_string(fd), f.name);
    }
    auto [read_end, write_end, capacity] = kept_->pipe();
    if (read_end < 0)
      return fail(std::string("cannot create a pipe for the output: ") + std::strerror(errno));
    pipe_read_ = read_end;
    pipe_capacity_ = capacity;
    output_path_ = "/proc/self/fd/" + std::to_string(write_end);
    shown_.emplace_back(output_path_, job_.output_name);
    std::sort(shown_.begin(), shown_.end(),
              [](const auto &a, const auto &b) { return a.first.size() < b.first.size(); });
    return true;
  }

  bool create_scratch() {
    dir_ = make_scratch(error_);
    if (dir_.empty())
      return false;
    for (const JobFile &f : job_.files) {
      std::string path = dir_ + "/" + f.name;
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      bool ok = fd >= 0 && base::write_all(fd, f.bytes().data(), f.bytes().size());
      if (fd >= 0)
        ok = ::close(fd) == 0 && ok;
      if (!ok)
        return fail("cannot write " + path + ": " + std::strerror(errno));
    }
    output_path_ = dir_ + "/" + job_.output_name;
    if (::mkfifo(output_path_.c_str(), 0600) != 0)
      return fail("cannot create " + output_path_ + ": " + std::strerror(errno));
    return true;
  }

  bool fail(std::string why) {
    error_ = std::move(why);
    return false;
  }

  const Job &job_;
  bool in_memory_;
  std::string dir_, error_, output_path_;
  int pipe_read_ = -1, done_fd_ = -1;
  std::uint64_t pipe_capacity_ = 0;
  std::vector<int> fds_;
  ThreadFiles *kept_ = nullptr; // the creating thread's files (in-memory links)
  std::vector<std::pair<std::string, std::string>> shown_; // path lld sees -> file name
};

// Waits for the lld thread's task, draining the pipe as it goes so that an
// image larger than the pipe never blocks lld: spins first (a link is
// usually a few hundred microseconds away), then sleeps in poll() on the
// pipe and on the task's "done" eventfd.
void wait_draining(LldThread &runner, const Materialized &files, ImageSink &into) {
  auto spin_until = std::chrono::steady_clock::now() + LldThread::spin_wait();
  bool spinning = LldThread::spin_wait().count() > 0;
  for (unsigned i = 1; !runner.done(); ++i) {
    if (spinning) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if ((i & 255) != 0)
        continue;
      into.take(files.pipe_fd());
      spinning = std::chrono::steady_clock::now() < spin_until;
      continue;
    }
    struct pollfd pfd[2] = {{files.pipe_fd(), POLLIN, 0}, {files.done_fd(), POLLIN, 0}};
    ::poll(pfd, 2, files.done_fd() >= 0 ? -1 : 1);
    into.take(files.pipe_fd());
  }
  runner.finish();
}

// The stack lld may need on the calling thread (a linker's recursion is
// shallow; LLVM's own threads get 8 MiB, hotlink's lld thread has the
// default 8 MiB).
constexpr std::size_t kLldStack = 1u << 20;

// Bytes of stack left below this frame on the calling thread; "plenty"
// when it cannot tell. glibc knows every thread's stack (the main thread's
// by reading /proc/self/maps): asked once per thread.
std::size_t stack_left() {
  thread_local std::uintptr_t low = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
      return std::uintptr_t(0);
    void *base = nullptr;
    std::size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
    return rc == 0 ? reinterpret_cast<std::uintptr_t>(base) : std::uintptr_t(0);
  }();
  char here;
  auto sp = reinterpret_cast<std::uintptr_t>(&here);
  return low == 0 || sp < low ? SIZE_MAX : sp - low;
}

lld::Result call_lld(const std::vector<const char *> &argv, llvm::raw_ostream &out,
                     llvm::raw_ostream &err) {
  return lld::lldMain(argv, out, err,
                      {{lld::Gnu, &lld::elf::link},
                       {lld::WinLink, &lld::coff::link},
                       {lld::MinGW, &lld::mingw::link},
                       {lld::Darwin, &lld::macho::link},
                       {lld::Wasm, &lld::wasm::link}});
}

// Runs lld on the lld thread with the process state it touches guarded:
// crash recovery on (lld's fatal() would otherwise exit the host), signal
// dispositions checked, the host's LLVM options out of lld's reach.
void run_lld(Materialized &files, const std::vector<const char *> &argv, const Job &job,
             bool on_own_thread, int image_fd, JobOutput &out) {
  llvm::raw_string_ostream out_os(out.out_text), err_os(out.err_text);
  std::lock_guard<std::mutex> lock(g_lld_mutex);
  if (!g_usable.load()) {
    out.can_run_again = false;
    out.not_run = true;
    out.setup_error = "in-process lld is unusable after an earlier fatal error";
    return;
  }
  exports::initialize_llvm_targets(); // lld's own registration then changes nothing
  SignalGuard &signals = signal_guard();
  signals.before();
  lld::Result r{1, true};
  auto t0 = std::chrono::steady_clock::now();
  {
    // lld's fatal() ends in llvm::sys::Process::Exit, which returns control
    // to lldMain's CrashRecoveryContext only when crash recovery is
    // enabled; otherwise it exits the host. The scope enables it for this
    // call (and for any reader on another thread), unless the host did.
    exports::RecoveryScope recovery;
    SavedLLVMOptions options;
    options.save();
    // lld on whichever thread runs it, then that thread's arenas released.
    auto link = [&] {
      base::RecoveringThread recovering; // lldMain's crash recovery runs on this thread
      r = call_lld(argv, out_os, err_os);
      if (r.canRunAgain)
        release_lld_thread_arenas();
    };
    LldThread &runner = lld_thread();
    if (files.reads_through_fifo()) {
      const std::string &fifo = files.output_path();
      runner.start([&] {
        // Holding a write end for the whole call lets the reader's open()
        // return at once and makes EOF mean "lld is done", whether or not
        // lld wrote anything.
        int hold = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
        link();
        if (hold < 0) // should not happen; still release a waiting reader
          hold = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (hold >= 0)
          ::close(hold);
      });
      out.artifact = read_fifo(fifo, job.input_bytes);
      runner.wait();
    } else {
      auto task = [&] {
        auto l0 = std::chrono::steady_clock::now();
        link();
        out.lld_ms = base::ms_since(l0);
      };
      ImageSink sink(out.artifact, image_fd);
      if (image_fd < 0)
        out.artifact.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(job.input_bytes, 1ull << 32)) + (64u << 10));
      // On the calling thread nobody drains the pipe while lld writes: only
      // for an image that surely fits in it. The bound: twice the inputs
      // with their alignment padding (symbol tables, relocations and hash
      // sections grow with the inputs), plus headers and segments aligned
      // to the largest page size (64 KiB on AArch64, four segments).
      bool fits = job.input_bytes * 2 + (384u << 10) < files.pipe_capacity();
      if (!on_own_thread && fits && stack_left() >= kLldStack) {
        task();
      } else {
        files.make_done_fd();
        runner.start([&] {
          task();
          files.signal_done();
        });
        wait_draining(runner, files, sink);
      }
      sink.take(files.pipe_fd());
      out.image_file_bytes = sink.written();
      out.image_file_errno = sink.error();
      if (out.artifact.capacity() - out.artifact.size() > out.artifact.size() / 2 + (64u << 10))
        out.artifact.shrink_to_fit();
    }
    bool lld_set_options = std::any_of(argv.begin(), argv.end(), [](const char *a) {
      return std::strncmp(a, "-mllvm", 6) == 0 || std::strncmp(a, "-plugin-opt", 11) == 0 ||
             std::strncmp(a, "--plugin-opt", 12) == 0;
    });
    options.restore(lld_set_options);
  }
  out.link_ms = base::ms_since(t0);
  signals.after();
  out.ret_code = r.retCode;
  out.can_run_again = r.canRunAgain;
  if (!r.canRunAgain)
    g_usable.store(false);
}

} // namespace

JobOutput run_in_process(const Job &job, bool on_own_thread, int image_fd) {
  // Another engine than lld (nvJitLink): its own calls, no lld lock, no
  // scratch directory; the image comes back as bytes.
  if (const Engine *engine = engine_for(job.flavor))
    return engine->run(job);
  JobOutput out;
  Materialized files(job);
  if (!files.create()) {
    out.setup_error = files.error();
    return out;
  }
  std::vector<std::string> args = files.argv();
  std::vector<const char *> argv;
  argv.reserve(args.size());
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  run_lld(files, argv, job, on_own_thread, image_fd, out);
  files.rename_in(out.out_text);
  files.rename_in(out.err_text);
  // lld-link writes the import library and the PDB as regular files
  // (through temporary ones: one small RemoveFileOnSignal entry per link
  // that asks for them); they go back with the image.
  for (auto [name, bytes, what] : {std::tuple{&job.implib_name, &out.implib, "import library"},
                                   std::tuple{&job.pdb_name, &out.pdb, "PDB"}}) {
    if (out.ret_code != 0 || name->empty())
      continue;
    *bytes = files.read_file(*name);
    if (bytes->empty())
      out.setup_error = std::string("lld wrote no ") + what + " '" + *name + "'";
  }
  // A successful link always writes a non-empty image.
  if (out.ret_code == 0 && out.artifact.empty() && out.image_file_bytes == 0 && out.image_file_errno == 0)
    out.setup_error = "lld reported success but wrote no output '" + job.output_name + "'";
  return out;
}

} // namespace hotlink::detail
