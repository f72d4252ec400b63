"""The backward pass through the binding (docs/contract.md §7, docs/backward.md):
``attend(..., dout=)`` runs the backward entry the CLI's ``attend --impl X --dout`` runs
and returns bit-identical gradients; the float64 gradients match central finite
differences of ``attend``'s own o; ``check(..., dout=, dq=, dk=, dv=)`` reports as the
CLI's ``check --dout --candidate-dq ...`` does; a bad dout is refused naming dout."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

import sparseattn as sa
from conftest import qkv


def _bigbird_padding():
    kpm = np.ones((2, 16), dtype=bool)
    kpm[1, 11:] = False  # batch 1: keys 11..15 are padding (and query rows 11..15 masked)
    return kpm


# (id, Pattern, CLI flags, q shape, k shape, head_dim_v, key padding mask)
GRID = [
    # seq_len_q != seq_len_k (bottom-right alignment), head_dim != head_dim_v
    ("dense_q9_k13", sa.Pattern.dense(), ["--pattern", "dense"],
     (1, 2, 9, 5), (1, 2, 13, 5), 3, None),
    # causal with seq_len_q > seq_len_k: rows 0..3 have no key (dq exactly 0)
    ("dense_causal_q13_k9", sa.Pattern.dense(causal=True), ["--pattern", "dense", "--causal"],
     (1, 1, 13, 4), (1, 1, 9, 4), 6, None),
    ("window2_q11_k13", sa.Pattern.window(2), ["--pattern", "window", "--window", "2"],
     (2, 1, 11, 4), (2, 1, 13, 4), 6, None),
    # rank-2 inputs: the gradients keep the ranks of q, k, v (as the CLI keeps its files')
    ("window1_causal_rank2", sa.Pattern.window(1, causal=True),
     ["--pattern", "window", "--window", "1", "--causal"], (7, 6), (10, 6), 3, None),
    ("bigbird_keypadding", sa.Pattern.bigbird(4, 1, seed=1),
     ["--pattern", "bigbird", "--block-size", "4", "--num-random-blocks", "1", "--seed", "1"],
     (2, 2, 16, 4), (2, 2, 16, 4), 3, _bigbird_padding()),
]

BACKWARD = [g for g in sa.impls(backward=True) if g["target"] != "cuda"]
# The CLI (and attend) select, per forward kernel, the LAST backward entry naming it
# (docs/backward.md: the highest rung); an entry another one supersedes (kb01 under kb02)
# is reachable through neither, so it is not part of this comparison.
SELECTED = {g["forward"]: g for g in BACKWARD}
# The grid below holds dense, window and bigbird patterns: the entries that serve any pattern
# (kb03 serves `selected` only, contract §3.16; python/tests/test_selected.py runs it).
SELECTED = {f: g for f, g in SELECTED.items() if g["patterns"] == "any"}


def _inputs(case, seed=21):
    _, _, _, shape_q, shape_k, dv_dim, kpm = case
    q, k, v = qkv(shape_q, shape_k, head_dim_v=dv_dim, seed=seed)
    dout = np.random.default_rng(seed + 1).standard_normal(shape_q[:-1] + (dv_dim,))
    return q, k, v, dout, kpm


def _save(tmp_path, **arrays):
    for name, x in arrays.items():
        np.save(tmp_path / f"{name}.npy", x)


def _pattern_flags(tmp_path, flags, kpm):
    if kpm is None:
        return list(flags)
    np.save(tmp_path / "kpm.npy", kpm)
    return list(flags) + ["--key-padding-mask", tmp_path / "kpm.npy"]


def test_every_forward_with_a_backward_is_selected():
    # the gradient ladder is there: the oracle b1, the reference rungs and the CPU kernel
    names = {g["name"] for g in SELECTED.values()}
    assert {"b1_dense_masked_grad", "b2_sparse_rows_grad", "b3_flash_tiled_grad",
            "cpu_kb02_generic_dq_lanes_grad"} <= names
    assert SELECTED["a1_dense_masked"]["name"] == "b1_dense_masked_grad"


@pytest.mark.parametrize("case", GRID, ids=[c[0] for c in GRID])
def test_gradients_bit_identical_to_cli(cli, tmp_path, case):
    pid, pattern, flags, *_ = case
    q, k, v, dout, kpm = _inputs(case)
    _save(tmp_path, q=q, k=k, v=v, do=dout)
    pflags = _pattern_flags(tmp_path, flags, kpm)
    ran = 0
    for forward, grad in SELECTED.items():
        r = sa.attend(q, k, v, pattern, impl=forward, key_padding_mask=kpm, dout=dout)
        assert isinstance(r, sa.AttendResult)
        cli(["attend", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v",
             tmp_path / "v.npy", "--out", tmp_path / "o.npy", "--impl", forward, "--dout",
             tmp_path / "do.npy", "--dq", tmp_path / "dq.npy", "--dk", tmp_path / "dk.npy",
             "--dv", tmp_path / "dv.npy"] + pflags)
        want_dtype = np.float64 if grad["dtype"] == "float64" else np.float32
        for name, got, x in (("o", r.o, None), ("dq", r.dq, q), ("dk", r.dk, k),
                             ("dv", r.dv, v)):
            ref = np.load(tmp_path / f"{name}.npy")
            assert got.dtype == ref.dtype, (forward, name)
            assert got.shape == ref.shape, (forward, name)
            assert np.array_equal(got, ref), f"{forward} -> {grad['name']}: {name} differs"
            if x is not None:
                assert got.dtype == want_dtype and got.shape == x.shape, (forward, name)
        # every backward holds contract §7.2's exact zeros
        if kpm is not None:
            assert np.all(r.dk[1, :, 11:] == 0) and np.all(r.dv[1, :, 11:] == 0), forward
            assert np.all(r.dq[1, :, 11:] == 0), forward
        if pid == "dense_causal_q13_k9":
            assert np.all(r.dq[..., :4, :] == 0), forward
        ran += 1
    assert ran == len(SELECTED) >= 4


def _finite_differences(pattern, shape_q, shape_k, dv_dim, kpm, scale, seed):
    """attend's float64 gradients (b1) and central finite differences of attend's o (a1)
    for the loss L = sum(dout * o), whose gradient is exactly (dq, dk, dv); h = 1e-5."""
    q, k, v = qkv(shape_q, shape_k, head_dim_v=dv_dim, seed=seed)
    dout = np.random.default_rng(seed + 1).standard_normal(shape_q[:-1] + (dv_dim,))
    r = sa.attend(q, k, v, pattern, scale=scale, key_padding_mask=kpm, dout=dout)
    assert r.dq.dtype == np.float64

    def loss(qq, kk, vv):
        o, _ = sa.attend(qq, kk, vv, pattern, scale=scale, key_padding_mask=kpm)
        return float(np.sum(dout * o))

    h = 1e-5
    fd = {}
    for name, grad, idx in (("dq", r.dq, 0), ("dk", r.dk, 1), ("dv", r.dv, 2)):
        fd[name] = np.zeros_like(grad)
        for e in np.ndindex(grad.shape):
            plus = [q.copy(), k.copy(), v.copy()]
            minus = [q.copy(), k.copy(), v.copy()]
            plus[idx][e] += h
            minus[idx][e] -= h
            fd[name][e] = (loss(*plus) - loss(*minus)) / (2 * h)
    return r, fd


def _rel_err(fd, grad):
    """max |fd - grad| / max |grad| (docs/backward.md's measure)."""
    return float(np.max(np.abs(fd - grad)) / np.max(np.abs(grad)))


FD_CASES = [
    ("dense_causal_q4_k6_d3_dv2", sa.Pattern.dense(causal=True), (1, 2, 4, 3), (1, 2, 6, 3), 2,
     None, 0.9),
    ("window1_keypadding_q5_d2_dv3", sa.Pattern.window(1), (2, 1, 5, 2), (2, 1, 5, 2), 3,
     np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=bool), None),
]


@pytest.mark.parametrize("name,pattern,shape_q,shape_k,dv_dim,kpm,scale", FD_CASES,
                         ids=[c[0] for c in FD_CASES])
def test_float64_gradients_match_central_finite_differences(name, pattern, shape_q, shape_k,
                                                           dv_dim, kpm, scale):
    r, fd = _finite_differences(pattern, shape_q, shape_k, dv_dim, kpm, scale, seed=4)
    errors = {t: _rel_err(fd[t], getattr(r, t)) for t in ("dq", "dk", "dv")}
    # O(h^2) truncation + O(eps/h) rounding: ~1e-10 measured; contract §7.3 asks <= 1e-6
    assert all(e <= 1e-6 for e in errors.values()), errors
    # the gradients that must be exactly zero are (contract §7.2), and so are their fds
    if kpm is not None:
        assert np.all(r.dk[1, :, 3:] == 0) and np.all(r.dv[1, :, 3:] == 0)
        assert np.all(r.dq[1, :, 3:] == 0)


def test_finite_differences_catch_a_wrong_gradient():
    # the same measure on the same case fails a dv 0.1 % off, and a dq with one wrong sign
    _, pattern, shape_q, shape_k, dv_dim, kpm, scale = FD_CASES[0]
    r, fd = _finite_differences(pattern, shape_q, shape_k, dv_dim, kpm, scale, seed=4)
    assert _rel_err(fd["dv"], r.dv) <= 1e-6
    assert _rel_err(fd["dv"], r.dv * 1.001) > 1e-6
    flipped = r.dq.copy()
    flipped[0, 1, 3, 0] *= -1
    assert _rel_err(fd["dq"], flipped) > 1e-6


def test_cuda_gradients_bit_identical_to_cli(cli, tmp_path):
    cuda = {g["forward"]: g for g in sa.impls(backward=True) if g["target"] == "cuda"}
    if not cuda:
        pytest.skip("built without CUDA (no cuda_* backward entries in the registry)")
    q, k, v = qkv((1, 1, 4, 2))
    try:
        sa.attend(q, k, v, sa.Pattern.dense(), impl=next(iter(cuda)), dout=np.ones((1, 1, 4, 2)))
    except RuntimeError as e:
        pytest.skip(f"no CUDA device ({e})")
    for i, case in enumerate(GRID):
        d = tmp_path / str(i)
        d.mkdir()
        q, k, v, dout, kpm = _inputs(case)
        _save(d, q=q, k=k, v=v, do=dout)
        pflags = _pattern_flags(d, case[2], kpm)
        for forward in cuda:
            r = sa.attend(q, k, v, case[1], impl=forward, key_padding_mask=kpm, dout=dout)
            cli(["attend", "--q", d / "q.npy", "--k", d / "k.npy", "--v", d / "v.npy", "--out",
                 d / "o.npy", "--impl", forward, "--dout", d / "do.npy", "--dq", d / "dq.npy",
                 "--dk", d / "dk.npy", "--dv", d / "dv.npy"] + pflags)
            for name in ("dq", "dk", "dv"):
                assert np.array_equal(getattr(r, name), np.load(d / f"{name}.npy")), (case[0], name)


def _cli_error(cli, args):
    r = cli(args, check=False)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0].replace("sparseattn: error: ", "")


def test_bad_dout_is_refused_naming_dout(cli, tmp_path):
    q, k, v = qkv((1, 2, 6, 4), head_dim_v=3, seed=2)
    good = np.random.default_rng(3).standard_normal((1, 2, 6, 3))
    wide = np.zeros((1, 2, 6, 4))
    nan = good.copy()
    nan[0, 1, 2, 1] = np.nan
    inf = good.copy()
    inf[0, 0, 5, 0] = -np.inf
    _save(tmp_path, q=q, k=k, v=v, wide=wide, nan=nan, inf=inf)
    p = sa.Pattern.window(1)
    for bad, name in ((wide, "wide"), (nan, "nan"), (inf, "inf")):
        with pytest.raises(ValueError) as e:
            sa.attend(q, k, v, p, dout=bad)
        assert str(e.value).startswith("invalid dout"), str(e.value)
        line = _cli_error(cli, ["attend", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy",
                                "--v", tmp_path / "v.npy", "--out", tmp_path / "o.npy",
                                "--dout", tmp_path / f"{name}.npy", "--dq", tmp_path / "dq.npy",
                                "--pattern", "window", "--window", "1"])
        assert str(e.value) == line.replace("--dout", "dout")  # the CLI's message, no dashes
        with pytest.raises(ValueError) as e:
            sa.check(q, k, v, p, np.zeros((1, 2, 6, 3)), dout=bad, dq=np.zeros_like(q))
        assert str(e.value) == line.replace("--dout", "dout")
    assert not (tmp_path / "o.npy").exists()
    with pytest.raises(ValueError, match=r"^invalid dout shape = \[1, 2, 6, 4\]: must be o's "):
        sa.attend(q, k, v, p, dout=wide)
    with pytest.raises(ValueError, match=r"^invalid dout\[0,1,2,1\] = nan: must be finite"):
        sa.attend(q, k, v, p, dout=nan)
    with pytest.raises(ValueError, match=r"^invalid dout dtype = int64"):
        sa.attend(q, k, v, p, dout=np.zeros((1, 2, 6, 3), dtype=np.int64))
    # rank 2 dout for a rank 4 q of one batch element and head: leading 1s may be omitted
    q1, k1, v1 = qkv((1, 1, 6, 4), head_dim_v=3, seed=2)
    r = sa.attend(q1, k1, v1, p, dout=good[0, 0])
    assert r.dq.shape == q1.shape


def test_an_impl_without_a_backward_is_refused_as_the_cli_refuses_it(cli, tmp_path):
    q, k, v = qkv((1, 1, 8, 4), seed=5)
    dout = np.ones((1, 1, 8, 4))
    _save(tmp_path, q=q, k=k, v=v, do=dout)
    line = _cli_error(cli, ["attend", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy",
                            "--v", tmp_path / "v.npy", "--out", tmp_path / "o.npy", "--impl",
                            "cpu_k02_window_band", "--dout", tmp_path / "do.npy", "--dq",
                            tmp_path / "dq.npy", "--pattern", "window", "--window", "1"])
    with pytest.raises(ValueError) as e:
        sa.attend(q, k, v, sa.Pattern.window(1), impl="cpu_k02_window_band", dout=dout)
    assert str(e.value) == line.replace("--impl", "impl").replace("--dout", "dout")
    assert str(e.value).startswith("invalid impl = cpu_k02_window_band: has no backward pass")
    # without dout the same impl runs, and returns the plain (o, lse) pair
    out = sa.attend(q, k, v, sa.Pattern.window(1), impl="cpu_k02_window_band")
    assert isinstance(out, tuple) and len(out) == 2 and not isinstance(out, sa.AttendResult)


def test_check_fails_a_perturbed_dq_and_passes_the_true_one():
    case = GRID[4]  # bigbird with key padding
    pattern = case[1]
    q, k, v, dout, kpm = _inputs(case, seed=30)
    r = sa.attend(q, k, v, pattern, key_padding_mask=kpm, dout=dout)  # b1, float64
    good = sa.check(q, k, v, pattern, r.o, dout=dout, dq=r.dq, dk=r.dk, dv=r.dv,
                    key_padding_mask=kpm)
    assert good.passed and good.gradient_oracle == "b1_dense_masked_grad"
    assert good.dq is not None and good.dq.passed and good.dq.atol == 1e-12
    assert good.dk is not None and good.dk.passed and good.dv is not None and good.dv.passed
    assert good.dq.num_elements == q.size and good.dv.num_elements == v.size
    bad_dq = r.dq.copy()
    bad_dq[0, 1, 6, 2] += 1e-6  # one element, far outside float64's 1e-12
    bad = sa.check(q, k, v, pattern, r.o, dout=dout, dq=bad_dq, key_padding_mask=kpm)
    assert not bad.passed and bad.o.passed
    assert bad.dq is not None and not bad.dq.passed
    assert bad.dq.num_mismatched == 1 and bad.dq.worst_index == (0, 1, 6, 2)
    assert bad.dk is None and bad.dv is None
    summary = bad.summary()
    assert "dq: mismatched elements 1 / " in summary
    assert "worst element: batch 0, head 1, query row 6" in summary
    # the float32 kernel's gradients pass at float32's tolerance (their dtype's)
    r32 = sa.attend(q, k, v, pattern, impl="cpu_k06_generic_tiles", key_padding_mask=kpm,
                    dout=dout)
    rep = sa.check(q, k, v, pattern, r32.o, dout=dout, dq=r32.dq, dk=r32.dk, dv=r32.dv,
                   key_padding_mask=kpm)
    assert rep.passed and rep.dk is not None and rep.dk.atol == 2e-5
    # a dk off at a padded key (which must be exactly 0) fails and says so as a key row
    dk = r32.dk.copy()
    dk[1, 0, 13, 1] = 1e-3
    rep = sa.check(q, k, v, pattern, r32.o, dout=dout, dk=dk, key_padding_mask=kpm)
    assert not rep.passed and rep.dk is not None and rep.dk.worst_index == (1, 0, 13, 1)
    assert "worst element: batch 1, head 0, key row 13" in rep.summary()


def test_assert_matches_oracle_takes_gradients():
    q, k, v = qkv((1, 2, 10, 4), head_dim_v=3, seed=12)
    dout = np.random.default_rng(13).standard_normal((1, 2, 10, 3))
    p = sa.Pattern.window(2)
    o, lse, dq, dk, dv = sa.attend(q, k, v, p, impl="a5_flash_tiled", dout=dout)
    report = sa.testing.assert_matches_oracle(q, k, v, p, o, lse, dout=dout, dq=dq, dk=dk, dv=dv)
    assert report.passed and report.dv is not None
    with pytest.raises(AssertionError, match="dv: mismatched elements 1 / 60"):
        sa.testing.assert_matches_oracle(q, k, v, p, o, dout=dout, dv=dv + (np.arange(60) == 7)
                                         .reshape(dv.shape))
    with pytest.raises(ValueError, match=r"^invalid dk = array of shape \(1, 2, 10, 4\): needs dout"):
        sa.testing.assert_matches_oracle(q, k, v, p, o, dk=dk)
    with pytest.raises(ValueError, match=r"^invalid dout = .*: asks for gradient checks"):
        sa.check(q, k, v, p, o, dout=dout)
    with pytest.raises(ValueError, match=r"^invalid dq shape = \[1, 2, 10, 3\]"):
        sa.check(q, k, v, p, o, dout=dout, dq=dv)


def test_gradient_check_report_matches_cli(cli, tmp_path):
    case = GRID[2]  # window(2), seq_len_q 11, seq_len_k 13, head_dim 4, head_dim_v 6
    pattern = case[1]
    q, k, v, dout, _ = _inputs(case, seed=40)
    r = sa.attend(q, k, v, pattern, impl="cpu_k06_generic_tiles", dout=dout)
    dk = r.dk.copy()
    dk[1, 0, 12, 3] += 1e-2  # outside float32's tolerance
    _save(tmp_path, q=q, k=k, v=v, o=r.o, do=dout, dq=r.dq, dk=dk, dv=r.dv)
    res = cli(["check", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v",
               tmp_path / "v.npy", "--candidate", tmp_path / "o.npy", "--dout",
               tmp_path / "do.npy", "--candidate-dq", tmp_path / "dq.npy", "--candidate-dk",
               tmp_path / "dk.npy", "--candidate-dv", tmp_path / "dv.npy", "--pattern",
               "window", "--window", "2"], check=False)
    assert res.returncode == 1, res.stderr
    report = sa.check(q, k, v, pattern, r.o, dout=dout, dq=r.dq, dk=dk, dv=r.dv)
    assert report.to_dict() == json.loads(res.stdout)
    assert not report.passed and report.dq.passed and report.dv.passed  # type: ignore[union-attr]
    assert report.dk is not None and report.dk.worst_index == (1, 0, 12, 3)


def test_the_gil_is_released_during_the_backward_pass():
    q, k, v = qkv((1, 1, 1400, 32), seed=50)
    dout = np.ones((1, 1, 1400, 32))
    p = sa.Pattern.dense()
    t0 = time.perf_counter()
    sa.attend(q, k, v, p)
    forward = time.perf_counter() - t0
    t0 = time.perf_counter()
    sa.attend(q, k, v, p, dout=dout)  # a1, then b1: serial float64, O(n^2), no OpenMP
    both = time.perf_counter() - t0
    worker = threading.Thread(target=sa.attend, args=(q, k, v, p), kwargs={"dout": dout})
    stamps = []
    worker.start()
    while worker.is_alive():
        stamps.append(time.perf_counter())
    worker.join()
    gaps = np.diff(stamps) if len(stamps) > 1 else np.array([both])
    # The backward alone takes both - forward: holding the GIL during it would stall this
    # loop for that long.
    assert gaps.max() < 0.5 * (both - forward), (gaps.max(), forward, both)


def test_backward_impls_match_cli(cli):
    assert sa.impls(backward=True) == json.loads(cli(["impls", "--backward", "--json"]).stdout)
    with pytest.raises(ValueError, match=r"^invalid backward = 1: must be True or False"):
        sa.impls(backward=1)
