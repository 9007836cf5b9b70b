// How the ELF runtime environment reads a shared library for its stubs
// (linker/platforms/elf/runtime.h): a name's definitions come from the
// library's own GNU hash table, or from an index when it has none. LLVM's
// ELFObjectFile, reading the whole dynamic symbol table, is the oracle:
// every name the host's real libraries define must give the same
// definitions (how many, which versions), and a name they do not define none.
#include "linker/platforms/elf/runtime.h"
#include "test/support.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace hotlink {
namespace {

using detail::SharedLibrary;

// name -> the version indices of its definitions, in symbol-table order.
using Definitions = std::map<std::string, std::vector<std::uint16_t>>;

Definitions oracle(const std::string &path) {
  Definitions out;
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return out;
  auto obj = llvm::object::ObjectFile::createELFObjectFile((*buf)->getMemBufferRef());
  auto *elf = obj ? llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(obj->get()) : nullptr;
  if (!elf) {
    if (!obj)
      llvm::consumeError(obj.takeError());
    return out;
  }
  const auto &file = elf->getELFFile();
  auto sections = file.sections();
  const llvm::object::ELF64LE::Shdr *versym = nullptr;
  for (const auto &s : *sections)
    if (s.sh_type == llvm::ELF::SHT_GNU_versym)
      versym = &s;
  std::uint32_t index = 0;
  for (const llvm::object::ELFSymbolRef &sym : elf->getDynamicSymbolIterators()) {
    ++index; // the iterators skip the null symbol
    auto name = sym.getName();
    auto flags = sym.getFlags();
    if (!name || !flags) {
      if (!name)
        llvm::consumeError(name.takeError());
      if (!flags)
        llvm::consumeError(flags.takeError());
      continue;
    }
    if ((*flags & llvm::object::SymbolRef::SF_Undefined) || sym.getBinding() == llvm::ELF::STB_LOCAL)
      continue;
    std::uint16_t ver = 1;
    if (versym)
      if (auto v = file.template getEntry<llvm::object::ELF64LE::Versym>(*versym, index))
        ver = (*v)->vs_index;
    out[name->str()].push_back(ver);
  }
  return out;
}

void expect_same_as_oracle(const std::string &path) {
  SCOPED_TRACE(path);
  Definitions want = oracle(path);
  ASSERT_GT(want.size(), 10u) << "the oracle read no definitions";
  auto lib = detail::read_shared_library(path);
  ASSERT_TRUE(lib) << lib.error().message;
  std::size_t versions = 0;
  for (const auto &[name, vers] : want) {
    std::vector<std::uint16_t> got;
    for (const detail::StubSymbol &s : lib->definitions(name))
      got.push_back(s.versym);
    EXPECT_EQ(got, vers) << name;
    EXPECT_TRUE(lib->defines(name)) << name;
    versions += vers.size();
  }
  std::size_t each = 0;
  lib->each_defined([&](llvm::StringRef n) {
    ++each;
    EXPECT_TRUE(want.count(n.str())) << n.str();
  });
  EXPECT_EQ(each, versions);
  for (const char *absent : {"hotlink_defines_no_such_name", "", "printf_", "_printf"})
    EXPECT_TRUE(lib->definitions(absent).empty() && !lib->defines(absent)) << absent;
}

TEST(SharedLibrary, TheHostsLibrariesAnswerAsTheirWholeSymbolTables) {
  for (const char *lib : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6",
                          "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                          "/usr/aarch64-linux-gnu/lib/libc.so.6"})
    expect_same_as_oracle(lib);
}

// The same library with a GNU hash table, with only a SysV one, and with
// both: lld decides which a link writes.
TEST(SharedLibrary, LibrariesWithAndWithoutAGnuHashTableAnswerAlike) {
  std::string source;
  for (int i = 0; i < 300; ++i)
    source += "int f" + std::to_string(i) + "(int x) { return x + " + std::to_string(i) + "; }\n";
  source += "static int hidden(void) { return 1; }\nint uses_hidden(void) { return hidden(); }\n";
  for (const char *style : {"gnu", "sysv", "both"}) {
    test::Bytes so = test::compile_so("x86_64-linux-gnu", source,
                                      {std::string("-Wl,--hash-style=") + style});
    ASSERT_FALSE(so.empty());
    std::string path = test::temp_dir() + "/lib" + style + ".so";
    test::write_file(path, so);
    expect_same_as_oracle(path);
    auto lib = detail::read_shared_library(path);
    ASSERT_TRUE(lib);
    EXPECT_TRUE(lib->defines("f299") && lib->defines("uses_hidden")) << style;
    EXPECT_FALSE(lib->defines("hidden")) << style << ": a local symbol is no definition";
  }
}

} // namespace
} // namespace hotlink
