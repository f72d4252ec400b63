// materialize(): PatternSpec -> canonical HeadLayouts (contract §3, row by row).
//
// Every kind is written as "the keys of query i" (or, for BigBird, "the key blocks of
// query block qb"), fed to LayoutBuilder, which stores the set once per key (set
// semantics, contract §2). Decisions the contract leaves open are marked DECISION and listed in
// docs/patterns.md.
#include <algorithm>
#include <numeric>
#include <set>

#include "core/error.h"
#include "core/field.h"
#include "pattern/pattern.h"
#include "pattern/prng.h"
#include "pattern/selected_build.h"

namespace sparseattn {

namespace {

// ---------------------------------------------------------------------------------------
// Validation (contract §5): every parameter, before anything is built.

// Which kinds read which field. A field set away from its default for a kind that does not
// read it is an error: `--pattern bigbird --window 256` must not quietly run something other
// than what the user wrote.
const std::set<PatternKind> kBandKinds = {PatternKind::window, PatternKind::longformer,
                                          PatternKind::random};
const std::set<PatternKind> kBlockKinds = {PatternKind::bigbird, PatternKind::bigbird_etc};

std::string kind_list(const std::set<PatternKind>& kinds) {
  std::string s;
  for (PatternKind k : kinds) s += (s.empty() ? "" : ", ") + std::string(pattern_kind_name(k));
  return s;
}

void require_read(bool is_set, Field field, const std::string& value, PatternKind kind,
                  const std::set<PatternKind>& readers) {
  if (is_set && readers.count(kind) == 0)
    throw FieldError(field, "", value,
                     std::string("not used by pattern ") + pattern_kind_name(kind) +
                         "; it applies to pattern " + kind_list(readers));
}

// The checks that need no sizes, for one non-per-head spec.
void validate_one(const PatternSpec& s) {
  require_field(s.window >= 0, Field::window, "", s.window,
                "must be an integer >= 0 (one-sided, in steps)");
  require_field(s.dilation >= 1, Field::dilation, "", s.dilation, "must be an integer >= 1");
  require_field(s.tile >= 1, Field::tile, "", s.tile, "must be an integer >= 1");
  require_field(s.block_size >= 1, Field::block_size, "", s.block_size,
                "must be an integer >= 1 (tokens)");
  require_field(s.num_random >= 0, Field::num_random, "", s.num_random, "must be an integer >= 0");
  require_field(s.num_random_blocks >= 0, Field::num_random_blocks, "", s.num_random_blocks,
                "must be an integer >= 0");
  require_field(s.num_global_tokens >= 0, Field::num_global_tokens, "", s.num_global_tokens,
                "must be an integer >= 0");
  for (size_t g = 0; g < s.global.size(); ++g)
    require_field(s.global[g] >= 0, Field::global, "[" + std::to_string(g) + "]", s.global[g],
                  "must be a token position, an integer >= 0");
  // contract §3.3: the (left, right) window, each one-sided, -1 = unbounded; a pair.
  const char* kReach = "must be an integer >= -1 (one-sided, in window steps; -1 = unbounded)";
  if (s.window_left) require_field(*s.window_left >= -1, Field::window_left, "", *s.window_left, kReach);
  if (s.window_right)
    require_field(*s.window_right >= -1, Field::window_right, "", *s.window_right, kReach);
  require_field(s.window_right.has_value() || !s.window_left, Field::window_right, "", "none",
                "must be given too: the window's left and right reaches come as a pair");
  require_field(s.window_left.has_value() || !s.window_right, Field::window_left, "", "none",
                "must be given too: the window's left and right reaches come as a pair");
  require_field(s.window == 0 || !s.window_left, Field::window, "", s.window,
                "must not be given with window_left and window_right: the pair replaces the "
                "symmetric window (give window_left = window_right = W instead)");
  // contract §3.14 and §3.15.
  if (s.chunk_size)
    require_field(*s.chunk_size >= 1, Field::chunk_size, "", *s.chunk_size,
                  "must be an integer >= 1 (tokens per chunk)");
  if (s.kernel_size)
    require_field(*s.kernel_size >= 1 && *s.kernel_size % 2 == 1, Field::kernel_size, "",
                  *s.kernel_size, "must be an odd integer >= 1 (keys per query)");

  detail::validate_selected_spec(s);  // contract §3.16–§3.17

  const PatternSpec d;
  const PatternKind k = s.kind;
  std::set<PatternKind> causal_kinds = kBandKinds;
  causal_kinds.insert({PatternKind::dense, PatternKind::chunked, PatternKind::neighborhood,
                       PatternKind::selected, PatternKind::selected_blocks});
  std::set<PatternKind> dilation_kinds = kBandKinds;
  dilation_kinds.insert(PatternKind::neighborhood);
  require_read(s.causal != d.causal, Field::causal, "true", k, causal_kinds);
  require_read(s.window != d.window, Field::window, std::to_string(s.window), k, kBandKinds);
  require_read(s.window_left.has_value(), Field::window_left,
               s.window_left ? std::to_string(*s.window_left) : "", k, kBandKinds);
  require_read(s.window_right.has_value(), Field::window_right,
               s.window_right ? std::to_string(*s.window_right) : "", k, kBandKinds);
  require_read(s.dilation != d.dilation, Field::dilation, std::to_string(s.dilation), k,
               dilation_kinds);
  require_read(s.chunk_size.has_value(), Field::chunk_size,
               s.chunk_size ? std::to_string(*s.chunk_size) : "", k, {PatternKind::chunked});
  require_read(s.kernel_size.has_value(), Field::kernel_size,
               s.kernel_size ? std::to_string(*s.kernel_size) : "", k, {PatternKind::neighborhood});
  require_read(!s.global.empty(), Field::global, "[...]", k,
               {PatternKind::longformer, PatternKind::random});
  require_read(s.num_random != d.num_random, Field::num_random, std::to_string(s.num_random), k,
               {PatternKind::random});
  require_read(s.block_size != d.block_size, Field::block_size, std::to_string(s.block_size), k,
               kBlockKinds);
  require_read(s.num_random_blocks != d.num_random_blocks, Field::num_random_blocks,
               std::to_string(s.num_random_blocks), k, kBlockKinds);
  require_read(s.num_global_tokens != d.num_global_tokens, Field::num_global_tokens,
               std::to_string(s.num_global_tokens), k, {PatternKind::bigbird_etc});
  require_read(s.random_table.has_value(), Field::random_table, "[...]", k,
               {PatternKind::random, PatternKind::bigbird, PatternKind::bigbird_etc});
  require_read(!s.segment_ids.empty(), Field::segment_ids, "[...]", k,
               {PatternKind::hierarchical});
  require_read(s.mask.has_value(), Field::mask, "[...]", k, {PatternKind::explicit_mask});
  require_read(s.seed != d.seed, Field::seed, std::to_string(s.seed), k,
               {PatternKind::random, PatternKind::bigbird, PatternKind::bigbird_etc});
  require_read(!s.per_head.empty(), Field::heads, "[...]", k, {PatternKind::per_head});
  require_field(!(k == PatternKind::hierarchical && s.segment_ids.empty()), Field::segment_ids, "",
                "none", "the hierarchical pattern needs one segment id per token");
  require_field(!(k == PatternKind::explicit_mask && !s.mask), Field::mask, "", "none",
                "the explicit pattern needs its mask");
  require_field(!(k == PatternKind::chunked && !s.chunk_size), Field::chunk_size, "", "none",
                "the chunked pattern needs chunk_size, an integer >= 1 (tokens per chunk)");
  require_field(!(k == PatternKind::neighborhood && !s.kernel_size), Field::kernel_size, "", "none",
                "the neighborhood pattern needs kernel_size, an odd integer >= 1 (keys per query)");
}

// The checks that need the sizes, for one non-per-head spec.
void validate_common(const PatternSpec& s, const PatternSizes& z) {
  for (size_t g = 0; g < s.global.size(); ++g)
    require_field(s.global[g] < z.seq_len_k, Field::global, "[" + std::to_string(g) + "]",
                  s.global[g],
                  "positions must be in [0, seq_len_k) = [0, " + std::to_string(z.seq_len_k) + ")");
  if (s.kind == PatternKind::neighborhood && s.kernel_size) {
    // contract §3.15: every query attends exactly K keys of its residue class, so every
    // class must hold K keys (NATTEN's kernel_size * dilation <= length); no clamping.
    require(z.seq_len_q <= z.seq_len_k, "seq_len_q", z.seq_len_q,
            "must be <= seq_len_k (" + std::to_string(z.seq_len_k) +
                ") for pattern neighborhood: every query sits at a key position");
    const int64_t kk = *s.kernel_size;
    require_field(kk <= z.seq_len_k, Field::kernel_size, "", kk,
                  "must be an odd integer in [1, seq_len_k] = [1, " + std::to_string(z.seq_len_k) +
                      "] (keys per query)");
    const int64_t max_d = z.seq_len_k / kk;  // kernel_size * dilation <= seq_len_k
    require_field(s.dilation <= max_d, Field::dilation, "", s.dilation,
                  "must be in [1, floor(seq_len_k / kernel_size)] = [1, " + std::to_string(max_d) +
                      "] for kernel_size " + std::to_string(kk) +
                      ": each of the dilation residue classes of the keys must hold kernel_size "
                      "keys (kernel_size * dilation <= seq_len_k)");
  }
}

void require_self_attention(const PatternSpec& s, const PatternSizes& z) {
  require(z.seq_len_k == z.seq_len_q, "seq_len_k", z.seq_len_k,
          std::string("must equal seq_len_q (") + std::to_string(z.seq_len_q) + ") for pattern " +
              pattern_kind_name(s.kind));
}

// ---------------------------------------------------------------------------------------
// Sequential sampling without replacement, shared by token-level random keys and BigBird
// random blocks. Candidates are the integers of [0, universe) not in `excluded` (sorted,
// unique, all inside the universe). Draw t picks the u_t-th remaining candidate,
// u_t = uniform_below(remaining - t); picks join `excluded`. Returns the picks in draw
// order, -1 for draws that could not be made (fewer candidates than `count`).
std::vector<int64_t> draw_without_replacement(uint64_t key, int64_t universe, int64_t count,
                                              std::vector<int64_t>& excluded) {
  std::vector<int64_t> picks;
  uint64_t counter = 0;
  int64_t remaining = universe - static_cast<int64_t>(excluded.size());
  for (int64_t t = 0; t < count; ++t) {
    if (remaining <= 0) {
      picks.push_back(-1);
      continue;
    }
    int64_t pick = static_cast<int64_t>(
        prng_uniform_below(key, &counter, static_cast<uint64_t>(remaining)));
    // The u-th integer not in `excluded`: step over every excluded value at or below it.
    auto it = excluded.begin();
    for (; it != excluded.end() && *it <= pick; ++it) ++pick;
    excluded.insert(it, pick);
    picks.push_back(pick);
    --remaining;
  }
  return picks;
}

// ---------------------------------------------------------------------------------------
// Token-level kinds: dense, window, longformer, random.

struct TokenRows {
  const PatternSpec& spec;
  const PatternSizes& sizes;
  BandParams band;
  std::vector<int64_t> global;  // sorted, unique
  std::vector<uint8_t> is_global_position;
};

// Keys of the window/global part of query i, sorted and unique, restricted to [0, limit)
// (only computed when `list_keys`; a contiguous band is cheaper to add as a range).
// `full_row` is set instead when i is a global query (it attends every key below limit).
void window_global_keys(const TokenRows& t, int64_t i, int64_t limit, bool list_keys,
                        std::vector<int64_t>& keys, bool& full_row) {
  keys.clear();
  const BandSteps steps = band_steps(t.band, i);
  full_row = steps.position >= 0 && steps.position < t.sizes.seq_len_k &&
             t.is_global_position[steps.position];
  if (full_row || !list_keys) return;
  for (int64_t s = steps.t_lo; s <= steps.t_hi; ++s)
    keys.push_back(steps.position + t.band.dilation * s);
  // DECISION: `causal` is a hard constraint: global keys after the query's position are
  // not attended either (Longformer's causal variants do the same).
  for (int64_t g : t.global)
    if (g < limit) keys.push_back(g);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
}

// Random keys per query of a random pattern: the table's last dimension when one is
// given (contract §3.10), num_random otherwise.
int64_t token_random_count(const PatternSpec& s) {
  return s.random_table ? s.random_table->dim(2) : s.num_random;
}

// contract §3.10, token level: a table [H or 1, L_q, r] of key indices in [0, L_k), -1 for
// a draw not made (the layout `mask --random-table-out` writes); with causal every entry of
// query i must be at or before its position p = i + L_k - L_q (no query sees a future key).
void validate_token_random_table(const PatternSpec& s, const PatternSizes& z) {
  if (!s.random_table) return;
  const Tensor<int64_t>& t = *s.random_table;
  const std::string want = "[num_heads (" + std::to_string(z.num_heads) + ") or 1, seq_len_q (" +
                           std::to_string(z.seq_len_q) + "), num_random]";
  require_field(t.rank() == 3 && (t.dim(0) == z.num_heads || t.dim(0) == 1) &&
                    t.dim(1) == z.seq_len_q,
                Field::random_table, " shape", shape_text(t.shape), "must be " + want);
  require_field(s.num_random == 0 || s.num_random == t.dim(2), Field::num_random, "", s.num_random,
                "must be 0 or equal the random table's last dimension (" +
                    std::to_string(t.dim(2)) + ")");
  const int64_t r = t.dim(2);
  for (int64_t h = 0; h < t.dim(0); ++h)
    for (int64_t i = 0; i < z.seq_len_q; ++i) {
      const int64_t limit =
          s.causal ? std::min(i + z.seq_len_k - z.seq_len_q + 1, z.seq_len_k) : z.seq_len_k;
      for (int64_t x = 0; x < r; ++x) {
        const int64_t j = t.data[static_cast<size_t>((h * z.seq_len_q + i) * r + x)];
        require_field(j >= -1 && j < std::max<int64_t>(limit, 0), Field::random_table, " entry", j,
                limit <= 0 ? "query " + std::to_string(i) +
                                 " sits before the first key (causal): its entries must be -1"
                           : "key indices of query " + std::to_string(i) + " must be in [0, " +
                                 std::to_string(limit) + ")" +
                                 (s.causal ? " (causal: at or before its position)" : "") +
                                 ", or -1 for no draw");
      }
    }
}

HeadLayout build_token_head(const TokenRows& t, int64_t head, Tensor<int64_t>* draws,
                            int64_t* shortfall) {
  const PatternSpec& s = t.spec;
  const PatternSizes& z = t.sizes;
  LayoutBuilder b(z.seq_len_q, z.seq_len_k, s.tile);
  std::vector<int64_t> keys;
  const int64_t offset = z.seq_len_k - z.seq_len_q;
  const int64_t r = token_random_count(s);
  for (int64_t i = 0; i < z.seq_len_q; ++i) {
    if (i % s.tile == 0) b.begin_query_tile(i / s.tile);
    const int64_t position = i + offset;
    // Keys this query may ever see: all, or those at or before its position if causal.
    const int64_t limit = s.causal ? std::min(position + 1, z.seq_len_k) : z.seq_len_k;
    if (limit <= 0) {  // causal query before the first key: fully masked
      // Nothing to draw from: its draws stay -1 and count as shortfall, like every -1
      // (a table's row here holds only -1: validate_token_random_table).
      if (s.kind == PatternKind::random) *shortfall += r;
      continue;
    }
    if (s.kind == PatternKind::dense) {
      b.add_key_range(i, 0, limit);
      continue;
    }
    bool full_row = false;
    const bool list_keys = s.kind == PatternKind::random || s.dilation != 1;
    window_global_keys(t, i, limit, list_keys, keys, full_row);
    if (full_row) {
      b.add_key_range(i, 0, limit);
      if (s.kind == PatternKind::random) {  // nothing is left to draw from
        keys.resize(static_cast<size_t>(limit));
        std::iota(keys.begin(), keys.end(), int64_t{0});
      }
    } else if (s.dilation == 1) {
      // The band is one contiguous run: add it as a range (word-wide bit writes).
      const BandSteps steps = band_steps(t.band, i);
      if (steps.count() > 0)
        b.add_key_range(i, steps.position + steps.t_lo, steps.position + steps.t_hi + 1);
      for (int64_t g : t.global)
        if (g < limit) b.add_key(i, g);
    } else {
      for (int64_t j : keys) b.add_key(i, j);
    }
    if (s.kind == PatternKind::random && s.random_table) {
      // The table's keys, used as given (contract §3.10): a key the window or global part
      // already allows, or one listed twice, is allowed once (§2.2); -1 is a draw not made.
      const Tensor<int64_t>& tab = *s.random_table;
      const int64_t* row = tab.ptr() + ((tab.dim(0) == 1 ? 0 : head) * z.seq_len_q + i) * r;
      for (int64_t x = 0; x < r; ++x) {
        draws->data[(head * z.seq_len_q + i) * r + x] = row[x];
        if (row[x] < 0) {
          ++*shortfall;
        } else if (!full_row) {
          b.add_key(i, row[x]);
        }
      }
    } else if (s.kind == PatternKind::random && s.num_random > 0) {
      // DECISION: random keys come from the keys this query may see (causal respected),
      // excluding those the window/global part already allows.
      const uint64_t key = prng_stream_key(s.seed, static_cast<uint64_t>(head),
                                           static_cast<uint64_t>(i));
      const std::vector<int64_t> picks = draw_without_replacement(key, limit, s.num_random, keys);
      for (int64_t r = 0; r < s.num_random; ++r) {
        draws->data[(head * z.seq_len_q + i) * s.num_random + r] = picks[r];
        if (picks[r] < 0) {
          ++*shortfall;
        } else {
          b.add_key(i, picks[r]);
        }
      }
    }
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------------
// Hierarchical (two-level, HIBERT-style, Zhang et al. 2019): same segment, plus every
// segment's last token (its representative) is attended by every token.

HeadLayout build_hierarchical_head(const PatternSpec& s, const PatternSizes& z) {
  const int64_t n = z.seq_len_q;
  const std::vector<int64_t>& seg = s.segment_ids;
  std::vector<int64_t> starts;  // start of each segment; representative = next start - 1
  for (int64_t i = 0; i < n; ++i)
    if (i == 0 || seg[i] != seg[i - 1]) starts.push_back(i);
  starts.push_back(n);
  LayoutBuilder b(n, n, s.tile);
  int64_t segment = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i % s.tile == 0) b.begin_query_tile(i / s.tile);
    while (starts[segment + 1] <= i) ++segment;
    b.add_key_range(i, starts[segment], starts[segment + 1]);
    for (size_t r = 1; r < starts.size(); ++r) b.add_key(i, starts[r] - 1);
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------------
// chunked (contract §3.14; Llama 4's chunked local attention, FlashAttention 3's
// attention_chunk): the keys of the query's own chunk [c*C, (c+1)*C), c = floor(p / C), up
// to p with causal. A query before the first key (p < 0) shares no chunk with any key.

HeadLayout build_chunked_head(const PatternSpec& s, const PatternSizes& z) {
  const int64_t c = *s.chunk_size, offset = z.seq_len_k - z.seq_len_q;
  LayoutBuilder b(z.seq_len_q, z.seq_len_k, s.tile);
  for (int64_t i = 0; i < z.seq_len_q; ++i) {
    if (i % s.tile == 0) b.begin_query_tile(i / s.tile);
    const int64_t p = i + offset;
    if (p < 0) continue;  // DECISION: floor(p / C) < 0 names no chunk of keys
    const int64_t begin = (p / c) * c;
    const int64_t end = s.causal ? p + 1 : std::min(begin + c, z.seq_len_k);
    b.add_key_range(i, begin, end);
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------------
// neighborhood (contract §3.15; NATTEN, Hassani et al. 2023, 1-D): exactly K keys per
// query, the window clamped inside the sequence instead of clipped. With dilation d the
// keys of p's residue class r = p mod d form a sub-sequence r, r + d, ...; p is entry
// p / d of it, and the clamp rule runs in that sub-sequence's index space (NATTEN's
// reference mask does the same).

HeadLayout build_neighborhood_head(const PatternSpec& s, const PatternSizes& z) {
  const int64_t kk = *s.kernel_size, d = s.dilation, offset = z.seq_len_k - z.seq_len_q;
  LayoutBuilder b(z.seq_len_q, z.seq_len_k, s.tile);
  for (int64_t i = 0; i < z.seq_len_q; ++i) {
    if (i % s.tile == 0) b.begin_query_tile(i / s.tile);
    const int64_t p = i + offset;  // >= 0: seq_len_q <= seq_len_k (validate_common)
    const int64_t r = p % d, idx = p / d;
    const int64_t class_len = (z.seq_len_k - 1 - r) / d + 1;  // >= kk (validate_common)
    // Indices [first, last] in the class: K centred and clamped, or with causal the K
    // ending at p (fewer near the start).
    const int64_t first = s.causal ? std::max<int64_t>(idx - (kk - 1), 0)
                                   : std::clamp<int64_t>(idx - kk / 2, 0, class_len - kk);
    const int64_t last = s.causal ? idx : first + kk - 1;
    if (d == 1) {
      b.add_key_range(i, first, last + 1);
    } else {
      for (int64_t t = first; t <= last; ++t) b.add_key(i, r + d * t);
    }
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------------
// Explicit mask: [n_q, n_k] or [H, n_q, n_k]; head h reads slice h (or the only slice).

HeadLayout build_explicit_head(const PatternSpec& s, const PatternSizes& z, int64_t head) {
  const Tensor<uint8_t>& m = *s.mask;
  const int64_t slice = m.rank() == 3 && m.dim(0) > 1 ? head : 0;
  const uint8_t* base = m.ptr() + slice * z.seq_len_q * z.seq_len_k;
  LayoutBuilder b(z.seq_len_q, z.seq_len_k, s.tile);
  for (int64_t i = 0; i < z.seq_len_q; ++i) {
    if (i % s.tile == 0) b.begin_query_tile(i / s.tile);
    const uint8_t* row = base + i * z.seq_len_k;
    for (int64_t j = 0; j < z.seq_len_k;) {  // add runs of ones as ranges
      if (!row[j]) {
        ++j;
        continue;
      }
      int64_t end = j;
      while (end < z.seq_len_k && row[end]) ++end;
      b.add_key_range(i, j, end);
      j = end;
    }
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------------
// BigBird (Zaheer et al. 2020, §2 and App. D). ITC: blocks 0 and nb-1 are global; every
// query block attends its neighbours, blocks 0 and nb-1, and r random blocks.
// ETC: g global tokens first; the remaining n - g tokens form blocks starting at g.

struct BlockRandom {
  int64_t rows;   // query blocks that draw: nb - 2 (ITC) or nb (ETC)
  int64_t first;  // query block of row 0: 1 (ITC) or 0 (ETC)
  int64_t r;      // random blocks per query block
};

// The r random key blocks of query block qb: drawn, or read from the explicit table.
std::vector<int64_t> random_blocks(const PatternSpec& s, const BlockRandom& br, int64_t head,
                                   int64_t qb, int64_t nb, std::vector<int64_t> excluded) {
  if (s.random_table) {
    const Tensor<int64_t>& t = *s.random_table;
    const int64_t h = t.dim(0) == 1 ? 0 : head;
    const int64_t* row = t.ptr() + (h * br.rows + (qb - br.first)) * br.r;
    return std::vector<int64_t>(row, row + br.r);
  }
  std::sort(excluded.begin(), excluded.end());
  excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
  const uint64_t key =
      prng_stream_key(s.seed, static_cast<uint64_t>(head), static_cast<uint64_t>(qb));
  return draw_without_replacement(key, nb, br.r, excluded);
}

void validate_random_table(const PatternSpec& s, const PatternSizes& z, const BlockRandom& br,
                           int64_t nb) {
  if (!s.random_table) return;
  const Tensor<int64_t>& t = *s.random_table;
  const std::string want = "[num_heads (" + std::to_string(z.num_heads) + ") or 1, " +
                           std::to_string(br.rows) + ", num_random_blocks]";
  require_field(t.rank() == 3, Field::random_table, " shape", shape_text(t.shape), "must be " + want);
  require_field((t.dim(0) == z.num_heads || t.dim(0) == 1) && t.dim(1) == br.rows,
                Field::random_table, " shape", shape_text(t.shape), "must be " + want);
  require_field(s.num_random_blocks == 0 || s.num_random_blocks == t.dim(2),
                Field::num_random_blocks, "", s.num_random_blocks,
          "must be 0 or equal the random table's last dimension (" + std::to_string(t.dim(2)) + ")");
  // -1 is "no draw", as the exported table writes where fewer than r blocks remained
  // (contract §3.10): read back, it draws nothing and counts as shortfall again.
  for (int64_t x : t.data)
    require_field(x >= -1 && x < nb, Field::random_table, " entry", x,
            "key-block indices must be in [0, nb) = [0, " + std::to_string(nb) +
                "), or -1 for no draw");
}

HeadLayout build_bigbird_itc_head(const PatternSpec& s, const PatternSizes& z, int64_t head,
                                  const BlockRandom& br, Tensor<int64_t>& draws,
                                  int64_t& shortfall) {
  const int64_t n = z.seq_len_q, bs = s.block_size, nb = (n + bs - 1) / bs;
  LayoutBuilder b(n, n, bs);
  for (int64_t qb = 0; qb < nb; ++qb) {
    b.begin_query_tile(qb);
    if (qb == 0 || qb == nb - 1) {  // global query blocks attend every key block
      for (int64_t kb = 0; kb < nb; ++kb) b.add_full_tile(kb);
      continue;
    }
    std::vector<int64_t> listed = {0, nb - 1, qb - 1, qb, qb + 1};
    for (int64_t kb : listed) b.add_full_tile(kb);
    const std::vector<int64_t> rnd = random_blocks(s, br, head, qb, nb, listed);
    for (int64_t t = 0; t < br.r; ++t) {
      draws.data[(head * br.rows + (qb - br.first)) * br.r + t] = rnd[t];
      if (rnd[t] < 0) {
        ++shortfall;
      } else {
        b.add_full_tile(rnd[t]);
      }
    }
  }
  return b.finish();
}

HeadLayout build_bigbird_etc_head(const PatternSpec& s, const PatternSizes& z, int64_t head,
                                  const BlockRandom& br, Tensor<int64_t>& draws,
                                  int64_t& shortfall) {
  const int64_t n = z.seq_len_q, g = s.num_global_tokens, bs = s.block_size;
  const int64_t nb = br.rows;  // blocks of the n - g non-global tokens
  // Token range of non-global block kb: [g + kb*bs, min(g + (kb+1)*bs, n)).
  auto block_begin = [&](int64_t kb) { return g + kb * bs; };
  auto block_end = [&](int64_t kb) { return std::min(g + (kb + 1) * bs, n); };
  std::vector<std::vector<int64_t>> key_blocks(static_cast<size_t>(nb));
  for (int64_t qb = 0; qb < nb; ++qb) {
    std::vector<int64_t> listed;
    for (int64_t kb = qb - 1; kb <= qb + 1; ++kb)
      if (kb >= 0 && kb < nb) listed.push_back(kb);
    const std::vector<int64_t> rnd = random_blocks(s, br, head, qb, nb, listed);
    for (int64_t t = 0; t < br.r; ++t) {
      draws.data[(head * br.rows + qb) * br.r + t] = rnd[t];
      if (rnd[t] < 0) {
        ++shortfall;
      } else {
        listed.push_back(rnd[t]);
      }
    }
    key_blocks[qb] = std::move(listed);
  }
  // DECISION: canonical tiles have side block_size, aligned at token 0, so when g is not
  // a multiple of block_size BigBird's blocks straddle tiles and some tiles are partial.
  LayoutBuilder b(n, n, bs);
  for (int64_t i = 0; i < n; ++i) {
    if (i % bs == 0) b.begin_query_tile(i / bs);
    if (i < g) {  // global tokens attend all
      b.add_key_range(i, 0, n);
      continue;
    }
    b.add_key_range(i, 0, g);  // every token attends the global tokens
    for (int64_t kb : key_blocks[(i - g) / bs]) b.add_key_range(i, block_begin(kb), block_end(kb));
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------------

bool head_dependent(const PatternSpec& s) {
  switch (s.kind) {
    case PatternKind::random: return s.random_table ? s.random_table->dim(0) > 1 : s.num_random > 0;
    case PatternKind::bigbird:
    case PatternKind::bigbird_etc:
      return s.random_table ? s.random_table->dim(0) > 1 : s.num_random_blocks > 0;
    case PatternKind::explicit_mask: return s.mask && s.mask->rank() == 3 && s.mask->dim(0) > 1;
    case PatternKind::per_head: return true;
    default: return false;
  }
}

// Validates `s` (not per_head) for `z` (contract §5).
void validate_kind(const PatternSpec& s, const PatternSizes& z) {
  validate_common(s, z);
  switch (s.kind) {
    case PatternKind::dense:
      // A dense layout lists every tile: refuse sizes whose tile table (col + bits_at,
      // 12 bytes a tile) cannot fit, rather than run out of memory half-way.
      checked_numel({(z.seq_len_q + s.tile - 1) / s.tile, (z.seq_len_k + s.tile - 1) / s.tile}, 12,
                    "seq_len (dense pattern: tiles of the layout)");
      break;
    case PatternKind::window:
    case PatternKind::longformer:
      break;
    case PatternKind::random:
      validate_token_random_table(s, z);
      break;
    case PatternKind::chunked:
    case PatternKind::neighborhood: {
      // At most this many key tiles per query tile: a query tile's keys span its own rows'
      // reach (a chunk, or (K - 1)·d + 1 keys) plus tile - 1; refuse what cannot fit.
      const int64_t reach = s.kind == PatternKind::chunked
                                ? std::min(*s.chunk_size, z.seq_len_k)
                                : (*s.kernel_size - 1) * s.dilation + 1;
      const int64_t k_tiles = (z.seq_len_k + s.tile - 1) / s.tile;
      checked_numel({(z.seq_len_q + s.tile - 1) / s.tile,
                     std::min(k_tiles, (reach + s.tile - 1) / s.tile + 2)},
                    12, std::string("seq_len (") + pattern_kind_name(s.kind) +
                            " pattern: tiles of the layout)");
      break;
    }
    case PatternKind::bigbird: {
      require_self_attention(s, z);
      const int64_t nb = (z.seq_len_q + s.block_size - 1) / s.block_size;
      validate_random_table(s, z, BlockRandom{std::max<int64_t>(nb - 2, 0), 1, 0}, nb);
      break;
    }
    case PatternKind::bigbird_etc: {
      require_self_attention(s, z);
      require_field(s.num_global_tokens <= z.seq_len_q, Field::num_global_tokens, "",
                    s.num_global_tokens,
              "must be <= seq_len (" + std::to_string(z.seq_len_q) + ")");
      const int64_t nb = (z.seq_len_q - s.num_global_tokens + s.block_size - 1) / s.block_size;
      validate_random_table(s, z, BlockRandom{nb, 0, 0}, nb);
      break;
    }
    case PatternKind::hierarchical: {
      require_self_attention(s, z);
      require_field(static_cast<int64_t>(s.segment_ids.size()) == z.seq_len_q, Field::segment_ids,
                    " length", s.segment_ids.size(), "must equal seq_len (" + std::to_string(z.seq_len_q) + ")");
      for (size_t i = 1; i < s.segment_ids.size(); ++i)
        require_field(s.segment_ids[i] >= s.segment_ids[i - 1], Field::segment_ids,
                      "[" + std::to_string(i) + "]", s.segment_ids[i],
                "must be >= segment_ids[" + std::to_string(i - 1) + "] = " +
                    std::to_string(s.segment_ids[i - 1]) + " (non-decreasing)");
      break;
    }
    case PatternKind::explicit_mask: {
      require_field(s.mask.has_value(), Field::mask, "", "none", "pattern explicit needs a mask");
      const Tensor<uint8_t>& m = *s.mask;
      const std::string want = "[" + std::to_string(z.seq_len_q) + ", " +
                               std::to_string(z.seq_len_k) + "] or [num_heads (" +
                               std::to_string(z.num_heads) + ") or 1, " +
                               std::to_string(z.seq_len_q) + ", " + std::to_string(z.seq_len_k) + "]";
      const bool rank2 = m.rank() == 2 && m.dim(0) == z.seq_len_q && m.dim(1) == z.seq_len_k;
      const bool rank3 = m.rank() == 3 && (m.dim(0) == 1 || m.dim(0) == z.num_heads) &&
                         m.dim(1) == z.seq_len_q && m.dim(2) == z.seq_len_k;
      require_field(rank2 || rank3, Field::mask, " shape", shape_text(m.shape), "must be " + want);
      break;
    }
    case PatternKind::selected:
    case PatternKind::selected_blocks:
      detail::validate_selected_sizes(s, z);
      break;
    case PatternKind::per_head:
      throw FieldError(Field::heads, "", "per-head", "a per-head pattern's heads cannot be per-head");
  }
}

// Builds head `head` of a non-per-head spec.
HeadLayout build_head(const PatternSpec& s, const PatternSizes& z, int64_t head, Pattern& p) {
  switch (s.kind) {
    case PatternKind::dense:
    case PatternKind::window:
    case PatternKind::longformer:
    case PatternKind::random: {
      TokenRows t{s, z, band_of(s, z.seq_len_q, z.seq_len_k), {}, {}};
      if (s.kind == PatternKind::longformer || s.kind == PatternKind::random) {
        t.global = s.global;
        std::sort(t.global.begin(), t.global.end());
        t.global.erase(std::unique(t.global.begin(), t.global.end()), t.global.end());
      }
      t.is_global_position.assign(static_cast<size_t>(z.seq_len_k), 0);
      for (int64_t g : t.global) t.is_global_position[g] = 1;
      return build_token_head(t, head, &p.random_draws, &p.random_shortfall);
    }
    case PatternKind::bigbird: {
      const int64_t nb = (z.seq_len_q + s.block_size - 1) / s.block_size;
      BlockRandom br{std::max<int64_t>(nb - 2, 0), 1,
                     s.random_table ? s.random_table->dim(2) : s.num_random_blocks};
      return build_bigbird_itc_head(s, z, head, br, p.random_draws, p.random_shortfall);
    }
    case PatternKind::bigbird_etc: {
      const int64_t nb = (z.seq_len_q - s.num_global_tokens + s.block_size - 1) / s.block_size;
      BlockRandom br{nb, 0, s.random_table ? s.random_table->dim(2) : s.num_random_blocks};
      return build_bigbird_etc_head(s, z, head, br, p.random_draws, p.random_shortfall);
    }
    case PatternKind::hierarchical: return build_hierarchical_head(s, z);
    case PatternKind::explicit_mask: return build_explicit_head(s, z, head);
    case PatternKind::chunked: return build_chunked_head(s, z);
    case PatternKind::neighborhood: return build_neighborhood_head(s, z);
    case PatternKind::selected:
    case PatternKind::selected_blocks:  // built whole by detail::build_selected
    case PatternKind::per_head: break;
  }
  throw InvalidArgument("pattern", pattern_kind_name(s.kind), "cannot be built per head here");
}

// Shape of random_draws for a (non-per-head) spec, or {} when it draws nothing.
Shape draws_shape(const PatternSpec& s, const PatternSizes& z) {
  if (s.kind == PatternKind::random) return {z.num_heads, z.seq_len_q, token_random_count(s)};
  if (s.kind == PatternKind::bigbird || s.kind == PatternKind::bigbird_etc) {
    const int64_t g = s.kind == PatternKind::bigbird_etc ? s.num_global_tokens : 0;
    const int64_t nb = (z.seq_len_q - g + s.block_size - 1) / s.block_size;
    const int64_t rows = s.kind == PatternKind::bigbird ? std::max<int64_t>(nb - 2, 0) : nb;
    const int64_t r = s.random_table ? s.random_table->dim(2) : s.num_random_blocks;
    return {z.num_heads, rows, r};
  }
  return {};
}

// Appends "<prefix><field> <given> -> <canonical>" for every field canonicalize() changed.
void note_clamped(const PatternSpec& given, const PatternSpec& canonical, const std::string& prefix,
                  std::vector<std::string>& out) {
  auto note = [&](const char* field, int64_t a, int64_t b) {
    if (a != b) out.push_back(prefix + field + " " + std::to_string(a) + " -> " + std::to_string(b));
  };
  note("window", given.window, canonical.window);
  auto note_opt = [&](const char* field, const std::optional<int64_t>& a,
                      const std::optional<int64_t>& b) {
    if (a && b) note(field, *a, *b);
  };
  note_opt("window_left", given.window_left, canonical.window_left);
  note_opt("window_right", given.window_right, canonical.window_right);
  note_opt("chunk_size", given.chunk_size, canonical.chunk_size);
  note("dilation", given.dilation, canonical.dilation);
  note("num_random", given.num_random, canonical.num_random);
  note("block_size", given.block_size, canonical.block_size);
  note("num_random_blocks", given.num_random_blocks, canonical.num_random_blocks);
  note("tile", given.tile, canonical.tile);
}

}  // namespace

void validate_spec(const PatternSpec& spec) {
  if (spec.kind != PatternKind::per_head) {
    validate_one(spec);
    return;
  }
  require_field(!spec.per_head.empty(), Field::heads, "", "[]",
                "must list at least one pattern (one per head)");
  for (size_t h = 0; h < spec.per_head.size(); ++h) {
    const PatternSpec& head = spec.per_head[h];
    const std::string at = "[" + std::to_string(h) + "]";
    require_field(head.kind != PatternKind::per_head, Field::heads, at, describe(head),
                  "must not itself be per-head");
    require_field(!head.key_padding_mask, Field::heads, at, describe(head),
                  "must not carry a key_padding_mask (it applies to the whole pattern)");
    try {
      validate_one(head);
    } catch (const FieldError& e) {
      throw e.at_head(static_cast<int64_t>(h));
    }
  }
}

Pattern materialize(const PatternSpec& spec, const PatternSizes& sizes) {
  require(sizes.batch >= 1, "batch", sizes.batch, "must be >= 1");
  require(sizes.num_heads >= 1, "num_heads", sizes.num_heads, "must be >= 1");
  require(sizes.seq_len_q >= 1, "seq_len", sizes.seq_len_q, "must be >= 1");
  require(sizes.seq_len_k >= 1, "seq_len_k", sizes.seq_len_k, "must be >= 1");

  Pattern p;
  p.spec = spec;
  p.sizes = sizes;
  if (spec.key_padding_mask) {
    Tensor<uint8_t>& kpm = *p.spec.key_padding_mask;
    if (kpm.rank() == 1) kpm.shape.insert(kpm.shape.begin(), 1);  // [seq_len] = one batch
    require_field(kpm.rank() == 2 && kpm.dim(0) == sizes.batch && kpm.dim(1) == sizes.seq_len_k,
                  Field::key_padding_mask, " shape", shape_text(spec.key_padding_mask->shape),
            "must be [batch (" + std::to_string(sizes.batch) + "), seq_len_k (" +
                std::to_string(sizes.seq_len_k) + ")]");
  }

  // contract §3 "Parameters beyond the sequence": refuse what is out of range by the
  // given name and value, then clamp to the equivalent canonical value before anything
  // (layout, draw table, kernel) sees a parameter.
  validate_spec(spec);
  if (spec.kind != PatternKind::per_head) validate_common(spec, sizes);
  for (size_t h = 0; h < spec.per_head.size(); ++h) {
    try {
      validate_common(spec.per_head[h], sizes);
    } catch (const FieldError& e) {
      throw e.at_head(static_cast<int64_t>(h));
    }
  }
  canonicalize_in_place(p.spec, sizes);
  note_clamped(spec, p.spec, "", p.clamped);
  for (size_t h = 0; h < spec.per_head.size() && h < p.spec.per_head.size(); ++h)
    note_clamped(spec.per_head[h], p.spec.per_head[h], "head " + std::to_string(h) + ": ",
                 p.clamped);

  p.heads.resize(static_cast<size_t>(sizes.num_heads));
  if (spec.kind == PatternKind::per_head) {
    require_field(static_cast<int64_t>(spec.per_head.size()) == sizes.num_heads, Field::heads,
                  " length", spec.per_head.size(), "must equal num_heads (" + std::to_string(sizes.num_heads) + ")");
    // DECISION: each head's spec is built as head h of its own pattern (the PRNG is
    // keyed with h); random_draws stays empty for per-head patterns.
    for (int64_t h = 0; h < sizes.num_heads; ++h) {
      const PatternSpec& s = p.spec.per_head[h];
      try {
        validate_kind(s, sizes);
      } catch (const FieldError& e) {
        throw e.at_head(h);
      }
      Pattern scratch;
      scratch.random_draws = Tensor<int64_t>(draws_shape(s, sizes), -1);
      p.heads[h] = std::make_shared<const HeadLayout>(build_head(s, sizes, h, scratch));
      p.random_shortfall += scratch.random_shortfall;
    }
    return p;
  }

  const PatternSpec& cs = p.spec;  // canonical from here on
  validate_kind(cs, sizes);
  const Shape ds = draws_shape(cs, sizes);
  if (!ds.empty()) {
    const bool token = cs.kind == PatternKind::random;
    try {
      checked_numel(ds, sizeof(int64_t), "table of draws");
    } catch (const MemoryLimitError& e) {
      throw FieldError::exceeds_memory(
          token ? Field::num_random : Field::num_random_blocks,
          token ? " (table of draws [num_heads, seq_len_q, num_random])"
                : " (table of draws [num_heads, rows, num_random_blocks])",
          e);
    }
    p.random_draws = Tensor<int64_t>(ds, -1);
  }

  if (cs.kind == PatternKind::selected || cs.kind == PatternKind::selected_blocks) {
    detail::build_selected(cs, sizes, p);
  } else if (!head_dependent(cs)) {
    auto shared = std::make_shared<const HeadLayout>(build_head(cs, sizes, 0, p));
    for (auto& h : p.heads) h = shared;
    // Draws made once (e.g. a [1, rows, r] random table) hold for every head.
    if (p.random_draws.numel() > 0) {
      const int64_t per_head = p.random_draws.numel() / sizes.num_heads;
      for (int64_t h = 1; h < sizes.num_heads; ++h)
        std::copy_n(p.random_draws.data.begin(), per_head, p.random_draws.data.begin() + h * per_head);
      p.random_shortfall *= sizes.num_heads;
    }
  } else {
    for (int64_t h = 0; h < sizes.num_heads; ++h)
      p.heads[h] = std::make_shared<const HeadLayout>(build_head(cs, sizes, h, p));
  }
  return p;
}

bool Pattern::key_valid(int64_t b, int64_t j) const {
  if (!spec.key_padding_mask) return true;
  return spec.key_padding_mask->data[b * sizes.seq_len_k + j] != 0;
}

bool Pattern::query_valid(int64_t b, int64_t i) const {
  const int64_t position = i + sizes.seq_len_k - sizes.seq_len_q;
  if (position < 0 || position >= sizes.seq_len_k) return true;
  return key_valid(b, position);
}

bool Pattern::allowed(int64_t b, int64_t h, int64_t i, int64_t j) const {
  return query_valid(b, i) && key_valid(b, j) && head_of(b, h).allowed(i, j);
}

BandParams Pattern::band() const {
  const PatternKind k = spec.kind;
  require(k == PatternKind::window || k == PatternKind::longformer || k == PatternKind::random,
          "pattern", pattern_kind_name(k), "has no band (window, longformer and random do)");
  return band_of(spec, sizes.seq_len_q, sizes.seq_len_k);
}

BandParams band_of(const PatternSpec& spec, int64_t seq_len_q, int64_t seq_len_k) {
  // -1 (unbounded) as the finite value that reaches every key: N = max(seq_len_q,
  // seq_len_k) steps of any dilation >= 1 are past both ends (contract §3.11).
  const int64_t unbounded = std::max(seq_len_q, seq_len_k);
  auto reach = [&](const std::optional<int64_t>& x) {
    return !x ? spec.window : *x < 0 ? unbounded : *x;
  };
  BandParams b;
  b.seq_len_q = seq_len_q;
  b.seq_len_k = seq_len_k;
  b.left = reach(spec.window_left);
  b.right = reach(spec.window_right);
  b.dilation = spec.dilation;
  b.causal = spec.causal;
  return b;
}

}  // namespace sparseattn
