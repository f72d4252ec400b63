#!/usr/bin/env python3
"""Every reference in the repository points at something in the repository.

Usage:  scripts/check_refs.py [--root DIR]      check every tracked text file (git ls-files)
        scripts/check_refs.py --self-test       check this checker on in-memory examples

A reader has only the repository, so a source or doc file may not cite
  * a document that lives outside it: "SPEC", "STYLE", COMMON.md, a path under /work/;
  * an issue of a tracker: the word "issue" followed by a number, with or without "#";
  * a contract section that is not a heading of docs/contract.md ("contract §9", "§3.7");
    inside docs/contract.md every bare "§n" is checked the same way;
  * a relative Markdown link, a #anchor of a Markdown file, or a repository path
    (`docs/foo.md`, tests/x/y_test.cpp, backticked or not) that does not exist.
And every test file (tests/**/*_test.cpp) names on its first line the contract section
it checks ("// Checks contract §3 ..."), so a reader can go from a test to its rule.
Paper citations ("Longformer §3.1") are not contract citations and are left alone.

Skipped: binary files, *.npy, *.json, *.svg, *.png (data, not prose).
Exit status: 0 when clean; 1 with one "file:line: what" per finding; 2 on usage errors.
Python 3 standard library only (it runs in CI before anything is built).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

CONTRACT = "docs/contract.md"
SKIP_SUFFIXES = (".npy", ".json", ".svg", ".png", ".jpg", ".gif", ".pdf")

# Documents outside the repository, cited by name.
OUTSIDE_DOCS = [
    (re.compile(r"\bSPEC\b"), "cites SPEC, a document outside the repository (cite docs/contract.md: 'contract §n')"),
    (re.compile(r"\bspec(?:\.md)?\s*§", re.IGNORECASE),
     "cites a section of a spec outside the repository (cite 'contract §n')"),
    (re.compile(r"\bSTYLE\b"), "cites STYLE, a document outside the repository (say what is meant instead)"),
    (re.compile(r"\bCOMMON\.md\b"), "cites COMMON.md, a document outside the repository"),
    (re.compile(r"/work/"), "names a path of one machine (/work/...), not of the repository"),
]
ISSUE = re.compile(r"\bissues?\s*#?\s*\d+|\bissue\s+#\w+", re.IGNORECASE)
# "contract §3", "contract §3.2", "contract.md §4", "contract §2-3", "contract §2–§3".
CONTRACT_CITE = re.compile(
    r"\bcontract(?:\.md)?\)?\s*§\s*(\d+(?:\.\d+)*)(?:\s*[-–]\s*§?\s*(\d+(?:\.\d+)*))?",
    re.IGNORECASE)
BARE_SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)")
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# Top-level folders whose paths are checked wherever they appear (backticked or not).
PATH_ROOTS = ("core", "reference", "optimized", "registry", "graph", "cli", "tests", "bench",
              "realdata", "docs", "scripts", "tools", "data", ".ci")
REPO_PATH = re.compile(
    r"(?<![\w./$@{-])((?:" + "|".join(re.escape(r) for r in PATH_ROOTS) + r")/[A-Za-z0-9_.+/-]*)")
BACKTICKED = re.compile(r"`([^`\s]+)`")
PATTERN_CHARS = set("*<>{[$…")
TEST_SUFFIXES = ("_test.cpp", "_test.cu")
TOP_LEVEL_FILES = ("README.md", "CONTRIBUTING.md", "Makefile", "CMakeLists.txt")


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)
    return text.replace(" ", "-")


def md_headings(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced and re.match(r"#{1,6}\s", line):
            out.append(line.lstrip("#").strip())
    return out


def contract_sections(contract_text: str) -> set[str]:
    """'3', '3.1', ... for every heading of the contract that starts with §n."""
    found = set()
    for h in md_headings(contract_text):
        m = re.match(r"§\s*(\d+(?:\.\d+)*)", h)
        if m:
            found.add(m.group(1))
    return found


class Repo:
    """The files a reference may point to: paths (files and their folders) and md anchors."""

    def __init__(self, files: dict[str, str | None]):
        self.files = files  # path -> text (None for binary/skipped files)
        self.dirs = set()
        for path in files:
            parts = path.split("/")
            for k in range(1, len(parts)):
                self.dirs.add("/".join(parts[:k]))
        self._anchors: dict[str, set[str]] = {}

    def exists(self, path: str) -> bool:
        path = os.path.normpath(path).replace(os.sep, "/")
        return path in self.files or path in self.dirs or path == "."

    def anchors(self, path: str) -> set[str] | None:
        text = self.files.get(path)
        if text is None:
            return None
        if path not in self._anchors:
            seen: dict[str, int] = {}
            result = set()
            for h in md_headings(text):
                s = slug(h)
                n = seen.get(s, 0)
                seen[s] = n + 1
                result.add(s if n == 0 else f"{s}-{n}")
            self._anchors[path] = result
        return self._anchors[path]


def clean_path(token: str) -> str | None:
    """A repository path from a token, or None when it is a pattern, not a path."""
    token = re.sub(r":\d+(?::\d+)?$", "", token)  # file:line
    token = token.rstrip(".,;:)")
    if any(c in token for c in "*<>{}[]$…|?"):
        return None
    if token.endswith("/"):
        token = token[:-1]
    return token or None


def check_file(path: str, text: str, repo: Repo, sections: set[str]) -> list[str]:
    problems: list[str] = []
    base = os.path.dirname(path)
    is_contract = path == CONTRACT
    fenced = False
    for lineno, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{lineno}"
        if path.endswith(".md") and line.lstrip().startswith("```"):
            fenced = not fenced
        for rx, why in OUTSIDE_DOCS:
            if rx.search(line):
                problems.append(f"{where}: {why}")
        m = ISSUE.search(line)
        if m:
            problems.append(f"{where}: cites '{m.group(0)}' of an issue tracker; say what it meant "
                            "(the decision, the target) or drop it")
        for m in CONTRACT_CITE.finditer(line):
            for sec in filter(None, m.groups()):
                if sec not in sections:
                    problems.append(f"{where}: cites contract §{sec}, which is not a heading of {CONTRACT}")
        if is_contract:
            for m in BARE_SECTION.finditer(line):
                if m.group(1) not in sections:
                    problems.append(f"{where}: refers to §{m.group(1)}, which is not a heading of this file")
        if path.endswith(".md") and not fenced:
            for m in MD_LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(base, file_part)) if file_part else path
                resolved = resolved.replace(os.sep, "/")
                if file_part and not repo.exists(resolved):
                    problems.append(f"{where}: links to {target}, which does not exist ({resolved})")
                    continue
                if anchor and resolved.endswith(".md"):
                    anchors = repo.anchors(resolved)
                    if anchors is not None and anchor not in anchors:
                        problems.append(f"{where}: links to {target}, but {resolved} has no heading "
                                        f"with anchor #{anchor}")
        seen_here = set()
        backticked = [m.span(1) for m in BACKTICKED.finditer(line)]
        for m in REPO_PATH.finditer(line):
            if line[m.end():m.end() + 1] in PATTERN_CHARS:
                continue  # reference/a*_*.cpp, cli/cmd_<name>.cpp: a pattern of names
            p = clean_path(m.group(1))
            if not p or p in seen_here:
                continue
            quoted = any(a <= m.start() and m.end() <= b for a, b in backticked)
            # Unquoted prose such as "reference/cpu/cuda" or "core/npy:" lists names; a
            # path with a file extension, or any backticked one, must exist.
            if not quoted and "." not in p.rsplit("/", 1)[-1]:
                continue
            seen_here.add(p)
            if not repo.exists(p):
                problems.append(f"{where}: names {p}, which is not in the repository")
        for a, b in backticked:
            p = clean_path(line[a:b])
            if p in TOP_LEVEL_FILES and p not in seen_here and not repo.exists(p):
                problems.append(f"{where}: names {p}, which is not in the repository")
    return problems


def load_repo(root: str) -> dict[str, str | None]:
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    files: dict[str, str | None] = {}
    for path in filter(None, out.split("\0")):
        full = os.path.join(root, path)
        text = None
        if not path.lower().endswith(SKIP_SUFFIXES) and os.path.isfile(full):
            with open(full, "rb") as f:
                raw = f.read()
            if b"\0" not in raw[:8192]:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
        files[path] = text
    return files


# The checkers spell out, in their self-tests, the very references they must flag.
CHECKERS = ("scripts/check_refs.py", "scripts/check_layers.py")


def check_repo(files: dict[str, str | None]) -> list[str]:
    repo = Repo(files)
    contract = files.get(CONTRACT)
    problems = []
    if contract is None:
        problems.append(f"{CONTRACT}:1: missing: every 'contract §n' in the repository refers to it")
    sections = contract_sections(contract or "")
    for path, text in sorted(files.items()):
        if text is None or path in CHECKERS:
            continue
        problems.extend(check_file(path, text, repo, sections))
        # A reader finds, for each test file, the contract section it checks.
        if path.startswith("tests/") and path.endswith(TEST_SUFFIXES):
            first = text.split("\n", 1)[0]
            if not CONTRACT_CITE.search(first):
                problems.append(f"{path}:1: a test file's first line must name the contract "
                                "section it checks, e.g. '// Checks contract §3 (patterns) ...'")
    return problems


def self_test() -> int:
    contract = "# The contract\n## §1 Tensors\n### §1.2 Files\n## §3 Patterns\n### §3.1 Window\nSee §3.1 and §1.\n"
    base = {
        CONTRACT: contract,
        "docs/patterns.md": "# Patterns\n## Decisions the contract leaves open\n",
        "core/check.h": "// ok\n",
        "data/layer0_q.npy": None,
    }
    must_flag = [
        # The bad lines are spelled in pieces so that this file does not itself cite them.
        "// See " + "SPEC" + " §3 for the rule.",
        "// (" + "SPEC" + ".md)",
        "// as the spec §3 says",
        "// the practice of STYLE §8",
        "// see /work/shared/notes.txt",
        "// fixed in " + "issue" + " 12",
        "// issue #7 again",
        "// Issues 3 and 4",
        "// contract §2 defines it",             # no §2 heading
        "// contract §3.2: the window",           # §3.2 missing, §3 exists
        "// Contract §2 at the start of a sentence",
        "// contract §1-2",                       # range end missing
        "// written from contract §1–§4",
        "// the layout of docs/nonexistent.md",
        "// tests/reference/gone_test.cpp checks it",
        "// `core/missing.h`",
        "// registry/kernels.def lists them",
        "// `tests/fuzz/` holds them",
    ]
    must_flag_md = [
        "[the contract](contract.md#9-nothing)",  # bad anchor
        "[gone](../docs/gone.md)",                # relative link to a missing file
        "[x](missing/)",
        "`CONTRIBUTING.md`",                      # top-level file, absent here
    ]
    must_pass = [
        "// contract §3 (patterns) and contract §1.2; contract §3.1.",
        "// contract §1-3 is fine when every end exists: contract §1–§3",
        "// Beltagy et al. 2020, §3.1 (a paper's section, not the contract's)",
        "// Zaheer et al. 2020 §2.7",
        "// #include \"core/check.h\" and `docs/patterns.md`, docs/ and `data/`",
        "// reference/a*_*.cpp and tests/<module>/ are patterns, not paths",
        "// build/sparseattn and ${PROJECT_SOURCE_DIR}/cli/x.cpp and https://x.org/docs/a.md",
        "// PatternSpec spec; a SPEC_LIKE identifier; the spec says; tissue 5",
        "// core/check.h:12 names a line; core/npy: the module; reference/cpu/cuda targets",
        "// docs/figures/reach_*.svg and cli/cmd_<name>.cpp and `reference/approx/nystrom.{h,cpp}`",
    ]
    must_pass_md = [
        "[contract §3](contract.md#3-patterns), [§3.1](contract.md#31-window)",
        "[patterns](patterns.md#decisions-the-contract-leaves-open) [web](https://example.org/a.md)",
        "[top](#patterns) [data](../data/layer0_q.npy)",
        "```\n[not a link](inside/a/fence.md)\n```",
    ]
    failures = 0

    def run(files):
        return check_repo(files)

    for line in must_flag:
        got = run({**base, "core/x.cpp": line + "\n"})
        if not any(g.startswith("core/x.cpp:1:") for g in got):
            print(f"self-test FAILED: not flagged: {line!r}")
            failures += 1
    for line in must_flag_md:
        got = run({**base, "docs/x.md": "# Patterns\n" + line + "\n"})
        if not any(g.startswith("docs/x.md:") for g in got):
            print(f"self-test FAILED: not flagged (md): {line!r}")
            failures += 1
    for line in must_pass:
        got = run({**base, "core/x.cpp": line + "\n"})
        if got:
            print(f"self-test FAILED: flagged {line!r}: {got}")
            failures += 1
    for line in must_pass_md:
        got = run({**base, "docs/x.md": "# Patterns\n" + line + "\n"})
        if got:
            print(f"self-test FAILED: flagged (md) {line!r}: {got}")
            failures += 1
    # A bare § in the contract itself must name one of its headings.
    got = run({**base, CONTRACT: contract + "As §5 says.\n"})
    if not any("§5" in g for g in got):
        print("self-test FAILED: a bare §5 inside the contract was not flagged")
        failures += 1
    got = run({k: v for k, v in base.items() if k != CONTRACT})
    if not got:
        print("self-test FAILED: a missing docs/contract.md was not flagged")
        failures += 1
    # Test files name their section on the first line.
    got = run({**base, "tests/core/x_test.cpp": "// Checks the checker.\n// contract §1 here is too late\n"})
    if not any(g.startswith("tests/core/x_test.cpp:1:") for g in got):
        print("self-test FAILED: a test file without a contract section on line 1 was not flagged")
        failures += 1
    got = run({**base, "tests/core/x_test.cpp": "// Checks contract §1.2 (files).\n",
               "tests/core/helper.h": "// no section needed in a helper\n"})
    if got:
        print(f"self-test FAILED: a test file naming its section was flagged: {got}")
        failures += 1
    # Binary and data files are not read.
    got = run({**base, "data/x.json": None})
    if got:
        print(f"self-test FAILED: a skipped file was checked: {got}")
        failures += 1
    total = len(must_flag) + len(must_flag_md) + len(must_pass) + len(must_pass_md) + 5
    if failures:
        print(f"check_refs self-test: {failures} of {total} cases failed")
        return 1
    print(f"check_refs self-test: {total} cases pass")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--self-test", action="store_true", help="check the checker, then exit")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    files = load_repo(args.root)
    problems = check_repo(files)
    for p in problems:
        print(p)
    checked = sum(1 for t in files.values() if t is not None)
    if problems:
        print(f"check_refs: {len(problems)} reference(s) to things outside the repository "
              f"(in {checked} files)", file=sys.stderr)
        return 1
    print(f"check_refs: {checked} files, every reference resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
