// A Windows host without a C runtime (entry point `start`, kernel32 only):
// loads cxx.dll and prints what its kernel() makes of 1, 7 and -3:
// "cxx 3 one | 3 n=7 | -1 caught negative: -3".
#include "console.h"
typedef int (*kernel_fn)(int, char *, int);
void start(void) {
  HANDLE dll = LoadLibraryA("cxx.dll");
  if (!dll) { put("error: LoadLibrary failed\n"); ExitProcess(2); }
  kernel_fn kernel = (kernel_fn)GetProcAddress(dll, "kernel");
  if (!kernel) { put("error: missing export\n"); ExitProcess(3); }
  static const int inputs[] = {1, 7, -3};
  put("cxx");
  for (int i = 0; i < 3; ++i) {
    char buf[64];
    int rc = kernel(inputs[i], buf, sizeof buf);
    put(i ? " | " : " "); put_int(rc); put(" "); put(buf);
  }
  put("\n");
  ExitProcess(0);
}
