// sparseattn options — the options of one subcommand, read from the command line's own
// definition (the CLI11 app), as a table or JSON.
//
//   sparseattn options COMMAND [--json]
//
// One row per option of COMMAND, in the order `COMMAND --help` lists them: its flag, its
// other names, whether it takes a value, whether it is required, and its help text. Nothing
// here keeps its own list: a flag added to a subcommand appears here with it. The Python
// test of CLI/Python parity (python/tests/test_parity.py) reads `--json` and holds every
// listed flag to a keyword of the matching Python function (core/field.h spell_flag).
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

namespace sparseattn::cli {

namespace {

struct OptionsArgs {
  std::string command;
  bool json = false;
};

// The flag a user types: the first long name ("--num-random-blocks"), else the short one.
std::string flag_of(const CLI::Option& o) {
  if (!o.get_lnames().empty()) return "--" + o.get_lnames().front();
  if (!o.get_snames().empty()) return "-" + o.get_snames().front();
  return o.get_name();
}

nlohmann::json option_json(const CLI::Option& o) {
  std::vector<std::string> names;
  for (const std::string& l : o.get_lnames()) names.push_back("--" + l);
  for (const std::string& s : o.get_snames()) names.push_back("-" + s);
  return {{"flag", flag_of(o)},
          {"names", names},
          {"takes_value", o.get_items_expected_max() != 0},
          {"required", o.get_required()},
          {"default", o.get_default_str()},
          {"description", o.get_description()}};
}

void run_options(const CLI::App& app, const OptionsArgs& a) {
  const CLI::App* cmd = nullptr;
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == "options") continue;
    names += (names.empty() ? "" : ", ") + sub->get_name();
    if (sub->get_name() == a.command) cmd = sub;
  }
  require(cmd != nullptr, "COMMAND", a.command, "must be a subcommand: " + names);
  nlohmann::json out = nlohmann::json::array();
  for (const CLI::Option* o : cmd->get_options()) out.push_back(option_json(*o));
  if (a.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  for (const auto& o : out)
    std::cout << fmt::format("{:<28} {:<6} {:<9} {}\n", o["flag"].get<std::string>(),
                             o["takes_value"].get<bool>() ? "VALUE" : "flag",
                             o["required"].get<bool>() ? "required" : "",
                             o["description"].get<std::string>());
}

}  // namespace

void register_options(CLI::App& app) {
  auto a = std::make_shared<OptionsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "options", "list a subcommand's options (flag, takes a value, required, help), read "
                 "from the command line's own definition; --json for a JSON array");
  cmd->add_option("COMMAND", a->command, "the subcommand, e.g. attend")->required();
  cmd->add_flag("--json", a->json, "print a JSON array instead of the table");
  const CLI::App* root = &app;
  cmd->callback([a, root] { run_options(*root, *a); });
}

}  // namespace sparseattn::cli
