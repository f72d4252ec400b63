// contract §4: the CPU path gives bit-identical outputs whatever the number of OpenMP threads.
// Each kernel runs a multi-tile case with 1, 2 and 3 threads (3 > cores: a different
// schedule again), in every SIMD build this CPU can run (optimized/cpu/isa.h) and, for the
// bf16 kernels, with each engine it can run (kernels_bf16.h); o and lse must match byte
// for byte within a build and engine.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <optional>
#include <string>

#include "optimized/cpu/isa.h"
#include "optimized/cpu/kernels_bf16.h"
#include "registry/registry.h"
#include "tests/reference/grid.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using testing_grid::bigbird;
using testing_grid::token;

// A bf16 kernel (`<name>_bf16`) runs its float32 twin's case.
PatternSpec spec_for(std::string kernel) {
  using K = PatternKind;
  if (kernel.size() > 5 && kernel.compare(kernel.size() - 5, 5, "_bf16") == 0)
    kernel.resize(kernel.size() - 5);
  if (kernel == "cpu_k01_dense_flash") return token(K::dense, 0, 1, true, 64);
  if (kernel == "cpu_k02_window_band") return token(K::window, 50, 1, false, 64);
  if (kernel == "cpu_k03_window_dilated") return token(K::window, 20, 3, false, 64);
  if (kernel == "cpu_k04_longformer") return token(K::longformer, 20, 1, false, 64, {0, 99, 300});
  if (kernel == "cpu_k05_bigbird_blocks") return bigbird(32, 2, 3);
  if (kernel == "cpu_k07_hf_listing") return bigbird(37, 2, 3);  // 333 = 9 whole blocks (HF)
  if (kernel == "cpu_k09_decode") return token(K::window, 50, 2, false, 64);  // no key padding
  if (kernel == "cpu_k08_selected_gather") {  // per-batch lists with counted repeats (§3.16)
    PatternSpec s;
    s.kind = K::selected;
    s.duplicates = Duplicates::count;
    Tensor<int64_t> t({2, 2, 333, 24});
    for (size_t e = 0; e < t.data.size(); ++e)
      t.data[e] = e % 7 == 3 ? -1 : static_cast<int64_t>((e * 2654435761u) % 333);
    s.kv_indices = std::move(t);
    return s;
  }
  return token(K::random, 8, 1, false, 16, {7}, 5, 2);  // k06 on a token-level pattern
}

TEST(CpuDeterminism, BitIdenticalWithOneTwoAndThreeThreads) {
  const int saved = omp_get_max_threads();
  for (const Kernel& kernel : kernels()) {
    if (kernel.target != Target::cpu) continue;
    SCOPED_TRACE(kernel.name);
    const bool bf16 = kernel.dtype == DType::bfloat16;
    for (const cpu::Isa isa : cpu::supported_isas())
    for (const bool widen : {false, true})
    for (const bool amx : {false, true}) {
    if (widen && !bf16) continue;  // the float32 kernels have one engine
    // The AMX engine: nothing forced, where the process takes it.
    if (amx && (widen || !bf16 || isa != cpu::Isa::avx512 || !cpu::bf16_amx_engine_selected()))
      continue;
    SCOPED_TRACE(cpu::isa_name(isa));
    const cpu::ScopedIsa forced(isa);
    std::optional<cpu::ScopedBf16Widen> forced_widen;
    std::optional<cpu::ScopedBf16Dot> forced_dot;  // whatever engine this process chose
    if (widen) forced_widen.emplace();
    else if (!amx && isa == cpu::Isa::avx512 && cpu::cpu_has_avx512_bf16()) forced_dot.emplace();
    SCOPED_TRACE(bf16 ? cpu::bf16_engine() : "float32");
    PatternSpec spec = spec_for(kernel.name);
    // k09 serves no key padding (a cache has none, contract §2.11): its case runs without.
    if (std::string(kernel.name).rfind("cpu_k09_decode", 0) != 0)
      spec.key_padding_mask = testing_grid::key_padding(2, 333, 5);
    const Pattern pattern = materialize(spec, {2, 2, 333, 333});
    const Problem problem = make_problem(testing_inputs::random_tensor({2, 2, 333, 64}, 11),
                                         testing_inputs::random_tensor({2, 2, 333, 64}, 12),
                                         testing_inputs::random_tensor({2, 2, 333, 48}, 13),
                                         pattern, nullptr);
    ASSERT_TRUE(kernel.serves(pattern));
    Output one;
    omp_set_num_threads(1);
    kernel.run(problem, one);
    for (int threads : {2, 3}) {
      omp_set_num_threads(threads);
      Output many;
      kernel.run(problem, many);
      ASSERT_EQ(one.o32.data.size(), many.o32.data.size());
      EXPECT_EQ(0, std::memcmp(one.o32.ptr(), many.o32.ptr(), one.o32.data.size() * sizeof(float)))
          << threads << " threads";
      EXPECT_EQ(0, std::memcmp(one.lse32.ptr(), many.lse32.ptr(),
                               one.lse32.data.size() * sizeof(float)))
          << threads << " threads";
    }
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace sparseattn
