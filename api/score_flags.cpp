// --softcap, --alibi-slopes, --sinks (api/score_flags.h, contract §2.8–§2.9).
#include "api/score_flags.h"

#include <cmath>

#include "api/inputs.h"
#include "core/error.h"
#include "core/npy.h"

namespace sparseattn::api {

void add_score_flags(CLI::App* cmd, ScoreFlags& f) {
  cmd->add_option("--softcap", f.softcap,
                  "C: logit softcap, finite > 0: each allowed scaled score s becomes C*tanh(s/C) "
                  "before ALiBi and the mask (Gemma 2's attn_logit_softcapping; contract §2.8)");
  cmd->add_option("--alibi-slopes", f.alibi_slopes,
                  "A.npy: ALiBi slopes, float [num_heads of q] or [batch, num_heads of q], finite: "
                  "each allowed score gets -A*|p - j|, p = i + seq_len_k - seq_len_q (contract §2.8)");
  cmd->add_option("--sinks", f.sinks,
                  "S.npy: one learned sink logit per q head, float [num_heads of q], finite: it "
                  "joins every real row's softmax denominator with a zero value (gpt-oss; "
                  "contract §2.9)");
}

ScoreMods to_score_mods(const ScoreFlags& f, const AttentionShape& shape) {
  ScoreMods m;
  // The range is validate_score_mods's (a FieldError naming --softcap); text that is not a
  // finite number is refused here.
  if (!f.softcap.empty()) m.softcap = parse_finite("--softcap", f.softcap, -INFINITY);
  if (!f.alibi_slopes.empty()) m.alibi_slopes = read_npy_float(f.alibi_slopes, "--alibi-slopes");
  if (!f.sinks.empty()) m.sinks = read_npy_float(f.sinks, "--sinks");
  validate_score_mods(m, shape.batch, shape.num_heads);
  return m;
}

void require_combinable(const AttentionShape& shape, const ScoreMods& mods,
                        const Conventions& conv, bool compat, Spelling spelling) {
  const bool grouped = shape.num_kv_heads != shape.num_heads;
  if (!grouped && !mods.any()) return;
  const std::string what = grouped && mods.any() ? "grouped-query heads and " + describe(mods)
                           : grouped             ? std::string("grouped-query heads")
                                                 : describe(mods);
  const std::string not_yet = " is not combined with " + what + " (contract §2.7-§2.9)";
  const bool flags = spelling == Spelling::flag;
  require(!compat, flags ? "--compat" : "compat", "(a compatibility mode)",
          "must be absent: a compatibility mode (contract §3.12)" + not_yet);
  require(!conv.masked_score, spell(Field::masked_score, spelling),
          conv.masked_score ? to_text(*conv.masked_score) : "", "must be -inf:" + not_yet);
  require(!conv.padding_align_valid, spell(Field::padding_align, spelling), "valid",
          "must be full:" + not_yet);
  require(!(conv.causal_top_left && mods.has_alibi()), spell(Field::causal_align, spelling),
          "top-left", std::string("must be bottom-right with ") +
                          spell(Field::alibi_slopes, spelling) +
                          ": ALiBi's distance is measured from the bottom-right position "
                          "(contract §2.8)");
}

}  // namespace sparseattn::api
