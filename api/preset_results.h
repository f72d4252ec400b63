// The numbers of a model preset (api/model_presets.h; contract §6.4, docs/models.md) at one
// seq_len, as JSON: what `reach --preset NAME --json` and `info --preset NAME --json` print
// and sparseattn.preset_reach() / preset_info() return. One function per view for both
// front ends.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "api/model_presets.h"

namespace sparseattn::api {

// Per layer the connected fraction and the last query's receptive field, the depth at which
// the last query first reaches token 0, mixing depth, diameter, mean shortest path, hop
// distances. Band stacks (windows and dense layers only) use g2_reach_band, any n; stacks of
// bands and chunked layers g2_reach_interval, any n; other stacks g1 (its limits).
nlohmann::json preset_reach_json(const ModelPreset& preset, int64_t seq_len);

// Per layer and in total the FLOPs (4 * nnz * head_dim * num_heads per batch element), the
// KV-cache bytes a decoder keeps, both against the all-dense stack, and the speedup bound.
// only_layer >= 0: that layer only (0-based; checked, ModelPreset::check_layer), else all.
nlohmann::json preset_info_json(const ModelPreset& preset, int64_t seq_len, int64_t only_layer);

}  // namespace sparseattn::api
