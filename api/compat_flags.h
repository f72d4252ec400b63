// The flags of the compatibility modes (contract §3.12; docs/peers.md): `--compat
// hf-bigbird`, Longformer's per-batch `--global-mask` and global projections `--q-global
// --k-global --v-global`, and `--attention-window` (HF's total width). Shared by `attend`
// and `check` (and `--attention-window` by `mask`), so they read them the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "api/inputs.h"
#include "api/pattern_flags.h"
#include "reference/attention.h"
#include "reference/backward/compat_grad.h"

namespace sparseattn::api {

struct CompatFlags {
  std::string compat;       // "" or "hf-bigbird"
  std::string global_mask;  // G.npy [batch, seq_len_k], 1 = global
  std::string q_global, k_global, v_global;  // shaped like q, k, v
  int64_t attention_window = 0;              // HF's total width 2W
  CLI::Option* attention_window_flag = nullptr;  // given or not
  CLI::Option* window_flag = nullptr;            // --window, to refuse both
};

// Adds --attention-window to `cmd` (after add_pattern_flags).
void add_attention_window_flag(CLI::App* cmd, CompatFlags& flags);
// Adds --compat, --global-mask, --q-global, --k-global, --v-global and --attention-window.
void add_compat_flags(CLI::App* cmd, CompatFlags& flags);

// --attention-window N sets the pattern's one-sided window W = N / 2. Throws
// InvalidArgument("--attention-window", ...) for an odd or negative N, or with --window.
void apply_attention_window(const CompatFlags& flags, PatternFlags& pattern);

// Whether any compatibility computation is asked for (beyond --attention-window).
bool compat_requested(const CompatFlags& flags);

// The compatibility mode with its tensors in memory: what the flags' files hold
// (read_compat) or what the Python binding was given. Tensors are bhsd like q, k, v.
struct CompatRequest {
  std::string compat;                            // "" or "hf-bigbird"
  std::optional<Tensor<uint8_t>> global_mask;    // [batch, seq_len_k], 1 = global
  std::optional<Tensor<double>> q_global, k_global, v_global;  // shaped like q, k, v
  bool longformer() const {
    return global_mask.has_value() || q_global.has_value() || k_global.has_value() ||
           v_global.has_value();
  }
  bool projections() const { return q_global.has_value(); }
};

// Reads the files the flags name. With `bshd` the projections' files are [B, L, H, d]
// (rank 3 [L, H, d]: batch 1) like q, k, v under --layout bshd, and come back bhsd.
// Throws InvalidArgument naming the flag: --compat other than hf-bigbird, --compat with
// a Longformer flag, projections not all three, a non-finite projection, a bad file.
CompatRequest read_compat(const CompatFlags& flags, bool bshd);

// Attention under the compatibility mode `request` asks for, by `impl`:
//   hf-bigbird: "a1_dense_masked" (the float64 definition, hf_listing_oracle) or
//     "cpu_k07_hf_listing" (float32; o/lse widened exactly);
//   Longformer: any registry kernel serving each batch element's longformer pattern,
//     run per batch element (reference/compat.h, longformer_compat).
// Throws InvalidArgument naming the flag for a bad combination or shape.
AttentionResult compat_attend(const CompatRequest& request, const AttentionInputs& in,
                              const double* scale, const std::string& impl);

// The float64 gradients of that mode (contract §7.4–§7.5, reference/backward/compat_grad.h)
// for dO `dout` ([B, H, L_q, d_v], bhsd, checked_dout's): `oracle` names the definition
// ("hf_listing_grad" or "longformer_compat_grad"); dq_global, dk_global, dv_global are set
// under the global projections only. Throws InvalidArgument as compat_attend does.
struct ReferenceGradients {
  std::string oracle;
  CompatGradientResult g;
};
ReferenceGradients compat_gradients(const CompatRequest& request, const AttentionInputs& in,
                                 const double* scale, const Tensor<double>& dout);

}  // namespace sparseattn::api
