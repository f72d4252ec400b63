// sparseattn sweep — the O(n) vs O(n²) plot for any pattern, in one command.
//
//   sparseattn sweep --seq-len 1024:65536 [--impl auto|NAME[,NAME...]] [--target cpu|reference|cuda]
//                    [--num-heads H] [--head-dim D] [--dtype any|float32|float64|float16|bfloat16]
//                    [--repeats R] [--max-seconds S] [--dense-baseline auto|none|NAME]
//                    [--fit-from N] [--out DIR] [--quiet] [pattern flags | --pattern-file P.json]
//                    [--num-kv-heads H_KV] [--softcap C] [--sinks S.npy] [--alibi-slopes A.npy]
//                    [--threads auto|N]
//
// Every (kernel, seq_len) is validated against the float64 oracle before it is timed
// (cli/sweep.h says how), with the grouped kv heads and score modifiers given (contract
// §2.7–§2.9: the problem and its oracle carry them; only kernels serving them run); DIR receives sweep.json, sweep.csv and four figures (PNG + SVG):
// time_vs_seq_len (log-log, fitted slope in the legend), memory_vs_seq_len,
// speedup_vs_dense, fraction_of_peak. On a busy machine (other runnable threads sharing the
// sweep's cores, api/sweep.h judge_load) the slopes are fitted on CPU time, the report says
// so and warns in one line. Exit status 1 when a kernel failed validation
// (the files are still written: the failure is in them).
#include <fmt/format.h>

#include <omp.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "api/alloc_tracker.h"
#include "api/inputs.h"
#include "api/pattern_file.h"
#include "api/peak_probe.h"
#include "api/score_flags.h"
#include "api/seq_range.h"
#include "cli/sweep.h"
#include "core/error.h"
#include "core/npy.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

struct SweepArgs {
  PatternFlags pattern;
  std::string seq_len;
  std::string impl = "auto";
  std::string target;
  std::string num_heads = "1";   // integers as text: parsed as decimal (parse_count)
  std::string head_dim = "64";
  std::string num_kv_heads;      // "" = num_heads (contract §2.7)
  ScoreFlags score;              // --softcap, --alibi-slopes, --sinks (contract §2.8-§2.9)
  std::string dtype = "any";
  std::string repeats = "5";
  std::string max_seconds = "30";
  std::string dense_baseline = "auto";
  std::string fit_from = "0";
  std::string out = "sweep-out";
  std::string threads = "auto";  // auto: the cores other runnable threads leave free
  bool quiet = false;
};

// A decimal integer in [lo, hi] ("010" is ten; CLI11 alone would read it as octal).
int64_t parse_count(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  const std::string allowed = fmt::format("must be a decimal integer in [{}, {}]", lo, hi);
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    throw InvalidArgument(flag, text, allowed);
  const int64_t v = std::stoll(text, nullptr, 10);
  if (v < lo || v > hi) throw InvalidArgument(flag, text, allowed);
  return v;
}

void run_sweep_command(const SweepArgs& a) {
  require(!a.seq_len.empty(), "--seq-len", "none", "give N, A:B or A,B,C");
  const std::vector<int64_t> seq_lens = parse_seq_lens("--seq-len", a.seq_len);
  const int64_t head_dim = parse_count("--head-dim", a.head_dim, 1, 1 << 16);
  const int64_t num_heads = parse_count("--num-heads", a.num_heads, 1, 1 << 16);
  const int64_t repeats = parse_count("--repeats", a.repeats, 1, 1000);
  const int64_t fit_from = parse_count("--fit-from", a.fit_from, 0, INT64_MAX / 4);
  const double max_seconds = parse_finite("--max-seconds", a.max_seconds, 0.0);
  require(max_seconds > 0, "--max-seconds", a.max_seconds, "must be a number of seconds > 0");

  SweepRequest req;
  req.spec = to_spec(a.pattern);
  const int64_t file_heads = pattern_file_heads(a.pattern);
  req.num_heads = num_heads == 1 && file_heads > 0 ? file_heads : num_heads;
  req.head_dim = head_dim;
  // Divisibility is plan_sweep's check (it names --num-kv-heads and --num-heads).
  req.num_kv_heads = a.num_kv_heads.empty() ? 0 : parse_count("--num-kv-heads", a.num_kv_heads, 1, 1 << 16);
  AttentionShape shape;  // what the modifiers are checked against: batch 1, H_q heads
  shape.num_heads = req.num_heads;
  req.mods = to_score_mods(a.score, shape);
  req.seq_lens = seq_lens;
  req.impl = a.impl;
  req.target = a.target;
  req.dtype = a.dtype;
  req.repeats = repeats;
  req.max_seconds = max_seconds;
  req.dense_baseline = a.dense_baseline;
  req.fit_from = fit_from;
  req.threads = a.threads == "auto" ? 0 : parse_count("--threads", a.threads, 1, 1024);
  std::vector<std::string> notes;
  SweepConfig c = plan_sweep(req, notes, Spelling::flag);
  omp_set_num_threads(c.threads);  // the FMA probe below runs on the sweep's threads too
  c.heap = api::heap_probe();
  if (!a.quiet) c.progress = &std::cerr;

  // Outputs checked before minutes of work.
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  require(!ec && std::filesystem::is_directory(a.out), "--out", a.out,
          "must be a directory that can be created and written (" + ec.message() + ")");
  const std::string json_path = a.out + "/sweep.json", csv_path = a.out + "/sweep.csv";
  check_output_path(json_path, "--out");
  check_output_path(csv_path, "--out");

  const api::Peak peak = api::measure_peak();
  SweepResult r = run_sweep(c);
  r.notes.insert(r.notes.begin(), notes.begin(), notes.end());

  nlohmann::json doc = run_context();
  doc["tool"] = "sparseattn sweep";
  doc["pattern"] = describe(c.spec);
  doc["pattern_flags"] = a.pattern.pattern_file.empty() ? flags_to_json(a.pattern)
                                                        : nlohmann::json{{"pattern_file", a.pattern.pattern_file}};
  doc["num_heads"] = c.num_heads;
  doc["num_kv_heads"] = c.num_kv_heads;
  doc["score_mods"] = describe(c.mods);  // "" when none (contract §2.8-§2.9)
  doc["head_dim"] = c.head_dim;
  doc["batch"] = 1;
  doc["seq_lens"] = seq_lens;
  doc["repeats"] = c.repeats;
  doc["max_seconds"] = c.max_seconds;
  doc["dense_baseline"] = c.dense_baseline ? nlohmann::json(c.dense_baseline->name) : nlohmann::json(nullptr);
  doc["peak_fma"] = {{"gflops", peak.gflops}, {"cpu_gflops", peak.cpu_gflops},
                     {"what", "float32 FMA throughput of all OpenMP threads (api/peak_probe.h)"}};
  doc["fit_from"] = c.fit_from;
  doc["threads"] = c.threads;
  doc["load"] = load_json(r.load);
  doc["fit_measure"] = measure_key(r.load.measure);
  doc["fits"] = sweep_fits(r, c.fit_from);
  doc["notes"] = r.notes;
  doc["failures"] = r.failures;
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& [impl, why] : r.skipped) skipped.push_back({{"impl", impl}, {"reason", why}});
  doc["skipped"] = skipped;
  doc["points"] = points_json(r.points);
  write_text_atomic(json_path, doc.dump(2) + "\n");
  write_text_atomic(csv_path, points_csv(r.points));

  std::string why;
  const std::string modern =
      (c.num_kv_heads != c.num_heads ? fmt::format(", H_kv {}", c.num_kv_heads) : "") +
      (c.mods.any() ? ", " + describe(c.mods) : "");
  const std::string title = fmt::format("{}; H {}{}, D {}, batch 1, {} OpenMP threads",
                                        describe(c.spec), c.num_heads, modern, c.head_dim,
                                        doc["omp_threads"].get<int>());
  const std::vector<std::string> figures =
      write_sweep_figures(r, c.fit_from, peak.gflops, title, a.out, &why);

  std::cout << fmt::format("pattern     {}\n", describe(c.spec))
            << fmt::format("sizes       num_heads {}{}, head_dim {}, batch 1; seq_len {}\n",
                           c.num_heads, modern, c.head_dim, a.seq_len)
            << fmt::format("peak        {:.1f} GFLOP/s (FMA probe, {} threads); load average {}\n",
                           peak.gflops, doc["omp_threads"].get<int>(),
                           doc.contains("load_average") ? doc["load_average"].dump() : "unknown")
            << fmt::format("load        {}\n", load_line(r.load));
  if (r.load.busy) std::cout << load_warning(r.load) << "\n";
  std::cout << fmt::format("\n{:<28} {:<8} {:>7} {:>12} {:>10} {:>10}\n", "impl", "pattern",
                           "points", "time slope", "FLOP slope", "validated");
  for (const auto& f : doc["fits"]) {
    int validated = 0, total = 0;
    for (const SweepPoint& p : r.points)
      if (p.impl == f["impl"] && p.pattern == f["pattern"]) total++, validated += p.validated;
    const auto slope = [&](const char* k) {
      return f[k].is_null() ? std::string("-") : fmt::format("{:.2f}", f[k].get<double>());
    };
    std::cout << fmt::format("{:<28} {:<8} {:>7} {:>12} {:>10} {:>10}\n",
                             f["impl"].get<std::string>(), f["pattern"].get<std::string>(),
                             f["points"].get<int>(), slope("slope"), slope("flop_slope"),
                             fmt::format("{}/{}", validated, total));
  }
  for (const std::string& n : r.notes) std::cout << "note: " << n << "\n";
  std::cout << "\nwrote " << json_path << ", " << csv_path;
  for (const std::string& f : figures) std::cout << ", " << f << ".{png,svg}";
  std::cout << "\n";
  if (!why.empty()) std::cout << "note: " << why << "\n";
  if (r.failures > 0) {
    std::cerr << "sparseattn: " << r.failures << " point(s) failed validation (not timed); see "
              << json_path << "\n";
    exit_code_ref() = 1;
  }
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "time kernels on one pattern over a range of seq_len, each point validated "
               "first; JSON, CSV and figures with fitted time slopes");
  cmd->add_option("--seq-len", a->seq_len,
                  "N, A:B (A, B and the powers of two between) or A,B,C: sequence lengths")
      ->required();
  cmd->add_option("--impl", a->impl,
                  "auto (every exact registry kernel serving the pattern) or NAME[,NAME...] "
                  "(`sparseattn impls` lists them)")
      ->capture_default_str();
  cmd->add_option("--target", a->target, "cpu|reference|cuda: only kernels of this target");
  cmd->add_option("--num-heads", a->num_heads,
                  "H: heads, integer >= 1 (a per-head --pattern-file sets it)")
      ->capture_default_str();
  cmd->add_option("--head-dim", a->head_dim, "D: head dimension, integer >= 1")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "any|float32|float64|float16|bfloat16: only kernels of this dtype")
      ->capture_default_str();
  cmd->add_option("--repeats", a->repeats, "R: timed calls per point (after the validation call)")
      ->capture_default_str();
  cmd->add_option("--max-seconds", a->max_seconds,
                  "S: budget of one point (validation call + R timed calls); a kernel stops "
                  "growing seq_len when its next point is predicted to exceed it")
      ->capture_default_str();
  cmd->add_option("--dense-baseline", a->dense_baseline,
                  "auto (cpu_k01_dense_flash on the dense pattern, same q/k/v), none, or a "
                  "kernel name: the speedup figure's denominator")
      ->capture_default_str();
  cmd->add_option("--fit-from", a->fit_from,
                  "N: fit slopes on points with seq_len >= N (default: all points)")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "DIR: sweep.json, sweep.csv and the figures")->capture_default_str();
  cmd->add_flag("--quiet", a->quiet, "no progress line on stderr");
  cmd->add_option("--threads", a->threads,
                  "auto|N: OpenMP threads of every call, N in [1, 1024]; auto: the cores the "
                  "other runnable threads leave free (/proc/stat), at least 1")
      ->capture_default_str();
  cmd->add_option("--num-kv-heads", a->num_kv_heads,
                  "H_KV: heads of k and v, an integer in [1, num_heads] that divides it "
                  "(grouped-query heads, contract §2.7); default num_heads");
  add_score_flags(cmd, a->score);  // every point's problem and oracle carry them
  add_pattern_flags(cmd, a->pattern);
  cmd->callback([a] { run_sweep_command(*a); });
}

}  // namespace sparseattn::cli
