// Serial Eigen: its OpenMP split of a sparse mat-vec costs more in thread wake-ups than the
// product itself at these sizes (measured: half the time of `reach` at seq_len 2^20).
#define EIGEN_DONT_PARALLELIZE
#include "graph/rollout.h"

#include <Eigen/Sparse>
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "graph/reach.h"

namespace sparseattn::graph {

namespace {

using SparseRow = Eigen::SparseMatrix<double, Eigen::RowMajor>;

// Ã of one layer (see rollout.h), from each head's key lists.
SparseRow rollout_step(const Pattern& pattern) {
  const int64_t n = pattern.sizes.seq_len_q;
  std::vector<const HeadLayout*> heads;
  for (int64_t h = 0; h < pattern.sizes.num_heads; ++h) heads.push_back(&pattern.head(h));
  std::vector<Eigen::Triplet<double>> entries;
  std::vector<int32_t> keys, touched;
  std::vector<double> weight(static_cast<size_t>(n), 0.0);  // row i of W, summed over heads
  for (int64_t i = 0; i < n; ++i) {
    touched.clear();
    int64_t attending = 0;
    for (const HeadLayout* h : heads) {
      row_keys_of(*h, i, keys);
      if (keys.empty()) continue;
      ++attending;
      for (int32_t j : keys) {
        if (weight[j] == 0.0) touched.push_back(j);
        weight[j] += 1.0 / static_cast<double>(keys.size());
      }
    }
    // Ã = 0.5·W + 0.5·I, W the mean over attending heads; a row no head attends is e_i.
    const double self = attending == 0 ? 1.0 : 0.5;
    if (weight[i] == 0.0) touched.push_back(static_cast<int32_t>(i));
    for (int32_t j : touched) {
      const double w = attending == 0 ? 0.0 : 0.5 * weight[j] / static_cast<double>(attending);
      entries.emplace_back(i, j, w + (j == i ? self : 0.0));
      weight[j] = 0.0;
    }
  }
  SparseRow step(n, n);
  step.setFromTriplets(entries.begin(), entries.end());
  return step;
}

// One Ã per layer of the stack; layers sharing a Pattern share the matrix.
std::vector<SparseRow> rollout_steps(const LayerStack& stack, int64_t layers,
                                     std::vector<int64_t>& step_of_layer) {
  std::vector<const Pattern*> distinct;
  std::vector<SparseRow> steps;
  for (int64_t l = 0; l < layers; ++l) {
    const Pattern* p = &stack.layer(l);
    auto it = std::find(distinct.begin(), distinct.end(), p);
    if (it == distinct.end()) {
      distinct.push_back(p);
      steps.push_back(rollout_step(*p));
      it = distinct.end() - 1;
    }
    step_of_layer.push_back(it - distinct.begin());
  }
  return steps;
}

}  // namespace

Eigen::MatrixXd rollout_matrix(const LayerStack& stack, int64_t layers) {
  validate_stack(stack);
  const int64_t n = stack.seq_len();
  require(n <= 2048, "seq_len", n, "rollout_matrix is dense: at most 2048 tokens");
  require(layers >= 1, "layers", layers, "must be >= 1");
  std::vector<int64_t> step_of_layer;
  const std::vector<SparseRow> steps = rollout_steps(stack, layers, step_of_layer);
  Eigen::MatrixXd r = Eigen::MatrixXd::Identity(n, n);
  for (int64_t l = 0; l < layers; ++l) r = steps[step_of_layer[l]] * r;
  return r;
}

std::vector<double> rollout_evenness(const LayerStack& stack, int64_t token) {
  validate_stack(stack);
  const int64_t n = stack.seq_len(), layers = stack.num_layers();
  require(n <= kMaxTokenNodes, "seq_len", n,
          "rollout is token level: at most " + std::to_string(kMaxTokenNodes) + " tokens");
  require(token >= 0 && token < n, "token", token, "must be in [0, " + std::to_string(n) + ")");
  std::vector<int64_t> step_of_layer;
  const std::vector<SparseRow> steps = rollout_steps(stack, layers, step_of_layer);

  auto evenness = [n](const Eigen::RowVectorXd& x) {
    if (n == 1) return 1.0;
    double entropy = 0.0;
    for (Eigen::Index j = 0; j < x.size(); ++j)
      if (x[j] > 0.0) entropy -= x[j] * std::log(x[j]);
    return entropy / std::log(static_cast<double>(n));
  };
  bool uniform = true;
  for (int64_t l = 1; l < layers; ++l) uniform &= step_of_layer[l] == step_of_layer[0];

  // Row `token` of Ã_L ⋯ Ã_1 is e_tokenᵀ Ã_L ⋯ Ã_1: a row vector pushed through the
  // layers from the top down. A uniform stack extends the previous product instead.
  std::vector<double> out;
  Eigen::RowVectorXd x = Eigen::RowVectorXd::Unit(n, token);
  for (int64_t L = 1; L <= layers; ++L) {
    if (uniform) {
      x = x * steps[step_of_layer[0]];
    } else {
      x = Eigen::RowVectorXd::Unit(n, token);
      for (int64_t l = L - 1; l >= 0; --l) x = x * steps[step_of_layer[l]];
    }
    out.push_back(evenness(x));
  }
  return out;
}

}  // namespace sparseattn::graph
