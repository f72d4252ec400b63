"""Exercise 5 answered by the library's a2_sparse_rows on the explicit pattern of `rows`.

The explicit pattern is a dense [rows, M] mask, so the queries go through in chunks of
CHUNK rows (seq_len_q = CHUNK against all M keys, each chunk its own problem): the
adapter's own memory stays O(CHUNK * M) and meets the grader's rule against an [N, M]
matrix (exercises/grader, ex05's memory allowance).
"""
import numpy as np

import sparseattn as sa

CHUNK = 256


def sparse_rows_attention(q, k, v, rows, scale=None):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    o = np.empty((len(q), v.shape[1]))
    lse = np.empty(len(q))
    for i0 in range(0, len(q), CHUNK):
        chunk = rows[i0:i0 + CHUNK]
        mask = np.zeros((len(chunk), len(k)), dtype=bool)
        for i, keys in enumerate(chunk):
            mask[i, list(keys)] = True
        o[i0:i0 + CHUNK], lse[i0:i0 + CHUNK] = sa.attend(
            q[i0:i0 + CHUNK], k, v, sa.Pattern.explicit(mask), impl="a2_sparse_rows", scale=scale)
    return o, lse
