// k08 — token-level selected attention, OpenMP (contract §3.16), two twins from one template
// over the input element type: cpu_k08_selected_gather (float32 q, k, v) matches
// a1_dense_masked within kTolFloat32; cpu_k08_selected_gather_bf16 (bf16 q, k, v, widened to
// float32 as each row is read, float32 arithmetic after) matches a1_dense_masked evaluated
// on the same bf16-rounded inputs within kTolBfloat16 (core/numerics.h, docs/numerics.md).
//
// What changed since k06: k06 walks the layout's tiles, so a query whose K listed keys lie
// scattered over L_k visits up to K tiles of 64 keys, most of their pairs masked. k08 reads
// the index table itself and touches exactly the listed rows: per (batch, kv head, query)
// it builds the row's key list once (selected_keys: -1, causal, padding, duplicates), then
// for each listed key loads k_j once and scores it against every query head sharing the
// list (the g heads of the group when H_sel <= H_kv: DSA's one list for all heads, NSA's
// one per kv head), then the softmax per head, then loads v_j once and adds p_hj·v_j to
// every head's output. Bytes gathered per (query, list): n·(d + d_v)·4 (bf16: ·2) for g
// heads' work.
// Counted duplicates enter as weights m_j: l = Σ m_j exp(s_j − m), o = Σ m_j exp(s_j − m) v_j / l.
// Each output row is written by one work item in a fixed order: thread-count independent.
// The bf16 twin widens each gathered k row once into a float32 panel for the scorer (a
// scalar widen per key and d inside the scorer cost it 1.2x float32's time) and each v row
// as P·V reads it; from there the arithmetic is float32's, in the same order.
// Measured: docs/benchmarks.md, "Selected attention: token-level gather (k08)" (2026-12-01,
// 1 thread): 21.6 GFLOP per CPU-second = 18% of the FMA peak at n 16384, K 2048, H_q 8
// sharing one list (k06 on the same pattern: 1.23x its CPU time); the bf16 twin's time as a
// ratio to the float32 entry's: the same section's bf16 line.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "optimized/cpu/selected_kernels.h"

namespace sparseattn::cpu {

bool k08_serves(const Pattern& pattern) { return pattern.spec.kind == PatternKind::selected; }

namespace {

using selected::widen;

// exp(x) for x <= 0 (a score minus its row maximum), about 1 ulp: simd.h's vexp (Cephes
// expf) written per element and branch-free, so that the softmax loop below vectorizes
// (std::exp is a call per score; it took about half of k08's time). Below -87.3 exactly 0.
inline float exp_nonpositive(float x) {
  const float xc = x < -87.33654f ? -87.33654f : x;
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  const float two_n = __builtin_bit_cast(float, bits);
  return x < -87.33654f ? 0.0f : p * two_n;
}

// Scores of the G heads of a unit against n gathered keys, G a compile-time constant so
// that the accumulators stay in registers: q transposed to qt [D][G] (the heads in lanes),
// four keys at a time, one broadcast of k_j[d] per key and d — no horizontal sum per dot.
// scores[e * n + t] = scale * <q_e, k_keys[t]>, each dot summed over d in order.
// The bf16 twin calls it on a float32 panel of its gathered rows (keys 0..n-1).
template <int G>
void unit_scores(const float* qt, const float* kh, const int32_t* keys, int64_t n, int64_t D,
                 float scale, float* scores) {
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) {
    const float* k0 = kh + static_cast<int64_t>(keys[t]) * D;
    const float* k1 = kh + static_cast<int64_t>(keys[t + 1]) * D;
    const float* k2 = kh + static_cast<int64_t>(keys[t + 2]) * D;
    const float* k3 = kh + static_cast<int64_t>(keys[t + 3]) * D;
    float a0[G] = {}, a1[G] = {}, a2[G] = {}, a3[G] = {};
    for (int64_t d = 0; d < D; ++d) {
      const float* qd = qt + d * G;
      const float x0 = k0[d], x1 = k1[d], x2 = k2[d], x3 = k3[d];
#pragma omp simd
      for (int e = 0; e < G; ++e) {
        a0[e] += qd[e] * x0;
        a1[e] += qd[e] * x1;
        a2[e] += qd[e] * x2;
        a3[e] += qd[e] * x3;
      }
    }
    for (int e = 0; e < G; ++e) {
      scores[e * n + t] = scale * a0[e];
      scores[e * n + t + 1] = scale * a1[e];
      scores[e * n + t + 2] = scale * a2[e];
      scores[e * n + t + 3] = scale * a3[e];
    }
  }
  for (; t < n; ++t) {
    const float* kj = kh + static_cast<int64_t>(keys[t]) * D;
    float a[G] = {};
    for (int64_t d = 0; d < D; ++d) {
      const float* qd = qt + d * G;
      const float x = kj[d];
#pragma omp simd
      for (int e = 0; e < G; ++e) a[e] += qd[e] * x;
    }
    for (int e = 0; e < G; ++e) scores[e * n + t] = scale * a[e];
  }
}

using ScoresFn = void (*)(const float*, const float*, const int32_t*, int64_t, int64_t, float, float*);

// The fixed-width scorer for `share` heads, or nullptr (then the per-head dots below).
ScoresFn scores_for(int64_t share) {
  switch (share) {
    case 1: return &unit_scores<1>;
    case 2: return &unit_scores<2>;
    case 4: return &unit_scores<4>;
    case 8: return &unit_scores<8>;
    case 16: return &unit_scores<16>;
    default: return nullptr;
  }
}

// k08 on inputs of element type T (Inputs: float; InputsBf16: bf16 bits), `name` the
// registry entry for the refusal. Everything after the loads is float32 and the same code.
template <class In>
void selected_gather(const In& in, const Outputs& out, const char* name) {
  using T = std::remove_const_t<std::remove_pointer_t<decltype(in.q)>>;
  const Pattern& pattern = *in.pattern;
  if (!k08_serves(pattern))
    throw InvalidArgument("pattern", describe(pattern.spec), std::string(name) + " serves selected");
  const AttentionShape& s = in.shape;
  const int64_t B = s.batch, H = s.num_heads, Hkv = s.num_kv_heads, g = s.group();
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const int64_t hsel = pattern.selection.dim(1);
  // Heads that share one list: the whole group unless every query head has its own.
  const int64_t share = hsel == H && g > 1 ? 1 : g;
  const int64_t units = H / share;  // lists per batch element and query
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // bf16: the fixed-width scorer reads a float32 panel of the gathered key rows (widened
  // once per unit, vectorized) instead of widening one scalar per key and d in its loop.
  constexpr bool kWiden = !std::is_same_v<T, float>;
  const ScoresFn fixed = scores_for(share);

#pragma omp parallel
  {
    std::vector<int32_t> keys, seen(static_cast<size_t>(Lk), -1);
    std::vector<float> weights, scores, acc, inv(static_cast<size_t>(share));
    std::vector<float> qt(static_cast<size_t>(share * D));  // the unit's q, heads in lanes
    std::vector<float> panel;     // bf16: the unit's gathered key rows widened, [n][D]
    std::vector<int32_t> rows;    // bf16: 0, 1, ..., n - 1 (the panel's rows)
#pragma omp for schedule(dynamic, 8)
    for (int64_t item = 0; item < B * units * Lq; ++item) {
      const int64_t i = item % Lq, u = (item / Lq) % units, b = item / (Lq * units);
      const int64_t h0 = u * share;  // first query head of the unit
      const int64_t hk = h0 / g;
      selected_keys(pattern, b, pattern.selection_row(h0), i, keys, weights, seen);
      const int64_t n = static_cast<int64_t>(keys.size());
      const T* kh = in.k + (b * Hkv + hk) * Lk * D;
      const T* vh = in.v + (b * Hkv + hk) * Lk * Dv;
      scores.assign(static_cast<size_t>(share * n), 0.0f);
      // Scores: each key row once, against every head of the unit.
      if (fixed != nullptr) {
        for (int64_t e = 0; e < share; ++e) {
          const T* qi = in.q + ((b * H + h0 + e) * Lq + i) * D;
          for (int64_t d = 0; d < D; ++d) qt[static_cast<size_t>(d * share + e)] = widen(qi[d]);
        }
        if constexpr (kWiden) {
          panel.resize(static_cast<size_t>(n * D));
          rows.resize(static_cast<size_t>(n));
          for (int64_t t = 0; t < n; ++t) {
            const T* kj = kh + static_cast<int64_t>(keys[t]) * D;
            float* dst = panel.data() + t * D;
#pragma omp simd
            for (int64_t d = 0; d < D; ++d) dst[d] = widen(kj[d]);
            rows[static_cast<size_t>(t)] = static_cast<int32_t>(t);
          }
          fixed(qt.data(), panel.data(), rows.data(), n, D, in.scale, scores.data());
        } else {
          fixed(qt.data(), kh, keys.data(), n, D, in.scale, scores.data());
        }
      }
      for (int64_t t = 0; fixed == nullptr && t < n; ++t) {
        const T* kj = kh + static_cast<int64_t>(keys[t]) * D;
        for (int64_t e = 0; e < share; ++e) {
          const T* qi = in.q + ((b * H + h0 + e) * Lq + i) * D;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < D; ++d) dot += widen(qi[d]) * widen(kj[d]);
          scores[static_cast<size_t>(e * n + t)] = in.scale * dot;
        }
      }
      // Softmax per head (stable: the row maximum first), weights m_t for counted repeats.
      acc.assign(static_cast<size_t>(share * Dv), 0.0f);
      for (int64_t e = 0; e < share; ++e) {
        float* se = scores.data() + e * n;
        float* lse = out.lse + (b * H + h0 + e) * Lq + i;
        if (n == 0) {
          *lse = neg_inf;
          inv[e] = 0.0f;
          continue;
        }
        float m = se[0];
        for (int64_t t = 1; t < n; ++t) m = std::max(m, se[t]);
        const float* w = weights.data();
#pragma omp simd
        for (int64_t t = 0; t < n; ++t) se[t] = w[t] * exp_nonpositive(se[t] - m);
        float l = 0.0f;  // summed in key order: the same on every thread
        for (int64_t t = 0; t < n; ++t) l += se[t];
        *lse = m + std::log(l);
        inv[e] = 1.0f / l;
      }
      // P·V: each value row once, into every head's accumulator.
      for (int64_t t = 0; t < n; ++t) {
        const T* vj = vh + static_cast<int64_t>(keys[t]) * Dv;
        for (int64_t e = 0; e < share; ++e) {
          const float p = scores[static_cast<size_t>(e * n + t)];
          float* a = acc.data() + e * Dv;
#pragma omp simd
          for (int64_t d = 0; d < Dv; ++d) a[d] += p * widen(vj[d]);
        }
      }
      for (int64_t e = 0; e < share; ++e) {
        float* o = out.o + ((b * H + h0 + e) * Lq + i) * Dv;
        for (int64_t d = 0; d < Dv; ++d) o[d] = acc[static_cast<size_t>(e * Dv + d)] * inv[e];
      }
    }
  }
}

}  // namespace

void selected_keys(const Pattern& pattern, int64_t b, int64_t row, int64_t i,
                   std::vector<int32_t>& keys, std::vector<float>& weights,
                   std::vector<int32_t>& seen) {
  keys.clear();
  weights.clear();
  if (!pattern.query_valid(b, i)) return;
  const Tensor<int64_t>& t = pattern.selection;
  const int64_t kk = t.dim(3), lk = pattern.sizes.seq_len_k;
  const int64_t position = i + lk - pattern.sizes.seq_len_q;  // p, contract §3.1
  const bool count = pattern.spec.duplicates == Duplicates::count;
  const int64_t* list = t.ptr() + ((((t.dim(0) == 1 ? 0 : b) * t.dim(1) + row) * t.dim(2)) + i) * kk;
  for (int64_t c = 0; c < kk; ++c) {
    const int64_t j = list[c];
    if (j < 0 || (pattern.spec.causal && j > position) || !pattern.key_valid(b, j)) continue;
    int32_t& at = seen[static_cast<size_t>(j)];
    if (at >= 0) {
      if (count) weights[static_cast<size_t>(at)] += 1.0f;
      continue;
    }
    at = static_cast<int32_t>(keys.size());
    keys.push_back(static_cast<int32_t>(j));
    weights.push_back(1.0f);
  }
  for (int32_t j : keys) seen[static_cast<size_t>(j)] = -1;
}

void k08_selected_gather(const Inputs& in, const Outputs& out) {
  selected_gather(in, out, "cpu_k08_selected_gather");
}
void k08_selected_gather_bf16(const InputsBf16& in, const Outputs& out) {
  selected_gather(in, out, "cpu_k08_selected_gather_bf16");
}

}  // namespace sparseattn::cpu
