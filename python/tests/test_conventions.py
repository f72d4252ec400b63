"""Checks contract §1.6 (convention keyword arguments of ``check``) and §4.9 (the report's
probable cause and failing rows) through the Python package, on the same computation as
``sparseattn check``."""
import numpy as np

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
