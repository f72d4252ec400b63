# %% [markdown]
# # 08 — The oracle for your own code
#
# Before porting a kernel to a GPU, one writes it in NumPy (or PyTorch) and checks it.
# `sparseattn.check` runs the float64 oracle `a1_dense_masked` on the same q, k, v and
# pattern and judges the candidate element by element: NaN/Inf first, then
# `|x − ref| ≤ atol + rtol·|ref|`, with the tolerance of the candidate's dtype (contract
# §4.2, §4.3; the checker is `core/check.h`). `sparseattn.testing.assert_matches_oracle`
# raises `AssertionError` with the report — for a test suite. docs/python.md has the same
# example in prose.
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
# ## Your implementation
#
# Sliding-window attention, one row at a time: query i attends keys i−w … i+w
# (one-sided w, contract §3.3), stable softmax, scale 1/√d.

# %%
def my_window_attention(q, k, v, w, scale=None, off_by_one=False):
    """q, k, v: [heads, n, d] float32. Returns o [heads, n, d]."""
    heads, n, d = q.shape
    scale = 1 / np.sqrt(d) if scale is None else scale
    o = np.zeros_like(v)
    for h in range(heads):
        for i in range(n):
            lo, hi = max(0, i - w), min(n, i + w + (0 if off_by_one else 1))
            s = scale * (q[h, i] @ k[h, lo:hi].T)
            p = np.exp(s - s.max())
            o[h, i] = (p / p.sum()) @ v[h, lo:hi]
    return o

rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((2, 96, 16)).astype(np.float32) for _ in range(3))
W = 3
pattern = sa.Pattern.window(W)

# %% [markdown]
# ## Validated
#
# float32 candidate: `atol 2e-5, rtol 2e-4`. The report says how much of that budget the
# worst element used.

# %%
o = my_window_attention(q, k, v, W)
report = sa.check(q, k, v, pattern, o)
print(report.summary())
assert report.passed and report.o.atol == 2e-5 and report.o.budget_used < 1
sa.testing.assert_matches_oracle(q, k, v, pattern, o)  # the same, as a test assertion

# %% [markdown]
# ## Broken on purpose (1): an off-by-one window
#
# `range(i - w, i + w)` instead of `i + w + 1`: the rightmost key is dropped. Only a few
# elements of each row are affected by the missing key, but every row but the last w is.
# The report names the worst element and hints at the boundaries.

# %%
o_bad = my_window_attention(q, k, v, W, off_by_one=True)
bad = sa.check(q, k, v, pattern, o_bad)
print(bad.summary())
assert not bad.passed
assert bad.o.worst_index[2] < 96 - W   # the worst row is not one of the last w rows

# %% [markdown]
# Where: the oracle's output (`sa.attend`, default impl) against yours, row by row.
# Rows 93–95 have no key beyond the end to drop, so they match.

# %%
o_ref, _ = sa.attend(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), pattern)
row_err = np.abs(o_bad - o_ref).max(axis=(0, 2))
plt.figure(figsize=(5, 2.4)); plt.semilogy(row_err + 1e-12, ".")
plt.axhline(2e-5, color="r", ls="--", label="atol"); plt.legend(fontsize=8)
plt.xlabel("query row"); plt.ylabel("max |o - oracle|"); plt.show()
assert np.all(row_err[-W:] < 1e-5) and np.all(row_err[:-W] > 1e-4)

# %% [markdown]
# ## Broken on purpose (2): the wrong scale
#
# 1/d instead of 1/√d. Almost every element differs, and the report's probable cause (its
# probes re-run the oracle under the usual mistakes, contract §4.9) names the scale and the
# value that matches. Checking with `scale=` the one the code used passes: the report told
# us which convention differed.

# %%
d = q.shape[-1]
o_scale = my_window_attention(q, k, v, W, scale=1 / d)
wrong = sa.check(q, k, v, pattern, o_scale)
print(wrong.summary())
assert not wrong.passed and "probable cause: scale 1/head_dim" in wrong.summary()
assert sa.check(q, k, v, pattern, o_scale, scale=1 / d).passed

# %% [markdown]
# ## In a test suite
#
# `assert_matches_oracle` raises with the same text, so a failing pytest shows the report.

# %%
try:
    sa.testing.assert_matches_oracle(q, k, v, pattern, o_bad)
except AssertionError as e:
    message = str(e)
else:
    raise RuntimeError("an off-by-one window must not pass")
print(message.splitlines()[0])
assert message.startswith("sparseattn check: candidate does NOT match")

# %% [markdown]
# ## The same with PyTorch, where installed
#
# `check` takes a CPU `torch.Tensor` as it is (docs/python.md). Skipped, and said so, when
# torch is absent.

# %%
try:
    import torch
except ImportError:
    torch = None
    print("torch is not installed: PyTorch cell skipped")
if torch is not None:
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    s = (tq @ tk.transpose(-1, -2)) / d ** 0.5
    i = torch.arange(q.shape[1])
    allowed = (i[:, None] - i[None, :]).abs() <= W
    o_t = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1) @ tv
    r_t = sa.check(q, k, v, pattern, o_t)
    print(r_t.o.line())
    assert r_t.passed
