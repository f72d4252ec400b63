// The registry: the X-macro files below are the one list of kernels. Each entry
//   X(name, target, dtype, exact, reference, tolerance, patterns, summary, features)
// names functions run_<name>(const Problem&, Output&) and serves_<name>(const Pattern&)
// in namespace sparseattn::entry, defined next to the kernel (e.g. reference/entries.cpp).
#include "registry/registry.h"

#include <utility>

#include "core/error.h"
#include "core/field.h"
#include "core/numerics.h"
#include "api/cache_shapes.h"
#include "reference/validate.h"

namespace sparseattn {

namespace entry {
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary, features) \
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
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary, features) \
  Kernel{#name,          Target::target, DType::dtype, exact,    reference,          \
         tolerance.atol, tolerance.rtol, patterns,     summary,  features,           \
         &entry::serves_##name, &entry::run_##name},
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

unsigned needed_features(const AttentionShape& shape, const ScoreMods& mods) {
  unsigned bits = kPlain;
  if (shape.num_kv_heads != shape.num_heads) bits |= kGqa;
  if (mods.has_softcap()) bits |= kSoftcap;
  if (mods.has_alibi()) bits |= kAlibi;
  if (mods.has_sinks()) bits |= kSinks;
  return bits;
}

unsigned needed_pattern_features(const Pattern& pattern) {
  return pattern.needs_selection_kernel() ? kSelection : kPlain;
}

unsigned needed_features(const Problem& problem) {
  unsigned bits = needed_features(problem.shape, problem.mods);
  if (problem.cache) bits |= problem.cache->paged() ? (kKvCache | kPaged) : kKvCache;
  if (problem.varlen) bits |= kVarlen;
  if (problem.pattern != nullptr) bits |= needed_pattern_features(*problem.pattern);
  return bits;
}

std::string feature_names(unsigned bits) {
  static const std::pair<unsigned, const char*> names[] = {
      {kGqa, "grouped-query heads"}, {kSoftcap, "softcap"}, {kAlibi, "ALiBi slopes"},
      {kSinks, "sinks"}, {kKvCache, "a KV cache read in place"},
      {kPaged, "paged KV read in place"}, {kSelection, "per-batch or counted selections"},
      {kVarlen, "a packed batch read in place"}};
  std::string out;
  for (const auto& [bit, name] : names)
    if (bits & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

bool Kernel::serves_features(const Problem& problem) const {
  return (needed_features(problem) & ~features) == 0;
}

void Kernel::run(const Problem& problem, Output& out) const {
  // A kernel never computes plain attention for a problem that asks for more: the refusal
  // comes before any work, with the kernels that would serve it.
  const unsigned missing = needed_features(problem) & ~features;
  if (missing != 0) {
    std::string serving;
    for (const Kernel& k : kernels())
      if ((missing & ~k.features) == 0 && k.serves(*problem.pattern))
        serving += (serving.empty() ? "" : ", ") + std::string(k.name);
    throw FieldError(Field::impl, "", name,
                     "does not serve " + feature_names(missing) + " (contract §2.7-§2.12, §3.16); " +
                         (serving.empty() ? "no kernel of this build serves this problem"
                                          : "kernels that do: " + serving));
  }
  run_kernel(problem, out);
}

namespace {

// What make_problem and make_cache_problem share once the shape is known: the scale, the
// validated mods, the float32 roundings and the inputs themselves.
void fill_problem(Problem& p, Tensor<double> q, Tensor<double> k, Tensor<double> v,
                  const Pattern& pattern, const double* scale, ScoreMods mods) {
  p.scale = resolve_scale(scale, p.shape.head_dim);
  validate_score_mods(mods, p.shape.batch, p.shape.num_heads);
  p.mods = std::move(mods);
  p.q32 = tensor_cast<float>(q);
  p.k32 = tensor_cast<float>(k);
  p.v32 = tensor_cast<float>(v);
  p.q = std::move(q);
  p.k = std::move(k);
  p.v = std::move(v);
  p.pattern = &pattern;
}

}  // namespace

Problem make_problem(Tensor<double> q, Tensor<double> k, Tensor<double> v,
                     const Pattern& pattern, const double* scale, ScoreMods mods) {
  Problem p;
  q.shape = as_rank4(q.shape, "q");
  k.shape = as_rank4(k.shape, "k");
  v.shape = as_rank4(v.shape, "v");
  p.shape = validate_attention(q.shape, k.shape, v.shape, pattern, KvHeads::grouped);
  fill_problem(p, std::move(q), std::move(k), std::move(v), pattern, scale, std::move(mods));
  return p;
}

Problem make_cache_problem(Tensor<double> q, Tensor<double> k, Tensor<double> v, KvCache cache,
                           const Pattern& pattern, const double* scale, ScoreMods mods) {
  q.shape = as_rank4(q.shape, "q");
  k.shape = as_rank4(k.shape, "k");
  v.shape = as_rank4(v.shape, "v");
  api::complete_cache_shapes(q.shape, k.shape, v.shape, cache);
  Problem p;
  p.shape.batch = q.shape[0];
  p.shape.num_heads = q.shape[1];
  p.shape.seq_len_q = q.shape[2];
  p.shape.seq_len_k = cache.capacity();
  p.shape.head_dim = q.shape[3];
  p.shape.head_dim_v = v.shape[3];
  p.shape.num_kv_heads = k.shape[1];
  const PatternSizes& built = pattern.sizes;
  require(built.seq_len_q == p.shape.seq_len_q && built.seq_len_k == p.shape.seq_len_k, "pattern",
          std::to_string(built.seq_len_q) + "x" + std::to_string(built.seq_len_k),
          "must be built for seq_len_q x the cache's capacity (" +
              std::to_string(p.shape.seq_len_q) + "x" + std::to_string(p.shape.seq_len_k) + ")");
  fill_problem(p, std::move(q), std::move(k), std::move(v), pattern, scale, std::move(mods));
  p.cache = std::move(cache);
  return p;
}

Problem make_varlen_problem(Tensor<double> q, Tensor<double> k, Tensor<double> v, Varlen varlen,
                            const Pattern& pattern, const double* scale, ScoreMods mods) {
  auto rank3 = [](const Tensor<double>& x, const char* what, const char* shape) {
    require(x.rank() == 3, std::string(what) + " shape", shape_text(x.shape),
            std::string("must be packed ") + shape + " with cu_seqlens (contract §2.10)");
  };
  rank3(q, "q", "[total_q, num_heads, head_dim]");
  rank3(k, "k", "[total_k, num_kv_heads, head_dim]");
  rank3(v, "v", "[total_k, num_kv_heads, head_dim_v]");
  require(k.dim(2) == q.dim(2) && q.dim(2) >= 1, "k shape", shape_text(k.shape),
          "must have q's head_dim " + std::to_string(q.dim(2)) + " last");
  require(v.dim(0) == k.dim(0) && v.dim(1) == k.dim(1) && v.dim(2) >= 1, "v shape", shape_text(v.shape),
          "must have k's total_k and num_kv_heads " + shape_text(k.shape));
  require(k.dim(1) >= 1 && q.dim(1) % k.dim(1) == 0, "k shape", shape_text(k.shape),
          "must have num_kv_heads dividing q's num_heads " + std::to_string(q.dim(1)) + " (contract §2.7)");
  validate_varlen(varlen, q.dim(0), k.dim(0));
  require(pattern.sizes.batch == 1 && pattern.sizes.num_heads == q.dim(1), "pattern",
          describe(pattern.spec), "must be built for batch 1 and q's num_heads " + std::to_string(q.dim(1)));
  Problem p;
  p.shape.batch = varlen.num_sequences();
  p.shape.num_heads = q.dim(1);
  p.shape.num_kv_heads = k.dim(1);
  p.shape.seq_len_q = varlen.total_q();
  p.shape.seq_len_k = varlen.total_k();
  p.shape.head_dim = q.dim(2);
  p.shape.head_dim_v = v.dim(2);
  fill_problem(p, std::move(q), std::move(k), std::move(v), pattern, scale, std::move(mods));
  p.varlen = std::move(varlen);
  return p;
}

void api::complete_cache_shapes(const Shape& qs, const Shape& ks, const Shape& vs, KvCache& cache) {
  const std::string kind = cache.paged() ? "page pools [num_pages, num_kv_heads, page_size, "
                                         : "a cache [batch, num_kv_heads, seq_len_cache, ";
  require(ks[0] == vs[0] && ks[1] == vs[1] && ks[2] == vs[2], "v shape", shape_text(vs),
          "must be " + kind + "head_dim_v] matching k " + shape_text(ks));
  require(ks[3] == qs[3], "k shape", shape_text(ks),
          "must have q's head_dim " + std::to_string(qs[3]) + " last");
  require(ks[1] >= 1 && qs[1] % ks[1] == 0, "k shape", shape_text(ks),
          "must have num_kv_heads dividing q's num_heads " + std::to_string(qs[1]) +
              " (contract §2.7)");
  require(qs[2] >= 1 && qs[3] >= 1 && vs[3] >= 1, "q shape", shape_text(qs),
          "must have seq_len_q >= 1 and head_dim >= 1");
  if (cache.paged()) {
    cache.num_pages = ks[0];
    cache.page_size = ks[2];
  } else {
    require(ks[0] == qs[0], "k shape", shape_text(ks),
            "must be a cache [batch, num_kv_heads, seq_len_cache, head_dim] with q's batch " +
                std::to_string(qs[0]));
    cache.seq_len_cache = ks[2];
  }
  validate_kv_cache(cache, qs[0]);
}

}  // namespace sparseattn
