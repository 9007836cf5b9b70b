#!/usr/bin/env bash
# The shape of the library's own code (not tests, bench or samples): files
# over 700 lines and functions over 100 lines, longest first. Needs
# universal-ctags (Debian: universal-ctags) for function extents.
#   usage: test/code_shape.sh [MAX_FILE_LINES] [MAX_FUNCTION_LINES]
set -euo pipefail
cd "$(dirname "$0")/.."
max_file=${1:-700}
max_fn=${2:-100}
files=$(git ls-files '*.cpp' '*.h' | grep -v '^test/\|^bench/\|^samples/')
echo "files over $max_file lines:"
wc -l $files | awk -v n="$max_file" '$2 != "total" && $1 > n { print "  " $1, $2 }' | sort -rn
echo "functions over $max_fn lines:"
ctags -x --c++-kinds=f --fields=+ne --_xformat='%{line} %{end} %F %N' $files 2>/dev/null |
  awk -v n="$max_fn" '{ len = $2 - $1 + 1; if (len > n) print "  " len, $3 ":" $1, $4 }' | sort -rn
