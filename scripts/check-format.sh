#!/usr/bin/env bash
# Fails, naming the files, when a tracked C++ file is not formatted as the
# repository's .clang-format says (fix with: clang-format -i FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.hpp' '*.cpp' '*.cuh' '*.cu')
unformatted=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if ((${#unformatted[@]})); then
  echo "dwsr: ${#unformatted[@]} file(s) not formatted (clang-format -i FILE):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files formatted"
