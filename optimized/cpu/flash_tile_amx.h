// The AMX engine of the bf16-input kernels (kernels_bf16.h): Bf16AmxTile is Bf16Tile
// (flash_tile_bf16.h) with its two products on Intel AMX tiles (TDPBF16PS: a 16×16 float32
// tile C += A·B, A 16 rows × 16 bf16 pairs, B 16 pairs × 16 columns × 2 bf16), and the same
// contract: kTolBfloat16 against the oracle on bf16-rounded inputs (contract §4.3),
// bit-identical for any thread count. Everything else — the panels, the chunk's key copy
// and value re-pairing, the base-2 online softmax with P rounded to bf16 (round to nearest
// even), float32 S, O, m, l, finish() — is Bf16Tile's own code (Bf16Tile::run_step).
//   S = Q·Kᵀ: A = 16 query rows of q_, stored row-major as pairs [kBr][pairs] (not
//             interleaved as the dot engine's), B = the K panel block read in place,
//             pair row p of keys 0–15 at p·128 B and keys 16–31 at +64 B (panel_bf16.h's
//             [pairs][kStep][2] is AMX's VNNI layout), C = 4 tiles of 16 keys stored to s_
//             unscaled; run_step multiplies by scale·log2(e) (the dot engine's float32
//             product) before the pipeline and the softmax.
//   O += P·V: A = 16 rows of P's pairs p_ ([kBr][kBc/2]: 16 key pairs per tile row),
//             B = the V panel's key pairs (vp, [ldv/kStep][ldk/2][kStep][2]) read in place,
//             C = O loaded from o_ (already rescaled by α in softmax_update), accumulated,
//             stored back.
// Tiles (one configuration per head_dim, per thread, loaded in begin()): 0–3 C (16 × 16
// float32), 4 A and 5 B (16 × 64 B), 6 and 7 the head_dim tail of S = Q·Kᵀ (A: 16 rows ×
// (pairs % 16)·4 B, B: pairs % 16 rows), so no tile row reads past q_'s row or a K block.
// Edges: a row group of fewer than 16 rows computes 16; begin() zeroes q_, P and O of the
// rows past rows_ in the last group, so they hold zeros and are never written out. A chunk
// of nc < 64 keys computes width = nc rounded up to kStep (the dot engine's width: the keys
// past nc are the panel's and score -inf, P = 0); P·V reads width / 2 key pairs, whole
// 16-pair tiles, from the panel (or re-paired ones, run_step), never past ldk (panel_bf16.h
// leaves kStep spare keys). Columns: ldv is a multiple of kStep = two C tiles.
// Numerics: the same products as the dot engine (each bf16·bf16 exact in float32), summed
// in the tile unit's order — per TDPBF16PS, C += a₀b₀ + a₁b₁ per pair, 16 pairs in turn, with
// round-to-nearest-even and denormals flushed to zero (as vdpbf16ps) — so not bit-identical
// to the dot engine, within kTolBfloat16 of the oracle as both are (docs/numerics.md).
// Use: with_bf16_engine() picks it first when bf16_amx_engine_selected() (kernels_bf16.h),
// which requires amx_available(): the CPU has AMX-TILE, AMX-BF16 and AVX512-BF16 — P's
// conversion is vcvtne2ps2bf16 — XCR0 enables the tile state, and the Linux kernel granted it
// (arch_prctl(ARCH_REQ_XCOMP_PERM), isa.cpp), so no AMX instruction runs without them. begin() loads the tile configuration (another library
// in the process, oneDNN say, may have configured this thread's tiles differently);
// finish() and the destructor release the tiles (TILERELEASE).
// Measured: docs/benchmarks.md, "Every target in one run, after this round's changes:
// 2026-12-02 08:47, Intel Xeon" (idle, 2 threads, per CPU-second): bf16 / float32 2.08×
// dense head_dim 64 and 2.44× head_dim 128 at n 4096, 1.35× window w256 and 1.49× BigBird
// b64 r3 at n 16384 (threshold 1.6×: met for dense d 64 and 128). The engine's own A/B
// against dot and widen: the AMX paragraph before it. Tuning log: optimized/cpu/TUNING.md.
//
// Include flash_tile_bf16.h, not this file: it is read there, between Bf16Tile and
// with_bf16_engine, inside no ISA region.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "optimized/cpu/flash_tile.h"
#include "optimized/cpu/isa_target.h"
#include "optimized/cpu/panel_bf16.h"

#if !defined(SPARSEATTN_FLASH_TILE_BF16_BODY)
#error "include optimized/cpu/flash_tile_bf16.h, which reads this file after Bf16Tile"
#endif

SPARSEATTN_ISA_BEGIN

#if defined(SPARSEATTN_ISA_AVX512)

namespace detail_amx {

inline constexpr int kTileRows = 16;   // M: query rows of one C tile
inline constexpr int kTilePairs = 16;  // K: bf16 pairs of one A row (64 B)
inline constexpr int kTileCols = 16;   // N: float32 columns of one C tile (64 B)
static_assert(kBr % kTileRows == 0, "a tile's rows are whole 16-row groups");
static_assert(kBc == 4 * kTileCols, "S of one row group is four C tiles");
static_assert(kBc / 2 % kTilePairs == 0 && kStep / 2 % kTilePairs == 0,
              "a chunk's key pairs are whole A tiles");
static_assert(kStep == 2 * kTileCols, "a panel block is two B tiles wide");

// The tiles, by number (GCC's _tile_* macros paste the number into the register name, so
// they take literals): tmm0-3 the C tiles, 4 A, 5 B, 6 A's head_dim tail, 7 B's.

// LDTILECFG's 64-byte operand, palette 1 (Intel SDM vol. 1, ch. 18, "Tile configuration").
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile i
  uint8_t rows[16] = {};    // rows of tile i
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

// The configuration for q rows of `pairs` pairs: see the file's header.
inline TileConfig config_for(int64_t pairs) {
  TileConfig c;
  for (int t : {0, 1, 2, 3, 4, 5}) {
    c.rows[t] = kTileRows;
    c.colsb[t] = 64;
  }
  const int tail = static_cast<int>(pairs % kTilePairs);
  if (tail != 0) {
    c.rows[6] = kTileRows;
    c.colsb[6] = static_cast<uint16_t>(tail * 4);
    c.rows[7] = static_cast<uint8_t>(tail);
    c.colsb[7] = 64;
  }
  return c;
}

// s[r][c] = Σ_p q[r][p]·k[c][p] (pairs, unscaled) for 16 rows and NT·16 keys c (NT = 2 or
// 4: one or two panel blocks). q: 16 rows of `pairs` pairs, row stride pairs·4 B. kb: the
// first block's pair rows, [pairs][kStep][2], the next block pairs·kStep·2 elements on.
// s: row stride kBc floats.
template <int NT>
inline void qk_tiles(const uint32_t* q, int64_t pairs, const uint16_t* kb, float* s) {
  const int64_t q_stride = pairs * 4, k_stride = kStep * 2 * 2, s_stride = kBc * 4;
  const int64_t block = pairs * kStep * 2;
  // Key tile t: block t / 2, keys 16·(t % 2) onward (32 bf16 = 64 B into the pair row).
  auto key_tile = [&](int t, int64_t p0) { return kb + t / 2 * block + p0 * kStep * 2 + t % 2 * 32; };
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (NT == 4) {
    _tile_zero(2);
    _tile_zero(3);
  }
  int64_t p0 = 0;
  for (; p0 + kTilePairs <= pairs; p0 += kTilePairs) {
    _tile_loadd(4, q + p0, q_stride);
    _tile_loadd(5, key_tile(0, p0), k_stride);
    _tile_dpbf16ps(0, 4, 5);
    _tile_loadd(5, key_tile(1, p0), k_stride);
    _tile_dpbf16ps(1, 4, 5);
    if constexpr (NT == 4) {
      _tile_loadd(5, key_tile(2, p0), k_stride);
      _tile_dpbf16ps(2, 4, 5);
      _tile_loadd(5, key_tile(3, p0), k_stride);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  if (p0 < pairs) {  // the last pairs % 16 pairs: the tail tiles' shorter rows / fewer rows
    _tile_loadd(6, q + p0, q_stride);
    _tile_loadd(7, key_tile(0, p0), k_stride);
    _tile_dpbf16ps(0, 6, 7);
    _tile_loadd(7, key_tile(1, p0), k_stride);
    _tile_dpbf16ps(1, 6, 7);
    if constexpr (NT == 4) {
      _tile_loadd(7, key_tile(2, p0), k_stride);
      _tile_dpbf16ps(2, 6, 7);
      _tile_loadd(7, key_tile(3, p0), k_stride);
      _tile_dpbf16ps(3, 6, 7);
    }
  }
  _tile_stored(0, s, s_stride);
  _tile_stored(1, s + kTileCols, s_stride);
  if constexpr (NT == 4) {
    _tile_stored(2, s + 2 * kTileCols, s_stride);
    _tile_stored(3, s + 3 * kTileCols, s_stride);
  }
}

// o[r][d] += Σ_{c < 2·npairs} P[r][c]·v[c][d] for 16 rows and NT·16 columns d (NT = 2 or
// 4: one or two column blocks), npairs a multiple of 16. p: [16][kBc / 2] pairs. vb: the
// first column block's key pairs [pairs][kStep][2], the next v_block elements on.
// o: row stride ldv floats.
template <int NT>
inline void pv_tiles(const uint32_t* p, int64_t npairs, const uint16_t* vb, int64_t v_block,
                     int64_t ldv, float* o) {
  const int64_t p_stride = kBc / 2 * 4, v_stride = kStep * 2 * 2, o_stride = ldv * 4;
  // Column tile t: block t / 2, columns 16·(t % 2) onward.
  auto value_tile = [&](int t, int64_t c0) { return vb + t / 2 * v_block + c0 * kStep * 2 + t % 2 * 32; };
  _tile_loadd(0, o, o_stride);
  _tile_loadd(1, o + kTileCols, o_stride);
  if constexpr (NT == 4) {
    _tile_loadd(2, o + 2 * kTileCols, o_stride);
    _tile_loadd(3, o + 3 * kTileCols, o_stride);
  }
  for (int64_t c0 = 0; c0 < npairs; c0 += kTilePairs) {
    _tile_loadd(4, p + c0, p_stride);
    _tile_loadd(5, value_tile(0, c0), v_stride);
    _tile_dpbf16ps(0, 4, 5);
    _tile_loadd(5, value_tile(1, c0), v_stride);
    _tile_dpbf16ps(1, 4, 5);
    if constexpr (NT == 4) {
      _tile_loadd(5, value_tile(2, c0), v_stride);
      _tile_dpbf16ps(2, 4, 5);
      _tile_loadd(5, value_tile(3, c0), v_stride);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  _tile_stored(0, o, o_stride);
  _tile_stored(1, o + kTileCols, o_stride);
  if constexpr (NT == 4) {
    _tile_stored(2, o + 2 * kTileCols, o_stride);
    _tile_stored(3, o + 3 * kTileCols, o_stride);
  }
}

}  // namespace detail_amx

class Bf16AmxTile : public Bf16Tile {
 public:
  Bf16AmxTile(int64_t head_dim, int64_t head_dim_v)
      : Bf16Tile(head_dim, head_dim_v), config_(detail_amx::config_for(pairs_)) {}
  ~Bf16AmxTile() { release(); }
  Bf16AmxTile(const Bf16AmxTile&) = delete;
  Bf16AmxTile& operator=(const Bf16AmxTile&) = delete;

  // As Bf16Tile::begin; q_ holds the rows' pairs row-major ([kBr][pairs]), and the rows of
  // the last 16-row group past `rows` are zeros (q, P, O), so the tiles never read stale
  // values there.
  template <class RowPtr>
  void begin(int64_t rows, RowPtr row, float scale, const TileMods& mods = TileMods{}) {
    const int64_t rows16 = round_up(rows, detail_amx::kTileRows);
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t* qr = row(r);
      for (int64_t p = 0; p < pairs_; ++p) q_[r * pairs_ + p] = q_pair(qr, p);
    }
    std::fill(q_.begin() + rows * pairs_, q_.begin() + rows16 * pairs_, 0u);
    std::fill(p_.begin() + rows * (kBc / 2), p_.begin() + rows16 * (kBc / 2), 0u);
    start(rows, scale, mods);
    std::fill(o_.begin() + rows * ldv_, o_.begin() + rows16 * ldv_, 0.0f);
    _tile_loadconfig(&config_);
    configured_ = true;
  }

  template <class Mask>
  void step(const KeyPanelBf16& panel, int64_t u0, int64_t nc, Mask&& mask,
            ChunkKeys keys = kPanelOrder) {
    using namespace detail_amx;
    const int64_t groups = round_up(rows_, kTileRows);
    run_step(
        panel, u0, nc, mask, keys, /*raw_scores=*/true,
        [&](const uint16_t* kb, int64_t width) {
          const int64_t block = pairs_ * kStep * 2;
          for (int64_t r0 = 0; r0 < groups; r0 += kTileRows) {
            const uint32_t* q = q_.data() + r0 * pairs_;
            float* s = s_.data() + r0 * kBc;
            int64_t c0 = 0;
            for (; c0 + 4 * kTileCols <= width; c0 += 4 * kTileCols)
              qk_tiles<4>(q, pairs_, kb + c0 / kStep * block, s + c0);
            if (c0 < width) qk_tiles<2>(q, pairs_, kb + c0 / kStep * block, s + c0);
          }
        },
        [&](const uint16_t* vb, int64_t v_block, int64_t /*npairs*/, int64_t width) {
          for (int64_t r0 = 0; r0 < groups; r0 += kTileRows) {
            const uint32_t* p = p_.data() + r0 * (kBc / 2);
            float* o = o_.data() + r0 * ldv_;
            int64_t d0 = 0;
            for (; d0 + 4 * kTileCols <= ldv_; d0 += 4 * kTileCols)
              pv_tiles<4>(p, width / 2, vb + d0 / kStep * v_block, v_block, ldv_, o + d0);
            if (d0 < ldv_) pv_tiles<2>(p, width / 2, vb + d0 / kStep * v_block, v_block, ldv_, o + d0);
          }
        });
  }

  template <class Write>
  void finish(Write&& write) {
    release();  // before the writes: no tile is used after the last step
    Bf16Tile::finish(write);
  }

 private:
  void release() {
    if (configured_) _tile_release();
    configured_ = false;
  }

  detail_amx::TileConfig config_;  // per head_dim; loaded on the thread running begin()
  bool configured_ = false;
};

// The dot engine's policy (element type, panels — already AMX's layouts — and packer)
// with the AMX tile.
struct Bf16AmxEngine : Bf16DotEngine {
  using Tile = Bf16AmxTile;
  static std::vector<Panel> pack_all(const InputsBf16& in) {
    return pack_all_heads<Bf16AmxEngine>(in);
  }
};

#endif  // SPARSEATTN_ISA_AVX512

SPARSEATTN_ISA_END
