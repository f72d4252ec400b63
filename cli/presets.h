// `--preset NAME` for reach and info, and `--preset NAME --layer L` for attend, check and
// mask (contract §6.4; docs/models.md): a model's attention stack (or one layer of it) from
// models/NAME.json instead of pattern flags. The commands only add the flags and call these;
// everything preset-specific lives in preset_commands.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/pattern_flags.h"
#include "api/score_flags.h"

namespace sparseattn::cli {

// `--preset NAME --layer L` of attend, check and mask (contract §6.4): one layer of a model
// preset instead of the pattern flags (and, for attend and check, the scale and softcap).
struct PresetLayerFlags {
  std::string preset;
  int64_t layer = 0;
  CLI::Option* preset_flag = nullptr;
  CLI::Option* layer_flag = nullptr;
};

// Adds --preset and --layer to `cmd`; `what` says what the preset replaces.
void add_preset_layer_flags(CLI::App* cmd, PresetLayerFlags& flags, const std::string& what);

// mask: with --preset, `pattern` becomes the layer's pattern flags (its --key-padding-mask
// kept); every pattern flag but --key-padding-mask, and each of `also_fixed`, given beside
// it is refused. --layer without --preset, or --preset without --layer, is refused.
// Returns whether a preset was given.
bool apply_preset_pattern(const CLI::App* cmd, const PresetLayerFlags& flags,
                          api::PatternFlags& pattern, const std::vector<std::string>& also_fixed,
                          const std::string& fixes = "the layer's pattern and heads");

// attend and check: apply_preset_pattern(), and `scale` and `score.softcap` become the
// preset's (written with 17 significant digits: the same double); --scale, --softcap,
// --alibi-slopes and the compatibility flags are refused beside --preset; --sinks is
// required when the model has sinks and refused when it has none; the heads and head_dim
// of the files q, k, v must be the preset's (api::check_preset_inputs).
void apply_preset_call(const CLI::App* cmd, const PresetLayerFlags& flags,
                       api::PatternFlags& pattern, std::string& scale, api::ScoreFlags& score,
                       const std::string& q, const std::string& k, const std::string& v,
                       bool bshd);

// Throws InvalidArgument(flag, "given", "--preset NAME fixes ...; leave FLAG out") for the
// first of `flags` (option names of `cmd`) that was given: a preset must not be silently
// overridden.
void refuse_overridden_flags(const CLI::App* cmd, const std::string& preset,
                             const std::vector<std::string>& flags,
                             const std::string& fixes = "the pattern, heads and layers");

// The pattern flags of add_pattern_flags() (api/pattern_flags.h).
const std::vector<std::string>& pattern_flag_names();

// `reach --preset NAME --seq-len N|A:B|A,B,C [--json]`: per layer the connected fraction and
// the last query's receptive field, the depth at which the last query first reaches token 0,
// mixing depth, diameter, mean shortest path, hop distances. Band stacks (windows and dense
// layers only) use g2_reach_band, any n; bands with chunked layers g2_reach_interval, any n;
// other stacks g1 (its limits).
void run_reach_preset(const std::string& preset, const std::string& seq_len_text, bool json);

// `info --preset NAME --seq-len N|A:B|A,B,C [--layer L] [--json]`: per layer and in total
// the FLOPs (4 * nnz * head_dim * num_heads per batch element, as `info`), the KV-cache
// bytes a decoder keeps (2 * num_kv_heads * head_dim * kept tokens * kv_bytes_per_value;
// a causal window keeps window + 1 tokens), both against the all-dense stack, and the
// speedup bound (all-dense FLOPs / preset FLOPs). layer: that layer only (0-based), else all.
void run_info_preset(const std::string& preset, const std::string& seq_len_text,
                     std::optional<int64_t> layer, bool json);

// `sparseattn models`: name, layers, heads, schedule in one line, source.
void register_models(CLI::App& app);

}  // namespace sparseattn::cli
