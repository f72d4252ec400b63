// sparseattn attend — runs one registered kernel on .npy inputs and writes o (and lse).
//
//   sparseattn attend --q Q.npy --k K.npy --v V.npy --out O.npy [--lse LSE.npy]
//                     [--impl a1_dense_masked] [--scale S] [--dtype float32|float64]
//                     [pattern flags]
//
// Shapes (contract §1): q [B,H,Lq,D], k [B,H,Lk,D], v [B,H,Lk,Dv]; o [B,H,Lq,Dv] and lse
// [B,H,Lq] keep q's leading dimensions as given in the file (rank 2 in, rank 2 out).
// Nothing is written until the kernel has finished; both files are written atomically.
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/results.h"
#include "core/error.h"
#include "core/npy.h"
#include "registry/registry.h"

namespace sparseattn::cli {

namespace {

struct AttendArgs {
  std::string q, k, v, out, lse;
  std::string impl = "a1_dense_masked";
  std::string scale;  // text: parsed by parse_finite (rejects nan/inf)
  std::string dtype;  // "" = the kernel's own output dtype
  PatternFlags pattern;
};

// o/lse keep q's rank: a rank-2 q [Lq, D] gives o [Lq, Dv] and lse [Lq].
Shape out_shape(const Shape& q_file_shape, const Shape& rank4) {
  const size_t drop = 4 - q_file_shape.size();
  return Shape(rank4.begin() + static_cast<std::ptrdiff_t>(drop), rank4.end());
}

template <class T>
void write_pair(const AttendArgs& a, Tensor<T> o, Tensor<T> lse, const Shape& q_file_shape) {
  o.shape = out_shape(q_file_shape, o.shape);
  const Shape lse_rank4 = {lse.shape[0], lse.shape[1], lse.shape[2], 1};
  Shape ls = out_shape(q_file_shape, lse_rank4);
  ls.pop_back();
  lse.shape = ls;
  write_npy(a.out, o);
  if (a.lse.empty()) return;
  try {
    write_npy(a.lse, lse);
  } catch (...) {
    std::remove(a.out.c_str());  // both outputs or neither
    throw;
  }
}

template <class T>
int64_t count_nan(const Tensor<T>& x) {
  int64_t n = 0;
  for (T e : x.data) n += std::isnan(e);
  return n;
}

// contract §2: never a silent NaN. Exact kernels never produce one; an approximation may have
// no lse estimate for some rows (Nyströmformer's estimate of the normalizer can be <= 0),
// so such a file is refused rather than written.
void refuse_nan(const AttendArgs& a, const Kernel& kernel, const Output& out) {
  const int64_t o_nan = count_nan(out.o) + count_nan(out.o32);
  require(o_nan == 0, "--impl", kernel.name,
          "produced " + std::to_string(o_nan) + " NaN values in o; nothing was written");
  if (a.lse.empty()) return;
  const int64_t lse_nan = count_nan(out.lse) + count_nan(out.lse32);
  require(lse_nan == 0, "--lse", a.lse,
          std::string(kernel.name) + " has no lse estimate for " + std::to_string(lse_nan) +
              " rows (NaN); nothing was written. Run without --lse, or use an exact kernel");
}

void run_attend(const AttendArgs& a) {
  require(a.dtype.empty() || a.dtype == "float32" || a.dtype == "float64", "--dtype", a.dtype,
          "must be float32 or float64");
  check_outputs({{"--out", a.out}, {"--lse", a.lse}}, {{"--q", a.q}, {"--k", a.k}, {"--v", a.v}});
  const Shape q_file_shape = read_npy_header(a.q, "--q").shape;
  AttentionInputs in = load_attention_inputs(a.q, a.k, a.v, a.pattern);
  const Kernel& kernel = serving_kernel(a.impl, in.pattern);
  double scale = 0.0;
  if (!a.scale.empty()) scale = parse_finite("--scale", a.scale, -INFINITY);
  const Problem problem = make_problem(std::move(in.q), std::move(in.k), std::move(in.v),
                                       in.pattern, a.scale.empty() ? nullptr : &scale);
  Output out;
  kernel.run(problem, out);
  refuse_nan(a, kernel, out);

  const bool kernel_is_f64 = out.o.numel() > 0 || out.o32.numel() == 0;
  const std::string dtype = !a.dtype.empty() ? a.dtype : kernel_is_f64 ? "float64" : "float32";
  if (dtype == "float64") {
    // A float32 kernel's output widened to float64 is exact, but still float32-accurate.
    if (kernel_is_f64) write_pair(a, std::move(out.o), std::move(out.lse), q_file_shape);
    else write_pair(a, tensor_cast<double>(out.o32), tensor_cast<double>(out.lse32), q_file_shape);
  } else {
    if (kernel_is_f64) write_pair(a, tensor_cast<float>(out.o), tensor_cast<float>(out.lse), q_file_shape);
    else write_pair(a, std::move(out.o32), std::move(out.lse32), q_file_shape);
  }
}

}  // namespace

void register_attend(CLI::App& app) {
  auto args = std::make_shared<AttendArgs>();
  CLI::App* cmd = app.add_subcommand(
      "attend", "run one kernel (default: the float64 oracle) on .npy inputs, write o and lse");
  cmd->add_option("--q", args->q, "Q.npy: queries [batch, num_heads, seq_len_q, head_dim], "
                                  "float16/32/64 (rank 2 or 3: leading dimensions are 1)")
      ->required();
  cmd->add_option("--k", args->k, "K.npy: keys [batch, num_heads, seq_len_k, head_dim]")->required();
  cmd->add_option("--v", args->v, "V.npy: values [batch, num_heads, seq_len_k, head_dim_v]")
      ->required();
  cmd->add_option("--out", args->out, "O.npy: output o [batch, num_heads, seq_len_q, head_dim_v]")
      ->required();
  cmd->add_option("--lse", args->lse,
                  "LSE.npy: also write lse [batch, num_heads, seq_len_q], natural log; -inf on "
                  "fully masked rows");
  std::string names;
  for (const Kernel& k : kernels()) names += (names.empty() ? "" : ", ") + std::string(k.name);
  cmd->add_option("--impl", args->impl, "kernel, one of the registry's: " + names)
      ->capture_default_str();
  cmd->add_option("--scale", args->scale,
                  "S: score scale, finite real; default 1/sqrt(head_dim)");
  cmd->add_option("--dtype", args->dtype,
                  "output dtype: float32 | float64; default the kernel's own (float64 for the "
                  "reference ladder)");
  add_pattern_flags(cmd, args->pattern);
  cmd->callback([args] { run_attend(*args); });
}

}  // namespace sparseattn::cli
