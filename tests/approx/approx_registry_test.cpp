// Checks contract §4.8 (approximations: registered exact = false, measured, not judged).
// The approximations' registry entries (registry/reference_kernels.def): marked
// exact = false, serving exactly the dense non-causal pattern, and their adapters giving
// the same bits as the functions called with the documented defaults.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "reference/approx/nystrom.h"
#include "reference/approx/performer_favor.h"
#include "tests/approx/approx_inputs.h"
#include "tests/reference/ladder_steps.h"

namespace sparseattn {
namespace {

struct Entry {
  const char* name;
  bool exact;
  bool (*serves)(const Pattern&);
  void (*run)(const Problem&, Output&);
};

// Every entry of the .def, exact or not (ladder_steps.h's steps() keeps the exact ones).
std::vector<Entry> all_entries() {
  return {
#define X(name, target, dtype, exact, reference, tolerance, patterns, summary, features) \
  Entry{#name, exact, &entry::serves_##name, &entry::run_##name},
#include "registry/reference_kernels.def"
#undef X
  };
}

const Entry& find(const std::string& name) {
  static const std::vector<Entry> list = all_entries();
  for (const Entry& e : list)
    if (name == e.name) return e;
  throw std::out_of_range(name);
}

TEST(ApproxRegistry, ApproximationsAreMarkedInexactAndLeftOutOfTheToleranceLadder) {
  for (const char* name : {"performer_favor", "nystrom"}) {
    EXPECT_FALSE(find(name).exact) << name;
    for (const testing_steps::Step& step : testing_steps::steps())
      EXPECT_NE(std::string(step.name), name) << "steps() asserts tolerances; it must skip " << name;
  }
}

TEST(ApproxRegistry, ServeOnlyDenseNonCausalWithoutPadding) {
  PatternSpec causal, window, padded;
  causal.causal = true;
  window.kind = PatternKind::window;
  padded.key_padding_mask = Tensor<uint8_t>({1, 8}, 1);
  for (const char* name : {"performer_favor", "nystrom"}) {
    const Entry& e = find(name);
    EXPECT_TRUE(e.serves(materialize(PatternSpec{}, {1, 2, 8, 8}))) << name;
    EXPECT_FALSE(e.serves(materialize(causal, {1, 2, 8, 8}))) << name;
    EXPECT_FALSE(e.serves(materialize(window, {1, 2, 8, 8}))) << name;
    EXPECT_FALSE(e.serves(materialize(padded, {1, 2, 8, 8}))) << name;
  }
}

// Adapters: m = 256, seed 0; c = min(64, seq_len_q, seq_len_k), 6 iterations. A 40-token
// sequence gets 40 landmarks, a 100-token one 64.
TEST(ApproxRegistry, AdaptersRunTheDocumentedDefaults) {
  for (int64_t n : {40, 100}) {
    const Pattern pattern = testing_approx::dense(2, n, n);
    const Tensor<double> q = testing_approx::gaussian_tensor({1, 2, n, 8}, 1),
                         k = testing_approx::gaussian_tensor({1, 2, n, 8}, 2),
                         v = testing_approx::gaussian_tensor({1, 2, n, 4}, 3);
    const Problem p = testing_steps::problem(q, k, v, pattern, NAN);
    Output favor, nystrom;
    find("performer_favor").run(p, favor);
    find("nystrom").run(p, nystrom);
    EXPECT_EQ(favor.o.data, performer_favor(q, k, v, pattern, nullptr, FavorOptions{256, 0, true}).o.data);
    const AttentionResult direct =
        nystrom_attention(q, k, v, pattern, nullptr, NystromOptions{std::min<int64_t>(64, n)});
    EXPECT_EQ(nystrom.o.data, direct.o.data);
    // Bitwise, so that a NaN lse (an undefined estimate, nystrom.h) compares equal to itself.
    ASSERT_EQ(nystrom.lse.numel(), direct.lse.numel());
    EXPECT_EQ(std::memcmp(nystrom.lse.ptr(), direct.lse.ptr(), sizeof(double) * direct.lse.numel()), 0);
  }
}

}  // namespace
}  // namespace sparseattn
