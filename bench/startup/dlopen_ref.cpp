// The C++ build of dlopen_ref.c (bench/startup_bench's C++ reference).
#include "dlopen_ref.c"
