"""sparseattn.sweep on a busy machine (docs/benchmarks.md, "On a busy machine"): the
``threads`` keyword, both clocks on every point, the load verdict and the clock the fits
read, as api/sweep.h reports them (its rules are unit-tested on synthetic inputs in
tests/sweep/sweep_load_test.cpp)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import sparseattn as sa


def _loglog_slope(xs, ys):
    lx, ly = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    return float(np.polyfit(lx, ly, 1)[0])


def test_sweep_records_both_clocks_and_says_which_it_fitted():
    r = sa.sweep(sa.Pattern.window(8), [64, 128, 256], impl="cpu_k06_generic_tiles",
                 head_dim=16, repeats=2, dense_baseline="none", threads=1)
    assert r.threads == 1 and r.context["omp_threads"] == 1
    assert r.load["threads"] == 1 and r.load["source"] == "procs_running"
    assert r.fit_measure == r.load["fit_measure"] == ("cpu" if r.load["busy"] else "wall")
    for p in r.points:
        assert p.validated and p.cpu_median_s > 0 and p.median_s > 0
        assert p.cpu_min_s <= p.cpu_median_s <= p.cpu_max_s
        assert p.others_runnable >= 0
    (f,) = r.fits
    assert f.measure == r.fit_measure
    key = "cpu_median_s" if f.measure == "cpu" else "median_s"
    ns = [p.seq_len for p in r.points]
    assert f.slope == pytest.approx(_loglog_slope(ns, [getattr(p, key) for p in r.points]),
                                    abs=1e-9)
    assert f.flop_slope == pytest.approx(_loglog_slope(ns, [p.flops for p in r.points]), abs=1e-9)


@pytest.mark.parametrize("bad", [0, 1025, -1, 1.5, True, "two"])
def test_bad_threads_are_refused_naming_the_keyword(bad):
    with pytest.raises(ValueError, match="threads"):
        sa.sweep(sa.Pattern.window(8), [64], impl="cpu_k06_generic_tiles", head_dim=16,
                 repeats=1, threads=bad)


def test_auto_threads_leave_the_busy_cores_and_say_so():
    r = sa.sweep(sa.Pattern.window(8), [64], impl="cpu_k06_generic_tiles", head_dim=16,
                 repeats=1, dense_baseline="none", threads="auto")
    assert 1 <= r.threads <= r.load["cores"]
    assert any(n.startswith("threads auto: ") for n in r.notes), r.notes
    assert not math.isnan(r.load["others_runnable"])
