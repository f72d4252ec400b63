// Index arithmetic of the (dilated) sliding window, shared by the pattern builder, the
// band reference (a3), the optimized CPU window kernels and the CUDA window kernels.
//
// contract §3: query i sits at key position p = i + seq_len_k - seq_len_q (bottom-right
// alignment) and may attend j = p + dilation * t for integer t with |t| <= window
// (t <= 0 if causal), 0 <= j < seq_len_k. `window` is one-sided: w = 2 allows 5 keys.
#pragma once

#include <cstdint>

#include "pattern/hd.h"

namespace sparseattn {

struct BandParams {
  int64_t seq_len_q = 0;
  int64_t seq_len_k = 0;
  int64_t window = 0;    // one-sided, in steps of `dilation` tokens; >= 0
  int64_t dilation = 1;  // tokens between neighbouring keys; >= 1
  bool causal = false;
};

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
// i.e. ceil(-p/d) <= t <= floor((seq_len_k - 1 - p)/d), intersected with [-w, w]
// (or [-w, 0] when causal).
SPARSEATTN_HD BandSteps band_steps(const BandParams& b, int64_t i) {
  BandSteps s;
  s.position = i + b.seq_len_k - b.seq_len_q;
  const int64_t lo_bound = ceil_div(-s.position, b.dilation);
  const int64_t hi_bound = floor_div(b.seq_len_k - 1 - s.position, b.dilation);
  const int64_t t_hi = b.causal ? 0 : b.window;
  s.t_lo = -b.window > lo_bound ? -b.window : lo_bound;
  s.t_hi = t_hi < hi_bound ? t_hi : hi_bound;
  return s;
}

// Whether the band alone lets query i attend key j.
SPARSEATTN_HD bool band_allows(const BandParams& b, int64_t i, int64_t j) {
  const int64_t delta = j - (i + b.seq_len_k - b.seq_len_q);
  if (j < 0 || j >= b.seq_len_k || delta % b.dilation != 0) return false;
  const int64_t t = delta / b.dilation;
  return t >= -b.window && t <= (b.causal ? 0 : b.window);
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
// dilation * window, saturated at 2^63 - 1 instead of overflowing (window >= 0,
// dilation >= 1). materialize() keeps both within the sequence (contract §3, canonical
// spec), but band.h makes no such assumption: a BandParams built by hand is safe too.
SPARSEATTN_HD int64_t band_reach(const BandParams& b) {
  constexpr int64_t kMax = 0x7fffffffffffffffLL;
  return b.window > kMax / b.dilation ? kMax : b.dilation * b.window;
}

SPARSEATTN_HD KeySpan band_key_span(const BandParams& b, int64_t i0, int64_t i1) {
  const int64_t offset = b.seq_len_k - b.seq_len_q;
  const int64_t reach = band_reach(b);
  const int64_t first = i0 + offset;        // position of the first query
  const int64_t last = (i1 - 1) + offset;   // position of the last query
  const int64_t ahead = b.causal ? 0 : reach;
  KeySpan span;
  // first - reach and last + ahead, clipped to [0, seq_len_k - 1] without overflowing.
  span.lo = first <= reach ? 0 : first - reach;
  span.hi = ahead >= b.seq_len_k - 1 - last ? b.seq_len_k - 1 : last + ahead;
  return span;
}

}  // namespace sparseattn
