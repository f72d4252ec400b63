#!/usr/bin/env python3
"""Executes every notebook of notebooks/ end to end (`make notebooks`, and `make test`'s
third stage through scripts/run_tests.sh).

The notebooks are stored as jupytext percent-format `.py` files (diffable, no outputs);
each is converted to `.ipynb` in memory, executed by nbclient in a fresh Python kernel
whose working directory is the repository root and whose PYTHONPATH starts with python/
(the in-place module `make python` builds), and written with its outputs to OUT_DIR
(default build/notebooks/). A notebook passes when every cell runs, its `assert`s included.

Prints one line per notebook (`notebook NAME: passed in S s` or `FAILED`, with the failing
cell's error), then `notebooks: N passed, N failed`. Exit status 0 when all pass, 1 when
one fails, 2 when jupytext, nbclient, ipykernel or matplotlib is missing.

Usage: scripts/run_notebooks.py [--out OUT_DIR] [--timeout S] [NOTEBOOK.py ...]
"""
import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = "sparseattn-python"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", help="default: notebooks/[0-9]*.py")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "notebooks"))
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = ap.parse_args()

    missing = []
    for mod in ("jupytext", "nbclient", "ipykernel", "matplotlib", "nbformat"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        print(f"notebooks: missing Python packages {', '.join(missing)} for {sys.executable}; "
              f"install them with `{sys.executable} -m pip install jupytext nbclient ipykernel "
              "matplotlib` (scripts/setup.sh does)", file=sys.stderr)
        return 2
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from traitlets.config import Config

    paths = args.notebooks or sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9]*.py")))
    if not paths:
        print("notebooks: none found", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    # The kernel inherits this environment: the in-place package first; figures embedded in
    # the executed copies (matplotlib's inline backend, whatever MPLBACKEND the caller has).
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    # A kernel spec of our own, first on JUPYTER_PATH, so the kernel is this interpreter (the
    # one the module was built for) even where another "python3" kernel is installed.
    spec_root = os.path.join(os.path.abspath(args.out), "jupyter")
    spec_dir = os.path.join(spec_root, "kernels", KERNEL)
    os.makedirs(spec_dir, exist_ok=True)
    with open(os.path.join(spec_dir, "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": f"Python ({sys.executable})", "language": "python"}, f)
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [spec_root] + [p for p in [os.environ.get("JUPYTER_PATH")] if p])
    # The kernel talks to us over Unix sockets (ZeroMQ's IPC transport) in a private temporary
    # folder, not over TCP on localhost: nothing listens on a port, and ipykernel no longer
    # prints "Kernel is running over TCP without encryption" once per notebook. The folder
    # is short (a socket path must fit in 107 bytes) and removed at the end.
    ipc_dir = tempfile.mkdtemp(prefix="sparseattn-nb-")
    config = Config()
    config.KernelManager.transport = "ipc"
    config.KernelManager.ip = os.path.join(ipc_dir, "kernel")
    try:
        passed = failed = 0
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            nb = jupytext.read(path)
            client = NotebookClient(nb, timeout=args.timeout, kernel_name=KERNEL, config=config,
                                    resources={"metadata": {"path": ROOT}})
            t0 = time.perf_counter()
            try:
                client.execute()
                ok, err = True, ""
            except CellExecutionError as e:
                ok, err = False, re.sub(r"\x1b\[[0-9;]*m", "", str(e))  # no terminal colours
            except Exception as e:  # kernel died, timeout: a failure, never a pass
                ok, err = False, f"{type(e).__name__}: {e}"
            dt = time.perf_counter() - t0
            out = os.path.join(args.out, name + ".ipynb")
            tmp = out + ".tmp"
            nbformat.write(nb, tmp)
            os.replace(tmp, out)  # never a half-written file
            if ok:
                passed += 1
                print(f"notebook {name}: passed in {dt:.1f} s", flush=True)
            else:
                failed += 1
                print(f"notebook {name}: FAILED after {dt:.1f} s (executed copy: {out})\n"
                      + "\n".join(err.strip().splitlines()[-25:]), flush=True)
    finally:
        shutil.rmtree(ipc_dir, ignore_errors=True)
    print(f"notebooks: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
