"""Gradients under the other conventions through the binding (docs/contract.md §7.4–§7.6,
docs/backward.md): ``attend(..., dout=)`` under Longformer's per-batch ``global_mask`` and
global projections, HF BigBird's listing (``compat="hf-bigbird"``) and a finite
``masked_score`` returns the gradients ``sparseattn attend --dout`` writes, bit for bit,
the projections' ``dq_global``, ``dk_global``, ``dv_global`` included; they match central
finite differences of ``attend``'s own o; ``check(..., dout=)`` reports as ``check --dout``
does and catches a planted wrong gradient at the rows where it differs."""
from __future__ import annotations

import json

import numpy as np
import pytest

import sparseattn as sa

RNG = np.random.default_rng(7)


def _normal(*shape):
    return RNG.standard_normal(shape)


def _longformer():
    """Two batch elements with their own global sets ({0, 4}, {2}), seq_len 7, window 1."""
    gm = np.zeros((2, 7), dtype=bool)
    gm[0, [0, 4]] = True
    gm[1, 2] = True
    t = dict(q=_normal(2, 1, 7, 3), k=_normal(2, 1, 7, 3), v=_normal(2, 1, 7, 2),
             q_global=_normal(2, 1, 7, 3), k_global=_normal(2, 1, 7, 3),
             v_global=_normal(2, 1, 7, 2), dout=_normal(2, 1, 7, 2))
    return sa.Pattern.longformer(window=1), gm, t


def _save(tmp_path, **arrays):
    for name, x in arrays.items():
        np.save(tmp_path / f"{name}.npy", x)


def _files(tmp_path, *names):
    out = []
    for n in names:
        out += [f"--{n.replace('_', '-')}", tmp_path / f"{n}.npy"]
    return out


def test_longformer_projection_gradients_bit_identical_to_cli(cli, tmp_path):
    pattern, gm, t = _longformer()
    r = sa.attend(t["q"], t["k"], t["v"], pattern, dout=t["dout"], global_mask=gm,
                  q_global=t["q_global"], k_global=t["k_global"], v_global=t["v_global"])
    assert isinstance(r, sa.AttendGlobalResult)
    _save(tmp_path, gm=gm.astype(np.uint8), **t)
    cli(["attend", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v",
         tmp_path / "v.npy", "--pattern", "longformer", "--window", "1", "--global-mask",
         tmp_path / "gm.npy", "--out", tmp_path / "o.npy", "--dout", tmp_path / "dout.npy"]
        + _files(tmp_path, "q_global", "k_global", "v_global")
        + ["--dq", tmp_path / "dq.npy", "--dk", tmp_path / "dk.npy", "--dv", tmp_path / "dv.npy",
           "--dq-global", tmp_path / "dqg.npy", "--dk-global", tmp_path / "dkg.npy",
           "--dv-global", tmp_path / "dvg.npy"])
    for name, file in (("o", "o"), ("dq", "dq"), ("dk", "dk"), ("dv", "dv"),
                       ("dq_global", "dqg"), ("dk_global", "dkg"), ("dv_global", "dvg")):
        ref = np.load(tmp_path / f"{file}.npy")
        got = getattr(r, name)
        assert got.dtype == ref.dtype == np.float64 and got.shape == ref.shape, name
        assert np.array_equal(got, ref), name
    # A global row reads only the projections: its dq is 0, a local row's dq_global is 0.
    assert np.all(r.dq[0, 0, [0, 4]] == 0) and np.all(r.dq[1, 0, 2] == 0)
    assert np.all(r.dq_global[0, 0, [1, 2, 3, 5, 6]] == 0)


def _fd(loss, arrays, name, h=1e-5):
    x = arrays[name]
    g = np.zeros_like(x)
    for e in np.ndindex(x.shape):
        x0 = x[e]
        x[e] = x0 + h
        up = loss()
        x[e] = x0 - h
        down = loss()
        x[e] = x0
        g[e] = (up - down) / (2 * h)
    return g


def _rel_err(fd, grad):
    return float(np.max(np.abs(fd - grad)) / np.max(np.abs(grad)))


def test_every_mode_matches_finite_differences_of_attend():
    # Longformer, per-batch globals and projections: all six tensors.
    pattern, gm, t = _longformer()
    kw = dict(global_mask=gm)

    def lf_loss():
        o, _ = sa.attend(t["q"], t["k"], t["v"], pattern, q_global=t["q_global"],
                         k_global=t["k_global"], v_global=t["v_global"], **kw)
        return float(np.sum(t["dout"] * o))

    r = sa.attend(t["q"], t["k"], t["v"], pattern, dout=t["dout"], q_global=t["q_global"],
                  k_global=t["k_global"], v_global=t["v_global"], **kw)
    names = {"q": "dq", "k": "dk", "v": "dv", "q_global": "dq_global", "k_global": "dk_global",
             "v_global": "dv_global"}
    errors = {g: _rel_err(_fd(lf_loss, t, x), getattr(r, g)) for x, g in names.items()}
    assert all(e <= 1e-6 for e in errors.values()), errors

    # HF BigBird: 5 blocks of 2, eval-mode table (every random draw repeats block 0).
    table = np.zeros((1, 3, 1), dtype=np.int64)
    bb = sa.Pattern.bigbird(2, 1, random_table=table)
    h = dict(q=_normal(1, 1, 10, 3), k=_normal(1, 1, 10, 3), v=_normal(1, 1, 10, 2))
    dout = _normal(1, 1, 10, 2)

    def hf_loss():
        o, _ = sa.attend(h["q"], h["k"], h["v"], bb, compat="hf-bigbird")
        return float(np.sum(dout * o))

    r = sa.attend(h["q"], h["k"], h["v"], bb, compat="hf-bigbird", dout=dout)
    errors = {x: _rel_err(_fd(hf_loss, h, x), getattr(r, "d" + x)) for x in "qkv"}
    assert all(e <= 1e-6 for e in errors.values()), errors

    # A finite masked score: -3 (masked keys keep real weight), rows 0..2 with no key.
    w = sa.Pattern.window(1, causal=True)
    m = dict(q=_normal(1, 1, 7, 3), k=_normal(1, 1, 4, 3), v=_normal(1, 1, 4, 2))
    dout = _normal(1, 1, 7, 2)

    def ms_loss():
        o, _ = sa.attend(m["q"], m["k"], m["v"], w, masked_score=-3.0)
        return float(np.sum(dout * o))

    r = sa.attend(m["q"], m["k"], m["v"], w, masked_score=-3.0, dout=dout)
    errors = {x: _rel_err(_fd(ms_loss, m, x), getattr(r, "d" + x)) for x in "qkv"}
    assert all(e <= 1e-6 for e in errors.values()), errors
    # and the -inf convention's gradient is a different function's: the bound catches it
    plain = sa.attend(m["q"], m["k"], m["v"], w, dout=dout)
    assert _rel_err(_fd(ms_loss, m, "v"), plain.dv) > 1e-3


def test_check_reports_as_the_cli_and_catches_the_dropped_global_rows(cli, tmp_path):
    pattern, gm, t = _longformer()
    o, _ = sa.attend(t["q"], t["k"], t["v"], pattern, global_mask=gm)
    r = sa.attend(t["q"], t["k"], t["v"], pattern, global_mask=gm, dout=t["dout"])
    dropped = r.dq.copy()  # the planted mistake: the global rows' term dropped from dq
    dropped[0, 0, [0, 4]] = 0
    dropped[1, 0, 2] = 0
    rep = sa.check(t["q"], t["k"], t["v"], pattern, o, global_mask=gm, dout=t["dout"],
                   dq=dropped, dv=r.dv)
    assert not rep.passed and rep.dv.passed and not rep.dq.passed
    assert rep.gradient_oracle == "longformer_compat_grad"
    assert rep.dq.rows == {"0,0": "0,4", "1,0": "2"} and rep.dq.rows_are == "query"
    assert "dq fails at (batch, head) 0,0: query rows 0,4" in rep.summary()
    _save(tmp_path, q=t["q"], k=t["k"], v=t["v"], o=o, dout=t["dout"], dq=dropped, dv=r.dv,
          gm=gm.astype(np.uint8))
    j = json.loads(cli(["check", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v",
                        tmp_path / "v.npy", "--candidate", tmp_path / "o.npy", "--pattern",
                        "longformer", "--window", "1", "--global-mask", tmp_path / "gm.npy",
                        "--dout", tmp_path / "dout.npy", "--candidate-dq", tmp_path / "dq.npy",
                        "--candidate-dv", tmp_path / "dv.npy"], check=False).stdout)
    for name in ("gradient_oracle", "pass"):
        assert rep.to_dict()[name] == j[name], name
    assert rep.dq.to_dict() == j["dq"] and rep.dv.to_dict() == j["dv"]
    # the true gradient passes, and so do the projections' under the projections
    assert sa.check(t["q"], t["k"], t["v"], pattern, o, global_mask=gm, dout=t["dout"],
                    dq=r.dq, dk=r.dk, dv=r.dv).passed
    og, _ = sa.attend(t["q"], t["k"], t["v"], pattern, global_mask=gm, q_global=t["q_global"],
                      k_global=t["k_global"], v_global=t["v_global"])
    rg = sa.attend(t["q"], t["k"], t["v"], pattern, global_mask=gm, q_global=t["q_global"],
                   k_global=t["k_global"], v_global=t["v_global"], dout=t["dout"])
    good = sa.check(t["q"], t["k"], t["v"], pattern, og, global_mask=gm, q_global=t["q_global"],
                    k_global=t["k_global"], v_global=t["v_global"], dout=t["dout"],
                    dq_global=rg.dq_global, dk_global=rg.dk_global, dv_global=rg.dv_global)
    assert good.passed and good.dk_global.passed and good.global_projections
    swapped = sa.check(t["q"], t["k"], t["v"], pattern, og, global_mask=gm,
                       q_global=t["q_global"], k_global=t["k_global"], v_global=t["v_global"],
                       dout=t["dout"], dk_global=rg.dk)
    assert not swapped.passed and swapped.dk_global.rows_are == "key"


def test_masked_score_check_uses_its_gradient():
    w = sa.Pattern.window(1, causal=True)
    q, k, v, dout = _normal(1, 1, 7, 3), _normal(1, 1, 4, 3), _normal(1, 1, 4, 2), _normal(1, 1, 7, 2)
    r = sa.attend(q, k, v, w, masked_score=-1e6, dout=dout)
    rep = sa.check(q, k, v, w, r.o, masked_score=-1e6, dout=dout, dq=r.dq, dk=r.dk, dv=r.dv)
    assert rep.passed and rep.gradient_oracle == "masked_score_grad"
    plain = sa.attend(q, k, v, w, dout=dout)  # -inf's gradient: dv misses the empty rows' mean
    bad = sa.check(q, k, v, w, r.o, masked_score=-1e6, dout=dout, dq=plain.dq, dv=plain.dv)
    assert bad.dq.passed and not bad.dv.passed and bad.dv.rows == {"0,0": "0-3"}


def test_bad_arguments_are_refused_naming_them():
    pattern, gm, t = _longformer()
    with pytest.raises(ValueError, match=r"^invalid impl = cpu_k06_generic_tiles: must be a1_dense_masked"):
        sa.attend(t["q"], t["k"], t["v"], pattern, impl="cpu_k06_generic_tiles", global_mask=gm,
                  dout=t["dout"])
    with pytest.raises(ValueError, match=r"^invalid dq_global = array"):
        sa.check(t["q"], t["k"], t["v"], pattern, t["dout"], global_mask=gm, dout=t["dout"],
                 dq_global=t["q"])
    with pytest.raises(ValueError, match=r"^invalid q_global"):
        sa.attend(t["q"], t["k"], t["v"], pattern, q_global=t["q"])
    with pytest.raises(ValueError, match=r"^invalid compat = hf"):
        sa.attend(t["q"], t["k"], t["v"], pattern, compat="hf")
    with pytest.raises(ValueError, match=r"^invalid masked_score = -1e9: needs impl a1_dense_masked"):
        sa.attend(t["q"], t["k"], t["v"], pattern, impl="a2_sparse_rows", masked_score="-1e9")
