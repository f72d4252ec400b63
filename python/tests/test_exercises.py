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
    assert "NameError: name 'helper' is not defined" in out and "ex06_reachability.py" in out, out
    assert "test_exercises.py\", line" not in out, "the grader's own frames leaked: " + out


def test_a_missing_folder_is_refused():
    r = grade("/nonexistent/hand-ins")
    assert r.returncode == 2 and "not a folder" in r.stdout + r.stderr
