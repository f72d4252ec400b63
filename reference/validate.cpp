#include "reference/validate.h"

#include "core/error.h"
#include "core/field.h"

namespace sparseattn {

AttentionShape validate_attention(const Shape& q, const Shape& k, const Shape& v,
                                  const Pattern& pattern, KvHeads kv_heads) {
  const AttentionShape a = attention_shape(q, k, v, kv_heads);
  const PatternSizes& s = pattern.sizes;
  require(s.num_heads == a.num_heads, "q num_heads", a.num_heads,
          "must equal the pattern's num_heads (" + std::to_string(s.num_heads) + ")");
  require(s.seq_len_q == a.seq_len_q, "q seq_len", a.seq_len_q,
          "must equal the pattern's seq_len_q (" + std::to_string(s.seq_len_q) + ")");
  require(s.seq_len_k == a.seq_len_k, "k seq_len", a.seq_len_k,
          "must equal the pattern's seq_len_k (" + std::to_string(s.seq_len_k) + ")");
  require(!pattern.has_key_padding() || s.batch == a.batch, "q batch", a.batch,
          "must equal the key_padding_mask's batch (" + std::to_string(s.batch) + ")");
  // contract §3.16: a selection table per batch element needs that batch; one per group
  // of query heads (1 < H_sel < H_q) must have H_kv rows, read by the group h / g.
  if (pattern.selection.rank() == 4) {
    const int64_t bsel = pattern.selection.dim(0), hsel = pattern.selection.dim(1);
    require(bsel == 1 || bsel == a.batch, "q batch", a.batch,
            "must equal the selection table's batch (" + std::to_string(bsel) + ")");
    if (hsel != 1 && hsel != a.num_heads && hsel != a.num_kv_heads)
      throw FieldError(pattern.spec.kind == PatternKind::selected ? Field::kv_indices
                                                                  : Field::block_indices,
                       " shape", shape_text(pattern.selection.shape),
                       "must have H_sel = 1, H_kv (" + std::to_string(a.num_kv_heads) +
                           ") or H_q (" + std::to_string(a.num_heads) + ") rows on axis 1");
  }
  return a;
}

}  // namespace sparseattn
