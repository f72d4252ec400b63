// canonicalize(): contract §3 "Parameters beyond the sequence". Every pattern parameter
// may exceed what the sequence needs; it then means exactly what its clamped value means.
// This is the one place that clamps: materialize() stores the canonical spec in
// Pattern::spec, so the layouts, the kernels (which read Pattern::band() and
// Pattern::spec), the CUDA copy and the graph module never meet an out-of-range value.
//
// The equivalences, with N = max(seq_len_q, seq_len_k) (docs/patterns.md derives each):
//   dilation d >= N             ≡ N: a key j = p + d·t with t != 0 has |j - p| >= N, but
//                                   |j - p| <= N - 1 for every query position p and key j.
//   window w >= floor((N-1)/d)  ≡ floor((N-1)/d) (after clamping d): steps beyond it never
//                                   reach a key, for any query, causal or not; the same for
//                                   window_left and window_right, and -1 (unbounded) is it.
//   chunk_size C >= N           ≡ N: every key is in chunk 0, every query with p >= 0 too,
//                                   and a query with p < 0 is in chunk -1 for any C >= N.
//   kernel_size, and dilation of neighborhood, are never clamped: beyond the sequence they
//   are refused (contract §3.15).
//   block_size b >= n           ≡ n (bigbird; n - g for bigbird-etc, at least 1): one block.
//   num_random r >= seq_len_k   ≡ seq_len_k: no query has more candidates than keys.
//   num_random_blocks r >= nb   ≡ nb: no query block has more candidate blocks than nb.
//   tile > max(N, 64)           ≡ max(N, 64): storage only, the allowed set never depends
//                                   on it (the default 64 is never changed).
// Random draws are untouched by the clamps: draw t of a row is a pure function of (seed,
// head, row, t) and of the keys already excluded, neither of which a clamp changes, and
// a clamped count only drops trailing draws that could not have been made (-1).
#include <algorithm>

#include "pattern/pattern.h"

namespace sparseattn {

namespace {

// ceil(a / b) for a >= 0, b >= 1, without the overflow of (a + b - 1) / b.
int64_t ceil_div_nonneg(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

void clamp_one(PatternSpec& s, const PatternSizes& z) {
  // Out-of-range values (window < 0, dilation < 1, ...) are left for validation to refuse
  // by name; clamping them would hide the error.
  if (s.dilation < 1 || s.block_size < 1 || s.tile < 1 || z.seq_len_q < 1 || z.seq_len_k < 1) return;
  const int64_t n_max = std::max(z.seq_len_q, z.seq_len_k);
  s.dilation = std::min(s.dilation, n_max);
  s.window = std::min(s.window, (n_max - 1) / s.dilation);
  // (left, right): -1 (unbounded) and any reach beyond it mean the same finite reach.
  for (std::optional<int64_t>* reach : {&s.window_left, &s.window_right})
    if (*reach && **reach >= -1 && (**reach == -1 || **reach > (n_max - 1) / s.dilation))
      *reach = (n_max - 1) / s.dilation;
  if (s.chunk_size && *s.chunk_size >= 1) s.chunk_size = std::min(*s.chunk_size, n_max);
  if (!s.random_table) s.num_random = std::min(s.num_random, z.seq_len_k);  // a table's r stands
  s.tile = std::min(s.tile, std::max<int64_t>(n_max, 64));
  if (s.kind == PatternKind::bigbird) {
    s.block_size = std::min(s.block_size, z.seq_len_q);
    if (!s.random_table)
      s.num_random_blocks =
          std::min(s.num_random_blocks, ceil_div_nonneg(z.seq_len_q, s.block_size));
  } else if (s.kind == PatternKind::bigbird_etc) {
    // num_global_tokens > seq_len is refused by validation; clamp only what is computed here.
    const int64_t rest = std::max<int64_t>(z.seq_len_q - std::min(s.num_global_tokens, z.seq_len_q), 0);
    s.block_size = std::min(s.block_size, std::max<int64_t>(rest, 1));
    if (!s.random_table)
      s.num_random_blocks = std::min(s.num_random_blocks, ceil_div_nonneg(rest, s.block_size));
  }
}

}  // namespace

void canonicalize_in_place(PatternSpec& spec, const PatternSizes& sizes) {
  clamp_one(spec, sizes);
  for (PatternSpec& h : spec.per_head) clamp_one(h, sizes);
}

PatternSpec canonicalize(const PatternSpec& spec, const PatternSizes& sizes) {
  PatternSpec s = spec;
  canonicalize_in_place(s, sizes);
  return s;
}

}  // namespace sparseattn
