// k07 — HF BigBird listing (contract §3.12), float32: HF's key-block lists, repeats kept.
//
// Contract (compat_kernels.h): matches hf_listing_oracle (float64) within kTolFloat32
// (atol 2e-5, rtol 2e-4, core/numerics.h) on a BlockListing (reference/compat.h) with
// seq_len_q = seq_len_k = a whole number of blocks, key padding. Registry entry
// cpu_k07_hf_listing: serves the bigbird patterns whose listing repeats no block (there it
// matches a1_dense_masked, contract §2.2); `attend --compat hf-bigbird --impl
// cpu_k07_hf_listing` runs it with repeats counted (§3.12). Bit-identical for any OpenMP
// thread count: each row is one online softmax, computed by one thread in a fixed order.
//
// What changed since k05 (block table walk): the key blocks come from a BlockListing,
// repeats kept, instead of the canonical layout's set of tiles; no masking inside a block
// (HF requires n to be a multiple of b), only key padding.
// Why: HF BigBird counts a block listed twice twice (docs/peers.md), which a canonical
// layout, a set of tiles, cannot express.
// Measured: not yet measured — docs/benchmarks.md has no row for it: it joined the registry
// after the last bench_cpu run, which will time it; its agreement with HF is in docs/peers.md.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "optimized/cpu/compat_kernels.h"

namespace sparseattn::cpu {

void k07_hf_listing(const float* q, const float* k, const float* v, const AttentionShape& s,
                    const BlockListing& listing, const uint8_t* key_padding_mask, float scale,
                    float* o, float* lse) {
  const int64_t bsz = listing.block_size, n = listing.num_blocks * bsz;
  require(s.seq_len_q == n && s.seq_len_k == n, "seq_len", s.seq_len_q,
          "must equal the listing's " + std::to_string(n) + " tokens");
  require(static_cast<int64_t>(listing.lists.size()) == s.num_heads, "num_heads", s.num_heads,
          "must equal the listing's " + std::to_string(listing.lists.size()));
  const int64_t d = s.head_dim, dv = s.head_dim_v, rows = s.batch * s.num_heads * n;
#pragma omp parallel
  {
    std::vector<float> acc(static_cast<size_t>(dv));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r % n, bh = r / n, h = bh % s.num_heads, b = bh / s.num_heads;
      float* orow = o + r * dv;
      const bool query_real = !key_padding_mask || key_padding_mask[b * n + i] != 0;
      float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
      for (float& x : acc) x = 0.0f;
      if (query_real) {
        const float* qi = q + r * d;
        for (int64_t c : listing.lists[static_cast<size_t>(h)][static_cast<size_t>(i / bsz)]) {
          for (int64_t j = c * bsz; j < (c + 1) * bsz; ++j) {
            if (key_padding_mask && key_padding_mask[b * n + j] == 0) continue;
            const float* kj = k + (bh * n + j) * d;
            float dot = 0.0f;
            for (int64_t x = 0; x < d; ++x) dot += qi[x] * kj[x];
            const float sij = scale * dot;
            if (sij > m) {  // rescale what was summed under the old maximum
              const float alpha = std::exp(m - sij);  // exp(-inf) = 0 on the first key
              l *= alpha;
              for (float& x : acc) x *= alpha;
              m = sij;
            }
            const float p = std::exp(sij - m);
            l += p;
            const float* vj = v + (bh * n + j) * dv;
            for (int64_t x = 0; x < dv; ++x) acc[static_cast<size_t>(x)] += p * vj[x];
          }
        }
      }
      if (l > 0.0f) {
        for (int64_t x = 0; x < dv; ++x) orow[x] = acc[static_cast<size_t>(x)] / l;
        lse[r] = m + std::log(l);
      } else {  // fully masked row (contract §2.3): o = 0, lse = -inf, never 0/0
        for (int64_t x = 0; x < dv; ++x) orow[x] = 0.0f;
        lse[r] = -std::numeric_limits<float>::infinity();
      }
    }
  }
}

bool k07_lists(const Pattern& p) {
  const PatternSizes& z = p.sizes;
  const int64_t bs = p.spec.block_size;
  return p.spec.kind == PatternKind::bigbird && z.seq_len_q == z.seq_len_k && bs >= 1 &&
         z.seq_len_q % bs == 0 && z.seq_len_q / bs >= 5 && p.random_shortfall == 0;
}

BlockListing k07_listing(const Pattern& p) {
  require(k07_lists(p), "pattern", describe(p.spec),
          "cpu_k07_hf_listing serves bigbird with seq_len a whole number (>= 5) of blocks and "
          "every random block drawn (HF's listing)");
  return hf_bigbird_listing(p.sizes.seq_len_q, p.spec.block_size, p.sizes.num_heads,
                            p.random_draws);
}

bool k07_serves(const Pattern& p) {
  if (!k07_lists(p)) return false;
  for (const auto& head : k07_listing(p).lists)
    for (std::vector<int64_t> l : head) {
      std::sort(l.begin(), l.end());
      if (std::adjacent_find(l.begin(), l.end()) != l.end()) return false;  // a repeat
    }
  return true;
}

}  // namespace sparseattn::cpu
