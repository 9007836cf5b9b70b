// The runtime's own readers of host images (image/) give LLVM Object's
// answers (exports/artifacts.cpp) on what real toolchains link: clang
// -shared with glibc (DT_NEEDED, a build-id), lld for aarch64, DLLs for
// x86-64, i386 and arm64 Windows (MSVC and mingw), an executable; and the
// symbol-table functions forwarding patches.
#include "exports/artifacts.h"
#include "image/image.h"
#include "hotlink/link_service.h"

#include "test/support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

using namespace hotlink;
using test::Bytes;

namespace {

const char *kKernel = "int table[4] = {1, 2, 3, 4};\n"
                      "static int helper(int x) { return x * 3; }\n"
                      "__attribute__((weak)) int weak_hook(int x) { return x; }\n"
                      "int f(int x) { return helper(x) + table[x & 3]; }\n" HOTLINK_TEST_F_ARGV;

Bytes link_for(const std::string &target, const Bytes &obj, const std::string &out) {
  LinkService svc;
  LinkRequest req;
  req.target = target;
  req.inputs.push_back(Input::memory("k.o", obj));
  req.output_path = test::temp_dir() + "/" + out;
  LinkResult r = svc.link(req);
  EXPECT_TRUE(r.ok()) << target << ": " << (r.ok() ? "" : r.error->to_string());
  return r.ok() ? test::read_file(req.output_path) : Bytes();
}

// Both readers accept the image and agree on everything they answer.
exports::ArtifactInfo read_both(const Bytes &bytes, const std::string &name) {
  auto own = image::read_host_image(bytes.data(), bytes.size(), name);
  auto llvm = exports::read_artifact_with_llvm(bytes.data(), bytes.size(), name);
  EXPECT_TRUE(own.has_value()) << name << " is not read by image/";
  if (!own)
    return {};
  EXPECT_TRUE(own->ok()) << own->error().to_string();
  EXPECT_TRUE(llvm.ok()) << llvm.error().to_string();
  if (!own->ok() || !llvm.ok())
    return {};
  const exports::ArtifactInfo &a = own->value(), &b = llvm.value();
  EXPECT_EQ(a.format, b.format) << name;
  EXPECT_EQ(a.arch, b.arch) << name;
  EXPECT_EQ(a.kind, b.kind) << name;
  EXPECT_EQ(a.exports, b.exports) << name;
  EXPECT_EQ(a.imports, b.imports) << name;
  EXPECT_EQ(a.needed, b.needed) << name;
  EXPECT_EQ(a.build_id, b.build_id) << name;
  return a;
}

bool has(const std::vector<std::string> &v, const std::string &s) { return std::find(v.begin(), v.end(), s) != v.end(); }

} // namespace

TEST(ImageElf, AGlibcSharedObjectReadsAsLlvmReadsIt) {
  std::string source = std::string(kKernel) + "#include <stdio.h>\nvoid say(void) { puts(\"hi\"); }\n";
  Bytes so = link_for("x86_64-linux-gnu", test::compile_c("x86_64-linux-gnu", source, {"-fPIC"}), "glibc.so");
  exports::ArtifactInfo info = read_both(so, "k.so");
  EXPECT_EQ(info.kind, exports::FileKind::SharedObject);
  EXPECT_TRUE(has(info.exports, "f") && has(info.exports, "f_argv")) << info.exports.size();
  EXPECT_FALSE(has(info.exports, "helper"));
  EXPECT_TRUE(has(info.imports, "puts"));
  EXPECT_TRUE(has(info.needed, "libc.so.6"));
  EXPECT_FALSE(info.build_id.empty()) << "a link as clang -shared makes it has a build-id";
}

// The section headers' entry for the first section of `type`: its file
// offset and size (Elf64_Shdr's sh_offset at 24, sh_size at 32).
std::pair<std::uint64_t, std::uint64_t> section_of_type(const Bytes &elf, std::uint32_t type) {
  std::uint64_t shoff;
  std::uint16_t shentsize, shnum;
  std::memcpy(&shoff, &elf[40], 8);
  std::memcpy(&shentsize, &elf[58], 2);
  std::memcpy(&shnum, &elf[60], 2);
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const std::uint8_t *sh = &elf[shoff + std::size_t(i) * shentsize];
    std::uint32_t t;
    std::memcpy(&t, sh + 4, 4);
    if (t == type) {
      std::uint64_t off, size;
      std::memcpy(&off, sh + 24, 8);
      std::memcpy(&size, sh + 32, 8);
      return {off, size};
    }
  }
  return {0, 0};
}

// A section symbol names no export or import. One in the dynamic symbol
// table, undefined and unnamed, is skipped by both readers (LLVM named it
// by a section header it read past the table's end: found by fuzz_images).
TEST(ImageElf, AnUndefinedSectionSymbolIsNeitherImportNorExport) {
  std::string source = std::string(kKernel) + "#include <stdio.h>\nvoid say(void) { puts(\"hi\"); }\n";
  Bytes so = link_for("x86_64-linux-gnu", test::compile_c("x86_64-linux-gnu", source, {"-fPIC"}), "section-symbol.so");
  ASSERT_TRUE(has(read_both(so, "before.so").imports, "puts"));
  auto [off, size] = section_of_type(so, 11); // SHT_DYNSYM
  ASSERT_GT(size, 24u);
  bool patched = false;
  for (std::uint64_t at = off + 24; at + 24 <= off + size; at += 24) { // Elf64_Sym: st_info at 4, st_shndx at 6
    std::uint16_t shndx;
    std::memcpy(&shndx, &so[at + 6], 2);
    if (shndx != 0 || patched)
      continue;
    std::memset(&so[at], 0, 4); // st_name: none
    so[at + 4] = 3;             // STB_LOCAL, STT_SECTION
    patched = true;
  }
  ASSERT_TRUE(patched);
  exports::ArtifactInfo info = read_both(so, "after.so");
  EXPECT_FALSE(has(info.exports, "") || has(info.imports, ""));
  EXPECT_TRUE(has(info.exports, "f"));
}

TEST(ImageElf, HotlinkLinkedImagesOfEachCpuReadAsLlvmReadsThem) {
  for (const char *target : {"x86_64-linux-gnu", "aarch64-linux-gnu"}) {
    SCOPED_TRACE(target);
    Bytes so = link_for(target, test::compile_c(target, kKernel, {"-fPIC"}), std::string(target) + ".so");
    exports::ArtifactInfo info = read_both(so, std::string(target) + ".so");
    EXPECT_EQ(info.arch, std::string(target).rfind("aarch64", 0) == 0 ? exports::Arch::AArch64 : exports::Arch::X86_64);
    EXPECT_TRUE(has(info.exports, "f_argv"));
  }
}

TEST(ImageElf, AnExecutableAndARelocatableObjectAreTold) {
  Bytes exe = test::compile_with({HOTLINK_TEST_CLANG, "-O1", "-x", "c"}, "int main(void) { return 0; }\n", ".exe");
  // (-x c and no -shared: a position-independent executable, ET_DYN, which
  // both readers call a shared object, as the dynamic loader would load it.)
  EXPECT_EQ(read_both(exe, "a.out").kind, exports::FileKind::SharedObject);
  Bytes fixed = test::compile_with({HOTLINK_TEST_CLANG, "-O1", "-no-pie", "-x", "c"}, "int main(void) { return 1; }\n",
                                   ".exe");
  EXPECT_EQ(read_both(fixed, "fixed.out").kind, exports::FileKind::Executable);
  Bytes obj = test::compile_c("x86_64-linux-gnu", kKernel);
  EXPECT_EQ(read_both(obj, "k.o").kind, exports::FileKind::Object);
}

TEST(ImagePe, DllsOfEachWindowsTargetReadAsLlvmReadsThem) {
  for (const char *target : {"x86_64-pc-windows-msvc", "i686-pc-windows-msvc", "aarch64-pc-windows-msvc",
                             "x86_64-w64-mingw32"}) {
    SCOPED_TRACE(target);
    Bytes dll = link_for(target, test::compile_c(target, kKernel), std::string(target) + ".dll");
    exports::ArtifactInfo info = read_both(dll, std::string(target) + ".dll");
    EXPECT_EQ(info.format, exports::Format::COFF);
    EXPECT_EQ(info.kind, exports::FileKind::SharedObject);
    EXPECT_TRUE(has(info.exports, "f") && has(info.exports, "f_argv")) << info.exports.size();
  }
}

// What a DLL imports, per DLL, as Windows' loader binds it: the mingw
// runtime's imports from KERNEL32.dll and the C library's puts.
TEST(ImagePe, ImportsAreListedByDllAsTheLoaderBindsThem) {
  const char *target = "x86_64-w64-mingw32";
  Bytes dll = link_for(target, test::compile_c(target, "int puts(const char *);\n"
                                                       "int f(int x) { return puts(\"hi\") + x; }\n" HOTLINK_TEST_F_ARGV),
                       "imports.dll");
  exports::ArtifactInfo info = read_both(dll, "imports.dll");
  EXPECT_TRUE(has(info.needed, "KERNEL32.dll")) << info.needed.size();
  EXPECT_TRUE(has(info.imports, "KERNEL32.dll!GetLastError")) << info.imports.size();
  bool puts = std::any_of(info.imports.begin(), info.imports.end(),
                          [](const std::string &i) { return i.size() > 5 && i.compare(i.size() - 5, 5, "!puts") == 0; });
  EXPECT_TRUE(puts);
  for (const std::string &i : info.imports) // each names a DLL it lists
    EXPECT_TRUE(has(info.needed, i.substr(0, i.find('!')))) << i;
}

namespace {

// The file offset of a PE32+ image's import directory, through its section
// table, as the loader maps the RVA.
std::size_t import_directory_offset(const Bytes &dll) {
  auto u32 = [&](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, &dll[at], 4);
    return v;
  };
  std::uint32_t pe = u32(0x3c), rva = u32(pe + 24 + 120);
  std::uint16_t nsections = dll[pe + 6] | dll[pe + 7] << 8, optional_size = dll[pe + 20] | dll[pe + 21] << 8;
  for (std::size_t i = 0, at = pe + 24 + optional_size; i < nsections; ++i, at += 40)
    if (u32(at + 12) <= rva && rva < u32(at + 12) + u32(at + 8))
      return u32(at + 20) + (rva - u32(at + 12));
  return 0;
}

} // namespace

// The loader ends the import directory at the first descriptor without an
// address table (Wine's fixup_imports, as Windows), whatever follows it:
// the DLLs after it are not loaded, so they are not listed.
TEST(ImagePe, ImportsEndWhereTheLoaderEndsThem) {
  const char *target = "x86_64-w64-mingw32";
  Bytes dll = link_for(target, test::compile_c(target, "int puts(const char *);\n"
                                                       "int f(int x) { return puts(\"hi\") + x; }\n" HOTLINK_TEST_F_ARGV),
                       "imports.dll");
  auto whole = image::read_pe(dll.data(), dll.size(), "imports.dll");
  ASSERT_TRUE(whole.ok()) << whole.error().to_string();
  ASSERT_GE(whole->needed.size(), 2u);
  std::size_t dir = import_directory_offset(dll);
  ASSERT_NE(dir, 0u);
  std::memset(&dll[dir + 20 + 16], 0, 4); // the second DLL's address table
  auto cut = image::read_pe(dll.data(), dll.size(), "imports.dll");
  ASSERT_TRUE(cut.ok()) << cut.error().to_string();
  EXPECT_EQ(cut->needed, std::vector<std::string>{whole->needed[0]});
  for (const std::string &i : cut->imports)
    EXPECT_EQ(i.substr(0, i.find('!')), whole->needed[0]) << i;
}

TEST(ImagePe, ADamagedImportDirectoryIsRefusedByName) {
  const char *target = "x86_64-w64-mingw32";
  Bytes dll = link_for(target, test::compile_c(target, kKernel), "bad-imports.dll");
  ASSERT_GT(dll.size(), 0x40u);
  std::uint32_t pe;
  std::memcpy(&pe, &dll[0x3c], 4);
  std::uint32_t bogus = 0x7ffffff0; // data directory 1 of a PE32+ optional header
  std::memcpy(&dll[pe + 24 + 120], &bogus, 4);
  auto info = image::read_pe(dll.data(), dll.size(), "bad-imports.dll");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().input, "bad-imports.dll");
  EXPECT_NE(info.error().message.find("import directory"), std::string::npos) << info.error().message;
}

TEST(ImagePe, ADamagedExportDirectoryIsRefusedByName) {
  Bytes dll = link_for("x86_64-pc-windows-msvc", test::compile_c("x86_64-pc-windows-msvc", kKernel), "d.dll");
  ASSERT_GT(dll.size(), 0x40u);
  std::uint32_t pe;
  std::memcpy(&pe, &dll[0x3c], 4);
  // The export directory's RVA (data directory 0 of a PE32+ optional header).
  std::uint32_t bogus = 0x7ffffff0;
  std::memcpy(&dll[pe + 24 + 112], &bogus, 4);
  auto info = image::read_pe(dll.data(), dll.size(), "d.dll");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().input, "d.dll");
  EXPECT_NE(info.error().message.find("export directory"), std::string::npos) << info.error().message;
}

TEST(ImageElf, OneWalkReadsTheFunctionsWithTheirRoomAndTheStateVariables) {
  Bytes so = test::compile_so("x86_64-linux-gnu",
                              std::string(kKernel) + "int g(int x) { return f(x) + 1; }\n"
                                                     "__attribute__((section(\".hotlink_state\"), used)) int frames = 7;\n"
                                                     "__attribute__((section(\".hotlink_state\"), used)) static long seen[2];\n",
                              {"-O0", "-Wl,--build-id=sha1"});
  auto read = image::read_elf_symbols(so.data(), so.size(), "k.so", ".hotlink_state");
  ASSERT_TRUE(read.ok()) << read.error().to_string();
  EXPECT_TRUE(read->code.wide);
  EXPECT_EQ(read->code.arch, exports::Arch::X86_64);
  auto find = [&](const std::string &n) -> const image::Function * {
    for (const image::Function &f : read->code.functions)
      if (f.name == n)
        return &f;
    return nullptr;
  };
  const image::Function *f = find("f"), *g = find("g"), *helper = find("helper");
  ASSERT_TRUE(f && g && helper);
  EXPECT_TRUE(f->unit.empty());
  EXPECT_FALSE(helper->unit.empty()) << "a local function names its translation unit";
  for (const image::Function *fn : {f, g, helper}) {
    EXPECT_GE(fn->room, fn->size) << fn->name;
    // Its first bytes in the file are those at its address in the image.
    ASSERT_LT(fn->file_offset + fn->size, so.size());
  }
  EXPECT_FALSE(find("table")) << "data is not a function";
  // The state section's variables, and nothing outside it (table).
  ASSERT_EQ(read->state.size(), 2u);
  std::map<std::string, const image::DataObject *> state;
  for (const image::DataObject &o : read->state)
    state[o.name] = &o;
  ASSERT_TRUE(state.count("frames") && state.count("seen"));
  EXPECT_EQ(state["frames"]->size, 4u);
  EXPECT_TRUE(state["frames"]->unit.empty());
  EXPECT_EQ(state["seen"]->size, 16u);
  EXPECT_FALSE(state["seen"]->unit.empty()) << "a local variable names its translation unit";
  // No state section by that name: no variables, the functions still.
  auto other = image::read_elf_symbols(so.data(), so.size(), "k.so", ".no_such_section");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->state.empty());
  EXPECT_EQ(other->code.functions.size(), read->code.functions.size());
  // The build-id alone is what read_elf finds with the rest.
  auto id = image::read_elf_build_id(so.data(), so.size(), "k.so");
  auto info = image::read_elf(so.data(), so.size(), "k.so");
  ASSERT_TRUE(id.ok() && info.ok());
  EXPECT_EQ(id.value().size(), 40u);
  EXPECT_EQ(id.value(), info->build_id);
  // A file that is not an ELF image of a CPU is refused by name.
  Bytes not_elf(100, 0);
  auto refused = image::read_elf_symbols(not_elf.data(), not_elf.size(), "zero.bin", ".hotlink_state");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().input, "zero.bin");
  auto no_id = image::read_elf_build_id(not_elf.data(), not_elf.size(), "zero.bin");
  ASSERT_FALSE(no_id.ok());
  EXPECT_EQ(no_id.error().input, "zero.bin");
}

namespace {

// image/'s reading of a relocatable object, which must be LLVM's.
exports::ObjectInfo read_object_both(const Bytes &bytes, const std::string &name) {
  auto own = image::read_elf_object(bytes.data(), bytes.size(), name);
  auto llvm = exports::read_object(bytes.data(), bytes.size(), name);
  EXPECT_TRUE(own.has_value()) << name << " is not read by image/";
  EXPECT_TRUE(llvm.ok()) << llvm.error().to_string();
  if (!own || !llvm.ok())
    return {};
  const exports::ObjectInfo &a = *own, &b = llvm.value();
  EXPECT_EQ(a.format, b.format) << name;
  EXPECT_EQ(a.arch, b.arch) << name;
  EXPECT_EQ(a.kind, b.kind) << name;
  EXPECT_EQ(a.startup_sections, b.startup_sections) << name;
  EXPECT_EQ(a.alignment_padding, b.alignment_padding) << name;
  EXPECT_EQ(a.symbols.size(), b.symbols.size()) << name;
  for (std::size_t i = 0; i < std::min(a.symbols.size(), b.symbols.size()); ++i) {
    const exports::Symbol &x = a.symbols[i], &y = b.symbols[i];
    EXPECT_EQ(std::tie(x.name, x.defined, x.weak, x.common, x.function, x.data, x.writable, x.tls, x.hidden),
              std::tie(y.name, y.defined, y.weak, y.common, y.function, y.data, y.writable, y.tls, y.hidden))
        << name << ": symbol " << i << " (" << x.name << " / " << y.name << ")";
  }
  return a;
}

const exports::Symbol *symbol(const exports::ObjectInfo &info, const std::string &name) {
  for (const exports::Symbol &s : info.symbols)
    if (s.name == name)
      return &s;
  return nullptr;
}

const char *kRichCxx = "struct Counter { int n; Counter() : n(7) {} };\n"
                       "static Counter counter;\n"
                       "thread_local int per_thread = 3;\n"
                       "__attribute__((visibility(\"hidden\"))) int hidden_value = 5;\n"
                       "extern \"C\" __attribute__((weak)) int weak_fn(int x) { return x; }\n"
                       "extern \"C\" int defined_elsewhere(int);\n"
                       "template <class T> T twice(T v) { return v + v; }\n"
                       "extern \"C\" int rich(int x) {\n"
                       "  return twice(x) + counter.n + per_thread + hidden_value + defined_elsewhere(x);\n"
                       "}\n";

} // namespace

TEST(ImageElfObject, TheHostsObjectsReadAsLlvmReadsThem) {
  for (const std::string triple : {"x86_64-linux-gnu", "aarch64-linux-gnu"}) {
    SCOPED_TRACE(triple);
    read_object_both(test::compile_c(triple, kKernel), "k.o");
    Bytes rich = test::compile_with({HOTLINK_TEST_CLANG, "--target=" + triple, "-O1", "-fPIC", "-g",
                                     "-ffunction-sections", "-fdata-sections", "-x", "c++", "-c"},
                                    kRichCxx, ".o");
    exports::ObjectInfo info = read_object_both(rich, "rich.o");
    const exports::Symbol *tls = symbol(info, "per_thread"), *hidden = symbol(info, "hidden_value"),
                          *weak = symbol(info, "weak_fn"), *undefined = symbol(info, "defined_elsewhere"),
                          *rich_fn = symbol(info, "rich");
    ASSERT_TRUE(tls && hidden && weak && undefined && rich_fn);
    EXPECT_TRUE(tls->tls && tls->data && tls->writable);
    EXPECT_TRUE(hidden->hidden && hidden->data);
    EXPECT_TRUE(weak->weak && weak->function);
    EXPECT_FALSE(undefined->defined);
    EXPECT_TRUE(rich_fn->function && !rich_fn->data);
    EXPECT_FALSE(symbol(info, "counter")) << "a local is not listed";
    Bytes common = test::compile_c(triple,
                                   "int shared_counter;\n"
                                   "__attribute__((section(\".ctors\"))) void (*legacy_init)(void) = 0;\n"
                                   "int use(void) { return shared_counter; }\n",
                                   {"-fcommon"});
    info = read_object_both(common, "common.o");
    EXPECT_TRUE(info.startup_sections) << ".ctors is run by the startup objects";
    const exports::Symbol *c = symbol(info, "shared_counter");
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->common && c->data && c->writable);
  }
}

TEST(ImageElfObject, WhatIsNotPlainIsLeftToLlvm) {
  Bytes obj = test::compile_c("x86_64-linux-gnu", kKernel);
  // Cut inside the section headers (at the end of the file).
  Bytes cut(obj.begin(), obj.end() - 40);
  EXPECT_FALSE(image::read_elf_object(cut.data(), cut.size(), "cut.o"));
  EXPECT_FALSE(exports::read_object(cut.data(), cut.size(), "cut.o").ok());
  // A GCC LTO object carries only GIMPLE: LLVM's reader refuses it by name.
  Bytes slim = test::compile_c("x86_64-linux-gnu", "int __gnu_lto_slim = 1;\n");
  EXPECT_FALSE(image::read_elf_object(slim.data(), slim.size(), "slim.o"));
  auto refused = exports::read_object(slim.data(), slim.size(), "slim.o");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("GCC LTO"), std::string::npos) << refused.error().message;
  // Other formats, other machines, linked images.
  for (const std::string triple : {"x86_64-pc-windows-msvc", "i686-linux-gnu", "x86_64-apple-macos"}) {
    Bytes other = test::compile_c(triple, kKernel);
    EXPECT_FALSE(image::read_elf_object(other.data(), other.size(), "k.o")) << triple;
  }
  Bytes so = test::compile_so("x86_64-linux-gnu", kKernel);
  EXPECT_FALSE(image::read_elf_object(so.data(), so.size(), "k.so"));
}
