/* Loads a cubin with the CUDA driver API and runs two of its kernels:
 * scale(int *a, int k) (a[t] *= k) and reverse(int *a) (a[t] = a[n-1-t]
 * through __shared__ memory and a barrier), one block of 256 threads each,
 * and checks every element. Prints what it checked; exits 0 when all hold.
 *   run_cubin CUBIN */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>

#define N 256

static int check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return 1;
  const char *name = NULL, *text = NULL;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  fprintf(stderr, "run_cubin: %s: %s (%s)\n", what, name ? name : "?", text ? text : "?");
  return 0;
}

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
  *size = b && n > 0 ? fread(b, 1, (size_t)n, f) : 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return fprintf(stderr, "usage: run_cubin CUBIN\n"), 2;
  size_t size = 0;
  unsigned char *image = read_file(argv[1], &size);
  if (!size)
    return fprintf(stderr, "run_cubin: cannot read %s\n", argv[1]), 1;
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction scale, reverse;
  CUdeviceptr d;
  char name[256] = "";
  int major = 0, minor = 0;
  if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !check(cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName") ||
      !check(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attribute") ||
      !check(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attribute") ||
      !check(cuCtxCreate(&ctx, NULL, 0, dev), "cuCtxCreate"))
    return 1;
  printf("device: %s (sm_%d%d)\n", name, major, minor);
  if (!check(cuModuleLoadData(&mod, image), "cuModuleLoadData of the cubin") ||
      !check(cuModuleGetFunction(&scale, mod, "scale"), "cuModuleGetFunction(scale)") ||
      !check(cuModuleGetFunction(&reverse, mod, "reverse"), "cuModuleGetFunction(reverse)") ||
      !check(cuMemAlloc(&d, N * sizeof(int)), "cuMemAlloc"))
    return 1;
  int host[N], out[N], k = 3;
  for (int i = 0; i < N; ++i)
    host[i] = i;
  void *scale_args[] = {&d, &k};
  void *reverse_args[] = {&d};
  if (!check(cuMemcpyHtoD(d, host, sizeof host), "cuMemcpyHtoD") ||
      !check(cuLaunchKernel(scale, 1, 1, 1, N, 1, 1, 0, NULL, scale_args, NULL), "launch scale") ||
      !check(cuLaunchKernel(reverse, 1, 1, 1, N, 1, 1, 0, NULL, reverse_args, NULL), "launch reverse") ||
      !check(cuCtxSynchronize(), "cuCtxSynchronize") || !check(cuMemcpyDtoH(out, d, sizeof out), "cuMemcpyDtoH"))
    return 1;
  int bad = 0;
  for (int i = 0; i < N; ++i)
    if (out[i] != (N - 1 - i) * k) {
      if (bad++ < 4)
        fprintf(stderr, "run_cubin: a[%d] = %d, expected %d\n", i, out[i], (N - 1 - i) * k);
    }
  printf("scale(a, 3) then reverse(a) on %d ints: %s (a[0] = %d, a[%d] = %d)\n", N,
         bad ? "WRONG" : "every element right", out[0], N - 1, out[N - 1]);
  cuMemFree(d);
  cuModuleUnload(mod);
  cuCtxDestroy(ctx);
  free(image);
  return bad ? 1 : 0;
}
