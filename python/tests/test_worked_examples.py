"""docs/worked-examples.md: every printed number is asserted — the mask against the pattern
module, scores/max/exp/sums/lse/o against the hand formula of contract §2.1 computed here
from the printed inputs, and o/lse against the library's oracle."""
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
            "bigbird": sa.Pattern.bigbird(1, 1, seed=0)}
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


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_number_of_the_example(name):
    rows = T[f"{name}:inputs"]
    q = np.array([pair(r[1]) for r in rows])
    k = np.array([pair(r[2]) for r in rows])
    v = np.array([pair(r[3]) for r in rows])
    n = len(q)
    assert 4 <= n <= 8 and q.shape[1] == 2

    # The mask is the pattern module's.
    mask = np.array([[c == "1" for c in r[1:]] for r in T[f"{name}:mask"]])
    assert (mask == PATTERNS[name].mask(n)).all()

    # Scores: integers, exactly q_i . k_j (scale 1); masked pairs printed as a dot.
    s_hand = q @ k.T
    for i, r in enumerate(T[f"{name}:scores"]):
        for j, c in enumerate(r[1:]):
            assert (c == "·") == (not mask[i, j]), (i, j)
            if mask[i, j]:
                assert num(c) == s_hand[i, j], (i, j, c)

    # Row max, exponentials, sums, lse by hand.
    for i, r in enumerate(T[f"{name}:exp"]):
        m = max(s_hand[i, j] for j in range(n) if mask[i, j])
        assert num(r[1]) == pytest.approx(m, abs=TOL)
        e = [math.exp(s_hand[i, j] - m) if mask[i, j] else None for j in range(n)]
        for j in range(n):
            assert (r[2 + j] == "·") == (e[j] is None)
            if e[j] is not None:
                assert num(r[2 + j]) == pytest.approx(e[j], abs=TOL), (i, j)
        l = sum(x for x in e if x is not None)
        assert num(r[2 + n]) == pytest.approx(l, abs=TOL)
        assert num(r[3 + n]) == pytest.approx(m + math.log(l), abs=TOL)

    # o and lse: the hand formula and the library's oracle, both printed, both checked.
    o_lib, lse_lib = sa.attend(q, k, v, PATTERNS[name], scale=1.0)
    for i, r in enumerate(T[f"{name}:output"]):
        w = np.where(mask[i], np.exp(s_hand[i] - s_hand[i][mask[i]].max()), 0.0)
        o_hand = (w / w.sum()) @ v
        lse_hand = s_hand[i][mask[i]].max() + math.log(w.sum())
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
