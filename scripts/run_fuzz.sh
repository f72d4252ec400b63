#!/usr/bin/env bash
# `make fuzz`: runs each libFuzzer target of tests/fuzz/ for SECONDS, then prints one line
# per target (runs, executions per second, new corpus entries, crash or not) and exits
# non-zero when any target found a crash. Every target runs even after another fails.
#
# Usage: scripts/run_fuzz.sh BUILD_DIR SECONDS [TARGET...]   (default: all three)
#
# Corpus: the committed seeds (tests/fuzz/corpus/<target>/, read-only here) plus what the
# runs found worth keeping (BUILD_DIR/corpus/<target>/, kept between runs of one machine).
# A crash is written to BUILD_DIR/artifacts/<target>/crash-<sha1> (or oom-, timeout-);
# replay it with `BUILD_DIR/<target> <file>`; docs/robustness.md says how it becomes a
# regression test.
#
# Limits (contract §5, memory bounded by the sizes, never by a parameter): a single
# allocation over MALLOC_MB, a process over 2048 MB, or one input running over 10 s is a
# finding, as is any sanitizer report or broken assertion.
set -uo pipefail
build=$1
seconds=$2
shift 2
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_npy fuzz_pattern fuzz_check)
root=$(cd "$(dirname "$0")/.." && pwd)
MALLOC_MB=${MALLOC_MB:-256}

# A finding aborts (libFuzzer then saves the input); leaks are findings too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:print_stacktrace=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

failed=()
summary=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  log="$build/$t.log"
  mkdir -p "$corpus" "$artifacts"
  echo "== $t: ${seconds} s (seeds: tests/fuzz/corpus/$t, log: $log)"
  "$build/$t" "$corpus" "$root/tests/fuzz/corpus/$t" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb="$MALLOC_MB" \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  added=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    summary+=("$t: ok, ${runs:-?} runs, ${rate:-?} exec/s, ${added:-0} new corpus entries")
  else
    artifact=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -1)
    # The first report lines say what was found; the log holds the whole stack.
    grep -m4 -E "ERROR: |runtime error: |fuzz invariant broken|terminate called|what\(\): " "$log" | sed 's/^/    /'
    grep -E "^ +#[0-9]+ .* in sparseattn::" "$log" | grep -v "sparseattn::fuzz::" | head -1 | sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in /    first frame in the project: /'
    summary+=("$t: FAILED (exit $rc), ${runs:-?} runs; input: ${artifact:-see $log}; replay: $build/$t ${artifact:-<input>}")
    failed+=("$t")
  fi
done
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of ${#targets[@]} targets found a crash: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, no crash in ${seconds} s each"
