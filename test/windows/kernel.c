/* The Windows runtime's fixture: a kernel with entry points, data and a
   helper, linked by the Linux build for each target (CMakeLists.txt). */
int table[4] = {1, 2, 3, 4};
static int helper(int x) { return x * 3; }
int f(int x) { return helper(x) + table[x & 3]; }
int f_argv(void **a) { *(int *)a[1] = f(*(int *)a[0]); return 0; }
