// k01 — dense FlashAttention on the CPU (Dao et al. 2022, Alg. 1), float32.
//
// Contract: matches a1_dense_masked (the float64 oracle) within kTolFloat32
// (atol 2e-5, rtol 2e-4, core/numerics.h) on every element of o and lse; serves pattern
// kind `dense`, causal or not, any seq_len_q/seq_len_k (bottom-right aligned causal mask),
// key padding. Bit-identical for any OpenMP thread count.
// Modern attention (contract §2.7–§2.9; registry features kModern), same tolerance: k, v
// with H_kv heads, query head h reading kv head h / g (one panel per kv head, the g query
// heads of a kv head run one after another on it);
// softcap and ALiBi on each chunk's scores before the mask; a sink as each real row's
// initial running max and sum (flash_tile.h). Plain problems take the unmodified path.
// bf16 twin (k01_dense_flash_bf16, entry cpu_k01_dense_flash_bf16, kernels_bf16.h): this body
// on the bf16 engines of flash_tile_bf16.h, kTolBfloat16 against the oracle on bf16-rounded
// inputs.
//
// What changed since the reference (a5_flash_tiled, the float64 bridge): float32; the
// scores of a 64×64 tile are computed by register-blocked micro-kernels over a transposed
// key panel (flash_tile.h); exp is a vector polynomial (simd.h); OpenMP over
// (batch, head, query tile). The n×n matrix never exists: memory is O(n · head_dim).
// Why: dense is the baseline every sparse kernel is measured against, and the engine it
// introduces is the one the whole ladder reuses. What keeps it under the FMA peak: the
// online softmax's exp, max and sum per score and the per-row, per-chunk reductions are not
// FMAs (counted in docs/benchmarks.md, "What bounds a kernel: the note").
// Measured: docs/benchmarks.md, "Measured: the target points" (2026-11-30, Zen 5, avx512
// build, 2 threads), row "dense head_dim 64, n 2048 / 4096 / 16384": 77% of the FMA peak
// per CPU-second at n = 4096 (threshold 85%: not met). Earlier figures, the bf16 twin's and
// the tuning history: optimized/cpu/TUNING.md.
#include "optimized/cpu/common.h"
#include "optimized/cpu/flash_tile_bf16.h"

SPARSEATTN_ISA_BEGIN

bool k01_serves(const Pattern& pattern) { return pattern.spec.kind == PatternKind::dense; }

// The kernel for any engine (common.h's Float32Engine, flash_tile_bf16.h's bf16 ones).
template <class Engine, class In>
void k01_body(const In& in, const Outputs& out, const char* name) {
  const Pattern& pattern = *in.pattern;
  require_served(k01_serves(pattern), pattern, name, "dense");
  const AttentionShape& s = in.shape;
  const auto panels = pack_all_keys<Engine>(in);
  const bool causal = pattern.spec.causal;
  // Query i sits at key position i + offset (contract §3, bottom-right alignment).
  const int64_t offset = s.seq_len_k - s.seq_len_q;
  const int64_t num_q_tiles = (s.seq_len_q + kBr - 1) / kBr;

  const int64_t g = s.group();

  parallel_tiles<Engine>(in, s.batch * s.num_heads * num_q_tiles, [&](int64_t item, auto& t) {
    // Items in (batch, kv head, query tile, head of the group) order: the g query heads
    // reading one kv head's panel (contract §2.7) run one after another on the same keys,
    // which are then still in cache. g = 1: (batch, head, query tile), as before GQA.
    const int64_t bkv = item / (num_q_tiles * g), qt = item / g % num_q_tiles;
    const int64_t b = bkv / s.num_kv_heads, h = bkv % s.num_kv_heads * g + item % g;
    const int64_t i0 = qt * kBr;
    const int64_t rows = std::min(kBr, s.seq_len_q - i0);
    const auto hv = head_view(in, out, b, h);
    const auto& panel = panels[bkv];
    const uint8_t* key_valid = key_padding_row(pattern, b);

    t.begin(rows, [&](int64_t r) { return hv.q + (i0 + r) * s.head_dim; }, in.scale,
            tile_mods(in.mods, s, b, h, i0));
    // Causal: the last row of the tile sees keys up to its position; later keys are
    // masked for every row of the tile, so they are not visited at all.
    const int64_t key_end =
        causal ? std::clamp<int64_t>(i0 + rows - 1 + offset + 1, 0, s.seq_len_k) : s.seq_len_k;
    for (int64_t j0 = 0; j0 < key_end; j0 += kBc) {
      const int64_t nc = std::min(kBc, key_end - j0);
      // Only chunks crossing the first row's diagonal need the causal mask.
      const bool diagonal = causal && j0 + nc - 1 > i0 + offset;
      if (!diagonal && key_valid == nullptr) {
        t.step(panel, j0, nc, NoMask{});
        continue;
      }
      t.step(panel, j0, nc, [&](int64_t r, float* sc) {
        if (diagonal) {
          const int64_t last = i0 + r + offset - j0;  // last allowed column of row r
          for (int64_t c = std::max<int64_t>(last + 1, 0); c < nc; ++c) sc[c] = kNegInf;
        }
        mask_padded_keys(key_valid, sc, nc, [&](int64_t c) { return j0 + c; });
      });
    }
    t.finish([&](int64_t r, const float* o_row, float lse) {
      write_row(hv, pattern, b, i0 + r, s.head_dim_v, o_row, lse);
    });
  });
}

void k01_dense_flash(const Inputs& in, const Outputs& out) {
  k01_body<Float32Engine>(in, out, "cpu_k01_dense_flash");
}

void k01_dense_flash_bf16(const InputsBf16& in, const Outputs& out) {
  with_bf16_engine(
      [&](auto engine) { k01_body<decltype(engine)>(in, out, "cpu_k01_dense_flash_bf16"); });
}

SPARSEATTN_ISA_END
