// hotlink against ld.lld on inputs written for the comparison: each case
// is assembly exercising one thing a linker can get wrong (TLS, IFUNC,
// COMDAT, visibility, weak undefined references, init/fini arrays, .symver
// versions, absolute symbols, data a copy relocation could take,
// GOTPCRELX). Each is linked by `ld.lld-22 -shared` and by `hotlink link
// --policy all --no-default-libs` (the same bare line: no C library, no
// startup objects) with the same version script where the case has one.
// Then: the same dynamic symbols (name, version, type, binding, defined or
// not), both load or both refuse, and each library's probe() returns the
// same value. Every difference by design is listed in kByDesign with its
// reason.
#include "hotlink/link_service.h"
#include "hotlink/symbols.h"
#include "test/support.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <dlfcn.h>
#include <sys/stat.h>
#include <set>
#include <sstream>

namespace hotlink {
namespace {

using test::Bytes;

struct Case {
  const char *name;
  const char *assembly;
  const char *version_script; // empty: none
  int probe;                  // what probe() returns, -1: it must not load
};

// Differences by design, as "case: dynamic symbol". Beside these:
// hotlink's default link adds -Bsymbolic-non-weak, which binds calls
// inside the library but changes no dynamic symbol; --policy all leaves
// out names with a '.' (compiler machinery such as .refptr.*), which no
// case here defines.
const std::set<std::string> kByDesign = {
    // --policy all exports every visible definition that the user's
    // script does not name: the policy's names go into hotlink's own
    // anonymous node, so a `local: *` glob of the user's does not hide
    // them (a name the script lists as local is hidden). ld.lld, given
    // the script alone, makes them local.
    "symver-local-glob: foo_v1 type=2 bind=1 defined",
    "symver-local-glob: foo_v2 type=2 bind=1 defined",
};

// foo at two versions, v1 and v2 (the default): for the .symver cases.
#define FOO_V1_V2 \
  ".text\n" \
  ".globl foo_v1\n" \
  ".type foo_v1,@function\n" \
  "foo_v1: movl $1, %eax\n" \
  "  ret\n" \
  ".globl foo_v2\n" \
  ".type foo_v2,@function\n" \
  "foo_v2: movl $2, %eax\n" \
  "  ret\n" \
  ".symver foo_v1, foo@v1\n" \
  ".symver foo_v2, foo@@v2\n"

const Case kCases[] = {
    {"tls", R"(
.section .tbss,"awT",@nobits
.globl tv
.type tv,@object
.size tv,4
.p2align 2
tv: .zero 4
.text
.globl probe
.type probe,@function
probe:
  pushq %rax
  data16 leaq tv@TLSGD(%rip), %rdi
  data16 data16 rex64 call __tls_get_addr@PLT
  movl $7, (%rax)
  movl (%rax), %eax
  popq %rcx
  ret
)", "", 7},
    {"ifunc", R"(
.text
.type impl,@function
impl: movl $11, %eax
  ret
.type resolver,@function
resolver: leaq impl(%rip), %rax
  ret
.globl fi
.type fi,@gnu_indirect_function
.set fi, resolver
.globl probe
.type probe,@function
probe: jmp fi@PLT
)", "", 11},
    {"comdat", R"(
.section .text.inl,"axG",@progbits,inl,comdat
.weak inl
.type inl,@function
inl: movl $5, %eax
  ret
.section .text.inl2,"axG",@progbits,inl,comdat
.text
.globl probe
.type probe,@function
probe: jmp inl@PLT
)", "", 5},
    {"visibility", R"(
.text
.globl pub, prot, hid
.protected prot
.hidden hid
.type pub,@function
pub: movl $1, %eax
  ret
.type prot,@function
prot: movl $2, %eax
  ret
.type hid,@function
hid: movl $3, %eax
  ret
.globl probe
.type probe,@function
probe: jmp hid
)", "", 3},
    {"weak-undefined", R"(
.weak wu
.text
.globl probe
.type probe,@function
probe: movq wu@GOTPCREL(%rip), %rax
  testq %rax, %rax
  sete %al
  movzbl %al, %eax
  ret
)", "", 1},
    {"init-fini-arrays", R"(
.data
.globl counter
.type counter,@object
.size counter,4
counter: .long 0
.text
.type init,@function
init: movq counter@GOTPCREL(%rip), %rax
  addl $1, (%rax)
  ret
.type fini,@function
fini: ret
.section .init_array,"aw",@init_array
.p2align 3
.quad init
.section .fini_array,"aw",@fini_array
.p2align 3
.quad fini
.text
.globl probe
.type probe,@function
probe: movq counter@GOTPCREL(%rip), %rax
  movl (%rax), %eax
  ret
)", "", 1},
    {"symver", FOO_V1_V2 R"(
.globl probe
.type probe,@function
probe: jmp foo@PLT
)", "v1 { };\nv2 { global: foo; };\n", 2},
    // The user's report: `--policy all` put foo@@v2 into hotlink's own
    // script and lld refused it ("version script assignment of 'global'
    // to symbol 'foo@@v2' failed").
    {"symver-local-glob", FOO_V1_V2 R"(
.globl bar
.type bar,@function
bar: ret
.globl probe
.type probe,@function
probe: jmp foo@PLT
)", "v1 { };\nv2 { global: foo; bar; probe; local: *; };\n", 2},
    // Without a script that defines its versions, ld.lld refuses .symver
    // names ("has undefined version"); so must hotlink.
    {"symver-without-script", R"(
.text
.globl foo_v1
.type foo_v1,@function
foo_v1: movl $1, %eax
  ret
.symver foo_v1, foo@@v1
.globl probe
.type probe,@function
probe: jmp foo_v1
)", "", -1},
    {"absolute", R"(
.globl _foo, _bar, probe
_foo = 0x1234
_bar = 0x5678
.text
.globl label
label: ret
.type probe,@function
probe: movl $_bar - _foo, %eax
  ret
)", "", 0x5678 - 0x1234},
    {"copy-relocation-data", R"(
.data
.globl gdata
.type gdata,@object
.size gdata,8
.p2align 3
gdata: .quad 42
.text
.globl probe
.type probe,@function
probe: movq gdata@GOTPCREL(%rip), %rax
  movl (%rax), %eax
  ret
)", "", 42},
    {"gotpcrelx", R"(
.text
.globl gf
.type gf,@function
gf: movl $9, %eax
  ret
.globl probe
.type probe,@function
probe: movq gf@GOTPCREL(%rip), %rax
  jmp *%rax
)", "", 9},
};

// "name@version TYPE BIND defined|undefined" for each dynamic symbol.
std::set<std::string> dynamic_symbols(const std::string &path) {
  std::set<std::string> out;
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return {"<unreadable>"};
  auto obj = llvm::object::ObjectFile::createObjectFile((*buf)->getMemBufferRef());
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return {"<not an object>"};
  }
  auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(obj->get());
  if (!elf)
    return {"<not ELF64>"};
  auto versions = elf->readDynsymVersions();
  if (!versions) {
    llvm::consumeError(versions.takeError());
    return {"<bad versions>"};
  }
  std::size_t i = 0;
  for (const llvm::object::ELFSymbolRef &s : elf->getDynamicSymbolIterators()) {
    std::string version;
    if (i < versions->size() && !(*versions)[i].Name.empty())
      version = ((*versions)[i].IsVerDef ? "@@" : "@") + (*versions)[i].Name;
    ++i;
    auto name = s.getName();
    std::string n = name ? name->str() : (llvm::consumeError(name.takeError()), "?");
    auto flags = s.getFlags();
    bool undefined = flags ? (*flags & llvm::object::SymbolRef::SF_Undefined) != 0
                           : (llvm::consumeError(flags.takeError()), false);
    std::ostringstream line;
    line << n << version << " type=" << int(s.getELFType()) << " bind=" << int(s.getBinding()) << " "
         << (undefined ? "undefined" : "defined");
    out.insert(line.str());
  }
  return out;
}

// probe()'s value, or -1 when the library does not load.
int load_and_probe(const std::string &path) {
  void *h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return -1;
  auto probe = reinterpret_cast<int (*)()>(::dlsym(h, "probe"));
  int v = probe ? probe() : -2;
  ::dlclose(h);
  return v;
}

class AgainstLld : public ::testing::TestWithParam<Case> {};

TEST_P(AgainstLld, SameDynamicSymbolsAndBehaviour) {
  const Case &c = GetParam();
  std::string dir = test::temp_dir(), obj = dir + "/" + c.name + ".o";
  test::write_file(obj, test::assemble("x86_64-linux-gnu", c.assembly));
  std::string script = dir + "/exports.ver";
  if (*c.version_script)
    test::write_file(script, Bytes(c.version_script, c.version_script + std::strlen(c.version_script)));
  // The same file name in two directories: the same soname in both.
  ASSERT_EQ(::mkdir((dir + "/lld").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir + "/hotlink").c_str(), 0700), 0);
  std::string by_lld = dir + "/lld/k.so", by_hotlink = dir + "/hotlink/k.so";
  std::vector<std::string> lld = {HOTLINK_TEST_LLD, "-shared", "-soname", "k.so", obj, "-o", by_lld};
  std::vector<std::string> hl = {test::bin_dir() + "/hotlink", "link", "--policy", "all", "--no-default-libs", obj,
                                 "-o", by_hotlink};
  if (*c.version_script) {
    lld.insert(lld.end(), {"--version-script", script});
    hl.insert(hl.end(), {"--version-script", script});
  }
  test::Run l = test::run(lld), h = test::run(hl);
  ASSERT_EQ(l.code == 0, h.code == 0) << "ld.lld: " << l.code << " " << l.err << "\nhotlink: " << h.code << " "
                                      << h.err;
  if (c.probe == -1) {
    EXPECT_NE(l.code, 0) << "the case expects ld.lld to refuse it";
    EXPECT_EQ(h.code, 1) << h.err;
    EXPECT_NE(h.err.find("version script"), std::string::npos) << "the hint names the fix: " << h.err;
    EXPECT_FALSE(test::exists(by_hotlink));
    return;
  }
  ASSERT_EQ(l.code, 0) << l.err;
  std::set<std::string> from_lld = dynamic_symbols(by_lld), from_hotlink = dynamic_symbols(by_hotlink);
  for (const std::string &s : from_lld)
    if (!from_hotlink.count(s) && !kByDesign.count(std::string(c.name) + ": " + s))
      ADD_FAILURE() << "ld.lld's dynamic symbol '" << s << "' is not hotlink's";
  for (const std::string &s : from_hotlink)
    if (!from_lld.count(s) && !kByDesign.count(std::string(c.name) + ": " + s))
      ADD_FAILURE() << "hotlink's dynamic symbol '" << s << "' is not ld.lld's";
  EXPECT_EQ(load_and_probe(by_lld), c.probe) << "ld.lld's library";
  EXPECT_EQ(load_and_probe(by_hotlink), c.probe) << "hotlink's library";
}

// `--policy list --export foo` said no input defines foo when the input
// defines foo@@v2 (the default version, which a reference to foo binds
// to). It exports foo at v2, and foo@v1 is exported by its version, as
// under every policy.
TEST(Versioned, TheDefaultVersionDefinesTheName) {
  const Case &c = kCases[6];
  ASSERT_STREQ(c.name, "symver");
  std::string dir = test::temp_dir(), obj = dir + "/v.o", script = dir + "/v.ver", out = dir + "/k.so";
  test::write_file(obj, test::assemble("x86_64-linux-gnu", c.assembly));
  test::write_file(script, Bytes(c.version_script, c.version_script + std::strlen(c.version_script)));
  test::Run h = test::run({test::bin_dir() + "/hotlink", "link", "--policy", "list", "--export", "foo",
                           "--version-script", script, obj, "-o", out});
  ASSERT_EQ(h.code, 0) << h.err;
  std::set<std::string> syms = dynamic_symbols(out);
  EXPECT_TRUE(syms.count("foo@@v2 type=2 bind=1 defined")) << *syms.begin();
  EXPECT_TRUE(syms.count("foo@v1 type=2 bind=1 defined"));
  EXPECT_FALSE(syms.count("foo_v2 type=2 bind=1 defined")) << "the list exports foo alone";
}

// The libraries an image names (DT_NEEDED), in order.
std::vector<std::string> needed_of(const std::string &path) {
  Bytes b = test::read_file(path);
  auto info = exports::read_artifact(b.data(), b.size(), path);
  return info ? info->needed : std::vector<std::string>{"<unreadable: " + info.error().to_string() + ">"};
}

// A shared library among the inputs, by path (`k.o libdep.so`), as ld.lld
// takes it: a DT_NEEDED on its soname, or on the path as given when it has
// none, the same dynamic symbols, and an image that runs against it.
TEST(SharedLibraryInput, ByPathIsWhatLldMakesOfIt) {
  std::string dir = test::temp_dir();
  auto shared = [&](const std::string &out, const std::string &source, std::vector<std::string> flags) {
    test::write_file(dir + "/" + out + ".c", Bytes(source.begin(), source.end()));
    std::vector<std::string> cmd = {HOTLINK_TEST_CLANG, "--target=x86_64-linux-gnu", "-shared", "-fPIC",
                                    "-fuse-ld=lld", dir + "/" + out + ".c", "-o", dir + "/" + out};
    cmd.insert(cmd.end(), flags.begin(), flags.end());
    test::Run r = test::run(cmd);
    ASSERT_EQ(r.code, 0) << r.err;
  };
  shared("libdep.so", "int dep(int x) { return 7 * x; }\n", {"-Wl,-soname,libdep.so"});
  shared("libnoso.so", "int noso(int x) { return x + 5; }\n", {});
  test::write_file(dir + "/k.o", test::compile_c("x86_64-linux-gnu",
                                                 "int dep(int); int noso(int);\n"
                                                 "int probe(void) { return dep(3) + noso(1); }\n"));
  ASSERT_EQ(::mkdir((dir + "/lld").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir + "/hotlink").c_str(), 0700), 0);
  test::RunOptions here;
  here.cwd = dir; // relative paths, as a build line gives them
  test::Run l = test::run({HOTLINK_TEST_LLD, "-shared", "-soname", "k.so", "k.o", "libdep.so", "./libnoso.so", "-o",
                           "lld/k.so"},
                          here);
  ASSERT_EQ(l.code, 0) << l.err;
  test::Run h = test::run({test::bin_dir() + "/hotlink", "link", "--policy", "all", "--no-default-libs", "k.o",
                           "libdep.so", "./libnoso.so", "-o", "hotlink/k.so"},
                          here);
  ASSERT_EQ(h.code, 0) << h.err;
  std::vector<std::string> want = {"libdep.so", "./libnoso.so"};
  EXPECT_EQ(needed_of(dir + "/lld/k.so"), want);
  EXPECT_EQ(needed_of(dir + "/hotlink/k.so"), want);
  EXPECT_EQ(dynamic_symbols(dir + "/hotlink/k.so"), dynamic_symbols(dir + "/lld/k.so"));
  // The default line (the C library and the rest a driver adds) keeps the
  // user's libraries where they stood.
  test::Run d = test::run({test::bin_dir() + "/hotlink", "link", "--policy", "all", "k.o", "libdep.so",
                           "./libnoso.so", "-o", "hotlink/default.so"},
                          here);
  ASSERT_EQ(d.code, 0) << d.err;
  std::vector<std::string> needed = needed_of(dir + "/hotlink/default.so");
  ASSERT_GE(needed.size(), 2u);
  EXPECT_EQ(std::vector<std::string>(needed.begin(), needed.begin() + 2), want);
  // Both run against the libraries: libdep.so found loaded by its soname,
  // ./libnoso.so opened as the path it is, from the folder they are in.
  ASSERT_NE(::dlopen((dir + "/libdep.so").c_str(), RTLD_NOW | RTLD_GLOBAL), nullptr) << ::dlerror();
  ASSERT_EQ(::chdir(dir.c_str()), 0);
  EXPECT_EQ(load_and_probe(dir + "/lld/k.so"), 27); // dep(3) + noso(1)
  EXPECT_EQ(load_and_probe(dir + "/hotlink/k.so"), 27);
  EXPECT_EQ(load_and_probe(dir + "/hotlink/default.so"), 27);
}

// A shared library handed over as bytes has no path for the image to
// name: refused by name, with what to do.
TEST(SharedLibraryInput, AsBytesIsRefusedNamingIt) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/dep.c", Bytes{'i', 'n', 't', ' ', 'd', '(', ')', '{', 'r', 'e', 't', 'u', 'r', 'n', ' ', '1',
                                         ';', '}', '\n'});
  test::Run r = test::run({HOTLINK_TEST_CLANG, "--target=x86_64-linux-gnu", "-shared", "-fPIC", "-fuse-ld=lld",
                           dir + "/dep.c", "-o", dir + "/libdep.so"});
  ASSERT_EQ(r.code, 0) << r.err;
  LinkRequest req;
  req.inputs.push_back(Input::memory("k.o", test::compile_c("x86_64-linux-gnu", "int d(void);\nint f(void) { return d(); }\n")));
  req.inputs.push_back(Input::memory("libdep.so", test::read_file(dir + "/libdep.so")));
  req.output_path = dir + "/k.so";
  LinkResult res = LinkService().link(req);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error->code, ErrorCode::InvalidInput);
  EXPECT_EQ(res.error->input, "libdep.so");
  EXPECT_NE(res.error->message.find("shared library"), std::string::npos) << res.error->to_string();
  EXPECT_NE(res.error->hint.find("Input::file"), std::string::npos) << res.error->to_string();
  EXPECT_FALSE(test::exists(dir + "/k.so"));
}

INSTANTIATE_TEST_SUITE_P(Cases, AgainstLld, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &i) {
                           std::string n = i.param.name;
                           for (char &ch : n)
                             if (ch == '-')
                               ch = '_';
                           return n;
                         });

} // namespace
} // namespace hotlink
