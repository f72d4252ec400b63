// The one list of attention implementations. Tests, benchmarks,
// `sparseattn impls`, `sparseattn attend --impl` and the docs table iterate it; nothing
// else keeps its own list. Entries live in registry/*_kernels.def (X-macro files).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/score_mods.h"
#include "core/seq_layout.h"
#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn {

enum class Target { reference, cpu, cuda };
enum class DType { float64, float32, float16, bfloat16 };

const char* target_name(Target t);   // "reference", "cpu", "cuda"
const char* dtype_name(DType t);     // "float64", "float32", "float16", "bfloat16"

// Inputs of one call, prepared once (conversion is never timed). q/k/v are always
// float64 (the oracle's inputs); q32/k32/v32 are their float32 roundings, filled by
// make_problem(). Half-precision kernels round from q32 themselves and state it.
// k and v may have fewer heads than q (shape.num_kv_heads, contract §2.7); `mods` holds the
// softcap, ALiBi slopes and sinks (contract §2.8–§2.9), validated against the shape.
// With `cache` set (make_cache_problem) k and v are a KV cache or its page pools
// (contract §2.11–§2.12): element b's keys are its first cache.cache_seqlens[b] slots, and
// only a kernel listing kKvCache (kPaged) reads such a problem; api/layout_walk.h runs the
// others one element at a time on copies of the filled slots.
struct Problem {
  Tensor<double> q, k, v;
  Tensor<float> q32, k32, v32;
  const Pattern* pattern = nullptr;
  double scale = 0.0;        // resolved (never 0 for a valid problem)
  AttentionShape shape;
  ScoreMods mods;
  std::optional<KvCache> cache;  // contract §2.11–§2.12; unset: k, v are [B, H_kv, L_k, d]
  // contract §2.10, set by make_varlen_problem: q [total_q, H_q, d], k [total_k, H_kv, d],
  // v [total_k, H_kv, d_v] packed; only a kernel listing kVarlen reads such a problem.
  std::optional<Varlen> varlen;
};

// Validates shapes against the pattern (k, v with H_kv heads dividing q's H_q), resolves the
// scale (nullptr: 1/sqrt(head_dim)) and validates `mods` (validate_score_mods). Throws
// InvalidArgument (shape mismatch, pattern built for other sizes, bad scale) or FieldError
// (softcap, alibi_slopes, sinks).
Problem make_problem(Tensor<double> q, Tensor<double> k, Tensor<double> v,
                     const Pattern& pattern, const double* scale, ScoreMods mods = {});

// A decode problem (contract §2.11–§2.12): q [B, H_q, L_q, d]; k, v the cache [B, H_kv,
// L_cache, d] / [B, H_kv, L_cache, d_v], or with a block table the page pools [num_pages,
// H_kv, page_size, d]; `pattern` materialized for (L_q, cache.capacity()) — a kernel derives
// each element's allowed keys from its spec and cache_seqlens[b] (the pattern of an element
// is the spec's for L_k = cache_seqlens[b]). `cache` is validated (validate_kv_cache; its
// page_size, num_pages and seq_len_cache are read from k's shape here). Throws
// InvalidArgument naming q/k/v for shape mismatches, FieldError for the cache, the scale
// and the mods.
Problem make_cache_problem(Tensor<double> q, Tensor<double> k, Tensor<double> v, KvCache cache,
                           const Pattern& pattern, const double* scale, ScoreMods mods = {});

// A packed batch (contract §2.10) as one problem, for a kernel that reads it in place
// (kVarlen): q [total_q, H_q, d], k [total_k, H_kv, d], v [total_k, H_kv, d_v] with
// `varlen`'s cu_seqlens; `pattern` materialized for batch 1 and the longest sequence's
// (seq_len_q, seq_len_k) — a kernel derives each sequence's allowed keys from its spec and
// that sequence's own lengths. shape: batch = the number of sequences (ALiBi slopes [B,
// H_q] index it), seq_len_q = total_q, seq_len_k = total_k. The output is packed too: o
// [total_q, H_q, d_v], lse [H_q, total_q]. Throws InvalidArgument naming q/k/v for shape
// mismatches, FieldError for cu_seqlens, the scale and the mods.
Problem make_varlen_problem(Tensor<double> q, Tensor<double> k, Tensor<double> v, Varlen varlen,
                            const Pattern& pattern, const double* scale, ScoreMods mods = {});

// What a kernel reads beyond plain attention (contract §2.7–§2.9), a bit set. A kernel's
// `run` refuses a problem that needs a feature its entry does not list.
enum Feature : unsigned {
  kPlain = 0,
  kGqa = 1u << 0,      // k, v with fewer heads than q
  kSoftcap = 1u << 1,  // ScoreMods::softcap
  kAlibi = 1u << 2,    // ScoreMods::alibi_slopes
  kSinks = 1u << 3,    // ScoreMods::sinks
  kModern = kGqa | kSoftcap | kAlibi | kSinks,
  kKvCache = 1u << 4,  // Problem::cache: k, v a cache filled to cache_seqlens (contract §2.11)
  kPaged = 1u << 5,    // Problem::cache with a block table: k, v page pools (contract §2.12)
  // selected attention whose lists differ by batch element or count repeats (contract
  // §3.16, Pattern::needs_selection_kernel); not in kModern: a kernel reading head(h) alone
  // would compute another pattern.
  kSelection = 1u << 6,
  kVarlen = 1u << 7,   // Problem::varlen: a packed batch read in place (contract §2.10)
};

// The features `problem` needs.
unsigned needed_features(const AttentionShape& shape, const ScoreMods& mods);
unsigned needed_features(const Problem& problem);
// The pattern's part: kSelection when Pattern::needs_selection_kernel(), else kPlain.
unsigned needed_pattern_features(const Pattern& pattern);
// "grouped-query heads, softcap" — the features in `bits`, for messages.
std::string feature_names(unsigned bits);

// A kernel writes its result in its own dtype: float64 kernels into o/lse,
// float32 and half-input kernels into o32/lse32 (float32 accumulation). Every element is
// written; the CPU entries keep o32/lse32 when they already have the output's shape, so a
// caller running one problem repeatedly (the benchmarks) reuses its buffers.
struct Output {
  Tensor<double> o, lse;
  Tensor<float> o32, lse32;
};

struct Kernel {
  const char* name;        // e.g. "a1_dense_masked", "cpu_k03_window"
  Target target;
  DType dtype;             // dtype of its inputs (and of its arithmetic for float32/64)
  bool exact;              // false for approximations (Performer, Nyströmformer)
  const char* reference;   // the kernel it must match (the oracle for references)
  double atol, rtol;       // from docs/numerics.md via core/numerics.h
  const char* patterns;    // human list of pattern kinds served, e.g. "window"
  const char* summary;     // one sentence: what this step does
  unsigned features;       // Feature bits it reads (kPlain: none)
  bool (*serves)(const Pattern& pattern);   // can it run this pattern?
  void (*run_kernel)(const Problem& problem, Output& out);

  // Whether it reads everything `problem` needs beyond the pattern.
  bool serves_features(const Problem& problem) const;
  // Runs the kernel. Throws FieldError(Field::impl) naming the kernel and the missing
  // features when the problem needs one its entry does not list, before any work.
  void run(const Problem& problem, Output& out) const;
};

// Every kernel compiled into this build, in ladder order.
const std::vector<Kernel>& kernels();

// Looks a kernel up by name; throws InvalidArgument("impl") listing the known names.
const Kernel& find_kernel(const std::string& name);

}  // namespace sparseattn
