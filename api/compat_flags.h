// The flags of the compatibility modes (contract §3.12; docs/peers.md): `--compat
// hf-bigbird`, Longformer's per-batch `--global-mask` and global projections `--q-global
// --k-global --v-global`, and `--attention-window` (HF's total width). Shared by `attend`
// and `check` (and `--attention-window` by `mask`), so they read them the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "api/inputs.h"
#include "api/pattern_flags.h"
#include "reference/attention.h"

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

// Attention under the compatibility mode the flags ask for, by `impl`:
//   --compat hf-bigbird: "a1_dense_masked" (the float64 definition, hf_listing_oracle) or
//     a registry entry of HF's listing, named *_hf_listing ("cpu_k07_hf_listing", float32;
//     o/lse widened exactly), run on the pattern with every repeat counted;
//   Longformer flags: any registry kernel serving each batch element's longformer pattern,
//     run per batch element (reference/compat.h, longformer_compat).
// Throws InvalidArgument naming the flag for a bad combination or file.
AttentionResult compat_attend(const CompatFlags& flags, const AttentionInputs& in,
                              const double* scale, const std::string& impl);

}  // namespace sparseattn::api
