// Artifacts for other targets, run by a real loader where this host has one
// (wasm modules instantiated by Node.js) and checked structurally where it
// has none (Mach-O dylibs).
#include "exports/symbols.h"
#include "linker/implib.h"
#include "linker/linker.h"
#include "linker/service.h"
#include "loader/structure.h"
#include "test/support.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <cstring>

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
                              "int f_argv(void **a) { *(int *)a[1] = f(*(int *)a[0]); return 0; }\n"
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

// A JIT-style kernel that calls the C library and a host function.
const char *kMachOKernel =
    "void *memcpy(void *, const void *, unsigned long);\n"
    "extern int host_offset(void);\n"
    "int f(int x) { char b[64]; memcpy(b, &x, (unsigned long)(x & 3) + 1); return b[0] * 7 + host_offset(); }\n"
    "int f_argv(void **a) { *(int *)a[1] = f(*(int *)a[0]); return 0; }\n"
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
  auto s = loader::check_macho_dylib(dylib, path);
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
  EXPECT_FALSE(loader::check_macho_dylib(truncated, path).ok());
  if (triple.rfind("arm64", 0) == 0) {
    Bytes patched = dylib;
    patched[0x4000 - 1] ^= 0xff; // inside the first signed page
    auto r = loader::check_macho_dylib(patched, path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().symbol, "LC_CODE_SIGNATURE");
    EXPECT_NE(r.error().message.find("hash does not match"), std::string::npos)
        << r.error().message;
  }
  Bytes object = test::compile_c(triple, kMachOKernel);
  auto r = loader::check_macho_dylib(object, "kernel.o");
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
                              "int f_argv(void **a) { return f(*(int *)a[0]); }\n");
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

INSTANTIATE_TEST_SUITE_P(Arches, MachOStructure,
                         ::testing::Values("x86_64-apple-macos", "arm64-apple-macos"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                           return std::string(i.param).substr(0, std::string(i.param).find('-'));
                         });

} // namespace
} // namespace hotlink
