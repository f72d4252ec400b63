// PatternSpec: the user's description of "which key may query i attend" (contract §3), in
// the field's names. It is only a description; materialize() (pattern.h) turns it into
// the canonical layout that every kernel, the oracle and the graph module consume.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace sparseattn {

enum class PatternKind {
  dense,         // all keys (j <= p if causal)
  window,        // sliding window, one-sided `window`, `dilation`, `causal`
  longformer,    // window + global token positions (Beltagy et al. 2020, §3.1)
  random,        // longformer + `num_random` random keys per query
  bigbird,       // BigBird ITC block-sparse (Zaheer et al. 2020, §2 and App. D)
  bigbird_etc,   // BigBird ETC: `num_global_tokens` extra global tokens first
  hierarchical,  // two-level HIBERT-style pattern over `segment_ids`
  explicit_mask, // a boolean mask [n, n] or [num_heads, n, n]
  per_head,      // one PatternSpec per head
  chunked,       // local chunks of `chunk_size` keys (Llama 4; FlashAttention 3's attention_chunk)
  neighborhood,  // exactly `kernel_size` neighbours, clamped at the ends (NATTEN, 1-D)
  selected,      // the keys a table `kv_indices` lists per query (contract §3.16; DSA, NSA)
  selected_blocks,  // the key blocks `block_indices` lists per query block (contract §3.17)
};

// selected: how a key listed twice in one row counts (contract §3.16).
enum class Duplicates {
  once,   // set semantics (§2.2): once, however often listed (the default)
  count,  // as often as listed: weight m_ij in the softmax (attention-gym's reference)
};

// "dense", "window", ..., "bigbird-etc", "explicit", "per-head" (the CLI's spelling).
const char* pattern_kind_name(PatternKind kind);
// Inverse of pattern_kind_name; throws InvalidArgument("pattern") for unknown names.
PatternKind parse_pattern_kind(const std::string& name);
// "once", "count"; and the inverse, throwing FieldError(Field::duplicates) for other text.
const char* duplicates_name(Duplicates d);
Duplicates parse_duplicates(const std::string& name);

struct PatternSpec {
  PatternKind kind = PatternKind::dense;

  // dense, window, longformer, random (causal also: chunked, neighborhood)
  bool causal = false;
  int64_t window = 0;            // one-sided half-width in window steps; w = 2 -> 5 keys
  // window, longformer, random: an asymmetric window (FlashAttention's window_size=(L, R)),
  // in window steps, each one-sided: keys p + dilation*t with -L <= t <= R. Both set or both
  // unset; when set they replace `window` (which then stays 0). -1 = unbounded; >= -1.
  // Unset (std::nullopt) = the symmetric window L = R = `window`. contract §3.3.
  std::optional<int64_t> window_left;
  std::optional<int64_t> window_right;
  int64_t dilation = 1;          // tokens between neighbouring window keys (also neighborhood)
  std::vector<int64_t> global;   // global token positions (longformer, random)
  int64_t num_random = 0;        // random keys per query (random)

  // bigbird, bigbird_etc
  int64_t block_size = 64;       // tokens per block; the last block may be partial
  int64_t num_random_blocks = 0; // random key blocks per query block
  int64_t num_global_tokens = 0; // ETC only: global tokens placed first
  // Optional, replaces the PRNG draw when present (contract §3.10), in the layout of the
  // draws the pattern records: bigbird [num_heads or 1, nb - 2, num_random_blocks]
  // key-block indices for query blocks 1 .. nb-2 (HF's `rand_attn`); bigbird_etc
  // [num_heads or 1, nb, num_random_blocks]; random (token level) [num_heads or 1,
  // seq_len_q, num_random] key indices. -1 = a draw not made.
  std::optional<Tensor<int64_t>> random_table;

  // random and bigbird kinds: PRNG seed (prng.h), keyed with (head, row).
  uint64_t seed = 0;

  // hierarchical: one segment id per token, non-decreasing.
  std::vector<int64_t> segment_ids;

  // explicit_mask: [seq_len_q, seq_len_k] or [num_heads, seq_len_q, seq_len_k];
  // nonzero = may attend (one polarity everywhere).
  std::optional<Tensor<uint8_t>> mask;

  // chunked: tokens per chunk C, >= 1; key j is allowed iff floor(p/C) == floor(j/C)
  // (contract §3.14). Required by chunked, refused by every other kind.
  std::optional<int64_t> chunk_size;

  // neighborhood: keys per query K, odd, 1 <= K <= seq_len_k (with dilation d: K * d <=
  // seq_len_k) (contract §3.15). Required by neighborhood, refused by every other kind.
  std::optional<int64_t> kernel_size;

  // selected (contract §3.16): key indices [B_sel, H_sel, seq_len_q, K], B_sel in {1, batch},
  // H_sel in {1, H_kv, H_q} (H_kv: query head h reads row h / g); -1 = empty slot, else a
  // key in [0, seq_len_k); K >= 1. Required by selected, refused by every other kind.
  std::optional<Tensor<int64_t>> kv_indices;
  // selected only: once (default) or count.
  Duplicates duplicates = Duplicates::once;
  // selected_blocks (contract §3.17): key-block indices [B_sel, H_sel, ceil(seq_len_q /
  // block_size_q), K]; -1 = empty slot, else a block in [0, ceil(seq_len_k / block_size_k)).
  std::optional<Tensor<int64_t>> block_indices;
  // selected_blocks: tokens per query block b_q and per key block b_k, each >= 1; required.
  std::optional<int64_t> block_size_q;
  std::optional<int64_t> block_size_k;

  // per_head: one spec per head (none of them per_head itself).
  std::vector<PatternSpec> per_head;

  // Optional, any kind: [batch, seq_len_k], nonzero = real token. Padded keys leave
  // every A(i); padded query rows are fully masked (contract §2).
  std::optional<Tensor<uint8_t>> key_padding_mask;

  // Side of the square tiles of the canonical layout for token-level patterns. Block
  // patterns (bigbird, bigbird_etc) always use block_size. The allowed set never depends
  // on it (a test proves it); kernels' speed does.
  int64_t tile = 64;
};

// One line naming the kind and every parameter that matters for it, e.g.
// "bigbird(block_size=64, num_random_blocks=3, seed=0)". Printed in every result header.
std::string describe(const PatternSpec& spec);

}  // namespace sparseattn
