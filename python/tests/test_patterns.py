"""Pattern constructors and views: random tables round-trip, block masks agree with the
dense mask, shapes follow the CLI's rules."""
from __future__ import annotations

import numpy as np
import pytest

import sparseattn as sa
from conftest import qkv


@pytest.mark.parametrize("n,block,r,heads,seed", [(16, 2, 1, 1, 0), (64, 8, 2, 3, 7),
                                                   (50, 7, 3, 2, 123)])
def test_bigbird_random_table_round_trips(n, block, r, heads, seed):
    seeded = sa.Pattern.bigbird(block, r, seed=seed)
    table = seeded.random_table(n, num_heads=heads)
    nb = -(-n // block)
    assert table.dtype == np.int64 and table.shape == (heads, nb - 2, r)  # HF's rand_attn
    assert table.min() >= 0 and table.max() < nb
    given = sa.Pattern.bigbird(block, r, random_table=table)
    assert np.array_equal(given.mask(n, num_heads=heads), seeded.mask(n, num_heads=heads))
    assert np.array_equal(given.random_table(n, num_heads=heads), table)


def test_bigbird_random_table_is_the_documented_draw():
    # docs/patterns.md: n = 16, B = 2, R = 1, seed 0 draws [6] [4] [5] [2] [3] [4].
    t = sa.Pattern.bigbird(2, 1, seed=0).random_table(16)
    assert t[0, :, 0].tolist() == [6, 4, 5, 2, 3, 4]


def test_a_random_table_changes_the_mask_where_it_says():
    table = np.array([[[3], [0], [1]]])  # nb = 5, query blocks 1..3
    m = sa.Pattern.bigbird(2, 1, random_table=table).mask(10)
    # query block 1 (rows 2-3) gets random key block 3 (keys 6-7), not otherwise a neighbour
    assert m[2:4, 6:8].all()
    base = sa.Pattern.bigbird(2, 0).mask(10)
    assert not base[2:4, 6:8].any()


def test_random_kind_table_has_one_row_per_query():
    t = sa.Pattern.random(1, 3, seed=4).random_table(20, num_heads=2)
    assert t.shape == (2, 20, 3)
    m = sa.Pattern.random(1, 3, seed=4).mask(20, num_heads=2)
    for h in range(2):
        for i in range(20):
            assert m[h, i, t[h, i]].all()


@pytest.mark.parametrize("pattern,n,block", [
    (sa.Pattern.window(3, dilation=2), 37, 8),
    (sa.Pattern.longformer(2, [0, 20]), 40, 16),
    (sa.Pattern.bigbird(4, 1, seed=3), 30, 4),
    (sa.Pattern.bigbird(4, 1, seed=3), 30, 6),  # re-tiled at another block size
    (sa.Pattern.dense(causal=True), 33, 128),
])
def test_block_mask_agrees_with_the_dense_mask(pattern, n, block):
    bm = pattern.block_mask(n, block_size=block, num_heads=2)
    m = pattern.mask(n, num_heads=2)
    dense = bm.to_dense()
    nb = -(-n // block)
    assert dense.shape == (2, nb, nb)
    for h in range(2):
        for a in range(nb):
            for b in range(nb):
                tile = m[h, a * block:(a + 1) * block, b * block:(b + 1) * block]
                kind = 2 if tile.all() else 1 if tile.any() else 0
                assert dense[h, a, b] == kind, (h, a, b)


def test_bigbird_block_mask_default_block_is_its_own():
    bm = sa.Pattern.bigbird(8, 1).block_mask(64)
    assert bm.block_size == 8
    assert (bm.kv_num_blocks == 0).all()  # every listed block of a BigBird layout is full


def test_mask_shapes_follow_the_cli():
    p = sa.Pattern.window(1)
    assert p.mask(5).shape == (5, 5)
    assert p.mask(5, 7).shape == (5, 7)
    assert p.mask(5, num_heads=3).shape == (3, 5, 5)
    kpm = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=bool)
    m = p.mask(5, key_padding_mask=kpm)
    assert m.shape == (2, 1, 5, 5)
    assert not m[0, 0, :, 4].any() and not m[0, 0, 4].any() and m[1, 0, 4, 4]


def test_cross_attention_aligns_bottom_right():
    m = sa.Pattern.dense(causal=True).mask(2, 5)
    assert m.tolist() == [[True, True, True, True, False], [True] * 5]


def test_per_head_and_explicit_heads():
    heads = [sa.Pattern.window(0), sa.Pattern.dense()]
    p = sa.Pattern.per_head(heads)
    m = p.mask(4)
    assert m.shape == (2, 4, 4)
    assert np.array_equal(m[0], np.eye(4, dtype=bool)) and m[1].all()
    e = sa.Pattern.explicit(m)
    assert np.array_equal(e.mask(4), m)
    assert "per-head" == p.kind and e.kind == "explicit"


def test_hierarchical_pattern_matches_the_doc_example():
    # docs/patterns.md: ids 0 0 0 1 1 2 2 2 2 3, representatives 2, 4, 8, 9; row 0 reads
    # "# # # . # . . . # #".
    m = sa.Pattern.hierarchical([0, 0, 0, 1, 1, 2, 2, 2, 2, 3]).mask(10)
    assert "".join("#" if x else "." for x in m[0]) == "###.#...##"


def test_info_counts():
    info = sa.Pattern.window(1).info(10, head_dim=4)
    assert info["nnz"] == 28 and info["dense_pairs"] == 100
    assert info["flops"] == 4 * 28 * 4


def test_repr_names_the_parameters():
    assert repr(sa.Pattern.bigbird(64, 3, seed=5)) == \
        "Pattern.bigbird(block_size=64, num_random_blocks=3, seed=5)"


def test_kinds_without_draws_have_an_empty_table():
    t = sa.Pattern.window(1).random_table(10, num_heads=3)
    assert t.shape == (3, 0, 0) and t.dtype == np.int64


def test_assert_matches_oracle_fails_a_nan_and_a_wrong_pattern_with_a_hint():
    q, k, v = qkv((1, 2, 12, 4))
    p = sa.Pattern.window(2)
    o, lse = sa.attend(q, k, v, p)
    assert sa.testing.assert_matches_oracle(q, k, v, p, o, lse).passed
    nan = o.copy()
    nan[0, 1, 5, 0] = np.nan
    with pytest.raises(AssertionError, match="NaN/Inf where the oracle is finite"):
        sa.testing.assert_matches_oracle(q, k, v, p, nan)
    with pytest.raises(AssertionError, match="almost every element differs"):
        sa.testing.assert_matches_oracle(q, k, v, sa.Pattern.dense(), o, lse)
