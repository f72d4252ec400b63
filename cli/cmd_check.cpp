// sparseattn check — compares another implementation's output with the float64 oracle.
//
//   sparseattn check --q Q.npy --k K.npy --v V.npy --candidate O.npy
//                    [--candidate-lse L.npy] [--atol A --rtol R] [--scale S] [pattern flags]
//                    [--dout DO.npy [--candidate-dq DQ.npy] [--candidate-dk DK.npy]
//                                   [--candidate-dv DV.npy]]
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
// ("dq", "dk", "dv") with the report shape of "o".
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/compat_flags.h"
#include "cli/convention_hint.h"
#include "cli/inputs.h"
#include "cli/results.h"
#include "core/check.h"
#include "core/error.h"
#include "core/npy.h"
#include "reference/attention.h"

namespace sparseattn::cli {

namespace {

struct CheckArgs {
  std::string q, k, v, candidate, candidate_lse;
  std::string dout, candidate_dq, candidate_dk, candidate_dv;  // gradients
  std::string atol, rtol, scale;  // text: parsed by parse_finite
  PatternFlags pattern;
  CompatFlags compat;  // contract §3.12
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

void run_check(const CheckArgs& a) {
  PatternFlags pattern_flags = a.pattern;
  apply_attention_window(a.compat, pattern_flags);
  const bool compat = compat_requested(a.compat);
  require(!compat || a.dout.empty(), "--dout", a.dout,
          "gradients are not available under the compatibility flags (contract §3.12)");
  AttentionInputs in = load_attention_inputs(a.q, a.k, a.v, pattern_flags);
  double scale = 0.0;
  if (!a.scale.empty()) scale = parse_finite("--scale", a.scale, -INFINITY);
  const double* scale_ptr = a.scale.empty() ? nullptr : &scale;

  // Candidates are read (and their shapes checked) before the oracle's O(n^2) work.
  const Shape o_shape = {in.shape.batch, in.shape.num_heads, in.shape.seq_len_q,
                         in.shape.head_dim_v};
  const Shape lse_shape = {in.shape.batch, in.shape.num_heads, in.shape.seq_len_q};
  Tolerance o_tol{}, lse_tol{};
  const Tensor<double> o = read_candidate(a.candidate, "--candidate", o_shape, a, &o_tol);
  Tensor<double> lse;
  if (!a.candidate_lse.empty())
    lse = read_candidate(a.candidate_lse, "--candidate-lse", lse_shape, a, &lse_tol);

  // Gradient candidates: each needs --dout; --dout needs at least one of them.
  const bool backward = !a.dout.empty();
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--candidate-dq", a.candidate_dq},
                                   {"--candidate-dk", a.candidate_dk}, {"--candidate-dv", a.candidate_dv}})
    require(path.empty() || backward, flag, path, "needs --dout DO.npy (the gradient of o)");
  require(!backward || !a.candidate_dq.empty() || !a.candidate_dk.empty() || !a.candidate_dv.empty(),
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
  std::vector<GradCandidate> grads = {
      {"dq", a.candidate_dq, {sh.batch, sh.num_heads, sh.seq_len_q, sh.head_dim}, {}, {}},
      {"dk", a.candidate_dk, {sh.batch, sh.num_heads, sh.seq_len_k, sh.head_dim}, {}, {}},
      {"dv", a.candidate_dv, {sh.batch, sh.num_heads, sh.seq_len_k, sh.head_dim_v}, {}, {}}};
  Tensor<double> dout;
  if (backward) {
    dout = checked_dout(read_npy_float(a.dout, "--dout"), in.shape, "--dout");
    for (GradCandidate& g : grads)
      if (!g.path.empty()) g.x = read_candidate(g.path, std::string("--candidate-") + g.name, g.shape, a, &g.tol);
  }

  // Under a compatibility mode the oracle is that mode's float64 definition (contract §3.12).
  const AttentionResult oracle = compat ? compat_attend(a.compat, in, scale_ptr, "a1_dense_masked")
                                        : a1_dense_masked(in.q, in.k, in.v, in.pattern, scale_ptr);
  nlohmann::json j = check_against(oracle, in.pattern, in.shape, o, o_tol,
                                   a.candidate_lse.empty() ? nullptr : &lse, lse_tol);
  if (!a.compat.compat.empty()) j["compat"] = a.compat.compat;
  if (!a.compat.global_mask.empty()) j["global_mask"] = a.compat.global_mask;
  if (!a.compat.q_global.empty()) j["global_projections"] = true;
  // On failure, say which peer convention would explain it (not when the flags of that
  // convention were given: then there is nothing left to suggest).
  if (!j.at("o").at("pass").get<bool>() && a.compat.compat.empty() && a.compat.q_global.empty()) {
    Tensor<uint8_t> gm;
    if (!a.compat.global_mask.empty()) gm = read_npy_mask(a.compat.global_mask, "--global-mask");
    const std::string hint = convention_hint(in.pattern, o, oracle.o, o_tol,
                                             a.compat.global_mask.empty() ? nullptr : &gm);
    if (!hint.empty()) j["hint"] = hint;
  }
  if (backward)
    check_gradients_against_oracle(j, in.q, in.k, in.v, in.pattern, scale_ptr, dout,
                                   {grads[0].path.empty() ? nullptr : &grads[0].x, grads[0].tol},
                                   {grads[1].path.empty() ? nullptr : &grads[1].x, grads[1].tol},
                                   {grads[2].path.empty() ? nullptr : &grads[2].x, grads[2].tol});
  const bool pass = j.at("pass").get<bool>();
  std::cout << j.dump(2) << "\n";
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
  cmd->add_option("--k", args->k, "K.npy: keys [batch, num_heads, seq_len_k, head_dim]")->required();
  cmd->add_option("--v", args->v, "V.npy: values [batch, num_heads, seq_len_k, head_dim_v]")
      ->required();
  cmd->add_option("--candidate", args->candidate,
                  "O.npy: the output to judge, [batch, num_heads, seq_len_q, head_dim_v], "
                  "float16/32/64 (its dtype picks the tolerance)")
      ->required();
  cmd->add_option("--candidate-lse", args->candidate_lse,
                  "L.npy: its lse [batch, num_heads, seq_len_q]; -inf expected on fully masked rows");
  cmd->add_option("--atol", args->atol,
                  "A: absolute tolerance, finite >= 0; default from docs/numerics.md by dtype");
  cmd->add_option("--rtol", args->rtol,
                  "R: relative tolerance, finite >= 0; default from docs/numerics.md by dtype");
  cmd->add_option("--scale", args->scale, "S: score scale, finite real; default 1/sqrt(head_dim)");
  cmd->add_option("--dout", args->dout,
                  "DO.npy: gradient of the loss w.r.t. o, o's shape, finite; enables the "
                  "gradient checks against b1_dense_masked_grad");
  cmd->add_option("--candidate-dq", args->candidate_dq,
                  "DQ.npy: dq to judge, q's shape [batch, num_heads, seq_len_q, head_dim]; needs --dout");
  cmd->add_option("--candidate-dk", args->candidate_dk,
                  "DK.npy: dk to judge, k's shape [batch, num_heads, seq_len_k, head_dim]; needs --dout");
  cmd->add_option("--candidate-dv", args->candidate_dv,
                  "DV.npy: dv to judge, v's shape [batch, num_heads, seq_len_k, head_dim_v]; needs --dout");
  add_pattern_flags(cmd, args->pattern);
  add_compat_flags(cmd, args->compat);
  cmd->callback([args] { run_check(*args); });
}

}  // namespace sparseattn::cli
