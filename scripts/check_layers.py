#!/usr/bin/env python3
"""The layering of the source tree: a lower layer never includes or links a higher one.

Usage:  scripts/check_layers.py [--root DIR]    check #include "..." lines and CMake links
        scripts/check_layers.py --self-test     check this checker on in-memory examples

A folder is a layer. The layers, lowest first:

  0  core/                      tensors, .npy, errors, tolerances, the checker
  1  pattern/                   PatternSpec -> materialize() -> Pattern (the one pattern source)
  2  registry/                  the registry's interface: the Kernel/Problem/Output types and
                                the X-macro lists (*.def) each kernel layer implements
  3  reference/                 the reference ladder (float64) and the approximations
  4  optimized/cpu/, optimized/cuda/, graph/
                                kernels and the graph view, side by side: none includes another
  5  api/                       what every front end calls: the kernel table built from the
                                lists, input checks, check and its report, conventions, pattern
                                files, results, the measurement harness
  6  realdata/                  the real-data job, built on api/
  7  cli/, python/, bench/, tools/
                                the front ends and programs, side by side: none includes another
  8  tests/                     may include every layer

A file may include (and a CMake target may link) its own folder or a strictly lower layer;
two folders of one layer never include each other. Nothing outside these folders is
checked. Exit status: 0 clean; 1 with one "file:line: what" per finding.
Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import re
import subprocess
import sys

# (folder, rank): a file belongs to the longest folder listed that holds it.
LAYERS = [
    ("core/", 0),
    ("pattern/", 1),
    ("registry/", 2),
    ("reference/", 3),
    ("optimized/cpu/", 4),
    ("optimized/cuda/", 4),
    ("graph/", 4),
    ("api/", 5),
    ("realdata/", 6),
    ("cli/", 7),
    ("python/", 7),
    ("bench/", 7),
    ("tools/", 7),
    ("tests/", 8),
]
TOP = 8
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".def", ".inc")


def module_of(path: str) -> tuple[str, int] | None:
    """(folder, rank) of a repository path, or None when no layer holds it."""
    best = None
    for folder, rank in LAYERS:
        if path.startswith(folder) and (best is None or len(folder) > len(best[0])):
            best = (folder, rank)
    return best


def allowed(src: tuple[str, int], dst: tuple[str, int]) -> bool:
    """Own folder, a strictly lower layer, or anything from tests/."""
    return src[0] == dst[0] or dst[1] < src[1]


def why(src: tuple[str, int], dst: tuple[str, int]) -> str:
    if src[1] == dst[1]:
        return "two folders of one layer may not depend on each other"
    return "a lower layer may not depend on a higher one"


def check_includes(files: dict[str, str]) -> list[str]:
    problems = []
    for path, text in sorted(files.items()):
        if not path.endswith(SOURCE_SUFFIXES):
            continue
        src = module_of(path)
        if src is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            local = os.path.normpath(os.path.join(os.path.dirname(path), inc)).replace(os.sep, "/")
            target = local if local in files else inc
            dst = module_of(target)
            if dst is None or allowed(src, dst):
                continue
            problems.append(
                f"{path}:{lineno}: includes {target} (layer {dst[1]}, {dst[0]}) from layer "
                f"{src[1]} ({src[0]}): {why(src, dst)}")
    return problems


def cmake_commands(text: str, name: str) -> list[tuple[int, list[str]]]:
    """(line, arguments) of every `name(...)` call, comments removed."""
    out = []
    clean = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    for m in re.finditer(r"\b" + name + r"\s*\(([^)]*)\)", clean):
        out.append((clean.count("\n", 0, m.start()) + 1, m.group(1).split()))
    return out


def check_cmake(files: dict[str, str]) -> list[str]:
    """Every target's sparseattn_* link dependencies obey the same order."""
    rank_of_target: dict[str, tuple[str, int]] = {}
    where: dict[str, str] = {}
    for path, text in files.items():
        if os.path.basename(path) != "CMakeLists.txt":
            continue
        folder = os.path.dirname(path)
        mod = module_of(folder + "/x.cpp") if folder else None
        for kind in ("add_library", "add_executable"):
            for _, args in cmake_commands(text, kind):
                if args and mod is not None:
                    rank_of_target[args[0]] = mod
                    where[args[0]] = path
    problems = []
    for path, text in sorted(files.items()):
        if os.path.basename(path) != "CMakeLists.txt":
            continue
        for lineno, args in cmake_commands(text, "target_link_libraries"):
            if not args or args[0] not in rank_of_target:
                continue
            src = rank_of_target[args[0]]
            for dep in args[1:]:
                if dep in rank_of_target and dep.startswith("sparseattn_"):
                    dst = rank_of_target[dep]
                    if not allowed(src, dst):
                        problems.append(
                            f"{path}:{lineno}: {args[0]} (layer {src[1]}, {src[0]}) links {dep} "
                            f"(layer {dst[1]}, {dst[0]}, defined in {where[dep]}): {why(src, dst)}")
    return problems


def load(root: str) -> dict[str, str]:
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    files = {}
    for path in filter(None, out.split("\0")):
        if path.endswith(SOURCE_SUFFIXES) or os.path.basename(path) == "CMakeLists.txt":
            try:
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    files[path] = f.read()
            except (OSError, UnicodeDecodeError):
                pass
    return files


def self_test() -> int:
    base = {
        "core/tensor.h": "", "pattern/pattern.h": '#include "core/tensor.h"\n',
        "registry/registry.h": '#include "pattern/pattern.h"\n',
        "registry/cpu_kernels.def": "", "realdata/dataset.h": "", "graph/reach.h": "",
        "reference/validate.h": "", "api/check_report.h": "", "cli/commands.h": "",
        "bench/validate.h": "",
        "optimized/cpu/flash_tile.h": "", "python/src/arrays.h": "", "tests/reference/grid.h": "",
        "core/CMakeLists.txt": "add_library(sparseattn_core tensor.cpp)\n",
        "reference/CMakeLists.txt": "add_library(sparseattn_reference a.cpp)\n",
        "realdata/CMakeLists.txt": "add_library(sparseattn_realdata d.cpp)\n",
        "bench/CMakeLists.txt": "add_library(sparseattn_benchkit v.cpp)\n",
    }
    bad = [
        ("reference/approx/measure.cpp", '#include "realdata/dataset.h"'),
        ("core/check.cpp", '#include "pattern/pattern.h"'),
        ("pattern/layout.cpp", '#include "registry/registry.h"'),
        ("registry/registry.h", '#include "reference/validate.h"'),  # the interface stays low
        ("optimized/cpu/k01.cpp", '#include "graph/reach.h"'),
        ("graph/layer_graph.cpp", '  #  include "optimized/cpu/flash_tile.h"'),
        ("realdata/job.cpp", '#include "cli/commands.h"'),
        ("api/check_report.cpp", '#include "cli/commands.h"'),
        ("python/src/module.cpp", '#include "cli/commands.h"'),  # front ends are siblings
        ("cli/cmd_sweep.cpp", '#include "bench/validate.h"'),
        ("bench/bench_cpu.cpp", '#include "tests/reference/grid.h"'),
        ("reference/CMakeLists.txt",
         "add_library(sparseattn_reference a.cpp)\n"
         "target_link_libraries(sparseattn_reference PUBLIC sparseattn_core\n  sparseattn_realdata)"),
        ("cli/CMakeLists.txt",
         "add_executable(sparseattn main.cpp)\n"
         "target_link_libraries(sparseattn PRIVATE sparseattn_benchkit)"),
    ]
    good = [
        ("reference/entries.cpp", '#include "registry/registry.h"'),
        ("optimized/cuda/entries.cu", '#include "registry/cpu_kernels.def"'),
        ("optimized/cpu/k01.cpp", '#include "flash_tile.h"'),  # same folder, relative
        ("api/registry.cpp", '#include "reference/validate.h"'),
        ("python/src/module.cpp", '#include "api/check_report.h"'),
        ("tools/approx.cpp", '#include "realdata/dataset.h"'),
        ("tests/cli/grid_test.cpp", '#include "cli/commands.h"\n#include "bench/validate.h"'),
        ("realdata/job.cpp", '#include <CLI/CLI.hpp>\n#include "graph/reach.h"'),
        ("reference/CMakeLists.txt",
         "add_library(sparseattn_reference a.cpp)\n# sparseattn_realdata is higher\n"
         "target_link_libraries(sparseattn_reference PUBLIC sparseattn_core)"),
    ]
    failures = 0
    for path, text in bad:
        files = {**base, path: text + "\n"}
        got = check_includes(files) + check_cmake(files)
        if not any(g.startswith(path + ":") for g in got):
            print(f"self-test FAILED: not flagged: {path}: {text!r}")
            failures += 1
    for path, text in good:
        files = {**base, path: text + "\n"}
        got = check_includes(files) + check_cmake(files)
        if got:
            print(f"self-test FAILED: flagged {path}: {text!r}: {got}")
            failures += 1
    total = len(bad) + len(good)
    print(f"check_layers self-test: {total - failures} of {total} cases pass")
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--self-test", action="store_true", help="check the checker, then exit")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    files = load(args.root)
    problems = check_includes(files) + check_cmake(files)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} dependencies against the layering", file=sys.stderr)
        return 1
    print(f"check_layers: {len(files)} files, every #include and CMake link goes down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
