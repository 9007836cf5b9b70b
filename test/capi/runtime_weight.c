/* What a process that uses hotlink's runtime maps (issue 44): after a
 * cache hit, a load and a hot reload, no libLLVM, libclang-cpp, lld, the
 * linker module, the x86 decoder module (forwarding's) or the DWARF module
 * (state layouts'); after a link that a miss needs, the linker module.
 * Prints the first link's time. Exits 0 when all of that holds.
 *   runtime_weight CACHE_DIR ARTIFACT OBJECT */
#include <hotlink/hotlink.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const kLinkerParts[] = {"libLLVM", "libclang-cpp", "liblld", "libhotlink-linker",
                                           "libhotlink-x86-decoder", "libhotlink-dwarf"};

/* The first of kLinkerParts the process maps, or NULL. */
static const char *mapped_linker_part(void) {
  static char line[4096];
  FILE *maps = fopen("/proc/self/maps", "r");
  if (!maps)
    return "(cannot read /proc/self/maps)";
  const char *found = NULL;
  while (!found && fgets(line, sizeof line, maps))
    for (size_t i = 0; i < sizeof kLinkerParts / sizeof kLinkerParts[0]; ++i)
      if (strstr(line, kLinkerParts[i]))
        found = kLinkerParts[i];
  fclose(maps);
  return found;
}

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *bytes = f ? malloc(1 << 22) : NULL;
  *size = bytes ? fread(bytes, 1, 1 << 22, f) : 0;
  if (f)
    fclose(f);
  return bytes;
}

static int fail(const char *step, hotlink_error *error) {
  fprintf(stderr, "runtime_weight: %s: %s\n", step, error ? hotlink_error_message(error) : "failed");
  return 1;
}

static int lean(const char *after) {
  const char *part = mapped_linker_part();
  if (part)
    return fprintf(stderr, "runtime_weight: after %s the process maps %s\n", after, part), 0;
  printf("after %s: no libLLVM, libclang-cpp, lld, linker, decoder or DWARF module mapped\n", after);
  return 1;
}

static const char *artifact_path;

static void produce(void *user, hotlink_build *build) {
  (void)user;
  size_t size = 0;
  unsigned char *bytes = read_file(artifact_path, &size);
  if (!size)
    hotlink_build_fail(build, "cannot read the artifact");
  else
    hotlink_build_set_artifact(build, bytes, size, "k.so", NULL);
  hotlink_build_add_export(build, "f");
  free(bytes);
}

static int call_f(void *f) { return f && ((int (*)(int))f)(20) == 41; }

int main(int argc, char **argv) {
  if (argc != 4)
    return fprintf(stderr, "usage: runtime_weight CACHE_DIR ARTIFACT OBJECT\n"), 2;
  artifact_path = argv[2];
  hotlink_error *error = NULL;

  /* A cache entry by the caller's key (a miss stores the file's bytes,
   * then the same key hits), loaded and called. */
  hotlink_cache_options options;
  memset(&options, 0, sizeof options);
  options.dir = argv[1];
  hotlink_cache *cache = hotlink_cache_open(&options, &error);
  if (!cache)
    return fail("hotlink_cache_open", error);
  hotlink_entry *entry = NULL;
  for (int i = 0; i < 2; ++i) {
    hotlink_entry_destroy(entry);
    if (!(entry = hotlink_cache_get_or_build(cache, "weight", 6, produce, NULL, &error)))
      return fail("hotlink_cache_get_or_build", error);
  }
  if (!hotlink_entry_hit(entry))
    return fail("the second get_or_build was not a hit", NULL);
  hotlink_library *lib = hotlink_entry_load(entry, &error);
  if (!lib || !call_f(hotlink_library_symbol(lib, "f")))
    return fail("hotlink_entry_load and a call", error);
  if (!lean("a cache hit, its load and a call"))
    return 1;

  /* A hot module reloaded from bytes. */
  size_t size = 0;
  unsigned char *bytes = read_file(argv[2], &size);
  hotlink_module *module = hotlink_module_create();
  if (!module || hotlink_module_reload(module, bytes, size, "k.so", &error) != HOTLINK_OK)
    return fail("hotlink_module_reload", error);
  free(bytes);
  if (!lean("a hot reload from bytes"))
    return 1;

  /* A link (what a miss needs): the linker module loads now. */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  hotlink_service *service = hotlink_service_create(NULL);
  hotlink_request *request = hotlink_request_create();
  hotlink_request_add_input_file(request, argv[3]);
  const char *exports[] = {"f"};
  hotlink_request_set_exports(request, HOTLINK_EXPORT_LIST, exports, 1);
  hotlink_result *result = hotlink_link(service, request);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!result)
    return fail("hotlink_link", NULL);
  /* A failed link (no linker module: runtime_weight.sh) ends the run with
   * everything released, as a host would go on. */
  int rc = 0;
  const char *part = NULL;
  if (hotlink_result_error(result)) {
    fprintf(stderr, "runtime_weight: hotlink_link: %s\n", hotlink_error_message(hotlink_result_error(result)));
    rc = 1;
  } else if (!(part = mapped_linker_part())) {
    fprintf(stderr, "runtime_weight: a link ran but no linker module is mapped\n");
    rc = 1;
  } else {
    printf("a link loaded %s; the first link took %.1f ms (module load included)\n", part,
           (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
  }

  hotlink_result_destroy(result);
  hotlink_request_destroy(request);
  hotlink_service_destroy(service);
  hotlink_module_destroy(module);
  hotlink_library_close(lib);
  hotlink_entry_destroy(entry);
  hotlink_cache_close(cache);
  return rc;
}
