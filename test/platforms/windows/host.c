// A Windows host program without a C runtime (entry point `start`, kernel32
// only): loads kernel.dll, prints what f_metadata() reports, runs f_argv on
// three floats and prints the results times 1000, rounded.
#include "console.h"
struct halide_type_t { unsigned char code, bits; unsigned short lanes; };
struct halide_filter_argument_t { const char *name; int kind; int dimensions; struct halide_type_t type;
  const void *def, *min, *max, *estimate; const long long *buffer_estimates; };
struct halide_filter_metadata_t { int version; int num_arguments; const struct halide_filter_argument_t *arguments;
  const char *target; const char *name; };
void start(void) {
  HANDLE dll = LoadLibraryA("kernel.dll");
  if (!dll) { put("error: LoadLibrary failed\n"); ExitProcess(2); }
  typedef const struct halide_filter_metadata_t *(*meta_fn)(void);
  typedef int (*argv_fn)(void **);
  meta_fn meta = (meta_fn)GetProcAddress(dll, "f_metadata");
  argv_fn run = (argv_fn)GetProcAddress(dll, "f_argv");
  if (!meta || !run) { put("error: missing export\n"); ExitProcess(3); }
  const struct halide_filter_metadata_t *md = meta();
  put("metadata "); put(md->name); put(" version "); put_int(md->version);
  put(" arguments "); put_int(md->num_arguments);
  for (int i = 0; i < md->num_arguments; ++i) { put(" "); put(md->arguments[i].name); }
  put("\n");
  float in[3] = {0.0f, 1.04719755f, 3.14159265f}, out[3] = {0, 0, 0};
  const float *pin = in; float *pout = out; int n = 3;
  void *args[3] = {&pin, &pout, &n};
  int rc = run(args);
  put("f_argv "); put_int(rc);
  for (int i = 0; i < 3; ++i) { put(" "); put_int((long long)(out[i] * 1000.0f + (out[i] < 0 ? -0.5f : 0.5f))); }
  put("\n");
  ExitProcess(0);
}
