// The backward registry: the X-macro files below are the one list of backward kernels.
// Each entry X(name, target, dtype, forward, reference, tolerance, patterns, summary,
// features) names functions grad_run_<name>(const GradProblem&, GradOutput&) and
// grad_serves_<name>(const Pattern&) in namespace sparseattn::entry, defined next to the
// kernel (reference/backward/entries.cpp, optimized/cpu/grad_entries.cpp, optimized/cuda).
#include "registry/backward.h"

#include <cmath>

#include "core/error.h"
#include "core/field.h"
#include "core/numerics.h"

namespace sparseattn {

namespace entry {
#define X(name, target, dtype, forward, reference, tolerance, patterns, summary, features) \
  void grad_run_##name(const GradProblem& problem, GradOutput& out);                       \
  bool grad_serves_##name(const Pattern& pattern);
#include "registry/backward_kernels.def"
#if SPARSEATTN_WITH_CUDA
#include "registry/cuda_backward_kernels.def"
#endif
#undef X
}  // namespace entry

const std::vector<GradKernel>& grad_kernels() {
  static const std::vector<GradKernel> list = {
#define X(name, target, dtype, forward, reference, tolerance, patterns, summary, features) \
  GradKernel{#name,          Target::target, DType::dtype, forward,  reference,  \
             tolerance.atol, tolerance.rtol, patterns,     summary,  features,   \
             &entry::grad_serves_##name, &entry::grad_run_##name},
#include "registry/backward_kernels.def"
#if SPARSEATTN_WITH_CUDA
#include "registry/cuda_backward_kernels.def"
#endif
#undef X
  };
  return list;
}

void GradKernel::run(const GradProblem& gp, GradOutput& out) const {
  const Problem& p = *gp.problem;
  const unsigned missing =
      (needed_features(p.shape, p.mods) | needed_pattern_features(*p.pattern)) & ~features;
  if (missing != 0)
    throw FieldError(Field::impl, "", name,
                     "has no gradient for " + feature_names(missing) +
                         " (contract §2.7-§2.9, §3.16); b1_dense_masked_grad has every one");
  run_kernel(gp, out);
}

const GradKernel& find_grad_kernel(const std::string& name) {
  std::string known;
  for (const GradKernel& k : grad_kernels()) {
    if (name == k.name) return k;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  throw InvalidArgument("impl", name, "must be one of: " + known);
}

const GradKernel* grad_kernel_for_forward(const std::string& forward_name) {
  const GradKernel* last = nullptr;
  for (const GradKernel& k : grad_kernels())
    if (forward_name == k.forward) last = &k;
  return last;
}

GradProblem make_grad_problem(const Problem& problem, Tensor<double> dout) {
  const AttentionShape& s = problem.shape;
  const Shape want = {s.batch, s.num_heads, s.seq_len_q, s.head_dim_v};
  Shape got = dout.shape;
  while (got.size() < 4 && !got.empty()) got.insert(got.begin(), 1);
  require(got == want, "dout shape", shape_text(dout.shape),
          "must be " + shape_text(want) + " (o's shape; leading 1s may be omitted)");
  for (int64_t e = 0; e < dout.numel(); ++e) {
    if (std::isfinite(dout.data[e])) continue;
    const int64_t x = e % s.head_dim_v, row = e / s.head_dim_v;
    const int64_t i = row % s.seq_len_q, bh = row / s.seq_len_q;
    throw InvalidArgument("dout[" + std::to_string(bh / s.num_heads) + "," +
                              std::to_string(bh % s.num_heads) + "," + std::to_string(i) + "," +
                              std::to_string(x) + "]",
                          to_text(dout.data[e]), "must be finite");
  }
  GradProblem gp;
  gp.problem = &problem;
  dout.shape = want;
  gp.dout32 = tensor_cast<float>(dout);
  gp.dout = std::move(dout);
  return gp;
}

void save_forward(const GradKernel& kernel, GradProblem& gp) {
  Output out;
  find_kernel(kernel.forward).run(*gp.problem, out);
  gp.o = std::move(out.o);
  gp.lse = std::move(out.lse);
  gp.o32 = std::move(out.o32);
  gp.lse32 = std::move(out.lse32);
}

}  // namespace sparseattn
