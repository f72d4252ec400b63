// contract §5: every invalid PatternSpec throws InvalidArgument whose argument() names the
// offending parameter, and whose message carries its value and the allowed range.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"
#include "tests/reference/grid.h"

namespace sparseattn {
namespace {

using testing_grid::bigbird;
using testing_grid::token;

struct Invalid {
  std::string name;      // test name
  std::string argument;  // expected prefix of InvalidArgument::argument()
  std::string value;     // expected to appear in what()
  std::function<void()> build;
};

void PrintTo(const Invalid& c, std::ostream* os) { *os << c.name; }

PatternSpec with(PatternSpec s, const std::function<void(PatternSpec&)>& edit) {
  edit(s);
  return s;
}

std::vector<Invalid> invalid_cases() {
  using K = PatternKind;
  const PatternSizes z{1, 2, 8, 8};
  auto build = [](PatternSpec s, PatternSizes sizes) {
    return std::function<void()>([s, sizes] { materialize(s, sizes); });
  };
  Tensor<int64_t> table_ok({2, 2, 1}, 1);  // n = 16, b = 4: nb = 4, rows nb - 2 = 2
  Tensor<int64_t> table_out_of_range = table_ok;
  table_out_of_range.data[3] = 4;
  Tensor<int64_t> table_negative = table_ok;
  table_negative.data[0] = -2;  // -1 is "no draw" (contract §3.10); below it is refused
  Tensor<int64_t> table_wrong_rows({2, 3, 1}, 1);
  auto bb_table = [](Tensor<int64_t> t) {
    PatternSpec s = bigbird(4, 1, 0);
    s.random_table = std::move(t);
    return s;
  };
  std::vector<Invalid> v = {
      {"window_minus_1", "window", "-1", build(token(K::window, -1, 1, false, 5), z)},
      {"dilation_0", "dilation", "0", build(token(K::window, 1, 0, false, 5), z)},
      {"dilation_minus_3_longformer", "dilation", "-3",
       build(token(K::longformer, 1, -3, false, 5, {0}), z)},
      {"tile_0", "tile", "0", build(token(K::window, 1, 1, false, 0), z)},
      {"block_size_0", "block_size", "0", build(bigbird(0, 1, 0), z)},
      {"block_size_minus_2_etc", "block_size", "-2", build(bigbird(-2, 1, 0, 2), z)},
      {"global_8_out_of_range", "global", "8", build(token(K::longformer, 1, 1, false, 5, {0, 8}), z)},
      {"global_minus_1", "global", "-1", build(token(K::longformer, 1, 1, false, 5, {-1}), z)},
      {"global_out_of_range_random", "global", "9", build(token(K::random, 1, 1, false, 5, {9}, 1), z)},
      {"num_random_minus_1", "num_random", "-1", build(token(K::random, 1, 1, false, 5, {}, -1), z)},
      {"num_random_blocks_minus_1", "num_random_blocks", "-1", build(bigbird(4, -1, 0), z)},
      {"num_global_tokens_minus_1", "num_global_tokens", "-1",
       build(with(bigbird(4, 1, 0, 0), [](PatternSpec& s) { s.num_global_tokens = -1; }), z)},
      {"num_global_tokens_above_seq_len", "num_global_tokens", "9", build(bigbird(4, 1, 0, 9), z)},
      {"random_table_entry_out_of_range", "random_table entry", "4",
       build(bb_table(table_out_of_range), {1, 2, 16, 16})},
      {"random_table_entry_below_minus_1", "random_table entry", "-2",
       build(bb_table(table_negative), {1, 2, 16, 16})},
      {"random_table_wrong_rows", "random_table shape", "[2, 3, 1]",
       build(bb_table(table_wrong_rows), {1, 2, 16, 16})},
      {"random_table_rank_2", "random_table shape", "[2, 2]",
       build(bb_table(Tensor<int64_t>({2, 2}, 1)), {1, 2, 16, 16})},
      {"bigbird_seq_len_q_ne_seq_len_k", "seq_len_k", "9", build(bigbird(4, 1, 0), {1, 1, 8, 9})},
      {"explicit_mask_missing", "mask", "none",
       build(with(PatternSpec{}, [](PatternSpec& s) { s.kind = PatternKind::explicit_mask; }), z)},
      {"explicit_mask_wrong_shape", "mask shape", "[8, 7]",
       build(testing_grid::explicit_mask(Tensor<uint8_t>({8, 7}, 1), 5), z)},
      {"explicit_mask_wrong_heads", "mask shape", "[3, 8, 8]",
       build(testing_grid::explicit_mask(Tensor<uint8_t>({3, 8, 8}, 1), 5), z)},
      {"segment_ids_wrong_length", "segment_ids length", "7",
       build(testing_grid::hierarchical({0, 0, 0, 1, 1, 1, 2}, 5), z)},
      {"segment_ids_decreasing", "segment_ids[4]", "0",
       build(testing_grid::hierarchical({0, 0, 1, 1, 0, 2, 2, 2}, 5), z)},
      {"key_padding_mask_wrong_length", "key_padding_mask shape", "[1, 7]",
       build(with(PatternSpec{}, [](PatternSpec& s) { s.key_padding_mask = Tensor<uint8_t>({1, 7}, 1); }), z)},
      {"key_padding_mask_wrong_batch", "key_padding_mask shape", "[2, 8]",
       build(with(PatternSpec{}, [](PatternSpec& s) { s.key_padding_mask = Tensor<uint8_t>({2, 8}, 1); }), z)},
      {"num_heads_0", "num_heads", "0", build(PatternSpec{}, {1, 0, 8, 8})},
      {"seq_len_0", "seq_len", "0", build(PatternSpec{}, {1, 1, 0, 8})},
      {"seq_len_k_0", "seq_len_k", "0", build(PatternSpec{}, {1, 1, 8, 0})},
      {"batch_0", "batch", "0", build(PatternSpec{}, {0, 1, 8, 8})},
      {"per_head_wrong_count", "heads length", "1",
       build(with(PatternSpec{}, [](PatternSpec& s) {
               s.kind = PatternKind::per_head;
               s.per_head = {PatternSpec{}};
             }), z)},
      {"per_head_bad_window_in_head_1", "heads[1].window", "-2",
       build(with(PatternSpec{}, [](PatternSpec& s) {
               s.kind = PatternKind::per_head;
               s.per_head = {PatternSpec{}, token(PatternKind::window, -2, 1, false, 5)};
             }), z)},
      // contract §3.3: the (left, right) window.
      {"window_left_minus_2", "window_left", "-2",
       build(testing_grid::window_pair(token(K::window, 0, 1, false, 5), -2, 1), z)},
      {"window_right_minus_5_longformer", "window_right", "-5",
       build(testing_grid::window_pair(token(K::longformer, 0, 1, false, 5, {0}), 1, -5), z)},
      {"window_left_alone_names_window_right", "window_right", "none",
       build(with(token(K::window, 0, 1, false, 5), [](PatternSpec& s) { s.window_left = 2; }), z)},
      {"window_right_alone_names_window_left", "window_left", "none",
       build(with(token(K::window, 0, 1, false, 5), [](PatternSpec& s) { s.window_right = 2; }), z)},
      {"window_with_the_pair", "window", "3",
       build(with(testing_grid::window_pair(token(K::window, 0, 1, false, 5), 1, 1),
                  [](PatternSpec& s) { s.window = 3; }), z)},
      {"window_left_for_dense", "window_left", "1",
       build(testing_grid::window_pair(token(K::dense, 0, 1, false, 5), 1, 1), z)},
      {"window_pair_for_chunked", "window_left", "0",
       build(testing_grid::window_pair(testing_grid::chunked(2, false, 5), 0, 0), z)},
      // contract §3.14: chunked.
      {"chunk_size_0", "chunk_size", "0", build(testing_grid::chunked(0, false, 5), z)},
      {"chunk_size_minus_3", "chunk_size", "-3", build(testing_grid::chunked(-3, true, 5), z)},
      {"chunk_size_missing", "chunk_size", "none",
       build(with(PatternSpec{}, [](PatternSpec& s) { s.kind = PatternKind::chunked; }), z)},
      {"chunk_size_for_window", "chunk_size", "4",
       build(with(token(K::window, 1, 1, false, 5), [](PatternSpec& s) { s.chunk_size = 4; }), z)},
      {"dilation_for_chunked", "dilation", "2",
       build(with(testing_grid::chunked(2, false, 5), [](PatternSpec& s) { s.dilation = 2; }), z)},
      {"window_for_chunked", "window", "2",
       build(with(testing_grid::chunked(2, false, 5), [](PatternSpec& s) { s.window = 2; }), z)},
      // contract §3.15: neighborhood.
      {"kernel_size_even", "kernel_size", "4", build(testing_grid::neighborhood(4, 1, false, 5), z)},
      {"kernel_size_0", "kernel_size", "0", build(testing_grid::neighborhood(0, 1, false, 5), z)},
      {"kernel_size_minus_1", "kernel_size", "-1", build(testing_grid::neighborhood(-1, 1, false, 5), z)},
      {"kernel_size_above_seq_len_k", "kernel_size", "9",
       build(testing_grid::neighborhood(9, 1, false, 5), z)},
      {"kernel_size_times_dilation_above_seq_len_k", "dilation", "3",
       build(testing_grid::neighborhood(3, 3, false, 5), z)},
      {"kernel_size_near_2_63", "kernel_size", "9223372036854775807",
       build(testing_grid::neighborhood(INT64_MAX, 1, false, 5), z)},
      {"dilation_near_2_63_neighborhood", "dilation", "4611686018427387904",
       build(testing_grid::neighborhood(3, 4611686018427387904, false, 5), z)},
      {"neighborhood_seq_len_q_above_seq_len_k", "seq_len_q", "9",
       build(testing_grid::neighborhood(3, 1, false, 5), {1, 1, 9, 8})},
      {"kernel_size_missing", "kernel_size", "none",
       build(with(PatternSpec{}, [](PatternSpec& s) { s.kind = PatternKind::neighborhood; }), z)},
      {"kernel_size_for_chunked", "kernel_size", "3",
       build(with(testing_grid::chunked(2, false, 5), [](PatternSpec& s) { s.kernel_size = 3; }), z)},
      {"chunk_size_for_neighborhood", "chunk_size", "2",
       build(with(testing_grid::neighborhood(3, 1, false, 5), [](PatternSpec& s) { s.chunk_size = 2; }), z)},
      {"per_head_bad_kernel_size_in_head_0", "heads[0].kernel_size", "2",
       build(with(PatternSpec{}, [](PatternSpec& s) {
               s.kind = PatternKind::per_head;
               s.per_head = {testing_grid::neighborhood(2, 1, false, 5), PatternSpec{}};
             }), z)},
      {"per_head_kernel_size_beyond_seq_len_in_head_1", "heads[1].kernel_size", "11",
       build(with(PatternSpec{}, [](PatternSpec& s) {
               s.kind = PatternKind::per_head;
               s.per_head = {PatternSpec{}, testing_grid::neighborhood(11, 1, false, 5)};
             }), z)},
      {"unknown_pattern_name", "pattern", "bigbirds",
       std::function<void()>([] { parse_pattern_kind("bigbirds"); })},
  };
  return v;
}

class InvalidPatternSpec : public ::testing::TestWithParam<Invalid> {};

TEST_P(InvalidPatternSpec, ThrowsInvalidArgumentNamingTheArgumentAndItsValue) {
  const Invalid& c = GetParam();
  try {
    c.build();
    FAIL() << "no error for " << c.name;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument().rfind(c.argument, 0), 0u)
        << "argument() = '" << e.argument() << "', expected it to start with '" << c.argument << "'";
    const std::string what = e.what();
    EXPECT_NE(what.find(c.value), std::string::npos) << what;
    EXPECT_NE(what.find(": "), std::string::npos) << "no allowed range in: " << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Spec5, InvalidPatternSpec, ::testing::ValuesIn(invalid_cases()),
                         [](const ::testing::TestParamInfo<Invalid>& i) { return i.param.name; });

}  // namespace
}  // namespace sparseattn
