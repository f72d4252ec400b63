"""Selected attention from Python (docs/contract.md §3.16-§3.18): Pattern.selected and
Pattern.selected_blocks against hand-computed masks, o and lse; sparseattn.select.* against
hand-computed indices (ties to the lower index); refusals naming the keyword."""
from __future__ import annotations

import math

import numpy as np
import pytest

import sparseattn as sa

IDX = np.array([[[[2, 0, -1], [3, 3, 1], [-1, -1, -1], [0, 1, 2]]]], dtype=np.int64)


def qkv() -> tuple:
    """q = 1, k_j = log w_j (exp(s_j) = w_j = 1, 2, 3, 4), v = (1, 2, 3, 4), scale 1."""
    q = np.ones((1, 1, 4, 1))
    k = np.log(np.arange(1.0, 5.0)).reshape(1, 1, 4, 1)
    v = np.arange(1.0, 5.0).reshape(1, 1, 4, 1)
    return q, k, v


def test_selected_mask_by_hand() -> None:
    m = sa.Pattern.selected(IDX).mask(4)
    want = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 0, 0], [1, 1, 1, 0]], dtype=bool)
    np.testing.assert_array_equal(m, want)  # -1 is no key: row 2 is empty
    causal = sa.Pattern.selected(IDX, causal=True).mask(4)
    np.testing.assert_array_equal(causal, np.tril(want))


@pytest.mark.parametrize("impl", ["a1_dense_masked", "cpu_k08_selected_gather"])
def test_selected_attention_and_counted_duplicates(impl: str) -> None:
    q, k, v = qkv()
    tol = 1e-14 if impl == "a1_dense_masked" else 1e-5
    o, lse = sa.attend(q, k, v, sa.Pattern.selected(IDX), impl=impl, scale=1.0)
    assert abs(o[0, 0, 0, 0] - 2.5) < tol
    assert abs(o[0, 0, 1, 0] - 20.0 / 6.0) < tol
    assert o[0, 0, 2, 0] == 0.0 and lse[0, 0, 2] == -math.inf
    oc, lsec = sa.attend(q, k, v, sa.Pattern.selected(IDX, duplicates="count"), impl=impl,
                         scale=1.0)
    assert abs(oc[0, 0, 1, 0] - 3.6) < tol
    assert abs(lsec[0, 0, 1] - math.log(10.0)) < tol


def test_selected_blocks_mask_by_hand() -> None:
    b = np.array([[[[1, 1], [0, -1]]]])
    m = sa.Pattern.selected_blocks(b, 2, 2).mask(4)
    want = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(m, want)


def test_refusals_name_the_keyword() -> None:
    with pytest.raises(ValueError, match=r"invalid kv_indices\[0,0,0,0\] = -2"):
        sa.Pattern.selected(np.array([[[[-2]]]]))
    with pytest.raises(ValueError, match=r"invalid kv_indices\[0,0,1,0\] = 4"):
        sa.Pattern.selected(np.array([[[[0], [4], [0], [0]]]])).mask(4)
    with pytest.raises(ValueError, match="invalid duplicates = twice"):
        sa.Pattern.selected(IDX, duplicates="twice")
    with pytest.raises(ValueError, match="invalid block_size_q = 0"):
        sa.Pattern.selected_blocks(IDX, 0, 2)
    with pytest.raises(ValueError, match="invalid top_k = 0"):
        sa.select.topk(np.zeros((1, 1, 2, 2)), 0)
    with pytest.raises(ValueError, match="invalid num_selected = 1"):
        sa.select.nsa(np.zeros((1, 1, 4, 2)), 2, 1, num_initial=1, num_local=1)


def test_select_functions_by_hand() -> None:
    s = np.array([[[[1, 3, 3, 2], [-np.inf, 5, 5, 5]]]])
    np.testing.assert_array_equal(sa.select.topk(s, 5)[0, 0],
                                  [[1, 2, 3, 0, -1], [1, 2, 3, -1, -1]])
    np.testing.assert_array_equal(sa.select.topk(s, 3, causal=True)[0, 0], [[1, 2, 0], [1, 2, 3]])
    iq = np.tile(np.array([1.0, -1.0]).reshape(1, 1, 2, 1), (1, 4, 1, 1))
    ik = np.array([1.0, -1.0, 2.0, 0.5]).reshape(1, 4, 1)
    w = np.tile(np.array([1.0, 2.0]), (1, 4, 1))
    np.testing.assert_array_equal(sa.select.dsa(iq, ik, w, 2)[0, 0],
                                  [[0, -1], [1, 0], [1, 2], [1, 2]])
    assert sa.select.dsa_scores(iq, ik, w)[0, 0, 3].tolist() == [1.0, 2.0, 2.0, 0.5]
    q = np.array([1, 1, 1, 1, -1, 1.0]).reshape(1, 1, 6, 1)
    k = np.array([1, 3, -1, -1, 0, 0.0]).reshape(1, 1, 6, 1)
    np.testing.assert_array_equal(sa.select.moba(q, k, 2, 2)[0, 0],
                                  [[0, -1], [0, -1], [1, 0], [1, 0], [2, 1], [2, 0]])
    ns = np.tile(np.array([9, 1, 5, 7.0]), (1, 1, 8, 1))
    out = sa.select.nsa(ns, 2, 3, num_initial=1, num_local=1)
    assert out[0, 0, 7].tolist() == [0, 3, 2] and out[0, 0, 0].tolist() == [0, -1, -1]


def test_moba_selection_runs_through_selected_blocks() -> None:
    # The MoBA table is selected-blocks with block_size_q 1, block_size_k C, causal; its
    # attention equals the oracle on the same mask given explicitly.
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 2, 12, 4))
    k = rng.standard_normal((1, 2, 12, 4))
    v = rng.standard_normal((1, 2, 12, 4))
    idx = sa.select.moba(q, k, 3, 2)
    p = sa.Pattern.selected_blocks(idx, 1, 3, causal=True)
    o, lse = sa.attend(q, k, v, p)
    o2, lse2 = sa.attend(q, k, v, sa.Pattern.explicit(p.mask(12, num_heads=2)))
    np.testing.assert_allclose(o, o2, rtol=0, atol=1e-14)
    np.testing.assert_allclose(lse, lse2, rtol=0, atol=1e-14)


def test_selected_gradients_through_kb03_match_the_oracle() -> None:
    # Heavy overlap: every query of every head lists keys 1 and 3 (3 twice, counted), under
    # grouped heads; cpu_k08's backward (kb03) against b1 at float32's tolerance.
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 4, 9, 8))
    k = rng.standard_normal((1, 2, 6, 8))
    v = rng.standard_normal((1, 2, 6, 8))
    dout = rng.standard_normal((1, 4, 9, 8))
    idx = np.tile(np.array([3, 1, 3, -1]), (1, 1, 9, 1))
    p = sa.Pattern.selected(idx, duplicates="count")
    ref = sa.attend(q, k, v, p, dout=dout)
    got = sa.attend(q, k, v, p, impl="cpu_k08_selected_gather", dout=dout)
    for name in ("dq", "dk", "dv"):
        r, g = getattr(ref, name), getattr(got, name)
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=2e-4, atol=2e-5, err_msg=name)
    assert np.all(ref.dv[:, :, [0, 2, 4, 5]] == 0) and np.all(got.dv[:, :, [0, 2, 4, 5]] == 0)


def bf16_rounded(x: np.ndarray) -> np.ndarray:
    """bfloat16(float32(x)) as float64: round to nearest even on the bit pattern, as
    core/bfloat16.h does (finite inputs only)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


def test_selected_bf16_twins_match_the_oracle_on_rounded_inputs() -> None:
    # Heavy overlap under grouped heads with counted repeats, forward and backward:
    # cpu_k08_selected_gather_bf16 (and kb03's twin behind it) against a1/b1 evaluated on
    # the bf16-rounded q, k, v, at kTolBfloat16 (atol = rtol = 1.6e-2, docs/numerics.md).
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 4, 11, 8))
    k = rng.standard_normal((2, 2, 7, 8))
    v = rng.standard_normal((2, 2, 7, 8))
    dout = rng.standard_normal((2, 4, 11, 8))
    idx = np.tile(np.array([3, 1, 3, -1, 6]), (2, 2, 11, 1))
    idx[1, :, ::3] = -1  # batch 1: every third row lists no key
    p = sa.Pattern.selected(idx, duplicates="count")
    ref = sa.attend(bf16_rounded(q), bf16_rounded(k), bf16_rounded(v), p, dout=dout)
    got = sa.attend(q, k, v, p, impl="cpu_k08_selected_gather_bf16", dout=dout)
    for name in ("o", "lse", "dq", "dk", "dv"):
        r, g = getattr(ref, name), getattr(got, name)
        assert g.shape == r.shape and g.dtype == np.float32, name
        np.testing.assert_allclose(g, r, rtol=1.6e-2, atol=1.6e-2, err_msg=name)
    assert np.all(got.lse[1, :, ::3] == -math.inf) and np.all(got.dq[1, :, ::3] == 0)
    # The rounding happened: the float32 kernel on the raw inputs gives another o.
    o32, _ = sa.attend(q, k, v, p, impl="cpu_k08_selected_gather")
    assert not np.array_equal(o32, got.o)


# ---- FlexAttention's BlockMask imported (contract §3.17) ---------------------------------

# 4 query blocks, KV_blocks = 4. Partial: {2}, {3, 0}, none, {1}; full: {0}, none, {3}, {1}.
# Entries past the counts are garbage (9, -5, 7), never read.
BM_NUM = np.array([[[1, 2, 0, 1]]], dtype=np.int32)
BM_IDX = np.array([[[[2, 9, -5, 9], [3, 0, 7, 7], [-5, 9, 9, 9], [1, 1, -5, 7]]]], dtype=np.int32)
BM_FULL_NUM = np.array([[[1, 0, 1, 1]]], dtype=np.int32)
BM_FULL_IDX = np.array([[[[0, 9, 9, 9], [9, 9, 9, 9], [3, -5, 7, 7], [1, 9, 9, 9]]]], dtype=np.int32)


def test_from_block_mask_by_hand() -> None:
    p = sa.Pattern.from_block_mask(BM_NUM, BM_IDX, 2, 2, BM_FULL_NUM, BM_FULL_IDX)
    want = np.zeros((8, 8), dtype=bool)
    for m, blocks in enumerate([[0, 2], [0, 3], [3], [1]]):  # the union, per query block
        for c in blocks:
            want[2 * m:2 * m + 2, 2 * c:2 * c + 2] = True
    np.testing.assert_array_equal(p.mask(8), want)
    # Through the oracle: the same o and lse as the explicit mask, to the last bit.
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, 8, 3)) for _ in range(3))
    o, lse = sa.attend(q, k, v, p, impl="a1_dense_masked")
    oe, lsee = sa.attend(q, k, v, sa.Pattern.explicit(want), impl="a1_dense_masked")
    np.testing.assert_array_equal(o, oe)
    np.testing.assert_array_equal(lse, lsee)
    # Without the full pair: the partial blocks alone; block size defaults to 128.
    alone = sa.Pattern.from_block_mask(BM_NUM, BM_IDX, 2, 2).mask(8)
    assert alone[0].nonzero()[0].tolist() == [4, 5] and not alone[4].any()
    assert sa.Pattern.from_block_mask([[[1]]], [[[[0]]]]).mask(128).all()


def test_block_mask_round_trip_of_bigbird_and_a_partial_block(tmp_path) -> None:
    original = sa.Pattern.bigbird(4, 1, seed=7)
    bm = original.block_mask(32, num_heads=2)
    assert bm.full_kv_num_blocks.sum() > 0
    want = original.mask(32, num_heads=2)
    back = sa.Pattern.from_block_mask(bm.kv_num_blocks, bm.kv_indices, 4, 4,
                                      bm.full_kv_num_blocks, bm.full_kv_indices)
    np.testing.assert_array_equal(back.mask(32, num_heads=2), want)
    # The object form takes the BlockMask's own block size; the folder form is --block-mask's.
    np.testing.assert_array_equal(sa.Pattern.selected_blocks(block_mask=bm).mask(32, num_heads=2), want)
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices"):
        np.save(tmp_path / f"{name}.npy", getattr(bm, name))
    folder = sa.Pattern.selected_blocks(block_size_q=4, block_size_k=4, block_mask=tmp_path)
    np.testing.assert_array_equal(folder.mask(32, num_heads=2), want)
    # A partial block comes back whole: window 1 at block 4 on 8 tokens -> every key.
    w = sa.Pattern.window(1).block_mask(8, block_size=4)
    assert w.full_kv_num_blocks.sum() == 0
    whole = sa.Pattern.selected_blocks(block_mask=w).mask(8)
    assert whole.all() and not sa.Pattern.window(1).mask(8).all()


def test_from_block_mask_refusals_name_the_keyword(tmp_path) -> None:
    bad = BM_IDX.copy()
    bad[0, 0, 1, 1] = 4
    with pytest.raises(ValueError, match=r"invalid kv_indices\[0,0,1,1\] = 4: must be a key block in \[0, 4\)"):
        sa.Pattern.from_block_mask(BM_NUM, bad, 2, 2)
    with pytest.raises(ValueError, match=r"invalid kv_num_blocks\[0,0,2\] = 5: must be in \[0, 4\]"):
        sa.Pattern.from_block_mask(np.array([[[1, 2, 5, 1]]]), BM_IDX, 2, 2)
    with pytest.raises(ValueError, match=r"invalid full_kv_indices = None: must be given with full_kv_num_blocks"):
        sa.Pattern.from_block_mask(BM_NUM, BM_IDX, 2, 2, full_kv_num_blocks=BM_FULL_NUM)
    with pytest.raises(ValueError, match=r"invalid kv_indices shape = \[1, 1, 3, 4\]"):
        sa.Pattern.from_block_mask(BM_NUM, BM_IDX[:, :, :3], 2, 2)
    with pytest.raises(ValueError, match=r"invalid kv_indices dtype"):
        sa.Pattern.from_block_mask(BM_NUM, BM_IDX.astype(np.float32), 2, 2)
    with pytest.raises(ValueError, match=r"invalid block_size_q = 0"):
        sa.Pattern.from_block_mask(BM_NUM, BM_IDX, 0, 2)
    with pytest.raises(ValueError, match=r"invalid block_mask = BlockMask: replaces block_indices"):
        sa.Pattern.selected_blocks(IDX, 2, 2, block_mask=sa.Pattern.window(1).block_mask(8, block_size=4))
    with pytest.raises(ValueError, match=r"invalid block_mask .*kv_num_blocks.npy = missing"):
        sa.Pattern.selected_blocks(block_mask=tmp_path)


def test_from_block_mask_takes_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    p = sa.Pattern.from_block_mask(torch.from_numpy(BM_NUM), torch.from_numpy(BM_IDX), 2, 2,
                                   torch.from_numpy(BM_FULL_NUM), torch.from_numpy(BM_FULL_IDX))
    np.testing.assert_array_equal(p.mask(8), sa.Pattern.from_block_mask(
        BM_NUM, BM_IDX, 2, 2, BM_FULL_NUM, BM_FULL_IDX).mask(8))
