// Which peer convention explains a failing `check`; see convention_hint.h.
#include "api/convention_hint.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "reference/compat.h"

namespace sparseattn::api {

namespace {

// failing[(b*H + h)*Lq + i]: row i of (b, h) has an element outside the tolerance.
std::vector<char> failing_rows(const Tensor<double>& o, const Tensor<double>& ref, Tolerance tol,
                               int64_t rows, int64_t dv) {
  std::vector<char> bad(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t x = 0; x < dv; ++x) {
      const double c = o.data[static_cast<size_t>(r * dv + x)], e = ref.data[static_cast<size_t>(r * dv + x)];
      if (!(std::fabs(c - e) <= tol.atol + tol.rtol * std::fabs(e))) bad[static_cast<size_t>(r)] = 1;
    }
  return bad;
}

}  // namespace

std::string convention_hint(const Pattern& p, const Tensor<double>& o, const Tensor<double>& ref,
                            Tolerance tol, const Tensor<uint8_t>* global_mask) {
  if (o.numel() != ref.numel() || ref.rank() != 4) return "";
  const int64_t B = ref.dim(0), H = ref.dim(1), L = ref.dim(2), dv = ref.dim(3);
  const std::vector<char> bad = failing_rows(o, ref, tol, B * H * L, dv);
  int64_t num_bad = 0;
  for (char c : bad) num_bad += c;
  if (num_bad == 0) return "";
  const PatternSpec& s = p.spec;

  if (s.kind == PatternKind::bigbird && s.random_table && L % s.block_size == 0) {
    BlockListing listing;
    try {
      listing = hf_bigbird_listing(L, s.block_size, H, *s.random_table);
    } catch (const InvalidArgument&) {
      return "";
    }
    // Query blocks whose HF listing repeats a block; do the failing rows lie only there?
    int64_t repeated_blocks = 0, outside = 0;
    std::vector<std::vector<char>> rep(static_cast<size_t>(H), std::vector<char>(static_cast<size_t>(listing.num_blocks), 0));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t qb = 0; qb < listing.num_blocks; ++qb) {
        const auto& l = listing.lists[static_cast<size_t>(h)][static_cast<size_t>(qb)];
        if (std::set<int64_t>(l.begin(), l.end()).size() != l.size()) {
          rep[static_cast<size_t>(h)][static_cast<size_t>(qb)] = 1;
          ++repeated_blocks;
        }
      }
    if (repeated_blocks == 0) return "";
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i)
          if (bad[static_cast<size_t>((b * H + h) * L + i)] && !rep[static_cast<size_t>(h)][static_cast<size_t>(i / s.block_size)]) ++outside;
    if (outside > 0) return "";
    return std::to_string(num_bad) + " failing rows, all in the " + std::to_string(repeated_blocks) +
           " (head, query block) pairs whose HuggingFace BigBird listing names a key block twice "
           "(an all-zero table, as HF uses in eval mode, lists block 0 1 + r times); sparseattn "
           "counts a block once (contract §2.2). If the candidate comes from HuggingFace, "
           "compare with --compat hf-bigbird (contract §3.12, docs/peers.md)";
  }

  // HF Longformer is an encoder (no causal mask), self-attention, undilated (docs/peers.md):
  // a case it could not have produced gets no hint naming it.
  if (s.kind == PatternKind::longformer && p.sizes.seq_len_q == p.sizes.seq_len_k) {
    const int64_t shift = p.sizes.seq_len_k - L;  // query i sits at key position i + shift
    const int64_t Lk = p.sizes.seq_len_k;
    const std::set<int64_t> shared(s.global.begin(), s.global.end());
    auto is_global = [&](int64_t b, int64_t pos) {
      if (pos < 0 || pos >= Lk) return false;
      if (global_mask && global_mask->numel() == B * Lk) return global_mask->data[static_cast<size_t>(b * Lk + pos)] != 0;
      return shared.count(pos) > 0;
    };
    int64_t on_global = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i)
          if (bad[static_cast<size_t>((b * H + h) * L + i)] && is_global(b, i + shift)) ++on_global;
    if (on_global == num_bad)
      return "only rows of global queries differ (" + std::to_string(num_bad) +
             " rows): HuggingFace and the original Longformer compute them with separate "
             "projections; pass --q-global QG.npy --k-global KG.npy --v-global VG.npy "
             "(contract §3.12, docs/peers.md)";
    if (s.causal || s.dilation != 1) return "";
    // What HF does differently that could give failing rows outside the global ones: its
    // globals per batch element (only with more than one), its attention_window the total
    // width (even; the one-sided window is half of it).
    std::string could;
    if (B > 1 && !global_mask)
      could += "its global tokens may differ per batch element (--global-mask G.npy from its "
               "global_attention_mask), ";
    if (!s.window_left && s.window >= 2 && s.window % 2 == 0)
      could += "its attention_window is the total width (--attention-window " +
               std::to_string(s.window) + " means --window " + std::to_string(s.window / 2) +
               "), ";
    if (could.empty()) return "";
    return std::to_string(num_bad) + " failing rows, " + std::to_string(num_bad - on_global) +
           " of them not global queries. If the candidate comes from HuggingFace Longformer: " +
           could + "and its global rows use separate projections (--q-global --k-global "
           "--v-global) (docs/peers.md)";
  }
  return "";
}

}  // namespace sparseattn::api
