"""docs/python.md's examples run as written: every ```python block, in order, in one
namespace (a block that fails to run, or whose asserts fail, fails this test)."""
from __future__ import annotations

import pathlib
import re

from conftest import ROOT


def python_blocks(path: pathlib.Path):
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def test_docs_python_md_examples_run(tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / "docs" / "python.md")
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/python.md block {i + 1}", "exec"), namespace)
