"""Every bad input of docs/contract.md §5 raises the right exception with the CLI's
one-line message (flags renamed to keywords), and nothing crashes the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import sparseattn as sa
from conftest import qkv

Q, K, V = qkv((1, 2, 8, 4))


@pytest.mark.parametrize("build,message", [
    (lambda: sa.Pattern.window(-1),
     "invalid window = -1: must be an integer >= 0 (one-sided, in steps)"),
    (lambda: sa.Pattern.window(2, dilation=0), "invalid dilation = 0: must be an integer >= 1"),
    (lambda: sa.Pattern.bigbird(0), "invalid block_size = 0: must be an integer >= 1 (tokens)"),
    (lambda: sa.Pattern.bigbird(4, -2), "invalid num_random_blocks = -2: must be an integer >= 0"),
    (lambda: sa.Pattern.random(1, -1), "invalid num_random = -1: must be an integer >= 0"),
    (lambda: sa.Pattern.bigbird_etc(4, 1, -1), "invalid num_global_tokens = -1: must be an integer >= 0"),
    (lambda: sa.Pattern.longformer(1, [2, -3]), "invalid global_tokens[1] = -3: must be a token position"),
    (lambda: sa.Pattern.random(1, 1, seed=-1), "invalid seed = -1: must be an integer in [0, 2^64)"),
    (lambda: sa.Pattern.window(2.5), "invalid window = 2.5: must be an integer"),
    (lambda: sa.Pattern.window(2**70), "invalid window = 1180591620717411303424: must be an integer"),
])
def test_bad_pattern_parameters(build, message):
    with pytest.raises(ValueError) as e:
        build()
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("pattern,n,message", [
    (sa.Pattern.longformer(1, [8]), 8, "invalid global_tokens[0] = 8: positions must be in [0, seq_len_k)"),
    (sa.Pattern.bigbird(2, 1, random_table=np.array([[[9], [0], [1]]])), 10,
     "invalid random_table entry = 9"),
    (sa.Pattern.bigbird(2, 1, random_table=np.zeros((1, 2, 1), dtype=np.int64)), 10,
     "invalid random_table shape = [1, 2, 1]"),
    (sa.Pattern.explicit(np.ones((3, 4), dtype=bool)), 8, "invalid mask shape = [3, 4]"),
    (sa.Pattern.hierarchical([0, 1, 0]), 3, "invalid segment_ids[2] = 0"),
    (sa.Pattern.bigbird_etc(2, 0, num_global_tokens=9), 8, "invalid num_global_tokens = 9"),
])
def test_parameters_that_do_not_fit_the_sizes(pattern, n, message):
    with pytest.raises(ValueError) as e:
        pattern.mask(n)
    assert str(e.value).startswith(message)
    q, k, v = qkv((1, 1, n, 4))
    with pytest.raises(ValueError):
        sa.attend(q, k, v, pattern)


@pytest.mark.parametrize("args,message", [
    (dict(k=np.zeros((1, 2, 8, 5))), "invalid k head_dim = 5: must equal q head_dim (4)"),
    (dict(v=np.zeros((1, 2, 7, 4))), "invalid v seq_len = 7: must equal k seq_len (8)"),
    (dict(k=np.zeros((1, 3, 8, 4)), v=np.zeros((1, 3, 8, 4))), "invalid k num_heads = 3"),
    (dict(q=np.zeros((8,))), "invalid q shape = [8]: rank must be 2"),
    (dict(q=np.zeros((1, 1, 1, 8, 4))), "invalid q shape = [1, 1, 1, 8, 4]: rank must be 2"),
    (dict(q=np.zeros((1, 2, 0, 4))), "invalid q seq_len = 0: must be >= 1"),
    (dict(q=Q.astype(np.int64)), "invalid q dtype = int64: must be float16, float32 or float64"),
    (dict(v=V.astype(np.complex128)), "invalid v dtype = complex128"),
    (dict(q=np.where(np.arange(64).reshape(1, 2, 8, 4) == 9, np.nan, Q)),
     "invalid q[0,0,2,1] = nan: must be finite"),
    (dict(k=np.full((1, 2, 8, 4), np.inf)), "invalid k[0,0,0,0] = inf: must be finite"),
    (dict(scale=float("nan")), "invalid scale = nan: must be a finite real number"),
    (dict(scale=float("inf")), "invalid scale = inf: must be a finite real number"),
    (dict(impl="no_such_kernel"), "invalid impl = no_such_kernel: must be one of: a0_dense"),
    (dict(key_padding_mask=np.ones((2, 8), dtype=bool)), "invalid key_padding_mask shape = [2, 8]"),
    (dict(key_padding_mask=np.full((1, 8), 2)), "invalid key_padding_mask entry = 2: must be 0 or 1"),
    (dict(q=[["a"]]), "invalid q dtype = <U1"),
])
def test_bad_attend_inputs(args, message):
    kw = dict(q=Q, k=K, v=V, pattern=sa.Pattern.dense())
    kw.update(args)
    with pytest.raises(ValueError) as e:
        sa.attend(**kw)
    assert str(e.value).startswith(message), str(e.value)


def test_block_patterns_need_self_attention():
    q, k, v = qkv((1, 1, 4, 2), (1, 1, 8, 2))
    with pytest.raises(ValueError, match="invalid seq_len_k = 8"):
        sa.attend(q, k, v, sa.Pattern.bigbird(2))


def test_sizes_that_do_not_fit_in_memory_raise_memory_error():
    with pytest.raises(MemoryError, match="must fit in physical memory"):
        sa.Pattern.dense().mask(1 << 20, 1 << 20, num_heads=64)
    with pytest.raises(MemoryError):
        sa.Pattern.window(1).random_table(1, num_heads=1 << 50)


@pytest.mark.parametrize("build", [
    lambda: sa.Pattern.window(1).mask(0),
    lambda: sa.Pattern.window(1).mask(4, -1),
    lambda: sa.Pattern.window(1).info(4, num_heads=0),
    lambda: sa.Pattern.window(1).info(4, head_dim=0),
    lambda: sa.Pattern.window(1).block_mask(4, block_size=0),
    lambda: sa.reach(sa.Pattern.window(1), 10, token=10),
    lambda: sa.reach(sa.Pattern.window(1), 10, layers=0),
    lambda: sa.reach(sa.Pattern.window(1), 10, level="tokens"),
    lambda: sa.extend_positions(np.zeros((4, 2)), 17),
    lambda: sa.extend_positions(np.zeros((4, 2)), 8, alpha=0.5),
    lambda: sa.analyze(Q, K, sa.Pattern.dense(), windows=[-1]),
    lambda: sa.performer_favor(Q, K, V, num_features=0),
    lambda: sa.nystrom(Q, K, V, num_landmarks=9),
    lambda: sa.nystrom(Q, K, V, pinv="svd"),
    lambda: sa.check(Q, K, V, sa.Pattern.dense(), np.zeros((1, 2, 8, 3))),
    lambda: sa.check(Q, K, V, sa.Pattern.dense(), np.zeros((1, 2, 8, 4)), atol=-1),
])
def test_other_bad_arguments(build):
    with pytest.raises(ValueError, match=r"^invalid "):
        build()


def test_approximations_refuse_sparse_patterns():
    with pytest.raises(ValueError, match="impl = performer_favor: serves only dense"):
        sa.attend(Q, K, V, sa.Pattern.window(1), impl="performer_favor")


def test_a_pattern_is_required():
    with pytest.raises(TypeError):
        sa.attend(Q, K, V, "window")


def test_a_head_of_a_per_head_pattern_is_named_by_its_index():
    # The library names the field and the head (core/field.h); Python spells it as the
    # keyword inside the list Pattern.per_head was given.
    p = sa.Pattern.per_head([sa.Pattern.window(1), sa.Pattern.longformer(1, [20])])
    with pytest.raises(ValueError) as e:
        p.mask(8)
    assert str(e.value).startswith("invalid heads[1].global_tokens[0] = 20: positions must be in")


def test_errors_name_keywords_not_flags():
    # A convention value and a pattern field: neither message carries a command-line flag.
    q = np.zeros((1, 1, 4, 2))
    with pytest.raises(ValueError) as e:
        sa.check(q, q, q, sa.Pattern.dense(), q, causal_align="diagonal")
    assert "--" not in str(e.value) and str(e.value).startswith("invalid causal_align = diagonal")
    with pytest.raises(ValueError) as e:
        sa.Pattern._make("bigbird", window=3)
    assert str(e.value).startswith("invalid window = 3: not used by pattern bigbird")
