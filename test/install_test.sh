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
test -f "$(dirname "$(find "$work/prefix" -name 'libhotlink.so' | head -1)")/libhotlink-driver.so"
# No kept driver answers: every first link below loads the driver module.
export HOTLINK_DRIVER_REPLAYS="$work/replays"
cmake -S "$src/test/consumer" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
printf 'int f(int x) { return x + 1; }\n' | "$clang" -x c -fPIC -c - -o "$work/k.o"
out=$(HOTLINK_WORKER="$work/prefix/bin/hotlink-ld" "$work/build/consumer" "$work/k.o")
echo "$out"
[[ "$out" == "linked "*" bytes exporting f" ]]

# The C API: samples/c_api.c as C99 with -Wall -Werror, once through
# pkg-config and once through CMake's hotlink::c, each run (its own checks
# decide: link, load, call, hot reload, cache, a failing link's error).
pc_dir=$(dirname "$(find "$work/prefix" -name hotlink.pc | head -1)")
cc -std=c99 -Wall -Wextra -Werror "$src/samples/c_api.c" \
   $(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs hotlink) -o "$work/c_api_pc"
cmake -S "$src/test/consumer_c" -B "$work/build_c" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DHOTLINK_SAMPLE="$src/samples/c_api.c" > "$work/configure_c.log"
cmake --build "$work/build_c" > "$work/build_c.log"
"$src/test/c_api_sample.sh" "$work/c_api_pc" "$clang" > "$work/c_api_pc.log"
"$src/test/c_api_sample.sh" "$work/build_c/c_api" "$clang" > "$work/c_api_cmake.log"
echo "C API: pkg-config and CMake builds of samples/c_api.c passed"

# The Python package from the prefix, as the README tells a user to run it.
PYTHONPATH="$work/prefix/lib/python3/dist-packages" /usr/bin/python3 -c \
  "import hotlink; r = hotlink.link(['$work/k.o'], exports=['f']); assert r.exports == ['f'], r.exports; print('Python: linked', len(r.artifact), 'bytes')"
