#!/usr/bin/env bash
# Installs hotlink from the build tree into a private prefix, builds
# test/consumer against it with find_package(hotlink), and runs it.
# usage: install_test.sh BUILD_DIR SOURCE_DIR CLANG
set -euo pipefail
build=$1 src=$2 clang=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hotlink-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -x "$work/prefix/bin/hotlink" && test -x "$work/prefix/bin/hotlink-ld"
cmake -S "$src/test/consumer" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
printf 'int f(int x) { return x + 1; }\n' | "$clang" -x c -fPIC -c - -o "$work/k.o"
out=$(HOTLINK_WORKER="$work/prefix/bin/hotlink-ld" "$work/build/consumer" "$work/k.o")
echo "$out"
[[ "$out" == "linked "*" bytes exporting f" ]]
