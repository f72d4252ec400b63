// Checks contract §2.7–§2.9 (grouped kv heads, softcap, ALiBi, sinks) and §4.2 for the sweep
// engine (api/sweep.h): every point's problem and its oracle carry the modifiers, so a kernel
// that claims the features but computes plain attention fails validation and is never timed,
// while a6_flash_modern and cpu_k06_generic_tiles pass; a kernel without the features is
// never called (run_sweep) and refused by name (plan_sweep); "auto" picks only kernels whose
// features serve the request; bad num_kv_heads, softcap and sinks are refused naming them.
#include <gtest/gtest.h>

#include <string>

#include "api/alloc_tracker.h"
#include "api/sweep.h"
#include "core/error.h"
#include "registry/registry.h"
#include "tests/api/kernel_doubles.h"

namespace sparseattn::api {
namespace {

using testing_doubles::double_of;
using testing_doubles::generic;

Tensor<double> per_head(std::vector<double> values) {
  Tensor<double> t({static_cast<int64_t>(values.size())});
  t.data = std::move(values);
  return t;
}

// softcap 5 (scores of |s| ~ 1-3 are bent by ~5-30%), sinks that take a visible share of
// each row's mass, H = 4 query heads on H_kv = 2.
ScoreMods modern_mods() {
  ScoreMods m;
  m.softcap = 5.0;
  m.sinks = per_head({0.5, -1.0, 2.0, 1.5});
  return m;
}

SweepConfig modern_config() {
  SweepConfig c;
  c.spec.kind = PatternKind::window;
  c.spec.window = 8;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.mods = modern_mods();
  c.head_dim = 16;
  c.seq_lens = {64, 128};
  c.repeats = 2;
  c.heap = heap_probe();
  return c;
}

// Claims the features (a copy of k06's entry) but ignores softcap and sinks: plain
// attention on the same grouped q, k, v. The planted mistake an oracle without the
// modifiers would let through.
int g_plain_calls = 0;
void run_ignoring_mods(const Problem& p, Output& out) {
  ++g_plain_calls;
  Problem plain = p;
  plain.mods = ScoreMods{};
  generic().run_kernel(plain, out);
}

const SweepPoint* find_point(const SweepResult& r, const std::string& impl, int64_t n) {
  for (const SweepPoint& p : r.points)
    if (p.impl == impl && p.seq_len == n) return &p;
  return nullptr;
}

TEST(SweepModern, PointsAreValidatedAgainstTheOracleWithTheModifiers) {
  const Kernel liar = double_of("test_ignores_mods", &run_ignoring_mods);
  ASSERT_EQ(liar.features & kModern, static_cast<unsigned>(kModern));  // it claims them
  SweepConfig c = modern_config();
  c.kernels = {&liar, &find_kernel("a6_flash_modern"), &generic()};
  g_plain_calls = 0;
  const SweepResult r = run_sweep(c);
  EXPECT_EQ(r.failures, 1);
  EXPECT_EQ(g_plain_calls, 1);  // the validation call only: never timed
  const SweepPoint* bad = find_point(r, "test_ignores_mods", 64);
  ASSERT_NE(bad, nullptr);
  EXPECT_FALSE(bad->validated);
  EXPECT_NE(bad->failure.find("o: "), std::string::npos) << bad->failure;
  for (const char* name : {"a6_flash_modern", "cpu_k06_generic_tiles"})
    for (int64_t n : {64, 128}) {
      const SweepPoint* ok = find_point(r, name, n);
      ASSERT_NE(ok, nullptr) << name << " " << n;
      EXPECT_TRUE(ok->validated) << name << " " << n << ": " << ok->failure;
      EXPECT_TRUE(ok->oracle_full);
      EXPECT_EQ(ok->repeats, 2);
    }
}

TEST(SweepModern, AKernelWithoutTheFeaturesIsNeverCalled) {
  SweepConfig c = modern_config();
  c.seq_lens = {64};
  c.kernels = {&find_kernel("a2_sparse_rows"), &generic()};  // a2: kPlain
  const SweepResult r = run_sweep(c);
  EXPECT_EQ(r.failures, 0);
  EXPECT_EQ(find_point(r, "a2_sparse_rows", 64), nullptr);
  bool noted = false;
  for (const std::string& n : r.notes)
    noted |= n == "a2_sparse_rows: does not serve grouped-query heads, softcap, sinks at seq_len "
                  "64; not run";
  EXPECT_TRUE(noted);
  ASSERT_NE(find_point(r, "cpu_k06_generic_tiles", 64), nullptr);
  EXPECT_TRUE(find_point(r, "cpu_k06_generic_tiles", 64)->validated);
}

SweepRequest modern_request() {
  SweepRequest q;
  q.spec.kind = PatternKind::window;
  q.spec.window = 8;
  q.num_heads = 4;
  q.num_kv_heads = 2;
  q.mods = modern_mods();
  q.head_dim = 16;
  q.seq_lens = {64};
  return q;
}

TEST(SweepModern, AutoPicksOnlyKernelsWhoseFeaturesServeTheRequest) {
  std::vector<std::string> notes;
  SweepRequest plain = modern_request();
  plain.num_kv_heads = 0;
  plain.mods = ScoreMods{};
  const SweepConfig p = plan_sweep(plain, notes, Spelling::flag);
  const SweepConfig m = plan_sweep(modern_request(), notes, Spelling::flag);
  EXPECT_EQ(m.num_kv_heads, 2);
  EXPECT_EQ(p.num_kv_heads, 4);  // 0: num_heads
  auto has = [](const SweepConfig& c, const std::string& name) {
    for (const Kernel* k : c.kernels)
      if (name == k->name) return true;
    return false;
  };
  EXPECT_TRUE(has(p, "a2_sparse_rows"));  // plain attention: the kPlain kernels run
  EXPECT_FALSE(has(m, "a2_sparse_rows"));
  EXPECT_TRUE(has(m, "a6_flash_modern"));
  EXPECT_LT(m.kernels.size(), p.kernels.size());
  for (const Kernel* k : m.kernels)
    EXPECT_EQ(k->features & (kGqa | kSoftcap | kSinks), static_cast<unsigned>(kGqa | kSoftcap | kSinks))
        << k->name;
  ASSERT_NE(m.dense_baseline, nullptr);  // cpu_k01_dense_flash serves them
  EXPECT_EQ(std::string(m.dense_baseline->name), "cpu_k01_dense_flash");
}

TEST(SweepModern, ANamedKernelWithoutTheFeaturesIsRefusedByName) {
  std::vector<std::string> notes;
  SweepRequest q = modern_request();
  q.impl = "cpu_k06_generic_tiles,a2_sparse_rows";
  try {
    plan_sweep(q, notes, Spelling::keyword);
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "impl");
    EXPECT_EQ(std::string(e.what()).rfind("invalid impl = a2_sparse_rows: does not serve "
                                          "grouped-query heads, softcap, sinks",
                                          0),
              0u)
        << e.what();
  }
  q.impl = "cpu_k06_generic_tiles";
  q.dense_baseline = "a5_flash_tiled";  // kPlain
  EXPECT_THROW(plan_sweep(q, notes, Spelling::flag), InvalidArgument);
}

TEST(SweepModern, BadValuesAreRefusedNamingTheArgument) {
  std::vector<std::string> notes;
  for (int64_t kv : {3, 8, -1}) {
    SweepRequest q = modern_request();
    q.num_kv_heads = kv;
    try {
      plan_sweep(q, notes, Spelling::flag);
      ADD_FAILURE() << kv << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "--num-kv-heads");
      EXPECT_NE(std::string(e.what()).find("that divides --num-heads 4"), std::string::npos)
          << e.what();
    }
  }
  SweepRequest cap = modern_request();
  cap.mods.softcap = 0.0;
  try {
    plan_sweep(cap, notes, Spelling::flag);
    ADD_FAILURE() << "softcap 0 accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), Field::softcap);
  }
  SweepRequest sinks = modern_request();
  sinks.mods.sinks = per_head({0.5, 1.0, 2.0});  // 3 for 4 heads
  try {
    plan_sweep(sinks, notes, Spelling::flag);
    ADD_FAILURE() << "3 sinks accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), Field::sinks);
  }
}

}  // namespace
}  // namespace sparseattn::api
