// `sparseattn analyze`: how local is each head's dense attention, and how much of its
// softmax mass would a pattern keep (realdata/locality.h defines every number).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "api/inputs.h"
#include "api/pattern_flags.h"
#include "core/error.h"
#include "core/npy.h"
#include "realdata/locality.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

// "1,2,4" -> {1, 2, 4}; InvalidArgument("--windows") for anything else.
std::vector<int64_t> parse_windows(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t used = 0;
    int64_t w = -1;
    try {
      w = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == item.size() && !item.empty() && w >= 0, "--windows", text,
            "must be a comma-separated list of one-sided widths >= 0, e.g. 1,4,16");
    out.push_back(w);
  }
  require(!out.empty(), "--windows", text, "must name at least one width");
  return out;
}

}  // namespace

void register_analyze(CLI::App& app) {
  struct Flags {
    std::string q, k, out, windows;
    std::optional<double> scale;
    PatternFlags pattern;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "analyze",
      "Per head: share of the dense softmax mass inside the pattern and inside windows of "
      "several widths, locality bias ratio (mass / what uniform attention gives), mean "
      "attention distance; JSON (docs/real-data.md defines each number)");
  cmd->add_option("--q", flags->q, "queries .npy [batch, heads, seq_len_q, head_dim]")->required();
  cmd->add_option("--k", flags->k, "keys .npy [batch, heads, seq_len_k, head_dim]")->required();
  cmd->add_option("--windows", flags->windows,
                  "one-sided window widths, comma-separated (default 1,2,4,...,256)");
  cmd->add_option("--scale", flags->scale, "score scale (default 1/sqrt(head_dim)); finite");
  cmd->add_option("--out", flags->out, "write the JSON report here (default: stdout)");
  add_pattern_flags(cmd, flags->pattern);
  cmd->callback([flags] {
    const std::vector<int64_t> windows =
        flags->windows.empty() ? realdata::default_windows() : parse_windows(flags->windows);
    check_outputs({{"--out", flags->out}}, {{"--q", flags->q}, {"--k", flags->k}});
    const Tensor<double> q = read_npy_float(flags->q, "--q");
    const Tensor<double> k = read_npy_float(flags->k, "--k");
    require_finite(q, "--q");
    require_finite(k, "--k");
    const Shape qs = as_rank4(q.shape, "--q"), ks = as_rank4(k.shape, "--k");
    PatternSizes sizes;
    sizes.batch = qs[0];
    sizes.num_heads = qs[1];
    sizes.seq_len_q = qs[2];
    sizes.seq_len_k = ks[2];
    const Pattern pattern = build_pattern(flags->pattern, sizes);
    const double* scale = flags->scale ? &*flags->scale : nullptr;
    const std::string json =
        realdata::locality_json(realdata::analyze_locality(q, k, pattern, windows, scale), pattern);
    if (flags->out.empty())
      std::cout << json << "\n";
    else
      write_text_atomic(flags->out, json + "\n");
  });
}

}  // namespace sparseattn::cli
