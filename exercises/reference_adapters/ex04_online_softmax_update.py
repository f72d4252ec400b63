"""Exercise 4 answered with the library: the tile's own softmax (o_t, lse_t) from the
oracle, merged into the running state by the lse algebra (exp(lse_t - m_new) is the
tile's share of l, times o_t its share of acc)."""
import numpy as np

from _lib import softmax_via_library


def online_softmax_update(m, l, acc, scores, v):
    o_t, lse_t = softmax_via_library(scores, np.isfinite(scores), v)
    m_new = np.maximum(m, np.max(scores, axis=1))
    finite = np.isfinite(m_new)
    safe = np.where(finite, m_new, 0.0)
    alpha = np.where(finite & np.isfinite(m), np.exp(m - safe), 0.0)
    beta = np.where(np.isfinite(lse_t), np.exp(lse_t - safe), 0.0)
    return m_new, alpha * l + beta, alpha[:, None] * acc + beta[:, None] * o_t
