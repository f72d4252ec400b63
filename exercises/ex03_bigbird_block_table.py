"""Exercise 3 — BigBird's block table (ITC): global, window and random blocks.

Read first: docs/contract.md §3.6 (bigbird ITC), §3.10 (random draws); docs/patterns.md
(the bigbird section's picture); reference/a4_bigbird_blocks.cpp (it walks this table).
Grade: make exercises
"""
from typing import List

import numpy as np


def bigbird_block_table(seq_len: int, block_size: int, random_table: np.ndarray) -> List[List[int]]:
    """The key blocks each query block attends, for BigBird ITC.

    Parameters
    ----------
    seq_len : int >= 1
        Tokens (self-attention); n_b = ceil(seq_len / block_size) blocks, the last one may
        be partial.
    block_size : int >= 1
    random_table : int array [n_b - 2, r]  (shape [0, r] when n_b <= 2)
        Row q - 1 lists the random key blocks of query block q, for q = 1 ... n_b - 2 (the
        draws are given: you do not implement the PRNG). An entry -1 is a draw that could
        not be made (contract §3.10): ignore it.

    Returns
    -------
    list of n_b lists of int
        table[q] = the sorted key blocks k that query block q attends, each ONCE (contract
        §2.2: a random block that is also a neighbour counts once). k is attended iff
        q = 0 or q = n_b - 1 (global query blocks attend everything), or k = 0 or
        k = n_b - 1 (global key blocks), or |q - k| <= 1 (neighbours, clipped at the
        ends), or k is in q's row of random_table (contract §3.6).
    """
    raise NotImplementedError("ex03: write bigbird_block_table (contract §3.6)")
