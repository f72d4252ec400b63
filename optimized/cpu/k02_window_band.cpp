// k02 — sliding window over the band, float32 (Beltagy et al. 2020, §3.1 "sliding window").
//
// Contract: matches a1_dense_masked within kTolFloat32 (atol 2e-5, rtol 2e-4,
// core/numerics.h); serves pattern kind `window` with dilation 1 (symmetric or a (left,
// right) pair, contract §3.3; causal or not, any seq_len_q/seq_len_k), key padding. Bit-identical for any OpenMP thread count.
// Modern attention (contract §2.7–§2.9; registry features kModern), same tolerance: k, v
// with H_kv heads, query head h reading kv head h / g (one panel per kv head, shared by its
// g query heads);
// softcap and ALiBi on each chunk's scores before the mask; a sink as each real row's
// initial running max and sum (flash_tile.h). Plain problems take the unmodified path.
// bf16 twin (k02_window_band_bf16, kernels_bf16.h): this body on the bf16 engines of
// flash_tile_bf16.h, kTolBfloat16 on bf16-rounded inputs.
//
// What changed since k01: a query tile no longer visits every key chunk, only those in
// band_key_span(i0, i1) — at most (64 + 2w) keys for one-sided window w — and each row is
// clipped exactly to its band_steps() range, masked by two fills per row; chunks strictly
// inside every row's range run unmasked. No per-row key list exists: the band is arithmetic
// (band.h), the one definition the pattern builder, the references and the CUDA kernels
// share.
// Why: a window row has 2w + 1 keys, so the work drops from O(n²) to O(n · w). The price:
// the tile computes (64 + 2w) × 64 scores for (2w + 1) × 64 allowed ones (at w = 256,
// 576/513 of the counted FLOPs), which caps it below the dense kernel's efficiency, and its
// edge chunks pay the mask.
// Measured: docs/benchmarks.md, "Measured: the target points" (2026-11-30, Zen 5, avx512
// build, 2 threads), row "window w256, n 16384": 54% of the FMA peak per CPU-second
// (threshold 65%: not met). Earlier figures, the bf16 twin's and the tuning history:
// optimized/cpu/TUNING.md.
#include "optimized/cpu/common.h"
#include "optimized/cpu/flash_tile_bf16.h"

SPARSEATTN_ISA_BEGIN

bool k02_serves(const Pattern& pattern) {
  return pattern.spec.kind == PatternKind::window && pattern.spec.dilation == 1;
}

// The kernel for any engine (common.h's Float32Engine, flash_tile_bf16.h's bf16 ones).
template <class Engine, class In>
void k02_body(const In& in, const Outputs& out, const char* name) {
  const Pattern& pattern = *in.pattern;
  require_served(k02_serves(pattern), pattern, name, "window, dilation 1");
  const AttentionShape& s = in.shape;
  const BandParams band = pattern.band();
  const auto panels = pack_all_keys<Engine>(in);
  const int64_t num_q_tiles = (s.seq_len_q + kBr - 1) / kBr;

  const int64_t g = s.group();

  parallel_tiles<Engine>(in, s.batch * s.num_heads * num_q_tiles, [&](int64_t item, auto& t) {
    // Items in (batch, kv head, query tile, head of the group) order, as in k01: the g query
    // heads of a kv head visit the same band of its panel one after another.
    const int64_t bkv = item / (num_q_tiles * g), qt = item / g % num_q_tiles;
    const int64_t b = bkv / s.num_kv_heads, h = bkv % s.num_kv_heads * g + item % g;
    const int64_t i0 = qt * kBr;
    const int64_t rows = std::min(kBr, s.seq_len_q - i0);
    const auto hv = head_view(in, out, b, h);
    const uint8_t* key_valid = key_padding_row(pattern, b);

    // Row r may attend keys [first[r], last[r]] (dilation 1: a contiguous range).
    int64_t first[kBr], last[kBr];
    int64_t common_first = 0, common_last = s.seq_len_k - 1;  // keys every row attends
    for (int64_t r = 0; r < rows; ++r) {
      const BandSteps st = band_steps(band, i0 + r);
      first[r] = st.position + st.t_lo;
      last[r] = st.position + st.t_hi;
      common_first = std::max(common_first, first[r]);
      common_last = std::min(common_last, last[r]);
    }
    t.begin(rows, [&](int64_t r) { return hv.q + (i0 + r) * s.head_dim; }, in.scale,
            tile_mods(in.mods, s, b, h, i0));
    const auto& panel = panels[bkv];
    const KeySpan span = band_key_span(band, i0, i0 + rows);
    for (int64_t j0 = span.lo; j0 <= span.hi; j0 += kBc) {
      const int64_t nc = std::min(kBc, span.hi + 1 - j0);
      if (j0 >= common_first && j0 + nc - 1 <= common_last && key_valid == nullptr) {
        t.step(panel, j0, nc, NoMask{});
        continue;
      }
      t.step(panel, j0, nc, [&](int64_t r, float* sc) {
        // Row r's keys are one range: mask the columns before and after it (two fills,
        // not a compare per score).
        mask_outside(sc, nc, first[r] - j0, last[r] - j0);
        mask_padded_keys(key_valid, sc, nc, [&](int64_t c) { return j0 + c; });
      });
    }
    t.finish([&](int64_t r, const float* o_row, float lse) {
      write_row(hv, pattern, b, i0 + r, s.head_dim_v, o_row, lse);
    });
  });
}

void k02_window_band(const Inputs& in, const Outputs& out) {
  k02_body<Float32Engine>(in, out, "cpu_k02_window_band");
}

void k02_window_band_bf16(const InputsBf16& in, const Outputs& out) {
  with_bf16_engine(
      [&](auto engine) { k02_body<decltype(engine)>(in, out, "cpu_k02_window_band_bf16"); });
}

SPARSEATTN_ISA_END
