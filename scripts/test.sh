#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite:
# the format check, once in Release (with the packaging and header checks),
# once under AddressSanitizer + UndefinedBehaviorSanitizer, then the fuzz
# harnesses for a fixed number of runs, the parallel tests under
# ThreadSanitizer, and the Python package (pytest and the notebooks).
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

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
      -DDWSR_SANITIZE=address,undefined -DDWSR_BUILD_BENCHMARKS=OFF -DDWSR_ENABLE_CUDA=OFF >/dev/null
cmake --build build-sanitize -j "$jobs"
(cd build-sanitize && ctest --output-on-failure -j "$jobs")

echo "== Fuzz harnesses, a fixed number of runs each (scripts/fuzz.sh)"
bash scripts/fuzz.sh

echo "== ThreadSanitizer: the parallel tests (scripts/tsan.sh)"
bash scripts/tsan.sh

echo "== Python package: pip install .[test] into .venv, pytest, the notebooks (scripts/python-tests.sh)"
bash scripts/python-tests.sh
