// Registry adapters of the approximations (registry/reference_kernels.def, exact = false).
// They run with fixed, documented defaults so `sparseattn attend --impl performer_favor`
// is reproducible; other settings go through the functions themselves.
#include <algorithm>

#include "reference/approx/approx_common.h"
#include "reference/approx/nystrom.h"
#include "reference/approx/performer_favor.h"
#include "registry/registry.h"

namespace sparseattn {
namespace entry {

// m = 256 orthogonal random features, seed 0 (FavorOptions' defaults).
void run_performer_favor(const Problem& p, Output& out) {
  AttentionResult r = performer_favor(p.q, p.k, p.v, *p.pattern, &p.scale, FavorOptions{});
  out.o = std::move(r.o);
  out.lse = std::move(r.lse);
}
bool serves_performer_favor(const Pattern& pattern) { return approx::serves_dense(pattern); }

// c = min(64, seq_len_q, seq_len_k) landmarks (64 is the paper's default; a sequence
// shorter than that gets one landmark per token), 6 iterations of the paper's A⁺.
void run_nystrom(const Problem& p, Output& out) {
  NystromOptions options;
  options.num_landmarks =
      std::min({options.num_landmarks, p.shape.seq_len_q, p.shape.seq_len_k});
  AttentionResult r = nystrom_attention(p.q, p.k, p.v, *p.pattern, &p.scale, options);
  out.o = std::move(r.o);
  out.lse = std::move(r.lse);
}
bool serves_nystrom(const Pattern& pattern) { return approx::serves_dense(pattern); }

}  // namespace entry
}  // namespace sparseattn
