// libhotlink.dll as a Windows program uses it, under Wine: linked through
// its import library alone (libhotlink.dll.a), the C API loads, verifies,
// hot-reloads and caches the DLLs the Linux build linked; the C++ API's
// HotModule, guarded calls included, runs from the DLL; what needs the
// linker module, which this build has none of, is refused by name; and the
// DLL needs nothing beside it but Windows' own DLLs.
//   dll_test.exe FIXTURE_DIR [gtest flags]
#include "hotlink/hotlink.h"
#include "hotlink/hot_module.h"
#include "hotlink/symbols.h"

#include "test/windows/fixtures.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

using namespace hotlink;
using namespace hotlink::test_windows;

namespace {

// The error's parts, freed.
struct CError {
  hotlink_status code;
  std::string message, input, hint;
};
CError take(hotlink_error *e) {
  CError c{hotlink_error_code(e), hotlink_error_message(e), hotlink_error_input(e), hotlink_error_hint(e)};
  hotlink_error_free(e);
  return c;
}

std::string dll_path() {
  HMODULE h = GetModuleHandleA("libhotlink.dll");
  char path[MAX_PATH];
  DWORD n = h ? GetModuleFileNameA(h, path, MAX_PATH) : 0;
  return std::string(path, n);
}

} // namespace

TEST(WindowsDll, NeedsNothingButWindowsOwnDlls) {
  std::string path = dll_path();
  ASSERT_FALSE(path.empty());
  std::vector<std::uint8_t> bytes = read_bytes(path);
  auto info = exports::read_artifact(bytes.data(), bytes.size(), path);
  ASSERT_TRUE(info) << info.error().to_string();
  const std::set<std::string> windows = {"KERNEL32.dll", "msvcrt.dll", "ADVAPI32.dll", "USER32.dll", "WS2_32.dll"};
  for (const std::string &dll : info->needed)
    EXPECT_TRUE(windows.count(dll)) << path << " needs " << dll;
  EXPECT_TRUE(std::binary_search(info->exports.begin(), info->exports.end(), "hotlink_module_reload"));
}

TEST(WindowsDll, TheCApiLoadsVerifiesAndRefusesByName) {
  EXPECT_STREQ(hotlink_host_target(), "x86_64-w64-windows-gnu");
  EXPECT_STREQ(hotlink_llvm_version(), "") << "this build has no LLVM";
  const char *f[] = {"f"};
  hotlink_error *err = nullptr;
  hotlink_library *lib = hotlink_load_file(fixture("reload_a.dll").c_str(), f, 1, &err);
  ASSERT_NE(lib, nullptr) << take(err).message;
  auto fn = reinterpret_cast<int (*)(int)>(hotlink_library_symbol(lib, "f"));
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn(1), 1002);
  hotlink_library_close(lib);

  std::vector<std::uint8_t> arm = read_bytes(fixture("aarch64-pc-windows-msvc.dll"));
  EXPECT_EQ(hotlink_verify(arm.data(), arm.size(), "arm.dll", nullptr, nullptr, nullptr, 0, &err),
            HOTLINK_ARCH_MISMATCH);
  CError e = take(err);
  EXPECT_EQ(e.input, "arm.dll");
  EXPECT_NE(e.message.find("aarch64"), std::string::npos) << e.message;
}

TEST(WindowsDll, TheCApiHotReloadsThroughPins) {
  hotlink_module *m = hotlink_module_create();
  hotlink_error *err = nullptr;
  int slot = hotlink_module_entry(m, "f", &err);
  ASSERT_GE(slot, 0);
  for (int i = 0; i < 20; ++i) {
    std::string next = fixture(i % 2 ? "reload_b.dll" : "reload_a.dll");
    ASSERT_EQ(hotlink_module_reload_file(m, next.c_str(), &err), HOTLINK_OK) << take(err).message;
    hotlink_pin pin;
    ASSERT_TRUE(hotlink_module_pin(m, &pin));
    auto fn = reinterpret_cast<int (*)(int)>(hotlink_pin_entry(&pin, slot));
    EXPECT_EQ(fn(1), i % 2 ? 2002 : 1002);
    EXPECT_EQ(hotlink_pin_version(&pin), static_cast<std::uint64_t>(i + 1));
    hotlink_pin_release(&pin);
  }
  EXPECT_EQ(hotlink_module_reload_file(m, fixture("reload_no_f.dll").c_str(), &err), HOTLINK_MISSING_EXPORT);
  take(err);
  EXPECT_EQ(hotlink_module_version(m), 20u);
  hotlink_module_destroy(m);
}

namespace {
void build_a(void *, hotlink_build *b) {
  std::vector<std::uint8_t> bytes = read_bytes(fixture("reload_a.dll"));
  hotlink_build_set_artifact(b, bytes.data(), bytes.size(), "reload_a.dll", "x86_64-w64-windows-gnu");
  hotlink_build_add_export(b, "f");
}
} // namespace

TEST(WindowsDll, TheCApiCachesAndLoadsAnEntry) {
  std::string dir = fixture("dll-cache");
  hotlink_cache_options o = {};
  o.dir = dir.c_str();
  hotlink_error *err = nullptr;
  hotlink_cache *cache = hotlink_cache_open(&o, &err);
  ASSERT_NE(cache, nullptr) << take(err).message;
  std::string key = "dll_test:" + std::to_string(GetTickCount64());
  for (int round = 0; round < 2; ++round) {
    hotlink_entry *entry = hotlink_cache_get_or_build(cache, key.data(), key.size(), build_a, nullptr, &err);
    ASSERT_NE(entry, nullptr) << take(err).message;
    EXPECT_EQ(hotlink_entry_hit(entry), round == 1);
    hotlink_library *lib = hotlink_entry_load(entry, &err);
    ASSERT_NE(lib, nullptr) << take(err).message;
    EXPECT_EQ(reinterpret_cast<int (*)(int)>(hotlink_library_symbol(lib, "f"))(2), 1004);
    hotlink_library_close(lib);
    hotlink_entry_destroy(entry);
  }
  hotlink_cache_close(cache);
}

TEST(WindowsDll, LinkingNamesTheLinkerModuleThisBuildLacks) {
  hotlink_service *service = hotlink_service_create(nullptr);
  hotlink_request *request = hotlink_request_create();
  hotlink_request_set_target(request, "x86_64-w64-mingw32");
  hotlink_request_add_input_file(request, fixture("reload_a.o").c_str());
  hotlink_result *result = hotlink_link(service, request);
  const hotlink_error *e = hotlink_result_error(result);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(hotlink_error_code(e), HOTLINK_LINKER_UNAVAILABLE) << hotlink_error_message(e);
  EXPECT_NE(std::string(hotlink_error_message(e)).find("libhotlink-linker-"), std::string::npos)
      << hotlink_error_message(e);
  EXPECT_NE(std::string(hotlink_error_hint(e)).find("link on a Linux host"), std::string::npos)
      << hotlink_error_hint(e);
  hotlink_result_destroy(result);
  hotlink_request_destroy(request);
  hotlink_service_destroy(service);
  EXPECT_STREQ(hotlink_lld_version(), "");
}

TEST(WindowsDll, TheCxxApiGuardsCallsFromTheDll) {
  loader::HotModule m;
  auto divide = m.entry<int(int)>("divide");
  ASSERT_TRUE(divide);
  ASSERT_FALSE(m.reload(fixture("reload_a.dll")));
  ASSERT_FALSE(m.reload(fixture("reload_b.dll")));
  auto r = m.guarded(*divide, 0);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("EXCEPTION_INT_DIVIDE_BY_ZERO"), std::string::npos) << r.error().message;
  EXPECT_EQ(m.current()->number, 1u);
  auto ok = m.guarded(*divide, 2);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 50000);
}

int main(int argc, char **argv) { return test_windows::run_all(argc, argv, "dll_test"); }
