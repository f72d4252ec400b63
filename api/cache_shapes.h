// The shape checks of a decode problem (contract §2.11–§2.12), in one place for the two that
// need them before any work: make_cache_problem (api/registry.cpp) and the layout walk's
// validate_cache_inputs (api/layout_walk.h).
#pragma once

#include "core/seq_layout.h"
#include "core/tensor.h"

namespace sparseattn::api {

// q [B, H_q, L_q, d]; k, v the cache [B, H_kv, L_cache, d] / [.., d_v] or, when `cache` has a
// block table, page pools [num_pages, H_kv, page_size, d] (all rank 4, bhsd). Checks v against
// k, head_dim against q, H_kv dividing H_q, q's sizes >= 1 and a cache's batch; fills
// cache.num_pages and page_size (paged) or seq_len_cache from k's shape; then
// validate_kv_cache. Throws InvalidArgument naming q/k/v, FieldError naming the cache.
void complete_cache_shapes(const Shape& q, const Shape& k, const Shape& v, KvCache& cache);

}  // namespace sparseattn::api
