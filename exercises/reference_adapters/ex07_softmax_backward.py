"""Exercise 7: contract §7.1's dS = P ∘ (dP − D), D_i = Σ_k P_ik dP_ik, in NumPy (the
package has no backward pass to call; the grader checks this against finite differences
of the library's forward oracle)."""
import numpy as np


def softmax_backward(p, dp):
    p = np.asarray(p, dtype=np.float64)
    dp = np.where(p > 0, np.asarray(dp, dtype=np.float64), 0.0)
    return p * (dp - np.sum(p * dp, axis=1, keepdims=True))
