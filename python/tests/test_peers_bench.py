"""tools/peers_bench.py's pure logic (`make peers-bench`, docs/benchmarks.md "Peers"):
median, ratio summary, round order, the SDPA band mask, HF BigBird's listing and its
repeat count, the Markdown table and the atomic write. Runs without torch."""
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


def test_atomic_write_replaces_whole_and_leaves_no_temp(tmp_path):
    path = str(tmp_path / "peers.json")
    pb.atomic_write(path, json.dumps({"a": 1}))
    pb.atomic_write(path, json.dumps({"b": 2}))
    assert json.loads(open(path).read()) == {"b": 2}
    assert os.listdir(tmp_path) == ["peers.json"]
