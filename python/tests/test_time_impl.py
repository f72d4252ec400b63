"""sparseattn.time_impl (kernel time only, the sparseattn side of tools/peers_bench.py) and
sparseattn.cpu_isa and sparseattn.bf16_engine: what they return and how they refuse bad arguments (contract §5)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import sparseattn as sa
from conftest import qkv


def test_time_impl_times_each_call_and_returns_attends_output():
    q, k, v = qkv((1, 2, 96, 16), seed=3, dtype=np.float32)
    p = sa.Pattern.window(7)
    t = sa.time_impl(q, k, v, p, "cpu_k02_window_band", repeats=4, warmup=2)
    assert isinstance(t, sa.Timing)
    assert t.seconds.shape == (4,) and t.seconds.dtype == np.float64
    assert (t.seconds > 0).all() and np.isfinite(t.seconds).all()
    o, lse = sa.attend(q, k, v, p, impl="cpu_k02_window_band")
    # Same kernel, same prepared inputs: bit for bit (the kernel is deterministic).
    assert t.o.dtype == np.float32 and t.o.shape == o.shape
    np.testing.assert_array_equal(t.o, o)
    np.testing.assert_array_equal(t.lse, lse)
    # And the oracle agrees within the kernel's tolerance.
    sa.testing.assert_matches_oracle(q, k, v, p, t.o, t.lse)


def test_time_impl_keeps_leading_dims_and_takes_scale_and_padding():
    q, k, v = qkv((2, 40, 8), seed=4, dtype=np.float32)  # [heads, seq_len, d]
    pad = np.ones((1, 40), dtype=bool)
    pad[0, 33:] = False
    t = sa.time_impl(q, k, v, sa.Pattern.dense(), "cpu_k01_dense_flash", repeats=1,
                     warmup=0, scale=0.5, key_padding_mask=pad)
    assert t.seconds.shape == (1,) and t.o.shape == (2, 40, 8) and t.lse.shape == (2, 40)
    o, lse = sa.attend(q, k, v, sa.Pattern.dense(), impl="cpu_k01_dense_flash", scale=0.5,
                       key_padding_mask=pad)
    np.testing.assert_array_equal(t.o, o)
    np.testing.assert_array_equal(t.lse, lse)


def test_time_impl_times_an_approximation_it_does_not_hold_to_the_tolerance():
    # Performer FAVOR+ misses the oracle by far more than any tolerance (contract §4.8):
    # the harness measures its error and times it; it refuses only exact kernels.
    q, k, v = qkv((1, 2, 64, 8), seed=5)
    p = sa.Pattern.dense()
    o, _ = sa.attend(q, k, v, p, impl="performer_favor")
    o_ref, _ = sa.attend(q, k, v, p)
    assert np.max(np.abs(o - o_ref)) > 1e-3  # far outside float64's 1e-12
    t = sa.time_impl(q, k, v, p, "performer_favor", repeats=2, warmup=0)
    assert t.seconds.shape == (2,) and (t.seconds > 0).all()
    np.testing.assert_array_equal(t.o, o)


def test_time_impl_refuses_an_unknown_impl_by_name():
    q, k, v = qkv((1, 1, 16, 4))
    with pytest.raises(ValueError, match=r"^invalid impl = cpu_k99_nothing: "):
        sa.time_impl(q, k, v, sa.Pattern.dense(), "cpu_k99_nothing")


def test_time_impl_refuses_an_impl_that_does_not_serve_the_pattern():
    q, k, v = qkv((1, 1, 16, 4))
    with pytest.raises(ValueError, match=r"^invalid impl = cpu_k01_dense_flash: serves only dense"):
        sa.time_impl(q, k, v, sa.Pattern.window(2), "cpu_k01_dense_flash")


@pytest.mark.parametrize("kwargs, message", [
    (dict(repeats=0), "invalid repeats = 0: must be an integer >= 1"),
    (dict(repeats=-3), "invalid repeats = -3: must be an integer >= 1"),
    (dict(repeats=2.5), "invalid repeats = 2.5: must be an integer >= 1"),
    (dict(repeats=True), "invalid repeats = True: must be an integer >= 1"),
    (dict(warmup=-1), "invalid warmup = -1: must be an integer >= 0"),
])
def test_time_impl_refuses_bad_counts(kwargs, message):
    q, k, v = qkv((1, 1, 16, 4))
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        sa.time_impl(q, k, v, sa.Pattern.dense(), "cpu_k01_dense_flash", **kwargs)


def test_time_impl_refuses_nonfinite_inputs_as_attend_does():
    q, k, v = qkv((1, 1, 16, 4))
    q[0, 0, 3, 1] = np.nan
    with pytest.raises(ValueError, match=r"^invalid q\[0,0,3,1\] = nan"):
        sa.time_impl(q, k, v, sa.Pattern.dense(), "cpu_k01_dense_flash")


def test_bf16_engine_names_the_engine_and_why():
    line = sa.bf16_engine()
    assert re.fullmatch(r"(amx|dot|widen) \((AMX-BF16; )?(vdpbf16ps \d\.\d\d× the FMA FLOP rate|no AVX512-BF16|avx2 build)\)",
                        line), line
    assert sa.bf16_engine() == line  # fixed for the process
    if "avx512_bf16: no" in sa.cpu_isa():
        assert line.startswith("widen")


def test_bf16_engine_refuses_a_bad_override_naming_the_variable():
    env = dict(os.environ, SPARSEATTN_BF16_ENGINE="fast")
    out = subprocess.run([sys.executable, "-c", "import sparseattn; sparseattn.bf16_engine()"],
                         env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "ValueError: invalid SPARSEATTN_BF16_ENGINE = fast: must be auto, dot or widen" in out.stderr, out.stderr


def test_cpu_isa_names_the_active_build_first():
    line = sa.cpu_isa()
    assert re.fullmatch(r"(avx2|avx512) \(supported: [a-z0-9, ]+; avx512_bf16: (yes|no)\)", line), line
    active = line.split()[0]
    assert active in line[line.index("supported:"):]
