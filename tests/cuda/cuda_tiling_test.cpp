// Checks contract §3.13 (the GPU's copy of the layout allows exactly the pattern's pairs).
// Host-side proofs of the index arithmetic the CUDA kernels share (optimized/cuda/
// tiling.h, head_view.h, packed_pattern.h). No GPU and no nvcc needed: these run in CI.
// Ground truth is always the materialized Pattern (HeadLayout::allowed, query_valid,
// key_valid), over the same awkward-shape grid the CPU kernels are checked on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "optimized/cuda/decode_plan.h"
#include "optimized/cuda/head_view.h"
#include "reference/attention.h"
#include "core/seeded_inputs.h"
#include "optimized/cuda/packed_pattern.h"
#include "optimized/cuda/tiling.h"
#include "optimized/cuda/varlen_plan.h"
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
class CudaBandRange : public ::testing::TestWithParam<Case> {};
class CudaSchedule : public ::testing::TestWithParam<Case> {};

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

// Band kernels (c02, c03, c04) visit band_chunks(): aligned, disjoint, and holding
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

// The division-free band test (c03/c04 on the dense band, c05 within a residue class)
// is band_allows on every pair whose offset is a multiple of the dilation, and a chunk
// called inside the band has every pair allowed — over the chunks the kernels visit.
TEST_P(CudaBandRange, DivisionFreeTestAndFullChunksAgreeWithBandAllows) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const BandParams band = c.spec.kind == PatternKind::dense
                              ? cuda::dense_band(c.sizes.seq_len_q, c.sizes.seq_len_k, c.spec.causal)
                              : pattern.band();
  const cuda::BandRange range = cuda::band_range(band);
  const int64_t offset = band.seq_len_k - band.seq_len_q;
  for (int64_t i = 0; i < band.seq_len_q; ++i)
    for (int64_t j = 0; j < band.seq_len_k; ++j)
      if ((j - i - offset) % band.dilation == 0) {
        ASSERT_EQ(cuda::band_range_allows(range, i, j), band_allows(band, i, j)) << i << ", " << j;
      }
  const auto check_chunk = [&](const Strided& rows, const Strided& keys) {
    if (!cuda::chunk_inside_band(range, rows, keys)) return;
    for (int64_t r = 0; r < rows.count; ++r)
      for (int64_t k = 0; k < keys.count; ++k)
        ASSERT_TRUE(band_allows(band, rows.at(r), keys.at(k))) << rows.at(r) << ", " << keys.at(k);
  };
  for (int64_t br : kBlockRows) {
    if (band.dilation == 1)  // c03/c04: contiguous rows, band_chunks
      for (int64_t i0 = 0; i0 < band.seq_len_q; i0 += br) {
        const Strided rows{i0, 1, std::min(br, band.seq_len_q - i0)};
        const ChunkRange r = cuda::band_chunks(band, i0, i0 + rows.count, br);
        for (int64_t k0 = r.begin; k0 < r.end; k0 += br) check_chunk(rows, Strided{k0, 1, std::min(br, r.end - k0)});
      }
    if (c.spec.kind == PatternKind::window) {  // c05: residue classes
      const int64_t classes = std::min(band.dilation, band.seq_len_q);
      const int64_t blocks = classes * cuda::dilated_blocks_per_class(band.seq_len_q, band.dilation, br);
      for (int64_t x = 0; x < blocks; ++x) {
        const Strided rows = cuda::dilated_rows(band, x, br);
        const Strided keys = cuda::dilated_keys(band, rows);
        for (int64_t c0 = 0; c0 < keys.count; c0 += br)
          check_chunk(rows, Strided{keys.at(c0), keys.stride, std::min(br, keys.count - c0)});
      }
    }
  }
}

// The heavy-first, split-K schedule, planned automatically and with splitting forced
// (cap 1: every listed tile its own part; cap 2): every (head, query tile) appears as parts
// 0 .. parts-1 whose ranges partition its listed tiles; split parts own distinct workspace
// slots matching their group; entries are ordered by work per part, descending, ties in
// (head, tile, part) order; and the blocks of every entry own each row of its tile once.
TEST_P(CudaSchedule, HeavyFirstSplitKPlanCoversEveryTileAndRowOnce) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const PatternSizes& z = c.sizes;
  for (int64_t cap : {int64_t{0}, int64_t{1}, int64_t{2}}) {
    SCOPED_TRACE("cap " + std::to_string(cap));
    cuda::PackedPattern packed = cuda::pack_pattern(pattern);
    cuda::plan_schedule(packed, cap);
    std::map<std::pair<int64_t, int64_t>, std::vector<int>> parts_seen;
    std::set<int64_t> slots;
    int64_t prev_work = -1, prev_key = -1;
    for (const cuda::ScheduleEntry& e : packed.schedule) {
      ASSERT_TRUE(e.head >= 0 && e.head < z.num_heads);
      const HeadLayout& layout = pattern.head(e.head);
      ASSERT_TRUE(e.tile >= 0 && e.tile < layout.num_q_tiles());
      ASSERT_TRUE(e.part >= 0 && e.part < e.parts && e.parts <= cuda::kMaxParts);
      auto& seen = parts_seen[{e.head, e.tile}];
      if (seen.empty()) seen.assign(static_cast<size_t>(e.parts), 0);
      ASSERT_EQ(static_cast<int>(seen.size()), e.parts);
      ++seen[static_cast<size_t>(e.part)];
      const int64_t n = layout.row_ptr[e.tile + 1] - layout.row_ptr[e.tile];
      const cuda::EntryRange r = cuda::split_range(0, n, e.part, e.parts);
      if (e.parts > 1) {
        ASSERT_TRUE(slots.insert(e.slot).second) << "slot " << e.slot << " twice";
        ASSERT_TRUE(e.slot >= 0 && e.slot < packed.num_slots);
      } else {
        ASSERT_EQ(e.slot, -1);
      }
      const int64_t work = (r.end - r.begin) * layout.tile;
      const int64_t key = ((int64_t{e.head} << 20) + e.tile) * 128 + e.part;
      if (prev_work >= 0) {
        ASSERT_LE(work, prev_work) << "not heavy-first";
        if (work == prev_work) {
          ASSERT_GT(key, prev_key) << "ties out of order";
        }
      }
      prev_work = work;
      prev_key = key;
      if (cap == 1) {
        ASSERT_EQ(e.parts, std::max<int64_t>(1, std::min(n, cuda::kMaxParts)));
      }
    }
    int64_t tiles = 0;
    for (int64_t h = 0; h < z.num_heads; ++h) tiles += pattern.head(h).num_q_tiles();
    ASSERT_EQ(static_cast<int64_t>(parts_seen.size()), tiles);
    for (const auto& kv : parts_seen) {
      const HeadLayout& layout = pattern.head(kv.first.first);
      const int64_t n = layout.row_ptr[kv.first.second + 1] - layout.row_ptr[kv.first.second];
      int64_t next = 0;
      for (size_t part = 0; part < kv.second.size(); ++part) {
        ASSERT_EQ(kv.second[part], 1) << "part " << part;
        const cuda::EntryRange r = cuda::split_range(0, n, static_cast<int64_t>(part), static_cast<int64_t>(kv.second.size()));
        ASSERT_EQ(r.begin, next);
        next = r.end;
      }
      ASSERT_EQ(next, n);
    }
    int64_t group_slots = 0;
    for (const cuda::SplitGroup& g : packed.split_groups) {
      ASSERT_EQ(g.slot, group_slots);
      ASSERT_EQ(static_cast<int>(parts_seen[{g.head, g.tile}].size()), g.parts);
      for (int32_t p = 0; p < g.parts; ++p) ASSERT_TRUE(slots.count(g.slot + p));
      group_slots += g.parts;
    }
    ASSERT_EQ(group_slots, packed.num_slots);
    ASSERT_EQ(static_cast<int64_t>(slots.size()), packed.num_slots);
    for (int64_t br : kBlockRows) {
      int64_t per_entry = 1;
      for (int64_t t : packed.head_tile) per_entry = std::max(per_entry, cuda::blocks_per_tile(t, br));
      const cuda::FastDiv div = cuda::make_fast_div(per_entry);
      std::vector<int> owners(static_cast<size_t>(z.num_heads * z.seq_len_q), 0);
      for (int64_t x = 0; x < static_cast<int64_t>(packed.schedule.size()) * per_entry; ++x) {
        const uint32_t entry = cuda::fast_div(div, static_cast<uint32_t>(x));
        const uint32_t sub = static_cast<uint32_t>(x) - entry * div.divisor;
        const cuda::ScheduleEntry& e = packed.schedule[entry];
        const int64_t tile = packed.head_tile[static_cast<size_t>(e.head)];
        const cuda::TileBlock t = cuda::scheduled_block(e.tile, sub, tile, br, z.seq_len_q);
        ASSERT_LE(t.i1 - t.i0, br);
        for (int64_t i = t.i0; i < t.i1; ++i) {
          ASSERT_EQ(i / tile, t.qt);
          owners[static_cast<size_t>(e.head * z.seq_len_q + i)] += e.part == 0 ? 1 : 0;
        }
      }
      for (size_t i = 0; i < owners.size(); ++i) ASSERT_EQ(owners[i], 1) << "head*Lq+row " << i;
    }
  }
}

// The split-K merge against the float64 oracle: every query tile split as the kernels
// split it (cap 1 and 3), each part's softmax over exactly its key tiles (pattern,
// key padding), merged with merge_lse / merge_weight, equals a1_dense_masked's o and lse
// — empty parts, fully masked and padded rows included.
TEST_P(CudaSchedule, SplitKMergeOfPartsEqualsTheOracle) {
  const Case& c = GetParam();
  const Pattern pattern = materialize(c.spec, c.sizes);
  const PatternSizes& z = c.sizes;
  const uint64_t seed = testing_inputs::seed_of(c.name);
  const Tensor<double> q = testing_inputs::random_tensor({z.batch, z.num_heads, z.seq_len_q, c.head_dim}, seed);
  const Tensor<double> k = testing_inputs::random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim}, seed + 1);
  const Tensor<double> v = testing_inputs::random_tensor({z.batch, z.num_heads, z.seq_len_k, c.head_dim_v}, seed + 2);
  const double* scale_ptr = std::isnan(c.scale) ? nullptr : &c.scale;
  const double scale = scale_ptr ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const AttentionResult oracle = a1_dense_masked(q, k, v, pattern, scale_ptr);
  const int64_t D = c.head_dim, Dv = c.head_dim_v;
  for (int64_t cap : {int64_t{1}, int64_t{3}}) {
    cuda::PackedPattern packed = cuda::pack_pattern(pattern);
    cuda::plan_schedule(packed, cap);
    for (const cuda::SplitGroup& g : packed.split_groups) {
      const HeadLayout& layout = pattern.head(g.head);
      const int64_t h = g.head, tile = layout.tile, i0 = int64_t{g.tile} * tile;
      for (int64_t b = 0; b < z.batch; ++b)
        for (int64_t i = i0; i < std::min(i0 + tile, z.seq_len_q); ++i) {
          std::vector<double> lse(static_cast<size_t>(g.parts)), o(static_cast<size_t>(g.parts * Dv), 0.0);
          for (int32_t p = 0; p < g.parts; ++p) {
            const cuda::EntryRange r = cuda::split_range(layout.row_ptr[g.tile], layout.row_ptr[g.tile + 1], p, g.parts);
            std::vector<std::pair<double, int64_t>> scores;
            for (int64_t e = r.begin; e < r.end; ++e)
              for (int64_t j = int64_t{layout.col[static_cast<size_t>(e)]} * tile;
                   j < std::min((int64_t{layout.col[static_cast<size_t>(e)]} + 1) * tile, z.seq_len_k); ++j) {
                if (!layout.allowed(i, j) || !pattern.query_valid(b, i) || !pattern.key_valid(b, j)) continue;
                double dot = 0;
                for (int64_t d = 0; d < D; ++d)
                  dot += q.data[static_cast<size_t>(((b * z.num_heads + h) * z.seq_len_q + i) * D + d)] *
                         k.data[static_cast<size_t>(((b * z.num_heads + h) * z.seq_len_k + j) * D + d)];
                scores.push_back({scale * dot, j});
              }
            if (scores.empty()) {
              lse[static_cast<size_t>(p)] = -INFINITY;  // o_p stays 0
              continue;
            }
            double m = -INFINITY, l = 0;
            for (const auto& s : scores) m = std::max(m, s.first);
            for (const auto& s : scores) {
              const double w = std::exp(s.first - m);
              l += w;
              for (int64_t d = 0; d < Dv; ++d)
                o[static_cast<size_t>(p * Dv + d)] +=
                    w * v.data[static_cast<size_t>(((b * z.num_heads + h) * z.seq_len_k + s.second) * Dv + d)];
            }
            for (int64_t d = 0; d < Dv; ++d) o[static_cast<size_t>(p * Dv + d)] /= l;
            lse[static_cast<size_t>(p)] = m + std::log(l);
          }
          const double merged = cuda::merge_lse(lse.data(), g.parts, 1);
          const double want_lse = oracle.lse.data[static_cast<size_t>((b * z.num_heads + h) * z.seq_len_q + i)];
          if (std::isinf(want_lse)) {
            ASSERT_TRUE(std::isinf(merged) && merged < 0) << "row " << i << " batch " << b;
          } else {
            ASSERT_NEAR(merged, want_lse, 1e-12 * (1 + std::abs(want_lse))) << "row " << i << " batch " << b;
          }
          for (int64_t d = 0; d < Dv; ++d) {
            double got = 0;
            for (int32_t p = 0; p < g.parts; ++p)
              got += cuda::merge_weight(lse[static_cast<size_t>(p)], merged) * o[static_cast<size_t>(p * Dv + d)];
            const double want = oracle.o.data[static_cast<size_t>(((b * z.num_heads + h) * z.seq_len_q + i) * Dv + d)];
            ASSERT_NEAR(got, want, 1e-12 * (1 + std::abs(want))) << "row " << i << " d " << d;
          }
        }
    }
  }
}

// Automatic planning splits only rows far heavier than the typical one: BigBird's global
// blocks at 4096 tokens (64 key tiles against about 8), never a dense or window pattern.
TEST(CudaTiling, AutomaticSplitOnlyForHeavyRows) {
  const Pattern bigbird = materialize(testing_grid::bigbird(64, 3, 1), PatternSizes{1, 2, 4096, 4096});
  const cuda::PackedPattern bb = cuda::pack_pattern(bigbird);
  ASSERT_FALSE(bb.split_groups.empty());
  for (const cuda::SplitGroup& g : bb.split_groups) {
    EXPECT_TRUE(g.tile == 0 || g.tile == 63) << g.tile;  // the first and last block
    EXPECT_EQ(g.parts, 2);                               // 64 tiles, cap max(32, 4 x 8)
  }
  EXPECT_EQ(bb.schedule.front().parts, 2);  // heavy first
  for (PatternSpec spec : {PatternSpec{}, testing_grid::token(PatternKind::window, 256, 1, false, 64)}) {
    const cuda::PackedPattern p = cuda::pack_pattern(materialize(spec, PatternSizes{1, 2, 4096, 4096}));
    EXPECT_TRUE(p.split_groups.empty()) << describe(spec);
    EXPECT_EQ(p.num_slots, 0);
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
INSTANTIATE_TEST_SUITE_P(Grid, CudaBandRange, ::testing::ValuesIn(cases_where([](const Case& c) {
                           return c.spec.kind == PatternKind::dense || c.spec.kind == PatternKind::window;
                         })), case_label);
INSTANTIATE_TEST_SUITE_P(Grid, CudaSchedule, ::testing::ValuesIn(testing_cpu::cpu_cases()), case_label);

// Non-vacuous: on a wide window most chunks are inside the band (the predicate is skipped),
// the diagonal ones are not; a causal dense block's chunks below the diagonal are inside.
TEST(CudaTiling, ChunksInsideTheBandAreFoundAndTheEdgesAreNot) {
  BandParams w;
  w.seq_len_q = w.seq_len_k = 4096;
  w.left = w.right = 256;
  const cuda::BandRange r = cuda::band_range(w);
  const Strided rows{1024, 1, 64};
  EXPECT_TRUE(cuda::chunk_inside_band(r, rows, Strided{1024, 1, 64}));    // the diagonal chunk
  EXPECT_TRUE(cuda::chunk_inside_band(r, rows, Strided{1024 - 192, 1, 64}));
  EXPECT_FALSE(cuda::chunk_inside_band(r, rows, Strided{1024 - 256, 1, 64}));  // row 1087 reaches 831
  EXPECT_FALSE(cuda::chunk_inside_band(r, rows, Strided{1024, 1, 0}));
  const cuda::BandRange causal = cuda::band_range(cuda::dense_band(4096, 4096, true));
  EXPECT_TRUE(cuda::chunk_inside_band(causal, rows, Strided{0, 1, 64}));
  EXPECT_FALSE(cuda::chunk_inside_band(causal, rows, Strided{1024, 1, 64}));  // cut by the diagonal
  EXPECT_TRUE(cuda::chunk_inside_band(causal, Strided{1088, 1, 64}, Strided{1024, 1, 64}));
}

// FastDiv: n / d for every d the kernels use (head dims, padded head dims, blocks per
// tile) and beyond, against the hardware division; exhaustive over n < 2^16, then the
// top of the range and a pseudo-random sweep up to 2^31 - 1.
TEST(CudaTiling, FastDivEqualsDivisionOverTheWholeRange) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= 300; ++d) divisors.push_back(d);
  for (int64_t d : {511, 512, 513, 4095, 65535, 65536, 65537, 1000003, 1 << 30, (1 << 30) + 1, 2147483647})
    divisors.push_back(d);
  uint64_t state = 12345;
  for (int64_t d : divisors) {
    const cuda::FastDiv f = cuda::make_fast_div(d);
    const auto u = static_cast<uint32_t>(d);
    for (uint32_t n = 0; n < (1u << 16); ++n) ASSERT_EQ(cuda::fast_div(f, n), n / u) << n << " / " << d;
    for (uint32_t n = 2147483647u - 4096; n < 2147483647u; ++n) ASSERT_EQ(cuda::fast_div(f, n), n / u) << n << " / " << d;
    ASSERT_EQ(cuda::fast_div(f, 2147483647u), 2147483647u / u) << d;
    for (int k = 0; k < 20000; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const auto n = static_cast<uint32_t>(state >> 33);  // [0, 2^31)
      ASSERT_EQ(cuda::fast_div(f, n), n / u) << n << " / " << d;
    }
  }
  EXPECT_THROW(cuda::make_fast_div(0), InvalidArgument);
  EXPECT_THROW(cuda::make_fast_div(int64_t{1} << 31), InvalidArgument);
}

// Bank conflicts of flash_mma.cuh's per-row loops: 32 lanes, two per row, 16 rows. Returns
// the worst number of distinct 32-bit words that one bank serves at one step (1 = none).
template <class Column>
int worst_conflict(int ld_words, int half, int bytes, Column column) {
  int worst = 0;
  for (int t = 0; t < half; ++t) {
    std::map<int, std::set<int>> words_of_bank;
    for (int lane = 0; lane < 32; ++lane) {
      const int word = ((lane / 2) * ld_words * 4 / bytes + column(lane, t)) * bytes / 4;
      words_of_bank[word % 32].insert(word);
    }
    for (const auto& b : words_of_bank) worst = std::max(worst, static_cast<int>(b.second.size()));
  }
  return worst;
}

TEST(CudaTiling, PairColumnsAreBankConflictFreeAndCoverEachRowOnce) {
  const auto swizzled = [](int half) { return [half](int lane, int t) { return cuda::pair_column(lane, t, half); }; };
  // The score tile: 64 columns, stride 68 floats; P in bf16, stride 72 halves (36 words).
  EXPECT_EQ(worst_conflict(68, 32, 4, swizzled(32)), 1);
  EXPECT_EQ(worst_conflict(36, 32, 2, swizzled(32)), 1);
  // The old order (lane p: columns [32p, 32p + 32)) had 4-way conflicts: the test can tell.
  EXPECT_EQ(worst_conflict(68, 32, 4, [](int lane, int t) { return (lane % 2) * 32 + t; }), 4);
  // The output rescale: stride pad16(Dv) + 4 floats, 2 * half = pad16(Dv) columns.
  for (int dv = 1; dv <= 256; ++dv) {
    const int dvp = (dv + 15) / 16 * 16;
    SCOPED_TRACE("head_dim_v " + std::to_string(dv));
    EXPECT_EQ(worst_conflict(dvp + 4, dvp / 2, 4, swizzled(dvp / 2)), 1);
  }
  // Every lane visits each column of its parity exactly once; the pair covers the row.
  for (int half : {8, 16, 24, 32, 40, 128}) {
    for (int lane = 0; lane < 32; lane += 2) {
      std::vector<int> hits(static_cast<size_t>(2 * half), 0);
      for (int p = 0; p < 2; ++p)
        for (int t = 0; t < half; ++t) {
          const int c = cuda::pair_column(lane + p, t, half);
          ASSERT_TRUE(c >= 0 && c < 2 * half && c % 2 == p) << c;
          ++hits[static_cast<size_t>(c)];
        }
      for (int h : hits) ASSERT_EQ(h, 1) << "half " << half << " lane " << lane;
    }
  }
}

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

// c09's rows (decode_plan.h) are the pattern's: for every spec it serves, element length n
// and query i, decode_row_allows(row, j) equals the spec materialized for (L_q, n) — the
// definition of contract §2.11 (the pattern of an element is the spec's for L_k = n_b).
PatternSpec decode_spec(PatternKind kind, bool causal, int64_t left, int64_t right, int64_t dilation,
                        int64_t chunk) {
  PatternSpec s;
  s.kind = kind;
  s.causal = causal;
  if (kind == PatternKind::window) {
    s.window_left = left;
    s.window_right = right;
    s.dilation = dilation;
  }
  if (kind == PatternKind::chunked) s.chunk_size = chunk;
  return s;
}
std::vector<PatternSpec> decode_specs() {
  using K = PatternKind;
  return {decode_spec(K::dense, false, 0, 0, 1, 0),    decode_spec(K::dense, true, 0, 0, 1, 0),
          decode_spec(K::window, false, 3, 2, 1, 0),   decode_spec(K::window, true, 5, 0, 2, 0),
          decode_spec(K::window, false, -1, 4, 3, 0),  decode_spec(K::window, true, 100, 0, 1, 0),
          decode_spec(K::chunked, false, 0, 0, 1, 7),  decode_spec(K::chunked, true, 0, 0, 1, 100)};
}

TEST(CudaDecodePlan, RowsAreTheSpecMaterializedForEachElementsLength) {
  for (const PatternSpec& spec : decode_specs())
    for (const int64_t lq : {1, 4, 16, 20})
      for (const int64_t n : {1, 5, 37, 300}) {
        SCOPED_TRACE(describe(spec) + " lq " + std::to_string(lq) + " n " + std::to_string(n));
        const Pattern pattern = materialize(spec, {1, 1, lq, n});
        ASSERT_TRUE(cuda::decode_serves(pattern));
        for (int64_t i = 0; i < lq; ++i) {
          const cuda::DecodeRowKeys r = cuda::decode_row_keys(pattern.spec, lq, n, i);
          for (int64_t j = 0; j < n; ++j)
            ASSERT_EQ(cuda::decode_row_allows(r, j), pattern.allowed(0, 0, i, j)) << "query " << i << " key " << j;
        }
      }
}

// The work items: per element its splits in order, contiguous, each at most split_keys
// long, together the union of its rows' keys; none for an element without keys; the
// workspace within budget when the split is chosen (not forced).
TEST(CudaDecodePlan, ItemsPartitionEachElementsSpanInOrder) {
  const std::vector<int64_t> seqlens = {0, 1, 300, 600, 257};
  for (const PatternSpec& spec : decode_specs())
    for (const int64_t forced : {0, 1, 7, 256}) {
      SCOPED_TRACE(describe(spec) + " split " + std::to_string(forced));
      const int64_t lq = 4;
      const cuda::DecodePlan plan = cuda::plan_decode(spec, lq, seqlens, 100, forced);
      ASSERT_EQ(plan.item_start.size(), seqlens.size() + 1);
      EXPECT_EQ(plan.split_keys, forced > 0 ? forced : cuda::kDecodeSplitKeys);
      for (size_t b = 0; b < seqlens.size(); ++b) {
        int64_t lo = seqlens[b], hi = -1;  // the union of the rows' keys
        for (int64_t i = 0; i < lq; ++i) {
          const cuda::DecodeRowKeys& r = plan.rows[b * lq + i];
          for (int64_t j = 0; j < seqlens[b]; ++j)
            if (cuda::decode_row_allows(r, j)) lo = std::min(lo, j), hi = std::max(hi, j);
        }
        int64_t next = lo;
        for (int32_t it = plan.item_start[b]; it < plan.item_start[b + 1]; ++it) {
          const cuda::DecodeItem& item = plan.items[static_cast<size_t>(it)];
          EXPECT_EQ(item.b, static_cast<int32_t>(b));
          EXPECT_EQ(item.split, it - plan.item_start[b]);
          EXPECT_EQ(item.j0, next);
          EXPECT_GT(item.j1, item.j0);
          EXPECT_LE(item.j1 - item.j0, plan.split_keys);
          next = item.j1;
        }
        if (hi < lo) EXPECT_EQ(plan.item_start[b], plan.item_start[b + 1]) << "element " << b;
        else EXPECT_EQ(next, hi + 1) << "element " << b;
      }
    }
  // A budget it cannot meet at 256 keys: the split doubles until it does.
  const cuda::DecodePlan big = cuda::plan_decode(PatternSpec{}, 1, {1 << 20}, int64_t{1} << 14);
  EXPECT_GT(big.split_keys, cuda::kDecodeSplitKeys);
  EXPECT_LE(static_cast<int64_t>(big.items.size()) * (int64_t{1} << 14), cuda::kDecodeWorkspaceFloats);
}

TEST(CudaDecodePlan, ServesWhatTheCpuTwinServes) {
  for (const PatternSpec& spec : decode_specs()) EXPECT_TRUE(cuda::decode_serves(materialize(spec, {1, 2, 4, 64})));
  PatternSpec padded;
  padded.key_padding_mask = Tensor<uint8_t>({1, 64}, 1);
  EXPECT_FALSE(cuda::decode_serves(materialize(padded, {1, 2, 4, 64})));
  EXPECT_FALSE(cuda::decode_serves(materialize(testing_grid::bigbird(4, 1, 0), {1, 1, 16, 16})));
  EXPECT_FALSE(cuda::decode_serves(
      materialize(testing_grid::token(PatternKind::longformer, 2, 1, false, 4, {0}), {1, 1, 16, 16})));
}

// c11's plan (varlen_plan.h) against the packed batch it covers: every (sequence, query
// row) in exactly one tile of its own sequence, tiles sequence-major with tile_start the
// prefix over ⌈seq_len_q(b) / tile_rows⌉, no tile for an empty sequence, an empty key span
// for a sequence without keys; each row's keys are the spec materialized for its sequence's
// own lengths (contract §2.10, bottom-right per sequence), and a tile's span [j0, j1) is
// exactly the union of its rows' keys.
TEST(CudaVarlenPlan, TilesCoverEverySequenceRowOnceWithItsOwnKeys) {
  // lq/lk per sequence: 1/5, 0/4 (empty), 34/0 (queries, no keys), 65/131, 0/2, 40/7 (L_q > L_k),
  // 1/1, 0/0.
  Varlen vl;
  vl.cu_seqlens_q = {0, 1, 1, 35, 100, 100, 140, 141, 141};
  vl.cu_seqlens_k = {0, 5, 9, 9, 140, 142, 149, 150, 150};
  validate_varlen(vl, 141, 150);
  for (const PatternSpec& spec : decode_specs())
    for (const int64_t tile_rows : {int64_t{32}, int64_t{7}, int64_t{1}}) {
      SCOPED_TRACE(describe(spec) + " tile_rows " + std::to_string(tile_rows));
      const cuda::VarlenPlan plan = cuda::plan_varlen(spec, vl, tile_rows);
      ASSERT_EQ(plan.rows.size(), 141u);
      ASSERT_EQ(plan.tile_start.size(), 9u);
      std::vector<int> covered(141, 0);
      int32_t prefix = 0;
      for (int64_t b = 0; b < vl.num_sequences(); ++b) {
        const int64_t lq = vl.seq_len_q(b), lk = vl.seq_len_k(b), q0 = vl.cu_seqlens_q[b];
        EXPECT_EQ(plan.tile_start[b], prefix) << "sequence " << b;
        prefix += static_cast<int32_t>((lq + tile_rows - 1) / tile_rows);
        EXPECT_EQ(plan.tile_start[b + 1], prefix) << "sequence " << b;
        const Pattern pattern = materialize(spec, {1, 1, std::max<int64_t>(lq, 1), std::max<int64_t>(lk, 1)});
        for (int32_t t = plan.tile_start[b]; t < plan.tile_start[b + 1]; ++t) {
          const cuda::VarlenTile& tile = plan.tiles[static_cast<size_t>(t)];
          ASSERT_EQ(tile.b, b);
          ASSERT_GE(tile.rows, 1);
          ASSERT_LE(tile.rows, tile_rows);
          ASSERT_LE(tile.i0 + tile.rows, lq);
          int64_t lo = lk, hi = -1;
          for (int64_t i = tile.i0; i < tile.i0 + tile.rows; ++i) {
            ++covered[static_cast<size_t>(q0 + i)];
            const DecodeRowKeys& r = plan.rows[static_cast<size_t>(q0 + i)];
            if (lk == 0) {
              EXPECT_GT(r.lo, r.hi) << "row " << i << " of a sequence without keys";
            }
            for (int64_t j = 0; j < lk; ++j) {
              ASSERT_EQ(decode_row_allows(r, j), pattern.allowed(0, 0, i, j)) << "sequence " << b << " query " << i << " key " << j;
              if (decode_row_allows(r, j)) lo = std::min(lo, j), hi = std::max(hi, j);
            }
          }
          if (hi < lo) {
            EXPECT_GE(tile.j0, tile.j1) << "tile " << t;
          } else {
            EXPECT_TRUE(tile.j0 == lo && tile.j1 == hi + 1) << "tile " << t << ": [" << tile.j0 << ", " << tile.j1 << ")";
          }
          if (t > plan.tile_start[b]) {
            EXPECT_EQ(tile.i0, plan.tiles[t - 1].i0 + plan.tiles[t - 1].rows);
          }
        }
      }
      EXPECT_EQ(static_cast<size_t>(prefix), plan.tiles.size());
      for (size_t row = 0; row < covered.size(); ++row) ASSERT_EQ(covered[row], 1) << "packed row " << row;
    }
}

TEST(CudaVarlenPlan, PlainBatchIsEqualSequencesAndBadTileSizesAreRefused) {
  const Varlen vl = cuda::plain_varlen(3, 4, 6);
  EXPECT_EQ(vl.cu_seqlens_q, (std::vector<int64_t>{0, 4, 8, 12}));
  EXPECT_EQ(vl.cu_seqlens_k, (std::vector<int64_t>{0, 6, 12, 18}));
  const cuda::VarlenPlan plan = cuda::plan_varlen(PatternSpec{}, vl);
  EXPECT_EQ(plan.tiles.size(), 3u);  // one 4-row tile per element
  EXPECT_THROW(cuda::plan_varlen(PatternSpec{}, vl, 0), InvalidArgument);
  EXPECT_THROW(cuda::plan_varlen(PatternSpec{}, vl, 33), InvalidArgument);
  for (const PatternSpec& spec : decode_specs()) EXPECT_TRUE(cuda::varlen_serves(materialize(spec, {1, 2, 4, 64})));
  EXPECT_FALSE(cuda::varlen_serves(materialize(testing_grid::bigbird(4, 1, 0), {1, 1, 16, 16})));
  PatternSpec padded;
  padded.key_padding_mask = Tensor<uint8_t>({1, 64}, 1);
  EXPECT_FALSE(cuda::varlen_serves(materialize(padded, {1, 2, 4, 64})));
}

// c10's lists (PackedPattern::sel_*) are the pattern's: for every (batch, head, query) the
// listed keys are distinct and key j appears with weight Pattern::multiplicity (1 or its
// repeats under duplicates = count), 0 for every key not listed — −1 slots, causal, K > L_k,
// every H_sel, B_sel = B. (Key padding is the kernel's, applied from key_valid.)
Tensor<int64_t> selection_table(int64_t bsel, int64_t hsel, int64_t lq, int64_t lk, int64_t kk, uint64_t seed) {
  Tensor<int64_t> t({bsel, hsel, lq, kk});
  uint64_t x = seed;
  for (int64_t& e : t.data) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t u = static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(lk + lk / 4 + 1));
    e = u >= lk ? -1 : u;
  }
  return t;
}

TEST(CudaSelectedPacking, ListsCarryEachAllowedKeyOnceWithItsMultiplicity) {
  struct C { int64_t B, Hq, Hkv, Lq, Lk, K, hsel, bsel; bool causal, count; };
  const C cases[] = {{2, 2, 2, 9, 7, 16, 2, 1, false, false}, {2, 2, 2, 9, 7, 16, 2, 1, false, true},
                     {2, 8, 2, 17, 23, 6, 1, 1, false, false}, {2, 6, 2, 17, 23, 6, 2, 1, true, false},
                     {1, 6, 3, 17, 23, 6, 6, 1, true, true},   {1, 2, 1, 19, 5, 7, 1, 1, true, false},
                     {2, 4, 1, 13, 13, 20, 1, 2, true, true}};
  for (const C& c : cases) {
    PatternSpec s;
    s.kind = PatternKind::selected;
    s.kv_indices = selection_table(c.bsel, c.hsel, c.Lq, c.Lk, c.K, static_cast<uint64_t>(c.Lq * 131 + c.K));
    s.causal = c.causal;
    s.duplicates = c.count ? Duplicates::count : Duplicates::once;
    const Pattern pattern = materialize(s, {c.B, c.Hq, c.Lq, c.Lk});
    const cuda::PackedPattern packed = cuda::pack_pattern(pattern);
    ASSERT_EQ(packed.sel_batch, c.bsel);
    ASSERT_EQ(packed.sel_heads, c.hsel);
    ASSERT_EQ(packed.sel_row_ptr.size(), static_cast<size_t>(c.bsel * c.hsel * c.Lq + 1));
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.Hq; ++h)
        for (int64_t i = 0; i < c.Lq; ++i) {
          // The row the kernel reads (c10_selected_gather.cu), from the packed sizes alone.
          const int64_t row = packed.sel_heads == 1 ? 0 : h / (c.Hq / packed.sel_heads);
          ASSERT_EQ(row, pattern.selection_row(h));
          const int64_t x = ((packed.sel_batch == 1 ? 0 : b) * packed.sel_heads + row) * c.Lq + i;
          std::vector<int64_t> weight(static_cast<size_t>(c.Lk), 0);
          for (int64_t e = packed.sel_row_ptr[x]; e < packed.sel_row_ptr[x + 1]; ++e) {
            const int32_t j = packed.sel_key[e];
            ASSERT_GE(j, 0);
            ASSERT_LT(j, c.Lk);
            ASSERT_EQ(weight[j], 0) << "key " << j << " listed twice in the packed row";
            weight[j] = packed.sel_count[e];
          }
          for (int64_t j = 0; j < c.Lk; ++j)
            ASSERT_EQ(weight[j], pattern.multiplicity(b, h, i, j)) << "b " << b << " h " << h << " i " << i << " j " << j;
        }
  }
  // Every other kind packs no lists.
  EXPECT_TRUE(cuda::pack_pattern(materialize(PatternSpec{}, {1, 1, 8, 8})).sel_row_ptr.empty());
}

// Block-level selected (contract §3.17) runs on c08 through the layout: the packed view
// agrees with the pattern on every (head, query, key), for b_q = b_k = the tile (whole
// tiles) and for block sizes that are not the tile (bitmasks).
TEST(CudaSelectedPacking, SelectedBlocksLayoutIsPackedExactly) {
  struct C { int64_t bq, bk, tile; bool causal; };
  for (const C& c : {C{16, 16, 16, true}, C{1, 8, 64, true}, C{5, 7, 16, false}}) {
    const int64_t lq = 70, lk = 90, hq = 4, nk = (lk + c.bk - 1) / c.bk, nq = (lq + c.bq - 1) / c.bq;
    PatternSpec s;
    s.kind = PatternKind::selected_blocks;
    s.block_indices = selection_table(1, 2, nq, nk, 3, static_cast<uint64_t>(c.bq * 7 + c.bk));
    s.block_size_q = c.bq;
    s.block_size_k = c.bk;
    s.causal = c.causal;
    s.tile = c.tile;
    const Pattern pattern = materialize(s, {1, hq, lq, lk});
    const cuda::PackedPattern packed = cuda::pack_pattern(pattern);
    for (int64_t h = 0; h < hq; ++h) {
      const cuda::HeadView view = cuda::head_view(packed, h, packed.row_ptr.data(), packed.col.data(),
                                                  packed.bits_at.data(), packed.bits.data());
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j)
          ASSERT_EQ(cuda::view_allows(view, i, j), pattern.allowed(0, h, i, j))
              << "bq " << c.bq << " bk " << c.bk << " head " << h << " query " << i << " key " << j;
    }
  }
}

}  // namespace
}  // namespace sparseattn
