// Checks contract §3.13 (the GPU's copy of the layout allows exactly the pattern's pairs).
// Host-side proofs of the index arithmetic the CUDA kernels share (optimized/cuda/
// tiling.h, head_view.h, packed_pattern.h). No GPU and no nvcc needed: these run in CI.
// Ground truth is always the materialized Pattern (HeadLayout::allowed, query_valid,
// key_valid), over the same awkward-shape grid the CPU kernels are checked on.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/error.h"
#include "optimized/cuda/head_view.h"
#include "optimized/cuda/packed_pattern.h"
#include "optimized/cuda/tiling.h"
#include "tests/cpu/cpu_cases.h"

namespace sparseattn {
namespace {

using cuda::ChunkRange;
using cuda::Strided;
using testing_grid::Case;

// The flash blocks' row counts and chunk sizes (flash_f32.cuh: 32/32, flash_mma.cuh:
// 64/64), plus an odd one: the arithmetic must not depend on powers of two.
const int64_t kBlockRows[] = {32, 64, 48};

// The grid's cases for which `keep` holds: a test instantiated only where it applies, so
// a skip in this binary never means "not applicable".
template <class Keep>
std::vector<Case> cases_where(Keep keep) {
  std::vector<Case> out;
  for (const Case& c : testing_cpu::cpu_cases())
    if (keep(c)) out.push_back(c);
  return out;
}
std::string case_label(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

class CudaPacking : public ::testing::TestWithParam<Case> {};
class CudaDenseBand : public ::testing::TestWithParam<Case> {};
class CudaBandChunks : public ::testing::TestWithParam<Case> {};
class CudaDilated : public ::testing::TestWithParam<Case> {};
class CudaLongformer : public ::testing::TestWithParam<Case> {};

// The GPU copy of a pattern is a pure function of the layout and agrees with it exactly:
// every (head, query, key) pair, and the key-padding rule for every (batch, query, key).
TEST_P(CudaPacking, PackedViewAgreesWithLayoutAndPaddingRule) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const cuda::PackedPattern packed = cuda::pack_pattern(pattern);
  const PatternSizes& z = c.sizes;
  for (int64_t h = 0; h < z.num_heads; ++h) {
    const cuda::HeadView view = cuda::head_view(packed, h, packed.row_ptr.data(), packed.col.data(),
                                                packed.bits_at.data(), packed.bits.data());
    const HeadLayout& layout = pattern.head(h);
    ASSERT_EQ(view.tile, layout.tile);
    for (int64_t i = 0; i < z.seq_len_q; ++i)
      for (int64_t j = 0; j < z.seq_len_k; ++j)
        ASSERT_EQ(cuda::view_allows(view, i, j), layout.allowed(i, j))
            << "head " << h << " query " << i << " key " << j;
  }
  const uint8_t* key_valid = packed.key_valid.empty() ? nullptr : packed.key_valid.data();
  ASSERT_EQ(key_valid != nullptr, pattern.has_key_padding());
  for (int64_t b = 0; b < z.batch; ++b)
    for (int64_t i = 0; i < z.seq_len_q; ++i)
      for (int64_t j = 0; j < z.seq_len_k; ++j)
        ASSERT_EQ(cuda::padding_allows(key_valid, z.seq_len_q, z.seq_len_k, b, i, j),
                  pattern.query_valid(b, i) && pattern.key_valid(b, j))
            << "batch " << b << " query " << i << " key " << j;
}

// Dense kernels express `dense` (and causal) as a band: the band must be the pattern.
TEST_P(CudaDenseBand, DenseBandIsTheDensePattern) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const BandParams band = cuda::dense_band(c.sizes.seq_len_q, c.sizes.seq_len_k, c.spec.causal);
  for (int64_t i = 0; i < c.sizes.seq_len_q; ++i)
    for (int64_t j = 0; j < c.sizes.seq_len_k; ++j)
      ASSERT_EQ(band_allows(band, i, j), pattern.head(0).allowed(i, j)) << i << ", " << j;
}

// Band kernels (c02, c03, c04, c06) visit band_chunks(): aligned, disjoint, and holding
// every key any row of the block may attend through the band.
TEST_P(CudaBandChunks, BandChunksCoverEveryBandKeyOnce) {
  const Case& c = GetParam();
  const PatternKind kind = c.spec.kind;
  const Pattern pattern = materialize(c.spec, c.sizes);
  const BandParams band = kind == PatternKind::dense
                              ? cuda::dense_band(c.sizes.seq_len_q, c.sizes.seq_len_k, c.spec.causal)
                              : pattern.band();
  for (int64_t rows : kBlockRows) {
    for (int64_t i0 = 0; i0 < band.seq_len_q; i0 += rows) {
      const int64_t i1 = std::min(i0 + rows, band.seq_len_q);
      const ChunkRange r = cuda::band_chunks(band, i0, i1, rows);
      ASSERT_LE(r.begin, r.end);
      if (r.begin == r.end) {
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = 0; j < band.seq_len_k; ++j) ASSERT_FALSE(band_allows(band, i, j));
        continue;
      }
      EXPECT_EQ(r.begin % rows, 0);
      EXPECT_TRUE(r.end % rows == 0 || r.end == band.seq_len_k);
      EXPECT_LE(r.end, band.seq_len_k);
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < band.seq_len_k; ++j)
          if (band_allows(band, i, j)) {
            ASSERT_TRUE(j >= r.begin && j < r.end) << i << ", " << j;
          }
    }
  }
}

// c05 by residue classes: the blocks partition the rows, and each block's strided keys
// hold every key its rows may attend.
TEST_P(CudaDilated, DilatedBlocksPartitionRowsAndCoverTheirKeys) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const BandParams band = pattern.band();
  for (int64_t rows : kBlockRows) {
    std::vector<int> owner_count(static_cast<size_t>(band.seq_len_q), 0);
    const int64_t classes = std::min(band.dilation, band.seq_len_q);  // as c05's launcher
    const int64_t blocks = classes * cuda::dilated_blocks_per_class(band.seq_len_q, band.dilation, rows);
    for (int64_t x = 0; x < blocks; ++x) {
      const Strided r = cuda::dilated_rows(band, x, rows);
      ASSERT_LE(r.count, rows);
      const Strided keys = cuda::dilated_keys(band, r);
      std::set<int64_t> staged;
      for (int64_t c0 = 0; c0 < keys.count; ++c0) {
        ASSERT_GE(keys.at(c0), 0);
        ASSERT_LT(keys.at(c0), band.seq_len_k);
        staged.insert(keys.at(c0));
      }
      for (int64_t u = 0; u < r.count; ++u) {
        const int64_t i = r.at(u);
        ASSERT_LT(i, band.seq_len_q);
        ++owner_count[static_cast<size_t>(i)];
        for (int64_t j = 0; j < band.seq_len_k; ++j)
          if (pattern.head(0).allowed(i, j)) {
            ASSERT_TRUE(staged.count(j)) << "row " << i << " key " << j;
          }
      }
    }
    for (int64_t i = 0; i < band.seq_len_q; ++i) ASSERT_EQ(owner_count[static_cast<size_t>(i)], 1) << "row " << i;
  }
}

// c06: its predicate (band or global query or global key) is the materialized pattern
// for the kinds it serves, and the chunks it visits (band, then global chunks) are
// disjoint and hold every allowed key of a block without global rows.
TEST_P(CudaLongformer, PredicateAndChunksMatchThePattern) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const cuda::PackedPattern packed = cuda::pack_pattern(pattern);
  const BandParams band = packed.band;
  for (int64_t i = 0; i < band.seq_len_q; ++i)
      for (int64_t j = 0; j < band.seq_len_k; ++j)
        ASSERT_EQ(band_allows(band, i, j) || packed.is_global[i] || packed.is_global[j],
                  pattern.head(0).allowed(i, j)) << i << ", " << j;
  for (int64_t rows : kBlockRows) {
    for (int64_t i0 = 0; i0 < band.seq_len_q; i0 += rows) {
      const int64_t i1 = std::min(i0 + rows, band.seq_len_q);
      const ChunkRange r = cuda::band_chunks(band, i0, i1, rows);
      std::vector<int> visits(static_cast<size_t>(band.seq_len_k), 0);
      for (int64_t k0 = r.begin; k0 < r.end; k0 += rows)
        for (int64_t j = k0; j < std::min(k0 + rows, r.end); ++j) ++visits[static_cast<size_t>(j)];
      int64_t cursor = 0;
      for (int64_t k0 = cuda::next_global_chunk(packed.global_sorted.data(), packed.global_sorted.size(), &cursor, r, rows);
           k0 >= 0; k0 = cuda::next_global_chunk(packed.global_sorted.data(), packed.global_sorted.size(), &cursor, r, rows)) {
        ASSERT_EQ(k0 % rows, 0);
        for (int64_t j = k0; j < std::min(k0 + rows, band.seq_len_k); ++j) ++visits[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < band.seq_len_k; ++j) ASSERT_LE(visits[static_cast<size_t>(j)], 1) << "key " << j;
      bool global_row = false;
      for (int64_t i = i0; i < i1; ++i) global_row = global_row || packed.is_global[i];
      if (global_row) continue;  // c06 visits every chunk for such a block
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < band.seq_len_k; ++j)
          if (pattern.head(0).allowed(i, j)) {
            ASSERT_EQ(visits[static_cast<size_t>(j)], 1) << i << ", " << j;
          }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, CudaPacking, ::testing::ValuesIn(testing_cpu::cpu_cases()), case_label);
INSTANTIATE_TEST_SUITE_P(Grid, CudaDenseBand, ::testing::ValuesIn(cases_where([](const Case& c) {
                           return c.spec.kind == PatternKind::dense;
                         })), case_label);
INSTANTIATE_TEST_SUITE_P(Grid, CudaBandChunks, ::testing::ValuesIn(cases_where([](const Case& c) {
                           return c.spec.kind == PatternKind::dense || c.spec.kind == PatternKind::window ||
                                  c.spec.kind == PatternKind::longformer;
                         })), case_label);
INSTANTIATE_TEST_SUITE_P(Grid, CudaDilated, ::testing::ValuesIn(cases_where([](const Case& c) {
                           return c.spec.kind == PatternKind::window;
                         })), case_label);
// c06 serves non-causal Longformer with seq_len_q == seq_len_k; c08 the rest.
INSTANTIATE_TEST_SUITE_P(Grid, CudaLongformer, ::testing::ValuesIn(cases_where([](const Case& c) {
                           return c.spec.kind == PatternKind::longformer && !c.spec.causal &&
                                  c.sizes.seq_len_q == c.sizes.seq_len_k;
                         })), case_label);

// c07/c08: blocks never straddle a layout tile, and together own every row exactly once.
TEST(CudaTiling, TileBlocksPartitionRowsWithinOneTile) {
  for (int64_t tile : {1, 5, 16, 64, 100, 130})
    for (int64_t rows : kBlockRows)
      for (int64_t seq_len_q : {1, 7, 64, 65, 200, 531}) {
        SCOPED_TRACE("tile " + std::to_string(tile) + " rows " + std::to_string(rows) +
                     " seq_len_q " + std::to_string(seq_len_q));
        std::vector<int> owners(static_cast<size_t>(seq_len_q), 0);
        const int64_t blocks = cuda::blocks_of(seq_len_q, tile) * cuda::blocks_per_tile(tile, rows);
        for (int64_t x = 0; x < blocks + 3; ++x) {  // +3: blocks past the end are empty
          const cuda::TileBlock t = cuda::tile_block(x, tile, rows, seq_len_q);
          ASSERT_LE(t.i0, t.i1);
          ASSERT_LE(t.i1 - t.i0, rows);
          for (int64_t i = t.i0; i < t.i1; ++i) {
            ASSERT_EQ(i / tile, t.qt);
            ++owners[static_cast<size_t>(i)];
          }
        }
        for (int64_t i = 0; i < seq_len_q; ++i) ASSERT_EQ(owners[static_cast<size_t>(i)], 1) << "row " << i;
      }
}

TEST(CudaTiling, GridLimitsAreInvalidArgumentsNamingTheDimension) {
  EXPECT_NO_THROW(cuda::attention_grid(1, 65535, 65535));
  try {
    cuda::attention_grid(4, 70000, 1);
    ADD_FAILURE() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "num_heads");
  }
  try {
    cuda::attention_grid(4, 1, 0);
    ADD_FAILURE() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "batch");
  }
}

// Heads that share a layout are packed once; the views of both read the same arrays.
TEST(CudaTiling, SharedHeadLayoutsArePackedOnce) {
  PatternSpec s = testing_grid::token(PatternKind::window, 3, 1, false, 16);
  const Pattern pattern = materialize(s, PatternSizes{1, 4, 100, 100});
  const cuda::PackedPattern packed = cuda::pack_pattern(pattern);
  if (pattern.heads[0] == pattern.heads[3]) {
    EXPECT_EQ(packed.row_ptr.size(), pattern.head(0).row_ptr.size());
    EXPECT_EQ(packed.head_col_offset[3], packed.head_col_offset[0]);
  } else {
    EXPECT_EQ(packed.row_ptr.size(), 4 * pattern.head(0).row_ptr.size());
  }
}

TEST(CudaTiling, BigBirdItcLayoutsHoldOnlyFullTiles) {
  for (int64_t n : {13, 64, 300, 600}) {
    const Pattern p = materialize(testing_grid::bigbird(64 > n ? 4 : 64, 3, 1), PatternSizes{1, 2, n, n});
    EXPECT_TRUE(cuda::all_tiles_full(p)) << n;
  }
  const Pattern window = materialize(testing_grid::token(PatternKind::window, 3, 1, false, 16),
                                     PatternSizes{1, 1, 100, 100});
  EXPECT_FALSE(cuda::all_tiles_full(window));
}

}  // namespace
}  // namespace sparseattn
