"""Shared fixtures: the CLI binary the binding is compared with, and seeded inputs."""
from __future__ import annotations

import os
import pathlib
import subprocess
from typing import List

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cli_path() -> pathlib.Path:
    """build/sparseattn, or $SPARSEATTN_CLI."""
    return pathlib.Path(os.environ.get("SPARSEATTN_CLI", ROOT / "build" / "sparseattn"))


@pytest.fixture(scope="session")
def cli():
    """Runs the CLI; returns a function(args) -> CompletedProcess. Skips without a binary."""
    exe = cli_path()
    if not exe.exists():
        pytest.skip(f"no CLI binary at {exe} (build it: cmake --build build --target sparseattn)")

    def run(args: List[str], check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([str(exe)] + [str(a) for a in args], capture_output=True, text=True,
                           timeout=120)
        if check and r.returncode != 0:
            raise AssertionError(f"sparseattn {' '.join(map(str, args))} -> {r.returncode}: {r.stderr}")
        return r

    return run


def qkv(shape_q, shape_k=None, head_dim_v=None, seed=0, dtype=np.float64):
    """Seeded normal q, k, v; k and v share shape_k's leading dims (default shape_q)."""
    rng = np.random.default_rng(seed)
    shape_k = shape_q if shape_k is None else shape_k
    shape_v = shape_k[:-1] + ((shape_k[-1] if head_dim_v is None else head_dim_v),)
    return (rng.standard_normal(shape_q).astype(dtype), rng.standard_normal(shape_k).astype(dtype),
            rng.standard_normal(shape_v).astype(dtype))
