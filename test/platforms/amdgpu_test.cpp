// AMDGPU code objects (amdgcn-amd-amdhsa): byte-identical to ld.lld's, read
// by ROCm's comgr, disassembled by llvm-objdump, verified as the HSA loader
// would, refused by name, and cached. No GPU is needed.
#include "hotlink/link_service.h"
#include "hotlink/verify_target.h"
#include "support.h"

#include <gtest/gtest.h>


#include <algorithm>
#include <future>

using namespace hotlink;
using namespace hotlink::test;

namespace {

const char *kTriple = "amdgcn-amd-amdhsa";

const char *kAdd = R"(
__attribute__((device_kernel)) void add(float *a, const float *b, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) a[i] += b[i];
})";

// A kernel that uses LDS (group segment) and calls a device function
// defined in another object.
const char *kCaller = R"(
float scale(float x);
__attribute__((device_kernel)) void staged(float *a) {
  static __attribute__((address_space(3), loader_uninitialized)) float tile[256];
  int i = __builtin_amdgcn_workitem_id_x();
  tile[i] = a[i];
  __builtin_amdgcn_s_barrier();
  a[i] = scale(tile[255 - i]);
})";
const char *kScale = "float scale(float x) { return x * 3.0f + 1.0f; }";

const char *kSin = R"(
float __ocml_sin_f32(float);
__attribute__((device_kernel)) void wave(float *a) {
  int i = __builtin_amdgcn_workitem_id_x();
  a[i] = __ocml_sin_f32(a[i]);
})";

std::vector<std::string> device_flags(const std::string &cpu, int version = 4) {
  return {HOTLINK_TEST_CLANG, "--target=amdgcn-amd-amdhsa", "-mcpu=" + cpu, "-nogpulib",
          "-mcode-object-version=" + std::to_string(version), "-O2", "-c", "-x", "c"};
}

Bytes device_object(const std::string &source, const std::string &cpu, int version = 4) {
  return compile_with(device_flags(cpu, version), source);
}

Bytes device_bitcode(const std::string &source, const std::string &cpu) {
  auto flags = device_flags(cpu);
  flags.insert(flags.end() - 2, "-emit-llvm");
  return compile_with(flags, source, ".bc");
}

std::string save(const std::string &dir, const std::string &name, const Bytes &bytes) {
  std::string path = dir + "/" + name;
  write_file(path, bytes);
  return path;
}

LinkRequest device_request(const std::string &cpu, std::vector<Input> inputs) {
  LinkRequest r;
  r.target = kTriple;
  r.gpu.processor = cpu;
  r.inputs = std::move(inputs);
  return r;
}

// ld.lld's code object of the same inputs, with clang's driver's line.
Bytes reference(const std::string &dir, const std::string &cpu, const std::vector<std::string> &inputs,
                const std::vector<std::string> &extra = {}) {
  std::vector<std::string> argv = {HOTLINK_TEST_LLD, "-flavor", "gnu", "--no-undefined", "-shared",
                                   "-plugin-opt=mcpu=" + cpu};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  argv.push_back("-o");
  argv.push_back(dir + "/reference.hsaco");
  test::Run r = run(argv);
  EXPECT_EQ(r.code, 0) << r.err;
  return read_file(dir + "/reference.hsaco");
}

// What comgr (ROCm's reader) says of a code object: "isa X", "kernel K".
std::string comgr(const std::string &path) {
  test::Run r = run({bin_dir() + "/comgr_read", path});
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out;
}

std::string hotlink_cli() { return bin_dir() + "/hotlink"; }

class ByProcessor : public ::testing::TestWithParam<const char *> {};

// Object and bitcode inputs, linked in memory, equal ld.lld's bytes; comgr
// reads the ISA and the kernel; llvm-objdump disassembles it.
TEST_P(ByProcessor, ObjectAndBitcodeAreByteIdenticalToLldAndReadByComgr) {
  std::string cpu = GetParam(), dir = temp_dir();
  LinkService svc;
  for (bool bitcode : {false, true}) {
    SCOPED_TRACE(bitcode ? "bitcode" : "object");
    Bytes in = bitcode ? device_bitcode(kAdd, cpu) : device_object(kAdd, cpu);
    std::string in_path = save(dir, bitcode ? "add.bc" : "add.o", in);
    LinkResult res = svc.link(device_request(cpu, {Input::memory("add", in)}));
    ASSERT_TRUE(res.ok()) << res.error->to_string();
    EXPECT_EQ(res.exports, (std::vector<std::string>{"add", "add.kd"}));
    EXPECT_TRUE(res.artifact == reference(dir, cpu, {in_path})) << "differs from ld.lld's code object";
    std::string path = save(dir, "add.hsaco", res.artifact);
    EXPECT_EQ(comgr(path), "isa amdgcn-amd-amdhsa--" + cpu + "\nkernel add\n");
    test::Run dis = run({HOTLINK_TEST_LLVM_OBJDUMP, "-d", "--mcpu=" + cpu, path});
    EXPECT_EQ(dis.code, 0) << dis.err;
    EXPECT_NE(dis.out.find("<add>:"), std::string::npos) << dis.out;
    EXPECT_NE(dis.out.find("s_endpgm"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Amdgpu, ByProcessor, ::testing::Values("gfx90a", "gfx1030"));

// A kernel calling a function of another object, and using LDS: the code
// object's metadata reports the group segment; wave64 on gfx90a.
TEST(Amdgpu, TwoObjectsAndLdsAreDescribedByTheMetadata) {
  std::string dir = temp_dir();
  Bytes caller = device_object(kCaller, "gfx90a"), scale = device_object(kScale, "gfx90a");
  LinkService svc;
  LinkResult res = svc.link(device_request("gfx90a", {Input::memory("caller.o", caller), Input::memory("scale.o", scale)}));
  ASSERT_TRUE(res.ok()) << res.error->to_string();
  EXPECT_TRUE(res.artifact ==
              reference(dir, "gfx90a", {save(dir, "caller.o", caller), save(dir, "scale.o", scale)}));
  auto d = describe_artifact(res.artifact, "staged.hsaco");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  ASSERT_EQ(d->exports.size(), 1u);
  auto prop = [&](const std::string &k) {
    for (const auto &[key, v] : d->exports[0].properties)
      if (key == k)
        return v;
    return std::string("missing");
  };
  EXPECT_EQ(d->exports[0].name, "staged");
  EXPECT_EQ(prop("group_segment_fixed_size"), "1024");
  EXPECT_EQ(prop("wavefront_size"), "64");
  EXPECT_NE(prop("kernarg_segment_size"), "missing"); // 8 bytes and the hidden arguments of a call
  EXPECT_EQ(comgr(save(dir, "staged.hsaco", res.artifact)), "isa amdgcn-amd-amdhsa--gfx90a\nkernel staged\n");
}

// A compiled kernel calling ocml links with the device libraries chosen by
// clang's driver, lazily: nothing is left undefined, and comgr reads it.
TEST(Amdgpu, DeviceLibrariesResolveOcmlFromAnObject) {
  std::string dir = temp_dir();
  Bytes obj = device_object(kSin, "gfx90a");
  LinkService svc;
  LinkResult res = svc.link(device_request("gfx90a", {Input::memory("wave.o", obj)}));
  ASSERT_TRUE(res.ok()) << res.error->to_string();
  EXPECT_NE(std::find(res.runtime.begin(), res.runtime.end(), "ocml.bc"), res.runtime.end());
  EXPECT_NE(std::find(res.runtime.begin(), res.runtime.end(), "oclc_isa_version_90a.bc"), res.runtime.end());
  std::string path = save(dir, "wave.hsaco", res.artifact);
  hotlink::VerifyOptions options;
  options.expected_exports = {"wave"};
  options.processor = "gfx90a";
  auto v = verify_for_target(res.artifact, path, kTriple, options);
  EXPECT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(comgr(path), "isa amdgcn-amd-amdhsa--gfx90a\nkernel wave\n");
  // Without them, the undefined function is an error naming it.
  LinkRequest none = device_request("gfx90a", {Input::memory("wave.o", obj)});
  none.gpu.device_libs = DeviceLibs::None;
  LinkResult bad = svc.link(none);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error->code, ErrorCode::UndefinedSymbol);
  EXPECT_EQ(bad.error->symbol, "__ocml_sin_f32");
}

// Refusals through the CLI: exit code, the reason named, no output file.
TEST(Amdgpu, RefusalsNameTheReasonAndWriteNothing) {
  std::string dir = temp_dir(), out = dir + "/out.hsaco";
  std::string add90a = save(dir, "add.o", device_object(kAdd, "gfx90a"));
  std::string undef = save(dir, "undef.o", device_object("void missing(float *); __attribute__((device_kernel)) "
                                                         "void k(float *a) { missing(a); }",
                                                         "gfx90a"));
  std::string host = save(dir, "host.o", compile_c("x86_64-linux-gnu", "int f(int x) { return x; }"));
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  } cases[] = {
      {{"--mcpu", "gfx90a", undef}, 1, "missing"},
      {{"--mcpu", "gfx1030", add90a}, 2, "was compiled for gfx90a, which the target ID gfx1030 does not allow"},
      {{"--mcpu", "gfx90a:xnack+", save(dir, "x.o", device_object(kAdd, "gfx90a:xnack-"))}, 2,
       "gfx90a:xnack-"},
      {{"--mcpu", "gfx90a", host}, 2, "is built for x86_64"},
      {{"--mcpu", "gfx90a", add90a, save(dir, "v5.o", device_object(kScale, "gfx90a", 5))}, 2,
       "is code object version 5, but"},
      {{add90a}, 2, "--mcpu"},
  };
  for (const Case &c : cases) {
    std::vector<std::string> argv = {hotlink_cli(), "link", "--target", kTriple, "-o", out};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    test::Run r = run(argv);
    SCOPED_TRACE(c.says);
    EXPECT_EQ(r.code, c.code) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_FALSE(exists(out));
  }
}

// verify: the processor, the expected kernels and the note, like the HSA
// loader; a corrupt note is refused by name.
TEST(Amdgpu, VerifyChecksProcessorKernelsAndTheNote) {
  std::string dir = temp_dir(), image = dir + "/add.hsaco";
  test::Run link = run({hotlink_cli(), "link", "--target", kTriple, "--mcpu", "gfx90a", "-o", image,
                  save(dir, "add.o", device_object(kAdd, "gfx90a"))});
  ASSERT_EQ(link.code, 0) << link.err;
  test::Run ok = run({hotlink_cli(), "verify", image, "--mcpu", "gfx90a", "--expect", "add"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("code_object_version: 4"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("kernel add: symbol=add.kd kernarg_segment_size=20"), std::string::npos) << ok.out;
  test::Run other = run({hotlink_cli(), "verify", image, "--mcpu", "gfx1030"});
  EXPECT_EQ(other.code, 1);
  EXPECT_NE(other.err.find("arch-mismatch"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("gfx1030"), std::string::npos) << other.err;
  test::Run missing = run({hotlink_cli(), "verify", image, "--mcpu", "gfx90a", "--expect", "sub"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("'sub'"), std::string::npos) << missing.err;
  // The note's descsz made larger than its section: a malformed note.
  Bytes bytes = read_file(image);
  const std::string owner("AMDGPU\0\0", 8);
  auto at = std::search(bytes.begin(), bytes.end(), owner.begin(), owner.end());
  ASSERT_NE(at, bytes.end());
  std::size_t descsz = static_cast<std::size_t>(at - bytes.begin()) - 8;
  bytes[descsz + 2] = 0x7f;
  std::string corrupt = save(dir, "corrupt.hsaco", bytes);
  test::Run bad = run({hotlink_cli(), "verify", corrupt, "--mcpu", "gfx90a"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("note"), std::string::npos) << bad.err;
  // A processor number LLVM reserves (0x4b) or leaves unnamed (0x5c) in
  // e_flags: refused by name (LLVM's own name lookup would be undefined
  // behaviour there).
  for (std::uint8_t mach : {0x4b, 0x5c}) {
    Bytes flags = read_file(image);
    flags[48] = mach; // e_flags' low byte (EF_AMDGPU_MACH) in a 64-bit header
    std::string odd = save(dir, "mach.hsaco", flags);
    test::Run refused = run({hotlink_cli(), "verify", odd, "--mcpu", "gfx90a"});
    EXPECT_EQ(refused.code, 1) << int(mach);
    EXPECT_NE(refused.err.find("no AMDGCN processor"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("mach.hsaco"), std::string::npos) << refused.err;
  }
}

// hotlink exports lists an object's kernels with what their metadata says.
TEST(Amdgpu, ExportsListsKernelsWithTheirResources) {
  std::string dir = temp_dir();
  test::Run r = run({hotlink_cli(), "exports", save(dir, "add.o", device_object(kAdd, "gfx1030"))});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("add  symbol=add.kd  kernarg_segment_size=20", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("wavefront_size=32"), std::string::npos) << r.out;
}

// The cache: a second process gets the same bytes without linking; another
// processor or code object version is another key.
TEST(Amdgpu, CacheHitsAcrossProcessesAndKeysByProcessorAndVersion) {
  std::string dir = temp_dir(), cache = dir + "/cache";
  std::string v4 = save(dir, "add4.o", device_object(kAdd, "gfx90a"));
  std::string v5 = save(dir, "add5.o", device_object(kAdd, "gfx90a", 5));
  auto link = [&](const std::string &cpu, const std::string &in, const std::string &out) {
    test::Run r = run({hotlink_cli(), "link", "--target", kTriple, "--mcpu", cpu, "--cache", cache, "--json", "-o",
                 dir + "/" + out, in});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  };
  EXPECT_NE(link("gfx90a", v4, "a.hsaco").find("\"cache\": \"miss\""), std::string::npos);
  EXPECT_NE(link("gfx90a", v4, "a.hsaco").find("\"cache\": \"hit\""), std::string::npos);
  EXPECT_TRUE(read_file(dir + "/a.hsaco") == reference(dir, "gfx90a", {v4}));
  // A code object has no soname: another output name is the same bytes,
  // so the same entry (it missed).
  EXPECT_NE(link("gfx90a", v4, "other-name.hsaco").find("\"cache\": \"hit\""), std::string::npos);
  EXPECT_TRUE(read_file(dir + "/other-name.hsaco") == read_file(dir + "/a.hsaco"));
  EXPECT_NE(link("gfx90a:xnack+", v4, "a.hsaco").find("\"cache\": \"miss\""), std::string::npos);
  EXPECT_NE(link("gfx90a", v5, "a.hsaco").find("\"cache\": \"miss\""), std::string::npos);
}

// The device libraries clang's driver picks for a target ID, asked
// independently of hotlink (clang -### and its -mlink-builtin-bitcode
// files), as full paths in its order.
std::vector<std::string> clang_device_libraries(const std::string &cpu, bool hip = false) {
  std::vector<std::string> argv = {HOTLINK_TEST_CLANG, "-###", "-mcode-object-version=4",
                                   "--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"};
  if (hip)
    argv.insert(argv.end(), {"--offload-arch=" + cpu, "--cuda-device-only", "-nogpuinc", "-x", "hip", "-c",
                             "/dev/null"});
  else
    argv.insert(argv.end(), {"--target=amdgcn-amd-amdhsa", "-mcpu=" + cpu, "-x", "cl", "-c", "/dev/null"});
  test::Run r = run(argv);
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<std::string> libs;
  const std::string flag = "\"-mlink-builtin-bitcode\" \"";
  for (std::size_t at = r.err.find(flag); at != std::string::npos; at = r.err.find(flag, at + 1)) {
    std::size_t begin = at + flag.size();
    libs.push_back(r.err.substr(begin, r.err.find('"', begin) - begin));
  }
  return libs;
}

// With the device libraries, the code object is ld.lld's, byte for byte,
// given the same line: the libraries clang's driver names for the target
// ID, lazily (--start-lib), for the inputs' code object version.
TEST(Amdgpu, DeviceLibraryLinkIsByteIdenticalToLdLldWithClangsLibraries) {
  std::string dir = temp_dir();
  std::string obj = save(dir, "wave.o", device_object(kSin, "gfx1030"));
  LinkService svc;
  LinkResult res = svc.link(device_request("gfx1030", {Input::file(obj)}));
  ASSERT_TRUE(res.ok()) << res.error->to_string();
  std::vector<std::string> libs = clang_device_libraries("gfx1030");
  ASSERT_FALSE(libs.empty());
  std::vector<std::string> names;
  for (const std::string &lib : libs)
    names.push_back(lib.substr(lib.rfind('/') + 1));
  EXPECT_EQ(res.runtime, names); // oclc_wavefrontsize64_off.bc, oclc_isa_version_1030.bc, ...
  std::vector<std::string> line = {"-plugin-opt=-amdhsa-code-object-version=4", "--start-lib"};
  line.insert(line.end(), libs.begin(), libs.end());
  line.push_back("--end-lib");
  line.insert(line.begin() + 1, obj);
  EXPECT_TRUE(res.artifact == reference(dir, "gfx1030", {}, line)) << "differs from ld.lld's code object";
}

// HIP device bitcode compiled with -nogpulib: the device libraries are
// clang's HIP set (no opencl.bc, oclc_correctly_rounded_sqrt_on), not the
// OpenCL one, and what they define stays theirs: the code object exports
// the kernel, its descriptor and the inputs' own globals (a __device__
// variable a runtime looks up by name), never __ockl_*, __get_scratch_lds
// (which it exported before). The bytes are ld.lld's, given the same
// libraries and hotlink's version script.
TEST(Amdgpu, HipBitcodeGetsHipsDeviceLibrariesAndExportsOnlyItsOwn) {
  const char *source = R"(
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
extern "C" __device__ unsigned long __ockl_printf_begin(unsigned long);
extern "C" __device__ float __ocml_sin_f32(float);
__device__ int counter;
__global__ void talk(float *a) { a[0] = __ocml_sin_f32(a[0]); counter = (int)__ockl_printf_begin(0); }
)";
  std::string dir = temp_dir();
  std::string bc = save(dir, "talk.bc",
                        compile_with({HOTLINK_TEST_CLANG, "-x", "hip", "--cuda-device-only", "--offload-arch=gfx90a",
                                      "-nogpulib", "-nogpuinc", "-mcode-object-version=4", "-O2", "-emit-llvm", "-c"},
                                     source, ".bc"));
  LinkService svc;
  LinkResult res = svc.link(device_request("gfx90a", {Input::file(bc)}));
  ASSERT_TRUE(res.ok()) << res.error->to_string();
  std::vector<std::string> libs = clang_device_libraries("gfx90a", /*hip=*/true), names;
  ASSERT_FALSE(libs.empty());
  for (const std::string &lib : libs)
    names.push_back(lib.substr(lib.rfind('/') + 1));
  EXPECT_EQ(res.runtime, names);
  EXPECT_EQ(std::find(res.runtime.begin(), res.runtime.end(), "opencl.bc"), res.runtime.end());
  std::string path = save(dir, "talk.hsaco", res.artifact);
  auto info = exports::read_artifact(res.artifact.data(), res.artifact.size(), path);
  ASSERT_TRUE(info.ok());
  std::vector<std::string> exported;
  for (const std::string &e : info->exports)
    if (e.rfind("__hip_cuid_", 0) != 0)
      exported.push_back(e);
  std::sort(exported.begin(), exported.end());
  EXPECT_EQ(exported, (std::vector<std::string>{"_Z4talkPf", "_Z4talkPf.kd", "counter"}));
  EXPECT_EQ(comgr(path), "isa amdgcn-amd-amdhsa--gfx90a\nkernel _Z4talkPf\n");
  write_file(dir + "/exports.ver", Bytes(res.export_file.begin(), res.export_file.end()));
  std::vector<std::string> line = {bc, "-plugin-opt=-amdhsa-code-object-version=4", "--start-lib"};
  line.insert(line.end(), libs.begin(), libs.end());
  line.insert(line.end(), {"--end-lib", "--version-script=" + dir + "/exports.ver", "--undefined-version"});
  EXPECT_TRUE(res.artifact == reference(dir, "gfx90a", {}, line)) << "differs from ld.lld's code object";
}

// Device bitcode submitted at once, in-process as asked: a link planned
// while another is inside lld (whose -plugin-opt=mcpu= is then an LLVM
// option of the process) must not take it for the host's option and send
// the link to a worker process.
TEST(Amdgpu, BitcodeLinksSubmittedAtOnceStayInProcess) {
  Bytes bitcode = device_bitcode(kAdd, "gfx90a");
  LinkService svc;
  std::vector<std::future<LinkResult>> pending;
  for (int i = 0; i < 12; ++i) {
    LinkRequest req = device_request("gfx90a", {Input::memory("add.bc", bitcode)});
    req.execution = Execution::InProcess;
    pending.push_back(svc.submit(req));
  }
  for (auto &p : pending) {
    LinkResult r = p.get();
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(r.executed_by, "in-process");
  }
  EXPECT_EQ(svc.stats().workers_started, 0u);
}

} // namespace
