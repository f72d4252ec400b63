# %% [markdown]
# # 10 — Real models' attention stacks: receptive field and cost, 4k to 128k tokens
#
# A model preset (`models/*.json`; docs/models.md, contract §6.4) is one model's attention
# stack: its layers' patterns, heads, `head_dim`, scale, softcap and sinks. This notebook
# compares the presets the project can model — Mistral's sliding window on every layer,
# Gemma 2's and gpt-oss's window/global alternation, Gemma 3's five local layers per global
# one, Llama 4 Scout's chunked layers with a global one every fourth, ModernBERT's
# bidirectional local/global mix — from 4k to 128k tokens: how far the last token sees
# after each layer, when it first reaches token 0, and what the stack costs in FLOPs and KV
# cache against the same stack with every layer dense. Every number comes from
# `sparseattn.preset_reach` and `sparseattn.preset_info` (the same JSON as `sparseattn reach
# --preset` and `sparseattn info --preset`).
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

import math

import matplotlib.pyplot as plt
import numpy as np
try:
    import sparseattn as sa
except ImportError as e:  # the checkout, without `make python` run in it
    raise ImportError(f"{e}; run `make python` in {ROOT}. {SETUP}") from None

PRESETS = ["mistral-7b-v0.1", "gemma-2-9b", "gemma-3-12b", "gpt-oss-20b", "llama-4-scout",
           "modernbert-base"]
LENGTHS = [4096, 8192, 16384, 32768, 65536, 131072]
print(sa.preset_names())
assert set(PRESETS) <= set(sa.preset_names())

# %% [markdown]
# ## What is modelled, and what is refused
#
# A preset whose layers need a pattern kind this version lacks is refused by name:
# DeepSeek-V3.2's selected keys (they depend on the input) and Phi-3-small's block-sparse
# layers with a vertical stride. Longformer and BigBird have global tokens or random
# blocks: their reach needs the token-level graph (up to 65,536 tokens), so they are left
# out of the sweep below (their published context is 4096 anyway).

# %%
for name in ("deepseek-v3.2", "phi-3-small"):
    try:
        sa.preset_reach(name, 4096)
        raise AssertionError(f"{name} should be refused")
    except ValueError as e:
        print(f"{name}: {e}")
        assert "pattern kind" in str(e)

# %% [markdown]
# ## Receptive field: when does the last token first see token 0?
#
# `first_reach_depth` is the number of layers after which the last query is influenced by
# token 0 (the last layer repeating past the stack). A window of W reaches W further per
# layer, so Mistral needs ⌈(n − 1)/4096⌉ layers — 32 at 128k, exactly its depth. One dense
# layer connects every causal pair, so an alternating stack needs 2 (Gemma 2, gpt-oss),
# Gemma 3 at most 6. Llama 4's chunked layers never cross a chunk boundary: beyond one
# chunk (8192 tokens) the last token sees token 0 only at layer 4, the first global layer.

# %%
reach = {p: {n: sa.preset_reach(p, n) for n in LENGTHS} for p in PRESETS}
depth = {p: [reach[p][n]["first_reach_depth"] for n in LENGTHS] for p in PRESETS}
for p in PRESETS:
    print(f"{p:18s}", depth[p], reach[p][LENGTHS[-1]]["engine"])
assert depth["mistral-7b-v0.1"] == [math.ceil((n - 1) / 4096) for n in LENGTHS]
assert depth["gpt-oss-20b"] == [2] * len(LENGTHS) and depth["gemma-2-9b"][1:] == [2] * 5
assert depth["gemma-3-12b"] == [5] + [6] * 5
assert depth["llama-4-scout"] == [1, 1, 4, 4, 4, 4]
assert depth["modernbert-base"] == [1] * len(LENGTHS)

fig, ax = plt.subplots(1, 2, figsize=(10, 3.4))
for p in PRESETS:
    ax[0].plot(LENGTHS, depth[p], "o-", label=p)
ax[0].set_xscale("log", base=2); ax[0].set_xlabel("seq_len"); ax[0].set_ylabel("first-reach depth (layers)")
ax[0].legend(fontsize=7); ax[0].set_title("last token first sees token 0")
n = LENGTHS[-1]
for p in PRESETS:
    cov = [row["last_query_coverage"] for row in reach[p][n]["layers"]]
    ax[1].plot(range(1, len(cov) + 1), np.array(cov) / n, label=p)
ax[1].set_xlabel("layer (from 1)"); ax[1].set_ylabel("tokens reaching the last / n")
ax[1].set_title(f"receptive field of the last token, n = {n}"); ax[1].legend(fontsize=7)
plt.tight_layout(); plt.show()

# The chunked layers alone keep the last token inside its own chunk (8192 tokens at 128k).
llama = reach["llama-4-scout"][131072]["layers"]
assert [row["last_query_coverage"] for row in llama[:3]] == [8192] * 3
assert llama[3]["last_query_coverage"] == 131072 and llama[3]["reaches_token_0"]

# %% [markdown]
# ## Cost: FLOPs, KV cache and the speedup bound over all-dense
#
# `preset_info` counts `4 · nnz · head_dim · H_q` FLOPs per layer (per batch element) and a
# decoder's KV cache as `2 · H_kv · head_dim · 2 bytes` per kept token and layer — a causal
# window w keeps w + 1 tokens, a chunked layer its current chunk (at most 8192), any other
# layer all n. "All-dense" is the same stack with every layer dense (causal for a decoder);
# the speedup bound is its FLOPs over the preset's. An alternating stack never beats 2×:
# its dense half costs the dense price.

# %%
info = {p: {n: sa.preset_info(p, n)["total"] for n in LENGTHS} for p in PRESETS}
bound = {p: [info[p][n]["speedup_bound"] for n in LENGTHS] for p in PRESETS}
for p in PRESETS:
    print(f"{p:18s}", " ".join(f"{b:7.3f}" for b in bound[p]))
assert round(bound["mistral-7b-v0.1"][-1], 3) == 16.250  # docs/models.md
assert all(b < 2 for b in bound["gpt-oss-20b"] + bound["gemma-2-9b"])
# Llama 4: 3 of 4 layers chunked. At n = k·8192 a chunked layer keeps k·C(C + 1)/2 pairs
# (C = 8192) against n(n + 1)/2 for a dense causal one, so the bound is
# 4·dense / (3·chunked + dense): 3.37 at 128k (k = 16), tending to 4 as k grows.
for n, b in zip(LENGTHS, bound["llama-4-scout"]):
    C = 8192
    chunked = (n // C) * C * (C + 1) / 2 + (n % C) * (n % C + 1) / 2
    dense = n * (n + 1) / 2
    assert math.isclose(b, 4 * dense / (3 * chunked + dense), rel_tol=1e-12), (n, b)

fig, ax = plt.subplots(1, 2, figsize=(10, 3.4))
for p in PRESETS:
    ax[0].plot(LENGTHS, bound[p], "o-", label=p)
ax[0].set_xscale("log", base=2); ax[0].set_xlabel("seq_len"); ax[0].set_ylabel("all-dense FLOPs / preset FLOPs")
ax[0].set_title("speedup bound"); ax[0].legend(fontsize=7)
for p in PRESETS:
    if info[p][LENGTHS[0]]["kv_cache_bytes"] is None:
        continue  # an encoder keeps no KV cache
    ax[1].plot(LENGTHS, [info[p][n]["kv_cache_bytes"] / 2**30 for n in LENGTHS], "o-", label=p)
ax[1].set_xscale("log", base=2); ax[1].set_yscale("log"); ax[1].set_xlabel("seq_len")
ax[1].set_ylabel("KV cache (GiB, one sequence)"); ax[1].set_title("KV cache per sequence")
ax[1].legend(fontsize=7); plt.tight_layout(); plt.show()

# Mistral's cache stops growing past its window: 32 layers x 4097 tokens.
kv = [info["mistral-7b-v0.1"][n]["kv_cache_bytes"] for n in LENGTHS]
assert kv[0] < kv[1] and kv[1] == kv[-1] == 32 * 4097 * 2 * 8 * 128 * 2
assert info["modernbert-base"][LENGTHS[0]]["kv_cache_bytes"] is None

# %% [markdown]
# ## One layer, run
#
# `attend(..., preset=, layer=)` runs one layer of the model with its pattern, scale and
# softcap, on inputs with the model's real heads and `head_dim` (`sparseattn attend --preset
# NAME --layer L`). Gemma 2's layer 0 — 16 query heads over 8 kv heads, head_dim 256,
# softcap 50 — at 64 tokens equals the same call spelled out.

# %%
rng = np.random.default_rng(0)
q = rng.standard_normal((1, 16, 64, 256)) * 4
k = rng.standard_normal((1, 8, 64, 256))
v = rng.standard_normal((1, 8, 64, 256))
o, lse = sa.attend(q, k, v, preset="gemma-2-9b", layer=0)
o2, lse2 = sa.attend(q, k, v, sa.Pattern.window(4095, causal=True), scale=0.0625, softcap=50.0)
assert np.array_equal(o, o2) and np.array_equal(lse, lse2)
print("gemma-2-9b layer 0:", o.shape, "max |o| =", float(np.abs(o).max()))
