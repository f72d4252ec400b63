// kb03 — the backward pass of k08 (selected attention), OpenMP (contract §7.9), two twins
// from one template over the input element type: cpu_kb03_selected_gather_grad (float32
// q, k, v) matches b1_dense_masked_grad within kTolFloat32 per element of dq, dk, dv;
// cpu_kb03_selected_gather_grad_bf16 (bf16 q, k, v widened to float32 as read; o, lse and
// dout float32, from cpu_k08_selected_gather_bf16) matches b1_dense_masked_grad on the same
// bf16-rounded q, k, v within kTolBfloat16 (core/numerics.h, docs/numerics.md).
//
// Per allowed pair, with P_ij = m_ij·exp(s_ij − lse_i) from the saved lse (m_ij the
// multiplicity, 1 unless duplicates = count) and D_i = <dO_i, o_i>:
//   dS_ij = P_ij (<dO_i, v_j> − D_i),  dq_i = scale Σ_j dS_ij k_j,
//   dv_j = Σ_{h,i} P_ij dO_i,          dk_j = scale Σ_{h,i} dS_ij q_i.
// dk and dv gather over every query that selected key j — all L_q queries when every
// query selects the same few keys, the case a DSA backward on SM90 got wrong (dq ≈ 6.8e11
// against 15.3). Summing them with atomics, or into per-thread copies, makes the result
// depend on the schedule; here pass 2 gives each (batch, kv head, key) to one worker that
// walks the transposed list of the queries that selected it in a fixed order (query head,
// then query, ascending), recomputing s, P and dS from q, k, lse and D: bit-identical for
// any thread count. Memory: the transposed list holds one (query row, weight) pair per
// distinct allowed pair of the kv head's group, 8 bytes each.
// Measured: docs/backward.md lists kb03 but has no timing row for it yet (not yet measured:
// no backward benchmark of selected attention; the forward's figure is docs/benchmarks.md,
// "Selected attention: token-level gather (k08)").
#include <omp.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "optimized/cpu/selected_kernels.h"

namespace sparseattn::cpu {

bool kb03_serves(const Pattern& pattern) { return k08_serves(pattern); }

namespace {

using selected::widen;

// <a, b> over n elements in float32, each element widened as it is read. simdlen(8): without
// it GCC vectorized the two instantiations differently (the twins' dk differed in the last
// bit on inputs bf16 holds exactly); with 8 lanes in both they agree bit for bit
// (cpu_selected_test), and the float32 outputs are unchanged (compared with main's).
template <class A, class B>
float dotf(const A* a, const B* b, int64_t n) {
  float s = 0.0f;
#pragma omp simd simdlen(8) reduction(+ : s)
  for (int64_t d = 0; d < n; ++d) s += widen(a[d]) * widen(b[d]);
  return s;
}

// kb03 on q, k, v of element type T (GradInputs: float; GradInputsBf16: bf16 bits), `name`
// the registry entry for the refusal. Everything after the loads is float32 and the same.
template <class In>
void selected_gather_grad(const In& in, const GradOutputs& out, const char* name) {
  using T = std::remove_const_t<std::remove_pointer_t<decltype(in.q)>>;
  const Pattern& pattern = *in.pattern;
  if (!kb03_serves(pattern))
    throw InvalidArgument("pattern", describe(pattern.spec), std::string(name) + " serves selected");
  const AttentionShape& s = in.shape;
  const int64_t B = s.batch, H = s.num_heads, Hkv = s.num_kv_heads, g = s.group();
  const int64_t Lq = s.seq_len_q, Lk = s.seq_len_k, D = s.head_dim, Dv = s.head_dim_v;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> rowsum(static_cast<size_t>(B * H * Lq), 0.0f);  // D_i

  // Pass 1: one work item per (batch, query head, query): D_i and dq_i.
#pragma omp parallel
  {
    std::vector<int32_t> keys, seen(static_cast<size_t>(Lk), -1);
    std::vector<float> weights, acc(static_cast<size_t>(D));
#pragma omp for schedule(dynamic, 8)
    for (int64_t item = 0; item < B * H * Lq; ++item) {
      const int64_t i = item % Lq, h = (item / Lq) % H, b = item / (Lq * H);
      const int64_t bh = b * H + h, hk = h / g;
      float* dqi = out.dq + (bh * Lq + i) * D;
      std::fill(dqi, dqi + D, 0.0f);
      const float lse = in.lse[bh * Lq + i];
      if (lse == neg_inf) continue;  // no allowed key: nothing flows (contract §7.2)
      const T* qi = in.q + (bh * Lq + i) * D;
      const float* doi = in.dout + (bh * Lq + i) * Dv;
      const float di = dotf(doi, in.o + (bh * Lq + i) * Dv, Dv);
      rowsum[static_cast<size_t>(bh * Lq + i)] = di;
      selected_keys(pattern, b, pattern.selection_row(h), i, keys, weights, seen);
      const T* kh = in.k + (b * Hkv + hk) * Lk * D;
      const T* vh = in.v + (b * Hkv + hk) * Lk * Dv;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (size_t t = 0; t < keys.size(); ++t) {
        const T* kj = kh + static_cast<int64_t>(keys[t]) * D;
        const float p = weights[t] * std::exp(in.scale * dotf(qi, kj, D) - lse);
        const float ds = p * (dotf(doi, vh + static_cast<int64_t>(keys[t]) * Dv, Dv) - di);
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) acc[d] += ds * widen(kj[d]);
      }
      for (int64_t d = 0; d < D; ++d) dqi[d] = in.scale * acc[d];
    }
  }

  // Pass 2, per (batch, kv head): the transposed lists (which query rows selected key j),
  // then one work item per key.
  std::vector<int64_t> start(static_cast<size_t>(Lk + 1));
  std::vector<int32_t> rows;   // query row e·Lq + i of the group (e: head within the group)
  std::vector<float> mult;     // its multiplicity
  std::vector<int32_t> keys, seen(static_cast<size_t>(Lk), -1);
  std::vector<float> weights;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t hk = 0; hk < Hkv; ++hk) {
      std::fill(start.begin(), start.end(), 0);
      // Counting pass, then the fill in the same order (query head, query ascending).
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<int64_t> next;
        if (pass == 1) {
          for (int64_t j = 0; j < Lk; ++j) start[j + 1] += start[j];
          rows.resize(static_cast<size_t>(start[Lk]));
          mult.resize(static_cast<size_t>(start[Lk]));
          next.assign(start.begin(), start.end() - 1);
        }
        for (int64_t e = 0; e < g; ++e) {
          const int64_t h = hk * g + e;
          for (int64_t i = 0; i < Lq; ++i) {
            if (in.lse[(b * H + h) * Lq + i] == neg_inf) continue;
            selected_keys(pattern, b, pattern.selection_row(h), i, keys, weights, seen);
            for (size_t t = 0; t < keys.size(); ++t) {
              const int64_t j = keys[t];
              if (pass == 0) {
                ++start[j + 1];
              } else {
                rows[static_cast<size_t>(next[j])] = static_cast<int32_t>(e * Lq + i);
                mult[static_cast<size_t>(next[j]++)] = weights[t];
              }
            }
          }
        }
      }
      const T* kh = in.k + (b * Hkv + hk) * Lk * D;
      const T* vh = in.v + (b * Hkv + hk) * Lk * Dv;
      float* dkh = out.dk + (b * Hkv + hk) * Lk * D;
      float* dvh = out.dv + (b * Hkv + hk) * Lk * Dv;
#pragma omp parallel for schedule(dynamic, 16)
      for (int64_t j = 0; j < Lk; ++j) {
        float* dkj = dkh + j * D;
        float* dvj = dvh + j * Dv;
        std::fill(dkj, dkj + D, 0.0f);
        std::fill(dvj, dvj + Dv, 0.0f);
        const T* kj = kh + j * D;
        const T* vj = vh + j * Dv;
        for (int64_t at = start[j]; at < start[j + 1]; ++at) {
          const int64_t e = rows[static_cast<size_t>(at)] / Lq, i = rows[static_cast<size_t>(at)] % Lq;
          const int64_t bh = b * H + hk * g + e;
          const T* qi = in.q + (bh * Lq + i) * D;
          const float* doi = in.dout + (bh * Lq + i) * Dv;
          const float p = mult[static_cast<size_t>(at)] *
                          std::exp(in.scale * dotf(qi, kj, D) - in.lse[bh * Lq + i]);
          const float ds = in.scale * p * (dotf(doi, vj, Dv) - rowsum[static_cast<size_t>(bh * Lq + i)]);
#pragma omp simd
          for (int64_t d = 0; d < Dv; ++d) dvj[d] += p * doi[d];
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) dkj[d] += ds * widen(qi[d]);
        }
      }
    }
  }
}

}  // namespace

void kb03_selected_gather_grad(const GradInputs& in, const GradOutputs& out) {
  selected_gather_grad(in, out, "cpu_kb03_selected_gather_grad");
}
void kb03_selected_gather_grad_bf16(const GradInputsBf16& in, const GradOutputs& out) {
  selected_gather_grad(in, out, "cpu_kb03_selected_gather_grad_bf16");
}

}  // namespace sparseattn::cpu
