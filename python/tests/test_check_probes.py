"""Checks contract §4.9's cause probes through ``sparseattn.check`` (``probes=``,
``probe_budget=``) and §5.2's shape errors that are conventions (``layout="bshd"`` forgotten
with lse given, grouped-query attention). Each candidate is computed here from a dense
allowed mask written straight from contract §2-3, not by the library."""
from typing import Tuple

import numpy as np
import pytest

import sparseattn as sa

N = 2048  # one head, head_dim 64: the CLI tests run n = 4096, docs/numerics.md times 16384


def _inputs(n: int = N, d: int = 64, heads: int = 1, seed: int = 0) -> Tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-1, 1, (1, heads, n, d)) for _ in range(3))


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
               allowed: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """o [1, H, Lq, dv], lse [1, H, Lq] of softmax(q k^T / sqrt(d)) v over `allowed`
    [Lq, Lk]; a row with no allowed key has o = 0, lse = -inf (contract §2)."""
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.where(allowed, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    safe = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - safe)
    z = p.sum(axis=-1, keepdims=True)
    o = np.where(z > 0, (p @ v) / np.where(z > 0, z, 1.0), 0.0)
    lse = np.where(z[..., 0] > 0, safe[..., 0] + np.log(np.where(z[..., 0] > 0, z[..., 0], 1.0)),
                   -np.inf)
    return o, lse


def _band(n: int, w: int) -> np.ndarray:
    i = np.arange(n)
    return np.abs(i[:, None] - i[None, :]) <= w


def test_window_one_wider_is_named_within_the_default_budget():
    q, k, v = _inputs()
    o, _ = _attention(q, k, v, _band(N, 9))
    report = sa.check(q, k, v, sa.Pattern.window(8), o)
    assert report.probable_cause == "window one wider (candidate matches --window 9)"
    assert report.probes["mode"] == "auto" and report.probes["budget_s"] == 5.0
    assert "not_run" not in report.probes
    assert sa.check(q, k, v, sa.Pattern.window(9), o).passed


def test_global_tokens_ignoring_causality_are_named():
    q, k, v = _inputs()
    g = np.zeros(N, bool)
    g[[0, 500, 1500]] = True
    i = np.arange(N)
    causal_band = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] <= 8)
    o, _ = _attention(q, k, v, causal_band | g[:, None] | g[None, :])
    report = sa.check(q, k, v, sa.Pattern.longformer(8, [0, 500, 1500], causal=True), o)
    assert report.probable_cause.startswith("global tokens ignore causality"), report.probable_cause
    assert report.hint is None  # HF Longformer has no causal mask


def test_worst_row_names_the_smallest_key_set_that_explains_it():
    q, k, v = _inputs(n=512, d=8)
    allowed = _band(512, 4)
    allowed[300, [296, 297]] = False
    o, lse = _attention(q, k, v, allowed)
    report = sa.check(q, k, v, sa.Pattern.window(4), o, lse)
    text = "row 300 (batch 0, head 0) matches if keys 296-297 are removed"
    assert report.probes["worst_row_keys"]["text"] == text
    assert report.probable_cause.endswith(text)


def test_probes_never_and_bad_probe_arguments():
    q, k, v = _inputs(n=64, d=8)
    o, _ = _attention(q, k, v, _band(64, 2))
    report = sa.check(q, k, v, sa.Pattern.window(3), o, probes="never")
    assert report.probable_cause == "unknown: probes not run (--probes never)"
    report = sa.check(q, k, v, sa.Pattern.window(3), o, probes="always")
    assert report.probable_cause == "window one narrower (candidate matches --window 2)"
    with pytest.raises(ValueError, match="invalid probes = sometimes: must be auto, always or never"):
        sa.check(q, k, v, sa.Pattern.window(3), o, probes="sometimes")
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="invalid probe_budget"):
            sa.check(q, k, v, sa.Pattern.window(3), o, probe_budget=bad)


def test_forgotten_layout_bshd_with_lse_given_says_did_you_mean():
    q, k, v = _inputs(n=64, d=8, heads=4)
    o, lse = _attention(q, k, v, np.ones((64, 64), bool))
    t = lambda x: np.ascontiguousarray(np.swapaxes(x, 1, 2))  # noqa: E731  FlashAttention's order
    with pytest.raises(ValueError, match=r'invalid lse shape .*did you mean layout="bshd"\?'):
        sa.check(t(q), t(k), t(v), sa.Pattern.dense(), t(o), lse)
    assert sa.check(t(q), t(k), t(v), sa.Pattern.dense(), t(o), lse, layout="bshd").passed
    # Told bshd, given bhsd: the other way round.
    with pytest.raises(ValueError, match=r'did you mean layout="bhsd"\?'):
        sa.check(q, k, v, sa.Pattern.dense(), o, lse, layout="bshd")


def test_grouped_query_attention_is_named():
    # 4 query heads over 2 kv heads is grouped-query attention (contract §2.7): it is judged.
    q, _, _ = _inputs(n=32, d=8, heads=4)
    _, k, v = _inputs(n=32, d=8, heads=2, seed=1)
    report = sa.check(q, k, v, sa.Pattern.dense(), np.zeros((1, 4, 32, 8)))
    assert not report.passed
    # 4 over 3 does not group, and the error says why.
    _, k3, v3 = _inputs(n=32, d=8, heads=3, seed=1)
    with pytest.raises(ValueError, match=r"q has 4 heads, k and v 3: grouped-query attention "
                                         r"needs q's heads to be a whole multiple of k's"):
        sa.check(q, k3, v3, sa.Pattern.dense(), np.zeros((1, 4, 32, 8)))
