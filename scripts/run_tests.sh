#!/usr/bin/env bash
# `make test`: runs CTest in the build folder and closes with one count line.
# CTest's own summary folds skipped tests into its total ("100% passed ... out of N"), and a
# skip must never read as a pass: the last line counts passed, failed and skipped apart.
# Usage: scripts/run_tests.sh BUILD_DIR JOBS
set -uo pipefail
build=$1
jobs=$2
cd "$build" || exit 2
ctest --output-on-failure -j "$jobs" 2>&1 | tee ctest.log
rc=${PIPESTATUS[0]}
total=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' ctest.log)
passed=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' ctest.log | grep -cE ' Passed +[0-9.]+ sec$')
skipped=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' ctest.log | grep -cE '\*\*\*Skipped')
failed=$((total - passed - skipped))
if [ "$skipped" -gt 0 ]; then
  echo "Skipped tests need a CUDA device (GTEST_SKIP \"no CUDA device\"); they did not run."
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$rc"
