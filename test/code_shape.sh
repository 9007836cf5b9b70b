#!/usr/bin/env bash
# The shape of the library's own code (not tests, bench or samples): fails
# on a file over 700 lines or a function over 100 lines, longest first,
# unless the file or function is an exception listed below with its
# reason. Needs universal-ctags (Debian: universal-ctags) for function
# extents. Run by the test suite (code.shape).
#   usage: test/code_shape.sh [MAX_FILE_LINES] [MAX_FUNCTION_LINES]
set -euo pipefail
cd "$(dirname "$0")/.."
max_file=${1:-700}
max_fn=${2:-100}
# Exceptions, one per line: "PATH" for a file, "PATH:FUNCTION" for a
# function, then " # why". None today.
exceptions=$(cat <<'LIST'
LIST
)
excepted() { grep -qxF "$1" <<<"$(sed 's/ *#.*//' <<<"$exceptions")"; }

if ! command -v ctags > /dev/null || ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "code_shape: needs universal-ctags (apt-get install universal-ctags)" >&2
  exit 2
fi
files=$(git ls-files '*.cpp' '*.h' | grep -v '^test/\|^bench/\|^samples/')
failed=0
echo "files over $max_file lines:"
while read -r n f; do
  excepted "$f" && { echo "  $n $f (listed exception)"; continue; }
  echo "  $n $f"
  failed=1
done < <(wc -l $files | awk -v n="$max_file" '$2 != "total" && $1 > n { print $1, $2 }' | sort -rn)
echo "functions over $max_fn lines:"
while read -r n at name; do
  excepted "${at%%:*}:$name" && { echo "  $n $at $name (listed exception)"; continue; }
  echo "  $n $at $name"
  failed=1
done < <(ctags -x --c++-kinds=f --fields=+ne --_xformat='%{line} %{end} %F %N' $files 2>/dev/null |
           awk -v n="$max_fn" '{ len = $2 - $1 + 1; if (len > n) print len, $3 ":" $1, $4 }' | sort -rn)
if ((failed)); then
  echo "code_shape: split what is listed (a long function is a pipeline waiting to be named), or list it as an exception with its reason" >&2
  exit 1
fi
echo "code_shape: every file and function within bounds"
