// Checks contract §3.17's import of FlexAttention's BlockMask (pattern/block_mask.h):
// hand-computed 4-block tables (partial and full blocks united, entries past the counts
// ignored whatever their value), the round trip export -> import for patterns made of whole
// blocks (BigBird at its own block size, chunks of one block) on the oracle a1_dense_masked,
// a partial block coming back whole, and each refusal naming its argument and range.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/seeded_inputs.h"
#include "pattern/block_mask.h"
#include "reference/attention.h"

namespace sparseattn {
namespace {

using testing_inputs::random_tensor;

Tensor<int64_t> table(Shape shape, std::vector<int64_t> values) {
  Tensor<int64_t> t(shape);
  t.data = std::move(values);
  return t;
}

PatternSpec blocks(Tensor<int64_t> idx, int64_t bq, int64_t bk) {
  PatternSpec s;
  s.kind = PatternKind::selected_blocks;
  s.block_indices = std::move(idx);
  s.block_size_q = bq;
  s.block_size_k = bk;
  return s;
}

// Every (b, h, i, j) of `a` and `b` allowed alike; the count of allowed pairs.
int64_t expect_same_allowed(const Pattern& a, const Pattern& b) {
  int64_t pairs = 0;
  const PatternSizes& z = a.sizes;
  for (int64_t bb = 0; bb < z.batch; ++bb)
    for (int64_t h = 0; h < z.num_heads; ++h)
      for (int64_t i = 0; i < z.seq_len_q; ++i)
        for (int64_t j = 0; j < z.seq_len_k; ++j) {
          EXPECT_EQ(a.allowed(bb, h, i, j), b.allowed(bb, h, i, j)) << bb << "," << h << "," << i << "," << j;
          pairs += a.allowed(bb, h, i, j);
        }
  return pairs;
}

// The oracle on both patterns gives the same o and lse (the same allowed set, the same
// arithmetic: equal to the last bit).
void expect_same_attention(const Pattern& a, const Pattern& b) {
  const PatternSizes& z = a.sizes;
  const Tensor<double> q = random_tensor({1, z.num_heads, z.seq_len_q, 3}, 1);
  const Tensor<double> k = random_tensor({1, z.num_heads, z.seq_len_k, 3}, 2);
  const Tensor<double> v = random_tensor({1, z.num_heads, z.seq_len_k, 3}, 3);
  const AttentionResult ra = a1_dense_masked(q, k, v, a, nullptr);
  const AttentionResult rb = a1_dense_masked(q, k, v, b, nullptr);
  EXPECT_EQ(ra.o.data, rb.o.data);
  EXPECT_EQ(ra.lse.data, rb.lse.data);
}

// ---- by hand ----------------------------------------------------------------------------

TEST(BlockMaskImport, FourBlocksByHandUniteFullAndPartialAndIgnorePadding) {
  // 4 query blocks, KV_blocks = 4. Partial: row 0 {2}, row 1 {3, 0}, row 2 none, row 3 {1}.
  // Full: row 0 {0}, row 2 {3}, row 3 {1} (also partial: one block). Entries past the
  // counts are garbage (9, -5, 7: out of range, negative): never read.
  const Tensor<int64_t> num = table({1, 1, 4}, {1, 2, 0, 1});
  const Tensor<int64_t> idx = table({1, 1, 4, 4}, {2, 9, -5, 9, 3, 0, 7, 7, -5, 9, 9, 9, 1, 1, -5, 7});
  const Tensor<int64_t> full_num = table({1, 1, 4}, {1, 0, 1, 1});
  const Tensor<int64_t> full_idx = table({1, 1, 4, 4}, {0, 9, 9, 9, 9, 9, 9, 9, 3, -5, 7, 7, 1, 9, 9, 9});
  const Tensor<int64_t> got = block_indices_from_block_mask(num, idx, &full_num, &full_idx);
  // K = the longest union (2), ascending, -1 after; row 3's block 1 once.
  EXPECT_EQ(got.shape, (Shape{1, 1, 4, 2}));
  EXPECT_EQ(got.data, (std::vector<int64_t>{0, 2, 0, 3, 3, -1, 1, -1}));
  // Without the full pair: the partial blocks alone.
  const Tensor<int64_t> partial = block_indices_from_block_mask(num, idx, nullptr, nullptr);
  EXPECT_EQ(partial.data, (std::vector<int64_t>{2, -1, 0, 3, -1, -1, 1, -1}));

  // As a pattern with 2-token blocks on 8 tokens: query block m attends the keys of its
  // listed blocks, here o and lse equal the oracle's on the mask written out by hand.
  const Pattern p = materialize(blocks(got, 2, 2), {1, 1, 8, 8});
  const std::vector<std::vector<int64_t>> keys = {{0, 1, 4, 5}, {0, 1, 6, 7}, {6, 7}, {2, 3}};
  PatternSpec e;
  e.kind = PatternKind::explicit_mask;
  e.mask = Tensor<uint8_t>({8, 8}, 0);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j : keys[static_cast<size_t>(i / 2)]) e.mask->data[i * 8 + j] = 1;
  const Pattern hand = materialize(e, {1, 1, 8, 8});
  EXPECT_EQ(expect_same_allowed(p, hand), 8 + 8 + 4 + 4);
  expect_same_attention(p, hand);
}

TEST(BlockMaskImport, EmptyTablesKeepOneSlotAndBatchesAndHeadsStayApart) {
  // Every row empty: K = 1 (contract §3.17), all -1. B = 2, H = 2: row (b, h, m) lands at
  // the same place of the output.
  const Tensor<int64_t> none = block_indices_from_block_mask(
      table({1, 1, 2}, {0, 0}), table({1, 1, 2, 3}, {5, 5, 5, 5, 5, 5}), nullptr, nullptr);
  EXPECT_EQ(none.shape, (Shape{1, 1, 2, 1}));
  EXPECT_EQ(none.data, (std::vector<int64_t>{-1, -1}));
  const Tensor<int64_t> bh = block_indices_from_block_mask(
      table({2, 2, 1}, {1, 1, 1, 1}), table({2, 2, 1, 4}, {0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}),
      nullptr, nullptr);
  EXPECT_EQ(bh.shape, (Shape{2, 2, 1, 1}));
  EXPECT_EQ(bh.data, (std::vector<int64_t>{0, 1, 2, 3}));
}

// ---- export -> import -------------------------------------------------------------------

TEST(BlockMaskImport, RoundTripOfWholeBlockPatternsIsExact) {
  // BigBird ITC at its own block size: every block of its layout is whole (full blocks
  // only), so importing the export gives the same pattern, head by head.
  PatternSpec bigbird;
  bigbird.kind = PatternKind::bigbird;
  bigbird.block_size = 4;
  bigbird.num_random_blocks = 1;
  bigbird.seed = 7;
  const PatternSizes z{1, 2, 32, 32};
  const Pattern original = materialize(bigbird, z);
  const BlockMaskTables t = block_mask_of(original, 4);
  int64_t full = 0;
  for (int64_t n : t.full_kv_num_blocks.data) full += n;
  EXPECT_GT(full, 0);  // the full pair is exercised, not only the partial one
  const Pattern imported = materialize(
      blocks(block_indices_from_block_mask(t.kv_num_blocks, t.kv_indices, &t.full_kv_num_blocks,
                                           &t.full_kv_indices),
             4, 4),
      z);
  EXPECT_GT(expect_same_allowed(original, imported), 2 * 32 * 4 * 3);  // >= 3 blocks a row
  expect_same_attention(original, imported);

  // Chunks of exactly one block: the diagonal blocks, each full, come back equal.
  PatternSpec chunked;
  chunked.kind = PatternKind::chunked;
  chunked.chunk_size = 4;
  chunked.tile = 4;
  const Pattern c = materialize(chunked, {1, 1, 12, 12});
  const BlockMaskTables ct = block_mask_of(c, 4);
  EXPECT_EQ(ct.full_kv_num_blocks.data, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(ct.kv_num_blocks.data, (std::vector<int64_t>{0, 0, 0}));
  expect_same_allowed(c, materialize(blocks(block_indices_from_block_mask(
                                                ct.kv_num_blocks, ct.kv_indices,
                                                &ct.full_kv_num_blocks, &ct.full_kv_indices),
                                            4, 4),
                                     {1, 1, 12, 12}));
}

TEST(BlockMaskImport, APartialBlockComesBackWhole) {
  // window 1 on 8 tokens at tile 4: query block 0 has partial blocks {0, 1} (query 3 sees
  // key 4), query block 1 the same; imported, every query sees all 8 keys — the mask_mod's
  // band is not in the tables.
  PatternSpec w;
  w.kind = PatternKind::window;
  w.window = 1;
  w.tile = 4;
  const Pattern band = materialize(w, {1, 1, 8, 8});
  const BlockMaskTables t = block_mask_of(band, 4);
  EXPECT_EQ(t.kv_num_blocks.data, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t.full_kv_num_blocks.data, (std::vector<int64_t>{0, 0}));
  const Tensor<int64_t> got = block_indices_from_block_mask(t.kv_num_blocks, t.kv_indices,
                                                            &t.full_kv_num_blocks, &t.full_kv_indices);
  EXPECT_EQ(got.data, (std::vector<int64_t>{0, 1, 0, 1}));
  PatternSpec dense;
  const Pattern all = materialize(dense, {1, 1, 8, 8});
  EXPECT_EQ(expect_same_allowed(materialize(blocks(got, 4, 4), {1, 1, 8, 8}), all), 64);
}

// ---- refusals ---------------------------------------------------------------------------

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "not refused";
  return "";
}

TEST(BlockMaskImport, RefusalsNameTheArgumentAndTheRange) {
  const Tensor<int64_t> num = table({1, 1, 2}, {2, 1});
  const Tensor<int64_t> idx = table({1, 1, 2, 4}, {0, 1, 9, 9, 3, 9, 9, 9});
  EXPECT_NO_THROW(block_indices_from_block_mask(num, idx, nullptr, nullptr));
  auto with = [&](Tensor<int64_t> n, Tensor<int64_t> i) {
    return refusal([=] { block_indices_from_block_mask(n, i, nullptr, nullptr); });
  };
  // A read index at KV_blocks, and a negative one (FlexAttention has no -1 slots).
  EXPECT_EQ(with(num, table({1, 1, 2, 4}, {0, 4, 9, 9, 3, 9, 9, 9})),
            "invalid kv_indices[0,0,0,1] = 4: must be a key block in [0, 4) (KV_blocks; read "
            "because 1 < kv_num_blocks[0,0,0] = 2)");
  EXPECT_NE(with(num, table({1, 1, 2, 4}, {0, 1, 9, 9, -1, 9, 9, 9})).find("invalid kv_indices[0,0,1,0] = -1"),
            std::string::npos);
  // A count beyond KV_blocks, or negative.
  EXPECT_NE(with(table({1, 1, 2}, {2, 5}), idx).find("invalid kv_num_blocks[0,0,1] = 5: must be in [0, 4]"),
            std::string::npos);
  EXPECT_NE(with(table({1, 1, 2}, {-1, 0}), idx).find("invalid kv_num_blocks[0,0,0] = -1"),
            std::string::npos);
  // Shapes.
  EXPECT_NE(with(table({1, 2}, {0, 0}), idx).find("invalid kv_num_blocks shape = [1, 2]: must be [B, H, Q_blocks]"),
            std::string::npos);
  EXPECT_NE(with(num, table({1, 1, 3, 1}, {0, 0, 0})).find("invalid kv_indices shape = [1, 1, 3, 1]: must be [1, 1, 2, KV_blocks >= 1]"),
            std::string::npos);
  // The full pair: both or neither, of kv_indices's shape, checked like the partial pair.
  EXPECT_NE(refusal([&] { block_indices_from_block_mask(num, idx, &num, nullptr); })
                .find("invalid full_kv_indices = none: must be given with full_kv_num_blocks"),
            std::string::npos);
  const Tensor<int64_t> wide = table({1, 1, 2, 5}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_NE(refusal([&] { block_indices_from_block_mask(num, idx, &num, &wide); })
                .find("invalid full_kv_indices shape = [1, 1, 2, 5]: must equal kv_indices's shape [1, 1, 2, 4]"),
            std::string::npos);
  const Tensor<int64_t> far = table({1, 1, 2, 4}, {0, 1, 9, 9, 4, 9, 9, 9});
  EXPECT_NE(refusal([&] { block_indices_from_block_mask(num, idx, &num, &far); })
                .find("invalid full_kv_indices[0,0,1,0] = 4: must be a key block in [0, 4)"),
            std::string::npos);
  // Names as the caller gives them (the CLI: the files).
  BlockMaskNames names;
  names.kv_indices = "--block-mask bm/kv_indices.npy";
  EXPECT_NE(refusal([&] {
              block_indices_from_block_mask(num, table({1, 1, 2, 4}, {0, 4, 9, 9, 3, 9, 9, 9}),
                                            nullptr, nullptr, names);
            }).find("invalid --block-mask bm/kv_indices.npy[0,0,0,1] = 4"),
            std::string::npos);
}

}  // namespace
}  // namespace sparseattn
