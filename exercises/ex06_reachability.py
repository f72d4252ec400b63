"""Exercise 6 — what L layers of a sparse pattern can reach.

Read first: docs/contract.md §6.1 (the graph), §6.3 (known facts); docs/information-flow.md;
graph/g0_reach_reference.cpp.
Grade: make exercises (against sparseattn.reach: shortest paths and connected fractions).
"""
import numpy as np


def reachability(mask: np.ndarray, layers: int) -> np.ndarray:
    """Which tokens can influence which after `layers` layers of the same pattern.

    Parameters
    ----------
    mask : bool array [n, n]
        One layer's self-attention pattern: mask[i, j] True = query i attends key j, i.e.
        an edge j -> i (information flows from key to query).
    layers : int >= 0
        Stacked layers, each with this pattern.

    Returns
    -------
    bool array [n, n]
        R[i, j] True iff token j influences token i after `layers` layers: there is a walk
        j = x_0 -> x_1 -> ... -> x_L = i whose every step is an edge of the pattern OR the
        residual self edge x -> x (contract §6.1). With layers = 0, R is the identity.
    """
    raise NotImplementedError("ex06: write reachability (contract §6.1)")
