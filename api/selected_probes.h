// The usual mistakes of selected attention (contract §3.16–§3.17) as `check` probes
// (contract §4.9; api/probes.cpp runs them): each is the judged pattern's index table
// rebuilt the way a wrong kernel reads it, or, for duplicates, a row computed with the
// other counting rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pattern/pattern.h"

namespace sparseattn::api {

struct SelectedMistake {
  std::string name;   // probes.tried[].probe
  std::string cause;  // probable_cause when it matches
  PatternSpec spec;   // the pattern the mistaken kernel computes
  // Rows computed counting every listed entry (selected_row with count), not from the
  // spec's key sets: a gather kernel that reads each slot, -1 as key 0, adds key 0 once per
  // empty slot even under --duplicates once.
  bool counted = false;
};

// For a selected or selected-blocks pattern (empty for any other kind), with `num_kv_heads`
// the k/v heads: rows read per query head (h mod H_sel) instead of per kv head, or per kv
// head (h / g) instead of per query head; -1 read as key (block) 0 or as the last one (and,
// token-level under --duplicates once, -1 read as key 0 once per empty slot); block sizes
// one smaller or larger. Only mistakes that change the table are listed.
std::vector<SelectedMistake> selected_mistakes(const Pattern& pattern, int64_t num_kv_heads);

// Whether the duplicates probe applies: a selected pattern with a key listed twice in a row
// (where causal keeps it). The probe computes rows by selected_row with the other rule.
bool has_repeats(const Pattern& pattern);

// Row i of (b, h) of selected attention over `pattern`'s table counting duplicates
// (`count`) or not, float64: lse = log Σ_j m_j exp(s_j), o = Σ_j m_j exp(s_j − lse) v_j.
// q, k, v point at (b, h)'s query head and its kv head [L, d]. No key: o = 0, lse = -inf.
// Returns the multiply-adds done.
int64_t selected_row(const Pattern& pattern, int64_t b, int64_t h, int64_t i, bool count,
                     const double* q, const double* k, const double* v, int64_t head_dim,
                     int64_t head_dim_v, double scale, double* o, double* lse);

}  // namespace sparseattn::api
