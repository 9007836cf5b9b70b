// Debuggers and profilers see every hot-loaded version (issue 17): gdb,
// perf and valgrind run on a host that loads kernels compiled with -g
// through HotModule or load_private, and must name the kernel's functions
// with file and line. Each tool runs in a process group of its own with a
// timeout that kills it and everything it started.
#include "hotlink/cache.h"
#include "hotlink/symbols.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/load.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>
#include <fcntl.h>
#include <sys/stat.h>

namespace hotlink {
namespace {

using test::Bytes;

const std::string kGdb = "/usr/bin/gdb";
const std::string kPerf = "/usr/bin/perf";
const std::string kValgrind = "/usr/bin/valgrind";

std::string host() { return test::bin_dir() + "/hotlink-debug-host"; }

// kernel_vN.c, compiled -g -O0: its functions' lines are known.
std::string kernel_source(int version) {
  return "#include <stdlib.h>\n"                                                     // 1
         "__attribute__((noinline)) int kernel_work(int x) {\n"                      // 2
         "  volatile int acc = 0;\n"                                                 // 3
         "  for (int i = 0; i < x; ++i) acc += i * " + std::to_string(version) + ";\n" // 4
         "  return acc;\n"                                                           // 5
         "}\n"                                                                       // 6
         "int kernel_work_argv(void **a) { *(int *)a[1] = kernel_work(*(int *)a[0]); return 0; }\n" // 7
         "void kernel_spin(const volatile int *stop) {\n"                            // 8
         "  while (!*stop) {}\n"                                                     // 9
         "}\n"                                                                       // 10
         "void kernel_abort(void) {\n"                                               // 11
         "  abort();\n"                                                              // 12
         "}\n"                                                                       // 13
         "int kernel_bad(const int *p) {\n"                                          // 14
         "  return p[" + std::to_string(version * 8) + "];\n"                        // 15
         "}\n";
}

// Compiles kernel_vN.c with -g and links it with hotlink; returns the .so.
std::string debug_kernel(const std::string &dir, int version) {
  std::string src = dir + "/kernel_v" + std::to_string(version) + ".c";
  std::string s = kernel_source(version);
  test::write_file(src, Bytes(s.begin(), s.end()));
  std::string obj = dir + "/kernel_v" + std::to_string(version) + ".o";
  test::Run cc = test::run({HOTLINK_TEST_CLANG, "-g", "-O0", "-fPIC", "-c", src, "-o", obj});
  EXPECT_EQ(cc.code, 0) << cc.err;
  LinkRequest req;
  req.inputs.push_back(Input::file(obj));
  req.exports = ExportPolicy::list({"kernel_work", "kernel_work_argv", "kernel_spin", "kernel_abort", "kernel_bad"});
  req.output_path = dir + "/kernel.so." + std::to_string(version);
  LinkService service;
  LinkResult r = service.link(req);
  EXPECT_TRUE(r.ok()) << r.error->to_string();
  // Both versions go by one name, as a JIT republishing kernel.so would.
  std::string published = dir + "/v" + std::to_string(version);
  std::filesystem::create_directories(published);
  std::filesystem::rename(req.output_path, published + "/kernel.so");
  return published + "/kernel.so";
}

test::Run run(const std::vector<std::string> &argv, std::vector<std::string> env = {}, unsigned timeout = 120) {
  test::RunOptions o;
  o.env = std::move(env);
  o.env.insert(o.env.begin(), "HOTLINK_TMPDIR=" + test::temp_dir()); // unless the caller names one
  // LeakSanitizer cannot run under ptrace (gdb, perf's children): in the
  // ASan build the host would exit 1 at its end, a failure of the tool's.
  o.env.insert(o.env.begin(), "ASAN_OPTIONS=detect_leaks=0");
  o.timeout_seconds = timeout;
  return test::run(argv, o);
}

std::vector<std::string> gdb(std::vector<std::string> commands, std::vector<std::string> args) {
  std::vector<std::string> argv = {kGdb, "-batch", "-nx"};
  for (const std::string &c : commands) {
    argv.push_back("-ex");
    argv.push_back(c);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

TEST(Debuggers, GdbHitsAPendingBreakpointInEachVersionAndNamesFileAndLine) {
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1), v2 = debug_kernel(dir, 2);
  test::Run g = run(gdb({"set breakpoint pending on", "break kernel_work", "run", "bt", "continue", "bt", "continue"},
                        {"--args", host(), "hot", v1, v2}));
  EXPECT_FALSE(g.timed_out) << "gdb hung";
  EXPECT_EQ(g.code, 0) << g.out << g.err;
  std::regex hit1("#0 +kernel_work \\(x=20\\) at [^\\n]*kernel_v1\\.c:3");
  std::regex hit2("#0 +kernel_work \\(x=20\\) at [^\\n]*kernel_v2\\.c:3");
  EXPECT_TRUE(std::regex_search(g.out, hit1)) << g.out;
  EXPECT_TRUE(std::regex_search(g.out, hit2)) << g.out;
  EXPECT_NE(g.out.find("v1 190"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("v2 380"), std::string::npos) << g.out;
  // The two versions are distinct files that say which version they are.
  EXPECT_TRUE(std::regex_search(g.out + g.err, std::regex("kernel\\.v1\\.[0-9a-f]{8}\\.so"))) << g.out;
}

TEST(Debuggers, GdbNamesAKernelLoadedWithLoadPrivate) {
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  test::Run g = run(gdb({"set breakpoint pending on", "break kernel_v1.c:4", "run", "bt", "continue"},
                        {"--args", host(), "private", v1}));
  EXPECT_FALSE(g.timed_out) << "gdb hung";
  EXPECT_TRUE(std::regex_search(g.out, std::regex("#0 +kernel_work \\(x=20\\) at [^\\n]*kernel_v1\\.c:4"))) << g.out;
  EXPECT_NE(g.out.find("private 190"), std::string::npos) << g.out;
}

TEST(Debuggers, GdbAttachesToARunningHost) {
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  std::string ready = dir + "/ready", stop = dir + "/stop";
  // One shell, one process group: the host spins inside the kernel, gdb
  // attaches, reads the stack and detaches, then the host is told to stop.
  std::string script = "'" + host() + "' spin '" + v1 + "' '" + ready + "' '" + stop + "' & pid=$!\n"
                       "while [ ! -e '" + ready + "' ]; do sleep 0.05; done\n"
                       "'" + kGdb + "' -batch -nx -p $pid -ex bt -ex 'info symbol kernel_work' -ex detach\n"
                       "touch '" + stop + "'\nwait $pid\n";
  test::Run g = run({"/bin/sh", "-c", script});
  EXPECT_FALSE(g.timed_out) << "gdb hung attached to the host";
  EXPECT_TRUE(std::regex_search(g.out, std::regex("kernel_spin \\(stop=[^)]*\\) at [^\\n]*kernel_v1\\.c:9"))) << g.out << g.err;
  EXPECT_TRUE(std::regex_search(g.out, std::regex("kernel_work in section \\.text of [^\\n]*kernel\\.v1\\.[0-9a-f]{8}\\.so")))
      << g.out;
  EXPECT_NE(g.out.find("spun"), std::string::npos) << g.out;
}

bool perf_works(std::string &why) {
  if (!test::exists(kPerf)) {
    why = "no perf (Debian: linux-perf)";
    return false;
  }
  std::string data = test::temp_dir() + "/probe.data";
  test::Run p = run({kPerf, "record", "-q", "-e", "cpu-clock", "-o", data, "--", "/bin/true"});
  if (p.code != 0) {
    why = "perf record -e cpu-clock cannot run here: " + p.err;
    return false;
  }
  return true;
}

// perf report lines "  12.34%  kernel.v1.1a2b3c4d.so  [.] kernel_work".
std::set<std::string> kernel_dsos(const std::string &report) {
  std::set<std::string> out;
  std::regex line("(kernel\\.v[12]\\.[0-9a-f]{8}\\.so) +\\[\\.\\] kernel_work");
  for (std::sregex_iterator it(report.begin(), report.end(), line), end; it != end; ++it)
    out.insert((*it)[1]);
  return out;
}

TEST(Profilers, PerfNamesTheKernelFunctionInEachVersion) {
  std::string why;
  if (!perf_works(why))
    GTEST_SKIP() << why;
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1), v2 = debug_kernel(dir, 2);
  std::string data = dir + "/perf.data";
  // perf attaches to the running host with its events off, and turns them
  // on through its control FIFO; only after perf acknowledges is the host
  // told to reload, so each version is sampled however slowly perf starts.
  // The report is read while the host (and so its mapped versions) is
  // still there.
  std::string script = "cd '" + dir + "' && mkfifo ctl ack\n"
                       "'" + host() + "' step '" + v1 + "' '" + v2 + "' . & pid=$!\n"
                       "until [ -e ready ]; do sleep 0.01; done\n"
                       "'" + kPerf + "' record -q --no-buildid-cache -D -1 --control fifo:ctl,ack -e cpu-clock"
                       " -p $pid -o '" + data + "' & perf=$!\n"
                       "exec 3<>ctl 4<>ack\n"
                       "echo enable >&3; read -r answer <&4\n"
                       "sleep 0.3; touch next\n"
                       "until [ -e reloaded ]; do sleep 0.01; done\n"
                       "sleep 0.3; kill -INT $perf; wait $perf\n"
                       "'" + kPerf + "' report -i '" + data + "' --stdio --sort dso,sym 2>/dev/null\n"
                       "touch stop; wait $pid\n";
  test::Run p = run({"/bin/sh", "-c", script});
  EXPECT_FALSE(p.timed_out);
  std::set<std::string> dsos = kernel_dsos(p.out);
  EXPECT_EQ(dsos.size(), 2u) << p.out << p.err;
}

TEST(Profilers, ValgrindNamesTheKernelFunctionAndLine) {
  if (test::kSanitized)
    GTEST_SKIP() << "valgrind cannot run a host built with a sanitizer";
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  test::Run v = run({kValgrind, "--error-exitcode=9", host(), "bad", v1}, {}, 300);
  EXPECT_FALSE(v.timed_out);
  EXPECT_EQ(v.code, 9) << v.err;
  EXPECT_NE(v.err.find("Invalid read of size 4"), std::string::npos) << v.err;
  EXPECT_TRUE(std::regex_search(v.err, std::regex("at 0x[0-9A-F]+: kernel_bad \\([^)]*kernel_v1\\.c:15\\)"))) << v.err;
}

// --- Post-mortem --------------------------------------------------------------------

// The environment of a user who set nothing: the store is the default one
// under HOME (a fresh one per test, so perf's ~/.debug is fresh too).
std::vector<std::string> default_store_env(const std::string &home) {
  return {"HOME=" + home, "XDG_CACHE_HOME=", "HOTLINK_KEEP_IMAGES="};
}

TEST(PostMortem, GdbReadsACoreOfAHostThatAbortedInsideTheKernelWithNoSetting) {
  if (test::kSanitized)
    GTEST_SKIP() << "a sanitizer's shadow memory would make the core terabytes";
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  std::string home = test::temp_dir(), core = dir + "/core";
  // gdb writes the core when the kernel's abort() stops the host.
  test::Run g = run(gdb({"run", "generate-core-file " + core, "kill"}, {"--args", host(), "abort", v1}),
                    default_store_env(home));
  EXPECT_FALSE(g.timed_out);
  ASSERT_TRUE(test::exists(core)) << g.out << g.err;
  // The host is gone; gdb opens its libraries by the paths the core names.
  test::Run pm = run({kGdb, "-batch", "-nx", host(), core, "-ex", "bt"});
  EXPECT_FALSE(pm.timed_out);
  EXPECT_TRUE(std::regex_search(pm.out, std::regex("kernel_abort \\(\\) at [^\\n]*kernel_v1\\.c:12"))) << pm.out << pm.err;
  std::string store = home + "/.cache/hotlink/images";
  struct stat st;
  ASSERT_EQ(::stat(store.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // With the store off, the copy went to tmpfs and is gone with the host:
  // gdb cannot say which function it was.
  std::string loads = test::temp_dir(), core_off = dir + "/core.off";
  test::Run off = run(gdb({"run", "generate-core-file " + core_off, "kill"}, {"--args", host(), "abort", v1}),
                      {"HOTLINK_KEEP_IMAGES=off", "HOTLINK_TMPDIR=" + loads});
  ASSERT_TRUE(test::exists(core_off)) << off.out << off.err;
  std::filesystem::remove_all(loads); // as the next host would (killed, it left its directory)
  test::Run blind = run({kGdb, "-batch", "-nx", host(), core_off, "-ex", "bt"});
  EXPECT_FALSE(std::regex_search(blind.out, std::regex("kernel_abort \\(\\) at"))) << blind.out << blind.err;
}

TEST(PostMortem, PerfReportsBothVersionsAfterTheHostExitedWithNoSetting) {
  std::string why;
  if (!perf_works(why))
    GTEST_SKIP() << why;
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1), v2 = debug_kernel(dir, 2);
  std::string home = test::temp_dir(), data = dir + "/perf.data";
  // Plain `perf record CMD` and `perf report`, as people profile.
  auto env = default_store_env(home);
  test::Run rec = run({kPerf, "record", "-q", "-e", "cpu-clock", "-o", data, "--", host(), "loop", v1, v2, "500", "-", "-"},
                      env);
  ASSERT_EQ(rec.code, 0) << rec.err;
  EXPECT_NE(rec.out.find("looped"), std::string::npos);
  test::Run rep = run({kPerf, "report", "-i", data, "--stdio", "--sort", "dso,sym"}, env);
  EXPECT_EQ(kernel_dsos(rep.out).size(), 2u) << rep.out << rep.err;
  // With the store off, the files are gone when perf looks: no names.
  std::string off_data = dir + "/perf.off.data";
  std::string home_off = test::temp_dir();
  test::Run rec_off = run({kPerf, "record", "-q", "-e", "cpu-clock", "-o", off_data, "--", host(), "loop", v1, v2,
                           "500", "-", "-"},
                          {"HOME=" + home_off, "HOTLINK_KEEP_IMAGES=off"});
  ASSERT_EQ(rec_off.code, 0) << rec_off.err;
  test::Run blind = run({kPerf, "report", "-i", off_data, "--stdio", "--sort", "dso,sym"}, {"HOME=" + home_off});
  EXPECT_TRUE(kernel_dsos(blind.out).empty()) << blind.out;
}

// The store's images: regular files under its process directories.
std::size_t stored_images(const std::string &store) {
  std::size_t n = 0;
  for (const auto &d : std::filesystem::directory_iterator(store))
    if (d.is_directory() && d.path().filename().string().rfind("hotlink-load-", 0) == 0)
      for (const auto &f : std::filesystem::directory_iterator(d.path()))
        n += f.is_regular_file() && f.path().filename().string()[0] != '.';
  return n;
}

TEST(PostMortem, TheStoreIsBoundedInBytesAndAge) {
  std::string store = test::temp_dir() + "/kept";
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  auto bytes = hotlink::read_artifact_file(v1);
  ASSERT_TRUE(bytes.ok());
  loader::LoadOptions o;
  o.keep_images = store;
  o.keep_max_bytes = bytes->size() * 3 + bytes->size() / 2; // room for three images
  std::vector<std::string> paths;
  for (int i = 0; i < 6; ++i) {
    o.file_name = "kernel." + std::to_string(i) + ".so";
    auto lib = loader::load_private(bytes.value(), v1, o);
    ASSERT_TRUE(lib.ok()) << lib.error().to_string();
    paths.push_back(lib.value()->path());
    EXPECT_EQ(paths.back().rfind(store + "/hotlink-load-", 0), 0u) << paths.back();
  }
  EXPECT_LE(stored_images(store), 3u);
  EXPECT_GE(stored_images(store), 1u);
  EXPECT_TRUE(test::exists(paths.back())) << "the newest stays";
  EXPECT_FALSE(test::exists(paths.front())) << "the oldest goes first";
  // A mapped image is never removed, however small the bound.
  o.keep_max_bytes = 1;
  o.file_name = "mapped.so";
  auto mapped = loader::load_private(bytes.value(), v1, o);
  ASSERT_TRUE(mapped.ok());
  o.file_name = "next.so";
  ASSERT_TRUE(loader::load_private(bytes.value(), v1, o).ok());
  EXPECT_TRUE(test::exists(mapped.value()->path()));
  // Images past the age bound go when a process first opens the store, if
  // no process pruned it in the last hour; within the hour nothing walks it.
  loader::LoadOptions young;
  young.keep_max_age = std::chrono::seconds(0);
  for (bool pruned_lately : {true, false}) {
    std::string aged = test::temp_dir() + "/aged";
    test::Run earlier = run({host(), "private", v1}, {"HOTLINK_KEEP_IMAGES=" + aged});
    EXPECT_EQ(earlier.code, 0) << earlier.err;
    EXPECT_EQ(stored_images(aged), 1u) << "the exited host's image stays";
    if (!pruned_lately) {
      struct timespec hours_ago[2] = {{std::time(nullptr) - 7200, 0}, {std::time(nullptr) - 7200, 0}};
      ASSERT_EQ(::utimensat(AT_FDCWD, (aged + "/.pruned").c_str(), hours_ago, 0), 0);
    }
    young.keep_images = aged; // this process's first use of that store
    young.file_name = "kernel.now.so"; // not the host's name, which the same bytes would write over
    auto now = loader::load_private(bytes.value(), v1, young);
    ASSERT_TRUE(now.ok());
    EXPECT_TRUE(test::exists(now.value()->path()));
    if (pruned_lately)
      EXPECT_EQ(stored_images(aged), 2u) << "pruned a moment ago by the host: not walked again";
    else
      EXPECT_EQ(stored_images(aged), 1u) << "only the image mapped now is left";
  }
}

// The store's process directories, by name.
std::set<std::string> process_dirs(const std::string &store) {
  std::set<std::string> out;
  for (const auto &d : std::filesystem::directory_iterator(store))
    if (d.is_directory() && d.path().filename().string().rfind("hotlink-load-", 0) == 0)
      out.insert(d.path().filename().string());
  return out;
}

TEST(PostMortem, ProcessesTakeTurnsInTheStoresDirectoriesAndARestartAddsNoCopy) {
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  std::string store = test::temp_dir() + "/kept";
  std::vector<std::string> env = {"HOTLINK_KEEP_IMAGES=" + store};
  // One host after another: each takes the directory the last one left,
  // and maps the last one's copy of the same bytes under the same name.
  // (A copy is an earlier owner's when its time is before the directory
  // was taken, on the file system's clock: the hosts are spaced a few of
  // its ticks apart.)
  for (int i = 0; i < 3; ++i) {
    test::Run r = run({host(), "private", v1}, env);
    ASSERT_EQ(r.code, 0) << r.err;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(process_dirs(store), std::set<std::string>{"hotlink-load-0"});
  EXPECT_EQ(stored_images(store), 1u) << "a restart added a numbered duplicate of the same image";
  // A host that is still running keeps its directory: the next one takes
  // another, and neither touches the other's image.
  std::string ready = dir + "/ready", stop = dir + "/stop";
  std::string script = "'" + host() + "' spin '" + v1 + "' '" + ready + "' '" + stop + "' & pid=$!\n"
                       "while [ ! -e '" + ready + "' ]; do sleep 0.02; done\n"
                       "'" + host() + "' private '" + v1 + "' || exit 9\n"
                       "touch '" + stop + "'\nwait $pid\n";
  test::RunOptions o;
  o.env = env;
  o.timeout_seconds = 60;
  test::Run both = test::run({"/bin/sh", "-c", script}, o);
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(process_dirs(store), (std::set<std::string>{"hotlink-load-0", "hotlink-load-1"}));
  // Directory 0: the earlier hosts' copy and the running host's version;
  // directory 1: the second host's copy.
  EXPECT_EQ(stored_images(store), 3u);
}

TEST(PostMortem, AStoreThatCannotBeUsedIsAWarningNotAFailedLoad) {
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  std::string file = test::temp_dir() + "/not-a-directory";
  test::write_file(file, Bytes{'x'});
  test::Run r = run({host(), "private", v1}, {"HOTLINK_KEEP_IMAGES=" + file + "/images"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("private "), std::string::npos);
  EXPECT_NE(r.err.find("the post-mortem image store " + file + "/images cannot be used"), std::string::npos) << r.err;
}

// --- Files ----------------------------------------------------------------------------

TEST(LoadFiles, EachVersionIsARealFileThatLivesAsLongAsItIsMapped) {
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  auto bytes = hotlink::read_artifact_file(v1);
  ASSERT_TRUE(bytes.ok());
  std::string path;
  loader::LoadOptions off;
  off.keep_images = "off";
  {
    auto lib = loader::load_private(bytes.value(), v1, off);
    ASSERT_TRUE(lib.ok()) << lib.error().to_string();
    path = lib.value()->path();
    EXPECT_TRUE(test::exists(path));
    EXPECT_TRUE(std::regex_search(path, std::regex("/hotlink-load-[^/]+/kernel\\.[0-9a-f]{8}\\.so$"))) << path;
    struct stat st;
    ASSERT_EQ(::stat(std::filesystem::path(path).parent_path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    // The dynamic loader lists it by that name.
    std::ifstream maps("/proc/self/maps");
    std::string all((std::istreambuf_iterator<char>(maps)), {});
    EXPECT_NE(all.find(path), std::string::npos);
    // Loading the same bytes again gives another file.
    auto again = loader::load_private(bytes.value(), v1, off);
    ASSERT_TRUE(again.ok());
    EXPECT_NE(again.value()->path(), path);
  }
  EXPECT_FALSE(test::exists(path)) << "with the store off, the file goes with the mapping";
  // With the store (the default), it stays for post-mortem tools.
  loader::LoadOptions kept;
  kept.keep_images = test::temp_dir() + "/store";
  {
    auto lib = loader::load_private(bytes.value(), v1, kept);
    ASSERT_TRUE(lib.ok());
    path = lib.value()->path();
  }
  EXPECT_TRUE(test::exists(path));
  EXPECT_EQ(path.rfind(kept.keep_images + "/hotlink-load-", 0), 0u) << path;
  // In the store too, each load in a process maps a copy of its own, even
  // of the same bytes under the same name, mapped or not.
  kept.file_name = "same.so";
  auto first = loader::load_private(bytes.value(), v1, kept);
  auto second = loader::load_private(bytes.value(), v1, kept);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first.value()->path(), second.value()->path());
  first = loader::load_private(bytes.value(), v1, kept);
  ASSERT_TRUE(first.ok());
  EXPECT_NE(first.value()->path(), second.value()->path());
}

TEST(LoadFiles, WhatAKilledHostLeftIsRemovedByTheNextOne) {
  std::string dir = test::temp_dir();
  std::string v1 = debug_kernel(dir, 1);
  std::string tmp = test::temp_dir();
  std::string ready = dir + "/ready", stop = dir + "/stop";
  std::string script = "'" + host() + "' spin '" + v1 + "' '" + ready + "' '" + stop + "' & pid=$!\n"
                       "while [ ! -e '" + ready + "' ]; do sleep 0.05; done\nkill -9 $pid\nwait $pid\nexit 0\n";
  test::RunOptions o;
  o.env = {"HOTLINK_TMPDIR=" + tmp, "HOTLINK_KEEP_IMAGES=off"};
  o.timeout_seconds = 60;
  ASSERT_EQ(test::run({"/bin/sh", "-c", script}, o).code, 0);
  auto load_dirs = [&] {
    std::vector<std::string> out;
    for (const auto &e : std::filesystem::directory_iterator(tmp))
      if (e.path().filename().string().rfind("hotlink-load-", 0) == 0)
        out.push_back(e.path());
    return out;
  };
  std::vector<std::string> left = load_dirs();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_FALSE(test::files_in(left[0]).empty()); // the killed host's copy is still there
  test::Run next = test::run({host(), "private", v1}, o);
  EXPECT_EQ(next.code, 0) << next.err;
  EXPECT_FALSE(test::exists(left[0])) << "the dead host's directory was not removed";
  EXPECT_TRUE(load_dirs().empty()); // and the second host removed its own at exit
}

// Every ELF artifact has a build-id, and the same request gives the same
// one whether it was linked here, in a worker or answered by the cache.
TEST(BuildId, IsPresentAndTheSameWhereverTheLinkRan) {
  Bytes obj = test::compile_c(host_target(), "int f(int x) { return x + 1; }\nint f_argv(void **a) { return 0; }\n");
  LinkRequest req;
  req.inputs.push_back(Input::memory("k.o", obj));
  auto cache = cache::Cache::open({test::temp_dir() + "/cache"});
  ASSERT_TRUE(cache.ok());
  LinkService plain;
  LinkService cached({.cache = cache.value()});
  std::vector<std::string> ids;
  auto id_of = [&](const LinkResult &r) {
    EXPECT_TRUE(r.ok()) << r.error->to_string();
    auto info = exports::read_artifact(r.artifact.data(), r.artifact.size(), "k.so");
    EXPECT_TRUE(info.ok());
    return info ? info->build_id : std::string();
  };
  ids.push_back(id_of(plain.link(req)));
  LinkRequest isolated = req;
  isolated.execution = Execution::Isolated;
  LinkResult w = plain.link(isolated);
  EXPECT_EQ(w.executed_by, "worker");
  ids.push_back(id_of(w));
  LinkResult miss = cached.link(req);
  EXPECT_EQ(miss.cache, CacheUse::Miss);
  ids.push_back(id_of(miss));
  LinkResult hit = cached.link(req);
  EXPECT_EQ(hit.cache, CacheUse::Hit);
  ids.push_back(id_of(hit));
  LinkRequest bare = req;
  bare.runtime = Runtime::None;
  ids.push_back(id_of(plain.link(bare)));
  EXPECT_GE(ids[0].size(), 16u) << ids[0];
  for (int i = 1; i < 4; ++i)
    EXPECT_EQ(ids[i], ids[0]);
  EXPECT_FALSE(ids[4].empty()); // a bare link has one too
  Bytes other = test::compile_c(host_target(), "int f(int x) { return x + 2; }\nint f_argv(void **a) { return 0; }\n");
  LinkRequest changed;
  changed.inputs.push_back(Input::memory("k.o", other));
  EXPECT_NE(id_of(plain.link(changed)), ids[0]);
}

} // namespace
} // namespace hotlink
