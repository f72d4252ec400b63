"""Checks contract §4.9 (one check report, one renderer): on five failing candidates,
``CheckReport.summary()`` is ``sparseattn check --format text``'s stdout byte for byte and
``to_dict()`` its JSON; a wrong dq's report carries o's location fields. Candidates are
the oracle's output under a planted mistake, or a plain NumPy attention."""
from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, List, Optional

import numpy as np
import pytest

import sparseattn as sa
from conftest import qkv


def _numpy_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, window: int,
                     scale: float) -> np.ndarray:
    """Window attention (|i - j| <= window) written out in NumPy, [B, H, L, D]."""
    n = q.shape[-2]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    s = scale * q @ np.swapaxes(k, -1, -2)
    s = np.where(np.abs(i - j) <= window, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def _case(name: str, tmp: pathlib.Path) -> Dict[str, Any]:
    """Inputs, the candidate and the flags of one failing case, saved under tmp."""
    q, k, v = qkv((1, 2, 16, 8), seed=5)
    d = q.shape[-1]
    arrays: Dict[str, Optional[np.ndarray]] = {"q": q, "k": k, "v": v}
    kw: Dict[str, Any] = {}
    flags: List[Any] = ["--pattern", "window", "--window", 2]
    o = _numpy_attention(q, k, v, 2, 1 / np.sqrt(d))
    if name == "window off by one":
        o = _numpy_attention(q, k, v, 3, 1 / np.sqrt(d))
    elif name == "scale 1/d":
        o = _numpy_attention(q, k, v, 2, 1 / d)
    elif name == "lse base 2":
        _, lse = sa.attend(q, k, v, sa.Pattern.window(2))
        arrays["lse"] = lse / np.log(2)
    elif name == "a NaN row":
        o[0, 1, 5, :] = np.nan
    elif name == "a wrong dq":
        dout = np.random.default_rng(6).standard_normal(o.shape)
        r = sa.attend(q, k, v, sa.Pattern.window(2), dout=dout)
        dq = r.dq.copy()
        dq[0, 0, 3, 1] += 1e-3
        dq[0, 1, 9, 0] = np.nan
        arrays.update(do=dout, dq=dq)
        kw.update(dout=dout, dq=dq)
    arrays["o"] = o
    for key, x in arrays.items():
        np.save(tmp / f"{key}.npy", x)
    flags += ["--q", tmp / "q.npy", "--k", tmp / "k.npy", "--v", tmp / "v.npy",
              "--candidate", tmp / "o.npy"]
    if "lse" in arrays:
        flags += ["--candidate-lse", tmp / "lse.npy"]
        kw["lse"] = arrays["lse"]
    if "dq" in arrays:
        flags += ["--dout", tmp / "do.npy", "--candidate-dq", tmp / "dq.npy"]
    return {"q": q, "k": k, "v": v, "o": o, "kw": kw, "flags": flags}


CASES = ["window off by one", "scale 1/d", "lse base 2", "a NaN row", "a wrong dq"]


@pytest.mark.parametrize("name", CASES)
def test_summary_is_the_cli_text_byte_for_byte(cli, tmp_path, name):
    c = _case(name, tmp_path)
    text = cli(["check", "--format", "text"] + c["flags"], check=False)
    assert text.returncode == 1, text.stderr
    js = cli(["check"] + c["flags"], check=False)
    assert js.returncode == 1
    report = sa.check(c["q"], c["k"], c["v"], sa.Pattern.window(2), c["o"], **c["kw"])
    assert not report.passed
    assert report.summary() == text.stdout
    assert js.stderr == text.stdout  # a failing JSON check writes the same summary to stderr
    assert report.to_dict() == json.loads(js.stdout)
    assert "probable cause: " in text.stdout  # also when it is "unknown: ..."


def test_each_case_names_what_it_plants(tmp_path):
    causes = {}
    for name in CASES:
        sub = tmp_path / name.replace(" ", "_").replace("/", "_")
        sub.mkdir()
        c = _case(name, sub)
        causes[name] = sa.check(c["q"], c["k"], c["v"], sa.Pattern.window(2), c["o"],
                                **c["kw"]).probable_cause
    assert causes["window off by one"] == "window one wider (candidate matches --window 3)"
    assert causes["scale 1/d"].startswith("scale 1/head_dim")
    assert causes["lse base 2"].startswith("lse in base 2")
    assert causes["a NaN row"].startswith("unknown")
    assert causes["a wrong dq"].startswith("unknown: no gradient probe")


def test_a_wrong_dq_has_the_fields_of_o(tmp_path):
    c = _case("a wrong dq", tmp_path)
    report = sa.check(c["q"], c["k"], c["v"], sa.Pattern.window(2), c["o"], **c["kw"])
    dq = report.dq
    assert report.o.passed and dq is not None and not dq.passed
    assert dq.mismatches == {"0,0": 1, "0,1": 1}
    assert dq.rows == {"0,0": "3", "0,1": "9"}
    assert dq.worst_index == (0, 1, 9, 0)  # the NaN, not the larger-looking finite error
    assert np.isnan(dq.max_abs_error)
    assert dq.worst_row is not None and dq.worst_row["row"] == 9
    assert dq.worst_row["allowed_keys"] == "7-11"
    assert dq.first_nonfinite == {"index": [0, 1, 9, 0], "candidate": "nan",
                                  "expected": dq.worst_reference}
    assert dq.probable_cause == report.probable_cause
    assert "dq first non-finite at index (0, 1, 9, 0): candidate nan" in report.summary()


def test_a_pass_reports_its_budget_used_once():
    q, k, v = qkv((1, 1, 12, 4), seed=7)
    o = _numpy_attention(q, k, v, 2, 0.5)
    o[0, 0, 4, 1] += 3e-13  # inside float64's tolerance, not exact
    report = sa.check(q, k, v, sa.Pattern.window(2), o)
    assert report.passed
    assert report.o.error_over_tolerance == report.o.budget_used > 0.1
    assert f"error/tolerance {report.o.error_over_tolerance:.3g};" in report.summary()


def test_nothing_compared_fails_for_a_decode_query_on_a_padded_cache():
    q, k, v = qkv((1, 1, 1, 8), (1, 1, 4096, 8), seed=8)
    keep = np.zeros((1, 4096), dtype=bool)
    keep[0, :1000] = True  # 1000 slots filled; the query sits at key position 4095
    o = np.full((1, 1, 1, 8), 7.0)
    plain = sa.check(q, k, v, sa.Pattern.dense(), o, key_padding_mask=keep)
    assert not plain.passed and "padded-queries" not in (plain.probable_cause or "")
    report = sa.check(q, k, v, sa.Pattern.dense(), o, key_padding_mask=keep,
                      padded_queries="any")
    assert not report.passed and report.o.nothing_compared and report.o.num_compared == 0
    assert "o: nothing compared (0 of 8 elements" in report.summary()
