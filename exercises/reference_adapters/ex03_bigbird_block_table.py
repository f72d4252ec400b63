"""Exercise 3 answered by the pattern module: the bigbird mask for the given random
table, reduced to blocks (every BigBird tile is full: any allowed pair = the whole block)."""
import numpy as np

import sparseattn as sa


def bigbird_block_table(seq_len, block_size, random_table):
    nb = -(-seq_len // block_size)
    table = np.asarray(random_table, dtype=np.int64)
    if table.size == 0:
        pattern = sa.Pattern.bigbird(block_size, 0)
    else:
        # A draw that could not be made (-1) becomes the query block itself, which the
        # window already allows: counted once (contract §2.2), so nothing changes.
        rows = np.arange(1, nb - 1)[:, None]
        table = np.where(table < 0, rows, table)
        pattern = sa.Pattern.bigbird(block_size, table.shape[1], random_table=table[None])
    mask = pattern.mask(seq_len)
    return [[kb for kb in range(nb)
             if mask[qb * block_size:(qb + 1) * block_size,
                     kb * block_size:(kb + 1) * block_size].any()]
            for qb in range(nb)]
