"""docs/python.md's examples run as written: every ```python block, in order, in one
namespace (a block that fails to run, or whose asserts fail, fails this test), and the
output the page shows is what they print."""
from __future__ import annotations

import contextlib
import io
import pathlib
import re

from conftest import ROOT

DOC = ROOT / "docs" / "python.md"


def python_blocks(path: pathlib.Path):
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def test_docs_python_md_examples_run(tmp_path, monkeypatch):
    blocks = python_blocks(DOC)
    assert len(blocks) >= 6
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for i, code in enumerate(blocks):
            exec(compile(code, f"docs/python.md block {i + 1}", "exec"), namespace)
    printed = out.getvalue()
    # The failure message the page shows: its counts and location, exactly.
    shown = DOC.read_text()
    for fact in ["o: mismatched elements 6399 / 6400 (100.0%)",
                 "worst element: batch 0, head 2, query row 40",
                 "o fails at (batch, head) 0,2: query rows 0-99",
                 "probable cause: window one wider (candidate matches --window 3)",
                 "candidate does NOT match the float64 oracle a1_dense_masked",
                 # checking your gradients: the missing rowsum(dO * O) term
                 "a1_dense_masked / b1_dense_masked_grad",
                 "dq: mismatched elements 640 / 640 (100.0%)",
                 "dk: mismatched elements 640 / 640 (100.0%)",
                 "dk fails at (batch, head) 0,0: key rows 0-39",
                 "probable cause: the softmax Jacobian's row sum is missing"]:
        assert fact in shown and fact in printed, fact
