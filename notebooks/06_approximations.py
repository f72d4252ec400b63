# %% [markdown]
# # 06 — Approximations: Performer and Nyströmformer
#
# Sparse patterns compute some scores exactly and drop the rest. The approximations keep
# every key but compute the softmax approximately, in O(n) (docs/approximations.md;
# contract §4.8). Their error against the exact oracle is a *measurement*, never a
# tolerance:
#
# - **Performer FAVOR+** (Choromanski et al. 2021, §2.2–2.4, Lemma 1): positive random
#   features, m of them; the error falls like 1/√m (`reference/approx/performer_favor.cpp`).
# - **Nyströmformer** (Xiong et al. 2021, §3, eq. 15): c segment-mean landmarks and a
#   pseudo-inverse (`reference/approx/nystrom.cpp`).
#
# **Setup.** Opened from the repository or its `notebooks/` folder, this notebook finds what
# it needs by itself. Outside the repository, set SPARSEATTN_ROOT to the sparseattn checkout
# (the folder with python/ and data/, after `make python` there) before starting Jupyter.

# %%
import os
import sys
import warnings

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
# Inputs: 2 heads, 512 tokens, head dimension 32, q and k ~ N(0, 0.25) (a softmax that is
# neither uniform nor one-hot), and the exact answer from the float64 oracle.

# %%
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((2, 512, 32)) for _ in range(3))
q *= 0.5; k *= 0.5
o_exact, _ = sa.attend(q, k, v, sa.Pattern.dense())

def rel_err(o):
    return float(np.linalg.norm(o - o_exact) / np.linalg.norm(o_exact))

# %% [markdown]
# ## Performer: error against the number of random features m

# %%
features = [16, 64, 256, 1024, 4096]
err_p = [rel_err(sa.performer_favor(q, k, v, num_features=m, seed=0)[0]) for m in features]
for m, e in zip(features, err_p):
    print(f"m = {m:5d}: relative error {e:.3f}")
slope_p = np.polyfit(np.log(features), np.log(err_p), 1)[0]
print(f"fitted slope {slope_p:.2f} (Monte Carlo: -0.5)")
assert err_p[-1] < err_p[0] / 5
assert -0.8 < slope_p < -0.3
assert err_p[-1] > 1e-3  # an approximation, not exact

# %%
plt.figure(figsize=(4, 3))
plt.loglog(features, err_p, "o-", label=f"Performer, slope {slope_p:.2f}")
plt.loglog(features, err_p[0] * (np.array(features) / features[0]) ** -0.5, "--", label="1/√m")
plt.xlabel("random features m"); plt.ylabel("‖o − o_exact‖ / ‖o_exact‖"); plt.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## Nyströmformer: error against the number of landmarks c
#
# With c = n every landmark is one token and the exact pseudo-inverse reconstructs the
# softmax exactly; the paper's 6-step iterative pseudo-inverse (eq. 14) does not converge
# that far, so it keeps an error even there.

# %%
landmarks = [8, 32, 128, 256, 512]
err_it, err_ex = [], []
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # rows with no lse estimate: NaN lse, o still given
    for c in landmarks:
        err_it.append(rel_err(sa.nystrom(q, k, v, num_landmarks=c, pinv="iterative")[0]))
        err_ex.append(rel_err(sa.nystrom(q, k, v, num_landmarks=c, pinv="exact")[0]))
for c, a, b in zip(landmarks, err_it, err_ex):
    print(f"c = {c:3d}: iterative pinv {a:.3f}   exact pinv {b:.2e}")
assert err_ex[-1] < 1e-9            # c = n: exact
assert err_ex[2] > err_ex[1]        # exact pinv: not monotone in c (see the reading below)
assert 1e-3 < err_it[-1] < err_it[0]  # iterative: better, never exact

# %%
plt.figure(figsize=(4, 3))
plt.loglog(landmarks, err_it, "o-", label="Nyström, iterative pinv (paper)")
plt.loglog(landmarks, err_ex, "s-", label="Nyström, exact pinv")
plt.xlabel("landmarks c"); plt.ylabel("relative error"); plt.legend(fontsize=8); plt.show()

# %% [markdown]
# Reading: at equal cost neither approximation is within a float32 tolerance; they trade
# exactness for O(n). The exact-pinv curve is not monotone: with few landmarks the small
# landmark matrix is ill-conditioned, and an exact inverse amplifies that (the iterative one
# damps it). docs/approximations.md measures both on the real MiniLM heads.
