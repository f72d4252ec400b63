// k03 — dilated sliding window by residue classes, float32 (Beltagy et al. 2020, §3.1
// "dilated sliding window").
//
// Contract: matches a1_dense_masked within kTolFloat32 (atol 2e-5, rtol 2e-4,
// core/numerics.h); serves pattern kind `window` (symmetric or (left, right), contract
// §3.3), any dilation d >= 1 (causal or not, any
// seq_len_q/seq_len_k), key padding. Bit-identical for any OpenMP thread count.
// Modern attention (contract §2.7–§2.9; registry features kModern), same tolerance: k, v
// with H_kv heads, query head h reading kv head h / g (one panel per (kv head, residue
// class); ALiBi's p and j step by the dilation);
// softcap and ALiBi on each chunk's scores before the mask; a sink as each real row's
// initial running max and sum (flash_tile.h). Plain problems take the unmodified path.
// bf16 twin (k03_window_dilated_bf16, kernels_bf16.h): this body on the bf16 engines of
// flash_tile_bf16.h, kTolBfloat16 on bf16-rounded inputs.
//
// What changed since k02: with dilation d, query i (at key position p) attends
// j = p + d·t — only keys with j ≡ p (mod d). k02's contiguous span would compute d times
// the allowed scores and mask all but one in d. Instead the keys are split into d residue
// classes c (keys c, c+d, c+2d, …, packed into one panel per class) and so are the queries
// (those with p ≡ c); inside a class, query m attends class keys [m + t_lo, m + t_hi] —
// an undilated band again, run exactly as in k02. t_lo/t_hi come from band_steps(), so
// the clipping at both ends is the shared band.h arithmetic.
// Why: the dilated window is as cheap as the undilated one of the same width (k06, which
// masks inside the layout's tiles, computes every second score only to mask it); at d = 1
// it is k02 with one extra gather of the query rows.
// Measured: docs/benchmarks.md, "The ladder at a glance" (the 2026-11-29 full run: AVX2,
// 2 threads, shared machine; before the 2026-11-30 engine changes, not re-run since), row
// "cpu_k03_window_dilated, window_w128_d2": 27% of the FMA peak per CPU-second at
// n = 16384. Earlier figures and the bf16 twin: optimized/cpu/TUNING.md.
#include "optimized/cpu/common.h"
#include "optimized/cpu/flash_tile_bf16.h"

SPARSEATTN_ISA_BEGIN

bool k03_serves(const Pattern& pattern) { return pattern.spec.kind == PatternKind::window; }

// The kernel for any engine (common.h's Float32Engine, flash_tile_bf16.h's bf16 ones).
template <class Engine, class In>
void k03_body(const In& in, const Outputs& out, const char* name) {
  const Pattern& pattern = *in.pattern;
  require_served(k03_serves(pattern), pattern, name, "window");
  const AttentionShape& s = in.shape;
  const BandParams band = pattern.band();
  const int64_t d = band.dilation;
  const int64_t offset = s.seq_len_k - s.seq_len_q;  // query i sits at key position i + offset

  // Class c holds keys c + d·u, u in [0, num_keys(c)), and the queries whose position is
  // ≡ c (mod d): i = first_query(c) + d·m.
  auto num_keys = [&](int64_t c) { return c < s.seq_len_k ? (s.seq_len_k - c + d - 1) / d : 0; };
  auto first_query = [&](int64_t c) { return (((c - offset) % d) + d) % d; };
  auto num_queries = [&](int64_t c) {
    const int64_t i = first_query(c);
    return i < s.seq_len_q ? (s.seq_len_q - i + d - 1) / d : 0;
  };

  const int64_t num_bh = s.batch * s.num_heads;
  // One panel per (batch, kv head, class), packed once and shared by the g query heads of
  // the kv head (contract §2.7): panel kv_index(b, h)·d + c.
  const int64_t num_bkv = s.batch * s.num_kv_heads;
  std::vector<typename Engine::Panel> panels(static_cast<size_t>(num_bkv * d));
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < num_bkv * d; ++p) {
    const int64_t bkv = p / d, c = p % d;
    Engine::pack(in.k + bkv * s.seq_len_k * s.head_dim, in.v + bkv * s.seq_len_k * s.head_dim_v,
              s.head_dim, s.head_dim_v, num_keys(c), [&](int64_t u) { return c + d * u; },
              panels[p]);
  }

  // Work items: (batch, head, class, tile of kBr class queries).
  std::vector<int64_t> item_start(static_cast<size_t>(d + 1), 0);
  for (int64_t c = 0; c < d; ++c)
    item_start[c + 1] = item_start[c] + (num_queries(c) + kBr - 1) / kBr;
  const int64_t items_per_bh = item_start[d];

  parallel_tiles<Engine>(in, num_bh * items_per_bh, [&](int64_t item, auto& t) {
    const int64_t bh = item / items_per_bh, b = bh / s.num_heads, h = bh % s.num_heads;
    const int64_t local = item % items_per_bh;
    const int64_t c =
        std::upper_bound(item_start.begin(), item_start.end(), local) - item_start.begin() - 1;
    const int64_t m0 = (local - item_start[c]) * kBr;
    const int64_t rows = std::min(kBr, num_queries(c) - m0);
    const int64_t i_first = first_query(c);
    auto query = [&](int64_t r) { return i_first + d * (m0 + r); };
    const auto hv = head_view(in, out, b, h);
    const auto& panel = panels[kv_index(s, b, h) * d + c];
    const uint8_t* key_valid = key_padding_row(pattern, b);

    // Row r attends class keys [first[r], last[r]]: position p = c + d·u_p, t in band.
    int64_t first[kBr], last[kBr];
    int64_t lo = panel.num_keys, hi = -1;                       // union of the rows' ranges
    int64_t common_first = 0, common_last = panel.num_keys - 1;  // their intersection
    for (int64_t r = 0; r < rows; ++r) {
      const BandSteps st = band_steps(band, query(r));
      const int64_t u_p = (st.position - c) / d;  // exact: position ≡ c (mod d)
      first[r] = u_p + st.t_lo;
      last[r] = u_p + st.t_hi;
      if (first[r] <= last[r]) {
        lo = std::min(lo, first[r]);
        hi = std::max(hi, last[r]);
      }
      common_first = std::max(common_first, first[r]);
      common_last = std::min(common_last, last[r]);
    }
    // The tile's rows are class queries d apart, its chunks class keys d apart (ALiBi's
    // p and j, contract §2.8).
    TileMods mods = tile_mods(in.mods, s, b, h, query(0));
    mods.q_pos_step = d;
    t.begin(rows, [&](int64_t r) { return hv.q + query(r) * s.head_dim; }, in.scale, mods);
    for (int64_t u0 = lo; u0 <= hi; u0 += kBc) {
      const int64_t nc = std::min(kBc, hi + 1 - u0);
      const ChunkKeys keys{c + d * u0, d};
      if (u0 >= common_first && u0 + nc - 1 <= common_last && key_valid == nullptr) {
        t.step(panel, u0, nc, NoMask{}, keys);
        continue;
      }
      t.step(panel, u0, nc, [&](int64_t r, float* sc) {
        for (int64_t k = 0; k < nc; ++k)
          if (u0 + k < first[r] || u0 + k > last[r]) sc[k] = kNegInf;
        mask_padded_keys(key_valid, sc, nc, [&](int64_t k) { return c + d * (u0 + k); });
      }, keys);
    }
    t.finish([&](int64_t r, const float* o_row, float lse) {
      write_row(hv, pattern, b, query(r), s.head_dim_v, o_row, lse);
    });
  });
}

void k03_window_dilated(const Inputs& in, const Outputs& out) {
  k03_body<Float32Engine>(in, out, "cpu_k03_window_dilated");
}

void k03_window_dilated_bf16(const InputsBf16& in, const Outputs& out) {
  with_bf16_engine(
      [&](auto engine) { k03_body<decltype(engine)>(in, out, "cpu_k03_window_dilated_bf16"); });
}

SPARSEATTN_ISA_END
