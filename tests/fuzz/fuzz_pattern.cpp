// fuzz_pattern: pattern flags -> to_spec() -> materialize(), every integer parameter drawn
// over its whole range (small values near the sequence, powers of two, values next to
// 2^63, negatives), on small sequences (seq_len <= 40, num_heads <= 3).
//
// Two paths, chosen by the first byte:
//   - flags: a PatternFlags exactly as the CLI parses it, through api::build_pattern()
//     (to_spec() then materialize(), with the error renaming the CLI does);
//   - spec: a PatternSpec built directly, adding what only files or the library can give
//     (random_table, segment_ids, an explicit mask, key_padding_mask, per-head specs,
//     the layout tile side).
//
// Asserts (docs/robustness.md): the call returns or throws InvalidArgument (contract §5);
// no sanitizer report; no single allocation over -malloc_limit_mb and no run over
// -timeout (memory and time bounded by seq_len, never by a parameter, contract §5). When
// it returns, every head's layout is well formed (row_ptr, ascending columns, tile masks
// inside `bits`, nnz) and its dense mask equals tests/reference/allowed_spec.h, the
// independent predicate of contract §3, pair by pair; key padding is checked against the
// mask file's own entries.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

#include "api/pattern_flags.h"
#include "fuzz_common.h"
#include "pattern/pattern.h"
#include "tests/reference/allowed_spec.h"

namespace {

using namespace sparseattn;

constexpr int64_t kMaxSeqLen = 40;
constexpr int64_t kMaxHeads = 3;

// An integer from the whole int64 range, weighted towards the values that break index
// arithmetic: small ones (around the sequence), powers of two and their neighbours,
// values next to 2^63 and next to -2^63.
//
// SPARSEATTN_FUZZ_PARAM_BITS=b (triage only; default 63, the whole range) clamps every such
// value to [-2^b, 2^b], so that a run can look past a known overflow for other faults.
int64_t any_int_unclamped(FuzzedDataProvider& d);
int64_t any_int(FuzzedDataProvider& d) {
  static const int bits = [] {
    const char* env = std::getenv("SPARSEATTN_FUZZ_PARAM_BITS");
    return env ? std::clamp(std::atoi(env), 1, 63) : 63;
  }();
  const int64_t x = any_int_unclamped(d);
  if (bits == 63) return x;
  const int64_t bound = int64_t{1} << bits;
  return std::clamp(x, -bound, bound);
}

int64_t any_int_unclamped(FuzzedDataProvider& d) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  switch (d.ConsumeIntegralInRange<int>(0, 7)) {
    case 0:
    case 1: return d.ConsumeIntegralInRange<int64_t>(-2, 2 * kMaxSeqLen);
    case 2: return int64_t{1} << d.ConsumeIntegralInRange<int>(0, 62);
    case 3: return (int64_t{1} << d.ConsumeIntegralInRange<int>(1, 62)) +
                   d.ConsumeIntegralInRange<int64_t>(-2, 2);
    case 4: return kMax - d.ConsumeIntegralInRange<int64_t>(0, 2 * kMaxSeqLen);
    case 5: return kMin + d.ConsumeIntegralInRange<int64_t>(0, 2);
    case 6: return -d.ConsumeIntegralInRange<int64_t>(0, kMax);
    default: return d.ConsumeIntegral<int64_t>();
  }
}

// A size: mostly 1..max, sometimes an invalid one (0, negative, huge).
int64_t any_size(FuzzedDataProvider& d, int64_t max) {
  if (d.ConsumeIntegralInRange<int>(0, 15) == 0) return any_int(d);
  return d.ConsumeIntegralInRange<int64_t>(1, max);
}

const char* const kKindNames[] = {"dense",   "window",      "longformer",   "random",
                                  "bigbird", "bigbird-etc", "hierarchical", "explicit",
                                  "chunked", "neighborhood"};
constexpr int kLastKind = sizeof(kKindNames) / sizeof(kKindNames[0]) - 1;

// An optional parameter of the newer kinds (contract §3.3, §3.14, §3.15): mostly unset or
// small, sometimes any integer (-1, 0, huge, negative).
std::optional<int64_t> any_optional(FuzzedDataProvider& d, int64_t lo, int64_t hi) {
  const int c = d.ConsumeIntegralInRange<int>(0, 3);
  if (c == 0) return std::nullopt;
  if (c == 1) return any_int(d);
  return d.ConsumeIntegralInRange<int64_t>(lo, hi);
}

// "3,17,4095"-like text for --global; sometimes malformed.
std::string any_positions(FuzzedDataProvider& d, int64_t seq_len) {
  if (d.ConsumeIntegralInRange<int>(0, 15) == 0) return d.ConsumeRandomLengthString(12);
  std::string text;
  const int count = d.ConsumeIntegralInRange<int>(0, 4);
  for (int c = 0; c < count; ++c) {
    const int64_t g = d.ConsumeBool() ? d.ConsumeIntegralInRange<int64_t>(0, seq_len) : any_int(d);
    text += (c ? "," : "") + std::to_string(g);
  }
  return text;
}

Tensor<uint8_t> any_bits(FuzzedDataProvider& d, Shape shape) {
  Tensor<uint8_t> t(std::move(shape), 0);
  for (auto& b : t.data) b = d.ConsumeBool();
  return t;
}

// PatternSpec values only the library (or a file) can set; shapes mostly right, so that
// materialize() gets past validation and builds.
void add_library_fields(FuzzedDataProvider& d, PatternSpec& s, const PatternSizes& z) {
  if (d.ConsumeBool()) s.tile = d.ConsumeBool() ? d.ConsumeIntegralInRange<int64_t>(1, 70) : any_int(d);
  const int64_t n = std::clamp<int64_t>(z.seq_len_q, 1, kMaxSeqLen);
  const int64_t nk = std::clamp<int64_t>(z.seq_len_k, 1, kMaxSeqLen);
  const int64_t heads = std::clamp<int64_t>(z.num_heads, 1, kMaxHeads);
  switch (s.kind) {
    case PatternKind::bigbird:
      if (d.ConsumeBool()) {
        const int64_t b = std::clamp<int64_t>(s.block_size, 1, n);
        const int64_t rows = std::max<int64_t>((n + b - 1) / b - 2, 0);
        const int64_t r = d.ConsumeIntegralInRange<int64_t>(0, 4);
        Tensor<int64_t> t({d.ConsumeBool() ? 1 : heads, rows + d.ConsumeIntegralInRange<int64_t>(0, 1), r});
        for (auto& x : t.data)
          x = d.ConsumeBool() ? d.ConsumeIntegralInRange<int64_t>(0, (n + b - 1) / b) : any_int(d);
        s.random_table = std::move(t);
      }
      break;
    case PatternKind::hierarchical: {
      const int64_t len = n + (d.ConsumeIntegralInRange<int>(0, 7) == 0 ? 1 : 0);
      int64_t id = d.ConsumeBool() ? 0 : any_int(d);
      for (int64_t i = 0; i < len; ++i) {
        s.segment_ids.push_back(id);
        // Mostly non-decreasing; a rare step down must be refused.
        if (d.ConsumeIntegralInRange<int>(0, 3) == 0 && id < std::numeric_limits<int64_t>::max())
          ++id;
        if (d.ConsumeIntegralInRange<int>(0, 31) == 0) id = any_int(d);
      }
      break;
    }
    case PatternKind::explicit_mask: {
      const int rank = d.ConsumeIntegralInRange<int>(2, 3);
      Shape shape = {n, nk};
      if (rank == 3) shape.insert(shape.begin(), d.ConsumeBool() ? 1 : heads);
      if (d.ConsumeIntegralInRange<int>(0, 15) == 0) shape.back() += 1;  // a wrong shape
      s.mask = any_bits(d, shape);
      break;
    }
    default: break;
  }
  if (d.ConsumeIntegralInRange<int>(0, 3) == 0) {
    const int64_t batch = std::clamp<int64_t>(z.batch, 1, 2);
    Shape shape = d.ConsumeBool() ? Shape{batch, nk} : Shape{nk};
    if (d.ConsumeIntegralInRange<int>(0, 15) == 0) shape.back() += 1;
    s.key_padding_mask = any_bits(d, shape);
  }
}

// SPARSEATTN_FUZZ_PRINT=1 (set it when replaying a crash: `fuzz_pattern crash-...`) prints
// what an input means before it runs: the flags path as the `sparseattn mask` command
// that reproduces it, the spec path as describe() plus the fields describe() omits.
bool print_inputs() {
  static const bool on = std::getenv("SPARSEATTN_FUZZ_PRINT") != nullptr;
  return on;
}

void print_command(const api::PatternFlags& f, const PatternSizes& z) {
  std::string c = "sparseattn mask --seq-len " + std::to_string(z.seq_len_q) + " --seq-len-k " +
                  std::to_string(z.seq_len_k) + " --num-heads " + std::to_string(z.num_heads) +
                  " --pattern '" + f.pattern + "' --window " + std::to_string(f.window) +
                  " --dilation " + std::to_string(f.dilation) + (f.causal ? " --causal" : "") +
                  (f.global.empty() ? "" : " --global '" + f.global + "'") + " --num-random " +
                  std::to_string(f.num_random) + " --block-size " + std::to_string(f.block_size) +
                  " --num-random-blocks " + std::to_string(f.num_random_blocks) +
                  " --num-global-tokens " + std::to_string(f.num_global_tokens) + " --seed " +
                  std::to_string(f.seed) +
                  (f.window_left ? " --window-left " + std::to_string(*f.window_left) : "") +
                  (f.window_right ? " --window-right " + std::to_string(*f.window_right) : "") +
                  (f.chunk_size ? " --chunk-size " + std::to_string(*f.chunk_size) : "") +
                  (f.kernel_size ? " --kernel-size " + std::to_string(*f.kernel_size) : "") +
                  " --out m.npy   (batch " + std::to_string(z.batch) + ")";
  std::fprintf(stderr, "fuzz_pattern flags: %s\n", c.c_str());
}

void print_spec(const PatternSpec& s, const PatternSizes& z) {
  std::fprintf(stderr,
               "fuzz_pattern spec: %s window=%lld dilation=%lld num_random=%lld block_size=%lld "
               "num_random_blocks=%lld num_global_tokens=%lld tile=%lld; sizes batch=%lld "
               "num_heads=%lld seq_len_q=%lld seq_len_k=%lld\n",
               describe(s).c_str(), (long long)s.window, (long long)s.dilation,
               (long long)s.num_random, (long long)s.block_size, (long long)s.num_random_blocks,
               (long long)s.num_global_tokens, (long long)s.tile, (long long)z.batch,
               (long long)z.num_heads, (long long)z.seq_len_q, (long long)z.seq_len_k);
}

// --- Invariants of a materialized pattern ----------------------------------------------

// contract §3's "parameters beyond the sequence": a block_size of at least seq_len means one
// block, the same pattern as block_size = seq_len. allowed_spec() computes nb =
// ceil(n / block_size) as (n + b - 1) / b, which would overflow for b near 2^63, so it is
// given the equivalent clamped value. Window and dilation need no clamping there: its
// arithmetic never adds them to a position.
PatternSpec predicate_spec(PatternSpec s, const PatternSizes& z) {
  s.block_size = std::min(s.block_size, std::max(z.seq_len_q, z.seq_len_k));
  return s;
}

void check_layout(const HeadLayout& l, const PatternSizes& z) {
  FUZZ_REQUIRE(l.seq_len_q == z.seq_len_q && l.seq_len_k == z.seq_len_k, "layout sizes");
  FUZZ_REQUIRE(l.tile >= 1, std::to_string(l.tile));
  const int64_t nq = l.num_q_tiles(), nk = l.num_k_tiles();
  FUZZ_REQUIRE(static_cast<int64_t>(l.row_ptr.size()) == nq + 1, "row_ptr size");
  FUZZ_REQUIRE(l.row_ptr.front() == 0 && l.row_ptr.back() == l.num_tiles(), "row_ptr ends");
  FUZZ_REQUIRE(l.bits_at.size() == l.col.size(), "bits_at size");
  const int64_t words = l.tile * l.words_per_row();
  for (int64_t r = 0; r < nq; ++r) {
    FUZZ_REQUIRE(l.row_ptr[r] <= l.row_ptr[r + 1], "row_ptr not monotone");
    for (int64_t e = l.row_ptr[r]; e < l.row_ptr[r + 1]; ++e) {
      FUZZ_REQUIRE(l.col[e] >= 0 && l.col[e] < nk, "column out of range");
      FUZZ_REQUIRE(e == l.row_ptr[r] || l.col[e - 1] < l.col[e], "columns not ascending");
      FUZZ_REQUIRE(l.is_full(e) || (l.bits_at[e] >= 0 &&
                   l.bits_at[e] + words <= static_cast<int64_t>(l.bits.size())),
                   "tile mask outside bits");
    }
  }
}

void check_pattern(const Pattern& p, const PatternSpec& spec, const PatternSizes& z) {
  FUZZ_REQUIRE(static_cast<int64_t>(p.heads.size()) == z.num_heads, "head count");
  int64_t shortfall = 0;
  for (int64_t x : p.random_draws.data) shortfall += x == -1;
  if (spec.kind != PatternKind::per_head)
    FUZZ_REQUIRE(shortfall == p.random_shortfall, std::to_string(shortfall) + " vs " +
                                                       std::to_string(p.random_shortfall));
  for (int64_t h = 0; h < z.num_heads; ++h) {
    const HeadLayout& l = p.head(h);
    check_layout(l, z);
    const Tensor<uint8_t> mask = dense_mask(l);
    int64_t count = 0;
    for (uint8_t b : mask.data) count += b != 0;
    FUZZ_REQUIRE(count == l.nnz, "nnz " + std::to_string(l.nnz) + " vs mask " + std::to_string(count));

    // The independent predicate. Per-head specs: each head against its own spec, where
    // that spec draws nothing (per-head patterns keep no record of their draws).
    const PatternSpec* s = &spec;
    if (spec.kind == PatternKind::per_head) {
      s = &spec.per_head[h];
      if (s->kind == PatternKind::random || s->kind == PatternKind::bigbird ||
          s->kind == PatternKind::bigbird_etc)
        continue;
    }
    const PatternSpec ps = predicate_spec(*s, z);
    for (int64_t i = 0; i < z.seq_len_q; ++i)
      for (int64_t j = 0; j < z.seq_len_k; ++j) {
        const bool want = testing_spec::allowed_spec(ps, z, p.random_draws, h, i, j);
        const bool got = mask.data[i * z.seq_len_k + j] != 0;
        if (want != got)
          fuzz::fail("mask differs from allowed_spec",
                     describe(spec) + " head " + std::to_string(h) + " i " + std::to_string(i) +
                         " j " + std::to_string(j) + " got " + std::to_string(got));
        FUZZ_REQUIRE(l.allowed(i, j) == got, "HeadLayout::allowed vs dense_mask");
      }
  }
  // Key padding, from the mask's own entries ([seq_len_k] means batch 1).
  if (spec.key_padding_mask) {
    const Tensor<uint8_t>& kpm = *spec.key_padding_mask;
    for (int64_t b = 0; b < z.batch; ++b)
      for (int64_t i = 0; i < z.seq_len_q; ++i)
        for (int64_t j = 0; j < z.seq_len_k; ++j) {
          const int64_t pos = i + z.seq_len_k - z.seq_len_q;
          const bool key_real = kpm.data[b * z.seq_len_k + j] != 0;
          const bool query_real = pos < 0 || pos >= z.seq_len_k || kpm.data[b * z.seq_len_k + pos];
          for (int64_t h = 0; h < z.num_heads; ++h)
            FUZZ_REQUIRE(p.allowed(b, h, i, j) == (key_real && query_real && p.head(h).allowed(i, j)),
                         "key padding");
        }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider d(data, size);
  const bool via_flags = d.ConsumeBool();

  PatternSizes z;
  z.num_heads = any_size(d, kMaxHeads);
  z.seq_len_q = any_size(d, kMaxSeqLen);
  z.seq_len_k = d.ConsumeIntegralInRange<int>(0, 3) == 0 ? any_size(d, kMaxSeqLen) : z.seq_len_q;
  z.batch = any_size(d, 2);
  // Sizes beyond these bounds must be refused by validation alone; building them is not
  // this target's business (the dense check below is O(seq_len^2)).
  const bool small = z.num_heads >= 1 && z.num_heads <= kMaxHeads && z.seq_len_q >= 1 &&
                     z.seq_len_q <= kMaxSeqLen && z.seq_len_k >= 1 && z.seq_len_k <= kMaxSeqLen &&
                     z.batch >= 1 && z.batch <= 2;
  if (!small) {
    z.num_heads = std::min<int64_t>(z.num_heads, 0);  // invalid on purpose: must be refused
  }

  const std::string kind_name = d.ConsumeIntegralInRange<int>(0, 31) == 0
                                    ? d.ConsumeRandomLengthString(12)
                                    : kKindNames[d.ConsumeIntegralInRange<int>(0, kLastKind)];
  const int64_t seq_len = std::clamp<int64_t>(z.seq_len_k, 1, kMaxSeqLen);

  PatternSpec spec;
  try {
    if (via_flags) {
      api::PatternFlags f;
      f.pattern = kind_name;
      // Which flags are set: mostly those the kind reads (others are refused by name).
      f.window = d.ConsumeBool() ? any_int(d) : f.window;
      f.dilation = d.ConsumeBool() ? any_int(d) : f.dilation;
      f.causal = d.ConsumeBool();
      f.global = d.ConsumeIntegralInRange<int>(0, 3) == 0 ? any_positions(d, seq_len) : "";
      f.num_random = d.ConsumeBool() ? any_int(d) : f.num_random;
      f.block_size = d.ConsumeBool() ? any_int(d) : f.block_size;
      f.num_random_blocks = d.ConsumeBool() ? any_int(d) : f.num_random_blocks;
      f.num_global_tokens = d.ConsumeBool() ? any_int(d) : f.num_global_tokens;
      f.seed = d.ConsumeIntegral<uint64_t>();
      f.window_left = any_optional(d, -1, 8);
      f.window_right = any_optional(d, -1, 8);
      f.chunk_size = any_optional(d, 1, 20);
      f.kernel_size = any_optional(d, 1, 9);
      if (kind_name == "hierarchical" || kind_name == "explicit") return 0;  // need files
      // Unset the flags this kind does not read unless asked to keep one stray flag.
      if (d.ConsumeIntegralInRange<int>(0, 15) != 0) {
        const api::PatternFlags def;
        const bool band = kind_name == "window" || kind_name == "longformer" || kind_name == "random";
        const bool block = kind_name == "bigbird" || kind_name == "bigbird-etc";
        const bool hood = kind_name == "neighborhood";
        if (!band) f.window = def.window;
        if (!band && !hood) f.dilation = def.dilation;
        if (!band) f.window_left.reset(), f.window_right.reset();
        if (band && f.window_left) f.window = def.window;  // the pair replaces --window
        if (kind_name != "chunked") f.chunk_size.reset();
        if (!hood) f.kernel_size.reset();
        if (!band && !hood && kind_name != "dense" && kind_name != "chunked") f.causal = false;
        if (kind_name != "longformer" && kind_name != "random") f.global.clear();
        if (kind_name != "random") f.num_random = def.num_random;
        if (!block) f.block_size = def.block_size, f.num_random_blocks = def.num_random_blocks;
        if (kind_name != "bigbird-etc") f.num_global_tokens = def.num_global_tokens;
        if (kind_name != "random" && !block) f.seed = def.seed;
      }
      if (print_inputs()) print_command(f, z);
      spec = api::to_spec(f);
      const Pattern p = api::build_pattern(f, z);
      FUZZ_REQUIRE(small, "build_pattern() accepted invalid sizes");
      check_pattern(p, spec, z);
      return 0;
    }

    auto fill = [&](PatternSpec& s, const std::string& name) {
      s.kind = parse_pattern_kind(name);
      s.causal = d.ConsumeBool();
      s.window = d.ConsumeBool() ? any_int(d) : d.ConsumeIntegralInRange<int64_t>(0, 8);
      s.dilation = d.ConsumeBool() ? any_int(d) : d.ConsumeIntegralInRange<int64_t>(1, 4);
      if (d.ConsumeIntegralInRange<int>(0, 3) == 0)
        for (int c = d.ConsumeIntegralInRange<int>(1, 3); c > 0; --c)
          s.global.push_back(d.ConsumeBool() ? d.ConsumeIntegralInRange<int64_t>(0, seq_len - 1)
                                             : any_int(d));
      s.num_random = d.ConsumeBool() ? any_int(d) : d.ConsumeIntegralInRange<int64_t>(0, 4);
      s.block_size = d.ConsumeBool() ? any_int(d) : d.ConsumeIntegralInRange<int64_t>(1, 16);
      s.num_random_blocks = d.ConsumeBool() ? any_int(d) : d.ConsumeIntegralInRange<int64_t>(0, 4);
      s.num_global_tokens = d.ConsumeBool() ? any_int(d) : d.ConsumeIntegralInRange<int64_t>(0, 8);
      s.seed = d.ConsumeIntegral<uint64_t>();
      s.window_left = any_optional(d, -1, 8);
      s.window_right = any_optional(d, -1, 8);
      s.chunk_size = any_optional(d, 1, 20);
      s.kernel_size = any_optional(d, 1, 9);
      add_library_fields(d, s, z);
      // validate_spec() refuses a field the kind does not read: unset those, unless asked
      // to keep them (then the refusal itself is exercised).
      if (d.ConsumeIntegralInRange<int>(0, 15) != 0) {
        const PatternSpec def;
        const PatternKind k = s.kind;
        const bool band = k == PatternKind::window || k == PatternKind::longformer ||
                          k == PatternKind::random;
        const bool block = k == PatternKind::bigbird || k == PatternKind::bigbird_etc;
        const bool hood = k == PatternKind::neighborhood;
        if (!band) s.window = def.window;
        if (!band && !hood) s.dilation = def.dilation;
        if (!band) s.window_left.reset(), s.window_right.reset();
        if (band && s.window_left) s.window = def.window;  // the pair replaces window
        if (k != PatternKind::chunked) s.chunk_size.reset();
        if (!hood) s.kernel_size.reset();
        if (!band && !hood && k != PatternKind::dense && k != PatternKind::chunked) s.causal = false;
        if (k != PatternKind::longformer && k != PatternKind::random) s.global.clear();
        if (k != PatternKind::random) s.num_random = def.num_random;
        if (!block) s.block_size = def.block_size, s.num_random_blocks = def.num_random_blocks;
        if (!block) s.random_table.reset();
        if (k != PatternKind::bigbird_etc) s.num_global_tokens = def.num_global_tokens;
        if (k != PatternKind::random && !block) s.seed = def.seed;
        if (k != PatternKind::hierarchical) s.segment_ids.clear();
        if (k != PatternKind::explicit_mask) s.mask.reset();
      }
    };
    if (d.ConsumeIntegralInRange<int>(0, 7) == 0) {
      spec.kind = PatternKind::per_head;
      const int64_t heads = d.ConsumeBool() ? std::clamp<int64_t>(z.num_heads, 1, kMaxHeads)
                                            : d.ConsumeIntegralInRange<int64_t>(1, kMaxHeads);
      spec.per_head.resize(static_cast<size_t>(heads));
      for (PatternSpec& s : spec.per_head) {
        fill(s, kKindNames[d.ConsumeIntegralInRange<int>(0, kLastKind)]);
        // Key padding belongs to the whole pattern (validate_spec refuses it on a head).
        if (d.ConsumeIntegralInRange<int>(0, 15) != 0) s.key_padding_mask.reset();
      }
    } else {
      fill(spec, kind_name);
    }
    if (print_inputs()) print_spec(spec, z);
    const Pattern p = materialize(spec, z);
    FUZZ_REQUIRE(small, "materialize() accepted invalid sizes");
    check_pattern(p, spec, z);
  } catch (const InvalidArgument&) {
    // A clean refusal (contract §5).
  }
  return 0;
}
