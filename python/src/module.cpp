// sparseattn._sparseattn — the C++ half of the Python package: thin functions over the
// project's libraries (reference/, optimized/, registry/, graph/, realdata/, and the
// CLI's shared code in api/results.h and api/pattern_flags.h), so Python and the CLI run
// the same code. The public API, its docstrings and its argument checks live in
// python/sparseattn/*.py; everything here is private (underscore module).
//
// Errors (contract §5): InvalidArgument becomes ValueError with the CLI's message and the
// flags renamed to Python keywords ("invalid --num-random-blocks = -1: ..." ->
// "invalid num_random_blocks = -1: ..."); a buffer that would not fit in memory and
// std::bad_alloc become MemoryError; sparseattn::RuntimeError becomes RuntimeError.
// Kernels run with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/inputs.h"
#include "api/measure.h"
#include "api/pattern_flags.h"
#include "api/padding_align.h"
#include "api/results.h"
#include "api/score_flags.h"
#include "api/shape_hint.h"
#include "core/error.h"
#include "graph/layer_graph.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/kernels_bf16.h"
#include "pattern/block_mask.h"
#include "python/src/arrays.h"
#include "python/src/report_bindings.h"
#include "python/src/field_bindings.h"
#include "python/src/layout_bindings.h"
#include "python/src/mask_bindings.h"
#include "python/src/preset_bindings.h"
#include "python/src/sweep_bindings.h"
#include "python/src/selected_bindings.h"
#include "realdata/locality.h"
#include "realdata/position_extension.h"
#include "reference/approx/nystrom.h"
#include "reference/approx/performer_favor.h"
#include "pattern/pattern.h"
#include "registry/backward.h"
#include "reference/compat.h"
#include "registry/registry.h"

namespace sparseattn::python {

namespace {

// ---- errors -------------------------------------------------------------------------------

// The library names a bad parameter by its field (core/field.h); Python spells it as its
// keyword ("global_tokens", "window"). Every other error already names a Python argument
// (q, k, v, dout, ...), so its text passes unchanged: nothing here reads error text.
void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const FieldError& e) {
    PyErr_SetString(e.is_memory_limit() ? PyExc_MemoryError : PyExc_ValueError,
                    e.spelled(Spelling::keyword).what());
  } catch (const MemoryLimitError& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const InvalidArgument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const sparseattn::RuntimeError& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

// ---- JSON -> Python ---------------------------------------------------------------------

py::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const auto& e : j) l.append(to_python(e));
      return std::move(l);
    }
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (const auto& [key, value] : j.items()) d[py::str(key)] = to_python(value);
      return std::move(d);
    }
    default: return py::none();
  }
}

// ---- patterns -----------------------------------------------------------------------------

// The pattern's parameters straight into the typed spec, then validate_spec() (pattern/):
// the same checks, and the same messages spelled as keywords, as the command line's.
PatternSpec make_spec(const std::string& kind, bool causal, int64_t window, int64_t dilation,
                      const std::vector<int64_t>& global_tokens, int64_t num_random,
                      int64_t block_size, int64_t num_random_blocks, int64_t num_global_tokens,
                      uint64_t seed, std::optional<py::array> random_table,
                      std::optional<py::array> segment_ids, std::optional<py::array> mask,
                      const std::vector<PatternSpec>& per_head, std::optional<int64_t> window_left,
                      std::optional<int64_t> window_right, std::optional<int64_t> chunk_size,
                      std::optional<int64_t> kernel_size) {
  PatternSpec s;
  s.kind = parse_pattern_kind(kind);
  s.causal = causal;
  s.window = window;
  s.window_left = window_left;
  s.window_right = window_right;
  s.chunk_size = chunk_size;
  s.kernel_size = kernel_size;
  s.dilation = dilation;
  s.global = global_tokens;
  s.num_random = num_random;
  s.block_size = block_size;
  s.num_random_blocks = num_random_blocks;
  s.num_global_tokens = num_global_tokens;
  s.seed = seed;
  s.per_head = per_head;
  if (random_table) s.random_table = int_tensor(*random_table, "random_table");
  if (segment_ids) {
    const Tensor<int64_t> ids = int_tensor(*segment_ids, "segment_ids");
    require_field(ids.rank() == 1, Field::segment_ids, " shape", shape_text(ids.shape),
                  "must be [seq_len] (one id per token)");
    s.segment_ids = ids.data;
  }
  if (mask) s.mask = mask_tensor(*mask, "mask");
  validate_spec(s);
  return s;
}

PatternSizes sizes_of(int64_t batch, int64_t num_heads, int64_t seq_len_q, int64_t seq_len_k) {
  require(batch >= 1, "batch", batch, "must be an integer >= 1");
  require(num_heads >= 1, "num_heads", num_heads, "must be an integer >= 1");
  require(seq_len_q >= 1, "seq_len_q", seq_len_q, "must be an integer >= 1");
  require(seq_len_k >= 1, "seq_len_k", seq_len_k, "must be an integer >= 1");
  PatternSizes z;
  z.batch = batch;
  z.num_heads = num_heads;
  z.seq_len_q = seq_len_q;
  z.seq_len_k = seq_len_k;
  return z;
}

PatternSpec with_padding(const PatternSpec& spec, const std::optional<py::array>& kpm) {
  PatternSpec s = spec;
  if (kpm) s.key_padding_mask = mask_tensor(*kpm, "key_padding_mask");
  return s;
}

py::array mask(const PatternSpec& spec, int64_t num_heads, int64_t seq_len_q, int64_t seq_len_k,
               std::optional<py::array> key_padding_mask) {
  const PatternSpec s = with_padding(spec, key_padding_mask);
  const int64_t batch = s.key_padding_mask && s.key_padding_mask->rank() == 2
                            ? s.key_padding_mask->dim(0) : 1;
  const PatternSizes z = sizes_of(batch, num_heads, seq_len_q, seq_len_k);
  // Refuse an output that cannot fit before building anything (contract §5).
  checked_numel({z.batch, z.num_heads, z.seq_len_q, z.seq_len_k}, 1,
                "mask shape (batch, num_heads, seq_len_q, seq_len_k)");
  Tensor<uint8_t> m;
  {
    py::gil_scoped_release nogil;
    m = api::allowed_mask(materialize(s, z));
  }
  return to_numpy(std::move(m));
}

py::object info(const PatternSpec& spec, int64_t num_heads, int64_t seq_len_q, int64_t seq_len_k,
                int64_t head_dim, std::optional<py::array> key_padding_mask) {
  require(head_dim >= 1, "head_dim", head_dim, "must be an integer >= 1");
  const PatternSpec s = with_padding(spec, key_padding_mask);  // as `info --key-padding-mask`
  const int64_t batch = s.key_padding_mask && s.key_padding_mask->rank() == 2
                            ? s.key_padding_mask->dim(0) : 1;
  nlohmann::json j;
  {
    py::gil_scoped_release nogil;
    j = api::info_json(materialize(s, sizes_of(batch, num_heads, seq_len_q, seq_len_k)), head_dim);
  }
  return to_python(j);
}

py::array random_table(const PatternSpec& spec, int64_t num_heads, int64_t seq_len) {
  const Pattern p = materialize(spec, sizes_of(1, num_heads, seq_len, seq_len));
  Tensor<int64_t> t = p.random_draws;
  if (t.numel() == 0) t.shape = {num_heads, 0, 0};  // a kind without draws
  return to_numpy(std::move(t));
}

// FlexAttention's BlockMask fields for one tile side: per (head, query block) the key
// blocks that are partial (kv_*) and full (full_kv_*), ascending, padded with 0.
py::dict block_mask(const PatternSpec& spec, int64_t num_heads, int64_t seq_len_q,
                    int64_t seq_len_k, int64_t block_size) {
  require(block_size >= 1, "block_size", block_size, "must be an integer >= 1 (tokens)");
  const PatternSizes z = sizes_of(1, num_heads, seq_len_q, seq_len_k);
  const bool block_kind = spec.kind == PatternKind::bigbird || spec.kind == PatternKind::bigbird_etc;
  Pattern p;
  {
    py::gil_scoped_release nogil;
    if (!block_kind || spec.block_size == block_size) {
      PatternSpec s = spec;
      s.tile = block_size;  // token-level kinds: the canonical layout at this tile side
      p = materialize(s, z);
    } else {
      // A block pattern re-tiled: its own layout's mask, read at the asked tile side.
      const Pattern own = materialize(spec, z);
      PatternSpec s;
      s.kind = PatternKind::explicit_mask;
      s.mask = api::allowed_mask(own);
      s.mask->shape = {z.num_heads, z.seq_len_q, z.seq_len_k};
      s.tile = block_size;
      p = materialize(s, z);
    }
  }
  BlockMaskTables t = block_mask_of(p, block_size);
  // FlexAttention's tables are int32 (every block index fits).
  auto int32 = [](const Tensor<int64_t>& x) {
    Tensor<int32_t> y(x.shape, 0);
    std::transform(x.data.begin(), x.data.end(), y.data.begin(),
                   [](int64_t v) { return static_cast<int32_t>(v); });
    return y;
  };
  py::dict d;
  d["kv_num_blocks"] = to_numpy(int32(t.kv_num_blocks));
  d["kv_indices"] = to_numpy(int32(t.kv_indices));
  d["full_kv_num_blocks"] = to_numpy(int32(t.full_kv_num_blocks));
  d["full_kv_indices"] = to_numpy(int32(t.full_kv_indices));
  return d;
}

// ---- attention ----------------------------------------------------------------------------

// q/k/v rank 2..4 as given; returns the float64 rank-4 tensors (contract §1), checked.
struct Inputs {
  Tensor<double> q, k, v;
  AttentionShape shape;
};

Inputs read_inputs(const ArrayView& q, const ArrayView& k, const ArrayView* v) {
  Inputs in;
  in.q = to_tensor(q);
  in.k = to_tensor(k);
  in.q.shape = as_rank4(in.q.shape, "q");
  in.k.shape = as_rank4(in.k.shape, "k");
  if (v != nullptr) {
    in.v = to_tensor(*v);
    in.v.shape = as_rank4(in.v.shape, "v");
    // k and v may have fewer heads than q (contract §2.7): the callers that cannot take
    // them refuse them (Kernel::run, require_combinable, the approximations' steps).
    in.shape = attention_shape(in.q.shape, in.k.shape, in.v.shape, KvHeads::grouped);
  }
  api::require_finite(in.q, "q");
  api::require_finite(in.k, "k");
  if (v != nullptr) api::require_finite(in.v, "v");
  return in;
}

const double* scale_ptr(const std::optional<double>& scale) { return scale ? &*scale : nullptr; }


template <class T>
int64_t count_nan(const Tensor<T>& x) {
  int64_t n = 0;
  for (T e : x.data) n += std::isnan(e);
  return n;
}

// The compatibility mode of one call (contract §3.12) from the binding's arguments:
// compat "" or "hf-bigbird"; global_mask [B, L_k] 0/1; projections (q_global, k_global,
// v_global), each shaped like q, k, v, finite. No GIL needed.
api::CompatRequest compat_request(const std::string& compat, const std::optional<Tensor<uint8_t>>& gm,
                                  const std::vector<ArrayView>& proj) {
  api::CompatRequest r;
  r.compat = compat;
  r.global_mask = gm;
  require(proj.empty() || proj.size() == 3, "q_global", "", "q_global, k_global and v_global go together");
  if (proj.size() == 3) {
    const char* names[3] = {"q_global", "k_global", "v_global"};
    std::optional<Tensor<double>>* out[3] = {&r.q_global, &r.k_global, &r.v_global};
    for (int t = 0; t < 3; ++t) {
      Tensor<double> x = to_tensor(proj[static_cast<size_t>(t)]);
      api::require_finite(x, names[t]);
      *out[t] = std::move(x);
    }
  }
  return r;
}

// Returns (o [B,H,Lq,Dv], lse [B,H,Lq], rows whose lse is NaN: an approximation's
// undefined estimate, dq, dk, dv, dq_global, dk_global, dv_global). o is never NaN: a
// kernel that produced one is refused, as the CLI does. Given dout [B,H,Lq,Dv] (contract
// §7), the backward entry the CLI's `attend --impl <impl> --dout` runs (api::backward_for)
// consumes this forward pass's o and lse and dq [B,H,Lq,D], dk [B,H,Lk,D], dv [B,H,Lk,Dv]
// come back in its dtype; otherwise they are None. dout is checked (shape, finiteness)
// before any O(n^2) work. Under a finite masked_score ("-inf" or a real, as the CLI's
// --masked-score) or a compatibility mode (compat, global_mask, projections: `attend
// --compat/--global-mask/--q-global...`) the forward is that convention's and, with dout,
// impl must be a1_dense_masked and the gradients are its float64 definition
// (api::reference_gradients, contract §7.4-§7.6); dq_global, dk_global, dv_global (the
// projections' shapes) come back under the projections only.
py::tuple attend(const py::array& q_arr, const py::array& k_arr, const py::array& v_arr,
                 const PatternSpec& spec, const std::string& impl, std::optional<double> scale,
                 std::optional<py::array> key_padding_mask, std::optional<py::array> dout_arr,
                 const std::string& masked_score, const std::string& compat,
                 std::optional<py::array> global_mask, std::vector<py::array> projections,
                 const std::string& causal_align, const std::string& padding_align,
                 std::optional<double> softcap, std::optional<py::array> alibi_slopes,
                 std::optional<py::array> sinks) {
  const ArrayView qv = float_view(q_arr, "q"), kv = float_view(k_arr, "k"),
                  vv = float_view(v_arr, "v");
  ScoreMods mods = score_mods(softcap, alibi_slopes, sinks);
  std::optional<ArrayView> dv;
  if (dout_arr) dv = float_view(*dout_arr, "dout");
  const PatternSpec s = with_padding(spec, key_padding_mask);
  std::optional<Tensor<uint8_t>> gm;
  if (global_mask) gm = mask_tensor(*global_mask, "global_mask");
  std::vector<ArrayView> pv;
  const char* proj_names[3] = {"q_global", "k_global", "v_global"};
  for (size_t t = 0; t < projections.size() && t < 3; ++t)
    pv.push_back(float_view(projections[t], proj_names[t]));
  api::ConventionFlags cf;
  cf.masked_score = masked_score;
  cf.causal_align = causal_align;    // as `attend --causal-align` (contract §1.6)
  cf.padding_align = padding_align;  // as `attend --padding-align` (contract §2.6)
  const api::Conventions conv = api::parse_conventions(cf);
  Output out;
  GradOutput gout;
  api::ReferenceGradients ref;  // the float64 definitions' gradients (other conventions)
  bool by_definition = false;   // o and the gradients come from a definition, not a kernel
  const GradKernel* grad = nullptr;
  {
    py::gil_scoped_release nogil;
    Inputs in = read_inputs(qv, kv, &vv);
    const AttentionShape& a = in.shape;
    const Pattern pattern = api::apply_pattern_conventions(
        materialize(s, sizes_of(a.batch, a.num_heads, a.seq_len_q, a.seq_len_k)), conv);
    const api::CompatRequest request = compat_request(compat, gm, pv);
    const bool compat_mode = !request.compat.empty() || request.longformer();
    validate_score_mods(mods, a.batch, a.num_heads);
    api::require_combinable(a, mods, conv, compat_mode, Spelling::keyword);
    require(!compat_mode || !conv.padding_align_valid, "padding_align", padding_align,
            "must be full under the compatibility modes (their definitions are HF's, contract §3.12)");
    if (conv.masked_score || compat_mode) {
      // The other conventions' float64 definitions (contract §1.6, §3.12, §7.4-§7.6).
      by_definition = true;
      require(!conv.masked_score || !compat_mode, "masked_score", masked_score,
              "must be -inf under the compatibility modes (their definitions remove masked keys)");
      require(!conv.masked_score || impl == "a1_dense_masked", "masked_score", masked_score,
              "needs impl a1_dense_masked (the kernels remove masked keys)");
      require(!dv || impl == "a1_dense_masked", "impl", impl,
              "must be a1_dense_masked with dout under masked_score or a compatibility mode "
              "(the gradients are the float64 definitions, contract §7.4-§7.6)");
      Tensor<double> dout;
      if (dv) dout = api::checked_dout(to_tensor(*dv), a, "dout");
      const api::AttentionInputs ai{std::move(in.q), std::move(in.k), std::move(in.v), a, pattern};
      AttentionResult r = compat_mode ? api::compat_attend(request, ai, scale_ptr(scale), impl)
                                      : api::convention_oracle(ai.q, ai.k, ai.v, pattern,
                                                               scale_ptr(scale), conv);
      if (dv) ref = api::reference_gradients(ai, scale_ptr(scale), conv,
                                             compat_mode ? &request : nullptr, dout);
      // The kernel's own dtype, as the CLI's default --dtype: float32 for k07 and the CPU
      // kernels (their o widened exactly), float64 for the reference ladder.
      const bool f32 = impl == "cpu_k07_hf_listing" || find_kernel(impl).dtype != DType::float64;
      if (f32) out.o32 = tensor_cast<float>(r.o), out.lse32 = tensor_cast<float>(r.lse);
      else out.o = std::move(r.o), out.lse = std::move(r.lse);
    } else {
      // contract §2.6: under padding_align="valid" with seq_len_q != seq_len_k every batch
      // element runs on its own aligned pattern (an explicit mask), as `attend` does.
      api::ValidCounts counts;
      if (conv.padding_align_valid) counts = api::valid_counts(pattern);
      const bool per_batch = conv.padding_align_valid && api::valid_alignment_moves(pattern, counts);
      const Pattern first = per_batch ? api::valid_batch_pattern(pattern, counts, 0) : Pattern{};
      const Kernel& kernel = api::serving_kernel(impl, per_batch ? first : pattern);
      Tensor<double> dout;
      if (dv) {
        grad = &api::backward_for(impl);
        dout = api::checked_dout(to_tensor(*dv), a, "dout");
      }
      auto refuse_nan = [&](const Output& o) {
        const int64_t o_nan = count_nan(o.o) + count_nan(o.o32);
        require(o_nan == 0, "impl", kernel.name,
                "produced " + std::to_string(o_nan) + " NaN values in o");
      };
      if (!per_batch) {
        const Problem problem = make_problem(std::move(in.q), std::move(in.k), std::move(in.v),
                                             pattern, scale_ptr(scale), std::move(mods));
        kernel.run(problem, out);
        refuse_nan(out);
        if (grad != nullptr) gout = api::run_backward(*grad, problem, out, std::move(dout), impl);
      } else {
        for (int64_t b = 0; b < a.batch; ++b) {
          const Pattern pb = b == 0 ? first : api::valid_batch_pattern(pattern, counts, b);
          api::serving_kernel(impl, pb);
          const Problem problem = make_problem(batch_slice(in.q, b), batch_slice(in.k, b),
                                               batch_slice(in.v, b), pb, scale_ptr(scale));
          Output ob;
          kernel.run(problem, ob);
          refuse_nan(ob);
          if (grad != nullptr) {
            const GradOutput gb = api::run_backward(*grad, problem, ob, batch_slice(dout, b), impl);
            api::append_batch(gout.dq, gb.dq), api::append_batch(gout.dk, gb.dk);
            api::append_batch(gout.dv, gb.dv), api::append_batch(gout.dq32, gb.dq32);
            api::append_batch(gout.dk32, gb.dk32), api::append_batch(gout.dv32, gb.dv32);
          }
          api::append_batch(out.o, ob.o), api::append_batch(out.lse, ob.lse);
          api::append_batch(out.o32, ob.o32), api::append_batch(out.lse32, ob.lse32);
        }
      }
    }
  }
  const int64_t lse_nan = count_nan(out.lse) + count_nan(out.lse32);
  const bool f64 = out.o.numel() > 0 || out.o32.numel() == 0;
  py::object o = f64 ? to_numpy(std::move(out.o)) : to_numpy(std::move(out.o32));
  py::object lse = f64 ? to_numpy(std::move(out.lse)) : to_numpy(std::move(out.lse32));
  const py::object none = py::none();
  if (by_definition) {
    if (!dv) return py::make_tuple(o, lse, lse_nan, none, none, none, none, none, none, none);
    auto opt = [](Tensor<double>& t) -> py::object {
      return t.numel() ? py::object(to_numpy(std::move(t))) : py::object(py::none());
    };
    CompatGradientResult& g = ref.g;
    return py::make_tuple(o, lse, lse_nan, to_numpy(std::move(g.dq)), to_numpy(std::move(g.dk)),
                          to_numpy(std::move(g.dv)), opt(g.dq_global), opt(g.dk_global),
                          opt(g.dv_global), none);
  }
  if (grad == nullptr)
    return py::make_tuple(o, lse, lse_nan, none, none, none, none, none, none, none);
  // dσ (contract §2.9) is float64 whatever the backward kernel's dtype.
  const py::object dsinks = gout.dsinks.numel() ? py::object(to_numpy(std::move(gout.dsinks))) : none;
  if (grad->dtype == DType::float64)
    return py::make_tuple(o, lse, lse_nan, to_numpy(std::move(gout.dq)),
                          to_numpy(std::move(gout.dk)), to_numpy(std::move(gout.dv)), none, none,
                          none, dsinks);
  return py::make_tuple(o, lse, lse_nan, to_numpy(std::move(gout.dq32)),
                        to_numpy(std::move(gout.dk32)), to_numpy(std::move(gout.dv32)), none, none,
                        none, dsinks);
}

// Kernel time only (docs/benchmarks.md, "Peers"), through the harness (api/measure.h): the
// Problem is prepared once (the conversion to float64 and the float32 rounding
// make_problem() does are not timed); the first call is checked against the oracle
// (api/oracle.h: the whole output up to 2048² query-key pairs, 16 rows of every (batch,
// head) above) at the kernel's registry tolerance and is the first of the `warmup`
// untimed calls (the one call made even when warmup = 0); an exact kernel that fails is
// refused, never timed (invalid impl = NAME: failed its check ...). Then the other warmup
// calls and `repeats` timed calls of the registry kernel's run(), each into a fresh
// Output as `attend` uses one (allocating the output is part of a call).
// Returns (seconds [repeats] of wall clock per call, steady_clock; o and lse of the last
// timed call, in the kernel's dtype). The GIL is released for the whole loop.
py::tuple time_impl(const py::array& q_arr, const py::array& k_arr, const py::array& v_arr,
                    const PatternSpec& spec, const std::string& impl, std::optional<double> scale,
                    std::optional<py::array> key_padding_mask, int64_t repeats, int64_t warmup,
                    std::optional<double> softcap, std::optional<py::array> alibi_slopes,
                    std::optional<py::array> sinks) {
  require(repeats >= 1, "repeats", repeats, "must be an integer >= 1 (timed calls)");
  require(warmup >= 0, "warmup", warmup, "must be an integer >= 0 (untimed calls first)");
  const ArrayView qv = float_view(q_arr, "q"), kv = float_view(k_arr, "k"),
                  vv = float_view(v_arr, "v");
  const PatternSpec s = with_padding(spec, key_padding_mask);
  ScoreMods mods = score_mods(softcap, alibi_slopes, sinks);
  std::vector<double> seconds;
  Output out;
  {
    py::gil_scoped_release nogil;
    Inputs in = read_inputs(qv, kv, &vv);
    const AttentionShape& a = in.shape;
    const Pattern pattern = materialize(s, sizes_of(a.batch, a.num_heads, a.seq_len_q, a.seq_len_k));
    const Kernel& kernel = api::serving_kernel(impl, pattern);
    const Problem problem = make_problem(std::move(in.q), std::move(in.k), std::move(in.v),
                                         pattern, scale_ptr(scale), std::move(mods));
    require(kernel.serves_features(problem), "impl", kernel.name,
            "does not serve " + feature_names(needed_features(problem.shape, problem.mods)) +
                " (contract §2.7-§2.9)");
    api::TimingPlan plan;
    plan.repeats = repeats;
    plan.warmup = std::max<int64_t>(warmup - 1, 0);  // the checked call is the first
    plan.keep_output = true;
    api::Measurement m = api::measure(kernel, problem, api::make_oracle(problem), plan);
    require(m.timed, "impl", kernel.name,
            "failed its check against the oracle a1_dense_masked (" + m.check.failure +
                "): not timed");
    seconds = std::move(m.seconds);
    out = std::move(m.output);
    const int64_t o_nan = count_nan(out.o) + count_nan(out.o32);
    require(o_nan == 0, "impl", kernel.name,
            "produced " + std::to_string(o_nan) + " NaN values in o");
  }
  const bool f64 = out.o.numel() > 0 || out.o32.numel() == 0;
  py::object o = f64 ? to_numpy(std::move(out.o)) : to_numpy(std::move(out.o32));
  py::object lse = f64 ? to_numpy(std::move(out.lse)) : to_numpy(std::move(out.lse32));
  return py::make_tuple(seconds, o, lse);
}

// `check`: o_dtype / lse_dtype (and grad_dtypes for dq, dk, dv) name the candidate's own
// dtype before any widening ("float16" arrives widened to float64), which picks its
// tolerance as the CLI does. Given dout, the candidate gradients (any of dq, dk, dv) are
// judged against b1_dense_masked_grad as `check --dout --candidate-dq ...` does — or, under
// a finite masked_score or a compatibility mode (compat, global_mask, projections, as
// `check --compat/--global-mask/--q-global...`), against that convention's float64
// definitions (contract §7.4-§7.6), dq_global, dk_global, dv_global (grad_arrs[3..5]) too;
// grad_arrs[6] is dsinks [H_q], judged against b1's dσ with sinks (contract §7.7).
api::CheckResult check(const py::array& q_arr, const py::array& k_arr, const py::array& v_arr,
                 const PatternSpec& spec, const py::array& o_arr, const std::string& o_dtype,
                 std::optional<py::array> lse_arr, const std::string& lse_dtype,
                 std::optional<double> atol, std::optional<double> rtol,
                 std::optional<double> scale, std::optional<py::array> key_padding_mask,
                 const std::map<std::string, std::string>& conventions,
                 std::optional<py::array> dout_arr, std::vector<std::optional<py::array>> grad_arrs,
                 std::vector<std::string> grad_dtypes, const std::string& compat,
                 std::optional<py::array> global_mask, std::vector<py::array> projections,
                 const std::string& layout, const std::string& probes, double probe_budget,
                 const std::string& tolerance_rule, double factor, double floor,
                 const std::string& naive_dtype, std::optional<double> softcap,
                 std::optional<py::array> alibi_slopes, std::optional<py::array> sinks) {
  // `check --tolerance-rule reference-error --factor F --floor X --naive-dtype D` (contract
  // §4.10): factor and floor arrive checked (finite, >= 1 and >= 0).
  require(tolerance_rule == "table" || tolerance_rule == "reference-error", "tolerance_rule",
          tolerance_rule, "must be table or reference-error");
  const bool by_reference = tolerance_rule == "reference-error";
  api::ToleranceRule rule;
  rule.factor = factor;
  rule.floor = floor;
  if (!naive_dtype.empty()) {
    require(naive_dtype == "float32" || naive_dtype == "float16" || naive_dtype == "bfloat16",
            "naive_dtype", naive_dtype, "must be float32, float16 or bfloat16");
    rule.dtype = naive_dtype == "float32"   ? api::LowDtype::float32
                 : naive_dtype == "float16" ? api::LowDtype::float16
                                            : api::LowDtype::bfloat16;
  } else {  // the candidate's own dtype, as the CLI reads it from the file
    rule.dtype = o_dtype == "float16" ? api::LowDtype::float16 : api::LowDtype::float32;
  }
  require(!by_reference || !dout_arr, "tolerance_rule", tolerance_rule,
          "judges o and lse only (its yardstick is a naive forward pass): with dout, use "
          "tolerance_rule=\"table\" (contract §4.10)");
  // Convention flags (api/conventions.h) by their CLI names without "--"; the layout is
  // handled in Python (a transpose), so bhsd arrives here.
  api::ConventionFlags cf;
  for (const auto& [key, value] : conventions) {
    if (key == "lse_base") cf.lse_base = value;
    else if (key == "padded_queries") cf.padded_queries = value;
    else if (key == "key_padding_polarity") cf.key_padding_polarity = value;
    else if (key == "causal_align") cf.causal_align = value;
    else if (key == "masked_score") cf.masked_score = value;
    else if (key == "padding_align") cf.padding_align = value;
    else throw InvalidArgument("conventions", key, "must be lse_base, padded_queries, "
                               "key_padding_polarity, causal_align, masked_score or padding_align");
  }
  const api::Conventions conv = api::parse_conventions(cf);
  const api::ProbeOptions probe_options =
      api::parse_probe_options(probes, probe_budget, "probes", "probe_budget");
  auto tol_of = [&](const std::string& dtype) {
    Tolerance t = api::tolerance_for(dtype == "float16"   ? api::CandidateDtype::float16
                                     : dtype == "float32" ? api::CandidateDtype::float32
                                                          : api::CandidateDtype::float64);
    if (atol) t.atol = *atol;
    if (rtol) t.rtol = *rtol;
    return t;
  };
  require(grad_arrs.size() == 7 && grad_dtypes.size() == 7, "gradients", grad_arrs.size(),
          "must be (dq, dk, dv, dq_global, dk_global, dv_global, dsinks)");
  const char* grad_names[7] = {"dq", "dk", "dv", "dq_global", "dk_global", "dv_global", "dsinks"};
  const ArrayView qv = float_view(q_arr, "q"), kv = float_view(k_arr, "k"),
                  vv = float_view(v_arr, "v"), ov = float_view(o_arr, "o");
  std::optional<ArrayView> lv, dov, gv[7];
  if (lse_arr) lv = float_view(*lse_arr, "lse");
  if (dout_arr) dov = float_view(*dout_arr, "dout");
  for (int t = 0; t < 7; ++t)
    if (grad_arrs[t]) gv[t] = float_view(*grad_arrs[t], grad_names[t]);
  std::optional<Tensor<uint8_t>> gm;
  if (global_mask) gm = mask_tensor(*global_mask, "global_mask");
  std::vector<ArrayView> pv;
  const char* proj_names[3] = {"q_global", "k_global", "v_global"};
  for (size_t t = 0; t < projections.size() && t < 3; ++t)
    pv.push_back(float_view(projections[t], proj_names[t]));
  for (int t = 3; t < 6; ++t)
    require(!gv[t] || pv.size() == 3, grad_names[t], "array",
            "needs q_global, k_global and v_global (the projections it is the gradient of)");
  const PatternSpec s = with_padding(spec, key_padding_mask);
  const Tolerance o_tol = tol_of(o_dtype), lse_tol = tol_of(lse_dtype);
  const ScoreMods mods = score_mods(softcap, alibi_slopes, sinks);
  api::CheckResult j;  // bound in report_bindings.cpp
  {
    py::gil_scoped_release nogil;
    // A shape error that the other layout or grouped-query attention explains says so
    // (api/shape_hint.h): check_shapes(true) repeats the shape checks below with q/k/v/o
    // read in the other layout (they arrive bhsd: Python transposed them for "bshd").
    auto check_shapes = [&](bool swap) {
      auto shape4 = [swap](const Shape& s, const char* what) {
        const Shape x = as_rank4(s, what);
        return swap ? Shape{x[0], x[2], x[1], x[3]} : x;
      };
      const AttentionShape a = attention_shape(shape4(qv.shape, "q"), shape4(kv.shape, "k"),
                                               shape4(vv.shape, "v"), KvHeads::grouped);
      materialize(s, sizes_of(a.batch, a.num_heads, a.seq_len_q, a.seq_len_k));
      api::require_candidate_shape(shape4(ov.shape, "o"),
                                   {a.batch, a.num_heads, a.seq_len_q, a.head_dim_v}, "o");
      if (lv) api::require_candidate_shape(lv->shape, {a.batch, a.num_heads, a.seq_len_q}, "lse");
    };
    Inputs in;
    Pattern pattern;
    Tensor<double> o, lse;
    try {
      in = read_inputs(qv, kv, &vv);
      const AttentionShape& a = in.shape;
      pattern = api::apply_pattern_conventions(
          materialize(s, sizes_of(a.batch, a.num_heads, a.seq_len_q, a.seq_len_k)), conv);
      // Candidates' shapes are checked before the oracle's O(n^2) work.
      o = to_tensor(ov);
      api::require_candidate_shape(o.shape, {a.batch, a.num_heads, a.seq_len_q, a.head_dim_v}, "o");
      if (lv) {
        lse = to_tensor(*lv);
        api::require_candidate_shape(lse.shape, {a.batch, a.num_heads, a.seq_len_q}, "lse");
      }
    } catch (const InvalidArgument& e) {
      std::string hint;
      try {
        hint = api::shape_error_hint(
            e, as_rank4(qv.shape, "q"), as_rank4(kv.shape, "k"), as_rank4(vv.shape, "v"),
            [&] { check_shapes(true); },
            layout == "bshd" ? "layout=\"bhsd\"" : "layout=\"bshd\"", layout != "bshd");
      } catch (const std::exception&) {
      }
      api::throw_with_hint(e, hint);
    }
    const AttentionShape& a = in.shape;
    validate_score_mods(mods, a.batch, a.num_heads);
    const api::CompatRequest request = compat_request(compat, gm, pv);
    const bool compat_mode = !request.compat.empty() || request.longformer();
    api::require_combinable(a, mods, conv, compat_mode, Spelling::keyword);
    require(!gv[6] || mods.has_sinks(), "dsinks", "array",
            "needs sinks (the logits it is the gradient of)");
    Tensor<double> dout, grads[7];
    api::GradientCandidate cands[7];
    if (dov) {
      dout = api::checked_dout(to_tensor(*dov), a, "dout");
      const Shape want[7] = {{a.batch, a.num_heads, a.seq_len_q, a.head_dim},
                             {a.batch, a.num_kv_heads, a.seq_len_k, a.head_dim},
                             {a.batch, a.num_kv_heads, a.seq_len_k, a.head_dim_v},
                             {a.batch, a.num_heads, a.seq_len_q, a.head_dim},
                             {a.batch, a.num_kv_heads, a.seq_len_k, a.head_dim},
                             {a.batch, a.num_kv_heads, a.seq_len_k, a.head_dim_v},
                             {a.num_heads}};
      for (int t = 0; t < 7; ++t) {
        if (!gv[t]) continue;
        grads[t] = to_tensor(*gv[t]);
        api::require_candidate_shape(grads[t].shape, want[t], grad_names[t]);
        cands[t] = {&grads[t], tol_of(grad_dtypes[t])};
      }
    }
    require(!compat_mode || !by_reference, "tolerance_rule", tolerance_rule,
            "must be table under the compatibility modes (the naive run is the normal pattern's)");
    require(!by_reference || (!mods.any() && a.num_kv_heads == a.num_heads), "tolerance_rule",
            tolerance_rule, "must be table with grouped-query heads, softcap, alibi_slopes or "
            "sinks (its naive run is plain attention)");
    if (compat_mode) {
      // The mode's float64 definition is the oracle (contract §3.12), as `check --compat`.
      require(!conv.masked_score, "masked_score", cf.masked_score,
              "must be -inf under the compatibility modes (their definitions remove masked keys)");
      const api::AttentionInputs ai{in.q, in.k, in.v, a, pattern};
      AttentionResult oracle = api::compat_attend(request, ai, scale_ptr(scale), "a1_dense_masked");
      if (conv.lse_base2)
        for (double& x : oracle.lse.data) x /= std::log(2.0);
      api::CheckContext ctx;
      ctx.q = &in.q, ctx.k = &in.k, ctx.v = &in.v, ctx.scale = scale_ptr(scale);
      ctx.conv = conv, ctx.raw_spec = &s, ctx.compat = true;
      ctx.hint = request.compat.empty() && !request.projections();
      ctx.probes = probe_options;
      if (gm) ctx.global_mask = &*gm;
      j = api::check_against(oracle, pattern, a, o, o_tol, lv ? &lse : nullptr, lse_tol, ctx);
      j.compat = request.compat;
      j.global_projections = request.projections();
    } else {
      j = api::check_against_oracle(in.q, in.k, in.v, pattern, scale_ptr(scale), o, o_tol,
                                    lv ? &lse : nullptr, lse_tol, conv, &s,
                                    by_reference ? &rule : nullptr, probe_options, &mods);
    }
    if (dov) {  // the gradient definition of these conventions (contract §7)
      const api::AttentionInputs ai{in.q, in.k, in.v, a, pattern};
      const api::ReferenceGradients ref = api::reference_gradients(
          ai, scale_ptr(scale), conv, compat_mode ? &request : nullptr, dout, &mods);
      const Tensor<double>* refs[7] = {&ref.g.dq,        &ref.g.dk,        &ref.g.dv,
                                       &ref.g.dq_global, &ref.g.dk_global, &ref.g.dv_global,
                                       &ref.g.dsinks};
      std::vector<api::NamedGradientCandidate> named;
      for (int t = 0; t < 7; ++t) named.push_back({grad_names[t], refs[t], cands[t]});
      const api::GradientInputs probe_inputs{in.q, in.k, in.v, dout, scale_ptr(scale), probe_options};
      // The gradient probes re-run plain b1: not with grouped heads or score modifiers.
      const bool modern = mods.any() || a.num_kv_heads != a.num_heads;
      api::check_gradients_against(j, ref.oracle, named, pattern,
                                   conv.padding_align_valid || modern ? nullptr : &probe_inputs);
      if (conv.padding_align_valid) api::restate_worst_rows(j, pattern);  // contract §2.6
    }
  }
  return j;
}

// Approximations (reference/approx/): dense, not causal, no key padding.
py::tuple approx_performer_favor(const py::array& q_arr, const py::array& k_arr, const py::array& v_arr,
                          int64_t num_features, uint64_t seed, bool orthogonal,
                          std::optional<double> scale) {
  const ArrayView qv = float_view(q_arr, "q"), kv = float_view(k_arr, "k"),
                  vv = float_view(v_arr, "v");
  AttentionResult r;
  {
    py::gil_scoped_release nogil;
    const Inputs in = read_inputs(qv, kv, &vv);
    const AttentionShape& a = in.shape;
    const Pattern pattern =
        materialize(PatternSpec{}, sizes_of(a.batch, a.num_heads, a.seq_len_q, a.seq_len_k));
    FavorOptions options;
    options.num_features = num_features;
    options.seed = seed;
    options.orthogonal = orthogonal;
    r = sparseattn::performer_favor(in.q, in.k, in.v, pattern, scale_ptr(scale), options);
  }
  return py::make_tuple(to_numpy(std::move(r.o)), to_numpy(std::move(r.lse)));
}

py::tuple approx_nystrom(const py::array& q_arr, const py::array& k_arr, const py::array& v_arr,
                  int64_t num_landmarks, const std::string& pinv, int64_t pinv_iterations,
                  std::optional<double> scale) {
  require(pinv == "iterative" || pinv == "exact", "pinv", pinv, "must be iterative or exact");
  const ArrayView qv = float_view(q_arr, "q"), kv = float_view(k_arr, "k"),
                  vv = float_view(v_arr, "v");
  AttentionResult r;
  int64_t undefined = 0;
  {
    py::gil_scoped_release nogil;
    const Inputs in = read_inputs(qv, kv, &vv);
    const AttentionShape& a = in.shape;
    const Pattern pattern =
        materialize(PatternSpec{}, sizes_of(a.batch, a.num_heads, a.seq_len_q, a.seq_len_k));
    NystromOptions options;
    options.num_landmarks = num_landmarks;
    options.pinv = pinv == "exact" ? PinvMethod::exact : PinvMethod::iterative;
    options.pinv_iterations = pinv_iterations;
    r = nystrom_attention(in.q, in.k, in.v, pattern, scale_ptr(scale), options, &undefined);
  }
  return py::make_tuple(to_numpy(std::move(r.o)), to_numpy(std::move(r.lse)), undefined);
}

// ---- graph, real data ---------------------------------------------------------------------

// layers: one (spec, num_heads) per layer, bottom first; the last repeats past the stack.
py::object reach(const std::vector<std::pair<PatternSpec, int64_t>>& layers, int64_t seq_len,
                 int64_t num_layers, int64_t token, std::optional<std::pair<int64_t, int64_t>> path,
                 const std::string& level) {
  require(!layers.empty(), "pattern", "[]", "must be a Pattern or a non-empty list of them");
  require(num_layers >= 1, "layers", num_layers, "must be an integer >= 1");
  api::ReachRequest request;
  request.token = token;
  request.path = path;
  if (level == "token") request.level = graph::LevelChoice::token;
  else if (level == "block") request.level = graph::LevelChoice::block;
  else require(level == "auto", "level", level, "must be auto, token or block");
  nlohmann::json j;
  {
    py::gil_scoped_release nogil;
    graph::LayerStack stack;
    std::vector<std::shared_ptr<const Pattern>> built;
    for (const auto& [spec, heads] : layers)
      built.push_back(std::make_shared<const Pattern>(
          materialize(spec, sizes_of(1, heads, seq_len, seq_len))));
    for (int64_t l = 0; l < num_layers; ++l)
      stack.layers.push_back(built[std::min<size_t>(static_cast<size_t>(l), built.size() - 1)]);
    j = api::reach_json(api::compute_reach(stack, request), request);
  }
  return to_python(j);
}

py::object analyze(const py::array& q_arr, const py::array& k_arr, const PatternSpec& spec,
                   std::optional<std::vector<int64_t>> windows, std::optional<double> scale) {
  const ArrayView qv = float_view(q_arr, "q"), kv = float_view(k_arr, "k");
  std::string json;
  {
    py::gil_scoped_release nogil;
    const Inputs in = read_inputs(qv, kv, nullptr);
    const Shape& qs = in.q.shape;
    const Pattern pattern = materialize(spec, sizes_of(qs[0], qs[1], qs[2], in.k.shape[2]));
    const std::vector<int64_t> w = windows ? *windows : realdata::default_windows();
    for (int64_t x : w) require(x >= 0, "windows", x, "must be one-sided widths >= 0, e.g. 1,4,16");
    require(!w.empty(), "windows", "[]", "must name at least one width");
    json = realdata::locality_json(
        realdata::analyze_locality(in.q, in.k, pattern, w, scale_ptr(scale)), pattern);
  }
  return to_python(nlohmann::json::parse(json));
}

py::array positions_extended(const py::array& table_arr, int64_t length, double alpha) {
  const ArrayView tv = float_view(table_arr, "table");
  Tensor<double> out;
  {
    py::gil_scoped_release nogil;
    const Tensor<double> table = to_tensor(tv);
    api::require_finite(table, "table");
    out = realdata::extend_positions(table, length, alpha);
  }
  return to_numpy(std::move(out));
}

}  // namespace

}  // namespace sparseattn::python

PYBIND11_MODULE(_sparseattn, m) {
  using namespace sparseattn;
  using namespace sparseattn::python;
  m.doc() = "sparseattn's C++ libraries (private; use the sparseattn package)";
  py::register_exception_translator(&translate);

  py::class_<PatternSpec>(m, "Spec")
      .def("describe", [](const PatternSpec& s) { return describe(s); })
      .def_property_readonly("kind", [](const PatternSpec& s) { return pattern_kind_name(s.kind); });

  m.def("make_spec", &make_spec, py::arg("kind"), py::arg("causal"), py::arg("window"),
        py::arg("dilation"), py::arg("global_tokens"), py::arg("num_random"),
        py::arg("block_size"), py::arg("num_random_blocks"), py::arg("num_global_tokens"),
        py::arg("seed"), py::arg("random_table"), py::arg("segment_ids"), py::arg("mask"),
        py::arg("per_head"), py::arg("window_left") = py::none(),
        py::arg("window_right") = py::none(), py::arg("chunk_size") = py::none(),
        py::arg("kernel_size") = py::none());
  m.def("mask", &mask);
  m.def("info", &info);
  m.def("random_table", &random_table);
  m.def("block_mask", &block_mask);
  m.def("attend", &attend);
  m.def("time_impl", &time_impl);
  register_report_bindings(m);  // CheckResult, TensorReport and their renderers
  register_sweep_bindings(m);   // sweep (python/src/sweep_bindings.cpp)
  register_field_bindings(m);   // field_spellings, spell_flag (python/src/field_bindings.cpp)
  register_mask_bindings(m);    // convention_mask (python/src/mask_bindings.cpp)
  register_layout_bindings(m);  // attend_layout, check_layout (python/src/layout_bindings.cpp)
  register_preset_bindings(m);  // preset_names, preset_reach, preset_info (python/src/preset_bindings.cpp)
  register_selected_bindings(m);  // make_selected_spec, select_* (python/src/selected_bindings.cpp)
  m.def("check", &check);
  m.def("performer_favor", &approx_performer_favor);
  m.def("nystrom", &approx_nystrom);
  m.def("reach", &reach);
  m.def("analyze", &analyze);
  m.def("extend_positions", &positions_extended);
  m.def("impls", [] { return to_python(api::impls_json()); });
  m.def("cpu_isa", [] { return cpu::isa_summary(); });
  m.def("bf16_engine", [] { return cpu::bf16_engine_summary(); });
  m.def("grad_impls", [] { return to_python(api::grad_impls_json()); });
}
