#!/usr/bin/env bash
# Runs every fuzzer for SECONDS from a corpus made from fixtures, two at a
# time (the machine has two cores); exits 1 if any found a crash, leaving
# the input that crashed and the fuzzer's log in ARTIFACTS.
#   usage: run.sh FUZZ_BIN_DIR HOTLINK_CLI SECONDS ARTIFACTS
# Leak detection is off: a crash inside LLVM that crash recovery turns
# into a refusal leaks what the crashed code allocated, by design
# (exports/recovery.h); the ASan test suite checks leaks on every other path.
set -uo pipefail
bin=$1 hotlink=$2 seconds=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$artifacts"
mkdir -p "$artifacts"
"$here/make_corpus.sh" "$artifacts/seeds" "$hotlink" || { echo "fuzz: cannot make the seed corpus" >&2; exit 1; }

# LLVM's own out-of-bounds reads, seen only through ASan's interceptors,
# are not hotlink's to fix here (asan.supp says why).
export ASAN_OPTIONS="suppressions=$here/asan.supp${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

run() {
  local f=$1
  mkdir -p "$artifacts/$f-corpus"
  "$bin/$f" "$artifacts/$f-corpus" "$artifacts/seeds/$f" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=4096 -detect_leaks=0 -artifact_prefix="$artifacts/$f-" -print_final_stats=1 \
      > "$artifacts/$f.log" 2>&1
}

status=0
for pair in "fuzz_objects fuzz_verify" "fuzz_def fuzz_writers"; do
  set -- $pair
  run "$1" & a=$!
  run "$2" & b=$!
  for f in "$1:$a" "$2:$b"; do
    name=${f%%:*}
    if wait "${f##*:}"; then
      runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$artifacts/$name.log" | grep -o '[0-9]*$')
      echo "fuzz: $name ran ${runs:-?} inputs in ${seconds}s, no crash"
    else
      status=1
      echo "fuzz: $name FOUND A CRASH: $(ls "$artifacts/$name-"crash-* "$artifacts/$name-"timeout-* 2>/dev/null | head -1)"
      grep -E 'ERROR|fuzz_|SUMMARY|#[0-9]+ 0x' "$artifacts/$name.log" | head -20
    fi
  done
done
exit $status
