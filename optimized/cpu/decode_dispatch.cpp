// The public entry points of k09 (decode.h): each forwards to the build active_isa() names
// (isa.h). The pattern check does not depend on the build.
#include "core/error.h"
#include "optimized/cpu/decode.h"
#include "optimized/cpu/isa.h"
#include "pattern/decode_row.h"

namespace sparseattn::cpu {
namespace {

// The refusal every kernel gives for a pattern it does not serve (contract §4.7).
void require_decode_served(const Pattern& pattern, const char* kernel) {
  if (!k09_serves(pattern))
    throw InvalidArgument("pattern", describe(pattern.spec),
                          std::string(kernel) +
                              " serves dense, window, chunked (one spec, no key padding)");
}

}  // namespace

void k09_decode(const DecodeInputs& in, const Outputs& out) {
  require_decode_served(*in.pattern, "cpu_k09_decode");
  if (active_isa() == Isa::avx512) return avx512::k09_decode(in, out);
  return avx2::k09_decode(in, out);
}

void k09_decode_bf16(const DecodeInputsBf16& in, const Outputs& out) {
  require_decode_served(*in.pattern, "cpu_k09_decode_bf16");
  if (active_isa() == Isa::avx512) return avx512::k09_decode_bf16(in, out);
  return avx2::k09_decode_bf16(in, out);
}

bool k09_serves(const Pattern& pattern) {
  // The specs whose rows are one progression each (pattern/decode_row.h).
  return decode_row_rule_covers(pattern.spec) && !pattern.has_key_padding();
}

}  // namespace sparseattn::cpu
