"""Exercise 6 answered by the graph module: sparseattn.reach's shortest path between
every pair (hops <= layers means reached)."""
import numpy as np

import sparseattn as sa


def reachability(mask, layers):
    mask = np.asarray(mask, dtype=bool)
    n = mask.shape[0]
    pattern = sa.Pattern.explicit(mask)
    r = np.eye(n, dtype=bool)
    for j in range(n):
        for i in range(n):
            path = sa.reach(pattern, n, layers=1, path=(j, i))["path"]
            r[i, j] = bool(path) and len(path) - 1 <= layers
    return r
