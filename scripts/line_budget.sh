#!/usr/bin/env bash
# The line budget: the library's lines of code, folder by folder, beside the
# lab's (the experiment drivers, the benchmarks, the scripts and the tests).
# Every line counts, comments and blank lines too (wc -l). The library is its
# C++ (.h, .cpp); the lab is its C++ and its shell and Python (.sh, .py).
# Prints a Markdown table, the one the README quotes; with --check FILE,
# says whether FILE holds that table as it is today (the CTest test
# readme_line_budget runs it on README.md) and exits 1 when it does not.
#
#   scripts/line_budget.sh
#   scripts/line_budget.sh --check README.md
set -euo pipefail
cd "$(dirname "$0")/.."

check=""
if [ "${1:-}" = "--check" ]; then
  [ $# -eq 2 ] || { echo "usage: $0 [--check FILE]" >&2; exit 2; }
  check=$(realpath "$2")
fi

library=(core autograd data layers optim dist models train rmsgrad.h)
lab=(experiments bench scripts tests)

# files PATH EXT...: the files under PATH (a folder or one file) ending in EXT, one per line.
files() {
  local path=$1; shift
  local names=()
  for ext in "$@"; do names+=(-o -name "*.$ext"); done
  find "$path" -type f \( -false "${names[@]}" \) | sort
}

# count PATH EXT...: "FILES LINES" of those files.
count() {
  local list n lines
  list=$(files "$@")
  if [ -z "$list" ]; then echo "0 0"; return; fi
  n=$(printf '%s\n' "$list" | wc -l)
  lines=$(printf '%s\n' "$list" | tr '\n' '\0' | xargs -0 cat | wc -l)
  echo "$n $lines"
}

lib_rows=() lab_rows=()
lib_files=0 lib_lines=0 lab_files=0 lab_lines=0
for path in "${library[@]}"; do
  read -r n lines < <(count "$path" h cpp)
  label=$path; [ -d "$path" ] && label=$path/
  lib_rows+=("| \`$label\` | $n | $lines")
  lib_files=$((lib_files + n)) lib_lines=$((lib_lines + lines))
done
for path in "${lab[@]}"; do
  read -r n lines < <(count "$path" h cpp sh py)
  lab_rows+=("| \`$path/\` | $n | $lines |")
  lab_files=$((lab_files + n)) lab_lines=$((lab_lines + lines))
done

table() {
  echo "| library (.h, .cpp) | files | lines | lab (.h, .cpp, .sh, .py) | files | lines |"
  echo "|---|---|---|---|---|---|"
  for i in "${!lib_rows[@]}"; do
    echo "${lib_rows[$i]} ${lab_rows[$i]:-| | | |}"
  done
  echo "| **total** | $lib_files | $lib_lines | **total** | $lab_files | $lab_lines |"
}

if [ -z "$check" ]; then
  table
  exit 0
fi
# The table in the file: from its header line to its total line.
quoted=$(awk '/^\| library \(\.h, \.cpp\) \|/ { on = 1 } on { print } on && /^\| \*\*total\*\*/ { exit }' "$check")
if [ "$quoted" = "$(table)" ]; then
  echo "line budget: $check holds today's table ($lib_lines library lines, $lab_lines lab lines)"
else
  echo "line budget: $check's table differs from the tree's; replace it with scripts/line_budget.sh's:"
  diff <(echo "$quoted") <(table) || true
  exit 1
fi
