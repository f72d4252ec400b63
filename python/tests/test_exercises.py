"""The exercise grader (exercises/grader) is itself tested: it passes the library's own
answers (exercises/reference_adapters), fails the untouched stubs with a message and no
traceback, and catches wrong answers with the oracle's diagnostics."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "exercises"
NAMES = sorted(p.stem for p in EXERCISES.glob("ex0*.py"))


def grade(solutions=None, env_solutions=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("SPARSEATTN_SOLUTIONS", None)
    if env_solutions is not None:
        env["SPARSEATTN_SOLUTIONS"] = str(env_solutions)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXERCISES / "grader")]
    if solutions is not None:
        args += ["--solutions", str(solutions)]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_there_are_six_to_eight_exercises_each_with_an_adapter():
    assert 6 <= len(NAMES) <= 8, NAMES
    for n in NAMES:
        assert (EXERCISES / "reference_adapters" / f"{n}.py").exists(), n


def test_library_answers_pass_every_exercise():
    r = grade(EXERCISES / "reference_adapters")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(NAMES)} passed" in r.stdout, r.stdout


def test_untouched_stubs_fail_with_a_message_not_a_traceback():
    r = grade()  # default: exercises/ itself
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert f"{len(NAMES)} failed" in out, out
    assert out.count("not written yet") >= len(NAMES), out
    for n in NAMES:
        assert f"Open {EXERCISES / n}.py" in out, (n, out)
    assert "Traceback" not in out and "raise NotImplementedError(" not in out, out


def test_wrong_answers_are_caught_with_diagnostics(tmp_path):
    for n in NAMES:
        shutil.copy(EXERCISES / "reference_adapters" / f"{n}.py", tmp_path)
    shutil.copy(EXERCISES / "reference_adapters" / "_lib.py", tmp_path)
    # ex02: the total width instead of the one-sided one (HF Longformer's convention).
    (tmp_path / "ex02_dilated_window_mask.py").write_text(
        "import sparseattn as sa\n"
        "def dilated_window_mask(seq_len_q, seq_len_k, window, dilation=1, causal=False):\n"
        "    return sa.Pattern.window(2 * window, dilation, causal).mask(seq_len_q, seq_len_k)\n")
    # ex05: a key listed twice counted twice (set semantics broken).
    (tmp_path / "ex05_sparse_rows_attention.py").write_text(
        "import numpy as np\n"
        "def sparse_rows_attention(q, k, v, rows, scale=None):\n"
        "    scale = 1 / np.sqrt(q.shape[1]) if scale is None else scale\n"
        "    o = np.zeros((len(q), v.shape[1])); lse = np.full(len(q), -np.inf)\n"
        "    for i, keys in enumerate(rows):\n"
        "        if not keys: continue\n"
        "        s = scale * k[keys] @ q[i]; m = s.max(); w = np.exp(s - m)\n"
        "        lse[i] = m + np.log(w.sum()); o[i] = (w / w.sum()) @ v[keys]\n"
        "    return o, lse\n")
    # ex01: the naive softmax: NaN on a fully masked row.
    (tmp_path / "ex01_masked_softmax.py").write_text(
        "import numpy as np\n"
        "def masked_softmax(scores, mask):\n"
        "    s = np.where(mask, scores, -np.inf); m = s.max(axis=1, keepdims=True)\n"
        "    e = np.exp(s - m); return e / e.sum(axis=1, keepdims=True), (m + np.log(e.sum(axis=1, keepdims=True)))[:, 0]\n")
    # ex06: an exception inside the student's code.
    (tmp_path / "ex06_reachability.py").write_text(
        "def reachability(mask, layers):\n"
        "    return helper(mask)\n")
    r = grade(env_solutions=tmp_path)  # through the environment variable this time
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "4 failed" in out and f"{len(NAMES) - 4} passed" in out, out
    assert "hint: window is ONE-SIDED" in out, out
    assert "ex05, scale=None" in out and "does NOT match the float64 oracle" in out, out
    assert "ex01, case" in out and "non-finite" in out, out
    # The NaN report's worst element is the NaN (not the finite-only maximum), and a NaN on
    # the fully masked row is named as such, not as an overflow.
    assert "greatest absolute difference nan at index (0, 0, 2, 0) (candidate nan" in out, out
    assert "probable cause: NaN/Inf on fully masked rows" in out, out
    assert "it is not masked" not in out, out
    assert "NameError: name 'helper' is not defined" in out and "ex06_reachability.py" in out, out
    assert "test_exercises.py\", line" not in out, "the grader's own frames leaked: " + out


def _plant(tmp_path: pathlib.Path, files: dict) -> subprocess.CompletedProcess:
    """Grades the library's answers with `files` (exercise name -> source) put in their
    place: each planted answer must fail, every other exercise pass."""
    for n in NAMES:
        shutil.copy(EXERCISES / "reference_adapters" / f"{n}.py", tmp_path)
    shutil.copy(EXERCISES / "reference_adapters" / "_lib.py", tmp_path)
    for name, source in files.items():
        (tmp_path / f"{name}.py").write_text(source)
    r = grade(tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert f"{len(files)} failed" in out and f"{len(NAMES) - len(files)} passed" in out, out
    assert "test_exercises.py\", line" not in out, "the grader's own frames leaked: " + out
    return r


# A stable masked softmax, right in every value, that writes -inf into the caller's scores.
EX01_WRITES_INTO_SCORES = """\
import numpy as np
def masked_softmax(scores, mask):
    scores[~mask] = -np.inf
    m = scores.max(axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m); z = e.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(z > 0, e / np.where(z > 0, z, 1.0), 0.0)
        lse = np.where(z[:, 0] > 0, m[:, 0] + np.log(np.where(z[:, 0] > 0, z[:, 0], 1.0)), -np.inf)
    return p, lse
"""

# Masked rows handled, but no row maximum subtracted: exp(1000) overflows.
EX01_NO_MAX = """\
import numpy as np
def masked_softmax(scores, mask):
    e = np.where(mask, np.exp(scores), 0.0); z = e.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(z[:, None] > 0, e / np.where(z > 0, z, 1.0)[:, None], 0.0)
        lse = np.where(z > 0, np.log(np.where(z > 0, z, 1.0)), -np.inf)
    return p, lse
"""

# Query block q reads random_table[q] instead of row q - 1 (the last one then reads nothing).
EX03_ROW_Q = """\
def bigbird_block_table(seq_len, block_size, random_table):
    nb = -(-seq_len // block_size)
    out = []
    for q in range(nb):
        if q in (0, nb - 1):
            out.append(list(range(nb))); continue
        s = {0, nb - 1, q - 1, q, q + 1}
        if q < len(random_table):
            s |= {int(x) for x in random_table[q] if x >= 0}
        out.append(sorted(x for x in s if 0 <= x < nb))
    return out
"""

_EX04 = """\
import numpy as np
def online_softmax_update(m, l, acc, scores, v):
    m_new = np.maximum(m, scores.max(axis=1))
    live = np.isfinite(m_new)
    safe = np.where(live, m_new, 0.0)
    a = np.where(np.isfinite(m), np.exp(np.where(np.isfinite(m), m, 0.0) - safe), 0.0)
    p = np.where(np.isfinite(scores), np.exp(np.where(np.isfinite(scores), scores, 0.0) - safe[:, None]), 0.0)
    {body}
"""
# acc_new = acc + p @ v: the old acc not multiplied by exp(m - m_new) (l is).
EX04_ACC_NOT_RESCALED = _EX04.format(body="return m_new, a * l + p.sum(axis=1), acc + p @ v")
# l_new = l + rowsum(p): the old l not rescaled (acc is).
EX04_L_NOT_RESCALED = _EX04.format(body="return m_new, l + p.sum(axis=1), a[:, None] * acc + p @ v")
# Right in every value, but l and acc updated in place (the stub: do not modify the inputs).
EX04_IN_PLACE = _EX04.format(
    body="l *= a; l += p.sum(axis=1); acc *= a[:, None]; acc += p @ v\n    return m_new, l, acc")

# Right in every value, through the dense [N, M] score matrix the stub forbids.
EX05_DENSE = """\
import numpy as np
def sparse_rows_attention(q, k, v, rows, scale=None):
    scale = 1 / np.sqrt(q.shape[1]) if scale is None else scale
    mask = np.zeros((len(q), len(k)), dtype=bool)
    for i, keys in enumerate(rows):
        mask[i, list(keys)] = True
    s = np.where(mask, scale * (q @ k.T), -np.inf)
    m = s.max(axis=1, keepdims=True); m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m); z = e.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        o = np.where(z > 0, (e @ v) / np.where(z > 0, z, 1.0), 0.0)
        lse = np.where(z[:, 0] > 0, m[:, 0] + np.log(np.where(z[:, 0] > 0, z[:, 0], 1.0)), -np.inf)
    return o, lse
"""

# The row term without its weights: D_i = sum_k dp_ik instead of sum_k p_ik dp_ik.
EX07_UNWEIGHTED_ROW_SUM = """\
def softmax_backward(p, dp):
    return p * (dp - dp.sum(axis=1, keepdims=True))
"""
# No row term at all.
EX07_NO_ROW_TERM = """\
def softmax_backward(p, dp):
    return p * dp
"""


def test_broken_stub_rules_are_caught_and_usual_mistakes_get_their_hint(tmp_path):
    r = _plant(tmp_path, {"ex01_masked_softmax": EX01_WRITES_INTO_SCORES,
                          "ex03_bigbird_block_table": EX03_ROW_Q,
                          "ex04_online_softmax_update": EX04_ACC_NOT_RESCALED,
                          "ex05_sparse_rows_attention": EX05_DENSE,
                          "ex07_softmax_backward": EX07_UNWEIGHTED_ROW_SUM})
    out = r.stdout + r.stderr
    # ex01: the rule "do not modify the inputs", named with the first changed entry.
    assert ("ex01, case 'random scores, 60% allowed, row 2 fully masked, row 4 one key': "
            "masked_softmax modified its input `scores`") in out, out
    assert "became -inf" in out and "do not modify the inputs" in out, out
    # ex03: the random-table row of query block q is row q - 1.
    assert "hint: query block 1 took the random blocks of random_table row 1; its own are row 0" \
        in out, out
    # ex04: acc not rescaled by exp(m - m_new), caught from the running state.
    assert "ex04, one update from a running state: acc_new:" in out, out
    assert "hint: acc was not rescaled" in out and "exp(m - m_new) * acc" in out, out
    # ex05: the rule "do not build the [N, M] score matrix", by the call's traced peak.
    assert "ex05, N = M = 4096" in out and "over the 8 MiB allowed" in out, out
    assert "do not build the [N, M] score matrix" in out, out
    peak = float(out.split("sparse_rows_attention allocated ")[1].split(" MiB")[0])
    assert peak >= 128, out  # at least the [4096, 4096] float64 matrix itself
    # ex07: the softmax-backward row sum.
    assert ("hint: the softmax-backward row sum: yours is sum_k dp_ik, without the weights "
            "p_ik") in out, out


def test_overflow_in_place_updates_and_a_missing_row_term_are_named(tmp_path):
    r = _plant(tmp_path, {"ex01_masked_softmax": EX01_NO_MAX,
                          "ex04_online_softmax_update": EX04_IN_PLACE,
                          "ex07_softmax_backward": EX07_NO_ROW_TERM})
    out = r.stdout + r.stderr
    # ex01 without the max: no row of that case is masked, so the hint says overflow.
    assert "ex01, case 'scores of magnitude 1000 (stability)'" in out, out
    assert "(it is not masked) yet its p or lse is not finite" in out, out
    assert "Subtract the row maximum over the allowed entries" in out, out
    assert "a row with no allowed key" not in out, out
    # Its report: the worst element is the NaN, not the finite-only 1.1e-84 beside it.
    assert ("greatest absolute difference nan at index (0, 0, 0, 0) (candidate nan, oracle 1.0)"
            in out), out
    # ex04 right in every value but in place: the stub's rule, named with the input.
    assert ("ex04, one update from the start state: online_softmax_update modified its input "
            "`l`") in out, out
    assert "hint: the softmax-backward row sum: yours is no row term at all" in out, out


def test_l_not_rescaled_gets_its_hint(tmp_path):
    r = _plant(tmp_path, {"ex04_online_softmax_update": EX04_L_NOT_RESCALED})
    out = r.stdout + r.stderr
    assert "ex04, one update from a running state: l_new:" in out, out
    assert "hint: l was not rescaled" in out and "exp(m - m_new) * l" in out, out


def test_a_missing_folder_is_refused():
    r = grade("/nonexistent/hand-ins")
    assert r.returncode == 2 and "not a folder" in r.stdout + r.stderr
