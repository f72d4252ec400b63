# %% [markdown]
# # 05 — Information flow through a stack of sparse layers
#
# A sparse layer lets query i read only a few keys; a stack of layers lets information
# travel further, hop by hop. `sparseattn.reach` (the graph module, `graph/`; contract §6;
# docs/information-flow.md defines every number) measures how far: reachability per layer,
# mixing depth, shortest paths, spectral gap. BigBird's graph argument (Zaheer et al. 2020, §2) is
# that global and random edges make the graph an expander, so a few layers connect
# everything; a pure window needs about n / W layers (end to end, W tokens per hop).
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

N = 64
patterns = {
    "window(2)": sa.Pattern.window(2),
    "window(2, dilation=2)": sa.Pattern.window(2, dilation=2),
    "longformer(2, global [0])": sa.Pattern.longformer(2, global_tokens=[0]),
    "bigbird(8, 1)": sa.Pattern.bigbird(8, 1, seed=0),
}

# %% [markdown]
# ## Reachability: the receptive field grows W per side per layer
#
# `reach(..., token=32)` gives, after each layer, how many tokens can influence token 32
# (`coverage`) and how far the farthest one is (`span`). With a window of 2 the field grows
# by 2 on each side per layer: 5, 9, 13, …

# %%
r = sa.reach(patterns["window(2)"], N, layers=20, token=32)
print("coverage:", r["coverage"])
plt.figure(figsize=(4, 2.6))
plt.plot(range(1, 21), r["coverage"], "o-"); plt.xlabel("layers L"); plt.ylabel("tokens reaching 32")
plt.title("window(2), n = 64"); plt.show()
assert r["coverage"][:15] == [5 + 4 * L for L in range(15)]
assert r["coverage"][-1] == N

# %% [markdown]
# ## Mixing depth and connected fraction
#
# The mixing depth is the number of layers after which every token reaches every other
# (`None` if never). A window needs ⌈(n−1)/W⌉ = 32 layers; a dilation of 2 **never** mixes
# (odd and even positions stay apart); one global token, or BigBird's blocks, mix in 2.

# %%
res = {name: sa.reach(p, N, layers=40) for name, p in patterns.items()}
plt.figure(figsize=(5, 3))
for name, rr in res.items():
    cf = rr["connected_fraction"]
    plt.plot(range(1, len(cf) + 1), cf, label=f"{name}: depth {rr['mixing_depth']}")
plt.xlabel("layers L"); plt.ylabel("connected fraction"); plt.xscale("log"); plt.legend(fontsize=7)
plt.show()
depth = {name: rr["mixing_depth"] for name, rr in res.items()}
print(depth)
assert depth["window(2)"] == 32
assert depth["window(2, dilation=2)"] is None
assert depth["longformer(2, global [0])"] == 2 and depth["bigbird(8, 1)"] == 2

# %% [markdown]
# ## Shortest paths
#
# A path carrying token 63 to token 0, each step an edge of the layer's graph (the next
# token may attend the previous one): with a window it
# walks 2 tokens per hop; with a global token it goes through the global token.

# %%
for name in ("window(2)", "longformer(2, global [0])", "bigbird(8, 1)"):
    pth = sa.reach(patterns[name], N, layers=40, path=(63, 0))["path"]
    print(f"{name:28s} {len(pth) - 1:2d} hops: {pth}")
    M = patterns[name].mask(N)
    assert all(M[b, a] or a == b for a, b in zip(pth, pth[1:]))  # each hop: b may attend a
w_path = sa.reach(patterns["window(2)"], N, layers=40, path=(63, 0))["path"]
assert len(w_path) - 1 == 32

# %% [markdown]
# ## Spectral gap
#
# 1 − |λ₂| of the layer's random-walk matrix (uniform attention plus the residual): near 0
# for a ring of windows (slow mixing), large for an expander (docs/information-flow.md).

# %%
gaps = {name: rr["spectral_gap"] for name, rr in res.items() if rr["spectral_gap"] is not None}
for name, g in gaps.items():
    print(f"{name:28s} spectral gap {g:.4f}")
plt.figure(figsize=(4, 2.4)); plt.barh(list(gaps), list(gaps.values())); plt.xscale("log")
plt.xlabel("spectral gap"); plt.show()
assert gaps["bigbird(8, 1)"] > 50 * gaps["window(2)"]

# %% [markdown]
# ## Rollout: reaching is not the same as being able to use
#
# Reachability says *whether* token 0 can influence token 32 after L layers. How much it
# can, with attention spread uniformly over each query's keys plus the residual, is
# attention rollout (Abnar & Zuidema 2020, §3): Ã = ½·W + ½·I, R_L = Ã_L ⋯ Ã₁. The library
# computes it in C++ for the CLI (`sparseattn reach --token`, `graph/rollout.cpp`); the
# Python package returns the graph measures only, so here it is built from `Pattern.mask`
# — and its support is asserted equal to `reach`'s coverage, the library's number.

# %%
def rollout(pattern, n, layers):
    M = pattern.mask(n).astype(float)
    W = M / M.sum(axis=1, keepdims=True)
    A = 0.5 * W + 0.5 * np.eye(n)
    R, out = np.eye(n), []
    for _ in range(layers):
        R = A @ R
        out.append(R.copy())
    return out

Rw = rollout(patterns["window(2)"], N, 40)
for L in range(20):
    assert (Rw[L][32] > 0).sum() == r["coverage"][L]   # support = reachability (tested in C++ too)

# %% [markdown]
# After 32 layers token 0 *reaches* token 63 under the window — but its share of token 63's
# mixture is tiny; under BigBird it reaches in 2 layers with a share of the same order as
# an even spread (1/n).

# %%
Rb = rollout(patterns["bigbird(8, 1)"], N, 40)
share_w = Rw[31][63, 0]
share_b = Rb[1][63, 0]
print(f"window, L = 32: share of token 0 in token 63 = {share_w:.2e}  (1/n = {1 / N:.2e})")
print(f"bigbird, L = 2: share of token 0 in token 63 = {share_b:.2e}")
assert share_w > 0 and share_w < 1e-6
assert share_b > 0.1 / N

plt.figure(figsize=(5, 2.6))
plt.semilogy(range(N), Rw[31][63] + 1e-30, label="window(2), L=32")
plt.semilogy(range(N), Rb[1][63] + 1e-30, label="bigbird(8,1), L=2")
plt.ylim(1e-20, 1); plt.xlabel("source token j"); plt.ylabel("rollout R[63, j]"); plt.legend(fontsize=7)
plt.show()

# %% [markdown]
# The graph measures are upper bounds on what a model *can* move; a trained model may put
# weight 10⁻⁹ on the one edge a path needs (docs/information-flow.md, Caveats). Notebook 09
# looks at what real heads actually attend.
