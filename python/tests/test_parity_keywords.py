"""The keywords test_parity.py asked for do what their CLI flags do: the same masks, counts,
outputs and verdicts as the CLI on the same inputs (and the CLI's refusals)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import sparseattn as sa
from conftest import qkv


def _mask_cli(cli, tmp_path, flags):
    out = tmp_path / "m.npy"
    cli(["mask", "--out", out] + flags)
    return np.load(out).astype(bool)


@pytest.mark.parametrize("conv,flags", [
    ({"causal_align": "top-left"}, ["--causal-align", "top-left"]),
    ({"key_padding_polarity": "ignore"}, ["--key-padding-polarity", "ignore"]),
    ({"padding_align": "valid"}, ["--padding-align", "valid"]),
])
def test_mask_conventions_match_cli(cli, tmp_path, conv, flags):
    kpm = np.array([[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0]], dtype=bool)
    if conv.get("key_padding_polarity") == "ignore":
        kpm = ~kpm
    np.save(tmp_path / "kpm.npy", kpm.astype(np.uint8))
    p = sa.Pattern.window(1, causal=True)
    got = p.mask(5, 8, key_padding_mask=kpm, **conv)
    want = _mask_cli(cli, tmp_path, ["--seq-len", "5", "--seq-len-k", "8", "--pattern", "window",
                                     "--window", "1", "--causal", "--key-padding-mask",
                                     tmp_path / "kpm.npy"] + flags)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_mask_global_mask_matches_cli(cli, tmp_path):
    gm = np.zeros((2, 9), dtype=bool)
    gm[0, 0] = gm[1, [2, 7]] = True
    np.save(tmp_path / "gm.npy", gm.astype(np.uint8))
    got = sa.Pattern.longformer(attention_window=2).mask(9, global_mask=gm)
    want = _mask_cli(cli, tmp_path, ["--seq-len", "9", "--pattern", "longformer",
                                     "--attention-window", "2", "--global-mask", tmp_path / "gm.npy"])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="global_mask"):
        sa.Pattern.window(1).mask(9, global_mask=gm)
    with pytest.raises(ValueError, match="padding_align"):
        sa.Pattern.longformer(1).mask(9, global_mask=gm, padding_align="valid")
    with pytest.raises(ValueError, match="causal_align"):
        sa.Pattern.window(1).mask(9, causal_align="middle")


def test_attention_window_is_twice_the_window():
    np.testing.assert_array_equal(sa.Pattern.window(attention_window=6).mask(12),
                                  sa.Pattern.window(3).mask(12))
    np.testing.assert_array_equal(sa.Pattern.random(attention_window=2, num_random=1).mask(12),
                                  sa.Pattern.random(1, 1).mask(12))
    with pytest.raises(ValueError, match="attention_window = 3: must be even"):
        sa.Pattern.longformer(attention_window=3)
    with pytest.raises(ValueError, match="replaces window"):
        sa.Pattern.window(2, attention_window=4)
    with pytest.raises(ValueError, match="give window"):
        sa.Pattern.window()


def test_info_key_padding_mask_matches_cli(cli, tmp_path):
    kpm = np.array([[1, 1, 1, 1, 1, 1, 0, 0]], dtype=bool)
    np.save(tmp_path / "kpm.npy", kpm.astype(np.uint8))
    got = sa.Pattern.window(1).info(8, key_padding_mask=kpm)  # the counts are the layout's
    want = json.loads(cli(["info", "--json", "--seq-len", "8", "--pattern", "window", "--window",
                           "1", "--key-padding-mask", tmp_path / "kpm.npy"]).stdout)
    assert got == want
    assert "key_padding_mask=[1, 8]" in got["pattern"]


def _save(tmp_path, **arrays):
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)
    return {name: tmp_path / f"{name}.npy" for name in arrays}


@pytest.mark.parametrize("conv,flags", [
    ({"causal_align": "top-left"}, ["--causal-align", "top-left"]),
    ({"padding_align": "valid"}, ["--padding-align", "valid"]),
])
def test_attend_conventions_match_cli(cli, tmp_path, conv, flags):
    q, k, v = qkv((2, 2, 5, 4), (2, 2, 8, 4), seed=3)
    kpm = np.array([[1] * 8, [1] * 6 + [0] * 2], dtype=np.uint8)
    f = _save(tmp_path, q=q, k=k, v=v, kpm=kpm)
    impl = "a1_dense_masked"
    o, lse = sa.attend(q, k, v, sa.Pattern.window(1, causal=True), impl=impl,
                       key_padding_mask=kpm.astype(bool), **conv)
    cli(["attend", "--q", f["q"], "--k", f["k"], "--v", f["v"], "--out", tmp_path / "o.npy",
         "--lse", tmp_path / "lse.npy", "--impl", impl, "--pattern", "window", "--window", "1",
         "--causal", "--key-padding-mask", f["kpm"]] + flags)
    np.testing.assert_array_equal(o, np.load(tmp_path / "o.npy"))
    np.testing.assert_array_equal(lse, np.load(tmp_path / "lse.npy"))
    # and the conventions change the result (the keyword is not ignored)
    o0, _ = sa.attend(q, k, v, sa.Pattern.window(1, causal=True), impl=impl,
                      key_padding_mask=kpm.astype(bool))
    assert not np.array_equal(o, o0)


def test_attend_padded_queries_any_is_refused_like_the_cli():
    q, k, v = qkv((1, 1, 4, 4))
    with pytest.raises(ValueError, match="padded_queries = any: must be zero for attend"):
        sa.attend(q, k, v, sa.Pattern.dense(), padded_queries="any")
    with pytest.raises(ValueError, match="must be zero or any"):
        sa.attend(q, k, v, sa.Pattern.dense(), padded_queries="none")


def test_check_reference_error_rule_matches_cli(cli, tmp_path):
    q, k, v = qkv((1, 2, 16, 8), seed=5)
    p = sa.Pattern.window(2)
    o, lse = sa.attend(q, k, v, p, impl="cpu_k02_window_band")
    f = _save(tmp_path, q=q, k=k, v=v, o=o, lse=lse)
    for extra, kw in ([], {}), (["--factor", "1.5", "--floor", "1e-7", "--naive-dtype", "bfloat16"],
                                {"factor": 1.5, "floor": 1e-7, "naive_dtype": "bfloat16"}):
        r = sa.check(q, k, v, p, o, lse, tolerance_rule="reference-error", **kw)
        c = cli(["check", "--q", f["q"], "--k", f["k"], "--v", f["v"], "--candidate", f["o"],
                 "--candidate-lse", f["lse"], "--pattern", "window", "--window", "2",
                 "--tolerance-rule", "reference-error"] + extra, check=False)
        want = json.loads(c.stdout)
        assert r.to_dict()["o"] == want["o"] and r.passed == (c.returncode == 0)
        assert "reference_error" in json.dumps(want["o"])
    with pytest.raises(ValueError, match="tolerance_rule = exact"):
        sa.check(q, k, v, p, o, tolerance_rule="exact")
    with pytest.raises(ValueError, match="factor"):
        sa.check(q, k, v, p, o, tolerance_rule="reference-error", factor=0.5)
    with pytest.raises(ValueError, match="naive_dtype"):
        sa.check(q, k, v, p, o, tolerance_rule="reference-error", naive_dtype="int8")


def test_sweep_matches_cli(cli, tmp_path):
    args = dict(impl="cpu_k02_window_band,a2_sparse_rows", repeats=1, max_seconds=20,
                dense_baseline="none", head_dim=8, num_heads=2)
    r = sa.sweep(sa.Pattern.window(2), [32, 64], **args)
    cli(["sweep", "--seq-len", "32,64", "--impl", args["impl"], "--repeats", "1",
         "--max-seconds", "20", "--dense-baseline", "none", "--head-dim", "8", "--num-heads", "2",
         "--pattern", "window", "--window", "2", "--quiet", "--out", tmp_path])
    want = json.loads((tmp_path / "sweep.json").read_text())
    assert isinstance(r, sa.SweepResult)
    assert r.pattern == want["pattern"] and r.seq_lens == want["seq_lens"] == [32, 64]
    assert r.num_heads == want["num_heads"] and r.dense_baseline is None
    got_points = [(p.impl, p.seq_len, p.validated, p.flops, p.density) for p in r.points]
    assert got_points == [(p["impl"], p["seq_len"], p["validated"], p["flops"], p["density"])
                          for p in want["points"]]
    assert all(p.validated and p.median_s > 0 and p.peak_bytes is None for p in r.points)
    assert [(f.impl, f.points) for f in r.fits] == [(f["impl"], f["points"]) for f in want["fits"]]
    assert r.fit("a2_sparse_rows").points == 2
    assert r.failures == 0 and r.context["omp_threads"] >= 1


def test_sweep_errors_name_keywords():
    p = sa.Pattern.window(2)
    with pytest.raises(ValueError, match="invalid max_seconds"):
        sa.sweep(p, 32, max_seconds=0)
    with pytest.raises(ValueError, match="invalid target = gpu"):
        sa.sweep(p, 32, target="gpu")
    with pytest.raises(ValueError, match="invalid seq_len = 32: must ascend"):
        sa.sweep(p, [64, 32])
    with pytest.raises(ValueError, match="invalid impl = performer_favor: is an approximation"):
        sa.sweep(p, 32, impl="performer_favor")
    with pytest.raises(ValueError, match="invalid impl = cpu_k05_bigbird_blocks: does not serve"):
        sa.sweep(p, 32, impl="cpu_k05_bigbird_blocks")


def test_presets_match_cli(cli):
    names = sa.preset_names()
    assert names == sorted(names) and "mistral-7b-v0.1" in names
    for name in ("mistral-7b-v0.1", "bigbird-roberta-base"):
        want = json.loads(cli(["info", "--preset", name, "--seq-len", "256", "--json"]).stdout)
        assert sa.preset_info(name, 256) == want
        want = json.loads(cli(["info", "--preset", name, "--seq-len", "256", "--layer", "1",
                               "--json"]).stdout)
        assert sa.preset_info(name, 256, layer=1) == want
        want = json.loads(cli(["reach", "--preset", name, "--seq-len", "256", "--json"]).stdout)
        assert sa.preset_reach(name, 256) == want
    with pytest.raises(ValueError, match="invalid preset = nope: must be one of"):
        sa.preset_info("nope", 64)
    with pytest.raises(ValueError, match="invalid layer"):
        sa.preset_info("mistral-7b-v0.1", 64, layer=10**6)
