#!/usr/bin/env bash
# `make pip-check`: what a user of the Python package does (docs/python.md) — `pip install .`
# from this checkout into a new virtual environment, `import sparseattn`, and docs/python.md's
# examples run against the installed copy (not python/). Prints how long the install took.
# ccache, when present, is handed to the wheel's CMake build through CMAKE_ARGS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
fi
start=$(date +%s)
# The wheel's CMake tree sits in the checkout (build-wheel/, beside build/ and at the same
# depth), so that ccache, with CCACHE_BASEDIR at the checkout, finds the objects the main
# build compiled with the same flags: only the module's own files compile anew.
# The generator is the main build's too: under Ninja every compile runs in the build root,
# one level up from Make's per-folder runs, and the relative paths ccache hashes differ.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
# and so is the compiler's name: ccache hashes it, and the wheel's build would otherwise
# name g++ where CMake's default is c++ (the same binary).
export CMAKE_GENERATOR="Unix Makefiles"
export CXX="${CXX:-c++}" CC="${CC:-cc}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
"$work/venv/bin/python" -m pip install -q --config-settings=build-dir="$root/build-wheel" "$root"
elapsed=$(( $(date +%s) - start ))
cd "$work"
"$work/venv/bin/python" -c "import sparseattn; print('pip-check: imported', sparseattn.__file__)"
"$work/venv/bin/python" - "$root/docs/python.md" <<'PY'
import re, sys, pathlib
text = pathlib.Path(sys.argv[1]).read_text()
blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
namespace = {"__name__": "__docs__"}
for i, code in enumerate(blocks):
    exec(compile(code, f"docs/python.md block {i + 1}", "exec"), namespace)
print(f"pip-check: docs/python.md's {len(blocks)} python blocks ran against the installed package")
PY
echo "pip-check: pip install . into a new virtual environment took ${elapsed} s"
