// The hotlink CLI as a script would use it: exit codes 0/1/2, --json, and
// the artifact on disk.
#include "hotlink/symbols.h"
#include "hotlink/link.h"
#include "test/support.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <thread>

namespace hotlink {
namespace {

std::string hotlink_bin() { return test::bin_dir() + "/hotlink"; }

std::string object_file(const std::string &triple, const std::string &src) {
  std::string p = test::temp_dir() + "/k.o";
  test::write_file(p, test::compile_c(triple, src));
  return p;
}

TEST(Cli, LinksAWindowsDllWithExports) {
  std::string in = object_file("x86_64-pc-windows-msvc", test::halide_style_kernel());
  std::string out = test::temp_dir() + "/kernel.dll";
  test::Run r = test::run({hotlink_bin(), "link", "--target", "x86_64-pc-windows-msvc", "-o", out,
                           "--export", "f", "--export", "f_argv", "--export", "f_metadata", in});
  ASSERT_EQ(r.code, 0) << r.err;
  test::Bytes dll = test::read_file(out);
  auto info = exports::read_artifact(dll.data(), dll.size(), out);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->exports, (std::vector<std::string>{"f", "f_argv", "f_metadata"}));
}

TEST(Cli, JsonReportsResultAndTimings) {
  std::string in = object_file(host_target(), "int f(int x) { return x; }");
  std::string out = test::temp_dir() + "/k.so";
  test::Run r = test::run({hotlink_bin(), "link", "-o", out, "--export", "f", "--json", in});
  ASSERT_EQ(r.code, 0) << r.err;
  auto v = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(v)) << r.out;
  auto *o = v->getAsObject();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->getBoolean("ok"), true);
  EXPECT_EQ(o->getString("artifact"), llvm::StringRef(out));
  EXPECT_EQ(o->getString("executed_by"), llvm::StringRef("in-process"));
  ASSERT_NE(o->getObject("timings_ms"), nullptr);
  EXPECT_GT(*o->getObject("timings_ms")->getNumber("total"), 0.0);
  EXPECT_TRUE(test::exists(out));
}

TEST(Cli, LinkFailureExitsOneWithStructuredError) {
  std::string in = object_file("x86_64-pc-windows-msvc", "int nope(void); int f(void) { return nope(); }");
  std::string out = test::temp_dir() + "/k.dll";
  test::Run r = test::run({hotlink_bin(), "link", "--target", "x86_64-pc-windows-msvc", "-o", out,
                           "--export", "f", "--json", in});
  EXPECT_EQ(r.code, 1);
  auto v = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(v)) << r.out;
  auto *err = v->getAsObject()->getObject("error");
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->getString("code"), llvm::StringRef("undefined-symbol"));
  EXPECT_EQ(err->getString("symbol"), llvm::StringRef("nope"));
  EXPECT_FALSE(test::exists(out));
}

TEST(Cli, BadInputAndUsageExitTwo) {
  std::string out = test::temp_dir() + "/k.so";
  EXPECT_EQ(test::run({hotlink_bin(), "link", "-o", out, "/nonexistent.o"}).code, 2);
  EXPECT_EQ(test::run({hotlink_bin(), "link", "-o", out}).code, 2);           // no inputs
  EXPECT_EQ(test::run({hotlink_bin(), "link", "--bogus", "x.o"}).code, 2);    // unknown flag
  EXPECT_EQ(test::run({hotlink_bin(), "link", "--threads", "0", "-o", out, "x.o"}).code, 2);
  test::Run r = test::run({hotlink_bin(), "link", "--target", "sparc-sun-solaris", "-o", out,
                           object_file(host_target(), "int f;")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unsupported target"), std::string::npos) << r.err;
  EXPECT_EQ(test::run({hotlink_bin(), "frobnicate"}).code, 2);
  EXPECT_FALSE(test::exists(out));
}

// A named FIFO as an input hung even with a writer: hotlink read it, then
// lld opened it again. ld.lld (and clang -shared -fuse-ld=lld) link it; so
// does /dev/stdin.
TEST(Cli, LinksAFifoAndStandardInput) {
  std::string obj = object_file(host_target(), "int f(int x) { return x + 1; }");
  std::string dir = test::temp_dir(), fifo = dir + "/k.fifo", out = dir + "/k.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { test::write_file(fifo, test::read_file(obj)); });
  test::RunOptions o;
  o.timeout_seconds = 60;
  test::Run r = test::run({hotlink_bin(), "link", "-o", out, "--export", "f", fifo}, o);
  writer.join();
  ASSERT_FALSE(r.timed_out) << "the link of a FIFO hung";
  ASSERT_EQ(r.code, 0) << r.err;
  test::Bytes so = test::read_file(out);
  auto info = exports::read_artifact(so.data(), so.size(), out);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->exports, std::vector<std::string>{"f"});

  std::string from_stdin = test::temp_dir() + "/k.so"; // the same soname: the same bytes
  test::Run s = test::run({"/bin/sh", "-c", "exec '" + hotlink_bin() + "' link -o '" + from_stdin +
                                                "' --export f /dev/stdin < '" + obj + "'"},
                          o);
  ASSERT_FALSE(s.timed_out) << "the link of /dev/stdin hung";
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(test::read_file(from_stdin), so);
}

// `-l ""` made lld swallow the next argument ("unable to find library
// -l-lm"); an empty library name is refused, naming the flag.
TEST(Cli, AnEmptyLibraryNameIsRefused) {
  std::string obj = object_file(host_target(), "int f(int x) { return x + 1; }");
  std::string out = test::temp_dir() + "/k.so";
  test::Run r = test::run({hotlink_bin(), "link", "-o", out, "-l", "", "-l", "m", obj});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("-l"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("library name is empty"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("-l-lm"), std::string::npos) << r.err;
  EXPECT_FALSE(test::exists(out));
}

TEST(Cli, HelpExitsZero) {
  test::Run r = test::run({hotlink_bin(), "link", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--export NAME"), std::string::npos);
  EXPECT_EQ(test::run({hotlink_bin(), "--help"}).code, 0);
}

TEST(Cli, IsolatedLinkRunsInAWorker) {
  std::string in = object_file(host_target(), "int f(int x) { return x; }");
  std::string out = test::temp_dir() + "/k.so";
  test::Run r = test::run({hotlink_bin(), "link", "--isolated", "-o", out, "--export", "f", "--json", in});
  ASSERT_EQ(r.code, 0) << r.err;
  auto v = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(v));
  EXPECT_EQ(v->getAsObject()->getString("executed_by"), llvm::StringRef("worker"));
}

const std::string kMetaKernel = test::metadata_kernel(1);

TEST(VerifyCli, AcceptsRefusesAndExplains) {
  std::string so = test::temp_dir() + "/k.so";
  test::write_file(so, test::compile_so("x86_64-linux-gnu", kMetaKernel));
  std::string bin = hotlink_bin();
  test::Run ok = test::run({bin, "verify", so, "--expect", "f", "--expect", "f_metadata"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  test::Run missing = test::run({bin, "verify", so, "--expect", "g"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("missing-export"), std::string::npos) << missing.err;
  test::Run hash = test::run({bin, "verify", so, "--sha256", std::string(64, '0')});
  EXPECT_EQ(hash.code, 1);
  EXPECT_NE(hash.err.find("hash-mismatch"), std::string::npos);
  std::string obj = test::temp_dir() + "/k.o";
  test::write_file(obj, test::compile_c("x86_64-linux-gnu", "int f(void){return 1;}"));
  EXPECT_NE(test::run({bin, "verify", obj}).err.find("not-a-shared-object"), std::string::npos);
  EXPECT_EQ(test::run({bin, "verify"}).code, 2);
  EXPECT_EQ(test::run({bin, "verify", so, "--sha256", "xyz"}).code, 2);
  EXPECT_EQ(test::run({bin, "verify", "/nonexistent.so"}).code, 2);
}

// The CLI is a consumer of libhotlink.so like any other: a command that
// links nothing (verify, exports of a host object, cache) maps no libLLVM,
// lld or libclang-cpp; `link` loads the linker module, and libLLVM with it,
// when it links.
TEST(VerifyCli, OnlyACommandThatLinksMapsTheLinker) {
  std::string bin = hotlink_bin();
  test::Run needed = test::run({"/usr/bin/ldd", bin});
  ASSERT_EQ(needed.code, 0) << needed.err;
  EXPECT_NE(needed.out.find("libhotlink.so"), std::string::npos) << needed.out;
  EXPECT_EQ(needed.out.find("libLLVM"), std::string::npos) << needed.out;
  std::string so = test::temp_dir() + "/k.so";
  test::write_file(so, test::compile_so("x86_64-linux-gnu", kMetaKernel));
  // LD_DEBUG=files: each library the dynamic loader maps, dlopen's too.
  test::RunOptions debug;
  debug.env = {"LD_DEBUG=files"};
  auto mapped = [](const test::Run &r) {
    std::string names;
    std::istringstream lines(r.err);
    std::set<std::string> found;
    for (std::string line; std::getline(lines, line);)
      for (const char *lib : {"libLLVM", "liblld", "libclang-cpp", "libhotlink-linker"})
        if (line.find("file=") != std::string::npos && line.find(lib) != std::string::npos)
          found.insert(lib);
    for (const std::string &lib : found)
      names += (names.empty() ? "" : " ") + lib;
    return names;
  };
  test::Run v = test::run({bin, "verify", so, "--expect", "f", "--load"}, debug);
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_EQ(mapped(v), "");
  test::Run c = test::run({bin, "cache", "stats", "--dir", test::temp_dir() + "/no-cache"}, debug);
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(mapped(c), "");
  std::string obj = object_file(host_target(), "int f(int x) { return x; }");
  test::Run l = test::run({bin, "link", "-o", test::temp_dir() + "/l.so", "--export", "f", obj}, debug);
  EXPECT_EQ(l.code, 0) << l.err;
  EXPECT_EQ(mapped(l), "libLLVM libhotlink-linker");
}

// A build host checks what it linked for other targets before shipping
// it: format, arch and exports against --target, and for Mach-O what dyld
// needs (a page whose bytes changed after signing is refused).
TEST(VerifyCli, ChecksArtifactsForAnotherTarget) {
  std::string bin = hotlink_bin();
  std::string dll = test::temp_dir() + "/k.dll", dylib = test::temp_dir() + "/k.dylib";
  std::string win = object_file("x86_64-pc-windows-msvc", "int f(int x) { return x + 1; }");
  ASSERT_EQ(test::run({bin, "link", "--target", "x86_64-pc-windows-msvc", "--export", "f", "-o", dll, win}).code, 0);
  std::string mac = object_file("arm64-apple-macos", "int f(int x) { return x + 1; }");
  ASSERT_EQ(test::run({bin, "link", "--target", "arm64-apple-macos", "--export", "f", "-o", dylib, mac}).code, 0);

  test::Run foreign = test::run({bin, "verify", dll, "--expect", "f"});
  EXPECT_EQ(foreign.code, 1); // not this host's format
  // The fix is --target, not "link it for the host's target".
  EXPECT_NE(foreign.err.find("--target x86_64-pc-windows-msvc"), std::string::npos) << foreign.err;
  test::Run ok = test::run({bin, "verify", dll, "--target", "x86_64-pc-windows-msvc", "--expect", "f"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  test::Run missing = test::run({bin, "verify", dll, "--target", "x86_64-pc-windows-msvc", "--expect", "g"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("missing-export"), std::string::npos) << missing.err;
  test::Run arch = test::run({bin, "verify", dll, "--target", "aarch64-pc-windows-msvc"});
  EXPECT_EQ(arch.code, 1);
  EXPECT_NE(arch.err.find("arch-mismatch"), std::string::npos) << arch.err;

  EXPECT_EQ(test::run({bin, "verify", dylib, "--target", "arm64-apple-macos", "--expect", "_f"}).code, 0);
  test::Bytes bytes = test::read_file(dylib);
  ASSERT_GT(bytes.size(), 0x4000u);
  bytes[0x4000 - 1] ^= 0xff; // inside the first signed page
  std::string damaged = test::temp_dir() + "/damaged.dylib";
  test::write_file(damaged, bytes);
  test::Run refused = test::run({bin, "verify", damaged, "--target", "arm64-apple-macos"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("LC_CODE_SIGNATURE"), std::string::npos) << refused.err;

  EXPECT_EQ(test::run({bin, "verify", dll, "--target", "x86_64-pc-windows-msvc", "--load"}).code, 2);
  EXPECT_EQ(test::run({bin, "verify", dll, "--target", "sparc-sun-solaris"}).code, 2);
}

TEST(VerifyCli, LoadReadsTheMetadataAndChecksTheAbi) {
  std::string so = test::temp_dir() + "/k.so";
  test::write_file(so, test::compile_so("x86_64-linux-gnu", kMetaKernel));
  std::string bin = hotlink_bin();
  test::Run r = test::run({bin, "verify", so, "--load", "--json"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  auto v = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(v)) << r.out;
  auto *meta = v->getAsObject()->getArray("metadata");
  ASSERT_TRUE(meta && meta->size() == 1);
  auto *arg0 = (*meta)[0].getAsObject()->getArray("arguments");
  ASSERT_TRUE(arg0 && arg0->size() == 2);
  EXPECT_EQ((*arg0)[0].getAsObject()->getString("name"), llvm::StringRef("input"));
  EXPECT_EQ(v->getAsObject()->getString("sha256")->size(), 64u);
  EXPECT_EQ(test::run({bin, "verify", so, "--load", "--abi", "input:1:2:1:8,scale:0:0:2:32"}).code, 0);
  test::Run bad = test::run({bin, "verify", so, "--load", "--abi", "input:1:3:1:8,scale:0:0:2:32"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("abi-mismatch"), std::string::npos) << bad.err;
  EXPECT_EQ(test::run({bin, "verify", so, "--abi", "input:1:2:1:8"}).code, 2); // needs --load
}

TEST(VerifyCli, LoadPrintsTheMetadataInTextMode) {
  std::string so = test::temp_dir() + "/k.so";
  test::write_file(so, test::compile_so("x86_64-linux-gnu", kMetaKernel));
  test::Run r = test::run({hotlink_bin(), "verify", so, "--load"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("f_metadata: pipeline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 arguments"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("input +input +uint8, 2 dimensions"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("scale +scalar +float32, 0 dimensions"))) << r.out;
}

// --- Linker habits -----------------------------------------------------------

TEST(CliHabits, VersionNamesHotlinkLldAndLlvm) {
  for (const char *spelling : {"--version", "version"}) {
    test::Run r = test::run({hotlink_bin(), spelling});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("hotlink " + version()), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(lld_version()), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("LLVM: " + llvm_version()), std::string::npos) << r.out;
  }
  EXPECT_EQ(test::run({hotlink_bin(), "link", "--version"}).code, 0);
}

TEST(CliHabits, VerbosePrintsLldsCommandLineAndTimes) {
  std::string in = object_file(host_target(), "int f(int x) { return x; }");
  std::string out = test::temp_dir() + "/k.so";
  test::Run r = test::run({hotlink_bin(), "link", "-v", "--export", "f", "-o", out, in});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string all = r.out + r.err;
  EXPECT_NE(all.find("ld.lld"), std::string::npos) << all;
  EXPECT_NE(all.find(in), std::string::npos) << all;
  EXPECT_NE(all.find(" ms"), std::string::npos) << all;
}

// A response file with a quoted path that has spaces, -shared, -oFILE and
// --soname=NAME: a command line copied from a linker invocation.
TEST(CliHabits, ResponseFilesAndLinkerSpellings) {
  std::string dir = test::temp_dir() + "/with space";
  std::filesystem::create_directories(dir);
  std::string in = dir + "/my kernel.o";
  test::write_file(in, test::compile_c(host_target(), "int f(int x) { return x; }"));
  std::string out = dir + "/lib k.so";
  std::string rsp = test::temp_dir() + "/args.rsp";
  std::string text = "-shared --export=f\n\"" + in + "\" --soname=libk.so.1\n'-o" + out + "'\n";
  test::write_file(rsp, test::Bytes(text.begin(), text.end()));
  test::Run r = test::run({hotlink_bin(), "link", "@" + rsp});
  ASSERT_EQ(r.code, 0) << r.err;
  test::Bytes so = test::read_file(out);
  auto info = exports::read_artifact(so.data(), so.size(), out);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->exports, std::vector<std::string>{"f"});
  test::Run d = test::run({HOTLINK_TEST_LLVM_READELF, "-d", out});
  EXPECT_NE(d.out.find("[libk.so.1]"), std::string::npos) << d.out;

  std::string out2 = test::temp_dir() + "/k2.so";
  EXPECT_EQ(test::run({hotlink_bin(), "link", "--output", out2, "--export", "f", in}).code, 0);
  EXPECT_TRUE(test::exists(out2));
  std::string out3 = test::temp_dir() + "/k3.so";
  EXPECT_EQ(test::run({hotlink_bin(), "link", "--output=" + out3, "--export=f", in}).code, 0);
  EXPECT_TRUE(test::exists(out3));
}

TEST(CliHabits, ErrorsAboutTheOutputNameTheOutput) {
  std::string in = object_file(host_target(), "int f(int x) { return x; }");
  std::string out = test::temp_dir() + "/no/such/dir/k.so";
  test::Run r = test::run({hotlink_bin(), "link", "--export", "f", "-o", out, in});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("output '" + out + "'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("input '" + out + "'"), std::string::npos) << r.err;
}

// `implib -o` and `sign -o` write as a link writes its output: a path that
// is not a regular file (here a link to /dev/null) is written through,
// never replaced by a rename.
TEST(CliHabits, OutputsThatAreNotRegularFilesAreWrittenInPlace) {
  std::string dir = test::temp_dir(), bin = hotlink_bin();
  std::string def = "LIBRARY foo.dll\nEXPORTS\n  a\n";
  test::write_file(dir + "/foo.def", test::Bytes(def.begin(), def.end()));
  std::string so = dir + "/k.so";
  test::write_file(so, test::compile_so("x86_64-linux-gnu", kMetaKernel));
  ASSERT_EQ(test::run({bin, "keygen", "-o", dir + "/key"}).code, 0);
  for (const char *name : {"/null.lib", "/null.sig"})
    ASSERT_EQ(::symlink("/dev/null", (dir + name).c_str()), 0);
  test::Run implib = test::run({bin, "implib", "--def", dir + "/foo.def", "--machine", "x64", "-o", dir + "/null.lib"});
  EXPECT_EQ(implib.code, 0) << implib.err;
  test::Run sign = test::run({bin, "sign", "--key", dir + "/key", so, "-o", dir + "/null.sig"});
  EXPECT_EQ(sign.code, 0) << sign.err;
  for (const char *name : {"/null.lib", "/null.sig"}) {
    struct stat st;
    ASSERT_EQ(::lstat((dir + name).c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << name << " was replaced";
  }
  struct stat null;
  ASSERT_EQ(::stat("/dev/null", &null), 0);
  EXPECT_TRUE(S_ISCHR(null.st_mode));
  // A regular path gets the file, as before.
  EXPECT_EQ(test::run({bin, "implib", "--def", dir + "/foo.def", "--machine", "x64", "-o", dir + "/foo.lib"}).code, 0);
  EXPECT_GT(test::read_file(dir + "/foo.lib").size(), 8u);
}

TEST(CliHabits, InspectingACacheThatDoesNotExistCreatesNothing) {
  std::string parent = test::temp_dir();
  for (const char *action : {"stats", "verify", "prune", "clear"}) {
    std::string dir = parent + "/typo-" + action + "/cache";
    test::Run r = test::run({hotlink_bin(), "cache", action, "--dir", dir});
    EXPECT_EQ(r.code, 2) << action << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(dir), std::string::npos) << r.err;
    EXPECT_FALSE(test::exists(parent + "/typo-" + action)) << action;
  }
  // A directory that exists but is no cache is not made one either.
  test::Run r = test::run({hotlink_bin(), "cache", "stats", "--dir", parent});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(test::files_in(parent).size(), 0u);
  // link --cache is what makes one.
  std::string in = object_file(host_target(), "int f(int x) { return x; }");
  std::string cache = parent + "/made";
  ASSERT_EQ(test::run({hotlink_bin(), "link", "--export", "f", "--cache", cache, "-o", parent + "/k.so", in}).code, 0);
  EXPECT_EQ(test::run({hotlink_bin(), "cache", "stats", "--dir", cache}).code, 0);
}

TEST(CliHabits, CompanionsAreNotExecutableArtifactsAre) {
  std::string in = object_file("x86_64-pc-windows-msvc", "__declspec(dllexport) int f(int x) { return x; }");
  std::string dir = test::temp_dir();
  mode_t old = ::umask(022);
  test::Run r = test::run({hotlink_bin(), "link", "--target", "x86_64-pc-windows-msvc", "--export", "f", "-o",
                           dir + "/k.dll", "--def", dir + "/k.def", "--implib", dir + "/k.lib", in});
  ::umask(old);
  ASSERT_EQ(r.code, 0) << r.err;
  auto mode = [](const std::string &p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 0777;
  };
  EXPECT_EQ(mode(dir + "/k.dll"), 0755u);
  EXPECT_EQ(mode(dir + "/k.def"), 0644u);
  EXPECT_EQ(mode(dir + "/k.lib"), 0644u);
}

} // namespace
} // namespace hotlink
