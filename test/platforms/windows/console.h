// What the test hosts without a C runtime (entry point `start`, kernel32
// only) share: the Win32 calls they make and a way to print. Inlined by the
// test's source_file(), so that fixtures stay single files.
typedef void *HANDLE;
__declspec(dllimport) HANDLE __stdcall LoadLibraryA(const char *);
__declspec(dllimport) void *__stdcall GetProcAddress(HANDLE, const char *);
__declspec(dllimport) HANDLE __stdcall GetStdHandle(unsigned long);
__declspec(dllimport) int __stdcall WriteFile(HANDLE, const void *, unsigned long, unsigned long *, void *);
__declspec(dllimport) void __stdcall ExitProcess(unsigned);
static void put(const char *s) {
  unsigned long n = 0, w;
  while (s[n]) ++n;
  WriteFile(GetStdHandle((unsigned long)-11), s, n, &w, 0);
}
static void put_int(long long v) {
  char b[24]; int i = 23; b[i] = 0;
  int neg = v < 0; if (neg) v = -v;
  do { b[--i] = (char)('0' + v % 10); v /= 10; } while (v);
  if (neg) b[--i] = '-';
  put(b + i);
}
