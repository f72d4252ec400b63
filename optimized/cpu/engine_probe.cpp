// The float32 engine's parts timed alone, hot in cache (engine_probe.h), for the active
// SIMD build. The inputs are seeded normal values (a softmax of N(0, 1)·scale scores, as a
// real head's), so the exp sees ordinary arguments; the results feed a checksum the
// compiler cannot drop.
#include "optimized/cpu/engine_probe.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/error.h"
#include "optimized/cpu/flash_tile.h"
#include "optimized/cpu/thread_clock.h"

SPARSEATTN_ISA_BEGIN

namespace {

// Best of `repeats` CPU times of f().
template <class F>
double best_of(int repeats, F&& f) {
  double best = 0.0;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = thread_cpu_seconds();
    f();
    const double t = thread_cpu_seconds() - t0;
    if (r == 0 || t < best) best = t;
  }
  return best;
}

// Calls f(Rows<R>) for the tile's row groups, as FlashTile::for_row_groups does for a
// full tile (kBr is a multiple of kRowGroup on both builds, except avx2's 64 = 10·6 + 4).
template <int R>
struct Rows {
  static constexpr int value = R;
};
template <class F>
void full_tile_groups(F&& f) {
  int64_t r0 = 0;
  for (; r0 + kRowGroup <= kBr; r0 += kRowGroup) f(Rows<kRowGroup>{}, r0);
  if constexpr (kBr % kRowGroup != 0) f(Rows<kBr % kRowGroup>{}, r0);
}

}  // namespace

EngineProbe engine_probe(int64_t head_dim, int64_t chunks, int repeats) {
  require(head_dim >= 1 && head_dim <= 1024, "head_dim", head_dim, "1 … 1024");
  require(chunks >= 1, "chunks", chunks, ">= 1");
  require(repeats >= 1, "repeats", repeats, ">= 1");
  const int64_t d = head_dim, ldv = round_up(d, kStep);
  constexpr int64_t kPanelChunks = 16;
  const int64_t n = kPanelChunks * kBc;

  std::mt19937 rng(20261202);
  std::normal_distribution<float> normal;
  std::vector<float> q(static_cast<size_t>(kBr * d)), k(static_cast<size_t>(n * d)),
      v(static_cast<size_t>(n * d));
  for (float& x : q) x = normal(rng);
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);

  KeyPanel panel;
  init_panel(panel, d, d, n, v.data(), /*in_order=*/true);
  for (int64_t u0 = 0; u0 < panel.ldk; u0 += kStep)
    pack_block(panel, k.data(), v.data(), [](int64_t u) { return u; }, u0);

  // The micro-kernels' operands: q interleaved per row group (qk_rows), one chunk's keys
  // (the panel's first blocks), P as plain floats in (0, 1), α = 1.
  AlignedFloats qi(static_cast<size_t>(kBr * d)), s(static_cast<size_t>(kBr * kBc)),
      o(static_cast<size_t>(kBr * ldv), 0.0f), alpha(static_cast<size_t>(kBr), 1.0f);
  full_tile_groups([&](auto group, int64_t r0) {
    constexpr int R = decltype(group)::value;
    for (int r = 0; r < R; ++r)
      for (int64_t x = 0; x < d; ++x) qi[r0 * d + x * R + r] = q[(r0 + r) * d + x];
  });
  AlignedFloats p(s.size());
  for (float& x : p) x = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);

  EngineProbe out;
  out.head_dim = d;
  const double chunk_flops = 2.0 * kBr * kBc * static_cast<double>(d);
  out.qk_flops = out.pv_flops = chunk_flops * static_cast<double>(chunks);
  out.step_flops = 2.0 * out.qk_flops;
  float checksum = 0.0f;

  out.qk_seconds = best_of(repeats, [&] {
    for (int64_t i = 0; i < chunks; ++i)
      full_tile_groups([&](auto group, int64_t r0) {
        constexpr int R = decltype(group)::value;
        detail::qk_rows<R>(qi.data() + r0 * d, d, panel.kb.get(), kBc, s.data() + r0 * kBc);
      });
    checksum += s[0];
  });
  out.pv_seconds = best_of(repeats, [&] {
    for (int64_t i = 0; i < chunks; ++i)
      full_tile_groups([&](auto group, int64_t r0) {
        constexpr int R = decltype(group)::value;
        detail::pv_rows<R>(p.data() + r0 * kBc, kBc, panel.v, panel.v_row, panel.v_block, ldv,
                           alpha.data() + r0, o.data() + r0 * ldv);
      });
    checksum += o[0];
  });
  FlashTile tile(d, d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  out.step_seconds = best_of(repeats, [&] {
    tile.begin(kBr, [&](int64_t r) { return q.data() + r * d; }, scale);
    for (int64_t i = 0; i < chunks; ++i)
      tile.step(panel, (i % kPanelChunks) * kBc, kBc, [](int64_t, float*) {});
    tile.finish([&](int64_t, const float* row, float lse) { checksum += row[0] + lse; });
  });
  // A value the caller never sees but the optimizer must assume it does.
  __asm__ volatile("" : : "r"(&checksum) : "memory");
  return out;
}

SPARSEATTN_ISA_END
