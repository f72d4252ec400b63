"""The binding and the CLI run the same code: bit-identical o and lse for every
implementation on a grid of patterns and shapes, the same masks and the same JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest

import sparseattn as sa
from conftest import qkv

SEG = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3], dtype=np.int64)  # 13 tokens
EXPLICIT = (np.random.default_rng(5).random((13, 13)) < 0.3)
EXPLICIT[3] = False  # one fully masked row: o = 0, lse = -inf


def grid():
    """(id, Pattern, CLI flags, files to save, self_attention_only)."""
    return [
        ("dense", sa.Pattern.dense(), ["--pattern", "dense"], {}, False),
        ("dense_causal", sa.Pattern.dense(causal=True), ["--pattern", "dense", "--causal"], {}, False),
        ("window2", sa.Pattern.window(2), ["--pattern", "window", "--window", "2"], {}, False),
        ("window_dil_causal", sa.Pattern.window(2, dilation=3, causal=True),
         ["--pattern", "window", "--window", "2", "--dilation", "3", "--causal"], {}, False),
        ("longformer", sa.Pattern.longformer(1, [0, 5]),
         ["--pattern", "longformer", "--window", "1", "--global", "0,5"], {}, False),
        ("random", sa.Pattern.random(1, 2, global_tokens=[0], seed=3),
         ["--pattern", "random", "--window", "1", "--num-random", "2", "--global", "0",
          "--seed", "3"], {}, False),
        ("bigbird", sa.Pattern.bigbird(4, 1, seed=1),
         ["--pattern", "bigbird", "--block-size", "4", "--num-random-blocks", "1", "--seed", "1"],
         {}, True),
        ("bigbird_etc", sa.Pattern.bigbird_etc(3, 1, num_global_tokens=2, seed=2),
         ["--pattern", "bigbird-etc", "--block-size", "3", "--num-random-blocks", "1",
          "--num-global-tokens", "2", "--seed", "2"], {}, True),
        ("hierarchical", sa.Pattern.hierarchical(SEG),
         ["--pattern", "hierarchical", "--segment-ids", "{segment_ids}"], {"segment_ids": SEG}, True),
        ("explicit", sa.Pattern.explicit(EXPLICIT),
         ["--pattern", "explicit", "--mask", "{mask}"], {"mask": EXPLICIT}, True),
    ]


# (id, q shape, k shape): one self-attention shape with awkward sizes (13 tokens, head_dim
# 5, 2 heads) and a rank-2, cross-attention one (bottom-right alignment).
# A third: float32 inputs (the CLI widens a float32 file as the binding widens an array).
SHAPES = [("b1h2n13d5", (1, 2, 13, 5), (1, 2, 13, 5), np.float64),
          ("rank2_q7_k13", (7, 6), (13, 6), np.float64),
          ("b2h1n13d3_f32", (2, 1, 13, 3), (2, 1, 13, 3), np.float32)]



def _flags(flags, files, tmp_path):
    out = []
    for f in flags:
        if f.startswith("{"):
            name = f.strip("{}")
            path = tmp_path / f"{name}.npy"
            np.save(path, files[name])
            f = str(path)
        out.append(f)
    return out


# Every pattern on the self-attention shape; token-level kinds on the cross-attention one
# too (block kinds, hierarchical and this explicit mask are self-attention only).
CASES = [(g, s) for s in SHAPES for g in grid() if not (g[4] and s[1] != s[2])]


def _compare_with_cli(cli, tmp_path, case, shape, impls, key_padding_mask=None):
    """Runs every implementation of `impls` that serves the case through the binding and
    the CLI; returns how many ran. o and lse must be bit-identical."""
    pid, pattern, flags, files, _ = case
    _, shape_q, shape_k, dtype = shape
    q, k, v = qkv(shape_q, shape_k, seed=11, dtype=dtype)
    for name, x in (("q", q), ("k", k), ("v", v)):
        np.save(tmp_path / f"{name}.npy", x)
    pflags = _flags(flags, files, tmp_path)
    if key_padding_mask is not None:
        np.save(tmp_path / "kpm.npy", key_padding_mask)
        pflags += ["--key-padding-mask", tmp_path / "kpm.npy"]
    io = ["--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v", tmp_path / "v.npy",
          "--out", tmp_path / "o.npy"]
    ran = 0
    for impl in impls:
        try:
            o, lse = sa.attend(q, k, v, pattern, impl=impl, key_padding_mask=key_padding_mask)
        except ValueError as e:
            if "serves only" in str(e):
                continue  # the CLI refuses the same (test_an_implementation_the_cli_refuses)
            raise
        r = cli(["attend"] + io + ["--lse", tmp_path / "lse.npy", "--impl", impl] + pflags,
                check=False)
        if r.returncode != 0 and "no lse estimate" in r.stderr:
            # an approximation with undefined lse rows: the CLI writes o alone
            cli(["attend"] + io + ["--impl", impl] + pflags)
            o_cli, lse_cli = np.load(tmp_path / "o.npy"), lse
        else:
            assert r.returncode == 0, r.stderr
            o_cli, lse_cli = np.load(tmp_path / "o.npy"), np.load(tmp_path / "lse.npy")
        assert o.dtype == o_cli.dtype and o.shape == o_cli.shape, impl
        assert lse.shape == lse_cli.shape, impl
        assert np.array_equal(o, o_cli), f"{impl}: o differs from the CLI's"
        assert np.array_equal(lse, lse_cli, equal_nan=True), f"{impl}: lse differs from the CLI's"
        ran += 1
    return ran


CPU_IMPLS = [k["name"] for k in sa.impls() if k["target"] != "cuda"]
CUDA_IMPLS = [k["name"] for k in sa.impls() if k["target"] == "cuda"]


@pytest.mark.parametrize("case,shape", CASES, ids=[f"{g[0]}-{s[0]}" for g, s in CASES])
def test_attend_bit_identical_to_cli(cli, tmp_path, case, shape):
    # at least the oracle and one other implementation serve every pattern
    assert _compare_with_cli(cli, tmp_path, case, shape, CPU_IMPLS) >= 2


def test_key_padding_bit_identical_to_cli(cli, tmp_path):
    kpm = np.ones((2, 13), dtype=bool)
    kpm[0, 9:] = False  # batch 0: the last 4 tokens are padding (rows 9-12 fully masked)
    case = next(g for g in grid() if g[0] == "window2")
    assert _compare_with_cli(cli, tmp_path, case, ("kpm", (2, 2, 13, 4), (2, 2, 13, 4),
                                                   np.float64), CPU_IMPLS, kpm) >= 2


def test_cuda_kernels_bit_identical_to_cli(cli, tmp_path):
    if not CUDA_IMPLS:
        pytest.skip("built without CUDA (no cuda_* kernels in the registry)")
    q, k, v = qkv((1, 1, 4, 2))
    try:
        sa.attend(q, k, v, sa.Pattern.dense(), impl=CUDA_IMPLS[0])
    except RuntimeError as e:
        pytest.skip(f"no CUDA device ({e})")
    ran = sum(_compare_with_cli(cli, tmp_path / f"{i}", case, shape, CUDA_IMPLS)
              for i, (case, shape) in enumerate(CASES)
              if (tmp_path / f"{i}").mkdir() is None)
    assert ran >= len(CASES)


def test_an_implementation_the_cli_refuses_is_refused(cli, tmp_path):
    q, k, v = qkv((1, 1, 8, 4))
    for name, x in (("q", q), ("k", k), ("v", v)):
        np.save(tmp_path / f"{name}.npy", x)
    r = cli(["attend", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v",
             tmp_path / "v.npy", "--out", tmp_path / "o.npy", "--impl", "cpu_k01_dense_flash",
             "--pattern", "window", "--window", "1"], check=False)
    assert r.returncode == 2
    with pytest.raises(ValueError) as e:
        sa.attend(q, k, v, sa.Pattern.window(1), impl="cpu_k01_dense_flash")
    cli_line = r.stderr.strip().splitlines()[0].replace("sparseattn: error: ", "")
    assert str(e.value) == cli_line.replace("--impl", "impl")


@pytest.mark.parametrize("pid,pattern,flags,files,self_only", grid(), ids=[g[0] for g in grid()])
def test_mask_and_info_match_cli(cli, tmp_path, pid, pattern, flags, files, self_only):
    pflags = _flags(flags, files, tmp_path)
    cli(["mask", "--seq-len", 13, "--num-heads", 2, "--out", tmp_path / "m.npy"] + pflags)
    m_cli = np.load(tmp_path / "m.npy")
    m = pattern.mask(13, num_heads=2)
    assert m.dtype == np.bool_ and m.shape == m_cli.shape == (2, 13, 13)
    assert np.array_equal(m, m_cli.astype(bool))
    info_cli = json.loads(cli(["info", "--seq-len", 13, "--num-heads", 2, "--head-dim", 5,
                               "--json"] + pflags).stdout)
    assert pattern.info(13, num_heads=2, head_dim=5) == info_cli


def test_check_report_matches_cli(cli, tmp_path):
    q, k, v = qkv((2, 2, 9, 4), seed=3)
    p = sa.Pattern.window(1)
    o, lse = sa.attend(q, k, v, p, impl="cpu_k02_window_band")
    o = o.copy()
    o[1, 0, 4, 2] += 1e-3  # one element outside float32's tolerance
    for name, x in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse)):
        np.save(tmp_path / f"{name}.npy", x)
    r = cli(["check", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v",
             tmp_path / "v.npy", "--candidate", tmp_path / "o.npy", "--candidate-lse",
             tmp_path / "lse.npy", "--pattern", "window", "--window", "1"], check=False)
    assert r.returncode == 1
    report = sa.check(q, k, v, p, o, lse)
    assert not report.passed and report.lse is not None and report.lse.passed
    assert report.to_dict() == json.loads(r.stdout)
    assert report.o.num_mismatched == 1 and report.o.worst_index == (1, 0, 4, 2)
    summary = report.summary()
    assert "o: mismatched elements 1 / 144" in summary
    assert "worst element: batch 1, head 0, query row 4" in summary
    assert "hint: some elements differ" in summary


def test_reach_and_impls_match_cli(cli):
    got = sa.reach(sa.Pattern.window(2, dilation=2), 40, layers=3, token=7, path=(0, 33))
    want = json.loads(cli(["reach", "--seq-len", 40, "--layers", 3, "--token", 7, "--from", 0,
                           "--to", 33, "--json", "--pattern", "window", "--window", 2,
                           "--dilation", 2]).stdout)
    assert got == want
    assert sa.impls() == json.loads(cli(["impls", "--json"]).stdout)


def test_analyze_and_extend_positions_match_cli(cli, tmp_path):
    q, k, _ = qkv((1, 2, 16, 4), seed=8)
    np.save(tmp_path / "q.npy", q)
    np.save(tmp_path / "k.npy", k)
    want = json.loads(cli(["analyze", "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy",
                           "--windows", "1,2,4", "--pattern", "window", "--window", 2]).stdout)
    assert sa.analyze(q, k, sa.Pattern.window(2), windows=[1, 2, 4]) == want
    table = np.random.default_rng(1).standard_normal((6, 3))
    np.save(tmp_path / "t.npy", table)
    cli(["extend-positions", "--in", tmp_path / "t.npy", "--out", tmp_path / "e.npy",
         "--length", 30])
    assert np.array_equal(sa.extend_positions(table, 30), np.load(tmp_path / "e.npy"))
