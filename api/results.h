// What the subcommands compute, as library functions: the CLI (cli/cmd_*.cpp) prints
// these results and the Python package (python/) returns them, so both read the same
// numbers from the same code. Every function throws InvalidArgument for bad input, naming
// the argument as the CLI spells it when it came from a flag (the Python binding renames
// "--num-random-blocks" to "num_random_blocks").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/check_result.h"
#include "api/compat_flags.h"
#include "api/conventions.h"
#include "api/probes.h"
#include "api/tolerance_rule.h"
#include "core/check.h"
#include "core/numerics.h"
#include "core/tensor.h"
#include "graph/layer_graph.h"
#include "graph/reach.h"
#include "graph/spectral.h"
#include "reference/attention.h"
#include "pattern/pattern.h"
#include "registry/backward.h"
#include "registry/registry.h"

namespace sparseattn::api {

// `impls --json`: one object per registry entry (name, target, dtype, exact, patterns,
// reference, atol, rtol, summary, features: what it reads beyond plain attention, e.g.
// "grouped-query heads, softcap, ALiBi slopes, sinks", "" for none), in ladder order.
nlohmann::json impls_json();

// The registry kernel `name`, checked to serve `pattern`. Throws InvalidArgument("--impl")
// naming the known kernels, or the kernels that do serve the pattern.
const Kernel& serving_kernel(const std::string& name, const Pattern& pattern);

// What a tiled kernel does with the layout: tile_pairs, tiled_flops, partial_tile_waste,
// bytes_min, bytes_tiled, layout_bytes (key padding ignored, like the counts):
// tile_cost_json(tile_cost(...)) of api/info_result.h.
nlohmann::json tile_json(const Pattern& pattern, int64_t head_dim);

// `info --json`: nnz, density, keys per row, tiles, random draws and FLOPs (4 · nnz ·
// head_dim per batch element, the FlashAttention paper's count) of a materialized pattern:
// info_json(info_result(...)) of api/info_result.h, which also writes `info`'s text.
nlohmann::json info_json(const Pattern& pattern, int64_t head_dim);

// `mask`: the allowed mask [batch, num_heads, seq_len_q, seq_len_k], 1 = may attend:
// dense_mask() of each head's layout with the key padding applied (contract §2).
// Throws InvalidArgument("mask shape") when it would not fit in memory.
Tensor<uint8_t> allowed_mask(const Pattern& pattern);

// `check`: the tolerance a candidate of `dtype` is held to (core/numerics.h): float64
// 1e-12/1e-12, float32 2e-5/2e-4, float16 2e-3/2e-3.
enum class CandidateDtype { float64, float32, float16 };
Tolerance tolerance_for(CandidateDtype dtype);

// `check`: a candidate's shape must be `want`, leading 1s may be omitted (contract §1).
// Throws InvalidArgument(what + " shape").
void require_candidate_shape(const Shape& got, const Shape& want, const std::string& what);

// `check`: runs the oracle a1_dense_masked (convention_oracle under `conv`) on q/k/v
// (already rank 4, bhsd) and judges o (and lse when given, in the base `conv` names) with
// core/check.h's checker. Returns the report (api/check_result.h; api/check_render.h writes
// it as the JSON the CLI prints and as text): oracle, pattern, shape, conventions, o (and
// lse) reports located per (batch, head) and row (contract §4.9), pass; on failure
// probable_cause and probes. With --padded-queries any, padded query rows are not compared;
// a tensor with nothing left to compare fails. With `rule` (contract §4.10) each tensor's
// verdict is judge_reference_error's (reference_error in its report) instead of the fixed
// table's. `raw_spec`: the pattern as given, before its parameters were canonicalized for
// these sizes (the layout probe re-sizes it). o is bhsd here (the caller transposes a bshd
// file). `probes`: how the cause probes run (api/probes.h).
CheckResult check_against_oracle(const Tensor<double>& q, const Tensor<double>& k,
                                 const Tensor<double>& v, const Pattern& pattern,
                                 const double* scale, const Tensor<double>& o, Tolerance o_tol,
                                 const Tensor<double>* lse, Tolerance lse_tol,
                                 const Conventions& conv = {}, const PatternSpec* raw_spec = nullptr,
                                 const ToleranceRule* rule = nullptr,
                                 const ProbeOptions& probes = {},
                                 const ScoreMods* mods = nullptr);

// What check_against's explaining report needs besides the oracle. q/k/v/scale: the inputs
// (bhsd) the cause probes and the reference-error rule re-run; null: the probes are
// skipped (said in "probes") and `rule` is refused. `compat`: the oracle is a
// compatibility mode's (contract §3.12): the probes, which re-run the normal oracle, are
// skipped and say so; `rule` is refused. `hint`: on a failing o, add convention_hint's
// sentence ("hint", api/convention_hint.h) with `global_mask` ([B, L_k] or null).
struct CheckContext {
  const Tensor<double>* q = nullptr;
  const Tensor<double>* k = nullptr;
  const Tensor<double>* v = nullptr;
  const double* scale = nullptr;
  Conventions conv{};
  const PatternSpec* raw_spec = nullptr;
  const ToleranceRule* rule = nullptr;
  bool compat = false;
  bool hint = true;
  const Tensor<uint8_t>* global_mask = nullptr;
  ProbeOptions probes{};  // --probes, --probe-budget (api/probes.h)
  // The softcap, ALiBi slopes and sinks of the oracle (contract §2.8–§2.9), or null: the
  // probes recompute rows with them and add their mistakes' probes.
  const ScoreMods* mods = nullptr;
};

// `check` against `oracle` (convention_oracle's, or a compatibility mode's float64
// definition, contract §3.12): the report of check_against_oracle (which wraps this), with
// probes and hint as `ctx` allows. `oracle`, o and lse are bhsd. Throws
// InvalidArgument("--q, --k, --v") where the oracle is not finite.
CheckResult check_against(const AttentionResult& oracle, const Pattern& pattern,
                          const AttentionShape& shape, const Tensor<double>& o, Tolerance o_tol,
                          const Tensor<double>* lse, Tolerance lse_tol, const CheckContext& ctx = {});
// `impls --backward --json`: one object per backward registry entry (name, target, dtype,
// forward, patterns, reference, atol, rtol, summary), in ladder order (docs/backward.md).
nlohmann::json grad_impls_json();

// `attend --dout`: the backward entry that consumes the forward kernel `impl`'s o and lse
// (grad_kernel_for_forward: the highest rung naming it). Throws InvalidArgument("--impl")
// naming the implementations that have one. The CLI and the Python binding both select
// through this function, so `--impl X --dout` and `attend(..., impl="X", dout=...)` run
// the same backward kernel.
const GradKernel& backward_for(const std::string& impl);

// `attend --dout` / `check --dout` (contract §7): dO must have o's shape
// [batch, num_heads, seq_len_q, head_dim_v] (leading 1s may be omitted) and every element
// finite. Returns it reshaped to rank 4. `name` is the argument as the caller spells it
// ("--dout"; the binding passes "dout"). Throws InvalidArgument(name + " shape") or
// InvalidArgument(name + "[index]", value, "must be finite"), the index in dout's own rank.
Tensor<double> checked_dout(Tensor<double> dout, const AttentionShape& s, const std::string& name);

// `attend --dout`: runs `grad` on `problem` with the forward pass `forward` (the saved o and
// lse of grad.forward, already run) and dO `dout` (checked_dout's). dq/dk/dv come back in
// grad's dtype (GradOutput). Throws InvalidArgument("--impl", impl) when a gradient holds NaN.
GradOutput run_backward(const GradKernel& grad, const Problem& problem, const Output& forward,
                        Tensor<double> dout, const std::string& impl);

// `check --dout`: judges candidate gradients against the gradient oracle
// b1_dense_masked_grad on q/k/v/dout (rank 4, dout from checked_dout): check_gradients_against
// with b1's gradients and the probes' inputs. With conv.padding_align_valid the oracle runs
// per batch element on its aligned pattern (contract §2.6).
struct GradientCandidate {
  const Tensor<double>* x = nullptr;  // nullptr: not checked
  Tolerance tol{};
};
void check_gradients_against_oracle(CheckResult& r, const Tensor<double>& q,
                                    const Tensor<double>& k, const Tensor<double>& v,
                                    const Pattern& pattern, const double* scale,
                                    const Tensor<double>& dout, const GradientCandidate& dq,
                                    const GradientCandidate& dk, const GradientCandidate& dv,
                                    const Conventions& conv = {});

// `check --dout` against given reference gradients: each candidate with a tensor (already
// shape-checked, bhsd) is judged against its reference with core/check.h's checker and gets
// a report with the fields of o's (r.dq, ..., r.dq_global, ...; dq's and dq_global's rows are
// query rows, the others' key rows; `pattern` gives the worst row's allowed keys or
// queries). Sets r.gradient_oracle = oracle and ANDs the verdicts into r.pass (r is
// check_against's). A failing gradient gets a probable cause from the gradient probes
// (api/gradient_probes.h) when `oracle` is b1_dense_masked_grad and `inputs` are given, else
// "unknown: gradient probes skipped". Throws InvalidArgument("--tolerance-rule") when r was
// judged by the reference-error rule, which judges o and lse only (contract §4.10).
struct NamedGradientCandidate {
  std::string name;
  const Tensor<double>* reference = nullptr;
  GradientCandidate candidate;
};
struct GradientInputs {  // what the gradient probes re-run b1 on (bhsd)
  const Tensor<double>& q;
  const Tensor<double>& k;
  const Tensor<double>& v;
  const Tensor<double>& dout;
  const double* scale;
  ProbeOptions options{};  // never: no gradient probe; always: no size limit
};
void check_gradients_against(CheckResult& r, const std::string& oracle,
                             const std::vector<NamedGradientCandidate>& grads,
                             const Pattern& pattern, const GradientInputs* inputs = nullptr);

// The float64 gradient definition of a call's conventions (contract §7): b1_dense_masked_grad
// by default (§7.1); masked_score_grad under a finite masked score (§7.6); with `compat`
// (non-null, a mode asked for) that mode's, hf_listing_grad or longformer_compat_grad
// (§7.4–§7.5; a finite masked score is refused there, as in the forward). `in` is bhsd
// with the conventions' pattern; dout is checked_dout's. `oracle` names the definition.
// `mods` (softcap, ALiBi slopes, sinks; contract §7.7) enter b1_dense_masked_grad, whose
// dsinks the result then carries; grouped kv heads (contract §2.7) give dk, dv with H_kv
// heads. The front ends refuse them with the other conventions (require_combinable).
ReferenceGradients reference_gradients(const AttentionInputs& in, const double* scale,
                                       const Conventions& conv, const CompatRequest* compat,
                                       const Tensor<double>& dout,
                                       const ScoreMods* mods = nullptr);

// `reach`: every measure of docs/information-flow.md for one stack (contract §6).
struct ReachRequest {
  int64_t token = -1;                  // receptive field of this token; -1: none
  std::optional<std::pair<int64_t, int64_t>> path;  // shortest path from -> to
  graph::LevelChoice level = graph::LevelChoice::automatic;
};
struct ReachResult {
  graph::ReachSummary summary;
  std::vector<double> connected_fraction;
  std::optional<int64_t> mixing_depth, diameter;
  std::optional<double> mean_shortest_path;
  std::optional<graph::SpectralGap> gap;  // layer 1; unknown when Arnoldi cannot separate λ₂
  std::string gap_note;                   // why it is unknown
  std::vector<int64_t> path;              // empty: never connected (or not asked)
  std::vector<double> evenness;           // rollout evenness of `token`, when computed
  bool rollout_ok = false;
};
// Throws InvalidArgument("--token") outside [0, seq_len), what g1_reach_bitset throws.
ReachResult compute_reach(const graph::LayerStack& stack, const ReachRequest& request);
// `reach --json`: level, mixing_depth, connected_fraction, diameter, mean_shortest_path,
// spectral_gap (null when unknown), coverage and span (with a token), path (when asked).
nlohmann::json reach_json(const ReachResult& result, const ReachRequest& request);

}  // namespace sparseattn::api
