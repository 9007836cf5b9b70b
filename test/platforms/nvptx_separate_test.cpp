// CUDA separate compilation as a CMake project builds it
// (CUDA_SEPARABLE_COMPILATION, CUDA_ARCHITECTURES "80;90"), on the
// toolkit's own headers: CUB's BlockReduce and cooperative groups in one
// translation unit, the __device__ function they call (and the
// __constant__ data it reads) in another, joined only by the device link.
// As host objects (nvcc -rdc=true -c), with the second in an archive (by
// path and by -l), with libcudadevrt.a for a kernel that launches
// kernels, and as LTO-IR (code=lto_NN objects, and -ltoir files): for
// sm_80 and sm_90, each cubin's kernels, registers, shared memory and
// constant banks are nvlink's for the same inputs (-dlto's against nvlink
// -dlto's). A missing definition is refused naming the symbol and the
// input. clang -fgpu-rdc's offload objects link their image for the
// architecture. nvcc's objects are compiled once per build (support.h's
// cache).
// No GPU is needed; without nvJitLink, nvcc or nvlink the tests skip,
// saying why.
#include "hotlink/link_service.h"
#include "hotlink/verify_target.h"
#include "support.h"
#include "test/platforms/nvidia_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sys/stat.h>

using namespace hotlink;
using namespace hotlink::test;


namespace {

const char *kTriple = "nvptx64-nvidia-cuda";

const char *kReduce = R"(#include <cub/block/block_reduce.cuh>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ int scale_of(int x); // scale.cu
extern "C" __global__ void block_sum(const int *in, int *out) {
  using Reduce = cub::BlockReduce<int, 128>;
  __shared__ typename Reduce::TempStorage temp;
  int sum = Reduce(temp).Sum(scale_of(in[blockIdx.x * 128 + threadIdx.x]));
  if (threadIdx.x == 0)
    out[blockIdx.x] = sum;
}
extern "C" __global__ void tile_max(const int *in, int *out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int v = scale_of(in[block.thread_rank()]);
  for (int o = tile.size() / 2; o > 0; o /= 2)
    v = max(v, tile.shfl_down(v, o));
  if (tile.thread_rank() == 0)
    out[block.thread_rank() / 32] = v;
}
)";
const char *kScale = R"(__constant__ int bias[4] = {1, 2, 3, 4};
__device__ int scale_of(int x) { return 3 * x + bias[x & 3]; }
)";
// A kernel that launches a kernel: the device runtime (libcudadevrt.a).
const char *kLaunch = R"(#include <cooperative_groups.h>
extern "C" __global__ void child(int *a) { a[cooperative_groups::this_thread_block().thread_rank()] += 1; }
extern "C" __global__ void parent(int *a) {
  if (threadIdx.x == 0)
    child<<<1, 32>>>(a);
}
)";

struct Cuda {
  std::string root, nvcc, nvlink;
  std::string why; // not empty: why the tests cannot run here
};

const Cuda &cuda() {
  static const Cuda c = [] {
    Cuda c;
    if (c.why = nvjitlink_missing(); !c.why.empty())
      return c;
    c.root = cuda_root_with("nvlink");
    if (!c.root.empty() && exists(c.root + "/bin/nvcc")) {
      c.nvcc = c.root + "/bin/nvcc";
      c.nvlink = c.root + "/bin/nvlink";
      return c;
    }
    c.why = "nvcc or nvlink is not installed (CUDA_HOME/bin, /usr/local/cuda/bin): nothing to compare with";
    return c;
  }();
  return c;
}

std::string devrt_dir() { return cuda().root + "/lib64"; }

// nvlink -dlto's -nvvmpath: a folder with lib64/libnvvm.so and libdevice.
// Some toolkits keep libnvvm.so in lib/ instead of nvvm/lib64: then a
// scratch folder of links stands in. "" when there is no libnvvm.so.
std::string nvvm_path() {
  std::string nvvm = cuda().root + "/nvvm";
  if (exists(nvvm + "/lib64/libnvvm.so"))
    return nvvm;
  for (std::string lib : {cuda().root + "/lib64/libnvvm.so", cuda().root + "/lib/libnvvm.so"}) {
    if (!exists(lib))
      continue;
    std::string dir = temp_dir() + "/nvvm";
    ::mkdir(dir.c_str(), 0700);
    ::mkdir((dir + "/lib64").c_str(), 0700);
    if (::symlink(lib.c_str(), (dir + "/lib64/libnvvm.so").c_str()) != 0 ||
        ::symlink((nvvm + "/libdevice").c_str(), (dir + "/libdevice").c_str()) != 0)
      return {};
    return dir;
  }
  return {};
}

#define SKIP_WITHOUT_CUDA()                                                                                         \
  if (!cuda().why.empty())                                                                                         \
  GTEST_SKIP() << cuda().why

// Both architectures in one object, as CUDA_ARCHITECTURES "80;90" builds
// it: a cubin (sm) or LTO-IR (lto) and PTX for each. Cached per build.
Bytes nvcc(const std::string &source, const std::string &code, const std::vector<std::string> &more = {}) {
  std::vector<std::string> args = {cuda().nvcc, "-x", "cu", "-rdc=true", "-c"};
  for (const char *arch : {"80", "90"})
    args.push_back("-gencode=arch=compute_" + std::string(arch) + ",code=[" + code + "_" + arch + ",compute_" + arch +
                   "]");
  args.insert(args.end(), more.begin(), more.end());
  return compile_with(args, source, ".o");
}

// One architecture's LTO-IR file (nvcc -dlto -ltoir).
Bytes ltoir(const std::string &source, const std::string &arch) {
  return compile_with({cuda().nvcc, "-x", "cu", "-rdc=true", "-dlto", "-ltoir", "-arch=" + arch}, source, ".ltoir");
}

// Writes each input into a fresh folder; their paths.
std::vector<std::string> files(const std::vector<std::pair<std::string, Bytes>> &inputs, std::string &dir) {
  dir = temp_dir();
  std::vector<std::string> paths;
  for (const auto &[name, bytes] : inputs) {
    write_file(dir + "/" + name, bytes);
    paths.push_back(dir + "/" + name);
  }
  return paths;
}

// nvlink's cubin for the inputs (and `more` of its options).
Bytes nvlink(const std::vector<std::pair<std::string, Bytes>> &inputs, const std::string &arch,
             const std::vector<std::string> &more = {}) {
  std::string dir;
  std::vector<std::string> argv = {cuda().nvlink, "-arch=" + arch};
  for (const std::string &p : files(inputs, dir))
    argv.push_back(p);
  argv.insert(argv.end(), more.begin(), more.end());
  argv.insert(argv.end(), {"-o", dir + "/nvlink.cubin"});
  RunOptions o;
  o.timeout_seconds = 300;
  test::Run r = run(argv, o);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? read_file(dir + "/nvlink.cubin") : Bytes();
}

LinkRequest request(const std::vector<std::pair<std::string, Bytes>> &inputs, const std::string &arch) {
  LinkRequest req;
  req.target = kTriple;
  req.gpu.processor = arch;
  for (const auto &[name, bytes] : inputs)
    req.inputs.push_back(Input::memory(name, bytes));
  return req;
}

// The link matches nvlink's cubin, names the kernels as its exports, and
// verifies as the driver would load it.
void expect_as_nvlink(const LinkResult &r, const Bytes &reference, const std::string &arch,
                      const std::vector<std::string> &kernels) {
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  ASSERT_FALSE(reference.empty());
  EXPECT_EQ(resources(r.artifact), resources(reference));
  std::vector<std::string> exports = r.exports, want = kernels;
  std::sort(exports.begin(), exports.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(exports, want);
  VerifyOptions options;
  options.processor = arch;
  options.expected_exports = kernels;
  // What a cubin exports is its kernels (cuModuleGetFunction finds those),
  // never its global device functions (CUB's __cuda_sm70_shflsync_down_p,
  // scale_of): in hotlink's cubin and in nvlink's.
  for (const auto &[bytes, name] : {std::pair{&r.artifact, "k.cubin"}, std::pair{&reference, "nvlink.cubin"}}) {
    auto v = verify_for_target(*bytes, name, kTriple, options);
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    std::vector<std::string> listed = v->info.exports;
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, want) << name;
  }
}

class Separate : public ::testing::TestWithParam<std::string> {};

TEST_P(Separate, HostObjectsLinkAsNvlinkLinksThem) {
  SKIP_WITHOUT_CUDA();
  const std::string arch = GetParam();
  std::vector<std::pair<std::string, Bytes>> in = {{"reduce.o", nvcc(kReduce, "sm")}, {"scale.o", nvcc(kScale, "sm")}};
  LinkService service;
  expect_as_nvlink(service.link(request(in, arch)), nvlink(in, arch), arch, {"block_sum", "tile_max"});
}

// scale.o in libscale.a: by path, and by -l scale in a -L folder.
TEST_P(Separate, AnArchiveByPathOrByLLinksAsNvlinkLinksIt) {
  SKIP_WITHOUT_CUDA();
  const std::string arch = GetParam();
  Bytes reduce = nvcc(kReduce, "sm"), archive = read_file(make_archive({{"scale.o", nvcc(kScale, "sm")}}));
  Bytes reference = nvlink({{"reduce.o", reduce}, {"libscale.a", archive}}, arch);
  LinkService service;
  expect_as_nvlink(service.link(request({{"reduce.o", reduce}, {"libscale.a", archive}}, arch)), reference, arch,
                   {"block_sum", "tile_max"});
  std::string dir;
  files({{"libscale.a", archive}}, dir);
  LinkRequest by_l = request({{"reduce.o", reduce}}, arch);
  by_l.libraries = {"scale"};
  by_l.library_paths = {dir};
  expect_as_nvlink(service.link(by_l), reference, arch, {"block_sum", "tile_max"});
}

TEST_P(Separate, AKernelLaunchingKernelsLinksWithLibcudadevrtAsNvlinkLinksIt) {
  SKIP_WITHOUT_CUDA();
  const std::string arch = GetParam();
  if (!exists(devrt_dir() + "/libcudadevrt.a"))
    GTEST_SKIP() << "no libcudadevrt.a in " << devrt_dir();
  Bytes launch = nvcc(kLaunch, "sm");
  LinkRequest req = request({{"launch.o", launch}}, arch);
  req.libraries = {"cudadevrt"};
  req.library_paths = {devrt_dir()};
  LinkService service;
  expect_as_nvlink(service.link(req), nvlink({{"launch.o", launch}}, arch, {"-L" + devrt_dir(), "-lcudadevrt"}), arch,
                   {"parent", "child"});
}

// LTO-IR is compiled at the link as one program (nvJitLink -lto, as
// nvlink -dlto): fewer registers than the objects' cubins, the same as
// nvlink's. Its kernels are read from the cubin, and a second link is a
// cache hit that names them too.
TEST_P(Separate, LtoIrLinksAsNvlinkDltoLinksIt) {
  SKIP_WITHOUT_CUDA();
  const std::string arch = GetParam();
  std::string nvvm = nvvm_path();
  if (nvvm.empty())
    GTEST_SKIP() << "no libnvvm.so in " << cuda().root << ": nvlink -dlto cannot run";
  std::vector<std::string> lto_options = {"-dlto", "-nvvmpath=" + nvvm, "-L" + devrt_dir(), "-lcudadevrt"};
  std::vector<std::pair<std::string, Bytes>> objects = {{"reduce.o", nvcc(kReduce, "lto")},
                                                        {"scale.o", nvcc(kScale, "lto")}};
  Bytes reference = nvlink(objects, arch, lto_options);
  ServiceConfig config;
  auto cache = cache::Cache::open({temp_dir() + "/cache"});
  ASSERT_TRUE(cache.ok()) << cache.error().to_string();
  config.cache = std::move(*cache);
  LinkService service(config);
  LinkRequest req = request(objects, arch);
  expect_as_nvlink(service.link(req), reference, arch, {"block_sum", "tile_max"});
  LinkResult hit = service.link(req);
  EXPECT_EQ(hit.cache, CacheUse::Hit);
  expect_as_nvlink(hit, reference, arch, {"block_sum", "tile_max"});
  EXPECT_NE(resources(reference), resources(nvlink({{"reduce.o", nvcc(kReduce, "sm")}, {"scale.o", nvcc(kScale, "sm")}},
                                                   arch)))
      << "LTO changed nothing: the test would not tell LTO from none";
  std::vector<std::pair<std::string, Bytes>> files = {{"reduce.ltoir", ltoir(kReduce, arch)},
                                                      {"scale.ltoir", ltoir(kScale, arch)}};
  expect_as_nvlink(service.link(request(files, arch)), nvlink(files, arch, lto_options), arch,
                   {"block_sum", "tile_max"});
}

// Each form without scale.cu's definition: refused naming the symbol and
// the input that calls it, nothing written.
TEST_P(Separate, AMissingDefinitionNamesTheSymbolAndTheInput) {
  SKIP_WITHOUT_CUDA();
  const std::string arch = GetParam();
  LinkService service;
  for (const auto &[name, bytes] : std::vector<std::pair<std::string, Bytes>>{
           {"reduce.o", nvcc(kReduce, "sm")}, {"reduce_lto.o", nvcc(kReduce, "lto")}, {"reduce.ltoir", ltoir(kReduce, arch)}}) {
    SCOPED_TRACE(name);
    LinkResult r = service.link(request({{name, bytes}}, arch));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error->code, ErrorCode::UndefinedSymbol) << r.error->to_string();
    EXPECT_EQ(r.error->symbol, "_Z8scale_ofi") << r.error->to_string();
    EXPECT_EQ(r.error->input, name) << r.error->to_string();
    EXPECT_TRUE(r.artifact.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Cub, Separate, ::testing::Values("sm_80", "sm_90"));

// clang -fgpu-rdc's host objects (the new offload driver: the cubins in
// .llvm.offloading, which nvJitLink does not read): the image for the
// link's architecture is linked, as nvlink links the relocatable cubins
// clang --cuda-device-only makes of the same sources; a missing
// definition names the symbol and the object.
TEST(SeparateClang, OffloadObjectsLinkTheirImageForTheArchitecture) {
  SKIP_WITHOUT_CUDA();
  const std::string user = "extern \"C\" __device__ int helper(int x);\n"
                           "extern \"C\" __global__ void use(int *a) { a[threadIdx.x] = helper(a[threadIdx.x]); }\n";
  const std::string helper = "extern \"C\" __device__ int helper(int x) { return x * 3 + 1; }\n";
  std::vector<std::string> clang = {HOTLINK_TEST_CLANG, "-x", "cuda", "-fgpu-rdc", "--cuda-path=" + cuda().root, "-O2",
                                    "-Wno-unknown-cuda-version"};
  auto offload = [&](const std::string &source) {
    std::vector<std::string> args = clang;
    args.insert(args.end(), {"-c", "--cuda-gpu-arch=sm_80", "--cuda-gpu-arch=sm_90"});
    return compile_with(args, source, ".o");
  };
  std::vector<std::pair<std::string, Bytes>> objects = {{"user.o", offload(user)}, {"helper.o", offload(helper)}};
  LinkService service;
  for (std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    std::vector<std::pair<std::string, Bytes>> cubins;
    for (const auto &[name, source] : {std::pair{"user.cubin", user}, std::pair{"helper.cubin", helper}}) {
      std::vector<std::string> args = clang;
      args.insert(args.end(), {"--cuda-device-only", "-c", "--cuda-gpu-arch=" + arch});
      cubins.push_back({name, compile_with(args, source, ".cubin")});
    }
    expect_as_nvlink(service.link(request(objects, arch)), nvlink(cubins, arch), arch, {"use"});
  }
  LinkResult alone = service.link(request({objects[0]}, "sm_90"));
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.error->code, ErrorCode::UndefinedSymbol) << alone.error->to_string();
  EXPECT_EQ(alone.error->symbol, "helper");
  EXPECT_EQ(alone.error->input, "user.o");
  LinkResult older = service.link(request(objects, "sm_75"));
  ASSERT_FALSE(older.ok());
  EXPECT_NE(older.error->message.find("no device code for sm_75 (it has sm_80 cubin, sm_90 cubin)"), std::string::npos)
      << older.error->to_string();
  // With -foffload-lto they carry LLVM bitcode, which nvJitLink does not link.
  std::vector<std::string> lto_args = clang;
  lto_args.insert(lto_args.end(), {"-foffload-lto", "-c", "--cuda-gpu-arch=sm_90"});
  LinkResult bitcode = service.link(request({{"user_lto.o", compile_with(lto_args, user, ".o")}}, "sm_90"));
  ASSERT_FALSE(bitcode.ok());
  EXPECT_EQ(bitcode.error->input, "user_lto.o");
  EXPECT_NE(bitcode.error->message.find("carries clang's LLVM bitcode for sm_90 (-foffload-lto)"), std::string::npos)
      << bitcode.error->to_string();
  std::string dir;
  std::vector<std::string> paths = files({objects[0]}, dir);
  test::Run listed = run({bin_dir() + "/hotlink", "exports", "--target", kTriple, paths[0]});
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("use  arch=sm_80"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("use  arch=sm_90"), std::string::npos) << listed.out;
}

// What is not device code for the link is refused, naming what it is.
TEST(SeparateRefusals, InputsWithoutDeviceCodeForTheArchitectureSayWhatTheyHold) {
  SKIP_WITHOUT_CUDA();
  LinkService service;
  LinkResult older = service.link(request({{"reduce.o", nvcc(kReduce, "sm")}}, "sm_75"));
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error->code, ErrorCode::ArchMismatch) << older.error->to_string();
  EXPECT_EQ(older.error->input, "reduce.o");
  EXPECT_NE(older.error->message.find("a host object with no device code for sm_75 (it has sm_80 cubin, sm_80 PTX, "
                                      "sm_90 cubin, sm_90 PTX)"),
            std::string::npos)
      << older.error->to_string();
  LinkResult lto = service.link(request({{"scale.o", nvcc(kScale, "lto")}}, "sm_75"));
  ASSERT_FALSE(lto.ok());
  EXPECT_NE(lto.error->message.find("(it has lto_80 LTO-IR, sm_80 PTX, lto_90 LTO-IR, sm_90 PTX)"), std::string::npos)
      << lto.error->to_string();
  Bytes host_object = compile_c("x86_64-linux-gnu", "int f(void) { return 1; }\n");
  LinkResult host = service.link(request({{"host.o", host_object}}, "sm_90"));
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.error->code, ErrorCode::ArchMismatch);
  EXPECT_NE(host.error->message.find("a host object for x86_64 that carries no device code"), std::string::npos)
      << host.error->to_string();
  LinkResult host_archive =
      service.link(request({{"libhost.a", read_file(make_archive({{"host.o", host_object}}))}}, "sm_90"));
  ASSERT_FALSE(host_archive.ok());
  EXPECT_EQ(host_archive.error->input, "libhost.a");
  EXPECT_NE(host_archive.error->message.find("no member with device code"), std::string::npos)
      << host_archive.error->to_string();
}

// verify of a host object checks the cubin the driver would load from it
// for --mcpu (nvcc -c without -rdc embeds linked cubins): the CUDA
// driver's rule picks it (sm_80's on an sm_86); an architecture it holds
// no cubin for, no --mcpu, and an -rdc object's relocatable cubin are
// refused.
TEST(SeparateVerify, AHostObjectsCubinForTheArchitectureIsVerified) {
  SKIP_WITHOUT_CUDA();
  std::vector<std::string> args = {cuda().nvcc, "-x", "cu", "-c", "-gencode=arch=compute_80,code=[sm_80,compute_80]",
                                   "-gencode=arch=compute_90,code=[sm_90,compute_90]"};
  Bytes whole = compile_with(args, "extern \"C\" __global__ void k(int *a) { a[threadIdx.x] *= 2; }\n",
                             ".o");
  VerifyOptions options;
  options.expected_exports = {"k"};
  for (std::string arch : {"sm_80", "sm_86", "sm_90"}) {
    options.processor = arch;
    auto v = verify_for_target(whole, "app.o", kTriple, options);
    EXPECT_TRUE(v.ok()) << arch << ": " << v.error().to_string();
  }
  options.processor = "sm_75";
  auto older = verify_for_target(whole, "app.o", kTriple, options);
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error().code, ErrorCode::ArchMismatch);
  EXPECT_NE(older.error().message.find("holds no cubin for sm_75 (it has sm_80 cubin, sm_80 PTX, sm_90 cubin, sm_90 PTX)"),
            std::string::npos)
      << older.error().to_string();
  options.processor.clear();
  auto unnamed = verify_for_target(whole, "app.o", kTriple, options);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.error().symbol, "--mcpu") << unnamed.error().to_string();
  options.processor = "sm_90";
  options.expected_exports = {"block_sum"};
  auto relocatable = verify_for_target(nvcc(kReduce, "sm"), "reduce.o", kTriple, options);
  ASSERT_FALSE(relocatable.ok());
  EXPECT_EQ(relocatable.error().code, ErrorCode::NotASharedObject) << relocatable.error().to_string();
}

// hotlink exports --target nvptx64-nvidia-cuda reads the device code of a
// host object and of an archive's members; LTO-IR's kernels are sealed
// until a link, which it says.
TEST(SeparateCli, ExportsReadsTheDeviceCodeOfHostObjectsAndArchives) {
  SKIP_WITHOUT_CUDA();
  std::string dir;
  std::vector<std::string> paths = files({{"reduce.o", nvcc(kReduce, "sm")},
                                          {"libscale.a", read_file(make_archive({{"reduce.o", nvcc(kReduce, "sm")}}))},
                                          {"reduce_lto.o", nvcc(kReduce, "lto")}},
                                         dir);
  std::string hotlink = bin_dir() + "/hotlink";
  test::Run object = run({hotlink, "exports", "--target", kTriple, paths[0]});
  ASSERT_EQ(object.code, 0) << object.err;
  EXPECT_NE(object.out.find("block_sum  arch=sm_90  registers="), std::string::npos) << object.out;
  EXPECT_NE(object.out.find("tile_max  arch=sm_80  registers="), std::string::npos) << object.out;
  EXPECT_NE(object.out.find("block_sum  ptx_target=sm_90"), std::string::npos) << object.out;
  test::Run archive = run({hotlink, "exports", "--target", kTriple, paths[1]});
  ASSERT_EQ(archive.code, 0) << archive.err;
  EXPECT_NE(archive.out.find("member=reduce.o"), std::string::npos) << archive.out;
  test::Run lto = run({hotlink, "exports", "--target", kTriple, paths[2]});
  ASSERT_EQ(lto.code, 0) << lto.err;
  EXPECT_NE(lto.err.find("holds LTO-IR (lto_80)"), std::string::npos) << lto.err;
  EXPECT_EQ(lto.out.find("block_sum  arch="), std::string::npos) << lto.out;
  write_file(dir + "/host.o", compile_c("x86_64-linux-gnu", "int f(void) { return 1; }\n"));
  test::Run host = run({hotlink, "exports", "--target", kTriple, dir + "/host.o"});
  EXPECT_NE(host.code, 0);
  EXPECT_NE(host.err.find("is a host object that carries no device code"), std::string::npos) << host.err;
}

} // namespace
