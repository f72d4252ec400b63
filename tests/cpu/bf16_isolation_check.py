#!/usr/bin/env python3
"""Checks contract §4.3's bf16 CPU path never runs a bf16 instruction on a CPU without one.

Disassembles the CPU kernel library and requires every function that contains an
AVX512-BF16 instruction (vdpbf16ps, vcvtne2ps2bf16, vcvtneps2bf16) to belong to the dot
engine of the avx512 build (optimized/cpu/flash_tile_bf16.h: Bf16Tile, Bf16DotEngine,
KeyPanelBf16, detail_bf16 — the last also holds the engine's rate probe, fma_probe.cpp's
detail_bf16::dot_probe), which with_bf16_engine() and measure_bf16_dot_vs_fma() reach only
after the cpuid check cpu_has_avx512_bf16(). Also requires that such functions exist (the
engine is built).

Usage: bf16_isolation_check.py LIBRARY. Exit 0 pass, 1 fail, 77 (skip) without objdump.
"""
import re
import shutil
import subprocess
import sys

BF16 = re.compile(r"\b(vdpbf16ps|vcvtne2ps2bf16|vcvtneps2bf16)\b")
ENGINE = ("Bf16Tile", "Bf16DotEngine", "KeyPanelBf16", "detail_bf16")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 1
    if shutil.which("objdump") is None:
        print("skip: no objdump")
        return 77
    text = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", sys.argv[1]],
                          check=True, capture_output=True, text=True).stdout
    function, found, bad = "", set(), set()
    for line in text.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            function = header.group(1)
            continue
        if BF16.search(line):
            found.add(function)
            if "sparseattn::cpu::avx512::" not in function or not any(e in function for e in ENGINE):
                bad.add(function)
    for f in sorted(bad):
        print("bf16 instruction outside the avx512 dot engine:", f)
    if not found:
        print("no bf16 instruction at all: the dot engine was not built")
        return 1
    print(f"{len(found)} functions hold bf16 instructions, all in the avx512 dot engine")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
