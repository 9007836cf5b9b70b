/* Start-up of a Windows process that uses a cached pipeline, under Wine
 * (bench/windows/startup_under_wine.sh runs it):
 *   startup.exe plain DLL        LoadLibraryA on the DLL, GetProcAddress,
 *                                one call: the reference;
 *   startup.exe hotlink DIR KEY  libhotlink.dll: the cache at DIR opened,
 *                                the entry of KEY got (a hit after the
 *                                first run, which builds it from DLL),
 *                                loaded verified, one call.
 * Prints the process's CPU time (user + kernel, GetProcessTimes: Wine's own
 * start-up of the process included, as a game pays it) and the wall time
 * from the process's creation, in microseconds. */
#include "hotlink/hotlink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

static unsigned long long ticks(FILETIME t) {
  return ((unsigned long long)t.dwHighDateTime << 32 | t.dwLowDateTime) / 10; /* 100 ns -> us */
}

static const char *g_dll;

static void build(void *user, hotlink_build *b) {
  (void)user;
  FILE *f = fopen(g_dll, "rb");
  if (!f) {
    hotlink_build_fail(b, "cannot open the DLL");
    return;
  }
  static unsigned char bytes[1 << 22];
  size_t n = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  hotlink_build_set_artifact(b, bytes, n, "kernel.dll", "x86_64-w64-windows-gnu");
  hotlink_build_add_export(b, "f");
}

static int run_hotlink(const char *dir, const char *key) {
  hotlink_cache_options o;
  memset(&o, 0, sizeof o);
  o.dir = dir;
  hotlink_error *err = NULL;
  hotlink_cache *cache = hotlink_cache_open(&o, &err);
  if (!cache) {
    fprintf(stderr, "startup: %s\n", hotlink_error_message(err));
    return 1;
  }
  hotlink_entry *entry = hotlink_cache_get_or_build(cache, key, strlen(key), build, NULL, &err);
  hotlink_library *lib = entry ? hotlink_entry_load(entry, &err) : NULL;
  if (!lib) {
    fprintf(stderr, "startup: %s\n", hotlink_error_message(err));
    return 1;
  }
  int (*f)(int) = (int (*)(int))hotlink_library_symbol(lib, "f");
  int r = f ? f(1) : -1;
  hotlink_library_close(lib);
  hotlink_entry_destroy(entry);
  hotlink_cache_close(cache);
  return r == 1002 ? 0 : 1;
}

static int run_plain(const char *dll) {
  HMODULE h = LoadLibraryA(dll);
  int (*f)(int) = h ? (int (*)(int))(void *)GetProcAddress(h, "f") : NULL;
  int r = f ? f(1) : -1;
  return r == 1002 ? 0 : 1;
}

int main(int argc, char **argv) {
  int status;
  if (argc == 3 && strcmp(argv[1], "plain") == 0) {
    status = run_plain(argv[2]);
  } else if (argc == 5 && strcmp(argv[1], "hotlink") == 0) {
    g_dll = argv[4];
    status = run_hotlink(argv[2], argv[3]);
  } else {
    fprintf(stderr, "usage: startup plain DLL | startup hotlink DIR KEY DLL\n");
    return 2;
  }
  FILETIME created, exited, kernel, user, now;
  GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user);
  GetSystemTimeAsFileTime(&now);
  printf("cpu_us %llu wall_us %llu\n", ticks(kernel) + ticks(user), ticks(now) - ticks(created));
  return status;
}
