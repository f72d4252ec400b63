"""sparseattn: sparse attention patterns, a float64 oracle, reference and optimized
kernels, and graph measures — the project's C++ libraries, one import away from NumPy.

The same code the ``sparseattn`` command-line tool runs (docs/python.md)::

    import numpy as np, sparseattn as sa
    p = sa.Pattern.window(2)
    q = k = v = np.random.default_rng(0).standard_normal((1, 2, 16, 8))
    o, lse = sa.attend(q, k, v, p)                       # the float64 oracle
    o32, _ = sa.attend(q, k, v, p, impl="cpu_k02_window_band")
    sa.testing.assert_matches_oracle(q, k, v, p, o32)

Shapes follow docs/contract.md §1: q [batch, num_heads, seq_len_q, head_dim], k and v
[batch, num_heads, seq_len_k, head_dim(_v)], leading dimensions optional.
"""
from . import select, testing
from .analysis import analyze, extend_positions, reach
from .attention import (AttendGlobalResult, AttendResult, AttendSinksResult, CheckReport, TensorReport, Timing,
                        attend, bf16_engine, check, cpu_isa, impls, nystrom, performer_favor, time_impl)
from .pattern import BlockMask, Pattern
from .presets import preset_info, preset_names, preset_reach
from .sweep import SweepFit, SweepPoint, SweepResult, sweep

__all__ = [
    "AttendGlobalResult", "AttendResult", "AttendSinksResult", "BlockMask", "CheckReport", "Pattern", "TensorReport", "Timing", "analyze",
    "attend", "bf16_engine", "check", "cpu_isa", "extend_positions", "impls", "nystrom", "performer_favor",
    "preset_info", "preset_names", "preset_reach", "reach", "select", "sweep", "SweepFit", "SweepPoint", "SweepResult", "testing", "time_impl",
]
__version__ = "0.1.0"
