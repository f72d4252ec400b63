"""Every figure in docs/ is drawn by `make figures` or `make plots`: docs/figures/README.md
names each image file with the program that draws it and the make target that runs it, and
this test holds the three together (no image unlisted, no listed image missing, the
program named writes that file's name, the target named builds that program)."""
from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"
IMAGE = (".png", ".svg", ".jpg", ".jpeg", ".gif")


def rows():
    """(image names, drawing source, make target) per table row of docs/figures/README.md."""
    out = []
    for line in (FIGURES / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        names = set()
        for tok in re.findall(r"`([^`]+)`", cells[0]):
            if tok.endswith(".md") or tok.startswith("."):
                continue
            m = re.match(r"(.+)\.\{(\w+),(\w+)\}$", tok)
            if m:
                names |= {f"{m.group(1)}.{m.group(2)}", f"{m.group(1)}.{m.group(3)}"}
            elif tok.endswith(IMAGE):
                names.add(tok)
            else:  # a bare stem: "(each .png and .svg)"
                names |= {tok + ".png", tok + ".svg"}
        source = re.findall(r"`([^`]+\.cpp)`", cells[1])
        targets = re.findall(r"`make ([\w-]+)`", cells[2])
        out.append((names, source, targets))
    return out


def test_every_image_in_docs_is_listed_and_every_listed_image_exists():
    listed = set().union(*(names for names, _, _ in rows()))
    # Names relative to docs/figures/: a sweep's figures keep their own folder there.
    on_disk = {p.relative_to(FIGURES).as_posix() for p in FIGURES.rglob("*") if p.suffix in IMAGE}
    elsewhere = [p for p in (ROOT / "docs").rglob("*")
                 if p.suffix in IMAGE and FIGURES not in p.parents]
    assert not elsewhere, f"images outside docs/figures/: {elsewhere}"
    assert on_disk - listed == set(), f"not listed in docs/figures/README.md: {on_disk - listed}"
    assert listed - on_disk == set(), f"listed but missing: {listed - on_disk}"


def test_each_listed_program_writes_its_files_and_its_target_runs_it():
    makefile = (ROOT / "Makefile").read_text()
    recipes = {m.group(1): m.group(2) for m in
               re.finditer(r"^([\w-]+):[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M)}
    for names, sources, targets in rows():
        assert sources and targets, (names, sources, targets)
        text = "".join((ROOT / s).read_text() for s in sources)
        for name in names:
            stem = pathlib.PurePosixPath(name).stem
            kind = stem[len("pattern_"):] if stem.startswith("pattern_") else None
            assert stem in text or (kind and f'"{kind}"' in text), (name, sources)
        program = pathlib.Path(sources[0]).stem
        if program == "report":  # realdata/report.cpp runs inside `sparseattn demo-real`
            program = "demo-real"
        assert any(program in recipes.get(t, "") or
                   any(program in recipes.get(dep, "") for dep in
                       re.findall(r"^" + re.escape(t) + r":([^\n]*)", makefile, re.M)[0].split())
                   for t in targets), (program, targets)
