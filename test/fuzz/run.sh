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
# detect_leaks=0 for ASan as well as libFuzzer: ASan's own leak check at
# exit forks to stop the world, which fails with ENOMEM after a long run
# (its shadow memory) and the fuzzer is then killed with no report at
# all, which was counted as a crash in hotlink (CI, 2026-12-04).
export ASAN_OPTIONS="suppressions=$here/asan.supp:detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

# Where a finding is: the first stack frame of its report that is not the
# sanitizer's or libFuzzer's runtime, the allocator or libc. In Debian's
# libLLVM (its object readers on malformed input: reads past buffers,
# allocations sized by counts in the file) it is LLVM's, recorded in
# ARTIFACTS/llvm-findings and the fuzzer restarts for the time left;
# anywhere else (hotlink's code, or LLVM header code inlined into it) it
# fails the run.
in_llvm() {
  local frame
  frame=$(grep -E '^ *#[0-9]+ 0x' "$1" | grep -vE ' in (malloc|calloc|realloc|free|operator new|operator delete|__interceptor|___interceptor|__asan|__sanitizer|__lsan|__ubsan|fuzzer::|__pthread_kill|raise|abort|gsignal|__libc)|/libc\.so|/libstdc\+\+\.so|/fuzz_[a-z]+\+0x' | head -1)
  [[ $frame == *"/libLLVM.so"* ]]
}

run() {
  local f=$1 deadline=$((SECONDS + seconds)) left
  mkdir -p "$artifacts/$f-corpus"
  while (( (left = deadline - SECONDS) > 0 )); do
    "$bin/$f" "$artifacts/$f-corpus" "$artifacts/seeds/$f" -max_total_time="$left" -timeout=10 \
        -rss_limit_mb=4096 -malloc_limit_mb=2048 -detect_leaks=0 -artifact_prefix="$artifacts/$f-" \
        -print_final_stats=1 > "$artifacts/$f.log" 2>&1 && return 0
    # No sanitizer report and no libFuzzer verdict: the process was killed
    # from outside (the OOM killer); not a finding in anyone's code.
    if ! grep -qE '^==[0-9]+==ERROR|deadly signal|ERROR: libFuzzer' "$artifacts/$f.log"; then
      echo "fuzz: $f was killed without a report ($(tail -1 "$artifacts/$f.log")); restarting"
      continue
    fi
    in_llvm "$artifacts/$f.log" || return 1
    cat "$artifacts/$f.log" >> "$artifacts/llvm-findings"
    echo "fuzz: $f: a finding inside LLVM's readers (recorded in $artifacts/llvm-findings); restarting"
  done
}

status=0
for pair in "fuzz_objects fuzz_verify" "fuzz_def fuzz_writers fuzz_manifest" "fuzz_code_object fuzz_images fuzz_glob"; do
  jobs=()
  for name in $pair; do
    run "$name" & jobs+=("$name:$!")
  done
  for f in "${jobs[@]}"; do
    name=${f%%:*}
    if wait "${f##*:}"; then
      runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$artifacts/$name.log" | tail -1 | grep -o '[0-9]*$')
      echo "fuzz: $name ran ${runs:-?} inputs (last start) in ${seconds}s, nothing found in hotlink's code"
    else
      status=1
      echo "fuzz: $name FOUND A CRASH in hotlink's code: $(ls -t "$artifacts/$name-"* 2>/dev/null | grep -E 'crash-|timeout-|oom-|leak-' | head -1)"
      # Not LLVM's own "LLVM ERROR" lines (errors it reports and goes on),
      # which can fill the excerpt before the finding's.
      grep -E 'ERROR|fuzz_|SUMMARY|#[0-9]+ 0x' "$artifacts/$name.log" | grep -v '^LLVM ERROR' | head -20
    fi
  done
done
[[ -f $artifacts/llvm-findings ]] &&
  echo "fuzz: $(grep -c '^==[0-9]*==ERROR\|deadly signal\|ERROR: libFuzzer' "$artifacts/llvm-findings") finding(s) inside LLVM's readers, not failing the run: $artifacts/llvm-findings"
exit $status
