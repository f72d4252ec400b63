// Hierarchical extension of a learned absolute position-embedding table (Su Jianlin,
// "层次分解位置编码，让BERT可以处理超长文本" [Hierarchical decomposition of position
// encodings, letting BERT handle very long text], kexue.fm/archives/7947, 2020).
//
// A BERT-style model learns one vector p_1 .. p_n per position (n = 512 for
// all-MiniLM-L6-v2). To give it positions past n without training, write a position
// as a two-digit number in base n: position (i - 1)·n + j (1-based i, j in 1..n) gets
//
//     u_i = (p_i − α·p_1) / (1 − α)
//     q_{(i−1)·n + j} = α·u_i + (1 − α)·u_j
//
// For i = 1 this is exactly p_j (u_1 = p_1), so the first n positions keep their
// trained vectors; the "tens digit" i moves the vector by α·(u_i − u_1) along a
// direction the model has already seen. α must not be 0.5: then q_{(i,j)} = q_{(j,i)}
// and the model cannot tell position (i−1)·n + j from (j−1)·n + i. Su uses α = 0.4.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace sparseattn::realdata {

inline constexpr double kDefaultAlpha = 0.4;

// table: [n, dim] position embeddings p_1 .. p_n (row r holds p_{r+1}), n >= 1.
// Returns [length, dim], row m = the embedding of 0-based position m, i.e. 1-based
// i = m / n + 1, j = m % n + 1 in the formula above. Rows 0 .. n-1 are copies of the
// table (the formula reduces to p_j there; copying makes the equality bit-exact rather
// than exact up to rounding of α·p_1 + (1 − α)·u_j).
// Arithmetic in float64 whatever the table's source dtype.
// Throws InvalidArgument:
//   "table"  when not rank 2 or with a zero dimension;
//   "length" when length < 1 or length > n² (two base-n digits cover n² positions);
//   "alpha"  when not finite, not in (0, 1), or == 0.5 (symmetric: (i, j) == (j, i)).
Tensor<double> extend_positions(const Tensor<double>& table, int64_t length,
                                double alpha = kDefaultAlpha);

}  // namespace sparseattn::realdata
