"""Exercise 2 — the (dilated, possibly causal) sliding-window mask, one-sided width.

Read first: docs/contract.md §3.1 (bottom-right alignment), §3.3 (window);
pattern/band.h (band_steps: the same arithmetic); docs/notation.md (the peers'
conventions: HF Longformer's attention_window is 2·w).
Grade: make exercises
"""
import numpy as np


def dilated_window_mask(seq_len_q: int, seq_len_k: int, window: int, dilation: int = 1,
                        causal: bool = False) -> np.ndarray:
    """The allowed set of the `window` pattern as a boolean matrix.

    Parameters
    ----------
    seq_len_q, seq_len_k : int >= 1
        Queries and keys; they may differ.
    window : int >= 0
        ONE-SIDED width w, in steps of `dilation` tokens: w = 2, dilation 1 allows the 5
        keys p-2 ... p+2.
    dilation : int >= 1
        Tokens between neighbouring window keys.
    causal : bool
        Only steps t <= 0 (keys at or before the query's position).

    Returns
    -------
    bool array [seq_len_q, seq_len_k]
        mask[i, j] is True iff j = p + dilation*t for an integer t with |t| <= window
        (t <= 0 if causal) and 0 <= j < seq_len_k, where p = i + seq_len_k - seq_len_q is
        query i's position (the queries are the LAST seq_len_q positions: contract §3.1).
        A row may be all False (e.g. a causal query before the first key).
    """
    raise NotImplementedError("ex02: write dilated_window_mask (contract §3.1, §3.3)")
