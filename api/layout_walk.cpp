#include "api/layout_walk.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "api/cache_shapes.h"
#include "api/inputs.h"
#include "api/results.h"
#include "core/error.h"
#include "core/field.h"
#include "reference/compat.h"
#include "reference/validate.h"

namespace sparseattn::api {

namespace {

const char* layout_argument(const SeqLayout& layout) {
  if (layout.varlen) return "a packed batch (cu_seqlens)";
  return layout.cache && layout.cache->paged() ? "paged KV (block_table)" : "a KV cache (cache_seqlens)";
}

// A spec's file-given inputs, by field: each is built for one size (contract §2.10).
void refuse_file_inputs(const PatternSpec& spec, const char* with, int64_t head) {
  auto refuse = [&](bool given, Field field, const std::string& what) {
    if (!given) return;
    throw FieldError(field, "", "given",
                     std::string("must not be given with ") + with + ": " + what +
                         " is built for one size, and each sequence has its own lengths "
                         "(contract §2.10-§2.11)",
                     head);
  };
  refuse(spec.mask.has_value(), Field::mask, "an explicit mask");
  refuse(!spec.segment_ids.empty(), Field::segment_ids, "a list of segment ids");
  refuse(spec.random_table.has_value(), Field::random_table, "a table of random draws");
  for (size_t h = 0; h < spec.per_head.size(); ++h)
    refuse_file_inputs(spec.per_head[h], with, static_cast<int64_t>(h));
}

// Fully masked rows of one sequence (contract §2.3, §2.9): o stays 0; lse is σ_h with
// sinks, −∞ without. `lse` is [H, total] (packed) or [B, H, L] (cache: row offset per head).
template <class T>
void fill_masked_lse(Tensor<T>& lse, const ScoreMods& mods, int64_t heads, int64_t row0,
                     int64_t len, int64_t head_stride) {
  for (int64_t h = 0; h < heads; ++h)
    std::fill_n(lse.ptr() + h * head_stride + row0, len, static_cast<T>(mods.sink(h)));
}

// Sequence b of a packed batch as the problem every kernel reads: its rows of q, k, v, its
// pattern (built by the caller, who keeps it alive) and its mods.
Problem sequence_problem(const VarlenInputs& in, int64_t b, const Pattern& pattern) {
  const Varlen& vl = in.varlen;
  const int64_t q0 = vl.cu_seqlens_q[static_cast<size_t>(b)], k0 = vl.cu_seqlens_k[static_cast<size_t>(b)];
  return make_problem(packed_rows(in.q, q0, q0 + vl.seq_len_q(b)),
                      packed_rows(in.k, k0, k0 + vl.seq_len_k(b)),
                      packed_rows(in.v, k0, k0 + vl.seq_len_k(b)), pattern, in.scale,
                      sequence_mods(in.mods, b));
}

// Whether `kernel`'s entry reads only a problem's float32 copies: the optimized CPU forward
// entries, whose float32 guard bounds q32/k32/v32 when q/k/v are absent (float32_guard.h).
bool reads_float32_only(const Kernel& kernel) {
  return kernel.target == Target::cpu && kernel.dtype != DType::float64;
}

// Rows [lo, hi) of the packed x [total, H, d] into y as [1, H, hi − lo, d], converted to
// D; y's buffer is reused (no fill: every element is written). One thread: on the OpenMP
// team (three more parallel regions per sequence) the walk was slower — window 256 mix,
// walk / one by one 1.40 against 1.20 serial (bench_varlen, 2 threads, load 1.4-3.0).
template <class S, class D>
void rows_into(const Tensor<S>& x, int64_t lo, int64_t hi, Tensor<D>& y) {
  const int64_t heads = x.dim(1), d = x.dim(2), len = hi - lo;
  y.shape = {1, heads, len, d};
  y.data.resize(static_cast<size_t>(heads * len * d));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < len; ++i) {
      const S* src = x.ptr() + ((lo + i) * heads + h) * d;
      D* dst = y.ptr() + (h * len + i) * d;
      for (int64_t c = 0; c < d; ++c) dst[c] = static_cast<D>(src[c]);
    }
}

template <class D>
void rows_into(const Tensor<double>& x64, const Tensor<float>& x32, int64_t lo, int64_t hi,
               Tensor<D>& y) {
  if (x32.data.empty()) rows_into(x64, lo, hi, y);
  else rows_into(x32, lo, hi, y);
}

// Sequence b as a float32-only problem (reads_float32_only): p's buffers are refilled, its
// float64 inputs stay empty. The checks are make_problem's.
void sequence_problem32(const VarlenInputs& in, int64_t b, const Pattern& pattern, Problem& p) {
  const Varlen& vl = in.varlen;
  const int64_t q0 = vl.cu_seqlens_q[static_cast<size_t>(b)], k0 = vl.cu_seqlens_k[static_cast<size_t>(b)];
  rows_into(in.q, in.q32, q0, q0 + vl.seq_len_q(b), p.q32);
  rows_into(in.k, in.k32, k0, k0 + vl.seq_len_k(b), p.k32);
  rows_into(in.v, in.v32, k0, k0 + vl.seq_len_k(b), p.v32);
  p.shape = validate_attention(p.q32.shape, p.k32.shape, p.v32.shape, pattern, KvHeads::grouped);
  p.scale = resolve_scale(in.scale, p.shape.head_dim);
  p.mods = sequence_mods(in.mods, b);
  validate_score_mods(p.mods, 1, p.shape.num_heads);
  p.pattern = &pattern;
}

void require_serves(const Kernel& kernel, const Pattern& pattern, const char* unit, int64_t b) {
  require_field(kernel.serves(pattern), Field::impl, "", kernel.name,
                std::string("must serve the pattern of ") + unit + " " + std::to_string(b) +
                    " (" + describe(pattern.spec) + "); it serves: " + kernel.patterns);
}

// part [1, ...] into element b of all [B, ...].
template <class T>
void put_batch(Tensor<T>& all, const Tensor<T>& part, int64_t b) {
  std::copy(part.data.begin(), part.data.end(), all.data.begin() + b * part.numel());
}

template <class T>
void add_into(Tensor<T>& sum, const Tensor<T>& part) {
  if (part.numel() == 0) return;
  if (sum.numel() == 0) {
    sum = part;
    return;
  }
  for (size_t i = 0; i < sum.data.size(); ++i) sum.data[i] += part.data[i];
}

}  // namespace

void require_layout_spec(const PatternSpec& spec, const SeqLayout& layout) {
  if (!layout.any()) return;
  const char* with = layout_argument(layout);
  require_field(!spec.key_padding_mask.has_value(), Field::key_padding_mask, "", "given",
                std::string("must not be given with ") + with +
                    ": the layout says which keys exist (contract §2.10-§2.11)");
  refuse_file_inputs(spec, with, -1);
}

namespace {

// contract §2.10: a global position beyond a sequence's end does not exist in it (§3.11 per
// sequence), so it is dropped there rather than refused as out of range.
void drop_globals_beyond(PatternSpec& spec, int64_t seq_len_k) {
  std::vector<int64_t> kept;
  for (int64_t g : spec.global)
    if (g < seq_len_k) kept.push_back(g);
  spec.global = std::move(kept);
  for (PatternSpec& head : spec.per_head) drop_globals_beyond(head, seq_len_k);
}

}  // namespace

Pattern sequence_pattern(const PatternSpec& given, int64_t num_heads, int64_t seq_len_q,
                         int64_t seq_len_k) {
  PatternSpec spec = given;
  drop_globals_beyond(spec, seq_len_k);
  PatternSizes sizes;
  sizes.batch = 1;
  sizes.num_heads = num_heads;
  sizes.seq_len_q = seq_len_q;
  sizes.seq_len_k = seq_len_k;
  return materialize(spec, sizes);
}

ScoreMods sequence_mods(const ScoreMods& mods, int64_t b) {
  ScoreMods m = mods;
  if (m.alibi_slopes && m.alibi_slopes->rank() == 2) {
    const int64_t heads = m.alibi_slopes->dim(1);
    Tensor<double> row({heads});
    std::copy_n(m.alibi_slopes->ptr() + b * heads, heads, row.ptr());
    m.alibi_slopes = std::move(row);
  }
  return m;
}

void round_varlen_inputs(VarlenInputs& in) {
  in.q32 = tensor_cast<float>(in.q);
  in.k32 = tensor_cast<float>(in.k);
  in.v32 = tensor_cast<float>(in.v);
}

void validate_varlen_inputs(const VarlenInputs& in) {
  auto rank3 = [](const Tensor<double>& x, const char* what, const char* shape) {
    require(x.rank() == 3, std::string(what) + " shape", shape_text(x.shape),
            std::string("must be packed ") + shape + " with cu_seqlens (contract §2.10)");
  };
  rank3(in.q, "q", "[total_q, num_heads, head_dim]");
  rank3(in.k, "k", "[total_k, num_kv_heads, head_dim]");
  rank3(in.v, "v", "[total_k, num_kv_heads, head_dim_v]");
  require(in.k.dim(2) == in.q.dim(2), "k shape", shape_text(in.k.shape),
          "must have q's head_dim " + std::to_string(in.q.dim(2)) + " last");
  require(in.v.dim(0) == in.k.dim(0) && in.v.dim(1) == in.k.dim(1), "v shape",
          shape_text(in.v.shape), "must have k's total_k and num_kv_heads " + shape_text(in.k.shape));
  require(in.k.dim(1) >= 1 && in.q.dim(1) % in.k.dim(1) == 0, "k shape", shape_text(in.k.shape),
          "must have num_kv_heads dividing q's num_heads " + std::to_string(in.q.dim(1)) +
              " (contract §2.7)");
  require(in.q.dim(2) >= 1 && in.v.dim(2) >= 1, "q shape", shape_text(in.q.shape),
          "must have head_dim >= 1");
  auto same = [](const Tensor<float>& x32, const Tensor<double>& x, const char* what) {
    require(x32.data.empty() || x32.shape == x.shape, std::string(what) + " shape",
            shape_text(x32.shape), "must be the float64 input's " + shape_text(x.shape));
  };
  same(in.q32, in.q, "q32");
  same(in.k32, in.k, "k32");
  same(in.v32, in.v, "v32");
  validate_varlen(in.varlen, in.q.dim(0), in.k.dim(0));
  validate_spec(in.spec);
  require_layout_spec(in.spec, SeqLayout{in.varlen, std::nullopt});
  validate_score_mods(in.mods, in.varlen.num_sequences(), in.q.dim(1));
}

Output attend_varlen(const Kernel& kernel, const VarlenInputs& in) {
  validate_varlen_inputs(in);
  const Varlen& vl = in.varlen;
  const int64_t hq = in.q.dim(1), dv = in.v.dim(2), tq = vl.total_q();
  const bool f64 = kernel.dtype == DType::float64;
  Output out;
  if (f64) {
    out.o = Tensor<double>({tq, hq, dv}, 0.0);
    out.lse = Tensor<double>({hq, tq}, -INFINITY);
  } else {
    out.o32 = Tensor<float>({tq, hq, dv}, 0.0f);
    out.lse32 = Tensor<float>({hq, tq}, -INFINITY);
  }
  // A kernel reading the packed batch in place (kVarlen) gets it whole, in one call: the
  // pattern built once for the longest sequence (the spec is every sequence's; the kernel
  // applies it to each sequence's own lengths). Without any query or any key there is
  // nothing it could compute: the walk below writes the fully masked rows.
  int64_t max_lq = 0, max_lk = 0;
  for (int64_t b = 0; b < vl.num_sequences(); ++b) {
    max_lq = std::max(max_lq, vl.seq_len_q(b));
    max_lk = std::max(max_lk, vl.seq_len_k(b));
  }
  if ((kernel.features & kVarlen) != 0 && max_lq >= 1 && max_lk >= 1) {
    const Pattern pattern = sequence_pattern(in.spec, hq, max_lq, max_lk);
    require_serves(kernel, pattern, "the packed batch's longest sequence, seq_len_q", max_lq);
    Output whole;
    kernel.run(make_varlen_problem(in.q, in.k, in.v, vl, pattern, in.scale, in.mods), whole);
    return whole;
  }
  const bool f32_only = reads_float32_only(kernel);
  Problem p32;  // the float32-only path's buffers, reused from sequence to sequence
  for (int64_t b = 0; b < vl.num_sequences(); ++b) {
    const int64_t q0 = vl.cu_seqlens_q[static_cast<size_t>(b)], lq = vl.seq_len_q(b);
    const int64_t lk = vl.seq_len_k(b);
    if (lq == 0) continue;  // an empty sequence has no rows
    if (lk == 0) {          // queries without keys: fully masked rows (contract §2.3, §2.9)
      if (f64) fill_masked_lse(out.lse, in.mods, hq, q0, lq, tq);
      else fill_masked_lse(out.lse32, in.mods, hq, q0, lq, tq);
      continue;
    }
    const Pattern pattern = sequence_pattern(in.spec, hq, lq, lk);
    require_serves(kernel, pattern, "sequence", b);
    Output ob;
    if (f32_only) {
      sequence_problem32(in, b, pattern, p32);
      kernel.run(p32, ob);
    } else {
      kernel.run(sequence_problem(in, b, pattern), ob);
    }
    if (f64) {
      scatter_packed_rows(ob.o, out.o, q0);
      scatter_packed_lse(ob.lse, out.lse, q0);
    } else {
      scatter_packed_rows(ob.o32, out.o32, q0);
      scatter_packed_lse(ob.lse32, out.lse32, q0);
    }
  }
  return out;
}

GradOutput attend_varlen_grad(const GradKernel& grad, const VarlenInputs& in,
                              const Tensor<double>& dout, Output* forward) {
  validate_varlen_inputs(in);
  const Varlen& vl = in.varlen;
  const int64_t hq = in.q.dim(1), hkv = in.k.dim(1), d = in.q.dim(2), dv = in.v.dim(2);
  require(dout.shape == Shape({vl.total_q(), hq, dv}), "dout shape", shape_text(dout.shape),
          "must be o's packed shape " + shape_text({vl.total_q(), hq, dv}) + " (contract §7.8)");
  require_finite(dout, "dout");
  const Kernel& fwd = find_kernel(grad.forward);
  const bool f64 = grad.dtype == DType::float64;
  GradOutput g;
  if (f64) {
    g.dq = Tensor<double>({vl.total_q(), hq, d}, 0.0);
    g.dk = Tensor<double>({vl.total_k(), hkv, d}, 0.0);
    g.dv = Tensor<double>({vl.total_k(), hkv, dv}, 0.0);
  } else {
    g.dq32 = Tensor<float>({vl.total_q(), hq, d}, 0.0f);
    g.dk32 = Tensor<float>({vl.total_k(), hkv, d}, 0.0f);
    g.dv32 = Tensor<float>({vl.total_k(), hkv, dv}, 0.0f);
  }
  if (in.mods.has_sinks()) g.dsinks = Tensor<double>({hq}, 0.0);
  if (forward != nullptr) *forward = attend_varlen(fwd, in);
  for (int64_t b = 0; b < vl.num_sequences(); ++b) {
    const int64_t q0 = vl.cu_seqlens_q[static_cast<size_t>(b)], lq = vl.seq_len_q(b);
    const int64_t k0 = vl.cu_seqlens_k[static_cast<size_t>(b)], lk = vl.seq_len_k(b);
    // No rows or no keys: o is constant (0) there, so every gradient of the sequence is 0.
    if (lq == 0 || lk == 0) continue;
    const Pattern pattern = sequence_pattern(in.spec, hq, lq, lk);
    require_serves(fwd, pattern, "sequence", b);
    const Problem problem = sequence_problem(in, b, pattern);
    Output ob;
    fwd.run(problem, ob);
    const GradOutput gb = run_backward(grad, problem, ob, packed_rows(dout, q0, q0 + lq), fwd.name);
    if (f64) {
      scatter_packed_rows(gb.dq, g.dq, q0);
      scatter_packed_rows(gb.dk, g.dk, k0);
      scatter_packed_rows(gb.dv, g.dv, k0);
    } else {
      scatter_packed_rows(gb.dq32, g.dq32, q0);
      scatter_packed_rows(gb.dk32, g.dk32, k0);
      scatter_packed_rows(gb.dv32, g.dv32, k0);
    }
    add_into(g.dsinks, gb.dsinks);
  }
  return g;
}

void validate_cache_inputs(CacheInputs& in) {
  validate_spec(in.spec);
  require_layout_spec(in.spec, SeqLayout{std::nullopt, in.cache});
  in.q.shape = as_rank4(in.q.shape, "q");
  in.k.shape = as_rank4(in.k.shape, "k");
  in.v.shape = as_rank4(in.v.shape, "v");
  complete_cache_shapes(in.q.shape, in.k.shape, in.v.shape, in.cache);
  validate_score_mods(in.mods, in.q.dim(0), in.q.dim(1));
}

Output attend_cache(const Kernel& kernel, const CacheInputs& given) {
  CacheInputs in = given;
  validate_cache_inputs(in);
  const KvCache& cache = in.cache;
  const int64_t batch = in.q.dim(0), hq = in.q.dim(1), lq = in.q.dim(2), dv = in.v.dim(3);
  const unsigned needs = cache.paged() ? (kKvCache | kPaged) : kKvCache;
  if ((kernel.features & needs) == needs && cache.capacity() >= 1) {  // read in place
    const Pattern pattern = sequence_pattern(in.spec, hq, lq, cache.capacity());
    require_serves(kernel, pattern, "the cache of capacity", cache.capacity());
    Problem problem = make_cache_problem(std::move(in.q), std::move(in.k), std::move(in.v), cache,
                                         pattern, in.scale, in.mods);
    if (reads_float32_only(kernel)) {  // its float32 copies are all it reads (float32_guard.h)
      problem.q = {};
      problem.k = {};
      problem.v = {};
    }
    Output out;
    kernel.run(problem, out);
    return out;
  }
  const bool f64 = kernel.dtype == DType::float64;
  Output out;
  if (f64) {
    out.o = Tensor<double>({batch, hq, lq, dv}, 0.0);
    out.lse = Tensor<double>({batch, hq, lq}, -INFINITY);
  } else {
    out.o32 = Tensor<float>({batch, hq, lq, dv}, 0.0f);
    out.lse32 = Tensor<float>({batch, hq, lq}, -INFINITY);
  }
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = cache.seq_len_k(b);
    if (n == 0) {  // no key in the cache: fully masked rows (contract §2.3, §2.9)
      if (f64) fill_masked_lse(out.lse, in.mods, hq, b * hq * lq, lq, lq);
      else fill_masked_lse(out.lse32, in.mods, hq, b * hq * lq, lq, lq);
      continue;
    }
    const Pattern pattern = sequence_pattern(in.spec, hq, lq, n);
    require_serves(kernel, pattern, "batch element", b);
    const Problem problem =
        make_problem(batch_slice(in.q, b), cache_rows(in.k, cache, b), cache_rows(in.v, cache, b),
                     pattern, in.scale, sequence_mods(in.mods, b));
    Output ob;
    kernel.run(problem, ob);
    if (f64) put_batch(out.o, ob.o, b), put_batch(out.lse, ob.lse, b);
    else put_batch(out.o32, ob.o32, b), put_batch(out.lse32, ob.lse32, b);
  }
  return out;
}

Tensor<uint8_t> varlen_allowed_mask(const PatternSpec& spec, int64_t num_heads,
                                    const Varlen& varlen) {
  // The lists' own last entries are the totals (validate_cu_seqlens refuses empty lists first).
  validate_varlen(varlen, varlen.cu_seqlens_q.empty() ? 0 : varlen.cu_seqlens_q.back(),
                  varlen.cu_seqlens_k.empty() ? 0 : varlen.cu_seqlens_k.back());
  validate_spec(spec);
  require_layout_spec(spec, SeqLayout{varlen, std::nullopt});
  const int64_t tq = varlen.total_q(), tk = varlen.total_k();
  const Shape shape = {num_heads, tq, tk};
  checked_numel(shape, 1, "mask shape");
  Tensor<uint8_t> out(shape, 0);
  for (int64_t b = 0; b < varlen.num_sequences(); ++b) {
    const int64_t q0 = varlen.cu_seqlens_q[static_cast<size_t>(b)], lq = varlen.seq_len_q(b);
    const int64_t k0 = varlen.cu_seqlens_k[static_cast<size_t>(b)], lk = varlen.seq_len_k(b);
    if (lq == 0 || lk == 0) continue;  // no rows, or rows without keys: nothing allowed
    const Tensor<uint8_t> block = allowed_mask(sequence_pattern(spec, num_heads, lq, lk));
    for (int64_t h = 0; h < num_heads; ++h)
      for (int64_t i = 0; i < lq; ++i)
        std::copy_n(block.ptr() + (h * lq + i) * lk, lk, out.ptr() + (h * tq + q0 + i) * tk + k0);
  }
  return out;
}

}  // namespace sparseattn::api
