// The hotlink CLI as a script would use it: exit codes 0/1/2, --json, and
// the artifact on disk.
#include "exports/symbols.h"
#include "linker/linker.h"
#include "test/support.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

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

} // namespace
} // namespace hotlink
