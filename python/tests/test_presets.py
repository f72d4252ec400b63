"""One layer of a model preset through Python (contract §6.4): ``attend(..., preset=,
layer=)``, ``check(q, k, v, None, o, preset=, layer=)`` and ``Pattern.preset`` equal the
explicit pattern, scale and softcap exactly; each refusal names its keyword."""
from __future__ import annotations

import numpy as np
import pytest

import sparseattn as sa


def qkv(hq: int, hkv: int, n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((1, hq, n, d)) * 4, rng.standard_normal((1, hkv, n, d)),
            rng.standard_normal((1, hkv, n, d)))


def test_gemma2_layers_equal_their_explicit_call():
    q, k, v = qkv(16, 8, 32, 256)
    for layer, pattern in ((0, sa.Pattern.window(4095, causal=True)),
                           (1, sa.Pattern.dense(causal=True))):
        o, lse = sa.attend(q, k, v, preset="gemma-2-9b", layer=layer)
        o2, lse2 = sa.attend(q, k, v, pattern, scale=0.0625, softcap=50.0)
        assert np.array_equal(o, o2) and np.array_equal(lse, lse2)
        report = sa.check(q, k, v, None, o, lse, preset="gemma-2-9b", layer=layer)
        assert report.passed


def test_llama4_chunked_layer_and_pattern_preset():
    q, k, v = qkv(40, 8, 16, 128)
    o, lse = sa.attend(q, k, v, preset="llama-4-scout", layer=0)
    o2, lse2 = sa.attend(q, k, v, sa.Pattern.chunked(8192, causal=True), scale=128 ** -0.5)
    assert np.array_equal(o, o2) and np.array_equal(lse, lse2)
    m = sa.Pattern.preset("llama-4-scout", 0).mask(16)
    assert np.array_equal(m, sa.Pattern.chunked(8192, causal=True).mask(16))


def test_gpt_oss_needs_sinks():
    q, k, v = qkv(64, 8, 16, 64)
    sinks = np.linspace(-1, 1, 64)
    o, lse = sa.attend(q, k, v, preset="gpt-oss-20b", layer=0, sinks=sinks)
    o2, lse2 = sa.attend(q, k, v, sa.Pattern.window(127, causal=True), scale=0.125, sinks=sinks)
    assert np.array_equal(o, o2) and np.array_equal(lse, lse2)
    with pytest.raises(ValueError, match="invalid sinks = missing"):
        sa.attend(q, k, v, preset="gpt-oss-20b", layer=0)


@pytest.mark.parametrize("kwargs, needle", [
    ({"scale": 0.1}, "invalid scale"),
    ({"softcap": 30.0}, "invalid softcap"),
    ({"layer": 42}, "must be in [0, 42)"),
    ({"layer": None}, "invalid layer = missing"),
    ({"preset": "gemma-9"}, "must be one of: bigbird-roberta-base"),
    ({"sinks": np.zeros(16)}, "invalid sinks"),
])
def test_refusals_name_their_keyword(kwargs, needle):
    q, k, v = qkv(16, 8, 8, 256)
    args = {"preset": "gemma-2-9b", "layer": 0, **kwargs}
    with pytest.raises(ValueError) as e:
        sa.attend(q, k, v, **args)
    assert needle in str(e.value)


def test_shapes_must_be_the_presets():
    q, k, v = qkv(8, 8, 8, 256)
    with pytest.raises(ValueError, match=r"invalid q heads = 8 .*num_heads 16"):
        sa.attend(q, k, v, preset="gemma-2-9b", layer=0)
    q, k, v = qkv(16, 8, 8, 128)
    with pytest.raises(ValueError, match=r"invalid q head_dim = 128 .*head_dim 256"):
        sa.attend(q, k, v, preset="gemma-2-9b", layer=0)
    q, k, v = qkv(16, 8, 8, 256)
    with pytest.raises(ValueError, match="invalid pattern"):
        sa.attend(q, k, v, sa.Pattern.dense(), preset="gemma-2-9b", layer=0)
    with pytest.raises(ValueError, match="invalid layer = 1"):
        sa.attend(q, k, v, sa.Pattern.dense(), layer=1)
