// The symbol reader and name checks the linker relies on.
#include "exports/names.h"
#include "exports/symbols.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <algorithm>

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

} // namespace
} // namespace hotlink::exports
