// The runtimes the compilers' drivers add, found from what the inputs call
// (issue 26): OpenMP (clang's libomp, GCC's libgomp), gfortran's runtime,
// libm; and the warning for a name the link leaves undefined that a
// library of the search path defines. Every artifact is run: by a host
// that links none of these runtimes, by /usr/bin/python3, or under
// qemu-aarch64.
#include "hotlink/link_service.h"
#include "support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

namespace hotlink {
namespace {

using test::Bytes;

const std::string kGcc = "/usr/bin/gcc";
const std::string kGfortran = "/usr/bin/gfortran";
const std::string kPython = "/usr/bin/python3";
const std::string kQemu = "/usr/bin/qemu-aarch64";
const std::string kArm64Root = "/usr/aarch64-linux-gnu";
const std::string kHost = "x86_64-linux-gnu";

test::Run run(const std::vector<std::string> &argv) {
  test::RunOptions o;
  o.timeout_seconds = 120;
  return test::run(argv, o);
}

// Links `objects` with the default options but --policy all into PATH.
LinkResult link_objects(const std::string &path, const std::vector<Bytes> &objects,
                        const std::string &target = "", LinkRequest req = {}) {
  req.target = target;
  for (std::size_t i = 0; i < objects.size(); ++i)
    req.inputs.push_back(Input::memory("kernel" + std::to_string(i) + ".o", objects[i]));
  req.exports = ExportPolicy::all();
  req.output_path = path;
  LinkService svc;
  return svc.link(req);
}

bool mentions(const std::vector<std::string> &list, const std::string &what) {
  return std::any_of(list.begin(), list.end(), [&](const std::string &s) { return s.find(what) != std::string::npos; });
}

std::string joined(const std::vector<std::string> &list) {
  std::string s;
  for (const std::string &x : list)
    s += x + "; ";
  return s;
}

// A host built without any runtime but libc (and libdl's dlopen, in libc):
// dlopens argv[1] and prints what `call` prints.
std::string dlopen_host(const std::string &dir, const std::string &decl, const std::string &call,
                        const std::string &triple = "") {
  std::string src = dir + "/host.c", exe = dir + "/host";
  std::ofstream(src) << "#include <dlfcn.h>\n#include <stdio.h>\n" << decl
                     << "\nint main(int argc, char **argv) {\n"
                        "  void *h = dlopen(argv[1], RTLD_NOW);\n"
                        "  if (!h) { printf(\"dlopen: %s\\n\", dlerror()); return 1; }\n"
                     << call << "\n  return 0;\n}\n";
  std::vector<std::string> argv = {HOTLINK_TEST_CLANG, "-O1", src, "-o", exe};
  if (!triple.empty()) {
    argv.push_back("--target=" + triple);
    argv.push_back("-fuse-ld=lld");
  }
  test::Run built = run(argv);
  EXPECT_EQ(built.code, 0) << built.err;
  return exe;
}

// --- OpenMP --------------------------------------------------------------------

const char *kOpenMpKernel = R"C(
#include <omp.h>
int omp_sum(int n) {
  int total = 0, threads = 0;
#pragma omp parallel num_threads(2) reduction(+:total)
  {
#pragma omp single
    threads = omp_get_num_threads();
#pragma omp for
    for (int i = 1; i <= n; ++i) total += i;
  }
  return total * 10 + threads;
}
)C";

const char *kOmpDecl = "typedef int (*sum_fn)(int);";
const char *kOmpCall = "  printf(\"%d\\n\", ((sum_fn)dlsym(h, \"omp_sum\"))(100));";
const char *kOmpPython = "import ctypes, sys\nprint(ctypes.CDLL(sys.argv[1]).omp_sum(100))\n";

Bytes clang_openmp() {
  return test::compile_with({HOTLINK_TEST_CLANG, "-O2", "-fPIC", "-fopenmp", "-x", "c", "-c"}, kOpenMpKernel);
}
Bytes gcc_openmp() { return test::compile_with({kGcc, "-O2", "-fPIC", "-fopenmp", "-x", "c", "-c"}, kOpenMpKernel); }

// 5050 from two threads: "50502".
void expect_runs_with_two_threads(const std::string &dir, const std::string &so) {
  test::Run host = run({dlopen_host(dir, kOmpDecl, kOmpCall), so});
  EXPECT_EQ(host.code, 0) << host.out << host.err;
  EXPECT_EQ(host.out, "50502\n") << host.err;
  test::Run py = run({kPython, "-c", kOmpPython, so});
  EXPECT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(py.out, "50502\n") << py.err;
}

TEST(Runtimes, AClangOpenMpKernelGetsLibompAndRunsWithTwoThreads) {
  std::string dir = test::temp_dir();
  LinkResult r = link_objects(dir + "/libomp-kernel.so", {clang_openmp()});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(mentions(r.runtime, "libomp.so")) << joined(r.runtime);
  EXPECT_TRUE(mentions(r.runtime_added, "-fopenmp=libomp: the inputs call __kmpc_")) << joined(r.runtime_added);
  expect_runs_with_two_threads(dir, dir + "/libomp-kernel.so");
}

TEST(Runtimes, AGccOpenMpKernelGetsLibgompAndRunsWithTwoThreads) {
  std::string dir = test::temp_dir();
  LinkResult r = link_objects(dir + "/libgomp-kernel.so", {gcc_openmp()});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(mentions(r.runtime, "libgomp.so")) << joined(r.runtime);
  EXPECT_FALSE(mentions(r.runtime, "libomp.so")) << joined(r.runtime);
  EXPECT_TRUE(mentions(r.runtime_added, "-fopenmp=libgomp: the inputs call GOMP_")) << joined(r.runtime_added);
  expect_runs_with_two_threads(dir, dir + "/libgomp-kernel.so");
}

// libomp implements GCC's entry points too: a link of both gets one
// runtime, libomp, and both kernels run on it.
TEST(Runtimes, AMixedOpenMpLinkGetsLibompAlone) {
  std::string dir = test::temp_dir();
  Bytes gcc_kernel = test::compile_with({kGcc, "-O2", "-fPIC", "-fopenmp", "-x", "c", "-c"},
                                        std::string(kOpenMpKernel) + "int gcc_sum(int n) { return omp_sum(n); }\n");
  Bytes clang_kernel = test::compile_with({HOTLINK_TEST_CLANG, "-O2", "-fPIC", "-fopenmp", "-x", "c", "-c"},
                                          "#include <omp.h>\nint clang_threads(void) { int t = 0;\n"
                                          "#pragma omp parallel num_threads(2)\n{\n#pragma omp single\n"
                                          "t = omp_get_num_threads();\n}\nreturn t; }\n");
  LinkResult r = link_objects(dir + "/libmixed.so", {gcc_kernel, clang_kernel});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(mentions(r.runtime, "libomp.so")) << joined(r.runtime);
  EXPECT_FALSE(mentions(r.runtime, "libgomp.so")) << joined(r.runtime);
  test::Run py = run({kPython, "-c",
                      "import ctypes, sys\nl = ctypes.CDLL(sys.argv[1])\nprint(l.gcc_sum(100), l.clang_threads())\n",
                      dir + "/libmixed.so"});
  EXPECT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(py.out, "50502 2\n") << py.err;
}

// --openmp-runtime none leaves the runtime to the loading process, as said:
// a host without one cannot load the artifact, and a host with one can.
TEST(Runtimes, OpenMpRuntimeNoneLeavesItToTheLoadingProcess) {
  std::string dir = test::temp_dir();
  LinkRequest req;
  req.openmp_runtime = OpenMpRuntime::None;
  LinkResult r = link_objects(dir + "/libnone.so", {clang_openmp()}, "", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_FALSE(mentions(r.runtime, "libomp.so")) << joined(r.runtime);
  EXPECT_TRUE(r.runtime_added.empty()) << joined(r.runtime_added);
  test::Run host = run({dlopen_host(dir, kOmpDecl, kOmpCall), dir + "/libnone.so"});
  EXPECT_NE(host.out.find("undefined symbol: __kmpc_"), std::string::npos) << host.out;
  test::Run with_runtime = run({kPython, "-c",
                                "import ctypes, sys\nctypes.CDLL('libomp.so.5', mode=ctypes.RTLD_GLOBAL)\n"
                                "print(ctypes.CDLL(sys.argv[1]).omp_sum(100))\n",
                                dir + "/libnone.so"});
  EXPECT_EQ(with_runtime.code, 0) << with_runtime.err;
  EXPECT_EQ(with_runtime.out, "50502\n") << with_runtime.err;
}

// The runtime a link gets is part of its cache key: the same objects with
// another OpenMP runtime are another artifact.
TEST(Runtimes, TheOpenMpRuntimeIsInTheCacheKey) {
  LinkService svc;
  std::set<std::string> keys;
  for (OpenMpRuntime o : {OpenMpRuntime::Auto, OpenMpRuntime::Libgomp, OpenMpRuntime::None}) {
    LinkRequest req;
    req.inputs.push_back(Input::memory("kernel.o", clang_openmp()));
    req.exports = ExportPolicy::all();
    req.openmp_runtime = o;
    auto key = svc.cache_key(req);
    ASSERT_TRUE(key.ok()) << key.error().to_string();
    keys.insert(key->hex());
  }
  EXPECT_EQ(keys.size(), 3u);
}

// Debian 12 has no aarch64 libomp: a clang OpenMP kernel for aarch64 is
// refused before lld runs, naming the runtime, the call and what to do.
TEST(Runtimes, AMissingOpenMpRuntimeIsAnErrorNamingItAndTheFlag) {
  if (test::exists(kArm64Root + "/lib/libomp.so"))
    GTEST_SKIP() << "an aarch64 libomp is installed";
  Bytes obj = test::compile_with({HOTLINK_TEST_CLANG, "--target=aarch64-linux-gnu", "-O2", "-fPIC", "-fopenmp",
                                  "-x", "c", "-c"},
                                 kOpenMpKernel);
  std::string dir = test::temp_dir();
  LinkResult r = link_objects(dir + "/libarm.so", {obj}, "aarch64-linux-gnu");
  ASSERT_FALSE(r.ok());
  std::string said = r.error->to_string();
  EXPECT_NE(said.find("libomp is not installed for aarch64"), std::string::npos) << said;
  EXPECT_NE(said.find("__kmpc_"), std::string::npos) << said;
  EXPECT_NE(said.find("--openmp-runtime"), std::string::npos) << said;
  EXPECT_FALSE(test::exists(dir + "/libarm.so"));
}

// --- Fortran ---------------------------------------------------------------------

const char *kFortranKernel = R"F(
function fsum(n) bind(c, name="fsum") result(r)
  use iso_c_binding
  integer(c_int), value :: n
  integer(c_int) :: r
  integer, allocatable :: a(:)
  character(len=32) :: buf
  integer :: i
  allocate(a(n))
  do i = 1, n
    a(i) = i
  end do
  write(buf, '(I0)') sum(a)
  read(buf, *) r
  deallocate(a)
end function
)F";

TEST(Runtimes, AGfortranKernelGetsItsRuntimeAndRunsFromPython) {
  Bytes obj = test::compile_with({kGfortran, "-O2", "-fPIC", "-x", "f95", "-ffree-form", "-c"}, kFortranKernel);
  std::string dir = test::temp_dir();
  LinkResult r = link_objects(dir + "/libfsum.so", {obj});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(mentions(r.runtime, "libgfortran.so")) << joined(r.runtime);
  EXPECT_TRUE(mentions(r.runtime_added, "-lgfortran -lm: the inputs call _gfortran_")) << joined(r.runtime_added);
  test::Run py = run({kPython, "-c",
                      "import ctypes, sys\nl = ctypes.CDLL(sys.argv[1])\nl.fsum.argtypes = [ctypes.c_int]\n"
                      "print(l.fsum(100))\n",
                      dir + "/libfsum.so"});
  EXPECT_EQ(py.code, 0) << py.err;
  EXPECT_EQ(py.out, "5050\n") << py.err;
}

// --- libm ------------------------------------------------------------------------

const char *kMathKernel = "#include <math.h>\n"
                          "double m_calc(double x) { return lgamma(x) + exp(x) + trunc(x * 1.5); }\n";
const char *kMathDecl = "typedef double (*calc_fn)(double);";
const char *kMathCall = "  printf(\"%.6f\\n\", ((calc_fn)dlsym(h, \"m_calc\"))(3.0));";
// lgamma(3) + exp(3) + trunc(4.5) = log(2) + e^3 + 4
const char *kMathOut = "24.778684\n";

// The artifact's versions for exp: exp@GLIBC_2.29 (the version -lm gives
// today), not the oldest one an unversioned reference would bind.
std::string exp_version(const std::string &so) {
  test::Run d = run({"/usr/bin/readelf", "-W", "--dyn-syms", so});
  std::string line;
  std::istringstream in(d.out);
  while (std::getline(in, line))
    if (line.find(" exp@") != std::string::npos)
      return line.substr(line.find(" exp@") + 1);
  return "(no exp in " + d.out + ")";
}

TEST(Runtimes, ACKernelCallingLibmGetsVersionedLibmAndRunsFromAHostWithoutIt) {
  std::string dir = test::temp_dir();
  LinkResult r = link_objects(dir + "/libmath.so", {test::compile_c(kHost, kMathKernel)});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(mentions(r.runtime, "libm.so.6")) << joined(r.runtime);
  EXPECT_TRUE(mentions(r.runtime_added, "-lm: exp, lgamma")) << joined(r.runtime_added);
  EXPECT_EQ(exp_version(dir + "/libmath.so").substr(0, 15), "exp@GLIBC_2.29 ");
  test::Run host = run({dlopen_host(dir, kMathDecl, kMathCall), dir + "/libmath.so"});
  EXPECT_EQ(host.code, 0) << host.out << host.err;
  EXPECT_EQ(host.out, kMathOut);
}

TEST(Runtimes, Aarch64LibmIsVersionedAndRunsUnderQemu) {
  ASSERT_TRUE(test::exists(kQemu)) << "needs qemu-user (Debian: qemu-user)";
  const std::string arm = "aarch64-linux-gnu";
  std::string dir = test::temp_dir();
  LinkResult r = link_objects(dir + "/libmath.so", {test::compile_c(arm, kMathKernel)}, arm);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(mentions(r.runtime, "libm.so.6")) << joined(r.runtime);
  EXPECT_EQ(exp_version(dir + "/libmath.so").substr(0, 15), "exp@GLIBC_2.29 ");
  test::Run q = run({kQemu, "-L", kArm64Root, dlopen_host(dir, kMathDecl, kMathCall, arm), dir + "/libmath.so"});
  EXPECT_FALSE(q.timed_out);
  EXPECT_EQ(q.code, 0) << q.out << q.err;
  EXPECT_EQ(q.out, kMathOut);
}

// A kernel whose math the environment already resolves (C++ gets libm
// from clang++'s line) adds nothing of its own.
TEST(Runtimes, AKernelWithoutLibmCallsGetsNoLibm) {
  std::string dir = test::temp_dir();
  LinkResult r = link_objects(dir + "/libplain.so", {test::compile_c(kHost, "int plain(int x) { return x + 1; }\n")});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_FALSE(mentions(r.runtime, "libm.so")) << joined(r.runtime);
  EXPECT_TRUE(r.runtime_added.empty()) << joined(r.runtime_added);
}

// --- Undefined names with a known home -------------------------------------------

const char *kZlibKernel = "#include <zlib.h>\n"
                          "unsigned long z_crc(const char *s, unsigned n) {\n"
                          "  return crc32(0, (const unsigned char *)s, n);\n}\n";

std::vector<const Diagnostic *> warnings_for(const LinkResult &r, const std::string &symbol) {
  std::vector<const Diagnostic *> out;
  for (const Diagnostic &d : r.diagnostics)
    if (d.severity == Severity::Warning && d.symbol == symbol)
      out.push_back(&d);
  return out;
}

TEST(Runtimes, AnUndefinedNameThatLibzDefinesWarnsNamingLibzAndTheFlag) {
  Bytes obj = test::compile_c(kHost, kZlibKernel);
  std::string dir = test::temp_dir();
  LinkResult r = link_objects(dir + "/libz-kernel.so", {obj});
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  auto w = warnings_for(r, "crc32");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0]->message.find("libz.so"), std::string::npos) << w[0]->message;
  EXPECT_NE(w[0]->message.find("add -l z"), std::string::npos) << w[0]->message;
  // As warned: a host without zlib cannot load it.
  test::Run host = run({dlopen_host(dir, "", ""), dir + "/libz-kernel.so"});
  EXPECT_NE(host.out.find("undefined symbol: crc32"), std::string::npos) << host.out;

  // With -l z: no warning, and it runs.
  LinkRequest with_z;
  with_z.libraries = {"z"};
  LinkResult rz = link_objects(dir + "/libz-linked.so", {obj}, "", with_z);
  ASSERT_TRUE(rz.ok()) << rz.error->to_string();
  EXPECT_TRUE(warnings_for(rz, "crc32").empty());
  test::Run ok = run({kPython, "-c",
                      "import ctypes, sys\nl = ctypes.CDLL(sys.argv[1])\nl.z_crc.restype = ctypes.c_ulong\n"
                      "print(hex(l.z_crc(b'hotlink', 7)))\n",
                      dir + "/libz-linked.so"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "0xc72d6091\n") << ok.err;

  // A name no library defines (a host callback) says nothing.
  LinkResult rc = link_objects(dir + "/libcallback.so",
                               {test::compile_c(kHost, "int host_cb(int);\nint cb(int x) { return host_cb(x) + 1; }\n")});
  ASSERT_TRUE(rc.ok()) << rc.error->to_string();
  EXPECT_TRUE(warnings_for(rc, "host_cb").empty());
}

// Links started at once in a fresh process all open the library index
// (once) and all get their warning; also run under ThreadSanitizer.
TEST(Runtimes, ConcurrentLinksShareTheLibraryIndex) {
  std::vector<Bytes> kernels;
  for (int i = 0; i < 4; ++i)
    kernels.push_back(test::compile_c(kHost, "#include <zlib.h>\nextern int host_cb" + std::to_string(i) +
                                                 "(int);\nunsigned long k(const char *s) {\n"
                                                 "  return crc32(0, (const unsigned char *)s, 1) + host_cb" +
                                                 std::to_string(i) + "(1);\n}\n"));
  LinkService svc;
  std::vector<LinkResult> results(kernels.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < kernels.size(); ++i)
    threads.emplace_back([&, i] {
      LinkRequest req;
      req.inputs.push_back(Input::memory("k.o", kernels[i]));
      req.exports = ExportPolicy::all();
      results[i] = svc.link(req);
    });
  for (std::thread &t : threads)
    t.join();
  for (const LinkResult &r : results) {
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(warnings_for(r, "crc32").size(), 1u);
  }
}

// The CLI shows the warning, in text and in --json; with --no-undefined the
// failure's hint names the library.
TEST(Runtimes, TheCliShowsTheHomeOfAnUndefinedName) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/z.o", test::compile_c(kHost, kZlibKernel));
  std::string hotlink = test::bin_dir() + "/hotlink";
  test::Run text = run({hotlink, "link", dir + "/z.o", "-o", dir + "/a.so", "--policy", "all"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.err.find("warning: crc32 is left undefined"), std::string::npos) << text.err;
  test::Run json = run({hotlink, "link", dir + "/z.o", "-o", dir + "/b.so", "--policy", "all", "--json"});
  EXPECT_EQ(json.code, 0) << json.err;
  EXPECT_NE(json.out.find("\"crc32\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("add -l z"), std::string::npos) << json.out;
  test::Run strict = run({hotlink, "link", dir + "/z.o", "-o", dir + "/c.so", "--policy", "all", "--no-undefined"});
  EXPECT_NE(strict.code, 0);
  EXPECT_NE(strict.err.find("hint: /usr/lib/x86_64-linux-gnu/libz.so defines it: add -l z"), std::string::npos)
      << strict.err;
  test::Run verbose = run({hotlink, "link", dir + "/z.o", "-o", dir + "/d.so", "--policy", "all", "-l", "z", "-v"});
  EXPECT_EQ(verbose.err.find("warning"), std::string::npos) << verbose.err;
}

// --- The library search, in clang's order (issue 54) -----------------------------

// A kernel reading Box2D's b2_version (a variable libbox2d.so defines).
const char *kBox2dVersionKernel = "struct Version { int major, minor, revision; };\n"
                                  "extern struct Version b2_version;\n"
                                  "int box2d_major(void) { return b2_version.major; }\n";

// box2d_major() of the shared object at `so`, as a host that links no Box2D sees it.
std::string box2d_major_of(const std::string &dir, const std::string &so) {
  std::string host = dlopen_host(dir, "", "int (*f)(void) = (int (*)(void))dlsym(h, \"box2d_major\");\n"
                                          "  printf(\"%d\\n\", f());");
  test::Run r = run({host, so});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return r.out;
}

// -L DIR -l box2d with DIR/libbox2d.a: the archive, as `clang++ -shared`
// links it, not the system's libbox2d.so (lld searches the folders in the
// order given, and the user's came after the system's).
TEST(Runtimes, UserLibraryFoldersAreSearchedBeforeTheSystems) {
  std::string dir = test::temp_dir();
  ::mkdir((dir + "/box2d_static").c_str(), 0755);
  std::string archive = test::make_archive(
      {{"version.o", test::compile_c(kHost, "struct Version { int major, minor, revision; } b2_version = {9, 8, 7};\n")}});
  test::write_file(dir + "/box2d_static/libbox2d.a", test::read_file(archive));
  Bytes obj = test::compile_c(kHost, kBox2dVersionKernel);
  test::write_file(dir + "/k.o", obj);
  // The reference: clang's driver with the same flags.
  test::Run ref = run({HOTLINK_TEST_CLANG, "-shared", "-fuse-ld=lld", dir + "/k.o", "-L", dir + "/box2d_static",
                       "-l", "box2d", "-o", dir + "/clang.so"});
  ASSERT_EQ(ref.code, 0) << ref.err;
  ASSERT_EQ(box2d_major_of(dir, dir + "/clang.so"), "9\n") << "clang linked another libbox2d";
  LinkRequest req;
  req.libraries = {"box2d"};
  req.library_paths = {dir + "/box2d_static"};
  LinkResult r = link_objects(dir + "/hotlink.so", {obj}, "", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(box2d_major_of(dir, dir + "/hotlink.so"), "9\n") << "the system's libbox2d.so was linked";
  // Without -L, the system's library (2.4.1), as clang links it.
  LinkRequest system;
  system.libraries = {"box2d"};
  LinkResult s = link_objects(dir + "/system.so", {obj}, "", system);
  ASSERT_TRUE(s.ok()) << s.error->to_string();
  EXPECT_EQ(box2d_major_of(dir, dir + "/system.so"), "2\n");
}

// -l:libbox2d.so.2 names a file: what it defines is not "left undefined".
TEST(Runtimes, AColonLibraryCountsAsDefiningWhatItDefines) {
  std::string dir = test::temp_dir();
  Bytes obj = test::compile_c(kHost, kBox2dVersionKernel);
  LinkRequest req;
  req.libraries = {":libbox2d.so.2"};
  LinkResult r = link_objects(dir + "/k.so", {obj}, "", req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(warnings_for(r, "b2_version").empty()) << warnings_for(r, "b2_version")[0]->message;
  EXPECT_EQ(box2d_major_of(dir, dir + "/k.so"), "2\n");
}

// --no-undefined's hint names the library for a C++ name too (lld names it
// demangled: b2Alloc_Default(int)).
TEST(Runtimes, TheNoUndefinedHintNamesTheLibraryOfACxxName) {
  Bytes obj = test::compile_with({HOTLINK_TEST_CLANG, "--target=x86_64-linux-gnu", "-O1", "-c", "-x", "c++"},
                                 "#include <box2d/b2_settings.h>\n"
                                 "extern \"C\" void *grab(int n) { return b2Alloc_Default(n); }\n");
  std::string dir = test::temp_dir();
  LinkRequest req;
  req.undefined = Undefined::Error;
  LinkResult r = link_objects(dir + "/k.so", {obj}, "", req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->symbol, "b2Alloc_Default(int)");
  EXPECT_NE(r.error->hint.find("libbox2d.so defines it: add -l box2d"), std::string::npos) << r.error->to_string();
}

} // namespace
} // namespace hotlink
