"""Exercise 5 answered by the library's a2_sparse_rows on the explicit pattern of `rows`."""
import numpy as np

import sparseattn as sa


def sparse_rows_attention(q, k, v, rows, scale=None):
    mask = np.zeros((len(q), len(k)), dtype=bool)
    for i, keys in enumerate(rows):
        mask[i, list(keys)] = True
    return sa.attend(q, k, v, sa.Pattern.explicit(mask), impl="a2_sparse_rows", scale=scale)
