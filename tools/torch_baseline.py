#!/usr/bin/env python3
"""PyTorch baselines for `scripts/gpu_check.sh`, timed on the same shapes as bench_cuda,
written as JSON lines as they are measured (tools/gpu_report.py puts them side by side
with ours in the results file).

    python3 tools/torch_baseline.py --build build-gpu --out torch.jsonl [--budget-s 100]

Order, so that whatever stops the run early costs the least:
  1. scaled_dot_product_attention, dense, bf16 (and fp32 up to FP32_MAX_SEQ), every shape —
     needs nothing but torch, so a FlexAttention failure can never lose these figures;
  2. FlexAttention set-up and its checks, each guarded: the sliding-window mask_mod
     |q - kv| <= w (one-sided w, contract §3) against OUR window pattern element by element
     (build/cuda_block_mask --element), and FlexAttention on OUR BigBird block table
     (cuda_block_mask: block 64, 3 random blocks, seed 0 — the random blocks our kernels
     visit, not a re-draw) against SDPA with the equivalent dense mask;
  3. FlexAttention timings, window w256 / w1024 and BigBird, every shape.
Every line is flushed when written: {"kind": "meta" | "record" | "check" | "error", ...};
a record is {impl, family, dtype, head_dim, seq_len, ms, tflops, note}. Timing: CUDA events,
3 warm-up calls, median of repeats. No network is needed; only torch and numpy.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HEADS = 16
HEAD_DIMS = (64, 128)
SEQ_LENS = (4096, 8192, 16384, 32768, 65536)
WINDOWS = (256, 1024)
BIGBIRD = dict(block_size=64, num_random_blocks=3, seed=0)
FP32_MAX_SEQ = 16384  # as bench_cuda's float32 kernels


class Lines:
    """The output file: one JSON object per line, flushed at once."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def put(self, kind, **kv):
        self.f.write(json.dumps(dict(kind=kind, **kv)) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


def log(*a):
    print("torch_baseline:", *a, flush=True)


def time_cuda(fn, torch, min_time_s=0.2, max_reps=50):
    """Median milliseconds of fn() over repeats, after 3 warm-up calls (CUDA events)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times, spent = [], 0.0
    while len(times) < 3 or (spent < min_time_s and len(times) < max_reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ms = start.elapsed_time(stop)
        times.append(ms)
        spent += ms / 1e3
    times.sort()
    return times[len(times) // 2]


def window_nnz(n, w):
    # Keys per row: min(i + w, n - 1) - max(i - w, 0) + 1, summed over rows, per head.
    return sum(min(i + w, n - 1) - max(i - w, 0) + 1 for i in range(n))


def shapes():
    """The targets' seq_len (32768) first, then the rest of the sweep."""
    return sorted(((d, n) for d in HEAD_DIMS for n in SEQ_LENS), key=lambda x: (x[1] != 32768, x[0], x[1]))


def export(build, args, path):
    cmd = [os.path.join(build, "cuda_block_mask")] + args + ["--out", path]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def bigbird_block_mask(build, n, tmp, torch, np, BlockMask):
    path = os.path.join(tmp, f"bigbird_{n}.npy")
    export(build, ["--seq-len", str(n), "--num-heads", str(HEADS), "--pattern", "bigbird", "--block-size",
                   str(BIGBIRD["block_size"]), "--num-random-blocks", str(BIGBIRD["num_random_blocks"]),
                   "--seed", str(BIGBIRD["seed"])], path)
    listed = torch.from_numpy(np.load(path)).cuda()          # [H, qb, kb] uint8
    full = torch.from_numpy(np.load(path + ".full.npy")).cuda()
    assert bool((listed == full).all()), "BigBird tiles must all be full"
    counts = listed.sum(-1, dtype=torch.int32)[None]         # [1, H, qb]
    # Listed key blocks first, ascending (stable sort of 0 before 1 on the negation).
    order = torch.argsort((1 - listed).to(torch.int8), dim=-1, stable=True).to(torch.int32)[None]
    zeros = torch.zeros_like(counts)
    bm = BlockMask.from_kv_blocks(zeros, order, counts, order, BLOCK_SIZE=BIGBIRD["block_size"])
    nnz = int(listed.sum().item()) * BIGBIRD["block_size"] ** 2  # n is a multiple of the block
    return bm, listed, nnz


def window_block_mask(create_block_mask, w, n):
    """FlexAttention's block mask of the one-sided window w; built compiled where the
    installed version allows it (the eager path materializes an [n, n] mask)."""
    mod = lambda b, h, q, kv: (q - kv).abs() <= w  # noqa: E731
    try:
        return create_block_mask(mod, None, None, n, n, device="cuda", _compile=True)
    except TypeError:
        return create_block_mask(mod, None, None, n, n, device="cuda")


def check_window_mask(build, torch, np, create_mask, tmp):
    """Our window pattern (cuda_block_mask --element) == FlexAttention's mask_mod."""
    n = 1000
    for w in WINDOWS:
        path = os.path.join(tmp, f"window_{w}.npy")
        export(build, ["--seq-len", str(n), "--pattern", "window", "--window", str(w), "--element"], path)
        ours = torch.from_numpy(np.load(path)).bool().cuda()[0]
        theirs = create_mask(lambda b, h, q, kv: (q - kv).abs() <= w, None, None, n, n, device="cuda")[0, 0]
        if not bool((ours == theirs).all()):
            raise RuntimeError(f"window w={w}: FlexAttention's mask_mod differs from our window pattern")
    return "window mask_mod == our window pattern (n=1000, w=256 and 1024)"


def check_bigbird_flex(build, torch, np, flex, BlockMask, sdpa, tmp):
    """FlexAttention on our exported block table == SDPA with the same dense mask."""
    n, d = 1024, 64
    bm, listed, _ = bigbird_block_mask(build, n, tmp, torch, np, BlockMask)
    b = BIGBIRD["block_size"]
    dense = listed.bool().repeat_interleave(b, 1).repeat_interleave(b, 2)[None]  # [1, H, n, n]
    q, k, v = (torch.randn(1, HEADS, n, d, device="cuda", dtype=torch.float32) for _ in range(3))
    err = (flex(q, k, v, block_mask=bm) - sdpa(q, k, v, attn_mask=dense)).abs().max().item()
    if not err < 1e-4:
        raise RuntimeError(f"FlexAttention on our BigBird table differs from masked SDPA: max err {err}")
    return f"FlexAttention(our BigBird table) == masked SDPA (n={n}), max err {err:.2e}"


def inputs(torch, n, d):
    gen = torch.Generator(device="cuda").manual_seed(n * 1000 + d)
    q32, k32, v32 = (torch.rand(1, HEADS, n, d, device="cuda", generator=gen) * 2 - 1 for _ in range(3))
    return (q32, k32, v32), tuple(x.to(torch.bfloat16) for x in (q32, k32, v32))


def run(args, out):
    started = time.time()
    over = lambda: time.time() - started > args.budget_s  # noqa: E731

    def record(impl, family, dtype, d, n, ms, flops, note=""):
        out.put("record", impl=impl, family=family, dtype=dtype, head_dim=d, seq_len=n, ms=ms,
                tflops=(flops / (ms * 1e-3) / 1e12) if ms else None, note=note)
        log(f"{impl:14s} {family:14s} {dtype:5s} D{d:<4d} n{n:<6d} {ms if ms else float('nan'):9.3f} ms {note}")

    import torch
    sdpa = torch.nn.functional.scaled_dot_product_attention
    device = torch.cuda.get_device_name(0)
    out.put("meta", device=device, torch=torch.__version__, cuda=torch.version.cuda)
    log("device:", device, "torch", torch.__version__)

    # 1. SDPA: nothing but torch.
    for d, n in shapes():
        if over():
            out.put("error", what=f"sdpa D{d} n{n}", error="budget exhausted: not measured")
            continue
        try:
            (q32, k32, v32), (qb, kb, vb) = inputs(torch, n, d)
            flops = 4.0 * HEADS * n * n * d
            record("torch_sdpa", "dense", "bf16", d, n, time_cuda(lambda: sdpa(qb, kb, vb), torch), flops)
            if n <= FP32_MAX_SEQ:
                record("torch_sdpa", "dense", "fp32", d, n, time_cuda(lambda: sdpa(q32, k32, v32), torch), flops)
            del q32, k32, v32, qb, kb, vb
        except Exception as e:  # noqa: BLE001 — recorded, the sweep goes on
            out.put("error", what=f"sdpa D{d} n{n}", error=f"{type(e).__name__}: {e}")
        torch.cuda.empty_cache()

    # 2. FlexAttention: set-up and checks. Any failure here is recorded and ends part 3 only.
    try:
        import numpy as np
        from torch.nn.attention.flex_attention import BlockMask, create_block_mask, create_mask, flex_attention
        import torch._dynamo
        # One compiled FlexAttention per (seq_len, head_dim): raise Dynamo's recompile limit
        # (8 by default), past which it falls back to the eager path, which materializes
        # the [n, n] scores (275 GB at n = 65536).
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 64)
        flex = torch.compile(flex_attention, dynamic=False)
        os.makedirs(args.tmp, exist_ok=True)
    except Exception as e:  # noqa: BLE001
        out.put("error", what="flex_attention set-up", error=f"{type(e).__name__}: {e}")
        return
    window_ok = bigbird_ok = False
    try:
        out.put("check", what="window_mask", ok=True, note=check_window_mask(args.build, torch, np, create_mask, args.tmp))
        window_ok = True
    except Exception as e:  # noqa: BLE001
        out.put("error", what="flex window mask check", error=f"{type(e).__name__}: {e}")
    try:
        out.put("check", what="bigbird_flex", ok=True,
                note=check_bigbird_flex(args.build, torch, np, flex, BlockMask, sdpa, args.tmp))
        bigbird_ok = True
    except Exception as e:  # noqa: BLE001
        out.put("error", what="flex bigbird check", error=f"{type(e).__name__}: {e}")

    # 3. FlexAttention timings (only what its check proved).
    for d, n in shapes():
        if not (window_ok or bigbird_ok):
            break
        if over():
            out.put("error", what=f"flex D{d} n{n}", error="budget exhausted: not measured")
            continue
        _, (qb, kb, vb) = inputs(torch, n, d)
        if window_ok:
            for w in WINDOWS:
                try:
                    bm = window_block_mask(create_block_mask, w, n)
                    record("torch_flex", f"window_w{w}", "bf16", d, n,
                           time_cuda(lambda: flex(qb, kb, vb, block_mask=bm), torch), 4.0 * HEADS * window_nnz(n, w) * d)
                except Exception as e:  # noqa: BLE001
                    out.put("error", what=f"flex window_w{w} D{d} n{n}", error=f"{type(e).__name__}: {e}")
        if bigbird_ok:
            try:
                bm, _, nnz = bigbird_block_mask(args.build, n, args.tmp, torch, np, BlockMask)
                record("torch_flex", "bigbird_b64_r3", "bf16", d, n,
                       time_cuda(lambda: flex(qb, kb, vb, block_mask=bm), torch), 4.0 * nnz * d)
            except Exception as e:  # noqa: BLE001
                out.put("error", what=f"flex bigbird D{d} n{n}", error=f"{type(e).__name__}: {e}")
        del qb, kb, vb
        torch.cuda.empty_cache()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build", help="build directory holding cuda_block_mask")
    p.add_argument("--out", default="torch.jsonl", help="JSON-lines output (appended)")
    p.add_argument("--tmp", default="/tmp/sparseattn_torch", help="scratch directory for exported masks")
    p.add_argument("--budget-s", type=float, default=150.0, help="start no new shape after this many seconds")
    args = p.parse_args()
    out = Lines(args.out)
    try:
        run(args, out)
    except Exception as e:  # noqa: BLE001 — e.g. no torch, no device: say so in the file
        out.put("error", what="torch baseline", error=f"{type(e).__name__}: {e}")
        log(f"failed: {type(e).__name__}: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
