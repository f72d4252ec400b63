// Registry adapters of the reference ladder (registry/reference_kernels.def): each step's
// run_<name> calls the step on the problem's float64 inputs with its resolved scale, and
// serves_<name> says which patterns the step accepts (the same test the step itself
// makes before it throws InvalidArgument("pattern ...")).
#include "reference/attention.h"
#include "registry/registry.h"

namespace sparseattn {
namespace entry {

namespace {

using Step = AttentionResult (*)(const Tensor<double>&, const Tensor<double>&,
                                 const Tensor<double>&, const Pattern&, const double*);

void run_step(Step step, const Problem& problem, Output& out) {
  AttentionResult r = step(problem.q, problem.k, problem.v, *problem.pattern, &problem.scale);
  out.o = std::move(r.o);
  out.lse = std::move(r.lse);
}

}  // namespace

void run_a0_dense(const Problem& p, Output& out) { run_step(&a0_dense, p, out); }
bool serves_a0_dense(const Pattern& pattern) {
  return pattern.spec.kind == PatternKind::dense && !pattern.spec.causal;
}

// The oracle reads everything a problem can say: grouped kv heads, softcap, ALiBi, sinks.
void run_a1_dense_masked(const Problem& p, Output& out) {
  AttentionResult r = a1_dense_masked(p.q, p.k, p.v, *p.pattern, &p.scale, p.mods);
  out.o = std::move(r.o);
  out.lse = std::move(r.lse);
}
bool serves_a1_dense_masked(const Pattern&) { return true; }

void run_a2_sparse_rows(const Problem& p, Output& out) { run_step(&a2_sparse_rows, p, out); }
bool serves_a2_sparse_rows(const Pattern&) { return true; }

void run_a3_window_band(const Problem& p, Output& out) { run_step(&a3_window_band, p, out); }
bool serves_a3_window_band(const Pattern& pattern) {
  return pattern.spec.kind == PatternKind::window;
}

void run_a3g_longformer_global(const Problem& p, Output& out) {
  run_step(&a3g_longformer_global, p, out);
}
bool serves_a3g_longformer_global(const Pattern& pattern) {
  return pattern.spec.kind == PatternKind::window || pattern.spec.kind == PatternKind::longformer;
}

void run_a4_bigbird_blocks(const Problem& p, Output& out) { run_step(&a4_bigbird_blocks, p, out); }
bool serves_a4_bigbird_blocks(const Pattern&) { return true; }

void run_a5_flash_tiled(const Problem& p, Output& out) { run_step(&a5_flash_tiled, p, out); }
bool serves_a5_flash_tiled(const Pattern&) { return true; }

// a6 reads what the oracle reads: grouped kv heads, softcap, ALiBi, sinks.
void run_a6_flash_modern(const Problem& p, Output& out) {
  AttentionResult r = a6_flash_modern(p.q, p.k, p.v, *p.pattern, &p.scale, p.mods);
  out.o = std::move(r.o);
  out.lse = std::move(r.lse);
}
bool serves_a6_flash_modern(const Pattern&) { return true; }

}  // namespace entry
}  // namespace sparseattn
