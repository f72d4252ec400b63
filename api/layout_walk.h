// Attention over the sequence layouts of contract §2.10–§2.12, one sequence at a time.
//
// A packed batch (cu_seqlens) or a filled cache (cache_seqlens, block_table) is a list of
// independent attention calls. The walk reads each one out of the layout as an ordinary
// [1, H, L, d] problem (core/seq_layout.h: a copy of exactly its rows, never padded),
// materializes the pattern for that sequence's own lengths, runs the kernel, and writes the
// result back into the layout's output. The oracle is this walk around a1_dense_masked: the
// definition of §2.10–§2.12, literally. A kernel that reads a cache in place (registry
// features kKvCache, kPaged) gets the whole cache problem at once instead, and one that
// reads a packed batch in place (kVarlen) the whole batch.
#pragma once

#include <optional>

#include "core/score_mods.h"
#include "core/seq_layout.h"
#include "core/tensor.h"
#include "pattern/pattern.h"
#include "pattern/spec.h"
#include "registry/backward.h"
#include "registry/registry.h"

namespace sparseattn::api {

// The layout of one call: at most one of the two (a packed batch has no cache).
struct SeqLayout {
  std::optional<Varlen> varlen;   // contract §2.10
  std::optional<KvCache> cache;   // contract §2.11; paged when it has a block table (§2.12)
  bool any() const { return varlen.has_value() || cache.has_value(); }
};

// Refuses, before any work, a spec that cannot be rebuilt for each sequence's lengths:
// pattern inputs given as files (explicit mask, segment_ids, random_table) and a key
// padding mask (contract §2.10–§2.11). Throws FieldError naming the field.
void require_layout_spec(const PatternSpec& spec, const SeqLayout& layout);

// The pattern of one sequence: `spec` materialized for (seq_len_q, seq_len_k) with
// `num_heads` query heads and batch 1 (contract §2.10: windows, globals, blocks and draws
// restart per sequence). Both lengths >= 1.
Pattern sequence_pattern(const PatternSpec& spec, int64_t num_heads, int64_t seq_len_q,
                         int64_t seq_len_k);

// The mods of sequence (or element) b: [B, H_q] ALiBi slopes give row b; the rest as given.
ScoreMods sequence_mods(const ScoreMods& mods, int64_t b);

// The packed inputs of contract §2.10: q [total_q, H_q, d], k [total_k, H_kv, d],
// v [total_k, H_kv, d_v] (float64), their cu_seqlens, the spec and the score parameters.
// q32, k32, v32: optionally their float32 roundings in the same packed shapes
// (round_varlen_inputs), prepared once for a caller that runs the same batch through
// float32 kernels repeatedly (a benchmark); empty: the walk rounds each sequence's rows as
// it reads them.
struct VarlenInputs {
  Tensor<double> q, k, v;
  Tensor<float> q32, k32, v32;
  Varlen varlen;
  PatternSpec spec;
  const double* scale = nullptr;  // nullptr: 1/sqrt(head_dim)
  ScoreMods mods;
};

// Fills in.q32, k32, v32 with float(q), float(k), float(v) (round to nearest; an element
// beyond float32's range becomes ±inf, which the float32 kernels refuse by name).
void round_varlen_inputs(VarlenInputs& in);

// Validates the packed shapes (rank 3, heads dividing, head_dim equal, total rows matching
// cu_seqlens: validate_varlen), the spec (require_layout_spec) and the mods ([B, H_q]
// slopes with B = the number of sequences); q32/k32/v32, when given, have q/k/v's shapes.
// Throws InvalidArgument naming q/k/v, FieldError
// naming cu_seqlens_q/cu_seqlens_k, a pattern field or a score field.
void validate_varlen_inputs(const VarlenInputs& in);

// Runs `kernel` on every sequence (contract §2.10): once on the whole packed batch when its
// entry lists kVarlen (make_varlen_problem; some sequence with a query and one with a key),
// else one sequence at a time. Returns o [total_q, H_q, d_v] and lse
// [H_q, total_q] in the kernel's dtype (o/lse for float64 kernels, o32/lse32 otherwise);
// empty sequences contribute nothing, sequences without keys fully masked rows (§2.3,
// §2.9). Throws what the kernel's refusals throw (a pattern it does not serve names --impl).
// An optimized CPU kernel (target cpu, float32 or bf16: its entry reads only the float32
// copies, registry/float32_guard.h) gets each sequence's rows in float32 only — sliced from
// q32/k32/v32 when given, else rounded from q/k/v while being read — into buffers reused
// from one sequence to the next; every other kernel (the oracle among them) gets float64
// rows (make_problem).
Output attend_varlen(const Kernel& kernel, const VarlenInputs& in);

// The backward pass of a packed batch (contract §7.8): `grad` on every sequence after its
// forward kernel, dout [total_q, H_q, d_v] finite. Returns dq [total_q, H_q, d], dk
// [total_k, H_kv, d], dv [total_k, H_kv, d_v] in grad's dtype, dsinks [H_q] summed over the
// sequences when there are sinks; and, in `forward`, the forward pass it consumed.
GradOutput attend_varlen_grad(const GradKernel& grad, const VarlenInputs& in,
                              const Tensor<double>& dout, Output* forward = nullptr);

// The inputs of contract §2.11–§2.12: q [B, H_q, L_q, d] and k, v the cache [B, H_kv,
// L_cache, d] or the page pools [num_pages, H_kv, page_size, d] (bhsd; the front end
// transposes a bshd file), the cache description, the spec and the score parameters.
struct CacheInputs {
  Tensor<double> q, k, v;
  KvCache cache;
  PatternSpec spec;
  const double* scale = nullptr;
  ScoreMods mods;
};

// Validates the shapes, the cache (make_cache_problem's checks; fills page_size,
// num_pages, seq_len_cache from k's shape) and the spec. Throws as make_cache_problem and
// require_layout_spec do.
void validate_cache_inputs(CacheInputs& in);

// Runs `kernel` on the cache (contract §2.11–§2.12): in place when its entry lists the
// features the cache needs (kKvCache, with a block table kPaged), else one element at a
// time on a copy of its cache_seqlens[b] keys. Returns o [B, H_q, L_q, d_v] and lse
// [B, H_q, L_q] in the kernel's dtype. Only the filled slots are read. In place, an
// optimized CPU kernel's problem keeps only the float32 copies of the cache (the float64
// ones, this call's own copy of the inputs, are released before it runs).
Output attend_cache(const Kernel& kernel, const CacheInputs& in);

// `mask --cu-seqlens-q ... --cu-seqlens-k ...`: the allowed set of a packed batch,
// [num_heads, total_q, total_k], 1 = may attend — block diagonal, sequence b's block being its
// pattern's dense mask (contract §2.10); zero between sequences. Validates the lists against
// their own totals and the spec (require_layout_spec). Throws FieldError naming them, or
// InvalidArgument("mask shape") when it would not fit in memory.
Tensor<uint8_t> varlen_allowed_mask(const PatternSpec& spec, int64_t num_heads,
                                    const Varlen& varlen);

}  // namespace sparseattn::api
