"""Exercise 7 — the backward pass of the masked softmax.

Read first: docs/contract.md §7.1 (dS = P ∘ (dP − D)), §7.2; docs/backward.md;
reference/backward/b1_dense_masked_grad.cpp.
Grade: make exercises (against central finite differences of the library's oracle).
"""
import numpy as np


def softmax_backward(p: np.ndarray, dp: np.ndarray) -> np.ndarray:
    """Gradient of a loss with respect to the scores, given the softmax and dL/dp.

    Parameters
    ----------
    p : float64 [N, M]
        The masked softmax of the scores (exercise 1): rows sum to 1, or are all 0 (a
        fully masked row); masked entries are exactly 0.
    dp : float64 [N, M]
        dL/dp_ij, any finite values (also on masked entries: they must not leak).

    Returns
    -------
    ds : float64 [N, M]
        dL/ds_ij = p_ij * (dp_ij - sum_k p_ik dp_ik)   (contract §7.1 with D_i written
        through P: D_i = <dO_i, O_i> = sum_k P_ik dP_ik). Exactly 0 on masked entries and on
        fully masked rows (contract §7.2), never NaN.
    """
    raise NotImplementedError("ex07: write softmax_backward (contract §7.1, §7.2)")
