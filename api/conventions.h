// Convention flags: the layouts and encodings other attention libraries use, so their
// outputs can be produced (`attend`) and judged (`check`) as they are, without a
// conversion script (docs/conventions.md, contract §1.6).
//
//   --layout bhsd|bshd                 q/k/v/o [batch, num_heads, seq_len, d] (default) or
//                                      [batch, seq_len, num_heads, d] (FlashAttention, HF);
//                                      lse stays [batch, num_heads, seq_len_q] either way
//   --lse-base e|2                     natural log-sum-exp (default) or base 2 (Triton)
//   --padded-queries zero|any          padded query rows must be 0 (default) or are not
//                                      compared (HF leaves them unspecified)
//   --key-padding-polarity keep|ignore 1 = real token (default) or 1 = ignore (PyTorch's
//                                      key_padding_mask)
//   --causal-align bottom-right|top-left  causal diagonal when seq_len_q != seq_len_k
//   --masked-score -inf|VALUE          masked scores removed (default) or replaced by VALUE
//                                      (masked_fill(-1e9): fully masked rows get mean(v))
//   --padding-align full|valid         positions from the full lengths (default, §2.4) or
//                                      from each batch element's valid counts under right
//                                      padding (FlashAttention's varlen convention, §2.6;
//                                      api/padding_align.h)
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "api/inputs.h"
#include "core/tensor.h"
#include "reference/attention.h"
#include "pattern/pattern.h"

namespace sparseattn::api {

struct Conventions {
  bool bshd = false;
  bool lse_base2 = false;
  bool padded_queries_any = false;
  bool key_padding_ignore = false;
  bool causal_top_left = false;
  std::optional<double> masked_score;  // nullopt: -inf (masked keys leave the softmax)
  bool padding_align_valid = false;    // contract §2.6: batch element b aligned by its counts
  // The flags as a JSON-ready list of (flag, value) pairs, for reports and manifests.
  std::string describe() const;
};

// Raw flag text; parse_conventions() validates it.
struct ConventionFlags {
  std::string layout = "bhsd", lse_base = "e", padded_queries = "zero",
              key_padding_polarity = "keep", causal_align = "bottom-right", masked_score = "-inf",
              padding_align = "full";
};

// Adds the seven flags above to `cmd`. `tensors` = false (mask) adds only the flags that
// change the pattern: --key-padding-polarity, --causal-align and --padding-align.
void add_convention_flags(CLI::App* cmd, ConventionFlags& flags, bool tensors = true);

// Throws InvalidArgument("--layout", value, allowed) etc.; --masked-score must be -inf or
// a finite real; --padding-align valid does not combine with --causal-align top-left (each
// places the diagonal its own way).
Conventions parse_conventions(const ConventionFlags& flags);

// [a, b, c, d] -> [a, c, b, d]: bshd <-> bhsd (the same permutation both ways). Rank 4 in.
Tensor<double> swap_dims_1_2(const Tensor<double>& x);

// The key padding mask of `flags` (.npy [batch, seq_len_k]) inverted when the polarity is
// `ignore`, and the pattern rebuilt top-left aligned when asked: a causal pattern of
// seq_len_q != seq_len_k is then the first seq_len_q rows and seq_len_k columns of the
// square pattern of side max(seq_len_q, seq_len_k) (an explicit per-head mask).
Pattern apply_pattern_conventions(const Pattern& pattern, const Conventions& conv);

// load_attention_inputs() under the conventions: with bshd the files are [B, L, H, d]
// (rank 3 [L, H, d] gets batch 1) and come back bhsd; the pattern has the key padding
// polarity and causal alignment applied (apply_pattern_conventions).
AttentionInputs load_inputs_with(const std::string& q_path, const std::string& k_path,
                                 const std::string& v_path, const PatternFlags& flags,
                                 const Conventions& conv);

// The oracle under the conventions: a1_dense_masked, or with a finite --masked-score the
// dense definition with masked scores replaced by VALUE (rows with no allowed key: the
// mean of v over all keys, lse = VALUE + ln(seq_len_k)); lse in base 2 when asked; with
// --padding-align valid, each batch element on its own aligned pattern (contract §2.6,
// api/padding_align.h; throws what valid_counts throws). o/lse stay bhsd.
// `mods` (softcap, ALiBi, sinks; contract §2.8–§2.9), when given, enter a1_dense_masked; the
// front ends refuse them with a finite masked score or valid alignment (require_combinable).
AttentionResult convention_oracle(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const Pattern& pattern,
                                  const double* scale, const Conventions& conv,
                                  const ScoreMods* mods = nullptr);

}  // namespace sparseattn::api
