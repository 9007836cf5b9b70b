#!/usr/bin/env bash
# Installs hotlink from the build tree into a private prefix, builds
# test/consumer (C++, find_package(hotlink)) and samples/c_api.c (C,
# pkg-config and find_package) against it alone, checks what they name
# and need, and runs them.
# usage: install_test.sh BUILD_DIR SOURCE_DIR CLANG
set -euo pipefail
build=$1 src=$2 clang=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hotlink-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -x "$work/prefix/bin/hotlink" && test -x "$work/prefix/bin/hotlink-ld"
# The installed CLI is a consumer of the installed libhotlink.so (found
# beside it: RUNPATH $ORIGIN/../lib), and links through its linker module.
[[ $(readelf -d "$work/prefix/bin/hotlink" | sed -n 's/.*(NEEDED).*\[\(libhotlink.*\)\]/\1/p') == libhotlink.so.* ]] ||
  { echo "install_test: the installed CLI does not need libhotlink.so" >&2; exit 1; }
env -u LD_LIBRARY_PATH "$work/prefix/bin/hotlink" --version | grep -q '^  lld:  .*LLD' ||
  { echo "install_test: the installed CLI cannot load its linker module" >&2; exit 1; }
libdir=$(dirname "$(find "$work/prefix" -name 'libhotlink.so' | head -1)")
test -f "$libdir/libhotlink-driver.so" && ls "$libdir"/libhotlink-linker-*.so "$libdir"/libhotlink-x86-decoder-*.so > /dev/null
# The package asks for nothing but hotlink's own files.
cmakedir=$(dirname "$(find "$work/prefix" -name hotlinkConfig.cmake | head -1)")
if grep -nE '^[^#]*find_(dependency|package)' "$cmakedir"/*.cmake ||
   grep -nE 'INTERFACE_LINK_LIBRARIES.*(LLVM|LLD|lld|clang|Boost)' "$cmakedir"/hotlinkTargets*.cmake; then
  echo "install_test: the CMake package asks for another package (above)" >&2; exit 1
fi
# No kept driver answers: every first link below loads the driver module.
export HOTLINK_DRIVER_REPLAYS="$work/replays"
cmake -S "$src/test/consumer" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
# Its compile lines name no include directory outside the prefix.
outside=$(ninja -C "$work/build" -t commands | grep -oE -- '-(I|isystem) ?[^ ]+' | sed -E 's/^-(I|isystem) ?//' \
          | grep -v "^$work/prefix/" || true)
[[ -z "$outside" ]] || { echo "install_test: include directories outside the prefix: $outside" >&2; exit 1; }
printf 'int f(int x) { return 2 * x + 1; }\n' | "$clang" -x c -fPIC -c - -o "$work/k.o"
# Its NEEDED entries are hotlink's library and the C/C++ runtime.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
foreign=$(needed "$work/build/consumer" | grep -vE '^(libhotlink\.so\.[0-9.]+|libstdc\+\+\.so\.6|libm\.so\.6|libgcc_s\.so\.1|libc\.so\.6)$' || true)
[[ -z "$foreign" ]] || { echo "install_test: the consumer needs $foreign" >&2; exit 1; }
out=$(HOTLINK_WORKER="$work/prefix/bin/hotlink-ld" "$work/build/consumer" "$work/k.o")
echo "$out"
[[ "$out" == "linked "*" bytes exporting f; f(20) = 41"$'\n'"read_object: x86_64-"*"linux-gnu exports f; "*" targets; demangle(_Z1fi) = f(int)" ]] ||
  { echo "install_test: the consumer printed something else" >&2; exit 1; }
"$work/build/rebuild_consumer"

# The C API: samples/c_api.c as C99 with -Wall -Werror, once through
# pkg-config and once through CMake's hotlink::c, each run (its own checks
# decide: link, load, call, hot reload, cache, a failing link's error).
pc_dir=$(dirname "$(find "$work/prefix" -name hotlink.pc | head -1)")
cc -std=c99 -Wall -Wextra -Werror "$src/samples/c_api.c" \
   $(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs hotlink) -o "$work/c_api_pc"
foreign=$(needed "$work/c_api_pc" | grep -vE '^(libhotlink\.so\.[0-9.]+|libc\.so\.6)$' || true)
[[ -z "$foreign" ]] || { echo "install_test: the C program needs $foreign" >&2; exit 1; }
cmake -S "$src/test/consumer_c" -B "$work/build_c" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DHOTLINK_SAMPLE="$src/samples/c_api.c" > "$work/configure_c.log"
cmake --build "$work/build_c" > "$work/build_c.log"
"$src/test/capi/c_api_sample.sh" "$work/c_api_pc" "$clang" > "$work/c_api_pc.log"
"$src/test/capi/c_api_sample.sh" "$work/build_c/c_api" "$clang" > "$work/c_api_cmake.log"
echo "C API: pkg-config and CMake builds of samples/c_api.c passed"

# The Python package from the prefix, as the README tells a user to run it.
PYTHONPATH="$work/prefix/lib/python3/dist-packages" /usr/bin/python3 -c \
  "import hotlink; r = hotlink.link(['$work/k.o'], exports=['f']); assert r.exports == ['f'], r.exports; print('Python: linked', len(r.artifact), 'bytes')"
