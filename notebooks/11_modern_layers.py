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
# # 11 — The attention of current models: a gpt-oss and a Gemma 2 layer
#
# The models released in the last two years do not run the attention of the 2017 paper. A
# gpt-oss layer reads 64 query heads from 8 kv heads, keeps a 128-token causal window on
# every other layer, and adds one learned *sink* logit per head to each row's softmax. A
# Gemma 2 layer reads 16 query heads from 8 kv heads, slides a 4096-token window on every
# other layer, and caps every score with `50·tanh(s/50)`. This notebook builds one layer of
# each from the project's pieces — grouped kv heads (contract §2.7), the score pipeline
# (§2.8), sinks (§2.9), the causal window (§3.3) — writes the same layer by hand in NumPy,
# and checks that the two agree. Then it breaks the hand-written version the way real
# kernels broke and reads what `check` says.
#
# Sizes are scaled down (fewer heads, short sequences) so every cell runs in a second; the
# head ratios, the window rule and the constants are the models' (docs/models.md lists
# their sources). Every number that matters is asserted.
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


# %% [markdown]
# ## gpt-oss: grouped heads, a causal window of 128 keys, a sink per head
#
# gpt-oss-20b: 64 query heads over 8 kv heads (g = 8), head_dim 64, scale 1/8; its
# `sliding_window` 128 means keys `i − 127 … i` (window 127, causal, in this project's
# one-sided count); each query head has a learned sink logit σ_h. Here: 16 query heads over
# 2 kv heads (still g = 8), 160 tokens so that the window matters, head_dim 64.

# %%
rng = np.random.default_rng(0)
H_q, H_kv, n, d = 16, 2, 160, 64
g = H_q // H_kv
q = rng.standard_normal((1, H_q, n, d))
k = rng.standard_normal((1, H_kv, n, d))
v = rng.standard_normal((1, H_kv, n, d))
sinks = rng.normal(0.0, 1.0, H_q)  # learned weights in the model; any finite values here
window = sa.Pattern.window(127, causal=True)  # keys i-127 ... i
o_lib, lse_lib = sa.attend(q, k, v, window, scale=1 / 8, sinks=sinks)
o_lib.shape, lse_lib.shape

# %% [markdown]
# The same layer by hand, the way gpt-oss's reference code writes it: repeat each kv head
# g times in place (`h // g`), scores, the window mask, then the sink as one more score
# column that takes part in the softmax and is dropped afterwards.

# %%
def gpt_oss_layer(q, k, v, sinks, scale, width, repeat=np.repeat):
    kr, vr = repeat(k, g, axis=1), repeat(v, g, axis=1)        # [1, H_q, n, d]
    s = scale * np.einsum("bhid,bhjd->bhij", q, kr)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    s = np.where((j <= i) & (j > i - width), s, -np.inf)      # the 128 keys i-127 ... i
    col = np.broadcast_to(sinks[None, :, None, None], s.shape[:3] + (1,))
    s = np.concatenate([s, col], axis=-1)                     # the sink: one more column
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    lse = (m + np.log(p.sum(axis=-1, keepdims=True)))[..., 0]
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", p[..., :-1], vr), lse  # drop the sink's column

o_np, lse_np = gpt_oss_layer(q, k, v, sinks, 1 / 8, 128)
assert np.abs(o_np - o_lib).max() < 1e-12 and np.abs(lse_np - lse_lib).max() < 1e-12
report = sa.check(q, k, v, window, o_np, lse_np, scale=1 / 8, sinks=sinks)
assert report.passed, report.summary()
print("gpt-oss layer: the hand-written layer matches the oracle;",
      f"max |o| difference {np.abs(o_np - o_lib).max():.1e}")

# %% [markdown]
# What the sink does: each row gives `exp(σ_h − lse)` of its mass to a value of zero, so
# `o` shrinks. A row that would attend almost nothing sends most of its mass to the sink.

# %%
share = np.exp(sinks[None, :, None] - lse_lib)  # [1, H_q, n]
print("mass given to the sink, per head (mean over rows):", np.round(share[0].mean(axis=1), 3))
assert ((share > 0) & (share < 1)).all()

# %% [markdown]
# ### Broken on purpose
#
# Two mistakes kernels have shipped: ignoring the sinks (the layer then attends as if
# σ = −∞; one engine accepted gpt-oss's sinks and dropped them), and reading kv head
# `h mod H_kv` instead of `h // g` (kv heads tiled instead of repeated). `check` names each
# from the output alone.

# %%
def tiled(x, reps, axis):
    return np.tile(x, (1, reps, 1, 1))  # along `axis` 1: head h holds kv head h mod H_kv

o_bad, lse_bad = gpt_oss_layer(q, k, v, np.full(H_q, -np.inf), 1 / 8, 128)
r = sa.check(q, k, v, window, o_bad, lse_bad, scale=1 / 8, sinks=sinks)
print(r.probable_cause)
assert not r.passed and r.probable_cause.startswith("sinks ignored")

o_bad, lse_bad = gpt_oss_layer(q, k, v, sinks, 1 / 8, 128, repeat=tiled)
r = sa.check(q, k, v, window, o_bad, lse_bad, scale=1 / 8, sinks=sinks)
print(r.probable_cause)
assert not r.passed and "h mod H_kv" in r.probable_cause

# %% [markdown]
# ## Gemma 2: grouped heads, a softcapped score, a 4096-token window on alternate layers
#
# Gemma 2 9B: 16 query heads over 8 kv heads (g = 2), head_dim 256, the scale
# `query_pre_attn_scalar ** -0.5` = 256 ** -0.5, and `attn_logit_softcapping` 50: each
# scaled score becomes `50·tanh(s/50)` before the mask. Its local layers keep a causal
# window of 4096 keys; here a window of 31 over 96 tokens plays that part, with 4 query
# heads over 2 kv heads and head_dim 32, and q scaled up so that the cap bends the scores.

# %%
H_q, H_kv, n, d = 4, 2, 96, 32
g = H_q // H_kv
q = 40 * rng.standard_normal((1, H_q, n, d))
k = rng.standard_normal((1, H_kv, n, d))
v = rng.standard_normal((1, H_kv, n, d))
scale, cap = d ** -0.5, 50.0
local = sa.Pattern.window(31, causal=True)
o_lib, lse_lib = sa.attend(q, k, v, local, scale=scale, softcap=cap)

def gemma2_layer(q, k, v, scale, cap, width, cap_first=False):
    kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    dots = np.einsum("bhid,bhjd->bhij", q, kr)
    s = scale * cap * np.tanh(dots / cap) if cap_first else cap * np.tanh(scale * dots / cap)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    s = np.where((j <= i) & (j > i - width - 1), s, -np.inf)  # window 31: keys i-31 ... i
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    lse = (m + np.log(p.sum(axis=-1, keepdims=True)))[..., 0]
    return np.einsum("bhij,bhjd->bhid", p / p.sum(axis=-1, keepdims=True), vr), lse

o_np, lse_np = gemma2_layer(q, k, v, scale, cap, 31)
assert np.abs(o_np - o_lib).max() < 1e-12 and np.abs(lse_np - lse_lib).max() < 1e-12
raw = scale * np.einsum("bhid,bhjd->bhij", q, np.repeat(k, g, axis=1))
print(f"largest scaled score {np.abs(raw).max():.1f}, capped to "
      f"{cap * np.tanh(np.abs(raw).max() / cap):.1f}: the cap is doing work")
assert np.abs(raw).max() > cap
assert sa.check(q, k, v, local, o_np, lse_np, scale=scale, softcap=cap).passed

# %% [markdown]
# Gemma 2 support in an inference engine first dropped the cap; another early port capped
# `q·k` before the scale. Both are named:

# %%
o_nocap, lse_nocap = sa.attend(q, k, v, local, scale=scale)  # the cap dropped
r = sa.check(q, k, v, local, o_nocap, lse_nocap, scale=scale, softcap=cap)
print(r.probable_cause)
assert not r.passed and r.probable_cause.startswith("softcap missing")

o_early, lse_early = gemma2_layer(q, k, v, scale, cap, 31, cap_first=True)
r = sa.check(q, k, v, local, o_early, lse_early, scale=scale, softcap=cap)
print(r.probable_cause)
assert not r.passed and r.probable_cause.startswith("softcap applied before the scale")

# %% [markdown]
# ## What to take away
#
# - Grouped-query attention is a rule about *which kv head* a query head reads: `h // g`,
#   each kv head repeated in place. The shapes say it; no flag is needed.
# - A softcap and ALiBi change scores, a sink changes the denominator; none changes which
#   keys are allowed — that stays the pattern's job (contract §3).
# - Each has a classic way to be wrong, and the oracle's report names it from the output
#   alone: run `sparseattn check` (or `sa.check`) with the same `softcap`, `alibi_slopes`
#   and `sinks` your kernel was given.
