# %% [markdown]
# # 09 — Real data: what trained heads attend
#
# The queries and keys of a real encoder on a real document: sentence-transformers'
# all-MiniLM-L6-v2 (12 heads of dimension 32) on the GPL-3 text, layers 0 and 5
# (data/README.md says how they were extracted; contract §1.5). `sparseattn.analyze`
# (`realdata/locality.cpp`; docs/real-data.md defines every number) runs the dense softmax
# per head and measures how much of its mass a pattern would keep:
#
# - **mass** M(S): mean over rows of Σ_{j∈S(i)} P_ij — 1 means the pattern loses nothing;
# - **uniform** U(S): the mass an evenly spread head would put there (|S(i)| / n);
# - **bias** M / U: > 1 when the head prefers those keys;
# - **mean distance**: Σ_j P_ij |j − i|, in tokens.
#
# We use the first 512 tokens, the model's trained positions (beyond 512 the positions are
# extrapolated; docs/real-data.md, "Which heads are local").
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

N = 512
data = {L: {t: np.load(os.path.join(ROOT, "data", f"layer{L}_{t}.npy"))[:, :, :N] for t in "qkv"}
        for L in (0, 5)}
print({t: (a.shape, a.dtype) for t, a in data[0].items()})
assert data[0]["q"].shape == (1, 12, N, 32)

# %% [markdown]
# ## Mass kept by a window, per head

# %%
windows = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
res = {L: sa.analyze(data[L]["q"], data[L]["k"], sa.Pattern.window(16), windows=windows)
       for L in (0, 5)}
mass = {L: np.array([[w["mass"] for w in h["windows"]] for h in res[L]["heads"]]) for L in (0, 5)}
fig, ax = plt.subplots(1, 2, figsize=(9, 3), sharey=True)
for a, L in zip(ax, (0, 5)):
    for h in range(12):
        a.semilogx(windows, mass[L][h], lw=1)
    a.semilogx(windows, [res[L]["heads"][0]["windows"][i]["uniform"] for i in range(len(windows))],
               "k--", lw=2, label="uniform head")
    a.set_title(f"layer {L}: mass kept by window(w), 12 heads"); a.set_xlabel("one-sided w")
    a.legend(fontsize=8)
ax[0].set_ylabel("softmax mass kept"); plt.tight_layout(); plt.show()

for L in (0, 5):
    assert np.all(np.diff(mass[L], axis=1) >= -1e-12)   # a wider window never keeps less
    assert np.allclose(mass[L][:, -1], 1.0)               # w = n keeps everything

# %% [markdown]
# ## Which heads are local
#
# Per head: the **bias** of a window of 16 (its mass over the mass a uniform head would put
# there), the smallest window keeping half of the mass, and the mean attention distance.
# A head with a large bias is local and cheap to sparsify with a window; a head with bias
# near 1 spreads its attention as evenly as a uniform head would, and any sparse pattern of
# density δ keeps only about δ of its mass.

# %%
def w_for(row, share):
    return windows[int(np.argmax(row >= share))]

bias16, dist = {}, {}
for L in (0, 5):
    i16 = windows.index(16)
    bias16[L] = np.array([h["windows"][i16]["bias"] for h in res[L]["heads"]])
    dist[L] = np.array([h["mean_distance"] for h in res[L]["heads"]])
    print(f"layer {L}: bias of window(16) per head {np.round(bias16[L], 1).tolist()}")
    print(f"         window keeping 50% of the mass {[w_for(m, 0.5) for m in mass[L]]}")
    print(f"         mean distance (tokens)         {np.round(dist[L]).astype(int).tolist()}")
local0 = int((mass[0][:, windows.index(16)] >= 0.5).sum())
local5 = int((mass[5][:, windows.index(16)] >= 0.5).sum())
print(f"heads keeping half their mass within 16 tokens: layer 0 {local0}, layer 5 {local5}")
assert local0 >= 2 and local5 == 0
assert bias16[0].max() > 2 * bias16[5].max()   # layer 0 has local heads, layer 5 does not
assert dist[0].min() < 0.5 * dist[5].min()

# %%
fig, ax = plt.subplots(figsize=(6, 2.6))
x = np.arange(12)
for off, L in ((-0.2, 0), (0.2, 5)):
    ax.bar(x + off, bias16[L], width=0.4, label=f"layer {L}")
ax.axhline(1, color="k", ls="--", lw=1)
ax.set_xlabel("head"); ax.set_ylabel("bias of window(16)"); ax.set_xticks(x); ax.legend()
plt.show()

# %% [markdown]
# ## Window, Longformer and BigBird at a similar cost
#
# `analyze` reports the mass any pattern keeps (`pattern_mass`). BigBird with blocks of 16
# and one random block, against a window and a Longformer (window plus global token 0, the
# `[CLS]` token) of about the same density.

# %%
bb = sa.Pattern.bigbird(16, 1, seed=0)
dens = bb.info(N)["density"]
w_eq = int(round(dens * N / 2))
cands = {"bigbird(16, 1)": bb, f"window({w_eq})": sa.Pattern.window(w_eq),
         f"longformer({w_eq}, [0])": sa.Pattern.longformer(w_eq, global_tokens=[0])}
print(f"density: " + ", ".join(f"{n} {p.info(N)['density']:.3f}" for n, p in cands.items()))
kept = {L: {n: np.array([h["pattern_mass"] for h in sa.analyze(data[L]["q"], data[L]["k"], p,
                                                                 windows=[1])["heads"]])
            for n, p in cands.items()} for L in (0, 5)}
for L in (0, 5):
    print(f"layer {L}: " + "; ".join(f"{n} median {np.median(m):.2f} min {m.min():.2f}"
                                     for n, m in kept[L].items()))
    for m in kept[L].values():
        assert np.all((0 < m) & (m <= 1))
# layer 5 spreads out: every pattern keeps about its density, whichever it is
assert all(abs(np.median(m) - dens) < 0.15 for m in kept[5].values())

# %% [markdown]
# ## What dropping that mass does to the output
#
# Mass dropped is renormalized over the kept keys, so the output moves. The oracle with the
# window pattern against dense, on layer 0 (relative error per head):

# %%
q, k, v = (data[0][t].astype(np.float64) for t in "qkv")
o_dense, _ = sa.attend(q, k, v, sa.Pattern.dense())
errs = []
for w in (8, 64, 256):
    o_w, _ = sa.attend(q, k, v, sa.Pattern.window(w))
    e = np.linalg.norm(o_w - o_dense, axis=(2, 3)) / np.linalg.norm(o_dense, axis=(2, 3))
    errs.append(float(np.median(e)))
    print(f"window({w:3d}): median relative output error over heads {errs[-1]:.3f}")
assert errs[0] > errs[1] > errs[2]

# %% [markdown]
# ## What this means for choosing a pattern
#
# - Read the curves per head: a pattern is only as good as the mass it keeps in the heads
#   that matter; a median hides the heads that spread out.
# - Here layer 0 has a few local heads (bias ≫ 1) and layer 5 none: its heads spread their
#   mass about evenly over the first 512 tokens, so every pattern of density δ keeps about δ
#   of it. A window suits the local heads; the others need more keys, or stay dense
#   (`Pattern.per_head` gives each head its own pattern).
# - docs/real-data.md runs the same measurement on all 4096 tokens and with the optimized
#   kernels' timings (`make demo`).
