// `attend` and `check` under a sequence layout (contract §2.10–§2.12), for the CLI and the
// Python package alike: the tensors as a front end reads them become the walk's inputs
// (api/layout_walk.h), and a candidate is judged one sequence at a time against that
// sequence's own oracle, in one report.
#pragma once

#include <optional>
#include <string>

#include "api/check_result.h"
#include "api/conventions.h"
#include "api/layout_walk.h"
#include "api/probes.h"
#include "api/results.h"
#include "core/numerics.h"

namespace sparseattn::api {

// One call under a layout, as given: q, k, v packed [total, heads, d] (varlen) or rank 4 in
// the layout `conv` names (a cache: [B, H, L, d] or bshd [B, L, H, d]; page pools [P, H,
// page_size, d] or bshd [P, page_size, H, d]); the spec as built (not canonicalized); the
// score parameters; the conventions (require_layout_conventions has passed).
struct LayoutCall {
  Tensor<double> q, k, v;
  SeqLayout layout;
  PatternSpec spec;
  std::optional<double> scale;  // unset: 1/sqrt(head_dim)
  ScoreMods mods;
  Conventions conv;
  const double* scale_ptr() const { return scale ? &*scale : nullptr; }
};

// contract §5: q finite; k and v finite wherever they are read — all of a packed batch, the
// filled slots of a cache (the empty ones are never read, contract §2.11). Throws
// InvalidArgument naming prefix + "q" (the CLI passes "--", Python "") and the index. Call
// after the layout's sizes are valid (the walk validates them; check_layout does).
void require_finite_layout(const LayoutCall& call, const std::string& prefix);

// The walk's inputs of a call (bshd tensors transposed to bhsd).
VarlenInputs varlen_inputs(const LayoutCall& call);
CacheInputs cache_inputs(const LayoutCall& call);

// `attend`: `kernel` over the layout. o [total_q, H_q, d_v] and lse [H_q, total_q] (varlen),
// or o [B, H_q, L_q, d_v] (bshd: [B, L_q, H_q, d_v]) and lse [B, H_q, L_q] (a cache), in the
// kernel's dtype, lse in the base conv names.
Output attend_layout(const Kernel& kernel, const LayoutCall& call);

// Refuses a gradient (attend --dout, check --dout) under a cache, paged or not: decoding
// against a cache is forward only (contract §2.11, §7.8). Throws FieldError naming
// cache_seqlens; nothing for a packed batch.
void require_layout_backward(const SeqLayout& layout);

// `attend --dout` (varlen only, contract §7.8): dq, dk, dv packed like q, k, v, dsinks [H_q].
// Throws FieldError(cache_seqlens) for a cache (require_layout_backward).
GradOutput attend_layout_grad(const GradKernel& grad, const LayoutCall& call,
                              const Tensor<double>& dout);

// The expected shapes of the candidate o and lse for `call` (as attend_layout writes them).
Shape layout_o_shape(const LayoutCall& call);
Shape layout_lse_shape(const LayoutCall& call);

// `check --dout` under a packed batch (contract §7.8): dO [total_q, H_q, d_v] (finite) and
// candidate gradients packed like their inputs — dq [total_q, H_q, d], dk [total_k, H_kv, d],
// dv [total_k, H_kv, d_v] — and dsinks [H_q] (contract §7.7, with sinks); a candidate whose
// x is null is not judged. The front end checks the shapes against layout_grad_shapes,
// naming its own spelling.
struct LayoutGradients {
  const Tensor<double>* dout = nullptr;
  GradientCandidate dq, dk, dv, dsinks;
};
struct LayoutGradShapes {
  Shape dout, dq, dk, dv, dsinks;
};
LayoutGradShapes layout_grad_shapes(const LayoutCall& call);

// `check`: o (and lse) of a candidate, in attend_layout's shapes, judged sequence by sequence
// with check_against against the sequence's oracle (a1_dense_masked through the walk, with
// the sequence's pattern and mods; a sequence without keys is judged as fully masked rows).
// The report (contract §4.9) sums the counts, takes the maxima and the worst element over
// the sequences, and locates by sequence: a report's batch index is the sequence's (the
// element's for a cache) and its row the row within the sequence; `layout` says which.
// Empty sequences compare nothing; a check in which nothing is compared fails.
// With `grads` (a packed batch only; a cache throws require_layout_backward's FieldError):
// each sequence's dq, dk, dv rows against b1_dense_masked_grad on that sequence alone (its
// pattern, mods and dO rows; a sequence without keys or without queries against zeros,
// contract §7.8), merged per tensor as o is — the report's dq/dk/dv batch index is the
// sequence's, a row the query (dq) or key (dk, dv) row within it, a failing reason starts
// "sequence b: " — and dsinks against the sum of the sequences' dσ. The gradient probes
// (api/gradient_probes.h) run on the failing sequence alone, without grouped heads or score
// modifiers (as check without a layout). r.gradient_oracle = "b1_dense_masked_grad".
CheckResult check_layout(const LayoutCall& call, const Tensor<double>& o, Tolerance o_tol,
                         const Tensor<double>* lse, Tolerance lse_tol, const ProbeOptions& probes,
                         const LayoutGradients* grads = nullptr);

}  // namespace sparseattn::api
