// Serves the tests of contract §4.7 (the reference steps, from the registry).
// The reference steps as the registry lists them, generated from the same X-macro file
// (registry/reference_kernels.def), so a step added there is tested here with the
// tolerance it declares there — no second list to drift.
#pragma once

#include <cmath>
#include <vector>

#include "core/numerics.h"
#include "reference/attention.h"
#include "registry/registry.h"

namespace sparseattn {
namespace entry {
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary, features) \
  void run_##name(const Problem& problem, Output& out);                      \
  bool serves_##name(const Pattern& pattern);
#include "registry/reference_kernels.def"
#undef X
}  // namespace entry

namespace testing_steps {

struct Step {
  const char* name;
  const char* reference;
  Tolerance tol;
  bool (*serves)(const Pattern&);
  void (*run)(const Problem&, Output&);
};

// The exact steps only: approximations (exact = false, reference/approx/) have no
// tolerance to assert here; tests/approx/ measures them against the oracle instead.
inline const std::vector<Step>& steps() {
  static const std::vector<Step> list = [] {
    std::vector<Step> exact_steps;
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary, features) \
  if (exact) exact_steps.push_back(                                            \
      Step{#name, reference, tolerance, &entry::serves_##name, &entry::run_##name});
#include "registry/reference_kernels.def"
#undef X
    return exact_steps;
  }();
  return list;
}

// A Problem built by hand (the registry's make_problem lives in another library, and the
// float64 steps read only q, k, v, pattern and scale).
inline Problem problem(const Tensor<double>& q, const Tensor<double>& k, const Tensor<double>& v,
                       const Pattern& pattern, double scale_or_nan) {
  Problem p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.pattern = &pattern;
  p.shape = attention_shape(q.shape, k.shape, v.shape);
  p.scale = std::isnan(scale_or_nan) ? 1.0 / std::sqrt(static_cast<double>(p.shape.head_dim))
                                     : scale_or_nan;
  return p;
}

}  // namespace testing_steps
}  // namespace sparseattn
