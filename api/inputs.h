// What several subcommands read the same way: q/k/v files plus pattern flags, a real
// number given as text, and the batch a --key-padding-mask file implies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/pattern_flags.h"
#include "core/tensor.h"
#include "pattern/pattern.h"

namespace sparseattn::api {

// q [B,H,Lq,D], k [B,H_kv,Lk,D], v [B,H_kv,Lk,Dv] with H a multiple of H_kv (contract §2.7;
// rank 2/3 files get leading 1s, contract §1),
// float16/32/64 widened to float64, and the pattern materialized for their sizes; the
// key padding mask's batch must be q's. Throws InvalidArgument naming the flag or the
// mismatching dimension.
struct AttentionInputs {
  Tensor<double> q, k, v;
  AttentionShape shape;
  Pattern pattern;
};
// `reorder`, when given, turns each tensor (already rank 4) from another layout into
// [batch, num_heads, seq_len, head_dim] before the shapes are checked (contract §1.6).
AttentionInputs load_attention_inputs(const std::string& q_path, const std::string& k_path,
                                      const std::string& v_path, const PatternFlags& flags,
                                      Tensor<double> (*reorder)(const Tensor<double>&) = nullptr);

// A named file argument, e.g. {"--out", "o.npy"}.
struct PathArg {
  std::string flag;
  std::string path;
};

// Before any work: every output (empty paths skipped) passes check_output_path, and no
// output names the same file as an input or another output (compared after resolving
// symlinks and "..") — `--out q.npy` would otherwise overwrite its own input.
// Throws InvalidArgument naming the output flag.
void check_outputs(const std::vector<PathArg>& outputs, const std::vector<PathArg>& inputs);

// contract §5/§2: inputs must be finite; a NaN in q would otherwise read as a fully masked
// row. Throws InvalidArgument("<what>[b,h,i,d]", value, "must be finite").
void require_finite(const Tensor<double>& x, const std::string& what);

// Parses `text` as a finite real number; throws InvalidArgument(flag, text, allowed).
// (CLI11 would accept "nan" and "inf"; contract §5 forbids a non-finite scale.)
double parse_finite(const std::string& flag, const std::string& text, double min_value);

// --seq-len N [--seq-len-k M] [--num-heads H], for commands that build a pattern without
// tensors (`mask`, `info`).
struct SizeFlags {
  int64_t seq_len = 0;
  int64_t seq_len_k = 0;
  int64_t num_heads = 1;
  CLI::Option* seq_len_k_flag = nullptr;  // unset: seq_len_k = seq_len
  // With add_size_flags(..., allow_range = true): --seq-len as text, "N", "A:B" or "A,B,C"
  // (api/seq_range.h); the command sets seq_len from it, one length at a time.
  std::string seq_len_text;
};
// `seq_len_required` = false (mask, whose packed batches give the sizes): --seq-len may be
// left out, and to_sizes() refuses its absence.
void add_size_flags(CLI::App* cmd, SizeFlags& flags, bool allow_range = false,
                    bool seq_len_required = true);
// Validates the flags (InvalidArgument naming each) and returns the sizes; batch comes from
// the --key-padding-mask file (key_padding_batch).
PatternSizes to_sizes(const SizeFlags& sizes, const PatternFlags& pattern);

// Batch of the --key-padding-mask file ([batch, seq_len_k], or [seq_len_k] = 1), read from
// its header; 1 when there is none. For commands whose sizes come from flags, not q.
int64_t key_padding_batch(const PatternFlags& flags);

}  // namespace sparseattn::api
