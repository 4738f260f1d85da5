#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds dwsr's CUDA parts, runs the `cuda`
# tests, times the CUDA operators against CuPy's formulations of the same
# attributes, replays CUDA runs' events through the real PyTorch and CuPy
# allocators against dwsr's models, replays GpuPack's job kinds on the GPU
# (its real mode), and writes DIR/report.md and DIR/report.json (with every
# step's raw output beside them).
#
#   bash scripts/gpu-validate.sh [--out DIR] [--build-dir DIR] [--no-build]
#                                [--shapes 256x256x256,512x512x1024] [--repeats 5]
#                                [--ops envelope,gradient_dips] [--pack-kinds 8]
#
# --ops times and compares only the operators named (default: every CUDA
# operator, and CuPy's formulations of those it has); the cuda tests always
# run whole.
# --pack-kinds N: job kinds GpuPack's real mode replays (dwsr train --env
# gpu_pack --real N, scripts/gpu/pack_replay.py; 0 skips it).
# --no-build uses the programs already in --build-dir (cuda_operators_test,
# cuda_table, dwsr). Python (PYTHON, default python3) needs numpy, and torch
# and cupy for their comparisons; a missing one is reported, not fatal. Each
# step's failure is recorded in the report and the others still run; the
# exit status is that of the cuda tests. DWSR_GPU_STEP_SECONDS (default 0:
# none) bounds each step's time, for a machine lent for a few minutes.
set -uo pipefail
cd "$(dirname "$0")/.."

out=gpu-report build=build-gpu no_build=0 shapes=256x256x256,512x512x1024 repeats=5 ops= pack_kinds=8
while (($#)); do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --no-build) no_build=1; shift ;;
    --shapes) shapes=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --pack-kinds) pack_kinds=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "gpu-validate: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done
python=${PYTHON:-python3}
limit=${DWSR_GPU_STEP_SECONDS:-0}
step() { timeout "$limit" "$@"; }
mkdir -p "$out"
log() { printf '== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-validate: no NVIDIA GPU here (nvidia-smi -L failed); nothing to validate" >&2
  exit 2
fi
nvidia-smi -L | tee "$out/device.txt"

if ((!no_build)); then
  log "build ($build)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDWSR_BUILD_PYTHON=OFF >"$out/build.txt" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" --target cuda_operators_test cuda_table dwsr_cli >>"$out/build.txt" 2>&1 ||
    { echo "gpu-validate: the build failed; see $out/build.txt" >&2; tail -20 "$out/build.txt" >&2; exit 1; }
fi
tests=$(find "$build" -name cuda_operators_test -type f | head -1)
table=$(find "$build" -name cuda_table -type f | head -1)
dwsr=$(find "$build" -path '*apps/dwsr/dwsr' -type f | head -1)
for p in "$tests" "$table" "$dwsr"; do
  [[ -x $p ]] || { echo "gpu-validate: a program is missing in $build (cuda_operators_test, cuda_table, dwsr)" >&2; exit 1; }
done

log "cuda tests"
step "$tests" --device-only --durations yes >"$out/tests.txt" 2>&1
tests_rc=$?
step "$tests" "~on a GPU*" >>"$out/tests.txt" 2>&1 || tests_rc=1
tail -5 "$out/tests.txt"

log "dwsr's CUDA operators ($shapes)"
step "$table" --shapes "$shapes" --repeats "$repeats" --out "$out" --traces envelope,gaussian,median,instantaneous_frequency \
  ${ops:+--ops "$ops"} || echo "gpu-validate: cuda_table failed" >&2

log "CuPy's formulations"
# Of the operators named, those with a CuPy formulation (all of them without --ops).
cupy_ops=$(PYTHONPATH=scripts/gpu "$python" -c 'import sys; from gpu_common import COMPARED_OPS as c
print(",".join(o for o in (sys.argv[1].split(",") if sys.argv[1] else c) if o in c))' "$ops")
if [[ -n $cupy_ops ]]; then
  step "$python" scripts/gpu/cupy_attributes.py --shapes "$shapes" --repeats "$repeats" --ops "$cupy_ops" \
    --out "$out/cupy.json" || echo "gpu-validate: cupy_attributes.py failed" >&2
fi

log "allocator models against PyTorch and CuPy"
shopt -s nullglob
traces=("$out"/trace_*.csv)
if ((${#traces[@]})); then
  step "$python" scripts/gpu/allocator_replay.py "${traces[@]}" --dwsr "$dwsr" --out "$out/allocators.json" ||
    echo "gpu-validate: allocator_replay.py failed" >&2
fi

log "the command-line tool on the device"
step "$python" scripts/gpu/cli_device_check.py --dwsr "$dwsr" --out "$out/cli.json" ||
  echo "gpu-validate: cli_device_check.py failed" >&2

log "GpuPack's real mode: job kinds replayed through PyTorch, read by NVML"
if ((pack_kinds > 0)); then
  step "$dwsr" train --env gpu_pack --real "$pack_kinds" --real-runner "$python scripts/gpu/pack_replay.py" --json \
    -o "$out/pack" >"$out/pack.json" 2>"$out/pack.txt" ||
    echo "gpu-validate: dwsr train --env gpu_pack --real failed; see $out/pack.txt" >&2
fi

log "report"
"$python" scripts/gpu/report.py --dwsr-ops "$out/dwsr_ops.json" --cupy "$out/cupy.json" \
  --allocators "$out/allocators.json" --cli "$out/cli.json" --pack "$out/pack.json" --pack-csv "$out/pack/real.csv" \
  --tests "$out/tests.txt" --out-dir "$out"
echo "gpu-validate: $out/report.md"
exit "$tests_rc"
