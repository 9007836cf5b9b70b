/* bench/startup_bench's reference for a C program: dlopen the artifact,
 * dlsym, call; exits 0 when the kernel returned 41. Links nothing of
 * hotlink. Built as C (dlopen_ref_c) and as C++ (dlopen_ref_cxx, with the
 * C++ runtime a C++ program loads).
 *   dlopen_ref ARTIFACT */
#include <dlfcn.h>
#include <stdio.h>

#ifdef __cplusplus
#include <string>
#endif

int main(int argc, char **argv) {
  if (argc != 2)
    return fprintf(stderr, "usage: dlopen_ref ARTIFACT\n"), 2;
#ifdef __cplusplus
  std::string path = argv[1]; /* a C++ program's runtime, as startup_reload has */
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
#else
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
#endif
  if (!h)
    return fprintf(stderr, "%s\n", dlerror()), 1;
  int (*f)(int) = (int (*)(int))dlsym(h, "f");
  return f && f(20) == 41 ? 0 : 1;
}
