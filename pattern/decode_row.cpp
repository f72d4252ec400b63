#include "pattern/decode_row.h"

#include <algorithm>

#include "pattern/pattern.h"

namespace sparseattn {

bool decode_row_rule_covers(const PatternSpec& s) {
  const bool kind = s.kind == PatternKind::dense || s.kind == PatternKind::window ||
                    s.kind == PatternKind::chunked;
  return kind && s.per_head.empty() && !s.key_padding_mask.has_value();
}

DecodeRowKeys decode_row_keys(const PatternSpec& spec, const BandParams& band, int64_t seq_len_q,
                              int64_t n, int64_t i) {
  DecodeRowKeys r;
  if (n <= 0) return r;  // no key exists (contract §2.3: the row is fully masked)
  const int64_t p = i + n - seq_len_q;  // contract §2.11: bottom-right against the filled length
  switch (spec.kind) {
    case PatternKind::window: {  // §3.3: keys p + dilation·t, t in the band's steps
      const BandSteps st = band_steps(band, i);
      if (st.count() == 0) return r;
      r.lo = p + band.dilation * st.t_lo;
      r.hi = p + band.dilation * st.t_hi;
      r.stride = band.dilation;
      return r;
    }
    case PatternKind::chunked: {  // §3.14: the chunk holding p; none before the first key
      if (p < 0) return r;
      const int64_t c = *spec.chunk_size;
      r.lo = p / c * c;
      r.hi = std::min(r.lo + c - 1, n - 1);
      if (spec.causal) r.hi = std::min(r.hi, p);
      return r;
    }
    default:  // dense, §3.2
      r.lo = 0;
      r.hi = spec.causal ? std::min(p, n - 1) : n - 1;
      return r;
  }
}

DecodeRowKeys decode_row_keys(const PatternSpec& spec, int64_t seq_len_q, int64_t n, int64_t i) {
  const BandParams band = spec.kind == PatternKind::window && n > 0 ? band_of(spec, seq_len_q, n) : BandParams{};
  return decode_row_keys(spec, band, seq_len_q, n, i);
}

}  // namespace sparseattn
