// build/sparseattn — the command-line oracle. Each subcommand lives in its own cmd_*.cpp
// and registers itself here; errors become one line on stderr and a non-zero exit.
//
// Exit status (contract §5): 0 success; 1 a check that ran and failed (`check` on a
// failing candidate, `demo` with a kernel outside its tolerance); 2 every argument or
// input error, CLI11's parse errors included; 3 a failure outside the caller's control
// (a file that cannot be written, no CUDA device).
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/field.h"

int main(int argc, char** argv) {
  CLI::App app{"sparseattn: reference and optimized sparse attention (see README.md)"};
  app.require_subcommand(1);
  // Parse errors (a value that is not a number, a missing required flag) read like every
  // other error: one line naming the flag.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "sparseattn: error: " + std::string(e.what()) + "\nRun with --help for more information.\n";
  });
  sparseattn::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "parse errors" with status 0; every other one (a value
    // that is not a number, a missing required flag, an unknown flag) is an argument
    // error: exit 2, like the errors the commands raise (contract §5), not CLI11's own
    // codes 101-114.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const sparseattn::FieldError& e) {
    // The library names a field; the command line spells it as its flag (core/field.h).
    std::cerr << "sparseattn: error: " << e.spelled(sparseattn::Spelling::flag).what() << "\n";
    return 2;
  } catch (const sparseattn::InvalidArgument& e) {
    std::cerr << "sparseattn: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "sparseattn: error: " << e.what() << "\n";
    return 3;
  }
  return sparseattn::cli::exit_code();
}
