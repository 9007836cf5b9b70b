// The C API's contract at its edges (include/hotlink/hotlink.h): bad
// arguments are errors with a code and a message, never a crash; a
// producer's failure stores nothing; an inspecting open creates nothing;
// pins of an empty module pin nothing. The happy path is the C sample's
// (samples/c_api.c, run by samples.c_api and the install test).
#include "hotlink/hotlink.h"

#include "hotlink/signature.h"
#include "test/http_server.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <sys/stat.h>

namespace {

using hotlink::test::Bytes;

Bytes kernel(int factor) {
  return hotlink::test::compile_c(
      hotlink_host_target(),
      "int scale(int x) { return x * " + std::to_string(factor) +
          "; }\nint scale_argv(void **a) { *(int *)a[1] = scale(*(int *)a[0]); return 0; }\n");
}

hotlink_result *link_bytes(hotlink_service *s, const Bytes &object) {
  hotlink_request *r = hotlink_request_create();
  hotlink_request_add_input(r, "scale.o", object.data(), object.size());
  hotlink_result *res = hotlink_link(s, r);
  hotlink_request_destroy(r);
  return res;
}

TEST(CApi, NullArgumentsAreBadRequestsNotCrashes) {
  hotlink_request *r = hotlink_request_create();
  hotlink_result *res = hotlink_link(nullptr, r);
  ASSERT_NE(res, nullptr);
  ASSERT_NE(hotlink_result_error(res), nullptr);
  EXPECT_EQ(hotlink_error_code(hotlink_result_error(res)), HOTLINK_BAD_REQUEST);
  EXPECT_NE(std::string(hotlink_error_message(hotlink_result_error(res))).find("service"), std::string::npos);
  EXPECT_EQ(hotlink_result_bytes(res, nullptr), nullptr);
  hotlink_result_destroy(res);
  hotlink_request_destroy(r);

  hotlink_error *e = nullptr;
  EXPECT_EQ(hotlink_cache_open(nullptr, &e), nullptr);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(hotlink_error_code(e), HOTLINK_BAD_REQUEST);
  hotlink_error_free(e);
  e = nullptr;
  EXPECT_EQ(hotlink_module_entry(nullptr, "f", &e), -1);
  EXPECT_EQ(hotlink_error_code(e), HOTLINK_BAD_REQUEST);
  hotlink_error_free(e);
  // Callers that pass no error out-parameter get the status alone.
  EXPECT_EQ(hotlink_module_reload(nullptr, nullptr, 0, nullptr, nullptr), HOTLINK_BAD_REQUEST);
  EXPECT_STREQ(hotlink_status_name(HOTLINK_INVALID_INPUT), "invalid-input");
  EXPECT_STREQ(hotlink_status_name(static_cast<hotlink_status>(999)), "unknown");
}

TEST(CApi, AnUnknownEnumValueIsNamedInTheError) {
  hotlink_service *s = hotlink_service_create(nullptr);
  hotlink_request *r = hotlink_request_create();
  hotlink_request_set_exports(r, static_cast<hotlink_export_mode>(42), nullptr, 0);
  hotlink_result *res = hotlink_link(s, r);
  ASSERT_NE(hotlink_result_error(res), nullptr);
  EXPECT_EQ(hotlink_error_code(hotlink_result_error(res)), HOTLINK_BAD_REQUEST);
  EXPECT_NE(std::string(hotlink_error_message(hotlink_result_error(res))).find("hotlink_request_set_exports"),
            std::string::npos);
  hotlink_result_destroy(res);
  hotlink_request_destroy(r);
  hotlink_service_destroy(s);
}

// Each of these was accepted: a NULL export list with a count (and a NULL
// entry in one), a NULL or empty library (lld then swallowed the next
// argument), a NULL or empty input path ("the file is empty"). Each is a
// bad request naming the call and the argument.
TEST(CApi, NullOrEmptyNamesAreRefusedNamingTheCall) {
  hotlink_service *s = hotlink_service_create(nullptr);
  const char *with_null[] = {"scale", nullptr};
  struct Case {
    const char *call, *argument;
    std::function<void(hotlink_request *)> set;
  } cases[] = {
      {"hotlink_request_set_exports", "'names' is NULL",
       [](hotlink_request *r) { hotlink_request_set_exports(r, HOTLINK_EXPORT_LIST, nullptr, 2); }},
      {"hotlink_request_set_exports", "names[1] is NULL",
       [&](hotlink_request *r) { hotlink_request_set_exports(r, HOTLINK_EXPORT_LIST, with_null, 2); }},
      {"hotlink_request_add_library", "'name' is NULL",
       [](hotlink_request *r) { hotlink_request_add_library(r, nullptr); }},
      {"hotlink_request_add_library", "'name' is empty",
       [](hotlink_request *r) { hotlink_request_add_library(r, ""); }},
      {"hotlink_request_add_input_file", "'path' is NULL",
       [](hotlink_request *r) { hotlink_request_add_input_file(r, nullptr); }},
      {"hotlink_request_add_input_file", "'path' is empty",
       [](hotlink_request *r) { hotlink_request_add_input_file(r, ""); }},
  };
  Bytes obj = kernel(2);
  for (const Case &c : cases) {
    hotlink_request *r = hotlink_request_create();
    hotlink_request_add_input(r, "scale.o", obj.data(), obj.size());
    c.set(r);
    hotlink_result *res = hotlink_link(s, r);
    ASSERT_NE(hotlink_result_error(res), nullptr) << c.call << ": " << c.argument;
    EXPECT_EQ(hotlink_error_code(hotlink_result_error(res)), HOTLINK_BAD_REQUEST);
    std::string msg = hotlink_error_message(hotlink_result_error(res));
    EXPECT_NE(msg.find(c.call), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.argument), std::string::npos) << msg;
    hotlink_result_destroy(res);
    hotlink_request_destroy(r);
  }
  hotlink_service_destroy(s);
}

TEST(CApi, OpeningAMissingCacheToInspectItCreatesNothing) {
  std::string parent = hotlink::test::temp_dir();
  std::string dir = parent + "/typo/cache";
  hotlink_cache_options o{};
  o.dir = dir.c_str();
  o.no_create = 1;
  hotlink_error *e = nullptr;
  EXPECT_EQ(hotlink_cache_open(&o, &e), nullptr);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(hotlink_error_code(e), HOTLINK_INPUT_NOT_FOUND);
  EXPECT_EQ(std::string(hotlink_error_input(e)), dir);
  hotlink_error_free(e);
  EXPECT_FALSE(hotlink::test::exists(parent + "/typo"));
}

TEST(CApi, AProducerThatFailsStoresNothingAndTheNextCallBuilds) {
  std::string dir = hotlink::test::temp_dir() + "/cache";
  hotlink_cache_options o{};
  o.dir = dir.c_str();
  hotlink_cache *c = hotlink_cache_open(&o, nullptr);
  ASSERT_NE(c, nullptr);
  hotlink_service *s = hotlink_service_create(nullptr);
  struct State {
    hotlink_service *service;
    Bytes object;
    int calls = 0;
    bool fail = true;
  } state{s, kernel(3)};
  auto produce = [](void *user, hotlink_build *b) {
    auto *st = static_cast<State *>(user);
    ++st->calls;
    if (st->fail)
      return hotlink_build_fail(b, "the JIT could not compile the pipeline");
    hotlink_result *res = link_bytes(st->service, st->object);
    hotlink_build_set_result(b, res);
    hotlink_result_destroy(res);
  };
  hotlink_error *e = nullptr;
  EXPECT_EQ(hotlink_cache_get_or_build(c, "k", 1, produce, &state, &e), nullptr);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(hotlink_error_code(e), HOTLINK_LINK_FAILED);
  EXPECT_NE(std::string(hotlink_error_message(e)).find("could not compile"), std::string::npos);
  hotlink_error_free(e);

  state.fail = false;
  hotlink_entry *built = hotlink_cache_get_or_build(c, "k", 1, produce, &state, nullptr);
  ASSERT_NE(built, nullptr);
  EXPECT_FALSE(hotlink_entry_hit(built));
  EXPECT_EQ(state.calls, 2);
  hotlink_entry *hit = hotlink_cache_get_or_build(c, "k", 1, produce, &state, nullptr);
  ASSERT_NE(hit, nullptr);
  EXPECT_TRUE(hotlink_entry_hit(hit));
  EXPECT_EQ(state.calls, 2);
  EXPECT_STREQ(hotlink_entry_blake3(built), hotlink_entry_blake3(hit));
  hotlink_library *lib = hotlink_entry_load(hit, nullptr);
  ASSERT_NE(lib, nullptr);
  auto scale = reinterpret_cast<int (*)(int)>(hotlink_library_symbol(lib, "scale"));
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale(5), 15);
  EXPECT_EQ(hotlink_library_symbol(lib, "absent"), nullptr);
  hotlink_library_close(lib);
  hotlink_entry_destroy(built);
  hotlink_entry_destroy(hit);
  hotlink_service_destroy(s);
  hotlink_cache_close(c);
}

// An http remote that wants a token, from C: the token comes from the
// auth file given to hotlink_cache_open_with_auth; one cache publishes,
// another (its own directory, the same file) hits without building; a file
// others can read is refused, naming it.
TEST(CApi, AnHttpRemoteGetsItsCredentialsFromTheAuthFile) {
  std::string dir = hotlink::test::temp_dir();
  hotlink::test::NginxServer nginx(dir + "/nginx", "t0ken");
  ::mkdir((dir + "/nginx").c_str(), 0700);
  std::string why;
  ASSERT_TRUE(nginx.start(&why)) << why;
  ASSERT_FALSE(hotlink::signature::write_key_pair(hotlink::signature::SecretKey::generate(), dir + "/ci").has_value());
  std::string auth = dir + "/auth", url = nginx.url(), pub = dir + "/ci.pub", key = dir + "/ci";
  hotlink::test::write_file(auth, Bytes{'B', 'e', 'a', 'r', 'e', 'r', ' ', 't', '0', 'k', 'e', 'n', '\n'});
  ::chmod(auth.c_str(), 0600);
  hotlink_service *s = hotlink_service_create(nullptr);
  struct State {
    hotlink_service *service;
    Bytes object;
    int calls = 0;
  } state{s, kernel(4)};
  auto produce = [](void *user, hotlink_build *b) {
    auto *st = static_cast<State *>(user);
    ++st->calls;
    hotlink_result *res = link_bytes(st->service, st->object);
    hotlink_build_set_result(b, res);
    hotlink_result_destroy(res);
  };
  const char *trusted[] = {pub.c_str()};
  for (const char *host : {"a", "b"}) {
    std::string cache_dir = dir + "/" + host;
    hotlink_cache_options o{};
    o.dir = cache_dir.c_str();
    o.remote_url = url.c_str();
    o.trusted_key_files = trusted;
    o.trusted_key_count = 1;
    o.sign_key_file = std::string(host) == "a" ? key.c_str() : nullptr;
    hotlink_error *e = nullptr;
    hotlink_cache *c = hotlink_cache_open_with_auth(&o, auth.c_str(), &e);
    ASSERT_NE(c, nullptr) << hotlink_error_message(e);
    hotlink_entry *entry = hotlink_cache_get_or_build(c, "scale:v4", 8, produce, &state, nullptr);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(hotlink_entry_hit(entry), std::string(host) == "b") << host;
    hotlink_entry_destroy(entry);
    hotlink_cache_close(c); // drains what it publishes
  }
  EXPECT_EQ(state.calls, 1) << "the second cache built the entry again";
  ::chmod(auth.c_str(), 0644);
  std::string loose_dir = dir + "/loose";
  hotlink_cache_options o{};
  o.dir = loose_dir.c_str();
  o.remote_url = url.c_str();
  o.trusted_key_files = trusted;
  o.trusted_key_count = 1;
  hotlink_error *e = nullptr;
  EXPECT_EQ(hotlink_cache_open_with_auth(&o, auth.c_str(), &e), nullptr);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(hotlink_error_code(e), HOTLINK_BAD_REQUEST);
  EXPECT_EQ(std::string(hotlink_error_input(e)), auth);
  hotlink_error_free(e);
  hotlink_service_destroy(s);
}

TEST(CApi, PinsOfAnEmptyModulePinNothingAndAPinCanBeCopied) {
  hotlink_module *m = hotlink_module_create();
  int slot = hotlink_module_entry(m, "scale", nullptr);
  ASSERT_GE(slot, 0);
  hotlink_pin pin;
  EXPECT_EQ(hotlink_module_pin(m, &pin), 0);
  EXPECT_EQ(hotlink_pin_entry(&pin, slot), nullptr);
  hotlink_pin_release(&pin); // left alone
  EXPECT_EQ(hotlink_module_version(m), 0u);
  EXPECT_EQ(hotlink_module_rollback(m, nullptr), HOTLINK_BAD_REQUEST);

  hotlink_service *s = hotlink_service_create(nullptr);
  hotlink_result *res = link_bytes(s, kernel(4));
  size_t n = 0;
  const uint8_t *bytes = hotlink_result_bytes(res, &n);
  ASSERT_NE(bytes, nullptr);
  ASSERT_EQ(hotlink_module_reload(m, bytes, n, "scale.so", nullptr), HOTLINK_OK);
  ASSERT_EQ(hotlink_module_pin(m, &pin), 1);
  hotlink_pin copy = pin; // C code passes pins by value
  auto scale = reinterpret_cast<int (*)(int)>(hotlink_pin_entry(&copy, slot));
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale(2), 8);
  EXPECT_EQ(hotlink_pin_entry(&copy, 31), nullptr); // a slot never registered
  EXPECT_EQ(hotlink_pin_entry(&copy, 99), nullptr); // past the last slot
  hotlink_pin_release(&copy);
  hotlink_result_destroy(res);
  hotlink_service_destroy(s);
  hotlink_module_destroy(m);
}

// A GPU code object through the C API: the processor and device-library
// options reach the link, and hotlink_verify checks it as the HSA loader
// would (the right target ID passes; another one, or a kernel it lacks, is
// refused with the loader's code).
TEST(CApi, AGpuCodeObjectLinksForItsProcessorAndVerifiesAgainstIt) {
  Bytes object = hotlink::test::compile_with(
      {HOTLINK_TEST_CLANG, "--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-nogpulib", "-mcode-object-version=4",
       "-O2", "-c", "-x", "c"},
      "__attribute__((device_kernel)) void twice(int *a) { a[__builtin_amdgcn_workitem_id_x()] *= 2; }");
  hotlink_service *s = hotlink_service_create(nullptr);
  hotlink_request *r = hotlink_request_create();
  hotlink_request_set_target(r, "amdgcn-amd-amdhsa");
  hotlink_request_add_input(r, "twice.o", object.data(), object.size());

  hotlink_result *no_processor = hotlink_link(s, r);
  ASSERT_NE(hotlink_result_error(no_processor), nullptr);
  EXPECT_EQ(hotlink_error_code(hotlink_result_error(no_processor)), HOTLINK_BAD_REQUEST);
  EXPECT_STREQ(hotlink_error_symbol(hotlink_result_error(no_processor)), "--mcpu");
  hotlink_result_destroy(no_processor);

  hotlink_request_set_processor(r, "gfx90a");
  hotlink_request_set_device_libs(r, HOTLINK_DEVICE_LIBS_NONE, nullptr);
  hotlink_result *res = hotlink_link(s, r);
  ASSERT_EQ(hotlink_result_error(res), nullptr) << hotlink_error_message(hotlink_result_error(res));
  ASSERT_EQ(hotlink_result_export_count(res), 2u); // the kernel and its descriptor
  EXPECT_STREQ(hotlink_result_export(res, 0), "twice");
  EXPECT_STREQ(hotlink_result_export(res, 1), "twice.kd");
  size_t n = 0;
  const uint8_t *image = hotlink_result_bytes(res, &n);
  ASSERT_NE(image, nullptr);

  const char *kernel_name[] = {"twice"};
  EXPECT_EQ(hotlink_verify(image, n, "twice.hsaco", "amdgcn-amd-amdhsa", "gfx90a", kernel_name, 1, nullptr),
            HOTLINK_OK);
  hotlink_error *error = nullptr;
  EXPECT_EQ(hotlink_verify(image, n, "twice.hsaco", "amdgcn-amd-amdhsa", "gfx1030", nullptr, 0, &error),
            HOTLINK_ARCH_MISMATCH);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(hotlink_error_message(error)).find("gfx1030"), std::string::npos)
      << hotlink_error_message(error);
  EXPECT_STREQ(hotlink_error_input(error), "twice.hsaco");
  hotlink_error_free(error);
  const char *missing[] = {"thrice"};
  EXPECT_EQ(hotlink_verify(image, n, "twice.hsaco", "amdgcn-amd-amdhsa", "gfx90a", missing, 1, nullptr),
            HOTLINK_MISSING_EXPORT);
  // A host's loader refuses a device image (no processor: this host).
  EXPECT_NE(hotlink_verify(image, n, "twice.hsaco", nullptr, nullptr, nullptr, 0, nullptr), HOTLINK_OK);

  hotlink_request_set_device_libs(r, static_cast<hotlink_device_libs>(7), nullptr);
  hotlink_result *bad = hotlink_link(s, r);
  ASSERT_NE(hotlink_result_error(bad), nullptr);
  EXPECT_NE(std::string(hotlink_error_message(hotlink_result_error(bad))).find("hotlink_request_set_device_libs"),
            std::string::npos);
  hotlink_result_destroy(bad);
  hotlink_result_destroy(res);
  hotlink_request_destroy(r);
  hotlink_service_destroy(s);
}

} // namespace

// The same for an NVIDIA cubin from PTX (skipped where nvJitLink is not
// installed, as the link's own error says).
TEST(CApi, ACubinLinksFromPtxForItsArchitectureAndVerifiesAgainstIt) {
  const std::string ptx = ".version 8.0\n.target sm_80\n.address_size 64\n"
                          ".visible .entry twice(.param .u64 a)\n{\n  ret;\n}\n";
  hotlink_service *s = hotlink_service_create(nullptr);
  hotlink_request *r = hotlink_request_create();
  hotlink_request_set_target(r, "nvptx64-nvidia-cuda");
  hotlink_request_set_processor(r, "sm_90");
  hotlink_request_add_input(r, "twice.ptx", ptx.data(), ptx.size());
  hotlink_result *res = hotlink_link(s, r);
  if (const hotlink_error *e = hotlink_result_error(res);
      e && std::string(hotlink_error_message(e)).find("nvJitLink is not installed") != std::string::npos) {
    std::string why = hotlink_error_message(e);
    hotlink_result_destroy(res);
    hotlink_request_destroy(r);
    hotlink_service_destroy(s);
    GTEST_SKIP() << why;
  }
  ASSERT_EQ(hotlink_result_error(res), nullptr) << hotlink_error_message(hotlink_result_error(res));
  ASSERT_EQ(hotlink_result_export_count(res), 1u);
  EXPECT_STREQ(hotlink_result_export(res, 0), "twice");
  size_t n = 0;
  const uint8_t *image = hotlink_result_bytes(res, &n);
  ASSERT_NE(image, nullptr);
  const char *kernel_name[] = {"twice"};
  EXPECT_EQ(hotlink_verify(image, n, "twice.cubin", "nvptx64-nvidia-cuda", "sm_90", kernel_name, 1, nullptr),
            HOTLINK_OK);
  hotlink_error *error = nullptr;
  EXPECT_EQ(hotlink_verify(image, n, "twice.cubin", "nvptx64-nvidia-cuda", "sm_80", nullptr, 0, &error),
            HOTLINK_ARCH_MISMATCH);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(hotlink_error_message(error)).find("sm_80"), std::string::npos)
      << hotlink_error_message(error);
  hotlink_error_free(error);
  hotlink_result_destroy(res);
  hotlink_request_destroy(r);
  hotlink_service_destroy(s);
}
