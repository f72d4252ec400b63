// sparseattn check — compares another implementation's output with the float64 oracle.
//
//   sparseattn check --q Q.npy --k K.npy --v V.npy --candidate O.npy
//                    [--candidate-lse L.npy] [--atol A --rtol R] [--scale S] [pattern flags]
//                    [--dout DO.npy [--candidate-dq DQ.npy] [--candidate-dk DK.npy]
//                                   [--candidate-dv DV.npy] [--candidate-dsinks DS.npy]]
//
// The oracle is a1_dense_masked (contract §4) on the same q/k/v files; under the
// compatibility flags (contract §3.12: --compat hf-bigbird, --global-mask, --q-global
// --k-global --v-global, --attention-window) it is that mode's float64 definition. Each candidate tensor
// is judged by core/check.h's one checker with the tolerance of its file's dtype from
// core/numerics.h (float64 1e-12/1e-12, float32 2e-5/2e-4, float16 2e-3/2e-3) unless
// --atol/--rtol are given. Prints one JSON object to stdout; exit 0 when every checked
// tensor passes, 1 when one fails, 2 for bad input (a wrong-shaped candidate is bad input).
// Gradients (contract §7, docs/backward.md): given dO, candidate dq, dk, dv are judged against
// the float64 gradient oracle b1_dense_masked_grad the same way, each under its own key
// ("dq", "dk", "dv") with the report shape of "o". Under a finite --masked-score or the
// compatibility flags the reference is that convention's gradient definition (contract
// §7.4–§7.6: masked_score_grad, hf_listing_grad, longformer_compat_grad, named in
// "gradient_oracle"); with the global projections --candidate-dq-global etc. are judged
// too, under "dq_global", "dk_global", "dv_global". With --sinks, --candidate-dsinks judges
// the sinks' gradient dσ [H_q] against b1's (contract §7.7), under "dsinks" (rows per head).
// A failing report locates and explains (contract §4.9): failing rows per (batch, head),
// the worst row against its allowed keys, non-finite values as strings, probable_cause
// from re-running the oracle's rows under the usual mistakes (api/probes.h; --probes,
// --probe-budget; failing gradients: api/gradient_probes.h); --format text prints a summary
// (api/check_render.h, the same text as Python's CheckReport.summary()). A tensor of which
// nothing is compared (every row skipped) fails. --tolerance-rule reference-error judges o
// and lse only and is refused with --dout. Under --cu-seqlens-q/-k (contract §7.8) --dout and
// the candidates are packed like o, q, k, v and each sequence's rows are judged against b1 on
// that sequence alone, the report naming the sequence (api/layout_check.h); under a cache
// (--cache-seqlens, --block-table) gradients are refused. A shape error that a convention explains (a
// forgotten --layout bshd, grouped-query attention) says so (api/shape_hint.h).
// Convention flags (contract §1.6): --layout, --lse-base, --padded-queries,
// --key-padding-polarity, --causal-align, --masked-score, --padding-align (§2.6). --tolerance-rule
// reference-error --factor F judges against a naive low-precision run (contract §4.10).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "api/check_render.h"
#include "cli/commands.h"
#include "api/compat_flags.h"
#include "api/conventions.h"
#include "api/inputs.h"
#include "api/layout_check.h"
#include "api/layout_flags.h"
#include "api/padding_align.h"
#include "api/probes.h"
#include "api/results.h"
#include "api/score_flags.h"
#include "cli/presets.h"
#include "api/shape_hint.h"
#include "core/check.h"
#include "core/error.h"
#include "core/npy.h"
#include "reference/attention.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

struct CheckArgs {
  std::string q, k, v, candidate, candidate_lse;
  std::string dout, candidate_dq, candidate_dk, candidate_dv;  // gradients
  std::string candidate_dq_global, candidate_dk_global, candidate_dv_global;  // of --q-global ...
  std::string candidate_dsinks;  // of --sinks (contract §7.7)
  std::string atol, rtol, scale;  // text: parsed by parse_finite
  PatternFlags pattern;
  ConventionFlags conventions;
  std::string format = "json";
  std::string tolerance_rule = "table", factor = "2", floor = "1e-6", naive_dtype;
  CompatFlags compat;  // contract §3.12
  std::string probes = "auto", probe_budget = "5";  // api/probes.h
  ScoreFlags score;  // contract §2.8-§2.9
  PresetLayerFlags preset;  // --preset NAME --layer L (contract §6.4, cli/presets.h)
  LayoutFlags layout;  // --cu-seqlens-q/-k, --cache-seqlens, --block-table (contract §2.10-§2.12)
  CLI::App* cmd = nullptr;
};

Tolerance tolerance_of_file(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::float64: return tolerance_for(CandidateDtype::float64);
    case NpyDtype::float32: return tolerance_for(CandidateDtype::float32);
    default: return tolerance_for(CandidateDtype::float16);  // read_npy_float admits only float16 besides these
  }
}

// Reads a candidate and checks its shape against the oracle's (leading 1s may be omitted,
// as in contract §1). Returns the tolerance its dtype calls for, overridden by the flags.
Tensor<double> read_candidate(const std::string& path, const std::string& flag,
                              const Shape& want, const CheckArgs& a, Tolerance* tol) {
  Tensor<double> c = read_npy_float(path, flag);
  require_candidate_shape(c.shape, want, flag);
  *tol = tolerance_of_file(read_npy_header(path, flag).dtype);
  if (!a.atol.empty()) tol->atol = parse_finite("--atol", a.atol, 0.0);
  if (!a.rtol.empty()) tol->rtol = parse_finite("--rtol", a.rtol, 0.0);
  return c;
}

// A bshd candidate [B, L, H, d] (leading 1s may be omitted) as bhsd [B, H, L, d].
Tensor<double> to_bhsd(Tensor<double> x, const Shape& bhsd) {
  x.shape = {bhsd[0], bhsd[2], bhsd[1], bhsd[3]};
  return swap_dims_1_2(x);
}
Shape bshd_of(const Shape& bhsd) { return {bhsd[0], bhsd[2], bhsd[1], bhsd[3]}; }

// Packed batches, caches and paged KV (contract §2.10–§2.12): every sequence against its own
// oracle, one report (api/layout_check.h).
void run_check_layout(const CheckArgs& a, const Conventions& conv, const ProbeOptions& probes) {
  require(a.tolerance_rule == "table", "--tolerance-rule", a.tolerance_rule,
          "must be table with a sequence layout (contract §2.10-§2.12)");
  // Gradients (contract §7.8): each candidate needs --dout, --dout at least one candidate;
  // a packed batch only (require_layout_backward refuses a cache by name).
  const bool backward = !a.dout.empty();
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"--candidate-dq-global", a.candidate_dq_global},
        {"--candidate-dk-global", a.candidate_dk_global},
        {"--candidate-dv-global", a.candidate_dv_global}})
    require(path.empty(), flag, path,
            "must not be given with a sequence layout: the global projections are a "
            "compatibility mode's (contract §3.12), refused there");
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"--candidate-dq", a.candidate_dq},
        {"--candidate-dk", a.candidate_dk}, {"--candidate-dv", a.candidate_dv},
        {"--candidate-dsinks", a.candidate_dsinks}})
    require(path.empty() || backward, flag, path, "needs --dout DO.npy (the gradient of o)");
  require(!backward || !a.candidate_dq.empty() || !a.candidate_dk.empty() ||
              !a.candidate_dv.empty() || !a.candidate_dsinks.empty(),
          "--dout", a.dout,
          "asks for gradient checks: give at least one of --candidate-dq, --candidate-dk, "
          "--candidate-dv");
  const LayoutCall call = layout_call_from_files(a.q, a.k, a.v, a.layout, a.pattern, conv,
                                                 compat_requested(a.compat), a.scale, a.score);
  if (backward) require_layout_backward(call.layout);  // before reading any candidate
  require(a.candidate_dsinks.empty() || call.mods.has_sinks(), "--candidate-dsinks",
          a.candidate_dsinks, "needs --sinks S.npy (the logits it is the gradient of)");
  Tolerance o_tol{}, lse_tol{};
  Tensor<double> o = read_candidate(a.candidate, "--candidate", layout_o_shape(call), a, &o_tol);
  o.shape = layout_o_shape(call);
  Tensor<double> lse;
  if (!a.candidate_lse.empty()) {
    lse = read_candidate(a.candidate_lse, "--candidate-lse", layout_lse_shape(call), a, &lse_tol);
    lse.shape = layout_lse_shape(call);
  }
  // Packed like their inputs: dout like o, dq like q, dk like k, dv like v (contract §7.8).
  Tensor<double> dout, dq, dk, dv, dsinks;
  LayoutGradients grads;
  if (backward) {
    const LayoutGradShapes want = layout_grad_shapes(call);
    auto read = [&](const std::string& path, const char* flag, const Shape& shape,
                    Tensor<double>& x, GradientCandidate* c) {
      if (path.empty()) return;
      Tolerance tol{};
      x = read_candidate(path, flag, shape, a, &tol);
      x.shape = shape;
      if (c != nullptr) *c = {&x, tol};
    };
    read(a.dout, "--dout", want.dout, dout, nullptr);
    require_finite(dout, "--dout");
    grads.dout = &dout;
    read(a.candidate_dq, "--candidate-dq", want.dq, dq, &grads.dq);
    read(a.candidate_dk, "--candidate-dk", want.dk, dk, &grads.dk);
    read(a.candidate_dv, "--candidate-dv", want.dv, dv, &grads.dv);
    read(a.candidate_dsinks, "--candidate-dsinks", want.dsinks, dsinks, &grads.dsinks);
  }
  const CheckResult r = check_layout(call, o, o_tol, a.candidate_lse.empty() ? nullptr : &lse,
                                     lse_tol, probes, backward ? &grads : nullptr);
  if (a.format == "text") {
    std::cout << check_text(r);
  } else {
    std::cout << check_json(r).dump(2) << "\n";
    if (!r.pass) std::cerr << check_text(r);
  }
  exit_code_ref() = r.pass ? 0 : 1;
}

void run_check(const CheckArgs& args) {
  CheckArgs a = args;  // --preset fills the pattern, scale and softcap
  require(a.format == "json" || a.format == "text", "--format", a.format, "must be json or text");
  // A packed batch [total, heads, d] reads its heads where bshd does.
  apply_preset_call(a.cmd, a.preset, a.pattern, a.scale, a.score, a.q, a.k, a.v,
                    a.conventions.layout == "bshd" || !a.layout.cu_seqlens_q.empty());
  const Conventions conv = parse_conventions(a.conventions);
  require(a.tolerance_rule == "table" || a.tolerance_rule == "reference-error",
          "--tolerance-rule", a.tolerance_rule, "must be table or reference-error");
  ToleranceRule rule;
  rule.factor = parse_finite("--factor", a.factor, 1.0);
  rule.floor = parse_finite("--floor", a.floor, 0.0);
  if (!a.naive_dtype.empty()) {
    require(a.naive_dtype == "float32" || a.naive_dtype == "float16" || a.naive_dtype == "bfloat16",
            "--naive-dtype", a.naive_dtype, "must be float32, float16 or bfloat16");
    rule.dtype = a.naive_dtype == "float32"   ? LowDtype::float32
                 : a.naive_dtype == "float16" ? LowDtype::float16
                                              : LowDtype::bfloat16;
  } else {
    const NpyDtype fd = read_npy_header(a.candidate, "--candidate").dtype;
    rule.dtype = fd == NpyDtype::float16 ? LowDtype::float16 : LowDtype::float32;
  }
  const bool by_reference = a.tolerance_rule == "reference-error";
  PatternFlags pattern_flags = a.pattern;
  apply_attention_window(a.compat, pattern_flags);
  const bool compat = compat_requested(a.compat);
  require(!compat || !by_reference, "--tolerance-rule", a.tolerance_rule,
          "must be table under the compatibility flags (the naive run is the normal pattern's)");
  require(!by_reference || a.dout.empty(), "--tolerance-rule", a.tolerance_rule,
          "judges o and lse only (its yardstick is a naive forward pass): with --dout, use "
          "--tolerance-rule table (contract §4.10)");
  require(!compat || !conv.masked_score, "--masked-score", a.conventions.masked_score,
          "must be -inf under the compatibility flags (their definitions remove masked keys)");
  require(!compat || !conv.padding_align_valid, "--padding-align", a.conventions.padding_align,
          "must be full under the compatibility flags (their definitions are HF's, contract §3.12)");
  double scale = 0.0;
  if (!a.scale.empty()) scale = parse_finite("--scale", a.scale, -INFINITY);
  const double* scale_ptr = a.scale.empty() ? nullptr : &scale;
  const ProbeOptions probe_options = parse_probe_options(
      a.probes, parse_finite("--probe-budget", a.probe_budget, 0.0), "--probes", "--probe-budget");
  if (a.layout.requested()) {
    run_check_layout(a, conv, probe_options);
    return;
  }

  // Inputs, then candidates (their shapes checked before the oracle's O(n^2) work), under
  // the layout `c` names. A shape error that another layout or grouped-query attention
  // explains says so (api/shape_hint.h).
  AttentionInputs in;
  Tensor<double> o, lse;
  Tolerance o_tol{}, lse_tol{};
  auto load = [&](const Conventions& c) {
    in = load_inputs_with(a.q, a.k, a.v, pattern_flags, c);
    const Shape o_shape = {in.shape.batch, in.shape.num_heads, in.shape.seq_len_q,
                           in.shape.head_dim_v};
    const Shape lse_shape = {in.shape.batch, in.shape.num_heads, in.shape.seq_len_q};
    o = read_candidate(a.candidate, "--candidate", c.bshd ? bshd_of(o_shape) : o_shape, a, &o_tol);
    if (c.bshd) o = to_bhsd(std::move(o), o_shape);
    if (!a.candidate_lse.empty())
      lse = read_candidate(a.candidate_lse, "--candidate-lse", lse_shape, a, &lse_tol);
  };
  try {
    load(conv);
  } catch (const InvalidArgument& e) {
    std::string hint;
    try {
      auto bhsd = [&](const std::string& path, const char* flag) {
        const Shape s = as_rank4(read_npy_header(path, flag).shape, flag);
        return conv.bshd ? Shape{s[0], s[2], s[1], s[3]} : s;
      };
      Conventions other = conv;
      other.bshd = !conv.bshd;
      hint = shape_error_hint(e, bhsd(a.q, "--q"), bhsd(a.k, "--k"), bhsd(a.v, "--v"),
                              [&] { load(other); },
                              other.bshd ? "--layout bshd" : "--layout bhsd", other.bshd);
    } catch (const std::exception&) {  // the files themselves are the problem: no hint
    }
    throw_with_hint(e, hint);
  }
  const ScoreMods mods = to_score_mods(a.score, in.shape);
  require_combinable(in.shape, mods, conv, compat, Spelling::flag);
  require(!by_reference || (!mods.any() && in.shape.num_kv_heads == in.shape.num_heads),
          "--tolerance-rule", a.tolerance_rule,
          "must be table with grouped-query heads, --softcap, --alibi-slopes or --sinks (its "
          "naive run is plain attention)");
  if (conv.padding_align_valid && !compat) valid_counts(in.pattern);  // refused before any work
  const Shape o_shape = {in.shape.batch, in.shape.num_heads, in.shape.seq_len_q,
                         in.shape.head_dim_v};

  // Gradient candidates: each needs --dout; --dout needs at least one of them.
  const bool backward = !a.dout.empty();
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--candidate-dq", a.candidate_dq},
                                   {"--candidate-dk", a.candidate_dk}, {"--candidate-dv", a.candidate_dv},
                                   {"--candidate-dq-global", a.candidate_dq_global},
                                   {"--candidate-dk-global", a.candidate_dk_global},
                                   {"--candidate-dv-global", a.candidate_dv_global},
                                   {"--candidate-dsinks", a.candidate_dsinks}})
    require(path.empty() || backward, flag, path, "needs --dout DO.npy (the gradient of o)");
  require(a.candidate_dsinks.empty() || mods.has_sinks(), "--candidate-dsinks", a.candidate_dsinks,
          "needs --sinks S.npy (the logits it is the gradient of)");
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--candidate-dq-global", a.candidate_dq_global},
                                   {"--candidate-dk-global", a.candidate_dk_global},
                                   {"--candidate-dv-global", a.candidate_dv_global}})
    require(path.empty() || !a.compat.q_global.empty(), flag, path,
            "needs --q-global, --k-global and --v-global (the projections it is the gradient of)");
  require(!backward || !a.candidate_dq.empty() || !a.candidate_dk.empty() || !a.candidate_dv.empty() ||
              !a.candidate_dq_global.empty() || !a.candidate_dk_global.empty() ||
              !a.candidate_dv_global.empty() || !a.candidate_dsinks.empty(),
          "--dout", a.dout,
          "asks for gradient checks: give at least one of --candidate-dq, --candidate-dk, --candidate-dv");
  const AttentionShape& sh = in.shape;
  struct GradCandidate {
    const char* name;
    std::string path;
    Shape shape;
    Tensor<double> x;
    Tolerance tol{};
  };
  const Shape q_shape = {sh.batch, sh.num_heads, sh.seq_len_q, sh.head_dim},
              k_shape = {sh.batch, sh.num_kv_heads, sh.seq_len_k, sh.head_dim},
              v_shape = {sh.batch, sh.num_kv_heads, sh.seq_len_k, sh.head_dim_v};
  std::vector<GradCandidate> grads = {
      {"dq", a.candidate_dq, q_shape, {}, {}},
      {"dk", a.candidate_dk, k_shape, {}, {}},
      {"dv", a.candidate_dv, v_shape, {}, {}},
      {"dq_global", a.candidate_dq_global, q_shape, {}, {}},  // shaped like q_global = q
      {"dk_global", a.candidate_dk_global, k_shape, {}, {}},
      {"dv_global", a.candidate_dv_global, v_shape, {}, {}}};
  GradCandidate dsinks{"dsinks", a.candidate_dsinks, {sh.num_heads}, {}, {}};
  Tensor<double> dout;
  if (backward) {
    Tolerance unused{};
    dout = read_candidate(a.dout, "--dout", conv.bshd ? bshd_of(o_shape) : o_shape, a,
                          &unused);  // shape checked like o's
    require_finite(dout, "--dout");
    dout = conv.bshd ? to_bhsd(std::move(dout), o_shape) : dout;
    dout.shape = o_shape;
    for (GradCandidate& g : grads) {
      if (g.path.empty()) continue;
      std::string flag = std::string("--candidate-") + g.name;
      std::replace(flag.begin(), flag.end(), '_', '-');  // dq_global -> --candidate-dq-global
      g.x = read_candidate(g.path, flag,
                           conv.bshd ? bshd_of(g.shape) : g.shape, a, &g.tol);
      if (conv.bshd) g.x = to_bhsd(std::move(g.x), g.shape);
    }
    if (!a.candidate_dsinks.empty())  // [H_q] in every layout
      dsinks.x = read_candidate(a.candidate_dsinks, "--candidate-dsinks", dsinks.shape, a,
                                &dsinks.tol);
  }

  PatternSpec raw = to_spec(pattern_flags);  // before canonicalization: the layout probe re-sizes it
  if (conv.key_padding_ignore && raw.key_padding_mask)
    for (uint8_t& m : raw.key_padding_mask->data) m = m ? 0 : 1;
  CheckContext ctx;
  ctx.q = &in.q, ctx.k = &in.k, ctx.v = &in.v, ctx.scale = scale_ptr;
  ctx.conv = conv, ctx.raw_spec = &raw, ctx.rule = by_reference ? &rule : nullptr;
  ctx.compat = compat;
  ctx.probes = probe_options;
  // The convention hint names a peer convention's flags: not when they were given.
  ctx.hint = a.compat.compat.empty() && a.compat.q_global.empty();
  Tensor<uint8_t> gm;
  if (!a.compat.global_mask.empty()) {
    gm = read_npy_mask(a.compat.global_mask, "--global-mask");
    ctx.global_mask = &gm;
  }
  // Under a compatibility mode the oracle is that mode's float64 definition (contract §3.12),
  // its lse in the base --lse-base names; otherwise convention_oracle's.
  AttentionResult oracle;
  CompatRequest request;
  if (compat) {
    request = read_compat(a.compat, conv.bshd);
    oracle = compat_attend(request, in, scale_ptr, "a1_dense_masked");
    if (conv.lse_base2)
      for (double& x : oracle.lse.data) x /= std::log(2.0);
  } else {
    oracle = convention_oracle(in.q, in.k, in.v, in.pattern, scale_ptr, conv, &mods);
  }
  ctx.mods = &mods;
  CheckResult r = check_against(oracle, in.pattern, in.shape, o, o_tol,
                                a.candidate_lse.empty() ? nullptr : &lse, lse_tol, ctx);
  r.compat = a.compat.compat;
  r.global_mask = a.compat.global_mask;
  r.global_projections = !a.compat.q_global.empty();
  if (backward) {  // the gradient definition of these conventions (contract §7)
    const ReferenceGradients ref =
        reference_gradients(in, scale_ptr, conv, compat ? &request : nullptr, dout, &mods);
    const Tensor<double>* refs[6] = {&ref.g.dq, &ref.g.dk, &ref.g.dv,
                                     &ref.g.dq_global, &ref.g.dk_global, &ref.g.dv_global};
    std::vector<NamedGradientCandidate> named;
    for (size_t t = 0; t < grads.size(); ++t)
      named.push_back({grads[t].name, refs[t],
                       {grads[t].path.empty() ? nullptr : &grads[t].x, grads[t].tol}});
    named.push_back({"dsinks", &ref.g.dsinks,
                     {dsinks.path.empty() ? nullptr : &dsinks.x, dsinks.tol}});
    const GradientInputs probe_inputs{in.q, in.k, in.v, dout, scale_ptr, probe_options};
    // The gradient probes re-run b1 on the spec's pattern: not under --padding-align valid
    // (contract §2.6), where the worst rows are restated for each batch element instead.
    // The gradient probes re-run plain b1: not with grouped heads or score modifiers.
    const bool modern = mods.any() || sh.num_kv_heads != sh.num_heads;
    check_gradients_against(r, ref.oracle, named, in.pattern,
                            conv.padding_align_valid || modern ? nullptr : &probe_inputs);
    if (conv.padding_align_valid) restate_worst_rows(r, in.pattern);
  }
  const bool pass = r.pass;
  if (a.format == "text") {
    std::cout << check_text(r);
  } else {
    std::cout << check_json(r).dump(2) << "\n";
    if (!pass) std::cerr << check_text(r);  // the human summary of a failure
  }
  exit_code_ref() = pass ? 0 : 1;
}

}  // namespace

void register_check(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "compare a candidate o (and lse) with the float64 oracle; JSON report; exit 0 pass, 1 fail");
  cmd->add_option("--q", args->q, "Q.npy: queries [batch, num_heads, seq_len_q, head_dim]")
      ->required();
  cmd->add_option("--k", args->k,
                  "K.npy: keys [batch, num_kv_heads, seq_len_k, head_dim]; num_kv_heads divides "
                  "q's num_heads (grouped-query attention, contract §2.7)")
      ->required();
  cmd->add_option("--v", args->v, "V.npy: values [batch, num_kv_heads, seq_len_k, head_dim_v]")
      ->required();
  cmd->add_option("--candidate", args->candidate,
                  "O.npy: the output to judge, [batch, num_heads, seq_len_q, head_dim_v] (with "
                  "--cu-seqlens-q packed [total_q, num_heads, head_dim_v]), float16/32/64 (its "
                  "dtype picks the tolerance)")
      ->required();
  cmd->add_option("--candidate-lse", args->candidate_lse,
                  "L.npy: its lse [batch, num_heads, seq_len_q] (with --cu-seqlens-q [num_heads, "
                  "total_q], FlashAttention's varlen layout); -inf expected on fully masked rows");
  cmd->add_option("--atol", args->atol,
                  "A: absolute tolerance, finite >= 0; default from docs/numerics.md by dtype");
  cmd->add_option("--rtol", args->rtol,
                  "R: relative tolerance, finite >= 0; default from docs/numerics.md by dtype");
  cmd->add_option("--scale", args->scale, "S: score scale, finite real; default 1/sqrt(head_dim)");
  cmd->add_option("--dout", args->dout,
                  "DO.npy: gradient of the loss w.r.t. o, o's shape, finite; enables the "
                  "gradient checks against b1_dense_masked_grad (with --cu-seqlens-q packed "
                  "[total_q, num_heads, head_dim_v] like o, the candidates packed like q, k, v; "
                  "contract §7.8; refused with --cache-seqlens)");
  cmd->add_option("--candidate-dq", args->candidate_dq,
                  "DQ.npy: dq to judge, q's shape [batch, num_heads, seq_len_q, head_dim]; needs --dout");
  cmd->add_option("--candidate-dk", args->candidate_dk,
                  "DK.npy: dk to judge, k's shape [batch, num_kv_heads, seq_len_k, head_dim]; needs --dout");
  cmd->add_option("--candidate-dv", args->candidate_dv,
                  "DV.npy: dv to judge, v's shape [batch, num_kv_heads, seq_len_k, head_dim_v]; needs --dout");
  cmd->add_option("--candidate-dq-global", args->candidate_dq_global,
                  "DQG.npy: gradient of --q-global to judge (its shape); needs --dout and the "
                  "global projections (contract §7.5)");
  cmd->add_option("--candidate-dk-global", args->candidate_dk_global,
                  "DKG.npy: gradient of --k-global to judge (its shape); needs --dout");
  cmd->add_option("--candidate-dv-global", args->candidate_dv_global,
                  "DVG.npy: gradient of --v-global to judge (its shape); needs --dout");
  cmd->add_option("--candidate-dsinks", args->candidate_dsinks,
                  "DS.npy: the sinks' gradient to judge, [num_heads] (contract §7.7); needs "
                  "--dout and --sinks");
  cmd->add_option("--format", args->format,
                  "json (default): the report as JSON on stdout, a summary of a failure on "
                  "stderr; text: the human summary on stdout");
  cmd->add_option("--tolerance-rule", args->tolerance_rule,
                  "table (default): atol + rtol*|ref| by the candidate's dtype (docs/numerics.md); "
                  "reference-error: pass when the candidate's max and mean error are at most "
                  "--factor times a naive implementation's in --naive-dtype, plus --floor (o and "
                  "lse only: refused with --dout)");
  cmd->add_option("--factor", args->factor, "F for --tolerance-rule reference-error, >= 1; default 2");
  cmd->add_option("--floor", args->floor,
                  "absolute error floor for --tolerance-rule reference-error, >= 0; default 1e-6");
  cmd->add_option("--probes", args->probes,
                  "auto (default): the cause probes run within --probe-budget; always: every "
                  "probe on every failing row, no budget; never: none (contract §4.9)");
  cmd->add_option("--probe-budget", args->probe_budget,
                  "SECONDS: wall-clock budget of the cause probes, finite > 0; default 5");
  cmd->add_option("--naive-dtype", args->naive_dtype,
                  "float32 | float16 | bfloat16: the naive implementation's precision; default "
                  "the candidate file's dtype (bfloat16 values arrive in a float32 file)");
  add_pattern_flags(cmd, args->pattern);
  add_convention_flags(cmd, args->conventions);
  add_compat_flags(cmd, args->compat);
  add_score_flags(cmd, args->score);
  add_layout_flags(cmd, args->layout);
  add_preset_layer_flags(cmd, args->preset,
                         "the pattern flags, --scale and --softcap (q, k, v must have its heads "
                         "and head_dim)");
  args->cmd = cmd;
  cmd->callback([args] { run_check(*args); });
}

}  // namespace sparseattn::cli
