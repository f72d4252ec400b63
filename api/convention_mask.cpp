// The allowed mask under the conventions (api/convention_mask.h).
#include "api/convention_mask.h"

#include <string>

#include "api/padding_align.h"
#include "api/results.h"
#include "core/error.h"
#include "pattern/layout.h"

namespace sparseattn::api {

Tensor<uint8_t> convention_mask(const PatternSpec& spec, PatternSizes sizes,
                                const Conventions& conv, const Tensor<uint8_t>* global_mask,
                                Spelling spelling) {
  const std::string gm_arg = spell_flag("--global-mask", spelling);
  Tensor<uint8_t> gm;
  int64_t batch = sizes.batch;
  if (global_mask) {
    require(spec.kind == PatternKind::longformer, gm_arg, "given",
            std::string("needs the longformer pattern, not ") + pattern_kind_name(spec.kind));
    require(spec.global.empty(), gm_arg, "given",
            "replaces " + spell_flag("--global", spelling) + ": give one of them");
    gm = *global_mask;
    if (gm.rank() == 1) gm.shape.insert(gm.shape.begin(), 1);
    require(gm.rank() == 2 && gm.dim(1) == sizes.seq_len_k &&
                (sizes.batch == 1 || gm.dim(0) == sizes.batch),
            gm_arg + " shape", shape_text(gm.shape),
            "must be [batch, seq_len_k = " + std::to_string(sizes.seq_len_k) +
                "], batch matching " + spell_flag("--key-padding-mask", spelling) + "'s");
    require(!conv.padding_align_valid, spell_flag("--padding-align", spelling), "valid",
            "must be full with " + gm_arg + " (contract §3.12)");
    batch = gm.dim(0);
  }
  // Refuse an output that cannot fit before building anything (contract §5).
  const Shape shape = {batch, sizes.num_heads, sizes.seq_len_q, sizes.seq_len_k};
  checked_numel(shape, 1, "mask shape (" + spell_flag("--num-heads", spelling) + ", " +
                              spell_flag("--seq-len", spelling) + ", " +
                              spell_flag("--seq-len-k", spelling) + ")");
  if (!global_mask) {  // one pattern for the whole batch
    const Pattern pattern = apply_pattern_conventions(materialize(spec, sizes), conv);
    // contract §2.6: per batch element when valid.
    return conv.padding_align_valid ? valid_allowed_mask(pattern) : allowed_mask(pattern);
  }
  Tensor<uint8_t> out(shape, 0);
  const int64_t n = sizes.seq_len_q, m = sizes.seq_len_k, plane = n * m;
  for (int64_t b = 0; b < batch; ++b) {
    PatternSpec sb = spec;  // batch element b's global set
    for (int64_t j = 0; j < m; ++j)
      if (gm.data[static_cast<size_t>(b * m + j)]) sb.global.push_back(j);
    const Pattern pattern = apply_pattern_conventions(materialize(sb, sizes), conv);
    const int64_t pb = sizes.batch > 1 ? b : 0;  // padding row of this batch element
    for (int64_t h = 0; h < sizes.num_heads; ++h) {
      const Tensor<uint8_t> head = dense_mask(pattern.head(h));
      uint8_t* dst = out.ptr() + (b * sizes.num_heads + h) * plane;
      for (int64_t i = 0; i < n; ++i) {
        const bool query_real = pattern.query_valid(pb, i);
        for (int64_t j = 0; j < m; ++j)
          dst[i * m + j] = head.data[i * m + j] && query_real && pattern.key_valid(pb, j);
      }
    }
  }
  return out;
}

}  // namespace sparseattn::api
