"""Times `sparseattn check`'s cause probes at real sizes (docs/numerics.md, "Cause probes at
real sizes"; contract §4.9).

For one head of head_dim 64 at sequence length N it writes q, k, v (uniform in [-1, 1), NumPy's
seeded generator) and one candidate per planted mistake, computed row by row here in NumPy
(not by the library), then runs `check` on each twice: with the default `--probes auto`
and with `--probes never`. It prints a Markdown table: the mistake, the probable cause the
report names, whether the budget left a probe out, and both wall-clock times (their
difference is the probes' cost, within the noise of the O(N^2) oracle around them).

    python3 tools/time_probes.py --seq-len 16384 --cli build/sparseattn --dir /tmp/probes
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import time
from typing import Callable, Iterable, List, Tuple

import numpy as np

WINDOW = 8


def _write_inputs(n: int, d: int, out: pathlib.Path) -> Tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    q, k, v = (rng.uniform(-1, 1, (1, 1, n, d)) for _ in range(3))
    for name, x in (("q", q), ("k", k), ("v", v)):
        np.save(out / f"{name}.npy", x)
    return q[0, 0], k[0, 0], v[0, 0]


def _candidate(q: np.ndarray, k: np.ndarray, v: np.ndarray,
               keys_of: Callable[[int], Iterable[int]]) -> np.ndarray:
    """o [1, 1, n, d] of contract §2 with row i attending keys_of(i); no key: o = 0."""
    n, d = q.shape
    o = np.zeros((1, 1, n, v.shape[1]))
    for i in range(n):
        keys = np.asarray(sorted(keys_of(i)), dtype=np.int64)
        if keys.size == 0:
            continue
        s = (k[keys] @ q[i]) / np.sqrt(d)
        p = np.exp(s - s.max())
        o[0, 0, i] = (p / p.sum()) @ v[keys]
    return o


def _cases(n: int) -> List[Tuple[str, List[str], Callable[[int], Iterable[int]]]]:
    w = WINDOW
    band = lambda i, ww=w: range(max(0, i - ww), min(n, i + ww + 1))  # noqa: E731
    g = {0, n // 4, 3 * n // 4}
    window = ["--pattern", "window", "--window", str(w)]
    return [
        (f"window {w + 1}", window, lambda i: band(i, w + 1)),
        (f"key {n - 1} never attended", window, lambda i: [j for j in band(i) if j <= n - 2]),
        ("globals ignore causality",
         ["--pattern", "longformer", "--causal", "--window", str(w), "--global",
          ",".join(map(str, sorted(g)))],
         lambda i: range(n) if i in g else set(range(max(0, i - w), i + 1)) | g),
        ("each row without its own key", window, lambda i: [j for j in band(i) if j != i]),
        ("padded keys attended (last 100 keys padded)", window + ["--key-padding-mask", "pad.npy"],
         lambda i: band(i) if i < n - 100 else []),
    ]


def _run(cli: str, args: List[str], cwd: pathlib.Path) -> Tuple[dict, float]:
    start = time.perf_counter()
    r = subprocess.run([cli] + args, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if r.returncode not in (0, 1):
        raise SystemExit(f"check failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq-len", type=int, default=16384)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--cli", default="build/sparseattn")
    ap.add_argument("--dir", default="/tmp/sparseattn_time_probes")
    a = ap.parse_args()
    out = pathlib.Path(a.dir)
    out.mkdir(parents=True, exist_ok=True)
    cli = str(pathlib.Path(a.cli).resolve())
    q, k, v = _write_inputs(a.seq_len, a.head_dim, out)
    pad = np.ones((1, a.seq_len), bool)
    pad[0, a.seq_len - 100:] = False
    np.save(out / "pad.npy", pad)
    print(f"n = {a.seq_len}, one head, head_dim {a.head_dim}\n")
    print("| planted mistake | probable cause | probes left out | check, auto | check, never |")
    print("|---|---|---|---|---|")
    for t, (name, flags, keys_of) in enumerate(_cases(a.seq_len)):
        np.save(out / f"c{t}.npy", _candidate(q, k, v, keys_of))
        base = ["check", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "--candidate",
                f"c{t}.npy"] + flags
        j, auto = _run(cli, base, out)
        _, never = _run(cli, base + ["--probes", "never"], out)
        cause = j.get("probable_cause", "(passed)").split(":")[0]
        left = len(j.get("probes", {}).get("not_run", []))
        print(f"| {name} | {cause} | {left} | {auto:.1f} s | {never:.1f} s |")


if __name__ == "__main__":
    main()
