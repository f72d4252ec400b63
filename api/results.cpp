#include "api/results.h"

#include <cmath>
#include <utility>

#include "api/check_report.h"
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

// What a tiled kernel does with the layout: it computes every pair of every listed tile,
// partial ones included (tiled_flops, and the share of them spent on masked pairs),
// reads q once and k, v once per listed tile (bytes_tiled, float32) against every tensor
// once (bytes_min); and the layout's own memory (layout_bytes: row_ptr, col, bits_at,
// bits; heads that share a layout counted once). Key padding ignored, like the counts.
nlohmann::json tile_json(const Pattern& p, int64_t head_dim) {
  int64_t tile_pairs = 0, kv_columns = 0, layout_bytes = 0;
  std::vector<const HeadLayout*> seen;
  for (int64_t h = 0; h < p.sizes.num_heads; ++h) {
    const HeadLayout& L = p.head(h);
    for (int64_t qt = 0; qt < L.num_q_tiles(); ++qt) {
      const int64_t rows = std::min(L.tile, L.seq_len_q - qt * L.tile);
      for (int64_t e = L.row_ptr[qt]; e < L.row_ptr[qt + 1]; ++e) {
        const int64_t cols = std::min(L.tile, L.seq_len_k - int64_t{L.col[e]} * L.tile);
        tile_pairs += rows * cols;
        kv_columns += cols;
      }
    }
    if (std::find(seen.begin(), seen.end(), &L) != seen.end()) continue;
    seen.push_back(&L);
    layout_bytes += static_cast<int64_t>(L.row_ptr.size() * sizeof(int64_t) + L.col.size() * sizeof(int32_t) +
                                         L.bits_at.size() * sizeof(int64_t) + L.bits.size() * sizeof(uint64_t));
  }
  PatternStats st = pattern_stats(p);
  const double flops = attention_flops(st, head_dim, head_dim);
  st.nnz = tile_pairs;
  const double tiled_flops = attention_flops(st, head_dim, head_dim);
  const double H = static_cast<double>(p.sizes.num_heads), D = static_cast<double>(head_dim);
  const double q_o_lse = 4.0 * H * static_cast<double>(p.sizes.seq_len_q) * (2 * D + 1);
  return {{"tile_pairs", tile_pairs},
          {"tiled_flops", tiled_flops},
          {"partial_tile_waste", tiled_flops > 0 ? 1.0 - flops / tiled_flops : 0.0},
          {"bytes_min", q_o_lse + 4.0 * H * static_cast<double>(p.sizes.seq_len_k) * 2 * D},
          {"bytes_tiled", q_o_lse + 4.0 * static_cast<double>(kv_columns) * 2 * D},
          {"layout_bytes", layout_bytes}};
}

nlohmann::json info_json(const Pattern& pattern, int64_t head_dim) {
  const PatternStats st = pattern_stats(pattern);
  const double flops = attention_flops(st, head_dim, head_dim);
  PatternStats dense = st;
  dense.nnz = st.dense_pairs;
  const double dense_flops = attention_flops(dense, head_dim, head_dim);
  nlohmann::json j = {
      {"pattern", describe(pattern.spec)},
      {"num_heads", pattern.sizes.num_heads},
      {"seq_len_q", pattern.sizes.seq_len_q},
      {"seq_len_k", pattern.sizes.seq_len_k},
      {"head_dim", head_dim},
      {"nnz", st.nnz},
      {"dense_pairs", st.dense_pairs},
      {"density", st.density},
      {"keys_per_row", {{"min", st.row_min}, {"mean", st.row_mean}, {"max", st.row_max}}},
      {"empty_rows", st.empty_rows},
      {"tiles", {{"listed", st.num_tiles}, {"full", st.full_tiles},
                 {"partial", st.num_tiles - st.full_tiles}}},
      {"random_draws", pattern.random_draws.numel()},
      {"random_draws_shape", pattern.random_draws.shape},
      {"random_draws_layout",
       pattern.spec.kind == PatternKind::bigbird       ? "[num_heads, nb - 2, num_random_blocks] key-block indices of query blocks 1..nb-2 (HF rand_attn); mask --random-table-out writes them"
       : pattern.spec.kind == PatternKind::bigbird_etc ? "[num_heads, nb, num_random_blocks] key-block indices; mask --random-table-out writes them"
       : pattern.spec.kind == PatternKind::random      ? "[num_heads, seq_len_q, num_random] key indices, -1 where a row has fewer; mask --random-table-out writes them, --random-table reads them back"
                                                       : "none"},
      {"random_shortfall", pattern.random_shortfall},
      {"flops", flops},
      {"dense_flops", dense_flops},
      {"flops_fraction", dense_flops > 0 ? flops / dense_flops : 0.0},
      {"clamped", pattern.clamped},
  };
  j.update(tile_json(pattern, head_dim));
  return j;
}

Tensor<uint8_t> allowed_mask(const Pattern& pattern) {
  const PatternSizes& z = pattern.sizes;
  const Shape shape = {z.batch, z.num_heads, z.seq_len_q, z.seq_len_k};
  checked_numel(shape, 1, "mask shape");
  Tensor<uint8_t> out(shape, 0);
  const int64_t n = z.seq_len_q, m = z.seq_len_k, plane = n * m;
  for (int64_t h = 0; h < z.num_heads; ++h) {
    const Tensor<uint8_t> head = dense_mask(pattern.head(h));
    for (int64_t b = 0; b < z.batch; ++b) {
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

// One tensor's report: core/check.h's fields (non-finite values as strings), located.
nlohmann::json tensor_report(const Tensor<double>& cand, const Tensor<double>& ref, Tolerance tol,
                             const Pattern& pattern, const std::vector<uint8_t>& skip,
                             const std::string& name, bool* pass) {
  // Skipped rows (--padded-queries any) take the oracle's values: never compared.
  Tensor<double> c = cand;
  if (!skip.empty()) {
    const int64_t rows = ref.shape[2], width = ref.numel() / (ref.shape[0] * ref.shape[1] * rows);
    for (int64_t e = 0; e < ref.numel(); ++e) {
      const int64_t row = e / width, i = row % rows, b = row / (rows * ref.shape[1]);
      if (skip[static_cast<size_t>(b * rows + i)]) c.data[e] = ref.data[e];
    }
  }
  const CheckReport r = check_close(c, ref, tol);
  nlohmann::json j = nlohmann::json::parse(report_json(r, name, tol));
  j["worst_candidate"] = number_json(r.worst_candidate);
  j["worst_reference"] = number_json(r.worst_reference);
  j["budget_used"] = number_json(r.budget_used);
  if (r.num_nonfinite > 0)  // a NaN/Inf where the oracle is finite is named first
    j["reason"] = r.reason;
  Tensor<double> shaped = c;
  shaped.shape = ref.shape;
  locate_failures(j, shaped, ref, tol, pattern, skip);
  *pass = r.pass;
  return j;
}

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

nlohmann::json check_against_oracle(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Pattern& pattern,
                                    const double* scale, const Tensor<double>& o,
                                    Tolerance o_tol, const Tensor<double>* lse,
                                    Tolerance lse_tol, const Conventions& conv,
                                    const PatternSpec* raw_spec, const ToleranceRule* rule,
                                    const ProbeOptions& probes) {
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
  CheckContext ctx;
  ctx.q = &q, ctx.k = &k, ctx.v = &v, ctx.scale = scale;
  ctx.conv = conv, ctx.raw_spec = raw_spec, ctx.rule = rule;
  ctx.probes = probes;
  return check_against(convention_oracle(q, k, v, pattern, scale, conv), pattern, s, o, o_tol,
                       lse, lse_tol, ctx);
}

nlohmann::json check_against(const AttentionResult& oracle, const Pattern& pattern,
                             const AttentionShape& s, const Tensor<double>& o, Tolerance o_tol,
                             const Tensor<double>* lse, Tolerance lse_tol,
                             const CheckContext& ctx) {
  require_finite_oracle(oracle);
  const Conventions& conv = ctx.conv;
  const ToleranceRule* rule = ctx.rule;
  const bool have_inputs = ctx.q != nullptr && ctx.k != nullptr && ctx.v != nullptr;
  require(rule == nullptr || (have_inputs && !ctx.compat), "--tolerance-rule", "reference-error",
          "needs the normal oracle's inputs: not available under the compatibility flags "
          "(contract §3.12)");
  std::vector<uint8_t> skip;
  if (conv.padded_queries_any && pattern.has_key_padding() && conv.padding_align_valid) {
    skip = valid_padded_rows(pattern);  // contract §2.6: rows i >= m_b
  } else if (conv.padded_queries_any && pattern.has_key_padding()) {
    skip.assign(static_cast<size_t>(s.batch * s.seq_len_q), 0);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t i = 0; i < s.seq_len_q; ++i)
        skip[static_cast<size_t>(b * s.seq_len_q + i)] = !pattern.query_valid(b, i);
  }
  // The reports locate against the spec's pattern; under --padding-align valid the worst
  // row's keys are restated for its batch element's alignment (contract §2.6).
  auto aligned = [&](nlohmann::json t) {
    if (conv.padding_align_valid) restate_worst_row(t, pattern);
    return t;
  };
  nlohmann::json j;
  j["oracle"] = conv.masked_score ? "dense definition with masked scores = --masked-score"
                                  : "a1_dense_masked";
  j["pattern"] = describe(pattern.spec);
  j["shape"] = {{"batch", s.batch},         {"num_heads", s.num_heads},
                {"seq_len_q", s.seq_len_q}, {"seq_len_k", s.seq_len_k},
                {"head_dim", s.head_dim},   {"head_dim_v", s.head_dim_v}};
  j["conventions"] = conv.describe();
  bool pass = true, p = true;
  Tensor<double> o4 = o;
  o4.shape = oracle.o.shape;
  j["o"] = aligned(tensor_report(o4, oracle.o, o_tol, pattern, skip, "o", &p));
  pass = pass && p;
  Tensor<double> lse3;
  if (lse != nullptr) {
    lse3 = *lse;
    lse3.shape = oracle.lse.shape;
    j["lse"] = aligned(tensor_report(lse3, oracle.lse, lse_tol, pattern, skip, "lse", &p));
    pass = pass && p;
  }
  if (rule != nullptr) {  // the verdict is the reference-error rule's (contract §4.10)
    const BatchAttend naive_run = [&](const Tensor<double>& q, const Tensor<double>& k,
                                      const Tensor<double>& v, const Pattern& p) {
      return naive_low_precision(q, k, v, p, ctx.scale, rule->dtype);
    };
    const AttentionResult naive = conv.padding_align_valid
                                      ? attend_valid_aligned(*ctx.q, *ctx.k, *ctx.v, pattern, naive_run)
                                      : naive_run(*ctx.q, *ctx.k, *ctx.v, pattern);
    nlohmann::json r = judge_reference_error(o4, oracle.o, naive.o, *rule, skip);
    pass = r["pass"].get<bool>();
    // Located against the rule's bound on the largest error: factor * naive max + floor.
    auto relocate = [&](const char* name, const Tensor<double>& c, const Tensor<double>& ref,
                        const nlohmann::json& verdict) {
      const Tolerance bound{rule->factor * verdict["naive"]["max_abs_error"].get<double>() +
                                rule->floor, 0.0};
      bool unused = false;
      nlohmann::json t = aligned(tensor_report(c, ref, bound, pattern, skip, name, &unused));
      t["pass"] = verdict["pass"];
      t["reference_error"] = verdict;
      return t;
    };
    j["o"] = relocate("o", o4, oracle.o, r);
    if (lse != nullptr) {
      Tensor<double> naive_lse = naive.lse;
      if (conv.lse_base2)
        for (double& x : naive_lse.data) x /= std::log(2.0);
      r = judge_reference_error(lse3, oracle.lse, naive_lse, *rule, skip);
      j["lse"] = relocate("lse", lse3, oracle.lse, r);
      pass = pass && r["pass"].get<bool>();
    }
    j["tolerance_rule"] = "reference-error";
  }
  if (!skip.empty()) {
    int64_t n = 0;
    for (uint8_t x : skip) n += x;
    j["rows_not_compared"] = n * s.num_heads;
  }
  if (!pass && have_inputs && !ctx.compat) {
    const ProbeInputs in{*ctx.q, *ctx.k, *ctx.v, pattern, ctx.scale, conv, o4, o_tol,
                         lse ? &lse3 : nullptr, lse_tol, skip, oracle, ctx.raw_spec,
                         ctx.probes};
    const nlohmann::json probes = probe_causes(in);
    j["probable_cause"] = probes["probable_cause"];
    j["probes"] = probes["probes"];
  } else if (!pass) {  // the probes re-run the normal oracle: not this one
    j["probable_cause"] = "unknown: probes skipped";
    j["probes"] = {{"tried", nlohmann::json::array()},
                   {"skipped", ctx.compat ? "the probes re-run the normal oracle a1_dense_masked, "
                                            "not the compatibility mode's (contract §3.12)"
                                          : "the inputs q, k, v were not given"}};
  }
  // On failure, which peer convention would explain it (not when the flags of that
  // convention were given: then there is nothing left to suggest).
  if (ctx.hint && !j.at("o").at("pass").get<bool>()) {
    const std::string hint = convention_hint(pattern, o4, oracle.o, o_tol, ctx.global_mask);
    if (!hint.empty()) j["hint"] = hint;
  }
  j["pass"] = pass;
  return j;
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

void check_gradients_against(nlohmann::json& j, const std::string& oracle,
                             const std::vector<NamedGradientCandidate>& grads) {
  j["gradient_oracle"] = oracle;
  bool pass = j.at("pass").get<bool>();
  for (const NamedGradientCandidate& c : grads) {
    if (c.candidate.x == nullptr) continue;
    const CheckReport r = check_close(*c.candidate.x, *c.reference, c.candidate.tol);
    nlohmann::json gj = nlohmann::json::parse(report_json(r, c.name, c.candidate.tol));
    gj["worst_candidate"] = number_json(r.worst_candidate);  // "nan"/"inf", never null
    gj["worst_reference"] = number_json(r.worst_reference);
    gj["budget_used"] = number_json(r.budget_used);
    gj["error_over_tolerance"] = number_json(r.budget_used);
    // Where it fails: query rows for dq and dq_global, key rows for the others.
    if (!r.pass)
      locate_gradient_failures(gj, *c.candidate.x, *c.reference, c.candidate.tol,
                               c.name.rfind("dq", 0) == 0 ? "query" : "key");
    j[c.name] = gj;
    pass = pass && r.pass;
  }
  j["pass"] = pass;
}

void check_gradients_against_oracle(nlohmann::json& j, const Tensor<double>& q,
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
  check_gradients_against(j, "b1_dense_masked_grad",
                          {{"dq", &g.dq, dq}, {"dk", &g.dk, dk}, {"dv", &g.dv, dv}});
}

ReferenceGradients reference_gradients(const AttentionInputs& in, const double* scale,
                                       const Conventions& conv, const CompatRequest* compat,
                                       const Tensor<double>& dout) {
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
