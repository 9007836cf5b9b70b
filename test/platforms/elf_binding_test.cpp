// How an ELF artifact's exports bind (issue 26): exported variables are one
// variable for the library and a host that has a copy relocation of them
// (as with `clang -shared`); code built as PIE that reaches an exported
// variable PC-relative still links, with the variable bound inside and a
// warning saying what a host will see; weak definitions stay
// interposable. Every test runs the artifact in a real host.
#include "hotlink/link_service.h"
#include "support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace hotlink {
namespace {

using test::Bytes;

const std::string kGcc = "/usr/bin/gcc";
const std::string kPython = "/usr/bin/python3";
const std::string kLibDir = "/usr/lib/x86_64-linux-gnu";

test::Run run(const std::vector<std::string> &argv, std::vector<std::string> env = {}) {
  test::RunOptions o;
  o.env = std::move(env);
  o.timeout_seconds = 120;
  return test::run(argv, o);
}

Bytes compile(const std::string &source, const std::string &pic) {
  return test::compile_with({HOTLINK_TEST_CLANG, "-O2", pic, "-x", "c", "-c"}, source);
}

// Links `objects` with --policy all into DIR/lib<name>.so.
LinkResult link_all(const std::string &dir, const std::string &name, const std::vector<Bytes> &objects) {
  LinkRequest req;
  for (std::size_t i = 0; i < objects.size(); ++i)
    req.inputs.push_back(Input::memory(name + std::to_string(i) + ".o", objects[i]));
  req.exports = ExportPolicy::all();
  req.output_path = dir + "/lib" + name + ".so";
  LinkService svc;
  return svc.link(req);
}

// Builds `source` as a host of DIR/lib<name>.so with `compiler` (the
// distribution's default: PIE) and runs it.
test::Run run_host(const std::string &compiler, const std::string &dir, const std::string &name,
                   const std::string &source) {
  std::string src = dir + "/host-" + name + ".c", exe = dir + "/host-" + name;
  std::ofstream(src) << source;
  test::Run built = run({compiler, src, "-o", exe, "-L" + dir, "-l" + name, "-Wl,-rpath," + dir});
  EXPECT_EQ(built.code, 0) << built.err;
  return run({exe});
}

std::vector<std::string> warned_symbols(const LinkResult &r) {
  std::vector<std::string> out;
  for (const Diagnostic &d : r.diagnostics)
    if (d.severity == Severity::Warning && !d.symbol.empty())
      out.push_back(d.symbol);
  return out;
}

const char *kCounterHost = R"C(
#include <stdio.h>
extern int counter;
int bump(void);
int main(void) {
  counter = 100;
  int seen = bump();
  printf("host %d, library %d\n", counter, seen);
  return 0;
}
)C";

// The issue's example: a PIE host built by Debian's gcc (and one by
// clang-22) takes a copy relocation of `counter`; the library must use
// that copy, as a `clang -shared` library does.
TEST(Binding, AnExportedVariableIsOneVariableForTheLibraryAndAPieHost) {
  std::string dir = test::temp_dir();
  LinkResult r = link_all(dir, "counter", {compile("int counter = 5;\nint bump(void) { return ++counter; }\n", "-fPIC")});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(warned_symbols(r).empty());
  for (const std::string &cc : {kGcc, std::string(HOTLINK_TEST_CLANG)}) {
    test::Run host = run_host(cc, dir, "counter", kCounterHost);
    EXPECT_EQ(host.code, 0) << host.err;
    EXPECT_EQ(host.out, "host 101, library 101\n") << cc;
  }
}

// Code built as PIE reaches its variable PC-relative, which a shared
// object can only bind to itself: it links, the variable is bound inside,
// and the warning names it and says what a host with a copy relocation
// sees (which the host here shows: its own copy).
TEST(Binding, APieVariableIsBoundInsideWithAWarningThatSaysWhatAHostSees) {
  std::string dir = test::temp_dir();
  LinkResult r = link_all(dir, "piedata",
                          {compile("int pie_data = 1;\nint get_pie(void) { return pie_data; }\n"
                                   "void set_pie(int v) { pie_data = v; }\n",
                                   "-fPIE")});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(warned_symbols(r), std::vector<std::string>{"pie_data"});
  auto warning = std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                              [](const Diagnostic &d) { return d.symbol == "pie_data"; });
  ASSERT_NE(warning, r.diagnostics.end());
  EXPECT_NE(warning->message.find("copy relocation"), std::string::npos) << warning->message;
  EXPECT_NE(warning->message.find("-fPIC"), std::string::npos) << warning->message;
  // Through the library's functions all is well...
  test::Run py = run({kPython, "-c",
                      "import ctypes, sys\nl = ctypes.CDLL(sys.argv[1])\nl.set_pie(7)\nprint(l.get_pie())\n",
                      dir + "/libpiedata.so"});
  EXPECT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(py.out, "7\n");
  // ...and a host using the variable directly has its own copy, as said.
  test::Run host = run_host(kGcc, dir, "piedata",
                            "#include <stdio.h>\nextern int pie_data;\nint get_pie(void);\n"
                            "int main(void) { pie_data = 100; printf(\"%d %d\\n\", pie_data, get_pie()); }\n");
  EXPECT_EQ(host.out, "100 1\n") << host.err;
}

// The dynamic list that keeps variables preemptible keeps weak
// definitions preemptible too: a host's strong definition wins, as before.
// An absolute 32-bit reference (R_X86_64_32, code built with
// -mcmodel=small and no -fPIC) to an exported variable: binding the
// variable inside cannot satisfy it, so no warning says it was bound; the
// refusal names the object (not "member an input") and calls the
// reference absolute (not PC-relative).
TEST(Binding, AnAbsoluteReferenceIsRefusedForWhatItIs) {
  Bytes abs32 = test::assemble("x86_64-linux-gnu", R"(
.data
.globl zed
.type zed,@object
.size zed,4
zed: .long 5
.text
.globl f
.type f,@function
f: movl $zed, %eax
  movl (%rax), %eax
  ret
)");
  Bytes dup = test::assemble("x86_64-linux-gnu", ".text\n.globl f\n.type f,@function\nf: ret\n");
  std::string dir = test::temp_dir();
  LinkResult r = link_all(dir, "abs", {abs32});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(warned_symbols(r).empty()) << "a warning said zed was bound inside";
  const std::string &m = r.error->message;
  EXPECT_EQ(r.error->symbol, "zed");
  EXPECT_NE(m.find("'abs0.o' refers to 'zed'"), std::string::npos) << m;
  EXPECT_NE(m.find("R_X86_64_32, an absolute address"), std::string::npos) << m;
  EXPECT_EQ(m.find("PC-relative"), std::string::npos) << m;
  EXPECT_EQ(m.find("member an input"), std::string::npos) << m;
  EXPECT_EQ(r.error->hint, "recompile the object with -fPIC");

  // With a duplicate definition as well, lld's duplicate is what is said.
  LinkResult both = link_all(dir, "both", {abs32, dup});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error->code, ErrorCode::DuplicateSymbol) << both.error->to_string();
  EXPECT_NE(both.error->message.find("duplicate symbol: f"), std::string::npos) << both.error->message;
}

TEST(Binding, WeakDefinitionsStayInterposableBesideExportedVariables) {
  std::string dir = test::temp_dir();
  LinkResult r = link_all(dir, "hook",
                          {compile("__attribute__((weak)) int hook(void) { return 1; }\n"
                                   "int call_hook(void) { return hook(); }\nint hook_calls = 0;\n",
                                   "-fPIC")});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  test::Run host = run_host(kGcc, dir, "hook",
                            "#include <stdio.h>\nint hook(void) { return 2; }\nint call_hook(void);\n"
                            "int main(void) { printf(\"hook %d\\n\", call_hook()); }\n");
  EXPECT_EQ(host.out, "hook 2\n") << host.err;
}

// Debian's libsqlite3.a (PIE) as a shared object exporting everything:
// its documented global sqlite3_temp_directory is named in a warning, and
// the library works.
TEST(Binding, SqliteFromItsArchiveWarnsAboutItsGlobalsAndWorks) {
  std::string dir = test::temp_dir();
  LinkRequest req;
  req.inputs.push_back(Input::file(kLibDir + "/libsqlite3.a"));
  req.exports = ExportPolicy::all();
  req.output_path = dir + "/libsqlite3.so";
  LinkService svc;
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  std::vector<std::string> warned = warned_symbols(r);
  EXPECT_NE(std::find(warned.begin(), warned.end(), "sqlite3_temp_directory"), warned.end());
  const char *py = R"PY(
import ctypes, sqlite3, sys
lib = ctypes.CDLL(sys.argv[1])
lib.sqlite3_libversion.restype = ctypes.c_char_p
db = ctypes.c_void_p()
assert lib.sqlite3_open(b":memory:", ctypes.byref(db)) == 0
assert lib.sqlite3_exec(db, b"create table t(x); insert into t values (42);", None, None, None) == 0
print(lib.sqlite3_libversion().decode() == sqlite3.sqlite_version, lib.sqlite3_close(db))
)PY";
  test::Run p = run({kPython, "-c", py, dir + "/libsqlite3.so"});
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, "True 0\n") << p.err;
}

} // namespace
} // namespace hotlink
