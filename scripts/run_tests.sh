#!/usr/bin/env bash
# `make test`: runs CTest in the build folder, then the Python package's pytest suite
# (python/tests, against the module `make python` built into python/sparseattn/), then every
# notebook of notebooks/ (scripts/run_notebooks.py; each notebook counts as one test), and
# closes with one count line summing all three.
# CTest's own summary folds skipped tests into its total ("100% passed ... out of N"), and a
# skip must never read as a pass: the last line counts passed, failed and skipped apart.
# Usage: scripts/run_tests.sh BUILD_DIR JOBS   (CTEST_ARGS="-R ^Check" adds ctest arguments)
set -uo pipefail
build=$1
jobs=$2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$build" || exit 2
build_abs=$(pwd)
ctest --output-on-failure -j "$jobs" ${CTEST_ARGS:-} 2>&1 | tee ctest.log
rc=${PIPESTATUS[0]}
total=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' ctest.log)
passed=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' ctest.log | grep -cE ' Passed +[0-9.]+ sec$')
skipped=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' ctest.log | grep -cE '\*\*\*Skipped')
# DISABLED_ tests record a known bug's reproducer until its fix lands; they are listed
# apart, never counted as passed.
disabled=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' ctest.log | grep -cE 'Not Run \(Disabled\)')
failed=$((total - passed - skipped - disabled))
if [ "$skipped" -gt 0 ]; then
  echo "Skipped CTest tests need a CUDA device (GTEST_SKIP \"no CUDA device\"); they did not run."
fi

# pytest, with the interpreter the module was built for (python/CMakeLists.txt wrote it).
if [ -f python_executable.txt ]; then
  py=$(head -1 python_executable.txt)
  echo "pytest: python/tests with $py"
  (cd "$root" && PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" \
     SPARSEATTN_CLI="$build_abs/sparseattn" \
     "$py" -m pytest -q -rs -p no:cacheprovider python/tests) 2>&1 | tee pytest.log
  py_rc=${PIPESTATUS[0]}
  summary=$(grep -E '^=*.* in [0-9.]+s' pytest.log | tail -1)
  count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
  py_passed=$(count passed)
  py_failed=$(( $(count failed) + $(count error) + $(count errors) ))
  py_skipped=$(count skipped)
  # pytest exits 5 when it collected nothing: that is a failure here, never a pass.
  if [ "$py_rc" -ne 0 ] && [ "$py_failed" -eq 0 ]; then py_failed=1; fi
  [ "$py_skipped" -gt 0 ] && echo "Skipped pytest tests name their reason above (torch, jax or a CUDA device absent)."
  passed=$((passed + py_passed))
  failed=$((failed + py_failed))
  skipped=$((skipped + py_skipped))
  [ "$py_rc" -ne 0 ] && rc=1
else
  echo "pytest: not run (configured with -DSPARSEATTN_PYTHON=OFF: no Python module built)"
fi

# The notebooks, with the same interpreter: each one executed end to end is one test.
if [ -f python_executable.txt ]; then
  py=$(head -1 python_executable.txt)
  echo "notebooks: notebooks/*.py with $py"
  (cd "$root" && "$py" scripts/run_notebooks.py --out "$build_abs/notebooks") 2>&1 \
    | grep -v 'Kernel is running over TCP without encryption' | tee notebooks.log
  nb_rc=${PIPESTATUS[0]}
  nb_passed=$(grep -cE '^notebook [^ ]+: passed' notebooks.log)
  nb_failed=$(grep -cE '^notebook [^ ]+: FAILED' notebooks.log)
  # The runner refused to start (a missing package): every notebook failed, none passed.
  if [ "$nb_rc" -ne 0 ] && [ "$nb_failed" -eq 0 ]; then
    nb_failed=$(ls "$root"/notebooks/[0-9]*.py 2>/dev/null | wc -l)
    [ "$nb_failed" -eq 0 ] && nb_failed=1
  fi
  passed=$((passed + nb_passed))
  failed=$((failed + nb_failed))
  [ "$nb_rc" -ne 0 ] && rc=1
else
  echo "notebooks: not run (no Python module built)"
fi
if [ "$disabled" -gt 0 ]; then
  echo "Disabled tests (DISABLED_) are known bugs' reproducers, not run until fixed:"
  grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Not Run \(Disabled\)' ctest.log |
    sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+).*/  \1/'
fi
echo "tests: $passed passed, $failed failed, $skipped skipped$([ "$disabled" -gt 0 ] && echo ", $disabled disabled")"
exit "$rc"
