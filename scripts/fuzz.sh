#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ (clang, AddressSanitizer +
# UndefinedBehaviorSanitizer) in build-fuzz/ and runs each on a copy of its
# seed corpus (fuzz/corpus/<target>/ is never written to). Fails when any
# harness crashes; the crashing input is left in build-fuzz/fuzz-work/<target>/.
# See docs/fuzzing.md.
#
#   scripts/fuzz.sh                    every harness, a fixed number of runs each (the test command's step)
#   scripts/fuzz.sh --runs N           N runs each
#   scripts/fuzz.sh --long SECONDS     SECONDS each, continuing the corpus of earlier long runs
#   scripts/fuzz.sh ... TARGET...      only these harnesses (npy_header, segy_headers, ...)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=50000
long=""
targets=()
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --long) long="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'; expected --runs N, --long SECONDS or target names" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ((${#targets[@]} == 0)); then
  for src in fuzz/*_fuzz.cpp; do
    name=$(basename "$src" .cpp)
    targets+=("${name%_fuzz}")
  done
fi
for t in "${targets[@]}"; do
  if [[ ! -f "fuzz/${t}_fuzz.cpp" || ! -d "fuzz/corpus/$t" ]]; then
    echo "fuzz.sh: unknown target '$t'; expected a harness fuzz/${t}_fuzz.cpp and a corpus fuzz/corpus/$t/" >&2
    exit 2
  fi
done

build=build-fuzz
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DDWSR_FUZZ=ON -DDWSR_BUILD_TESTS=OFF -DDWSR_BUILD_APPS=OFF -DDWSR_BUILD_BENCHMARKS=OFF -DDWSR_ENABLE_CUDA=OFF \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/%/_fuzz}"

work="$build/fuzz-work"
failed=()
for t in "${targets[@]}"; do
  dir="$work/$t"
  # Short runs start from the seeds alone, with a fixed seed, so that CI runs
  # are reproducible; long runs keep what earlier long runs found.
  [[ -n "$long" ]] || rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/tmp"
  cp -n "fuzz/corpus/$t"/* "$dir/corpus/"
  max_len=4096
  [[ "$t" == segy_headers ]] && max_len=16384  # 3600 bytes of headers before the first trace
  flags=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len="$max_len" -timeout=10 -print_final_stats=1
         -artifact_prefix="$dir/")
  if [[ -n "$long" ]]; then
    # One child process at a time that restarts after a crash, so that one run
    # collects every crashing input it finds instead of stopping at the first.
    flags+=(-max_total_time="$long" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  else
    flags+=(-runs="$runs" -seed=1)
  fi
  start=$SECONDS
  # The harnesses that read files write them to TMPDIR: keep them beside the run.
  status=0
  TMPDIR="$dir/tmp" "$build/fuzz/${t}_fuzz" "${flags[@]}" "$dir/corpus" >"$dir/log" 2>&1 || status=$?
  crashes=$(find "$dir" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' -o -maxdepth 1 -name 'timeout-*' \
                 -o -maxdepth 1 -name 'oom-*' | wc -l)
  if ((status == 0 && crashes == 0)); then
    # A plain run prints its total; a forked (long) run, a status line per job.
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
    [[ -n "$execs" ]] || execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$dir/log" | tail -1)
    echo "fuzz: $t: ${execs:-?} executions in $((SECONDS - start)) s, corpus $(ls "$dir/corpus" | wc -l) inputs"
  else
    echo "fuzz: $t FAILED (log: $dir/log); the input that crashed it:" >&2
    ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* 2>/dev/null >&2 || true
    grep -E -m 20 "ERROR|runtime error|terminate called|what\(\)|#[0-9]+ 0x" "$dir/log" >&2 || true
    failed+=("$t")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} harness(es) crashed: ${failed[*]}; see docs/fuzzing.md to turn the input into a test" >&2
  exit 1
fi
