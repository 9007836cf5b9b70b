#!/usr/bin/env bash
# Runs a cache sample twice on a fresh cache directory, as two processes:
# the first must say "cache miss", the second "cache hit", and both must
# exit 0 (each checks its own results).
# usage: run_twice.sh CACHE_DIR COMMAND...
set -euo pipefail
dir=$1
shift
rm -rf "$dir"
"$@" "$dir" | tee "$dir.first"
grep -q 'cache miss' "$dir.first"
"$@" "$dir" | tee "$dir.second"
grep -q 'cache hit' "$dir.second"
