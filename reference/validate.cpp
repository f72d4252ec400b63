#include "reference/validate.h"

#include "core/error.h"

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
  return a;
}

}  // namespace sparseattn
