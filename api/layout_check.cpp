#include "api/layout_check.h"

#include <algorithm>
#include <functional>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/check_report.h"
#include "api/inputs.h"
#include "api/results.h"
#include "core/error.h"
#include "core/field.h"
#include "reference/backward/backward.h"
#include "reference/compat.h"

namespace sparseattn::api {

namespace {

void to_base2(Tensor<double>& lse) {
  for (double& x : lse.data) x /= std::log(2.0);
}
void to_base2(Tensor<float>& lse) {
  for (float& x : lse.data) x = static_cast<float>(x / std::log(2.0));
}

// Columns [lo, lo + len) of a packed lse [H, total] as [1, H, len].
Tensor<double> packed_lse_rows(const Tensor<double>& lse, int64_t lo, int64_t len) {
  const int64_t heads = lse.dim(0), total = lse.dim(1);
  Tensor<double> y({1, heads, len});
  for (int64_t h = 0; h < heads; ++h) std::copy_n(lse.ptr() + h * total + lo, len, y.ptr() + h * len);
  return y;
}

// One sequence as check_against judges it.
struct Sequence {
  int64_t index = 0;
  Tensor<double> q, k, v, o, lse;
  bool no_keys = false;  // judged as rows whose only key is masked: fully masked rows
};

// A sequence without keys as a problem with one masked key: the same rows (o = 0, lse = −∞,
// or σ with sinks; contract §2.3, §2.9), so its report reads like every other's.
PatternSpec no_key_spec(int64_t seq_len_q) {
  PatternSpec s;
  s.kind = PatternKind::explicit_mask;
  s.mask = Tensor<uint8_t>({seq_len_q, 1}, 0);
  return s;
}

// Merges one tensor's per-sequence reports into `into` (already the worst sequence's).
void merge_tensor(TensorReport& into, const std::vector<std::pair<int64_t, const TensorReport*>>& parts) {
  int64_t elements = 0, compared = 0, nonfinite = 0, mismatched = 0;
  double abs_err = 0, rel_err = 0, abs_fin = 0, rel_fin = 0;
  bool pass = true;
  into.mismatches.clear();
  into.rows.clear();
  into.rows_truncated = 0;
  auto renamed = [](const std::string& bh, int64_t b) {  // "0,h" -> "b,h"
    return std::to_string(b) + bh.substr(bh.find(','));
  };
  for (const auto& [b, r] : parts) {
    elements += r->num_elements, compared += r->num_compared;
    nonfinite += r->num_nonfinite, mismatched += r->num_mismatched;
    // NaN (a NaN compared) wins over every number, as in one tensor's report.
    auto worse = [](double a, double x) { return std::isnan(a) || std::isnan(x) ? NAN : std::max(a, x); };
    abs_err = worse(abs_err, r->max_abs_error), rel_err = worse(rel_err, r->max_rel_error);
    abs_fin = std::max(abs_fin, r->max_abs_error_finite);
    rel_fin = std::max(rel_fin, r->max_rel_error_finite);
    pass = pass && r->pass;
    for (const auto& [bh, n] : r->mismatches) into.mismatches.emplace_back(renamed(bh, b), n);
    for (const auto& [bh, rows] : r->rows)
      if (into.rows.size() < 32) into.rows.emplace_back(renamed(bh, b), rows);
      else ++into.rows_truncated;
    into.rows_truncated += r->rows_truncated;
  }
  into.num_elements = elements, into.num_compared = compared;
  into.num_nonfinite = nonfinite, into.num_mismatched = mismatched;
  into.max_abs_error = abs_err, into.max_rel_error = rel_err;
  into.max_abs_error_finite = abs_fin, into.max_rel_error_finite = rel_fin;
  into.nothing_compared = compared == 0;
  into.pass = pass && compared > 0;
  if (into.nothing_compared) {
    into.reason = "nothing compared: every sequence is empty (contract §4.9)";
    into.probable_cause = "";
  }
}

// "(batch 0," -> "(batch b,": the probes ran on one sequence as a batch of one.
void rebatch_text(std::string& s, int64_t b) {
  const std::string to = "(batch " + std::to_string(b) + ",";
  for (size_t at = s.find("(batch 0,"); at != std::string::npos; at = s.find("(batch 0,", at + to.size()))
    s.replace(at, 9, to);
}
void rebatch_json(nlohmann::json& j, int64_t b) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "batch" && it->is_number_integer()) *it = b;
      else if (it->is_string()) {
        std::string s = *it;
        rebatch_text(s, b);
        *it = s;
      } else rebatch_json(*it, b);
    }
  } else if (j.is_array()) {
    for (nlohmann::json& x : j) rebatch_json(x, b);
  }
}

// The report of the worst sequence `b` relocated to it: its batch index is the sequence's.
void relocate_tensor(TensorReport& t, int64_t b) {
  if (!t.worst_index.empty()) t.worst_index[0] = b;
  if (t.worst_row) t.worst_row->batch = b;
  if (t.first_nonfinite && !t.first_nonfinite->index.empty()) t.first_nonfinite->index[0] = b;
  if (!t.pass && !t.reason.empty()) t.reason = "sequence " + std::to_string(b) + ": " + t.reason;
  rebatch_text(t.probable_cause, b);
}

// One sequence's gradient reports (contract §7.8), as check_gradients_against gives them.
struct GradPart {
  int64_t index = 0;
  CheckResult r;
};

// The sequences' reports of gradient `name` merged into one (the worst sequence's, failing
// first, relocated, with the counts summed as merge_tensor sums o's); nullopt when no
// sequence judged it.
std::optional<TensorReport> merge_gradient(std::vector<GradPart>& parts, const std::string& name,
                                           const GradPart** worst_part) {
  std::vector<std::pair<int64_t, const TensorReport*>> of;
  const TensorReport* worst = nullptr;
  for (GradPart& p : parts) {
    const std::optional<TensorReport>* t = p.r.gradient(name);
    if (t == nullptr || !t->has_value()) continue;
    const TensorReport* x = &**t;
    of.emplace_back(p.index, x);
    const bool fails = !x->pass, worst_fails = worst != nullptr && !worst->pass;
    if (worst == nullptr || (fails && !worst_fails) ||
        (fails == worst_fails && x->error_over_tolerance > worst->error_over_tolerance)) {
      worst = x;
      *worst_part = &p;
    }
  }
  if (worst == nullptr) return std::nullopt;
  TensorReport into = *worst;
  relocate_tensor(into, (*worst_part)->index);
  merge_tensor(into, of);
  if (into.nothing_compared) into.reason = "nothing compared: no sequence has rows of " + name;
  return into;
}

// A sequence without keys (its query rows, dq) or without queries (its key rows, dk and dv):
// o is constant there, so the gradient is 0 (contract §7.8), judged row by row as any other
// against zeros; `pattern` (nothing allowed) names no key or query for the worst row.
void judge_zero_gradient(CheckResult& r, const char* name, const Tensor<double>& cand, Tolerance tol,
                         const Pattern& pattern, RowKind rows_are, const char* why) {
  const Tensor<double> zeros(cand.shape, 0.0);
  std::optional<TensorReport>* slot = r.gradient(name);
  *slot = tensor_report(name, cand, zeros, tol, pattern, {}, rows_are);
  if (!(*slot)->pass) {
    (*slot)->probable_cause = std::string("a gradient where there is none: ") + why +
                              ", so o does not depend on it and its gradient is 0 (contract §7.8)";
    r.pass = false;
    if (r.probable_cause.empty()) r.probable_cause = (*slot)->probable_cause;
  }
}

// An explicit mask of seq_len_q rows and seq_len_k keys, nothing allowed: the pattern of a
// sequence without keys (one masked key stands in) or without queries (one masked query).
PatternSpec nothing_allowed(int64_t seq_len_q, int64_t seq_len_k) {
  PatternSpec s;
  s.kind = PatternKind::explicit_mask;
  s.mask = Tensor<uint8_t>({seq_len_q, seq_len_k}, 0);
  return s;
}

// check --dout under a packed batch: every sequence's gradients against b1 on that sequence
// alone, merged into `r` (check_layout's doc comment, contract §7.8).
void judge_varlen_gradients(const LayoutCall& call, const LayoutGradients& g,
                            const ProbeOptions& probes, CheckResult& r) {
  const LayoutGradShapes want = layout_grad_shapes(call);
  require(g.dout != nullptr && g.dout->shape == want.dout, "dout shape",
          g.dout == nullptr ? "missing" : shape_text(g.dout->shape),
          "must be o's packed shape " + shape_text(want.dout) + " (contract §7.8)");
  require_finite(*g.dout, "dout");
  for (const auto& [c, shape, name] :
       {std::tuple<const GradientCandidate&, const Shape&, const char*>{g.dq, want.dq, "dq"},
        {g.dk, want.dk, "dk"}, {g.dv, want.dv, "dv"}, {g.dsinks, want.dsinks, "dsinks"}})
    require(c.x == nullptr || c.x->shape == shape, std::string("candidate ") + name + " shape",
            c.x == nullptr ? "" : shape_text(c.x->shape), "must be " + shape_text(shape));
  require(g.dsinks.x == nullptr || call.mods.has_sinks(), "candidate dsinks", "given",
          "needs sinks (the logits it is the gradient of, contract §7.7)");
  const VarlenInputs in = varlen_inputs(call);
  const Varlen& vl = in.varlen;
  const int64_t hq = in.q.dim(1), hkv = in.k.dim(1);
  // The gradient probes re-run plain b1: not with grouped heads or score modifiers.
  const bool plain = !call.mods.any() && hkv == hq;
  Tensor<double> dsinks_ref;
  if (call.mods.has_sinks()) dsinks_ref = Tensor<double>({hq}, 0.0);
  std::vector<GradPart> parts;
  for (int64_t b = 0; b < vl.num_sequences(); ++b) {
    const int64_t q0 = vl.cu_seqlens_q[static_cast<size_t>(b)], lq = vl.seq_len_q(b);
    const int64_t k0 = vl.cu_seqlens_k[static_cast<size_t>(b)], lk = vl.seq_len_k(b);
    if (lq == 0 && lk == 0) continue;
    GradPart part;
    part.index = b;
    part.r.pass = true;
    part.r.gradient_oracle = "b1_dense_masked_grad";
    Tensor<double> dq_c, dk_c, dv_c;  // the candidates' rows of this sequence, [1, H, L, d]
    if (g.dq.x != nullptr && lq > 0) dq_c = packed_rows(*g.dq.x, q0, q0 + lq);
    if (g.dk.x != nullptr && lk > 0) dk_c = packed_rows(*g.dk.x, k0, k0 + lk);
    if (g.dv.x != nullptr && lk > 0) dv_c = packed_rows(*g.dv.x, k0, k0 + lk);
    if (lk == 0) {  // queries without keys: fully masked rows
      if (dq_c.numel() > 0)
        judge_zero_gradient(part.r, "dq", dq_c, g.dq.tol,
                            sequence_pattern(nothing_allowed(lq, 1), hq, lq, 1), RowKind::query,
                            "the sequence has no keys (its rows are fully masked, o = 0)");
    } else if (lq == 0) {  // keys no query reads
      const Pattern none = sequence_pattern(nothing_allowed(1, lk), hq, 1, lk);
      const char* why = "the sequence has no queries (no row reads its keys)";
      if (dk_c.numel() > 0) judge_zero_gradient(part.r, "dk", dk_c, g.dk.tol, none, RowKind::key, why);
      if (dv_c.numel() > 0) judge_zero_gradient(part.r, "dv", dv_c, g.dv.tol, none, RowKind::key, why);
    } else {
      const Pattern pattern = sequence_pattern(call.spec, hq, lq, lk);
      const Tensor<double> q = packed_rows(in.q, q0, q0 + lq), k = packed_rows(in.k, k0, k0 + lk),
                           v = packed_rows(in.v, k0, k0 + lk), dout = packed_rows(*g.dout, q0, q0 + lq);
      const ScoreMods mods = sequence_mods(call.mods, b);
      const GradientResult ref = b1_dense_masked_grad(q, k, v, dout, pattern, call.scale_ptr(), mods);
      if (dsinks_ref.numel() > 0)
        for (int64_t h = 0; h < hq; ++h) dsinks_ref.data[h] += ref.dsinks.data[h];
      std::vector<NamedGradientCandidate> named;
      if (dq_c.numel() > 0) named.push_back({"dq", &ref.dq, {&dq_c, g.dq.tol}});
      if (dk_c.numel() > 0) named.push_back({"dk", &ref.dk, {&dk_c, g.dk.tol}});
      if (dv_c.numel() > 0) named.push_back({"dv", &ref.dv, {&dv_c, g.dv.tol}});
      const GradientInputs inputs{q, k, v, dout, call.scale_ptr(), probes};
      check_gradients_against(part.r, "b1_dense_masked_grad", named, pattern, plain ? &inputs : nullptr);
    }
    parts.push_back(std::move(part));
  }
  r.gradient_oracle = "b1_dense_masked_grad";
  const GradPart* cause_from = nullptr;  // the first failing tensor's worst sequence
  for (const char* name : {"dq", "dk", "dv"}) {
    const GradientCandidate& c = name[1] == 'q' ? g.dq : name[1] == 'k' ? g.dk : g.dv;
    if (c.x == nullptr) continue;
    const GradPart* worst = nullptr;
    std::optional<TensorReport> t = merge_gradient(parts, name, &worst);
    if (!t) {  // every sequence without rows of this tensor: nothing compared, which fails
      t = TensorReport{};
      t->tensor = name;
      t->rows_are = name[1] == 'q' ? RowKind::query : RowKind::key;
      t->nothing_compared = true;
      t->num_elements = c.x->numel();
      t->reason = std::string("nothing compared: no sequence has rows of ") + name + " (contract §4.9)";
    }
    if (!t->pass) {
      r.pass = false;
      if (cause_from == nullptr && worst != nullptr && !worst->r.pass) cause_from = worst;
    }
    *r.gradient(name) = std::move(*t);
  }
  if (g.dsinks.x != nullptr) {  // [H_q], summed over the sequences: one row per head
    Tensor<double> x = *g.dsinks.x, ref = dsinks_ref;
    x.shape = ref.shape = {1, hq, 1};
    TensorReport t = tensor_report("dsinks", x, ref, g.dsinks.tol,
                                   sequence_pattern(nothing_allowed(1, 1), hq, 1, 1), {}, RowKind::head);
    t.worst_row.reset();  // dσ sums over every sequence's rows: no row of its own
    if (!t.pass) {
      t.probable_cause = "unknown: gradient probes skipped (they re-run b1 without sinks)";
      r.pass = false;
      if (r.probable_cause.empty()) r.probable_cause = t.probable_cause;
    }
    r.dsinks = std::move(t);
  }
  if (cause_from != nullptr) {
    nlohmann::json probes_json = cause_from->r.probes;
    rebatch_json(probes_json, cause_from->index);
    std::string cause = cause_from->r.probable_cause;
    rebatch_text(cause, cause_from->index);
    if (r.probable_cause.empty()) {  // o and lse pass: the gradients' cause is the report's
      r.probable_cause = cause;
      r.probes = probes_json;
    } else if (r.probes.is_object()) {
      r.probes["gradient"] = probes_json;
    }
  }
}

}  // namespace

void require_finite_layout(const LayoutCall& call, const std::string& prefix) {
  require_finite(call.q, prefix + "q");
  if (call.layout.varlen) {
    require_finite(call.k, prefix + "k");
    require_finite(call.v, prefix + "v");
    return;
  }
  CacheInputs in = cache_inputs(call);
  validate_cache_inputs(in);
  for (int64_t b = 0; b < in.q.dim(0); ++b)
    for (const auto& [x, name] : {std::pair<const Tensor<double>*, const char*>{&in.k, "k"}, {&in.v, "v"}}) {
      const Tensor<double> rows = cache_rows(*x, in.cache, b);
      const size_t d = static_cast<size_t>(rows.dim(3)), len = static_cast<size_t>(rows.dim(2));
      for (size_t e = 0; e < rows.data.size(); ++e)
        require(std::isfinite(rows.data[e]), prefix + name, rows.data[e],
                "must be finite in the filled slots (element " + std::to_string(b) +
                    ", kv head " + std::to_string(e / (len * d)) + ", key " +
                    std::to_string(e / d % len) + ", column " + std::to_string(e % d) + ")");
    }
}

VarlenInputs varlen_inputs(const LayoutCall& call) {
  VarlenInputs in;
  in.q = call.q, in.k = call.k, in.v = call.v;
  in.varlen = *call.layout.varlen;
  in.spec = call.spec;
  in.scale = call.scale_ptr();
  in.mods = call.mods;
  return in;
}

CacheInputs cache_inputs(const LayoutCall& call) {
  CacheInputs in;
  in.q = call.q, in.k = call.k, in.v = call.v;
  if (call.conv.bshd)  // [B, L, H, d] and [P, page_size, H, d] -> bhsd (contract §2.11-§2.12)
    for (Tensor<double>* t : {&in.q, &in.k, &in.v}) {
      require(t->rank() == 4, "q, k, v", shape_text(t->shape),
              "must be rank 4 under --layout bshd with --cache-seqlens");
      *t = swap_dims_1_2(*t);
    }
  in.cache = *call.layout.cache;
  in.spec = call.spec;
  in.scale = call.scale_ptr();
  in.mods = call.mods;
  return in;
}

Output attend_layout(const Kernel& kernel, const LayoutCall& call) {
  Output out = call.layout.varlen ? attend_varlen(kernel, varlen_inputs(call))
                                  : attend_cache(kernel, cache_inputs(call));
  if (call.conv.lse_base2) to_base2(out.lse), to_base2(out.lse32);
  if (call.layout.cache && call.conv.bshd) {
    if (out.o.numel()) out.o = swap_dims_1_2(out.o);
    if (out.o32.numel()) {
      Tensor<double> wide = swap_dims_1_2(tensor_cast<double>(out.o32));
      out.o32 = tensor_cast<float>(wide);  // a permutation: exact
    }
  }
  return out;
}

void require_layout_backward(const SeqLayout& layout) {
  require_field(!layout.cache, Field::cache_seqlens, "", "given",
                "must not be given with a gradient of o (dout): decoding against a cache, paged "
                "or not, is forward only; gradients are offered for packed batches "
                "(cu_seqlens, contract §2.11, §7.8)");
}

GradOutput attend_layout_grad(const GradKernel& grad, const LayoutCall& call,
                              const Tensor<double>& dout) {
  require_layout_backward(call.layout);
  return attend_varlen_grad(grad, varlen_inputs(call), dout);
}

LayoutGradShapes layout_grad_shapes(const LayoutCall& call) {
  require_layout_backward(call.layout);
  LayoutGradShapes s;
  s.dout = layout_o_shape(call);
  s.dq = call.q.shape, s.dk = call.k.shape, s.dv = call.v.shape;
  s.dsinks = {call.q.rank() >= 2 ? call.q.dim(1) : 0};
  return s;
}

namespace {

// q's shape as bhsd [B, H, L_q, d] (a cache's q under --layout bshd is [B, L_q, H, d]); shape
// arithmetic only: no copy of the tensors.
Shape cache_q_bhsd(const LayoutCall& call) {
  const Shape q = as_rank4(call.q.shape, "q");
  return call.conv.bshd ? Shape{q[0], q[2], q[1], q[3]} : q;
}

}  // namespace

Shape layout_o_shape(const LayoutCall& call) {
  if (call.layout.varlen) return {call.q.dim(0), call.q.dim(1), call.v.dim(2)};
  const Shape q = cache_q_bhsd(call);
  const int64_t dv = call.v.shape.back();
  return call.conv.bshd ? Shape{q[0], q[2], q[1], dv} : Shape{q[0], q[1], q[2], dv};
}

Shape layout_lse_shape(const LayoutCall& call) {
  if (call.layout.varlen) return {call.q.dim(1), call.q.dim(0)};
  const Shape q = cache_q_bhsd(call);
  return {q[0], q[1], q[2]};
}

CheckResult check_layout(const LayoutCall& call, const Tensor<double>& o, Tolerance o_tol,
                         const Tensor<double>* lse, Tolerance lse_tol, const ProbeOptions& probes,
                         const LayoutGradients* grads) {
  if (grads != nullptr) require_layout_backward(call.layout);  // before any work
  // The sequences, each as [1, H, L, d] tensors with the candidate's rows beside them.
  std::vector<Sequence> seqs;
  std::string layout_text;
  int64_t hq = 0;
  if (call.layout.varlen) {
    const VarlenInputs in = varlen_inputs(call);
    validate_varlen_inputs(in);
    const Varlen& vl = in.varlen;
    hq = in.q.dim(1);
    require(o.shape == layout_o_shape(call), "candidate shape", shape_text(o.shape),
            "must be o's packed shape " + shape_text(layout_o_shape(call)) + " (contract §2.10)");
    for (int64_t b = 0; b < vl.num_sequences(); ++b) {
      const int64_t q0 = vl.cu_seqlens_q[static_cast<size_t>(b)], lq = vl.seq_len_q(b);
      const int64_t k0 = vl.cu_seqlens_k[static_cast<size_t>(b)], lk = vl.seq_len_k(b);
      if (lq == 0) continue;
      Sequence s;
      s.index = b;
      s.q = packed_rows(in.q, q0, q0 + lq);
      s.no_keys = lk == 0;
      s.k = s.no_keys ? Tensor<double>({1, in.k.dim(1), 1, in.k.dim(2)}) : packed_rows(in.k, k0, k0 + lk);
      s.v = s.no_keys ? Tensor<double>({1, in.v.dim(1), 1, in.v.dim(2)}) : packed_rows(in.v, k0, k0 + lk);
      s.o = packed_rows(o, q0, q0 + lq);
      if (lse != nullptr) s.lse = packed_lse_rows(*lse, q0, lq);
      seqs.push_back(std::move(s));
    }
    layout_text = "varlen: " + std::to_string(vl.num_sequences()) +
                  " sequences (seq_len_q, seq_len_k above are total_q, total_k); batch index "
                  "= sequence, row = row within it (a key row for dk, dv)";
  } else {
    CacheInputs in = cache_inputs(call);
    validate_cache_inputs(in);
    hq = in.q.dim(1);
    Tensor<double> o4 = o;
    require(o.shape == layout_o_shape(call), "candidate shape", shape_text(o.shape),
            "must be o's shape " + shape_text(layout_o_shape(call)));
    if (call.conv.bshd) o4 = swap_dims_1_2(o4);
    for (int64_t b = 0; b < in.q.dim(0); ++b) {
      Sequence s;
      s.index = b;
      s.q = batch_slice(in.q, b);
      s.no_keys = in.cache.seq_len_k(b) == 0;
      s.k = s.no_keys ? Tensor<double>({1, in.k.dim(1), 1, in.k.dim(3)}) : cache_rows(in.k, in.cache, b);
      s.v = s.no_keys ? Tensor<double>({1, in.v.dim(1), 1, in.v.dim(3)}) : cache_rows(in.v, in.cache, b);
      s.o = batch_slice(o4, b);
      if (lse != nullptr) s.lse = batch_slice(*lse, b);
      seqs.push_back(std::move(s));
    }
    layout_text = std::string(in.cache.paged() ? "paged KV" : "KV cache") + ": batch " +
                  std::to_string(in.q.dim(0)) + " (seq_len_k above is the capacity " +
                  std::to_string(in.cache.capacity()) + "); each element's rows read against its "
                  "filled slots cache_seqlens[b]";
  }
  require(lse == nullptr || lse->shape == layout_lse_shape(call), "candidate-lse shape",
          lse == nullptr ? "" : shape_text(lse->shape),
          "must be " + shape_text(layout_lse_shape(call)));

  // Each sequence against its own oracle; the report of the worst one carries the merge.
  std::vector<CheckResult> parts;
  std::vector<int64_t> index;
  for (const Sequence& s : seqs) {
    const PatternSpec spec = s.no_keys ? no_key_spec(s.q.dim(2)) : call.spec;
    const Pattern pattern = sequence_pattern(spec, hq, s.q.dim(2), s.k.dim(2));
    const ScoreMods mods = sequence_mods(call.mods, s.index);
    Conventions conv;
    conv.lse_base2 = call.conv.lse_base2;
    const AttentionResult oracle = convention_oracle(s.q, s.k, s.v, pattern, call.scale_ptr(), conv, &mods);
    CheckContext ctx;
    ctx.q = &s.q, ctx.k = &s.k, ctx.v = &s.v, ctx.scale = call.scale_ptr();
    ctx.conv = conv;
    ctx.raw_spec = &spec;
    ctx.probes = probes;
    ctx.hint = false;  // the convention hint re-reads whole tensors: not per sequence
    ctx.mods = &mods;
    const AttentionShape shape = attention_shape(s.q.shape, s.k.shape, s.v.shape, KvHeads::grouped);
    parts.push_back(check_against(oracle, pattern, shape, s.o, o_tol,
                                  lse != nullptr ? &s.lse : nullptr, lse_tol, ctx));
    index.push_back(s.index);
  }
  if (parts.empty()) {  // every sequence empty: nothing to compare, which fails (§4.9)
    CheckResult r;
    r.oracle = "a1_dense_masked";
    r.pattern = describe(call.spec);
    r.layout = layout_text;
    r.conventions = call.conv.describe();
    r.shape.batch = call.layout.varlen ? call.layout.varlen->num_sequences() : call.q.dim(0);
    r.shape.num_heads = hq;
    r.shape.num_kv_heads = call.k.rank() >= 2 ? call.k.dim(1) : hq;
    r.shape.head_dim = call.q.shape.back();
    r.shape.head_dim_v = call.v.shape.back();
    r.o.tensor = "o";
    r.o.nothing_compared = true;
    r.o.reason = "nothing compared: every sequence is empty (contract §4.9)";
    if (lse != nullptr) {
      r.lse = r.o;
      r.lse->tensor = "lse";
    }
    r.pass = false;
    return r;
  }
  size_t worst = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool fails = !parts[i].pass, worst_fails = !parts[worst].pass;
    if ((fails && !worst_fails) ||
        (fails == worst_fails && parts[i].o.error_over_tolerance > parts[worst].o.error_over_tolerance))
      worst = i;
  }
  CheckResult r = parts[worst];
  relocate_tensor(r.o, index[worst]);
  if (r.lse) relocate_tensor(*r.lse, index[worst]);
  // The probes ran on the sequence as a batch of one: their batch 0 is this sequence.
  rebatch_json(r.probes, index[worst]);
  for (std::string* s : {&r.probable_cause, &r.o.probable_cause}) {
    rebatch_text(*s, index[worst]);
    // A layout aligns every sequence bottom-right; the flag the probe names is refused there.
    const std::string flag = "--causal-align top-left";
    if (s->find(flag) != std::string::npos)
      *s += " — the candidate aligns each sequence's causal diagonal top-left; under a layout "
            "every sequence is aligned bottom-right (contract §2.10-§2.11), so the candidate "
            "is wrong, not a convention";
  }
  std::vector<std::pair<int64_t, const TensorReport*>> o_parts, lse_parts;
  for (size_t i = 0; i < parts.size(); ++i) {
    o_parts.emplace_back(index[i], &parts[i].o);
    if (parts[i].lse) lse_parts.emplace_back(index[i], &*parts[i].lse);
  }
  merge_tensor(r.o, o_parts);
  if (r.lse) merge_tensor(*r.lse, lse_parts);
  r.pattern = describe(call.spec);
  r.layout = layout_text;
  // The header's sizes: the layout's totals (a packed batch) or the cache's capacity, which
  // `layout` says; no single sequence's lengths.
  if (call.layout.varlen) {
    r.shape.batch = call.layout.varlen->num_sequences();
    r.shape.seq_len_q = call.layout.varlen->total_q();
    r.shape.seq_len_k = call.layout.varlen->total_k();
  } else {
    const Shape q = cache_q_bhsd(call);
    const Shape k = as_rank4(call.k.shape, "k");
    const int64_t slots = call.conv.bshd ? k[1] : k[2];  // L_cache, or page_size of the pools
    r.shape.batch = q[0];
    r.shape.seq_len_q = q[2];
    r.shape.seq_len_k = call.layout.cache->paged() ? call.layout.cache->max_pages * slots : slots;
  }
  r.pass = r.o.pass && (!r.lse || r.lse->pass);
  if (r.pass) r.probable_cause.clear();
  if (grads != nullptr) judge_varlen_gradients(call, *grads, probes, r);
  return r;
}

}  // namespace sparseattn::api
