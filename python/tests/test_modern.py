"""Grouped-query heads, softcap, ALiBi and sinks from Python (docs/contract.md §2.7–§2.9).

The expected values come from a NumPy version of the contract's formulas written here
(``numpy_reference``), independent of the C++ oracle; bad values raise one ValueError naming
the keyword.
"""
from typing import Optional

import numpy as np
import pytest

import sparseattn as sa


def numpy_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray,
                    softcap: Optional[float] = None, slopes: Optional[np.ndarray] = None,
                    sinks: Optional[np.ndarray] = None):
    """Contract §2.7–§2.9 literally: kv head h // g, s = scale q.k, softcap, ALiBi, mask,
    the sink in the denominator. ``allowed`` [Hq, Lq, Lk] bool."""
    B, Hq, Lq, D = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    g = Hq // Hkv
    kr = np.repeat(k, g, axis=1)  # repeat_interleave: head h reads kv head h // g
    vr = np.repeat(v, g, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, kr) / np.sqrt(D)
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    if slopes is not None:
        p = np.arange(Lq)[:, None] + Lk - Lq
        dist = np.abs(p - np.arange(Lk)[None, :])
        s = s - slopes.reshape(-1, Hq, 1, 1) * dist
    s = np.where(allowed[None], s, -np.inf)
    sink = np.full((1, Hq, Lq, 1), -np.inf) if sinks is None else \
        np.broadcast_to(sinks.reshape(1, Hq, 1, 1), (1, Hq, Lq, 1))
    m = np.maximum(s.max(axis=-1, keepdims=True), sink)
    e = np.exp(s - m)
    denom = e.sum(axis=-1, keepdims=True) + np.exp(sink - m)
    o = np.einsum("bhij,bhjd->bhid", e / denom, vr)
    lse = (m + np.log(denom))[..., 0]
    return o, lse


@pytest.fixture
def inputs():
    rng = np.random.default_rng(7)
    q = 2.0 * rng.standard_normal((1, 8, 10, 4))
    k = rng.standard_normal((1, 2, 14, 4))
    v = rng.standard_normal((1, 2, 14, 4))
    return q, k, v


def band(Hq: int, Lq: int, Lk: int, w: int, causal: bool) -> np.ndarray:
    p = np.arange(Lq)[:, None] + Lk - Lq
    j = np.arange(Lk)[None, :]
    a = np.abs(j - p) <= w
    if causal:
        a &= j <= p
    return np.broadcast_to(a, (Hq, Lq, Lk))


@pytest.mark.parametrize("causal", [False, True])
def test_oracle_matches_numpy_with_every_modifier(inputs, causal):
    q, k, v = inputs
    slopes = np.linspace(0.05, 0.4, 8)
    sinks = np.linspace(-1.0, 2.0, 8)
    p = sa.Pattern.window(3, causal=causal)
    o, lse = sa.attend(q, k, v, p, softcap=1.5, alibi_slopes=slopes, sinks=sinks)
    o_ref, lse_ref = numpy_reference(q, k, v, band(8, 10, 14, 3, causal), 1.5, slopes, sinks)
    np.testing.assert_allclose(o, o_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, lse_ref, rtol=1e-12, atol=1e-12)
    report = sa.check(q, k, v, p, o, lse, softcap=1.5, alibi_slopes=slopes, sinks=sinks)
    assert report.passed, report.summary()


def test_a_real_row_without_keys_has_lse_equal_to_its_sink():
    # Causal with L_q = 3 > L_k = 2: query 0 sits at p = -1 and attends nothing.
    q = np.ones((1, 2, 3, 1))
    k = np.zeros((1, 1, 2, 1))
    v = np.ones((1, 1, 2, 1))
    sinks = np.array([0.25, -3.0])
    o, lse = sa.attend(q, k, v, sa.Pattern.dense(causal=True), sinks=sinks)
    assert o[0, 0, 0, 0] == 0.0 and o[0, 1, 0, 0] == 0.0
    assert lse[0, 0, 0] == 0.25 and lse[0, 1, 0] == -3.0
    # Query 1 (p = 0) attends key 0 (score 0): lse = log(e^0.25 + 1), o = 1 / (e^0.25 + 1).
    assert lse[0, 0, 1] == pytest.approx(np.log(np.exp(0.25) + 1.0), abs=1e-15)
    assert o[0, 0, 1, 0] == pytest.approx(1.0 / (np.exp(0.25) + 1.0), abs=1e-15)


def test_check_names_ignored_sinks(inputs):
    q, k, v = inputs
    sinks = np.linspace(-1.0, 2.0, 8)
    p = sa.Pattern.window(3)
    o, lse = sa.attend(q, k, v, p)  # the mistake: no sinks
    report = sa.check(q, k, v, p, o, lse, sinks=sinks)
    assert not report.passed
    assert report.probable_cause.startswith("sinks ignored"), report.probable_cause


def test_kernels_without_the_feature_refuse_by_name(inputs):
    q, k, v = inputs
    with pytest.raises(ValueError, match="invalid impl = a3_window_band: does not serve "
                                         "grouped-query heads, softcap"):
        sa.attend(q, k, v, sa.Pattern.window(3), impl="a3_window_band", softcap=2.0)


@pytest.mark.parametrize("kwargs, says", [
    ({"softcap": 0.0}, "invalid softcap = 0: must be a finite number > 0"),
    ({"softcap": float("nan")}, "invalid softcap = nan: must be a finite real number"),
    ({"sinks": np.zeros(3)}, "invalid sinks shape = [3]: must be [8]"),
    ({"sinks": np.array([np.inf] + [0.0] * 7)}, "invalid sinks[0] = inf: must be a finite number"),
    ({"alibi_slopes": np.zeros((2, 8))}, "invalid alibi_slopes shape = [2, 8]: must be [8]"),
    ({"softcap": 1.0, "masked_score": -1e9}, "invalid masked_score = -1e+09: must be -inf"),
])
def test_bad_values_name_the_keyword(inputs, kwargs, says):
    q, k, v = inputs
    with pytest.raises(ValueError) as e:
        sa.attend(q, k, v, sa.Pattern.window(3), **kwargs)
    assert str(e.value).startswith(says), str(e.value)


def test_head_counts_that_do_not_group_are_refused():
    q = np.zeros((1, 4, 2, 2))
    k = v = np.zeros((1, 3, 2, 2))
    with pytest.raises(ValueError, match=r"invalid k num_heads = 3: must divide q num_heads \(4\)"):
        sa.attend(q, k, v, sa.Pattern.dense())


def test_time_impl_checks_a_modern_kernel_against_the_oracle_with_the_same_modifiers(inputs):
    # The harness's oracle (api/oracle.h) applies the problem's grouped heads, softcap and
    # sinks, so a kernel that reads them is checked and timed; one that does not is refused.
    q, k, v = inputs
    sinks = np.linspace(-1.0, 2.0, 8)
    t = sa.time_impl(q, k, v, sa.Pattern.dense(causal=True), "cpu_k01_dense_flash", repeats=1,
                     warmup=0, softcap=1.5, sinks=sinks)
    o_ref, lse_ref = sa.attend(q, k, v, sa.Pattern.dense(causal=True), softcap=1.5, sinks=sinks)
    np.testing.assert_allclose(t.o, o_ref, atol=2e-5, rtol=2e-4)
    np.testing.assert_allclose(t.lse, lse_ref, atol=2e-5, rtol=2e-4)
    with pytest.raises(ValueError, match="does not serve grouped-query heads, softcap"):
        sa.time_impl(q, k, v, sa.Pattern.dense(), "a0_dense", repeats=1, softcap=1.5)


def test_check_judges_a_candidate_dsinks_and_a_flipped_sign_fails(inputs):
    # contract §7.7: the float32 backward kb02 (attend impl="cpu_k06_generic_tiles") gives
    # dq, dk, dv and dsinks; check(dsinks=) judges its dσ, as float32, against b1's and
    # passes; the planted mistake, dσ with its sign flipped, fails under "dsinks" alone.
    q, k, v = inputs
    rng = np.random.default_rng(8)
    dout = rng.standard_normal((1, 8, 10, 4))
    sinks = np.linspace(-1.0, 2.0, 8)
    p = sa.Pattern.window(3, causal=True)
    r = sa.attend(q, k, v, p, impl="cpu_k06_generic_tiles", dout=dout, softcap=1.5, sinks=sinks)
    assert r.dsinks.shape == (8,)
    ds = r.dsinks.astype(np.float32)
    report = sa.check(q, k, v, p, r.o, r.lse, dout=dout, dq=r.dq, dk=r.dk, dv=r.dv, dsinks=ds,
                      softcap=1.5, sinks=sinks)
    assert report.passed, report.summary()
    assert report.dsinks is not None and report.dsinks.passed
    assert report.dsinks.rows_are == "head"
    bad = sa.check(q, k, v, p, r.o, r.lse, dout=dout, dq=r.dq, dsinks=-ds, softcap=1.5,
                   sinks=sinks)
    assert not bad.passed
    assert bad.dq.passed and not bad.dsinks.passed
    with pytest.raises(ValueError, match="invalid dsinks = array: needs sinks"):
        sa.check(q, k, v, p, r.o, r.lse, dout=dout, dsinks=ds, softcap=1.5)
