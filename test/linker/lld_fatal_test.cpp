// When lld hits a fatal error in-process it reports canRunAgain == false:
// its state may be corrupt. The host must survive, the in-process driver
// must refuse to call lld again, and later links must go to workers.
// (A separate test binary: this state lasts for the rest of the process.)
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "test/support.h"

#include "llvm/Object/ELFObjectFile.h"

#include <gtest/gtest.h>

#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
// Every test here recovers from lld's fatal(), which abandons lld's state by
// design (this process never calls lld again): leaks are expected.
// Visible: the sanitizer runtime looks it up in the executable (hotlink
// builds with hidden visibility).
extern "C" __attribute__((visibility("default"))) const char *__lsan_default_options() { return "detect_leaks=0"; }
#endif

namespace hotlink {
namespace {

// An x86_64 ELF object whose first relocation names a symbol index far past
// the symbol table. LLVM Object reads its symbols fine (hotlink's checks
// pass); lld stops with "invalid symbol index", a fatal error.
test::Bytes object_with_bad_relocation() {
  test::Bytes obj = test::compile_c("x86_64-linux-gnu", "int ext(int); int g(int x) { return ext(x) + 1; }");
  llvm::MemoryBufferRef buf(llvm::StringRef(reinterpret_cast<const char *>(obj.data()), obj.size()), "bad.o");
  auto elf = llvm::object::ELF64LEObjectFile::create(buf);
  if (!elf) {
    ADD_FAILURE() << llvm::toString(elf.takeError());
    return obj;
  }
  for (const llvm::object::SectionRef &s : elf->sections()) {
    auto name = s.getName();
    if (!name || *name != ".rela.text")
      continue;
    auto hdr = elf->getSection(s.getRawDataRefImpl());
    std::size_t off = hdr->sh_offset + 8; // r_info of the first Elf64_Rela
    std::uint64_t info;
    std::memcpy(&info, obj.data() + off, 8);
    info = (std::uint64_t(0xfffff) << 32) | (info & 0xffffffffu);
    std::memcpy(obj.data() + off, &info, 8);
    return obj;
  }
  ADD_FAILURE() << "fixture has no .rela.text";
  return obj;
}

TEST(Fatal, HostSurvivesAndLaterLinksGoToWorkers) {
  LinkService service;
  LinkRequest good;
  good.target = "x86_64-linux-gnu";
  good.inputs = {Input::memory("good.o", test::compile_c(good.target, "int f(int x) { return x; }"))};
  good.exports = ExportPolicy::list({"f"});
  LinkResult before = service.link(good);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before.executed_by, "in-process");

  LinkRequest bad = good;
  bad.inputs = {Input::memory("bad.o", object_with_bad_relocation())};
  bad.exports = ExportPolicy::none();
  bad.execution = Execution::InProcess;
  LinkResult r = service.link(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::LinkFailed);
  EXPECT_EQ(r.error->input, "bad.o");
  EXPECT_NE(r.error->message.find("invalid symbol index"), std::string::npos) << r.error->message;
  EXPECT_FALSE(LinkService::in_process_usable());

  // Even a request that asks for in-process linking now goes to a worker.
  for (Execution e : {Execution::Auto, Execution::InProcess}) {
    good.execution = e;
    LinkResult after = service.link(good);
    ASSERT_TRUE(after.ok()) << after.error->to_string();
    EXPECT_EQ(after.executed_by, "worker");
    EXPECT_EQ(after.artifact, before.artifact);
  }
  // A second service in the same process sees the same state.
  LinkService other;
  LinkResult third = other.link(good);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third.executed_by, "worker");
}

TEST(Fatal, FatalErrorInAWorkerReplacesTheWorker) {
  LinkService service(ServiceConfig{1, {}});
  LinkRequest bad;
  bad.target = "x86_64-linux-gnu";
  bad.inputs = {Input::memory("bad.o", object_with_bad_relocation())};
  bad.exports = ExportPolicy::none();
  bad.execution = Execution::Isolated;
  LinkResult r = service.link(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.executed_by, "worker");
  EXPECT_NE(r.error->message.find("invalid symbol index"), std::string::npos);
  EXPECT_TRUE(LinkService::in_process_usable()); // the host's lld is untouched
  LinkRequest good = bad;
  good.inputs = {Input::memory("good.o", test::compile_c(good.target, "int f(int x) { return x; }"))};
  good.exports = ExportPolicy::list({"f"});
  LinkResult ok = service.link(good);
  EXPECT_TRUE(ok.ok()) << ok.error->to_string();
  EXPECT_EQ(service.stats().workers_started, 2u);
}

} // namespace
} // namespace hotlink
