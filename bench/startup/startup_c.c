/* bench/startup_bench's C API process, as a shipped program starts: the
 * pipeline's entry from the cache by the caller's key, hotlink_entry_load,
 * one call; exits 0 when the kernel returned 41. A miss (only when
 * priming) stores ARTIFACT's bytes, so measured runs are hits.
 *   startup_c CACHE_DIR KEY ARTIFACT [STEPS]
 * STEPS stops earlier, for the bench's breakdown of where the process's
 * CPU goes: 0 calls nothing (the cost of linking libhotlink.so), 1 opens
 * and closes the cache, 2 also gets the entry (the hit), 3 (the default)
 * also loads it and calls it. */
#include <hotlink/hotlink.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int call(void *f) { return f && ((int (*)(int))f)(20) == 41 ? 0 : 1; }

static void store_file(void *path, hotlink_build *build) {
  FILE *f = fopen((const char *)path, "rb");
  static unsigned char bytes[1 << 20];
  size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
  if (f)
    fclose(f);
  if (n == 0) {
    hotlink_build_fail(build, "cannot read the artifact");
    return;
  }
  hotlink_build_set_artifact(build, bytes, n, "k.so", NULL);
  hotlink_build_add_export(build, "f");
}

static int capi_hit(const char *dir, const char *key, const char *artifact, int steps) {
  if (steps < 1)
    return 0;
  hotlink_cache_options options;
  memset(&options, 0, sizeof options);
  options.dir = dir;
  hotlink_error *error = NULL;
  hotlink_cache *cache = hotlink_cache_open(&options, &error);
  if (!cache)
    return fprintf(stderr, "%s\n", hotlink_error_message(error)), 1;
  if (steps < 2) {
    hotlink_cache_close(cache);
    return 0;
  }
  hotlink_entry *entry = hotlink_cache_get_or_build(cache, key, strlen(key), store_file, (void *)artifact, &error);
  if (!entry)
    return fprintf(stderr, "%s\n", hotlink_error_message(error)), 1;
  if (steps < 3) {
    hotlink_entry_destroy(entry);
    hotlink_cache_close(cache);
    return 0;
  }
  hotlink_library *lib = hotlink_entry_load(entry, &error);
  if (!lib)
    return fprintf(stderr, "%s\n", hotlink_error_message(error)), 1;
  int rc = call(hotlink_library_symbol(lib, "f"));
  hotlink_library_close(lib);
  hotlink_entry_destroy(entry);
  hotlink_cache_close(cache);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 4 || argc == 5)
    return capi_hit(argv[1], argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 3);
  fprintf(stderr, "usage: startup_c CACHE_DIR KEY ARTIFACT [STEPS]\n");
  return 2;
}
