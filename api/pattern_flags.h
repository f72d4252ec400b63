// The pattern flags every subcommand shares: the field's names, one
// definition, so `attend`, `mask`, `check`, `info`, `reach` and `analyze` read a pattern
// the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pattern/pattern.h"
#include "pattern/spec.h"

namespace sparseattn::api {

// Raw flag values as parsed; files are loaded by to_spec().
struct PatternFlags {
  std::string pattern = "dense";
  int64_t window = 0;
  bool window_given = false;     // --window was on the command line (even as 0)
  std::optional<int64_t> window_left;   // --window-left, -1 = unbounded
  std::optional<int64_t> window_right;  // --window-right
  std::optional<int64_t> chunk_size;    // --chunk-size (chunked)
  std::optional<int64_t> kernel_size;   // --kernel-size (neighborhood)
  int64_t dilation = 1;
  bool causal = false;
  std::string global;            // "I,J,..." token positions
  int64_t num_random = 0;
  int64_t block_size = 64;
  int64_t num_random_blocks = 0;
  int64_t num_global_tokens = 0;
  std::string random_table;      // .npy path
  std::string segment_ids;       // .npy path
  std::string mask;              // .npy path
  std::string key_padding_mask;  // .npy path
  uint64_t seed = 0;
  std::string pattern_file;      // .json path (api/pattern_file.h); replaces the flags above
  // selected, selected-blocks (contract §3.16–§3.17)
  std::string kv_indices;        // .npy path, int [B_sel, H_sel, seq_len_q, K]
  std::string duplicates = "once";  // once | count (selected)
  std::string block_indices;     // .npy path, int [B_sel, H_sel, ceil(seq_len_q / BQ), K]
  std::optional<int64_t> block_size_q;  // --block-size-q (selected-blocks)
  std::optional<int64_t> block_size_k;  // --block-size-k (selected-blocks)
  // --block-mask DIR: FlexAttention's BlockMask tables as .npy files, imported as
  // selected-blocks' block_indices (read_block_mask); block sizes default to 128 with it.
  std::string block_mask;
};

// Adds --pattern, --window, --window-left, --window-right, --chunk-size, --kernel-size,
// --dilation, --causal, --global, --num-random, --block-size,
// --num-random-blocks, --num-global-tokens, --random-table, --segment-ids, --mask,
// --key-padding-mask, --seed, --pattern-file, --kv-indices, --duplicates, --block-indices,
// --block-size-q, --block-size-k, --block-mask to `cmd`, each documented with its unit and
// range.
void add_pattern_flags(CLI::App* cmd, PatternFlags& flags);

// Makes every integer option of `app` and of all its subcommands (type INT or UINT, the
// pattern flags, --seq-len, --num-heads, --seed, --token, ...) decimal and strict: "010"
// is ten, "08" eight; "0x10", "1e3", "-1" for an unsigned flag and values beyond the
// type's range are refused with "<text> must be an integer in <range>, written in
// decimal". Call once, after every option is added (register_commands() does).
void decimal_integer_flags(CLI::App& app);

// "3,17,4095" -> {3, 17, 4095}: the command line's text for global token positions. Throws
// InvalidArgument("--global") for anything but comma-separated decimal integers >= 0.
std::vector<int64_t> parse_positions(const std::string& text);

// Builds the PatternSpec, loading the .npy files named by the flags, and validates it
// (validate_spec). Throws InvalidArgument naming the flag for text that is not a value
// ("--global 3,x"), and FieldError (core/field.h) for a value out of range; the command
// line spells the field as its flag ("--window").
PatternSpec to_spec(const PatternFlags& flags);

// FlexAttention's BlockMask read from the folder `dir` (contract §3.17): kv_num_blocks.npy
// int [B, H, Q_blocks] and kv_indices.npy int [B, H, Q_blocks, KV_blocks], and optionally
// full_kv_num_blocks.npy with full_kv_indices.npy of the same shapes (both or neither) ->
// block_indices [B, H, Q_blocks, K] (pattern/block_mask.h). Integer dtypes (int32 as
// FlexAttention stores them, int64, uint8). Throws InvalidArgument naming `flag` and the file
// ("--block-mask bm/kv_indices.npy shape") with the allowed shape: a missing required file,
// another dtype, rank or shape, a count or read index out of range.
Tensor<int64_t> read_block_mask(const std::string& dir, const std::string& flag);

// to_spec() then materialize(); errors as to_spec()'s (FieldError for sizes, e.g. a global
// position beyond seq_len).
Pattern build_pattern(const PatternFlags& flags, const PatternSizes& sizes);

}  // namespace sparseattn::api
