// The in-process lld driver: the one place that calls lld::lldMain.
//
// lld keeps one process-wide context, so calls are serialized by one lock.
// After a call that reports canRunAgain == false, lld's state may be
// corrupt: the driver refuses to call it again in this process.
#include "exports/recovery.h"
#include "linker/job.h"
#include "linker/llvm_options.h"

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
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <unistd.h>

LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(macho)
LLD_HAS_DRIVER(wasm)

namespace hotlink::detail {

namespace {

std::mutex g_lld_mutex;            // lld's process-wide context
std::atomic<bool> g_usable{true};  // false once lld said it cannot run again

// The thread lld runs on. lld's makeThreadLocal allocators are thread_local
// and survive CommonLinkerContext::destroy(): every link leaves its
// thread-local objects behind until the thread ends (measured: ~1.7 KiB for
// a small kernel linked bare, ~7.3 KiB with its runtime environment's
// startup objects and stubs, ~3.6 MB for the 20 MB benchmark object, about a fifth of
// the input; lld's per-symbol and per-section objects bound it at a few
// times the input's size). A thread per link frees them but pays for new
// allocator arenas and page faults each time (measured: lld's 0.42 ms
// became 1.09 ms). So lld gets a thread of its own that retires after
// kRecycleAfter links or after links of kRecycleBytes of input in all,
// whichever comes first: the thread ends right after that link, freeing what
// it kept while the caller goes on, and the next link starts a new one.
// Used only with g_lld_mutex held.
class LldThread {
public:
  static constexpr unsigned kRecycleAfter = 128;
  static constexpr std::uint64_t kRecycleBytes = 16u << 20;

  // Starts `task`, a link of `input_bytes`, on the lld thread; returns at once.
  void start(std::function<void()> task, std::uint64_t input_bytes) {
    if (!thread_.joinable() || retiring_)
      replace();
    ++runs_;
    bytes_ += input_bytes;
    bool last = runs_ >= kRecycleAfter || bytes_ >= kRecycleBytes;
    {
      std::lock_guard<std::mutex> lock(mu_);
      task_ = std::move(task);
      done_ = false;
      retire_ = last;
    }
    cv_.notify_all();
    retiring_ = last;
  }
  // Waits for the task given to start().
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }
  // After fork() the child has no lld thread: forget it (never join it).
  void forget_after_fork() {
    new (&mu_) std::mutex();
    new (&cv_) std::condition_variable();
    thread_.detach(); // the handle names a thread of the parent
    runs_ = 0;
    bytes_ = 0;
    task_ = nullptr;
    stop_ = retire_ = retiring_ = false;
    done_ = true;
  }

private:
  void replace() {
    if (thread_.joinable()) {
      if (!retiring_) {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join(); // its thread_local allocators are freed by now
      stop_ = retire_ = retiring_ = false;
    }
    runs_ = 0;
    bytes_ = 0;
    thread_ = std::thread([this] { loop(); });
  }
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || task_; });
      if (stop_)
        return;
      auto task = std::move(task_);
      task_ = nullptr;
      lock.unlock();
      task();
      lock.lock();
      done_ = true;
      cv_.notify_all();
      if (retire_)
        return; // ending the thread frees what lld kept in its thread-locals
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool stop_ = false, done_ = true;
  bool retire_ = false;   // under mu_: the thread ends after the current task
  bool retiring_ = false; // the caller's copy: the next start() replaces it
  unsigned runs_ = 0;
  std::uint64_t bytes_ = 0;
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

// Signal dispositions are process state that lld changes: LLVM installs its
// crash and interrupt handlers the first time lld creates an output file,
// and crash recovery installs its own for each call. These are the signals
// LLVM's Signals.inc and CrashRecoveryContext.cpp handle; after every call
// each one that changed is put back as the host had it.
const int kLLVMSignals[] = {SIGHUP, SIGINT,  SIGTERM, SIGUSR2, SIGILL, SIGTRAP,
                            SIGABRT, SIGFPE, SIGBUS,  SIGSEGV, SIGQUIT, SIGSYS,
                            SIGXCPU, SIGXFSZ, SIGPIPE, SIGUSR1};

bool same_action(const struct sigaction &a, const struct sigaction &b) {
  if (a.sa_handler != b.sa_handler || a.sa_flags != b.sa_flags)
    return false;
  for (int s = 1; s < NSIG; ++s)
    if (sigismember(&a.sa_mask, s) != sigismember(&b.sa_mask, s))
      return false;
  return true;
}

struct SavedSignals {
  struct sigaction actions[std::size(kLLVMSignals)];
  void save() {
    for (std::size_t i = 0; i < std::size(kLLVMSignals); ++i)
      sigaction(kLLVMSignals[i], nullptr, &actions[i]);
  }
  void restore() const {
    for (std::size_t i = 0; i < std::size(kLLVMSignals); ++i) {
      struct sigaction now;
      sigaction(kLLVMSignals[i], nullptr, &now);
      if (!same_action(now, actions[i]))
        sigaction(kLLVMSignals[i], &actions[i], nullptr);
    }
  }
};

bool write_file(const std::string &path, const std::vector<std::uint8_t> &b) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return false;
  std::size_t off = 0;
  while (off < b.size()) {
    ssize_t n = ::write(fd, b.data() + off, b.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ::close(fd);
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return ::close(fd) == 0;
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

void remove_tree(const std::string &dir) {
  if (DIR *d = ::opendir(dir.c_str())) {
    while (struct dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..")
        continue;
      std::string path = dir + "/" + name;
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        remove_tree(path);
      else
        ::unlink(path.c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

bool in_process_usable() { return g_usable.load(); }

JobOutput run_in_process(const Job &job) {
  JobOutput out;
  std::string err;
  std::string dir = make_scratch(err);
  if (dir.empty()) {
    out.setup_error = err;
    return out;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() { remove_tree(dir); }
  } cleanup{dir};

  for (const JobFile &f : job.files) {
    std::string path = dir + "/" + f.name;
    if (!write_file(path, f.bytes())) {
      out.setup_error = "cannot write " + path + ": " + std::strerror(errno);
      return out;
    }
  }
  const std::string output = dir + "/" + job.output_name;
  if (::mkfifo(output.c_str(), 0600) != 0) {
    out.setup_error = "cannot create " + output + ": " + std::strerror(errno);
    return out;
  }
  std::vector<std::string> args;
  args.reserve(job.args.size() + 1);
  args.push_back(job.flavor);
  for (const Arg &a : job.args)
    args.push_back(a.before + (a.in_workdir ? dir + "/" : std::string()) +
                   a.after);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());

  llvm::raw_string_ostream out_os(out.out_text), err_os(out.err_text);
  {
    std::lock_guard<std::mutex> lock(g_lld_mutex);
    if (!g_usable.load()) {
      out.can_run_again = false;
      out.not_run = true;
      out.setup_error = "in-process lld is unusable after an earlier fatal error";
      return out;
    }
    // lld's fatal() ends in llvm::sys::Process::Exit, which returns control
    // to lldMain's CrashRecoveryContext only when crash recovery is enabled;
    // otherwise it exits the host. The scope enables it for this call (and
    // for any reader on another thread), unless the host enabled it.
    exports::RecoveryScope recovery;
    SavedSignals sigs;
    sigs.save();
    SavedLLVMOptions options;
    options.save();
    // lld runs on the lld thread (see LldThread) while this thread reads
    // its output from the FIFO.
    auto t0 = std::chrono::steady_clock::now();
    lld::Result r{1, true};
    LldThread &runner = lld_thread();
    runner.start([&] {
      // Holding a write end for the whole call lets the reader's open()
      // return at once and makes EOF mean "lld is done", whether or not lld
      // wrote anything.
      int hold = ::open(output.c_str(), O_WRONLY | O_CLOEXEC);
      r = lld::lldMain(argv, out_os, err_os,
                       {{lld::Gnu, &lld::elf::link},
                        {lld::WinLink, &lld::coff::link},
                        {lld::Darwin, &lld::macho::link},
                        {lld::Wasm, &lld::wasm::link}});
      if (hold < 0) // should not happen; still release a waiting reader
        hold = ::open(output.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (hold >= 0)
        ::close(hold);
    }, job.input_bytes);
    out.artifact = read_fifo(output, job.input_bytes);
    runner.wait();
    out.link_ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
    sigs.restore();
    for (const std::string &name : options.restore())
      out.err_text += job.flavor + ": warning: lld reset the host's LLVM option -" + name +
                      " to its default and hotlink cannot restore options of its type; "
                      "declare it with hotlink::set_host_llvm_options\n";
    out.ret_code = r.retCode;
    out.can_run_again = r.canRunAgain;
    if (!r.canRunAgain)
      g_usable.store(false);
  }
  out_os.flush();
  err_os.flush();
  // lld names scratch paths; show them relative to the scratch directory so
  // that the diagnostics can be mapped back to the caller's input names.
  replace_all(out.out_text, dir + "/", "");
  replace_all(out.err_text, dir + "/", "");

  // lld-link writes the import library and the PDB as regular files
  // (through temporary ones: one small RemoveFileOnSignal entry per link
  // that asks for them); they go back with the image, the scratch
  // directory with them.
  for (auto [name, bytes, what] : {std::tuple{&job.implib_name, &out.implib, "import library"},
                                   std::tuple{&job.pdb_name, &out.pdb, "PDB"}}) {
    if (out.ret_code != 0 || name->empty())
      continue;
    std::ifstream f(dir + "/" + *name, std::ios::binary);
    bytes->assign(std::istreambuf_iterator<char>(f), {});
    if (bytes->empty())
      out.setup_error = std::string("lld wrote no ") + what + " '" + *name + "'";
  }
  // A successful link always writes a non-empty image.
  if (out.ret_code == 0 && out.artifact.empty())
    out.setup_error = "lld reported success but wrote no output '" + job.output_name + "'";
  return out;
}

} // namespace hotlink::detail
