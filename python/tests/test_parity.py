"""CLI/Python parity by construction: every option of `attend`, `check`, `mask`, `info`,
`reach` and `sweep` is a keyword of the matching Python function, and every keyword of that
function is an option — one to one, but for the deliberate exceptions listed below, each
with its reason.

The options are read from the CLI itself (`sparseattn options CMD --json`, which walks the
CLI11 app: cli/cmd_options.cpp), the keywords from `inspect.signature`. A flag becomes a
keyword by the one rule of core/field.h (`spell_flag`): a field's flag by its row of the
spelling table (`--global` -> `global_tokens`, `--pattern-file` -> `heads`), any other flag
with its dashes dropped and inner ones made underscores (`--num-random-blocks` ->
`num_random_blocks`). The table comes from the module (`field_spellings()`), not from a copy
here.

Pattern flags are keywords of the Pattern constructors (a Pattern is what every function
takes), so for each command the keywords are those of its function together with the
constructors'; the sizes of `mask` and `info` are the keywords of Pattern.mask and
Pattern.info.
"""
from __future__ import annotations

import inspect
import json
from typing import Callable, Dict, Iterable, List, Mapping, Set, Tuple

import pytest

import sparseattn as sa
from sparseattn import _sparseattn as _C

P = sa.Pattern

# Every constructor of a Pattern: the pattern flags' keywords. Pattern.from_block_mask is
# left out on purpose: its arrays are the files of `--block-mask DIR`, whose keyword is
# Pattern.selected_blocks(block_mask=...) (a folder, or a BlockMask object).
CONSTRUCTORS: Tuple[Callable, ...] = (P.dense, P.window, P.longformer, P.random, P.chunked,
                                      P.neighborhood, P.bigbird,
                                      P.bigbird_etc, P.hierarchical, P.explicit, P.per_head,
                                      P.preset, P.selected, P.selected_blocks)

# The Python function of each subcommand.
FUNCTIONS: Dict[str, Callable] = {
    "attend": sa.attend,
    "check": sa.check,
    "mask": P.mask,
    "info": P.info,
    "reach": sa.reach,
    "sweep": sa.sweep,
}

# ---- deliberate exceptions ------------------------------------------------------------
# A flag with no keyword of its own, per command (every command: "--help"), and why.
NO_KEYWORD_EVERYWHERE: Dict[str, str] = {
    "--help": "CLI11's help; Python has help() and the docstrings",
}
NO_KEYWORD: Dict[str, Dict[str, str]] = {
    "attend": {
        "--out": "output file; Python returns o",
        "--lse": "output file; Python returns lse",
        "--dq": "output file; Python returns AttendResult.dq",
        "--dk": "output file; Python returns AttendResult.dk",
        "--dv": "output file; Python returns AttendResult.dv",
        "--dq-global": "output file; Python returns AttendGlobalResult.dq_global",
        "--dk-global": "output file; Python returns AttendGlobalResult.dk_global",
        "--dv-global": "output file; Python returns AttendGlobalResult.dv_global",
        "--dsinks": "output file; Python returns AttendSinksResult.dsinks",
        "--dtype": "the files' dtype; Python returns the kernel's own (astype converts)",
    },
    "check": {
        "--format": "output format; a CheckReport has both (.to_dict(), .summary())",
    },
    "mask": {
        "--pattern": "picks the constructor: Pattern.window(...), Pattern.bigbird(...), ...",
        "--out": "output file; Python returns the mask",
        "--mask-dtype": "the file's dtype; Python returns bool (astype(np.uint8) for the other)",
        "--random-table-out": "output file; Pattern.random_table() returns the draws",
    },
    "info": {
        "--pattern": "picks the constructor: Pattern.window(...), Pattern.bigbird(...), ...",
        "--json": "output format; Python returns the dict `info --json` prints",
    },
    "reach": {
        "--json": "output format; Python returns the dict `reach --json` prints",
        "--plot": "figures are the CLI's (gnuplot); Python returns the numbers",
        "--layer-spec": "a file of per-layer patterns; Python's `pattern` takes a list",
        "--from": "Python takes path=(from, to)",
        "--to": "Python takes path=(from, to)",
        "--seq-len-k": "self-attention only: the CLI accepts just seq_len_k = seq_len",
        "--key-padding-mask": "the graph view refuses key padding (the CLI errors on it)",
    },
    "sweep": {
        "--out": "folder of sweep.json, .csv and figures; Python returns a SweepResult",
    },
}

# A flag whose keyword is spelled otherwise than the rule, per command, and why.
RENAMED: Dict[str, Dict[str, Tuple[str, str]]] = {
    "check": {
        "--candidate": ("o", "the candidate output is check's fifth positional argument"),
        "--candidate-lse": ("lse", "the candidate's lse, beside o"),
        "--candidate-dq": ("dq", "the candidate gradients, as attend returns them"),
        "--candidate-dk": ("dk", "the candidate gradients, as attend returns them"),
        "--candidate-dv": ("dv", "the candidate gradients, as attend returns them"),
        "--candidate-dq-global": ("dq_global", "as AttendGlobalResult names it"),
        "--candidate-dk-global": ("dk_global", "as AttendGlobalResult names it"),
        "--candidate-dv-global": ("dv_global", "as AttendGlobalResult names it"),
        "--candidate-dsinks": ("dsinks", "as AttendSinksResult names it"),
    },
    "mask": {"--seq-len": ("seq_len_q", "Python names the query length beside seq_len_k")},
    "info": {"--seq-len": ("seq_len_q", "Python names the query length beside seq_len_k")},
}

# A flag that selects another Python function, per command: (function, its keyword, why).
ELSEWHERE: Dict[str, Dict[str, Tuple[Callable, str, str]]] = {
    "info": {
        "--preset": (sa.preset_info, "preset", "a preset replaces the Pattern"),
        "--layer": (sa.preset_info, "layer", "a layer of a preset: preset_info(layer=L)"),
    },
    "reach": {
        "--preset": (sa.preset_reach, "preset", "a preset replaces the Patterns"),
    },
}

# A keyword of the command's own function that no flag gives, and why.
PYTHON_ONLY: Dict[str, Dict[str, str]] = {
    "reach": {"path": "the CLI's --from and --to (above)"},
}


# ---- the mapping ------------------------------------------------------------------------
def field_table() -> Dict[str, str]:
    """flag -> keyword of every row of core/field.cpp's table (from the module)."""
    return {row["flag"]: row["keyword"] for row in _C.field_spellings()}


def keyword_of(flag: str, table: Mapping[str, str]) -> str:
    """The keyword a flag spells (core/field.h spell_flag)."""
    if flag in table:
        return table[flag]
    return flag.lstrip("-").replace("-", "_")


def keywords_of(functions: Iterable[Callable]) -> Set[str]:
    out: Set[str] = set()
    for f in functions:
        for name, p in inspect.signature(f).parameters.items():
            if name in ("self", "cls") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            out.add(name)
    return out


def parity_problems(flags: List[str], own: Set[str], shared: Set[str], table: Mapping[str, str],
                    no_keyword: Mapping[str, str], renamed: Mapping[str, Tuple[str, str]],
                    python_only: Mapping[str, str]) -> List[str]:
    """What breaks the one-to-one mapping: a flag without its keyword, two flags on one
    keyword, a keyword of the function (`own`) no flag gives, and stale exceptions. `shared`
    are the constructors' keywords (pattern flags)."""
    problems: List[str] = []
    keywords = own | shared
    seen: Dict[str, str] = {}
    for flag in flags:
        if flag in no_keyword:
            continue
        kw = renamed[flag][0] if flag in renamed else keyword_of(flag, table)
        if kw not in keywords:
            problems.append(f"{flag}: no keyword {kw!r}")
        elif kw in seen:
            problems.append(f"{flag}: keyword {kw!r} already taken by {seen[kw]}")
        seen.setdefault(kw, flag)
    for kw in sorted(own - set(seen) - set(python_only)):
        problems.append(f"keyword {kw!r}: no flag gives it")
    for flag in sorted(set(no_keyword) | set(renamed)):
        if flag not in flags:
            problems.append(f"{flag}: listed as an exception but not an option (stale)")
    for kw in sorted(python_only):
        if kw not in own:
            problems.append(f"keyword {kw!r}: listed as Python-only but not a keyword (stale)")
    return problems


@pytest.fixture(scope="module")
def options(cli) -> Dict[str, List[dict]]:
    """Each command's options, from `sparseattn options CMD --json`."""
    return {cmd: json.loads(cli(["options", cmd, "--json"]).stdout) for cmd in FUNCTIONS}


# ---- the test -------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", sorted(FUNCTIONS))
def test_every_option_is_a_keyword(cmd, options):
    flags = [o["flag"] for o in options[cmd]]
    elsewhere = ELSEWHERE.get(cmd, {})
    for flag, (function, kw, _why) in elsewhere.items():
        assert kw in keywords_of([function]), f"{flag}: {function.__name__} has no keyword {kw!r}"
    no_keyword = {**NO_KEYWORD_EVERYWHERE, **NO_KEYWORD.get(cmd, {}),
                  **{flag: why for flag, (_f, _kw, why) in elsewhere.items()}}
    problems = parity_problems(flags, keywords_of([FUNCTIONS[cmd]]), keywords_of(CONSTRUCTORS),
                               field_table(), no_keyword, RENAMED.get(cmd, {}),
                               PYTHON_ONLY.get(cmd, {}))
    assert not problems, f"sparseattn {cmd} vs Python:\n  " + "\n  ".join(problems)


def test_constructor_keywords_are_pattern_flags(options):
    """Every keyword of a Pattern constructor is a flag of some command (the reverse
    direction for the keywords the commands share)."""
    table = field_table()
    given = {keyword_of(o["flag"], table) for opts in options.values() for o in opts}
    missing = sorted(keywords_of(CONSTRUCTORS) - given)
    assert not missing, f"Pattern constructor keywords without a flag: {missing}"


def test_mapping_is_the_library_rule(options):
    """The mapping above is core/field.h spell_flag, flag by flag."""
    table = field_table()
    for opts in options.values():
        for o in opts:
            assert keyword_of(o["flag"], table) == _C.spell_flag(o["flag"], "keyword"), o["flag"]


def test_listing_is_the_cli_definition(cli, options):
    """`options CMD --json` lists what `CMD --help` documents, and refuses an unknown
    command."""
    for cmd, opts in options.items():
        help_text = cli([cmd, "--help"]).stdout
        for o in opts:
            assert o["flag"] in help_text, (cmd, o["flag"])
        assert any(o["flag"] == "--help" for o in opts)
    r = cli(["options", "no-such-command"], check=False)
    assert r.returncode == 2 and "must be a subcommand" in r.stderr


def test_parity_check_can_fail():
    """The check reports what it must: a flag without a keyword, a keyword without a flag,
    two flags on one keyword, stale exceptions; and the table's spellings are used."""
    table = field_table()
    assert keyword_of("--global", table) == "global_tokens"
    assert keyword_of("--pattern-file", table) == "heads"
    assert keyword_of("--num-random-blocks", table) == "num_random_blocks"
    flags = ["--help", "--window", "--num-random-blocks", "--brand-new-flag", "--global"]
    problems = parity_problems(flags, {"window", "orphan"}, {"num_random_blocks"}, table,
                               {"--help": "help", "--gone": "stale"}, {}, {})
    assert "--brand-new-flag: no keyword 'brand_new_flag'" in problems
    assert "--global: no keyword 'global_tokens'" in problems
    assert "keyword 'orphan': no flag gives it" in problems
    assert "--gone: listed as an exception but not an option (stale)" in problems
    dup = parity_problems(["--a", "--b"], {"a"}, set(), table, {}, {"--b": ("a", "same")}, {})
    assert dup == ["--b: keyword 'a' already taken by --a"]
    ok = parity_problems(["--help", "--window"], {"window"}, set(), table, {"--help": "help"},
                         {}, {})
    assert ok == []
