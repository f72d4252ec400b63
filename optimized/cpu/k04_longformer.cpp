// k04 — Longformer: sliding window plus global tokens, float32 (Beltagy et al. 2020, §3.1
// "global attention").
//
// Contract: matches a1_dense_masked within kTolFloat32 (atol 2e-5, rtol 2e-4,
// core/numerics.h); serves pattern kind `longformer` (any dilation, symmetric window or a
// (left, right) pair, causal or not, any seq_len_q/seq_len_k), key padding. Bit-identical for any OpenMP thread count.
// Modern attention (contract §2.7–§2.9; registry features kModern), same tolerance: k, v
// with H_kv heads, query head h reading kv head h / g (band and global panels per kv head;
// ALiBi reads the global rows' and keys' positions);
// softcap and ALiBi on each chunk's scores before the mask; a sink as each real row's
// initial running max and sum (flash_tile.h). Plain problems take the unmodified path.
// bf16 twin (k04_longformer_bf16, kernels_bf16.h): this body on the bf16 engines of
// flash_tile_bf16.h, kTolBfloat16 on bf16-rounded inputs.
//
// What changed since k03: two more key sources. (1) Every query also attends the global
// positions G: they are packed into one extra panel per head, and a score is masked when
// the band already allows that key (set semantics, contract §2: a global key inside the
// window counts once) or, if causal, when it lies after the query. (2) A query at a global
// position attends every key (up to its position if causal): those rows are skipped by the
// band tiles and computed as full rows, kBr at a time, over the whole key panel.
// The band part is k02's span walk: with dilation 1 a row's band is one range, masked by
// two fills, and chunks inside every row's band run unmasked; a dilation d > 1 is masked
// element-wise inside the span (computing d times the band's scores) instead of k03's
// residue classes, because the global panel and global rows would otherwise have to be
// split per class too.
// Why: Longformer's pattern is O(n·(w + |G|)) work; the global rows are |G| dense rows.
// The price: the global panel is a separate, masked chunk for every query tile, so it runs
// slower per FLOP than k02.
// Measured: docs/benchmarks.md, "Measured: the target points" (2026-11-30, Zen 5, avx512
// build, 2 threads), row "Longformer w256 g2, n 16384": 50% of the FMA peak per CPU-second
// (threshold 65%: not met). Earlier figures, the bf16 twin and the tuning history:
// optimized/cpu/TUNING.md.
#include "optimized/cpu/common.h"
#include "optimized/cpu/flash_tile_bf16.h"

SPARSEATTN_ISA_BEGIN

bool k04_serves(const Pattern& pattern) { return pattern.spec.kind == PatternKind::longformer; }

// The kernel for any engine (common.h's Float32Engine, flash_tile_bf16.h's bf16 ones).
template <class Engine, class In>
void k04_body(const In& in, const Outputs& out, const char* name) {
  const Pattern& pattern = *in.pattern;
  require_served(k04_serves(pattern), pattern, name, "longformer");
  const AttentionShape& s = in.shape;
  const BandParams band = pattern.band();
  const int64_t d = band.dilation;
  const int64_t offset = s.seq_len_k - s.seq_len_q;  // query i sits at key position i + offset
  const bool causal = pattern.spec.causal;

  // G: sorted, unique global positions (materialize() checked they are in [0, seq_len_k)).
  std::vector<int64_t> global = pattern.spec.global;
  std::sort(global.begin(), global.end());
  global.erase(std::unique(global.begin(), global.end()), global.end());
  std::vector<uint8_t> is_global(static_cast<size_t>(s.seq_len_k), 0);
  for (int64_t g : global) is_global[g] = 1;
  auto is_global_query = [&](int64_t i) {
    const int64_t p = i + offset;
    return p >= 0 && p < s.seq_len_k && is_global[p];
  };
  // Keys [0, limit(i)) are the ones query i may ever see (causal: up to its position).
  auto limit = [&](int64_t i) {
    return causal ? std::clamp<int64_t>(i + offset + 1, 0, s.seq_len_k) : s.seq_len_k;
  };
  std::vector<int64_t> global_queries;
  for (int64_t i = 0; i < s.seq_len_q; ++i)
    if (is_global_query(i)) global_queries.push_back(i);

  const int64_t num_bh = s.batch * s.num_heads;
  const int64_t num_g = static_cast<int64_t>(global.size());
  // Both panels per (batch, kv head), packed once for the g query heads reading it
  // (contract §2.7), indexed by kv_index.
  const auto panels = pack_all_keys<Engine>(in);
  const int64_t num_bkv = s.batch * s.num_kv_heads;
  std::vector<typename Engine::Panel> global_panels(static_cast<size_t>(num_bkv));
#pragma omp parallel for schedule(static)
  for (int64_t bkv = 0; bkv < num_bkv; ++bkv)
    Engine::pack(in.k + bkv * s.seq_len_k * s.head_dim, in.v + bkv * s.seq_len_k * s.head_dim_v,
              s.head_dim, s.head_dim_v, num_g, [&](int64_t u) { return global[u]; },
              global_panels[bkv]);

  const int64_t band_items = (s.seq_len_q + kBr - 1) / kBr;
  const int64_t global_items = (static_cast<int64_t>(global_queries.size()) + kBr - 1) / kBr;
  const int64_t items_per_bh = band_items + global_items;

  parallel_tiles<Engine>(in, num_bh * items_per_bh, [&](int64_t item, auto& t) {
    const int64_t bh = item / items_per_bh, b = bh / s.num_heads, h = bh % s.num_heads;
    const int64_t local = item % items_per_bh;
    const auto hv = head_view(in, out, b, h);
    const uint8_t* key_valid = key_padding_row(pattern, b);
    const int64_t bkv = kv_index(s, b, h);
    const auto& panel = panels[bkv];

    if (local >= band_items) {  // a group of global query rows: full rows
      const int64_t g0 = (local - band_items) * kBr;
      const int64_t rows = std::min<int64_t>(kBr, global_queries.size() - g0);
      const int64_t* qi = global_queries.data() + g0;
      int64_t key_end = 0;
      for (int64_t r = 0; r < rows; ++r) key_end = std::max(key_end, limit(qi[r]));
      // The rows are the global queries qi[r], at positions qi[r] + offset (ALiBi's p).
      TileMods mods = tile_mods(in.mods, s, b, h, 0);
      mods.q_list = qi;
      t.begin(rows, [&](int64_t r) { return hv.q + qi[r] * s.head_dim; }, in.scale, mods);
      for (int64_t j0 = 0; j0 < key_end; j0 += kBc) {
        const int64_t nc = std::min(kBc, key_end - j0);
        t.step(panel, j0, nc, [&](int64_t r, float* sc) {
          for (int64_t c = std::max<int64_t>(limit(qi[r]) - j0, 0); c < nc; ++c) sc[c] = kNegInf;
          mask_padded_keys(key_valid, sc, nc, [&](int64_t c) { return j0 + c; });
        });
      }
      t.finish([&](int64_t r, const float* o_row, float lse) {
        write_row(hv, pattern, b, qi[r], s.head_dim_v, o_row, lse);
      });
      return;
    }

    // A tile of queries: band keys, then the global keys the band does not cover.
    const int64_t i0 = local * kBr;
    const int64_t rows = std::min(kBr, s.seq_len_q - i0);
    BandSteps steps[kBr];
    bool any_global_row = false;
    // Keys [first[r], last[r]] span row r's band; with dilation 1 it is exactly the band.
    int64_t first[kBr], last[kBr];
    int64_t common_first = 0, common_last = s.seq_len_k - 1;  // keys every row attends
    for (int64_t r = 0; r < rows; ++r) {
      steps[r] = band_steps(band, i0 + r);
      first[r] = steps[r].position + steps[r].t_lo * d;
      last[r] = steps[r].position + steps[r].t_hi * d;
      common_first = std::max(common_first, first[r]);
      common_last = std::min(common_last, last[r]);
      any_global_row = any_global_row || is_global_query(i0 + r);
    }
    auto in_band = [&](int64_t r, int64_t j) {
      const int64_t delta = j - steps[r].position;
      return delta % d == 0 && delta / d >= steps[r].t_lo && delta / d <= steps[r].t_hi;
    };
    t.begin(rows, [&](int64_t r) { return hv.q + (i0 + r) * s.head_dim; }, in.scale,
            tile_mods(in.mods, s, b, h, i0));
    const KeySpan span = band_key_span(band, i0, i0 + rows);
    for (int64_t j0 = span.lo; j0 <= span.hi; j0 += kBc) {
      const int64_t nc = std::min(kBc, span.hi + 1 - j0);
      // Undilated chunks inside every row's band, in a tile without global rows or
      // padding, need no mask (most of the band, as in k02).
      if (d == 1 && !any_global_row && key_valid == nullptr && j0 >= common_first &&
          j0 + nc - 1 <= common_last) {
        t.step(panel, j0, nc, NoMask{});
        continue;
      }
      t.step(panel, j0, nc, [&](int64_t r, float* sc) {
        if (is_global_query(i0 + r)) {  // computed by a global-row item
          std::fill(sc, sc + nc, kNegInf);
          return;
        }
        if (d == 1) {  // the band is one range: two fills, not a division per score
          mask_outside(sc, nc, first[r] - j0, last[r] - j0);
        } else {
          for (int64_t c = 0; c < nc; ++c)
            if (!in_band(r, j0 + c)) sc[c] = kNegInf;
        }
        mask_padded_keys(key_valid, sc, nc, [&](int64_t c) { return j0 + c; });
      });
    }
    for (int64_t u0 = 0; u0 < num_g; u0 += kBc) {
      const int64_t nc = std::min(kBc, num_g - u0);
      t.step(global_panels[bkv], u0, nc, [&](int64_t r, float* sc) {
        const int64_t i = i0 + r;
        for (int64_t c = 0; c < nc; ++c) {
          const int64_t g = global[u0 + c];
          if (is_global_query(i) || g >= limit(i) || in_band(r, g)) sc[c] = kNegInf;
        }
        mask_padded_keys(key_valid, sc, nc, [&](int64_t c) { return global[u0 + c]; });
      }, ChunkKeys{0, 0, global.data() + u0, nc});
    }
    t.finish([&](int64_t r, const float* o_row, float lse) {
      if (!is_global_query(i0 + r)) write_row(hv, pattern, b, i0 + r, s.head_dim_v, o_row, lse);
    });
  });
}

void k04_longformer(const Inputs& in, const Outputs& out) {
  k04_body<Float32Engine>(in, out, "cpu_k04_longformer");
}

void k04_longformer_bf16(const InputsBf16& in, const Outputs& out) {
  with_bf16_engine(
      [&](auto engine) { k04_body<decltype(engine)>(in, out, "cpu_k04_longformer_bf16"); });
}

SPARSEATTN_ISA_END
