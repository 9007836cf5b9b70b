// A Halide-style kernel for x86_64-pc-windows-msvc that calls the CRT (malloc,
// memcpy, cosf, free) and Win32 (GetCurrentProcessId), with f_metadata()
// describing its arguments. Compiled and linked into a DLL at test time.
typedef unsigned long long size_t;
float cosf(float);
void *memcpy(void *, const void *, size_t);
void *malloc(size_t);
void free(void *);
__declspec(dllimport) unsigned long __stdcall GetCurrentProcessId(void);
struct halide_type_t { unsigned char code, bits; unsigned short lanes; };
struct halide_filter_argument_t { const char *name; int kind; int dimensions; struct halide_type_t type;
  const void *def, *min, *max, *estimate; const long long *buffer_estimates; };
struct halide_filter_metadata_t { int version; int num_arguments; const struct halide_filter_argument_t *arguments;
  const char *target; const char *name; };
static const struct halide_filter_argument_t args[] = {
  {"input", 1, 1, {2, 32, 1}}, {"output", 2, 1, {2, 32, 1}}, {"n", 0, 0, {0, 32, 1}}};
static const struct halide_filter_metadata_t md = {1, 3, args, "x86-64-windows", "cosine"};
const struct halide_filter_metadata_t *f_metadata(void) { return &md; }
int f(const float *in, float *out, int n) {
  float *tmp = malloc(n * sizeof(float));
  if (!tmp) return -1;
  memcpy(tmp, in, n * sizeof(float));
  for (int i = 0; i < n; ++i) out[i] = cosf(tmp[i]) * 2.0f;
  free(tmp);
  return GetCurrentProcessId() != 0 ? n : -2;
}
int f_argv(void **a) { return f(*(const float **)a[0], *(float **)a[1], *(int *)a[2]); }
