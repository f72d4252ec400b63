# %% [markdown]
# # 07 — Scaling: time and memory against seq_len
#
# The benchmark (`bench/bench_cpu.cpp`, `make bench`) times every kernel after validating it
# against the oracle, and records its peak memory. Its JSON from one full run on the
# project's 2-core machine is committed: `docs/figures/bench_cpu.json` (docs/benchmarks.md
# describes the run). Here we read it, plot time and peak memory against seq_len, and fit
# the log-log slopes: 2 for dense (O(n²)), 1 for the sparse kernels (O(n)).
#
# **Setup.** Opened from the repository or its `notebooks/` folder, this notebook finds what
# it needs by itself. Outside the repository, set SPARSEATTN_ROOT to the sparseattn checkout
# (the folder with python/ and data/, after `make python` there) before starting Jupyter.

# %%
import json
import os
import sys
from collections import defaultdict

# Where the repository is (Setup, above): SPARSEATTN_ROOT, else the folder Jupyter started
# in, the repository itself or its notebooks/. Anywhere else this cell stops with SETUP.
SETUP = ("Outside the repository, set SPARSEATTN_ROOT to the sparseattn checkout (the folder "
         "with python/ and data/, after `make python` there) before starting Jupyter.")
_cwd = os.getcwd()
ROOT = os.environ.get("SPARSEATTN_ROOT") or (
    os.path.dirname(_cwd) if os.path.basename(_cwd) == "notebooks" else _cwd)
if not os.path.isfile(os.path.join(ROOT, "python", "sparseattn", "__init__.py")):
    raise FileNotFoundError(f"{ROOT} is not the sparseattn repository. {SETUP}")
sys.path.insert(0, os.path.join(ROOT, "python"))  # the in-place build of `make python`

import matplotlib.pyplot as plt
import numpy as np

bench = json.load(open(os.path.join(ROOT, "docs", "figures", "bench_cpu.json")))
ctx = bench["context"]
print("machine:", ctx["num_cpus"], "CPUs, load average", ctx["load_avg"], "- mode", ctx["mode"])

# %% [markdown]
# Each entry's name is `impl/pattern label/D<head_dim>/seq_len:<n>/...`; the fields we use
# are `real_time` (ms, wall clock), `peak_bytes` (the kernel's peak working memory) and
# `seq_len`.

# %%
series = defaultdict(list)   # (impl, pattern) -> [(n, ms, bytes)]
for b in bench["benchmarks"]:
    if "seq_len" not in b or b.get("run_type") != "iteration":
        continue
    impl, label = b["name"].split("/")[:2]
    series[(impl, label)].append((int(b["seq_len"]), b["real_time"], b["peak_bytes"]))
for key in series:
    series[key].sort()
print(len(series), "series, e.g.", sorted(series)[:3])

def slope(points, col, n_min):
    pts = [p for p in points if p[0] >= n_min]
    return np.polyfit(np.log([p[0] for p in pts]), np.log([p[col] for p in pts]), 1)[0]

# %% [markdown]
# ## Optimized CPU kernels: dense against sparse
#
# Fits on n ≥ 2048, as docs/benchmarks.md does (below that, fixed costs dominate).

# %%
cpu = {key: pts for key, pts in series.items() if key[0].startswith("cpu_k") and len(pts) >= 3}
fits = {}
fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
for (impl, label), pts in sorted(cpu.items()):
    st, sm = slope(pts, 1, 2048), slope(pts, 2, 2048)
    fits[(impl, label)] = (st, sm)
    n = [p[0] for p in pts]
    ax[0].loglog(n, [p[1] for p in pts], "o-", ms=3, label=f"{impl} {label} ({st:.2f})")
    ax[1].loglog(n, [p[2] / 2**20 for p in pts], "o-", ms=3, label=f"{impl} {label} ({sm:.2f})")
ax[0].set_title("time (slope)"); ax[0].set_ylabel("ms"); ax[1].set_title("peak memory (slope)")
ax[1].set_ylabel("MiB")
for a in ax:
    a.set_xlabel("seq_len"); a.legend(fontsize=6)
plt.tight_layout(); plt.show()
for (impl, label), (st, sm) in sorted(fits.items()):
    print(f"{impl:24s} {label:40s} time slope {st:5.2f}  memory slope {sm:5.2f}")

# %% [markdown]
# Dense (`cpu_k01_dense_flash`, and the generic tile kernel `cpu_k06_generic_tiles` given the
# dense pattern) is O(n²) in time but O(n) in memory — FlashAttention's
# tiling (notebook 04) never holds the n×n matrix. The sparse kernels are O(n) in both.

# %%
dense = [v for (_, label), v in fits.items() if label == "dense"]
sparse = [v for (_, label), v in fits.items() if label != "dense"]
assert dense and sparse
for st, sm in dense:
    assert 1.7 < st < 2.4 and 0.7 < sm < 1.3
for st, sm in sparse:
    assert 0.7 < st < 1.4 and 0.7 < sm < 1.3

# %% [markdown]
# ## The reference ladder's first step holds the n×n matrix
#
# `a0_dense` (notebook 01) materializes the scores: its peak memory grows as n².

# %%
a0 = [pts for (impl, _), pts in series.items() if impl == "a0_dense"][0]
s_mem = np.polyfit(np.log([p[0] for p in a0]), np.log([p[2] for p in a0]), 1)[0]
s_time = np.polyfit(np.log([p[0] for p in a0]), np.log([p[1] for p in a0]), 1)[0]
print("a0_dense at", [p[0] for p in a0], f": time slope {s_time:.2f}, memory slope {s_mem:.2f}")
assert 1.7 < s_mem < 2.3 and 1.7 < s_time < 2.5
