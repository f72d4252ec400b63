// The public entry points of k08 (decode.h): each forwards to the build active_isa() names
// (isa.h). The pattern check does not depend on the build.
#include "optimized/cpu/decode.h"
#include "optimized/cpu/isa.h"

namespace sparseattn::cpu {

void k08_decode(const DecodeInputs& in, const Outputs& out) {
  if (active_isa() == Isa::avx512) return avx512::k08_decode(in, out);
  return avx2::k08_decode(in, out);
}

void k08_decode_bf16(const DecodeInputsBf16& in, const Outputs& out) {
  if (active_isa() == Isa::avx512) return avx512::k08_decode_bf16(in, out);
  return avx2::k08_decode_bf16(in, out);
}

bool k08_serves(const Pattern& pattern) {
  const PatternSpec& s = pattern.spec;
  const bool kind = s.kind == PatternKind::dense || s.kind == PatternKind::window ||
                    s.kind == PatternKind::chunked;
  return kind && s.per_head.empty() && !pattern.has_key_padding();
}

}  // namespace sparseattn::cpu
