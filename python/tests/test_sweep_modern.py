"""sparseattn.sweep() with grouped kv heads, softcap and sinks (docs/contract.md §2.7–§2.9).

Every point's problem and its float64 oracle carry the modifiers (api/sweep.h); the engine's
planted kernel that claims the features but computes plain attention is caught in
tests/sweep/sweep_modern_test.cpp. Here: the points validate, "auto" runs only kernels whose
registry features serve the request, a named kernel without them is refused by name, and
bad values raise one ValueError naming the keyword.
"""
from typing import Any, Dict, Set

import numpy as np
import pytest

import sparseattn as sa

SINKS = np.array([0.5, -1.0, 2.0, 1.5])
MODS: Dict[str, Any] = {"num_kv_heads": 2, "softcap": 5.0, "sinks": SINKS}


def _sweep(**kw: Any) -> sa.SweepResult:
    args: Dict[str, Any] = {"num_heads": 4, "head_dim": 16, "repeats": 1}
    args.update(kw)
    return sa.sweep(sa.Pattern.window(8), args.pop("seq_len", [64]), **args)


def test_every_point_is_validated_with_the_modifiers() -> None:
    r = _sweep(seq_len=[64, 128], impl="a6_flash_modern,cpu_k06_generic_tiles", **MODS)
    assert r.num_heads == 4 and r.num_kv_heads == 2
    assert r.score_mods == "softcap=5, sinks"
    assert r.dense_baseline == "cpu_k01_dense_flash"
    assert r.failures == 0
    assert len(r.points) == 6  # 2 sizes x (2 kernels + the dense baseline)
    for p in r.points:
        assert p.validated, p
        assert p.oracle == "full"
        assert p.median_s is not None and p.median_s > 0


def _impls(r: sa.SweepResult) -> Set[str]:
    assert all(p.validated for p in r.points)
    return {p.impl for p in r.points}


def test_auto_runs_only_kernels_whose_features_serve_the_request() -> None:
    plain = _impls(_sweep(target="cpu", dense_baseline="none"))
    modern = _impls(_sweep(target="cpu", dense_baseline="none", **MODS))
    features = {i["name"]: i["features"] for i in sa.impls()}
    assert modern, "no cpu kernel serves grouped heads, softcap and sinks"
    assert modern <= plain
    for name in modern:
        for f in ("grouped-query heads", "softcap", "sinks"):
            assert f in features[name], (name, features[name])
    ref_plain = _impls(_sweep(target="reference", dense_baseline="none"))
    ref_modern = _impls(_sweep(target="reference", dense_baseline="none", **MODS))
    assert {"a2_sparse_rows", "a5_flash_tiled"} <= ref_plain  # plain kernels, plain problem
    assert ref_modern == {"a1_dense_masked", "a6_flash_modern"}


def test_a_named_kernel_without_the_features_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"^invalid impl = a2_sparse_rows: does not serve "
                                         r"grouped-query heads, softcap, sinks"):
        _sweep(impl="a6_flash_modern,a2_sparse_rows", **MODS)
    with pytest.raises(ValueError, match=r"^invalid dense_baseline = a5_flash_tiled: does not "
                                         r"serve grouped-query heads"):
        _sweep(impl="a6_flash_modern", dense_baseline="a5_flash_tiled", **MODS)


@pytest.mark.parametrize("kw, message", [
    ({"softcap": 0.0}, r"^invalid softcap = 0: must be a finite number > 0"),
    ({"softcap": -2.0}, r"^invalid softcap = -2: must be a finite number > 0"),
    ({"sinks": SINKS[:3]}, r"^invalid sinks shape = \[3\]: must be \[4\]"),
    ({"num_kv_heads": 3}, r"^invalid num_kv_heads = 3: must be an integer in \[1, 4\] that "
                          r"divides num_heads 4"),
    ({"num_kv_heads": 8}, r"^invalid num_kv_heads = 8: must be an integer in \[1, 4\]"),
    ({"num_kv_heads": 0}, r"^invalid num_kv_heads = 0: "),
])
def test_bad_values_raise_one_error_naming_the_keyword(kw: Dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _sweep(impl="a6_flash_modern", **kw)
