#!/usr/bin/env bash
# `make gpu-check` (or, where make is absent, `bash scripts/gpu_check.sh`): everything the
# CUDA ladder needs checked and measured on a machine with an NVIDIA GPU, in one command
# that ends by one deadline (default 8 minutes) and leaves results whatever happens.
#
#   bash scripts/gpu_check.sh [--deadline SECONDS] [--out DIR] [--build DIR] [--only STEPS]
#   bash scripts/gpu_check.sh --dry-run        # CI: no GPU; checks the script itself
#
# Steps, most important first; each one's timeout is cut to what is left of the deadline,
# and a step with no time left is recorded as not run:
#   deps       only when .gpu-deps/ is here (`make gpu-deps`): unpack it under the build
#              folder, build googletest, Google Benchmark and {fmt} from source there;
#   configure  CMake (Ninja when ninja exists), Release, nvcc, sm_80 + sm_90;
#   build      cuda_tiling_test cuda_kernels_test cuda_backward_test bench_cuda cuda_block_mask;
#   tests      cuda_tiling_test, then cuda_kernels_test once per kernel family (c01 ... c11,
#              the device-free tests, and Modern/*: grouped kv heads, softcap, ALiBi and
#              sinks on every pattern kind), EACH IN ITS OWN PROCESS (--gtest_filter), so a
#              fault that poisons one CUDA context cannot hide the other families' results;
#              c09: decode against a KV cache and paged KV, c10: token-level selected,
#              c11: packed batches (cu_seqlens) in one launch),
#              accounting from --gtest_output=json: a skip is never a pass, and the only
#              skip allowed is the no-device test (tools/gpu_report.py, EXPECTED_SKIPS);
#   memcheck   compute-sanitizer memcheck on a small case of every kernel family, then
#              racecheck on one; a sanitizer that refuses the device ("Device not
#              supported") is a recorded skip of that step, not a failure;
#   bench      bench_cuda, one JSON line per case flushed as it ends (bench_cuda.jsonl),
#              so a benchmark killed at its timeout keeps every finished case;
#   torch      tools/torch_baseline.py: SDPA first (kept even if FlexAttention fails),
#              then FlexAttention on our window and BigBird masks, one JSON line per figure.
# After EVERY step, tools/gpu_report.py rewrites OUT/results.json and OUT/results.md from
# whatever is there. OUT holds at most 5 files (the device tool brings back 8): results.json,
# results.md, gpu_check.log (this script's own lines), raw.tar.gz (every step's log, the
# gtest JSON files, the benchmark lines) and env.txt.
#
# --dry-run (CI, after `make test`; no GPU needed): configures and builds exactly as on the
# GPU machine (reusing build/ when it is configured identically), then runs every parsing
# and reporting step on the recorded outputs in tests/cuda/fixtures/ — gtest JSON with the
# expected skip, an unexpected skip and a failure, a process that died, a compute-sanitizer
# refusal, a truncated benchmark JSON, PyTorch lines with a FlexAttention error — and a
# step killed at the deadline, then checks the results file against
# tests/cuda/fixtures/expected.json. With nvcc it also lists the GPU run's test steps and
# the tests of each family (cuda_kernels_test --gtest_list_tests, no device needed) and
# fails when a family of the binary has no step of its own. Exit status: 0 when everything
# matches.
#
# --only tests,memcheck,bench,torch (any of them): run just those after the build — e.g. a
# second call on a machine still warm, whose build folder is kept: `--only bench,torch`.
#
# Exit status of a real run: 0 when every step passed (skips of the sanitizer allowed).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

DRY=0
ONLY=tests,memcheck,bench,torch
DEADLINE_S=${GPU_CHECK_DEADLINE_S:-480}
BUILD=${GPU_BUILD:-build-gpu}
OUT=${OUT:-}
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) DRY=1 ;;
    --deadline) DEADLINE_S=$2; shift ;;
    --deadline=*) DEADLINE_S=${1#*=} ;;
    --out) OUT=$2; shift ;;
    --out=*) OUT=${1#*=} ;;
    --build) BUILD=$2; shift ;;
    --build=*) BUILD=${1#*=} ;;
    --only) ONLY=$2; shift ;;
    --only=*) ONLY=${1#*=} ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: invalid argument $1: expected --dry-run, --deadline S, --out DIR, --build DIR, --only STEPS" >&2; exit 2 ;;
  esac
  shift
done
case $DEADLINE_S in
  ''|*[!0-9]*) echo "gpu_check.sh: invalid --deadline = $DEADLINE_S: must be a whole number of seconds >= 60" >&2; exit 2 ;;
esac
DEADLINE_S=$((10#$DEADLINE_S))
for part in ${ONLY//,/ }; do
  case $part in tests|memcheck|bench|torch) ;;
    *) echo "gpu_check.sh: invalid --only = $ONLY: a comma-separated list of tests, memcheck, bench, torch" >&2; exit 2 ;;
  esac
done
wants() { [ $DRY -eq 1 ] || [[ ",$ONLY," == *",$1,"* ]]; }
if [ "$DEADLINE_S" -lt 60 ]; then
  echo "gpu_check.sh: invalid --deadline = $DEADLINE_S: must be a whole number of seconds >= 60" >&2
  exit 2
fi

T0=$(date +%s)
END=$((T0 + DEADLINE_S))
RESERVE=15  # seconds kept back for the last results write
NVCC=${GPU_CHECK_NVCC-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}  # GPU_CHECK_NVCC= : none
PY=$(command -v python3 || command -v python || true)
JOBS=$(nproc 2>/dev/null || echo 4)
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
FIX=$ROOT/tests/cuda/fixtures

# The main build tree is reused when it is configured as this script would configure it
# (CI: `make test` built it a minute ago); otherwise build-gpu (or --build) is used.
cache_get() { sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt" 2>/dev/null | head -1; }
same_config() {
  local d=$1
  [ -f "$d/CMakeCache.txt" ] || return 1
  [ "$(cache_get "$d" CMAKE_BUILD_TYPE)" = Release ] || return 1
  [ "$(cache_get "$d" SPARSEATTN_CUDA)" != OFF ] || return 1
  if [ -n "$NVCC" ]; then
    [ "$(readlink -f "$(cache_get "$d" CMAKE_CUDA_COMPILER)")" = "$(readlink -f "$NVCC")" ] || return 1
  fi
  [ -z "$(cache_get "$d" CMAKE_PREFIX_PATH)" ] || return 1
  [ "$(cache_get "$d" CMAKE_SOURCE_DIR)" -ef "$ROOT" ] 2>/dev/null || [ "$(cache_get "$d" CMAKE_HOME_DIRECTORY)" -ef "$ROOT" ] || return 1
}
if [ ! -d .gpu-deps ] && [ -z "${GPU_BUILD:-}" ] && same_config build; then BUILD=build; fi
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
if [ -z "$OUT" ]; then
  if [ $DRY -eq 1 ]; then OUT=$BUILD/gpu-check-dry-run; else OUT=$ROOT/gpu-results; fi
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$BUILD/gpu-check-work  # step logs, gtest JSON, bench lines: packed into OUT/raw.tar.gz
rm -rf "$WORK"
mkdir -p "$WORK"
rm -f "$OUT"/results.json "$OUT"/results.md "$OUT"/raw.tar.gz
LOG=$OUT/gpu_check.log
: >"$LOG"
MODE=gpu
[ $DRY -eq 1 ] && MODE=dry-run
CMD="bash scripts/gpu_check.sh$([ $DRY -eq 1 ] && echo ' --dry-run') --deadline $DEADLINE_S"
printf '{"command": "%s", "mode": "%s", "deadline_s": %d, "started": "%s", "git": "%s"}\n' \
  "$CMD" "$MODE" "$DEADLINE_S" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" \
  "$(git rev-parse --short HEAD 2>/dev/null) +$(git status --porcelain 2>/dev/null | wc -l) uncommitted" >"$WORK/run.json"
: >"$WORK/steps.jsonl"

say() { echo "gpu-check [$(($(date +%s) - T0))s/${DEADLINE_S}s] $*" | tee -a "$LOG"; }
left() { echo $((END - $(date +%s) - RESERVE)); }

# Results after every step: tools/gpu_report.py reads WORK, writes OUT/results.{json,md}.
report() {
  if [ -z "$PY" ]; then
    say "no python3: results.json not written (step records in raw.tar.gz/steps.jsonl)"
  else
    timeout 60 "$PY" "$ROOT/tools/gpu_report.py" write --out "$WORK" >>"$LOG" 2>&1
    cp -f "$WORK/results.json" "$WORK/results.md" "$OUT/" 2>/dev/null
  fi
  tar -czf "$OUT/raw.tar.gz.tmp" -C "$WORK" --exclude=results.json --exclude=results.md . 2>/dev/null &&
    mv -f "$OUT/raw.tar.gz.tmp" "$OUT/raw.tar.gz"
}

# step NAME KIND DEFAULT_LIMIT_S [json=FILE] -- CMD...
# Runs CMD with stdout+stderr into WORK/NAME.log under timeout min(DEFAULT_LIMIT_S, time
# left before the deadline), appends one JSON line to steps.jsonl, rewrites the results.
# A step whose cut limit is under MIN_STEP_S is not started (recorded as not run).
MIN_STEP_S=5
step() {
  local name=$1 kind=$2 limit=$3 json=""
  shift 3
  if [ "${1:-}" != "--" ]; then json=$1; shift; fi
  shift
  local avail
  avail=$(left)
  [ "$limit" -gt "$avail" ] && limit=$avail
  if [ "$limit" -lt "$MIN_STEP_S" ]; then
    say "$name: not run, the deadline is reached"
    printf '{"name": "%s", "kind": "%s", "not_run": true, "limit_s": %d, "note": "not run: %ds deadline reached"}\n' \
      "$name" "$kind" "$((limit < 0 ? 0 : limit))" "$DEADLINE_S" >>"$WORK/steps.jsonl"
    report
    return 125
  fi
  say "$name (limit ${limit}s): $*"
  local s=$SECONDS
  timeout --kill-after=5 "$limit" "$@" >>"$WORK/$name.log" 2>&1
  local rc=$?
  local secs=$((SECONDS - s)) timed_out=false
  # 124: timeout sent TERM; 137: it had to KILL. Either way the deadline cut the step.
  if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ $secs -ge "$limit" ]; }; then timed_out=true; fi
  printf '{"name": "%s", "kind": "%s", "rc": %d, "seconds": %d, "limit_s": %d, "timed_out": %s, "log": "%s.log", "json": "%s"}\n' \
    "$name" "$kind" "$rc" "$secs" "$limit" "$timed_out" "$name" "$json" >>"$WORK/steps.jsonl"
  say "$name: rc=$rc in ${secs}s$([ "$timed_out" = true ] && echo ' (killed at its limit)')"
  report
  return $rc
}

# ---------------------------------------------------------------- environment
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  mode: $MODE  deadline: ${DEADLINE_S}s  build: $BUILD"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | wc -l) uncommitted paths"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -2
  echo "nvcc: ${NVCC:-missing} $($NVCC --version 2>/dev/null | tail -1)"
  echo "cmake: $(cmake --version 2>/dev/null | head -1); generator: ${GEN[*]:-default}; cxx: $(c++ --version 2>/dev/null | head -1)"
  echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo missing)"
  echo "python: ${PY:-missing} $("${PY:-false}" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)"
  "${PY:-false}" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
  echo "cpus: $JOBS; .gpu-deps: $([ -d .gpu-deps ] && cat .gpu-deps/MANIFEST 2>/dev/null | head -1 || echo absent)"
} >"$WORK/env.txt" 2>&1
cp "$WORK/env.txt" "$OUT/env.txt"
tee -a "$LOG" <"$WORK/env.txt"
TARGETS=(cuda_tiling_test cuda_kernels_test cuda_backward_test bench_cuda cuda_block_mask)
if [ -z "$NVCC" ]; then
  if [ $DRY -eq 0 ]; then say "no nvcc: nothing to build"; report; exit 1; fi
  say "no nvcc: the dry run builds and checks the host-side targets only"
  TARGETS=(cuda_tiling_test)
fi

# ---------------------------------------------------------------- deps, configure, build
CMAKE_EXTRA=()
if [ -d .gpu-deps ]; then
  D=$BUILD/_deps
  build_deps() {
    set -e
    mkdir -p "$D"
    if [ ! -f "$D/unpacked" ] || [ .gpu-deps/deps.tar.gz -nt "$D/unpacked" ]; then
      rm -rf "$D/src" "$D/prefix" "$D/stub" "$D/installed"
      tar -xzf .gpu-deps/deps.tar.gz -C "$D"
      touch "$D/unpacked"
    fi
    local p
    for p in googletest benchmark fmt; do
      [ -f "$D/installed/.$p" ] && continue
      local opts=()
      case $p in
        googletest) opts=(-DBUILD_GMOCK=ON -DINSTALL_GTEST=ON -Dgtest_force_shared_crt=ON) ;;
        benchmark) opts=(-DBENCHMARK_ENABLE_TESTING=OFF -DBENCHMARK_ENABLE_GTEST_TESTS=OFF
                         -DBENCHMARK_ENABLE_WERROR=OFF -DBENCHMARK_INSTALL_DOCS=OFF -DBENCHMARK_ENABLE_INSTALL=ON) ;;
        fmt) opts=(-DFMT_DOC=OFF -DFMT_TEST=OFF -DFMT_INSTALL=ON) ;;
      esac
      cmake -S "$D/src/$p" -B "$D/build-$p" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$D/installed" -DCMAKE_INSTALL_LIBDIR=lib \
        -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "${opts[@]}"
      cmake --build "$D/build-$p" -j "$JOBS" --target install
      touch "$D/installed/.$p"
    done
  }
  step deps build 150 -- bash -c "$(declare -f build_deps); D='$D' JOBS='$JOBS' GEN=(${GEN[*]}); build_deps" ||
    { say "deps failed (see raw.tar.gz/deps.log)"; exit 1; }
  CMAKE_EXTRA=(-DCMAKE_PREFIX_PATH="$D/installed;$D/prefix;$D/stub"
               -DOPENSSL_INCLUDE_DIR="$D/stub/include"
               -DOPENSSL_CRYPTO_LIBRARY="$D/stub/libsparseattn_gpu_deps_lacks_openssl.so")
fi
if [ "$BUILD" = "$ROOT/build" ]; then
  say "reusing build/: configured as this script configures (Release, native, nvcc $NVCC)"
else
  # A tree configured with another generator cannot be reconfigured in place.
  if [ -f "$BUILD/CMakeCache.txt" ] && [ ${#GEN[@]} -gt 0 ] && [ "$(cache_get "$BUILD" CMAKE_GENERATOR)" != Ninja ]; then
    rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
  fi
  step configure build 120 -- cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
    ${NVCC:+-DCMAKE_CUDA_COMPILER="$NVCC"} -DSPARSEATTN_CUDA=ON "${CMAKE_EXTRA[@]}" || { say "configure failed (see raw.tar.gz/configure.log)"; exit 1; }
fi
step build build 420 -- cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" ||
  { say "build failed (see raw.tar.gz/build.log)"; exit 1; }
# The register table generated by the build (tools/cuda_resources.py), into the results.
cp -f "$BUILD/cuda_resources.md" "$WORK/" 2>/dev/null && report

# ---------------------------------------------------------------- tests, one family per process
FAMILIES=(c01 c02 c03 c04 c05 c06 c07 c08 c09 c10 c11)
DRY_FAIL=0
if [ $DRY -eq 1 ] && [ -x "$BUILD/cuda_kernels_test" ]; then
  # What the GPU run will run, from the binary itself: every family it instantiates (cNN/)
  # must have its own step, or its tests would run nowhere.
  LISTED=$("$BUILD/cuda_kernels_test" --gtest_list_tests 2>/dev/null |
    awk '/^[^ ]/ { suite = $1 } /^  / { split(suite, p, "/"); if (p[1] ~ /^c[0-9][0-9]$/) n[p[1]]++ }
         END { for (f in n) print f, n[f] }' | sort)
  say "dry run: the GPU run's test steps: tests_tiling tests_common tests_modern $(printf 'tests_%s ' "${FAMILIES[@]}")tests_backward"
  while read -r fam count; do
    [ -z "$fam" ] && continue
    if [[ " ${FAMILIES[*]} " == *" $fam "* ]]; then
      say "dry run: tests_$fam runs $count tests of cuda_kernels_test --gtest_filter=$fam/*"
    else
      say "dry run: family $fam ($count tests) has no step in FAMILIES"
      DRY_FAIL=1
    fi
  done <<<"$LISTED"
fi
if [ $DRY -eq 0 ] && wants tests; then
  step tests_tiling gtest 60 gtest_tiling.json -- "$BUILD/cuda_tiling_test" \
    --gtest_output="json:$WORK/gtest_tiling.json"
  step tests_common gtest 60 gtest_common.json -- "$BUILD/cuda_kernels_test" \
    --gtest_filter="-c0*/*:c1*/*:Modern/*" --gtest_output="json:$WORK/gtest_common.json"
  # Grouped kv heads, softcap, ALiBi and sinks on every pattern kind (c04 ... c08, split-K
  # included; contract §2.7-§2.9): its own process, after the plain families' smoke test.
  step tests_modern gtest 90 gtest_modern.json -- "$BUILD/cuda_kernels_test" \
    --gtest_filter="Modern/*" --gtest_output="json:$WORK/gtest_modern.json"
  for f in "${FAMILIES[@]}"; do
    step "tests_$f" gtest 90 "gtest_$f.json" -- "$BUILD/cuda_kernels_test" \
      --gtest_filter="$f/*" --gtest_output="json:$WORK/gtest_$f.json"
  done
  # The backward kernels (cb01) after every forward family: its own process, like them.
  step tests_backward gtest 90 gtest_backward.json -- "$BUILD/cuda_backward_test" \
    --gtest_output="json:$WORK/gtest_backward.json"
elif [ $DRY -eq 1 ]; then
  # The recorded outputs stand in for the processes; the accounting is the same code.
  step tests_tiling gtest 60 gtest_tiling.json -- "$BUILD/cuda_tiling_test" \
    --gtest_output="json:$WORK/gtest_tiling.json"   # host-only: really runs here
  for f in common c04 c05 c07; do
    step "tests_$f" gtest 60 "gtest_$f.json" -- cp "$FIX/gtest_$f.json" "$WORK/gtest_$f.json"
  done
  step tests_c06 gtest 60 gtest_c06.json -- bash -c "cat '$FIX/c06_died.log'; exit 134"
fi

# ---------------------------------------------------------------- memcheck
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
SMALL='c0*/CudaVsOracle.*/dense_B1_H2_Lq130_Lk130_D64_Dv64_tile64'
SMALL+=':c0*/CudaVsOracle.*/window_w7_d2_causal_B1_H1_Lq190_Lk250_D8_Dv8_tile16'
SMALL+=':c0*/CudaVsOracle.*/longformer_w30_d1_Gx0x5x150x299_B1_H2_Lq300_Lk300_D64_Dv64_tile64*'
SMALL+=':c0*/CudaVsOracle.*/bigbird_b16_r2_seed4_B3_H1_Lq200_Lk200_D64_Dv64_keypadding*'  # + _splitK
# Decode on page pools over many splits (c09), the selected gather with padding and repeats (c10).
SMALL+=':c09/CudaDecodeCache.*/window_6_1_d2_split3_paged8:c10/CudaSelected.*/padding_causal_counted'
# A packed batch with empty, one-token and keyless sequences, grouped heads and every modifier (c11).
SMALL+=':c11/CudaVarlen.*/window_3_2_g8_D32_Dv32_mods3'
# The modern path: every modifier, grouped heads, key padding, the split-K merge's sink.
SMALL+=':Modern/CudaModernKinds.*/bigbird_b16_r2_seed4_B3_H2_Lq192_Lk192_D32_Dv32_keypadding*_Hkv1_cap_alibi_sink*'
if [ $DRY -eq 1 ]; then
  step memcheck sanitizer 60 -- bash -c "cat '$FIX/sanitizer_refused.log'; exit 255"
elif ! wants memcheck; then
  :
elif [ -n "$SAN" ]; then
  step memcheck sanitizer 90 -- "$SAN" --tool memcheck --error-exitcode 9 \
    "$BUILD/cuda_kernels_test" --gtest_filter="$SMALL"
  if grep -qi "not supported" "$WORK/memcheck.log" 2>/dev/null; then
    say "racecheck: not started, compute-sanitizer refused this device in memcheck"
  else
    step racecheck sanitizer 45 -- "$SAN" --tool racecheck --error-exitcode 9 \
      "$BUILD/cuda_kernels_test" --gtest_filter='c07/CudaVsOracle.*/bigbird_b16_r2_seed4_B3_H1_Lq200_Lk200_D64_Dv64_keypadding*'
  fi
else
  step memcheck sanitizer 5 -- bash -c "echo compute-sanitizer: not found on this machine; exit 1"
fi

# ---------------------------------------------------------------- benchmarks
if [ $DRY -eq 1 ]; then
  step bench bench 60 -- bash -c "cp '$FIX/bench_cuda_truncated.json' '$WORK/bench_cuda.json';
                                  cp '$FIX/bench_cuda_truncated.jsonl' '$WORK/bench_cuda.jsonl'"
elif wants bench; then
  step bench bench 240 -- "$BUILD/bench_cuda" --jsonl="$WORK/bench_cuda.jsonl" \
    --benchmark_out="$WORK/bench_cuda.json" --benchmark_out_format=json
fi

# ---------------------------------------------------------------- PyTorch side by side
if [ $DRY -eq 1 ]; then
  step torch torch 60 -- cp "$FIX/torch.jsonl" "$WORK/torch.jsonl"
  # A step killed at the deadline: the dry run's deadline moves to 12 s from now, so this
  # step's 300 s are cut to what is left and the next one cannot start.
  END=$(($(date +%s) + 12 + RESERVE))
  step deadline_probe other 300 -- sleep 300
  step after_deadline other 300 -- true
elif [ -n "$PY" ] && wants torch; then
  step torch torch 180 -- env PYTHONUNBUFFERED=1 "$PY" tools/torch_baseline.py --build "$BUILD" \
    --out "$WORK/torch.jsonl" --tmp "$BUILD/torch-masks" --budget-s "$(( $(left) > 40 ? $(left) - 30 : 10 ))"
fi
rm -rf "$BUILD/torch-masks"
report

say "done in $(($(date +%s) - T0))s; results in $OUT"
sed -n '1,40p' "$OUT/results.md" 2>/dev/null
if [ $DRY -eq 1 ]; then
  "$PY" tools/gpu_report.py check --out "$WORK" --expect "$FIX/expected.json" | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  # The check can fail: the same results against an expectation they do not meet.
  sed 's/"healthy": false/"healthy": true/' "$FIX/expected.json" >"$WORK/expected-wrong.json"
  if "$PY" tools/gpu_report.py check --out "$WORK" --expect "$WORK/expected-wrong.json" >/dev/null; then
    say "dry run: the check passed an expectation it must refuse"
    rc=1
  fi
  [ "$DRY_FAIL" -ne 0 ] && rc=1
  say "dry run: $([ "$rc" -eq 0 ] && echo OK || echo FAILED) ($OUT/results.md)"
  exit "$rc"
fi
"$PY" tools/gpu_report.py status --out "$WORK"
