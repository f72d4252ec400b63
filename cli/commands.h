// Registration of every subcommand. Each register_* lives in cli/cmd_<name>.cpp and
// attaches a CLI11 subcommand whose callback does the work (throwing on bad input).
#pragma once

#include <CLI/CLI.hpp>

#include "api/pattern_flags.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

void register_attend(CLI::App& app);
void register_mask(CLI::App& app);
void register_check(CLI::App& app);
void register_info(CLI::App& app);
void register_demo(CLI::App& app);
void register_reach(CLI::App& app);
void register_sweep(CLI::App& app);  // cli/cmd_sweep.cpp
void register_extend_positions(CLI::App& app);
void register_analyze(CLI::App& app);
void register_demo_real(CLI::App& app);
void register_impls(CLI::App& app);
void register_golden(CLI::App& app);
void register_models(CLI::App& app);  // cli/preset_commands.cpp
void register_options(CLI::App& app);  // cli/cmd_options.cpp: reads every other subcommand
void register_select(CLI::App& app);  // cli/cmd_select.cpp (contract §3.18)

// Calls every register_* above (main.cpp calls this).
inline void register_commands(CLI::App& app) {
  register_attend(app);
  register_mask(app);
  register_check(app);
  register_info(app);
  register_demo(app);
  register_reach(app);
  register_sweep(app);
  register_extend_positions(app);
  register_analyze(app);
  register_demo_real(app);
  register_impls(app);
  register_golden(app);
  register_models(app);
  register_select(app);
  register_options(app);
  decimal_integer_flags(app);  // every integer flag of every subcommand: decimal, strict
}

// A command that finishes without throwing but must report failure (e.g. `check` on a
// failing candidate) sets this; main() returns it.
int& exit_code_ref();
inline int exit_code() { return exit_code_ref(); }

}  // namespace sparseattn::cli
