"""The (left, right) window, chunked and neighborhood patterns (docs/contract.md §3.3, §3.14,
§3.15) through the Python package: hand-computed masks, the equivalences the contract
states, attention against a NumPy softmax over the mask, and every refusal named by its
keyword."""
from __future__ import annotations

import numpy as np
import pytest

import sparseattn as sa
from conftest import qkv


def rows(mask: np.ndarray) -> list:
    return [np.flatnonzero(r).tolist() for r in mask]


def test_window_pair_by_hand_and_its_equivalences():
    assert rows(sa.Pattern.window(left=1, right=2).mask(5)) == [
        [0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4], [3, 4]]
    for n, nk in [(7, 7), (5, 9), (9, 4)]:
        causal2 = sa.Pattern.window(2, causal=True).mask(n, nk)
        assert np.array_equal(sa.Pattern.window(left=2, right=0).mask(n, nk), causal2)
        assert np.array_equal(sa.Pattern.window(left=-1, right=-1).mask(n, nk),
                              sa.Pattern.dense().mask(n, nk))
        assert np.array_equal(sa.Pattern.window(left=3, right=3, dilation=2).mask(n, nk),
                              sa.Pattern.window(3, dilation=2).mask(n, nk))
    lf = sa.Pattern.longformer(global_tokens=[0], left=0, right=1).mask(6)
    assert rows(lf) == [[0, 1, 2, 3, 4, 5], [0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 5], [0, 5]]
    rnd = sa.Pattern.random(None, 0, left=1, right=0).mask(4)
    assert rows(rnd) == [[0], [0, 1], [1, 2], [2, 3]]
    assert "window_left=2, window_right=0" in repr(sa.Pattern.window(left=2, right=0))


def test_chunked_by_hand():
    assert rows(sa.Pattern.chunked(2, causal=True).mask(5)) == [[0], [0, 1], [2], [2, 3], [4]]
    # seq_len_q 5 > seq_len_k 3: the first two queries sit before the first key.
    assert rows(sa.Pattern.chunked(3).mask(5, 3)) == [[], [], [0, 1, 2], [0, 1, 2], [0, 1, 2]]
    assert np.array_equal(sa.Pattern.chunked(10**18).mask(6, 9), sa.Pattern.dense().mask(6, 9))


def test_neighborhood_by_hand():
    assert rows(sa.Pattern.neighborhood(3).mask(5)) == [
        [0, 1, 2], [0, 1, 2], [1, 2, 3], [2, 3, 4], [2, 3, 4]]
    assert rows(sa.Pattern.neighborhood(3, causal=True).mask(5)) == [
        [0], [0, 1], [0, 1, 2], [1, 2, 3], [2, 3, 4]]
    assert rows(sa.Pattern.neighborhood(3, dilation=2).mask(7)) == [
        [0, 2, 4], [1, 3, 5], [0, 2, 4], [1, 3, 5], [2, 4, 6], [1, 3, 5], [2, 4, 6]]
    assert rows(sa.Pattern.neighborhood(3).mask(2, 6)) == [[3, 4, 5], [3, 4, 5]]


@pytest.mark.parametrize("pattern,n,nk", [
    (sa.Pattern.window(left=3, right=1), 12, 12),
    (sa.Pattern.window(left=0, right=4, dilation=2, causal=False), 9, 14),
    (sa.Pattern.chunked(4), 11, 11),
    (sa.Pattern.chunked(3, causal=True), 10, 7),
    (sa.Pattern.neighborhood(5), 13, 13),
    (sa.Pattern.neighborhood(3, dilation=3, causal=True), 8, 12),
])
def test_attend_matches_a_softmax_over_the_mask(pattern, n, nk):
    q, k, v = qkv((1, 2, n, 4), (1, 2, nk, 4), seed=3)
    o, lse = sa.attend(q, k, v, pattern)
    m = pattern.mask(n, nk, num_heads=2)
    s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(4.0)
    s = np.where(m[None], s, -np.inf)
    mx = np.max(s, axis=-1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    e = np.where(m[None], np.exp(s - mx), 0.0)
    z = e.sum(-1, keepdims=True)
    want = np.where(z > 0, np.einsum("bhij,bhjd->bhid", e, v) / np.where(z > 0, z, 1), 0.0)
    assert np.allclose(o, want, atol=1e-10)
    rows_with_keys = m.any(-1)[None]
    want_lse = np.log(np.where(z > 0, z, 1.0))[..., 0] + mx[..., 0]
    assert np.allclose(lse[rows_with_keys], want_lse[rows_with_keys])
    assert np.all(np.isneginf(lse[~np.broadcast_to(rows_with_keys, lse.shape)]))


@pytest.mark.parametrize("build,message", [
    (lambda: sa.Pattern.window(left=2), "invalid right = none: must be given too"),
    (lambda: sa.Pattern.window(right=2), "invalid left = none: must be given too"),
    (lambda: sa.Pattern.window(2, left=1, right=1),
     "invalid window = 2: must not be given with left and right"),
    (lambda: sa.Pattern.window(), "invalid window = None: give window W, or left and right"),
    (lambda: sa.Pattern.window(left=-2, right=0),
     "invalid left = -2: must be an integer >= -1 (one-sided, in window steps; -1 = unbounded)"),
    (lambda: sa.Pattern.longformer(left=1, right=-7), "invalid right = -7: must be an integer >= -1"),
    (lambda: sa.Pattern.window(left=1.5, right=0), "invalid left = 1.5: must be an integer"),
    (lambda: sa.Pattern.chunked(0), "invalid chunk_size = 0: must be an integer >= 1 (tokens per chunk)"),
    (lambda: sa.Pattern.chunked(2.0), "invalid chunk_size = 2.0: must be an integer"),
    (lambda: sa.Pattern.neighborhood(4), "invalid kernel_size = 4: must be an odd integer >= 1"),
    (lambda: sa.Pattern.neighborhood(3, dilation=0), "invalid dilation = 0: must be an integer >= 1"),
    (lambda: sa.Pattern._make("window", window=1, chunk_size=4),
     "invalid chunk_size = 4: not used by pattern window"),
    (lambda: sa.Pattern._make("chunked", chunk_size=4, kernel_size=3),
     "invalid kernel_size = 3: not used by pattern chunked"),
    (lambda: sa.Pattern._make("dense", left=1, right=1), "invalid left = 1: not used by pattern dense"),
    (lambda: sa.Pattern._make("chunked"), "invalid chunk_size = none: the chunked pattern needs"),
])
def test_bad_modern_parameters(build, message):
    with pytest.raises(ValueError) as e:
        build()
    assert str(e.value).startswith(message)
    assert "--" not in str(e.value)


@pytest.mark.parametrize("pattern,n,nk,message", [
    (sa.Pattern.neighborhood(9), 8, 8,
     "invalid kernel_size = 9: must be an odd integer in [1, seq_len_k] = [1, 8]"),
    (sa.Pattern.neighborhood(3, dilation=3), 8, 8,
     "invalid dilation = 3: must be in [1, floor(seq_len_k / kernel_size)] = [1, 2]"),
    (sa.Pattern.neighborhood(3), 9, 8, "invalid seq_len_q = 9: must be <= seq_len_k (8)"),
])
def test_neighborhood_sizes_it_refuses(pattern, n, nk, message):
    with pytest.raises(ValueError) as e:
        pattern.mask(n, nk)
    assert str(e.value).startswith(message)


def test_check_names_a_window_pair_read_the_other_way_round():
    # docs/contract.md §4.9: a (left, right) window with its sides swapped is named.
    q, k, v = qkv((1, 1, 200, 8), seed=5)
    swapped = sa.Pattern.window(left=1, right=6).mask(200)
    s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(8.0)
    s = np.where(swapped[None, None], s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    o = (e / e.sum(-1, keepdims=True)) @ v
    report = sa.check(q, k, v, sa.Pattern.window(left=6, right=1), o)
    assert not report.passed
    assert report.probable_cause == (
        "window sides swapped (candidate matches --window-left 1 --window-right 6)")
    assert sa.check(q, k, v, sa.Pattern.window(left=1, right=6), o).passed
