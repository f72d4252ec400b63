// When `check` fails, says which peer convention would explain the failure and the flag
// that compares under it (docs/peers.md): a report a reader can act on. Used only on
// failure and only without the compatibility flags (contract §3.12).
#pragma once

#include <string>

#include "core/numerics.h"
#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn::api {

// o, oracle_o: [B, H, Lq, dv] (candidate and the set-semantics oracle). Returns "" when
// no peer convention fits the failing rows, else one sentence naming the rows, the likely
// cause and the flag, e.g. "only the 40 rows of global queries differ: ... pass
// --q-global QG.npy --k-global KG.npy --v-global VG.npy". Facts it uses:
//  - bigbird with a random table: the query blocks whose HuggingFace listing names a block
//    twice (eval mode lists block 0 1 + r times);
//  - longformer (self-attention): the rows of global queries (separate global
//    projections); when HF Longformer could have produced the case (not causal, not
//    dilated), globals that differ per batch element (batch > 1) and attention_window as
//    the total width (an even window).
// global_mask: [B, L_k] (--global-mask) or nullptr: the global queries per batch element;
// without it, the pattern's --global positions.
std::string convention_hint(const Pattern& pattern, const Tensor<double>& o,
                            const Tensor<double>& oracle_o, Tolerance tol,
                            const Tensor<uint8_t>* global_mask);

}  // namespace sparseattn::api
