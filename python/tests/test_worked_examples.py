"""docs/worked-examples.md: every printed number is asserted — the mask against the pattern
module, scores/max/exp/sums/lse/o against the hand formula of contract §2.1 (with §2.8's
softcap and ALiBi and §2.9's sink for the examples of current models) computed here from the
printed inputs, and o/lse against the library's oracle (grouped-query heads: one call over
both query heads and the one kv head)."""
from __future__ import annotations

import math
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import sparseattn as sa

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "worked-examples.md"
PATTERNS = {"dense": sa.Pattern.dense(), "window": sa.Pattern.window(1),
            "bigbird": sa.Pattern.bigbird(1, 1, seed=0),
            "softcap": sa.Pattern.dense(causal=True), "alibi": sa.Pattern.dense(causal=True),
            "sink": sa.Pattern.window(1), "gqa0": sa.Pattern.dense(), "gqa1": sa.Pattern.dense(),
            "leftright": sa.Pattern.window(left=1, right=2),
            "chunked": sa.Pattern.chunked(2, causal=True),
            "neighborhood": sa.Pattern.neighborhood(3)}
# The score modifiers of each example of current models (contract §2.8-§2.9), as the page
# states them in its headings.
MODS = {"softcap": {"softcap": 1.0}, "alibi": {"slope": 0.5}, "sink": {"sink": 0.0}}
TOL = 5e-7  # the page prints 6 decimals


def tables() -> dict:
    """{'dense:scores': [[cell, ...], ...]} for every table after a <!-- name --> marker
    (header and separator rows dropped)."""
    out, name = {}, None
    for line in DOC.read_text().splitlines():
        m = re.match(r"<!-- (\w+:\w+) -->", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name and line.startswith("|"):
            out[name].append([c.strip() for c in line.strip().strip("|").split("|")])
        elif name and not line.strip() and out[name]:
            name = None
    return {k: v[2:] for k, v in out.items()}


def num(cell: str) -> float:
    return -math.inf if cell == "-inf" else float(cell)


def pair(cell: str):
    return [float(x) for x in cell.strip("()").split(",")]


T = tables()


def inputs(name: str):
    rows = T[f"{name}:inputs"]
    return tuple(np.array([pair(r[c]) for r in rows]) for c in (1, 2, 3))


def library(name: str, q, k, v):
    """The oracle's o, lse for the example, with its modifiers; gqa0/gqa1 from one grouped
    call (q [1, 2, n, 2], k and v [1, 1, n, 2])."""
    if name.startswith("gqa"):
        q0, k0, v0 = inputs("gqa0")
        q1, k1, v1 = inputs("gqa1")
        assert (k0 == k1).all() and (v0 == v1).all()  # one kv head
        o, lse = sa.attend(np.stack([q0, q1])[None], k0[None, None], v0[None, None],
                           PATTERNS[name], scale=1.0)
        h = int(name[-1])
        return o[0, h], lse[0, h]
    m = MODS.get(name, {})
    kw = {"softcap": m.get("softcap")}
    if "slope" in m:
        kw["alibi_slopes"] = np.array([m["slope"]])
    if "sink" in m:
        kw["sinks"] = np.array([m["sink"]])
    o, lse = sa.attend(q[None, None], k[None, None], v[None, None], PATTERNS[name], scale=1.0,
                       **kw)
    return o[0, 0], lse[0, 0]


def pipeline(raw: np.ndarray, name: str) -> np.ndarray:
    """Contract §2.8 by hand: softcap c·tanh(raw/c), then ALiBi −a·|i − j| (L_q = L_k)."""
    m, s = MODS.get(name, {}), raw.copy()
    if "softcap" in m:
        s = m["softcap"] * np.tanh(s / m["softcap"])
    if "slope" in m:
        n = len(s)
        s = s - m["slope"] * np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    return s


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_number_of_the_example(name):
    q, k, v = inputs(name)
    n = len(q)
    assert 4 <= n <= 8 and q.shape[1] == 2
    sink = MODS.get(name, {}).get("sink")

    # The mask is the pattern module's.
    mask = np.array([[c == "1" for c in r[1:]] for r in T[f"{name}:mask"]])
    assert (mask == PATTERNS[name].mask(n)).all()

    # Scores: integers, exactly q_i . k_j (scale 1); masked pairs printed as a dot. With a
    # softcap or ALiBi those are the raw scores, and the scores are the pipeline's.
    raw = q @ k.T
    s_hand = pipeline(raw, name)
    if f"{name}:raw" in T:
        for i, r in enumerate(T[f"{name}:raw"]):
            for j, c in enumerate(r[1:]):
                assert (c == "·") == (not mask[i, j]), (i, j)
                if mask[i, j]:
                    assert num(c) == raw[i, j], (i, j, c)
    else:
        assert (s_hand == raw).all()
    for i, r in enumerate(T[f"{name}:scores"]):
        for j, c in enumerate(r[1:]):
            assert (c == "·") == (not mask[i, j]), (i, j)
            if mask[i, j]:
                assert num(c) == pytest.approx(s_hand[i, j], abs=TOL), (i, j, c)

    # Row max, exponentials, sums, lse by hand (contract §2.9: the sink is one more logit).
    for i, r in enumerate(T[f"{name}:exp"]):
        m = max([s_hand[i, j] for j in range(n) if mask[i, j]] + ([sink] if sink is not None else []))
        assert num(r[1]) == pytest.approx(m, abs=TOL)
        e = [math.exp(s_hand[i, j] - m) if mask[i, j] else None for j in range(n)]
        for j in range(n):
            assert (r[2 + j] == "·") == (e[j] is None)
            if e[j] is not None:
                assert num(r[2 + j]) == pytest.approx(e[j], abs=TOL), (i, j)
        l = sum(x for x in e if x is not None)
        rest = r[2 + n:]
        if sink is not None:
            assert num(rest[0]) == pytest.approx(math.exp(sink - m), abs=TOL)
            l += math.exp(sink - m)
            rest = rest[1:]
        assert num(rest[0]) == pytest.approx(l, abs=TOL)
        assert num(rest[1]) == pytest.approx(m + math.log(l), abs=TOL)

    # o and lse: the hand formula and the library's oracle, both printed, both checked.
    o_lib, lse_lib = library(name, q, k, v)
    for i, r in enumerate(T[f"{name}:output"]):
        m = max([s_hand[i][mask[i]].max()] + ([sink] if sink is not None else []))
        w = np.where(mask[i], np.exp(s_hand[i] - m), 0.0)
        z = w.sum() + (math.exp(sink - m) if sink is not None else 0.0)
        o_hand = (w / z) @ v
        lse_hand = m + math.log(z)
        got = [num(c) for c in r[1:]]
        for printed, hand, lib in zip(got[:3], [*o_hand, lse_hand], [*o_lib[i], lse_lib[i]]):
            assert printed == pytest.approx(hand, abs=TOL), (i, r)
            assert printed == pytest.approx(lib, abs=TOL), (i, r)
        assert got[3:] == pytest.approx([*o_lib[i], lse_lib[i]], abs=TOL)


def test_bigbird_gather_table_is_the_mask_rows_and_the_random_draws():
    mask = PATTERNS["bigbird"].mask(8)
    for r in T["bigbird:gather"]:
        qb = int(r[0])
        assert [int(x) for x in r[1].split(",")] == list(np.flatnonzero(mask[qb]))
    draws = PATTERNS["bigbird"].random_table(8)[0][:, 0]
    text = DOC.read_text()
    for qb in range(1, 7):
        assert f"{qb}→{draws[qb - 1]}" in text


def test_the_page_is_what_the_generator_writes():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "worked_examples.py"), "--check",
                        str(DOC)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
