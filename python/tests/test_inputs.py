"""What attend accepts: NumPy arrays read in place, torch/JAX arrays through DLPack,
every leading-dimension form; and kernels from several Python threads at once."""
from __future__ import annotations

import threading
import time
import tracemalloc

import numpy as np
import pytest

import sparseattn as sa
from sparseattn import _arrays
from conftest import qkv


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_c_contiguous_float_input_is_not_copied(dtype):
    q, k, v = qkv((1, 2, 1024, 64), dtype=dtype)
    assert _arrays.float_array(q, "q") is q  # handed to C++ as is, read in place
    p = sa.Pattern.window(4)
    sa.attend(q, k, v, p, impl="a3_window_band")  # warm up

    def traced_peak(qq):
        tracemalloc.start()
        tracemalloc.reset_peak()
        sa.attend(qq, k, v, p, impl="a3_window_band")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak

    # NumPy allocations are traced; a copy of q would show as q.nbytes. The control (a
    # Fortran-ordered q, which must be copied) proves the measurement sees copies.
    assert traced_peak(q) < q.nbytes // 8
    assert traced_peak(np.asfortranarray(q)) >= q.nbytes


def test_outputs_own_their_memory_and_keep_q_leading_dims():
    q, k, v = qkv((6, 4), (9, 4), head_dim_v=3)
    o, lse = sa.attend(q, k, v, sa.Pattern.dense())
    assert o.shape == (6, 3) and lse.shape == (6,)
    o4, lse4 = sa.attend(q[None, None], k[None, None], v[None, None], sa.Pattern.dense())
    assert np.array_equal(o4[0, 0], o) and np.array_equal(lse4[0, 0], lse)
    o3, _ = sa.attend(q[None], k[None], v[None], sa.Pattern.dense())
    assert o3.shape == (1, 6, 3)
    o[0, 0] = 5.0  # writable, not aliasing anything of the library's


def test_float16_strided_and_list_inputs_are_converted():
    q, k, v = qkv((1, 1, 8, 4))
    o, _ = sa.attend(q, k, v, sa.Pattern.window(1))
    h = q.astype(np.float16)
    o16, _ = sa.attend(h, k, v, sa.Pattern.window(1))
    o16_ref, _ = sa.attend(h.astype(np.float64), k, v, sa.Pattern.window(1))
    assert np.array_equal(o16, o16_ref)
    big = np.zeros((1, 1, 16, 4))
    big[:, :, ::2] = q
    o_strided, _ = sa.attend(big[:, :, ::2], k, v, sa.Pattern.window(1))
    assert np.array_equal(o_strided, o)
    o_list, _ = sa.attend(q.tolist(), k.tolist(), v.tolist(), sa.Pattern.window(1))
    assert np.array_equal(o_list, o)
    be = q.astype(">f8")
    assert np.array_equal(sa.attend(be, k, v, sa.Pattern.window(1))[0], o)


def test_strided_bool_masks_give_the_result_of_their_contiguous_copy():
    # A bool view with a stride (every other key of a wider mask) must reach C++ converted:
    # read in place it would be the interleaved bytes of `big`.
    q, k, v = qkv((2, 2, 6, 4), (2, 2, 7, 4))
    big = np.ones((2, 14), bool)
    big[:, 1::2] = False                # the bytes a strided read would take for keys 4..6
    big[0, 8:] = False                  # batch 0: keys 4..6 padded (even columns 8, 10, 12)
    kpm = big[:, ::2]                   # [2, 7] view, strides (14, 2)
    assert not kpm.flags.c_contiguous
    copy = np.ascontiguousarray(kpm)
    p = sa.Pattern.window(1, causal=True)
    o, lse = sa.attend(q, k, v, p, key_padding_mask=kpm)
    o_ref, lse_ref = sa.attend(q, k, v, p, key_padding_mask=copy)
    assert np.array_equal(o, o_ref) and np.array_equal(lse, lse_ref)
    assert sa.check(q, k, v, p, o_ref, lse_ref, key_padding_mask=kpm).passed
    np.testing.assert_array_equal(p.mask(6, 7, key_padding_mask=kpm),
                                  p.mask(6, 7, key_padding_mask=copy))
    explicit = np.ones((6, 14), bool)
    explicit[:, 1::2] = False
    explicit[0, ::2] = [True, False, True, False, True, False, True]
    assert np.array_equal(sa.Pattern.explicit(explicit[:, ::2]).mask(6, 7),
                          sa.Pattern.explicit(np.ascontiguousarray(explicit[:, ::2])).mask(6, 7))


def test_float32_input_matches_float32_file_semantics():
    q, k, v = qkv((2, 3, 10, 4), dtype=np.float32)
    o32, _ = sa.attend(q, k, v, sa.Pattern.dense())
    o64, _ = sa.attend(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                       sa.Pattern.dense())
    assert np.array_equal(o32, o64)  # float32 is widened exactly, as the CLI widens files


def test_torch_tensors():
    torch = pytest.importorskip("torch", reason="torch is not installed (CI has none)")
    q, k, v = qkv((1, 2, 12, 8), dtype=np.float32)
    tq, tk, tv = (torch.from_numpy(x.copy()) for x in (q, k, v))
    assert np.shares_memory(_arrays.float_array(tq, "q"), tq.numpy())
    p = sa.Pattern.window(2)
    want, _ = sa.attend(q, k, v, p, impl="cpu_k02_window_band")
    got, _ = sa.attend(tq, tk, tv, p, impl="cpu_k02_window_band")
    assert np.array_equal(got, want)
    tq.requires_grad_(True)
    got_grad, _ = sa.attend(tq, tk, tv, p, impl="cpu_k02_window_band")
    assert np.array_equal(got_grad, want)
    sa.testing.assert_matches_oracle(tq, tk, tv, p, torch.from_numpy(got))


def test_jax_arrays():
    jnp = pytest.importorskip("jax.numpy", reason="jax is not installed (CI has none)")
    q, k, v = qkv((1, 2, 12, 8), dtype=np.float32)
    p = sa.Pattern.longformer(1, [0])
    want, _ = sa.attend(q, k, v, p)
    got, _ = sa.attend(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v), p)
    assert np.array_equal(got, want)


def test_two_threads_run_kernels_at_once_and_get_correct_results():
    cases = []
    for seed, (pattern, impl) in enumerate([(sa.Pattern.window(3), "cpu_k02_window_band"),
                                            (sa.Pattern.bigbird(8, 1, seed=2), "cpu_k05_bigbird_blocks")]):
        q, k, v = qkv((2, 2, 96, 16), seed=seed, dtype=np.float32)
        want = sa.attend(q, k, v, pattern, impl=impl)  # alone, first
        cases.append((q, k, v, pattern, impl, want))
    barrier = threading.Barrier(2)
    errors = []

    def work(case):
        q, k, v, pattern, impl, want = case
        try:
            barrier.wait()
            for _ in range(20):
                o, lse = sa.attend(q, k, v, pattern, impl=impl)
                assert np.array_equal(o, want[0]) and np.array_equal(lse, want[1])
                sa.testing.assert_matches_oracle(q, k, v, pattern, o, lse)
        except BaseException as e:  # noqa: BLE001 -- reported to the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c,)) for c in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_the_gil_is_released_while_a_kernel_runs():
    q, k, v = qkv((1, 1, 1400, 32))
    p = sa.Pattern.dense()
    t0 = time.perf_counter()
    sa.attend(q, k, v, p)  # the serial float64 oracle: O(n^2), no OpenMP
    alone = time.perf_counter() - t0
    worker = threading.Thread(target=sa.attend, args=(q, k, v, p))
    stamps = []
    worker.start()
    while worker.is_alive():
        stamps.append(time.perf_counter())
    worker.join()
    gaps = np.diff(stamps) if len(stamps) > 1 else np.array([alone])
    # Holding the GIL would stall this loop for the whole kernel.
    assert gaps.max() < 0.5 * alone, (gaps.max(), alone)
