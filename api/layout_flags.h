// The flags of the sequence layouts (contract §2.10–§2.12) that `attend` and `check` share:
// --cu-seqlens-q, --cu-seqlens-k, --cache-seqlens, --block-table, each an integer .npy file.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "api/conventions.h"
#include "api/layout_check.h"
#include "api/layout_walk.h"
#include "api/pattern_flags.h"
#include "api/score_flags.h"
#include "core/field.h"

namespace sparseattn::api {

// Raw flag values as parsed: .npy paths ("" = not given); read by read_layout().
struct LayoutFlags {
  std::string cu_seqlens_q, cu_seqlens_k, cache_seqlens, block_table;
  bool requested() const {
    return !cu_seqlens_q.empty() || !cu_seqlens_k.empty() || !cache_seqlens.empty() ||
           !block_table.empty();
  }
};

// Adds the four flags to `cmd`, each with its shape, dtype and range.
void add_layout_flags(CLI::App* cmd, LayoutFlags& flags);

// Reads the files (int32 or int64; a float file is refused naming its flag) into a
// SeqLayout. --cu-seqlens-q and --cu-seqlens-k come together; --block-table needs
// --cache-seqlens; cu_seqlens and a cache exclude each other. The sizes are checked later,
// against the tensors (validate_varlen, validate_kv_cache). Throws FieldError naming the
// field (main() spells it as the flag).
SeqLayout read_layout(const LayoutFlags& flags);

// The conventions that mean nothing under a layout (contract §2.10–§2.11): --layout bshd with
// cu_seqlens (a packed batch has one layout), --padding-align valid, --padded-queries any,
// --key-padding-polarity ignore, --causal-align top-left, a finite --masked-score, and the
// compatibility modes (`compat`). Throws FieldError naming the convention, with the layout
// field it does not combine with.
void require_layout_conventions(const Conventions& conv, const SeqLayout& layout, bool compat);

// attend and check: the call the files and flags describe — the layout (read_layout), the
// conventions (require_layout_conventions), the spec (to_spec, require_layout_spec), q, k, v
// (finite; a cache's k and v only where they are read, contract §2.11), the scale text
// (parse_finite) and the score flags (to_score_mods for the layout's B and H_q). Throws
// InvalidArgument / FieldError naming the flag.
LayoutCall layout_call_from_files(const std::string& q, const std::string& k,
                                  const std::string& v, const LayoutFlags& layout,
                                  const PatternFlags& pattern, const Conventions& conv,
                                  bool compat, const std::string& scale, const ScoreFlags& score);

}  // namespace sparseattn::api
