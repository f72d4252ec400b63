#!/usr/bin/env python3
"""Every kernel header states one current measurement, with its source; history lives elsewhere.

Usage:  scripts/check_headers.py [--root DIR]    check the kernel and engine files (git ls-files)
        scripts/check_headers.py --self-test     check this checker on in-memory examples

The files checked:
  * every ladder step: optimized/cpu/kNN_*.cpp and kbNN_*.cpp, optimized/cuda/cNN_*.cu and
    cbNN_*.cu (NN two digits), found by name, so a new step is checked without a list;
  * the engine headers named in ENGINE_HEADERS below (each must exist).
A file's header is its leading block of `//` lines (CONTRIBUTING.md, "What a new step states
on its first lines"). For each file:
  * the header must exist, and hold exactly one line that starts with the marker
    "// Measured:" (MARKER), which names the docs/*.md page its figure comes from (that
    page must exist). The figure itself, or "not yet measured" with the reason, follows on
    that line and its continuation lines.
  * no other line of the file starts with the marker, and no other header line starts a
    second measured statement ("// Measured effect ...", "// Measured (...)").
  * no line of the file carries a tuning log: the phrases in HISTORY_PHRASES ("tried and
    dropped", "target missed", "tuning record", "tuned since", case-insensitive). Those
    entries belong in optimized/cpu/TUNING.md or optimized/cuda/TUNING.md.
Exit status: 0 when clean; 1 with one "file:line: what" per finding; 2 on usage errors.
Python 3 standard library only (it runs in CI before anything is built).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

MARKER = "// Measured:"
STEP_FILE = re.compile(r"^(optimized/cpu/kb?\d\d_[^/]*\.cpp|optimized/cuda/cb?\d\d_[^/]*\.cu)$")
ENGINE_HEADERS = (
    "optimized/cpu/flash_tile.h",
    "optimized/cpu/flash_tile_bf16.h",
    "optimized/cpu/flash_tile_amx.h",
    "optimized/cpu/panel.h",
    "optimized/cpu/panel_bf16.h",
    "optimized/cpu/grad_block.h",
    "optimized/cuda/c03_flash_dense.cuh",
    "optimized/cuda/flash_f32.cuh",
    "optimized/cuda/flash_mma.cuh",
    "optimized/cuda/block_sparse.cuh",
)
# Spelled in pieces so that this file is not itself a header carrying them.
HISTORY_PHRASES = ("tried" + " and dropped", "target" + " missed", "tuning" + " record",
                   "tuned" + " since")
HISTORY = re.compile("|".join(re.escape(p) for p in HISTORY_PHRASES), re.IGNORECASE)
SECOND_MEASURED = re.compile(r"^//\s*measured\b", re.IGNORECASE)
DOC = re.compile(r"\bdocs/[A-Za-z0-9_.-]+\.md\b")


def checked_files(paths) -> list[str]:
    return sorted(p for p in paths if STEP_FILE.match(p))


def header_length(lines: list[str]) -> int:
    n = 0
    while n < len(lines) and lines[n].startswith("//"):
        n += 1
    return n


def check_file(path: str, text: str, exists) -> list[str]:
    problems: list[str] = []
    lines = text.splitlines()
    n = header_length(lines)
    if n == 0:
        return [f"{path}:1: no header comment: a kernel file opens with its contract, what "
                f"changed, why, and a '{MARKER}' line (CONTRIBUTING.md)"]
    markers = [i for i, line in enumerate(lines) if line.startswith(MARKER)]
    in_header = [i for i in markers if i < n]
    if not in_header:
        problems.append(f"{path}:1: the header has no '{MARKER}' line: state one current "
                        "figure and the docs/*.md row it comes from (or 'not yet measured' "
                        "and why)")
    for i in in_header[1:]:
        problems.append(f"{path}:{i + 1}: a second '{MARKER}' line: a header holds one "
                        "current figure; move the others to the folder's TUNING.md")
    for i in markers:
        if i >= n:
            problems.append(f"{path}:{i + 1}: '{MARKER}' below the header: it belongs in "
                            "the header comment at the top of the file")
    if in_header:
        i = in_header[0]
        docs = DOC.findall(lines[i])
        if not docs:
            problems.append(f"{path}:{i + 1}: the '{MARKER}' line names no docs/*.md page "
                            "(the page whose row the figure comes from)")
        for d in docs:
            if not exists(d):
                problems.append(f"{path}:{i + 1}: the '{MARKER}' line names {d}, which is "
                                "not in the repository")
    for i in range(n):
        if i not in markers and SECOND_MEASURED.match(lines[i]):
            problems.append(f"{path}:{i + 1}: a second measured statement in the header; "
                            f"keep one, on the '{MARKER}' line, and move the rest to "
                            "the folder's TUNING.md")
    for i, line in enumerate(lines):
        m = HISTORY.search(line)
        if m:
            problems.append(f"{path}:{i + 1}: '{m.group(0)}': tuning history belongs in "
                            "the folder's TUNING.md, not in a kernel file")
    return problems


def check_repo(files: dict[str, str | None]) -> list[str]:
    problems: list[str] = []
    exists = lambda p: p in files  # noqa: E731
    targets = checked_files(files)
    for path in ENGINE_HEADERS:
        if path not in files:
            problems.append(f"{path}:1: engine header listed in scripts/check_headers.py "
                            "is not in the repository (renamed? update ENGINE_HEADERS)")
        else:
            targets.append(path)
    if not checked_files(files):
        problems.append("optimized/cpu:1: no kernel file found (kNN_*.cpp): is --root right?")
    for path in targets:
        text = files.get(path)
        if text is None:
            problems.append(f"{path}:1: not readable as UTF-8 text")
            continue
        problems.extend(check_file(path, text, exists))
    return problems


def load_repo(root: str) -> dict[str, str | None]:
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    files: dict[str, str | None] = {}
    for path in filter(None, out.split("\0")):
        text = None
        if path.startswith("optimized/") and (STEP_FILE.match(path) or path in ENGINE_HEADERS):
            full = os.path.join(root, path)
            if os.path.isfile(full):
                try:
                    with open(full, encoding="utf-8") as f:
                        text = f.read()
                except UnicodeDecodeError:
                    text = None
        files[path] = text
    return files


def self_test() -> int:
    # Paths and doc names spelled in pieces: scripts/check_refs.py checks that every path
    # this file names exists, and these examples name missing ones on purpose.
    cpu, cuda, docs = "optimized/" + "cpu/", "optimized/" + "cuda/", "docs/"
    good = ("// k01 — a kernel.\n//\n// Contract: matches a1.\n// What changed: x. Why: y.\n"
            f"{MARKER} {docs}bench.md, row \"dense\": 77% of peak.\n#include <x>\n"
            "int f() { return 1; }  // a 2% effect noted in the body is fine\n")
    base = {docs + "bench.md": "", docs + "cuda.md": ""}
    for h in ENGINE_HEADERS:
        base[h] = f"// engine\n{MARKER} not timed on its own ({docs}bench.md).\n#pragma once\n"
    k = cpu + "k01_x.cpp"
    must_flag = {
        "no header": "#include <x>\n",
        "no marker": "// k01 — a kernel.\n// Measured effect (see the docs).\n#include <x>\n",
        "two markers": good.replace("#include", f"{MARKER} {docs}bench.md: 43%.\n#include"),
        "marker without a page": good.replace(f"{docs}bench.md", "the benchmark page"),
        "marker naming a missing page": good.replace("bench.md", "gone.md"),
        "marker below the header": good.replace(MARKER, "// no figure here:") +
        f"{MARKER} {docs}bench.md: 1%.\n",
        "a second measured statement": good.replace("// What changed",
                                                    "// Measured (1 thread): 2.3×.\n// What"),
        "tried and dropped": good.replace("Why: y.", "Tried" + " and dropped: R = 12."),
        "TARGET MISSED": good.replace("Why: y.", "TARGET" + " MISSED (60%)."),
        "tuning record": good.replace("Why: y.", "Tuning" + " record: 57% -> 79%."),
        "history in a body comment": good + "// tried" + " and dropped: prefetching\n",
    }
    failures = 0
    for why, text in must_flag.items():
        got = check_repo({**base, k: text})
        if not any(g.startswith(k + ":") for g in got):
            print(f"self-test FAILED: not flagged ({why}): {got}")
            failures += 1
    # A new ladder step of any of the four families is found by its name alone.
    for new in (cpu + "k08_new.cpp", cpu + "kb03_new.cpp", cuda + "c09_new.cu",
                cuda + "cb02_new.cu"):
        got = check_repo({**base, k: good, new: "// no marker\n#include <x>\n"})
        if not any(g.startswith(new + ":") for g in got):
            print(f"self-test FAILED: a new step {new} without a marker was not flagged")
            failures += 1
    # A listed engine header that disappears is reported, not skipped.
    gone = ENGINE_HEADERS[0]
    got = check_repo({p: t for p, t in {**base, k: good}.items() if p != gone})
    if not any(g.startswith(gone + ":") for g in got):
        print(f"self-test FAILED: a missing engine header {gone} was not flagged")
        failures += 1
    # An engine header without its marker is flagged like a step.
    got = check_repo({**base, k: good, ENGINE_HEADERS[1]: "// engine\n#pragma once\n"})
    if not any(g.startswith(ENGINE_HEADERS[1] + ":") for g in got):
        print("self-test FAILED: an engine header without a marker was not flagged")
        failures += 1
    # The clean cases pass: a good step, a CUDA step not yet measured, and files that are
    # not ladder steps (entries, helpers, a TUNING.md full of history).
    cuda_good = (f"// c01 — a kernel.\n{MARKER} not yet measured: no GPU run so far "
                 f"({docs}cuda.md, \"Results\").\n#include <x>\n")
    clean = {**base, k: good, cuda + "c01_x.cu": cuda_good,
             cpu + "entries.cpp": "#include <x>\n", cpu + "kernels.h": "#pragma once\n",
             cpu + "TUNING.md": "- Tried" + " and dropped: R = 12 (-1 point).\n"}
    got = check_repo(clean)
    if got:
        print(f"self-test FAILED: clean files flagged: {got}")
        failures += 1
    total = len(must_flag) + 4 + 3
    if failures:
        print(f"check_headers self-test: {failures} of {total} cases failed")
        return 1
    print(f"check_headers self-test: {total} cases pass")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--self-test", action="store_true", help="check the checker, then exit")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    files = load_repo(args.root)
    problems = check_repo(files)
    for p in problems:
        print(p)
    n = len(checked_files(files)) + sum(1 for h in ENGINE_HEADERS if h in files)
    if problems:
        print(f"check_headers: {len(problems)} finding(s) in the kernel headers ({n} files)",
              file=sys.stderr)
        return 1
    print(f"check_headers: {n} kernel and engine files, each header with one '{MARKER}' line "
          "naming its docs page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
