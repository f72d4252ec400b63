// Row-level pieces of the cause probes (api/probes.h, contract §4.9): one row of the
// oracle's definition over an explicit key list, and the smallest change of one row's key
// set that reproduces a candidate's row. Each costs O(keys · (head_dim + head_dim_v)) or
// O(L_k · (head_dim + head_dim_v)): a probe never re-runs the whole O(n²) oracle.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/numerics.h"
#include "core/score_mods.h"
#include "pattern/pattern.h"

namespace sparseattn::api {

// The checker's element test (core/check.h, contract §4.2): |x - ref| <= atol + rtol·|ref|
// for finite values; non-finite ones must be equal (-inf matches -inf).
bool element_ok(double x, double ref, Tolerance tol);

// One (batch, head)'s tensors as the row functions read them. q [Lq, D], k [Lk, D],
// v [Lk, Dv], row-major, float64.
// With `mods` the rows follow the score pipeline and sinks (contract §2.8–§2.9) of batch
// element `batch`, query head `head`; `offset` = L_k − L_q puts query i at position
// i + offset (ALiBi's distance); `pattern` says which queries are real (a padded query has no
// sink). `mistake` computes the pipeline the way a probe supposes a candidate did.
enum class ScoreMistake {
  none,
  softcap_before_scale,  // s = scale·c·tanh(<q, k>/c) instead of c·tanh(scale·<q, k>/c)
  alibi_top_left,        // ALiBi's distance |i − j|, the query's index instead of its position
};
struct HeadView {
  const double* q;
  const double* k;
  const double* v;
  int64_t seq_len_k, head_dim, head_dim_v;
  const ScoreMods* mods = nullptr;
  int64_t batch = 0, head = 0, offset = 0;
  const Pattern* pattern = nullptr;
  ScoreMistake mistake = ScoreMistake::none;
};

// Row i of attention over `keys` (ascending, distinct, in [0, Lk)), float64, in
// a1_dense_masked's order of operations: s_j = scale·<q_i, k_j> (then hv.mods' softcap and
// ALiBi), lse = m + ln(exp(σ − m) + Σ exp(s_j − m)) with σ the row's sink (−inf without
// sinks or for a padded query), o = Σ exp(s_j − lse) v_j. No key: o = 0, lse = σ. `masked` (a finite --masked-score):
// every key not in `keys` scores that value instead of leaving the softmax (contract §1.6).
// Writes o [Dv] and lse (natural log). Returns the multiply-adds done.
int64_t attend_row(const HeadView& hv, int64_t i, const std::vector<int64_t>& keys, double scale,
                   const std::optional<double>& masked, double* o, double* lse);

// The keys query i of (b, h) attends in `p`: its layout row's keys that are real tokens
// (key padding), none when the query itself is padded (contract §2.4). Ascending.
void pattern_row_keys(const Pattern& p, int64_t b, int64_t h, int64_t i,
                      std::vector<int64_t>& keys);
// The layout row's keys with the key padding not applied (every query, every key).
void layout_row_keys(const Pattern& p, int64_t h, int64_t i, std::vector<int64_t>& keys);

// A change of one row's key set: keys added to it and keys removed from it, ascending.
struct KeyChange {
  bool found = false;
  std::vector<int64_t> added, removed;
};

// The smallest change (fewest keys) of row i's key set `keys`, made of at most two ranges
// of consecutive keys toggled (a range may add and remove), under which the definition
// gives the candidate's row: o_c [Dv] within o_tol and, when lse_c is given, its lse
// (in base 2 when lse_base2) within lse_tol. Searched: every range of up to 16 keys, every
// range of any length that starts or ends where the key set changes (the band's edges,
// the diagonal, the sequence ends), and every pair of such ranges of up to 16 keys each;
// each hit is confirmed by attend_row. Cost O(L_k · (head_dim + 16·head_dim_v)) plus the
// pairs. Not found: a row that no such change explains (a local numeric error).
KeyChange smallest_key_change(const HeadView& hv, int64_t i, int64_t position,
                              const std::vector<int64_t>& keys, double scale, const double* o_c,
                              const double* lse_c, bool lse_base2, Tolerance o_tol,
                              Tolerance lse_tol);

}  // namespace sparseattn::api
