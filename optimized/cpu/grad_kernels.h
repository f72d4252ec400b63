// The optimized CPU backward ladder (float32, OpenMP, SIMD; docs/backward.md, contract §7).
// Read in order: kb01 -> kb02 (files optimized/cpu/kb0*_*.cpp). Registry entries:
// registry/backward_kernels.def.
//
// Common contract of every backward kernel:
//   reference: b1_dense_masked_grad (the float64 gradient oracle), tolerance kTolFloat32
//   from core/numerics.h per element of dq, dk, dv; exact zeros where the oracle's are
//   structural (a fully masked row's dq, a key no query attends: dk = dv = 0), never NaN.
//   q: [batch, num_heads, seq_len_q, head_dim]    float32, row-major
//   k: [batch, num_kv_heads, seq_len_k, head_dim]   (num_kv_heads divides num_heads)
//   v: [batch, num_kv_heads, seq_len_k, head_dim_v]
//   o, dout: [batch, num_heads, seq_len_q, head_dim_v]; lse: [batch, num_heads, seq_len_q]
//     (o and lse saved by the forward pass; lse = -inf marks a fully masked row or a padded
//     query; with sinks a real row without keys has lse = σ_h and o = 0)
//   dq, dk, dv: the shapes of q, k, v; every element is written.
//   dsinks: [num_heads] float64, written when mods.sinks is set (else untouched).
//   scale: already resolved, finite. The pattern was materialized for these sizes.
//   Modern attention (contract §2.7–§2.9, §7.7): query head h reads kv head h / group(),
//   and dk, dv of a kv head sum over its group's query heads (in head order); the softcap
//   enters as dS·(1 − tanh²(s/c)); ALiBi is a constant per pair (no gradient to the slopes);
//   dσ_h = −Σ_{b,i} exp(σ_h − lse_{b,h,i})·<dO_i, o_i>, summed in float64 in (b, i) order.
//   Outputs are bit-identical for any number of OpenMP threads: every output element is
//   owned by one work item that sums in a fixed order (no atomics, no per-thread partials).
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "optimized/cpu/kernels.h"
#include "pattern/pattern.h"

namespace sparseattn::cpu {

struct GradInputs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* o = nullptr;
  const float* lse = nullptr;
  const float* dout = nullptr;
  AttentionShape shape;
  const Pattern* pattern = nullptr;
  float scale = 0.0f;
  Mods mods;  // softcap, ALiBi slopes, sinks in float32 (kernels.h); default: none
};

struct GradOutputs {
  float* dq = nullptr;  // [batch, num_heads, seq_len_q, head_dim]
  float* dk = nullptr;  // [batch, num_kv_heads, seq_len_k, head_dim]
  float* dv = nullptr;  // [batch, num_kv_heads, seq_len_k, head_dim_v]
  double* dsinks = nullptr;  // [num_heads]; read only with in.mods.sinks
};

// kb01 — generic backward over the canonical layout: pass 1 gives every (key tile, block of
// 64 keys) to one worker, which walks the query tiles listing it (ColumnLayout) and
// finishes its dk, dv; pass 2 gives every (query tile, block of 64 rows) to one worker,
// which walks its listed key tiles and finishes its dq. Serves every pattern kind.
void kb01_generic_tiles_grad(const GradInputs& in, const GradOutputs& out);
bool kb01_serves(const Pattern& pattern);

// kb02 — kb01's key pass also adds each block's dS·K into one of a fixed number of dQ
// lanes per (batch, head) (contiguous ranges of key blocks), summed per row in lane order
// afterwards: no query pass, 5 block products per tile pair instead of 7, still
// bit-identical for any thread count. Serves every pattern kind.
void kb02_generic_dq_lanes_grad(const GradInputs& in, const GradOutputs& out);
bool kb02_serves(const Pattern& pattern);
// The same with an explicit bound on the dQ lane buffers in flight (the default is
// 256 MiB; at least one (batch, head) is always processed at a time). Results do not
// depend on it: tests pass a tiny bound to run one (batch, head) per wave.
void kb02_generic_dq_lanes_grad(const GradInputs& in, const GradOutputs& out,
                                int64_t lane_budget_bytes);

}  // namespace sparseattn::cpu
