#!/usr/bin/env python3
"""Writes docs/worked-examples.md: dense, window and BigBird attention on 4-8 tokens of
head_dim 2, then the attention of current models (softcap, ALiBi, a sink, grouped-query
heads, (left, right) windows, chunked and neighborhood patterns), every intermediate number
printed (scores, row max, exponentials, sums, lse, o), small enough to check with a
calculator.

The mask and the final o, lse come from the library (sparseattn: the pattern module and the
oracle a1_dense_masked); the intermediate numbers are the formula of contract §2.1 written
out here (contract §2.8's score pipeline and §2.9's sink included). python/tests/
test_worked_examples.py parses the page and checks every number against both.

Usage: PYTHONPATH=python python3 tools/worked_examples.py [--check] [OUT]
  (default OUT docs/worked-examples.md; --check: exit 1 if OUT differs from what it would write)
"""
import math
import os
import sys

import numpy as np

import sparseattn as sa

SCALE = 1.0  # scale 1 so that every score is a small integer (the default is 1/sqrt(2))

# name, pattern, its description, q, k, v (integers: the products are exact)
EXAMPLES = [
    ("dense", sa.Pattern.dense(), "dense (every query attends every key)",
     [[1, 0], [0, 1], [1, 1], [-1, 0]],
     [[1, 0], [0, 1], [1, -1], [0, 0]],
     [[1, 0], [0, 1], [2, 0], [0, 2]]),
    ("window", sa.Pattern.window(1), "window, w = 1 (one-sided: keys p-1, p, p+1)",
     [[1, 0], [0, 1], [1, 1], [-1, 0], [0, 2], [1, -1]],
     [[1, 0], [0, 1], [1, -1], [0, 0], [2, 0], [0, -1]],
     [[1, 0], [0, 1], [2, 0], [0, 2], [1, 1], [-1, 0]]),
    ("bigbird", sa.Pattern.bigbird(1, 1, seed=0),
     "bigbird ITC, block_size 1, 1 random block, seed 0 (8 blocks of one token: with larger "
     "blocks 8 tokens would leave every block allowed)",
     [[1, 0], [0, 1], [1, 1], [-1, 0], [0, 2], [1, -1], [2, 0], [0, 0]],
     [[1, 0], [0, 1], [1, -1], [0, 0], [2, 0], [0, -1], [1, 1], [-1, 1]],
     [[1, 0], [0, 1], [2, 0], [0, 2], [1, 1], [-1, 0], [0, -1], [1, 2]]),
]


# The attention of current models (contract §2.7-§2.9, §3.3, §3.14, §3.15): name, pattern,
# description, q, k, v, and the score modifiers {"softcap": c, "slope": a, "sink": σ}
# (one head). "gqa0"/"gqa1" are the two query heads of one grouped call over one kv head.
Q4 = [[1, 0], [0, 1], [1, 1], [-1, 0]]
K4 = [[1, 0], [0, 1], [1, -1], [0, 0]]
V4 = [[1, 0], [0, 1], [2, 0], [0, 2]]
MODERN = [
    ("softcap", sa.Pattern.dense(causal=True), "causal dense with softcap c = 1 (Gemma 2): "
     "s = c·tanh(q·k / c)", [[2, 0], [0, 2], [2, 2], [-2, 0]], K4, V4, {"softcap": 1.0}),
    ("alibi", sa.Pattern.dense(causal=True), "causal dense with ALiBi slope a = 0.5: "
     "s = q·k − a·|p − j|", Q4, K4, V4, {"slope": 0.5}),
    ("sink", sa.Pattern.window(1), "window w = 1 with a sink σ = 0 (gpt-oss): one more "
     "logit in each row's denominator, with value 0", Q4, K4, V4, {"sink": 0.0}),
    ("gqa0", sa.Pattern.dense(), "grouped-query heads, query head 0 of 2 over one kv head "
     "(g = 2: heads 0 and 1 both read kv head 0)", Q4, K4, V4, {"gqa": 0}),
    ("gqa1", sa.Pattern.dense(), "grouped-query heads, query head 1 of 2: the same k and v "
     "as head 0, its own q", [[0, 1], [1, 0], [-1, 1], [1, 1]], K4, V4, {"gqa": 1}),
    ("leftright", sa.Pattern.window(left=1, right=2), "(left, right) window (1, 2): keys "
     "p − 1 … p + 2 (FlashAttention's window_size=(1, 2))",
     [[1, 0], [0, 1], [1, 1], [-1, 0], [0, 2]], [[1, 0], [0, 1], [1, -1], [0, 0], [2, 0]],
     [[1, 0], [0, 1], [2, 0], [0, 2], [1, 1]], {}),
    ("chunked", sa.Pattern.chunked(2, causal=True), "chunked, chunk_size 2, causal (Llama 4): "
     "keys of the query's own chunk, up to it", Q4, K4, V4, {}),
    ("neighborhood", sa.Pattern.neighborhood(3), "neighborhood, kernel_size 3 (NATTEN): "
     "exactly 3 keys per query, the window shifted inward at the ends",
     [[1, 0], [0, 1], [1, 1], [-1, 0], [0, 2]], [[1, 0], [0, 1], [1, -1], [0, 0], [2, 0]],
     [[1, 0], [0, 1], [2, 0], [0, 2], [1, 1]], {}),
]


def library(name, pattern, q, k, v, mods):
    """The library's o, lse for one example: one call with the example's modifiers; for the
    grouped heads one call over both query heads and one kv head, then this head's rows."""
    if "gqa" in mods:
        qs = [np.array(ex[3], dtype=np.float64) for ex in MODERN if ex[0] in ("gqa0", "gqa1")]
        o, lse = sa.attend(np.stack(qs)[None], k[None, None], v[None, None], pattern,
                           scale=SCALE)
        return o[0, mods["gqa"]], lse[0, mods["gqa"]]
    kw = {}
    if "softcap" in mods:
        kw["softcap"] = mods["softcap"]
    if "slope" in mods:
        kw["alibi_slopes"] = np.array([mods["slope"]])
    if "sink" in mods:
        kw["sinks"] = np.array([mods["sink"]])
    o, lse = sa.attend(q[None, None], k[None, None], v[None, None], pattern, scale=SCALE, **kw)
    return o[0, 0], lse[0, 0]


def pipeline(raw: float, i: int, j: int, n: int, mods) -> float:
    """Contract §2.8 for one allowed pair: the softcap, then ALiBi (query i at p = i)."""
    s = raw
    if "softcap" in mods:
        s = mods["softcap"] * math.tanh(s / mods["softcap"])
    if "slope" in mods:
        s -= mods["slope"] * abs(i - j)
    return s


def fmt(x: float) -> str:
    if x == -math.inf:
        return "-inf"
    s = f"{x:.6f}"
    return "0.000000" if s == "-0.000000" else s


def table(marker: str, header, rows) -> list:
    out = [f"<!-- {marker} -->", "| " + " | ".join(header) + " |",
           "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


def example(name, pattern, what, q, k, v, mods=None) -> list:
    mods = mods or {}
    q, k, v = (np.array(x, dtype=np.float64) for x in (q, k, v))
    n = len(q)
    mask = pattern.mask(n)
    o_lib, lse_lib = library(name, pattern, q, k, v, mods) if mods or name in (
        "leftright", "chunked", "neighborhood") else sa.attend(q, k, v, pattern, scale=SCALE)
    L = [f"## {name}: {what}", ""]
    L += [f"seq_len {n}, head_dim 2, scale {SCALE:g}. Inputs (one row per token):", ""]
    L += table(f"{name}:inputs", ["i", "q_i", "k_i", "v_i"],
               [[str(i), f"({q[i,0]:g}, {q[i,1]:g})", f"({k[i,0]:g}, {k[i,1]:g})",
                 f"({v[i,0]:g}, {v[i,1]:g})"] for i in range(n)])
    L += ["The allowed set from the pattern module (`Pattern.mask`; 1 = query i may attend "
          "key j):", ""]
    L += table(f"{name}:mask", ["i \\ j"] + [str(j) for j in range(n)],
               [[str(i)] + ["1" if mask[i, j] else "·" for j in range(n)] for i in range(n)])
    if name == "bigbird":
        rt = pattern.random_table(n)[0]
        L += ["Block table (block_size 1: block = token). Global blocks 0 and 7 attend and are "
              "attended by everything; block q attends q-1, q, q+1; the random draw of "
              "query block q (row q-1 of `Pattern.random_table`, contract §3.10) is "
              + ", ".join(f"{q_}→{int(rt[q_-1, 0])}" for q_ in range(1, n - 1))
              + ". The key blocks each query block gathers (what `reference/a4_bigbird_blocks.cpp`"
              " copies into one buffer):", ""]
        L += table(f"{name}:gather", ["query block", "gathered key blocks"],
                   [[str(i), ", ".join(str(j) for j in range(n) if mask[i, j])]
                    for i in range(n)])
    raw = SCALE * q @ k.T
    s = np.array([[pipeline(raw[i, j], i, j, n, mods) for j in range(n)] for i in range(n)])
    if "softcap" in mods or "slope" in mods:
        L += ["Raw scores scale·<q_i, k_j> for allowed pairs (· = masked):", ""]
        L += table(f"{name}:raw", ["i \\ j"] + [str(j) for j in range(n)],
                   [[str(i)] + [fmt(raw[i, j]) if mask[i, j] else "·" for j in range(n)]
                    for i in range(n)])
        step = ("s_ij = c·tanh(raw_ij / c), c = " + f"{mods['softcap']:g}" if "softcap" in mods
                else "s_ij = raw_ij − a·|p − j|, a = " + f"{mods['slope']:g}" + ", p = i")
        L += [f"Scores after contract §2.8's pipeline, {step} (· = masked: -inf):", ""]
    else:
        L += [f"Scores s_ij = scale·<q_i, k_j> for allowed pairs (· = masked: -inf):", ""]
    L += table(f"{name}:scores", ["i \\ j"] + [str(j) for j in range(n)],
               [[str(i)] + [fmt(s[i, j]) if mask[i, j] else "·" for j in range(n)]
                for i in range(n)])
    sink = mods.get("sink")
    m = np.array([max([s[i, mask[i]].max()] + ([sink] if sink is not None else []))
                  for i in range(n)])
    e = np.where(mask, np.exp(s - m[:, None]), 0.0)
    e_sink = np.exp(sink - m) if sink is not None else np.zeros(n)
    l = e.sum(axis=1) + e_sink
    lse = m + np.log(l)
    o = (e / l[:, None]) @ v
    if sink is None:
        L += ["Row by row: m_i = max of the allowed s_ij; e_ij = exp(s_ij − m_i); l_i = Σ_j "
              "e_ij; lse_i = m_i + ln l_i:", ""]
        L += table(f"{name}:exp", ["i", "m_i"] + [f"e_i{j}" for j in range(n)] + ["l_i", "lse_i"],
                   [[str(i), fmt(m[i])] + [fmt(e[i, j]) if mask[i, j] else "·" for j in range(n)]
                    + [fmt(l[i]), fmt(lse[i])] for i in range(n)])
    else:
        L += [f"Row by row with the sink σ = {sink:g} (contract §2.9): m_i = max(σ, the allowed "
              "s_ij); e_ij = exp(s_ij − m_i); e_sink = exp(σ − m_i); l_i = e_sink + Σ_j e_ij; "
              "lse_i = m_i + ln l_i. The sink's value is 0: it takes its share e_sink / l_i of "
              "the mass and gives nothing to o.", ""]
        L += table(f"{name}:exp", ["i", "m_i"] + [f"e_i{j}" for j in range(n)]
                   + ["e_sink", "l_i", "lse_i"],
                   [[str(i), fmt(m[i])] + [fmt(e[i, j]) if mask[i, j] else "·" for j in range(n)]
                    + [fmt(e_sink[i]), fmt(l[i]), fmt(lse[i])] for i in range(n)])
    call = ("`sparseattn.attend` on q [1, 2, 4, 2] (both query heads) and k, v [1, 1, 4, 2], "
            f"head {mods['gqa']}'s rows" if "gqa" in mods else "`sparseattn.attend`")
    L += [f"o_i = Σ_j (e_ij / l_i) v_j, next to the library's answer ({call}, the oracle "
          "`a1_dense_masked`):", ""]
    L += table(f"{name}:output", ["i", "o_i0", "o_i1", "lse_i", "library o_i0", "library o_i1",
                                  "library lse_i"],
               [[str(i), fmt(o[i, 0]), fmt(o[i, 1]), fmt(lse[i]), fmt(o_lib[i, 0]),
                 fmt(o_lib[i, 1]), fmt(lse_lib[i])] for i in range(n)])
    return L


def page() -> str:
    L = ["# Worked examples by hand: dense, window, BigBird, and the attention of current models",
         "",
         "Three tiny problems (seq_len 4, 6 and 8; head_dim 2; integer q, k, v; scale 1 so "
         "that every score is an integer), with every number of contract §2.1 printed: the "
         "scores, each row's maximum, the exponentials, their sum, lse and o. Check a row with "
         "a calculator before you trust any code — then compare with the library's own answer "
         "in the last table of each example. Read with [reference-ladder.md](reference-ladder.md)"
         " (a0, a1) and the patterns of contract §3.2, §3.3, §3.6.", "",
         "Generated by `tools/worked_examples.py` from the library (`PYTHONPATH=python python3 "
         "tools/worked_examples.py`); `python/tests/test_worked_examples.py` parses every table "
         "below and checks each number against the library and against the formula. Numbers "
         "are rounded to 6 decimals; `·` is a masked pair.", "",
         "How to check row i by hand: s_ij = q_i0·k_j0 + q_i1·k_j1; m_i = the largest allowed "
         "s_ij; e_ij = exp(s_ij − m_i) (so the largest is exactly 1); l_i = the sum of the "
         "e_ij; lse_i = m_i + ln l_i; o_i = Σ_j (e_ij / l_i)·v_j.", ""]
    for ex in EXAMPLES:
        L += example(*ex)
    L += ["# The attention of current models", "",
          "The same four tokens (five for the windows of fixed width) under each feature of "
          "contract §2.7–§2.9 and the patterns of §3.3, §3.14, §3.15, one at a time. With a "
          "softcap or ALiBi the raw scores are printed first, then the scores after the "
          "pipeline (softcap, then ALiBi, then the mask); with a sink the exponentials carry "
          "one more column. Grouped-query heads: two query heads read the one kv head, each "
          "checked as its own example against one grouped call.", ""]
    for ex in MODERN:
        L += example(*ex)
    return "\n".join(L).rstrip() + "\n"


def main(argv) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    out = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "docs",
                                            "worked-examples.md")
    text = page()
    if check:
        with open(out) as f:
            if f.read() != text:
                print(f"{out} is out of date: run tools/worked_examples.py", file=sys.stderr)
                return 1
        return 0
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)  # never half-written
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
