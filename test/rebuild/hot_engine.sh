#!/bin/sh
# samples/hot_engine as its README section runs it: the engine runs, its
# kernel is edited (a temporary renamed over the file, as editors save),
# the next frames run the new version with the ball's state intact; a
# syntax error keeps the running version and names the line; the fix
# recovers.
#   usage: hot_engine.sh HOT_ENGINE CLANG INCLUDE_DIR KERNEL.c
set -eu
engine=$1 clang=$2 include=$3 kernel=$4
dir=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; rm -rf "$dir"' EXIT
cp "$kernel" "$dir/kernel.c"
printf '[{"directory": "%s", "command": "%s -I%s -O1 -fPIC -o kernel.o -c %s/kernel.c", "file": "%s/kernel.c"}]\n' \
  "$dir" "$clang" "$include" "$dir" "$dir" >"$dir/compile_commands.json"
"$engine" "$dir/compile_commands.json" "$dir/kernel.c" --frames 2400 --frame-ms 25 >"$dir/out" 2>&1 &
pid=$!

# Waits (60 s at most) for a line matching $1 in the engine's output.
wait_for() {
  i=0
  until grep -q "$1" "$dir/out"; do
    i=$((i + 1))
    if [ $i -gt 1200 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "never saw '$1'; the engine printed:" >&2
      cat "$dir/out" >&2
      exit 1
    fi
    sleep 0.05
  done
}
save() { # save FROM TO: replaces FROM with TO in kernel.c, as an editor saves
  sed "s/$1/$2/" "$dir/kernel.c" >"$dir/.kernel.c.swp"
  mv "$dir/.kernel.c.swp" "$dir/kernel.c"
}

wait_for '^frame 10 '
save '#define VERSION 1' '#define VERSION 2'
wait_for 'version 2 (v2)'
# The state survived: the kernel's own frame count equals the engine's.
grep 'version 2 (v2)' "$dir/out" | head -1 | awk '{ if ($2 != $5) { print "state lost: " $0; exit 1 } }'
save 'int kernel_version(void) { return VERSION; }' 'int kernel_version(void) { return VERSION }'
wait_for 'kept the running version:.*kernel.c:[0-9]*:'
save 'return VERSION }' 'return VERSION; }'
save '#define VERSION 2' '#define VERSION 3'
wait_for 'version 3 (v3)'
grep 'version 3 (v3)' "$dir/out" | head -1 | awk '{ if ($2 != $5) { print "state lost: " $0; exit 1 } }'
echo "hot_engine: edits reached the running engine; the state survived"
