// sparseattn check — compares another implementation's output with the float64 oracle.
//
//   sparseattn check --q Q.npy --k K.npy --v V.npy --candidate O.npy
//                    [--candidate-lse L.npy] [--atol A --rtol R] [--scale S] [pattern flags]
//
// The oracle is a1_dense_masked (contract §4) on the same q/k/v files. Each candidate tensor
// is judged by core/check.h's one checker with the tolerance of its file's dtype from
// core/numerics.h (float64 1e-12/1e-12, float32 2e-5/2e-4, float16 2e-3/2e-3) unless
// --atol/--rtol are given. Prints one JSON object to stdout; exit 0 when every checked
// tensor passes, 1 when one fails, 2 for bad input (a wrong-shaped candidate is bad input).
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "core/check.h"
#include "core/error.h"
#include "core/npy.h"
#include "reference/attention.h"

namespace sparseattn::cli {

namespace {

struct CheckArgs {
  std::string q, k, v, candidate, candidate_lse;
  std::string atol, rtol, scale;  // text: parsed by parse_finite
  PatternFlags pattern;
};

Tolerance tolerance_for(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::float64: return kTolFloat64;
    case NpyDtype::float32: return kTolFloat32;
    default: return kTolFloat16;  // read_npy_float admits only float16 besides these
  }
}

// Reads a candidate and checks its shape against the oracle's (leading 1s may be omitted,
// as in contract §1). Returns the tolerance its dtype calls for, overridden by the flags.
Tensor<double> read_candidate(const std::string& path, const std::string& flag,
                              const Shape& want, const CheckArgs& a, Tolerance* tol) {
  Tensor<double> c = read_npy_float(path, flag);
  Shape got = c.shape, expect = want;
  while (got.size() > 1 && got.front() == 1) got.erase(got.begin());
  while (expect.size() > 1 && expect.front() == 1) expect.erase(expect.begin());
  require(got == expect, flag + " shape", shape_text(c.shape),
          "must be " + shape_text(want) + " (leading 1s may be omitted)");
  *tol = tolerance_for(read_npy_header(path, flag).dtype);
  if (!a.atol.empty()) tol->atol = parse_finite("--atol", a.atol, 0.0);
  if (!a.rtol.empty()) tol->rtol = parse_finite("--rtol", a.rtol, 0.0);
  return c;
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

void run_check(const CheckArgs& a) {
  AttentionInputs in = load_attention_inputs(a.q, a.k, a.v, a.pattern);
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

  const AttentionResult oracle = a1_dense_masked(in.q, in.k, in.v, in.pattern, scale_ptr);
  require_finite_oracle(oracle);
  const CheckReport o_report = check_close(o, oracle.o, o_tol);
  nlohmann::json j;
  j["oracle"] = "a1_dense_masked";
  j["pattern"] = describe(in.pattern.spec);
  j["shape"] = {{"batch", in.shape.batch},         {"num_heads", in.shape.num_heads},
                {"seq_len_q", in.shape.seq_len_q}, {"seq_len_k", in.shape.seq_len_k},
                {"head_dim", in.shape.head_dim},   {"head_dim_v", in.shape.head_dim_v}};
  j["o"] = nlohmann::json::parse(report_json(o_report, "o", o_tol));
  bool pass = o_report.pass;
  if (!a.candidate_lse.empty()) {
    const CheckReport lse_report = check_close(lse, oracle.lse, lse_tol);
    j["lse"] = nlohmann::json::parse(report_json(lse_report, "lse", lse_tol));
    pass = pass && lse_report.pass;
  }
  j["pass"] = pass;
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
  add_pattern_flags(cmd, args->pattern);
  cmd->callback([args] { run_check(*args); });
}

}  // namespace sparseattn::cli
