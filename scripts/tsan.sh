#!/usr/bin/env bash
# Builds, under ThreadSanitizer (build-tsan/), the tests that run the event bus,
# operators, chunked graphs and window reads on several threads at once, and
# runs them; any report fails the step. TBB's own internals are suppressed
# (scripts/tsan-suppressions.txt says why), dwsr's code never. See docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

# memory_test: the event bus and contexts fed from many threads;
# graph_test: every operator and random graphs, chunked over 2-3 workers x 1-3 threads;
# io_test: windows of .npy, SEG-Y and synthetic cubes read by several threads at once;
# env_test: vector_env batches stepped by TBB tasks;
# trace_fft_test: the fused Hilbert kernel's thread groups on the host, whose
# shared buffers a missing barrier would race on.
tests=(memory_test graph_test io_test env_test trace_fft_test)

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DDWSR_SANITIZE=thread -DDWSR_BUILD_BENCHMARKS=OFF -DDWSR_BUILD_APPS=OFF -DDWSR_ENABLE_CUDA=OFF \
  "${launcher[@]}" >/dev/null
cmake --build build-tsan -j "$(nproc)" --target "${tests[@]}"

export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan-suppressions.txt halt_on_error=1 exitcode=66"
pattern=$(IFS="|"; echo "^(${tests[*]}):")
(cd build-tsan && ctest --output-on-failure -j "$(nproc)" -R "$pattern")
