"""The notebooks' first code cell finds the repository or stops with the sentence of its
first (markdown) cell: a notebook copied out of the repository says what to set
(SPARSEATTN_ROOT) instead of failing with ModuleNotFoundError, then a missing data path.
Executing the notebooks themselves is scripts/run_notebooks.py's job (`make notebooks`)."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))


def cells(path: pathlib.Path) -> list:
    """(kind, source) of each jupytext percent-format cell, the header dropped."""
    out, kind, lines = [], None, []
    for line in path.read_text().splitlines():
        if line.startswith("# %%"):
            if kind:
                out.append((kind, "\n".join(lines)))
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        elif kind:
            lines.append(line)
    out.append((kind, "\n".join(lines)))
    return out


def setup_sentence(code: str) -> str:
    m = re.search(r'SETUP = \(((?:\s*"[^"]*")+)\)', code)
    assert m, "no SETUP sentence in the first code cell"
    return "".join(re.findall(r'"([^"]*)"', m.group(1)))


def first_code_cell(path: pathlib.Path) -> str:
    return next(src for kind, src in cells(path) if kind == "code")


def run_cell(code: str, cwd: pathlib.Path, root=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARSEATTN_ROOT", "PYTHONPATH")}
    env["MPLBACKEND"] = "Agg"
    if root is not None:
        env["SPARSEATTN_ROOT"] = str(root)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_every_notebook_is_in_the_readme_table_and_every_row_is_a_notebook():
    readme = (NOTEBOOKS[0].parent / "README.md").read_text()
    listed = re.findall(r"^\| `(\d\d_\w+\.py)` \|", readme, flags=re.M)
    assert sorted(listed) == sorted(p.name for p in NOTEBOOKS), (listed, NOTEBOOKS)
    assert len(NOTEBOOKS) >= 12, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_cell_says_what_the_code_cell_fails_with(path):
    kind, text = cells(path)[0]
    assert kind == "markdown", path
    prose = " ".join(line.lstrip("# ").strip() for line in text.splitlines())
    prose = re.sub(r"\s+", " ", prose)
    sentence = setup_sentence(first_code_cell(path))
    assert "SPARSEATTN_ROOT" in sentence, sentence
    assert sentence in prose, (sentence, prose)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_copy_outside_the_repository_stops_with_that_sentence_and_runs_with_the_root_set(
        path, tmp_path):
    code = first_code_cell(path)
    (tmp_path / path.name).write_text(path.read_text())  # the copy, in a folder of its own
    r = run_cell(code, tmp_path)
    err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    assert r.returncode == 1, r.stdout + r.stderr
    assert err == (f"FileNotFoundError: {tmp_path} is not the sparseattn repository. "
                   f"{setup_sentence(code)}"), r.stderr
    r = run_cell(code, tmp_path, root=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_checkout_without_the_module_built_says_make_python(tmp_path):
    fake = tmp_path / "checkout"
    (fake / "python" / "sparseattn").mkdir(parents=True)
    (fake / "python" / "sparseattn" / "__init__.py").write_text(
        "from . import _sparseattn_not_built  # noqa: F401\n")
    code = first_code_cell(ROOT / "notebooks" / "02_windows.py")
    r = run_cell(code, tmp_path, root=fake)
    assert r.returncode == 1, r.stdout + r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ") and f"run `make python` in {fake}." in last, last
    assert last.endswith(setup_sentence(code)), last
