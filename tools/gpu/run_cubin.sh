#!/usr/bin/env bash
# Links a cubin with hotlink (PTX from clang-22, nvJitLink) and runs it on
# this machine's NVIDIA GPU with the CUDA driver API (run_cubin.c): two
# kernels, one using __shared__ memory and a barrier, every element checked.
# Needs a GPU, its driver (libcuda.so.1) and the CUDA toolkit's cuda.h;
# CI never runs it.
#   tools/gpu/run_cubin.sh [BUILD_DIR [ARCH]]    (ARCH: sm_90 for an H100)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
arch=${2:-sm_90}
cuda=${CUDA_HOME:-/usr/local/cuda}
work=$(mktemp -d "${TMPDIR:-/tmp}/hotlink-gpu-XXXXXX")
trap 'rm -rf "$work"' EXIT
cat > "$work/k.cu" <<'CU'
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
}
CU
clang-22 -x cuda --cuda-device-only -S --cuda-gpu-arch="$arch" -nocudainc -nocudalib -O2 \
  -Wno-unknown-cuda-version "$work/k.cu" -o "$work/k.ptx"
"$build/bin/hotlink" link --target nvptx64-nvidia-cuda --mcpu "$arch" -o "$work/k.cubin" "$work/k.ptx"
"$build/bin/hotlink" verify "$work/k.cubin" --target nvptx64-nvidia-cuda --mcpu "$arch" --expect scale --expect reverse
cc -O2 -I"$cuda/include" "$here/run_cubin.c" -o "$work/run_cubin" -L"$cuda/lib64/stubs" -lcuda
timeout -k 5 120 "$work/run_cubin" "$work/k.cubin"
