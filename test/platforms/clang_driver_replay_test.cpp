// clang's driver answers replayed from disk (linker/platforms/driver_replay.h)
// and the driver module loaded only when none applies: a replay stands
// while every path the driver looked at is unchanged, a changed, torn or
// foreign file is never replayed, and a CLI link with a replay needs no
// libclang-cpp at all.
#include "linker/platforms/driver_replay.h"
#include "support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>

using namespace hotlink;
using namespace hotlink::detail;

namespace {

// Points this process's replays at a fresh directory for one test.
class ReplayDir {
public:
  ReplayDir() : dir_(test::temp_dir() + "/replays") {
    const char *old = std::getenv("HOTLINK_DRIVER_REPLAYS");
    had_ = old != nullptr;
    old_ = old ? old : "";
    ::setenv("HOTLINK_DRIVER_REPLAYS", dir_.c_str(), 1);
  }
  ~ReplayDir() {
    if (had_)
      ::setenv("HOTLINK_DRIVER_REPLAYS", old_.c_str(), 1);
    else
      ::unsetenv("HOTLINK_DRIVER_REPLAYS");
  }
  const std::string &path() const { return dir_; }
  std::string only_file() const {
    auto files = test::files_in(dir_);
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? std::string() : dir_ + "/" + files.front();
  }

private:
  std::string dir_, old_;
  bool had_ = false;
};

DriverAnswer answer_probing(const std::string &path) {
  DriverAnswer a;
  a.jobs.push_back({"ld.lld", true, {"-shared", "--eh-frame-hdr", "-L/some dir"}});
  a.probes = {path, "/"};
  return a;
}

std::string host_kernel_object(const std::string &dir) {
  std::string obj = dir + "/k.o";
  test::write_file(obj, test::compile_c("x86_64-linux-gnu", "int f(int x){return x*2;}\nint f_argv(void **a){return f(*(int *)a[0]);}"));
  return obj;
}

} // namespace

TEST(DriverReplay, ReplaysWhileEveryProbedPathIsUnchanged) {
  ReplayDir replays;
  std::string probed = replays.path() + "/../gcc-install";
  std::string key = driver_replay_key("/usr/lib/llvm-22/bin/clang", "x86_64-pc-linux-gnu", {"clang", "-shared"});
  keep_driver_answer(key, answer_probing(probed));
  auto jobs = replay_driver_answer(key);
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_TRUE((*jobs)[0].link);
  EXPECT_EQ((*jobs)[0].args, (std::vector<std::string>{"-shared", "--eh-frame-hdr", "-L/some dir"}));
  EXPECT_FALSE(replay_driver_answer(key + "x")) << "another key has no replay";

  test::write_file(probed, {'1'}); // a path that was absent appears
  EXPECT_FALSE(replay_driver_answer(key)) << "a path the driver found absent now exists";
  keep_driver_answer(key, answer_probing(probed));
  EXPECT_TRUE(replay_driver_answer(key));
  test::write_file(probed, {'1', '2'}); // the file changes
  EXPECT_FALSE(replay_driver_answer(key)) << "a file the driver read changed";
}

TEST(DriverReplay, TornOrForeignFilesAreNeverReplayed) {
  ReplayDir replays;
  std::string key = driver_replay_key("/usr/lib/llvm-22/bin/clang", "x86_64-pc-linux-gnu", {"clang", "-shared"});
  std::string probed = test::temp_dir();
  keep_driver_answer(key, answer_probing(probed));
  std::string file = replays.only_file();
  test::Bytes whole = test::read_file(file);
  ASSERT_TRUE(replay_driver_answer(key));
  for (std::size_t cut : {whole.size() - 1, whole.size() - 3, whole.size() / 2, std::size_t(0)}) {
    test::write_file(file, test::Bytes(whole.begin(), whole.begin() + cut));
    EXPECT_FALSE(replay_driver_answer(key)) << "cut at " << cut;
  }
  test::write_file(file, test::Bytes(300, 'A'));
  EXPECT_FALSE(replay_driver_answer(key));
  ::setenv("HOTLINK_DRIVER_REPLAYS", "off", 1);
  keep_driver_answer(key, answer_probing(probed));
  EXPECT_FALSE(replay_driver_answer(key)) << "off keeps and replays nothing";
}

TEST(DriverReplay, ACliLinkWithAReplayNeedsNoDriverModule) {
  std::string dir = test::temp_dir();
  std::string obj = host_kernel_object(dir), cli = test::bin_dir() + "/hotlink";
  std::string replays = dir + "/replays";
  test::RunOptions first{{"HOTLINK_DRIVER_REPLAYS=" + replays}, 60, {}};
  test::Run r = test::run({cli, "link", "-o", dir + "/a.so", obj}, first);
  ASSERT_EQ(r.code, 0) << r.err;
  auto files = test::files_in(replays);
  ASSERT_EQ(files.size(), 1u);
  std::string file = replays + "/" + files[0];
  std::ifstream in(file, std::ios::binary);
  std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(body.find("/usr/lib/gcc/x86_64-linux-gnu"), std::string::npos)
      << "the GCC installations' directory is among the paths that invalidate the answer";

  // With the replay, no module is needed, and the artifact is the same.
  test::RunOptions replayed{{"HOTLINK_DRIVER_REPLAYS=" + replays, "HOTLINK_DRIVER_MODULE=/nonexistent/lib.so"}, 60, {}};
  ::mkdir((dir + "/b").c_str(), 0755);
  r = test::run({cli, "link", "-o", dir + "/b/a.so", obj}, replayed);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::read_file(dir + "/a.so"), test::read_file(dir + "/b/a.so"));
  test::Run loaded = test::run({cli, "verify", "--load", dir + "/b/a.so"});
  EXPECT_EQ(loaded.code, 0) << loaded.err;

  // A replay whose paths changed is not used: the module is needed again,
  // and its absence is an error that names it and what to do.
  std::string stale = body;
  std::size_t at = stale.find(std::string("S-\x1f/"));
  ASSERT_NE(at, std::string::npos) << "the driver probed paths that do not exist";
  stale.replace(at, 2, "Sf 1 2.3 4 5");
  std::ofstream(file, std::ios::binary | std::ios::trunc) << stale;
  r = test::run({cli, "link", "-o", dir + "/c.so", obj}, replayed);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("libhotlink-driver.so"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HOTLINK_DRIVER_MODULE"), std::string::npos) << r.err;
  EXPECT_FALSE(test::exists(dir + "/c.so")) << "no artifact after a failed link";
}

TEST(DriverReplay, TheCliDoesNotMapLibclangCpp) {
  test::Run r = test::run({"/usr/bin/ldd", test::bin_dir() + "/hotlink"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("libclang-cpp"), std::string::npos) << r.out;
}
