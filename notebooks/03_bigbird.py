# %% [markdown]
# # 03 — BigBird: global, sliding and random blocks
#
# BigBird ITC (Zaheer et al. 2020, §2 and App. D; contract §3.6; docs/patterns.md): the
# sequence is cut into blocks of `block_size` tokens; a query block attends
#
# 1. the **global** blocks 0 and nb−1 (and those two query blocks attend everything),
# 2. its **sliding** neighbours q−1, q, q+1,
# 3. `num_random_blocks` **random** blocks, drawn from those not already allowed
#    (`pattern/prng.h`, contract §3.10).
#
# We draw the block table, gather the keys one query block reads (what
# `reference/a4_bigbird_blocks.cpp` and `optimized/cpu/k05_bigbird_blocks.cpp` do), check
# both against the masked oracle, and pass the random draws back and forth.
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
from matplotlib.colors import ListedColormap
import numpy as np
try:
    import sparseattn as sa
except ImportError as e:  # the checkout, without `make python` run in it
    raise ImportError(f"{e}; run `make python` in {ROOT}. {SETUP}") from None

B, R, N = 4, 1, 32     # block size, random blocks per query block, tokens
nb = -(-N // B)        # 8 blocks
bb = sa.Pattern.bigbird(B, R, seed=0)

# %% [markdown]
# ## The random draws
#
# `random_table` gives the draws in HF's `rand_attn` layout: one row per query block
# 1 … nb−2 (the global query blocks draw nothing), `num_random_blocks` key-block indices.

# %%
table = bb.random_table(N)
print(table[0].ravel())
assert table.shape == (1, nb - 2, R)
assert np.array_equal(table, sa.Pattern.bigbird(B, R, seed=0).random_table(N))  # deterministic

# %% [markdown]
# ## The three kinds of blocks
#
# The block table from the pattern itself (`Pattern.block_mask` at the pattern's own block
# size: 2 = full block, 1 = partial, 0 = not listed), coloured by why each block is there.

# %%
blocks = bb.block_mask(N).to_dense()[0]
kind = np.zeros((nb, nb), dtype=int)              # 0 none, 1 random, 2 sliding, 3 global
for qb in range(1, nb - 1):
    kind[qb, table[0, qb - 1]] = 1
for qb in range(nb):
    kind[qb, max(0, qb - 1):qb + 2] = 2
kind[[0, nb - 1], :] = 3
kind[:, [0, nb - 1]] = 3
cmap = ListedColormap(["#222222", "#e07b39", "#4c9be8", "#59a14f"])
plt.figure(figsize=(3.5, 3.5))
plt.imshow(kind, cmap=cmap, vmin=0, vmax=3)
plt.title("block table: green global, blue sliding,\norange random", fontsize=9)
plt.xlabel("key block"); plt.ylabel("query block"); plt.show()
assert np.array_equal(blocks > 0, kind > 0)   # every listed block is one of the three kinds
assert np.all(blocks[blocks > 0] == 2)        # and is full: no per-element mask needed

# %% [markdown]
# Every random draw avoids the blocks already allowed (contract §3.6), so each query block
# 1 … nb−2 lists exactly 2 global + 3 sliding + R random blocks (fewer sliding at the ends).

# %%
for qb in range(1, nb - 1):
    r = table[0, qb - 1]
    assert not np.isin(r, [0, nb - 1, qb - 1, qb, qb + 1]).any()
print("blocks per query block:", (blocks > 0).sum(axis=1))
assert (blocks[2:nb - 2] > 0).sum(axis=1).tolist() == [2 + 3 + R] * (nb - 4)

# %% [markdown]
# ## From blocks to tokens
#
# The token mask is the block table blown up by the block size:

# %%
M = bb.mask(N)
plt.figure(figsize=(3.5, 3.5)); plt.imshow(M, cmap="gray"); plt.title("bigbird(4, 1).mask(32)")
plt.xlabel("key j"); plt.ylabel("query i"); plt.show()
assert np.array_equal(M, np.kron(blocks > 0, np.ones((B, B), dtype=bool)))

# %% [markdown]
# ## The gather
#
# A block kernel never looks at the mask: for query block qb it reads the listed key
# blocks (`kv_indices`), copies their keys into one contiguous panel, and runs dense
# attention on it. The gathered key positions are exactly the row's allowed keys.

# %%
bm = bb.block_mask(N)
qb = 3
listed = bm.full_kv_indices[0, 0, qb, : bm.full_kv_num_blocks[0, 0, qb]]
gathered = np.concatenate([np.arange(b * B, min((b + 1) * B, N)) for b in listed])
print("query block", qb, "reads key blocks", listed, "->", len(gathered), "keys")
for row in range(qb * B, (qb + 1) * B):
    assert np.array_equal(gathered, np.flatnonzero(M[row]))

# %% [markdown]
# ## Equal to the masked oracle
#
# `a4_bigbird_blocks` (float64, the gather) and `cpu_k05_bigbird_blocks` (float32, OpenMP)
# against the oracle `a1_dense_masked` (which applies `Pattern.mask` to dense scores), on a
# length that is not a multiple of the block (the last block is partial), with 2 heads
# drawing different random blocks.

# %%
rng = np.random.default_rng(1)
n2, heads = 90, 2
q, k, v = (rng.standard_normal((heads, n2, 8)) for _ in range(3))
p2 = sa.Pattern.bigbird(8, 2, seed=3)
for impl in ("a4_bigbird_blocks", "cpu_k05_bigbird_blocks"):
    o, lse = sa.attend(q, k, v, p2, impl=impl)
    r = sa.check(q, k, v, p2, o, lse)
    print(f"{impl:24s} {r.o.line()}")
    assert r.passed
o4, _ = sa.attend(q, k, v, p2, impl="a4_bigbird_blocks")
o1, _ = sa.attend(q, k, v, p2)
assert np.array_equal(o4, o1)  # a4 is bit-identical to the oracle (reference/a5_flash_tiled.cpp says why a5 is not)
t2 = p2.random_table(n2, num_heads=heads)
assert not np.array_equal(t2[0], t2[1])  # each head draws its own blocks

# %% [markdown]
# ## Passing the draws back and forth
#
# Two BigBird implementations agree only when they use the same random blocks. A table
# from elsewhere (HF's `rand_attn`) goes in as `random_table=`; the seeded pattern's own
# table comes out with `random_table()` (docs/python.md shows a full example).

# %%
replay = sa.Pattern.bigbird(8, 2, random_table=t2)
assert np.array_equal(replay.mask(n2), p2.mask(n2, num_heads=heads))
other = sa.Pattern.bigbird(8, 2, seed=4)
assert not np.array_equal(other.mask(n2, num_heads=heads), p2.mask(n2, num_heads=heads))
print("same table -> same mask; another seed -> another mask")
