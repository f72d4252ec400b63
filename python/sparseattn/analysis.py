"""Graph measures of a stack of patterns, locality of real heads, position extension."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from . import _arrays
from . import _sparseattn as _C
from .pattern import Pattern


def reach(pattern: Union[Pattern, Sequence[Pattern]], seq_len: int, layers: Optional[int] = None,
          token: Optional[int] = None, num_heads: Optional[int] = None,
          path: Optional[Tuple[int, int]] = None, level: str = "auto") -> Dict[str, Any]:
    """How information flows through a stack of sparse attention layers (docs/contract.md
    §6; docs/information-flow.md defines every number): ``sparseattn reach --json``.

    Edge j -> i in a layer when query i of some head may attend key j, plus the residual
    self edge; token j influences token i after L layers when a walk through layers 1..L
    joins them. Past the stack the last layer repeats.

    Parameters
    ----------
    pattern : Pattern or sequence of Pattern
        One pattern for every layer, or one per layer (bottom first; the last repeats).
        Self-attention patterns without key padding.
    seq_len : int
        Tokens, >= 1.
    layers : int, optional
        Layers in the stack, >= 1; default 1, or ``len(pattern)`` for a sequence.
    token : int, optional
        Report the receptive field (coverage, span) of this token, in [0, seq_len).
    num_heads : int, optional
        Heads per layer (a layer's edges are the union over its heads); default as
        :meth:`Pattern.mask`.
    path : (int, int), optional
        Also give a shortest path from token ``path[0]`` to token ``path[1]``.
    level : {"auto", "token", "block"}
        The graph analysed; "auto" takes the block graph when every tile is full (exact).

    Returns
    -------
    dict
        ``level``, ``mixing_depth`` (None: some pairs never connect), ``connected_fraction``
        (per depth), ``diameter``, ``mean_shortest_path`` (hops), ``spectral_gap`` (layer
        1; None when it cannot be computed reliably); with ``token``: ``coverage`` and
        ``span`` per layer; with ``path``: ``path`` (token list, empty if never connected).
    """
    pats = [pattern] if isinstance(pattern, Pattern) else list(pattern)
    for i, p in enumerate(pats):
        if not isinstance(p, Pattern):
            raise _arrays.invalid(f"pattern[{i}]", type(p).__name__, "must be a Pattern")
    n = _arrays.integer("seq_len", seq_len, 1)
    depth = (1 if isinstance(pattern, Pattern) else max(len(pats), 1)) if layers is None \
        else _arrays.integer("layers", layers, 1)
    t = -1 if token is None else _arrays.integer("token", token, 0, n - 1,
                                                 f"must be in [0, {n})")
    pr = None
    if path is not None:
        if len(path) != 2:
            raise _arrays.invalid("path", path, "must be (from, to)")
        pr = (_arrays.integer("path[0]", path[0]), _arrays.integer("path[1]", path[1]))
    if not isinstance(level, str):
        raise _arrays.invalid("level", level, "must be auto, token or block")
    stack = [(p._spec, p._heads(num_heads)) for p in pats]
    return _C.reach(stack, n, depth, t, pr, level)


def analyze(q: Any, k: Any, pattern: Pattern, windows: Optional[Sequence[int]] = None,
            scale: Optional[float] = None) -> Dict[str, Any]:
    """Per head: how local is dense attention, and how much of its softmax mass would
    ``pattern`` keep — ``sparseattn analyze`` (realdata/locality.h and docs/real-data.md
    define every number).

    Parameters
    ----------
    q : array, [batch, num_heads, seq_len_q, head_dim] (leading dims optional), finite
    k : array, [batch, num_heads, seq_len_k, head_dim]
    pattern : Pattern
        Its key padding, if any, is ignored (the dense softmax runs over all keys).
    windows : sequence of int, optional
        One-sided window widths >= 0; default 1, 2, 4, ..., 256.
    scale : float, optional
        Score scale, finite; default 1/sqrt(head_dim).

    Returns
    -------
    dict
        ``pattern``, ``definitions``, ``heads`` (per (batch, head): ``pattern_mass``,
        ``pattern_uniform``, ``pattern_bias``, ``pattern_mass_min_row``,
        ``mean_distance`` in tokens, ``windows`` [{window, mass, uniform, bias}]),
        ``summary``.
    """
    if not isinstance(pattern, Pattern):
        raise TypeError(f"pattern must be a sparseattn.Pattern, not {type(pattern).__name__}")
    qa, ka = _arrays.float_array(q, "q"), _arrays.float_array(k, "k")
    w = None if windows is None else [_arrays.integer("windows", x) for x in windows]
    s = None if scale is None else _arrays.real("scale", scale)
    return _C.analyze(qa, ka, pattern._spec, w, s)


def extend_positions(table: Any, length: int, alpha: float = 0.4) -> np.ndarray:
    """Extends a learned position-embedding table past its trained length by the
    hierarchical decomposition (Su Jianlin 2020, kexue.fm/archives/7947): position
    (i-1)·n + j gets α·u_i + (1-α)·u_j with u_i = (p_i - α·p_1)/(1-α).

    Parameters
    ----------
    table : array, [n, dim], float16/32/64, finite
        Trained embeddings p_1 .. p_n (row r holds p_{r+1}).
    length : int
        Positions wanted, 1 .. n².
    alpha : float
        α in (0, 1), not 0.5 (then (i, j) and (j, i) collide). Su uses 0.4.

    Returns
    -------
    ndarray of float64, [length, dim]
        Rows 0 .. n-1 are the table itself, bit for bit.

    Raises
    ------
    ValueError
        Table not rank 2, non-finite entries, length outside [1, n²], a bad alpha.
    """
    t = _arrays.float_array(table, "table")
    return _C.extend_positions(t, _arrays.integer("length", length),
                               _arrays.real("alpha", alpha))
