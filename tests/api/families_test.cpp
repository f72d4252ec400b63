// Checks contract §4.7 (the timing programs take their cases from one list) for
// api/families.h: each program's families by name and order, each CUDA kernel named a
// registry entry of registry/cuda_kernels.def (read here whether or not this build has
// CUDA, so a renamed kernel fails on every machine), and the specs the names promise.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "api/families.h"
#include "pattern/pattern.h"

namespace sparseattn::api {
namespace {

std::vector<std::string> names_where(bool (*in)(const Family&)) {
  std::vector<std::string> out;
  for (const Family& f : families())
    if (in(f)) out.push_back(f.name);
  return out;
}

TEST(Families, EachProgramGetsItsCasesInListOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(names_where([](const Family& f) { return f.cpu; }),
            (V{"dense", "window_w256", "longformer_w256_g2", "bigbird_b64_r3", "window_w128_d2"}));
  EXPECT_EQ(names_where([](const Family& f) { return !f.cuda.empty(); }),
            (V{"dense", "window_w256", "window_w1024", "bigbird_b64_r3"}));
  std::vector<std::string> demo;
  for (const Family& f : families())
    if (!f.demo_label.empty()) demo.push_back(f.demo_label);
  EXPECT_EQ(demo, (V{"dense", "longformer", "bigbird", "window-dilated", "random"}));
  std::set<std::string> unique;
  for (const Family& f : families()) EXPECT_TRUE(unique.insert(f.name).second) << f.name;
  for (const Family& f : families()) EXPECT_EQ(f.dense_sizes, f.name == "dense") << f.name;
}

TEST(Families, EveryCudaCaseNamesARegistryKernel) {
  std::set<std::string> cuda;
#define X(name, ...) cuda.insert(#name);
#include "registry/cuda_kernels.def"
#undef X
  for (const Family& f : families())
    for (const CudaCase& c : f.cuda) {
      EXPECT_TRUE(cuda.count(c.kernel)) << f.name << ": " << c.kernel;
      EXPECT_GE(c.max_seq_len, 4096) << c.kernel;  // bench_cuda's smallest size
      EXPECT_TRUE(c.max_head_dim == 64 || c.max_head_dim == 128) << c.kernel;
    }
}

TEST(Families, TheSpecsAreWhatTheirNamesSay) {
  const int64_t n = 4096;
  for (const Family& f : families()) {
    const PatternSpec s = f.spec(n, 7);
    SCOPED_TRACE(f.name + ": " + describe(s));
    if (f.name == "dense") {
      EXPECT_EQ(s.kind, PatternKind::dense);
    }
    if (f.name.rfind("window_w", 0) == 0) {
      EXPECT_EQ(s.kind, PatternKind::window);
      EXPECT_EQ(s.window, std::stoll(f.name.substr(8)));
      EXPECT_EQ(s.dilation, f.name == "window_w128_d2" ? 2 : 1);
    }
    if (f.name == "longformer_w256_g2") {
      EXPECT_EQ(s.global, (std::vector<int64_t>{0, n / 2}));
    }
    if (f.name == "longformer_w256_g4") {
      EXPECT_EQ(s.global, (std::vector<int64_t>{0, 1, 2, 3}));
    }
    if (f.name.rfind("longformer", 0) == 0) {
      EXPECT_EQ(s.kind, PatternKind::longformer);
      EXPECT_EQ(s.window, 256);
    }
    if (f.name == "bigbird_b64_r3") {
      EXPECT_EQ(s.kind, PatternKind::bigbird);
      EXPECT_EQ(s.block_size, 64);
      EXPECT_EQ(s.num_random_blocks, 3);
      EXPECT_EQ(s.seed, 7u);  // the seed reaches the kinds that draw
    }
    if (f.name == "random_w32_r64") {
      EXPECT_EQ(s.kind, PatternKind::random);
      EXPECT_EQ(s.window, 32);
      EXPECT_EQ(s.num_random, 64);
      EXPECT_EQ(s.seed, 7u);
    }
    // Every family materializes at the smallest benchmark size and at an awkward one.
    for (int64_t len : {512, 77}) EXPECT_NO_THROW(materialize(f.spec(len, 0), {1, 1, len, len}));
  }
}

}  // namespace
}  // namespace sparseattn::api
