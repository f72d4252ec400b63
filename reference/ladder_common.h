// What every step of the reference ladder (a0 .. a5) shares: validating one call, the
// flat offsets of contract §1's row-major layout, and the empty result (o = 0, lse = -inf).
// Internal to reference/: the public contract is reference/attention.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/tensor.h"
#include "reference/attention.h"
#include "pattern/pattern.h"
#include "reference/validate.h"

namespace sparseattn {
namespace ladder {

// One validated call: the sizes after missing leading dimensions became 1, and the
// resolved scale.
struct Call {
  AttentionShape s;
  double scale;
};

// Checks q [B,H,Lq,D], k [B,H,Lk,D], v [B,H,Lk,Dv] against each other and against the
// sizes the pattern was materialized for (validate_attention, the one shared check);
// resolves the scale (nullptr: 1/sqrt(head_dim)). Throws InvalidArgument naming
// q/k/v/scale and the offending value.
// A step that reads grouped kv heads (contract §2.7) passes KvHeads::grouped.
inline Call prepare(const Tensor<double>& q, const Tensor<double>& k, const Tensor<double>& v,
                    const Pattern& pattern, const double* scale,
                    KvHeads kv_heads = KvHeads::equal) {
  Call c;
  c.s = validate_attention(q.shape, k.shape, v.shape, pattern, kv_heads);
  c.scale = resolve_scale(scale, c.s.head_dim);
  return c;
}

// Throws InvalidArgument("pattern") when a step is asked for a kind it does not serve.
inline void require_kind(bool served, const Pattern& pattern, const char* step,
                         const char* allowed) {
  require(served, std::string("pattern (for ") + step + ")", describe(pattern.spec),
          std::string("this step serves only: ") + allowed);
}

// o [B,H,Lq,Dv] zero and lse [B,H,Lq] -inf: the answer for a row with no allowed key,
// which every step starts from, so a row it never touches is already correct (contract §2).
inline AttentionResult empty_result(const AttentionShape& s) {
  AttentionResult r;
  r.o = Tensor<double>({s.batch, s.num_heads, s.seq_len_q, s.head_dim_v}, 0.0);
  r.lse = Tensor<double>({s.batch, s.num_heads, s.seq_len_q},
                         -std::numeric_limits<double>::infinity());
  return r;
}

// Flat offset of (b, h, row, 0) in a [B, H, rows, width] row-major tensor.
inline int64_t offset(const AttentionShape& s, int64_t b, int64_t h, int64_t rows, int64_t row,
                      int64_t width) {
  return ((b * s.num_heads + h) * rows + row) * width;
}

// <x, y> over d elements, accumulated in order (serial and reproducible).
inline double dot(const double* x, const double* y, int64_t d) {
  double acc = 0.0;
  for (int64_t e = 0; e < d; ++e) acc += x[e] * y[e];
  return acc;
}

}  // namespace ladder
}  // namespace sparseattn
