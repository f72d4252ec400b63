// Checks contract §1.5 (the extended position table).
// Su Jianlin's hierarchical position extension (realdata/position_extension.h): the first
// n rows are the table, a hand-computed 3×2 case, the n² limit, α = 0.5 rejected, and the
// stored 4096-row table (written by tools/extract_qkv.py in numpy) reproduced.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/npy.h"
#include "realdata/position_extension.h"

namespace sparseattn::realdata {
namespace {

Tensor<double> table_3x2() {
  Tensor<double> p({3, 2});
  p.data = {1.0, 0.0,    // p_1
            0.0, 2.0,    // p_2
            3.0, -1.0};  // p_3
  return p;
}

TEST(PositionExtension, FirstRowsReproduceTheTableBitForBit) {
  Tensor<double> p({7, 5});
  for (int64_t i = 0; i < p.numel(); ++i) p.data[i] = std::sin(0.37 * i + 0.1);
  for (double alpha : {0.4, 0.1, 0.9}) {
    const Tensor<double> q = extend_positions(p, 49, alpha);
    ASSERT_EQ(q.shape, (Shape{49, 5}));
    for (int64_t i = 0; i < p.numel(); ++i) EXPECT_EQ(q.data[i], p.data[i]) << "alpha " << alpha;
  }
}

// u_1 = (1, 0), u_2 = ((0, 2) − 0.4·(1, 0)) / 0.6 = (−2/3, 10/3),
// u_3 = ((3, −1) − 0.4·(1, 0)) / 0.6 = (13/3, −5/3); position (i−1)·3 + j = 0.4·u_i + 0.6·u_j.
TEST(PositionExtension, HandComputed3x2CaseAlpha04) {
  const Tensor<double> q = extend_positions(table_3x2(), 9, 0.4);
  const double want[9][2] = {
      {1.0, 0.0},           {0.0, 2.0},         {3.0, -1.0},          // i = 1: the table
      {1.0 / 3, 4.0 / 3},   {-2.0 / 3, 10.0 / 3}, {7.0 / 3, 1.0 / 3},  // i = 2
      {7.0 / 3, -2.0 / 3},  {4.0 / 3, 4.0 / 3}, {13.0 / 3, -5.0 / 3}}; // i = 3
  for (int m = 0; m < 9; ++m)
    for (int c = 0; c < 2; ++c)
      EXPECT_NEAR(q.data[m * 2 + c], want[m][c], 1e-14) << "position " << m << " dim " << c;
  // (i, j) = (2, 3) and (3, 2) differ: what α != 0.5 buys.
  EXPECT_NE(q.data[5 * 2], q.data[7 * 2]);
}

TEST(PositionExtension, ShorterLengthIsAPrefix) {
  const Tensor<double> full = extend_positions(table_3x2(), 9);
  const Tensor<double> part = extend_positions(table_3x2(), 5);
  ASSERT_EQ(part.shape, (Shape{5, 2}));
  for (int64_t i = 0; i < part.numel(); ++i) EXPECT_EQ(part.data[i], full.data[i]);
}

TEST(PositionExtension, LengthBeyondNSquaredRejected) {
  EXPECT_NO_THROW(extend_positions(table_3x2(), 9));
  for (int64_t length : {10, 0, -1}) {
    try {
      extend_positions(table_3x2(), length);
      FAIL() << "length " << length << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "length");
      EXPECT_NE(std::string(e.what()).find("[1, 3²]"), std::string::npos) << e.what();
    }
  }
}

TEST(PositionExtension, AlphaHalfAndOutOfRangeRejected) {
  for (double alpha : {0.5, 0.0, 1.0, -0.2, 1.5, std::nan("")}) {
    try {
      extend_positions(table_3x2(), 9, alpha);
      FAIL() << "alpha " << alpha << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "alpha");
      EXPECT_NE(std::string(e.what()).find("0.5"), std::string::npos) << e.what();
    }
  }
}

TEST(PositionExtension, TableMustBeRank2) {
  Tensor<double> p({2, 3, 4});
  EXPECT_THROW(extend_positions(p, 4), InvalidArgument);
  Tensor<double> empty({0, 4});
  EXPECT_THROW(extend_positions(empty, 1), InvalidArgument);
}

// The stored table was computed by tools/extract_qkv.py with numpy (float64, rounded to
// float32 on save); the C++ extension of the stored 512-row table must round to the same
// float32 values: the two implementations agree.
TEST(PositionExtension, ReproducesThePythonTableOfTheStoredData) {
  const std::string dir = SPARSEATTN_DATA_DIR;
  const Tensor<double> p512 = read_npy_float(dir + "/position_embeddings_512.npy", "p512");
  const Tensor<double> p4096 = read_npy_float(dir + "/position_embeddings_4096.npy", "p4096");
  const Tensor<double> ours = extend_positions(p512, 4096, 0.4);
  ASSERT_EQ(ours.shape, p4096.shape);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < ours.numel(); ++i)
    mismatches += static_cast<float>(ours.data[i]) != static_cast<float>(p4096.data[i]);
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace sparseattn::realdata
