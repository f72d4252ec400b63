// Checks contract §4.6 (the SIMD builds of the CPU kernels: run-time choice, both correct).
// The choice itself (names, overrides, refusals), that each build really runs its own
// code, and — by disassembling the library — that no AVX-512 instruction lies outside the
// avx512 build's namespace, where an AVX2-only CPU could reach it (isa_target.h says why
// that can happen and how the build prevents it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <string>

#include "core/error.h"
#include "optimized/cpu/isa.h"
#include "registry/registry.h"
#include "tests/cpu/output_diff.h"
#include "tests/reference/grid.h"
#include "core/seeded_inputs.h"

namespace sparseattn {
namespace {

using cpu::Isa;

TEST(CpuIsa, NamesParseAndUnknownNamesAreRefusedNamingTheArgument) {
  EXPECT_EQ(cpu::parse_isa("avx2", "x"), Isa::avx2);
  EXPECT_EQ(cpu::parse_isa("avx512", "x"), Isa::avx512);
  EXPECT_STREQ(cpu::isa_name(Isa::avx512), "avx512");
  try {
    cpu::parse_isa("sse4", "SPARSEATTN_CPU_ISA");
    ADD_FAILURE() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "SPARSEATTN_CPU_ISA");
    EXPECT_NE(std::string(e.what()).find("avx2 or avx512"), std::string::npos) << e.what();
  }
}

TEST(CpuIsa, TheFloorIsSupportedAndTheDefaultIsTheWidestBuild) {
  const std::vector<Isa> list = cpu::supported_isas();
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list.front(), Isa::avx2);  // the build's floor (x86-64-v3)
  if (std::getenv("SPARSEATTN_CPU_ISA") == nullptr) {
    EXPECT_EQ(cpu::active_isa(), list.back());
  }
  for (Isa isa : list) {
    const cpu::ScopedIsa forced(isa);
    EXPECT_EQ(cpu::active_isa(), isa);
  }
  EXPECT_NE(cpu::isa_summary().find("supported: avx2"), std::string::npos) << cpu::isa_summary();
}

TEST(CpuIsa, ForcingABuildTheCpuLacksIsRefused) {
  if (cpu::isa_supported(Isa::avx512)) GTEST_SKIP() << "this CPU runs every build: nothing to refuse";
  EXPECT_THROW(cpu::set_isa_override(Isa::avx512), InvalidArgument);
}

TEST(CpuIsa, ThePeakProbeUsesTheBuildsVectors) {
  for (Isa isa : cpu::supported_isas()) {
    const cpu::ScopedIsa forced(isa);
    EXPECT_EQ(cpu::fma_probe_lanes(), isa == Isa::avx512 ? 16 : 8);
    EXPECT_TRUE(std::isfinite(cpu::fma_probe(1000)));
  }
}

// Each build runs its own code: on the same inputs the two builds of k01 agree within
// kTolFloat32 of each other (each is checked against the oracle in cpu_kernels_test) but
// not bit for bit, since a row's sums run over 8 lanes in one and 16 in the other. If the
// dispatch ignored the choice, the outputs would be identical.
TEST(CpuIsa, TheTwoBuildsComputeTheSameAnswerWithDifferentRounding) {
  if (!cpu::isa_supported(Isa::avx512)) GTEST_SKIP() << "this CPU has no AVX-512: one build only";
  const Problem problem = testing_cpu::two_paths_problem();
  const Kernel& k01 = find_kernel("cpu_k01_dense_flash");
  Output narrow, wide;
  {
    const cpu::ScopedIsa forced(Isa::avx2);
    k01.run(problem, narrow);
  }
  {
    const cpu::ScopedIsa forced(Isa::avx512);
    k01.run(problem, wide);
  }
  ASSERT_EQ(narrow.o32.data.size(), wide.o32.data.size());
  const testing_cpu::OutputDiff diff = testing_cpu::output_diff(narrow.o32, wide.o32);
  EXPECT_GT(diff.differ, 0u) << "the avx2 and avx512 builds gave bit-identical outputs";
  EXPECT_LT(diff.worst, 1e-5);
}

// Functions of the library (demangled name) that contain an instruction only AVX-512 CPUs
// have: zmm registers, xmm/ymm 16-31, opmask registers, embedded broadcasts, bf16, and AMX
// (tile instructions; every AMX CPU has AVX-512, so they too belong in the avx512 build).
std::map<std::string, int> avx512_functions(const std::string& library) {
  std::map<std::string, int> found;
  const std::string cmd = "objdump -d --no-show-raw-insn -C '" + library + "' 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return found;
  const std::regex header(R"(^[0-9a-f]+ <(.*)>:$)");
  const std::regex evex(
      R"(%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|%k[1-7]\b|\{1to|^v\w*bf16|%tmm|)"
      R"(^(ldtilecfg|sttilecfg|tilerelease)\b)");
  std::string function, line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) {
    line.assign(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::smatch m;
    if (std::regex_match(line, m, header)) {
      function = m[1];
    } else if (const size_t tab = line.find('\t'); tab != std::string::npos) {
      // The instruction alone: no address before it, no symbol or comment after it.
      std::string insn = line.substr(tab + 1);
      insn = insn.substr(0, std::min(insn.find('<'), insn.find('#')));
      if (std::regex_search(insn, evex)) ++found[function];
    }
  }
  pclose(pipe);
  return found;
}

TEST(CpuIsa, NoAvx512InstructionOutsideTheAvx512Build) {
  if (std::system("objdump --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "objdump (binutils) not installed: cannot disassemble the library";
  const std::map<std::string, int> found = avx512_functions(SPARSEATTN_CPU_LIBRARY);
  int in_build = 0;
  for (const auto& [function, count] : found) {
    if (function.find("sparseattn::cpu::avx512::") != std::string::npos) {
      in_build += count;
      continue;
    }
    ADD_FAILURE() << count << " AVX-512 instructions in " << function
                  << ": an AVX2-only CPU calling it dies of SIGILL";
  }
  // The check can fail the other way too: the avx512 build must really use zmm registers.
  EXPECT_GT(in_build, 100) << "the avx512 build has (almost) no AVX-512 instructions";
}

}  // namespace
}  // namespace sparseattn
