// A Windows host without a C runtime (entry point `start`, kernel32 only):
// loads tls.dll and calls its bump() from two threads, 3 and 5 times, and
// once from the main thread. Each thread has its own counter, so it prints
// "tls 3 5 1".
#include "console.h"
__declspec(dllimport) HANDLE __stdcall CreateThread(void *, unsigned long long, unsigned long(__stdcall *)(void *),
                                                    void *, unsigned long, unsigned long *);
__declspec(dllimport) unsigned long __stdcall WaitForSingleObject(HANDLE, unsigned long);
typedef int (*bump_fn)(void);
static bump_fn bump;
struct job { int times, last; };
static unsigned long __stdcall worker(void *p) {
  struct job *j = p;
  for (int i = 0; i < j->times; ++i) j->last = bump();
  return 0;
}
void start(void) {
  HANDLE dll = LoadLibraryA("tls.dll");
  if (!dll) { put("error: LoadLibrary failed\n"); ExitProcess(2); }
  bump = (bump_fn)GetProcAddress(dll, "bump");
  if (!bump) { put("error: missing export\n"); ExitProcess(3); }
  struct job a = {3, 0}, b = {5, 0};
  HANDLE ta = CreateThread(0, 0, worker, &a, 0, 0);
  WaitForSingleObject(ta, 0xFFFFFFFF);
  HANDLE tb = CreateThread(0, 0, worker, &b, 0, 0);
  WaitForSingleObject(tb, 0xFFFFFFFF);
  int mine = bump();
  put("tls "); put_int(a.last); put(" "); put_int(b.last); put(" "); put_int(mine); put("\n");
  ExitProcess(0);
}
