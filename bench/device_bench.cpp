// Many GPU kernels at start-up: a JIT (an offload runtime, Triton, Taichi)
// links a batch of device images when a program starts. 64 distinct
// kernels, as device bitcode (so each link compiles its kernel through
// LTO), are submitted at once for gfx90a:
// - hotlink, serialized: every link in-process, one after another (as
//   behind comgr's process-wide mutex);
// - hotlink's pool: the in-process slot plus the worker processes (one per
//   core), the default execution;
// - the offload plugin's way: for each, the bitcode written to a file,
//   `ld.lld -flavor gnu --no-undefined -shared -plugin-opt=mcpu=gfx90a`
//   spawned, the image read back; one after another.
// The same for NVIDIA, where nvJitLink is installed: 64 distinct kernels
// as PTX for sm_90, linked by hotlink (serialized in-process; the pool),
// against the offload CUDA plugin's way: for each, the PTX written to a
// file, `ptxas -m64 -O3 --gpu-name sm_90` spawned, the cubin read back.
// And a CUDA build with separate compilation, where nvcc and nvlink are
// installed: 16 device links, each of two host objects (nvcc -rdc=true -c
// for sm_90, a kernel calling a __device__ function of the other), by
// hotlink (serialized; the pool) against nvlink processes one by one, the
// objects written to files and the cubin read back.
// Prints Google Benchmark's table, then the medians and ratios of this run.
#include "bench/bench_support.h"
#include "hotlink/link_service.h"
#include "linker/platforms/nvptx/nvjitlink.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kKernels = 64, kRdcLinks = 16;
std::vector<std::vector<std::uint8_t>> g_bitcode, g_ptx;
std::vector<std::pair<std::vector<std::uint8_t>, std::vector<std::uint8_t>>> g_rdc; // user.o, helper.o
std::string g_scratch, g_ptxas, g_nvlink;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Kernel i: a small stencil with its own constants, so that no two
// bitcode files (or cache keys) are alike.
std::string kernel_source(int i) {
  std::string k = std::to_string(i);
  return "static float f(float x) { return x * " + k + ".5f + 1.0f / (x + " + k + ".0f); }\n"
         "__attribute__((device_kernel)) void stencil_" + k +
         "(const float *in, float *out, int n) {\n"
         "  int i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();\n"
         "  if (i <= 0 || i >= n - 1) return;\n"
         "  float acc = 0;\n"
         "  for (int j = -4; j <= 4; ++j) acc += f(in[(i + j + n) % n]) * (j + " + k + ");\n"
         "  out[i] = acc;\n}\n";
}

// The same kernel in CUDA (clang -nocudainc), for PTX.
std::string cuda_source(int i) {
  std::string k = std::to_string(i);
  return "#define D __attribute__((device))\n"
         "extern \"C\" D int __nvvm_read_ptx_sreg_tid_x();\n"
         "extern \"C\" D int __nvvm_read_ptx_sreg_ctaid_x();\n"
         "static D float f(float x) { return x * " + k + ".5f + 1.0f / (x + " + k + ".0f); }\n"
         "extern \"C\" __attribute__((global)) void stencil_" + k + "(const float *in, float *out, int n) {\n"
         "  int i = __nvvm_read_ptx_sreg_ctaid_x() * 256 + __nvvm_read_ptx_sreg_tid_x();\n"
         "  if (i <= 0 || i >= n - 1) return;\n"
         "  float acc = 0;\n"
         "  for (int j = -4; j <= 4; ++j) acc += f(in[(i + j + n) % n]) * (j + " + k + ");\n"
         "  out[i] = acc;\n}\n";
}

// The -rdc pair i: a kernel and the __device__ function it calls, in two
// translation units.
std::pair<std::string, std::string> rdc_sources(int i) {
  std::string k = std::to_string(i);
  return {"__device__ float weight_" + k + "(float x);\n"
          "extern \"C\" __global__ void apply_" + k + "(float *a, int n) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) a[i] = weight_" + k + "(a[i]);\n}\n",
          "__device__ float weight_" + k + "(float x) { return x * " + k + ".5f + 1.0f / (x + " + k + ".0f); }\n"};
}

// What range(1) links: 0 = AMDGPU bitcode, 1 = NVIDIA PTX, 2 = NVIDIA
// -rdc host object pairs.
enum Kind { kAmdgpu, kPtx, kRdc };
int links_of(int kind) { return kind == kRdc ? kRdcLinks : kKernels; }

hotlink::LinkRequest request(int i, hotlink::Execution execution, int kind = kAmdgpu) {
  hotlink::LinkRequest req;
  req.target = kind == kAmdgpu ? "amdgcn-amd-amdhsa" : "nvptx64-nvidia-cuda";
  req.gpu.processor = kind == kAmdgpu ? "gfx90a" : "sm_90";
  req.execution = execution;
  std::string k = std::to_string(i);
  if (kind == kRdc)
    req.inputs = {hotlink::Input::memory("apply_" + k + ".o", g_rdc[i].first),
                  hotlink::Input::memory("weight_" + k + ".o", g_rdc[i].second)};
  else
    req.inputs = {kind == kPtx ? hotlink::Input::memory("stencil_" + k + ".ptx", g_ptx[i])
                               : hotlink::Input::memory("stencil_" + k + ".bc", g_bitcode[i])};
  return req;
}

// range(0): 0 = serialized in-process, 1 = the pool (Auto, default workers);
// range(1): the Kind.
void BM_Device64(benchmark::State &state) {
  bool pool = state.range(0) == 1;
  int kind = static_cast<int>(state.range(1));
  if (kind == kPtx && g_ptx.empty())
    return state.SkipWithError("no nvJitLink or ptxas here");
  if (kind == kRdc && g_rdc.empty())
    return state.SkipWithError("no nvJitLink, nvcc or nvlink here");
  hotlink::LinkService svc;
  hotlink::Execution how = pool ? hotlink::Execution::Auto : hotlink::Execution::InProcess;
  // Untimed: the one-time work of the process (clang's driver, lld's first
  // call) and, for the pool, its worker processes.
  if (!svc.link(request(0, hotlink::Execution::InProcess, kind)).ok())
    return state.SkipWithError("a device link failed");
  if (pool)
    for (unsigned i = 0; i < std::thread::hardware_concurrency(); ++i)
      svc.link(request(static_cast<int>(i) % links_of(kind), hotlink::Execution::Isolated, kind));
  for (auto _ : state) {
    auto t0 = Clock::now();
    std::vector<std::future<hotlink::LinkResult>> pending;
    for (int i = 0; i < links_of(kind); ++i)
      pending.push_back(svc.submit(request(i, how, kind)));
    for (auto &p : pending) {
      hotlink::LinkResult r = p.get();
      if (!r.ok())
        return state.SkipWithError(r.error->to_string().c_str());
    }
    state.SetIterationTime(seconds_since(t0));
  }
  hotlink::ServiceStats s = svc.stats();
  state.counters["in_process"] = static_cast<double>(s.in_process);
  state.counters["in_workers"] = static_cast<double>(s.in_worker);
}

// The toolchain's way, one link at a time: the inputs written to files,
// the program spawned (`command` of those paths and OUT), OUT read back.
// false when the program fails.
bool link_by_process(const std::vector<const std::vector<std::uint8_t> *> &inputs, const std::string &ext,
                     const std::function<std::string(const std::string &ins, const std::string &out)> &command) {
  std::string ins, out = g_scratch + "/out";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::string in = g_scratch + "/in" + std::to_string(i) + ext;
    std::ofstream(in, std::ios::binary).write(reinterpret_cast<const char *>(inputs[i]->data()), inputs[i]->size());
    ins += (ins.empty() ? "" : " ") + in;
  }
  if (std::system(command(ins, out).c_str()) != 0)
    return false;
  std::ifstream image(out, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(image)), {});
  benchmark::DoNotOptimize(bytes.data());
  return true;
}

// `links` links by link_by_process, timed together.
void by_processes(benchmark::State &state, int links, const char *tool,
                  const std::function<bool(int)> &link_one) {
  for (auto _ : state) {
    auto t0 = Clock::now();
    for (int i = 0; i < links; ++i)
      if (!link_one(i))
        return state.SkipWithError((std::string(tool) + " failed").c_str());
    state.SetIterationTime(seconds_since(t0));
  }
}

void BM_Device64LldProcesses(benchmark::State &state) {
  by_processes(state, kKernels, "ld.lld", [](int i) {
    return link_by_process({&g_bitcode[i]}, ".bc", [](const std::string &in, const std::string &out) {
      return std::string(HOTLINK_BENCH_LD_LLD) + " --no-undefined -shared -plugin-opt=mcpu=gfx90a -o " + out + " " + in;
    });
  });
}

void BM_Cuda64PtxasProcesses(benchmark::State &state) {
  if (g_ptx.empty())
    return state.SkipWithError("no nvJitLink or ptxas here");
  by_processes(state, kKernels, "ptxas", [](int i) {
    return link_by_process({&g_ptx[i]}, ".ptx", [](const std::string &in, const std::string &out) {
      return g_ptxas + " -m64 -O3 --gpu-name sm_90 --output-file " + out + " " + in;
    });
  });
}

void BM_Rdc16NvlinkProcesses(benchmark::State &state) {
  if (g_rdc.empty())
    return state.SkipWithError("no nvJitLink, nvcc or nvlink here");
  by_processes(state, kRdcLinks, "nvlink", [](int i) {
    return link_by_process({&g_rdc[i].first, &g_rdc[i].second}, ".o", [](const std::string &ins, const std::string &out) {
      return g_nvlink + " -arch=sm_90 " + ins + " -o " + out;
    });
  });
}

BENCHMARK(BM_Device64)->Args({0, 0})->Args({1, 0})->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_Device64LldProcesses)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_Device64)->Args({0, 1})->Args({1, 1})->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_Cuda64PtxasProcesses)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_Device64)->Args({0, 2})->Args({1, 2})->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_Rdc16NvlinkProcesses)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);

// The NVIDIA kernels as PTX, when nvJitLink and ptxas are installed.
void make_ptx() {
  std::string cuda = std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "/usr/local/cuda";
  if (!hotlink::detail::nvjitlink::find_library() || access((cuda + "/bin/ptxas").c_str(), X_OK) != 0) {
    std::fprintf(stderr, "device_bench: no nvJitLink or no %s/bin/ptxas: the NVIDIA rows are skipped\n",
                 cuda.c_str());
    return;
  }
  g_ptxas = cuda + "/bin/ptxas";
  for (int i = 0; i < kKernels; ++i) {
    g_ptx.push_back(object_of(cuda_source(i), ".cu", [](const std::string &src, const std::string &out) {
      return std::string(HOTLINK_BENCH_CLANG) + " -x cuda --cuda-device-only -S --cuda-gpu-arch=sm_90 -nocudainc "
                                                "-nocudalib -O2 -Wno-unknown-cuda-version " + src + " -o " + out;
    }));
    if (g_ptx.back().empty()) {
      std::fprintf(stderr, "device_bench: clang-22 could not compile CUDA kernel %d\n", i);
      g_ptx.clear();
      return;
    }
  }
}

// The -rdc pairs, when nvJitLink, nvcc and nvlink are installed.
void make_rdc() {
  std::string cuda = std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "/usr/local/cuda";
  if (!hotlink::detail::nvjitlink::find_library() || access((cuda + "/bin/nvcc").c_str(), X_OK) != 0 ||
      access((cuda + "/bin/nvlink").c_str(), X_OK) != 0) {
    std::fprintf(stderr, "device_bench: no nvJitLink, or no nvcc or nvlink in %s/bin: the -rdc rows are skipped\n",
                 cuda.c_str());
    return;
  }
  g_nvlink = cuda + "/bin/nvlink";
  auto nvcc = [&](const std::string &src, const std::string &out) {
    return cuda + "/bin/nvcc -rdc=true -c -arch=sm_90 -x cu " + src + " -o " + out;
  };
  for (int i = 0; i < kRdcLinks; ++i) {
    auto [user, helper] = rdc_sources(i);
    g_rdc.push_back({object_of(user, ".cu", nvcc), object_of(helper, ".cu", nvcc)});
    if (g_rdc.back().first.empty() || g_rdc.back().second.empty()) {
      std::fprintf(stderr, "device_bench: nvcc could not compile -rdc pair %d\n", i);
      g_rdc.clear();
      return;
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  initialize(argc, argv, 5);
  g_scratch = scratch_dir("device-bench");
  for (int i = 0; i < kKernels; ++i) {
    g_bitcode.push_back(compile_object(HOTLINK_BENCH_CLANG, kernel_source(i),
                                       "--target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -O2 -emit-llvm"));
    if (g_bitcode.back().empty())
      return std::fprintf(stderr, "device_bench: clang-22 could not compile kernel %d\n", i), 1;
  }
  make_ptx();
  make_rdc();
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  double serial = reporter.median["BM_Device64/0/0"], pool = reporter.median["BM_Device64/1/0"];
  double lld = reporter.median["BM_Device64LldProcesses"];
  std::printf("\n%d device links (gfx90a, bitcode through LTO) submitted at once, medians: "
              "serialized in-process %.1f ms; the pool (in-process + %u workers) %.1f ms, %.2fx faster; "
              "ld.lld processes one by one (the offload plugin's way) %.1f ms, %.2fx the pool's time\n",
              kKernels, serial, std::thread::hardware_concurrency(), pool, serial / pool, lld, lld / pool);
  if (!g_ptx.empty()) {
    double cserial = reporter.median["BM_Device64/0/1"], cpool = reporter.median["BM_Device64/1/1"];
    double ptxas = reporter.median["BM_Cuda64PtxasProcesses"];
    std::printf("%d NVIDIA links (sm_90, PTX through nvJitLink) submitted at once, medians: serialized in-process "
                "%.1f ms; the pool %.1f ms, %.2fx faster; ptxas processes one by one (the offload CUDA plugin's "
                "way) %.1f ms, %.2fx the pool's time, %.2fx the serialized time\n",
                kKernels, cserial, cpool, cserial / cpool, ptxas, ptxas / cpool, ptxas / cserial);
  }
  if (!g_rdc.empty()) {
    double rserial = reporter.median["BM_Device64/0/2"], rpool = reporter.median["BM_Device64/1/2"];
    double nvlink = reporter.median["BM_Rdc16NvlinkProcesses"];
    std::printf("%d NVIDIA device links of nvcc -rdc=true -c host object pairs (sm_90) submitted at once, medians: "
                "serialized in-process %.1f ms; the pool %.1f ms, %.2fx faster; nvlink processes one by one %.1f ms, "
                "%.2fx the pool's time, %.2fx the serialized time\n",
                kRdcLinks, rserial, rpool, rserial / rpool, nvlink, nvlink / rpool, nvlink / rserial);
  }
  std::string rm = "rm -rf " + g_scratch;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
