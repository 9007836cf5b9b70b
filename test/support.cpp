#include "test/support.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <atomic>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <fstream>
#include <sstream>
#include <dirent.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::test {

namespace {

struct TempRoot {
  std::string path;
  TempRoot() {
    char templ[] = "/tmp/hotlink-test-XXXXXX";
    path = mkdtemp(templ);
  }
  // std::filesystem, not llvm::sys::fs::remove_directories: that one leaves
  // sockets and FIFOs behind (a test's redis.sock kept its whole tree).
  ~TempRoot() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

TempRoot &root() {
  static TempRoot r;
  return r;
}

std::string fixture_dir() {
  std::string d = HOTLINK_TEST_FIXTURE_DIR;
  llvm::sys::fs::create_directories(d);
  return d;
}

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs a fixture tool whose output `out` depends only on its arguments and
// `input`; caches it under a hash of both. Test processes that want the
// same fixture at once (ctest -j) take turns on a lock file, so it is made
// once (nvcc spends 9 s on a translation unit that includes CUB).
Bytes cached_tool(const std::vector<std::string> &tool_args,
                  const std::string &input, const std::string &ext) {
  std::string key;
  for (const std::string &a : tool_args)
    key += a + '\0';
  key += input;
  std::string hash = llvm::utohexstr(llvm::xxh3_64bits(key));
  std::string out = fixture_dir() + "/" + hash + ext;
  if (exists(out))
    return read_file(out);
  int lock = ::open((out + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0)
        ::close(fd); // releases the lock
    }
  } unlock{lock};
  if (lock >= 0)
    ::flock(lock, LOCK_EX);
  if (exists(out))
    return read_file(out);
  std::string src = temp_dir() + "/src-" + hash + ext + ".in";
  std::ofstream(src, std::ios::binary) << input;
  std::string tmp = out + ".tmp" + std::to_string(getpid());
  std::vector<std::string> argv = tool_args;
  argv.push_back(src);
  argv.push_back("-o");
  argv.push_back(tmp);
  Run r = run(argv);
  if (r.code != 0) {
    ADD_FAILURE() << "fixture tool failed (" << tool_args[0] << "): " << r.err;
    return {};
  }
  std::rename(tmp.c_str(), out.c_str());
  return read_file(out);
}

} // namespace

Bytes compile_with(const std::vector<std::string> &tool_args, const std::string &source,
                   const std::string &ext) {
  return cached_tool(tool_args, source, ext);
}

extern "C" char **environ;

Run run(const std::vector<std::string> &argv, const RunOptions &options) {
  Run r;
  std::string dir = temp_dir();
  std::string out = dir + "/stdout", err = dir + "/stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!options.cwd.empty())
    posix_spawn_file_actions_addchdir_np(&fa, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  // This process's environment, then options.env; a later entry of a name
  // replaces every earlier one.
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e)
    env.push_back(*e);
  for (const std::string &add : options.env) {
    std::string key = add.substr(0, add.find('=') + 1);
    env.erase(std::remove_if(env.begin(), env.end(),
                             [&](const std::string &v) { return v.compare(0, key.size(), key) == 0; }),
              env.end());
    env.push_back(add);
  }
  std::vector<char *> cargv, cenv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string &e : env)
    cenv.push_back(const_cast<char *>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    r.err = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid)
      break;
    if (w < 0 && errno != EINTR)
      break;
    if (options.timeout_seconds && std::chrono::steady_clock::now() > deadline) {
      ::killpg(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::killpg(pid, SIGKILL); // whatever it left running
  if (!r.timed_out)
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  if (r.timed_out)
    r.err += "\n(killed after " + std::to_string(options.timeout_seconds) + " s)";
  return r;
}

std::string temp_dir() {
  static std::atomic<int> counter{0}; // test::run() may be called from threads
  std::string d = root().path + "/d" + std::to_string(counter++);
  llvm::sys::fs::create_directories(d);
  return d;
}

Bytes read_file(const std::string &path) {
  std::string s = slurp(path);
  return Bytes(s.begin(), s.end());
}

void write_file(const std::string &path, const Bytes &bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

bool exists(const std::string &path) { return llvm::sys::fs::exists(path); }

std::size_t count_entries(const std::string &dir) {
  std::error_code ec;
  std::size_t n = 0;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    ++n;
  return n;
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atol(line.c_str() + 6);
  return -1;
}

Run run(const std::vector<std::string> &argv) {
  Run r;
  std::string out = temp_dir() + "/stdout", err = temp_dir() + "/stderr";
  std::vector<llvm::StringRef> args(argv.begin(), argv.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out),
                                                llvm::StringRef(err)};
  std::string msg;
  r.code = llvm::sys::ExecuteAndWait(argv[0], args, std::nullopt, redirects, 0, 0, &msg);
  r.out = slurp(out);
  r.err = slurp(err) + msg;
  return r;
}

Bytes compile_c(const std::string &triple, const std::string &source,
                const std::vector<std::string> &flags) {
  std::vector<std::string> args = {HOTLINK_TEST_CLANG, "--target=" + triple,
                                   "-O1", "-x", "c", "-c", "-fno-stack-protector"};
  // JIT pipelines that produce shared objects generate PIC; so do we.
  if (triple.find("linux") != std::string::npos)
    args.push_back("-fPIC");
  args.insert(args.end(), flags.begin(), flags.end());
  return cached_tool(args, source, ".o");
}

Bytes compile_so(const std::string &triple, const std::string &source,
                 const std::vector<std::string> &flags) {
  std::vector<std::string> args = {HOTLINK_TEST_CLANG, "--target=" + triple, "-O1", "-x", "c",
                                   "-shared", "-nostdlib", "-fuse-ld=lld", "-fno-stack-protector"};
  if (triple.find("linux") != std::string::npos)
    args.push_back("-fPIC");
  args.insert(args.end(), flags.begin(), flags.end());
  return cached_tool(args, source, ".so");
}

Bytes assemble(const std::string &triple, const std::string &source) {
  return cached_tool({HOTLINK_TEST_LLVM_MC, "-triple=" + triple, "-filetype=obj"},
                     source, ".o");
}

std::string make_archive(const std::vector<std::pair<std::string, Bytes>> &members) {
  std::string dir = temp_dir();
  std::vector<std::string> argv = {HOTLINK_TEST_LLVM_AR, "rcs", dir + "/lib.a"};
  for (const auto &[name, bytes] : members) {
    write_file(dir + "/" + name, bytes);
    argv.push_back(dir + "/" + name);
  }
  Run r = run(argv);
  EXPECT_EQ(r.code, 0) << r.err;
  return dir + "/lib.a";
}

std::string bin_dir() { return HOTLINK_TEST_BIN_DIR; }

std::string halide_style_kernel() {
  return R"(
struct halide_filter_metadata_t { int version; int num_arguments; const void *arguments;
                                  const char *target; const char *name; };
static const struct halide_filter_metadata_t meta = {1, 2, 0, "host", "f"};
int f_par_for_closure(void *user, int idx, unsigned char *closure) { return idx + 1; }
int f_closure_2(void *user, int idx, unsigned char *closure) { return idx * 2; }
__attribute__((weak)) int halide_runtime_helper(int x) { return x - 1; }
int global_counter = 5;
int f(int x, int *out) { *out = f_par_for_closure(0, x, 0) + f_closure_2(0, x, 0) + global_counter; return 0; }
int f_argv(void **args) { return f(*(int *)args[0], (int *)args[1]); }
const struct halide_filter_metadata_t *f_metadata(void) { return &meta; }
)";
}

std::string metadata_kernel(int tag, int dims, const std::string &extra) {
  return "#define TAG " + std::to_string(tag) + "\n#define DIMS " + std::to_string(dims) + "\n" + R"(
typedef unsigned char u8; typedef unsigned short u16; typedef int i32; typedef long long i64;
struct halide_type_t { u8 code, bits; u16 lanes; };
struct halide_filter_argument_t { const char *name; i32 kind, dimensions; struct halide_type_t type;
                                  const void *def, *min, *max, *estimate; const i64 *buffer_estimates; };
struct halide_filter_metadata_t { i32 version, num_arguments; const struct halide_filter_argument_t *arguments;
                                  const char *target, *name; };
static const struct halide_filter_argument_t args[] = {
    {"input", 1, DIMS, {1, 8, 1}, 0, 0, 0, 0, 0}, {"scale", 0, 0, {2, 32, 1}, 0, 0, 0, 0, 0}};
static const struct halide_filter_metadata_t meta = {1, 2, args, "host", "f"};
const struct halide_filter_metadata_t *f_metadata(void) { return &meta; }
static volatile int tag_data = TAG;
int f(int x) { return x * 10 + tag_data; }
int f_argv(void **a) { *(int *)a[1] = f(*(int *)a[0]); return 0; }
int tag_a(void) { return tag_data; }
int tag_b(void) { return tag_data; }
)" + extra;
}

std::vector<std::string> files_in(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..")
        continue;
      struct stat st;
      std::string p = dir + "/" + n;
      if (::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        for (const std::string &x : files_in(p))
          out.push_back(n + "/" + x);
      else
        out.push_back(n);
    }
    ::closedir(d);
  }
  return out;
}

std::size_t count_with(const std::vector<std::string> &files, const std::string &part) {
  std::size_t n = 0;
  for (const std::string &f : files)
    n += f.find(part) != std::string::npos;
  return n;
}

#if defined(__SANITIZE_ADDRESS__)
IgnoreLeaks::IgnoreLeaks() { __lsan_disable(); }
IgnoreLeaks::~IgnoreLeaks() { __lsan_enable(); }
#else
IgnoreLeaks::IgnoreLeaks() = default;
IgnoreLeaks::~IgnoreLeaks() = default;
#endif

OpenCounter::OpenCounter(const std::vector<std::string> &paths) {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  EXPECT_GE(fd_, 0) << std::strerror(errno);
  for (const std::string &p : paths)
    EXPECT_GE(::inotify_add_watch(fd_, p.c_str(), IN_OPEN), 0) << p << ": " << std::strerror(errno);
}

OpenCounter::~OpenCounter() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::size_t OpenCounter::opens() {
  std::size_t n = 0;
  alignas(struct inotify_event) char buf[4096];
  for (;;) {
    ssize_t got = ::read(fd_, buf, sizeof buf);
    if (got <= 0)
      return n;
    for (char *p = buf; p < buf + got; p += sizeof(struct inotify_event) + reinterpret_cast<struct inotify_event *>(p)->len)
      n += (reinterpret_cast<struct inotify_event *>(p)->mask & IN_OPEN) != 0;
  }
}

} // namespace hotlink::test
