#!/usr/bin/env python3
"""The CUDA kernels' register table, generated at build time from ptxas's own report.

Two modes, both wired by optimized/cuda/CMakeLists.txt:

  cuda_resources.py compile -- [ccache] NVCC_COMMAND...
      the compiler launcher of sparseattn_cuda's .cu files: runs the command (which carries
      -Xptxas=-v), writes ptxas's "info" lines to <object>.ptxas.txt beside the object
      (-o) and passes every other line of the compiler's output through, so the build log
      stays quiet;
  cuda_resources.py table OUT.md OBJECT_DIR
      after sparseattn_cuda is built, from OBJECT_DIR/*.ptxas.txt: one markdown row per
      (kernel, architecture) —
      registers per thread, spill stores / loads, stack frame, static shared memory —
      written to OUT.md (build/cuda_resources.md; docs/cuda.md points there).
"""
import os
import re
import subprocess
import sys

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+a?)'")
USED = re.compile(r"Used (\d+) registers")
SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
SMEM = re.compile(r"(\d+) bytes smem")


def compile_step(cmd):
    log = cmd[cmd.index("-o") + 1] + ".ptxas.txt" if "-o" in cmd else os.devnull
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    info = [l for l in proc.stdout.splitlines() if l.startswith("ptxas info")]
    rest = [l for l in proc.stdout.splitlines() if not l.startswith("ptxas info")]
    if log != os.devnull and proc.returncode == 0:
        tmp = f"{log}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            f.write("\n".join(info) + "\n")
        os.replace(tmp, log)
    if rest:
        print("\n".join(rest), file=sys.stderr)
    return proc.returncode


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), stdout=subprocess.PIPE, text=True, check=True)
        return out.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return names


def short(name):
    """sparseattn::cuda::(anonymous namespace)::window_kernel<sparseattn::cuda::FlashMmaBlock<__nv_bfloat16>>(...)
    -> window_kernel<FlashMmaBlock<__nv_bfloat16>>"""
    name = name.replace("(anonymous namespace)::", "").replace("sparseattn::cuda::", "")
    name = re.sub(r"^void ", "", name)
    depth = 0
    for k, ch in enumerate(name):  # cut the parameter list: the first "(" outside <...>
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0:
            name = name[:k]
            break
    return name.replace(" ", "")


def table(out, objdir):
    import glob
    logs = sorted(glob.glob(os.path.join(objdir, "*.ptxas.txt")))
    rows = []
    for log in logs:
        src = os.path.basename(log).split(".")[0]
        entry = None
        with open(log, errors="replace") as f:
            for line in f:
                m = ENTRY.search(line)
                if m:
                    entry = dict(src=src, name=m.group(1), arch=m.group(2), regs=None, stack=0, spill_st=0,
                                 spill_ld=0, smem=0)
                    rows.append(entry)
                    continue
                if entry is None:
                    continue
                m = SPILL.search(line)
                if m:
                    entry["stack"], entry["spill_st"], entry["spill_ld"] = (int(x) for x in m.groups())
                m = USED.search(line)
                if m:
                    entry["regs"] = int(m.group(1))
                    s = SMEM.search(line)
                    entry["smem"] = int(s.group(1)) if s else 0
    names = demangle([r["name"] for r in rows])
    for r, n in zip(rows, names):
        r["short"] = short(n)
    rows.sort(key=lambda r: (r["src"], r["short"], r["arch"]))
    lines = ["<!-- generated at build time by tools/cuda_resources.py from nvcc -Xptxas=-v; do not edit -->",
             "| file | kernel | arch | registers | spill stores / loads (bytes) | stack (bytes) | static smem (bytes) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['src']} | `{r['short']}` | {r['arch']} | {r['regs']} | {r['spill_st']} / {r['spill_ld']} | "
                     f"{r['stack']} | {r['smem']} |")
    tmp = f"{out}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)
    return 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "compile" and argv[2] == "--":
        return compile_step(argv[3:])
    if len(argv) == 4 and argv[1] == "table":
        return table(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
