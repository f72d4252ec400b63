"""Checks contract §1.6 (convention keyword arguments of ``check``) and §4.9 (the report's
probable cause and failing rows) through the Python package, on the same computation as
``sparseattn check``."""
import numpy as np
import pytest

import sparseattn as sa


def _inputs(seed=0, shape=(1, 2, 24, 8)):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-1, 1, shape) for _ in range(3))


def test_lse_base_2_is_named_and_passes_with_lse_base():
    q, k, v = _inputs()
    p = sa.Pattern.window(2)
    o, lse = sa.attend(q, k, v, p)
    report = sa.check(q, k, v, p, o, lse / np.log(2))
    assert not report.passed
    assert report.probable_cause.startswith("lse in base 2")
    assert report.lse.rows == {"0,0": "0-23", "0,1": "0-23"}
    assert "probable cause: lse in base 2" in report.summary()
    assert sa.check(q, k, v, p, o, lse / np.log(2), lse_base="2").passed


def test_bshd_layout_passes_with_layout_and_window_one_narrower_is_named():
    q, k, v = _inputs(1)
    o, _ = sa.attend(q, k, v, sa.Pattern.window(2))
    t = lambda x: np.ascontiguousarray(np.swapaxes(x, 1, 2))  # noqa: E731
    assert sa.check(t(q), t(k), t(v), sa.Pattern.window(2), t(o), layout="bshd").passed
    report = sa.check(q, k, v, sa.Pattern.window(3), o)
    assert report.probable_cause == "window one narrower (candidate matches --window 2)"
    assert report.o.rows["0,0"] == "0-23"  # every row loses a key at each edge of its band
    assert report.to_dict()["probable_cause"] == report.probable_cause


def test_nan_is_a_string_in_the_dict_and_nan_in_the_attribute():
    q, k, v = _inputs(2)
    p = sa.Pattern.window(1)
    o, _ = sa.attend(q, k, v, p)
    o[0, 1, 5, 0] = np.nan
    report = sa.check(q, k, v, p, o)
    assert np.isnan(report.o.worst_candidate)
    assert report.to_dict()["o"]["worst_candidate"] == "nan"
    assert report.o.first_nonfinite["index"] == [0, 1, 5, 0]
    assert report.o.rows == {"0,1": "5"}


def test_the_greatest_difference_of_a_nan_mismatch_is_the_nan():
    # core/check.h's max_abs_error ranges over the finite elements only (here the tiny
    # perturbation below); the report's sentence must name the NaN it points at.
    q, k, v = _inputs(2)
    p = sa.Pattern.window(1)
    o, lse = sa.attend(q, k, v, p)
    o[0, 0, 3, 1] += 1e-13          # within tolerance: the only finite difference
    o[0, 1, 5, 0] = np.nan
    report = sa.check(q, k, v, p, o, lse)
    assert np.isnan(report.o.max_abs_error)  # a NaN is the worst: no finite size (§4.9)
    assert 0 < report.o.max_abs_error_finite < 1e-12  # the finite-only maximum, beside it
    line = report.o.line()
    assert "greatest absolute difference nan at index (0, 1, 5, 0) (candidate nan" in line, line
    assert "greatest relative difference nan" in line, line
    assert f"where both are finite: absolute {report.o.max_abs_error_finite:.6g}" in line, line
    assert "x the budget" not in line, line
    # Row 5 of head 1 has three allowed keys: the hint says overflow, not "masked row".
    summary = report.summary()
    assert ("hint: the candidate has NaN/Inf where the oracle is finite, on query row 5, which "
            "has 3 allowed keys (it is not masked)") in summary, summary
    assert "subtract the row maximum" in summary, summary
    assert "a row with no allowed key" not in summary, summary


def test_a_finite_lse_where_the_oracle_has_minus_inf_is_an_infinite_difference():
    q, k, v = _inputs(4)
    mask = np.ones((24, 24), dtype=bool)
    mask[7] = False                  # a fully masked row: oracle lse = -inf
    p = sa.Pattern.explicit(mask)
    o, lse = sa.attend(q, k, v, p)
    lse[0, 0, 7] = 0.0
    report = sa.check(q, k, v, p, o, lse)
    assert not report.passed and report.lse.worst_index == (0, 0, 7)
    line = report.lse.line()
    assert "greatest absolute difference inf at index (0, 0, 7) (candidate 0.0, oracle -inf)" \
        in line, line


def test_attend_conventions_match_the_default_rearranged():
    q, k, v = _inputs(3)
    p = sa.Pattern.window(1)
    o, lse = sa.attend(q, k, v, p)
    t = lambda x: np.ascontiguousarray(np.swapaxes(x, 1, 2))  # noqa: E731
    ob, lb = sa.attend(t(q), t(k), t(v), p, layout="bshd", lse_base="2")
    assert np.array_equal(ob, t(o))
    np.testing.assert_allclose(lb, lse / np.log(2), rtol=1e-15)
    keep = np.ones((1, 24), bool)
    keep[0, 20:] = False
    o1, _ = sa.attend(q, k, v, p, key_padding_mask=keep)
    o2, _ = sa.attend(q, k, v, p, key_padding_mask=~keep, key_padding_polarity="ignore")
    assert np.array_equal(o1, o2)
    assert not np.array_equal(o1, o)


def test_gradients_under_bshd_layout_and_masked_score_with_dout():
    # dout and the gradients follow layout= (contract §1.6, §7): attend returns them bshd
    # and check reads them bshd, the same numbers as bhsd transposed.
    q, k, v = _inputs(4)
    p = sa.Pattern.window(2)
    rng = np.random.default_rng(5)
    dout = rng.uniform(-1, 1, q.shape)
    r = sa.attend(q, k, v, p, dout=dout)
    t = lambda x: np.ascontiguousarray(np.swapaxes(x, 1, 2))  # noqa: E731
    rb = sa.attend(t(q), t(k), t(v), p, dout=t(dout), layout="bshd")
    assert np.array_equal(rb.lse, r.lse)  # lse stays [batch, num_heads, seq_len_q]
    for name in ("o", "dq", "dk", "dv"):
        assert np.array_equal(getattr(rb, name), t(getattr(r, name))), name
    assert sa.check(t(q), t(k), t(v), p, rb.o, dout=t(dout), dq=rb.dq, dk=rb.dk, dv=rb.dv,
                    layout="bshd").passed
    bad = sa.check(q, k, v, p, r.o, dout=dout, dq=r.dq * 2)
    assert not bad.passed and bad.dq is not None and not bad.dq.passed
    # With a finite masked score the gradients are judged against that function's
    # (contract §7.6); here every row has an allowed key, so exp(-1e9) = 0 leaves b1's.
    ms = sa.check(q, k, v, p, r.o, dout=dout, dq=r.dq, masked_score=-1e9)
    assert ms.passed and ms.gradient_oracle == "masked_score_grad"
    assert not sa.check(q, k, v, p, r.o, dout=dout, dq=r.dq * 2, masked_score=-1e9).passed


def _flash_reference(q, k, v, valid_keys, causal, window):
    """FlashAttention's test reference (``construct_local_mask`` + ``attention_ref``) written
    out: sk = the valid key count, sq = seq_len_q (no query padding mask, L_q != L_k)."""
    b_, h_, lq, d = q.shape
    lk = k.shape[2]
    o = np.zeros(q.shape[:3] + (v.shape[3],))
    lse = np.full(q.shape[:3], -np.inf)
    for b in range(b_):
        sk = valid_keys[b]
        for i in range(lq):
            p = i + sk - lq
            keys = [j for j in range(sk)
                    if (not causal or j <= p) and (window is None or abs(j - p) <= window)]
            if not keys:
                continue
            s = np.einsum("hd,hjd->hj", q[b, :, i], k[b][:, keys]) / np.sqrt(d)
            m = s.max(axis=1, keepdims=True)
            w = np.exp(s - m)
            lse[b, :, i] = (m + np.log(w.sum(axis=1, keepdims=True)))[:, 0]
            o[b, :, i] = np.einsum("hj,hje->he", w / w.sum(axis=1, keepdims=True), v[b][:, keys])
    return o, lse


def test_padding_align_valid_reproduces_flashattention_with_right_padding():
    rng = np.random.default_rng(7)
    q = rng.uniform(-1, 1, (3, 2, 5, 4))
    k = rng.uniform(-1, 1, (3, 2, 9, 4))
    v = rng.uniform(-1, 1, (3, 2, 9, 3))
    valid = [9, 6, 2]
    keep = np.arange(9)[None, :] < np.array(valid)[:, None]
    for pattern, causal, window in [(sa.Pattern.dense(causal=True), True, None),
                                    (sa.Pattern.window(1, causal=True), True, 1),
                                    (sa.Pattern.window(2), False, 2)]:
        o, lse = _flash_reference(q, k, v, valid, causal, window)
        ok = sa.check(q, k, v, pattern, o, lse, key_padding_mask=keep, padding_align="valid")
        assert ok.passed, ok.summary()
        assert "--padding-align valid" in ok.conventions
        bad = sa.check(q, k, v, pattern, o, lse, key_padding_mask=keep)
        assert not bad.passed
        assert bad.probable_cause.endswith(
            "aligned to the valid key count, as FlashAttention does with padding: "
            "pass --padding-align valid"), bad.probable_cause


def test_padding_align_valid_refuses_padding_that_is_not_right_padding():
    q, k, v = _inputs(shape=(2, 1, 6, 4))
    keep = np.ones((2, 6), bool)
    keep[1, 2] = False  # batch element 1: a real key after a padded one
    o, lse = sa.attend(q, k, v, sa.Pattern.dense(causal=True), key_padding_mask=keep)
    with pytest.raises(ValueError, match=r"invalid key_padding_mask = batch element 1: "):
        sa.check(q, k, v, sa.Pattern.dense(causal=True), o, lse, key_padding_mask=keep,
                 padding_align="valid")
    with pytest.raises(ValueError, match=r"invalid padding_align = valid: needs a key padding mask"):
        sa.check(q, k, v, sa.Pattern.dense(causal=True), o, lse, padding_align="valid")
    with pytest.raises(ValueError, match=r"invalid padding_align = middle"):
        sa.check(q, k, v, sa.Pattern.dense(causal=True), o, lse, padding_align="middle")
