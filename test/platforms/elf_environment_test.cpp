// ELF links get the runtime environment a compiler driver links (issue
// 16): each test runs what hotlink linked in a real consumer (a C host
// through glibc's loader, /usr/bin/python3's ctypes and zlib module,
// qemu-aarch64 for the cross target) and checks results a user would see.
#include "hotlink/symbols.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/load.h"
#include "test/support.h"

#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Bitcode/LLVMBitCodes.h"
#include "llvm/Bitstream/BitstreamReader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace hotlink {
namespace {

using test::Bytes;

const std::string kPython = "/usr/bin/python3";
const std::string kGcc = "/usr/bin/gcc";
const std::string kReadelf = HOTLINK_TEST_LLVM_READELF;
const std::string kQemu = "/usr/bin/qemu-aarch64";
const std::string kArm64Root = "/usr/aarch64-linux-gnu";

Bytes compile_cxx(const std::string &triple, const std::string &source,
                  const std::vector<std::string> &flags = {}) {
  std::vector<std::string> args = {HOTLINK_TEST_CLANG, "--target=" + triple, "-O1", "-x", "c++",
                                   "-std=c++17", "-fPIC", "-c"};
  args.insert(args.end(), flags.begin(), flags.end());
  return test::compile_with(args, source);
}

// A host program for `triple` (clang-22, -fuse-ld=lld); returns its path.
std::string host_program(const std::string &triple, const std::string &source) {
  Bytes exe = test::compile_with({HOTLINK_TEST_CLANG, "--target=" + triple, "-O1", "-x", "c",
                                  "-fuse-ld=lld", "-Wall"},
                                 source, ".exe");
  std::string path = test::temp_dir() + "/host";
  test::write_file(path, exe);
  ::chmod(path.c_str(), 0755);
  return path;
}

LinkResult link_to(const std::string &path, LinkRequest req) {
  req.output_path = path;
  LinkService service;
  return service.link(req);
}

LinkRequest request_of(const std::string &target, const Bytes &obj, std::vector<std::string> exports) {
  LinkRequest req;
  req.target = target;
  req.inputs.push_back(Input::memory("kernel.o", obj));
  req.exports = ExportPolicy::list(std::move(exports));
  return req;
}

std::string readelf(const std::vector<std::string> &flags, const std::string &file) {
  std::vector<std::string> argv = {kReadelf};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(file);
  return test::run(argv).out;
}

test::Run run(const std::vector<std::string> &argv, std::vector<std::string> env = {}) {
  test::RunOptions o;
  o.env = std::move(env);
  o.timeout_seconds = 120;
  return test::run(argv, o);
}

// --- C: glibc symbol versions -----------------------------------------------

const char *kLibcKernel = R"C(
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int resolve(const char *path, char *out, int size) {
  char *r = realpath(path, NULL);
  if (!r) return -errno;
  strncpy(out, r, size - 1);
  out[size - 1] = 0;
  free(r);
  return 0;
}
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int flag;
static void *signaller(void *arg) {
  pthread_mutex_lock(&mu);
  flag = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  return arg;
}
int wait_signal(void) {
  pthread_t t;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 10;
  flag = 0;
  pthread_mutex_lock(&mu);
  if (pthread_create(&t, 0, signaller, 0)) { pthread_mutex_unlock(&mu); return -1; }
  int rc = 0;
  while (!flag && rc == 0) rc = pthread_cond_timedwait(&cv, &mu, &ts);
  pthread_mutex_unlock(&mu);
  pthread_join(t, 0);
  return flag ? 0 : rc;
}
)C";

const char *kLibcHost = R"C(
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  int (*resolve)(const char *, char *, int) = (int (*)(const char *, char *, int))dlsym(h, "resolve");
  int (*wait_signal)(void) = (int (*)(void))dlsym(h, "wait_signal");
  char out[4096] = "";
  int rc = resolve(argv[2], out, sizeof out);
  printf("resolve %d %s\n", rc, out);
  printf("wait %d\n", wait_signal());
  dlclose(h);
  return 0;
}
)C";

const char *kLibcPython = R"PY(
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
out = ctypes.create_string_buffer(4096)
rc = lib.resolve(sys.argv[2].encode(), out, 4096)
print("resolve", rc, out.value.decode())
print("wait", lib.wait_signal())
)PY";

std::string real_path(const std::string &p) {
  char buf[4096];
  return ::realpath(p.c_str(), buf) ? buf : p;
}

TEST(Runtime, CKernelCallsGlibcWithItsSymbolVersions) {
  Bytes obj = test::compile_c(host_target(), kLibcKernel);
  std::string dir = test::temp_dir();
  LinkResult r = link_to(dir + "/libkernel.so", request_of(host_target(), obj, {"resolve", "wait_signal"}));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_NE(std::find(r.runtime.begin(), r.runtime.end(), "libc.so.6"), r.runtime.end());

  std::string v = readelf({"-V", "--dyn-syms", "-d"}, dir + "/libkernel.so");
  EXPECT_NE(v.find("Shared library: [libc.so.6]"), std::string::npos) << v;
  EXPECT_NE(v.find("realpath@GLIBC_2.3"), std::string::npos) << v;
  EXPECT_TRUE(std::regex_search(v, std::regex("pthread_cond_timedwait@GLIBC_2\\.3\\.2"))) << v;
  EXPECT_NE(v.find("File: libc.so.6"), std::string::npos) << v;
  std::string h = readelf({"-l", "-n"}, dir + "/libkernel.so");
  EXPECT_NE(h.find("GNU_EH_FRAME"), std::string::npos) << h;
  EXPECT_NE(h.find("Build ID"), std::string::npos) << h;

  // The path to resolve goes through "..", which realpath must remove.
  std::string probe = dir + "/../" + dir.substr(dir.rfind('/') + 1);
  std::string want = "resolve 0 " + real_path(dir) + "\nwait 0\n";
  test::Run c = run({host_program(host_target(), kLibcHost), dir + "/libkernel.so", probe});
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, want) << c.err;
  std::string script = test::temp_dir() + "/load.py";
  test::write_file(script, Bytes(kLibcPython, kLibcPython + std::strlen(kLibcPython)));
  test::Run py = run({kPython, script, dir + "/libkernel.so", probe});
  EXPECT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(py.out, want) << py.err;
}

// The failure the runtime environment exists for, kept visible: linked
// bare, the same kernel binds realpath's oldest version, which refuses a
// null buffer with EINVAL.
TEST(Runtime, ABareLinkBindsTheOldestVersionsAndSaysSo) {
  Bytes obj = test::compile_c(host_target(), kLibcKernel);
  std::string dir = test::temp_dir();
  LinkRequest req = request_of(host_target(), obj, {"resolve", "wait_signal"});
  req.runtime = Runtime::None;
  LinkResult r = link_to(dir + "/libbare.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(r.runtime.empty());
  std::string warnings;
  for (const Diagnostic &d : r.diagnostics)
    if (d.severity == Severity::Warning)
      warnings += d.message + "\n";
  EXPECT_NE(warnings.find("realpath"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("without symbol versions"), std::string::npos) << warnings;
  test::Run c = run({host_program(host_target(), kLibcHost), dir + "/libbare.so", dir});
  EXPECT_NE(c.out.find("resolve -22 "), std::string::npos) << c.out << c.err;
}

TEST(Runtime, WithoutACLibraryTheLinkIsBareAndTheWarningSaysWhy) {
  Bytes obj = test::compile_c(host_target(), kLibcKernel);
  LinkRequest req = request_of(host_target(), obj, {"resolve", "wait_signal"});
  req.sysroot = test::temp_dir(); // an empty sysroot: no C library in it
  LinkResult r = link_to(test::temp_dir() + "/libk.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(r.runtime.empty());
  std::string warnings;
  for (const Diagnostic &d : r.diagnostics)
    warnings += d.message + "\n";
  EXPECT_NE(warnings.find("no C library"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("realpath"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("--sysroot"), std::string::npos) << warnings;
}

// --- C++ ----------------------------------------------------------------------

const char *kCxxKernel = R"CXX(
#include <cstdlib>
#include <fcntl.h>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>
namespace {
struct Marker {
  std::string path = std::getenv("HOTLINK_MARKER") ? std::getenv("HOTLINK_MARKER") : "";
  ~Marker() {
    if (path.empty()) return;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    (void)!::write(fd, "destroyed\n", 10);
    ::close(fd);
  }
};
Marker marker;
__attribute__((noinline)) int checked(int x) {
  if (x < 0) throw std::invalid_argument("negative input " + std::to_string(x));
  return x;
}
}
extern "C" int sum_doubled(int x) {
  try {
    std::vector<int> v;
    for (int i = 0; i <= checked(x); ++i) v.push_back(2 * i);
    int s = 0;
    for (int e : v) s += e;
    return s;
  } catch (const std::invalid_argument &e) {
    return -static_cast<int>(std::string(e.what()).size());
  }
}
)CXX";

const char *kCxxHost = R"C(
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  int (*f)(int) = (int (*)(int))dlsym(h, "sum_doubled");
  printf("%d %d\n", f(4), f(-7));
  if (dlclose(h)) { printf("dlclose: %s\n", dlerror()); return 1; }
  FILE *m = fopen(argv[2], "r");
  char line[64] = "";
  if (m) { fgets(line, sizeof line, m); fclose(m); }
  printf("marker %s", m ? line : "missing\n");
  return 0;
}
)C";

const char *kCxxPython = R"PY(
import ctypes, _ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
print(lib.sum_doubled(4), lib.sum_doubled(-7))
_ctypes.dlclose(lib._handle)
print("marker", open(sys.argv[2]).read(), end="")
)PY";

// sum_doubled(4) = 0+2+4+6+8; sum_doubled(-7) = -len("negative input -7").
const std::string kCxxWant = "20 -17\nmarker destroyed\n";

TEST(Runtime, CxxKernelThrowsCatchesAndDestroysItsStatics) {
  Bytes obj = compile_cxx(host_target(), kCxxKernel);
  std::string dir = test::temp_dir();
  LinkResult r = link_to(dir + "/libcxx.so", request_of(host_target(), obj, {"sum_doubled"}));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  std::string d = readelf({"-d"}, dir + "/libcxx.so");
  EXPECT_NE(d.find("[libstdc++.so.6]"), std::string::npos) << d;

  std::string marker = dir + "/marker";
  test::Run c = run({host_program(host_target(), kCxxHost), dir + "/libcxx.so", marker},
                    {"HOTLINK_MARKER=" + marker});
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, kCxxWant) << c.err;

  // Python does not link libstdc++: the artifact must bring it.
  std::string marker2 = dir + "/marker2";
  std::string script = test::temp_dir() + "/load.py";
  test::write_file(script, Bytes(kCxxPython, kCxxPython + std::strlen(kCxxPython)));
  test::Run py = run({kPython, script, dir + "/libcxx.so", marker2}, {"HOTLINK_MARKER=" + marker2});
  EXPECT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(py.out, kCxxWant) << py.err;
}

TEST(Runtime, CxxKernelAgainstLibcxxOnRequest) {
  Bytes obj = compile_cxx(host_target(), kCxxKernel, {"-stdlib=libc++"});
  std::string dir = test::temp_dir();
  LinkRequest req = request_of(host_target(), obj, {"sum_doubled"});
  req.cxx_runtime = CxxRuntime::Libcxx;
  LinkResult r = link_to(dir + "/libcxx.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  std::string d = readelf({"-d"}, dir + "/libcxx.so");
  EXPECT_NE(d.find("[libc++.so.1]"), std::string::npos) << d;
  EXPECT_EQ(d.find("libstdc++"), std::string::npos) << d;
  std::string marker = dir + "/marker";
  test::Run c = run({host_program(host_target(), kCxxHost), dir + "/libcxx.so", marker},
                    {"HOTLINK_MARKER=" + marker});
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, kCxxWant) << c.err;
}

// --- Static libraries of the distribution ------------------------------------

const std::string kLibDir = "/usr/lib/x86_64-linux-gnu";

std::set<std::string> functions_of(const std::string &path, bool weak_too = false) {
  std::set<std::string> out;
  std::string syms = readelf({"--dyn-syms", "-W"}, path);
  std::regex line("\\s+\\d+: [0-9a-f]+\\s+\\d+ (FUNC|IFUNC)\\s+(GLOBAL|WEAK)\\s+DEFAULT\\s+\\d+ ([^@\\s]+)");
  for (std::sregex_iterator it(syms.begin(), syms.end(), line), end; it != end; ++it)
    if (weak_too || (*it)[2] == "GLOBAL")
      out.insert((*it)[3]);
  return out;
}

// zlib's version nodes, read back from the distribution's libz.so.1 (what a
// user rebuilding it from libz.a would take from zlib's sources).
std::string zlib_version_script() {
  std::string v = readelf({"-V", "--dyn-syms", "-W"}, "/lib/x86_64-linux-gnu/libz.so.1");
  std::vector<std::string> order;
  std::map<std::string, std::string> parent;
  std::map<std::string, std::vector<std::string>> names;
  std::regex def("Index: (\\d+)\\s+Cnt: \\d+\\s+Name: (\\S+)"), par("Parent 1: (\\S+)");
  std::string current;
  std::istringstream in(v);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, def) && m[1] != "1") {
      current = m[2];
      order.push_back(current);
    } else if (std::regex_search(line, m, par) && !current.empty()) {
      parent[current] = m[1];
    } else if (std::regex_search(line, m, std::regex("\\s(\\w+)@@?(ZLIB_[0-9.]+)$")) &&
               line.find(" UND ") == std::string::npos) {
      names[m[2]].push_back(m[1]);
    }
  }
  std::string s;
  for (std::size_t i = 0; i < order.size(); ++i) {
    s += order[i] + " {\n  global:\n";
    for (const std::string &n : names[order[i]])
      s += "    " + n + ";\n";
    if (i == 0)
      s += "  local: *;\n";
    s += "}" + (parent.count(order[i]) ? " " + parent[order[i]] : std::string()) + ";\n";
  }
  return s;
}

TEST(Runtime, LibzRebuiltFromItsArchiveServesPythonsZlib) {
  std::string dir = test::temp_dir();
  std::string map = dir + "/zlib.map";
  std::string script = zlib_version_script();
  ASSERT_NE(script.find("ZLIB_1.2.9"), std::string::npos) << script;
  test::write_file(map, Bytes(script.begin(), script.end()));
  LinkRequest req;
  req.inputs.push_back(Input::file(kLibDir + "/libz.a"));
  req.exports = ExportPolicy::all();
  req.elf.version_script = map;
  req.elf.soname = "libz.so.1";
  LinkResult r = link_to(dir + "/libz.so.1", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(functions_of(dir + "/libz.so.1"), functions_of("/lib/x86_64-linux-gnu/libz.so.1"));
  std::string v = readelf({"--dyn-syms", "-W"}, dir + "/libz.so.1");
  EXPECT_NE(v.find("gzopen64@@ZLIB_1.2.3.3"), std::string::npos) << v;
  EXPECT_NE(readelf({"-d"}, dir + "/libz.so.1").find("soname: [libz.so.1]"), std::string::npos);

  const char *py = R"PY(
import os, zlib
data = os.urandom(4096) * 64 + b"hotlink" * 1000
packed = zlib.compress(data, 9)
assert zlib.decompress(packed) == data
c = zlib.compressobj(6, zlib.DEFLATED, 31)  # gzip framing, through deflateInit2_
gz = c.compress(data) + c.flush()
assert zlib.decompress(gz, 31) == data
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libz.so" in l]
print(len(data), len(packed) < len(data), sorted(set(maps)))
)PY";
  test::Run p = run({kPython, "-c", py}, {"LD_LIBRARY_PATH=" + dir});
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, "269144 True ['" + real_path(dir) + "/libz.so.1']\n") << p.err;
}

TEST(Runtime, LibsodiumArchiveLinksWithDefaultFlagsAndWorks) {
  std::string dir = test::temp_dir();
  LinkRequest req;
  req.inputs.push_back(Input::file(kLibDir + "/libsodium.a"));
  req.exports = ExportPolicy::all();
  LinkResult r = link_to(dir + "/libsodium.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  // The same public functions as Debian's libsodium.so.23 (its internal
  // functions are hidden in the archive too, so `all` does not see them).
  std::set<std::string> ours = functions_of(dir + "/libsodium.so", true);
  std::set<std::string> theirs = functions_of(kLibDir + "/libsodium.so.23", true);
  EXPECT_EQ(ours, theirs);
  const char *py = R"PY(
import ctypes, hashlib, sys
s = ctypes.CDLL(sys.argv[1])
assert s.sodium_init() in (0, 1)
msg = b"hotlink links libsodium.a" * 10
out = ctypes.create_string_buffer(32)
assert s.crypto_generichash(out, 32, msg, ctypes.c_ulonglong(len(msg)), None, ctypes.c_size_t(0)) == 0
print(out.raw == hashlib.blake2b(msg, digest_size=32).digest())
)PY";
  test::Run p = run({kPython, "-c", py, dir + "/libsodium.so"});
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, "True\n") << p.err;
}

TEST(Runtime, LibzstdMembersNoSharedObjectCanHoldAreNamedAndCanBeLeftOut) {
  std::string dir = test::temp_dir();
  LinkRequest req;
  req.inputs.push_back(Input::file(kLibDir + "/libzstd.a"));
  req.exports = ExportPolicy::all();
  LinkResult refused = link_to(dir + "/libzstd.so", req);
  ASSERT_FALSE(refused.ok());
  const Error &e = *refused.error;
  EXPECT_EQ(e.code, ErrorCode::LinkFailed);
  EXPECT_EQ(e.symbol, "stderr");
  for (const char *m : {"cover.o", "fastcover.o", "zdict.o"}) {
    EXPECT_NE(e.message.find(std::string("'") + m + "'"), std::string::npos) << e.to_string();
    EXPECT_NE(e.hint.find(std::string("--exclude-member ") + m), std::string::npos) << e.to_string();
  }
  EXPECT_NE(e.message.find("no shared object can hold"), std::string::npos) << e.to_string();
  EXPECT_FALSE(test::exists(dir + "/libzstd.so"));

  req.exclude_members = {"cover.o", "fastcover.o", "libzstd.a(zdict.o)"};
  LinkResult r = link_to(dir + "/libzstd.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(std::find(r.exports.begin(), r.exports.end(), "ZDICT_trainFromBuffer"), r.exports.end());
  const char *py = R"PY(
import ctypes, os, sys
z = ctypes.CDLL(sys.argv[1])
z.ZSTD_compressBound.restype = ctypes.c_size_t
z.ZSTD_compress.restype = ctypes.c_size_t
z.ZSTD_decompress.restype = ctypes.c_size_t
data = os.urandom(1000) * 100
cap = z.ZSTD_compressBound(ctypes.c_size_t(len(data)))
dst = ctypes.create_string_buffer(cap)
n = z.ZSTD_compress(dst, ctypes.c_size_t(cap), data, ctypes.c_size_t(len(data)), 19)
back = ctypes.create_string_buffer(len(data))
m = z.ZSTD_decompress(back, ctypes.c_size_t(len(data)), dst, ctypes.c_size_t(n))
print(n < len(data), m == len(data) and back.raw == data)
)PY";
  test::Run p = run({kPython, "-c", py, dir + "/libzstd.so"});
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, "True True\n") << p.err;
}

// Debian's liblua5.4.a: the members no shared object can hold are left
// out, and the warnings say what that costs (issue 26): every name they
// defined that the rest needs, with who needs it. As warned, the artifact
// loads only into a process that defines them; an export defined only by
// a left-out member is an error naming it.
TEST(Runtime, LeavingLuaMembersOutNamesWhatTheRestLoses) {
  ASSERT_TRUE(test::exists(kLibDir + "/liblua5.4.a")) << "needs liblua5.4-dev";
  std::string dir = test::temp_dir();
  LinkRequest req;
  req.inputs.push_back(Input::file(kLibDir + "/liblua5.4.a"));
  req.exports = ExportPolicy::all();
  req.exclude_members = {"lauxlib.o", "lbaselib.o", "ldblib.o", "liolib.o"};
  LinkResult r = link_to(dir + "/liblua.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  std::string base_warning;
  for (const Diagnostic &d : r.diagnostics)
    if (d.severity == Severity::Warning && d.message.find("leaving out lbaselib.o of liblua5.4.a") == 0)
      base_warning = d.message;
  EXPECT_NE(base_warning.find("luaopen_base (needed by linit.o)"), std::string::npos) << base_warning;
  EXPECT_TRUE(std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic &d) {
    return d.message.find("leaving out lauxlib.o") == 0 && d.message.find("luaL_error") != std::string::npos;
  }));
  const char *py = R"PY(
import ctypes, sys
try:
    ctypes.CDLL(sys.argv[1])
    print("loaded")
except OSError as e:
    print("refused", "undefined symbol: lua" in str(e))
ctypes.CDLL("liblua5.4.so.0", mode=ctypes.RTLD_GLOBAL)  # a process that defines them
ctypes.CDLL(sys.argv[1])
print("loaded")
)PY";
  test::Run p = run({kPython, "-c", py, dir + "/liblua.so"});
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, "refused True\nloaded\n") << p.err;

  req.exports = ExportPolicy::list({"lua_newstate", "luaopen_base"});
  LinkResult lost = link_to(dir + "/liblua2.so", req);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error->code, ErrorCode::MissingExport);
  EXPECT_EQ(lost.error->symbol, "luaopen_base");
  EXPECT_NE(lost.error->message.find("lbaselib.o of liblua5.4.a"), std::string::npos) << lost.error->to_string();
  EXPECT_FALSE(test::exists(dir + "/liblua2.so"));
}

TEST(Runtime, AnArchiveWithPolicyNoneLinksEveryMember) {
  LinkRequest req;
  req.inputs.push_back(Input::file(kLibDir + "/libz.a"));
  req.exports = ExportPolicy::none();
  LinkResult r = link_to(test::temp_dir() + "/libz.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_GT(functions_of(r.artifact_path).count("deflate"), 0u);
}

TEST(Runtime, SonameAndOutputNameAreSeparate) {
  Bytes obj = test::compile_c(host_target(), kLibcKernel);
  LinkRequest req = request_of(host_target(), obj, {"resolve"});
  req.elf.soname = "libresolve.so.3";
  std::string dir = test::temp_dir();
  LinkResult r = link_to(dir + "/out.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_NE(readelf({"-d"}, dir + "/out.so").find("soname: [libresolve.so.3]"), std::string::npos);
  req.elf.soname = "bad/name";
  EXPECT_EQ(link_to(dir + "/out2.so", req).error->code, ErrorCode::BadRequest);
}

// --- aarch64 under qemu-user ----------------------------------------------------

const char *kArmHost = R"C(
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *c = dlopen(argv[1], RTLD_NOW);
  if (!c) { printf("dlopen: %s\n", dlerror()); return 1; }
  int (*resolve)(const char *, char *, int) = (int (*)(const char *, char *, int))dlsym(c, "resolve");
  char out[4096] = "";
  int rc = resolve(argv[3], out, sizeof out);
  printf("resolve %d %s\n", rc, out);
  void *x = dlopen(argv[2], RTLD_NOW);
  if (!x) { printf("dlopen: %s\n", dlerror()); return 1; }
  int (*f)(int) = (int (*)(int))dlsym(x, "sum_doubled");
  printf("%d %d\n", f(4), f(-7));
  return 0;
}
)C";

// A sysroot laid out as a target's root file system (what a user copies
// from a device or builds with debootstrap), assembled from Debian's cross
// packages.
std::string arm64_sysroot() {
  namespace fs = std::filesystem;
  std::string s = test::temp_dir() + "/sysroot";
  fs::create_directories(s + "/usr/lib/gcc/aarch64-linux-gnu");
  fs::create_directory_symlink("/usr/lib/gcc-cross/aarch64-linux-gnu/12", s + "/usr/lib/gcc/aarch64-linux-gnu/12");
  fs::create_directory_symlink(kArm64Root + "/lib", s + "/usr/lib/aarch64-linux-gnu");
  fs::create_directory_symlink(kArm64Root, s + "/usr/aarch64-linux-gnu");
  fs::create_directory_symlink("usr/lib", s + "/lib");
  return s;
}

void expect_runs_under_qemu(const std::string &sysroot) {
  ASSERT_TRUE(test::exists(kQemu)) << "needs qemu-user (Debian: qemu-user)";
  ASSERT_TRUE(test::exists(kArm64Root + "/lib/libc.so.6")) << "needs libc6-dev-arm64-cross";
  const std::string arm = "aarch64-linux-gnu";
  std::string dir = test::temp_dir();
  LinkRequest c = request_of(arm, test::compile_c(arm, kLibcKernel), {"resolve"});
  LinkRequest x = request_of(arm, compile_cxx(arm, kCxxKernel), {"sum_doubled"});
  c.sysroot = x.sysroot = sysroot;
  LinkResult rc = link_to(dir + "/libc-kernel.so", c);
  LinkResult rx = link_to(dir + "/libcxx-kernel.so", x);
  ASSERT_TRUE(rc.ok()) << rc.error->to_string();
  ASSERT_TRUE(rx.ok()) << rx.error->to_string();
  EXPECT_NE(readelf({"--dyn-syms"}, dir + "/libc-kernel.so").find("realpath@GLIBC_2.17"), std::string::npos);
  std::string probe = dir + "/../" + dir.substr(dir.rfind('/') + 1);
  test::Run q = run({kQemu, "-L", kArm64Root, host_program(arm, kArmHost), dir + "/libc-kernel.so",
                     dir + "/libcxx-kernel.so", probe});
  EXPECT_FALSE(q.timed_out);
  EXPECT_EQ(q.code, 0) << q.out << q.err;
  EXPECT_EQ(q.out, "resolve 0 " + real_path(dir) + "\n20 -17\n") << q.err;
}

TEST(Runtime, Aarch64KernelsRunUnderQemuWithTheInstalledCrossToolchain) {
  expect_runs_under_qemu("");
}

TEST(Runtime, Aarch64KernelsRunUnderQemuWithASysroot) {
  expect_runs_under_qemu(arm64_sysroot());
}

// --- LTO and what is not machine code ------------------------------------------

const char *kEntryKernel = "#include <stdlib.h>\n"
                           "int f(int x) { return abs(x) * 3 + 1; }\n"
                           HOTLINK_TEST_F_ARGV;

const char *kEntryHost = R"C(
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  int (*f)(int) = (int (*)(int))dlsym(h, "f");
  printf("%d\n", f(-5));
  return 0;
}
)C";

// Runs `hotlink link -o OUT INPUT`; returns the result and whether OUT exists.
test::Run cli_link(const std::string &input, const std::string &out) {
  return test::run({test::bin_dir() + "/hotlink", "link", "-o", out, input});
}

TEST(Runtime, LlvmBitcodeIsLinkedWithLto) {
  std::string dir = test::temp_dir();
  std::string host = host_program(host_target(), kEntryHost);
  for (const char *mode : {"-flto", "-flto=thin"}) {
    Bytes bc = test::compile_c(host_target(), kEntryKernel, {mode});
    ASSERT_EQ(llvm::identify_magic(llvm::StringRef(reinterpret_cast<const char *>(bc.data()), bc.size())),
              llvm::file_magic::bitcode);
    std::string in = dir + "/k" + mode + ".o", out = dir + "/k" + mode + ".so";
    test::write_file(in, bc);
    test::Run l = cli_link(in, out);
    ASSERT_EQ(l.code, 0) << l.err;
    test::Run h = run({host, out});
    EXPECT_EQ(h.out, "16\n") << mode << ": " << h.err;
    // An archive of bitcode too.
    std::string archive = test::make_archive({{"k.o", bc}});
    LinkRequest req;
    req.inputs.push_back(Input::file(archive));
    LinkResult r = link_to(dir + "/ka" + mode + ".so", req);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(run({host, r.artifact_path}).out, "16\n");
  }
}

TEST(Runtime, GccLtoObjectsAreRefusedUnlessTheyCarryMachineCode) {
  std::string dir = test::temp_dir();
  Bytes slim = test::compile_with({kGcc, "-x", "c", "-O2", "-fPIC", "-flto", "-c"}, kEntryKernel);
  Bytes fat = test::compile_with({kGcc, "-x", "c", "-O2", "-fPIC", "-flto", "-ffat-lto-objects", "-c"},
                                 kEntryKernel);
  test::write_file(dir + "/slim.o", slim);
  test::write_file(dir + "/fat.o", fat);
  test::Run s = cli_link(dir + "/slim.o", dir + "/slim.so");
  EXPECT_EQ(s.code, 2) << s.out << s.err;
  EXPECT_NE(s.err.find("slim.o"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("GCC LTO object"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("-ffat-lto-objects"), std::string::npos) << s.err;
  EXPECT_FALSE(test::exists(dir + "/slim.so"));
  std::string archive = test::make_archive({{"slim.o", slim}});
  test::Run sa = cli_link(archive, dir + "/slim-archive.so");
  EXPECT_EQ(sa.code, 2);
  EXPECT_NE(sa.err.find("(slim.o)"), std::string::npos) << sa.err;

  test::Run f = cli_link(dir + "/fat.o", dir + "/fat.so");
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(run({host_program(host_target(), kEntryHost), dir + "/fat.so"}).out, "16\n");
}

// The bitcode of an LLVM whose epoch this one cannot read: the epoch
// record of the identification block set from 0 to 1.
Bytes with_another_epoch(Bytes bc) {
  llvm::BitstreamCursor c(llvm::ArrayRef<std::uint8_t>(bc.data(), bc.size()));
  if (!c.Read(32)) // the magic
    return {};
  auto top = c.advance();
  if (!top || top->Kind != llvm::BitstreamEntry::SubBlock ||
      top->ID != llvm::bitc::IDENTIFICATION_BLOCK_ID || c.EnterSubBlock(top->ID))
    return {};
  for (;;) {
    auto e = c.advance();
    if (!e || e->Kind != llvm::BitstreamEntry::Record)
      return {};
    std::uint64_t bit = c.GetCurrentBitNo(); // the record's first field
    llvm::SmallVector<std::uint64_t, 8> values;
    auto code = c.readRecord(e->ID, values);
    if (!code)
      return {};
    if (*code == llvm::bitc::IDENTIFICATION_CODE_EPOCH && values.size() == 1 && values[0] == 0) {
      bc[bit / 8] ^= std::uint8_t(1u << (bit % 8)); // VBR6 0 -> 1
      return bc;
    }
  }
}

TEST(Runtime, BitcodeOfAnotherEpochIsRefused) {
  Bytes bc = with_another_epoch(test::compile_c(host_target(), kEntryKernel, {"-flto"}));
  ASSERT_FALSE(bc.empty());
  std::string dir = test::temp_dir();
  test::write_file(dir + "/new.o", bc);
  test::Run r = cli_link(dir + "/new.o", dir + "/new.so");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("new.o"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("LLVM bitcode"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("epoch"), std::string::npos) << r.err;
  EXPECT_FALSE(test::exists(dir + "/new.so"));
}

// --- Stubs, keys, workers --------------------------------------------------------

// The startup objects are linked when the link uses what they give: a
// kernel with nothing for them runs the same without them, and each thing
// that needs them brings them.
TEST(Runtime, StartupObjectsComeWithWhatNeedsThem) {
  struct Case {
    const char *name;
    std::string source;
    bool startup;
  };
  std::vector<Case> cases = {
      {"plain C", "int f(int x) { return x + 1; }\n", false},
      {"a constructor and a destructor attribute",
       "static int v;\n__attribute__((constructor)) static void init(void) { v = 41; }\n"
       "__attribute__((destructor)) static void fini(void) { v = 0; }\nint f(int x) { return x + v - 40; }\n",
       false},
      {"atexit (libc_nonshared.a's, through __dso_handle)",
       "#include <stdlib.h>\nvolatile int seen;\nstatic void bye(void) { seen = 1; }\n"
       "int f(int x) { atexit(bye); return x + 1; }\n", true},
      {"an .init section", "int f(int x) { return x + 1; }\n__asm__(\".section .init,\\\"ax\\\"\\n nop\\n .text\");\n", true},
  };
  const char *host = R"C(
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  int (*f)(int) = (int (*)(int))dlsym(h, "f");
  printf("%d\n", f(1));
  return dlclose(h);
}
)C";
  std::string exe = host_program(host_target(), host);
  for (const Case &c : cases) {
    LinkResult r = link_to(test::temp_dir() + "/k.so", request_of(host_target(), test::compile_c(host_target(), c.source), {"f"}));
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.error->to_string();
    bool has = std::find(r.runtime.begin(), r.runtime.end(), "crtbeginS.o") != r.runtime.end();
    EXPECT_EQ(has, c.startup) << c.name;
    test::Run h = run({exe, r.artifact_path});
    EXPECT_EQ(h.code, 0) << c.name << ": " << h.out << h.err;
    EXPECT_EQ(h.out, "2\n") << c.name;
  }
}

// The interface stubs lld reads instead of the runtime's shared libraries
// change nothing in the artifact.
TEST(Runtime, StubsGiveTheArtifactTheRealLibrariesGive) {
  std::vector<std::pair<std::string, LinkRequest>> cases = {
      {"C kernel", request_of(host_target(), test::compile_c(host_target(), kLibcKernel), {"resolve", "wait_signal"})},
      {"C++ kernel", request_of(host_target(), compile_cxx(host_target(), kCxxKernel), {"sum_doubled"})},
      {"LTO kernel", request_of(host_target(), test::compile_c(host_target(), kEntryKernel, {"-flto"}), {"f"})},
      {"aarch64 C++", request_of("aarch64-linux-gnu", compile_cxx("aarch64-linux-gnu", kCxxKernel), {"sum_doubled"})},
  };
  LinkRequest sodium;
  sodium.inputs.push_back(Input::file(kLibDir + "/libsodium.a"));
  sodium.exports = ExportPolicy::all();
  cases.emplace_back("libsodium.a", sodium);
  LinkService service;
  for (auto &[name, req] : cases) {
    req.elf.startup_objects = StartupObjects::Always; // as the driver's line has them
    LinkResult stubbed = service.link(req);
    req.elf.runtime_stubs = false;
    LinkResult real = service.link(req);
    ASSERT_TRUE(stubbed.ok() && real.ok()) << name;
    EXPECT_FALSE(stubbed.artifact.empty());
    EXPECT_TRUE(stubbed.artifact == real.artifact) << name << ": the stubbed link differs";
  }
}

TEST(Runtime, WorkerAndInProcessLinksAreIdentical) {
  LinkRequest req = request_of(host_target(), compile_cxx(host_target(), kCxxKernel), {"sum_doubled"});
  LinkService service;
  LinkResult a = service.link(req);
  req.execution = Execution::Isolated;
  LinkResult b = service.link(req);
  ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b : a).error->to_string();
  EXPECT_EQ(b.executed_by, "worker");
  EXPECT_TRUE(a.artifact == b.artifact);
}

TEST(Runtime, TheCacheKeyFollowsTheRuntimeEnvironment) {
  LinkService service;
  LinkRequest base = request_of(host_target(), compile_cxx(host_target(), kCxxKernel), {"sum_doubled"});
  std::set<std::string> keys;
  auto key = [&](const LinkRequest &r) {
    auto k = service.cache_key(r);
    EXPECT_TRUE(k.ok());
    return k ? k->hex() : std::string();
  };
  keys.insert(key(base));
  LinkRequest libcxx = base;
  libcxx.cxx_runtime = CxxRuntime::Libcxx;
  keys.insert(key(libcxx));
  LinkRequest bare = base;
  bare.runtime = Runtime::None;
  keys.insert(key(bare));
  LinkRequest sysroot = base;
  sysroot.sysroot = test::temp_dir();
  keys.insert(key(sysroot));
  LinkRequest no_c = base;
  no_c.cxx_runtime = CxxRuntime::None;
  keys.insert(key(no_c));
  EXPECT_EQ(keys.size(), 5u);
  EXPECT_EQ(key(base), key(base));
}

// --- Diagnostics that fit the target ---------------------------------------------

TEST(Runtime, ElfDiagnosticsSpeakOfElf) {
  LinkRequest req = request_of(host_target(), test::compile_c(host_target(), "extern int missing(void);\n"
                                                                              "int f(void) { return missing(); }\n"),
                               {"f"});
  req.undefined = Undefined::Error;
  LinkResult r = link_to(test::temp_dir() + "/u.so", req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::UndefinedSymbol);
  EXPECT_EQ(r.error->symbol, "missing");
  EXPECT_EQ(r.error->hint.find("Windows"), std::string::npos) << r.error->hint;
  EXPECT_EQ(r.error->hint.find("mingw"), std::string::npos) << r.error->hint;

  LinkRequest coff = request_of("x86_64-pc-windows-msvc", test::compile_c(host_target(), "int f(void) { return 1; }\n"), {"f"});
  LinkResult m = link_to(test::temp_dir() + "/x.dll", coff);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error->message.find("is an ELF object"), std::string::npos) << m.error->message;

  LinkRequest out = request_of(host_target(), test::compile_c(host_target(), "int f(void) { return 1; }\n"), {"f"});
  LinkResult o = link_to("/nonexistent-dir/x.so", out);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error->code, ErrorCode::OutputError);
  EXPECT_EQ(o.error->to_string().rfind("error[output-error]: output '/nonexistent-dir/x.so'", 0), 0u)
      << o.error->to_string();
}

// The loader checks what the artifact's needed libraries provide, and
// says which library is missing.
TEST(Runtime, TheLoaderNamesANeededLibraryItCannotLoad) {
  std::string dir = test::temp_dir();
  Bytes dep = test::compile_so(host_target(), "int dep_value(void) { return 41; }\n",
                               {"-Wl,-soname,libhotlink-dep.so"});
  test::write_file(dir + "/libhotlink-dep.so", dep);
  LinkRequest req = request_of(host_target(), test::compile_c(host_target(), "extern int dep_value(void);\n"
                                                                              "int f(void) { return dep_value() + 1; }\n"),
                               {"f"});
  req.libraries = {dir + "/libhotlink-dep.so"};
  LinkResult r = link_to(dir + "/k.so", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  auto bytes = hotlink::read_artifact_file(dir + "/k.so");
  ASSERT_TRUE(bytes.ok());
  auto v = hotlink::verify(bytes.value(), "k.so");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::UnresolvedSymbol);
  EXPECT_EQ(v.error().symbol, "libhotlink-dep.so");
  // An import that nothing provides is still refused although the artifact
  // names libc.so.6.
  LinkRequest undefined = request_of(host_target(), test::compile_c(host_target(), "extern int nowhere_defined(void);\n"
                                                                                    "int f(void) { return nowhere_defined(); }\n"),
                                     {"f"});
  LinkResult u = link_to(dir + "/u.so", undefined);
  ASSERT_TRUE(u.ok());
  auto ub = hotlink::read_artifact_file(dir + "/u.so");
  auto uv = hotlink::verify(ub.value(), "u.so");
  ASSERT_FALSE(uv.ok());
  EXPECT_EQ(uv.error().symbol, "nowhere_defined");
}

} // namespace
} // namespace hotlink
