#!/bin/sh
# Writes capi/startup.order: the functions of libhotlink.so that a process
# which only loads runs (bench/startup_bench's (a) C API cache hit and (b)
# HotModule reload: the library's constructors, the cache hit, verify, the
# private copy, dlopen), for lld's --symbol-ordering-file. lld puts them
# first in .text, so that such a process faults in a few pages of code
# instead of one per function spread over 3 MB.
#
# The names come from callgrind (valgrind --demangle=no) running the two
# processes of a built tree; they are mangled names, one a line: the cache
# hit's, sorted, then the reload's others, sorted.
# A name the code no longer has is ignored by the link; rerun this after
# changing what a hit or a reload runs, and commit the file.
#   bench/startup_order.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bin=$build/bin
for tool in valgrind callgrind_annotate clang-22; do
  command -v $tool >/dev/null || { echo "startup_order.sh: $tool is needed (Debian: valgrind, clang-22)" >&2; exit 1; }
done
[ -x "$bin/startup_c" ] && [ -x "$bin/startup_reload" ] ||
  { echo "startup_order.sh: build startup_c and startup_reload in $build first (ninja -C $build startup_c startup_reload)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'int f(int x) { return 2 * x + 1; }\n' >"$work/k.c"
clang-22 -c -fPIC -O2 "$work/k.c" -o "$work/k.o"
"$bin/hotlink" link --export f -o "$work/k.so" "$work/k.o" >/dev/null
export XDG_CACHE_HOME="$work/xdg" # a private image store: a hit as on a fresh machine
"$bin/startup_c" "$work/cache" key "$work/k.so" # the miss that stores it

names() { # the libhotlink.so functions one run of "$@" executed
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.out" "$@" >/dev/null 2>&1
  callgrind_annotate --inclusive=no --threshold=100 "$work/cg.out" |
    sed -n 's/^ *[0-9,]* ([ 0-9.%]*)  \(.*\) \[[^]]*libhotlink\.so[^]]*\]$/\1/p' | sed 's/^[^:]*://'
}
# The cache hit's functions first, then what only the reload adds: a
# process that hits the cache faults in the first part alone.
names "$bin/startup_c" "$work/cache" key "$work/k.so" | grep -v '^0x' | LC_ALL=C sort -u >"$work/hit"
names "$bin/startup_reload" "$work/k.so" | grep -v '^0x' | LC_ALL=C sort -u >"$work/reload"
{
  cat "$work/hit"
  LC_ALL=C comm -13 "$work/hit" "$work/reload"
} >"$root/capi/startup.order"
echo "capi/startup.order: $(wc -l <"$root/capi/startup.order") functions"
