// A Windows host without a C runtime (entry point `start`), linked against
// zlib1.lib: compresses 64 KiB of text with compress2, decompresses it with
// uncompress and compares, printing "zlib 65536 -> N -> 65536 same".
#include "console.h"
__declspec(dllimport) int compress2(unsigned char *, unsigned long *, const unsigned char *, unsigned long, int);
__declspec(dllimport) int uncompress(unsigned char *, unsigned long *, const unsigned char *, unsigned long);
__declspec(dllimport) unsigned long compressBound(unsigned long);
enum { N = 65536 };
static unsigned char text[N], packed[N + 1024], back[N];
void start(void) {
  static const char line[] = "hotlink links JIT objects into DLLs; zlib packs this line again and again. ";
  for (int i = 0; i < N; ++i) text[i] = (unsigned char)line[i % (sizeof line - 1)];
  unsigned long packed_len = sizeof packed, back_len = sizeof back;
  if (compressBound(N) > sizeof packed) { put("error: bound\n"); ExitProcess(2); }
  if (compress2(packed, &packed_len, text, N, 9) != 0) { put("error: compress2\n"); ExitProcess(3); }
  if (uncompress(back, &back_len, packed, packed_len) != 0) { put("error: uncompress\n"); ExitProcess(4); }
  int same = back_len == N;
  for (int i = 0; same && i < N; ++i) same = back[i] == text[i];
  put("zlib "); put_int(N); put(" -> "); put_int(packed_len); put(" -> "); put_int(back_len);
  put(same ? " same\n" : " DIFFERENT\n");
  ExitProcess(0);
}
