"""The model presets (models/*.json, contract §6.4) against docs/models.md and their sources.

Two checks, each able to fail on its own:

* docs/models.md's preset table quotes every preset's parameters and the configuration
  fields they come from; each row must equal what the JSON file holds (a JSON edit that the
  page does not follow, or the reverse, fails).
* each preset's pattern parameters must follow from the quoted source fields by the rule
  docs/models.md states in words (gpt-oss's ``sliding_window`` 128 is a causal window 127,
  ModernBERT's ``local_attention`` 128 is 64 each side, ...): an off-by-one fails.
"""
from __future__ import annotations

import json
import math
import pathlib
import re
from typing import Dict, List

from conftest import ROOT

MODELS = ROOT / "models"
DOC = ROOT / "docs" / "models.md"
REQUIRED = ["mistral-7b-v0.1", "gemma-2-9b", "gemma-3-12b", "gpt-oss-20b", "modernbert-base",
            "llama-4-scout", "phi-3-small", "longformer-base-4096", "bigbird-roberta-base",
            "deepseek-v3.2"]


def load(name: str) -> dict:
    """models/<name>.json as a dict."""
    return json.loads((MODELS / f"{name}.json").read_text())


def pattern_text(t: dict) -> str:
    """One layer type's pattern as docs/models.md's table writes it."""
    p = t.get("pattern")
    if p is None:
        params = ", ".join(f"{k} {json.dumps(v)}" for k, v in t.get("params", {}).items())
        return f"needs {t['missing_kind']} ({params})"
    kind = p["pattern"]
    causal = " causal" if p.get("causal") else ""
    if kind == "dense":
        return "dense" + causal
    if kind == "window":
        return f"window {p['window']}{causal}"
    if kind == "chunked":
        return f"chunked {p['chunk_size']}{causal}"
    if kind == "longformer":
        return f"longformer window {p['window']} global {p['global']}"
    if kind == "bigbird":
        seed = ", seed = layer" if t.get("seed_per_layer") else ""
        return f"bigbird block {p['block_size']} random {p['num_random_blocks']}{seed}"
    raise AssertionError(f"no table text for pattern kind {kind}")


def row_cells(m: dict) -> List[str]:
    """The table row docs/models.md must hold for preset `m`."""
    order: List[str] = []
    for s in m["schedule"]:
        if s not in order:
            order.append(s)
    types = "; ".join(f"{s}: {pattern_text(m['layer_types'][s])}" for s in order)
    fields = ", ".join(f"`{k}` {json.dumps(v)}" for k, v in m["fields"].items())
    softcap = "none" if m["softcap"] is None else json.dumps(m["softcap"])
    return [m["name"], str(m["num_layers"]), str(m["num_heads"]), str(m["num_kv_heads"]),
            str(m["head_dim"]), f"{m['scale']:.6g}", softcap, "yes" if m["sinks"] else "no",
            " ".join(m["schedule"]), types, fields]


def doc_rows() -> Dict[str, List[str]]:
    """docs/models.md's preset table: name -> cells (the table under '## Presets')."""
    text = DOC.read_text().split("## Presets", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith("| preset") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        rows[cells[0].strip("`")] = [cells[0].strip("`")] + cells[1:]
    return rows


def test_every_required_preset_exists_and_is_in_the_table():
    names = sorted(p.stem for p in MODELS.glob("*.json"))
    for n in REQUIRED:
        assert n in names, f"models/{n}.json missing"
    assert sorted(doc_rows()) == names


def test_table_quotes_each_preset_exactly():
    rows = doc_rows()
    for p in sorted(MODELS.glob("*.json")):
        m = load(p.stem)
        assert rows[m["name"]] == row_cells(m), f"docs/models.md row of {m['name']}"


def test_every_preset_records_source_and_decisions():
    for p in sorted(MODELS.glob("*.json")):
        m = load(p.stem)
        assert m["name"] == p.stem
        assert "config.json" in m["source"] and m["decisions"], m["name"]
        for s in m["schedule"]:
            assert s in m["layer_types"], (m["name"], s)
        for t in m["layer_types"].values():
            assert (t.get("pattern") is None) == ("missing_kind" in t), m["name"]


def window(m: dict, t: str) -> int:
    return m["layer_types"][t]["pattern"]["window"]


def test_parameters_follow_from_the_quoted_source_fields():
    """The rules docs/models.md states, one assertion each (hand-derived, not generated)."""
    for p in sorted(MODELS.glob("*.json")):
        m, f = load(p.stem), load(p.stem)["fields"]
        assert m["num_layers"] == f["num_hidden_layers"], m["name"]
        assert m["num_heads"] == f["num_attention_heads"], m["name"]
        if "num_key_value_heads" in f and m["name"] != "deepseek-v3.2":
            assert m["num_kv_heads"] == f["num_key_value_heads"], m["name"]
        if "hidden_size" in f:
            assert m["head_dim"] == f["hidden_size"] // f["num_attention_heads"], m["name"]
        if "head_dim" in f:
            assert m["head_dim"] == f["head_dim"], m["name"]

    m = load("llama-4-scout")  # query i sees its own attention_chunk_size chunk, up to i
    assert m["layer_types"]["chunked"]["pattern"] == {
        "pattern": "chunked", "chunk_size": m["fields"]["attention_chunk_size"], "causal": True}
    assert m["schedule"] == ["chunked"] * (m["fields"]["no_rope_layer_interval"] - 1) + ["global"]

    m = load("mistral-7b-v0.1")  # reference: keys i - W .. i
    assert window(m, "sliding") == m["fields"]["sliding_window"]
    assert math.isclose(m["scale"], m["head_dim"] ** -0.5)
    for name in ("gemma-2-9b", "gemma-3-12b"):  # reference: |i - j| <= W - 1
        m = load(name)
        assert window(m, "local") == m["fields"]["sliding_window"] - 1
        assert m["layer_types"]["global"]["pattern"] == {"pattern": "dense", "causal": True}
        assert math.isclose(m["scale"], m["fields"]["query_pre_attn_scalar"] ** -0.5)
    assert load("gemma-2-9b")["softcap"] == load("gemma-2-9b")["fields"]["attn_logit_softcapping"]
    assert load("gemma-2-9b")["schedule"] == ["local", "global"]
    m = load("gemma-3-12b")  # (layer_idx + 1) % sliding_window_pattern == 0 is global
    assert m["schedule"] == ["local"] * (m["fields"]["sliding_window_pattern"] - 1) + ["global"]
    assert m["softcap"] is None
    m = load("gpt-oss-20b")  # keys j <= i - 128 dropped: i - 127 .. i
    assert window(m, "sliding") == m["fields"]["sliding_window"] - 1
    assert m["schedule"] == ["sliding", "full"] and m["sinks"] is True
    assert math.isclose(m["scale"], m["head_dim"] ** -0.5)
    m = load("modernbert-base")  # |i - j| <= local_attention // 2; layer % 3 == 0 global
    assert window(m, "local") == m["fields"]["local_attention"] // 2
    assert m["causal"] is False and "causal" not in m["layer_types"]["local"]["pattern"]
    assert m["schedule"] == ["global"] + ["local"] * (m["fields"]["global_attn_every_n_layers"] - 1)
    m = load("longformer-base-4096")  # one_sided_attn_window_size = attention_window // 2
    assert window(m, "local") == m["fields"]["attention_window"] // 2
    m = load("bigbird-roberta-base")
    p = m["layer_types"]["itc"]["pattern"]
    assert (p["block_size"], p["num_random_blocks"]) == (m["fields"]["block_size"],
                                                         m["fields"]["num_random_blocks"])
    m = load("phi-3-small")  # muP: scale = mup_attn_multiplier / head_dim
    assert math.isclose(m["scale"], m["fields"]["mup_attn_multiplier"] / m["head_dim"])
    bs = m["layer_types"]["blocksparse"]["params"]
    assert (bs["block_size"], bs["num_local_blocks"], bs["vert_stride"]) == (
        m["fields"]["blocksparse_block_size"], m["fields"]["blocksparse_num_local_blocks"],
        m["fields"]["blocksparse_vert_stride"])
    assert m["schedule"] == ["blocksparse"] * (m["fields"]["dense_attention_every_n_layers"] - 1) + ["dense"]
    m = load("llama-4-scout")  # (l + 1) % no_rope_layer_interval == 0 is global (NoPE)
    assert m["layer_types"]["global"]["pattern"] == {"pattern": "dense", "causal": True}
    m = load("deepseek-v3.2")
    assert m["head_dim"] == m["fields"]["qk_nope_head_dim"] + m["fields"]["qk_rope_head_dim"]
    assert math.isclose(m["scale"], m["head_dim"] ** -0.5)
    assert m["layer_types"]["selected"]["params"]["index_topk"] == m["fields"]["index_topk"]


if __name__ == "__main__":  # prints the table rows for docs/models.md
    for p in sorted(MODELS.glob("*.json")):
        print("| " + " | ".join(f"`{c}`" if i == 0 else c for i, c in enumerate(row_cells(load(p.stem)))) + " |")
