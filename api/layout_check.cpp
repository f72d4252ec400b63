#include "api/layout_check.h"

#include <algorithm>
#include <functional>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "api/inputs.h"
#include "api/results.h"
#include "core/error.h"
#include "core/field.h"
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

GradOutput attend_layout_grad(const GradKernel& grad, const LayoutCall& call,
                              const Tensor<double>& dout) {
  require_field(!call.layout.cache, Field::cache_seqlens, "", "given",
                "must not be given with a gradient of o (dout): decoding against a cache is "
                "forward only (contract §2.11)");
  return attend_varlen_grad(grad, varlen_inputs(call), dout);
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
                         const Tensor<double>* lse, Tolerance lse_tol, const ProbeOptions& probes) {
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
                  "= sequence, row = row within it";
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
  auto relocate = [&](TensorReport& t) {  // the worst element's batch index is its sequence
    if (!t.worst_index.empty()) t.worst_index[0] = index[worst];
    if (t.worst_row) t.worst_row->batch = index[worst];
    if (t.first_nonfinite && !t.first_nonfinite->index.empty())
      t.first_nonfinite->index[0] = index[worst];
    if (!t.pass && !t.reason.empty())
      t.reason = "sequence " + std::to_string(index[worst]) + ": " + t.reason;
  };
  relocate(r.o);
  if (r.lse) relocate(*r.lse);
  // The probes ran on the sequence as a batch of one: their batch 0 is this sequence.
  const std::string seq = std::to_string(index[worst]);
  std::function<void(nlohmann::json&)> rebatch = [&](nlohmann::json& j) {
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() == "batch" && it->is_number_integer()) *it = index[worst];
        else if (it->is_string()) {
          std::string s = *it;
          for (size_t at = s.find("(batch 0,"); at != std::string::npos; at = s.find("(batch 0,", at + 1))
            s.replace(at, 9, "(batch " + seq + ",");
          *it = s;
        } else rebatch(*it);
      }
    } else if (j.is_array()) {
      for (nlohmann::json& x : j) rebatch(x);
    }
  };
  rebatch(r.probes);
  for (std::string* s : {&r.probable_cause, &r.o.probable_cause}) {
    for (size_t at = s->find("(batch 0,"); at != std::string::npos; at = s->find("(batch 0,", at + 1))
      s->replace(at, 9, "(batch " + seq + ",");
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
  return r;
}

}  // namespace sparseattn::api
