// _sparseattn.sweep: the same plan_sweep() and run_sweep() as `sparseattn sweep`
// (api/sweep.h), errors naming the Python keyword (Spelling::keyword). The result is the
// JSON `sweep` writes to sweep.json, as Python objects, without the figures.
#include "python/src/sweep_bindings.h"

#include <pybind11/stl.h>

#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/seq_range.h"
#include "api/sweep.h"
#include "core/field.h"
#include "pattern/spec.h"
#include "python/src/arrays.h"

namespace sparseattn::python {

namespace py = pybind11;

namespace {

py::object json_to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

// seq_len as sparseattn.sweep() passed it: the CLI's text ("1024:8192", "64,128") or the
// integers themselves.
std::vector<int64_t> seq_lens_of(const py::object& seq_len) {
  if (py::isinstance<py::str>(seq_len))
    return api::parse_seq_lens(spell_flag("--seq-len", Spelling::keyword), seq_len.cast<std::string>());
  return seq_len.cast<std::vector<int64_t>>();
}

py::object sweep(const PatternSpec& spec, int64_t num_heads, int64_t head_dim,
                 const py::object& seq_len, const std::string& impl, const std::string& target,
                 const std::string& dtype, int64_t repeats, double max_seconds,
                 const std::string& dense_baseline, int64_t fit_from, bool quiet,
                 std::optional<py::array> key_padding_mask, int64_t num_kv_heads,
                 std::optional<double> softcap, std::optional<py::array> alibi_slopes,
                 std::optional<py::array> sinks, int64_t threads) {
  api::SweepRequest req;
  // As `sweep --num-kv-heads --softcap --alibi-slopes --sinks` (contract §2.7-§2.9), read
  // with the GIL held; plan_sweep checks them (errors spelled as the keywords).
  req.num_kv_heads = num_kv_heads;  // 0: num_heads
  req.mods.softcap = softcap;
  if (alibi_slopes) req.mods.alibi_slopes = to_tensor(float_view(*alibi_slopes, "alibi_slopes"));
  if (sinks) req.mods.sinks = to_tensor(float_view(*sinks, "sinks"));
  req.spec = spec;
  // As `sweep --key-padding-mask`: [1, seq_len], so one seq_len only.
  if (key_padding_mask) req.spec.key_padding_mask = mask_tensor(*key_padding_mask, "key_padding_mask");
  req.num_heads = num_heads;
  req.head_dim = head_dim;
  req.seq_lens = seq_lens_of(seq_len);
  req.impl = impl;
  req.target = target;
  req.dtype = dtype;
  req.repeats = repeats;
  req.max_seconds = max_seconds;
  req.dense_baseline = dense_baseline;
  req.fit_from = fit_from;
  req.threads = threads;  // 0: auto (api/sweep.h auto_threads)
  nlohmann::json doc;
  {
    py::gil_scoped_release nogil;
    std::vector<std::string> notes;
    api::SweepConfig c = api::plan_sweep(req, notes, Spelling::keyword);
    // No heap counter here: it replaces the program's operator new (api/alloc_tracker.h),
    // which a module loaded into Python must not do; peak_bytes is the CLI's.
    if (!quiet) c.progress = &std::cerr;
    api::SweepResult r = api::run_sweep(c);
    r.notes.insert(r.notes.begin(), notes.begin(), notes.end());
    doc = api::run_context();
    doc["pattern"] = describe(c.spec);
    doc["num_heads"] = c.num_heads;
    doc["num_kv_heads"] = c.num_kv_heads;
    doc["score_mods"] = describe(c.mods);
    doc["head_dim"] = c.head_dim;
    doc["batch"] = 1;
    doc["seq_lens"] = c.seq_lens;
    doc["repeats"] = c.repeats;
    doc["max_seconds"] = c.max_seconds;
    doc["dense_baseline"] =
        c.dense_baseline ? nlohmann::json(c.dense_baseline->name) : nlohmann::json(nullptr);
    doc["fit_from"] = c.fit_from;
    doc["omp_threads"] = c.threads;  // run_sweep ran on these (the caller's count restored)
    doc["threads"] = c.threads;
    doc["load"] = api::load_json(r.load);
    doc["fit_measure"] = api::measure_key(r.load.measure);
    doc["fits"] = api::sweep_fits(r, c.fit_from);
    doc["notes"] = r.notes;
    doc["failures"] = r.failures;
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& [name, why] : r.skipped) skipped.push_back({{"impl", name}, {"reason", why}});
    doc["skipped"] = skipped;
    doc["points"] = api::points_json(r.points);
    for (auto& p : doc["points"]) p["peak_bytes"] = nullptr;  // not measured (above)
  }
  return json_to_python(doc);
}

}  // namespace

void register_sweep_bindings(py::module_& m) {
  m.def("sweep", &sweep, py::arg("spec"), py::arg("num_heads"), py::arg("head_dim"),
        py::arg("seq_len"), py::arg("impl"), py::arg("target"), py::arg("dtype"),
        py::arg("repeats"), py::arg("max_seconds"), py::arg("dense_baseline"),
        py::arg("fit_from"), py::arg("quiet"), py::arg("key_padding_mask"),
        py::arg("num_kv_heads"), py::arg("softcap"), py::arg("alibi_slopes"), py::arg("sinks"),
        py::arg("threads"));
}

}  // namespace sparseattn::python
