// The float32 copies of a problem's score modifiers (contract §2.8–§2.9) that cpu::Mods
// points into: float32 in every CPU kernel, forward (entries.cpp, the bf16 ones included)
// and backward (grad_entries.cpp).
#pragma once

#include <vector>

#include "optimized/cpu/kernels.h"
#include "registry/registry.h"

namespace sparseattn::entry {

struct Mods32 {
  std::vector<float> slopes, sinks;  // what mods.slopes and mods.sinks point into
  cpu::Mods mods;
};

// Fills `m` from problem.mods. Refuses, naming the field (FieldError: softcap, sinks,
// alibi_slopes), a value float32 cannot carry through the pipeline: a softcap outside
// [FLT_MIN, 1e37], a sink with |σ| > 1e37 (the lse would be σ), a slope whose bias over the
// longest distance, |a|·max(L_q, L_k), exceeds 1e37 (kFloat32ScoreLimit, float32_guard.h).
void convert_mods(const Problem& problem, Mods32& m);

}  // namespace sparseattn::entry
