// approx_error_table — the measurement behind docs/approximations.md: the error of
// Performer FAVOR+ and Nyströmformer against the float64 oracle a1_dense_masked, on
// Gaussian inputs and (when data/ has them) on real heads. Prints Markdown tables.
//
//   approx_error_table [--seq-len 1024] [--head-dim 64] [--heads 4] [--data data] [--seed 0]
//
// Every number is one deterministic run (fixed seeds); nothing is timed. Errors of o:
// max |o − o_ref| and the mean over rows of ‖o_i − ref_i‖₂ / ‖ref_i‖₂ (approx_error.h);
// of lse: the mean |lse − lse_ref| over rows where the estimate exists.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "reference/approx/approx_error.h"
#include "reference/approx/gaussian.h"
#include "reference/approx/nystrom.h"
#include "reference/approx/performer_favor.h"
#include "reference/attention.h"
#include "realdata/dataset.h"

namespace sparseattn {
namespace {

struct Inputs {
  std::string label;
  Tensor<double> q, k, v;
  double scale;
};

Tensor<double> gaussian_tensor(const Shape& shape, uint64_t seed) {
  Tensor<double> t(shape, 0.0);
  const uint64_t key = prng_stream_key(seed, 0, 0);
  for (int64_t i = 0; i < t.numel(); ++i) t.data[i] = standard_normal(key, static_cast<uint64_t>(i));
  return t;
}

// Mean |lse − lse_ref| over rows with a defined estimate; their count is returned too.
double lse_error(const Tensor<double>& lse, const Tensor<double>& ref, int64_t* defined) {
  double sum = 0.0;
  *defined = 0;
  for (int64_t i = 0; i < lse.numel(); ++i)
    if (std::isfinite(lse.data[i])) sum += std::abs(lse.data[i] - ref.data[i]), ++*defined;
  return *defined ? sum / static_cast<double>(*defined) : NAN;
}

void measure(const Inputs& in, uint64_t favor_seed) {
  const AttentionShape s = attention_shape(in.q.shape, in.k.shape, in.v.shape);
  const Pattern pattern = materialize(PatternSpec{}, {1, s.num_heads, s.seq_len_q, s.seq_len_k});
  const AttentionResult oracle = a1_dense_masked(in.q, in.k, in.v, pattern, &in.scale);
  const int64_t rows = s.num_heads * s.seq_len_q;
  std::cout << fmt::format("\n### {} (seq_len {}, head_dim {}, {} heads)\n\n", in.label,
                           s.seq_len_q, s.head_dim, s.num_heads);
  std::cout << "| method | parameter | max abs err (o) | mean row rel err (o) | mean abs err (lse) | rows without lse |\n"
               "|---|---|---|---|---|---|\n";
  {
    // The yardstick: uniform weights (o_i = mean of v, lse_i = log seq_len) — what an
    // approximation that learned nothing about the scores would return.
    AttentionResult u = a1_dense_masked(in.q, in.k, in.v, pattern, &in.scale);
    for (int64_t b = 0; b < s.num_heads; ++b)
      for (int64_t i = 0; i < s.seq_len_q; ++i) {
        u.lse.data[b * s.seq_len_q + i] = std::log(static_cast<double>(s.seq_len_k));
        for (int64_t e = 0; e < s.head_dim_v; ++e) {
          double mean = 0.0;
          for (int64_t j = 0; j < s.seq_len_k; ++j)
            mean += in.v.data[(b * s.seq_len_k + j) * s.head_dim_v + e];
          u.o.data[(b * s.seq_len_q + i) * s.head_dim_v + e] = mean / static_cast<double>(s.seq_len_k);
        }
      }
    const ApproxError e = approx_error(u.o, oracle.o);
    int64_t defined = 0;
    const double le = lse_error(u.lse, oracle.lse, &defined);
    std::cout << fmt::format("| yardstick: uniform weights (mean of v) | — | {:.3e} | {:.3e} | {:.3e} | 0 |\n",
                             e.max_abs, e.mean_row_rel, le);
  }
  for (int64_t m : {16, 64, 256, 1024}) {
    const AttentionResult r =
        performer_favor(in.q, in.k, in.v, pattern, &in.scale, FavorOptions{m, favor_seed, true});
    const ApproxError e = approx_error(r.o, oracle.o);
    int64_t defined = 0;
    const double le = lse_error(r.lse, oracle.lse, &defined);
    std::cout << fmt::format("| Performer FAVOR+ (ORF, seed {}) | m = {} | {:.3e} | {:.3e} | {:.3e} | {} |\n",
                             favor_seed, m, e.max_abs, e.mean_row_rel, le, rows - defined);
  }
  for (PinvMethod pinv : {PinvMethod::iterative, PinvMethod::exact}) {
    for (int64_t c : {8, 16, 32, 64, 128, 256}) {
      if (c > s.seq_len_q) continue;
      int64_t undefined = 0;
      const AttentionResult r = nystrom_attention(in.q, in.k, in.v, pattern, &in.scale,
                                                  NystromOptions{c, pinv, 6}, &undefined);
      const ApproxError e = approx_error(r.o, oracle.o);
      int64_t defined = 0;
      const double le = lse_error(r.lse, oracle.lse, &defined);
      std::cout << fmt::format("| Nyströmformer ({}) | c = {} | {:.3e} | {:.3e} | {:.3e} | {} |\n",
                               pinv == PinvMethod::iterative ? "6-step iterative A⁺" : "exact A⁺", c,
                               e.max_abs, e.mean_row_rel, le, undefined);
    }
  }
  std::cout.flush();
}

}  // namespace
}  // namespace sparseattn

int main(int argc, char** argv) {
  using namespace sparseattn;
  CLI::App app{"Error of Performer FAVOR+ and Nyströmformer against the float64 oracle"};
  int64_t seq_len = 1024, head_dim = 64, heads = 4;
  std::string data;
  uint64_t favor_seed = 0;
  app.add_option("--seq-len", seq_len, "tokens")->check(CLI::PositiveNumber);
  app.add_option("--head-dim", head_dim, "Gaussian inputs' head_dim")->check(CLI::PositiveNumber);
  app.add_option("--heads", heads, "heads measured (Gaussian: drawn; real: the first ones)")
      ->check(CLI::PositiveNumber);
  app.add_option("--data", data, "directory of the real q/k/v (data/); empty: Gaussian only");
  app.add_option("--seed", favor_seed, "Performer's feature seed");
  CLI11_PARSE(app, argc, argv);
  try {
    const Shape shape{1, heads, seq_len, head_dim};
    measure({"Gaussian q, k, v ~ N(0, 1)", gaussian_tensor(shape, 1), gaussian_tensor(shape, 2),
             gaussian_tensor(shape, 3), 1.0 / std::sqrt(static_cast<double>(head_dim))},
            favor_seed);
    if (!data.empty()) {
      realdata::LoadOptions options;
      options.seq_len = seq_len;
      const realdata::RealDataset ds = realdata::load_dataset(data, options);
      for (const realdata::RealLayer& layer : ds.layers) {
        Inputs in{fmt::format("{} layer {}, heads 0..{}", ds.model, layer.layer, heads - 1),
                  {}, {}, {}, ds.scale};
        for (const auto* pair : {&layer.q, &layer.k, &layer.v}) {
          Tensor<double> t({1, heads, seq_len, pair->dim(3)}, 0.0);
          std::copy(pair->data.begin(), pair->data.begin() + t.numel(), t.data.begin());
          (pair == &layer.q ? in.q : pair == &layer.k ? in.k : in.v) = std::move(t);
        }
        measure(in, favor_seed);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "approx_error_table: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
