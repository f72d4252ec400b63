"""The grader: each exercise of exercises/ against the library's oracle.

One test per exercise; each runs a list of cases and stops at the first wrong one, saying
which case, what was expected and what came back (for attention outputs: the report of
sparseattn.check, the same diagnostics as `sparseattn check`). Failures carry no Python
traceback of the grader: an unwritten stub says "not written yet", an exception in the
student's code shows the student's own frames only.

The stubs' rules are enforced, not only stated: inputs are compared before and after the
call where a stub says "do not modify the inputs" (ex01, ex04), and ex05's "do not build the
[N, M] score matrix" is a cap on the call's traced peak memory (see _ex05_memory_rule). A
usual mistake, recognised in the answer, gets a one-line "hint:" beside the numbers.
"""
import importlib.util
import math
import pathlib
import sys
import traceback
import tracemalloc
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pytest

import sparseattn as sa

# ---------------------------------------------------------------------------------------
# Loading a student's file and calling it.


def load(solutions_dir: pathlib.Path, module: str):
    path = solutions_dir / f"{module}.py"
    if not path.exists():
        pytest.fail(f"{module}: no file {path} (copy exercises/{module}.py there and fill it in)",
                    pytrace=False)
    if str(solutions_dir) not in sys.path:
        sys.path.insert(0, str(solutions_dir))
    spec = importlib.util.spec_from_file_location(f"graded_{module}", path)
    mod = importlib.util.module_from_spec(spec)
    message = None
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # a syntax error or a failing import in the student's file
        message = f"{module}: {path} does not import:\n{_student_frames(e, path)}"
    if message:
        pytest.fail(message, pytrace=False)
    return mod, path


def _student_frames(e: BaseException, path: pathlib.Path) -> str:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == str(path)]
    where = "".join(traceback.format_list(frames)) if frames else ""
    if isinstance(e, SyntaxError):
        where = f'  File "{e.filename}", line {e.lineno}\n    {(e.text or "").rstrip()}\n'
    return f"{where}{type(e).__name__}: {e}"


def call(module: str, path: pathlib.Path, fn, *args, **kwargs):
    message = None
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as e:
        message = (f"{module}: not written yet ({e}). Open {path}, read the docstring (its "
                   f"contract), replace the `raise NotImplementedError` and run `make exercises` "
                   f"again.")
    except Exception as e:
        message = (f"{module}: {fn.__name__}{_describe_args(args, kwargs)} raised\n"
                   f"{_student_frames(e, path)}")
    pytest.fail(message, pytrace=False)  # outside `except`: no chained grader traceback


def _describe_args(args, kwargs) -> str:
    def d(x):
        if isinstance(x, np.ndarray):
            return f"<{x.dtype} array {list(x.shape)}>"
        return repr(x) if len(repr(x)) < 60 else f"<{type(x).__name__}>"
    parts = [d(a) for a in args] + [f"{k}={d(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def as_array(module, name, x, shape, dtype=np.float64):
    try:
        a, message = np.asarray(x, dtype=dtype), None
    except Exception as e:
        message = f"{module}: {name} is not convertible to a {np.dtype(dtype).name} array: {e}"
    if message:
        pytest.fail(message, pytrace=False)
    if a.shape != tuple(shape):
        pytest.fail(f"{module}: {name} has shape {list(a.shape)}, expected {list(shape)}",
                    pytrace=False)
    return a


def first_differences(got: np.ndarray, want: np.ndarray, bad: np.ndarray, limit: int = 5) -> str:
    idx = np.argwhere(bad)[:limit]
    lines = [f"    at {tuple(int(t) for t in i)}: got {got[tuple(i)].item()!r}, expected "
             f"{want[tuple(i)].item()!r}"
             for i in idx]
    return f"{int(bad.sum())} of {bad.size} entries differ; first ones:\n" + "\n".join(lines)


def rng(seed):
    return np.random.default_rng(seed)


def inputs_unchanged(module: str, case: str, fn: str,
                     given: Sequence[Tuple[str, np.ndarray, np.ndarray]]) -> None:
    """Fails when the student's function wrote into an input array.

    ``given`` lists (name, the array passed, an untouched copy of it). The stubs that say
    "do not modify the inputs" are held to it: the caller still owns those arrays (the
    grader's oracle call, the next tile of a fold).
    """
    for name, passed, before in given:
        if passed.shape == before.shape and np.array_equal(passed, before, equal_nan=True):
            continue
        if passed.shape != before.shape:
            what = f"its shape went from {list(before.shape)} to {list(passed.shape)}"
        else:
            changed = ~((passed == before) | (np.isnan(passed) & np.isnan(before))
                        if passed.dtype.kind == "f" else passed == before)
            i = tuple(int(x) for x in np.argwhere(changed)[0])
            what = (f"{int(changed.sum())} of {changed.size} entries changed, the first at {i}: "
                    f"{before[i].item()!r} became {passed[i].item()!r}")
        pytest.fail(f"{module}, {case}: {fn} modified its input `{name}` ({what}). The "
                    f"docstring says: do not modify the inputs. Compute into new arrays "
                    f"(np.where, copies) instead of assigning into the arguments.",
                    pytrace=False)


def with_hint(summary: str, hint: str) -> str:
    """The checker's summary with its generic "hint:" line replaced by the grader's own."""
    if not hint:
        return summary
    kept = [line for line in summary.splitlines() if not line.startswith("hint: ")]
    return "\n".join(kept + ["hint: " + hint])


# ---------------------------------------------------------------------------------------
# ex01 — masked softmax (contract §2.1, §2.3)


def ex01_cases():
    r = rng(1)
    s = r.normal(size=(6, 7))
    m = r.random((6, 7)) < 0.6
    m[2] = False                     # a fully masked row
    m[4] = False
    m[4, 3] = True                   # a single allowed key
    yield "random scores, 60% allowed, row 2 fully masked, row 4 one key", s, m
    yield "scores of magnitude 1000 (stability)", 1000.0 * r.normal(size=(4, 5)), \
        np.ones((4, 5), dtype=bool)
    yield "every row fully masked", r.normal(size=(3, 4)), np.zeros((3, 4), dtype=bool)


def _ex01_hint(p: np.ndarray, lse: np.ndarray, mask: np.ndarray) -> str:
    """Names overflow when a row WITH allowed keys came back non-finite (no max
    subtracted); "" otherwise (the checker's own hint then stands)."""
    unmasked = mask.any(axis=1)
    broken = unmasked & ~(np.isfinite(p).all(axis=1) & np.isfinite(lse))
    if not broken.any():
        return ""
    i = int(np.argmax(broken))
    return (f"row {i} has {int(mask[i].sum())} allowed keys (it is not masked) yet its p or lse "
            f"is not finite: exp of a large score overflows to inf (and of a very negative one "
            f"underflows to 0), so the quotient is inf/inf or 0/0. Subtract the row maximum over "
            f"the allowed entries before exponentiating: p = exp(s - max) / sum exp(s - max), "
            f"lse = max + log(sum exp(s - max)) (contract §2.1)")


def test_ex01_masked_softmax(solutions_dir):
    mod, path = load(solutions_dir, "ex01_masked_softmax")
    for name, s, m in ex01_cases():
        n, k = s.shape
        s_in, m_in = s.copy(), m.copy()
        out = call("ex01", path, mod.masked_softmax, s_in, m_in)
        inputs_unchanged("ex01", f"case '{name}'", "masked_softmax",
                         [("scores", s_in, s), ("mask", m_in, m)])
        if not isinstance(out, tuple) or len(out) != 2:
            pytest.fail("ex01: masked_softmax must return the pair (p, lse)", pytrace=False)
        p = as_array("ex01", "p", out[0], (n, k))
        lse = as_array("ex01", "lse", out[1], (n,))
        q = np.where(m, s, 0.0)
        rep = sa.check(q, np.eye(k), np.eye(k), sa.Pattern.explicit(m), p, lse, scale=1.0)
        if not rep.passed:
            pytest.fail(f"ex01, case '{name}': p (as o) and lse against the oracle:\n"
                        f"{with_hint(rep.summary(), _ex01_hint(p, lse, m))}", pytrace=False)


# ---------------------------------------------------------------------------------------
# ex02 — dilated window mask (contract §3.1, §3.3)

EX02 = [(8, 8, 1, 1, False), (8, 8, 2, 1, True), (10, 10, 2, 2, False), (9, 9, 1, 3, True),
        (5, 9, 1, 2, False), (9, 5, 1, 1, True), (9, 5, 2, 2, False), (6, 6, 0, 1, False),
        (7, 7, 50, 1, False), (7, 7, 3, 100, False)]


def test_ex02_dilated_window_mask(solutions_dir):
    mod, path = load(solutions_dir, "ex02_dilated_window_mask")
    for lq, lk, w, d, causal in EX02:
        args = dict(seq_len_q=lq, seq_len_k=lk, window=w, dilation=d, causal=causal)
        got = as_array("ex02", "the mask", call("ex02", path, mod.dilated_window_mask, **args),
                       (lq, lk), dtype=bool)
        want = sa.Pattern.window(w, d, causal).mask(lq, lk)
        bad = got != want
        if bad.any():
            hint = ""
            if got.sum() > want.sum() and w > 0:
                hint = ("\n  hint: window is ONE-SIDED (w = 2 allows p-2 ... p+2; HF Longformer's "
                        "attention_window is 2w)")
            if lq != lk:
                hint += ("\n  hint: queries are the LAST seq_len_q positions: p = i + seq_len_k - "
                         "seq_len_q (contract §3.1)")
            pytest.fail(f"ex02, case {args}: {first_differences(got, want, bad)}\n"
                        f"  expected (1 = allowed):\n{_grid(want)}\n  got:\n{_grid(got)}{hint}",
                        pytrace=False)


def _grid(m: np.ndarray) -> str:
    return "\n".join("    " + "".join("1" if x else "." for x in row) for row in m)


# ---------------------------------------------------------------------------------------
# ex03 — BigBird block table (contract §3.6)

EX03 = [(16, 2, 1, 0), (20, 2, 2, 3), (24, 4, 1, 7), (10, 2, 3, 1), (7, 2, 1, 5), (8, 4, 2, 0),
        (3, 4, 0, 0)]


def _ex03_hint(q: int, got_row: List[int], nb: int, table: np.ndarray) -> str:
    """Names the random-table row mix-up: query block q's random blocks are row q - 1
    (block 0 is global and draws nothing), and the student's row q matches another row."""
    if q in (0, nb - 1):
        return ""
    fixed = {0, nb - 1} | {kb for kb in (q - 1, q, q + 1) if 0 <= kb < nb}
    for r in range(len(table)):
        extra = {int(x) for x in table[r] if x >= 0} - fixed  # what row r alone would add
        if r != q - 1 and extra and got_row == sorted(fixed | extra):
            return (f"\n  hint: query block {q} took the random blocks of random_table row {r}; "
                    f"its own are row {q - 1} = {table[q - 1].tolist()} (row q - 1: the table "
                    f"starts at query block 1, the global block 0 draws none; contract §3.6)")
    return ""


def test_ex03_bigbird_block_table(solutions_dir):
    mod, path = load(solutions_dir, "ex03_bigbird_block_table")
    for n, b, r, seed in EX03:
        pattern = sa.Pattern.bigbird(b, r, seed=seed)
        nb = -(-n // b)
        table = pattern.random_table(n)
        table = table[0] if table.size else np.zeros((max(nb - 2, 0), r), dtype=np.int64)
        got = call("ex03", path, mod.bigbird_block_table, n, b, table.copy())
        mask = pattern.mask(n)
        want = [[kb for kb in range(nb) if mask[qb * b:(qb + 1) * b, kb * b:(kb + 1) * b].any()]
                for qb in range(nb)]
        try:
            got, message = [sorted(int(x) for x in row) for row in got], None
        except Exception:
            message = f"ex03: bigbird_block_table must return a list of lists of ints, got {got!r}"
        if message:
            pytest.fail(message, pytrace=False)
        if got != want or any(len(row) != len(set(row)) for row in got):
            q = next((i for i in range(max(len(got), len(want)))
                      if i >= len(got) or i >= len(want) or got[i] != want[i]), None)
            count = q is None or q >= len(got) or q >= len(want)
            detail = f"{len(got)} query blocks returned, expected {nb}" if count \
                else f"query block {q}: got {got[q]}, expected {want[q]}"
            hint = "" if count else _ex03_hint(q, got[q], nb, table)
            pytest.fail(f"ex03, case seq_len={n}, block_size={b} (n_b={nb}), random_table="
                        f"{table.tolist()}: {detail}\n  (each key block once: contract §2.2)"
                        f"{hint}", pytrace=False)


# ---------------------------------------------------------------------------------------
# ex04 — online softmax update (contract §2.1, §2.3)


def _update_by_formula(m, l, acc, s, v):
    """The recurrence written out with explicit guards (contract §2.3)."""
    m_new = np.maximum(m, s.max(axis=1))
    out_l, out_acc = np.zeros_like(l), np.zeros_like(acc)
    for i in range(len(m)):
        if m_new[i] == -math.inf:
            continue
        a = math.exp(m[i] - m_new[i]) if m[i] > -math.inf else 0.0
        p = np.where(np.isfinite(s[i]), np.exp(np.where(np.isfinite(s[i]), s[i], 0.0) - m_new[i]), 0.0)
        out_l[i] = a * l[i] + p.sum()
        out_acc[i] = a * acc[i] + p @ v
    return m_new, out_l, out_acc


def _not_rescaled(m: np.ndarray, l: np.ndarray, acc: np.ndarray, s: np.ndarray,
                  v: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The usual mistake: this tile added, the old l and acc NOT multiplied by
    exp(m - m_new) — (l_wrong, acc_wrong)."""
    m_new = np.maximum(m, s.max(axis=1))
    safe = np.where(np.isfinite(m_new), m_new, 0.0)[:, None]
    p = np.where(np.isfinite(s), np.exp(np.where(np.isfinite(s), s, 0.0) - safe), 0.0)
    return l + p.sum(axis=1), acc + p @ v


def _close(g: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (g == w) | np.isclose(g, w, rtol=1e-12, atol=1e-12)


def _check_state(name: str, got: tuple, want: tuple, case: str,
                 state: Optional[tuple] = None) -> None:
    """got, want: (m_new, l_new, acc_new); state: the (m, l, acc, scores, v) they came from,
    for the hint on a missing rescale."""
    wrong = dict(zip(("l_new", "acc_new"), _not_rescaled(*state))) if state else {}
    for label, g, w in zip(("m_new", "l_new", "acc_new"), got, want):
        g = as_array("ex04", label, g, w.shape)
        if np.isnan(g).any():
            pytest.fail(f"ex04, {case}: {label} has NaN at {np.argwhere(np.isnan(g))[:3].tolist()} "
                        f"(a row with every score masked must keep m = -inf, l = 0, acc = 0: "
                        f"never -inf - (-inf), contract §2.3)", pytrace=False)
        same_inf = _close(g, w)
        if not same_inf.all():
            hint = ""
            if label in wrong and _close(g, wrong[label]).all():
                old = label[:-4]  # "l" or "acc"
                hint = (f"\n  hint: {old} was not rescaled: when the running maximum moves from "
                        f"m to m_new, the old {old} must be multiplied by exp(m - m_new) before "
                        f"this tile is added ({label} = exp(m - m_new) * {old} + "
                        f"{'rowsum(exp(scores - m_new))' if old == 'l' else 'exp(scores - m_new) @ v'})")
            pytest.fail(f"ex04, {case}: {label}: {first_differences(g, w, ~same_inf)}{hint}",
                        pytrace=False)


def test_ex04_online_softmax_update(solutions_dir):
    mod, path = load(solutions_dir, "ex04_online_softmax_update")
    r = rng(4)
    # 1. One update from hand-picked states: empty start, a running state, masked rows.
    R, C, Dv = 4, 3, 2
    v = r.normal(size=(C, Dv))
    s = r.normal(size=(R, C))
    s[1] = -math.inf                 # this tile masks row 1 entirely
    s[2, 0] = -math.inf
    start = (np.full(R, -math.inf), np.zeros(R), np.zeros((R, Dv)))
    running = (np.array([0.5, -math.inf, 2.0, -1.0]), np.array([1.5, 0.0, 1.0, 3.0]),
               r.normal(size=(R, Dv)))
    for case, state in (("from the start state", start), ("from a running state", running)):
        args = [x.copy() for x in state] + [s.copy(), v.copy()]
        got = call("ex04", path, mod.online_softmax_update, *args)
        inputs_unchanged("ex04", f"one update {case}", "online_softmax_update",
                         list(zip(("m", "l", "acc", "scores", "v"), args, (*state, s, v))))
        if not isinstance(got, tuple) or len(got) != 3:
            pytest.fail("ex04: online_softmax_update must return (m_new, l_new, acc_new)",
                        pytrace=False)
        _check_state("ex04", got, _update_by_formula(*state, s, v), f"one update {case}",
                     (*state, s, v))
    # 2. Folded over the key tiles of a whole problem, then checked against the oracle.
    n, d, tile = 11, 3, 4
    q, k, vv = r.normal(size=(n, d)), r.normal(size=(n, d)), r.normal(size=(n, 2))
    mask = sa.Pattern.window(1, 2).mask(n) | (r.random((n, n)) < 0.1)
    mask[5] = False                  # a fully masked row
    scores = np.where(mask, q @ k.T / math.sqrt(d), -math.inf)
    m, l, acc = np.full(n, -math.inf), np.zeros(n), np.zeros((n, 2))
    for j0 in range(0, n, tile):
        m, l, acc = call("ex04", path, mod.online_softmax_update, m, l, acc,
                         scores[:, j0:j0 + tile].copy(), vv[j0:j0 + tile].copy())
        m, l, acc = (np.asarray(x, dtype=np.float64) for x in (m, l, acc))
    with np.errstate(divide="ignore", invalid="ignore"):
        o = np.where(l[:, None] > 0, acc / np.where(l > 0, l, 1.0)[:, None], 0.0)
        lse = np.where(l > 0, m + np.log(np.where(l > 0, l, 1.0)), -math.inf)
    rep = sa.check(q, k, vv, sa.Pattern.explicit(mask), o, lse)
    if not rep.passed:
        pytest.fail(f"ex04: your update folded over tiles of {tile} keys (o = acc / l, lse = m + "
                    f"log l) against the oracle:\n{rep.summary()}", pytrace=False)


# ---------------------------------------------------------------------------------------
# ex05 — sparse rows attention (contract §2.1-§2.3)


def test_ex05_sparse_rows_attention(solutions_dir):
    mod, path = load(solutions_dir, "ex05_sparse_rows_attention")
    r = rng(5)
    n, m, d, dv = 7, 9, 4, 3
    q, k, v = r.normal(size=(n, d)), r.normal(size=(m, d)), r.normal(size=(m, dv))
    rows = [[0, 1, 2], [8], [], [3, 3, 5, 3], list(range(m)), [1, 7], [6, 2, 0]]
    for scale in (None, 0.7):
        got = call("ex05", path, mod.sparse_rows_attention, q.copy(), k.copy(), v.copy(),
                   [list(x) for x in rows], scale=scale)
        if not isinstance(got, tuple) or len(got) != 2:
            pytest.fail("ex05: sparse_rows_attention must return the pair (o, lse)", pytrace=False)
        o = as_array("ex05", "o", got[0], (n, dv))
        lse = as_array("ex05", "lse", got[1], (n,))
        mask = np.zeros((n, m), dtype=bool)
        for i, keys in enumerate(rows):
            mask[i, keys] = True
        rep = sa.check(q, k, v, sa.Pattern.explicit(mask), o, lse, scale=scale)
        if not rep.passed:
            pytest.fail(f"ex05, scale={scale} (rows {rows}: row 2 empty, row 3 lists key 3 three "
                        f"times — it counts once, contract §2.2):\n{rep.summary()}", pytrace=False)
    _ex05_memory_rule(path, mod)


# The stub's rule "do not build the [N, M] score matrix", measured. N = M = 4096 with about
# 8 keys per row: one [N, M] float64 matrix is 128 MiB, an [N, M] bool mask 16 MiB, while an
# answer that visits only the listed keys needs well under 1 MiB beyond its inputs (measured:
# a loop over rows 0.16 MiB, the reference adapter in chunks of 256 rows 2.2 MiB, the planted
# dense answer of python/tests/test_exercises.py 400 MiB). The allowance, 1/16 of the float64
# matrix (8 MiB), sits a factor of 4 or more away from each.
#
# Why tracemalloc: its peak counts the bytes allocated through Python's allocators and NumPy's
# array buffers during the call, excluding the inputs made before it, and is the same on
# every run whatever else the machine is doing: no timing, no process-wide RSS (which holds
# the interpreter, pytest and allocator caches that are never returned), no address-space
# limit in a subprocess (which thread stacks and OpenMP arenas of the C++ module also hit).
# Its blind spot: memory a C extension takes without telling it (the sparseattn module's own
# C++ buffers, PyTorch) is not counted, so a dense matrix built inside such a library is
# not seen; one built with NumPy is.
EX05_N = 4096
EX05_ALLOWED_BYTES = EX05_N * EX05_N * 8 // 16


def _ex05_memory_rule(path: pathlib.Path, mod) -> None:
    """Runs the student's ex05 on N = M = EX05_N under tracemalloc; fails over the allowance,
    then checks the answer against the oracle."""
    r = rng(55)
    n = m = EX05_N
    d, dv = 8, 4
    q, k, v = r.normal(size=(n, d)), r.normal(size=(m, d)), r.normal(size=(m, dv))
    # A window of 2 each side plus 3 random keys per row (repeats possible); every 97th
    # row empty.
    rows = [[j for j in range(i - 2, i + 3) if 0 <= j < m] + r.integers(0, m, 3).tolist()
            if i % 97 else [] for i in range(n)]
    nnz = sum(len(set(x)) for x in rows)
    already = tracemalloc.is_tracing()  # e.g. python -X tracemalloc: share, do not stop it
    if not already:
        tracemalloc.start()
    elif hasattr(tracemalloc, "reset_peak"):
        tracemalloc.reset_peak()
    else:  # Python 3.8 has no reset_peak; clear_traces also zeroes the peak
        tracemalloc.clear_traces()
    base = tracemalloc.get_traced_memory()[0]
    try:
        got = call("ex05", path, mod.sparse_rows_attention, q, k, v, rows)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if not already:
            tracemalloc.stop()
    case = f"N = M = {n}, D = {d}, Dv = {dv}, {nnz} listed keys (density {nnz / (n * m):.2g})"
    if peak > EX05_ALLOWED_BYTES:
        mib = 2.0 ** 20
        pytest.fail(f"ex05, {case}: sparse_rows_attention allocated {peak / mib:.1f} MiB at its "
                    f"peak, over the {EX05_ALLOWED_BYTES / mib:.0f} MiB allowed (one [N, M] "
                    f"float64 matrix is {n * m * 8 / mib:.0f} MiB). The docstring says: do not "
                    f"build the [N, M] score matrix (nor an [N, M] mask); visit only the keys "
                    f"listed in rows[i], O(nnz) memory.", pytrace=False)
    if not isinstance(got, tuple) or len(got) != 2:
        pytest.fail("ex05: sparse_rows_attention must return the pair (o, lse)", pytrace=False)
    o = as_array("ex05", "o", got[0], (n, dv))
    lse = as_array("ex05", "lse", got[1], (n,))
    mask = np.zeros((n, m), dtype=bool)
    for i, keys in enumerate(rows):
        mask[i, keys] = True
    rep = sa.check(q, k, v, sa.Pattern.explicit(mask), o, lse)
    if not rep.passed:
        pytest.fail(f"ex05, {case}:\n{rep.summary()}", pytrace=False)


# ---------------------------------------------------------------------------------------
# ex06 — reachability after L layers (contract §6.1)


def _hops(mask: np.ndarray) -> np.ndarray:
    """hops[i, j]: fewest layers for j to reach i, from the graph module's shortest paths
    (-1: never)."""
    n = mask.shape[0]
    pattern = sa.Pattern.explicit(mask)
    h = np.full((n, n), -1)
    for j in range(n):
        for i in range(n):
            path = sa.reach(pattern, n, layers=1, path=(j, i))["path"]
            if path:
                h[i, j] = len(path) - 1
    return h


def ex06_masks():
    yield "window w=1, n=9", sa.Pattern.window(1).mask(9)
    yield "dilated window w=1 d=2, n=8 (never mixes)", sa.Pattern.window(1, 2).mask(8)
    yield "causal window w=2, n=8", sa.Pattern.window(2, causal=True).mask(8)
    yield "longformer w=0, global token 4, n=9", sa.Pattern.longformer(0, [4]).mask(9)
    m = rng(6).random((8, 8)) < 0.15
    yield "random directed graph, n=8", m


def test_ex06_reachability(solutions_dir):
    mod, path = load(solutions_dir, "ex06_reachability")
    for name, mask in ex06_masks():
        hops = _hops(mask)
        for layers in (0, 1, 2, 3, 5):
            want = (hops >= 0) & (hops <= layers)
            got = as_array("ex06", "R", call("ex06", path, mod.reachability, mask.copy(), layers),
                           mask.shape, dtype=bool)
            bad = got != want
            if bad.any():
                pytest.fail(f"ex06, {name}, layers={layers}: {first_differences(got, want, bad)}\n"
                            f"  (R[i, j]: j reaches i; every layer also keeps the residual self "
                            f"edge, contract §6.1)", pytrace=False)


# ---------------------------------------------------------------------------------------
# ex07 — softmax backward (contract §7.1, §7.2)


def _fd_grad(s: np.ndarray, mask: np.ndarray, dp: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d<dp, P>/ds by central differences of the library's oracle (q = s, k = v = I)."""
    n, m = s.shape
    pattern = sa.Pattern.explicit(mask)

    def loss(x):
        o, _ = sa.attend(x, np.eye(m), np.eye(m), pattern, scale=1.0)
        return float(np.sum(dp * o))

    g = np.zeros_like(s)
    for i in range(n):
        for j in range(m):
            if not mask[i, j]:
                continue  # the oracle's output does not depend on a masked score at all
            xp, xm = s.copy(), s.copy()
            xp[i, j] += h
            xm[i, j] -= h
            g[i, j] = (loss(xp) - loss(xm)) / (2 * h)
    return g


def test_ex07_softmax_backward(solutions_dir):
    mod, path = load(solutions_dir, "ex07_softmax_backward")
    r = rng(7)
    n, m = 5, 6
    s = r.normal(size=(n, m))
    mask = r.random((n, m)) < 0.7
    mask[3] = False                  # a fully masked row
    s = np.where(mask, s, 0.0)
    dp = r.normal(size=(n, m))       # nonzero on masked entries too: they must not leak
    p, _ = sa.attend(s, np.eye(m), np.eye(m), sa.Pattern.explicit(mask), scale=1.0)
    got = as_array("ex07", "ds", call("ex07", path, mod.softmax_backward, p.copy(), dp.copy()),
                   (n, m))
    if np.isnan(got).any():
        pytest.fail(f"ex07: ds has NaN at {np.argwhere(np.isnan(got))[:3].tolist()} (a fully "
                    f"masked row has ds = 0, contract §7.2)", pytrace=False)
    leak = (~mask) & (got != 0)
    if leak.any():
        pytest.fail(f"ex07: ds must be exactly 0 where p = 0 (masked entries, fully masked rows; "
                    f"contract §7.2): {first_differences(got, np.zeros_like(got), leak)}",
                    pytrace=False)
    want = _fd_grad(s, mask, dp)
    bad = ~np.isclose(got, want, rtol=1e-6, atol=1e-7)
    if bad.any():
        pytest.fail(f"ex07: ds against central finite differences of the oracle (rtol 1e-6, "
                    f"atol 1e-7): {first_differences(got, want, bad)}\n  (ds_ij = p_ij (dp_ij - "
                    f"sum_k p_ik dp_ik), contract §7.1){_ex07_hint(got, p, dp)}", pytrace=False)


def _ex07_hint(ds: np.ndarray, p: np.ndarray, dp: np.ndarray) -> str:
    """Names the usual mistakes in the row term D_i = sum_k p_ik dp_ik when ds matches one."""
    row = lambda x: x.sum(axis=1, keepdims=True)  # noqa: E731
    mistakes = [
        ("sum_k dp_ik, without the weights p_ik", p * (dp - row(dp))),
        ("no row term at all (ds = p * dp)", p * dp),
        ("a sum down the column (axis 0), not along the row", p * (dp - (p * dp).sum(axis=0))),
    ]
    for what, wrong in mistakes:
        if np.allclose(ds, wrong, rtol=1e-9, atol=1e-12):
            return (f"\n  hint: the softmax-backward row sum: yours is {what}; it must be "
                    f"D_i = sum_k p_ik dp_ik, over row i (axis 1) weighted by p, the same D_i "
                    f"subtracted from every dp_ij of the row")
    return ""
