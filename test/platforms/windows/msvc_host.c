// Loads msvc.dll, prints what kernel() makes of 3 and 12, then unloads it
// and prints the flag its static object's destructor sets:
// "msvc ok 1019 | caught 12 index out of range | unload 42".
#include "console.h"
__declspec(dllimport) int __stdcall FreeLibrary(HANDLE);
typedef int (*kernel_fn)(int, char *);
typedef void (*watch_fn)(int *);
void start(void) {
  HANDLE dll = LoadLibraryA("msvc.dll");
  if (!dll) { put("error: LoadLibrary failed\n"); ExitProcess(2); }
  kernel_fn kernel = (kernel_fn)GetProcAddress(dll, "kernel");
  watch_fn watch = (watch_fn)GetProcAddress(dll, "watch_unload");
  if (!kernel || !watch) { put("error: missing export\n"); ExitProcess(3); }
  char a[64], b[64];
  kernel(3, a);
  kernel(12, b);
  static int flag = 0;
  watch(&flag);
  if (!FreeLibrary(dll)) { put("error: FreeLibrary failed\n"); ExitProcess(4); }
  put("msvc "); put(a); put(" | "); put(b); put(" | unload "); put_int(flag); put("\n");
  ExitProcess(0);
}
