"""tools/peers_bench.py's pure logic (`make peers-bench`, docs/benchmarks.md "Peers"):
median, ratio summary, round order, the SDPA band mask, FlexAttention's mask predicates
(each equal to the sparseattn pattern its case compares against), the appended sink key, the
grouped kv heads, HF BigBird's listing and its repeat count, the Markdown table and the
atomic write. Runs without torch."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

import sparseattn as sa
from conftest import ROOT

_spec = importlib.util.spec_from_file_location("peers_bench", ROOT / "tools" / "peers_bench.py")
pb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pb)


def test_median_odd_even_and_unsorted():
    assert pb.median([3.0]) == 3.0
    assert pb.median([5.0, 1.0, 3.0]) == 3.0
    assert pb.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError, match="at least one"):
        pb.median([])


def test_summarize_takes_the_ratio_round_by_round():
    # Round ratios 2, 4, 1 (peer / sparseattn): median 2, range 1..4. The medians of the
    # sides (4 and 1) would give 4: the ratio is per round, then the median.
    s = pb.summarize([2.0, 4.0, 5.0], [1.0, 1.0, 5.0])
    assert s == {"rounds": 3, "peer_median_s": 4.0, "sparseattn_median_s": 1.0,
                 "ratio_median": 2.0, "ratio_min": 1.0, "ratio_max": 4.0}
    with pytest.raises(ValueError, match="same number"):
        pb.summarize([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="same number"):
        pb.summarize([], [])
    with pytest.raises(ValueError, match="> 0"):
        pb.summarize([1.0, 0.0], [1.0, 1.0])


def test_round_order_alternates():
    assert [pb.round_order(r)[0] for r in range(4)] == ["peer", "sparseattn", "peer", "sparseattn"]
    assert all(sorted(pb.round_order(r)) == ["peer", "sparseattn"] for r in range(4))


@pytest.mark.parametrize("seq_len, window", [(1, 0), (9, 2), (33, 5), (16, 40)])
def test_band_mask_is_sparseattns_window_pattern(seq_len, window):
    # What SDPA is given equals the pattern cpu_k02_window_band computes (contract §3).
    want = sa.Pattern.window(window).mask(seq_len)
    got = pb.band_mask(seq_len, window)
    assert got.dtype == bool
    np.testing.assert_array_equal(got, want)


def _grid(mod, seq_len):
    """A mask_mod evaluated on NumPy index grids: [L, L] bool, as Pattern.mask."""
    i = np.arange(seq_len)
    return np.asarray(mod(0, 0, i[:, None], i[None, :]), dtype=bool)


@pytest.mark.parametrize("seq_len", [1, 7, 64, 130])
def test_flex_mask_mods_are_the_patterns_they_are_timed_against(seq_len):
    # What FlexAttention's BlockMask is built from equals the pattern of the sparseattn
    # kernel it races (contract §3), exactly, at awkward lengths too.
    np.testing.assert_array_equal(_grid(pb.causal_mod, seq_len),
                                  sa.Pattern.dense(causal=True).mask(seq_len))
    for w in (0, 3, 256):
        np.testing.assert_array_equal(_grid(pb.window_mod(w), seq_len),
                                      sa.Pattern.window(w).mask(seq_len))
    for w, g in ((2, 1), (5, 4), (16, 0)):
        globals_ = [t for t in range(g) if t < seq_len]
        np.testing.assert_array_equal(
            _grid(pb.window_global_mod(w, g), seq_len),
            sa.Pattern.longformer(w, global_tokens=globals_).mask(seq_len))
    # A planted mistake: a causal predicate off by one differs from the pattern.
    if seq_len > 1:
        shifted = _grid(lambda b, h, q, kv: q > kv, seq_len)
        assert not np.array_equal(shifted, sa.Pattern.dense(causal=True).mask(seq_len))


def test_an_appended_sink_key_is_attention_with_sinks():
    # flex_sinks: key L appended, value 0, score replaced by the head's sink logit, allowed
    # to every query. Its mask is the causal pattern plus that column ...
    L = 6
    i, j = np.arange(L), np.arange(L + 1)
    got = np.asarray(pb.sink_mod(pb.causal_mod, L)(0, 0, i[:, None], j[None, :]), dtype=bool)
    want = np.concatenate([sa.Pattern.dense(causal=True).mask(L), np.ones((L, 1), bool)], 1)
    np.testing.assert_array_equal(got, want)
    # ... and its softmax, written out in NumPy, is sparseattn's attention with sinks
    # (contract §2.9): the sink adds exp(sink) to the denominator, nothing to the sum.
    rng = np.random.default_rng(5)
    H, d = 2, 4
    q, k, v = (rng.standard_normal((1, H, L, d)) for _ in range(3))
    sinks = np.array([0.3, -1.2])
    s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(d)
    s = np.concatenate([s, np.broadcast_to(sinks[None, :, None, None], (1, H, L, 1))], -1)
    s = np.where(got[None, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p, np.concatenate([v, np.zeros((1, H, 1, d))], 2))
    ref_o, _lse = sa.attend(q, k, v, sa.Pattern.dense(causal=True), sinks=sinks)
    np.testing.assert_allclose(o, ref_o, rtol=1e-12, atol=1e-12)


def test_kv_heads_of_groups_divide_the_heads():
    assert pb.kv_heads_of(12, 4) == 3
    assert pb.kv_heads_of(12, 1) == 12
    with pytest.raises(ValueError, match="gqa-group = 5"):
        pb.kv_heads_of(12, 5)
    with pytest.raises(ValueError, match="gqa-group = 0"):
        pb.kv_heads_of(12, 0)


def test_case_list_names_every_peer_case():
    assert pb.CASES == ("dense", "window", "longformer", "bigbird", "flex_causal",
                        "flex_window", "flex_longformer", "flex_bigbird", "gqa_dense",
                        "gqa_causal", "decode", "flex_softcap", "flex_sinks")


def test_hf_bigbird_listing_rows():
    nb = 8
    assert pb.hf_bigbird_listing(1, nb, [5, 6]) == [0, 1, 2, 7, 5, 6]
    assert pb.hf_bigbird_listing(3, nb, [5, 6]) == [0, 2, 3, 4, 5, 6, 7]
    assert pb.hf_bigbird_listing(6, nb, [1, 2]) == [0, 5, 6, 7, 1, 2]
    with pytest.raises(ValueError, match="q_block = 0"):
        pb.hf_bigbird_listing(0, nb, [1])
    with pytest.raises(ValueError, match="q_block = 7"):
        pb.hf_bigbird_listing(7, nb, [1])


def test_repeated_listings_counts_every_extra_listing():
    nb, r = 8, 2
    clean = np.array([[[4, 5], [5, 6], [1, 6], [1, 2], [2, 3], [3, 4]]])  # [1, nb-2, r]
    assert pb.repeated_listings(clean) == 0
    # HF's eval mode: every random block is 0, listed 1 + r times in every middle row.
    zeros = np.zeros((2, nb - 2, r), dtype=np.int64)
    assert pb.repeated_listings(zeros) == 2 * (nb - 2) * r
    # One draw of the last block (a global one) in row 2: one extra listing.
    one = clean.copy()
    one[0, 2, 0] = nb - 1
    assert pb.repeated_listings(one) == 1


def test_markdown_table_rows_and_notes():
    res = dict(case="dense", peer="torch SDPA", impl="cpu_k01_dense_flash", max_abs_diff=3.6e-7)
    res.update(pb.summarize([0.30, 0.20, 0.25], [0.20, 0.20, 0.10]))
    alt = pb.summarize([0.2, 0.1, 0.2], [0.20, 0.20, 0.10])
    alt["means"] = "less the probe"
    bb = dict(case="bigbird", peer="HF", impl="cpu_k05_bigbird_blocks", max_abs_diff=None,
              without_probe=alt, **pb.summarize([1.0], [0.5]))
    md = pb.markdown_table([res, bb])
    lines = md.splitlines()
    assert lines[0].startswith("| case | peer (timed) | sparseattn | peer ms |")
    assert lines[2] == ("| dense | torch SDPA | `cpu_k01_dense_flash` | 250.0 | 200.0 | **1.50×** "
                        "| 1.00–2.50 | 3.6e-07 |")
    assert lines[3] == "| bigbird | HF | `cpu_k05_bigbird_blocks` | 1000.0 | 500.0 | **2.00×** | 2.00–2.00 | — |"
    assert lines[5] == "- bigbird: less the probe: peer 200.0 ms, ratio 1.00× (0.50–2.00)."
    flex = dict(res, case="flex_causal", first_call_s=123.4)
    assert pb.markdown_table([flex]).splitlines()[-1] == (
        "- flex_causal: first FlexAttention call (torch.compile included, not in the ratio) "
        "123.4 s.")


def test_atomic_write_replaces_whole_and_leaves_no_temp(tmp_path):
    path = str(tmp_path / "peers.json")
    pb.atomic_write(path, json.dumps({"a": 1}))
    pb.atomic_write(path, json.dumps({"b": 2}))
    assert json.loads(open(path).read()) == {"b": 2}
    assert os.listdir(tmp_path) == ["peers.json"]
