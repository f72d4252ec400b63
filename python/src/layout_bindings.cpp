// _sparseattn.attend_layout / check_layout / layout_info (python/src/layout_bindings.h).
#include "python/src/layout_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/layout_check.h"
#include "api/layout_flags.h"
#include "api/layout_info.h"
#include "api/inputs.h"
#include "api/results.h"
#include "core/error.h"
#include "core/field.h"
#include "python/src/arrays.h"

namespace sparseattn::python {

namespace py = pybind11;

namespace {

// An integer array (int8 .. int64, unsigned too) as int64 values; FieldError naming `field`
// for a float or bool array (contract §2.10: cu_seqlens are integers).
Tensor<int64_t> index_tensor(const py::array& a, Field field) {
  const char kind = a.dtype().kind();
  require_field(kind == 'i' || kind == 'u', field, " dtype", std::string(py::str(a.dtype())),
                "must be an integer dtype (int32 or int64)");
  const auto wide = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  Tensor<int64_t> t;
  for (py::ssize_t d = 0; d < wide.ndim(); ++d) t.shape.push_back(wide.shape(d));
  t.data.assign(wide.data(), wide.data() + wide.size());
  return t;
}

std::vector<int64_t> index_list(const py::array& a, Field field, const char* shape) {
  Tensor<int64_t> t = index_tensor(a, field);
  require_field(t.rank() == 1, field, " shape", shape_text(t.shape), std::string("must be ") + shape);
  return t.data;
}

// A kernel's output in its own dtype, as NumPy (float64 kernels fill x64, the others x32).
py::array either(Tensor<double>& x64, Tensor<float>& x32) {
  return x64.numel() > 0 || x32.numel() == 0 ? to_numpy(std::move(x64)) : to_numpy(std::move(x32));
}

// The layout the keywords describe, checked as read_layout checks the flags: both cu_seqlens
// lists or neither, block_table only with cache_seqlens, a packed batch without a cache.
// Every function of this file that takes the layout keywords reads them here.
api::SeqLayout seq_layout(const std::optional<py::array>& cu_q, const std::optional<py::array>& cu_k,
                          const std::optional<py::array>& cache_seqlens,
                          const std::optional<py::array>& block_table) {
  api::SeqLayout out;
  require_field(cu_q.has_value() == cu_k.has_value(), cu_q ? Field::cu_seqlens_k : Field::cu_seqlens_q,
                "", "missing", "must be given with the other cu_seqlens list (both, or neither; "
                               "contract §2.10)");
  require_field(!block_table || cache_seqlens, Field::cache_seqlens, "", "missing",
                "must be given with block_table (the filled length of each element, contract §2.12)");
  require_field(!cu_q || !cache_seqlens, Field::cache_seqlens, "", "given",
                "must not be given with cu_seqlens_q: a packed batch has no cache (contract §2.10-§2.11)");
  if (cu_q) {
    Varlen vl;
    vl.cu_seqlens_q = index_list(*cu_q, Field::cu_seqlens_q, "[B + 1]");
    vl.cu_seqlens_k = index_list(*cu_k, Field::cu_seqlens_k, "[B + 1]");
    out.varlen = std::move(vl);
  } else if (cache_seqlens) {
    KvCache c;
    c.cache_seqlens = index_list(*cache_seqlens, Field::cache_seqlens, "[B]");
    if (block_table) {
      const Tensor<int64_t> t = index_tensor(*block_table, Field::block_table);
      require_field(t.rank() == 2, Field::block_table, " shape", shape_text(t.shape),
                    "must be [B, max_pages]");
      c.block_table = t.data;
      c.max_pages = t.dim(1);
    }
    out.cache = std::move(c);
  }
  return out;
}

// The call as `attend`/`check` describe it; the layout keywords read by seq_layout.
api::LayoutCall layout_call(const py::array& q, const py::array& k, const py::array& v,
                            const PatternSpec& spec, std::optional<double> scale,
                            std::optional<py::array> cu_q, std::optional<py::array> cu_k,
                            std::optional<py::array> cache_seqlens,
                            std::optional<py::array> block_table, const std::string& layout,
                            const std::string& lse_base, std::optional<double> softcap,
                            std::optional<py::array> alibi, std::optional<py::array> sinks) {
  api::LayoutCall call;
  call.layout = seq_layout(cu_q, cu_k, cache_seqlens, block_table);
  api::ConventionFlags cf;
  cf.layout = layout;
  cf.lse_base = lse_base;
  call.conv = api::parse_conventions(cf);
  api::require_layout_conventions(call.conv, call.layout, false);
  call.spec = spec;
  api::require_layout_spec(call.spec, call.layout);
  call.q = to_tensor(float_view(q, "q"));
  call.k = to_tensor(float_view(k, "k"));
  call.v = to_tensor(float_view(v, "v"));
  call.scale = scale;
  call.mods = score_mods(softcap, alibi, sinks);
  api::require_finite_layout(call, "");  // a cache's empty slots are never read
  return call;
}

py::tuple attend_layout(const py::array& q, const py::array& k, const py::array& v,
                        const PatternSpec& spec, const std::string& impl,
                        std::optional<double> scale, std::optional<py::array> cu_q,
                        std::optional<py::array> cu_k, std::optional<py::array> cache_seqlens,
                        std::optional<py::array> block_table, const std::string& layout,
                        const std::string& lse_base, std::optional<double> softcap,
                        std::optional<py::array> alibi, std::optional<py::array> sinks,
                        std::optional<py::array> dout) {
  api::LayoutCall call = layout_call(q, k, v, spec, scale, cu_q, cu_k, cache_seqlens, block_table,
                                     layout, lse_base, softcap, alibi, sinks);
  std::optional<Tensor<double>> d;
  if (dout) d = to_tensor(float_view(*dout, "dout"));
  Output out;
  GradOutput g;
  const Kernel& kernel = find_kernel(impl);
  const GradKernel* grad = dout ? &api::backward_for(impl) : nullptr;
  {
    py::gil_scoped_release nogil;
    if (grad != nullptr) g = api::attend_layout_grad(*grad, call, *d);
    out = api::attend_layout(kernel, call);
  }
  if (grad == nullptr) return py::make_tuple(either(out.o, out.o32),
                                             either(out.lse, out.lse32));
  py::object dsinks = py::none();
  if (g.dsinks.numel() > 0) dsinks = to_numpy(std::move(g.dsinks));
  return py::make_tuple(either(out.o, out.o32), either(out.lse, out.lse32), either(g.dq, g.dq32),
                        either(g.dk, g.dk32), either(g.dv, g.dv32), dsinks);
}

Tolerance tolerance_of(const std::string& dtype, std::optional<double> atol, std::optional<double> rtol) {
  Tolerance t = dtype == "float64"   ? api::tolerance_for(api::CandidateDtype::float64)
                : dtype == "float32" ? api::tolerance_for(api::CandidateDtype::float32)
                                     : api::tolerance_for(api::CandidateDtype::float16);
  if (atol) t.atol = *atol;
  if (rtol) t.rtol = *rtol;
  return t;
}

// check(..., cu_seqlens_q=...): o (and lse) and, with dout, the gradient candidates (dq, dk,
// dv, dsinks: packed like q, k, v; contract §7.8) judged sequence by sequence.
api::CheckResult check_layout(const py::array& q, const py::array& k, const py::array& v,
                              const PatternSpec& spec, const py::array& o, const std::string& o_dtype,
                              std::optional<py::array> lse, const std::string& lse_dtype,
                              std::optional<double> atol, std::optional<double> rtol,
                              std::optional<double> scale, std::optional<py::array> cu_q,
                              std::optional<py::array> cu_k, std::optional<py::array> cache_seqlens,
                              std::optional<py::array> block_table, const std::string& layout,
                              const std::string& lse_base, const std::string& probes,
                              double probe_budget, std::optional<double> softcap,
                              std::optional<py::array> alibi, std::optional<py::array> sinks,
                              std::optional<py::array> dout,
                              const std::vector<std::optional<py::array>>& grad_arrs,
                              const std::vector<std::string>& grad_dtypes) {
  require(grad_arrs.size() == 4 && grad_dtypes.size() == 4, "gradients", grad_arrs.size(),
          "must be (dq, dk, dv, dsinks)");
  const api::LayoutCall call = layout_call(q, k, v, spec, scale, cu_q, cu_k, cache_seqlens,
                                           block_table, layout, lse_base, softcap, alibi, sinks);
  const api::ProbeOptions options = api::parse_probe_options(probes, probe_budget, "probes", "probe_budget");
  Tensor<double> ot = to_tensor(float_view(o, "o"));
  api::require_candidate_shape(ot.shape, api::layout_o_shape(call), "o");
  ot.shape = api::layout_o_shape(call);
  std::optional<Tensor<double>> lt;
  if (lse) {
    lt = to_tensor(float_view(*lse, "lse"));
    api::require_candidate_shape(lt->shape, api::layout_lse_shape(call), "lse");
    lt->shape = api::layout_lse_shape(call);
  }
  // Gradients (contract §7.8): shapes as the CLI checks them, naming the keywords.
  Tensor<double> dt, gt[4];
  api::LayoutGradients grads;
  if (dout) {
    const api::LayoutGradShapes want = api::layout_grad_shapes(call);  // refuses a cache
    require(!grad_arrs[3] || call.mods.has_sinks(), "dsinks", "array",
            "needs sinks (the logits it is the gradient of)");
    dt = to_tensor(float_view(*dout, "dout"));
    api::require_candidate_shape(dt.shape, want.dout, "dout");
    dt.shape = want.dout;
    api::require_finite(dt, "dout");
    grads.dout = &dt;
    const char* names[4] = {"dq", "dk", "dv", "dsinks"};
    const Shape* shapes[4] = {&want.dq, &want.dk, &want.dv, &want.dsinks};
    api::GradientCandidate* slots[4] = {&grads.dq, &grads.dk, &grads.dv, &grads.dsinks};
    for (int t = 0; t < 4; ++t) {
      if (!grad_arrs[static_cast<size_t>(t)]) continue;
      gt[t] = to_tensor(float_view(*grad_arrs[static_cast<size_t>(t)], names[t]));
      api::require_candidate_shape(gt[t].shape, *shapes[t], names[t]);
      gt[t].shape = *shapes[t];
      *slots[t] = {&gt[t], tolerance_of(grad_dtypes[static_cast<size_t>(t)], atol, rtol)};
    }
  }
  py::gil_scoped_release nogil;
  return api::check_layout(call, ot, tolerance_of(o_dtype, atol, rtol), lt ? &*lt : nullptr,
                           tolerance_of(lse_dtype, atol, rtol), options, dout ? &grads : nullptr);
}

// Pattern.mask(cu_seqlens_q=..., cu_seqlens_k=...): [H, total_q, total_k] uint8.
py::array varlen_mask(const PatternSpec& spec, int64_t num_heads, std::optional<py::array> cu_q,
                      std::optional<py::array> cu_k) {
  require_field(cu_q.has_value(), Field::cu_seqlens_q, "", "missing",
                "must be given with cu_seqlens_k (both lists, or neither; contract §2.10)");
  require_field(cu_k.has_value(), Field::cu_seqlens_k, "", "missing",
                "must be given with cu_seqlens_q (both lists, or neither; contract §2.10)");
  Varlen vl;
  vl.cu_seqlens_q = index_list(*cu_q, Field::cu_seqlens_q, "[B + 1]");
  vl.cu_seqlens_k = index_list(*cu_k, Field::cu_seqlens_k, "[B + 1]");
  Tensor<uint8_t> m = api::varlen_allowed_mask(spec, num_heads, vl);
  return to_numpy(std::move(m));
}

// Pattern.info(cu_seqlens_q=..., cu_seqlens_k=...) / Pattern.info(seq_len_q, cache_seqlens=...):
// `info --json` under a layout (api/layout_info.h), the same request the CLI's flags make.
// seq_len_q: the queries of each cache element (0 for a packed batch, whose lists give them).
py::object layout_info(const PatternSpec& spec, int64_t num_heads, int64_t head_dim,
                       int64_t seq_len_q, std::optional<py::array> cu_q,
                       std::optional<py::array> cu_k, std::optional<py::array> cache_seqlens,
                       std::optional<py::array> block_table) {
  const api::SeqLayout layout = seq_layout(cu_q, cu_k, cache_seqlens, block_table);
  nlohmann::json j;
  {
    py::gil_scoped_release nogil;
    j = api::layout_info_json(api::layout_info(spec, num_heads, head_dim, layout, seq_len_q));
  }
  // The CLI prints this JSON; parsing the same text gives Python the same numbers.
  return py::module_::import("json").attr("loads")(j.dump());
}

// time_impl(..., cu_seqlens_q=...): the walk (or the in-place kernel) timed as a user runs
// it, preparation included; the first untimed call checked against the per-sequence oracle
// at the kernel's registry tolerance (an exact kernel that fails is never timed).
py::tuple time_layout(const py::array& q, const py::array& k, const py::array& v,
                      const PatternSpec& spec, const std::string& impl, std::optional<double> scale,
                      std::optional<py::array> cu_q, std::optional<py::array> cu_k,
                      std::optional<py::array> cache_seqlens, std::optional<py::array> block_table,
                      const std::string& layout, int64_t repeats, int64_t warmup,
                      std::optional<double> softcap, std::optional<py::array> alibi,
                      std::optional<py::array> sinks) {
  const api::LayoutCall call = layout_call(q, k, v, spec, scale, cu_q, cu_k, cache_seqlens,
                                           block_table, layout, "e", softcap, alibi, sinks);
  const Kernel& kernel = find_kernel(impl);
  std::vector<double> seconds;
  Output out;
  {
    py::gil_scoped_release nogil;
    out = api::attend_layout(kernel, call);
    const Tensor<double> o = out.o.numel() ? out.o : tensor_cast<double>(out.o32);
    const Tensor<double> lse = out.lse.numel() ? out.lse : tensor_cast<double>(out.lse32);
    const Tolerance tol{kernel.atol, kernel.rtol};
    const api::CheckResult r = api::check_layout(call, o, tol, &lse, tol, api::ProbeOptions{});
    require_field(!kernel.exact || r.pass, Field::impl, "", impl,
                  "failed its check against the oracle (" + r.o.reason +
                      "); an exact kernel that fails is not timed (contract §4.11)");
    for (int64_t i = 0; i < warmup; ++i) out = api::attend_layout(kernel, call);
    for (int64_t i = 0; i < repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      out = api::attend_layout(kernel, call);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  return py::make_tuple(seconds, either(out.o, out.o32), either(out.lse, out.lse32));
}

}  // namespace

void register_layout_bindings(py::module_& m) {
  m.def("time_layout", &time_layout);
  m.def("varlen_mask", &varlen_mask);
  m.def("attend_layout", &attend_layout);
  m.def("check_layout", &check_layout);
  m.def("layout_info", &layout_info);
}

}  // namespace sparseattn::python
