#!/usr/bin/env bash
# Instructions of one warm in-process link of the small kernel, counted by
# callgrind (repeatable whatever else the machine does): hotlink's own
# (planning, the files lld reads, collecting the image, releasing lld's
# arenas) and lld's (lld::lldMain, which runs on the calling thread), each
# per link over 20 links, with the runtime environment and without it
# (bare).
#   usage: bench/instructions.sh [BUILD_DIR]   (prints one markdown table)
set -euo pipefail
bin=${1:-build}/bin/link_instructions
count() { # count TOGGLE N [bare]
  HOTLINK_LLD_SPIN_US=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    --toggle-collect="$1" "$bin" "$2" ${3:-} 2>&1 | awk '/Collected/ {print $4}'
}
per_link() { # per_link [bare]: "hotlink lld" (the calling thread counts both)
  local c l0 l1
  c=$(count measured_links 20 "${1:-}")
  l0=$(count 'lld::lldMain*' 0 "${1:-}")
  l1=$(count 'lld::lldMain*' 20 "${1:-}")
  local lld=$(((l1 - l0) / 20))
  echo "$((c / 20 - lld)) $lld"
}
read -r rc rl < <(per_link)
read -r bc bl < <(per_link bare)
echo "| link | hotlink around lld | lld (lld::lldMain) | total |"
echo "|---|---|---|---|"
printf '| small kernel, runtime environment | %d | %d | %d |\n' "$rc" "$rl" $((rc + rl))
printf '| small kernel, bare (`--no-default-libs`) | %d | %d | %d |\n' "$bc" "$bl" $((bc + bl))
