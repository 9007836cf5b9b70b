/* The Windows hot-reload fixtures (hot_reload_test.cpp): one kernel built
   as two versions (VERSION 1000 and 2000), each linked by the Linux build,
   with a function that divides by its argument and one that reads through
   its argument, for guarded faults. Without VERSION_HAS_F, a version that
   lacks the entry point f. */
#ifndef VERSION
#define VERSION 1000
#endif
#ifndef VERSION_HAS_F
#define VERSION_HAS_F 1
#endif
int calls;
#if VERSION_HAS_F
int f(int x) { ++calls; return x * 2 + VERSION; }
#endif
int g(int x) { return x + VERSION; }
int divide(int d) { volatile int n = 100 * VERSION; return n / d; }
int peek(int *p) { return *(volatile int *)p + VERSION; }
