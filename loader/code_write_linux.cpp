// Writing code while every other thread is stopped (Linux).
//
// Each other thread gets a real-time signal; its handler records where the
// thread was (the interrupted instruction) and waits on a futex until the
// writer is done. The writer lists the threads from /proc/self/task until
// the list no longer grows (a thread being created is stopped too), checks
// the recorded instructions against each write, writes into the files, and
// lets them go; each returns through rt_sigreturn, which serializes its
// core, so none runs stale instruction bytes. Between stopping and letting
// go the writer only makes system calls (no allocation, no lock another
// thread could hold).
#include "loader/code_write.h"
#include "base/fault_signals.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <mutex>
#include <sys/syscall.h>
#include <thread>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

namespace hotlink::loader {

namespace {

constexpr int kMaxThreads = 4096;
constexpr auto kStopTimeout = std::chrono::milliseconds(1000);
constexpr int kAttempts = 5;

struct Arrival {
  std::atomic<std::uint32_t> round{0};
  std::atomic<std::uintptr_t> pc{0};
  std::atomic<int> tid{0}; // written last
};

struct Parking {
  std::atomic<std::uint32_t> round{0}; // odd while threads are being stopped (a futex word)
  std::atomic<int> arrived{0};
  Arrival arrivals[kMaxThreads];
};
Parking g_parking;

int park_signal() { return SIGRTMAX - 3; }

long futex(std::atomic<std::uint32_t> *word, int op, std::uint32_t value) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(word), op, value, nullptr, nullptr, 0);
}

void park_handler(int, siginfo_t *, void *context) {
  int saved = errno;
  std::uint32_t round = g_parking.round.load(std::memory_order_acquire);
  if (round % 2 == 1) { // a writer is stopping threads: record, then wait
    int i = g_parking.arrived.fetch_add(1, std::memory_order_acq_rel);
    if (i < kMaxThreads) {
      Arrival &a = g_parking.arrivals[i];
      a.round.store(round, std::memory_order_relaxed);
      a.pc.store(base::interrupted_pc(context), std::memory_order_relaxed);
      a.tid.store(static_cast<int>(::syscall(SYS_gettid)), std::memory_order_release);
    }
    while (g_parking.round.load(std::memory_order_acquire) == round)
      futex(&g_parking.round, FUTEX_WAIT_PRIVATE, round);
  }
  errno = saved;
}

std::string install_handler() {
  static std::once_flag once;
  static std::string why;
  std::call_once(once, [] {
    struct sigaction old = {};
    if (::sigaction(park_signal(), nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
        (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
      why = "signal " + std::to_string(park_signal()) + " (SIGRTMAX-3), which forwarding uses, has a handler of the host's";
      return;
    }
    struct sigaction sa = {};
    sa.sa_sigaction = park_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask); // nothing else runs on a stopped thread
    if (::sigaction(park_signal(), &sa, nullptr) != 0)
      why = std::string("cannot install the signal handler: ") + std::strerror(errno);
    // Lets the writer make every core drop stale instruction bytes.
    ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
  });
  return why;
}

// What getdents64 returns (linux/dirent.h is not a user header).
struct LinuxDirent64 {
  std::uint64_t d_ino;
  std::int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

// The process's threads, from /proc/self/task, by system calls only.
int list_threads(int *tids, int capacity) {
  int dir = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return -1;
  int n = 0;
  alignas(8) char buf[8192];
  for (;;) {
    long got = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (got <= 0)
      break;
    for (long off = 0; off < got;) {
      auto *d = reinterpret_cast<const LinuxDirent64 *>(buf + off);
      off += d->d_reclen;
      int tid = 0;
      for (const char *c = d->d_name; *c >= '0' && *c <= '9'; ++c)
        tid = tid * 10 + (*c - '0');
      if (tid > 0 && n < capacity)
        tids[n++] = tid;
      else if (tid > 0)
        n = capacity + 1;
    }
  }
  ::close(dir);
  return n;
}

// The stopped threads' tids and next instructions, and those signaled.
struct Stopped {
  int signaled[kMaxThreads];
  int nsignaled = 0;
  std::uintptr_t pcs[kMaxThreads];
  int npcs = 0;
};

bool arrived(int tid, std::uint32_t round) {
  int n = std::min(g_parking.arrived.load(std::memory_order_acquire), kMaxThreads);
  for (int i = 0; i < n; ++i) {
    const Arrival &a = g_parking.arrivals[i];
    if (a.tid.load(std::memory_order_acquire) == tid && a.round.load(std::memory_order_relaxed) == round)
      return true;
  }
  return false;
}

// Signals every thread not yet signaled; waits until each stopped or is
// gone. Returns the tid that did not stop in time, -1 when the list of
// threads cannot be read or is too long, or 0.
int stop_others(Stopped &s, std::uint32_t round, std::chrono::steady_clock::time_point deadline) {
  const int self = static_cast<int>(::syscall(SYS_gettid));
  const int pid = ::getpid();
  int tids[kMaxThreads];
  for (;;) {
    int n = list_threads(tids, kMaxThreads);
    if (n < 0 || n > kMaxThreads)
      return -1;
    bool fresh = false;
    for (int i = 0; i < n; ++i) {
      if (tids[i] == self || std::find(s.signaled, s.signaled + s.nsignaled, tids[i]) != s.signaled + s.nsignaled)
        continue;
      if (::syscall(SYS_tgkill, pid, tids[i], park_signal()) == 0)
        s.signaled[s.nsignaled++] = tids[i];
      fresh = true;
    }
    if (!fresh)
      return 0; // everyone was stopped before this list was read: no one made a thread since
    for (int i = 0; i < s.nsignaled; ++i)
      while (!arrived(s.signaled[i], round) && ::syscall(SYS_tgkill, pid, s.signaled[i], 0) == 0) {
        if (std::chrono::steady_clock::now() >= deadline)
          return s.signaled[i];
        ::sched_yield();
      }
  }
}

void collect_pcs(Stopped &s, std::uint32_t round) {
  int n = std::min(g_parking.arrived.load(std::memory_order_acquire), kMaxThreads);
  s.npcs = 0;
  for (int i = 0; i < n; ++i)
    if (g_parking.arrivals[i].tid.load(std::memory_order_acquire) != 0 &&
        g_parking.arrivals[i].round.load(std::memory_order_relaxed) == round)
      s.pcs[s.npcs++] = g_parking.arrivals[i].pc.load(std::memory_order_relaxed);
}

bool inside(const Stopped &s, const CodeWrite &w) {
  for (int i = 0; i < s.npcs; ++i)
    if (s.pcs[i] > w.address && s.pcs[i] < w.address + w.length)
      return true;
  return false;
}

// Writes that go to the file in one pwrite: same file and mapping, each
// within kSpanGap bytes of the one before. Forwarding re-points every older
// version at each reload, so a reload writes a jump into every function of
// every kept version: one system call per version instead of per function.
constexpr std::uint64_t kSpanGap = 4096;

struct Span {
  int fd = -1;
  std::uint64_t offset = 0, length = 0;
  std::vector<std::size_t> writes; // indices, by offset
  std::vector<std::uint8_t> bytes, file; // allocated before the threads stop
};

std::vector<Span> spans_of(const std::vector<CodeWrite> &writes) {
  std::vector<std::size_t> order(writes.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return writes[a].fd != writes[b].fd ? writes[a].fd < writes[b].fd : writes[a].offset < writes[b].offset;
  });
  std::vector<Span> spans;
  for (std::size_t i : order) {
    const CodeWrite &w = writes[i];
    if (!spans.empty()) {
      Span &last = spans.back();
      const CodeWrite &prev = writes[last.writes.back()];
      if (w.fd == last.fd && w.offset >= last.offset + last.length &&
          w.offset - (last.offset + last.length) <= kSpanGap && w.address - w.offset == prev.address - prev.offset) {
        last.length = w.offset + w.length - last.offset;
        last.writes.push_back(i);
        continue;
      }
    }
    Span fresh;
    fresh.fd = w.fd;
    fresh.offset = w.offset;
    fresh.length = w.length;
    fresh.writes.push_back(i);
    spans.push_back(std::move(fresh));
  }
  for (Span &sp : spans) {
    sp.bytes.resize(sp.length);
    sp.file.resize(sp.length);
  }
  return spans;
}

// Writes a span's due writes (`due`: not Done, and no stopped thread inside)
// into the file in one pwrite over the file's own bytes, then checks each
// through the code mapping: a page that is a private copy (a debugger's
// breakpoint) does not show the file, and that write's bytes are put back.
void write_span(Span &sp, std::vector<CodeWrite> &writes, const std::vector<bool> &due) {
  bool any = false;
  for (std::size_t i : sp.writes)
    any = any || due[i];
  if (!any)
    return;
  auto fail = [&](int error) {
    for (std::size_t i : sp.writes)
      if (due[i]) {
        writes[i].status = CodeWrite::Status::Failed;
        writes[i].error = error;
      }
  };
  if (::pread(sp.fd, sp.file.data(), sp.length, static_cast<off_t>(sp.offset)) != static_cast<ssize_t>(sp.length))
    return fail(errno ? errno : EIO);
  std::memcpy(sp.bytes.data(), sp.file.data(), sp.length);
  for (std::size_t i : sp.writes)
    if (due[i])
      std::memcpy(sp.bytes.data() + (writes[i].offset - sp.offset), writes[i].bytes, writes[i].length);
  if (::pwrite(sp.fd, sp.bytes.data(), sp.length, static_cast<off_t>(sp.offset)) != static_cast<ssize_t>(sp.length))
    return fail(errno ? errno : EIO);
  for (std::size_t i : sp.writes) {
    if (!due[i])
      continue;
    CodeWrite &w = writes[i];
    if (std::memcmp(reinterpret_cast<const void *>(w.address), w.bytes, w.length) == 0) {
      w.status = CodeWrite::Status::Done;
      continue;
    }
    // The mapping's page is a private copy: the file gets its own bytes back.
    (void)!::pwrite(w.fd, sp.file.data() + (w.offset - sp.offset), w.length, static_cast<off_t>(w.offset));
    w.status = CodeWrite::Status::NotVisible;
  }
}

void release(std::uint32_t round) {
  g_parking.round.store(round + 1, std::memory_order_release);
  futex(&g_parking.round, FUTEX_WAKE_PRIVATE, INT32_MAX);
}

// One round: stop everyone, write what no thread is inside, let go.
// Returns the error of stop_others (0: the round ran).
int write_round(std::vector<CodeWrite> &writes, std::vector<Span> &spans, std::vector<bool> &due, Stopped &s) {
  for (Arrival &a : g_parking.arrivals)
    a.tid.store(0, std::memory_order_relaxed);
  g_parking.arrived.store(0, std::memory_order_release);
  std::uint32_t round = g_parking.round.fetch_add(1, std::memory_order_acq_rel) + 1; // odd
  s.nsignaled = 0;
  int failed = stop_others(s, round, std::chrono::steady_clock::now() + kStopTimeout);
  if (failed == 0) {
    collect_pcs(s, round);
    for (std::size_t i = 0; i < writes.size(); ++i) {
      CodeWrite &w = writes[i];
      due[i] = false;
      if (w.status == CodeWrite::Status::Pending || w.status == CodeWrite::Status::Busy) {
        w.status = CodeWrite::Status::Busy;
        due[i] = !inside(s, w);
      }
    }
    for (Span &sp : spans)
      write_span(sp, writes, due);
    ::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
  }
  release(round);
  return failed;
}

} // namespace

std::string parking_unavailable() {
#if !defined(__x86_64__)
  return "forwarding patches x86_64 code only";
#else
  return install_handler();
#endif
}

std::string write_code_parked(std::vector<CodeWrite> &writes) {
  static std::mutex mu; // one writer at a time in the process
  std::lock_guard<std::mutex> lock(mu);
  if (std::string why = parking_unavailable(); !why.empty())
    return why;
  static Stopped s; // large: not on the stack; guarded by mu
  // Allocated now: between stopping the threads and letting them go the
  // writer makes system calls only.
  std::vector<Span> spans = spans_of(writes);
  std::vector<bool> due(writes.size(), false);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1)); // let the threads inside move on
    int failed = write_round(writes, spans, due, s);
    if (failed < 0)
      return "the list of threads in /proc/self/task cannot be read, or holds more than " +
             std::to_string(kMaxThreads);
    if (failed > 0)
      return "thread " + std::to_string(failed) + " did not stop within " + std::to_string(kStopTimeout.count()) +
             " ms (does it block signal SIGRTMAX-3?)";
    bool busy = false;
    for (const CodeWrite &w : writes)
      busy = busy || w.status == CodeWrite::Status::Busy;
    if (!busy)
      break;
  }
  return {};
}

} // namespace hotlink::loader
