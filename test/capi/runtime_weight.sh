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
# Without its linker module a process still hits, loads and reloads; the
# link is the call that fails, and its error names the module and where it
# looked, or what is wrong with the file found.
expect_link_error() { # ENV_VALUE PATTERN
  local out
  if out=$(HOTLINK_LINKER_MODULE=$1 "$program" "$work/cache-$2" "$work/k.so" "$work/k.o" 2>&1); then
    echo "runtime_weight.sh: linked with HOTLINK_LINKER_MODULE=$1" >&2; exit 1
  fi
  grep -q "after a hot reload from bytes: no libLLVM" <<< "$out" && grep -q "hotlink_link: .*$3" <<< "$out" ||
    { echo "runtime_weight.sh: with HOTLINK_LINKER_MODULE=$1, expected $3 in:" >&2; echo "$out" >&2; exit 1; }
}
expect_link_error "$work/none.so" missing "libhotlink-linker-[0-9.]*so, which is not installed (looked for $work/none.so)"
expect_link_error "$work/k.so" foreign "has no hotlink_linker_module_v4"
echo "without its module, the link alone failed and said why"
