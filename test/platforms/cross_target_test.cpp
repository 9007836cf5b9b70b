// Artifacts for other targets, run by a real loader where this host has one
// (Windows DLLs under Wine, wasm modules in Node.js) and checked structurally
// where it has none (Mach-O dylibs).
#include "hotlink/cache.h"
#include "hotlink/symbols.h"
#include "hotlink/link.h"
#include "linker/platforms/msvc/cxx_runtime.h"
#include "linker/platforms/platform.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "verify/structure.h"
#include "test/support.h"

#include "llvm/Object/Archive.h"
#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <fstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink {
namespace {

using test::Bytes;

// Instantiates a module with Node.js, supplying env.host_offset, and calls
// f(6) and f_argv through linear memory (a fresh page, so that nothing the
// module placed there is overwritten). Prints one JSON line.
const char *kNodeRunner = R"JS(
const fs = require('fs');
const bytes = fs.readFileSync(process.argv[2]);
const env = { host_offset: () => 100 };
WebAssembly.instantiate(bytes, { env }).then(({ instance, module }) => {
  const e = instance.exports;
  const base = e.memory.grow(1) * 65536;
  const mem = new DataView(e.memory.buffer);
  mem.setInt32(base + 16, 6, true);        // the input
  mem.setUint32(base, base + 16, true);    // args[0] -> input
  mem.setUint32(base + 4, base + 20, true); // args[1] -> output
  const rc = e.f_argv(base);
  console.log(JSON.stringify({
    exports: Object.keys(e).sort(),
    imports: WebAssembly.Module.imports(module).map(i => i.module + '.' + i.name),
    f: e.f(6), argv_rc: rc, argv_out: mem.getInt32(base + 20, true) }));
}).catch(err => { console.error(String(err)); process.exit(1); });
)JS";

TEST(WasmInNode, LinkedKernelIsInstantiatedAndCalled) {
  Bytes obj = test::compile_c("wasm32-unknown-unknown",
                              "extern int host_offset(void);\n"
                              "int f(int x) { return x * 7 + host_offset(); }\n"
                              HOTLINK_TEST_F_ARGV
                              "int internal_helper(int x) { return x; }\n");
  LinkService svc;
  LinkRequest req;
  req.target = "wasm32-unknown-unknown";
  req.inputs.push_back(Input::memory("kernel.o", obj));
  req.undefined = Undefined::Allow; // host_offset comes from the embedder
  std::string dir = test::temp_dir();
  req.output_path = dir + "/kernel.wasm";
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();

  std::string script = dir + "/run.js";
  test::write_file(script, Bytes(kNodeRunner, kNodeRunner + std::strlen(kNodeRunner)));
  test::Run run = test::run({HOTLINK_TEST_NODE, script, req.output_path});
  ASSERT_EQ(run.code, 0) << run.err;
  auto v = llvm::json::parse(run.out);
  ASSERT_TRUE(bool(v)) << run.out;
  const llvm::json::Object &o = *v->getAsObject();
  std::vector<std::string> exports;
  for (const llvm::json::Value &e : *o.getArray("exports"))
    exports.push_back(e.getAsString()->str());
  // The entry-point policy: f and f_argv (and the memory), not the helper.
  EXPECT_EQ(exports, (std::vector<std::string>{"f", "f_argv", "memory"}));
  ASSERT_EQ(o.getArray("imports")->size(), 1u);
  EXPECT_EQ((*o.getArray("imports"))[0].getAsString(), llvm::StringRef("env.host_offset"));
  EXPECT_EQ(o.getInteger("f"), 142);
  EXPECT_EQ(o.getInteger("argv_rc"), 0);
  EXPECT_EQ(o.getInteger("argv_out"), 142);
}

// --- wasm32-wasi: wasi-libc, run under Node's WASI ----------------------------------

// Node's WASI (preview1) runs a reactor: initialize() calls _initialize
// (the C constructors), then run(5). Prints the exports on stderr's last
// line and what the C code printed on stdout.
const char *kWasiRunner = R"JS(
const { readFileSync } = require('node:fs');
const { WASI } = require('node:wasi');
(async () => {
  const wasi = new WASI({ version: 'preview1', args: [], env: {} });
  const mod = await WebAssembly.compile(readFileSync(process.argv[2]));
  const inst = await WebAssembly.instantiate(mod, wasi.getImportObject());
  wasi.initialize(inst);
  const rc = inst.exports.run(5);
  console.log('rc ' + rc);
  console.error(WebAssembly.Module.exports(mod).map(e => e.name).sort().join(' '));
})().catch(err => { console.error(String(err)); process.exit(1); });
)JS";

const char *kWasiModule = R"C(
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int ready;
__attribute__((constructor)) static void init(void) { ready = 42; }
int run(int n) {
  char *buf = malloc(64);
  strcpy(buf, "hello from wasi");
  printf("%s: len %zu, ready %d, n %d\n", buf, strlen(buf), ready, n);
  fflush(stdout);
  int len = (int)strlen(buf);
  free(buf);
  return len + n;
}
)C";

class WasiInNode : public ::testing::TestWithParam<const char *> {};

// The module links with default options (wasi-libc, crt1-reactor.o,
// compiler-rt) and Node runs it: the constructor ran, malloc, strlen and
// printf work, and the reactor's _initialize is exported.
TEST_P(WasiInNode, ACModuleWithLibcRunsAsAReactor) {
  LinkService svc;
  LinkRequest req;
  req.target = GetParam();
  req.inputs.push_back(Input::memory("module.o", test::compile_c("wasm32-wasi", kWasiModule, {"-Wno-deprecated"})));
  req.exports = ExportPolicy::list({"run"});
  std::string dir = test::temp_dir();
  req.output_path = dir + "/module.wasm";
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.runtime, (std::vector<std::string>{"crt1-reactor.o", "libc.a", "libclang_rt.builtins-wasm32.a"}));
  EXPECT_NE(std::find(r.exports.begin(), r.exports.end(), "_initialize"), r.exports.end());
  std::string script = dir + "/run.js";
  test::write_file(script, Bytes(kWasiRunner, kWasiRunner + std::strlen(kWasiRunner)));
  test::RunOptions o;
  o.timeout_seconds = 60;
  test::Run run = test::run({HOTLINK_TEST_NODE, script, req.output_path}, o);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "hello from wasi: len 15, ready 42, n 5\nrc 20\n");
  EXPECT_NE(run.err.find("_initialize memory run"), std::string::npos) << run.err;
}

INSTANTIATE_TEST_SUITE_P(Spellings, WasiInNode, ::testing::Values("wasm32-wasi", "wasm32-wasip1"));

// Without wasi-libc (a sysroot that has none), an error names what is
// missing, where it was looked for, and the Debian package.
TEST(Wasi, WithoutWasiLibcTheErrorNamesThePackage) {
  LinkService svc;
  LinkRequest req;
  req.target = "wasm32-wasi";
  req.sysroot = test::temp_dir();
  req.inputs.push_back(Input::memory("module.o", test::compile_c("wasm32-wasi", kWasiModule, {"-Wno-deprecated"})));
  req.exports = ExportPolicy::list({"run"});
  LinkResult r = svc.link(req);
  ASSERT_FALSE(r.ok());
  std::string said = r.error->to_string();
  EXPECT_NE(said.find("wasi-libc"), std::string::npos) << said;
  EXPECT_NE(said.find(req.sysroot), std::string::npos) << said;
  EXPECT_NE(said.find("install Debian's wasi-libc"), std::string::npos) << said;
  // --no-default-libs links the module alone (its libc calls unresolved).
  req.runtime = Runtime::None;
  req.undefined = Undefined::Allow;
  LinkResult bare = svc.link(req);
  ASSERT_TRUE(bare.ok()) << bare.error->to_string();
  EXPECT_TRUE(bare.runtime.empty());
}

TEST(Wasi, TargetsListBothSpellings) {
  std::vector<std::string> t = supported_targets();
  EXPECT_NE(std::find(t.begin(), t.end(), "wasm32-wasi"), t.end());
  EXPECT_NE(std::find(t.begin(), t.end(), "wasm32-wasip1"), t.end());
}

// A JIT-style kernel that calls the C library and a host function.
const char *kMachOKernel =
    "void *memcpy(void *, const void *, unsigned long);\n"
    "extern int host_offset(void);\n"
    "int f(int x) { char b[64]; memcpy(b, &x, (unsigned long)(x & 3) + 1); return b[0] * 7 + host_offset(); }\n"
    HOTLINK_TEST_F_ARGV
    "int internal_helper(int x) { return x; }\n";

class MachOStructure : public ::testing::TestWithParam<const char *> {};

Bytes link_dylib(const std::string &triple, std::string &path) {
  LinkService svc;
  LinkRequest req;
  req.target = triple;
  req.inputs.push_back(Input::memory("kernel.o", test::compile_c(triple, kMachOKernel)));
  path = test::temp_dir() + "/kernel.dylib";
  req.output_path = path;
  LinkResult r = svc.link(req);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error->to_string());
  return r.ok() ? test::read_file(path) : Bytes{};
}

TEST_P(MachOStructure, DylibHasWhatDyldNeeds) {
  std::string triple = GetParam(), path;
  Bytes dylib = link_dylib(triple, path);
  ASSERT_FALSE(dylib.empty());
  auto s = hotlink::check_macho_dylib(dylib, path);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  bool arm = triple.rfind("arm64", 0) == 0;
  EXPECT_EQ(s->arch, arm ? "arm64" : "x86_64");
  EXPECT_EQ(s->install_name, "@rpath/kernel.dylib");
  EXPECT_EQ(s->min_os, "13.0");
  EXPECT_TRUE(s->chained_fixups);
  if (arm) {
    EXPECT_TRUE(s->signed_adhoc);
    EXPECT_GE(s->signed_pages, 1u);
  }

  // Exactly the policy's exports (Mach-O spells C names with '_').
  auto info = exports::read_artifact(dylib.data(), dylib.size(), path);
  ASSERT_TRUE(info.ok()) << info.error().to_string();
  EXPECT_EQ(info->exports, (std::vector<std::string>{"_f", "_f_argv"}));

  // LLVM's own Mach-O reader reads every part a loader uses without a word.
  test::Run od = test::run({HOTLINK_TEST_LLVM_OBJDUMP, "--macho", "--private-headers",
                            "--exports-trie", "--chained-fixups", "--dyld-info", path});
  EXPECT_EQ(od.code, 0) << od.err;
  EXPECT_EQ(od.err, "") << "llvm-objdump warned";
  EXPECT_EQ(od.out.find("warning"), std::string::npos) << od.out;
  EXPECT_NE(od.out.find("_memcpy"), std::string::npos) << "memcpy is not bound through dyld";
  EXPECT_NE(od.out.find("_host_offset"), std::string::npos);
}

TEST_P(MachOStructure, RefusesDamagedImages) {
  std::string triple = GetParam(), path;
  Bytes dylib = link_dylib(triple, path);
  ASSERT_FALSE(dylib.empty());
  Bytes truncated(dylib.begin(), dylib.begin() + dylib.size() / 2);
  EXPECT_FALSE(hotlink::check_macho_dylib(truncated, path).ok());
  if (triple.rfind("arm64", 0) == 0) {
    Bytes patched = dylib;
    patched[0x4000 - 1] ^= 0xff; // inside the first signed page
    auto r = hotlink::check_macho_dylib(patched, path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().symbol, "LC_CODE_SIGNATURE");
    EXPECT_NE(r.error().message.find("hash does not match"), std::string::npos)
        << r.error().message;
  }
  Bytes object = test::compile_c(triple, kMachOKernel);
  auto r = hotlink::check_macho_dylib(object, "kernel.o");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::NotASharedObject);
}

// ---------------------------------------------------------------------------
// Import libraries from a .def.

const char *kFooDef = "LIBRARY foo.dll\nEXPORTS\n  foo_add\n  foo_table DATA\n  foo_sub @7\n";

TEST(ImportLibrary, FromADefLetsADllLinkAgainstAnotherDll) {
  auto lib = import_library_from_def(kFooDef, "foo.def", "x64");
  ASSERT_TRUE(lib.ok()) << lib.error().to_string();
  EXPECT_EQ(lib->dll_name, "foo.dll");
  EXPECT_EQ(lib->exports, (std::vector<std::string>{"foo_add", "foo_table", "foo_sub"}));
  std::string dir = test::temp_dir(), lib_path = dir + "/foo.lib";
  test::write_file(lib_path, lib->bytes);

  Bytes obj = test::compile_c("x86_64-pc-windows-msvc",
                              "__declspec(dllimport) int foo_add(int, int);\n"
                              "__declspec(dllimport) extern int foo_table[];\n"
                              "int foo_sub(int, int);\n"
                              "int f(int x) { return foo_sub(foo_add(x, foo_table[0]), 1); }\n"
                              HOTLINK_TEST_F_ARGV);
  LinkService svc;
  LinkRequest req;
  req.target = "x86_64-pc-windows-msvc";
  req.inputs.push_back(Input::memory("k.obj", obj));
  req.output_path = dir + "/k.dll";
  LinkResult without = svc.link(req);
  ASSERT_FALSE(without.ok());
  EXPECT_EQ(without.error->code, ErrorCode::UndefinedSymbol);

  req.libraries = {lib_path};
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  test::Run imports = test::run({HOTLINK_TEST_LLVM_READOBJ, "--coff-imports", req.output_path});
  ASSERT_EQ(imports.code, 0) << imports.err;
  EXPECT_NE(imports.out.find("Name: foo.dll"), std::string::npos) << imports.out;
  for (const char *sym : {"foo_add", "foo_table", "foo_sub"})
    EXPECT_NE(imports.out.find(std::string("Symbol: ") + sym), std::string::npos) << sym;
}

TEST(ImportLibrary, MingwDefsDecorateI386NamesAsDlltoolDoes) {
  const char *def = "LIBRARY kernel32.dll\nEXPORTS\n  ExitProcess@4\n";
  Bytes obj = test::compile_c("i686-pc-windows-msvc",
                              "__declspec(dllimport) void __stdcall ExitProcess(unsigned);\n"
                              "void f(void) { ExitProcess(7); }\n");
  for (bool mingw : {false, true}) {
    auto lib = import_library_from_def(def, "k32.def", "x86", {}, mingw);
    ASSERT_TRUE(lib.ok()) << lib.error().to_string();
    std::string path = test::temp_dir() + "/k32.lib";
    test::write_file(path, lib->bytes);
    LinkService svc;
    LinkRequest req;
    req.target = "i686-pc-windows-msvc";
    req.inputs.push_back(Input::memory("f.obj", obj));
    req.exports = ExportPolicy::list({"f"});
    req.libraries = {path};
    LinkResult r = svc.link(req);
    // The object imports __imp__ExitProcess@4: only the mingw reading
    // provides it.
    EXPECT_EQ(r.ok(), mingw) << (r.ok() ? "linked" : r.error->to_string());
  }
}

TEST(ImportLibrary, BadDefsAndMachinesAreNamed) {
  auto syntax = import_library_from_def("LIBRARY foo.dll\nEXPORTS\n  a @1 @2 ,\n", "bad.def", "x64");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(syntax.error().input, "bad.def");
  EXPECT_EQ(syntax.error().message.rfind("line 3:", 0), 0u) << syntax.error().message;

  auto machine = import_library_from_def(kFooDef, "foo.def", "mips");
  ASSERT_FALSE(machine.ok());
  EXPECT_EQ(machine.error().symbol, "--machine");

  auto unnamed = import_library_from_def("EXPORTS\n  a\n", "anon.def", "arm64");
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.error().symbol, "--dll");
  auto named = import_library_from_def("EXPORTS\n  a\n", "anon.def", "arm64", "anon.dll");
  ASSERT_TRUE(named.ok()) << named.error().to_string();
  EXPECT_EQ(named->dll_name, "anon.dll");

  // The CLI: exit 2 and nothing written for a bad .def.
  std::string dir = test::temp_dir();
  std::string bad = "EXPORTS\n  a @1 @2 ,\n";
  test::write_file(dir + "/bad.def", Bytes(bad.begin(), bad.end()));
  test::Run cli = test::run({test::bin_dir() + "/hotlink", "implib", "--def", dir + "/bad.def",
                             "--machine", "x64", "--dll", "x.dll", "-o", dir + "/x.lib"});
  EXPECT_EQ(cli.code, 2);
  EXPECT_NE(cli.err.find("line 2"), std::string::npos) << cli.err;
  EXPECT_FALSE(test::exists(dir + "/x.lib"));
  test::write_file(dir + "/foo.def", Bytes(kFooDef, kFooDef + std::strlen(kFooDef)));
  cli = test::run({test::bin_dir() + "/hotlink", "implib", "--def", dir + "/foo.def", "--machine",
                   "x86", "-o", dir + "/foo.lib"});
  EXPECT_EQ(cli.code, 0) << cli.err;
  EXPECT_TRUE(test::exists(dir + "/foo.lib"));
}


// ---------------------------------------------------------------------------
// Windows DLLs from JIT objects, on this Linux host, run by Wine.

// A file of test/platforms/windows/, with its #include "console.h" inlined (compile_c
// caches by the source's text).
std::string source_file(const std::string &rel) {
  auto read = [](const std::string &name) {
    Bytes b = test::read_file(std::string(HOTLINK_TEST_SOURCE_DIR) + "/test/platforms/windows/" + name);
    return std::string(b.begin(), b.end());
  };
  std::string text = read(rel);
  const std::string include = "#include \"console.h\"\n";
  std::size_t at = text.find(include);
  if (at != std::string::npos)
    text.replace(at, include.size(), read("console.h"));
  return text;
}

const char *kWin64 = "x86_64-pc-windows-msvc";

std::string coff_imports(const std::string &path) {
  test::Run r = test::run({HOTLINK_TEST_LLVM_READOBJ, "--coff-imports", path});
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out;
}

// The names a DLL exports, sorted.
std::vector<std::string> coff_export_names(const std::string &dll) {
  test::Run r = test::run({HOTLINK_TEST_LLVM_READOBJ, "--coff-exports", dll});
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<std::string> names;
  for (std::size_t at = r.out.find("  Name: "); at != std::string::npos; at = r.out.find("  Name: ", at + 1)) {
    std::size_t from = at + 8, end = r.out.find('\n', from);
    if (end > from)
      names.push_back(r.out.substr(from, end - from));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The Wine prefix kept in the build tree, made once by `wineboot --init`
// under a lock. Tests run in parallel, and two first runs of Wine that
// both create a prefix race: one's wineserver removes the server directory
// the other is entering ("chdir to /tmp/wine-*/server-*: No such file or
// directory", seen in CI). A prefix is used only once `ready` exists.
std::vector<std::string> wine_environment() {
  const std::string prefix = std::string(HOTLINK_TEST_FIXTURE_DIR) + "/../wine-prefix";
  std::vector<std::string> env = {"WINEPREFIX=" + prefix, "WINEDEBUG=-all"};
  const std::string ready = prefix + ".ready";
  if (std::filesystem::exists(ready))
    return env;
  int lock = ::open((prefix + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  EXPECT_GE(lock, 0) << prefix << ".lock: " << std::strerror(errno);
  if (lock >= 0)
    ::flock(lock, LOCK_EX);
  if (!std::filesystem::exists(ready)) {
    test::RunOptions o;
    o.timeout_seconds = 180;
    o.env = env;
    test::Run boot = test::run({HOTLINK_TEST_WINE64, "wineboot", "--init"}, o);
    EXPECT_EQ(boot.code, 0) << "wineboot --init in " << prefix << ": " << boot.err;
    // wineboot returns before the services it started leave; wait for them.
    const std::string server = std::filesystem::path(HOTLINK_TEST_WINE64).parent_path() / "wineserver";
    test::run({server, "--wait"}, o);
    if (boot.code == 0)
      std::ofstream(ready) << "wineboot --init done\n";
  }
  if (lock >= 0)
    ::close(lock);
  return env;
}

// Runs `exe` under Wine in its directory, with the prefix above and
// `dll_path` as Wine's DLL search path; killed, with everything it
// started, after 180 s.
test::Run wine(const std::string &dir, const std::string &exe, const std::vector<std::string> &dll_path = {}) {
  test::RunOptions o;
  o.cwd = dir;
  o.timeout_seconds = 180;
  o.env = wine_environment();
  std::string path;
  for (std::string d : dll_path) {
    std::replace(d.begin(), d.end(), '/', '\\');
    path += (path.empty() ? "Z:" : ";Z:") + d;
  }
  if (!path.empty())
    o.env.push_back("WINEPATH=" + path);
  return test::run({HOTLINK_TEST_WINE64, exe}, o);
}

// A host .exe without a C runtime (entry `start`, kernel32 and `libraries`),
// linked by hotlink against the mingw-w64 sysroot into DIR/host.exe.
LinkResult link_host_exe(LinkService &svc, const std::string &source, const std::string &dir,
                         const std::vector<std::string> &libraries = {}) {
  LinkRequest host;
  host.target = kWin64;
  host.inputs.push_back(
      Input::memory("host.obj", test::compile_c(kWin64, source_file(source), {"-ffreestanding", "-fno-builtin"})));
  host.sysroot = HOTLINK_TEST_MINGW_SYSROOT;
  host.libraries = libraries;
  host.coff.executable = true;
  host.coff.entry = "start";
  host.exports = ExportPolicy::none();
  host.output_path = dir + "/host.exe";
  return svc.link(host);
}

TEST(WindowsDll, KernelCallingCrtAndWin32RunsUnderWine) {
  LinkService svc;
  std::string host_dir = test::temp_dir();
  LinkResult h = link_host_exe(svc, "host.c", host_dir);
  ASSERT_TRUE(h.ok()) << h.error->to_string();
  EXPECT_EQ(h.system_libraries, (std::vector<std::string>{"libkernel32.a"}));

  Bytes kernel_obj = test::compile_c(kWin64, source_file("kernel.c"));
  for (WindowsCrt crt : {WindowsCrt::Auto, WindowsCrt::Msvcrt}) {
    bool ucrt = crt == WindowsCrt::Auto;
    SCOPED_TRACE(ucrt ? "ucrt" : "msvcrt");
    std::string dir = test::temp_dir();
    LinkRequest req;
    req.target = kWin64;
    req.inputs.push_back(Input::memory("kernel.obj", kernel_obj));
    req.sysroot = HOTLINK_TEST_MINGW_SYSROOT;
    req.coff.windows_crt = crt;
    req.output_path = dir + "/kernel.dll";
    req.coff.def_output = dir + "/kernel.def";
    req.coff.implib_output = dir + "/kernel.lib";
    LinkResult r = svc.link(req);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(r.windows_crt, ucrt ? "ucrt" : "msvcrt");
    EXPECT_EQ(r.system_libraries,
              (std::vector<std::string>{ucrt ? "libucrtbase.a" : "libmsvcrt.a", "libkernel32.a"}));
    // mingw-w64 declares cosf as an __imp_-only import: hotlink made it
    // callable; malloc, memcpy and free have thunks in the library.
    EXPECT_EQ(r.import_thunks, (std::vector<std::string>{"cosf"}));
    EXPECT_EQ(r.exports, (std::vector<std::string>{"f", "f_argv", "f_metadata"}));
    std::string imports = coff_imports(req.output_path);
    EXPECT_NE(imports.find(ucrt ? "Name: ucrtbase.dll" : "Name: msvcrt.dll"), std::string::npos)
        << imports;
    for (const char *sym : {"cosf", "malloc", "memcpy", "free", "GetCurrentProcessId"})
      EXPECT_NE(imports.find(std::string("Symbol: ") + sym), std::string::npos) << sym;

    test::write_file(dir + "/host.exe", test::read_file(h.artifact_path));
    test::Run run = wine(dir, "host.exe");
    ASSERT_EQ(run.code, 0) << run.out << run.err;
    EXPECT_NE(run.out.find("metadata cosine version 1 arguments 3 input output n\n"),
              std::string::npos)
        << run.out;
    // 2 cos(x) for x = 0, pi/3, pi, computed by the DLL's CRT under Wine.
    EXPECT_NE(run.out.find("f_argv 3 2000 1000 -2000\n"), std::string::npos) << run.out;
  }
}

// Thread-local variables: hotlink supplies what MSVC's static CRT would
// (_tls_index and the TLS directory), `all` does not export the variable,
// and two threads under Wine each count on their own.
TEST(WindowsDll, ThreadLocalCountersArePerThreadUnderWine) {
  LinkService svc;
  std::string dir = test::temp_dir();
  LinkResult h = link_host_exe(svc, "tls_host.c", dir);
  ASSERT_TRUE(h.ok()) << h.error->to_string();
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory(
      "tls.obj", test::compile_c(kWin64, "__declspec(thread) int counter;\n"
                                         "int bump(void) { return ++counter; }\n"
                                         "int shared_total = 0;\n")));
  req.exports = ExportPolicy::all();
  req.output_path = dir + "/tls.dll";
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.exports, (std::vector<std::string>{"bump", "shared_total"}));
  EXPECT_NE(std::find(r.support_objects.begin(), r.support_objects.end(), "_tls_index"), r.support_objects.end());
  test::Run tls = test::run({HOTLINK_TEST_LLVM_READOBJ, "--coff-tls-directory", req.output_path});
  EXPECT_NE(tls.out.find("AddressOfIndex"), std::string::npos) << tls.out;
  test::Run run = wine(dir, "host.exe");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("tls 3 5 1\n"), std::string::npos) << run.out;
}

// -l NAME finds the mingw-w64 sysroot's libNAME.a; without a sysroot, or
// with a name nothing has, the error names the library and where it looked.
TEST(WindowsDll, LibraryNamesAreFoundInTheSysroot) {
  LinkService svc;
  std::string dir = test::temp_dir();
  Bytes obj = test::compile_c(kWin64, "__declspec(dllimport) int __stdcall MessageBeep(unsigned);\n"
                                      "int beep(unsigned x) { return MessageBeep(x); }\n");
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory("beep.obj", obj));
  req.exports = ExportPolicy::list({"beep"});
  req.sysroot = HOTLINK_TEST_MINGW_SYSROOT;
  req.libraries = {"user32"};
  req.output_path = dir + "/beep.dll";
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_NE(coff_imports(req.output_path).find("Name: USER32.dll"), std::string::npos);

  req.libraries = {"nosuchlib"};
  LinkResult missing = svc.link(req);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error->code, ErrorCode::InputNotFound);
  EXPECT_NE(missing.error->message.find("libnosuchlib.a"), std::string::npos) << missing.error->to_string();
  EXPECT_NE(missing.error->message.find(HOTLINK_TEST_MINGW_SYSROOT), std::string::npos) << missing.error->to_string();

  req.sysroot.clear();
  req.libraries = {"user32"};
  LinkResult bare = svc.link(req);
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error->hint.find("--sysroot"), std::string::npos) << bare.error->to_string();
}

// An undefined symbol that a library of the sysroot defines: the error says
// which one and how to link it; without a sysroot, it says which sysroot.
TEST(WindowsDll, UndefinedSymbolsNameTheLibraryThatHasThem) {
  LinkService svc;
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory(
      "v.obj", test::compile_c(kWin64, "int __mingw_vsnprintf(char *, unsigned long long, const char *, void *);\n"
                                       "int fmt(char *b) { return __mingw_vsnprintf(b, 10, \"x\", 0); }\n")));
  req.exports = ExportPolicy::list({"fmt"});
  req.sysroot = HOTLINK_TEST_MINGW_SYSROOT;
  req.output_path = test::temp_dir() + "/v.dll";
  LinkResult with = svc.link(req);
  ASSERT_FALSE(with.ok());
  EXPECT_EQ(with.error->code, ErrorCode::UndefinedSymbol);
  EXPECT_EQ(with.error->symbol, "__mingw_vsnprintf");
  EXPECT_EQ(with.error->hint, "defined in libmingwex.a of the sysroot; add -l mingwex");

  req.sysroot.clear();
  LinkResult without = svc.link(req);
  ASSERT_FALSE(without.ok());
  EXPECT_NE(without.error->hint.find("no sysroot was given"), std::string::npos) << without.error->hint;
  EXPECT_NE(without.error->hint.find("--sysroot " HOTLINK_TEST_MINGW_SYSROOT " -l mingwex"), std::string::npos)
      << without.error->hint;
  EXPECT_FALSE(test::exists(req.output_path));
}

// An MSVC-ABI C++ kernel against the mingw-w64 sysroot, which has no MSVC
// C++ runtime: hotlink's import libraries and support code make it work
// under Wine with either CRT (static constructor on load, destructor on
// unload, throw/catch, new/delete, dynamic_cast, thread-safe statics).
TEST(WindowsDll, MsvcCxxKernelRunsUnderWineWithEitherCrt) {
  LinkService svc;
  std::string dir = test::temp_dir();
  LinkResult h = link_host_exe(svc, "msvc_host.c", dir);
  ASSERT_TRUE(h.ok()) << h.error->to_string();
  Bytes obj = test::compile_with({HOTLINK_TEST_CLANG, "--target=x86_64-pc-windows-msvc", "-x", "c++", "-O1",
                                  "-fcxx-exceptions", "-fexceptions", "-c"},
                                 source_file("msvc_kernel.cpp"));
  for (WindowsCrt crt : {WindowsCrt::Auto, WindowsCrt::Msvcrt}) {
    bool ucrt = crt == WindowsCrt::Auto;
    SCOPED_TRACE(ucrt ? "ucrt" : "msvcrt");
    LinkRequest req;
    req.target = kWin64;
    req.inputs.push_back(Input::memory("msvc_kernel.obj", obj));
    req.sysroot = HOTLINK_TEST_MINGW_SYSROOT;
    req.coff.windows_crt = crt;
    req.exports = ExportPolicy::list({"kernel", "watch_unload"});
    req.output_path = dir + "/msvc.dll";
    LinkResult r = svc.link(req);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_NE(std::find(r.runtime.begin(), r.runtime.end(), "hotlink-msvc-cxx.lib"), r.runtime.end());
    std::string imports = coff_imports(req.output_path);
    // The C++ runtime functions bind where MSVC binds them.
    EXPECT_EQ(imports.find("Name: vcruntime140.dll") != std::string::npos, ucrt) << imports;
    EXPECT_NE(imports.find("Symbol: __CxxFrameHandler3"), std::string::npos) << imports;
    test::Run run = wine(dir, "host.exe");
    ASSERT_EQ(run.code, 0) << run.out << run.err;
    EXPECT_NE(run.out.find("msvc ok 1019 | caught 12 index out of range | unload 42\n"), std::string::npos)
        << run.out;
  }
}

// The support code compiles for every Windows architecture, with each
// one's spelling of the names (i386: PAX / I, stdcall's @12).
TEST(WindowsDll, MsvcCxxRuntimeIsMadeForEveryArchitecture) {
  struct Case {
    const char *triple, *new_name, *entry;
  } cases[] = {
      {"x86_64-pc-windows-msvc", "??2@YAPEAX_K@Z", "_DllMainCRTStartup"},
      {"aarch64-pc-windows-msvc", "??2@YAPEAX_K@Z", "_DllMainCRTStartup"},
      {"i686-pc-windows-msvc", "??2@YAPAXI@Z", "__DllMainCRTStartup@12"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.triple);
    auto target = detail::resolve_target(c.triple);
    ASSERT_TRUE(target.ok());
    for (const char *crt : {"ucrt", "msvcrt"}) {
      auto rt = detail::msvc_cxx_runtime(*target, crt);
      ASSERT_TRUE(rt.ok()) << rt.error().to_string();
      const std::vector<std::string> &p = (*rt)->provides;
      for (const char *name : {c.new_name, c.entry})
        EXPECT_NE(std::find(p.begin(), p.end(), name), p.end()) << crt << " " << name;
    }
  }
}

// Every function hotlink's import libraries name is exported by the DLL
// it names (Wine's builds of vcruntime140, vcruntime140_1, msvcp140 and
// msvcrt): a name the DLL lacks would fail only when the DLL loads.
TEST(WindowsDll, MsvcCxxImportLibrariesNameOnlyWhatTheDllsExport) {
  auto target = detail::resolve_target(kWin64);
  ASSERT_TRUE(target.ok());
  for (const char *crt : {"ucrt", "msvcrt"}) {
    SCOPED_TRACE(crt);
    auto rt = detail::msvc_cxx_runtime(*target, crt);
    ASSERT_TRUE(rt.ok()) << rt.error().to_string();
    std::vector<detail::MsvcCxxRuntime::Library> libs = (*rt)->before_crt;
    libs.insert(libs.end(), (*rt)->after_crt.begin(), (*rt)->after_crt.end());
    std::size_t checked = 0;
    for (const auto &lib : libs) {
      if (lib.name == "hotlink-msvc-cxx.lib")
        continue; // support code, not imports
      std::string dll = lib.name.substr(0, lib.name.size() - 4) + ".dll";
      if (dll == "msvcrt-cxx.dll")
        dll = "msvcrt.dll";
      std::vector<std::string> exported = coff_export_names(std::string(HOTLINK_TEST_WINE_DLL_DIR) + "/" + dll);
      ASSERT_FALSE(exported.empty()) << dll;
      llvm::MemoryBufferRef ref(llvm::StringRef(reinterpret_cast<const char *>(lib.bytes.data()), lib.bytes.size()),
                                lib.name);
      auto archive = llvm::object::Archive::create(ref);
      ASSERT_TRUE(bool(archive)) << llvm::toString(archive.takeError());
      for (const llvm::object::Archive::Symbol &sym : (*archive)->symbols()) {
        llvm::StringRef name = sym.getName();
        if (!name.consume_front("__imp_"))
          continue;
        ++checked;
        EXPECT_TRUE(std::binary_search(exported.begin(), exported.end(), name.str())) << dll << ": " << name.str();
      }
    }
    EXPECT_GT(checked, 10u);
  }
}

// Static constructors without a sysroot would never run: the link says so.
TEST(WindowsDll, StaticConstructorsWithoutASysrootAreReported) {
  LinkService svc;
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory(
      "s.obj", test::compile_with({HOTLINK_TEST_CLANG, "--target=x86_64-pc-windows-msvc", "-x", "c++", "-O1", "-c"},
                                  "int seed();\nint value = seed();\nextern \"C\" int get() { return value; }\n")));
  req.exports = ExportPolicy::list({"get"});
  req.undefined = Undefined::Allow;
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  bool warned = false;
  for (const Diagnostic &d : r.diagnostics)
    warned |= d.severity == Severity::Warning && d.message.find("static initializers") != std::string::npos;
  EXPECT_TRUE(warned);
}

// ---------------------------------------------------------------------------
// GNU-ABI DLLs (x86_64-w64-mingw32): the runtime a mingw driver links.

const char *kMingw64 = "x86_64-w64-mingw32";

// A C++ kernel with exceptions, std::string and a static constructor, from
// clang++ and from mingw-w64 GCC: linked with libstdc++ and the mingw
// runtime, it gives the right strings under Wine.
TEST(MingwDll, CxxKernelWithExceptionsRunsUnderWine) {
  LinkService svc;
  std::string dir = test::temp_dir();
  LinkResult h = link_host_exe(svc, "gnu_host.c", dir);
  ASSERT_TRUE(h.ok()) << h.error->to_string();
  const std::string source = source_file("gnu_kernel.cpp");
  struct Compiler {
    const char *name;
    std::vector<std::string> argv;
  } compilers[] = {
      {"clang++", {HOTLINK_TEST_CLANG, "--target=x86_64-w64-mingw32", "-x", "c++", "-O1", "-c"}},
      {"g++", {HOTLINK_TEST_MINGW_GXX, "-x", "c++", "-O1", "-c"}},
  };
  for (const Compiler &c : compilers) {
    SCOPED_TRACE(c.name);
    LinkRequest req;
    req.target = kMingw64;
    req.inputs.push_back(Input::memory("gnu_kernel.o", test::compile_with(c.argv, source)));
    req.exports = ExportPolicy::list({"kernel"});
    req.output_path = dir + "/cxx.dll";
    LinkResult r = svc.link(req);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    // What `clang++ -shared --target=x86_64-w64-mingw32` links.
    for (const char *part : {"dllcrt2.o", "crtbegin.o", "libstdc++.dll.a", "libmingw32.a", "libgcc.a",
                             "libmingwex.a", "libmsvcrt.a", "libkernel32.a", "crtend.o"})
      EXPECT_NE(std::find(r.runtime.begin(), r.runtime.end(), part), r.runtime.end()) << part;
    EXPECT_EQ(coff_export_names(req.output_path), (std::vector<std::string>{"kernel"}));
    EXPECT_NE(coff_imports(req.output_path).find("Name: libstdc++-6.dll"), std::string::npos);
    test::Run run = wine(dir, "host.exe", {HOTLINK_TEST_MINGW_GCC_DIR, HOTLINK_TEST_MINGW_SYSROOT "/lib"});
    ASSERT_EQ(run.code, 0) << run.out << run.err;
    EXPECT_NE(run.out.find("cxx 3 one | 3 n=7 | -1 caught negative: -3\n"), std::string::npos) << run.out;
  }
}

// Debian's libz.a for mingw-w64, with `all` and nothing else: a zlib1.dll
// (with .def and import library) that exports zlib's API, and a host linked
// against the import library compresses and decompresses with it under Wine.
TEST(MingwDll, DebianZlibBecomesAZlib1DllAHostUsesUnderWine) {
  LinkService svc;
  std::string dir = test::temp_dir();
  LinkRequest req;
  req.target = kMingw64;
  req.inputs.push_back(Input::file(HOTLINK_TEST_MINGW_SYSROOT "/lib/libz.a"));
  req.exports = ExportPolicy::all();
  req.output_path = dir + "/zlib1.dll";
  req.coff.def_output = dir + "/zlib1.def";
  req.coff.implib_output = dir + "/zlib1.lib";
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(test::exists(req.coff.def_output));
  EXPECT_TRUE(test::exists(req.coff.implib_output));

  // Every function Debian's own zlib1.dll exports (zlib's win32/zlib.def)
  // is exported; the others are zlib's internal functions (ZLIB_INTERNAL:
  // hidden on ELF, but COFF objects carry no visibility), which zlib.h
  // does not declare.
  std::vector<std::string> ours = coff_export_names(req.output_path);
  std::vector<std::string> reference = coff_export_names(HOTLINK_TEST_MINGW_SYSROOT "/lib/zlib1.dll");
  ASSERT_GT(reference.size(), 80u);
  std::vector<std::string> missing, extra;
  std::set_difference(reference.begin(), reference.end(), ours.begin(), ours.end(), std::back_inserter(missing));
  std::set_difference(ours.begin(), ours.end(), reference.begin(), reference.end(), std::back_inserter(extra));
  EXPECT_TRUE(missing.empty()) << missing.front();
  Bytes header = test::read_file(HOTLINK_TEST_MINGW_SYSROOT "/include/zlib.h");
  std::string zlib_h(header.begin(), header.end());
  for (const std::string &e : extra)
    EXPECT_EQ(zlib_h.find(" " + e + " OF("), std::string::npos) << e << " is public, yet Debian's DLL lacks it";
  EXPECT_LE(extra.size(), 16u);

  LinkResult h = link_host_exe(svc, "zlib_host.c", dir, {req.coff.implib_output});
  ASSERT_TRUE(h.ok()) << h.error->to_string();
  EXPECT_NE(coff_imports(dir + "/host.exe").find("Name: zlib1.dll"), std::string::npos);
  test::Run run = wine(dir, "host.exe");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("zlib 65536 -> "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" -> 65536 same\n"), std::string::npos) << run.out;
}

// A Win32 function in a library the mingw driver does not link: the error
// names the library; with -l it links and imports from it.
TEST(MingwDll, UndefinedWin32FunctionNamesItsLibrary) {
  LinkService svc;
  LinkRequest req;
  req.target = kMingw64;
  req.inputs.push_back(Input::memory(
      "t.o", test::compile_c(kMingw64, "__declspec(dllimport) unsigned __stdcall timeGetTime(void);\n"
                                       "unsigned now(void) { return timeGetTime(); }\n")));
  req.exports = ExportPolicy::list({"now"});
  req.output_path = test::temp_dir() + "/t.dll";
  LinkResult r = svc.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::UndefinedSymbol);
  EXPECT_NE(r.error->symbol.find("timeGetTime"), std::string::npos) << r.error->to_string();
  EXPECT_NE(r.error->hint.find("defined in libwinmm.a of the mingw-w64 sysroot"), std::string::npos)
      << r.error->to_string();
  EXPECT_NE(r.error->hint.find("add -l winmm"), std::string::npos) << r.error->to_string();
  EXPECT_FALSE(test::exists(req.output_path));
  req.libraries = {"winmm"};
  LinkResult fixed = svc.link(req);
  ASSERT_TRUE(fixed.ok()) << fixed.error->to_string();
  EXPECT_NE(coff_imports(req.output_path).find("Name: WINMM.dll"), std::string::npos);
}

// --sysroot for a mingw target: the triple's folder (as for -windows-msvc)
// or the root holding it; a root without the runtime's libraries is an
// error that names what is missing, not a link that fails inside lld.
TEST(MingwDll, SysrootMayNameTheTripleFolderOrTheRoot) {
  LinkService svc;
  LinkRequest req;
  req.target = kMingw64;
  req.inputs.push_back(Input::memory("p.o", test::compile_c(kMingw64, "#include <stdio.h>\n"
                                                                     "int show(int x) { return printf(\"%d\", x); }\n")));
  req.exports = ExportPolicy::list({"show"});
  for (const char *root : {HOTLINK_TEST_MINGW_SYSROOT, "/usr"}) {
    SCOPED_TRACE(root);
    req.sysroot = root;
    LinkResult r = svc.link(req);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_NE(std::find(r.runtime.begin(), r.runtime.end(), "libmingwex.a"), r.runtime.end());
  }
  std::string fake = test::temp_dir();
  ASSERT_TRUE(std::filesystem::create_directories(fake + "/x86_64-w64-mingw32/lib"));
  test::write_file(fake + "/x86_64-w64-mingw32/lib/dllcrt2.o",
                   test::read_file(HOTLINK_TEST_MINGW_SYSROOT "/lib/dllcrt2.o"));
  req.sysroot = fake;
  LinkResult r = svc.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::InputNotFound);
  EXPECT_NE(r.error->message.find("-lmingw32"), std::string::npos) << r.error->to_string();
  EXPECT_NE(r.error->hint.find("g++-mingw-w64-x86-64-posix"), std::string::npos) << r.error->to_string();
}

// No mingw-w64 toolchain for the target: a self-contained kernel still
// links, with a warning that names what is missing and the package.
TEST(MingwDll, WithoutTheRuntimeALinkIsBareAndSaysWhy) {
  LinkService svc;
  LinkRequest req;
  req.target = "aarch64-w64-mingw32";
  req.inputs.push_back(Input::memory("k.o", test::compile_c("aarch64-w64-mingw32", "int twice(int x) { return 2 * x; }\n")));
  req.exports = ExportPolicy::all();
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.exports, (std::vector<std::string>{"twice"}));
  EXPECT_TRUE(r.runtime.empty());
  bool warned = false;
  for (const Diagnostic &d : r.diagnostics)
    warned |= d.severity == Severity::Warning && d.message.find("no mingw-w64 runtime") != std::string::npos;
  EXPECT_TRUE(warned);
}

// --no-default-libs is documented for the mingw targets too: a bare DLL
// of the inputs alone (no dllcrt2.o, no mingwex), while the msvc and
// Mach-O platforms refuse it naming the flag.
TEST(MingwDll, NoDefaultLibsLinksTheInputsAlone) {
  LinkService svc;
  LinkRequest req;
  req.target = kMingw64;
  req.inputs.push_back(Input::memory("k.o", test::compile_c(kMingw64, "int twice(int x) { return 2 * x; }\n")));
  req.exports = ExportPolicy::all();
  req.runtime = Runtime::None;
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.exports, (std::vector<std::string>{"twice"}));
  EXPECT_TRUE(r.runtime.empty());
  for (const char *other : {"x86_64-pc-windows-msvc", "arm64-apple-macos"}) {
    LinkRequest o = req;
    o.target = other;
    o.inputs = {Input::memory("k.o", test::compile_c(other, "int twice(int x) { return 2 * x; }\n"))};
    LinkResult refused = svc.link(o);
    ASSERT_FALSE(refused.ok()) << other;
    EXPECT_EQ(refused.error->code, ErrorCode::BadRequest);
    EXPECT_EQ(refused.error->symbol, "--no-default-libs");
  }
}

// The PDB of a DLL linked with debug info: published beside it, named by
// the DLL's CodeView record, with a GUID that follows from the content, and
// nothing left in the scratch directory.
std::string pdb_guid(const std::string &dll) {
  test::Run r = test::run({HOTLINK_TEST_LLVM_READOBJ, "--coff-debug-directory", dll});
  std::size_t at = r.out.find("PDBGUID:");
  return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
}

TEST(WindowsDll, PdbIsPublishedBesideTheDllAndNamedByIt) {
  std::string dir = test::temp_dir(), scratch = test::temp_dir();
  ::setenv("HOTLINK_TMPDIR", scratch.c_str(), 1);
  auto kernel = [](int k) {
    return test::compile_c(kWin64, "int f(int x) { return x * " + std::to_string(k) + "; }\n"
                                   HOTLINK_TEST_F_ARGV,
                           {"-g", "-gcodeview"});
  };
  LinkService svc;
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory("kernel.obj", kernel(3)));
  req.output_path = dir + "/kernel.dll";
  req.coff.pdb_output = dir + "/kernel.pdb";
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.pdb_path, dir + "/kernel.pdb");
  ASSERT_TRUE(test::exists(dir + "/kernel.pdb"));
  test::Run syms = test::run({HOTLINK_TEST_LLVM_PDBUTIL, "dump", "--symbols", dir + "/kernel.pdb"});
  EXPECT_EQ(syms.code, 0) << syms.err;
  EXPECT_NE(syms.out.find("S_GPROC32"), std::string::npos) << syms.out;
  EXPECT_NE(syms.out.find("`f_argv`"), std::string::npos) << syms.out;
  EXPECT_NE(syms.out.find("`f`"), std::string::npos) << syms.out;
  test::Run dbg = test::run({HOTLINK_TEST_LLVM_READOBJ, "--coff-debug-directory", dir + "/kernel.dll"});
  EXPECT_NE(dbg.out.find("PDBFileName: kernel.pdb"), std::string::npos) << dbg.out;
  std::string guid = pdb_guid(dir + "/kernel.dll");
  EXPECT_FALSE(guid.empty());
  struct stat st;
  ASSERT_EQ(::stat((dir + "/kernel.pdb").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0111, 0u) << "a PDB is not executable";

  // Other code, another GUID.
  LinkRequest other = req;
  other.inputs = {Input::memory("kernel.obj", kernel(4))};
  other.output_path = dir + "/other.dll";
  other.coff.pdb_output = dir + "/other.pdb";
  ASSERT_TRUE(svc.link(other).ok());
  EXPECT_NE(pdb_guid(dir + "/other.dll"), guid);

  // --debug alone: the PDB goes beside the DLL under its name.
  LinkRequest debug = req;
  debug.coff.pdb_output.clear();
  debug.coff.debug = true;
  debug.output_path = dir + "/k2.dll";
  LinkResult d = svc.link(debug);
  ASSERT_TRUE(d.ok()) << d.error->to_string();
  EXPECT_TRUE(test::exists(dir + "/k2.pdb"));
  EXPECT_NE(test::run({HOTLINK_TEST_LLVM_READOBJ, "--coff-debug-directory", dir + "/k2.dll"}).out.find("PDBFileName: k2.pdb"),
            std::string::npos);

  // The cache keeps it as a companion: a hit publishes the same PDB.
  auto cache = cache::Cache::open({test::temp_dir() + "/cache"});
  ASSERT_TRUE(cache.ok());
  LinkService cached({.cache = cache.value()});
  LinkRequest c1 = req;
  c1.output_path = dir + "/c1/kernel.dll";
  c1.coff.pdb_output = dir + "/c1/kernel.pdb";
  std::filesystem::create_directories(dir + "/c1");
  ASSERT_EQ(cached.link(c1).cache, CacheUse::Miss);
  Bytes stored = test::read_file(dir + "/c1/kernel.pdb");
  std::filesystem::remove(dir + "/c1/kernel.pdb");
  LinkResult hit = cached.link(c1);
  EXPECT_EQ(hit.cache, CacheUse::Hit);
  EXPECT_FALSE(stored.empty());
  EXPECT_EQ(test::read_file(dir + "/c1/kernel.pdb"), stored);
  EXPECT_EQ(pdb_guid(dir + "/c1/kernel.dll").empty(), false);
  ::unsetenv("HOTLINK_TMPDIR");
  EXPECT_EQ(test::count_entries(scratch), 0u) << "a PDB or scratch directory was left behind";
}

TEST(WindowsDll, PdbsAreForCoffTargets) {
  LinkRequest req;
  req.inputs.push_back(Input::memory("k.o", test::compile_c(host_target(), "int f(void) { return 1; }\n")));
  req.exports = ExportPolicy::list({"f"});
  req.coff.pdb_output = test::temp_dir() + "/k.pdb";
  LinkService svc;
  LinkResult r = svc.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::BadRequest);
  EXPECT_EQ(r.error->symbol, "--pdb");
}

TEST(WindowsDll, DefaultLibDirectivesAreReportedNotFatal) {
  // -fms-runtime-lib=dll makes clang record /DEFAULTLIB:msvcrt.lib and
  // /DEFAULTLIB:oldnames.lib, as MSVC's cl /MD does.
  Bytes obj = test::compile_c(kWin64, source_file("kernel.c"), {"-fms-runtime-lib=dll"});
  LinkService svc;
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory("kernel.obj", obj));
  req.sysroot = HOTLINK_TEST_MINGW_SYSROOT;
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  bool crt_note = false, oldnames_warning = false;
  for (const Diagnostic &d : r.diagnostics) {
    crt_note |= d.severity == Severity::Note && d.symbol == "msvcrt" && d.file == "kernel.obj";
    oldnames_warning |= d.severity == Severity::Warning && d.symbol == "oldnames" &&
                        d.message.find("does not have") != std::string::npos;
  }
  EXPECT_TRUE(crt_note) << "the CRT directive was not reported";
  EXPECT_TRUE(oldnames_warning) << "the missing oldnames library was not reported";
}

TEST(WindowsDll, MsvcSdkLayoutSysroot) {
  // An MSVC-style layout, with import libraries made from .def files (no
  // SDK here): um/x64/kernel32.lib, ucrt/x64/ucrt.lib, and an x86 folder
  // that must be skipped.
  std::string root = test::temp_dir() + "/sdk";
  for (const char *d : {"/sdk", "/sdk/um", "/sdk/um/x64", "/sdk/um/x86", "/sdk/ucrt", "/sdk/ucrt/x64"})
    ASSERT_EQ(::mkdir((root.substr(0, root.size() - 4) + d).c_str(), 0755), 0);
  auto write_lib = [&](const std::string &path, const std::string &def, const char *machine) {
    auto lib = import_library_from_def(def, path, machine);
    ASSERT_TRUE(lib.ok()) << lib.error().to_string();
    test::write_file(path, lib->bytes);
  };
  write_lib(root + "/um/x64/kernel32.lib", "LIBRARY KERNEL32.dll\nEXPORTS\n  GetCurrentProcessId\n", "x64");
  write_lib(root + "/um/x86/kernel32.lib", "LIBRARY KERNEL32.dll\nEXPORTS\n  _GetCurrentProcessId@0\n", "x86");
  write_lib(root + "/ucrt/x64/ucrt.lib",
            "LIBRARY ucrtbase.dll\nEXPORTS\n  cosf\n  malloc\n  free\n  memcpy\n", "x64");
  LinkService svc;
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory("kernel.obj", test::compile_c(kWin64, source_file("kernel.c"))));
  req.sysroot = root;
  std::string dir = test::temp_dir();
  req.output_path = dir + "/kernel.dll";
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.system_libraries, (std::vector<std::string>{"ucrt.lib", "kernel32.lib"}));
  EXPECT_TRUE(r.import_thunks.empty()) << "an MSVC import library has callable thunks";
  std::string imports = coff_imports(req.output_path);
  EXPECT_NE(imports.find("Name: ucrtbase.dll"), std::string::npos) << imports;
  EXPECT_NE(imports.find("Name: KERNEL32.dll"), std::string::npos) << imports;
}

TEST(WindowsDll, AUserDefWithASyntaxErrorNamesTheLine) {
  std::string def = test::temp_dir() + "/user.def";
  std::string text = "LIBRARY kernel.dll\nEXPORTS\n  f\n  f_argv @1 @2 ,\n";
  test::write_file(def, Bytes(text.begin(), text.end()));
  LinkService svc;
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory("kernel.obj", test::compile_c(kWin64, source_file("kernel.c"))));
  req.sysroot = HOTLINK_TEST_MINGW_SYSROOT;
  req.coff.def_input = def;
  LinkResult r = svc.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::InvalidInput);
  EXPECT_EQ(r.error->input, def);
  EXPECT_EQ(r.error->message.rfind("line 4:", 0), 0u) << r.error->message;
}

TEST(WindowsDll, DataOfferedOnlyThroughImpGetsNoThunk) {
  // An SDK-style sysroot whose library offers some_data only as
  // __imp_some_data (DATA) and some_fn as a function.
  std::string root = test::temp_dir();
  for (auto [file, def] : {std::pair{"/kernel32.lib", "LIBRARY KERNEL32.dll\nEXPORTS\n  GetCurrentProcessId\n"},
                           std::pair{"/ucrt.lib", "LIBRARY ucrtbase.dll\nEXPORTS\n  some_fn\n"},
                           std::pair{"/extra.lib", "LIBRARY extra.dll\nEXPORTS\n  some_data DATA\n  called DATA\n"}}) {
    auto lib = import_library_from_def(def, file, "x64");
    ASSERT_TRUE(lib.ok()) << lib.error().to_string();
    test::write_file(root + file, lib->bytes);
  }
  LinkService svc;
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory(
      "k.obj", test::compile_c(kWin64, "extern int some_data; int some_fn(void); int called(int);\n"
                                       "int f(int x) { return some_data + some_fn() + called(x); }\n"
                                       HOTLINK_TEST_F_ARGV)));
  req.sysroot = root;
  req.libraries = {root + "/extra.lib"};
  LinkResult r = svc.link(req);
  // `called` is only called: a thunk makes it work. `some_data` is read:
  // it gets no thunk (reading the thunk's bytes would be wrong), a warning
  // says why, and lld reports it undefined.
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::UndefinedSymbol);
  EXPECT_NE(r.error->message.find("some_data"), std::string::npos) << r.error->message;
  EXPECT_EQ(r.import_thunks, (std::vector<std::string>{"called"}));
  bool warned = false;
  for (const Diagnostic &d : r.diagnostics)
    warned |= d.symbol == "some_data" && d.message.find("dllimport") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(WindowsDll, BadSysrootsAreNamed) {
  LinkService svc;
  LinkRequest req;
  req.target = kWin64;
  req.inputs.push_back(Input::memory("kernel.obj", test::compile_c(kWin64, source_file("kernel.c"))));
  req.sysroot = test::temp_dir() + "/nope";
  LinkResult r = svc.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::BadRequest);
  EXPECT_EQ(r.error->input, req.sysroot);

  req.sysroot = test::temp_dir(); // exists, holds no import library
  r = svc.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->symbol, "--sysroot");
  EXPECT_NE(r.error->message.find("no Windows import libraries"), std::string::npos)
      << r.error->message;
  EXPECT_NE(r.error->hint.find("mingw-w64"), std::string::npos);

  req.sysroot = HOTLINK_TEST_MINGW_SYSROOT; // x64 libraries for an arm64 kernel
  req.target = "aarch64-pc-windows-msvc";
  req.inputs = {Input::memory("kernel.obj",
                              test::compile_c(req.target, source_file("kernel.c")))};
  r = svc.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::ArchMismatch) << r.error->to_string();
  EXPECT_EQ(r.error->input, req.sysroot);
  EXPECT_NE(r.error->message.find("libkernel32.a"), std::string::npos) << r.error->message;

  LinkRequest exe = req;
  exe.target = "x86_64-linux-gnu";
  exe.sysroot.clear();
  exe.inputs = {Input::memory("k.o", test::compile_c("x86_64-linux-gnu", "int f(void){return 0;}"))};
  exe.coff.executable = true;
  exe.coff.entry = "f";
  exe.exports = ExportPolicy::none();
  r = svc.link(exe);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->symbol, "--exe") << r.error->to_string();
}

INSTANTIATE_TEST_SUITE_P(Arches, MachOStructure,
                         ::testing::Values("x86_64-apple-macos", "arm64-apple-macos"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                           return std::string(i.param).substr(0, std::string(i.param).find('-'));
                         });

} // namespace
} // namespace hotlink
