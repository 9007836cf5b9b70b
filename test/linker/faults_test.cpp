// Fault injection: the environment fails under a link or a store. Each
// case asserts what a user sees: a clear error (or a warning when the link
// itself still succeeded), nothing partial left anywhere, and the next good
// operation succeeds. (lld's own fatal errors are lld_fatal_test.cpp.)
//
// Disk-full and read-only cases need real ENOSPC and EROFS: they run in a
// child process (this binary again) that enters a private mount namespace
// and mounts a small tmpfs or a read-only bind mount, so nothing outside
// the child sees the mounts. That needs root (CI runs as root); elsewhere
// they skip and say so.
#include "hotlink/cache.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

namespace hotlink {
namespace {

using test::Bytes;

std::string host_target() { return "x86_64-linux-gnu"; }

Bytes kernel(int k) {
  return test::compile_c(host_target(), "int f(int x) { return x * " + std::to_string(k) +
                                             "; }\n" HOTLINK_TEST_F_ARGV);
}

// ~7 MB of code, 60,000 functions that call each other: about 130 ms to
// link in-process and 220 ms in a worker here, long enough to interfere
// with reliably.
const Bytes &big_object() {
  static const Bytes obj = [] {
    std::string s = ".text\n";
    const int n = 60000;
    for (int i = 0; i < n; ++i)
      s += ".globl g" + std::to_string(i) + "\ng" + std::to_string(i) + ":\n  leal " + std::to_string(i) +
           "(%rdi), %eax\n  call g" + std::to_string((i * 7 + 1) % n) + "@PLT\n  .fill 48,1,0x90\n  ret\n";
    s += ".globl f\nf:\n  jmp g0@PLT\n.globl f_argv\nf_argv:\n  xorl %eax, %eax\n  ret\n";
    return test::assemble(host_target(), s);
  }();
  return obj;
}

LinkRequest request(const Bytes &obj, const std::string &out = {}) {
  LinkRequest req;
  req.target = host_target();
  req.inputs = {Input::memory("k.o", obj)};
  req.output_path = out;
  return req;
}

using test::count_with;
using test::files_in;

bool warned(const LinkResult &r, const std::string &part) {
  for (const Diagnostic &d : r.diagnostics)
    if (d.severity == Severity::Warning && d.message.find(part) != std::string::npos)
      return true;
  return false;
}

// The worker processes this process started.
std::vector<pid_t> worker_pids() {
  std::vector<pid_t> pids;
  DIR *proc = ::opendir("/proc");
  while (dirent *e = proc ? ::readdir(proc) : nullptr) {
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0])) || !std::getline(stat, line) ||
        line.find("(hotlink-ld)") == std::string::npos)
      continue;
    pid_t ppid = 0;
    char state = 0;
    std::sscanf(line.c_str() + line.rfind(')') + 1, " %c %d", &state, &ppid);
    if (ppid == getpid())
      pids.push_back(static_cast<pid_t>(std::atol(e->d_name)));
  }
  if (proc)
    ::closedir(proc);
  return pids;
}

TEST(Fault, WorkerKilledMidLinkIsAnErrorAndTheNextLinkSucceeds) {
  // Workers make their scratch directories under the service's
  // HOTLINK_TMPDIR; a killed worker's (its inputs, on tmpfs) must not stay.
  std::string scratch = test::temp_dir();
  setenv("HOTLINK_TMPDIR", scratch.c_str(), 1);
  struct Unset {
    ~Unset() { unsetenv("HOTLINK_TMPDIR"); }
  } unset;
  {
    LinkService service(ServiceConfig{1, {}});
    std::string dir = test::temp_dir();
    LinkRequest warm = request(kernel(2));
    warm.execution = Execution::Isolated;
    ASSERT_TRUE(service.link(warm).ok());
    std::vector<pid_t> workers = worker_pids();
    ASSERT_EQ(workers.size(), 1u);

    LinkRequest req = request(big_object(), dir + "/big.so");
    req.execution = Execution::Isolated;
    auto pending = service.submit(req);
    // Kill it once it holds the 7 MB input (an ELF link keeps it in a
    // memfd; other targets write it to the scratch directory), or after
    // 2 s: then the test says the link won the race.
    auto holds_input = [&] {
      if (test::count_with(files_in(scratch), "in0-") != 0)
        return true;
      std::string fds = "/proc/" + std::to_string(workers[0]) + "/fd";
      DIR *d = ::opendir(fds.c_str());
      bool found = false;
      while (dirent *e = d ? ::readdir(d) : nullptr) {
        char target[512];
        ssize_t n = ::readlink((fds + "/" + e->d_name).c_str(), target, sizeof target - 1);
        found |= n > 0 && std::string(target, static_cast<std::size_t>(n)).find("memfd:hotlink:in0-") != std::string::npos;
      }
      if (d)
        ::closedir(d);
      return found;
    };
    for (int i = 0; i < 20000 && !holds_input(); ++i)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    ASSERT_EQ(::kill(workers[0], SIGKILL), 0);
    LinkResult r = pending.get();
    ASSERT_FALSE(r.ok()) << "the link finished before the worker was killed";
    EXPECT_EQ(r.error->code, ErrorCode::WorkerFailed) << r.error->to_string();
    EXPECT_NE(r.error->message.find("signal 9"), std::string::npos) << r.error->message;
    EXPECT_EQ(files_in(dir).size(), 0u) << "a killed link left " << files_in(dir)[0];
    EXPECT_EQ(files_in(scratch).size(), 0u) << "the killed worker left " << files_in(scratch)[0];

    LinkResult again = service.link(req);
    ASSERT_TRUE(again.ok()) << again.error->to_string();
    EXPECT_EQ(again.executed_by, "worker");
    EXPECT_TRUE(test::exists(dir + "/big.so"));
    EXPECT_EQ(service.stats().workers_lost, 1u);
  }
  EXPECT_EQ(test::count_entries(scratch), 0u) << "a worker's scratch directory outlived the service";
}

// Whether this process has a file open in `dir`, named or not.
bool holds_file_in(const std::string &dir) {
  DIR *d = ::opendir("/proc/self/fd");
  bool found = false;
  while (dirent *e = d ? ::readdir(d) : nullptr) {
    char target[4096];
    ssize_t n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof target - 1);
    found |= n > 0 && std::string(target, static_cast<std::size_t>(n)).rfind(dir + "/", 0) == 0;
  }
  if (d)
    ::closedir(d);
  return found;
}

// A user killed 15 links of a large object at once: 11 left
// ".big.so.hotlink-PID-....tmp" behind, which nothing ever removed. The
// output is now an unnamed file until it is complete; a kill in the short
// window between naming it and renaming it into place leaves a temporary
// that the next process linking the same output removes (CI caught one).
TEST(Fault, AKilledLinkLeavesNothingInTheOutputDirectory) {
  std::string in = test::temp_dir() + "/big.o", dir = test::temp_dir();
  test::write_file(in, big_object());
  int completed = 0;
  for (int i = 0; i < 12; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string hl = test::bin_dir() + "/hotlink", out = dir + "/big.so";
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(hl.c_str(), hl.c_str(), "link", in.c_str(), "-o", out.c_str(), "--policy", "all", (char *)nullptr);
      ::_exit(127);
    }
    // Spread the kills over the link (planning, lld, publishing).
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + 15 * i));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    completed += WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::vector<std::string> left = files_in(dir);
  EXPECT_LE(left.size(), 2u) << "killed links left temporaries that pile up";
  // The next link of that output runs to the end and sweeps what a kill
  // left in its commit window.
  std::string hl = test::bin_dir() + "/hotlink", out = dir + "/big.so";
  test::Run last = test::run({hl, "link", in, "-o", out, "--policy", "all"});
  ASSERT_EQ(last.code, 0) << last.err;
  for (const std::string &f : files_in(dir))
    EXPECT_EQ(f, "big.so") << "a killed link left " << f;
  // Some kills must land inside the link for the test to mean anything.
  EXPECT_LT(completed, 12) << "every link finished before its kill";
}

// A link's named temporary beside its output is its own while it holds it
// locked: another link's sweep removes only those nobody holds. (It went
// by the process id in the name, which another PID namespace sharing the
// directory, such as a container's, can make look dead.)
TEST(Fault, ASweepRemovesOnlyTemporariesNoLinkHolds) {
  std::string dir = test::temp_dir() + "/sweep";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  std::string in = dir + "/k.o", out = dir + "/k.so";
  test::write_file(in, kernel(1));
  // Process ids no process has here: the names of a live link in another
  // namespace and of a killed one.
  std::string live = dir + "/k.so.tmp-999999991-00000000000000a1", dead = dir + "/k.so.tmp-999999992-00000000000000a2";
  test::write_file(live, Bytes(10, 1));
  test::write_file(dead, Bytes(10, 2));
  int holder = ::open(live.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(holder, 0);
  ASSERT_EQ(::flock(holder, LOCK_EX), 0);
  test::Run r = test::run({test::bin_dir() + "/hotlink", "link", "-o", out, in});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::exists(live)) << "a live link's temporary was swept";
  EXPECT_FALSE(test::exists(dead)) << "a killed link's temporary was left";
  EXPECT_TRUE(test::exists(out));
  ::close(holder);
}

TEST(Fault, OutputDirectoryRemovedMidLinkIsAnOutputError) {
  LinkService service;
  std::string parent = test::temp_dir(), dir = parent + "/out";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  LinkRequest req = request(big_object(), dir + "/big.so");
  req.execution = Execution::InProcess;
  std::atomic<bool> removed{false};
  std::thread remover([&] {
    // The output is reserved in its directory before lld runs, as an
    // unnamed file (O_TMPFILE; /proc shows it as DIR/#INODE): remove the
    // directory once the reservation is there.
    for (int i = 0; i < 5000 && !removed; ++i) {
      if (holds_file_in(dir)) {
        removed = std::system(("rm -rf '" + dir + "'").c_str()) == 0;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  LinkResult r = service.link(req);
  remover.join();
  ASSERT_TRUE(removed) << "the reservation never appeared";
  ASSERT_FALSE(r.ok()) << "the link published into a removed directory";
  EXPECT_EQ(r.error->code, ErrorCode::OutputError) << r.error->to_string();
  EXPECT_EQ(r.error->input, dir + "/big.so");
  EXPECT_EQ(files_in(parent).size(), 0u) << "left " << files_in(parent)[0];

  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  LinkResult again = service.link(req);
  ASSERT_TRUE(again.ok()) << again.error->to_string();
  EXPECT_TRUE(test::exists(dir + "/big.so"));
  EXPECT_EQ(files_in(dir).size(), 1u);
}

// Runs FaultChild.Run in a new process for `scenario`; the child's own
// assertions decide. Skips when the child cannot mount (not root).
void run_child(const std::string &scenario) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root: the child mounts a tmpfs / read-only bind mount in a private mount namespace";
  std::string dir = test::temp_dir();
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  test::Run r = test::run({std::string(self, n), "--gtest_filter=FaultChild.Run", "--", scenario, dir});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << r.out << r.err;
}

TEST(Fault, DiskFullDuringAStoreAndALink) { run_child("disk-full"); }
TEST(Fault, TheOutputDevNullStaysADevice) { run_child("dev-null"); }
TEST(Fault, ReadOnlyCacheDirectory) { run_child("read-only"); }

std::shared_ptr<cache::Cache> open_cache(const std::string &dir) {
  auto c = cache::Cache::open({dir});
  EXPECT_TRUE(c.ok()) << c.error().to_string();
  return c.ok() ? c.value() : nullptr;
}

void disk_full(const std::string &dir) {
  std::string small = dir + "/small";
  ASSERT_EQ(::mkdir(small.c_str(), 0700), 0);
  ASSERT_EQ(::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=1m,mode=0700"), 0) << std::strerror(errno);
  auto cache = open_cache(small + "/cache");
  ASSERT_TRUE(cache);
  LinkService service({.cache = cache});
  ASSERT_EQ(service.link(request(kernel(1))).cache, CacheUse::Miss);

  // Fill the file system to the last byte.
  std::string filler = small + "/filler";
  {
    int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    std::vector<char> block(4096, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    std::vector<char> one(1, 'x');
    while (::write(fd, one.data(), 1) > 0) {
    }
    ::close(fd);
  }

  // A store that runs out of space: the link still succeeds, with a warning.
  LinkResult r = service.link(request(kernel(2)));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.cache, CacheUse::Miss);
  EXPECT_FALSE(r.artifact.empty());
  EXPECT_TRUE(warned(r, "No space left")) << (r.diagnostics.empty() ? "" : r.diagnostics[0].message);
  EXPECT_FALSE(r.cache_stored) << "a store that failed is reported as stored";
  EXPECT_EQ(cache->stats().store_errors, 1u);
  auto files = files_in(small + "/cache");
  EXPECT_EQ(count_with(files, ".tmp-"), 0u) << "a failed store left a temporary";
  EXPECT_EQ(count_with(files, ".a"), 1u) << "only the first entry's artifact may be there";
  EXPECT_TRUE(cache->verify().corrupt.empty());

  // A link whose output is on the full file system: an OutputError naming it.
  LinkResult out = service.link(request(kernel(3), small + "/k3.so"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error->code, ErrorCode::OutputError) << out.error->to_string();
  EXPECT_EQ(out.error->input, small + "/k3.so");
  EXPECT_FALSE(test::exists(small + "/k3.so"));
  for (const std::string &f : files_in(small))
    EXPECT_EQ(f.find("k3.so"), std::string::npos) << "left " << f;

  // Space again: the same links succeed and are stored.
  ASSERT_EQ(::unlink(filler.c_str()), 0);
  LinkResult stored = service.link(request(kernel(2)));
  EXPECT_EQ(stored.cache, CacheUse::Miss);
  EXPECT_TRUE(stored.cache_stored);
  EXPECT_EQ(service.link(request(kernel(2))).cache, CacheUse::Hit);
  LinkResult written = service.link(request(kernel(3), small + "/k3.so"));
  ASSERT_TRUE(written.ok()) << written.error->to_string();
  EXPECT_TRUE(test::exists(small + "/k3.so"));
}

void read_only(const std::string &dir) {
  std::string path = dir + "/cache";
  auto cache = open_cache(path);
  ASSERT_TRUE(cache);
  LinkService service({.cache = cache});
  ASSERT_EQ(service.link(request(kernel(1))).cache, CacheUse::Miss);

  // The directory becomes read-only under the open cache.
  ASSERT_EQ(::mount(path.c_str(), path.c_str(), nullptr, MS_BIND, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, path.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  ASSERT_NE(::access(path.c_str(), W_OK), 0) << "the bind mount is not read-only";
  // What is there is still served.
  LinkResult hit = service.link(request(kernel(1)));
  ASSERT_TRUE(hit.ok()) << hit.error->to_string();
  EXPECT_EQ(hit.cache, CacheUse::Hit);
  // A miss links, warns that it cannot store, and stores nothing.
  LinkResult miss = service.link(request(kernel(2)));
  ASSERT_TRUE(miss.ok()) << miss.error->to_string();
  EXPECT_EQ(miss.cache, CacheUse::Miss);
  EXPECT_TRUE(warned(miss, "Read-only file system")) << (miss.diagnostics.empty() ? "" : miss.diagnostics[0].message);
  EXPECT_EQ(count_with(files_in(path), ".a"), 1u);
  // Opening it anew is refused with the reason, not half-opened.
  auto reopened = cache::Cache::open({path});
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.error().code, ErrorCode::CacheError);
  EXPECT_NE(reopened.error().message.find("Read-only file system"), std::string::npos)
      << reopened.error().to_string();

  // Writable again: the miss is stored, then hit.
  ASSERT_EQ(::mount(nullptr, path.c_str(), nullptr, MS_BIND | MS_REMOUNT, nullptr), 0) << std::strerror(errno);
  EXPECT_EQ(service.link(request(kernel(2))).cache, CacheUse::Miss);
  EXPECT_EQ(service.link(request(kernel(2))).cache, CacheUse::Hit);
  EXPECT_TRUE(cache->verify().corrupt.empty());
}

// `hotlink link -o /dev/null` as root replaced the system's /dev/null with
// a regular file (the atomic rename), which broke apt. Here /dev/null is a
// device node of the test's, bind-mounted over it in this process's
// private mount namespace: the machine's own is never touched. ld.lld
// writes into a device in place; so does hotlink, and a FIFO output gets
// the image's bytes.
void dev_null(const std::string &dir) {
  std::string node = dir + "/null";
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(node.c_str(), "/dev/null", nullptr, MS_BIND, nullptr), 0) << std::strerror(errno);
  struct stat before;
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  LinkService service;
  LinkResult r = service.link(request(kernel(4), "/dev/null"));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a device";
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(st.st_mode, before.st_mode) << "the output's mode was applied to the device";
  test::write_file(dir + "/k.o", kernel(5));
  test::Run cli = test::run({test::bin_dir() + "/hotlink", "link", "-o", "/dev/null", dir + "/k.o"});
  EXPECT_EQ(cli.code, 0) << cli.err;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the CLI replaced /dev/null";
  EXPECT_TRUE(files_in(dir) == std::vector<std::string>({"k.o", "null"})) << "left " << files_in(dir).size();

  // A FIFO output: the reader gets exactly the image a regular file gets.
  // The same file name (the soname) in two directories: the same bytes.
  std::string fifo = dir + "/fifo/k.so", file = dir + "/k.so";
  ASSERT_EQ(::mkdir((dir + "/fifo").c_str(), 0700), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Bytes got;
  std::thread reader([&] { got = test::read_file(fifo); });
  LinkResult to_fifo = service.link(request(kernel(6), fifo));
  reader.join();
  ASSERT_TRUE(to_fifo.ok()) << to_fifo.error->to_string();
  ASSERT_TRUE(service.link(request(kernel(6), file)).ok());
  EXPECT_EQ(got, test::read_file(file));
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

// The body of the mount-namespace cases (run by run_child above).
TEST(FaultChild, Run) {
  auto args = ::testing::internal::GetArgvs();
  if (args.size() < 4 || args[args.size() - 3] != "--")
    GTEST_SKIP() << "run by Fault.DiskFullDuringAStoreAndALink and Fault.ReadOnlyCacheDirectory";
  std::string scenario = args[args.size() - 2], dir = args[args.size() - 1];
  ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
  if (scenario == "disk-full")
    disk_full(dir);
  else if (scenario == "read-only")
    read_only(dir);
  else if (scenario == "dev-null")
    dev_null(dir);
  else
    FAIL() << "unknown scenario " << scenario;
}

} // namespace
} // namespace hotlink
