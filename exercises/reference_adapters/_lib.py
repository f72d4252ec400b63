"""Shared by the adapters: scores as an attention problem the library can run.

With q = scores, k = I, v = I and scale 1, the library's s_ij = <q_i, e_j> = scores_ij
exactly, so o = P (the masked softmax) and lse is the row's log-sum-exp.
"""
import numpy as np

import sparseattn as sa


def softmax_via_library(scores: np.ndarray, mask: np.ndarray, v: np.ndarray = None):
    scores = np.asarray(scores, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool) & np.isfinite(scores)
    n, m = scores.shape
    q = np.where(mask, scores, 0.0)
    vv = np.eye(m) if v is None else np.asarray(v, dtype=np.float64)
    return sa.attend(q, np.eye(m), vv, sa.Pattern.explicit(mask), scale=1.0)
