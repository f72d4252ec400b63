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
"$work/venv/bin/python" -m pip install -q "$root"
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
