#!/usr/bin/env python3
"""Checks contract §4.3's bf16 CPU path never runs a bf16 or AMX instruction on a CPU without one.

Disassembles the CPU kernel library and requires
  * every function that contains an AVX512-BF16 instruction (vdpbf16ps, vcvtne2ps2bf16,
    vcvtneps2bf16) to belong to the dot or the AMX engine of the avx512 build
    (optimized/cpu/flash_tile_bf16.h: Bf16Tile, Bf16DotEngine, KeyPanelBf16, detail_bf16
    — the last also holds the engine's rate probe, fma_probe.cpp's detail_bf16::dot_probe;
    optimized/cpu/flash_tile_amx.h: Bf16AmxTile, Bf16AmxEngine, detail_amx — the AMX
    engine runs the dot engine's softmax, which converts P with vcvtne2ps2bf16), which
    with_bf16_engine() and measure_bf16_dot_vs_fma() reach only after the cpuid check
    cpu_has_avx512_bf16();
  * every function that contains an AMX instruction (tdpbf16ps and the other tile
    products, tileloadd, tilestored, tilezero, ldtilecfg, sttilecfg, tilerelease) to belong
    to the AMX engine of the avx512 build (Bf16AmxTile, Bf16AmxEngine, detail_amx), which
    with_bf16_engine() reaches only when amx_available() (cpuid, XCR0 and the OS's grant);
  * that both kinds exist (the engines are built).

Usage: bf16_isolation_check.py LIBRARY. Exit 0 pass, 1 fail, 77 (skip) without objdump.
"""
import re
import shutil
import subprocess
import sys

BF16 = re.compile(r"\b(vdpbf16ps|vcvtne2ps2bf16|vcvtneps2bf16)\b")
AMX = re.compile(r"\b(tdp\w+|tileloadd\w*|tilestored|tilezero|ldtilecfg|sttilecfg|tilerelease)\b")
AMX_ENGINE = ("Bf16AmxTile", "Bf16AmxEngine", "detail_amx")
ENGINE = ("Bf16Tile", "Bf16DotEngine", "KeyPanelBf16", "detail_bf16") + AMX_ENGINE


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 1
    if shutil.which("objdump") is None:
        print("skip: no objdump")
        return 77
    text = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", sys.argv[1]],
                          check=True, capture_output=True, text=True).stdout
    function, found, found_amx, bad = "", set(), set(), set()
    for line in text.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            function = header.group(1)
            continue
        # The mnemonic alone: after the address's tab, before any symbol or comment.
        insn = line.split("\t", 1)[1] if "\t" in line else ""
        insn = re.split(r"[<#]", insn, 1)[0]
        in_avx512 = "sparseattn::cpu::avx512::" in function
        if BF16.search(insn):
            found.add(function)
            if not in_avx512 or not any(e in function for e in ENGINE):
                bad.add(("bf16 instruction outside the avx512 dot and AMX engines", function))
        if AMX.search(insn):
            found_amx.add(function)
            if not in_avx512 or not any(e in function for e in AMX_ENGINE):
                bad.add(("AMX instruction outside the avx512 AMX engine", function))
    for what, f in sorted(bad):
        print(what + ":", f)
    if not found:
        print("no bf16 instruction at all: the dot engine was not built")
        return 1
    if not found_amx:
        print("no AMX instruction at all: the AMX engine was not built")
        return 1
    if bad:
        return 1
    print(f"{len(found)} functions hold bf16 instructions, {len(found_amx)} AMX instructions, "
          "all in the avx512 dot and AMX engines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
