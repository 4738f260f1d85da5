#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite:
# the format check, every test in Release (with the packaging and header
# checks), the tests of buffers and parsers under AddressSanitizer +
# UndefinedBehaviorSanitizer, the fuzz harnesses for a fixed number of runs,
# the parallel tests under ThreadSanitizer, and the Python package (pytest and
# the notebooks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)

echo "== Format"
bash scripts/check-format.sh

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: the tests of buffers and parsers (scripts/asan.sh)"
bash scripts/asan.sh

echo "== Fuzz harnesses, a fixed number of runs each (scripts/fuzz.sh)"
bash scripts/fuzz.sh

echo "== ThreadSanitizer: the parallel tests (scripts/tsan.sh)"
bash scripts/tsan.sh

echo "== Python package: pip install .[test] into .venv, pytest, the notebooks (scripts/python-tests.sh)"
bash scripts/python-tests.sh
