#include "cli/results.h"

#include "cli/check_report.h"
#include "core/error.h"
#include "graph/measures.h"
#include "graph/rollout.h"
#include "reference/attention.h"

namespace sparseattn::cli {

nlohmann::json impls_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const Kernel& k : kernels())
    list.push_back({{"name", k.name},
                    {"target", target_name(k.target)},
                    {"dtype", dtype_name(k.dtype)},
                    {"exact", k.exact},
                    {"patterns", k.patterns},
                    {"reference", k.reference},
                    {"atol", k.atol},
                    {"rtol", k.rtol},
                    {"summary", k.summary}});
  return list;
}

const Kernel& serving_kernel(const std::string& name, const Pattern& pattern) {
  const Kernel* kernel = nullptr;
  try {
    kernel = &find_kernel(name);
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    throw InvalidArgument("--impl", name, what.substr(what.find(": ") + 2));
  }
  if (!kernel->serves(pattern)) {
    std::string serving;
    for (const Kernel& k : kernels())
      if (k.serves(pattern)) serving += (serving.empty() ? "" : ", ") + std::string(k.name);
    throw InvalidArgument("--impl", name,
                          std::string("serves only ") + kernel->patterns + ", not " +
                              describe(pattern.spec) + "; kernels that serve it: " + serving);
  }
  return *kernel;
}

nlohmann::json info_json(const Pattern& pattern, int64_t head_dim) {
  const PatternStats st = pattern_stats(pattern);
  const double flops = attention_flops(st, head_dim, head_dim);
  PatternStats dense = st;
  dense.nnz = st.dense_pairs;
  const double dense_flops = attention_flops(dense, head_dim, head_dim);
  return {
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
       : pattern.spec.kind == PatternKind::random      ? "[num_heads, seq_len_q, num_random] key indices, -1 where a row has fewer; mask --random-table-out writes them"
                                                       : "none"},
      {"random_shortfall", pattern.random_shortfall},
      {"flops", flops},
      {"dense_flops", dense_flops},
      {"flops_fraction", dense_flops > 0 ? flops / dense_flops : 0.0},
      {"clamped", pattern.clamped},
  };
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

}  // namespace

nlohmann::json check_against_oracle(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Pattern& pattern,
                                    const double* scale, const Tensor<double>& o,
                                    Tolerance o_tol, const Tensor<double>* lse,
                                    Tolerance lse_tol, const Conventions& conv,
                                    const PatternSpec* raw_spec, const ToleranceRule* rule) {
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
  const AttentionResult oracle = convention_oracle(q, k, v, pattern, scale, conv);
  std::vector<uint8_t> skip;
  if (conv.padded_queries_any && pattern.has_key_padding()) {
    skip.assign(static_cast<size_t>(s.batch * s.seq_len_q), 0);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t i = 0; i < s.seq_len_q; ++i)
        skip[static_cast<size_t>(b * s.seq_len_q + i)] = !pattern.query_valid(b, i);
  }
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
  j["o"] = tensor_report(o4, oracle.o, o_tol, pattern, skip, "o", &p);
  pass = pass && p;
  Tensor<double> lse3;
  if (lse != nullptr) {
    lse3 = *lse;
    lse3.shape = oracle.lse.shape;
    j["lse"] = tensor_report(lse3, oracle.lse, lse_tol, pattern, skip, "lse", &p);
    pass = pass && p;
  }
  if (rule != nullptr) {  // the verdict is the reference-error rule's (contract §4.10)
    const AttentionResult naive = naive_low_precision(q, k, v, pattern, scale, rule->dtype);
    nlohmann::json r = judge_reference_error(o4, oracle.o, naive.o, *rule, skip);
    pass = r["pass"].get<bool>();
    // Located against the rule's bound on the largest error: factor * naive max + floor.
    auto relocate = [&](const char* name, const Tensor<double>& c, const Tensor<double>& ref,
                        const nlohmann::json& verdict) {
      const Tolerance bound{rule->factor * verdict["naive"]["max_abs_error"].get<double>() +
                                rule->floor, 0.0};
      bool unused = false;
      nlohmann::json t = tensor_report(c, ref, bound, pattern, skip, name, &unused);
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
  if (!pass) {
    const ProbeInputs in{q,     k,     v,   pattern, scale, conv, o4, o_tol,
                         lse ? &lse3 : nullptr, lse_tol, skip, oracle, raw_spec};
    const nlohmann::json probes = probe_causes(in);
    j["probable_cause"] = probes["probable_cause"];
    j["probes"] = probes["probes"];
  }
  j["pass"] = pass;
  return j;
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

}  // namespace sparseattn::cli
