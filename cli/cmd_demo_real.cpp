// `sparseattn demo-real`: the main job on real data (realdata/real_job.h) and its report
// (realdata/report.h). `make demo` runs it. Exit code 1 when any method misses its
// tolerance against the oracle.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "realdata/real_job.h"
#include "realdata/report.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

std::vector<int64_t> parse_layers(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t used = 0;
    int64_t l = -1;
    try {
      l = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == item.size() && !item.empty() && l >= 0, "--layers", text,
            "must be comma-separated stored layer indices, e.g. 0,5");
    out.push_back(l);
  }
  return out;
}

}  // namespace

void register_demo_real(CLI::App& app) {
  struct Flags {
    realdata::JobOptions job;
    std::string layers;
    bool no_figures = false, no_verify = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "demo-real",
      "The main job on real data: every exact reference step and optimized kernel, on every "
      "head of the stored layers of all-MiniLM-L6-v2 on the GPL-3 text, per pattern; writes "
      "a markdown report with figures");
  cmd->add_option("--data", flags->job.data_dir, "folder with provenance.json (default data)");
  cmd->add_option("--out", flags->job.out_dir,
                  "report folder (default build/real-data-report)");
  cmd->add_option("--seq-len", flags->job.load.seq_len,
                  "use the first N tokens only (default 0 = all stored)");
  cmd->add_option("--layers", flags->layers, "stored layers to run, e.g. 0,5 (default all)");
  cmd->add_option("--repeats", flags->job.repeats, "timing: min over N runs (default 1)");
  cmd->add_option("--dense-reference-heads", flags->job.dense_reference_heads,
                  "heads the O(n²) reference steps run on for the dense pattern (default 2, "
                  "0 = all)");
  cmd->add_flag("--no-figures", flags->no_figures, "skip the gnuplot figures");
  cmd->add_flag("--no-verify", flags->no_verify, "skip the sha256 check of the data files");
  cmd->callback([flags] {
    realdata::JobOptions options = flags->job;
    if (!flags->layers.empty()) options.load.layers = parse_layers(flags->layers);
    options.figures = !flags->no_figures;
    options.load.verify_sha256 = !flags->no_verify;
    const realdata::JobResult job = realdata::run_real_job(options);
    const std::string report = realdata::write_report(job, options);
    std::cout << "demo-real: " << job.results.size() << " (layer, pattern) runs in "
              << job.total_seconds << " s; all methods within tolerance: "
              << (job.all_pass ? "yes" : "NO") << "\ndemo-real: report " << report << "\n";
    if (!job.all_pass) exit_code_ref() = 1;
  });
}

}  // namespace sparseattn::cli
