# %% [markdown]
# # 04 — Online softmax and tiling (FlashAttention)
#
# Notebook 01 held the whole score row before normalizing it. FlashAttention (Dao et al.
# 2022, Alg. 1; FlashAttention-2, Dao 2023, Alg. 1) visits the keys one tile at a time and
# keeps per query only a running maximum `m`, a running sum `l` and an unnormalized output
# `acc`, rescaling them whenever `m` grows:
#
#     m_new = max(m, rowmax(S_j))
#     P_j   = exp(S_j − m_new)
#     l     = exp(m − m_new) · l + rowsum(P_j)
#     acc   = exp(m − m_new) · acc + P_j V_j
#     end:  o = acc / l,   lse = m + log l
#
# This is the one notebook that computes by hand, to teach the recurrence; then the
# library's tiled reference `reference/a5_flash_tiled.cpp` (`impl="a5_flash_tiled"`) is
# checked against the oracle (contract §4).
#
# **Setup.** Opened from the repository or its `notebooks/` folder, this notebook finds what
# it needs by itself. Outside the repository, set SPARSEATTN_ROOT to the sparseattn checkout
# (the folder with python/ and data/, after `make python` there) before starting Jupyter.

# %%
import os
import sys

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

# %% [markdown]
# ## A tiny example: one query, 8 keys, tiles of 2
#
# The keys are chosen so that the maximum score arrives late (tile 3), forcing a rescale.

# %%
q = np.array([[1.0, 0.5]])
k = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [2, 1], [3, 2], [0, -1], [1, -1]], dtype=float)
v = np.arange(16, dtype=float).reshape(8, 2)
scale = 1 / np.sqrt(2)
s = scale * (q @ k.T)[0]
print("scores:", np.round(s, 4))
Bc = 2

# %%
m, l, acc = -np.inf, 0.0, np.zeros(2)
trace = []
for t in range(0, len(s), Bc):
    S_j = s[t:t + Bc]
    m_new = max(m, S_j.max())
    alpha = np.exp(m - m_new)          # 0 on the first tile (m = -inf)
    P_j = np.exp(S_j - m_new)
    l = alpha * l + P_j.sum()
    acc = alpha * acc + P_j @ v[t:t + Bc]
    m = m_new
    trace.append((t // Bc, m, alpha, l))
    print(f"tile {t // Bc}: m = {m:.4f}  rescale exp(m_old - m_new) = {alpha:.4f}  l = {l:.4f}")
o = acc / l
lse = m + np.log(l)
print("o =", o, " lse =", lse)

# %%
tiles = [x[0] for x in trace]
fig, ax = plt.subplots(1, 2, figsize=(7, 2.6))
ax[0].step(tiles, [x[1] for x in trace], where="post", marker="o"); ax[0].set_title("running max m")
ax[1].step(tiles, [x[3] for x in trace], where="post", marker="o"); ax[1].set_title("running sum l (relative to current m)")
for a in ax:
    a.set_xlabel("tile"); a.set_xticks(tiles)
plt.tight_layout(); plt.show()

# %% [markdown]
# The running answer equals the one-shot softmax of the oracle, to rounding:

# %%
o_ref, lse_ref = sa.attend(q, k, v, sa.Pattern.dense())
print("oracle o =", o_ref[0], " lse =", lse_ref[0])
assert np.allclose(o, o_ref[0], rtol=0, atol=1e-13) and abs(lse - lse_ref[0]) < 1e-13
assert any(x[2] < 1 for x in trace[1:])  # m grew after tile 0: a real rescale happened

# %% [markdown]
# Drop the rescale factor and the answer is wrong: partial sums taken against an old
# maximum are mixed with new ones.

# %%
m2, l2, acc2 = -np.inf, 0.0, np.zeros(2)
for t in range(0, len(s), Bc):
    S_j = s[t:t + Bc]
    m2 = max(m2, S_j.max())
    P_j = np.exp(S_j - m2)
    l2 += P_j.sum(); acc2 += P_j @ v[t:t + Bc]   # no exp(m_old - m_new)
print("without rescaling:", acc2 / l2)
assert np.abs(acc2 / l2 - o_ref[0]).max() > 1e-3

# %% [markdown]
# ## The tiled reference a5 against the oracle
#
# `a5_flash_tiled` runs the same recurrence over square tiles of the pattern's layout
# (`pattern/layout.h`): tiles the layout does not list are skipped, full tiles are
# computed without a mask, partial ones masked element by element. Which tiles a window
# pattern lists, at a tile of 16:

# %%
n = 200
pat = sa.Pattern.window(20)
tm = pat.block_mask(n, block_size=16).to_dense()[0]
plt.figure(figsize=(3.5, 3.5))
plt.imshow(tm, cmap="viridis", vmin=0, vmax=2)
plt.title("tiles: yellow full, teal partial, purple skipped", fontsize=9)
plt.xlabel("key tile"); plt.ylabel("query tile"); plt.show()
print("listed", (tm > 0).sum(), "of", tm.size, "tiles;", (tm == 2).sum(), "full")
assert (tm == 0).sum() > 0 and (tm == 1).sum() > 0

# %% [markdown]
# On several patterns, with a length that is not a multiple of any tile, a5 matches the
# float64 oracle within its tolerance (`atol = rtol = 1e-12`, contract §4.3). It is not
# bit-identical: the rescaling rounds differently, and the report says by how much.

# %%
rng = np.random.default_rng(0)
qq, kk, vv = (rng.standard_normal((2, n, 16)) for _ in range(3))
patterns = [sa.Pattern.dense(), sa.Pattern.dense(causal=True), pat,
            sa.Pattern.longformer(8, global_tokens=[0, 100]), sa.Pattern.bigbird(16, 2, seed=0)]
for p in patterns:
    o5, lse5 = sa.attend(qq, kk, vv, p, impl="a5_flash_tiled")
    r = sa.check(qq, kk, vv, p, o5, lse5)
    print(f"{p!r:60s} max |o - oracle| = {r.o.max_abs_error:.1e}")
    assert r.passed and r.o.max_abs_error < 1e-13
