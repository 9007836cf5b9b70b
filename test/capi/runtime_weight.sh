#!/usr/bin/env bash
# Runs test/capi/runtime_weight.c's program on a fresh cache: a hit, a load and
# a hot reload map no libLLVM, lld or libclang-cpp; a link loads the
# linker module.
# usage: runtime_weight.sh PROGRAM CLANG
set -euo pipefail
program=$1 clang=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hotlink-weight-XXXXXX")
trap 'rm -rf "$work"' EXIT
printf 'int f(int x) { return 2 * x + 1; }\n' | "$clang" -x c -O2 -fPIC -c - -o "$work/k.o"
"$clang" -shared "$work/k.o" -o "$work/k.so"
"$program" "$work/cache" "$work/k.so" "$work/k.o"
