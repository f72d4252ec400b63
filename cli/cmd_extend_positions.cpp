// `sparseattn extend-positions`: extends a learned position-embedding table past its
// trained length with Su Jianlin's hierarchical decomposition (realdata/position_extension.h).
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "api/inputs.h"
#include "core/npy.h"
#include "realdata/position_extension.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

void register_extend_positions(CLI::App& app) {
  struct Flags {
    std::string in, out;
    int64_t length = 0;
    double alpha = realdata::kDefaultAlpha;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "extend-positions",
      "Extend a [n, dim] position-embedding table to --length <= n² positions: position "
      "(i-1)·n + j gets α·u_i + (1-α)·u_j, u_i = (p_i - α·p_1)/(1-α) (Su Jianlin 2020)");
  cmd->add_option("--in", flags->in, "table .npy [n, dim] (float16/32/64)")->required();
  cmd->add_option("--out", flags->out, "output .npy [length, dim], float64")->required();
  cmd->add_option("--length", flags->length, "positions wanted, 1 .. n²")->required();
  cmd->add_option("--alpha", flags->alpha, "α in (0, 1), != 0.5 (default 0.4)");
  cmd->callback([flags] {
    check_outputs({{"--out", flags->out}}, {{"--in", flags->in}});
    const Tensor<double> table = read_npy_float(flags->in, "--in");
    require_finite(table, "--in");
    const Tensor<double> out = realdata::extend_positions(table, flags->length, flags->alpha);
    write_npy(flags->out, out);
    std::cout << "extend-positions: " << shape_text(table.shape) << " -> "
              << shape_text(out.shape) << ", alpha = " << flags->alpha << ", wrote "
              << flags->out << "\n";
  });
}

}  // namespace sparseattn::cli
