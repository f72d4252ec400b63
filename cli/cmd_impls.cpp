// sparseattn impls — the kernel registry, as a table or JSON.
//
//   sparseattn impls [--json] [--backward]
//
// One row per entry of registry/*.def compiled into this build (CUDA entries only when
// nvcc was found): name, target (reference/cpu/cuda), dtype, exact or approximate, the
// pattern kinds it serves, the kernel it must match and the tolerance it is held to
// (core/numerics.h). Nothing here keeps its own list. With --backward: the backward
// registry (registry/backward_kernels.def and cuda_backward_kernels.def) instead, each row
// with the forward kernel whose o and lse it consumes (the --impl that selects it in
// `attend --dout`). The table ends with the SIMD build the CPU kernels run (optimized/cpu/isa.h);
// the JSON gives it per CPU entry as "simd".
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/kernels_bf16.h"
#include "registry/backward.h"
#include "api/results.h"
#include "registry/registry.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

void run_backward_impls(bool json) {
  if (json) {
    std::cout << grad_impls_json().dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{:<30} {:<9} {:<8} {:<24} {:<8} {:<22} {:>8} {:>8}\n", "name",
                           "target", "dtype", "forward (--impl)", "patterns", "reference", "atol",
                           "rtol");
  for (const GradKernel& k : grad_kernels())
    std::cout << fmt::format("{:<30} {:<9} {:<8} {:<24} {:<8} {:<22} {:>8.1e} {:>8.1e}\n",
                             k.name, target_name(k.target), dtype_name(k.dtype), k.forward,
                             k.patterns, k.reference, k.atol, k.rtol);
}

void run_impls(bool json) {
  const std::string simd = cpu::isa_summary();  // first: a bad SPARSEATTN_CPU_ISA stops here
  const std::string bf16 = cpu::bf16_engine_summary();  // ... and a bad SPARSEATTN_BF16_ENGINE
  if (json) {
    std::cout << impls_json().dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{:<28} {:<9} {:<8} {:<6} {:<36} {:<16} {:>8} {:>8}\n", "name",
                           "target", "dtype", "exact", "patterns", "reference", "atol", "rtol");
  for (const Kernel& k : kernels())
    std::cout << fmt::format("{:<28} {:<9} {:<8} {:<6} {:<36} {:<16} {:>8.1e} {:>8.1e}\n",
                             k.name, target_name(k.target), dtype_name(k.dtype),
                             k.exact ? "yes" : "no", k.patterns, k.reference, k.atol, k.rtol);
  std::cout << "\ncpu kernels run the " << simd
            << " build; SPARSEATTN_CPU_ISA=avx2|avx512 forces one (optimized/cpu/isa.h)\n"
            << "cpu bf16 kernels use the engine " << bf16
            << "; SPARSEATTN_BF16_ENGINE=auto|dot|widen forces one "
               "(optimized/cpu/kernels_bf16.h)\n";
}

}  // namespace

void register_impls(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto backward = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "impls", "list every attention implementation: target, dtype, patterns, reference, tolerance");
  cmd->add_flag("--json", *json, "print a JSON array instead of the table");
  cmd->add_flag("--backward", *backward,
                "list the backward implementations (dq, dk, dv) and the forward each consumes");
  cmd->callback([json, backward] {
    if (*backward) run_backward_impls(*json);
    else run_impls(*json);
  });
}

}  // namespace sparseattn::cli
