"""Exercise 1 — the masked, stable softmax, fully masked rows included.

Read first: docs/contract.md §2.1 (definition, lse), §2.3 (fully masked rows);
reference/a1_dense_masked.cpp (the oracle does exactly this on its score matrix).
Grade: make exercises
"""
import numpy as np


def masked_softmax(scores: np.ndarray, mask: np.ndarray):
    """Row-wise softmax of `scores` over the allowed entries of `mask`, and its log-sum-exp.

    Parameters
    ----------
    scores : float64 array [N, M]
        Finite scores s_ij (already scaled).
    mask : bool array [N, M]
        True = query i may attend key j (contract §3.1: one polarity everywhere).

    Returns
    -------
    p : float64 array [N, M]
        p_ij = exp(s_ij - lse_i) where mask_ij, exactly 0 elsewhere; each row with an
        allowed entry sums to 1.
    lse : float64 array [N]
        lse_i = log(sum over allowed j of exp(s_ij)), natural log (contract §2.1).

    Contract
    --------
    * Stable: subtract the row maximum over the ALLOWED entries before exponentiating, so
      scores of 1000 or -1000 neither overflow nor underflow to 0/0.
    * A fully masked row (no True in its mask row) has p = 0 and lse = -inf exactly, never
      NaN: never form 0/0 or -inf - (-inf) (contract §2.3).
    * Do not modify the inputs.
    """
    raise NotImplementedError("ex01: write masked_softmax (contract §2.1, §2.3)")
