#!/usr/bin/env python3
"""`make peers-bench`: sparseattn's CPU kernels side by side with PyTorch and HuggingFace
on identical in-memory inputs, kernel time only, interleaved rounds (docs/benchmarks.md,
"Peers"). Run by hand, never by CI:

    python3 tools/peers_bench.py --venv build/peers-venv   # installs the peers, re-runs itself
    PYTHONPATH=python python3 tools/peers_bench.py         # torch + transformers importable

`--venv DIR` creates a throwaway virtual environment with torch, transformers and numpy
(tools/peer_venv.py, shared with tools/make_peer_fixtures.py; about 5.6 GB) and runs this
script again there. sparseattn is the in-place module `make python` builds
(python/sparseattn/); the environment uses this interpreter, so it imports there.

Inputs: q, k, v float32 [batch, heads, seq_len, head_dim] (default 1, 12, 4096, 64), one
seeded standard-normal draw shared by every case; torch.from_numpy views the same memory
sparseattn reads. A peer that wants another layout gets a copy in it, made once, untimed.
Scale 1/sqrt(head_dim) on both sides, no padding, no dropout, torch.inference_mode().

Cases, and exactly what is timed (one call each, wall clock, time.perf_counter around the
peer's call; sparseattn.time_impl around the registry kernel's `run`, prepared inputs):
  dense      torch.nn.functional.scaled_dot_product_attention(q, k, v) on [B, H, L, d]
             vs cpu_k01_dense_flash.
  window     SDPA with attn_mask = the boolean band |i - j| <= w (w = 256 one-sided; True =
             take part; [L, L], built once) vs cpu_k02_window_band (Pattern.window(w)).
  longformer HF LongformerSelfAttention's local path (attention_window = 2w = 512, i.e.
             one-sided w, HF's `one_sided_attn_window_size`) from the projected q, k, v in
             HF's [L, B, H·d] layout: q / sqrt(d) (HF divides in place; here out of place,
             the input is reused), `_sliding_chunks_query_key_matmul`, `+= diagonal_mask`
             (HF builds it from attention_mask each forward; here once, untimed: it is a
             function of the padding only), softmax in float32, the padded-row masked_fill,
             `_sliding_chunks_matmul_attn_probs_value`. Not timed: the projections, global
             attention (none), the output transpose and reshape. Vs cpu_k02_window_band.
  bigbird    HF BigBirdBlockSparseAttention.bigbird_block_sparse_attention (block 64, 3
             random blocks, train mode so that the random blocks are real draws, seed 0)
             on projected q, k, v in HF's layout, with the masks BigBirdModel builds
             (create_masks_for_block_sparse_attn, all-ones attention_mask) made once,
             untimed. The random table is drawn by HF once; the timed calls reuse it (HF's
             per-call numpy draw, _bigbird_block_rand_mask*, is replaced by a lookup of the
             same table: drawing a pattern is not attention, and sparseattn's is untimed
             too). Timed, as HF 5.x runs it: the gathers, the five parts' matmuls and
             softmaxes, the random-block mask, and the dense [B, H, L, L] attention
             probabilities HF assembles and returns on every call. Its start, torch.zeros
             of that shape, is timed alone right after the peer in every round
             (`hf_dense_probs_zeros_s`); the table adds the ratio with it taken off HF's
             time (`without_hf_dense_probs_zeros`: a lower bound of that part's cost, the
             scatters into it stay counted).
             Vs cpu_k05_bigbird_blocks on Pattern.bigbird(64, 3, random_table=HF's table).

  flex_causal, flex_window, flex_longformer, flex_bigbird
             FlexAttention on the CPU: torch.compile(flex_attention) (inductor's C++
             template, inference) with a BlockMask, vs cpu_k01_dense_flash on
             Pattern.dense(causal=True), cpu_k02_window_band, cpu_k04_longformer
             (window w plus the first --num-global tokens, global both ways) and
             cpu_k05_bigbird_blocks. The BlockMask: create_block_mask of the named predicate
             (causal_mod, window_mod, window_global_mod below; block 128) for the first
             three; for BigBird, sparseattn's own export Pattern.block_mask (at the
             pattern's block size) through BlockMask.from_kv_blocks, its mask_mod a lookup
             of Pattern.mask. The predicates are checked against Pattern.mask exactly
             (python/tests/test_peers_bench.py). The first call compiles: its time
             (compile included) is reported as `first_call_s`, never in the ratio.
  flex_softcap, flex_sinks
             The same compiled FlexAttention, causal BlockMask, with a score_mod:
             softcap c·tanh(s / c) (c = --softcap; contract §2.8), vs cpu_k01_dense_flash
             with softcap; and sinks (one logit per head in every row's denominator,
             contract §2.9). FlexAttention has no sink term and, compiled for the CPU, no
             return_lse, so the sink case appends one key (value 0, made once, untimed)
             whose score the score_mod replaces by the head's sink logit and which every
             query may attend (sink_mod below): it adds exp(sink) to each row's
             denominator, nothing to its numerator; vs cpu_k01_dense_flash with sinks.
  gqa_dense, gqa_causal
             Grouped-query heads (contract §2.7): k and v with heads / --gqa-group heads;
             SDPA(enable_gqa=True) (is_causal for gqa_causal) vs cpu_k01_dense_flash on the
             same grouped k, v.
  decode     One query token per head (L_q 1) over a cache of --cache-len keys, grouped
             heads as above: SDPA(enable_gqa=True) vs cpu_k09_decode (Pattern.dense()).

Before timing, each side runs once untimed and the outputs are compared (max abs
difference, printed and stored): dense and window compute the same function; Longformer's
local path equals the window pattern without padding; BigBird's listing equals the
set-semantics pattern when no block is listed twice (counted: `repeated_listings`;
docs/peers.md). Then `warmup` more untimed calls of each side (default 1), and `rounds`
rounds (default 7): each times every contender once, peer first in even rounds,
sparseattn first in odd ones. Reported per case: each side's median seconds, the median
over rounds of the ratio peer / sparseattn (> 1: sparseattn faster) and its min-max.

Threads: torch.set_num_threads(T); OMP_NUM_THREADS=T for sparseattn's OpenMP (set here
before sparseattn loads); OMP_WAIT_POLICY=passive unless set (two OpenMP runtimes share
the cores: torch's bundled one and sparseattn's; a spinning idle pool would slow the other).

Writes peers.json (versions, commit, CPU, ISA, threads, date UTC, per-round times) and
peers.md (the table) into --out (default build/peers/), each atomically (temp + rename).
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT_DEFAULT = os.path.join(ROOT, "build", "peers")
CASES = ("dense", "window", "longformer", "bigbird", "flex_causal", "flex_window",
         "flex_longformer", "flex_bigbird", "gqa_dense", "gqa_causal", "decode",
         "flex_softcap", "flex_sinks")


# ---- pure logic (tested without torch: python/tests/test_peers_bench.py) -------------------

def median(xs):
    """The median of a non-empty sequence (mean of the two middle values when even)."""
    s = sorted(xs)
    if not s:
        raise ValueError("invalid xs = []: must hold at least one value")
    m = len(s) // 2
    return s[m] if len(s) % 2 else 0.5 * (s[m - 1] + s[m])


def summarize(peer_s, ours_s):
    """Per-round seconds of the peer and of sparseattn (same rounds, same order) ->
    medians of each, and the per-round ratio peer / sparseattn: median, min, max."""
    if len(peer_s) != len(ours_s) or not peer_s:
        raise ValueError(f"invalid rounds = {len(peer_s)} peer, {len(ours_s)} sparseattn: "
                         "must be the same number, >= 1")
    if min(peer_s) <= 0 or min(ours_s) <= 0:
        raise ValueError("invalid seconds: every time must be > 0")
    ratios = [p / o for p, o in zip(peer_s, ours_s)]
    return {"rounds": len(ratios), "peer_median_s": median(peer_s),
            "sparseattn_median_s": median(ours_s), "ratio_median": median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios)}


def round_order(r):
    """Who runs first in round r: the peer in even rounds, sparseattn in odd ones."""
    return ("peer", "sparseattn") if r % 2 == 0 else ("sparseattn", "peer")


def band_mask(seq_len, window):
    """The boolean [L, L] mask |i - j| <= window (one-sided; True = may attend), as
    SDPA takes it: the window pattern of contract §3, no causal part."""
    import numpy as np
    i = np.arange(seq_len)
    return np.abs(i[:, None] - i[None, :]) <= window


# FlexAttention's mask_mod predicates (True = may attend), written with operators only so
# that they take torch index tensors (FlexAttention) and NumPy index grids (the test that
# each equals Pattern.mask) alike.
def causal_mod(b, h, q_idx, kv_idx):
    """Pattern.dense(causal=True): keys at or before the query."""
    return q_idx >= kv_idx


def window_mod(window):
    """Pattern.window(window): |i - j| <= window (one-sided)."""
    def mod(b, h, q_idx, kv_idx):
        return abs(q_idx - kv_idx) <= window
    return mod


def window_global_mod(window, num_global):
    """Pattern.longformer(window, global_tokens=range(num_global)): the band, plus rows and
    columns of the first num_global tokens (global both ways)."""
    def mod(b, h, q_idx, kv_idx):
        return (abs(q_idx - kv_idx) <= window) | (q_idx < num_global) | (kv_idx < num_global)
    return mod


def sink_mod(mod, seq_len_k):
    """`mod` over keys 0 .. seq_len_k - 1, plus the appended sink key seq_len_k, which every
    query may attend (its score is the sink logit, its value 0: flex_sinks)."""
    def with_sink(b, h, q_idx, kv_idx):
        return (kv_idx == seq_len_k) | mod(b, h, q_idx, kv_idx)
    return with_sink


def kv_heads_of(heads, group):
    """Heads of k and v for `group` query heads per kv head (grouped-query, contract §2.7)."""
    if group < 1 or heads % group:
        raise ValueError(f"invalid --gqa-group = {group}: must be an integer >= 1 that divides "
                         f"--heads {heads}")
    return heads // group


def hf_bigbird_listing(q_block, num_blocks, rand_row):
    """The key blocks HF's bigbird_block_sparse_attention lists for a middle query block
    1 .. nb-2, in order (docs/peers.md, "The HF BigBird key lists"); rand_row = R[q - 1]."""
    q, nb = q_block, num_blocks
    if not 1 <= q <= nb - 2:
        raise ValueError(f"invalid q_block = {q}: must be in [1, {nb - 2}] (a middle block)")
    if q == 1:
        return [0, 1, 2, nb - 1] + list(rand_row)
    if q == nb - 2:
        return [0, nb - 3, nb - 2, nb - 1] + list(rand_row)
    return [0, q - 1, q, q + 1] + list(rand_row) + [nb - 1]


def repeated_listings(table):
    """Key blocks HF lists more than once, summed over heads and middle query blocks, for
    a random table [H, nb - 2, r]: 0 means HF's listing equals the set-semantics pattern."""
    heads, rows = len(table), len(table[0])
    nb = rows + 2
    n = 0
    for h in range(heads):
        for row in range(rows):
            listed = hf_bigbird_listing(row + 1, nb, [int(x) for x in table[h][row]])
            n += len(listed) - len(set(listed))
    return n


def fmt_ms(seconds):
    return f"{seconds * 1e3:.1f}"


def markdown_table(results):
    """The Markdown table of one run: a row per case (results: dicts with case, peer,
    impl, the summarize() fields and max_abs_diff)."""
    lines = ["| case | peer (timed) | sparseattn | peer ms | sparseattn ms | peer / sparseattn, "
             "median | min – max | max abs diff |",
             "|---|---|---|---:|---:|---:|---|---:|"]
    for r in results:
        diff = "—" if r.get("max_abs_diff") is None else f"{r['max_abs_diff']:.1e}"
        lines.append(
            f"| {r['case']} | {r['peer']} | `{r['impl']}` | {fmt_ms(r['peer_median_s'])} | "
            f"{fmt_ms(r['sparseattn_median_s'])} | **{r['ratio_median']:.2f}×** | "
            f"{r['ratio_min']:.2f}–{r['ratio_max']:.2f} | {diff} |")
    notes = []
    for r in results:
        if r.get("first_call_s") is not None:
            notes.append(f"- {r['case']}: first FlexAttention call (torch.compile included, not "
                         f"in the ratio) {r['first_call_s']:.1f} s.")
        for key, alt in sorted(r.items()):
            if key.startswith("without_"):
                notes.append(f"- {r['case']}: {alt['means']}: peer {fmt_ms(alt['peer_median_s'])} ms, "
                             f"ratio {alt['ratio_median']:.2f}× ({alt['ratio_min']:.2f}–{alt['ratio_max']:.2f}).")
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def atomic_write(path, text):
    """Writes text to path through a temporary file and a rename: never half-written."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ---- the machine ---------------------------------------------------------------------------

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---- the contenders (need torch, transformers, sparseattn) ---------------------------------

def timed(fn):
    """(seconds, result) of one call of fn, wall clock."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def sdpa_case(torch, sa, q, k, v, window):
    """dense (window None) or window: SDPA vs cpu_k01 / cpu_k02."""
    import numpy as np
    F = torch.nn.functional
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    if window is None:
        pattern, impl, peer = sa.Pattern.dense(), "cpu_k01_dense_flash", "torch SDPA"
        run = lambda: F.scaled_dot_product_attention(tq, tk, tv)  # noqa: E731
    else:
        mask = torch.from_numpy(band_mask(q.shape[2], window))
        pattern, impl, peer = sa.Pattern.window(window), "cpu_k02_window_band", "torch SDPA + bool band mask"
        run = lambda: F.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)  # noqa: E731
    return {"peer": peer, "impl": impl, "pattern": pattern, "run_peer": run,
            "peer_to_bhld": lambda o: o.numpy(), "notes": {}}


def longformer_case(torch, sa, q, k, v, window):
    """HF Longformer's local (sliding-chunks) attention vs cpu_k02_window_band."""
    from transformers import LongformerConfig
    from transformers.models.longformer.modeling_longformer import LongformerSelfAttention
    B, H, L, d = q.shape
    if L % (2 * window):
        raise ValueError(f"invalid seq_len = {L}: HF Longformer needs a multiple of "
                         f"attention_window = {2 * window}")
    cfg = LongformerConfig(hidden_size=H * d, num_attention_heads=H,
                           attention_window=[2 * window], attention_probs_dropout_prob=0.0)
    attn = LongformerSelfAttention(cfg, layer_id=0).eval()
    w = attn.one_sided_attn_window_size
    assert w == window, (w, window)
    # HF's projections are [L, B, H*d]; the same numbers in that layout, made once.
    lb = lambda x: torch.from_numpy(x).permute(2, 0, 1, 3).contiguous()  # noqa: E731
    ql, kl, vl = lb(q), lb(k), lb(v)
    # LongformerModel's extended mask: 0 = local token (no padding, no global tokens).
    attention_mask = torch.zeros(B, L)
    is_index_masked = attention_mask < 0
    remove = (attention_mask != 0)[:, :, None, None]
    float_mask = remove.type_as(ql).masked_fill(remove, torch.finfo(ql.dtype).min)
    diagonal_mask = attn._sliding_chunks_query_key_matmul(
        float_mask.new_ones(size=float_mask.size()), float_mask, w)
    scale = math.sqrt(d)

    def run():  # LongformerSelfAttention.forward, local path, from the projections on
        qv = (ql / scale).transpose(0, 1)          # [B, L, H, d] views, as HF's
        kv = kl.transpose(0, 1)
        scores = attn._sliding_chunks_query_key_matmul(qv, kv, w)
        scores += diagonal_mask
        probs = torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32)
        probs = torch.masked_fill(probs, is_index_masked[:, :, None, None], 0.0)
        return attn._sliding_chunks_matmul_attn_probs_value(probs, vl.transpose(0, 1), w)

    return {"peer": f"HF Longformer (attention_window {2 * window})", "impl": "cpu_k02_window_band",
            "pattern": sa.Pattern.window(window), "run_peer": run,
            "peer_to_bhld": lambda o: o.permute(0, 2, 1, 3).contiguous().numpy(),
            "notes": {"attention_window": 2 * window, "one_sided_window": w}}


def bigbird_case(torch, sa, q, k, v, block, r, seed):
    """HF BigBird block-sparse attention vs cpu_k05_bigbird_blocks on HF's random table."""
    import itertools
    import numpy as np
    from transformers import BigBirdConfig, BigBirdModel
    from transformers.models.big_bird.modeling_big_bird import BigBirdBlockSparseAttention
    B, H, L, d = q.shape
    if L % block:
        raise ValueError(f"invalid seq_len = {L}: HF BigBird needs a multiple of block {block}")
    cfg = BigBirdConfig(hidden_size=H * d, num_attention_heads=H, attention_type="block_sparse",
                        block_size=block, num_random_blocks=r, max_position_embeddings=max(L, 4096),
                        attention_probs_dropout_prob=0.0)
    attn = BigBirdBlockSparseAttention(cfg, seed=seed).train()  # train: real random draws
    bl = lambda x: torch.from_numpy(x).transpose(1, 2).contiguous().transpose(1, 2)  # noqa: E731
    ql, kl, vl = bl(q), bl(k), bl(v)  # [B, H, L, d] views of HF's [B, L, H*d] projections
    blocked, band, from_mask, to_mask = BigBirdModel.create_masks_for_block_sparse_attn(
        torch.ones(B, L), block)

    def call():
        ctx, _probs = attn.bigbird_block_sparse_attention(
            ql, kl, vl, band, from_mask, to_mask, blocked, blocked, H, r, d, block, block, B,
            L, L, seed=seed, plan_from_length=None, plan_num_rand_blocks=None)
        return ctx  # [B, L, H, d]

    # HF's table, as it used it: recorded from its own draw (seeded, so every call's).
    got = {}
    original = attn._create_rand_mask_from_inputs
    def recording(*args):
        got["rand_attn"] = args[2].detach().clone()
        return original(*args)
    attn._create_rand_mask_from_inputs = recording
    with torch.inference_mode():
        first = call()
    del attn._create_rand_mask_from_inputs
    table = got["rand_attn"][0].numpy().astype(np.int64)  # [H, nb - 2, r]
    # The timed calls look the table up instead of drawing it again.
    per_head = [table[h].astype(np.int32) for h in range(H)]
    cycle = itertools.cycle(per_head)
    attn._bigbird_block_rand_mask = lambda *a, **kw: next(cycle)
    attn._bigbird_block_rand_mask_with_head = lambda *a, **kw: list(per_head)
    with torch.inference_mode():
        again = call()
    if not torch.equal(first, again):
        raise RuntimeError("HF BigBird with the table looked up differs from its own draw")
    return {"peer": f"HF BigBird block-sparse (block {block}, r {r})", "impl": "cpu_k05_bigbird_blocks",
            "pattern": sa.Pattern.bigbird(block, r, random_table=table), "run_peer": call,
            "peer_to_bhld": lambda o: o.permute(0, 2, 1, 3).contiguous().numpy(),
            "notes": {"block_size": block, "num_random_blocks": r, "hf_seed": seed,
                      "random_blocks_min_max": [int(table.min()), int(table.max())],
                      "repeated_listings": repeated_listings(table)},
            # Timed right after the peer in every round: the allocation and zeroing that
            # starts HF's dense [B, H, L, L] probabilities (a lower bound of that part).
            "probe": ("hf_dense_probs_zeros", lambda: torch.zeros(B, H, L, L),
                      "HF's time less torch.zeros of its dense [B, H, L, L] probabilities")}


def flex_case(torch, sa, flex, q, k, v, name, args):
    """FlexAttention (compiled once by the caller: `flex`) vs the matching kernel."""
    import numpy as np
    from torch.nn.attention.flex_attention import BlockMask, create_block_mask
    B, H, L, d = q.shape
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    ours_kwargs = {}
    score_mod = None
    sinks = None
    if name in ("flex_causal", "flex_softcap", "flex_sinks"):
        pattern, impl, mod, what = sa.Pattern.dense(causal=True), "cpu_k01_dense_flash", causal_mod, "causal"
    elif name == "flex_window":
        pattern, impl, mod, what = (sa.Pattern.window(args.window), "cpu_k02_window_band",
                                    window_mod(args.window), f"window {args.window}")
    elif name == "flex_longformer":
        g = args.num_global
        pattern, impl, mod, what = (sa.Pattern.longformer(args.window, global_tokens=list(range(g))),
                                    "cpu_k04_longformer", window_global_mod(args.window, g),
                                    f"window {args.window} + {g} global tokens")
    else:  # flex_bigbird: sparseattn's own block-sparse export
        pattern = sa.Pattern.bigbird(args.block_size, args.num_random_blocks, seed=args.seed)
        impl, what = "cpu_k05_bigbird_blocks", f"BigBird {args.block_size}/{args.num_random_blocks}"
        dense = torch.from_numpy(np.ascontiguousarray(pattern.mask(L, num_heads=H).reshape(H, L, L)))
        mod = lambda b, h, q_idx, kv_idx: dense[h, q_idx, kv_idx]  # noqa: E731
    if name == "flex_bigbird":
        bm = pattern.block_mask(L, num_heads=H)
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
        block_mask = BlockMask.from_kv_blocks(t(bm.kv_num_blocks), t(bm.kv_indices),
                                              t(bm.full_kv_num_blocks), t(bm.full_kv_indices),
                                              BLOCK_SIZE=bm.block_size, mask_mod=mod)
        source = f"sparseattn block_mask export, block {bm.block_size}"
    else:
        block_mask = create_block_mask(mod, 1, 1, L, L, device="cpu")
        source = "create_block_mask, block 128"
    if name == "flex_softcap":
        cap = float(args.softcap)
        ours_kwargs["softcap"] = cap
        score_mod = lambda score, b, h, q_idx, kv_idx: cap * torch.tanh(score / cap)  # noqa: E731
        what += f", softcap {cap:g} (score_mod)"
    if name == "flex_sinks":
        # FlexAttention has no sink term and, compiled for the CPU, no return_lse; its
        # score_mod gives one: a key appended at position L, value 0, whose score is the
        # head's sink logit, allowed to every query (sink_mod). It adds exp(sink) to each
        # row's denominator and nothing to the numerator: attention with sinks, exactly.
        rng = np.random.default_rng(args.seed + 7)
        sinks = rng.standard_normal(H).astype(np.float32)
        ours_kwargs["sinks"] = sinks
        tsink = torch.from_numpy(sinks)
        pad = torch.zeros(B, H, 1, d)
        tk, tv = torch.cat([tk, pad], dim=2), torch.cat([tv, pad], dim=2)  # once, untimed
        block_mask = create_block_mask(sink_mod(causal_mod, L), 1, 1, L, L + 1, device="cpu")
        score_mod = lambda score, b, h, q_idx, kv_idx: torch.where(  # noqa: E731
            kv_idx == L, tsink[h], score)
        what += ", sinks (score_mod on an appended key)"

    def run():
        return flex(tq, tk, tv, score_mod=score_mod, block_mask=block_mask)
    return {"peer": f"FlexAttention CPU ({what}; {source})", "impl": impl, "pattern": pattern,
            "run_peer": run, "peer_to_bhld": lambda o: o.numpy(), "ours_kwargs": ours_kwargs,
            "flex": True, "notes": {"block_mask": source}}


def gqa_case(torch, sa, q, k, v, name, args):
    """SDPA(enable_gqa=True) vs cpu_k01_dense_flash (gqa_*) or cpu_k09_decode (decode)."""
    import numpy as np
    F = torch.nn.functional
    B, H, L, d = q.shape
    hk = kv_heads_of(H, args.gqa_group)
    rng = np.random.default_rng(args.seed + 11)
    if name == "decode":
        shape = (B, hk, args.cache_len, d)
        qd = rng.standard_normal((B, H, 1, d), dtype=np.float32)
        kd, vd = (rng.standard_normal(shape, dtype=np.float32) for _ in range(2))
        tq, tk, tv = (torch.from_numpy(x) for x in (qd, kd, vd))
        run = lambda: F.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True)  # noqa: E731
        return {"peer": f"torch SDPA enable_gqa (L_q 1, cache {args.cache_len}, {H}/{hk} heads)",
                "impl": "cpu_k09_decode", "pattern": sa.Pattern.dense(), "run_peer": run,
                "peer_to_bhld": lambda o: o.numpy(), "ours_qkv": (qd, kd, vd),
                "notes": {"num_kv_heads": hk, "cache_len": args.cache_len}}
    kg, vg = (np.ascontiguousarray(x[:, ::args.gqa_group]) for x in (k, v))  # [B, H_kv, L, d]
    tq, tk, tv = (torch.from_numpy(x) for x in (q, kg, vg))
    causal = name == "gqa_causal"
    run = lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, enable_gqa=True)  # noqa: E731
    return {"peer": f"torch SDPA enable_gqa{', is_causal' if causal else ''} ({H}/{hk} heads)",
            "impl": "cpu_k01_dense_flash", "pattern": sa.Pattern.dense(causal=causal),
            "run_peer": run, "peer_to_bhld": lambda o: o.numpy(), "ours_qkv": (q, kg, vg),
            "notes": {"num_kv_heads": hk}}


def run_case(torch, sa, case, q, k, v, rounds, warmup, max_abs_diff=math.inf):
    """Validates once, `warmup` untimed calls of each side, then interleaved rounds;
    returns the case's result dict. A FlexAttention case's first call compiles: timed
    alone (`first_call_s`), before the check."""
    import numpy as np
    q, k, v = case.get("ours_qkv", (q, k, v))
    kw = case.get("ours_kwargs", {})
    first_call_s = None
    with torch.inference_mode():
        if case.get("flex"):
            first_call_s, _ = timed(case["run_peer"])
        peer_o = case["peer_to_bhld"](case["run_peer"]())
    ours = sa.time_impl(q, k, v, case["pattern"], case["impl"], repeats=1, warmup=0, **kw)
    diff = float(np.max(np.abs(peer_o.astype(np.float64) - ours.o.astype(np.float64))))
    del peer_o
    # HF BigBird listing a block twice computes another function (docs/peers.md): its
    # difference is recorded beside the count, as the one case not gated.
    known_other = case["notes"].get("repeated_listings", 0) > 0
    if not known_other and not diff <= max_abs_diff:  # NaN refused too
        raise RuntimeError(f"{case['peer']} and {case['impl']} disagree: max abs diff {diff:.3g} "
                           f"> --max-abs-diff {max_abs_diff:g}; not timed")
    for _ in range(warmup):
        with torch.inference_mode():
            case["run_peer"]()
        sa.time_impl(q, k, v, case["pattern"], case["impl"], repeats=1, warmup=0, **kw)
    peer_s, ours_s, probe_s, orders = [], [], [], []
    probe = case.get("probe")
    for r in range(rounds):
        order = round_order(r)
        orders.append(order[0])
        for who in order:
            if who == "peer":
                with torch.inference_mode():
                    s, out = timed(case["run_peer"])
                    del out
                    peer_s.append(s)
                    if probe:
                        s, out = timed(probe[1])
                        del out
                        probe_s.append(s)
            else:
                ours_s.append(float(sa.time_impl(q, k, v, case["pattern"], case["impl"],
                                                 repeats=1, warmup=0, **kw).seconds[0]))
    res = {"peer": case["peer"], "impl": case["impl"], "max_abs_diff": diff,
           "peer_s": peer_s, "sparseattn_s": ours_s, "first_in_round": orders,
           "first_call_s": first_call_s}
    res.update(summarize(peer_s, ours_s))
    if probe:
        # The ratio with the probe's time taken off the peer's, round by round.
        res[probe[0] + "_s"] = probe_s
        res[probe[0] + "_median_s"] = median(probe_s)
        res["without_" + probe[0]] = summarize([p - z for p, z in zip(peer_s, probe_s)], ours_s)
        res["without_" + probe[0]]["means"] = probe[2]
    res.update(case["notes"])
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", help="create this virtual environment, install the peers, re-run in it")
    ap.add_argument("--out", default=OUT_DEFAULT, help="folder for peers.json, peers.md (default build/peers)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma list of " + ", ".join(CASES))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--window", type=int, default=256, help="one-sided window (HF attention_window = 2x)")
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--num-random-blocks", type=int, default=3)
    ap.add_argument("--num-global", type=int, default=4, help="flex_longformer: global tokens 0..G-1")
    ap.add_argument("--gqa-group", type=int, default=4, help="query heads per kv head (gqa_*, decode)")
    ap.add_argument("--cache-len", type=int, default=32768, help="decode: keys in the cache")
    ap.add_argument("--softcap", type=float, default=50.0, help="flex_softcap: the cap c")
    ap.add_argument("--max-abs-diff", type=float, default=1e-4,
                    help="a case whose outputs differ by more is refused, never timed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls per side after the check")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            ap.error(f"invalid --cases = {args.cases}: each must be one of {', '.join(CASES)}")
    for name in ("batch", "heads", "seq_len", "head_dim", "window", "block_size", "threads", "rounds",
                 "gqa_group", "cache_len"):
        if getattr(args, name) < 1:
            ap.error(f"invalid --{name.replace('_', '-')} = {getattr(args, name)}: must be an integer >= 1")
    if not (math.isfinite(args.softcap) and args.softcap > 0):
        ap.error(f"invalid --softcap = {args.softcap}: must be a finite number > 0")
    if not (math.isfinite(args.max_abs_diff) and args.max_abs_diff > 0):
        ap.error(f"invalid --max-abs-diff = {args.max_abs_diff}: must be a finite number > 0")
    if args.heads % args.gqa_group:
        ap.error(f"invalid --gqa-group = {args.gqa_group}: must divide --heads {args.heads}")
    for name in ("num_random_blocks", "warmup", "seed", "num_global"):
        if getattr(args, name) < 0:
            ap.error(f"invalid --{name.replace('_', '-')} = {getattr(args, name)}: must be an integer >= 0")
    if args.venv:
        from peer_venv import run_in_venv  # tools/peer_venv.py, beside this script
        rest = []
        skip = False
        for a in sys.argv[1:]:  # the same arguments, without --venv
            if skip:
                skip = False
            elif a == "--venv":
                skip = True
            elif not a.startswith("--venv="):
                rest.append(a)
        sys.exit(run_in_venv(args.venv, __file__, rest))

    # Before sparseattn's OpenMP runtime (and torch's) starts.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import numpy as np
    import torch
    import transformers
    import sparseattn as sa
    torch.set_num_threads(args.threads)

    shape = (args.batch, args.heads, args.seq_len, args.head_dim)
    rng = np.random.default_rng(args.seed)
    q, k, v = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
    load_before = os.getloadavg()
    results = []
    flex = None
    if any(c.startswith("flex_") for c in cases):
        from torch.nn.attention.flex_attention import flex_attention
        flex = torch.compile(flex_attention, dynamic=False)
    for name in cases:
        if name.startswith("flex_"):
            case = flex_case(torch, sa, flex, q, k, v, name, args)
        elif name in ("gqa_dense", "gqa_causal", "decode"):
            case = gqa_case(torch, sa, q, k, v, name, args)
        elif name in ("dense", "window"):
            case = sdpa_case(torch, sa, q, k, v, None if name == "dense" else args.window)
        elif name == "longformer":
            case = longformer_case(torch, sa, q, k, v, args.window)
        else:
            case = bigbird_case(torch, sa, q, k, v, args.block_size, args.num_random_blocks, args.seed)
        res = run_case(torch, sa, case, q, k, v, args.rounds, args.warmup, args.max_abs_diff)
        res["case"] = name
        results.append(res)
        print(f"peers_bench: {name}: {res['peer']} {fmt_ms(res['peer_median_s'])} ms, "
              f"{res['impl']} {fmt_ms(res['sparseattn_median_s'])} ms, ratio "
              f"{res['ratio_median']:.2f} ({res['ratio_min']:.2f}-{res['ratio_max']:.2f}), "
              f"max abs diff {res['max_abs_diff']:.1e}", flush=True)
    meta = {
        "written_by": "tools/peers_bench.py",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "sparseattn_commit": git_commit(),
        "cpu_model": cpu_model(), "cpus_online": os.cpu_count(),
        "sparseattn_isa": sa.cpu_isa(),
        "threads": args.threads, "omp_wait_policy": os.environ["OMP_WAIT_POLICY"],
        "load_average_1m_before_after": [load_before[0], os.getloadavg()[0]],
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "numpy": np.__version__,
                     "sparseattn": sa.__version__},
        "shape": {"batch": args.batch, "num_heads": args.heads, "seq_len": args.seq_len,
                  "head_dim": args.head_dim, "dtype": "float32"},
        "window": args.window, "num_global": args.num_global, "gqa_group": args.gqa_group,
        "cache_len": args.cache_len, "softcap": args.softcap, "rounds": args.rounds, "warmup": args.warmup, "seed": args.seed,
        "ratio": "peer seconds / sparseattn seconds per round (> 1: sparseattn faster)",
    }
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    atomic_write(os.path.join(out, "peers.json"),
                 json.dumps({"meta": meta, "cases": results}, indent=1) + "\n")
    md = (f"Run {meta['date_utc']} on {meta['cpu_model']} ({meta['sparseattn_isa']}), "
          f"{args.threads} threads; torch {torch.__version__}, transformers "
          f"{transformers.__version__}, numpy {np.__version__}; sparseattn {meta['sparseattn_commit']}; "
          f"batch {args.batch}, {args.heads} heads, seq_len {args.seq_len}, head_dim "
          f"{args.head_dim}, float32; median of {args.rounds} interleaved rounds; 1-minute load "
          f"average {load_before[0]:.1f} before, {meta['load_average_1m_before_after'][1]:.1f} after.\n\n"
          + markdown_table(results))
    atomic_write(os.path.join(out, "peers.md"), md)
    print(md)
    print(f"peers_bench: wrote {out}/peers.json and peers.md")


if __name__ == "__main__":
    main()
