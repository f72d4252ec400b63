// The flags of the attention of current models that every tensor subcommand shares
// (`attend`, `check`): --softcap, --alibi-slopes, --sinks (contract §2.8–§2.9). Grouped-query
// heads (contract §2.7) need no flag: k and v with fewer heads than q say it.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "api/conventions.h"
#include "core/field.h"
#include "core/score_mods.h"
#include "core/tensor.h"

namespace sparseattn::api {

// Raw flag values as parsed; files are read by to_score_mods().
struct ScoreFlags {
  std::string softcap;       // text: a finite real > 0 (parse_finite)
  std::string alibi_slopes;  // .npy path, float [H_q] or [B, H_q]
  std::string sinks;         // .npy path, float [H_q]
};

// Adds --softcap, --alibi-slopes and --sinks to `cmd`, each with its unit and range.
void add_score_flags(CLI::App* cmd, ScoreFlags& flags);

// Reads the flags into a ScoreMods (the .npy files widened to float64) and validates it for
// `shape` (validate_score_mods). Throws InvalidArgument naming the flag for text that is not
// a number or a file that cannot be read, FieldError (softcap, alibi_slopes, sinks) for a
// value out of range; main() spells the field as its flag.
ScoreMods to_score_mods(const ScoreFlags& flags, const AttentionShape& shape);

// The conventions and modes that do not combine with grouped heads or score modifiers yet:
// the compatibility modes (contract §3.12, their definitions are HF's), a finite
// --masked-score, --padding-align valid, and --causal-align top-left with ALiBi (whose
// distance is measured from the bottom-right position, contract §2.8). Throws
// InvalidArgument naming the first such argument as `spelling` writes it (`--masked-score`
// on the command line, `masked_score` in Python).
void require_combinable(const AttentionShape& shape, const ScoreMods& mods,
                        const Conventions& conv, bool compat, Spelling spelling);

}  // namespace sparseattn::api
