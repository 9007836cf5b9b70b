// NVIDIA cubins (nvptx64-nvidia-cuda) linked in-process by nvJitLink: the
// kernels and their resources equal what ptxas makes of the same PTX (as
// offload's CUDA plugin runs it), a function declared in one module and
// defined in another resolves (which ptxas alone cannot do), the cubin is
// verified as the CUDA driver would load it, errors name the file and
// line, a fat binary links the image for the architecture asked, and a
// second link is a cache hit. No GPU is needed; where
// nvJitLink (or ptxas) is not installed the tests say so and skip.
#include "hotlink/link_service.h"
#include "hotlink/verify_target.h"
#include "support.h"
#include "test/platforms/nvidia_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sys/stat.h>

using namespace hotlink;
using namespace hotlink::test;


namespace {

const char *kTriple = "nvptx64-nvidia-cuda";

// CUDA without the CUDA headers (clang -nocudainc): two kernels, one with
// __shared__ memory and a barrier.
const char *kKernels = R"(
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
extern "C" __device__ int __nvvm_read_ptx_sreg_tid_x();
extern "C" __device__ int __nvvm_read_ptx_sreg_ntid_x();
extern "C" __global__ void scale(int *a, int k) { a[__nvvm_read_ptx_sreg_tid_x()] *= k; }
extern "C" __global__ void reverse(int *a) {
  __shared__ int s[256];
  int t = __nvvm_read_ptx_sreg_tid_x();
  s[t] = a[t];
  __syncthreads();
  a[t] = s[__nvvm_read_ptx_sreg_ntid_x() - 1 - t];
})";
// A kernel calling a function another module defines.
const char *kUser = R"(
extern "C" __attribute__((device)) int helper(int x);
extern "C" __attribute__((global)) void use(int *a) { a[0] = helper(a[0]); })";
const char *kHelper = R"(extern "C" __attribute__((device)) int helper(int x) { return x * 3 + 1; })";

std::string missing() { return nvjitlink_missing(); }
std::string ptxas() { return cuda_tool("ptxas"); }

// PTX for `arch` from CUDA `source`, as clang's CUDA device compilation
// writes it (-fgpu-rdc: functions another module calls stay external).
Bytes ptx(const std::string &source, const std::string &arch) {
  std::string dir = temp_dir();
  write_file(dir + "/k.cu", Bytes(source.begin(), source.end()));
  test::Run r = run({HOTLINK_TEST_CLANG, "-x", "cuda", "--cuda-device-only", "-S", "--cuda-gpu-arch=" + arch, "-nocudainc",
               "-nocudalib", "-fgpu-rdc", "-O2", "-Wno-unknown-cuda-version", dir + "/k.cu", "-o", dir + "/k.ptx"});
  EXPECT_EQ(r.code, 0) << r.err;
  return read_file(dir + "/k.ptx");
}

LinkResult link_cubin(LinkService &service, const std::vector<std::pair<std::string, Bytes>> &inputs,
                      const std::string &arch) {
  LinkRequest req;
  req.target = kTriple;
  req.gpu.processor = arch;
  for (const auto &[name, bytes] : inputs)
    req.inputs.push_back(Input::memory(name, bytes));
  return service.link(req);
}

#define SKIP_WITHOUT_NVJITLINK()                                                                                    \
  if (std::string why = missing(); !why.empty())                                                                   \
  GTEST_SKIP() << why

} // namespace

TEST(Nvptx, KernelsAndTheirResourcesEqualPtxasForSm90AndSm80) {
  SKIP_WITHOUT_NVJITLINK();
  std::string tool = ptxas();
  if (tool.empty())
    GTEST_SKIP() << "ptxas is not installed (CUDA_HOME/bin, /usr/local/cuda/bin): nothing to compare with";
  LinkService service;
  for (const char *arch : {"sm_90", "sm_80"}) {
    SCOPED_TRACE(arch);
    Bytes source = ptx(kKernels, arch);
    LinkResult r = link_cubin(service, {{"kernels.ptx", source}}, arch);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(r.exports, (std::vector<std::string>{"scale", "reverse"}));
    // offload's CUDA plugin: ptxas -m64 -O3 --gpu-name ARCH --output-file OUT IN.
    std::string dir = temp_dir();
    write_file(dir + "/k.ptx", source);
    test::Run p = run({tool, "-m64", "-O3", "--gpu-name", arch, "--output-file", dir + "/k.cubin", dir + "/k.ptx"});
    ASSERT_EQ(p.code, 0) << p.err;
    std::vector<std::string> ours = resources(r.artifact), theirs = resources(read_file(dir + "/k.cubin"));
    ASSERT_EQ(ours.size(), 3u); // arch=, and the two kernels
    EXPECT_EQ(ours, theirs);
    // The barrier kernel's __shared__ array is in its shared memory.
    EXPECT_NE(ours[1].find("reverse:"), std::string::npos);
    EXPECT_EQ(ours[1].find("shared_bytes=0 "), std::string::npos) << ours[1];
  }
}

TEST(Nvptx, AFunctionDeclaredInOneModuleAndDefinedInAnotherResolves) {
  SKIP_WITHOUT_NVJITLINK();
  LinkService service;
  Bytes user = ptx(kUser, "sm_90"), helper = ptx(kHelper, "sm_90");
  LinkResult r = link_cubin(service, {{"user.ptx", user}, {"helper.ptx", helper}}, "sm_90");
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  VerifyOptions options;
  options.processor = "sm_90";
  options.expected_exports = {"use"};
  auto v = verify_for_target(r.artifact, "use.cubin", kTriple, options);
  EXPECT_TRUE(v.ok()) << v.error().to_string();
  // Alone, the user's module leaves helper undefined: named, with the input.
  LinkResult alone = link_cubin(service, {{"user.ptx", user}}, "sm_90");
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.error->code, ErrorCode::UndefinedSymbol) << alone.error->to_string();
  EXPECT_EQ(alone.error->symbol, "helper");
  EXPECT_EQ(alone.error->input, "user.ptx");
}

TEST(Nvptx, VerifyRefusesACubinForAnotherArchitectureNamingBoth) {
  SKIP_WITHOUT_NVJITLINK();
  LinkService service;
  LinkResult r = link_cubin(service, {{"kernels.ptx", ptx(kKernels, "sm_90")}}, "sm_90");
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  VerifyOptions options;
  options.processor = "sm_80";
  auto v = verify_for_target(r.artifact, "k.cubin", kTriple, options);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::ArchMismatch);
  EXPECT_NE(v.error().message.find("sm_90"), std::string::npos) << v.error().to_string();
  EXPECT_NE(v.error().message.find("sm_80"), std::string::npos) << v.error().to_string();
  options.processor = "sm_90";
  options.expected_exports = {"reverse", "no_such_kernel"};
  auto missing_kernel = verify_for_target(r.artifact, "k.cubin", kTriple, options);
  ASSERT_FALSE(missing_kernel.ok());
  EXPECT_EQ(missing_kernel.error().symbol, "no_such_kernel");
  // PTX for sm_90 does not compile for sm_80: refused before nvJitLink runs.
  LinkResult older = link_cubin(service, {{"kernels.ptx", ptx(kKernels, "sm_90")}}, "sm_80");
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error->code, ErrorCode::ArchMismatch) << older.error->to_string();
}

TEST(Nvptx, APtxSyntaxErrorNamesTheFileAndLineAndWritesNothing) {
  SKIP_WITHOUT_NVJITLINK();
  Bytes source = ptx(kKernels, "sm_90");
  std::string text(source.begin(), source.end());
  std::size_t at = text.find("ld.shared");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 9, "ld.sharedd");
  std::size_t line = 1 + std::count(text.begin(), text.begin() + at, '\n');
  std::string dir = temp_dir();
  LinkService service;
  LinkRequest req;
  req.target = kTriple;
  req.gpu.processor = "sm_90";
  req.inputs.push_back(Input::memory("broken.ptx", text.data(), text.size()));
  req.output_path = dir + "/k.cubin";
  LinkResult r = service.link(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->input, "broken.ptx") << r.error->to_string();
  EXPECT_NE(r.error->message.find("line " + std::to_string(line)), std::string::npos) << r.error->to_string();
  EXPECT_NE(r.error->message.find("nvJitLink"), std::string::npos) << r.error->to_string();
  EXPECT_EQ(count_entries(dir), 0u);
}

TEST(Nvptx, ASecondLinkIsACacheHitWithTheSameBytes) {
  SKIP_WITHOUT_NVJITLINK();
  ServiceConfig config;
  auto cache = cache::Cache::open({temp_dir() + "/cache"});
  ASSERT_TRUE(cache.ok()) << cache.error().to_string();
  config.cache = std::move(*cache);
  LinkService service(config);
  Bytes source = ptx(kKernels, "sm_90");
  LinkResult first = link_cubin(service, {{"kernels.ptx", source}}, "sm_90");
  LinkResult second = link_cubin(service, {{"kernels.ptx", source}}, "sm_90");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first.cache, CacheUse::Miss);
  EXPECT_EQ(second.cache, CacheUse::Hit);
  EXPECT_EQ(first.artifact, second.artifact);
  // Another architecture is another entry.
  LinkResult other = link_cubin(service, {{"kernels.ptx", ptx(kKernels, "sm_80")}}, "sm_80");
  ASSERT_TRUE(other.ok()) << other.error->to_string();
  EXPECT_EQ(other.cache, CacheUse::Miss);
}

// A fat binary as nvcc and fatbinary make them: sm_90 PTX (zstd-compressed,
// fatbinary's default) and a relocatable sm_80 cubin. nvJitLink picks the
// image for the link's architecture; the kernels and their resources are
// those of linking that image alone, and an architecture it holds no image
// for is refused before nvJitLink runs, naming what it holds.
TEST(Nvptx, AFatBinaryLinksTheImageForTheArchitectureAsked) {
  SKIP_WITHOUT_NVJITLINK();
  std::string fatbinary = cuda_tool("fatbinary"), tool = ptxas();
  if (fatbinary.empty() || tool.empty())
    GTEST_SKIP() << "fatbinary or ptxas is not installed (CUDA_HOME/bin, /usr/local/cuda/bin)";
  std::string dir = temp_dir();
  Bytes ptx90 = ptx(kKernels, "sm_90"), ptx80 = ptx(kKernels, "sm_80");
  write_file(dir + "/k90.ptx", ptx90);
  write_file(dir + "/k80.ptx", ptx80);
  test::Run c = run({tool, "-m64", "-O3", "--gpu-name", "sm_80", "-c", "--output-file", dir + "/k80.cubin",
                     dir + "/k80.ptx"});
  ASSERT_EQ(c.code, 0) << c.err;
  test::Run f = run({fatbinary, "-64", "--create=" + dir + "/k.fatbin", "--image3=kind=ptx,sm=90,file=" + dir + "/k90.ptx",
                     "--image3=kind=elf,sm=80,file=" + dir + "/k80.cubin"});
  ASSERT_EQ(f.code, 0) << f.err;
  Bytes fat = read_file(dir + "/k.fatbin");
  // `hotlink exports` lists each image's kernels, as it does PTX's.
  for (const std::string &input : {std::string("k.fatbin"), std::string("k90.ptx")}) {
    test::Run e = run({bin_dir() + "/hotlink", "exports", dir + "/" + input});
    ASSERT_EQ(e.code, 0) << e.err;
    EXPECT_NE(e.out.find("reverse  ptx_target=sm_90\n"), std::string::npos) << e.out;
    EXPECT_EQ(e.out.find("sm_80") != std::string::npos, input == "k.fatbin") << e.out;
  }
  LinkService service;
  for (auto [arch, alone] : {std::pair<std::string, std::pair<std::string, Bytes>>{"sm_90", {"k90.ptx", ptx90}},
                             {"sm_80", {"k80.cubin", read_file(dir + "/k80.cubin")}}}) {
    SCOPED_TRACE(arch);
    LinkResult r = link_cubin(service, {{"k.fatbin", fat}}, arch);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    std::vector<std::string> kernels = r.exports;
    std::sort(kernels.begin(), kernels.end());
    EXPECT_EQ(kernels, (std::vector<std::string>{"reverse", "scale"}));
    // The image alone (for sm_80, ptxas -c's relocatable cubin: nvJitLink's
    // CUBIN input; as its OBJECT it linked an empty cubin).
    LinkResult direct = link_cubin(service, {alone}, arch);
    ASSERT_TRUE(direct.ok()) << direct.error->to_string();
    std::vector<std::string> lines = resources(direct.artifact);
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string &line) { return line.find(": arch=") != std::string::npos; }),
              2); // two kernels
    EXPECT_EQ(resources(r.artifact), resources(direct.artifact));
    VerifyOptions options;
    options.processor = arch;
    options.expected_exports = {"scale", "reverse"};
    auto v = verify_for_target(r.artifact, "k.cubin", kTriple, options);
    EXPECT_TRUE(v.ok()) << v.error().to_string();
  }
  LinkResult none = link_cubin(service, {{"k.fatbin", fat}}, "sm_75");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error->code, ErrorCode::ArchMismatch) << none.error->to_string();
  EXPECT_EQ(none.error->input, "k.fatbin");
  EXPECT_NE(none.error->message.find("sm_90 PTX, sm_80 cubin"), std::string::npos) << none.error->to_string();
  // Cut short: named, never handed to nvJitLink.
  Bytes cut(fat.begin(), fat.begin() + fat.size() / 2);
  LinkResult broken = link_cubin(service, {{"cut.fatbin", cut}}, "sm_90");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error->code, ErrorCode::InvalidInput) << broken.error->to_string();
  EXPECT_EQ(broken.error->input, "cut.fatbin");
}

// nvlink's cubin of a kernel that launches a kernel (dynamic parallelism,
// linked with the toolkit's libcudadevrt.a) leaves the device runtime's
// __cuda_syscall_* names for the driver to resolve at load: verify accepts
// it, and hotlink links the same from -l cudadevrt. Any other unresolved name is still refused: the same cubin with one
// such name renamed in its string table.
TEST(Nvptx, VerifyLeavesTheDriversSyscallsToTheDriverAndNothingElse) {
  std::string nvcc = cuda_tool("nvcc"), nvlink = cuda_tool("nvlink");
  std::string devrt = nvcc.empty() ? "" : nvcc.substr(0, nvcc.rfind("/bin/")) + "/lib64";
  if (nvcc.empty() || nvlink.empty() || !exists(devrt + "/libcudadevrt.a"))
    GTEST_SKIP() << "nvcc, nvlink or libcudadevrt.a is not installed (CUDA_HOME, /usr/local/cuda)";
  std::string dir = temp_dir();
  const std::string source = "extern \"C\" __global__ void child(int *a) { a[threadIdx.x] += 1; }\n"
                             "extern \"C\" __global__ void parent(int *a) { child<<<1, 32>>>(a); }\n";
  write_file(dir + "/dp.cu", Bytes(source.begin(), source.end()));
  RunOptions o;
  o.timeout_seconds = 300;
  test::Run c = run({nvcc, "-rdc=true", "-c", "-arch=sm_90", dir + "/dp.cu", "-o", dir + "/dp.o"}, o);
  ASSERT_EQ(c.code, 0) << c.err;
  test::Run n = run({nvlink, "-arch=sm_90", dir + "/dp.o", "-L" + devrt, "-lcudadevrt", "-o", dir + "/dp.cubin"}, o);
  ASSERT_EQ(n.code, 0) << n.err;
  Bytes cubin = read_file(dir + "/dp.cubin");
  VerifyOptions options;
  options.processor = "sm_90";
  options.expected_exports = {"parent", "child"};
  auto v = verify_for_target(cubin, "dp.cubin", kTriple, options);
  EXPECT_TRUE(v.ok()) << v.error().to_string();
  // hotlink links the same with libcudadevrt.a found by -l and -L (where
  // nvJitLink is installed), into nvlink's kernels and resources.
  if (missing().empty()) {
    LinkRequest req;
    req.target = kTriple;
    req.gpu.processor = "sm_90";
    req.inputs.push_back(Input::file(dir + "/dp.o"));
    req.libraries = {"cudadevrt"};
    req.library_paths = {devrt};
    LinkResult r = LinkService().link(req);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(resources(r.artifact), resources(cubin));
    EXPECT_TRUE(verify_for_target(r.artifact, "k.cubin", kTriple, options).ok());
    req.libraries.clear(); // without it, the device runtime's entry points are unresolved
    LinkResult without = LinkService().link(req);
    ASSERT_FALSE(without.ok());
    EXPECT_EQ(without.error->code, ErrorCode::UndefinedSymbol) << without.error->to_string();
  }
  const std::string syscall = "__cuda_syscall_";
  auto at = std::search(cubin.begin(), cubin.end(), syscall.begin(), syscall.end());
  ASSERT_NE(at, cubin.end()) << "nvlink's cubin names no __cuda_syscall_: nothing to check";
  at[2] = 'X'; // __Xuda_syscall_...: a name the driver does not resolve
  auto renamed = verify_for_target(cubin, "dp.cubin", kTriple, options);
  ASSERT_FALSE(renamed.ok());
  EXPECT_EQ(renamed.error().code, ErrorCode::UnresolvedSymbol) << renamed.error().to_string();
  EXPECT_EQ(renamed.error().symbol.rfind("__Xuda_syscall_", 0), 0u) << renamed.error().to_string();
}

TEST(Nvptx, WithoutNvJitLinkTheErrorSaysWhereItLookedAndWhatToInstall) {
  std::string dir = temp_dir();
  std::string text = ".version 8.8\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n  ret;\n}\n";
  write_file(dir + "/k.ptx", Bytes(text.begin(), text.end()));
  RunOptions o;
  o.env = {"HOTLINK_NVJITLINK=" + dir + "/none/libnvJitLink.so.13"};
  o.timeout_seconds = 60;
  test::Run r = run({bin_dir() + "/hotlink", "link", "--target", kTriple, "--mcpu", "sm_90", "-o", dir + "/k.cubin",
               dir + "/k.ptx"},
              o);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("nvJitLink is not installed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dir + "/none/libnvJitLink.so.13"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nvidia-nvjitlink"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(dir + "/k.cubin"));
}
