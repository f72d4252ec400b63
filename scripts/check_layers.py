#!/usr/bin/env python3
"""The layering of the source tree: a lower layer never includes or links a higher one.

Usage:  scripts/check_layers.py [--root DIR]    check #include "..." lines and CMake links
        scripts/check_layers.py --self-test     check this checker on in-memory examples

The layers, lowest first (a file belongs to the longest folder prefix listed):

  0  core/                      tensors, .npy, errors, tolerances, the checker
  1  reference/pattern/         PatternSpec -> materialize() -> Pattern (the one pattern source)
  2  registry/registry.h, registry/backward.h, registry/float32_guard.h, registry/*.def
                                the registry's interface: the Kernel/Problem/Output types and
                                the X-macro lists each kernel layer implements (entries.cpp)
  3  reference/                 the reference ladder (float64) and the approximations
  4  optimized/cpu/, optimized/cuda/, graph/
                                kernels and the graph view, side by side: none includes another
  5  registry/                  the registry itself (registry.cpp: every kernel in one list)
  6  realdata/                  the real-data job, built on the registry
  7  cli/, bench/, tools/, tests/
                                programs: they may use every library and each other's headers

A file may include (and a CMake target may link) its own module or a strictly lower layer.
Two different modules of one layer below 7 may not include each other. Nothing outside
these folders is checked. Exit status: 0 clean; 1 with one "file:line: what" per finding.
Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import re
import subprocess
import sys

# (pattern, rank[, module]): folders end with "/", single files may use fnmatch wildcards;
# entries naming the same module (the registry's interface headers) may include each other.
LAYERS = [
    ("core/", 0),
    ("reference/pattern/", 1),
    ("registry/registry.h", 2, "registry interface"),
    ("registry/backward.h", 2, "registry interface"),
    ("registry/float32_guard.h", 2, "registry interface"),
    ("registry/*.def", 2, "registry interface"),
    ("reference/", 3),
    ("optimized/cpu/", 4),
    ("optimized/cuda/", 4),
    ("graph/", 4),
    ("registry/", 5),
    ("realdata/", 6),
    ("cli/", 7),
    ("bench/", 7),
    ("tools/", 7),
    ("tests/", 7),
]
TOP = 7
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".def", ".inc")


def module_of(path: str) -> tuple[str, int] | None:
    """(module, rank) of a repository path, or None when no layer holds it."""
    best = None
    for pattern, rank, *module in LAYERS:
        if pattern.endswith("/"):
            hit = path.startswith(pattern)
        else:
            hit = fnmatch.fnmatchcase(path, pattern)
        if hit and (best is None or len(pattern) > best[2]):
            best = (module[0] if module else pattern, rank, len(pattern))
    return None if best is None else (best[0], best[1])


def allowed(src: tuple[str, int], dst: tuple[str, int]) -> bool:
    if src[0] == dst[0]:
        return True
    if dst[1] < src[1]:
        return True
    return src[1] == dst[1] == TOP


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
                f"{src[1]} ({src[0]}): a lower layer may not depend on a higher one")
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
                            f"(layer {dst[1]}, {dst[0]}, defined in {where[dep]}): a lower layer "
                            "may not depend on a higher one")
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
        "core/tensor.h": "", "reference/pattern/pattern.h": '#include "core/tensor.h"\n',
        "registry/registry.h": '#include "reference/pattern/pattern.h"\n',
        "registry/cpu_kernels.def": "", "realdata/dataset.h": "", "graph/reach.h": "",
        "optimized/cpu/flash_tile.h": "", "cli/pattern_flags.h": "", "tests/reference/grid.h": "",
        "core/CMakeLists.txt": "add_library(sparseattn_core tensor.cpp)\n",
        "reference/CMakeLists.txt": "add_library(sparseattn_reference a.cpp)\n",
        "realdata/CMakeLists.txt": "add_library(sparseattn_realdata d.cpp)\n",
    }
    bad = [
        ("reference/approx/measure.cpp", '#include "realdata/dataset.h"'),
        ("core/check.cpp", '#include "reference/pattern/pattern.h"'),
        ("reference/pattern/layout.cpp", '#include "registry/registry.h"'),
        ("optimized/cpu/k01.cpp", '#include "graph/reach.h"'),
        ("graph/layer_graph.cpp", '  #  include "optimized/cpu/flash_tile.h"'),
        ("realdata/job.cpp", '#include "cli/pattern_flags.h"'),
        ("reference/CMakeLists.txt",
         "add_library(sparseattn_reference a.cpp)\n"
         "target_link_libraries(sparseattn_reference PUBLIC sparseattn_core\n  sparseattn_realdata)"),
    ]
    good = [
        ("reference/entries.cpp", '#include "registry/registry.h"'),
        ("optimized/cuda/entries.cu", '#include "registry/cpu_kernels.def"'),
        ("optimized/cpu/k01.cpp", '#include "flash_tile.h"'),  # same folder, relative
        ("tools/approx.cpp", '#include "realdata/dataset.h"'),
        ("bench/bench_cpu.cpp", '#include "tests/reference/grid.h"'),  # programs share
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
