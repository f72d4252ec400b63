# %% [markdown]
# # 02 — Sliding, dilated and global windows
#
# The Longformer family (Beltagy et al. 2020, §3.1): each query attends a window of
# neighbours, optionally dilated, plus a few global tokens. Each mask is drawn right after it
# is defined, from `Pattern.mask` — the same canonical layout every kernel reads
# (`pattern/materialize.cpp`; contract §3.3, §3.4; docs/patterns.md).
# Then the peers' window conventions side by side (docs/notation.md), the most common source
# of a "my implementation differs" report.
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

N = 16  # small enough to read every cell of the mask


def show(mask, title, ax=None):
    """Draws a mask: white = may attend (True), dark = masked (contract §3.1 polarity)."""
    ax = ax or plt.figure(figsize=(3, 3)).gca()
    ax.imshow(mask, cmap="gray", vmin=0, vmax=1)
    ax.set_title(title, fontsize=9); ax.set_xlabel("key j"); ax.set_ylabel("query i")

# %% [markdown]
# ## Sliding window
#
# `Pattern.window(W)`: query i attends keys i−W … i+W, clipped at the ends. W is
# **one-sided** (contract §3.3): W = 2 allows 5 keys.

# %%
win = sa.Pattern.window(2)
M_win = win.mask(N)
show(M_win, "window(2)"); plt.show()
assert list(np.flatnonzero(M_win[5])) == [3, 4, 5, 6, 7]
assert M_win.sum(axis=1).tolist()[:3] == [3, 4, 5]  # clipped at the start
i, j = np.indices((N, N))
assert np.array_equal(M_win, np.abs(i - j) <= 2)

# %% [markdown]
# ## Dilated window
#
# `Pattern.window(W, dilation=D)`: keys i + D·t for |t| ≤ W — the same number of keys
# spread D times wider (Longformer §3.1, "dilated sliding window").

# %%
dil = sa.Pattern.window(2, dilation=2)
M_dil = dil.mask(N)
show(M_dil, "window(2, dilation=2)"); plt.show()
assert list(np.flatnonzero(M_dil[8])) == [4, 6, 8, 10, 12]
assert np.array_equal(M_dil, (np.abs(i - j) <= 4) & ((i - j) % 2 == 0))

# %% [markdown]
# ## Causal window
#
# `causal=True` keeps only keys at or before the query: i−W … i (a decoder's window).

# %%
cau = sa.Pattern.window(2, causal=True)
M_cau = cau.mask(N)
show(M_cau, "window(2, causal=True)"); plt.show()
assert list(np.flatnonzero(M_cau[5])) == [3, 4, 5]
assert not np.any(np.triu(M_cau, 1))

# %% [markdown]
# ## Global tokens
#
# `Pattern.longformer(W, global_tokens=[...])`: a global token attends every key and is
# attended by every query (contract §3.4) — the `[CLS]` token of a classifier, the question
# tokens of QA (Longformer §3.1).

# %%
lf = sa.Pattern.longformer(2, global_tokens=[0, 10])
M_lf = lf.mask(N)
show(M_lf, "longformer(2, global_tokens=[0, 10])"); plt.show()
assert M_lf[0].all() and M_lf[:, 0].all() and M_lf[10].all() and M_lf[:, 10].all()
assert np.array_equal(M_lf, M_win | np.isin(i, [0, 10]) | np.isin(j, [0, 10]))
info = lf.info(N)
print(info["nnz"], "allowed pairs of", info["dense_pairs"], "- density", round(info["density"], 3))
assert info["nnz"] == M_lf.sum()

# %% [markdown]
# ## The peers' conventions, side by side
#
# The same picture — 2 keys on each side — has a different number in each library
# (docs/notation.md has the full table):
#
# | library | parameter | meaning |
# |---|---|---|
# | sparseattn | `window=2` | one-sided: i−2 … i+2 |
# | Longformer paper | w = 4 | "½w tokens on each side" |
# | HF `LongformerModel` | `attention_window=4` | total; one_sided = attention_window // 2 |
# | FlashAttention | `window_size=(2, 2)` | (left, right) |
# | FlexAttention | `abs(q_idx - kv_idx) <= 2` | a user predicate |
#
# Each peer's rule, written as its own predicate, gives the library's `window(2)` mask:

# %%
hf_attention_window = 4
hf = np.abs(i - j) <= hf_attention_window // 2
left, right = 2, 2
flash = (j >= i - left) & (j <= i + right)
flex = np.abs(i - j) <= 2
for name, m in [("HF attention_window=4", hf), ("FlashAttention (2, 2)", flash), ("FlexAttention", flex)]:
    assert np.array_equal(m, M_win), name
print("HF attention_window = 4  ==  sparseattn window = 2  ==  FlashAttention window_size = (2, 2)")

# %% [markdown]
# The classic mistake: passing HF's total `attention_window` as the one-sided width.
# The mask doubles, and the check against the oracle (notebook 08) fails on almost every
# element — the report's hint names this very convention.

# %%
M_wrong = sa.Pattern.window(hf_attention_window).mask(N)
fig, ax = plt.subplots(1, 2, figsize=(6, 3))
show(M_win, "window(2) = HF attention_window 4", ax[0])
show(M_wrong, "window(4): HF's 4 taken as one-sided", ax[1])
plt.tight_layout(); plt.show()
assert M_wrong[8].sum() == 9 and M_win[8].sum() == 5

rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((2, 64, 8)) for _ in range(3))
o_wrong, _ = sa.attend(q, k, v, sa.Pattern.window(4))
report = sa.check(q, k, v, sa.Pattern.window(2), o_wrong)
print(report.summary())
assert not report.passed and "attention_window = 2 * window" in report.summary()

# %% [markdown]
# ## The kernels serve these patterns
#
# The optimized CPU kernels for windows (`optimized/cpu/k02_window_band.cpp`,
# `k03_window_dilated.cpp`, `k04_longformer.cpp`) match the oracle on every pattern above,
# within float32's tolerance (contract §4.3).

# %%
for pattern, impl in [(win, "cpu_k02_window_band"), (dil, "cpu_k03_window_dilated"),
                      (lf, "cpu_k04_longformer")]:
    o, lse = sa.attend(q, k, v, pattern, impl=impl)
    r = sa.check(q, k, v, pattern, o, lse)
    print(f"{impl:24s} {r.o.line()}")
    assert r.passed
