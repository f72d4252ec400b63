// Registry adapters of the backward reference ladder (registry/backward_kernels.def): each
// step's grad_run_<name> calls the step on the problem's float64 inputs and dout with its
// resolved scale (b3 also on the saved o and lse of its forward kernel, a5), and
// grad_serves_<name> says which patterns it accepts (all of them).
#include "reference/backward/backward.h"
#include "registry/backward.h"

namespace sparseattn {
namespace entry {

namespace {
void keep(GradientResult r, GradOutput& out) {
  out.dq = std::move(r.dq);
  out.dk = std::move(r.dk);
  out.dv = std::move(r.dv);
}
}  // namespace

// The gradient oracle reads everything a problem can say (contract §7.7), sinks' dσ included.
void grad_run_b1_dense_masked_grad(const GradProblem& g, GradOutput& out) {
  const Problem& p = *g.problem;
  GradientResult r = b1_dense_masked_grad(p.q, p.k, p.v, g.dout, *p.pattern, &p.scale, p.mods);
  out.dsinks = std::move(r.dsinks);
  keep(std::move(r), out);
}
bool grad_serves_b1_dense_masked_grad(const Pattern&) { return true; }

void grad_run_b2_sparse_rows_grad(const GradProblem& g, GradOutput& out) {
  const Problem& p = *g.problem;
  keep(b2_sparse_rows_grad(p.q, p.k, p.v, g.dout, *p.pattern, &p.scale), out);
}
bool grad_serves_b2_sparse_rows_grad(const Pattern&) { return true; }

void grad_run_b3_flash_tiled_grad(const GradProblem& g, GradOutput& out) {
  const Problem& p = *g.problem;
  keep(b3_flash_tiled_grad(p.q, p.k, p.v, g.o, g.lse, g.dout, *p.pattern, &p.scale), out);
}
bool grad_serves_b3_flash_tiled_grad(const Pattern&) { return true; }

}  // namespace entry
}  // namespace sparseattn
