#!/usr/bin/env python3
"""Writes the stored peer fixtures: HuggingFace BigBird and Longformer attention, captured.

Run by hand, never by CI (CI only reads the committed fixtures):

    python3 tools/make_peer_fixtures.py --venv /tmp/peer-venv     # installs, then re-runs itself
    python3 tools/make_peer_fixtures.py                           # torch + transformers importable

`--venv DIR` creates a throwaway virtual environment in DIR, `pip install torch
transformers numpy` into it (tools/peer_venv.py, shared with tools/peers_bench.py; PyPI
only; the plain torch wheel for Linux pulls its CUDA libraries too: about 5.6 GB
installed, 1.5 minutes here), and runs this script again with that interpreter. Nothing is downloaded from a model hub (HF_HUB_OFFLINE=1): every
layer is built from a config with random weights.

What it captures, per case (all tensors in sparseattn's layout `[B, H, L, d]`, float32,
exactly as the library computed them; contract §1.1):
  q, k, v    the outputs of the layer's query/key/value projections (forward hooks, cloned
             before HF scales q in place), unscaled: sparseattn's default scale 1/sqrt(d)
             then applies.
  o          the self-attention output before the output dense layer.
  BigBird:   rand_attn [H, n_b - 2, r] (int64) as HF used it for this call (recorded by
             wrapping `_create_rand_mask_from_inputs`), key_padding_mask [B, L] (uint8, 1 = real).
  Longformer: global_mask [B, L] (uint8, 1 = global), q_global/k_global/v_global (the
             global projections applied to every token; HF uses q_global's global rows
             only), key_padding_mask [B, L].
and a manifest.json naming the library versions, every config, seed and the convention
each fixture shows. Sizes are kept small (a few hundred KB in all).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DEFAULT = os.path.join(HERE, "..", "tests", "fixtures", "peers")


def save(out, name, array, manifest_files):
    import numpy as np
    path = os.path.join(out, name + ".npy")
    tmp = path + ".tmp.npy"
    np.save(tmp, np.ascontiguousarray(array))
    os.replace(tmp, path)  # atomic: a fixture appears complete or not at all
    manifest_files[name + ".npy"] = {"shape": list(array.shape), "dtype": str(array.dtype)}


def bhld(x, heads):
    """[B, L, H*d] -> [B, H, L, d]."""
    b, l, e = x.shape
    return x.reshape(b, l, heads, e // heads).transpose(0, 2, 1, 3)


def bigbird_case(out, name, seq_len, train, batch, pad_tail, max_pos, seed, files, cases):
    import numpy as np
    import torch
    from transformers import BigBirdConfig, BigBirdModel
    from transformers.models.big_bird import modeling_big_bird as mbb

    heads, head_dim, block, r = 2, 4, 16, 3
    cfg = BigBirdConfig(vocab_size=64, hidden_size=heads * head_dim, num_hidden_layers=1,
                        num_attention_heads=heads, intermediate_size=16,
                        max_position_embeddings=max_pos, attention_type="block_sparse",
                        block_size=block, num_random_blocks=r, use_bias=True,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(seed)
    model = BigBirdModel(cfg, add_pooling_layer=False)
    model.train(train)
    attn = model.encoder.layer[0].attention.self
    assert type(attn).__name__ == "BigBirdBlockSparseAttention", type(attn).__name__

    got = {}
    def grab(key):
        return lambda mod, inp, outp: got.__setitem__(key, outp.detach().clone())
    hooks = [attn.query.register_forward_hook(grab("q")),
             attn.key.register_forward_hook(grab("k")),
             attn.value.register_forward_hook(grab("v")),
             attn.register_forward_hook(lambda m, i, o: got.__setitem__("o", o[0].detach().clone()))]
    original = mbb.BigBirdBlockSparseAttention._create_rand_mask_from_inputs
    def recording(*args):
        got["rand_attn"] = args[2].detach().clone()  # [B, H, n_b - 2, r]
        return original(*args)
    mbb.BigBirdBlockSparseAttention._create_rand_mask_from_inputs = staticmethod(recording)
    try:
        ids = torch.randint(1, 64, (batch, seq_len), generator=torch.Generator().manual_seed(seed + 1))
        mask = torch.ones(batch, seq_len, dtype=torch.long)
        if pad_tail:
            mask[-1, seq_len - pad_tail:] = 0
        with torch.no_grad():
            model(input_ids=ids, attention_mask=mask)
    finally:
        mbb.BigBirdBlockSparseAttention._create_rand_mask_from_inputs = staticmethod(original)
        for h in hooks:
            h.remove()

    rand = got["rand_attn"].numpy().astype(np.int64)
    assert (rand == rand[:1]).all(), "rand_attn differs between batch elements"
    table = rand[0]  # [H, n_b - 2, r]
    nb = seq_len // block
    # Repeats, measured: a listed key block counted more than once in a middle row.
    repeats = 0
    for h in range(heads):
        for row in range(nb - 2):
            qb = row + 1  # HF's list: blocks 0, qb-1, qb, qb+1, nb-1 (once each) + random
            listed = sorted({0, qb - 1, qb, qb + 1, nb - 1}) + list(table[h, row])
            repeats += len(listed) - len(set(listed))
    save(out, name + "_q", bhld(got["q"].numpy(), heads), files)
    save(out, name + "_k", bhld(got["k"].numpy(), heads), files)
    save(out, name + "_v", bhld(got["v"].numpy(), heads), files)
    save(out, name + "_o", bhld(got["o"].numpy(), heads), files)
    save(out, name + "_rand_attn", table, files)
    save(out, name + "_key_padding_mask", mask.numpy().astype(np.uint8), files)
    cases[name] = {
        "peer": "transformers BigBirdModel, 1 layer, attention_type=block_sparse",
        "mode": "train" if train else "eval",
        "config": {"hidden_size": cfg.hidden_size, "num_attention_heads": heads,
                   "block_size": block, "num_random_blocks": r,
                   "max_position_embeddings": max_pos, "dropout": 0.0},
        "seq_len": seq_len, "batch": batch, "padded_tail_of_last_batch_element": pad_tail,
        "torch_seed": seed, "numpy_seed_used_by_hf": attn.seed if train else None,
        "random_blocks_min_max": [int(table.min()), int(table.max())],
        "repeated_listings_in_middle_rows": int(repeats),
    }


def longformer_case(out, name, seq_len, window_total, globals_per_batch, pad_tail, seed,
                    files, cases):
    import numpy as np
    import torch
    from transformers import LongformerConfig, LongformerModel

    heads, head_dim = 2, 4
    batch = len(globals_per_batch)
    cfg = LongformerConfig(vocab_size=64, hidden_size=heads * head_dim, num_hidden_layers=1,
                           num_attention_heads=heads, intermediate_size=16,
                           max_position_embeddings=seq_len + 4, attention_window=[window_total],
                           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                           pad_token_id=0)
    torch.manual_seed(seed)
    model = LongformerModel(cfg, add_pooling_layer=False).eval()
    attn = model.encoder.layer[0].attention.self
    got = {}
    def grab(key):  # HF's projections see [L, B, E]; clone before q is scaled in place
        return lambda mod, inp, outp: got.__setitem__(key, outp.detach().clone().transpose(0, 1))
    hooks = [attn.query.register_forward_hook(grab("q")),
             attn.key.register_forward_hook(grab("k")),
             attn.value.register_forward_hook(grab("v")),
             attn.register_forward_pre_hook(
                 lambda m, args, kwargs: got.__setitem__(
                     "hidden", (args[0] if args else kwargs["hidden_states"]).detach().clone()),
                 with_kwargs=True),
             attn.register_forward_hook(lambda m, i, o: got.__setitem__("o", o[0].detach().clone()))]
    ids = torch.randint(1, 64, (batch, seq_len), generator=torch.Generator().manual_seed(seed + 1))
    mask = torch.ones(batch, seq_len, dtype=torch.long)
    if pad_tail:
        mask[-1, seq_len - pad_tail:] = 0
        ids[-1, seq_len - pad_tail:] = 0
    gmask = torch.zeros(batch, seq_len, dtype=torch.long)
    for b, positions in enumerate(globals_per_batch):
        gmask[b, positions] = 1
    try:
        with torch.no_grad():
            model(input_ids=ids, attention_mask=mask, global_attention_mask=gmask)
            hidden = got["hidden"]
            qg, kg, vg = attn.query_global(hidden), attn.key_global(hidden), attn.value_global(hidden)
    finally:
        for h in hooks:
            h.remove()
    for key, t in (("q", got["q"]), ("k", got["k"]), ("v", got["v"]), ("o", got["o"]),
                   ("q_global", qg), ("k_global", kg), ("v_global", vg)):
        save(out, name + "_" + key, bhld(t.numpy(), heads), files)
    save(out, name + "_global_mask", gmask.numpy().astype(np.uint8), files)
    save(out, name + "_key_padding_mask", mask.numpy().astype(np.uint8), files)
    cases[name] = {
        "peer": "transformers LongformerModel, 1 layer, LongformerSelfAttention",
        "mode": "eval",
        "config": {"hidden_size": cfg.hidden_size, "num_attention_heads": heads,
                   "attention_window": window_total,
                   "one_sided_window": window_total // 2, "dropout": 0.0},
        "seq_len": seq_len, "batch": batch, "global_positions_per_batch": globals_per_batch,
        "padded_tail_of_last_batch_element": pad_tail, "torch_seed": seed,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", help="create this virtual environment, install the peers, re-run in it")
    ap.add_argument("--out", default=OUT_DEFAULT, help="fixture folder (default tests/fixtures/peers)")
    args = ap.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    if args.venv:
        from peer_venv import run_in_venv  # tools/peer_venv.py, beside this script
        sys.exit(run_in_venv(args.venv, __file__, ["--out", args.out]))

    import numpy as np
    import torch
    import transformers
    torch.set_num_threads(1)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    files, cases = {}, {}
    # BigBird. 256 tokens = 16 blocks of 16: HF draws through its "plan" path
    # (_bigbird_block_rand_mask_with_head), no repeats in train mode.
    bigbird_case(out, "bigbird_train_256", 256, True, 2, 40, 512, 0, files, cases)
    # Eval mode: every random index is 0, so block 0 is listed 1 + r times per middle row.
    bigbird_case(out, "bigbird_eval_256", 256, False, 2, 40, 512, 1, files, cases)
    # 1024 tokens (one of HF's "old plan" lengths) with max_position_embeddings 4096:
    # draws confined to the first 1024 tokens, and may list the last (global) block.
    bigbird_case(out, "bigbird_train_1024", 1024, True, 1, 0, 4096, 2, files, cases)
    # Longformer: attention_window 8 (one-sided 4), per-batch globals, padding.
    longformer_case(out, "longformer_64", 64, 8, [[0, 17], [0, 5, 40]], 10, 3, files, cases)

    manifest = {
        "written_by": "tools/make_peer_fixtures.py",
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__, "numpy": np.__version__},
        "layout": "[B, H, L, d] float32 (row-major); masks [B, L] uint8; rand_attn [H, n_b-2, r] int64",
        "q_is_unscaled": True,
        "cases": cases,
        "files": files,
    }
    tmp = os.path.join(out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(out, "manifest.json"))
    print(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
