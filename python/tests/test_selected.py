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
