"""Exercise 4 — one step of the online softmax (FlashAttention's tile update).

Read first: docs/contract.md §2.1, §2.3; reference/a5_flash_tiled.cpp (the recurrence,
Dao et al. 2022 Alg. 1 in FlashAttention-2's order).
Grade: make exercises (the grader folds your update over tiles and checks the result
against the oracle with sparseattn.check).
"""
import numpy as np


def online_softmax_update(m: np.ndarray, l: np.ndarray, acc: np.ndarray,
                          scores: np.ndarray, v: np.ndarray):
    """Fold one tile of keys into the running state of a block of query rows.

    Parameters
    ----------
    m : float64 [R]          running row maximum of the scores seen so far (-inf: none yet)
    l : float64 [R]          running sum of exp(s - m) over the scores seen so far
    acc : float64 [R, Dv]    running, UNNORMALIZED output: sum of exp(s - m) * v_j
    scores : float64 [R, C]  this tile's scaled scores; -inf marks a masked pair
    v : float64 [C, Dv]      this tile's value rows

    Returns
    -------
    (m_new, l_new, acc_new), same shapes; new arrays (do not modify the inputs):
        m_new   = max(m, rowmax(scores))
        l_new   = exp(m - m_new) * l + rowsum(exp(scores - m_new))
        acc_new = exp(m - m_new) * acc + exp(scores - m_new) @ v
    After the last tile the caller sets o = acc / l and lse = m + log(l).

    Contract
    --------
    A row whose m_new is still -inf (every score so far masked) keeps m = -inf, l = 0,
    acc = 0: never form -inf - (-inf) = NaN (contract §2.3). The start state is
    m = -inf, l = 0, acc = 0.
    """
    raise NotImplementedError("ex04: write online_softmax_update (contract §2.1, §2.3)")
