// Index arithmetic of the (dilated) sliding window, shared by the pattern builder, the
// band reference (a3), the optimized CPU window kernels and the CUDA window kernels.
//
// contract §3: query i sits at key position p = i + seq_len_k - seq_len_q (bottom-right
// alignment) and may attend j = p + dilation * t for integer t with -left <= t <= right
// (t <= 0 if causal), 0 <= j < seq_len_k. Both reaches are one-sided: the symmetric
// window w is left = right = w (w = 2 allows 5 keys); FlashAttention's window_size=(L, R)
// is left = L, right = R (contract §3.3; -1, unbounded, reaches here as a finite value).
#pragma once

#include <cstdint>

#include "pattern/hd.h"

namespace sparseattn {

struct BandParams {
  int64_t seq_len_q = 0;
  int64_t seq_len_k = 0;
  int64_t left = 0;      // steps before the query's position, in steps of `dilation`; >= 0
  int64_t right = 0;     // steps after it; >= 0; causal acts as right = 0
  int64_t dilation = 1;  // tokens between neighbouring keys; >= 1
  bool causal = false;
};

// The largest step t a query may take: right, or 0 when causal.
SPARSEATTN_HD int64_t band_t_max(const BandParams& b) { return b.causal ? 0 : b.right; }

// Inclusive range [t_lo, t_hi] of window steps t for which j = position + dilation*t is a
// valid key; empty when t_lo > t_hi.
struct BandSteps {
  int64_t position;  // p = i + seq_len_k - seq_len_q
  int64_t t_lo;
  int64_t t_hi;
  SPARSEATTN_HD int64_t count() const { return t_hi >= t_lo ? t_hi - t_lo + 1 : 0; }
};

// Floor division for possibly negative numerators (C++ truncates toward zero).
SPARSEATTN_HD int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

SPARSEATTN_HD int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// The window steps of query i. Key j = p + d*t must satisfy 0 <= j <= seq_len_k - 1,
// i.e. ceil(-p/d) <= t <= floor((seq_len_k - 1 - p)/d), intersected with [-left, right]
// (or [-left, 0] when causal).
SPARSEATTN_HD BandSteps band_steps(const BandParams& b, int64_t i) {
  BandSteps s;
  s.position = i + b.seq_len_k - b.seq_len_q;
  const int64_t lo_bound = ceil_div(-s.position, b.dilation);
  const int64_t hi_bound = floor_div(b.seq_len_k - 1 - s.position, b.dilation);
  const int64_t t_hi = band_t_max(b);
  s.t_lo = -b.left > lo_bound ? -b.left : lo_bound;
  s.t_hi = t_hi < hi_bound ? t_hi : hi_bound;
  return s;
}

// Whether the band alone lets query i attend key j.
SPARSEATTN_HD bool band_allows(const BandParams& b, int64_t i, int64_t j) {
  const int64_t delta = j - (i + b.seq_len_k - b.seq_len_q);
  if (j < 0 || j >= b.seq_len_k || delta % b.dilation != 0) return false;
  const int64_t t = delta / b.dilation;
  return t >= -b.left && t <= band_t_max(b);
}

// A superset of the keys a contiguous run of queries [i0, i1) can reach through the
// band, as an inclusive range [lo, hi] (empty when lo > hi). Window kernels use it to
// visit only the key tiles the band touches; rows then filter exactly with band_steps.
// It is a bound, not the exact union: with dilation > 1 the extreme rows need not hold
// the extreme keys (the first reachable key depends on the row's residue mod dilation).
struct KeySpan {
  int64_t lo;
  int64_t hi;
};
// dilation * steps, saturated at 2^63 - 1 instead of overflowing (steps >= 0, dilation
// >= 1). materialize() keeps both within the sequence (contract §3, canonical spec), but
// band.h makes no such assumption: a BandParams built by hand is safe too.
SPARSEATTN_HD int64_t band_steps_in_tokens(int64_t steps, int64_t dilation) {
  constexpr int64_t kMax = 0x7fffffffffffffffLL;
  return steps > kMax / dilation ? kMax : dilation * steps;
}
// How far before the query's position the band reaches, in tokens: dilation * left.
SPARSEATTN_HD int64_t band_reach_left(const BandParams& b) {
  return band_steps_in_tokens(b.left, b.dilation);
}
// How far after it: dilation * right, 0 when causal.
SPARSEATTN_HD int64_t band_reach_right(const BandParams& b) {
  return band_steps_in_tokens(band_t_max(b), b.dilation);
}

SPARSEATTN_HD KeySpan band_key_span(const BandParams& b, int64_t i0, int64_t i1) {
  const int64_t offset = b.seq_len_k - b.seq_len_q;
  const int64_t reach = band_reach_left(b);
  const int64_t first = i0 + offset;        // position of the first query
  const int64_t last = (i1 - 1) + offset;   // position of the last query
  const int64_t ahead = band_reach_right(b);
  KeySpan span;
  // first - reach and last + ahead, clipped to [0, seq_len_k - 1] without overflowing.
  span.lo = first <= reach ? 0 : first - reach;
  span.hi = ahead >= b.seq_len_k - 1 - last ? b.seq_len_k - 1 : last + ahead;
  return span;
}

}  // namespace sparseattn
