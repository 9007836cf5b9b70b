// The symbol reader and name checks the linker relies on.
#include "exports/fatbin.h"
#include "exports/names.h"
#include "hotlink/symbols.h"
#include "exports/version_script.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hotlink::exports {
namespace {

const Symbol *find(const ObjectInfo &info, const std::string &name) {
  for (const Symbol &s : info.symbols)
    if (s.name == name)
      return &s;
  return nullptr;
}

struct Case {
  const char *triple;
  Format format;
  Arch arch;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.triple; }

class Reader : public ::testing::TestWithParam<Case> {};

TEST_P(Reader, ClassifiesSymbols) {
  const Case &c = GetParam();
  test::Bytes obj = test::compile_c(c.triple, R"(
    extern int imported(int);
    int counter = 3;
    const int table[4] = {1, 2, 3, 4};
    __attribute__((weak)) int maybe(void) { return 0; }
    static int hidden(int x) { return x; }
    int entry(int x) { return imported(x) + hidden(x) + table[x & 3] + counter; }
  )");
  auto info = read_object(obj.data(), obj.size(), "k.o");
  ASSERT_TRUE(info.ok()) << info.error().to_string();
  EXPECT_EQ(info->format, c.format);
  EXPECT_EQ(info->arch, c.arch);
  EXPECT_EQ(info->kind, FileKind::Object);
  std::string pre = c.format == Format::MachO || (c.format == Format::COFF && c.arch == Arch::X86) ? "_" : "";
  const Symbol *entry = find(*info, pre + "entry");
  const Symbol *counter = find(*info, pre + "counter");
  const Symbol *table = find(*info, pre + "table");
  const Symbol *maybe = find(*info, pre + "maybe");
  const Symbol *imported = find(*info, pre + "imported");
  ASSERT_TRUE(entry && counter && table && maybe && imported);
  EXPECT_TRUE(entry->defined && entry->function && !entry->data);
  EXPECT_TRUE(counter->defined && counter->data && counter->writable);
  EXPECT_TRUE(table->defined && table->data && !table->writable);
  EXPECT_TRUE(maybe->weak);
  EXPECT_FALSE(imported->defined);
  EXPECT_EQ(find(*info, pre + "hidden"), nullptr); // local symbols are not listed
}

INSTANTIATE_TEST_SUITE_P(Formats, Reader,
                         ::testing::Values(Case{"x86_64-linux-gnu", Format::ELF, Arch::X86_64},
                                           Case{"x86_64-pc-windows-msvc", Format::COFF, Arch::X86_64},
                                           Case{"i686-pc-windows-msvc", Format::COFF, Arch::X86},
                                           Case{"arm64-apple-macos", Format::MachO, Arch::AArch64},
                                           Case{"wasm32-unknown-unknown", Format::Wasm, Arch::Wasm32}),
                         [](const auto &i) {
                           std::string n = i.param.triple;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(Reader, BigObjCoff) {
  test::Bytes obj = test::compile_c("x86_64-pc-windows-msvc", "int f(void) { return 1; }", {"-Wa,-mbig-obj"});
  auto info = read_object(obj.data(), obj.size(), "big.obj");
  ASSERT_TRUE(info.ok()) << info.error().to_string();
  EXPECT_EQ(info->format, Format::COFF);
  EXPECT_TRUE(find(*info, "f"));
}

TEST(Reader, ArchiveListsMembers) {
  std::string t = "x86_64-linux-gnu";
  std::string path = test::make_archive({{"a.o", test::compile_c(t, "int a(void){return 1;}")},
                                         {"b.o", test::compile_c(t, "int b(void){return 2;}")}});
  test::Bytes ar = test::read_file(path);
  auto info = read_object(ar.data(), ar.size(), "lib.a");
  ASSERT_TRUE(info.ok()) << info.error().to_string();
  EXPECT_EQ(info->kind, FileKind::Archive);
  ASSERT_TRUE(find(*info, "b"));
  EXPECT_EQ(find(*info, "b")->member, "b.o");
}

TEST(Reader, ArchiveOfMixedArchesIsRefused) {
  std::string path = test::make_archive({{"a.o", test::compile_c("x86_64-linux-gnu", "int a;")},
                                         {"b.o", test::compile_c("aarch64-linux-gnu", "int b;")}});
  test::Bytes ar = test::read_file(path);
  auto info = read_object(ar.data(), ar.size(), "lib.a");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().code, ErrorCode::MixedFormats);
  EXPECT_EQ(info.error().input, "lib.a");
}

TEST(Reader, GarbageNeverCrashes) {
  test::Bytes obj = test::compile_c("x86_64-pc-windows-msvc", "int f(void) { return 1; }");
  // Every truncation and a byte flip at every offset: an error or a result,
  // never a crash.
  for (std::size_t n = 0; n < obj.size(); n += 7) {
    test::Bytes cut(obj.begin(), obj.begin() + n);
    (void)read_object(cut.data(), cut.size(), "cut.obj");
  }
  for (std::size_t i = 0; i < obj.size(); ++i) {
    test::Bytes flip = obj;
    flip[i] ^= 0xff;
    (void)read_object(flip.data(), flip.size(), "flip.obj");
  }
  SUCCEED();
}

// PTX is told from its first directive past blank space and comments;
// text whose comment never ends, or that starts otherwise, is not PTX.
TEST(Reader, PtxIsToldPastCommentsAndNothingElseIs) {
  auto read = [](const std::string &text) { return read_object(text.data(), text.size(), "k.ptx"); };
  auto ptx = read("// generated\n/* by hand,\n two lines */\n\n  .version 8.0\n.target sm_90\n.address_size 64\n"
                  ".visible .entry k()\n{\n ret;\n}\n");
  ASSERT_TRUE(ptx.ok()) << ptx.error().to_string();
  EXPECT_EQ(ptx->arch, Arch::NVPTX64);
  ASSERT_NE(find(ptx.value(), "k"), nullptr);
  for (const std::string text : {"/* .version 8.0 .target sm_90", "// .version 8.0", "   \n\t", "version 8.0\n"}) {
    auto other = read(text);
    EXPECT_FALSE(other.ok() && other->arch == Arch::NVPTX64) << text;
  }
}

// A device archive whose last member (a BSD one: its name, #1/8, after
// the header) claims more bytes than the archive holds, which LLVM's
// archive reader returns unchecked (found by fuzz_objects): refused,
// naming the archive, before anything reads past its end. LTO-IR is told
// by its magic, and refused when cut short.
TEST(Reader, DeviceArchiveMembersPastTheEndAndShortLtoIrAreRefused) {
  std::string member = "\xed\x43\x4e\x7f" + std::string(28, '\x01'); // LTO-IR's magic, then bytes
  char header[61];
  auto bsd = [&](const char *name_field, std::size_t size) {
    std::snprintf(header, sizeof header, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name_field, "0", "0", "0", "644", size);
    return std::string(header, 60);
  };
  // An empty BSD symbol table (__.SYMDEF: no ranlib entries, no strings),
  // then the member.
  std::string archive = "!<arch>\n" + bsd("#1/12", 12 + 8) + std::string("__.SYMDEF\0\0\0", 12) +
                        std::string(8, '\0') + bsd("#1/8", 4096) + std::string("k.ltoir\0", 8) + member.substr(0, 2);
  std::vector<std::uint8_t> exact(archive.begin(), archive.end()); // no spare capacity: ASan sees a byte past it
  auto refused = hotlink::exports::read_device_archive(exact.data(), exact.size(), "libk.a");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().input, "libk.a");
  EXPECT_NE(refused.error().message.find("runs past the end of the archive"), std::string::npos)
      << refused.error().to_string();
  std::snprintf(header, sizeof header, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", "k.ltoir/", "0", "0", "0", "644",
                member.size());
  archive = "!<arch>\n" + std::string(header, 60) + member;
  auto lto = hotlink::exports::read_device_archive(archive.data(), archive.size(), "libk.a");
  ASSERT_TRUE(lto.ok()) << lto.error().to_string();
  EXPECT_TRUE(lto->nvidia_lto);
  auto alone = read_object(member.data(), member.size(), "k.ltoir");
  ASSERT_TRUE(alone.ok()) << alone.error().to_string();
  EXPECT_TRUE(alone->nvidia_lto);
  EXPECT_EQ(alone->arch, Arch::NVPTX64);
  auto cut = read_object(member.data(), 8, "k.ltoir");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("cut short"), std::string::npos) << cut.error().to_string();
}

struct NameCase {
  std::string name;
  Format format;
  bool ok;
};

TEST(Names, EachFormatAcceptsWhatItCanWriteAndRefusesTheRest) {
  const NameCase cases[] = {
      {"f", Format::Unknown, true},
      {"_ZN3foo3barEv", Format::Unknown, true},
      {"?foo@@YAXXZ", Format::COFF, true},   // MSVC C++ names
      {"?foo@@YAXXZ", Format::MachO, false}, // '?' is a glob there
      {"a b", Format::ELF, true},            // quoted in a version script
      {"a;b{c}#d", Format::ELF, true},
      {"a\"b", Format::ELF, false},
      {"a\\b", Format::ELF, false},
      {"a b", Format::MachO, false},
      {"a#b", Format::MachO, false},
      {"a*", Format::MachO, false},
      {"a b", Format::COFF, false},
      {"a;b", Format::COFF, false},
      {"a,DATA", Format::COFF, false},
      {"a=b", Format::COFF, false},
      {"@f", Format::COFF, false},           // reads as an ordinal
      {"a,b", Format::Wasm, false},
      {"a b", Format::Wasm, true},
  };
  for (const NameCase &c : cases)
    EXPECT_EQ(!check_name(c.name, c.format).has_value(), c.ok)
        << "'" << c.name << "' for " << to_string(c.format);
}

TEST(Names, EveryFormatRefusesControlNonAsciiEmptyAndOverlong) {
  for (Format f : {Format::ELF, Format::COFF, Format::MachO, Format::Wasm})
    for (const std::string &n : {std::string(""), std::string("a\nb"), std::string("a\rb"),
                                 std::string("a\x01"), std::string("a\x7f"), std::string("caf\xc3\xa9"),
                                 std::string(kMaxNameLength + 1, 'x')}) {
      auto err = check_name(n, f);
      ASSERT_TRUE(err.has_value()) << to_string(f);
      EXPECT_EQ(err->code, ErrorCode::BadSymbolName);
    }
  EXPECT_FALSE(check_name(std::string(kMaxNameLength, 'x'), Format::ELF).has_value());
  auto err = check_name("bad\nname", Format::ELF);
  EXPECT_EQ(err->symbol, "bad\\x0aname"); // shown with the byte escaped
}

TEST(Names, Decoration) {
  EXPECT_EQ(decorate(Format::MachO, Arch::AArch64, "f"), "_f");
  EXPECT_EQ(decorate(Format::COFF, Arch::X86, "f"), "_f");
  EXPECT_EQ(decorate(Format::COFF, Arch::X86_64, "f"), "f");
  EXPECT_EQ(decorate(Format::ELF, Arch::X86_64, "f"), "f");
  EXPECT_EQ(decorate(Format::Wasm, Arch::Wasm32, "f"), "f");
}

// Malformed inputs that LLVM's readers do not survive by themselves
// (found by fuzzing): each must be refused with the input named, and the
// process must go on. Before the fixes each of these ended the process.

// A wasm object whose first function body declares 64 local groups it does
// not hold: LLVM's wasm reader calls report_fatal_error ("malformed
// uleb128, extends past end").
TEST(Malformed, WasmBodyOverrunIsRefusedNotFatal) {
  test::Bytes obj = test::compile_c("wasm32-unknown-unknown", "int f(int x) { return x * 3 + 1; }");
  auto uleb = [&](std::size_t &i) {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      std::uint8_t c = obj.at(i++);
      v |= std::uint64_t(c & 0x7f) << shift;
      if (c < 0x80)
        return v;
    }
  };
  std::size_t i = 8, body = 0;
  while (i < obj.size() && !body) {
    std::uint8_t id = obj[i++];
    std::uint64_t size = uleb(i);
    if (id == 10) { // code section: count, then the first body's size
      std::size_t j = i;
      uleb(j);
      uleb(j);
      body = j;
    }
    i += size;
  }
  ASSERT_NE(body, 0u) << "no code section";
  ASSERT_EQ(obj[body], 0) << "the fixture's first function was expected to have no locals";
  obj[body] = 0x40;
  for (int round = 0; round < 2; ++round) {
    test::IgnoreLeaks recovered_crash;
    auto info = read_object(obj.data(), obj.size(), "overrun.o");
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.error().code, ErrorCode::InvalidInput);
    EXPECT_EQ(info.error().input, "overrun.o");
    EXPECT_NE(info.error().message.find("malformed"), std::string::npos) << info.error().message;
  }
  test::Bytes good = test::compile_c("wasm32-unknown-unknown", "int g(int x) { return x; }");
  EXPECT_TRUE(read_object(good.data(), good.size(), "good.o").ok());
}

// A COFF section with relocations and a non-zero address: LLVM's
// relocation iterator calls report_fatal_error on it.
TEST(Malformed, CoffRelocatedSectionWithAnAddressIsRefusedNotFatal) {
  test::Bytes obj = test::compile_c("x86_64-pc-windows-msvc",
                                    "int ext(int); int f(int x) { return ext(x) + 1; }");
  std::uint16_t sections = obj[2] | obj[3] << 8, optional = obj[16] | obj[17] << 8;
  bool patched = false;
  for (std::size_t s = 0; s < sections && !patched; ++s) {
    std::size_t h = 20 + optional + 40 * s;
    std::uint16_t relocs = obj[h + 32] | obj[h + 33] << 8;
    if (relocs && std::string(reinterpret_cast<const char *>(&obj[h]), 5) == ".text") {
      obj[h + 13] = 0x10; // VirtualAddress = 0x1000
      patched = true;
    }
  }
  ASSERT_TRUE(patched) << "the fixture's .text has no relocations";
  auto info = read_object(obj.data(), obj.size(), "addr.obj", /*branch_info=*/true);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(info.error().input, "addr.obj");
  EXPECT_NE(info.error().message.find("'.text'"), std::string::npos) << info.error().message;
}

// A shared object whose PT_DYNAMIC claims more bytes than the file has:
// LLVM hands back that range unchecked (the ASan build reported the read
// out of bounds; found by fuzzing).
TEST(Malformed, DynamicSegmentPastTheEndOfTheFileIsRefused) {
  test::Bytes so = test::compile_so("x86_64-linux-gnu", "int f(int x) { return x; }");
  ASSERT_GT(so.size(), 64u);
  std::uint64_t phoff;
  std::uint16_t phentsize, phnum;
  std::memcpy(&phoff, &so[32], 8);
  std::memcpy(&phentsize, &so[54], 2);
  std::memcpy(&phnum, &so[56], 2);
  bool patched = false;
  for (std::uint16_t i = 0; i < phnum; ++i) {
    std::uint8_t *ph = &so[phoff + std::size_t(i) * phentsize];
    std::uint32_t type;
    std::memcpy(&type, ph, 4);
    if (type != 2) // PT_DYNAMIC
      continue;
    std::uint64_t filesz = so.size() * 4; // p_filesz, at offset 32 of Elf64_Phdr
    std::memcpy(ph + 32, &filesz, 8);
    patched = true;
  }
  ASSERT_TRUE(patched) << "the fixture has no PT_DYNAMIC";
  auto info = read_artifact(so.data(), so.size(), "long.so");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().input, "long.so");
  EXPECT_NE(info.error().message.find("PT_DYNAMIC"), std::string::npos) << info.error().message;
}

// An ELF symbol table whose header claims 2^40 entries, in an archive
// member: LLVM's symbol iterator believes the header (2^32 - 1 steps, its
// index is 32 bits; a symbol is checked only when it is read), so walking
// the symbols before reading them took seconds here and minutes under the
// fuzzer's instrumentation (found by fuzzing a version that counted them
// first). The member's sections are now checked before its symbols are
// walked, as a lone object's already were, and it is refused by name.
TEST(Malformed, SymbolTableClaimingTrillionsOfEntriesIsRefusedAtOnce) {
  test::Bytes obj = test::compile_c("x86_64-linux-gnu", "int f(int x) { return x; }");
  std::uint64_t shoff;
  std::uint16_t shentsize, shnum;
  std::memcpy(&shoff, &obj[0x28], 8);
  std::memcpy(&shentsize, &obj[0x3a], 2);
  std::memcpy(&shnum, &obj[0x3c], 2);
  bool patched = false;
  for (std::uint16_t i = 0; i < shnum; ++i) {
    std::uint8_t *sh = &obj[shoff + std::size_t(i) * shentsize];
    std::uint32_t type;
    std::memcpy(&type, sh + 4, 4);
    if (type != 2) // SHT_SYMTAB
      continue;
    std::uint64_t size = (std::uint64_t(1) << 40) * 24; // sh_size, at offset 32 of Elf64_Shdr
    std::memcpy(sh + 32, &size, 8);
    patched = true;
  }
  ASSERT_TRUE(patched) << "the fixture has no symbol table";
  // A GNU archive without a symbol index: llvm-ar would read the member.
  char header[61];
  std::snprintf(header, sizeof header, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", "k.o/", "0", "0", "0", "644",
                obj.size());
  std::string head = std::string("!<arch>\n") + std::string(header, 60);
  test::Bytes ar(head.begin(), head.end());
  ar.insert(ar.end(), obj.begin(), obj.end());
  auto info = read_object(ar.data(), ar.size(), "many.a");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(info.error().input, "many.a");
  EXPECT_NE(info.error().message.find("'k.o'"), std::string::npos) << info.error().message;
}

// A DLL exporting f, with the file offsets of its export directory and of
// the header of the section that holds it (0 if the fixture is not as
// expected: a PE32+ image with an export directory).
struct ExportingDll {
  test::Bytes bytes;
  std::size_t table = 0, section = 0;
  std::uint32_t u32(std::size_t o) const {
    std::uint32_t v;
    std::memcpy(&v, &bytes[o], 4);
    return v;
  }
  std::uint16_t u16(std::size_t o) const { return std::uint16_t(bytes[o] | bytes[o + 1] << 8); }
};
ExportingDll exporting_dll() {
  ExportingDll d;
  d.bytes = test::compile_so("x86_64-pc-windows-msvc",
                             "__declspec(dllexport) int f(void) { return 1; }\n"
                             "int _DllMainCRTStartup(void) { return 1; }");
  if (d.bytes.size() < 0x40)
    return d;
  std::size_t pe = d.u32(0x3c), opt = pe + 24, sections = opt + d.u16(pe + 20);
  std::uint32_t export_rva = d.u32(opt + 112); // data directory 0
  if (d.u16(opt) != 0x20b || export_rva == 0)
    return d;
  for (std::uint16_t i = 0; i < d.u16(pe + 6); ++i) {
    std::size_t h = sections + 40 * std::size_t(i);
    std::uint32_t va = d.u32(h + 12), raw_size = d.u32(h + 16), raw = d.u32(h + 20);
    if (export_rva >= va && export_rva < va + raw_size)
      d.section = h, d.table = raw + (export_rva - va);
  }
  return d;
}

// A DLL's export directory claiming ~2^30 entries: LLVM iterates that many
// (minutes of reading far past the file; found by fuzzing). Refused before
// the walk, as more entries than the file could hold.
TEST(Malformed, ExportDirectoryClaimingMoreEntriesThanTheFileHoldsIsRefused) {
  ExportingDll d = exporting_dll();
  ASSERT_NE(d.table, 0u) << "the fixture is not a PE32+ DLL with an export directory";
  const test::Bytes &dll = d.bytes;
  std::size_t table = d.table;
  auto good = read_artifact(dll.data(), dll.size(), "good.dll");
  ASSERT_TRUE(good.ok()) << good.error().to_string();
  EXPECT_EQ(good.value().exports, std::vector<std::string>{"f"});

  for (std::size_t field : {20u, 24u}) { // AddressTableEntries, NumberOfNamePointers
    test::Bytes bad = dll;
    std::uint32_t huge = 0x40000000;
    std::memcpy(&bad[table + field], &huge, 4);
    auto info = read_artifact(bad.data(), bad.size(), "many.dll");
    ASSERT_FALSE(info.ok()) << "field at +" << field;
    EXPECT_EQ(info.error().code, ErrorCode::InvalidInput);
    EXPECT_EQ(info.error().input, "many.dll");
    EXPECT_NE(info.error().message.find("export directory"), std::string::npos) << info.error().message;
  }
}

// LLVM checks an archive member against the next member's offset, not the
// end of the archive: the last member may claim bytes the file does not
// have (a truncated download), and a BSD long name ("#1/<length>") may
// run past the end. Both are refused by name. The bytes are read from a
// buffer with a tail of padding past `size` (8 KiB of 'x', then a NUL that
// ends any strlen), so that what LLVM itself touches past the end is
// memory: the check under test is hotlink's, and ASan stays quiet.
struct Padded {
  test::Bytes bytes;
  std::size_t size;
};
Padded padded(test::Bytes archive) {
  std::size_t size = archive.size();
  archive.resize(size + 8192, 'x');
  archive.push_back('\0');
  return {std::move(archive), size};
}

TEST(Malformed, TruncatedArchiveMemberIsRefused) {
  test::Bytes obj = test::compile_c("x86_64-linux-gnu", "int f(int x) { return x; }");
  test::Bytes ar = test::read_file(test::make_archive({{"k.o", obj}}));
  ASSERT_TRUE(read_object(ar.data(), ar.size(), "whole.a").ok());
  ar.resize(ar.size() - obj.size() / 2); // the member's second half never arrived
  Padded p = padded(ar);
  auto info = read_object(p.bytes.data(), p.size, "cut.a");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(info.error().input, "cut.a");
  EXPECT_NE(info.error().message.find("'k.o' extends past the end of the archive"), std::string::npos)
      << info.error().message;
}

TEST(Malformed, ArchiveMemberNamePastTheEndIsRefused) {
  test::Bytes obj = test::compile_c("x86_64-linux-gnu", "int f(int x) { return x; }");
  auto archive = [&](std::size_t name_length, std::size_t member_size) {
    char header[61];
    std::snprintf(header, sizeof header, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n",
                  ("#1/" + std::to_string(name_length)).c_str(), "0", "0", "0", "644", member_size);
    std::string head = std::string("!<arch>\n") + std::string(header, 60) + "k.o";
    head.resize(8 + 60 + name_length, '\0');
    test::Bytes ar(head.begin(), head.end());
    ar.insert(ar.end(), obj.begin(), obj.end());
    return ar;
  };
  // Well formed: an 8-byte name, then the object.
  test::Bytes good = archive(8, 8 + obj.size());
  ASSERT_TRUE(read_object(good.data(), good.size(), "bsd.a").ok());
  // The name claims 4000 bytes, the member 5000: the file ends first.
  test::Bytes bad = archive(8, 5000);
  std::memcpy(&bad[8], "#1/4000         ", 16);
  Padded p = padded(bad);
  auto info = read_object(p.bytes.data(), p.size, "name.a");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(info.error().input, "name.a");
  EXPECT_NE(info.error().message.find("name lies outside the archive"), std::string::npos)
      << info.error().message;
}

// A DLL export whose name starts at the last byte of the file: LLVM finds
// the name by its RVA and measures it with strlen, which runs past the end
// (found by fuzzing). Refused as a name outside the file. Read from a
// padded buffer (see padded()), so that LLVM's strlen stays in memory and
// the refusal is hotlink's.
TEST(Malformed, ExportNamePastTheEndOfTheFileIsRefused) {
  ExportingDll d = exporting_dll();
  ASSERT_NE(d.table, 0u) << "the fixture is not a PE32+ DLL with an export directory";
  const test::Bytes &dll = d.bytes;
  std::size_t header = d.section, table = d.table;
  auto u32 = [&](std::size_t o) { return d.u32(o); };
  std::uint32_t va = u32(header + 12), raw_size = u32(header + 16), raw = u32(header + 20);
  ASSERT_EQ(raw + raw_size, dll.size()) << "the export directory's section is expected to end the file";
  ASSERT_GE(u32(table + 24), 1u) << "no named export";
  std::uint32_t names = u32(table + 32); // AddressOfNames (RVA)
  std::size_t first_name = raw + (names - va);

  test::Bytes bad = dll;
  std::uint32_t last = va + raw_size - 1;
  std::memcpy(&bad[header + 8], &raw_size, 4); // VirtualSize covers the whole raw data
  std::memcpy(&bad[first_name], &last, 4);     // the name starts at the file's last byte
  bad.back() = 'x';
  Padded p = padded(bad);
  auto info = read_artifact(p.bytes.data(), p.size, "name.dll");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(info.error().input, "name.dll");
  EXPECT_NE(info.error().message.find("an export's name lies outside the file"), std::string::npos)
      << info.error().message;
}

// Formats LLVM recognizes but hotlink does not link are refused by their
// magic, before LLVM's parser for them runs (XCOFF's read out of bounds).
TEST(Malformed, FormatsHotlinkDoesNotLinkNeverReachLlvmsParsers) {
  test::Bytes xcoff64 = {0x01, 0xf7, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
                         0xff, 0x00, 0xf7, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff};
  xcoff64.resize(96, 0x08);
  for (bool artifact : {false, true}) {
    std::string message = artifact ? read_artifact(xcoff64.data(), xcoff64.size(), "aix.o").error().message
                                   : read_object(xcoff64.data(), xcoff64.size(), "aix.o").error().message;
    EXPECT_NE(message.find("not an ELF"), std::string::npos) << message;
  }
}

// A user's version script: which names its nodes claim, as lld assigns
// them (exact names first, a later glob over an earlier one, "*" last).
TEST(VersionScript, ClaimsNamesAsLldAssignsThem) {
  auto nodes = parse_version_script(R"VS(
    # zlib-style nodes
    V1 { global: exact; "quoted*star"; glob_*; extern "C++" { "ns::f(int)"; ns::g*; }; local: *; };
    V2 { global: glob_late*; local: hidden_one; } V1;
    /* an anonymous-free script */
  )VS", "user.map");
  ASSERT_TRUE(nodes.ok()) << nodes.error().to_string();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[1].parent, "V1");
  auto claim = [&](const std::string &sym, const std::string &demangled = "") {
    const VersionNode *n = claiming_node(*nodes, sym, demangled.empty() ? sym : demangled);
    return n ? n->name : std::string("-");
  };
  EXPECT_EQ(claim("exact"), "V1");
  EXPECT_EQ(claim("quoted*star"), "V1");
  EXPECT_EQ(claim("quotedXstar"), "-"); // quoted: no glob
  EXPECT_EQ(claim("glob_a"), "V1");
  EXPECT_EQ(claim("glob_late_x"), "V2"); // the later node's glob wins
  EXPECT_EQ(claim("_Z2ns1fi", "ns::f(int)"), "V1");
  EXPECT_EQ(claim("_ZN2ns5ghostEv", "ns::ghost()"), "V1");
  EXPECT_EQ(claim("other"), "-");
  EXPECT_TRUE(names_local(*nodes, "hidden_one"));
  EXPECT_FALSE(names_local(*nodes, "other")); // only through "*"
}

TEST(VersionScript, SyntaxErrorsNameTheLine) {
  for (const char *bad : {"V1 { global: a; ", "V1 { global: a }\n;", "{ global: a; };\n\"oops\" { };",
                          "V1 { extern \"Fortran\" { x; }; };"}) {
    auto r = parse_version_script(bad, "bad.map");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().input, "bad.map");
    EXPECT_NE(r.error().message.find("(line "), std::string::npos) << r.error().message;
  }
}

// LLVM bitcode is read for its symbols (lld links it with LTO) and GCC's
// GIMPLE-only LTO objects are refused by name.
TEST(Reader, BitcodeListsItsSymbolsAndFormat) {
  test::Bytes bc = test::compile_c("x86_64-linux-gnu", "extern int g(int);\nint f(int x) { return g(x) + 1; }\n"
                                                       "int v = 3;\n", {"-flto"});
  auto info = read_object(bc.data(), bc.size(), "k.bc.o");
  ASSERT_TRUE(info.ok()) << info.error().to_string();
  EXPECT_TRUE(info->bitcode);
  EXPECT_EQ(info->format, Format::ELF);
  EXPECT_EQ(info->arch, Arch::X86_64);
  const Symbol *f = find(*info, "f"), *g = find(*info, "g"), *v = find(*info, "v");
  ASSERT_TRUE(f && g && v);
  EXPECT_TRUE(f->defined && f->function);
  EXPECT_FALSE(g->defined);
  EXPECT_TRUE(v->defined && v->data);
}

} // namespace
} // namespace hotlink::exports
