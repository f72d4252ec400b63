"""Packed variable-length batches, a KV cache filled to ``cache_seqlens`` and paged KV from
Python (docs/contract.md §2.10–§2.12).

The expected values come from NumPy written here: each sequence sliced out by hand and run
through a two-pass softmax over its own causal window — independent of the C++ walk; bad
values raise one ValueError naming the keyword.
"""
import numpy as np
import pytest

import sparseattn as sa
from sparseattn.testing import split_packed


def reference(q, k, v, window=None, causal=True):
    """One sequence, [H, Lq, d] against [Hkv, Lk, d], bottom-right aligned (contract §3.1)."""
    H, Lq, D = q.shape
    Hkv, Lk = k.shape[0], k.shape[1]
    kr, vr = np.repeat(k, H // Hkv, axis=0), np.repeat(v, H // Hkv, axis=0)
    p = np.arange(Lq)[:, None] + Lk - Lq
    j = np.arange(Lk)[None, :]
    allowed = np.ones((Lq, Lk), bool)
    if causal:
        allowed &= j <= p
    if window is not None:
        allowed &= np.abs(j - p) <= window
    s = np.where(allowed, np.einsum("hid,hjd->hij", q, kr) / np.sqrt(D), -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    z = e.sum(axis=-1, keepdims=True)
    o = np.einsum("hij,hjd->hid", np.divide(e, z, out=np.zeros_like(e), where=z > 0), vr)
    with np.errstate(divide="ignore"):
        lse = (m + np.log(z))[..., 0]
    return o, lse


@pytest.fixture
def packed():
    rng = np.random.default_rng(0)
    cu_q = np.array([0, 3, 3, 9, 10], dtype=np.int32)
    cu_k = np.array([0, 5, 6, 12, 12], dtype=np.int64)  # the last sequence has no key
    q = rng.standard_normal((10, 4, 8))
    k = rng.standard_normal((12, 2, 8))
    v = rng.standard_normal((12, 2, 8))
    return q, k, v, cu_q, cu_k


def test_varlen_matches_each_sequence_sliced_by_hand(packed):
    q, k, v, cu_q, cu_k = packed
    o, lse = sa.attend(q, k, v, sa.Pattern.window(window=2, causal=True),
                       cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    assert o.shape == (10, 4, 8) and lse.shape == (4, 10)
    for b, (ob, lb) in enumerate(zip(split_packed(o, cu_q), split_packed(lse, cu_q, axis=1))):
        if ob.shape[0] == 0:
            continue
        qs = q[cu_q[b]:cu_q[b + 1]].transpose(1, 0, 2)
        ks = k[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2)
        vs = v[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2)
        if ks.shape[1] == 0:  # no keys: fully masked rows
            assert np.all(ob == 0) and np.all(lb == -np.inf)
            continue
        want_o, want_lse = reference(qs, ks, vs, window=2)
        np.testing.assert_allclose(ob.transpose(1, 0, 2), want_o, atol=1e-12)
        np.testing.assert_allclose(lb, want_lse, atol=1e-12)


def test_varlen_kernel_passes_check_and_a_crossing_candidate_fails(packed):
    q, k, v, cu_q, cu_k = packed
    pat = sa.Pattern.window(window=2, causal=True)
    o, lse = sa.attend(q, k, v, pat, impl="cpu_k06_generic_tiles",
                       cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    report = sa.check(q, k, v, pat, o, lse, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    assert report.passed, report.summary()
    bad = o.copy()
    bad[4] += 0.01  # sequence 2, its second row
    report = sa.check(q, k, v, pat, bad, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    assert not report.passed
    assert "sequence 2" in report.o.reason


def test_varlen_gradients_are_packed_and_match_finite_differences(packed):
    q, k, v, cu_q, cu_k = packed
    pat = sa.Pattern.dense(causal=True)
    dout = np.random.default_rng(1).standard_normal((10, 4, 8))
    r = sa.attend(q, k, v, pat, dout=dout, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    assert r.dq.shape == q.shape and r.dk.shape == k.shape and r.dv.shape == v.shape
    h = 1e-6
    for t, g in ((q, r.dq), (k, r.dk), (v, r.dv)):
        for idx in [(0, 0, 0), (4, 1, 3), (t.shape[0] - 1, 1, 7)]:
            up, down = t.copy(), t.copy()
            up[idx] += h
            down[idx] -= h
            args = {"q": q, "k": k, "v": v}
            name = "q" if t is q else "k" if t is k else "v"
            lu = np.sum(dout * sa.attend(**{**args, name: up}, pattern=pat, cu_seqlens_q=cu_q,
                                         cu_seqlens_k=cu_k)[0])
            ld = np.sum(dout * sa.attend(**{**args, name: down}, pattern=pat, cu_seqlens_q=cu_q,
                                         cu_seqlens_k=cu_k)[0])
            assert abs(g[idx] - (lu - ld) / (2 * h)) < 1e-6


def test_decode_reads_only_the_filled_slots_contiguous_and_paged():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 4, 1, 8))
    cache_k = rng.standard_normal((2, 2, 16, 8))
    cache_v = rng.standard_normal((2, 2, 16, 8))
    seqlens = np.array([5, 16], dtype=np.int32)
    cache_k[0, :, 5:] = np.nan  # never read (contract §2.11)
    o, lse = sa.attend(q, cache_k, cache_v, sa.Pattern.dense(causal=True), cache_seqlens=seqlens)
    for b in range(2):
        n = seqlens[b]
        want_o, want_lse = reference(q[b], cache_k[b, :, :n], cache_v[b, :, :n])
        np.testing.assert_allclose(o[b], want_o, atol=1e-12)
        np.testing.assert_allclose(lse[b], want_lse, atol=1e-12)
    # The same keys in shuffled pages of 4 slots; entries past the length are -1.
    pages_k = np.zeros((8, 2, 4, 8))
    pages_v = np.zeros((8, 2, 4, 8))
    table = np.array([[6, 1, -1, -1], [0, 3, 7, 2]], dtype=np.int32)
    for b in range(2):
        for m in range(4):
            if table[b, m] >= 0:
                pages_k[table[b, m]] = np.nan_to_num(cache_k[b, :, 4 * m:4 * m + 4])
                pages_v[table[b, m]] = cache_v[b, :, 4 * m:4 * m + 4]
    op, lp = sa.attend(q, pages_k, pages_v, sa.Pattern.dense(causal=True),
                       cache_seqlens=seqlens, block_table=table)
    np.testing.assert_array_equal(op, o)
    report = sa.check(q, pages_k, pages_v, sa.Pattern.dense(causal=True), op, lp,
                      cache_seqlens=seqlens, block_table=table)
    assert report.passed, report.summary()


@pytest.mark.parametrize("kwargs, says", [
    ({"cu_seqlens_q": np.array([0, 3, 3, 9, 10], np.int32)}, "cu_seqlens_k"),
    ({"cu_seqlens_q": np.array([0.0, 3, 3, 9, 10]), "cu_seqlens_k": np.array([0, 5, 6, 12, 12])},
     "cu_seqlens_q dtype"),
    ({"cu_seqlens_q": np.array([0, 4, 3, 9, 10]), "cu_seqlens_k": np.array([0, 5, 6, 12, 12])},
     "cu_seqlens_q[2] = 3"),
    ({"cu_seqlens_q": np.array([0, 3, 3, 9, 11]), "cu_seqlens_k": np.array([0, 5, 6, 12, 12])},
     "cu_seqlens_q[4] = 11"),
    ({"cu_seqlens_q": np.array([0, 3, 3, 9, 10]), "cu_seqlens_k": np.array([0, 5, 6, 12, 12]),
      "key_padding_mask": np.ones((1, 12), bool)}, "key_padding_mask"),
])
def test_bad_layouts_name_the_keyword(packed, kwargs, says):
    q, k, v, _, _ = packed
    with pytest.raises(ValueError) as e:
        sa.attend(q, k, v, sa.Pattern.dense(), **kwargs)
    assert says in str(e.value)


def test_split_packed_refuses_offsets_that_do_not_pack():
    with pytest.raises(ValueError, match="cu_seqlens\\[2\\]"):
        split_packed(np.zeros((5, 2)), np.array([0, 3, 2, 5]))


def test_varlen_mask_is_block_diagonal_of_each_sequences_own_mask():
    cu_q, cu_k = np.array([0, 3, 3, 8]), np.array([0, 4, 6, 10])
    pat = sa.Pattern.window(window=1, causal=True)
    m = pat.mask(cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    want = np.zeros((8, 10), bool)
    for b in range(3):
        lq, lk = cu_q[b + 1] - cu_q[b], cu_k[b + 1] - cu_k[b]
        if lq and lk:
            want[cu_q[b]:cu_q[b + 1], cu_k[b]:cu_k[b + 1]] = pat.mask(lq, lk)
    np.testing.assert_array_equal(m, want)
    assert m[0].tolist() == [True, True, False, False] + [False] * 6  # p = 0 + 4 - 3 = 1


def test_time_impl_times_the_walk_after_checking_it(packed):
    q, k, v, cu_q, cu_k = packed
    pat = sa.Pattern.window(window=2, causal=True)
    t = sa.time_impl(q, k, v, pat, "cpu_k02_window_band", repeats=2, warmup=0,
                     cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    assert t.seconds.shape == (2,) and np.all(t.seconds > 0)
    o, _ = sa.attend(q, k, v, pat, impl="cpu_k02_window_band", cu_seqlens_q=cu_q,
                     cu_seqlens_k=cu_k)
    np.testing.assert_array_equal(t.o, o)


# ---- info under a layout: the CLI's `info --json`, from Python (api/layout_info.h) -----------
def test_info_under_a_layout_is_the_clis(cli, tmp_path):
    """Pattern.info(cu_seqlens_q=...) and Pattern.info(L_q, cache_seqlens=...) return the dict
    `sparseattn info --json` prints for the same lists; the hand count pins the numbers."""
    import json
    cu_q, cu_k = np.array([0, 5, 5, 13], np.int32), np.array([0, 7, 9, 17], np.int64)
    lens = np.array([5, 0, 1], np.int32)
    for name, x in (("cu_q", cu_q), ("cu_k", cu_k), ("lens", lens)):
        np.save(tmp_path / f"{name}.npy", x)
    pat = sa.Pattern.window(window=2, causal=True)
    got = pat.info(cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, num_heads=2, head_dim=8)
    want = json.loads(cli(["info", "--cu-seqlens-q", tmp_path / "cu_q.npy", "--cu-seqlens-k",
                           tmp_path / "cu_k.npy", "--pattern", "window", "--window", "2",
                           "--causal", "--num-heads", "2", "--head-dim", "8", "--json"]).stdout)
    assert got == want
    # By hand: sequence 0 (5 queries at 2..6 of 7 keys) 3 keys each; sequence 1 no rows;
    # sequence 2 (8 against 8) 1 + 2 + 6 * 3; two heads.
    assert got["layout"] == "varlen" and got["nnz"] == 2 * (15 + 0 + 21)
    assert [s["nnz"] for s in got["sequences"]] == [30, 0, 42]

    dense = sa.Pattern.dense(causal=True)
    got = dense.info(2, cache_seqlens=lens, num_heads=2, head_dim=4)
    want = json.loads(cli(["info", "--cache-seqlens", tmp_path / "lens.npy", "--seq-len", "2",
                           "--pattern", "dense", "--causal", "--num-heads", "2",
                           "--head-dim", "4", "--json"]).stdout)
    assert got == want
    # Element 0: 4 + 5 keys; element 1 (no key): 2 empty rows; element 2 (1 key): query 0
    # at position -1 sees nothing, query 1 one key.
    assert got["layout"] == "kv_cache" and got["nnz"] == 2 * (9 + 0 + 1)
    assert got["empty_rows"] == 2 * (0 + 2 + 1) and "mask_pairs" not in got


@pytest.mark.parametrize("kwargs, says", [
    ({"cu_seqlens_q": np.array([0, 3])}, "cu_seqlens_k"),
    ({"cu_seqlens_q": np.array([0, 3]), "cu_seqlens_k": np.array([0, 4]), "seq_len_q": 3},
     "seq_len_q = 3"),
    ({"cu_seqlens_q": np.array([0, 3]), "cu_seqlens_k": np.array([0, 4]), "seq_len_k": 4},
     "seq_len_k = 4"),
    ({"cu_seqlens_q": np.array([0, 4, 3]), "cu_seqlens_k": np.array([0, 4, 5])},
     "cu_seqlens_q[2] = 3"),
    ({"cache_seqlens": np.array([3, -1]), "seq_len_q": 1}, "cache_seqlens[1] = -1"),
    ({"cache_seqlens": np.array([3, 1])}, "seq_len_q = missing"),
    ({"cache_seqlens": np.array([3, 1]), "block_table": np.array([[0], [1]]), "seq_len_q": 1},
     "block_table = given"),
    ({"block_table": np.array([[0], [1]]), "seq_len_q": 1}, "cache_seqlens = missing"),
    ({"cache_seqlens": np.array([3.0]), "seq_len_q": 1}, "cache_seqlens dtype"),
])
def test_info_refuses_bad_layouts_naming_the_keyword(kwargs, says):
    with pytest.raises(ValueError) as e:
        sa.Pattern.dense().info(**kwargs)
    assert says in str(e.value) and "\n" not in str(e.value)


# ---- check's gradients of a packed batch (contract §7.8) --------------------------------------
def test_check_judges_packed_gradients_and_names_the_sequence(packed):
    """attend's packed dq, dk, dv pass check(dout=...); a dq that is not 0 on the row of the
    sequence without keys (3), a dk of sequence 2 read from sequence 0's rows and a dv that
    is not 0 on the key no query reads (sequence 1) each fail, located by sequence."""
    q, k, v, cu_q, cu_k = packed
    pat = sa.Pattern.window(window=3, causal=True)
    layout = {"cu_seqlens_q": cu_q, "cu_seqlens_k": cu_k}
    dout = np.random.default_rng(3).standard_normal((10, 4, 8))
    r = sa.attend(q, k, v, pat, dout=dout, **layout)
    report = sa.check(q, k, v, pat, r.o, r.lse, dout=dout, dq=r.dq, dk=r.dk, dv=r.dv, **layout)
    assert report.passed, report.summary()
    assert report.to_dict()["gradient_oracle"] == "b1_dense_masked_grad"
    assert report.dq.num_compared == report.dq.num_elements == 10 * 4 * 8

    bad_dq = r.dq.copy()
    bad_dq[9] = 0.5  # sequence 3: one query, no key
    bad_dk = r.dk.copy()
    bad_dk[6:11] = r.dk[0:5]  # sequence 2's keys given sequence 0's gradients
    bad_dv = r.dv.copy()
    bad_dv[5] = 0.25  # sequence 1's only key: no query reads it
    for kw, tensor, seq in (({"dq": bad_dq}, "dq", 3), ({"dk": bad_dk}, "dk", 2),
                            ({"dv": bad_dv}, "dv", 1)):
        grads = {"dq": r.dq, "dk": r.dk, "dv": r.dv, **kw}
        report = sa.check(q, k, v, pat, r.o, dout=dout, **grads, **layout)
        assert not report.passed
        t = report.to_dict()[tensor]
        assert t["reason"].startswith(f"sequence {seq}: "), t["reason"]
        assert t["worst_index"][0] == seq and t["worst_row"]["batch"] == seq
        others = [n for n in ("dq", "dk", "dv") if n != tensor]
        assert all(report.to_dict()[n]["pass"] for n in others)


def test_check_refuses_gradients_it_cannot_judge():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 2, 1, 8))
    kc = rng.standard_normal((2, 2, 6, 8))
    o = np.zeros_like(q)
    cache = {"cache_seqlens": np.array([3, 6])}
    with pytest.raises(ValueError, match="invalid cache_seqlens = given: .*forward only"):
        sa.check(q, kc, kc, sa.Pattern.dense(), o, dout=o, dq=q, **cache)
    with pytest.raises(ValueError, match="invalid dq = .*needs dout"):
        sa.check(q, kc, kc, sa.Pattern.dense(), o, dq=q, **cache)
    cu = {"cu_seqlens_q": np.array([0, 2]), "cu_seqlens_k": np.array([0, 3])}
    qp, kp = rng.standard_normal((2, 2, 8)), rng.standard_normal((3, 2, 8))
    with pytest.raises(ValueError, match="invalid dq_global = given"):
        sa.check(qp, kp, kp, sa.Pattern.dense(), qp, dout=qp, dq_global=qp, **cu)
    with pytest.raises(ValueError, match="invalid dout shape"):
        sa.check(qp, kp, kp, sa.Pattern.dense(), qp, dout=qp[:1], dq=qp, **cu)


def test_check_judges_the_sinks_gradient_summed_over_the_sequences(packed):
    """dσ sums over every sequence (contract §7.8): attend's passes, one scaled fails, and a
    sinks gradient without sinks is refused."""
    q, k, v, cu_q, cu_k = packed
    pat = sa.Pattern.dense(causal=True)
    layout = {"cu_seqlens_q": cu_q, "cu_seqlens_k": cu_k}
    sinks = np.array([0.5, -1.0, 0.0, 2.0])
    dout = np.random.default_rng(5).standard_normal((10, 4, 8))
    r = sa.attend(q, k, v, pat, dout=dout, sinks=sinks, **layout)
    assert np.all(r.dsinks != 0)
    report = sa.check(q, k, v, pat, r.o, dout=dout, dq=r.dq, dsinks=r.dsinks, sinks=sinks,
                      **layout)
    assert report.passed, report.summary()
    report = sa.check(q, k, v, pat, r.o, dout=dout, dsinks=1.1 * r.dsinks, sinks=sinks, **layout)
    assert not report.passed and not report.to_dict()["dsinks"]["pass"]
    with pytest.raises(ValueError, match="invalid dsinks = array: needs sinks"):
        sa.check(q, k, v, pat, r.o, dout=dout, dsinks=r.dsinks, **layout)
