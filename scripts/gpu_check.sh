#!/usr/bin/env bash
# `make gpu-check`: everything the CUDA ladder needs checked and measured on a machine
# with an NVIDIA GPU, in one command, in under 8 minutes:
#   1. build the CUDA targets (sm_80 + sm_90 + PTX), Release;
#   2. run the host-side tiling tests and every CUDA kernel test against the float64
#      oracle — and fail if any test SKIPPED, since on a GPU machine a skip means the
#      device was not seen;
#   3. compute-sanitizer memcheck on a small case of each kernel (racecheck on one);
#   4. bench_cuda (validated first, CUDA events, manual time) -> bench_cuda.json;
#   5. tools/torch_baseline.py: SDPA and FlexAttention on the same shapes, and the
#      side-by-side results.md + results.json.
# Results go to $OUT (the device tool's folder) or ./gpu-results. Exit status: non-zero
# if any step failed; every step still runs so one failure does not hide the others.
#
# Assumes nvcc, PyTorch and compute-sanitizer on the machine and no network. If CMake
# cannot find this project's C++ dependencies there, it unpacks the Debian packages that
# scripts/gpu_deps.sh downloaded into .gpu-deps/ (carry that folder along).
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$PWD/gpu-results}
BUILD=${GPU_BUILD:-build-gpu}
JOBS=$(nproc 2>/dev/null || echo 4)
mkdir -p "$OUT"
LOG="$OUT/gpu_check.log"
STEPS="$OUT/steps.txt"
: >"$LOG"
: >"$STEPS"
t0=$(date +%s)
failed=0

say() { echo "gpu-check [$(($(date +%s) - t0))s] $*" | tee -a "$LOG"; }
# step NAME TIMEOUT_S LOGFILE CMD...: runs CMD under a timeout, appends its output to
# LOGFILE, records "NAME rc seconds" in steps.txt.
step() {
  local name=$1 limit=$2 file=$3
  shift 3
  local s=$(date +%s)
  say "$name: $*"
  timeout --kill-after=10 "$limit" "$@" >>"$file" 2>&1
  local rc=$?
  echo "$name rc=$rc seconds=$(($(date +%s) - s))" | tee -a "$STEPS" "$LOG"
  [ $rc -eq 0 ] || failed=1
  return $rc
}

NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | wc -l) uncommitted paths"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
  echo "nvcc: ${NVCC:-missing} $($NVCC --version 2>/dev/null | tail -1)"
  echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo missing)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "cpus: $JOBS"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt" | tee -a "$LOG"
[ -n "$NVCC" ] || { say "no nvcc: nothing to build"; exit 1; }

# 1. Configure (falling back to the carried Debian packages) and build.
configure() {
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
    -DSPARSEATTN_NATIVE=ON "$@" >>"$LOG" 2>&1
}
if ! configure; then
  if ls .gpu-deps/*.deb >/dev/null 2>&1; then
    say "configure failed; unpacking .gpu-deps/*.deb into /tmp/sparseattn-deps"
    for f in .gpu-deps/*.deb; do dpkg -x "$f" /tmp/sparseattn-deps; done
    D=/tmp/sparseattn-deps/usr
    export CPATH="$D/include${CPATH:+:$CPATH}"
    export LIBRARY_PATH="$D/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export LD_LIBRARY_PATH="$D/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    rm -rf "$BUILD"
    configure -DCMAKE_PREFIX_PATH="$D;$D/lib/x86_64-linux-gnu/cmake;$D/share" || { say "configure failed (see gpu_check.log)"; exit 1; }
  else
    say "configure failed and no .gpu-deps/ to fall back on (run scripts/gpu_deps.sh where apt works)"
    exit 1
  fi
fi
step build 400 "$LOG" cmake --build "$BUILD" -j "$JOBS" --target \
  cuda_tiling_test cuda_kernels_test bench_cuda cuda_block_mask || { say "build failed"; exit 1; }
# The CLI only serves the window-mask check of step 5; its failure must not stop the rest.
step build_cli 200 "$LOG" cmake --build "$BUILD" -j "$JOBS" --target sparseattn

# 2. Tests. On a GPU machine nothing may skip (a skip would mean the device was not seen).
TESTS="$OUT/tests.log"
step cuda_tiling_test 60 "$TESTS" "$BUILD/cuda_tiling_test"
step cuda_kernels_test 150 "$TESTS" "$BUILD/cuda_kernels_test"
# The one skip allowed: CudaNoDevice, which runs only where there is no device.
skips=$(grep '^\[  SKIPPED \] ' "$TESTS" | grep -v CudaNoDevice | sed 's/ ([0-9]* ms)$//' | sort -u | wc -l)
echo "no_skips rc=$([ "$skips" -eq 0 ] && echo 0 || echo 1) skipped=$skips" | tee -a "$STEPS" "$LOG"
[ "$skips" -eq 0 ] || failed=1

# 3. compute-sanitizer on small cases that together run every kernel.
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
SMALL='Grid/CudaVsOracle.*/dense_B1_H2_Lq130_Lk130_D64_Dv64_tile64'
SMALL+=':Grid/CudaVsOracle.*/window_w7_d2_causal_B1_H1_Lq190_Lk250_D8_Dv8_tile16'
SMALL+=':Grid/CudaVsOracle.*/longformer_w30_d1_Gx0x5x150x299_B1_H2_Lq300_Lk300_D64_Dv64_tile64'
SMALL+=':Grid/CudaVsOracle.*/bigbird_b16_r2_seed4_B3_H1_Lq200_Lk200_D64_Dv64_keypadding'
SMALL+=':Grid/CudaVsOracle.*/perhead__window_w5_d1__dense_causal__bigbird_b32_r1_seed7_B1_H3_Lq150_Lk150_D8_Dv8_tile64'
if [ -n "$SAN" ]; then
  step memcheck 150 "$OUT/sanitizer.log" "$SAN" --tool memcheck --error-exitcode 9 \
    "$BUILD/cuda_kernels_test" --gtest_filter="$SMALL"
  step racecheck 90 "$OUT/sanitizer.log" "$SAN" --tool racecheck --error-exitcode 9 \
    "$BUILD/cuda_kernels_test" --gtest_filter='Grid/CudaVsOracle.*/bigbird_b16_r2_seed4_B3_H1_Lq200_Lk200_D64_Dv64_keypadding'
else
  echo "memcheck rc=1 (compute-sanitizer not found)" | tee -a "$STEPS" "$LOG"
  failed=1
fi

# 4. GPU benchmarks.
step bench_cuda 200 "$LOG" "$BUILD/bench_cuda" --benchmark_out="$OUT/bench_cuda.json" \
  --benchmark_out_format=json

# 5. PyTorch baselines on the same shapes, and the side-by-side results file.
step torch_baseline 170 "$LOG" env PYTHONUNBUFFERED=1 python3 tools/torch_baseline.py \
  --build "$BUILD" --ours "$OUT/bench_cuda.json" --out "$OUT" --budget-s 100
[ -f "$OUT/results.md" ] || python3 tools/torch_baseline.py --skip-torch --ours "$OUT/bench_cuda.json" --out "$OUT" >>"$LOG" 2>&1

say "done in $(($(date +%s) - t0))s; results in $OUT (results.md, results.json, bench_cuda.json, logs)"
cat "$STEPS"
[ -f "$OUT/results.md" ] && sed -n '1,22p' "$OUT/results.md"
exit $failed
