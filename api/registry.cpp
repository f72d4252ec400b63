// The registry: the X-macro files below are the one list of kernels. Each entry
//   X(name, target, dtype, exact, reference, tolerance, patterns, summary)
// names functions run_<name>(const Problem&, Output&) and serves_<name>(const Pattern&)
// in namespace sparseattn::entry, defined next to the kernel (e.g. reference/entries.cpp).
#include "registry/registry.h"

#include "core/error.h"
#include "core/field.h"
#include "core/numerics.h"
#include "reference/validate.h"

namespace sparseattn {

namespace entry {
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary) \
  void run_##name(const Problem& problem, Output& out);                      \
  bool serves_##name(const Pattern& pattern);
#include "registry/reference_kernels.def"
#include "registry/cpu_kernels.def"
#if SPARSEATTN_WITH_CUDA
#include "registry/cuda_kernels.def"
#endif
#undef X
}  // namespace entry

const char* target_name(Target t) {
  switch (t) {
    case Target::reference: return "reference";
    case Target::cpu: return "cpu";
    case Target::cuda: return "cuda";
  }
  return "?";
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::float64: return "float64";
    case DType::float32: return "float32";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
  }
  return "?";
}

const std::vector<Kernel>& kernels() {
  static const std::vector<Kernel> list = {
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary)               \
  Kernel{#name,    Target::target, DType::dtype,         exact,                  reference, \
         tolerance.atol, tolerance.rtol, patterns, summary, &entry::serves_##name,          \
         &entry::run_##name},
#include "registry/reference_kernels.def"
#include "registry/cpu_kernels.def"
#if SPARSEATTN_WITH_CUDA
#include "registry/cuda_kernels.def"
#endif
#undef X
  };
  return list;
}

const Kernel& find_kernel(const std::string& name) {
  std::string known;
  for (const Kernel& k : kernels()) {
    if (name == k.name) return k;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  throw FieldError(Field::impl, "", name, "must be one of: " + known);
}

Problem make_problem(Tensor<double> q, Tensor<double> k, Tensor<double> v,
                     const Pattern& pattern, const double* scale) {
  Problem p;
  q.shape = as_rank4(q.shape, "q");
  k.shape = as_rank4(k.shape, "k");
  v.shape = as_rank4(v.shape, "v");
  p.shape = validate_attention(q.shape, k.shape, v.shape, pattern);
  p.scale = resolve_scale(scale, p.shape.head_dim);
  p.q32 = tensor_cast<float>(q);
  p.k32 = tensor_cast<float>(k);
  p.v32 = tensor_cast<float>(v);
  p.q = std::move(q);
  p.k = std::move(k);
  p.v = std::move(v);
  p.pattern = &pattern;
  return p;
}

}  // namespace sparseattn
