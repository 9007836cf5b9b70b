// The Windows runtime under Wine, against the Linux build: what the
// runtime reads of each image the Linux build linked (format, arch, kind,
// exports) and its BLAKE3 identity are what the Linux runtime read and
// wrote (`hotlink verify --json`, beside each fixture); a statement the
// Linux build signed (libsodium) verifies here (libgcrypt), and this
// runtime signs it with the same key into the same bytes.
//   runtime_test.exe FIXTURE_DIR [gtest flags]
#include "image/image.h"
#include "hotlink/blake3.h"
#include "hotlink/signature.h"
#include "base/files.h"
#include "base/fault_signals.h"
#include "base/glob.h"
#include "base/own_module.h"

#include "test/windows/fixtures.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <direct.h> // _mkdir
#include <atomic>
#include <csignal>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <iterator>

using namespace hotlink;
using namespace hotlink::test_windows;

namespace {

struct Fixture {
  const char *target, *ext;
  exports::Format format;
  exports::Arch arch;
};

const Fixture kFixtures[] = {
    {"x86_64-pc-windows-msvc", "dll", exports::Format::COFF, exports::Arch::X86_64},
    {"x86_64-w64-mingw32", "dll", exports::Format::COFF, exports::Arch::X86_64},
    {"i686-pc-windows-msvc", "dll", exports::Format::COFF, exports::Arch::X86},
    {"aarch64-pc-windows-msvc", "dll", exports::Format::COFF, exports::Arch::AArch64},
    {"x86_64-linux-gnu", "so", exports::Format::ELF, exports::Arch::X86_64},
};

} // namespace

TEST(WindowsRuntime, ReadsEachImageTheLinuxBuildLinkedAsTheLinuxRuntimeDid) {
  for (const Fixture &f : kFixtures) {
    SCOPED_TRACE(f.target);
    std::string base = g_fixtures + "/" + f.target;
    std::vector<std::uint8_t> bytes = read_bytes(base + "." + f.ext);
    ASSERT_FALSE(bytes.empty()) << base << "." << f.ext;
    std::ifstream json(base + ".json");
    nlohmann::json linux_read = nlohmann::json::parse(json, nullptr, false);
    ASSERT_FALSE(linux_read.is_discarded()) << base << ".json";
    auto read = image::read_host_image(bytes.data(), bytes.size(), f.target);
    ASSERT_TRUE(read.has_value());
    ASSERT_TRUE(read->ok()) << read->error().to_string();
    EXPECT_EQ((*read)->format, f.format);
    EXPECT_EQ((*read)->arch, f.arch);
    EXPECT_EQ((*read)->kind, exports::FileKind::SharedObject);
    EXPECT_EQ((*read)->exports, linux_read["exports"].get<std::vector<std::string>>());
    EXPECT_EQ(trust::blake3_hex(bytes), linux_read["blake3"].get<std::string>());
  }
}

TEST(WindowsRuntime, ADamagedExportDirectoryIsRefusedByName) {
  std::vector<std::uint8_t> dll = read_bytes(g_fixtures + "/x86_64-pc-windows-msvc.dll");
  ASSERT_GT(dll.size(), 0x200u);
  std::uint32_t pe = dll[0x3c] | dll[0x3d] << 8 | dll[0x3e] << 16 | std::uint32_t(dll[0x3f]) << 24;
  for (int i = 0; i < 4; ++i) // the export directory's RVA: far outside every section
    dll[pe + 24 + 112 + i] = i == 3 ? 0x7f : 0xf0;
  auto read = image::read_host_image(dll.data(), dll.size(), "damaged.dll");
  ASSERT_TRUE(read.has_value());
  ASSERT_FALSE(read->ok());
  EXPECT_EQ(read->error().input, "damaged.dll");
  EXPECT_NE(read->error().message.find("export directory"), std::string::npos) << read->error().message;
}

TEST(WindowsRuntime, AnArtifactOfAFormatItDoesNotReadIsRefusedByName) {
  std::vector<std::uint8_t> wasm = {0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00};
  auto read = exports::read_artifact(wasm.data(), wasm.size(), "k.wasm");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().input, "k.wasm");
  EXPECT_NE(read.error().message.find("without LLVM"), std::string::npos) << read.error().message;
}

TEST(WindowsRuntime, ExportGlobsMatchAsOnLinux) {
  auto g = base::Glob::compile("*_argv");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->match("f_argv"));
  EXPECT_FALSE(g->match("f_argv2"));
  EXPECT_FALSE(base::Glob::compile("[]").ok());
}

TEST(WindowsRuntime, AStatementSignedOnLinuxVerifiesAndATamperedArtifactIsRefused) {
  auto pub = signature::read_public_key(g_fixtures + "/key.pub");
  ASSERT_TRUE(pub.ok()) << pub.error().to_string();
  std::vector<std::uint8_t> dll = read_bytes(g_fixtures + "/x86_64-pc-windows-msvc.dll");
  std::string statement = read_text(g_fixtures + "/x86_64-pc-windows-msvc.dll.sig");
  auto checked = signature::check_artifact(dll, statement, {*pub}, "k.dll");
  ASSERT_TRUE(checked.ok()) << checked.error().to_string();
  EXPECT_EQ(checked->blake3, trust::blake3_hex(dll));
  std::vector<std::uint8_t> tampered = dll;
  tampered[tampered.size() / 2] ^= 1;
  auto refused = signature::check_artifact(tampered, statement, {*pub}, "k.dll");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::HashMismatch);
  signature::SecretKey stranger = signature::SecretKey::generate();
  auto untrusted = signature::check_artifact(dll, statement, {stranger.public_key()}, "k.dll");
  ASSERT_FALSE(untrusted.ok());
  EXPECT_EQ(untrusted.error().code, ErrorCode::UntrustedSigner);
}

TEST(WindowsRuntime, SignsWithTheLinuxKeyIntoTheLinuxBytes) {
  auto key = signature::read_secret_key(g_fixtures + "/key");
  ASSERT_TRUE(key.ok()) << key.error().to_string();
  std::string statement = read_text(g_fixtures + "/x86_64-pc-windows-msvc.dll.sig");
  auto parsed = signature::parse_statement(statement, "k.dll.sig");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  // Ed25519 is deterministic: libgcrypt's signature is libsodium's.
  std::string line = key->sign_line(parsed->json);
  EXPECT_NE(statement.find("\n" + line + "\n"), std::string::npos) << line << "\nnot in\n" << statement;
}

TEST(WindowsRuntime, AKeyPairMadeHereSignsWhatItVerifiesAndIsRefusedWhenDamaged) {
  std::string dir = g_fixtures + "/keys-" + base::unique_suffix().substr(5);
  ASSERT_EQ(_mkdir(dir.c_str()), 0) << dir;
  signature::SecretKey made = signature::SecretKey::generate();
  ASSERT_FALSE(signature::write_key_pair(made, dir + "/k"));
  auto again = signature::write_key_pair(made, dir + "/k"); // never replaced by accident
  ASSERT_TRUE(again.has_value());
  EXPECT_NE(again->message.find("already exists"), std::string::npos) << again->to_string();
  auto key = signature::read_secret_key(dir + "/k");
  auto pub = signature::read_public_key(dir + "/k.pub");
  ASSERT_TRUE(key.ok() && pub.ok());
  std::vector<std::uint8_t> dll = read_bytes(g_fixtures + "/x86_64-w64-mingw32.dll");
  std::string statement = signature::add_signature(
      signature::seal(signature::artifact_statement_json(dll, "k.dll", {"f", "f_argv"}, "x86_64-w64-mingw32")), *key);
  auto checked = signature::check_artifact(dll, statement, {*pub}, "made.sig");
  EXPECT_TRUE(checked.ok()) << checked.error().to_string();
  // A secret key whose public half is not its seed's is refused.
  std::string text = read_text(dir + "/k");
  std::size_t last = text.find_last_not_of("\r\n");
  text[last] = text[last] == '0' ? '1' : '0';
  ASSERT_FALSE(base::write_file_atomically(dir + "/damaged", text.data(), text.size()));
  auto damaged = signature::read_secret_key(dir + "/damaged");
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.error().message.find("damaged"), std::string::npos) << damaged.error().to_string();
  base::remove_tree(dir);
}

namespace {

// What a faulting kernel does (noinline: the frames the fault names).
[[gnu::noinline]] int read_through(volatile int *p) { return *p; }
[[gnu::noinline]] int divide(volatile int a, volatile int b) { return a / b; }

} // namespace

TEST(WindowsRuntime, AGuardedAccessViolationAndDivideByZeroReturnWithWhereTheyHappened) {
  volatile int sink = 0;
  base::Fault av = base::run_catching_faults([&] { sink = read_through(reinterpret_cast<int *>(0x40)); });
  EXPECT_EQ(av.signal, SIGSEGV);
  EXPECT_EQ(av.address, 0x40u);
  ASSERT_GE(av.frame_count, 2);
  auto near = [](std::uintptr_t pc, const void *fn) {
    auto f = reinterpret_cast<std::uintptr_t>(fn);
    return pc >= f && pc < f + 64;
  };
  EXPECT_TRUE(near(av.frames[0], reinterpret_cast<const void *>(&read_through))) << std::hex << av.frames[0];
  base::Fault fpe = base::run_catching_faults([&] { sink = divide(1, 0); });
  EXPECT_EQ(fpe.signal, SIGFPE);
  EXPECT_TRUE(near(fpe.frames[0], reinterpret_cast<const void *>(&divide))) << std::hex << fpe.frames[0];
  base::Fault fine = base::run_catching_faults([&] { sink = divide(6, 3); });
  EXPECT_EQ(fine.signal, 0);
  EXPECT_EQ(sink, 2);
}

TEST(WindowsRuntime, AGuardLeftByAnExceptionOrANestedFaultIsDisarmed) {
  EXPECT_THROW(base::run_catching_faults([] { throw std::runtime_error("out"); }), std::runtime_error);
  // The outer guard catches what the inner one's call left to it.
  base::Fault outer = base::run_catching_faults([] {
    base::Fault inner = base::run_catching_faults([] { read_through(nullptr); });
    if (inner.signal == SIGSEGV)
      divide(1, 0);
  });
  EXPECT_EQ(outer.signal, SIGFPE);
  EXPECT_EQ(base::run_catching_faults([] {}).signal, 0);
}

TEST(WindowsRuntime, FourThreadsFaultingAtOnceAreEachCaughtOnTheirOwn) {
  std::atomic<int> caught{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        base::Fault f = base::run_catching_faults([&] {
          if ((i + t) % 2)
            read_through(reinterpret_cast<int *>(8));
          else
            divide(i, 0);
        });
        if (f.signal == ((i + t) % 2 ? SIGSEGV : SIGFPE))
          ++caught;
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(caught.load(), 2000);
}

TEST(WindowsRuntime, OpensAModuleBesideItselfAndSaysWhereItLookedOrWhatIsWrong) {
  const void *anchor = reinterpret_cast<const void *>(&read_bytes);
  OwnModule beside{"test-module.dll", "HOTLINK_TEST_MODULE", anchor, {}};
  auto opened = open_own_module(beside, "this test", "hotlink_test_module_v1", "rebuild the test");
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  EXPECT_EQ(reinterpret_cast<int (*)()>(opened->entry)(), 42);
  // Not installed: every place looked is named.
  OwnModule missing{"no-such-module.dll", "HOTLINK_TEST_MISSING", anchor, {g_fixtures}};
  auto absent = open_own_module(missing, "this test", "hotlink_test_module_v1", "rebuild the test");
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.error().message.find("not installed"), std::string::npos) << absent.error().to_string();
  EXPECT_NE(absent.error().message.find(g_fixtures + "/no-such-module.dll"), std::string::npos)
      << absent.error().to_string();
  // The variable names the one path tried; a DLL that is not a module is
  // refused by its missing entry point.
  std::string other = g_fixtures + "/x86_64-w64-mingw32.dll";
  ASSERT_EQ(_putenv(("HOTLINK_TEST_OTHER=" + other).c_str()), 0);
  OwnModule not_ours{"test-module.dll", "HOTLINK_TEST_OTHER", anchor, {}};
  auto foreign = open_own_module(not_ours, "this test", "hotlink_test_module_v1", "rebuild the test");
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error().input, other);
  EXPECT_NE(foreign.error().message.find("has no hotlink_test_module_v1"), std::string::npos)
      << foreign.error().to_string();
}

int main(int argc, char **argv) { return test_windows::run_all(argc, argv, "runtime_test"); }
