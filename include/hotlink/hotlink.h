/* hotlink's C API: link the object files a JIT produced into shared objects
 * in-process with lld, cache them on the host, and load them verified, with
 * hot reload. Plain C99: every type is an opaque handle, an enum or a
 * plain struct. Link with -lhotlink (pkg-config hotlink; CMake hotlink::c).
 *
 * Ownership: a function that returns a handle (…_create, …_open,
 * hotlink_link, hotlink_load, …) gives it to the caller, who frees it with
 * the matching …_destroy / …_close (each accepts NULL). Strings and byte
 * ranges a handle returns belong to that handle and live as long as it
 * does. Strings and buffers the caller passes in are copied before the call
 * returns; the caller may free them at once.
 *
 * Errors: a call that can fail takes `hotlink_error **error` (which may be
 * NULL) and returns NULL or a status; on failure it sets *error to a new
 * error, which the caller frees with hotlink_error_free. A link's failure
 * is part of its result (hotlink_result_error). Nothing prints, nothing
 * exits the process, and no C++ exception crosses this API (running out of
 * memory is HOTLINK_INTERNAL, or NULL where no error can be returned).
 *
 * Thread safety: a hotlink_service, hotlink_cache and hotlink_module may be
 * used from any number of threads at once (a module's reloads and rollbacks
 * are serialized inside it; pins are lock-free). A hotlink_request,
 * hotlink_result, hotlink_entry, hotlink_library, hotlink_pin or
 * hotlink_error is used by one thread at a time; the const accessors of a
 * handle nobody modifies may be called from several. Process-wide:
 * in-process links are serialized (lld has one context); see the C++
 * header hotlink/link_service.h for what an in-process link does to LLVM's
 * options and signal handlers.
 *
 * Weight: libhotlink.so is the runtime (cache, verify, load, hot reload);
 * it maps no libLLVM, lld or libclang-cpp. The linker lives in the module
 * libhotlink-linker.so beside it, loaded on the first call that links
 * (hotlink_link; hotlink_service_create with warm_up), verifies for
 * another target or asks lld's version. A process answered by its cache
 * never loads it. A missing module is that call's error.
 */
#ifndef HOTLINK_HOTLINK_H
#define HOTLINK_HOTLINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* Every function declared here is exported by libhotlink.so, which builds
 * with hidden visibility otherwise (and by libhotlink.dll, through the
 * .def file its build writes from this header). */
#if defined(__GNUC__) && !defined(_WIN32)
#pragma GCC visibility push(default)
#endif

/* --- Errors --------------------------------------------------------------- */

/* HOTLINK_OK, then hotlink's error codes (C++ hotlink::ErrorCode, in order). */
typedef enum hotlink_status {
  HOTLINK_OK = 0,
  HOTLINK_BAD_REQUEST,         /* the request itself is malformed (unknown target, bad flag) */
  HOTLINK_INPUT_NOT_FOUND,     /* an input path does not exist or cannot be read */
  HOTLINK_INVALID_INPUT,       /* empty, not an object, truncated, unsupported kind */
  HOTLINK_FORMAT_MISMATCH,     /* an input's object format differs from the target's */
  HOTLINK_ARCH_MISMATCH,       /* an input's architecture differs from the target's */
  HOTLINK_MIXED_FORMATS,       /* inputs of several formats in one link */
  HOTLINK_BAD_SYMBOL_NAME,     /* a name that could change the meaning of a script */
  HOTLINK_MISSING_EXPORT,      /* a requested export is not defined by any input */
  HOTLINK_UNDEFINED_SYMBOL,    /* the link left symbols undefined */
  HOTLINK_DUPLICATE_SYMBOL,    /* two inputs define the same strong symbol */
  HOTLINK_OUTPUT_ERROR,        /* the output cannot be written or published */
  HOTLINK_LINK_FAILED,         /* lld reported another error */
  HOTLINK_LINKER_UNAVAILABLE,  /* in-process lld refused to run again and no worker */
  HOTLINK_WORKER_FAILED,       /* the out-of-process worker crashed or misbehaved */
  HOTLINK_WORKER_TIMEOUT,      /* the worker did not answer within the timeout */
  HOTLINK_NOT_A_SHARED_OBJECT, /* loader: an object, executable or unknown file */
  HOTLINK_HASH_MISMATCH,       /* loader: the bytes are not the expected ones */
  HOTLINK_UNRESOLVED_SYMBOL,   /* loader: an import the process cannot provide */
  HOTLINK_ABI_MISMATCH,        /* loader: f_metadata() differs from what the host expects */
  HOTLINK_LOAD_FAILED,         /* loader: the dynamic loader refused the image */
  HOTLINK_INIT_FAILED,         /* loader: the on_load hook refused the new version */
  HOTLINK_CACHE_UNSAFE,        /* cache: the directory is not private to this user */
  HOTLINK_CACHE_ERROR,         /* cache: the directory or an entry cannot be used */
  HOTLINK_UNSIGNED,            /* signature: none, where one is required */
  HOTLINK_UNTRUSTED_SIGNER,    /* signature: signed, but by no trusted key */
  HOTLINK_BAD_SIGNATURE,       /* signature: does not verify, or malformed */
  HOTLINK_KEY_ERROR,           /* signature: a key file is unreadable, malformed or unsafe */
  HOTLINK_INTERNAL,            /* a bug in hotlink (or out of memory); please report */
  HOTLINK_STATE_MISMATCH,      /* loader: a state variable cannot be carried into the new version */
  HOTLINK_STATE_BUSY,          /* loader: calls stayed inside the old version past the drain timeout */
  HOTLINK_COMPILE_FAILED,      /* rebuild: the compiler refused a source */
  HOTLINK_STATUS_MAX_ = 0x7fffffff /* not a status: makes every int a valid value (ABI) */
} hotlink_status;

typedef struct hotlink_error hotlink_error;

hotlink_status hotlink_error_code(const hotlink_error *error);
/* "error[invalid-input]: input 'k.o': what failed (hint: what to do)". */
const char *hotlink_error_message(const hotlink_error *error);
const char *hotlink_error_input(const hotlink_error *error);  /* the input or output; "" if none */
const char *hotlink_error_symbol(const hotlink_error *error); /* the symbol or flag; "" if none */
const char *hotlink_error_hint(const hotlink_error *error);   /* "" if none */
void hotlink_error_free(hotlink_error *error);
/* The short name of a code: "ok", "invalid-input", ... (static storage). */
const char *hotlink_status_name(hotlink_status code);

/* Static strings: hotlink's version ("0.1.0"), lld's version line, the
 * LLVM version hotlink was built with ("" in a build without LLVM: the
 * Windows runtime), and the host's target triple as hotlink spells it.
 * Safe from any thread. lld's line comes from the linker module (it loads
 * it; "" when it cannot load). */
const char *hotlink_version(void);
const char *hotlink_lld_version(void);
const char *hotlink_llvm_version(void);
const char *hotlink_host_target(void);

/* --- The cache ------------------------------------------------------------ */

/* A cache directory: content-addressed, shared safely by any number of
 * processes, bounded, verified on every read (C++: hotlink/cache.h). */
typedef struct hotlink_cache hotlink_cache;

typedef struct hotlink_cache_options {
  const char *dir;            /* required */
  uint64_t max_bytes;         /* 0 = the default (1 GiB) */
  uint64_t max_entries;       /* 0 = unbounded */
  uint64_t max_age_seconds;   /* since last use; 0 = unbounded */
  int no_create;              /* 1: DIR must already be a cache (HOTLINK_INPUT_NOT_FOUND) */
  /* The remote tier: a store shared with other hosts (redis://HOST[:PORT][/DB],
   * redis+unix:///PATH, redis+cluster://HOST:PORT[,...] or
   * http[s]://HOST[:PORT]/PATH without credentials: see
   * hotlink_cache_open_with_auth), the public key files
   * of the signers to trust, and this host's signing key (NULL: this
   * process consumes, and publishes nothing). A remote entry is used only
   * when a trusted key signed it. */
  const char *remote_url;
  const char *const *trusted_key_files;
  size_t trusted_key_count;
  const char *sign_key_file;
  int require_signed;         /* local entries too must be signed (needs sign_key_file) */
} hotlink_cache_options;

/* Opens DIR, making it (0700) when missing unless no_create. Refused when
 * another user, the group or others can write to it (HOTLINK_CACHE_UNSAFE).
 * Safe from any thread; the handle is too. */
hotlink_cache *hotlink_cache_open(const hotlink_cache_options *options, hotlink_error **error);
/* hotlink_cache_open with the credentials of an http[s]:// remote_url: a
 * file only its owner can read whose one line is "Bearer TOKEN" or
 * "USER:PASSWORD" (Basic); NULL for none. (A function of its own, so that
 * hotlink_cache_options keeps its size.) */
hotlink_cache *hotlink_cache_open_with_auth(const hotlink_cache_options *options, const char *remote_auth_file,
                                            hotlink_error **error);
/* Flushes the counters. A service given this cache keeps using it. */
void hotlink_cache_close(hotlink_cache *cache);

/* --- The link service ------------------------------------------------------ */

typedef struct hotlink_service hotlink_service;

typedef struct hotlink_service_options {
  unsigned workers;            /* worker processes; 0 = the number of cores less one, at least 1 */
  const hotlink_cache *cache;  /* answers links it holds; NULL = no cache (the service keeps its own reference) */
  int warm_up;                 /* 1: do a link's one-time work (~10 ms) now, not in the first link */
  int lld_on_own_thread;       /* 1: in-process links run lld on hotlink's thread, never the caller's (hotlink/link_service.h) */
} hotlink_service_options;

/* `options` may be NULL (no cache, default workers). Never fails but for
 * memory: the first link reports what is unusable. Safe from any thread;
 * the service is too. Destroy it after every link on it returned. */
hotlink_service *hotlink_service_create(const hotlink_service_options *options);
void hotlink_service_destroy(hotlink_service *service);

/* --- A link request --------------------------------------------------------- */

typedef enum hotlink_export_mode {
  HOTLINK_EXPORT_ENTRY_POINTS = 0, /* f with its f_argv / f_metadata companions (the default) */
  HOTLINK_EXPORT_ALL,              /* every defined external symbol but the runtime's machinery */
  HOTLINK_EXPORT_LIST,             /* only the names given */
  HOTLINK_EXPORT_NONE,             /* no export list: lld's default */
  HOTLINK_EXPORT_MODE_MAX_ = 0x7fffffff /* not a mode: makes every int a valid value (ABI) */
} hotlink_export_mode;

typedef enum hotlink_execution {
  HOTLINK_EXECUTION_AUTO = 0,  /* in-process when lld is usable, else a worker */
  HOTLINK_EXECUTION_IN_PROCESS,
  HOTLINK_EXECUTION_ISOLATED,  /* in a worker process (hotlink-ld) */
  HOTLINK_EXECUTION_MAX_ = 0x7fffffff /* not a value: makes every int a valid value (ABI) */
} hotlink_execution;

/* Plain data: building one never touches the disk. Used by one thread at a
 * time; a finished request may be linked from several threads at once. */
typedef struct hotlink_request hotlink_request;

hotlink_request *hotlink_request_create(void);
void hotlink_request_destroy(hotlink_request *request);
/* An LLVM triple; NULL or "" = the host. */
void hotlink_request_set_target(hotlink_request *request, const char *triple);
/* An object or archive in memory (copied; `name` names it in errors), or a file. */
void hotlink_request_add_input(hotlink_request *request, const char *name, const void *data, size_t size);
void hotlink_request_add_input_file(hotlink_request *request, const char *path);
/* The export policy; `names` are exported in any mode (for LIST, only they). */
void hotlink_request_set_exports(hotlink_request *request, hotlink_export_mode mode, const char *const *names,
                                 size_t count);
/* Where the artifact is published (atomically); NULL or "" = returned as bytes. */
void hotlink_request_set_output(hotlink_request *request, const char *path);
/* COFF: also publish the .def, the import library, the PDB there. */
void hotlink_request_set_def_output(hotlink_request *request, const char *path);
void hotlink_request_set_implib_output(hotlink_request *request, const char *path);
void hotlink_request_set_pdb_output(hotlink_request *request, const char *path);
/* A -l name ("m", "z") or an archive path; and a -L directory. */
void hotlink_request_add_library(hotlink_request *request, const char *name);
void hotlink_request_add_library_path(hotlink_request *request, const char *dir);
void hotlink_request_set_sysroot(hotlink_request *request, const char *path);
/* ELF: DT_SONAME (default: the output's file name). */
void hotlink_request_set_soname(hotlink_request *request, const char *soname);
/* ELF: 1 = link the inputs alone, without the target's C library and
 * startup objects (a bare link; default 0: what `clang -shared` links). */
void hotlink_request_set_bare(hotlink_request *request, int bare);
/* GPU targets: the processor, required there and refused for a host
 * target. amdgcn-amd-amdhsa: an AMD target ID, "gfx90a", "gfx90a:xnack+",
 * "gfx90a:sramecc-:xnack+"; nvptx64-nvidia-cuda: the SM architecture,
 * "sm_90", "sm_90a". */
void hotlink_request_set_processor(hotlink_request *request, const char *target_id);

typedef enum hotlink_device_libs {
  HOTLINK_DEVICE_LIBS_AUTO = 0, /* link the ROCm device libraries lazily when something is undefined */
  HOTLINK_DEVICE_LIBS_NONE,     /* never: an undefined symbol is an error naming it */
  HOTLINK_DEVICE_LIBS_MAX_ = 0x7fffffff /* not a value: makes every int a valid value (ABI) */
} hotlink_device_libs;

/* GPU targets: whether the device libraries are linked, and from which
 * bitcode folder (NULL or "" = the installed one, as clang finds it). */
void hotlink_request_set_device_libs(hotlink_request *request, hotlink_device_libs mode, const char *dir);
/* A raw lld flag, appended last. */
void hotlink_request_add_flag(hotlink_request *request, const char *flag);
void hotlink_request_set_execution(hotlink_request *request, hotlink_execution execution);
/* Whether the service's cache may answer (default 1). */
void hotlink_request_set_use_cache(hotlink_request *request, int use_cache);

/* --- Linking and its result ------------------------------------------------- */

typedef struct hotlink_result hotlink_result;

typedef enum hotlink_severity { HOTLINK_NOTE = 0, HOTLINK_WARNING, HOTLINK_ERROR, HOTLINK_SEVERITY_MAX_ = 0x7fffffff } hotlink_severity;

typedef struct hotlink_timings {
  double validate_ms, prepare_ms, link_ms, cache_ms, publish_ms, total_ms;
} hotlink_timings;

/* Links `request`. Returns NULL only when memory runs out: a failed link is
 * a result whose hotlink_result_error is not NULL. Safe from any thread. */
hotlink_result *hotlink_link(hotlink_service *service, const hotlink_request *request);
void hotlink_result_destroy(hotlink_result *result);

/* NULL when the link succeeded; owned by the result. */
const hotlink_error *hotlink_result_error(const hotlink_result *result);
/* The artifact's bytes when no output path was given (else NULL and 0). */
const uint8_t *hotlink_result_bytes(const hotlink_result *result, size_t *size);
/* The published artifact's path when an output path was given (else ""). */
const char *hotlink_result_path(const hotlink_result *result);
/* Its file name ("k.so", or "hotlink.so" without an output path). */
const char *hotlink_result_name(const hotlink_result *result);
const char *hotlink_result_target(const hotlink_result *result);
size_t hotlink_result_export_count(const hotlink_result *result);
const char *hotlink_result_export(const hotlink_result *result, size_t index); /* NULL past the end */
/* Everything lld said. `message`, `file`, `symbol` may be NULL; the
 * strings belong to the result. Past the end: HOTLINK_NOTE and "". */
size_t hotlink_result_diagnostic_count(const hotlink_result *result);
hotlink_severity hotlink_result_diagnostic(const hotlink_result *result, size_t index, const char **message,
                                           const char **file, const char **symbol);
void hotlink_result_timings(const hotlink_result *result, hotlink_timings *timings);
/* "off", "hit", "miss" or "remote-hit"; "in-process", "worker" or "cache". */
const char *hotlink_result_cache(const hotlink_result *result);
const char *hotlink_result_executed_by(const hotlink_result *result);

/* --- The cache, with keys of the caller's ------------------------------------ */

typedef struct hotlink_entry hotlink_entry;
/* What a producer hands to the cache; valid during the callback only. */
typedef struct hotlink_build hotlink_build;

/* The artifact's bytes (copied), its file name ("blur.so") and target
 * (NULL = the host), and its exports. */
void hotlink_build_set_artifact(hotlink_build *build, const void *data, size_t size, const char *name,
                                const char *target);
void hotlink_build_add_export(hotlink_build *build, const char *name);
/* What a link returned as bytes, with its name, target, exports and COFF
 * companions; a failed link's error becomes the build's. */
void hotlink_build_set_result(hotlink_build *build, const hotlink_result *result);
/* The producer cannot build: get_or_build fails with this message
 * (HOTLINK_LINK_FAILED) and nothing is stored. */
void hotlink_build_fail(hotlink_build *build, const char *message);
typedef void (*hotlink_build_fn)(void *user, hotlink_build *build);

/* The entry of `key` (any bytes the caller derives before compiling, such
 * as a hash of the pipeline and its target): from the cache when it holds
 * a valid one, else built by `produce` (once across every process asking
 * at the same time) and stored. A store that fails is not an error: the
 * built artifact is returned. Safe from any thread; `produce` runs on the
 * calling thread and may call hotlink_link. */
hotlink_entry *hotlink_cache_get_or_build(hotlink_cache *cache, const void *key, size_t key_size,
                                          hotlink_build_fn produce, void *user, hotlink_error **error);
void hotlink_entry_destroy(hotlink_entry *entry);
/* 1: it came from the cache (this host's, or its remote tier). */
int hotlink_entry_hit(const hotlink_entry *entry);
const uint8_t *hotlink_entry_bytes(const hotlink_entry *entry, size_t *size);
const char *hotlink_entry_name(const hotlink_entry *entry);
/* The BLAKE3 (hex) its manifest records, and what building it cost. */
const char *hotlink_entry_blake3(const hotlink_entry *entry);
double hotlink_entry_build_ms(const hotlink_entry *entry);

/* --- Loading ------------------------------------------------------------------ */

/* Checks `data` as the loader of `target` would before mapping it (NULL or
 * "" = this host: hotlink_load's checks without mapping): format, arch,
 * the `expected` exports (a GPU code object: its kernels), and for a GPU
 * target `processor`'s target ID, the metadata note, no imports, only
 * relocations the HSA loader applies. HOTLINK_OK or the failure's code,
 * with *error naming `name`. Loads nothing; safe from any thread. */
hotlink_status hotlink_verify(const void *data, size_t size, const char *name, const char *target,
                              const char *processor, const char *const *expected, size_t expected_count,
                              hotlink_error **error);

/* A verified, mapped private copy of an artifact (C++: hotlink/load.h). */
typedef struct hotlink_library hotlink_library;

/* Verifies `data` (a shared object of this host's format and architecture,
 * exporting the `expected` names, importing nothing this process cannot
 * provide; with `blake3_hex`, exactly those bytes) and maps a private copy
 * of it, RTLD_NOW | RTLD_LOCAL. `name` names it in errors and in the
 * mapped file's name. Safe from any thread. */
hotlink_library *hotlink_load(const void *data, size_t size, const char *name, const char *const *expected,
                              size_t expected_count, const char *blake3_hex, hotlink_error **error);
hotlink_library *hotlink_load_file(const char *path, const char *const *expected, size_t expected_count,
                                   hotlink_error **error);
/* A cache entry, checked against its manifest (and its signature, when the
 * cache trusts keys). */
hotlink_library *hotlink_entry_load(const hotlink_entry *entry, hotlink_error **error);
/* The address of `symbol`; NULL when it does not export it. */
void *hotlink_library_symbol(const hotlink_library *library, const char *symbol);
/* The file the dynamic loader mapped (what gdb, perf and valgrind show). */
const char *hotlink_library_path(const hotlink_library *library);
/* Unmaps it: no call may be inside it any more. */
void hotlink_library_close(hotlink_library *library);

/* --- Hot reload ------------------------------------------------------------------ */

/* A module that keeps serving calls while new versions replace it
 * (C++: hotlink/hot_module.h). Safe from any thread at once. */
typedef struct hotlink_module hotlink_module;

/* Holds one version for a batch of calls; lock-free. Lives on the caller's
 * stack; every pinned hotlink_pin is released with hotlink_pin_release. */
typedef struct hotlink_pin {
  void *opaque[2];
} hotlink_pin;

hotlink_module *hotlink_module_create(void);
/* After calls stopped and every pin was released. */
void hotlink_module_destroy(hotlink_module *module);
/* Registers an entry point every version must export; returns its slot
 * (>= 0), or -1 and sets *error. Register entries before the first reload
 * (later, the current version is checked for it now). At most 32. */
int hotlink_module_entry(hotlink_module *module, const char *name, hotlink_error **error);
/* Verifies, maps and publishes a new version; on failure the current one
 * keeps serving and nothing of the new one stays mapped. */
hotlink_status hotlink_module_reload(hotlink_module *module, const void *data, size_t size, const char *name,
                                     hotlink_error **error);
hotlink_status hotlink_module_reload_file(hotlink_module *module, const char *path, hotlink_error **error);
/* Makes the previous version current again. */
hotlink_status hotlink_module_rollback(hotlink_module *module, hotlink_error **error);
/* The current version's number (1, 2, ...; 0 when none is loaded). */
uint64_t hotlink_module_version(const hotlink_module *module);

/* Pins the current version; returns 0 (and pins nothing) when none is
 * loaded. A version is never unmapped while a pin holds it. */
int hotlink_module_pin(const hotlink_module *module, hotlink_pin *pin);
/* The address of entry `slot` in the pinned version: cast it to the entry
 * point's type and call it (e.g. `int (*)(void **)` for an f_argv). */
void *hotlink_pin_entry(const hotlink_pin *pin, int slot);
uint64_t hotlink_pin_version(const hotlink_pin *pin);
/* Releases the pin. A released pin, or one hotlink_module_pin returned 0
 * for, is left alone. */
void hotlink_pin_release(hotlink_pin *pin);

#if defined(__GNUC__) && !defined(_WIN32)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif

#endif /* HOTLINK_HOTLINK_H */
