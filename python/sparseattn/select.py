"""Selection: deterministic float64 index tables for :meth:`Pattern.selected` and
:meth:`Pattern.selected_blocks` (docs/contract.md §3.18).

Every function breaks ties to the lower index, lists each row's picks in rank order (the
forced entries of :func:`moba` and :func:`nsa` first, ascending) and pads with -1. The same
code as ``sparseattn select --method topk|dsa|moba|nsa``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _arrays
from . import _sparseattn as _C

__all__ = ["topk", "dsa", "dsa_scores", "moba", "nsa"]


def topk(scores: Any, top_k: int, causal: bool = False) -> np.ndarray:
    """The ``top_k`` highest-scoring candidates of each row.

    Parameters
    ----------
    scores : array of float, shape [B, H, seq_len_q, N]
        Scores; ``-inf`` marks a key that is no candidate; NaN and ``+inf`` are refused.
    top_k : int
        Indices per row, >= 1; rows with fewer candidates pad with -1.
    causal : bool
        Candidates ``j <= i + N - seq_len_q`` only (bottom-right, contract §3.1).

    Returns
    -------
    ndarray of int64, shape [B, H, seq_len_q, top_k]
        For :meth:`Pattern.selected` (``kv_indices``).
    """
    return _C.select_topk(_arrays.float_array(scores, "scores"),
                          _arrays.integer("top_k", top_k), bool(causal))


def dsa_scores(index_q: Any, index_k: Any, weights: Any) -> np.ndarray:
    """DeepSeek-V3.2-Exp's lightning indexer scores ``I[t, s] = sum_h w[t, h] *
    ReLU(index_q[t, h] . index_k[s])``, causal (``-inf`` after the query's position).

    Parameters
    ----------
    index_q : array of float, shape [B, seq_len_q, index_heads, index_dim]
    index_k : array of float, shape [B, seq_len_k, index_dim]
    weights : array of float, shape [B, seq_len_q, index_heads]

    Returns
    -------
    ndarray of float64, shape [B, 1, seq_len_q, seq_len_k]
    """
    return _C.dsa_index_scores(_arrays.float_array(index_q, "index_q"),
                               _arrays.float_array(index_k, "index_k"),
                               _arrays.float_array(weights, "weights"))


def dsa(index_q: Any, index_k: Any, weights: Any, top_k: int) -> np.ndarray:
    """The ``top_k`` keys of each query by the lightning indexer (:func:`dsa_scores`).

    Returns
    -------
    ndarray of int64, shape [B, 1, seq_len_q, top_k]
        One list shared by every head (``H_sel = 1``), for :meth:`Pattern.selected` with
        ``causal=True``.
    """
    return _C.select_dsa(_arrays.float_array(index_q, "index_q"),
                         _arrays.float_array(index_k, "index_k"),
                         _arrays.float_array(weights, "weights"), _arrays.integer("top_k", top_k))


def moba(q: Any, k: Any, chunk_size: int, top_k: int) -> np.ndarray:
    """MoBA's chunk selection: each query's own chunk, then the ``top_k - 1`` past chunks
    with the highest gate ``q_i . mean(K_chunk)``; future chunks never.

    Parameters
    ----------
    q : array of float, shape [B, H_q, seq_len_q, head_dim]
    k : array of float, shape [B, H_kv, seq_len_k, head_dim]
        ``H_kv`` divides ``H_q``; query head h gates against kv head h // g.
    chunk_size : int
        Keys per chunk C, >= 1, counted from key 0.
    top_k : int
        Chunks per query, its own included, >= 1.

    Returns
    -------
    ndarray of int64, shape [B, H_q, seq_len_q, top_k]
        For ``Pattern.selected_blocks(idx, 1, chunk_size, causal=True)``.
    """
    return _C.select_moba(_arrays.float_array(q, "q"), _arrays.float_array(k, "k"),
                          _arrays.integer("chunk_size", chunk_size), _arrays.integer("top_k", top_k))


def nsa(scores: Any, block_size_k: int, num_selected: int, num_initial: int = 0,
        num_local: int = 0, seq_len_k: Any = None) -> np.ndarray:
    """NSA's token selection: the ``num_initial`` first and ``num_local`` local blocks (those
    ending at the query's block) always, the highest-scoring other causal blocks after them,
    ``num_selected`` in all.

    Parameters
    ----------
    scores : array of float, shape [B, H, seq_len_q, ceil(seq_len_k / block_size_k)]
        Block importance (NSA eq. 10: summed over a query group, with ``H = H_kv``).
    block_size_k : int
        Keys per block, >= 1.
    num_selected : int
        Blocks per query, the forced ones included; ``>= num_initial + num_local``.
    num_initial, num_local : int
        Forced blocks, each >= 0.
    seq_len_k : int, optional
        Keys; default ``seq_len_q`` (self-attention).

    Returns
    -------
    ndarray of int64, shape [B, H, seq_len_q, num_selected]
        For ``Pattern.selected_blocks(idx, 1, block_size_k, causal=True)``.
    """
    s = _arrays.float_array(scores, "scores")
    lk = s.shape[2] if seq_len_k is None and s.ndim == 4 else seq_len_k
    return _C.select_nsa(s, _arrays.integer("block_size_k", block_size_k),
                         _arrays.integer("num_selected", num_selected),
                         _arrays.integer("num_initial", num_initial),
                         _arrays.integer("num_local", num_local),
                         _arrays.integer("seq_len_k", 1 if lk is None else lk))
