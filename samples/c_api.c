/* c_api: hotlink from plain C99 (include/hotlink/hotlink.h).
 *
 *   cc -std=c99 c_api.c $(pkg-config --cflags --libs hotlink) -o c_api
 *   ./c_api scale_v1.o scale_v2.o CACHE_DIR
 *
 * The two objects define `int scale(int)` (and `scale_argv`), returning
 * x * 1 and x * 2; make them with
 *   printf 'int scale(int x){return x*1;}\nint scale_argv(void**a){*(int*)a[1]=scale(*(int*)a[0]);return 0;}\n' \
 *     | clang-22 -x c -O2 -fPIC -c - -o scale_v1.o
 *
 * It links the first object to bytes and loads them, hot-reloads the
 * second through a module and rolls back, answers a link from a cache on
 * the second run, and shows the error a truncated object gets. Every step
 * is checked; the exit code is 0 only when all of them passed. */
#include <hotlink/hotlink.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*scale_fn)(int);

static int failures = 0;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok:  " : "FAIL:", what);
  if (!ok)
    ++failures;
}

/* The whole file, or NULL. */
static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *data = NULL;
  long n;
  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = malloc((size_t)n);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
      free(data);
      data = NULL;
    }
    *size = (size_t)n;
  }
  fclose(f);
  return data;
}

/* Links one object held in memory to a shared object returned as bytes. */
static hotlink_result *link_object(hotlink_service *service, const char *name, const unsigned char *object,
                                   size_t size) {
  hotlink_request *request = hotlink_request_create();
  hotlink_result *result;
  hotlink_request_add_input(request, name, object, size);
  /* The default policy: `scale` and its `scale_argv` companion. */
  result = hotlink_link(service, request);
  hotlink_request_destroy(request);
  return result;
}

struct producer {
  hotlink_service *service;
  const unsigned char *object;
  size_t size;
  int calls;
};

/* get_or_build's producer: runs only on a cache miss. */
static void produce(void *user, hotlink_build *build) {
  struct producer *p = user;
  hotlink_result *result = link_object(p->service, "scale_v2.o", p->object, p->size);
  ++p->calls;
  hotlink_build_set_result(build, result); /* a failed link fails the build */
  hotlink_result_destroy(result);
}

static void print_error(const char *step, const hotlink_error *error) {
  printf("      %s: %s (%s)\n", step, hotlink_error_message(error), hotlink_status_name(hotlink_error_code(error)));
}

int main(int argc, char **argv) {
  size_t size1 = 0, size2 = 0, bytes_size = 0;
  unsigned char *v1, *v2;
  hotlink_service *service;
  hotlink_result *result;
  hotlink_error *error = NULL;

  if (argc != 4) {
    fprintf(stderr, "usage: %s SCALE_V1.o SCALE_V2.o CACHE_DIR\n", argv[0]);
    return 2;
  }
  v1 = read_file(argv[1], &size1);
  v2 = read_file(argv[2], &size2);
  if (!v1 || !v2) {
    fprintf(stderr, "c_api: cannot read %s\n", v1 ? argv[2] : argv[1]);
    return 2;
  }
  printf("hotlink %s, %s, LLVM %s, host %s\n", hotlink_version(), hotlink_lld_version(), hotlink_llvm_version(),
         hotlink_host_target());
  service = hotlink_service_create(NULL);

  /* 1. Object bytes in, shared object bytes out, then loaded and called. */
  result = link_object(service, "scale_v1.o", v1, size1);
  check(hotlink_result_error(result) == NULL, "link scale_v1.o to bytes");
  if (!hotlink_result_error(result)) {
    const uint8_t *bytes = hotlink_result_bytes(result, &bytes_size);
    const char *expected[] = {"scale"};
    hotlink_library *library = hotlink_load(bytes, bytes_size, hotlink_result_name(result), expected, 1, NULL, &error);
    check(library != NULL, "load the linked bytes (verified first)");
    if (library) {
      scale_fn scale = (scale_fn)hotlink_library_symbol(library, "scale");
      check(scale && scale(21) == 21, "scale(21) == 21 through the loaded library");
      printf("      mapped as %s\n", hotlink_library_path(library));
      hotlink_library_close(library);
    } else {
      print_error("load", error);
      hotlink_error_free(error);
      error = NULL;
    }
  }
  hotlink_result_destroy(result);

  /* 2. A hot module: version 1, then version 2, then back to 1. */
  {
    hotlink_module *module = hotlink_module_create();
    int slot = hotlink_module_entry(module, "scale", &error);
    hotlink_pin pin;
    hotlink_result *r1 = link_object(service, "scale_v1.o", v1, size1);
    hotlink_result *r2 = link_object(service, "scale_v2.o", v2, size2);
    const uint8_t *b1 = hotlink_result_bytes(r1, &size1);
    const uint8_t *b2 = hotlink_result_bytes(r2, &size2);
    check(slot >= 0, "register the entry point `scale`");
    check(hotlink_module_reload(module, b1, size1, "scale.so", &error) == HOTLINK_OK, "reload version 1");
    if (hotlink_module_pin(module, &pin)) {
      scale_fn scale = (scale_fn)hotlink_pin_entry(&pin, slot);
      check(hotlink_pin_version(&pin) == 1 && scale(5) == 5, "version 1 serves: scale(5) == 5");
      hotlink_pin_release(&pin);
    }
    check(hotlink_module_reload(module, b2, size2, "scale.so", &error) == HOTLINK_OK, "reload version 2");
    if (hotlink_module_pin(module, &pin)) {
      scale_fn scale = (scale_fn)hotlink_pin_entry(&pin, slot);
      check(hotlink_pin_version(&pin) == 2 && scale(5) == 10, "version 2 serves: scale(5) == 10");
      hotlink_pin_release(&pin);
    }
    /* A broken version (16 bytes of an object) is refused; version 2 keeps serving. */
    check(hotlink_module_reload(module, v1, 16, "broken.so", &error) != HOTLINK_OK, "a broken version is refused");
    if (error) {
      print_error("reload", error);
      hotlink_error_free(error);
      error = NULL;
    }
    check(hotlink_module_version(module) == 2, "version 2 still serves");
    check(hotlink_module_rollback(module, &error) == HOTLINK_OK && hotlink_module_version(module) == 1,
          "roll back to version 1");
    hotlink_result_destroy(r1);
    hotlink_result_destroy(r2);
    hotlink_module_destroy(module);
  }

  /* 3. The cache, keyed by what the caller knows before compiling. */
  {
    hotlink_cache_options options;
    hotlink_cache *cache;
    memset(&options, 0, sizeof options);
    options.dir = argv[3];
    cache = hotlink_cache_open(&options, &error);
    check(cache != NULL, "open the cache");
    if (cache) {
      char key[256];
      struct producer p = {NULL, NULL, 0, 0};
      hotlink_entry *entry;
      /* What identifies the build before compiling: the source's version
       * and the target (a JIT would hash its pipeline here). */
      snprintf(key, sizeof key, "scale:v2:%s", hotlink_host_target());
      p.service = service;
      p.size = size2;
      p.object = read_file(argv[2], &p.size);
      entry = hotlink_cache_get_or_build(cache, key, strlen(key), produce, &p, &error);
      check(entry != NULL, "get_or_build");
      if (entry) {
        hotlink_library *library = hotlink_entry_load(entry, &error);
        printf("      cache %s (built %d times here; building cost %.2f ms)\n", hotlink_entry_hit(entry) ? "hit" : "miss",
               p.calls, hotlink_entry_build_ms(entry));
        check(hotlink_entry_hit(entry) == (p.calls == 0), "a hit runs no producer, a miss runs it once");
        check(library != NULL, "load the cache entry (checked against its manifest)");
        if (library) {
          scale_fn scale = (scale_fn)hotlink_library_symbol(library, "scale");
          check(scale && scale(7) == 14, "scale(7) == 14 from the cache entry");
          hotlink_library_close(library);
        }
        hotlink_entry_destroy(entry);
      }
      free((void *)p.object);
      hotlink_cache_close(cache);
    }
    if (error) {
      print_error("cache", error);
      hotlink_error_free(error);
      error = NULL;
    }
  }

  /* 4. A failing link: its error names the input and says what to do. */
  result = link_object(service, "truncated.o", v1, 40);
  {
    const hotlink_error *e = hotlink_result_error(result);
    check(e != NULL && hotlink_error_code(e) == HOTLINK_INVALID_INPUT, "a truncated object is an invalid input");
    if (e) {
      print_error("link", e);
      check(strcmp(hotlink_error_input(e), "truncated.o") == 0, "the error names the input");
    }
  }
  hotlink_result_destroy(result);

  hotlink_service_destroy(service);
  free(v1);
  free(v2);
  printf("%s\n", failures ? "c_api: FAILED" : "c_api: every step passed");
  return failures ? 1 : 0;
}
