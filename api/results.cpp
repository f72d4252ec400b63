#include "api/results.h"

#include <array>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "api/check_report.h"
#include "api/gradient_probes.h"
#include "api/info_result.h"
#include "api/convention_hint.h"
#include "api/inputs.h"
#include "api/padding_align.h"
#include "core/error.h"
#include "core/field.h"
#include "graph/measures.h"
#include "graph/rollout.h"
#include "optimized/cpu/isa.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"

namespace sparseattn::api {

namespace {

// The fields a forward (Kernel) and a backward (GradKernel) registry entry share.
template <class Entry>
nlohmann::json entry_json(const Entry& k) {
  return {{"name", k.name},           {"target", target_name(k.target)},
          {"dtype", dtype_name(k.dtype)}, {"patterns", k.patterns},
          {"reference", k.reference}, {"atol", k.atol},
          {"rtol", k.rtol},           {"summary", k.summary}};
}

}  // namespace

nlohmann::json impls_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const Kernel& k : kernels()) {
    nlohmann::json j = entry_json(k);
    j["exact"] = k.exact;
    // What it reads beyond plain attention (contract §2.7-§2.9): "grouped-query heads", ...
    j["features"] = feature_names(k.features);
    if (k.target == Target::cpu) j["simd"] = cpu::isa_name(cpu::active_isa());
    list.push_back(std::move(j));
  }
  return list;
}

const Kernel& serving_kernel(const std::string& name, const Pattern& pattern) {
  const Kernel* kernel = &find_kernel(name);  // FieldError(impl) for an unknown name
  if (!kernel->serves(pattern)) {
    std::string serving;
    for (const Kernel& k : kernels())
      if (k.serves(pattern)) serving += (serving.empty() ? "" : ", ") + std::string(k.name);
    throw FieldError(Field::impl, "", name,
                          std::string("serves only ") + kernel->patterns + ", not " +
                              describe(pattern.spec) + "; kernels that serve it: " + serving);
  }
  return *kernel;
}

nlohmann::json tile_json(const Pattern& p, int64_t head_dim) {
  return tile_cost_json(tile_cost(p, head_dim));
}

nlohmann::json info_json(const Pattern& pattern, int64_t head_dim) {
  return info_json(info_result(pattern, head_dim));
}

Tensor<uint8_t> allowed_mask(const Pattern& pattern) {
  const PatternSizes& z = pattern.sizes;
  const Shape shape = {z.batch, z.num_heads, z.seq_len_q, z.seq_len_k};
  checked_numel(shape, 1, "mask shape");
  Tensor<uint8_t> out(shape, 0);
  const int64_t n = z.seq_len_q, m = z.seq_len_k, plane = n * m;
  for (int64_t h = 0; h < z.num_heads; ++h) {
    const Tensor<uint8_t> shared = dense_mask(pattern.head(h));
    for (int64_t b = 0; b < z.batch; ++b) {
      // contract §3.16: a selection with one table per batch element has its own layouts.
      const Tensor<uint8_t> own = b > 0 && !pattern.batch_heads.empty()
                                      ? dense_mask(pattern.head_of(b, h)) : Tensor<uint8_t>();
      const Tensor<uint8_t>& head = own.numel() ? own : shared;
      uint8_t* dst = out.ptr() + (b * z.num_heads + h) * plane;
      for (int64_t i = 0; i < n; ++i) {
        const bool query_real = pattern.query_valid(b, i);
        for (int64_t j = 0; j < m; ++j)
          dst[i * m + j] = head.data[i * m + j] && query_real && pattern.key_valid(b, j);
      }
    }
  }
  return out;
}

Tolerance tolerance_for(CandidateDtype dtype) {
  switch (dtype) {
    case CandidateDtype::float64: return kTolFloat64;
    case CandidateDtype::float32: return kTolFloat32;
    case CandidateDtype::float16: return kTolFloat16;
  }
  return kTolFloat64;
}

void require_candidate_shape(const Shape& shape, const Shape& want, const std::string& what) {
  Shape got = shape, expect = want;
  while (got.size() > 1 && got.front() == 1) got.erase(got.begin());
  while (expect.size() > 1 && expect.front() == 1) expect.erase(expect.begin());
  require(got == expect, what + " shape", shape_text(shape),
          "must be " + shape_text(want) + " (leading 1s may be omitted)");
}

namespace {

// Never judge a candidate against a wrong reference (contract §5: no silent NaN or wrong
// answer). The oracle is float64: where the scores scale * q·k or the outputs leave its
// range (inputs near 1e308) it produces NaN or ±inf instead of the result, and every
// candidate would "fail" against it. Such inputs are refused, naming the first row.
void require_finite_oracle(const AttentionResult& oracle) {
  const Shape& ls = oracle.lse.shape;  // [B, H, Lq]
  const int64_t dv = oracle.o.shape.back();
  for (int64_t r = 0; r < oracle.lse.numel(); ++r) {
    bool finite = !std::isnan(oracle.lse.data[r]) && oracle.lse.data[r] != INFINITY;
    for (int64_t d = 0; d < dv; ++d) finite = finite && std::isfinite(oracle.o.data[r * dv + d]);
    if (finite) continue;
    const int64_t i = r % ls[2], h = r / ls[2] % ls[1], b = r / ls[2] / ls[1];
    throw InvalidArgument("--q, --k, --v", "row [" + std::to_string(b) + "," + std::to_string(h) +
                                               "," + std::to_string(i) + "]",
                          "the float64 oracle overflows there (scores scale * q.k or outputs "
                          "beyond float64's range, ~1.8e308); scale the inputs or --scale down");
  }
}

}  // namespace

CheckResult check_against_oracle(const Tensor<double>& q, const Tensor<double>& k,
                                 const Tensor<double>& v, const Pattern& pattern,
                                 const double* scale, const Tensor<double>& o, Tolerance o_tol,
                                 const Tensor<double>* lse, Tolerance lse_tol,
                                 const Conventions& conv, const PatternSpec* raw_spec,
                                 const ToleranceRule* rule, const ProbeOptions& probes,
                                 const ScoreMods* mods) {
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape, KvHeads::grouped);
  CheckContext ctx;
  ctx.q = &q, ctx.k = &k, ctx.v = &v, ctx.scale = scale;
  ctx.conv = conv, ctx.raw_spec = raw_spec, ctx.rule = rule;
  ctx.probes = probes;
  ctx.mods = mods;
  return check_against(convention_oracle(q, k, v, pattern, scale, conv, mods), pattern, s, o,
                       o_tol, lse, lse_tol, ctx);
}

namespace {

// The cause of a check where no tensor compared anything (contract §4.9): the probes would
// re-run the oracle only to compare nothing again.
const char* kNothingCompared =
    "nothing compared: every query row is skipped (--padded-queries any skips padded query "
    "rows, and every query row here is padding: query i sits at key position i + seq_len_k - "
    "seq_len_q, contract §2); a check that compares nothing fails";

// A tensor judged by the reference-error rule (contract §4.10): the rule's verdict, the
// failing rows located against its bound on one element's error.
TensorReport by_reference_error(const std::string& name, const Tensor<double>& c,
                                const Tensor<double>& ref, const Tensor<double>& naive,
                                const ToleranceRule& rule, const Pattern& pattern,
                                const std::vector<uint8_t>& skip) {
  const ReferenceErrorVerdict v = judge_reference_error(c, ref, naive, rule, skip);
  TensorReport t = tensor_report(name, c, ref, {v.bound(), 0.0}, pattern, skip);
  t.pass = v.pass && !t.nothing_compared;
  if (!t.pass && t.reason.empty())
    t.reason = "mean |error| " + std::to_string(v.candidate_mean) + " above factor x naive mean + floor";
  t.reference_error = v;
  return t;
}

}  // namespace

CheckResult check_against(const AttentionResult& oracle, const Pattern& pattern,
                          const AttentionShape& s, const Tensor<double>& o, Tolerance o_tol,
                          const Tensor<double>* lse, Tolerance lse_tol, const CheckContext& ctx) {
  require_finite_oracle(oracle);
  const Conventions& conv = ctx.conv;
  const ToleranceRule* rule = ctx.rule;
  const bool have_inputs = ctx.q != nullptr && ctx.k != nullptr && ctx.v != nullptr;
  require(rule == nullptr || (have_inputs && !ctx.compat), "--tolerance-rule", "reference-error",
          "needs the normal oracle's inputs: not available under the compatibility flags "
          "(contract §3.12)");
  const bool modern = (ctx.mods != nullptr && ctx.mods->any()) || s.num_kv_heads != s.num_heads;
  require(rule == nullptr || !modern, "--tolerance-rule", "reference-error",
          "is not combined with grouped-query heads, --softcap, --alibi-slopes or --sinks yet (its "
          "naive run is plain attention): use --tolerance-rule table");
  std::vector<uint8_t> skip;
  if (conv.padded_queries_any && pattern.has_key_padding() && conv.padding_align_valid) {
    skip = valid_padded_rows(pattern);  // contract §2.6: rows i >= m_b
  } else if (conv.padded_queries_any && pattern.has_key_padding()) {
    skip.assign(static_cast<size_t>(s.batch * s.seq_len_q), 0);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t i = 0; i < s.seq_len_q; ++i)
        skip[static_cast<size_t>(b * s.seq_len_q + i)] = !pattern.query_valid(b, i);
  }
  CheckResult r;
  r.oracle = conv.masked_score ? "dense definition with masked scores = --masked-score"
                               : "a1_dense_masked";
  if (ctx.mods != nullptr) r.score_mods = describe(*ctx.mods);
  r.pattern = describe(pattern.spec);
  r.shape = s;
  r.conventions = conv.describe();
  Tensor<double> o4 = o;
  o4.shape = oracle.o.shape;
  Tensor<double> lse3;
  if (lse != nullptr) {
    lse3 = *lse;
    lse3.shape = oracle.lse.shape;
  }
  if (rule == nullptr) {
    r.o = tensor_report("o", o4, oracle.o, o_tol, pattern, skip);
    if (lse != nullptr) r.lse = tensor_report("lse", lse3, oracle.lse, lse_tol, pattern, skip);
  } else {  // the verdict is the reference-error rule's (contract §4.10)
    const BatchAttend naive_run = [&](const Tensor<double>& q, const Tensor<double>& k,
                                      const Tensor<double>& v, const Pattern& p) {
      return naive_low_precision(q, k, v, p, ctx.scale, rule->dtype);
    };
    const AttentionResult naive = conv.padding_align_valid  // contract §2.6
                                      ? attend_valid_aligned(*ctx.q, *ctx.k, *ctx.v, pattern, naive_run)
                                      : naive_run(*ctx.q, *ctx.k, *ctx.v, pattern);
    r.o = by_reference_error("o", o4, oracle.o, naive.o, *rule, pattern, skip);
    if (lse != nullptr) {
      Tensor<double> naive_lse = naive.lse;
      if (conv.lse_base2)
        for (double& x : naive_lse.data) x /= std::log(2.0);
      r.lse = by_reference_error("lse", lse3, oracle.lse, naive_lse, *rule, pattern, skip);
    }
    r.tolerance_rule = "reference-error";
  }
  // The reports locate against the spec's pattern; under --padding-align valid the worst
  // row's keys are restated for its batch element's alignment (contract §2.6).
  if (conv.padding_align_valid) restate_worst_rows(r, pattern);
  r.pass = r.o.pass && (!r.lse || r.lse->pass);
  if (!skip.empty()) {
    int64_t n = 0;
    for (uint8_t x : skip) n += x;
    r.rows_not_compared = n * s.num_heads;
  }
  if (!r.pass) {
    const bool nothing = r.o.nothing_compared && (!r.lse || r.lse->nothing_compared);
    if (nothing) {
      r.probable_cause = kNothingCompared;
      r.probes = {{"tried", nlohmann::json::array()}, {"skipped", "nothing was compared"}};
    } else if (have_inputs && !ctx.compat) {
      const ProbeInputs in{*ctx.q, *ctx.k, *ctx.v, pattern, ctx.scale, conv, o4, o_tol,
                           lse ? &lse3 : nullptr, lse_tol, skip, oracle, ctx.raw_spec,
                           ctx.probes, ctx.mods && ctx.mods->any() ? ctx.mods : nullptr};
      const nlohmann::json probes = probe_causes(in);
      r.probable_cause = probes["probable_cause"].get<std::string>();
      r.probes = probes["probes"];
    } else {  // the probes re-run the normal oracle: not this one
      r.probable_cause = "unknown: probes skipped";
      r.probes = {{"tried", nlohmann::json::array()},
                  {"skipped", ctx.compat ? "the probes re-run the normal oracle a1_dense_masked, "
                                           "not the compatibility mode's (contract §3.12)"
                                         : "the inputs q, k, v were not given"}};
    }
    for (TensorReport* t : {&r.o, r.lse ? &*r.lse : nullptr})
      if (t && !t->pass) t->probable_cause = t->nothing_compared ? kNothingCompared : r.probable_cause;
  }
  // On failure, which peer convention would explain it (not when the flags of that
  // convention were given: then there is nothing left to suggest).
  if (ctx.hint && !r.o.pass && !r.o.nothing_compared)
    r.hint = convention_hint(pattern, o4, oracle.o, o_tol, ctx.global_mask);
  return r;
}

nlohmann::json grad_impls_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const GradKernel& k : grad_kernels()) {
    nlohmann::json j = entry_json(k);
    j["forward"] = k.forward;
    list.push_back(std::move(j));
  }
  return list;
}

const GradKernel& backward_for(const std::string& impl) {
  if (const GradKernel* g = grad_kernel_for_forward(impl)) return *g;
  std::string with;
  for (const GradKernel& g : grad_kernels()) with += (with.empty() ? "" : ", ") + std::string(g.forward);
  throw FieldError(Field::impl, "", impl,
                   "has no backward pass (needed for gradients); implementations with one: " + with);
}

Tensor<double> checked_dout(Tensor<double> d, const AttentionShape& s, const std::string& name) {
  const Shape want = {s.batch, s.num_heads, s.seq_len_q, s.head_dim_v};
  Shape got = d.shape;
  while (got.size() < 4 && !got.empty()) got.insert(got.begin(), 1);
  require(got == want, name + " shape", shape_text(d.shape),
          "must be o's shape " + shape_text(want) + " (leading 1s may be omitted)");
  require_finite(d, name);
  d.shape = want;
  return d;
}

namespace {

template <class T>
int64_t count_nan(const Tensor<T>& x) {
  int64_t n = 0;
  for (T e : x.data) n += std::isnan(e);
  return n;
}

}  // namespace

GradOutput run_backward(const GradKernel& grad, const Problem& problem, const Output& forward,
                        Tensor<double> dout, const std::string& impl) {
  GradProblem gp = make_grad_problem(problem, std::move(dout));
  gp.o = forward.o;  // the saved tensors of this forward pass
  gp.lse = forward.lse;
  gp.o32 = forward.o32;
  gp.lse32 = forward.lse32;
  GradOutput gout;
  grad.run(gp, gout);
  const int64_t nan = count_nan(gout.dq) + count_nan(gout.dk) + count_nan(gout.dv) +
                      count_nan(gout.dq32) + count_nan(gout.dk32) + count_nan(gout.dv32);
  require_field(nan == 0, Field::impl, "", impl,
          std::string("its backward ") + grad.name + " produced " + std::to_string(nan) +
              " NaN gradient values; nothing was written");
  return gout;
}

void check_gradients_against(CheckResult& r, const std::string& oracle,
                             const std::vector<NamedGradientCandidate>& grads,
                             const Pattern& pattern, const GradientInputs* inputs) {
  require(r.tolerance_rule.empty(), "--tolerance-rule", r.tolerance_rule,
          "judges o and lse only (its yardstick is a naive forward pass): with --dout, use "
          "--tolerance-rule table (contract §4.10)");
  r.gradient_oracle = oracle;
  // b1's own tensors for the probes: dq, dk, dv (the probes re-run b1, contract §4.9).
  std::array<const Tensor<double>*, 3> refs{}, cands{};
  std::array<const TensorReport*, 3> reports{};
  bool failed = false;
  for (const NamedGradientCandidate& c : grads) {
    if (c.candidate.x == nullptr) continue;
    // Query rows for dq and dq_global, key rows for the others; dsinks [H_q] one row per head.
    const bool sinks = c.name == "dsinks";
    const RowKind rows_are = sinks ? RowKind::head
                             : c.name.rfind("dq", 0) == 0 ? RowKind::query : RowKind::key;
    std::optional<TensorReport>* slot = r.gradient(c.name);
    require(slot != nullptr, "gradient", c.name,
            "must be dq, dk, dv, dq_global, dk_global, dv_global or dsinks");
    if (sinks) {
      // Viewed as [1, H_q, 1]: mismatches and rows per (0, head); its worst row names no keys
      // (dσ sums over every batch element and row, contract §7.7).
      Tensor<double> x = *c.candidate.x, ref = *c.reference;
      x.shape = ref.shape = {1, ref.numel(), 1};
      *slot = tensor_report(c.name, x, ref, c.candidate.tol, pattern, {}, rows_are);
      (*slot)->worst_row.reset();
    } else {
      *slot = tensor_report(c.name, *c.candidate.x, *c.reference, c.candidate.tol, pattern, {}, rows_are);
    }
    failed = failed || !(*slot)->pass;
    static const char* const kOwn[3] = {"dq", "dk", "dv"};
    for (int t = 0; t < 3; ++t)
      if (c.name == kOwn[t]) refs[t] = c.reference, cands[t] = c.candidate.x, reports[t] = &**slot;
  }
  if (!failed) return;
  r.pass = false;
  GradientCause cause;
  if (inputs != nullptr && oracle == "b1_dense_masked_grad") {
    cause = gradient_cause(inputs->q, inputs->k, inputs->v, inputs->dout, pattern, inputs->scale,
                           refs, reports, cands, inputs->options);
  } else {  // the gradient probes re-run b1: not this definition
    cause.probable_cause = "unknown: gradient probes skipped";
    cause.probes = {{"tried", nlohmann::json::array()},
                    {"skipped", inputs == nullptr ? "the inputs q, k, v, dout were not given"
                                                  : "the gradient probes re-run b1_dense_masked_grad, "
                                                    "not " + oracle + " (contract §7.4-§7.6)"}};
  }
  for (TensorReport* t : r.tensors_mutable())
    if (t->tensor.rfind("d", 0) == 0 && !t->pass) t->probable_cause = cause.probable_cause;
  if (r.probable_cause.empty()) {  // o and lse pass: the gradients' cause is the report's
    r.probable_cause = cause.probable_cause;
    r.probes = cause.probes;
  } else if (r.probes.is_object()) {
    r.probes["gradient"] = cause.probes;
  }
}

void check_gradients_against_oracle(CheckResult& r, const Tensor<double>& q,
                                    const Tensor<double>& k, const Tensor<double>& v,
                                    const Pattern& pattern, const double* scale,
                                    const Tensor<double>& dout, const GradientCandidate& dq,
                                    const GradientCandidate& dk, const GradientCandidate& dv,
                                    const Conventions& conv) {
  const BatchGrad b1 = [&](const Tensor<double>& qb, const Tensor<double>& kb,
                           const Tensor<double>& vb, const Tensor<double>& db, const Pattern& p) {
    return b1_dense_masked_grad(qb, kb, vb, db, p, scale);
  };
  const GradientResult g = conv.padding_align_valid  // contract §2.6: per batch element
                               ? grad_valid_aligned(q, k, v, dout, pattern, b1)
                               : b1(q, k, v, dout, pattern);
  const GradientInputs inputs{q, k, v, dout, scale};
  check_gradients_against(r, "b1_dense_masked_grad",
                          {{"dq", &g.dq, dq}, {"dk", &g.dk, dk}, {"dv", &g.dv, dv}}, pattern,
                          &inputs);
  if (conv.padding_align_valid) restate_worst_rows(r, pattern);
}

ReferenceGradients reference_gradients(const AttentionInputs& in, const double* scale,
                                       const Conventions& conv, const CompatRequest* compat,
                                       const Tensor<double>& dout, const ScoreMods* mods) {
  if (mods != nullptr && (mods->any() || in.shape.num_kv_heads != in.shape.num_heads)) {
    require(compat == nullptr && !conv.masked_score && !conv.padding_align_valid, "--dout",
            "(gradients)", "with grouped-query heads or score modifiers: only under the "
            "default conventions (contract §2.7-§2.9)");
    ReferenceGradients r;
    r.oracle = "b1_dense_masked_grad";
    GradientResult g = b1_dense_masked_grad(in.q, in.k, in.v, dout, in.pattern, scale, *mods);
    r.g.dq = std::move(g.dq), r.g.dk = std::move(g.dk), r.g.dv = std::move(g.dv);
    r.g.dsinks = std::move(g.dsinks);
    return r;
  }
  if (compat != nullptr) {
    require(!conv.masked_score, "--masked-score", to_text(*conv.masked_score),
            "must be -inf under the compatibility flags (their definitions remove masked keys)");
    return compat_gradients(*compat, in, scale, dout);
  }
  ReferenceGradients r;
  r.oracle = conv.masked_score ? "masked_score_grad" : "b1_dense_masked_grad";
  const BatchGrad oracle = [&](const Tensor<double>& q, const Tensor<double>& k,
                               const Tensor<double>& v, const Tensor<double>& d, const Pattern& p) {
    return conv.masked_score ? masked_score_grad(q, k, v, d, p, scale, *conv.masked_score)
                             : b1_dense_masked_grad(q, k, v, d, p, scale);
  };
  // contract §2.6: under --padding-align valid each batch element on its aligned pattern.
  const GradientResult g = conv.padding_align_valid
                               ? grad_valid_aligned(in.q, in.k, in.v, dout, in.pattern, oracle)
                               : oracle(in.q, in.k, in.v, dout, in.pattern);
  r.g.dq = std::move(g.dq);
  r.g.dk = std::move(g.dk);
  r.g.dv = std::move(g.dv);
  return r;
}

ReachResult compute_reach(const graph::LayerStack& stack, const ReachRequest& request) {
  ReachResult r;
  const int64_t n = stack.seq_len();
  require(request.token == -1 || (request.token >= 0 && request.token < n), "--token",
          request.token, "must be in [0, " + std::to_string(n) + ")");
  r.summary = graph::g1_reach_bitset(stack, request.token, request.level);
  r.connected_fraction = graph::connected_fraction(r.summary);
  r.mixing_depth = graph::mixing_depth(r.summary);
  r.diameter = graph::diameter(r.summary);
  r.mean_shortest_path = graph::mean_shortest_path(r.summary);
  // The gap is the one measure computed iteratively; when Arnoldi cannot separate λ₂
  // (a long window ring, eigenvalues clustered at 1) it is reported unknown, not guessed.
  try {
    r.gap = graph::spectral_gap(stack.layer(0));
  } catch (const RuntimeError& e) {
    r.gap_note = e.what();
  }
  if (request.path) r.path = graph::shortest_path(stack, request.path->first, request.path->second);
  r.rollout_ok = request.token >= 0 && n <= graph::kMaxTokenNodes;
  if (r.rollout_ok) r.evenness = graph::rollout_evenness(stack, request.token);
  return r;
}

nlohmann::json reach_json(const ReachResult& r, const ReachRequest& request) {
  auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"level", graph::level_name(r.summary.level)},
      {"mixing_depth", or_null(r.mixing_depth)},
      {"connected_fraction", r.connected_fraction},
      {"diameter", or_null(r.diameter)},
      {"mean_shortest_path", or_null(r.mean_shortest_path)},
      {"spectral_gap", r.gap ? nlohmann::json(r.gap->gap) : nlohmann::json(nullptr)},
  };
  if (request.token >= 0) {
    j["coverage"] = r.summary.coverage;
    j["span"] = r.summary.span;
  }
  if (request.path) j["path"] = r.path;
  return j;
}

}  // namespace sparseattn::api
