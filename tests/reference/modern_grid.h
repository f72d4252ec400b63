// Serves the tests of contract §2.7–§2.9 (grouped-query heads, softcap, ALiBi, sinks) for
// the implementations that read them: a6_flash_modern (tests/reference/) and the CPU
// kernels whose registry entry lists the features (tests/cpu/).
//
// The grid: base cases (pattern, sizes, H_kv) crossed with the modifier sets — none (the
// grouped heads alone), each modifier alone, and all three together. The bases cover
// g ∈ {1, 2, 4, 8}, H_kv = 1 (multi-query), seq_len_q < seq_len_k and > seq_len_k, causal,
// key padding (batch 2 entirely padded: padded query rows), real rows with no allowed key
// (causal with L_q > L_k, an explicit mask's empty row: with a sink their lse is σ), and the
// pattern kinds dense, window (dilation 1 and 2), longformer, bigbird, explicit, per-head.
// Scores are made large (scale 1, head_dim up to 64: |s| up to ~10) so that the softcap
// c = 2 bends them and ALiBi's slopes (some negative) move the row maxima.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/score_mods.h"
#include "core/seeded_inputs.h"
#include "tests/reference/grid.h"

namespace sparseattn::testing_modern {

using testing_grid::Case;

enum ModSet : unsigned { kNone = 0, kCap = 1, kAlibi = 2, kSink = 4, kAll = 7 };

struct ModernCase {
  std::string name;
  Case base;              // sizes.num_heads is H_q
  int64_t num_kv_heads;   // divides H_q
  unsigned mods;          // ModSet bits
};

inline void PrintTo(const ModernCase& c, std::ostream* os) { *os << c.name; }

// The modifiers of `c`, drawn from its name's seed: softcap 2; slopes [H_q] for batch 1,
// [B, H_q] otherwise, in [-0.05, 0.3]; sinks in [-1, 2].
inline ScoreMods mods_of(const ModernCase& c) {
  const uint64_t seed = testing_inputs::seed_of(c.name);
  const int64_t B = c.base.sizes.batch, H = c.base.sizes.num_heads;
  ScoreMods m;
  if (c.mods & kCap) m.softcap = 2.0;
  if (c.mods & kAlibi)
    m.alibi_slopes = B == 1 ? testing_inputs::random_tensor({H}, seed + 11, -0.05, 0.3)
                            : testing_inputs::random_tensor({B, H}, seed + 11, -0.05, 0.3);
  if (c.mods & kSink) m.sinks = testing_inputs::random_tensor({H}, seed + 12, -1.0, 2.0);
  return m;
}

// q [B, H_q, L_q, D], k [B, H_kv, L_k, D], v [B, H_kv, L_k, D_v], uniform in [-1, 1].
struct ModernInputs {
  Tensor<double> q, k, v;
};
inline ModernInputs inputs_of(const ModernCase& c) {
  const uint64_t seed = testing_inputs::seed_of(c.name);
  const PatternSizes& z = c.base.sizes;
  return {testing_inputs::random_tensor({z.batch, z.num_heads, z.seq_len_q, c.base.head_dim}, seed),
          testing_inputs::random_tensor({z.batch, c.num_kv_heads, z.seq_len_k, c.base.head_dim},
                                        seed + 1),
          testing_inputs::random_tensor({z.batch, c.num_kv_heads, z.seq_len_k, c.base.head_dim_v},
                                        seed + 2)};
}

inline std::vector<ModernCase> modern_cases() {
  using K = PatternKind;
  using testing_grid::make_case;
  using testing_grid::token;
  struct Base {
    Case c;
    int64_t hkv;
  };
  std::vector<Base> bases = {
      // dense: g = 2; g = 8 on one kv head, causal, L_q < L_k; L_q > L_k causal (rows
      // before the first key have none); key padding with an entirely padded batch element.
      {make_case(PatternSpec{}, {1, 4, 130, 130, 64, 64}, false, 1.0), 2},
      {make_case(token(K::dense, 0, 1, true, 64), {1, 8, 100, 150, 17, 17}, false, 1.0), 1},
      {make_case(token(K::dense, 0, 1, true, 64), {1, 2, 150, 70, 8, 8}, false, 1.0), 2},
      {make_case(token(K::dense, 0, 1, true, 64), {3, 4, 100, 100, 16, 16}, true, 1.0), 2},
      // window: band wider than a chunk (g = 2); causal with padding, L_q > L_k, MQA g = 8;
      // dilated (g = 4).
      {make_case(token(K::window, 40, 1, false, 64), {1, 2, 300, 300, 32, 32}, false, 1.0), 1},
      {make_case(token(K::window, 7, 1, true, 16), {3, 8, 250, 190, 8, 8}, true, 1.0), 1},
      {make_case(token(K::window, 9, 2, false, 64), {1, 4, 200, 200, 16, 16}, false, 1.0), 1},
      // longformer: globals at the start and inside the band.
      {make_case(token(K::longformer, 12, 1, false, 64, {0, 40}), {1, 2, 130, 130, 8, 8}, false,
                 1.0), 1},
      // bigbird: block 16 with padding (g = 2), block 64 with 2 random blocks over 7 blocks
      // (g = 1; kept small: this binary also runs on an emulated AVX2-only CPU).
      {make_case(testing_grid::bigbird(16, 2, 4), {3, 2, 192, 192, 32, 32}, true, 1.0), 1},
      {make_case(testing_grid::bigbird(64, 2, 1), {1, 2, 448, 448, 32, 32}, false, 0.5), 2},
      // explicit: a random mask whose row 12 is empty (a real row with no key).
      {make_case(testing_grid::explicit_mask(testing_grid::random_mask({150, 150}, 12, 77), 16),
                 {1, 2, 150, 150, 17, 17}, false, 1.0), 1},
  };
  {
    PatternSpec s;
    s.kind = K::per_head;
    s.per_head = {token(K::window, 5, 1, false, 64), token(K::dense, 0, 1, true, 16),
                  testing_grid::bigbird(32, 1, 7), token(K::window, 9, 2, true, 64)};
    bases.push_back({make_case(s, {1, 4, 150, 150, 8, 8}, false, 1.0), 2});
  }
  std::vector<ModernCase> out;
  for (const Base& b : bases)
    for (unsigned m : {kNone, kCap, kAlibi, kSink, kAll}) {
      ModernCase c{"", b.c, b.hkv, m};
      c.name = b.c.name + "_Hkv" + std::to_string(b.hkv) + (m == kNone ? "_gqa" : "") +
               (m & kCap ? "_cap" : "") + (m & kAlibi ? "_alibi" : "") +
               (m & kSink ? "_sink" : "");
      out.push_back(std::move(c));
    }
  return out;
}

}  // namespace sparseattn::testing_modern
