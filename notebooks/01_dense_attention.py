# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 — Dense attention, step by step
#
# What every other notebook builds on: the definition of attention (Vaswani et al. 2017,
# §3.2.1, eq. 1), computed one step at a time on a tiny example, then checked against the
# project's own definition, the ladder's step 0 `reference/a0_dense.cpp`. Then the reason
# sparse attention exists: the dense computation costs O(n²) time **and** memory, measured
# here with `sparseattn.attend`.
#
# Conventions: docs/contract.md §2 (definition, lse), §4 (scale). Every number that matters
# is asserted, so running this notebook (`make notebooks`) checks it.
#
# **Setup.** Opened from the repository or its `notebooks/` folder, this notebook finds what
# it needs by itself. Outside the repository, set SPARSEATTN_ROOT to the sparseattn checkout
# (the folder with python/ and data/, after `make python` there) before starting Jupyter.

# %%
import os
import sys
import time

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
try:
    import sparseattn as sa
except ImportError as e:  # the checkout, without `make python` run in it
    raise ImportError(f"{e}; run `make python` in {ROOT}. {SETUP}") from None

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## A tiny example: 4 tokens, head dimension 2
#
# Small integers, so every number below can be checked with a calculator.
# Shapes follow contract §1: `[seq_len, head_dim]` for one head.

# %%
q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
k = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [0.0, 0.0]])
v = np.array([[1.0, 2.0], [3.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
n, d = q.shape
scale = 1 / np.sqrt(d)  # the default scale (contract §4)

# %% [markdown]
# **Step 1 — scores.** `S = scale · Q Kᵀ`, one row per query, one column per key
# (eq. 1 of Vaswani et al.; `a0_dense.cpp` materializes exactly this matrix).

# %%
S = scale * q @ k.T
print(S)
assert S.shape == (n, n)
assert np.isclose(S[3, 0], 2 / np.sqrt(2))  # q3 . k0 = 2, times 1/sqrt(2)

# %%
plt.figure(figsize=(3, 3))
plt.imshow(S, cmap="viridis")
plt.colorbar(label="score")
plt.xlabel("key j"); plt.ylabel("query i"); plt.title("S = scale · Q Kᵀ")
plt.show()

# %% [markdown]
# **Step 2 — the stable softmax.** Subtract each row's maximum before `exp` (contract §2):
# softmax is unchanged by a shift, and every exponent is then ≤ 0, so nothing overflows.

# %%
m = S.max(axis=1, keepdims=True)   # row maximum
E = np.exp(S - m)                  # each entry in (0, 1], the maximum gives exactly 1
l = E.sum(axis=1, keepdims=True)   # row sum
P = E / l                          # attention weights, each row sums to 1
print("m =", m.ravel()); print("l =", l.ravel()); print(P)
assert np.allclose(P.sum(axis=1), 1.0)
assert np.all(E.max(axis=1) == 1.0)

# %%
plt.figure(figsize=(3, 3))
plt.imshow(P, cmap="magma", vmin=0, vmax=1)
plt.colorbar(label="weight")
plt.xlabel("key j"); plt.ylabel("query i"); plt.title("P = softmax(S)")
plt.show()

# %% [markdown]
# Why the shift matters: with large scores the naive `exp` overflows to `inf`, and
# `inf / inf` is NaN. The shifted one gives the right answer.

# %%
big = np.array([1000.0, 999.0, 998.0])
with np.errstate(over="ignore", invalid="ignore"):
    naive = np.exp(big) / np.exp(big).sum()
stable = np.exp(big - big.max()) / np.exp(big - big.max()).sum()
print("naive:", naive, " stable:", stable)
assert np.all(np.isnan(naive))
assert np.isclose(stable[0], 1 / (1 + np.exp(-1) + np.exp(-2)))

# %% [markdown]
# **Step 3 — output and log-sum-exp.** `O = P V`; `lse_i = m_i + log l_i
# = log Σ_j exp(S_ij)` (natural log), the number a backward pass (docs/backward.md) and the
# tiled kernels (notebook 04) keep instead of P.

# %%
o = P @ v
lse = m.ravel() + np.log(l.ravel())
print("o =\n", o); print("lse =", lse)
assert np.allclose(lse, np.log(np.exp(S).sum(axis=1)))  # safe here: the scores are small

# %% [markdown]
# **Step 4 — the library agrees.** `sparseattn.attend` with `impl="a0_dense"` runs
# `reference/a0_dense.cpp` (float64); the default `impl` is the oracle `a1_dense_masked`
# (contract §4.1). Both must give our numbers to rounding.

# %%
o0, lse0 = sa.attend(q, k, v, sa.Pattern.dense(), impl="a0_dense")
o1, lse1 = sa.attend(q, k, v, sa.Pattern.dense())
print(np.abs(o0 - o).max(), np.abs(lse0 - lse).max())
assert np.allclose(o0, o, rtol=0, atol=1e-14) and np.allclose(lse0, lse, rtol=0, atol=1e-14)
assert np.allclose(o1, o, rtol=0, atol=1e-14) and np.allclose(lse1, lse, rtol=0, atol=1e-14)

# %% [markdown]
# ## Why dense attention is O(n²)
#
# `a0_dense` holds the whole score matrix of one head: n² doubles. Both the work
# (n² dot products) and that buffer grow with the square of the sequence length. We time
# `sa.attend` at a few sizes (best of 3, CPU time of this process: `a0_dense` is serial, and
# CPU time is not stretched by other jobs sharing the machine) and read the peak memory of this process from
# Linux (`VmHWM`, reset before each call), then fit the slope of log(cost) against log(n):
# 2 means O(n²), 1 means O(n).

# %%
def peak_rss_during(fn):
    """Bytes the process's peak resident memory rose while fn ran (Linux; None elsewhere)."""
    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
    except OSError:
        fn()
        return None
    before = status("VmRSS")
    fn()
    return status("VmHWM") - before

rng = np.random.default_rng(0)
sizes = [512, 1024, 2048, 4096]
times, peaks = [], []
for N in sizes:
    qq, kk, vv = (rng.standard_normal((1, 1, N, 16)) for _ in range(3))
    call = lambda: sa.attend(qq, kk, vv, sa.Pattern.dense(), impl="a0_dense")
    peaks.append(peak_rss_during(call))
    best = np.inf
    for _ in range(3):
        t = time.process_time(); call(); best = min(best, time.process_time() - t)
    times.append(best)
for N, t, p in zip(sizes, times, peaks):
    print(f"n {N:5d}: {1e3 * t:8.1f} ms, peak +{(p or 0) / 2**20:6.1f} MiB (n² doubles: {8 * N * N / 2**20:6.1f} MiB)")

# %%
slope_time = np.polyfit(np.log(sizes[1:]), np.log(times[1:]), 1)[0]
print(f"time slope {slope_time:.2f}")
assert 1.6 < slope_time < 2.6, slope_time  # O(n) would give 1
if peaks[0] is not None:
    slope_mem = np.polyfit(np.log(sizes[1:]), np.log(peaks[1:]), 1)[0]
    print(f"memory slope {slope_mem:.2f}")
    assert 1.7 < slope_mem < 2.3, slope_mem
    assert peaks[-1] >= 0.9 * 8 * sizes[-1] ** 2  # about the n x n score matrix

# %%
fig, ax = plt.subplots(1, 2, figsize=(8, 3))
ax[0].loglog(sizes, times, "o-"); ax[0].set_title(f"time, slope {slope_time:.2f}")
ax[0].set_xlabel("seq_len n"); ax[0].set_ylabel("s")
if peaks[0] is not None:
    ax[1].loglog(sizes, np.array(peaks) / 2**20, "o-", label="measured")
    ax[1].loglog(sizes, 8 * np.array(sizes) ** 2 / 2**20, "--", label="n² doubles")
    ax[1].set_title(f"peak memory, slope {slope_mem:.2f}"); ax[1].legend()
ax[1].set_xlabel("seq_len n"); ax[1].set_ylabel("MiB")
plt.tight_layout(); plt.show()

# %% [markdown]
# The time slope is close to 2 and the memory rise is the n×n matrix itself. Notebook 04
# removes the n² memory (FlashAttention's tiling keeps only O(n) per head); notebooks 02–03
# remove the n² work by attending fewer keys; notebook 07 reads both off the benchmarks.
