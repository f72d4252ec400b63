#include "api/conventions.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "api/inputs.h"
#include "api/padding_align.h"
#include "core/error.h"
#include "core/field.h"
#include "core/npy.h"
#include "reference/masked_score.h"

namespace sparseattn::api {

std::string Conventions::describe() const {
  std::string s = std::string("--layout ") + (bshd ? "bshd" : "bhsd") + " --lse-base " +
                  (lse_base2 ? "2" : "e") + " --padded-queries " +
                  (padded_queries_any ? "any" : "zero") + " --key-padding-polarity " +
                  (key_padding_ignore ? "ignore" : "keep") + " --causal-align " +
                  (causal_top_left ? "top-left" : "bottom-right") + " --masked-score ";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", masked_score ? *masked_score : -INFINITY);
  return s + (masked_score ? buf : "-inf") + " --padding-align " +
         (padding_align_valid ? "valid" : "full");
}

void add_convention_flags(CLI::App* cmd, ConventionFlags& f, bool tensors) {
  if (tensors) {
    cmd->add_option("--layout", f.layout,
                    "bhsd (default): q/k/v/o [batch, num_heads, seq_len, d]; bshd: [batch, "
                    "seq_len, num_heads, d] as FlashAttention and HF store them (lse stays "
                    "[batch, num_heads, seq_len_q])");
    cmd->add_option("--lse-base", f.lse_base,
                    "e (default): lse = ln sum exp; 2: log2 sum 2^(s log2 e), as Triton kernels return it");
    cmd->add_option("--padded-queries", f.padded_queries,
                    "zero (default): padded query rows have o = 0, lse = -inf; any: they are "
                    "not compared (HF leaves them unspecified; check only: attend refuses it)");
    cmd->add_option("--masked-score", f.masked_score,
                    "-inf (default): masked keys leave the softmax; VALUE (finite, e.g. -1e9): "
                    "masked scores are VALUE, so fully masked rows get the mean of v");
  }
  cmd->add_option("--key-padding-polarity", f.key_padding_polarity,
                  "keep (default): --key-padding-mask 1 = real token; ignore: 1 = padding "
                  "(PyTorch's key_padding_mask)");
  cmd->add_option("--causal-align", f.causal_align,
                  "bottom-right (default, FlashAttention >= 2.1): query i sits at key "
                  "position i + seq_len_k - seq_len_q; top-left: at position i (PyTorch's "
                  "is_causal tril)");
  cmd->add_option("--padding-align", f.padding_align,
                  "full (default): positions from the full lengths seq_len_q, seq_len_k "
                  "(contract §2.4); valid: batch element b is aligned by its own valid key "
                  "count under right padding, as FlashAttention's varlen interface and padded "
                  "tests do (contract §2.6)");
}

Conventions parse_conventions(const ConventionFlags& f) {
  // Each value is named by its field (core/field.h); the command line and Python spell it.
  Conventions c;
  require_field(f.layout == "bhsd" || f.layout == "bshd", Field::layout, "", f.layout,
                "must be bhsd or bshd");
  c.bshd = f.layout == "bshd";
  require_field(f.lse_base == "e" || f.lse_base == "2", Field::lse_base, "", f.lse_base,
                "must be e or 2");
  c.lse_base2 = f.lse_base == "2";
  require_field(f.padded_queries == "zero" || f.padded_queries == "any", Field::padded_queries, "",
                f.padded_queries, "must be zero or any");
  c.padded_queries_any = f.padded_queries == "any";
  require_field(f.key_padding_polarity == "keep" || f.key_padding_polarity == "ignore",
                Field::key_padding_polarity, "", f.key_padding_polarity, "must be keep or ignore");
  c.key_padding_ignore = f.key_padding_polarity == "ignore";
  require_field(f.causal_align == "bottom-right" || f.causal_align == "top-left",
                Field::causal_align, "", f.causal_align, "must be bottom-right or top-left");
  c.causal_top_left = f.causal_align == "top-left";
  if (f.masked_score != "-inf") {
    try {
      c.masked_score = parse_finite("masked_score", f.masked_score, -INFINITY);
    } catch (const InvalidArgument&) {
      throw FieldError(Field::masked_score, "", f.masked_score, "must be -inf or a finite real number");
    }
  }
  require_field(f.padding_align == "full" || f.padding_align == "valid", Field::padding_align, "",
                f.padding_align, "must be full or valid");
  c.padding_align_valid = f.padding_align == "valid";
  require_field(!c.padding_align_valid || !c.causal_top_left, Field::padding_align, "",
                f.padding_align,
                "does not combine with --causal-align top-left: valid places the diagonal at each "
                "batch element's valid counts, top-left at query i (contract §2.6)");
  return c;
}

Tensor<double> swap_dims_1_2(const Tensor<double>& x) {
  require(x.shape.size() == 4, "layout", shape_text(x.shape), "must be rank 4");
  const int64_t a = x.shape[0], b = x.shape[1], c = x.shape[2], d = x.shape[3];
  Tensor<double> y({a, c, b, d});
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t l = 0; l < c; ++l)
        std::copy_n(x.ptr() + ((i * b + j) * c + l) * d, d, y.ptr() + ((i * c + l) * b + j) * d);
  return y;
}

Pattern apply_pattern_conventions(const Pattern& pattern, const Conventions& conv) {
  PatternSpec spec = pattern.spec;
  bool changed = false;
  if (conv.key_padding_ignore && spec.key_padding_mask) {
    for (uint8_t& m : spec.key_padding_mask->data) m = m ? 0 : 1;
    changed = true;
  }
  const PatternSizes& z = pattern.sizes;
  if (conv.causal_top_left && z.seq_len_q != z.seq_len_k) {
    // The square pattern of side n, cut to [seq_len_q, seq_len_k]: query i at position i.
    const int64_t n = std::max(z.seq_len_q, z.seq_len_k);
    PatternSpec square = spec;
    square.key_padding_mask.reset();
    PatternSizes sq = z;
    sq.batch = 1;
    sq.seq_len_q = sq.seq_len_k = n;
    const Pattern big = materialize(square, sq);
    Tensor<uint8_t> mask({z.num_heads, z.seq_len_q, z.seq_len_k}, 0);
    for (int64_t h = 0; h < z.num_heads; ++h) {
      const Tensor<uint8_t> d = dense_mask(big.head(h));
      for (int64_t i = 0; i < z.seq_len_q; ++i)
        for (int64_t j = 0; j < z.seq_len_k; ++j)
          mask.data[(h * z.seq_len_q + i) * z.seq_len_k + j] = d.data[i * n + j];
    }
    PatternSpec cut;
    cut.kind = PatternKind::explicit_mask;
    cut.mask = std::move(mask);
    cut.key_padding_mask = spec.key_padding_mask;
    spec = std::move(cut);
    changed = true;
  }
  return changed ? materialize(spec, z) : pattern;
}

AttentionInputs load_inputs_with(const std::string& q_path, const std::string& k_path,
                                 const std::string& v_path, const PatternFlags& flags,
                                 const Conventions& conv) {
  AttentionInputs in =
      load_attention_inputs(q_path, k_path, v_path, flags, conv.bshd ? &swap_dims_1_2 : nullptr);
  in.pattern = apply_pattern_conventions(in.pattern, conv);
  return in;
}

AttentionResult convention_oracle(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const Pattern& pattern,
                                  const double* scale, const Conventions& conv,
                                  const ScoreMods* mods) {
  const bool modern = mods != nullptr && mods->any();
  require(!modern || (!conv.padding_align_valid && !conv.masked_score),
          "--softcap, --alibi-slopes, --sinks", modern ? describe(*mods) : "",
          "do not combine with --padding-align valid or a finite --masked-score");
  if (conv.padding_align_valid) {
    // contract §2.6: each batch element on its own pattern, the other conventions as given.
    Conventions per = conv;
    per.padding_align_valid = false;
    per.lse_base2 = false;  // once, below
    AttentionResult r = attend_valid_aligned(
        q, k, v, pattern,
        [&](const Tensor<double>& qb, const Tensor<double>& kb, const Tensor<double>& vb,
            const Pattern& pb) { return convention_oracle(qb, kb, vb, pb, scale, per); });
    if (conv.lse_base2)
      for (double& x : r.lse.data) x *= 1.0 / std::log(2.0);
    return r;
  }
  AttentionResult r;
  if (!conv.masked_score) {
    r = a1_dense_masked(q, k, v, pattern, scale, mods ? *mods : ScoreMods{});
  } else {
    // The dense definition with masked scores replaced by VALUE (masked_fill semantics,
    // reference/masked_score.h).
    r = masked_score_attention(q, k, v, pattern, scale, *conv.masked_score);
  }
  if (conv.lse_base2)
    for (double& x : r.lse.data) x *= 1.0 / std::log(2.0);  // -inf stays -inf
  return r;
}

}  // namespace sparseattn::api
