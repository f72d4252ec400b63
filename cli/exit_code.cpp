// The exit status a command sets when it ran to completion but must report failure
// (`check` on a failing candidate: 1). Bad input never gets here: it throws, and main()
// turns the exception into one line on stderr and exit status 2.
#include "cli/commands.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

int& exit_code_ref() {
  static int code = 0;
  return code;
}

}  // namespace sparseattn::cli
