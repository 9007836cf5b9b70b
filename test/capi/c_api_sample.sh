#!/usr/bin/env bash
# Runs the C API sample (samples/c_api.c) as a user would: two kernel
# objects made with clang, then the sample twice on one cache directory.
# The first run must build the cached entry, the second must hit it.
# usage: c_api_sample.sh C_API_BINARY CLANG
set -euo pipefail
sample=$1 clang=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hotlink-c-api-XXXXXX")
trap 'rm -rf "$work"' EXIT
for v in 1 2; do
  printf 'int scale(int x) { return x * %d; }\nint scale_argv(void **a) { *(int *)a[1] = scale(*(int *)a[0]); return 0; }\n' "$v" \
    | "$clang" -x c -O2 -fPIC -c - -o "$work/scale_v$v.o"
done
"$sample" "$work/scale_v1.o" "$work/scale_v2.o" "$work/cache" | tee "$work/first"
grep -q 'cache miss' "$work/first"
"$sample" "$work/scale_v1.o" "$work/scale_v2.o" "$work/cache" | tee "$work/second"
grep -q 'cache hit' "$work/second"
