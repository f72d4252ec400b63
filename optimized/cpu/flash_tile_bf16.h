// The engines of the bf16-input kernels (kernels_bf16.h): the bf16 twins of flash_tile.h's
// FlashTile, with its interface (begin / step(panel, u0, nc, mask) / finish), so the
// pattern walks of k01 … k06 drive them unchanged (the k0* bodies are templates over an
// engine policy: element type, tile, panel, packer; see common.h's Float32Engine).
//
// Bf16WidenEngine (both builds): WidenTile widens q's bf16 to float32 in begin() and
// the panels are widened when packed (pack_keys_widen, panel_bf16.h); everything else is
// the float32 FlashTile. Used by the avx2 build, on AVX-512 CPUs without AVX512-BF16 and
// where vdpbf16ps is too slow (kBf16DotMinRatio, kernels_bf16.h).
//
// Bf16DotEngine (avx512 build; run only where cpu_has_avx512_bf16() and the process chose
// it by the measured vdpbf16ps rate, see with_bf16_engine): Bf16Tile keeps q, K and V in bf16 and uses vdpbf16ps, which adds two
// bf16 products (exact in float32) into each float32 lane, for both products:
//   S = Q Kᵀ: pairs along head_dim — K packed as [head_dim/2][keys][2] (panel_bf16.h), a
//             32-bit broadcast of q's pair (q[2p], q[2p+1]) against 16 keys' pairs;
//   O += P V: pairs along keys — P rounded to bf16 (round to nearest even, vcvtne2ps2bf16)
//             as FlashAttention does on tensor cores, V re-packed per chunk as
//             [keys/2][columns][2], a broadcast of P's pair (P[2c], P[2c+1]) against 16
//             columns' pairs.
// Scores, the online softmax (m, l), P's row sums and O are float32, as in FlashTile
// (Dao et al. 2022, Alg. 1), with the softmax in base 2: scale·log2(e) is applied to the
// float32 scores as they leave the micro-kernel (folding the scale into the bf16 q would
// round q·scale to 8 bits a second time), P = 2^(s - m) by exp2_nonpositive(), and
// finish() writes lse = m·ln 2 + ln l. Row maxima and sums are vector reductions, P is
// converted to bf16 inside the exp loop, K and V are read in place from block-packed panels
// (chunks on a block, V on an even key), q is interleaved per row group and l kept per lane.
// An odd head_dim or an odd key count is padded with a zero partner: 0·x adds nothing.
// vdpbf16ps and vcvtne2ps2bf16 treat bf16 denormals (|x| < 1.2e-38) as zero and flush
// denormal results to zero: a difference below 1e-38 per product, far inside kTolBfloat16.
//
// Micro-kernels (avx512): R = 8 query rows × kStep = 32 keys (S) or 32 value columns
// (P V): 16 accumulators + 2 K/V vectors + 1 broadcast = 19 of 32 zmm, 16 vdpbf16ps per
// 2 vector loads + 8 broadcasts; each vdpbf16ps does 32 multiply-adds, twice an FMA's 16.
// Determinism: as FlashTile, a row's arithmetic depends only on the chunks fed and their
// order, so outputs are bit-identical for any thread count.
// Measured: docs/benchmarks.md, "Measured: the target points" (2026-11-30, Zen 5 with
// AVX512-BF16, dot engine, 2 threads), row "bf16 dense, head_dim 32 / 64 / 128, n 4096":
// 1.71× the throughput of the float32 kernel at head_dim 64 (threshold 1.6×: met). The
// engine's tuning log and the bf16 twins' figures: optimized/cpu/TUNING.md.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "optimized/cpu/flash_tile.h"
#include "optimized/cpu/isa.h"
#include "optimized/cpu/kernels_bf16.h"
#include "optimized/cpu/panel_bf16.h"
#include "optimized/cpu/simd.h"

SPARSEATTN_ISA_BEGIN

// FlashTile fed bf16 query rows: widened to float32 (exact) before FlashTile::begin.
class WidenTile {
 public:
  WidenTile(int64_t head_dim, int64_t head_dim_v)
      : tile_(head_dim, head_dim_v), head_dim_(head_dim), q_(static_cast<size_t>(kBr * head_dim)) {}

  int64_t rows() const { return tile_.rows(); }

  // row(r) points at query r's head_dim bf16 values.
  template <class RowPtr>
  void begin(int64_t rows, RowPtr row, float scale, const TileMods& mods = TileMods{}) {
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t* qr = row(r);
      for (int64_t d = 0; d < head_dim_; ++d) q_[r * head_dim_ + d] = widen(qr[d]);
    }
    tile_.begin(rows, [&](int64_t r) { return q_.data() + r * head_dim_; }, scale, mods);
  }
  template <class Mask>
  void step(const KeyPanel& panel, int64_t u0, int64_t nc, Mask&& mask,
            ChunkKeys keys = kPanelOrder) {
    tile_.step(panel, u0, nc, mask, resolve_keys(keys, u0));
  }
  template <class Write>
  void finish(Write&& write) {
    tile_.finish(write);
  }

 private:
  FlashTile tile_;
  int64_t head_dim_;
  std::vector<float> q_;  // [kBr][head_dim] the tile's queries, widened
};

// One panel per (batch, kv head) holding every key in order (common.h's pack_all_keys for
// the bf16 engines, indexed by kv_index): the heads packed in parallel, each by Engine::pack.
template <class Engine>
std::vector<typename Engine::Panel> pack_all_heads(const InputsBf16& in) {
  const AttentionShape& s = in.shape;
  std::vector<typename Engine::Panel> panels(static_cast<size_t>(s.batch * s.num_kv_heads));
  const int64_t n = static_cast<int64_t>(panels.size());
#pragma omp parallel for schedule(static)
  for (int64_t bkv = 0; bkv < n; ++bkv)
    Engine::pack(in.k + bkv * s.seq_len_k * s.head_dim, in.v + bkv * s.seq_len_k * s.head_dim_v,
                 s.head_dim, s.head_dim_v, s.seq_len_k, [](int64_t u) { return u; }, panels[bkv]);
  return panels;
}

struct Bf16WidenEngine {
  using Elem = uint16_t;
  using Tile = WidenTile;
  using Panel = KeyPanel;
  template <class KeyAt>
  static void pack(const uint16_t* k, const uint16_t* v, int64_t head_dim, int64_t head_dim_v,
                   int64_t count, KeyAt key_at, Panel& p) {
    pack_keys_widen(k, v, head_dim, head_dim_v, count, key_at, p);
  }
  static std::vector<Panel> pack_all(const InputsBf16& in) {
    return pack_all_heads<Bf16WidenEngine>(in);
  }
};

#if defined(SPARSEATTN_ISA_AVX512)

namespace detail_bf16 {

inline constexpr int kRowGroup = 8;  // R: query rows per micro-kernel call

inline __m512bh as_bh(__m512i x) { return reinterpret_cast<__m512bh&>(x); }
// See detail::pin_in_registers (flash_tile.h): keeps the two K (V) vectors in registers.
inline void pin_in_registers(__m512i& a, __m512i& b) { __asm__("" : "+v"(a), "+v"(b)); }

// s[r][c] = scale · Σ_p (q[r][2p]·k[c][2p] + q[r][2p+1]·k[c][2p+1]) for R rows,
// c in [0, width), width a multiple of kStep. q: the R rows' pairs of bf16 (low half
// first) interleaved, q[p·R + r], so the R broadcasts of one p sit at constant offsets
// from one pointer (flash_tile.h's qk_rows does the same, to keep GCC from spilling R
// index registers). kb: the chunk's keys in blocks of kStep, kb[(c / kStep)·pairs·kStep·2
// + p·kStep·2 + (c % kStep)·2 + e] = k[c][2p + e] (panel_bf16.h).
template <int R>
inline void qk_rows(const uint32_t* q, int64_t pairs, const uint16_t* kb, int64_t width,
                    float scale, float* s) {
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t c0 = 0; c0 < width; c0 += kStep) {
    const uint16_t* k = kb + c0 * pairs * 2;  // block c0 / kStep
    __m512 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < pairs; ++p) {
      __m512i k0 = _mm512_loadu_si512(k + p * kStep * 2);
      __m512i k1 = _mm512_loadu_si512(k + p * kStep * 2 + 32);
      pin_in_registers(k0, k1);
      for (int r = 0; r < R; ++r) {
        const __m512bh qq = as_bh(_mm512_set1_epi32(static_cast<int>(q[p * R + r])));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], qq, as_bh(k0));
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], qq, as_bh(k1));
      }
    }
    for (int r = 0; r < R; ++r) {
      _mm512_storeu_ps(s + r * kBc + c0, _mm512_mul_ps(acc[r][0], vscale));
      _mm512_storeu_ps(s + r * kBc + c0 + 16, _mm512_mul_ps(acc[r][1], vscale));
    }
  }
}

// o[r][:] += Σ_{c < 2·npairs} P[r][c] · v[c][:] for R rows; ldv a multiple of kStep.
// p: [R][kBc / 2] pairs of bf16 probabilities (P[2c], P[2c+1]); the pairs run in
// increasing order for every row (fixed reduction order). vb: the chunk's values paired
// along keys, in column blocks of kStep, vb[(d / kStep)·block_stride + (c / 2)·kStep·2 +
// (d % kStep)·2 + c % 2] = v[c][d] (the panel's vp read in place, or Bf16Tile's copy).
template <int R>
inline void pv_rows(const uint32_t* p, int64_t npairs, const uint16_t* vb, int64_t block_stride,
                    int64_t ldv, float* o) {
  for (int64_t d0 = 0; d0 < ldv; d0 += kStep) {
    const uint16_t* v = vb + d0 / kStep * block_stride;  // column block d0 / kStep
    __m512 acc[R][2];
    for (int r = 0; r < R; ++r) {
      acc[r][0] = _mm512_loadu_ps(o + r * ldv + d0);
      acc[r][1] = _mm512_loadu_ps(o + r * ldv + d0 + 16);
    }
    for (int64_t c = 0; c < npairs; ++c) {
      __m512i v0 = _mm512_loadu_si512(v + c * kStep * 2);
      __m512i v1 = _mm512_loadu_si512(v + c * kStep * 2 + 32);
      pin_in_registers(v0, v1);
      for (int r = 0; r < R; ++r) {
        const __m512bh pp = as_bh(_mm512_set1_epi32(static_cast<int>(p[r * (kBc / 2) + c])));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], pp, as_bh(v0));
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], pp, as_bh(v1));
      }
    }
    for (int r = 0; r < R; ++r) {
      _mm512_storeu_ps(o + r * ldv + d0, acc[r][0]);
      _mm512_storeu_ps(o + r * ldv + d0 + 16, acc[r][1]);
    }
  }
}

// Lane-wise max and fixed-order horizontal reductions by GCC vector operations (the same
// shuffle tree on every thread): GCC 12's _mm512_max_ps, _mm512_reduce_*_ps and
// _mm512_roundscale_ps trip -Wmaybe-uninitialized (an _mm512_undefined_ps() operand).
inline Vec vmax(Vec a, Vec b) { return a > b ? a : b; }
inline Vec fold(Vec v, int step) {
  switch (step) {
    case 8: return __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    case 4: return __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    case 2: return __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    default: return __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  }
}
inline float reduce_max(Vec v) {
  for (int step : {8, 4, 2, 1}) v = vmax(v, fold(v, step));
  return v[0];
}
inline float reduce_add(Vec v) {
  for (int step : {8, 4, 2, 1}) v = v + fold(v, step);
  return v[0];
}

// 2^x per lane for x <= 0 (scores minus the row max, in base-2 units): x = n + f,
// |f| <= 1/2, 2^f by Cephes exp2f's degree-6 polynomial (about 1 ulp), times 2^n by
// vscalefps. Below -126 (including -inf, a masked score) the result is exactly 0.
// About 11 vector operations, against vexp's ~22 (simd.h: clamping to both ends and the
// two-step n·ln2 reduction are not needed for a base-2 argument that is never positive).
inline __m512 exp2_nonpositive(__m512 x) {
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
  // Round to nearest by the 1.5·2^23 trick (exact for |x| < 2^22; vrndscaleps would do
  // the same, but GCC 12's intrinsic trips -Wmaybe-uninitialized).
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  const __m512 n = _mm512_sub_ps(_mm512_add_ps(x, magic), magic);  // -inf stays -inf
  const __m512 f = _mm512_sub_ps(x, n);  // exact
  __m512 p = _mm512_set1_ps(1.535336188319500e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.339887440266574e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618437357674640e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550332471162809e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402264791363012e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931472028550421e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(live, p, n);
}

// Index for vpermt2w re-pairing keys for a chunk that starts at an odd key: from the
// panel's pairs a = (v[2m], v[2m+1]) and b = (v[2m+2], v[2m+3]) of 16 columns, lane i of
// the result is (a's element 2i+1, b's element 2i) = (v[2m+1], v[2m+2]) (bit 5 selects b).
struct RepairIndex {
  alignas(64) uint16_t idx[32];
  constexpr RepairIndex() : idx{} {
    for (int i = 0; i < 16; ++i) {
      idx[2 * i] = static_cast<uint16_t>(2 * i + 1);
      idx[2 * i + 1] = static_cast<uint16_t>(32 + 2 * i);
    }
  }
};
inline constexpr RepairIndex kRepair{};

}  // namespace detail_bf16

static_assert(kStep == 32, "the dot engine's blocks are 32 keys / columns: two zmm of pairs");

class Bf16Tile {
 public:
  Bf16Tile(int64_t head_dim, int64_t head_dim_v)
      : head_dim_(head_dim),
        pairs_(round_up(head_dim, 2) / 2),
        head_dim_v_(head_dim_v),
        ldv_(round_up(head_dim_v, kStep)),
        q_(static_cast<size_t>(kBr * pairs_)),
        s_(static_cast<size_t>(kBr * kBc)),
        p_(static_cast<size_t>(kBr * kBc / 2)),
        o_(static_cast<size_t>(kBr * ldv_)),
        kb_(static_cast<size_t>(kBc * pairs_ * 2)),
        vb_(static_cast<size_t>(kBc * ldv_)),
        m_(kBr),
        l_(static_cast<size_t>(kBr * 16)) {}

  int64_t rows() const { return rows_; }

  // Starts a tile of `rows` (1..kBr) queries; row(r) points at query r's head_dim bf16
  // values, copied as pairs (an odd head_dim's last pair gets a zero partner), the rows of
  // each group of kRowGroup interleaved (qk_rows).
  // mods: as FlashTile::begin, in base-2 units here (the cap, the slope and σ times
  // log2(e), so the pipeline acts on the scores as this engine keeps them).
  template <class RowPtr>
  void begin(int64_t rows, RowPtr row, float scale, const TileMods& mods = TileMods{}) {
    rows_ = rows;
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t* qr = row(r);
      const int64_t r0 = group_start(r), R = group_size(r0);
      uint32_t* qg = q_.data() + r0 * pairs_;
      for (int64_t p = 0; p < pairs_; ++p) qg[p * R + (r - r0)] = q_pair(qr, p);
    }
    start(rows, scale, mods);
  }

  // Consumes panel keys [u0, u0 + nc), 1 <= nc <= kBc; mask(r, s) as in FlashTile::step
  // (s: row r's float32 scores, scaled by scale·log2(e); the masks only write -inf).
  template <class Mask>
  void step(const KeyPanelBf16& panel, int64_t u0, int64_t nc, Mask&& mask,
            ChunkKeys keys = kPanelOrder) {
    run_step(
        panel, u0, nc, mask, keys, /*raw_scores=*/false,
        [&](const uint16_t* kb, int64_t width) {
          for_row_groups([&](auto group, int64_t r0) {
            constexpr int R = decltype(group)::value;
            detail_bf16::qk_rows<R>(q_.data() + r0 * pairs_, pairs_, kb, width, scale_log2_,
                                    s_.data() + r0 * kBc);
          });
        },
        [&](const uint16_t* vb, int64_t v_block, int64_t npairs, int64_t /*width*/) {
          for_row_groups([&](auto group, int64_t r0) {
            constexpr int R = decltype(group)::value;
            detail_bf16::pv_rows<R>(p_.data() + r0 * (kBc / 2), npairs, vb, v_block, ldv_,
                                    o_.data() + r0 * ldv_);
          });
        });
  }

  // write(r, o_row, lse): o_row holds head_dim_v floats of query r's output.
  template <class Write>
  void finish(Write&& write) {
    std::vector<float>& row = s_;  // reuse scratch: the tile is done
    if (static_cast<int64_t>(row.size()) < head_dim_v_) row.resize(head_dim_v_);
    for (int64_t r = 0; r < rows_; ++r) {
      const float* o = o_.data() + r * ldv_;
      const float l = detail_bf16::reduce_add(loadv(l_.data() + r * 16));
      if (l == 0.0f) {
        std::fill(row.begin(), row.begin() + head_dim_v_, 0.0f);
        write(r, row.data(), kNegInf);
        continue;
      }
      const float inv_l = 1.0f / l;
      for (int64_t d = 0; d < head_dim_v_; ++d) row[d] = o[d] * inv_l;
      write(r, row.data(), m_[r] * kLn2 + std::log(l));  // m is in base-2 units
    }
  }

 protected:  // Bf16AmxTile (flash_tile_amx.h) shares the state and the softmax
  static constexpr float kLn2 = 0.693147180559945309f;
  static constexpr float kLog2e = 1.44269504088896341f;

  // Query row qr's pair p (an odd head_dim's last pair gets a zero partner).
  uint32_t q_pair(const uint16_t* qr, int64_t p) const {
    const uint32_t lo = qr[2 * p];
    const uint32_t hi = 2 * p + 1 < head_dim_ ? qr[2 * p + 1] : 0u;
    return lo | hi << 16;
  }

  // The state begin() starts from, once q_ holds the rows (mods: see begin).
  void start(int64_t rows, float scale, const TileMods& mods) {
    rows_ = rows;
    scale_log2_ = scale * kLog2e;  // scores in base-2 units (softmax_update)
    pipeline_ = ScorePipeline(mods, kLog2e);
    const float m0 = mods.sink == kNegInf ? kNegInf : mods.sink * kLog2e;
    std::fill(m_.begin(), m_.begin() + rows, m0);
    std::fill(l_.begin(), l_.begin() + rows * 16, 0.0f);
    // A sink: the running sum starts at exp2(σ·log2 e − m0) = 1, in lane 0 of each row.
    if (m0 != kNegInf)
      for (int64_t r = 0; r < rows; ++r) l_[r * 16] = 1.0f;
    std::fill(o_.begin(), o_.begin() + rows * ldv_, 0.0f);
  }

  // One chunk (step's arguments), the products given by the engine:
  //   qk(kb, width): s_ rows [0, rows_) columns [0, width) = Q·Kᵀ of the chunk's keys kb
  //     (kStep-key blocks, panel_bf16.h), times scale·log2(e) unless raw_scores;
  //   pv(vb, v_block, npairs, width): o_ rows [0, rows_) += P·V, P's pairs [0, npairs)
  //     (those up to width / 2 are zeros), vb the chunk's value pairs in column blocks of
  //     v_block elements.
  // raw_scores: qk leaves Q·Kᵀ unscaled; the row pass multiplies by scale·log2(e) before
  // the pipeline, the same float32 product the dot engine's micro-kernel takes.
  template <class Mask, class Qk, class Pv>
  void run_step(const KeyPanelBf16& panel, int64_t u0, int64_t nc, Mask& mask, ChunkKeys keys,
                bool raw_scores, Qk&& qk, Pv&& pv) {
    keys = resolve_keys(keys, u0);
    const int64_t width = round_up(nc, kStep);
    const int64_t npairs = (nc + 1) / 2;
    // K: in place when the chunk starts on a panel block (dense, block layouts), else
    // copied from two neighbouring blocks.
    const uint16_t* kb = panel.kb.data() + (u0 / kStep) * pairs_ * kStep * 2;
    if (u0 % kStep != 0) {
      copy_keys(panel, u0, width);
      kb = kb_.data();
    }
    // V: the panel's key pairs in place when the chunk starts on an even key, else re-paired
    // — all width / 2 pairs (keys past nc: the panel's, P = 0 there), as the AMX engine
    // reads whole 16-pair tiles and must find panel values, never stale scratch.
    const uint16_t* vb = panel.vp.data() + u0 / 2 * kStep * 2;
    int64_t v_block = panel.ldk / 2 * kStep * 2;
    if (u0 % 2 != 0) {
      repair_values(panel, u0, width / 2);
      vb = vb_.data();
      v_block = kBc / 2 * kStep * 2;
    }
    qk(kb, width);
    const __m512 vscale = _mm512_set1_ps(scale_log2_);
    for (int64_t r = 0; r < rows_; ++r) {
      float* s = s_.data() + r * kBc;
      if (raw_scores)
        for (int64_t c = 0; c < width; c += 16)
          _mm512_storeu_ps(s + c, _mm512_mul_ps(_mm512_loadu_ps(s + c), vscale));
      if (pipeline_.active()) pipeline_.apply(r, s, width, keys);  // softcap, ALiBi
      for (int64_t c = nc; c < width; ++c) s[c] = kNegInf;  // panel padding is no key
      mask(r, s);
      softmax_update(r, s, width, p_.data() + r * (kBc / 2));
    }
    pv(vb, v_block, npairs, width);
  }

  template <int R>
  struct Rows {
    static constexpr int value = R;
  };

  // Row groups: kRowGroup rows each, then one group of the rows left.
  static int64_t group_start(int64_t r) { return r / detail_bf16::kRowGroup * detail_bf16::kRowGroup; }
  int64_t group_size(int64_t r0) const { return std::min<int64_t>(detail_bf16::kRowGroup, rows_ - r0); }

  template <class F>
  void for_row_groups(F&& f) {
    int64_t r0 = 0;
    for (; r0 + detail_bf16::kRowGroup <= rows_; r0 += detail_bf16::kRowGroup)
      f(Rows<detail_bf16::kRowGroup>{}, r0);
    tail_group<detail_bf16::kRowGroup - 1>(rows_ - r0, r0, f);
  }
  template <int R, class F>
  static void tail_group(int64_t left, int64_t r0, F& f) {
    if constexpr (R > 0) {
      if (left == R) return f(Rows<R>{}, r0);
      tail_group<R - 1>(left, r0, f);
    }
  }

  // The chunk's keys [u0, u0 + width) as kStep-key blocks in kb_, for a chunk that does
  // not start on a panel block: block x's pair row p is the tail of panel block b's
  // row p followed by the head of block b + 1's (u0 + width <= ldk: both exist).
  void copy_keys(const KeyPanelBf16& panel, int64_t u0, int64_t width) {
    const int64_t block = pairs_ * kStep * 2;
    for (int64_t c0 = 0; c0 < width; c0 += kStep) {
      const int64_t b = (u0 + c0) / kStep, off = (u0 + c0) % kStep;
      const uint16_t* src0 = panel.kb.data() + b * block + off * 2;
      const uint16_t* src1 = panel.kb.data() + (b + 1) * block;
      uint16_t* dst = kb_.data() + c0 / kStep * block;
      for (int64_t p = 0; p < pairs_; ++p) {
        std::memcpy(dst + p * kStep * 2, src0 + p * kStep * 2, (kStep - off) * 4);
        std::memcpy(dst + p * kStep * 2 + (kStep - off) * 2, src1 + p * kStep * 2, off * 4);
      }
    }
  }

  // The chunk's key pairs (u0 + 2c, u0 + 2c + 1), c < npairs, for an odd u0: lane i of pair
  // c takes the second half of panel pair (u0 - 1) / 2 + c and the first half of the next
  // (vpermt2w, detail_bf16::kRepair), into vb_ ([ldv / kStep][kBc / 2][kStep][2]).
  void repair_values(const KeyPanelBf16& panel, int64_t u0, int64_t npairs) {
    const __m512i idx = _mm512_load_si512(detail_bf16::kRepair.idx);
    const int64_t panel_block = panel.ldk / 2 * kStep * 2;
    for (int64_t d0 = 0; d0 < ldv_; d0 += kStep) {
      const uint16_t* src = panel.vp.data() + d0 / kStep * panel_block + (u0 - 1) / 2 * kStep * 2;
      uint16_t* dst = vb_.data() + d0 / kStep * (kBc / 2 * kStep * 2);
      for (int64_t c = 0; c < npairs; ++c) {
        const uint16_t* a = src + c * kStep * 2;  // pair (u0 - 1) / 2 + c, then the next
        for (int h = 0; h < 2; ++h) {              // columns 0..15, 16..31
          const __m512i va = _mm512_loadu_si512(a + h * 32);
          const __m512i vn = _mm512_loadu_si512(a + kStep * 2 + h * 32);
          _mm512_storeu_si512(dst + c * kStep * 2 + h * 32, _mm512_permutex2var_epi16(va, idx, vn));
        }
      }
    }
  }

  // FlashTile's online-softmax update of row r (flash_tile.h) in base 2: s holds the
  // scores times log2(e) (folded into the scale), m is their running max, P = 2^(s - m)
  // (= e^(score - m·ln 2)), and finish() writes lse = m·ln 2 + ln l — as FlashAttention
  // does (softmax_scale_log2). P is written rounded to bf16 (round to nearest even,
  // vcvtne2ps2bf16) into p as pairs; l sums the float32 P, kept per lane (16 partial sums
  // per row, added once in finish). The row max is a vector reduction
  // (detail_bf16::reduce_max: a fixed shuffle tree, the same on every thread): the scalar
  // lane loops of simd.h's hmax/hsum cost as much as a row's whole S = Q·Kᵀ once
  // vdpbf16ps halved it.
  void softmax_update(int64_t r, const float* s, int64_t width, uint32_t* p) {
    Vec vmax = splat(kNegInf);
    for (int64_t c = 0; c < width; c += 16) vmax = detail_bf16::vmax(vmax, loadv(s + c));
    const float m_old = m_[r];
    const float m_chunk = detail_bf16::reduce_max(vmax);
    const float m_new = m_chunk > m_old ? m_chunk : m_old;
    if (m_new == kNegInf) {  // nothing allowed yet: P = 0, state unchanged
      std::fill(p, p + width / 2, 0u);
      return;
    }
    const __m512 shift = _mm512_set1_ps(m_new);
    __m512 vsum = _mm512_loadu_ps(l_.data() + r * 16);
    if (m_new != m_old) {
      // exp2_nonpositive rather than libm's exp2f (a call per row and chunk: 2% of a
      // BigBird entry); m_old - m_new < 0, and -inf - m_new gives exactly 0.
      const float alpha =
          _mm512_cvtss_f32(detail_bf16::exp2_nonpositive(_mm512_set1_ps(m_old - m_new)));
      vsum = _mm512_mul_ps(vsum, _mm512_set1_ps(alpha));
      float* o = o_.data() + r * ldv_;
      for (int64_t d = 0; d < ldv_; ++d) o[d] *= alpha;
    }
    for (int64_t c = 0; c < width; c += 32) {
      const __m512 p0 = detail_bf16::exp2_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(s + c), shift));
      const __m512 p1 =
          detail_bf16::exp2_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(s + c + 16), shift));
      vsum = _mm512_add_ps(_mm512_add_ps(vsum, p0), p1);
      // (hi, lo) -> lo in the low half: pairs (P[c], P[c+1]), ...
      const __m512bh b = _mm512_cvtne2ps_pbh(p1, p0);
      _mm512_storeu_si512(p + c / 2, reinterpret_cast<const __m512i&>(b));
    }
    _mm512_storeu_ps(l_.data() + r * 16, vsum);
    m_[r] = m_new;
  }

  int64_t head_dim_, pairs_, head_dim_v_, ldv_;
  int64_t rows_ = 0;
  float scale_log2_ = 1.0f;  // scale · log2(e)
  ScorePipeline pipeline_;   // softcap and ALiBi in base-2 units (inactive: plain)
  std::vector<uint32_t> q_;  // [kBr][pairs] the tile's queries as bf16 pairs, per row group
                             // [pairs][R] (interleaved)
  std::vector<float> s_;     // [kBr][kBc] scaled scores (float32)
  std::vector<uint32_t> p_;  // [kBr][kBc / 2] P rounded to bf16, in pairs
  std::vector<float> o_;     // [kBr][ldv] unnormalized output
  std::vector<uint16_t> kb_;  // [kBc / kStep][pairs][kStep][2] a chunk's keys off the blocks
  std::vector<uint16_t> vb_;  // [ldv / kStep][kBc / 2][kStep][2] a chunk's re-paired values
  std::vector<float> m_;     // [kBr] running max (base 2)
  std::vector<float> l_;     // [kBr][16] running sum, per lane
};

struct Bf16DotEngine {
  using Elem = uint16_t;
  using Tile = Bf16Tile;
  using Panel = KeyPanelBf16;
  template <class KeyAt>
  static void pack(const uint16_t* k, const uint16_t* v, int64_t head_dim, int64_t head_dim_v,
                   int64_t count, KeyAt key_at, Panel& p) {
    pack_keys_bf16(k, v, head_dim, head_dim_v, count, key_at, p);
  }
  static std::vector<Panel> pack_all(const InputsBf16& in) {
    return pack_all_heads<Bf16DotEngine>(in);
  }
};

#endif  // SPARSEATTN_ISA_AVX512

SPARSEATTN_ISA_END

// The AMX engine (Bf16AmxTile derives from Bf16Tile), which with_bf16_engine picks first.
#define SPARSEATTN_FLASH_TILE_BF16_BODY
#include "optimized/cpu/flash_tile_amx.h"

SPARSEATTN_ISA_BEGIN

// Calls f(Engine{}) with the engine this call uses, in the avx512 build: the AMX engine
// (flash_tile_amx.h) where bf16_amx_engine_selected() (kernels_bf16.h: AMX-BF16 usable and
// granted, no test forcing an engine, no SPARSEATTN_BF16_ENGINE naming one); else the dot
// engine on a CPU with AVX512-BF16 where this process chose it (bf16_engine_choice,
// kernels_bf16.h: measured rates or SPARSEATTN_BF16_ENGINE) or where a test forces it; the
// widening engine otherwise (or where a test forces widening). The avx2 build never
// contains a bf16 or AMX instruction; the avx512 build runs its dot engine only after the
// cpuid check and its AMX engine only after the cpuid, XCR0 and permission checks, so no
// CPU without the instructions executes one.
template <class F>
void with_bf16_engine(F&& f) {
#if defined(SPARSEATTN_ISA_AVX512)
  if (bf16_amx_engine_selected()) return f(Bf16AmxEngine{});
  if (cpu_has_avx512_bf16() && bf16_dot_engine_selected()) return f(Bf16DotEngine{});
#endif
  f(Bf16WidenEngine{});
}

SPARSEATTN_ISA_END
