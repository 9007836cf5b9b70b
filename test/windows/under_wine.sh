#!/usr/bin/env bash
# Runs a Windows program of the Windows runtime's build under Wine, with a
# prefix of its own in PREFIX (made once, by `wineboot --init`, under a
# lock), and stops everything it started: the program is killed after
# SECONDS (and 10 s later with SIGKILL), and the prefix's wineserver with
# it. Exits with the program's status.
#   under_wine.sh WINE64 PREFIX SECONDS PROGRAM [ARGS...]
set -uo pipefail
wine=$1 prefix=$2 seconds=$3
shift 3
export WINEPREFIX=$prefix WINEDEBUG=-all
server=$(dirname "$wine")/wineserver
if [[ ! -e $prefix.ready ]]; then
  exec 9>"$prefix.lock"
  flock 9
  if [[ ! -e $prefix.ready ]]; then
    timeout -k 10 180 "$wine" wineboot --init >/dev/null 2>&1 && timeout -k 10 60 "$server" --wait &&
      touch "$prefix.ready" || { echo "under_wine.sh: wineboot --init failed in $prefix" >&2; exit 1; }
  fi
  exec 9>&-
fi
timeout -k 10 "$seconds" "$wine" "$@"
status=$?
"$server" -k 2>/dev/null
exit $status
