#!/usr/bin/env bash
# Start-up under Wine (issue 51): a fresh process that gets a cached
# pipeline through libhotlink.dll and calls it, against a C program that
# LoadLibrary's the same DLL and calls it; RUNS of each, alternating, in
# one Wine prefix whose wineserver stays up (as on a Windows machine the
# system is up). Prints the medians of each one's CPU time and wall time
# from process creation, and their ratios.
#   startup_under_wine.sh WINDOWS_BUILD_DIR [RUNS]
set -euo pipefail
tree=$(cd "$1" && pwd) runs=${2:-30}
wine=/usr/lib/wine/wine64
export WINEPREFIX=$tree/wine-prefix WINEDEBUG=-all
[[ -e $WINEPREFIX.ready ]] || timeout -k 10 180 "$wine" wineboot --init > /dev/null 2>&1
work=$(mktemp -d)
trap '"$(dirname "$wine")/wineserver" -k 2>/dev/null; rm -rf "$work"' EXIT
"$(dirname "$wine")/wineserver" -p 60 # persistent while the runs last
dll=Z:$tree/test/windows/fixtures/reload_a.dll
exe=$tree/bin/startup.exe
timeout 60 "$wine" "$exe" hotlink "Z:$work/cache" pipeline "$dll" > /dev/null # the miss that fills it
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for ((i = 0; i < runs; ++i)); do
  timeout 60 "$wine" "$exe" plain "$dll" >> "$work/plain"
  timeout 60 "$wine" "$exe" hotlink "Z:$work/cache" pipeline "$dll" >> "$work/hotlink"
done
for k in plain hotlink; do
  eval "${k}_cpu=$(awk '{print $2}' "$work/$k" | median) ${k}_wall=$(awk '{print $4}' "$work/$k" | median)"
done
printf '%-40s %10s %10s\n' "" "CPU (us)" "wall (us)"
printf '%-40s %10s %10s\n' "LoadLibrary + call (C)" "$plain_cpu" "$plain_wall"
printf '%-40s %10s %10s\n' "libhotlink.dll: cache hit + load + call" "$hotlink_cpu" "$hotlink_wall"
awk -v a="$hotlink_cpu" -v b="$plain_cpu" -v c="$hotlink_wall" -v d="$plain_wall" -v n="$runs" \
  'BEGIN {printf "ratio: %.2fx CPU, %.2fx wall (medians of %d runs each)\n", a / b, c / d, n}'
