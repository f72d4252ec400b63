// sparseattn mask — writes the pattern's allowed mask, 1 = query i may attend key j.
//
//   sparseattn mask --seq-len N [--seq-len-k M] [--num-heads H] --out M.npy
//   sparseattn mask --cu-seqlens-q CQ.npy --cu-seqlens-k CK.npy [--num-heads H] --out M.npy
//                   (a packed batch: [total_q, total_k], block diagonal; contract §2.10)
//                   [--mask-dtype uint8|bool] [--random-table-out T.npy]
//                   [--key-padding-polarity keep|ignore] [--causal-align bottom-right|top-left]
//                   [--padding-align full|valid] [pattern flags]
//
// Shape: [N, M] for one head, [H, N, M] otherwise; with a --key-padding-mask of batch
// B > 1, [B, H, N, M]. The mask is dense_mask() of each head's canonical layout (the one
// source of truth), with the key padding applied as contract §2 says (padded keys and padded
// query rows attend nothing). --random-table-out writes the pattern's random draws as int64
// (contract §3.10): bigbird [num_heads, nb - 2, r] (HF's rand_attn layout), bigbird-etc
// [num_heads, nb, r], random [num_heads, seq_len_q, num_random]; -1 where a row has fewer.
// Every table read back with --random-table gives the same pattern. The convention flags
// are contract §1.6's (--padding-align, §2.6).
#include <memory>

#include "cli/commands.h"
#include "cli/presets.h"
#include "api/convention_mask.h"
#include "api/compat_flags.h"
#include "api/conventions.h"
#include "api/inputs.h"
#include "api/layout_flags.h"
#include "api/padding_align.h"
#include "api/results.h"
#include "core/error.h"
#include "core/npy.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

struct MaskArgs {
  SizeFlags sizes;
  std::string out;
  std::string mask_dtype = "uint8";
  std::string random_table_out;
  PatternFlags pattern;
  ConventionFlags conventions;
  CompatFlags compat;  // --attention-window and --global-mask (contract §3.12)
  PresetLayerFlags preset;  // --preset NAME --layer L (contract §6.4, cli/presets.h)
  LayoutFlags layout;  // --cu-seqlens-q/-k: a packed batch's block-diagonal mask (§2.10)
  CLI::App* cmd = nullptr;
};

void run_mask(const MaskArgs& args) {
  MaskArgs a = args;
  // A preset's layer: one pattern for every head (grouped heads share it), so one head.
  apply_preset_pattern(a.cmd, a.preset, a.pattern,
                       {"--num-heads", "--attention-window", "--global-mask"});
  apply_attention_window(a.compat, a.pattern);
  require(a.mask_dtype == "uint8" || a.mask_dtype == "bool", "--mask-dtype", a.mask_dtype,
          "must be uint8 or bool");
  const Conventions conv = parse_conventions(a.conventions);
  check_outputs({{"--out", a.out}, {"--random-table-out", a.random_table_out}}, {{"--mask", a.pattern.mask},
                                     {"--random-table", a.pattern.random_table},
                                     {"--segment-ids", a.pattern.segment_ids},
                                     {"--key-padding-mask", a.pattern.key_padding_mask},
                                     {"--global-mask", a.compat.global_mask}});
  if (a.layout.requested()) {  // contract §2.10: [H, total_q, total_k], block diagonal
    const SeqLayout layout = read_layout(a.layout);
    require_field(layout.varlen.has_value(), Field::cache_seqlens, "", "given",
                  "must not be given to mask: it writes a packed batch's allowed set "
                  "(--cu-seqlens-q and --cu-seqlens-k)");
    require(a.sizes.seq_len == 0, "--seq-len", a.sizes.seq_len,
            "must be left out with --cu-seqlens-q (the lists give the sizes)");
    require_layout_conventions(conv, layout, !a.compat.global_mask.empty());
    require(a.random_table_out.empty(), "--random-table-out", a.random_table_out,
            "is not written for a packed batch (each sequence draws its own, contract §2.10)");
    Tensor<uint8_t> out = varlen_allowed_mask(to_spec(a.pattern), a.sizes.num_heads, *layout.varlen);
    if (a.sizes.num_heads == 1) out.shape.erase(out.shape.begin());
    write_npy(a.out, out, a.mask_dtype == "bool");
    return;
  }
  const PatternSizes sizes = to_sizes(a.sizes, a.pattern);
  // --global-mask (contract §3.12): one longformer pattern per batch element.
  Tensor<uint8_t> gm;
  if (!a.compat.global_mask.empty()) gm = read_npy_mask(a.compat.global_mask, "--global-mask");
  const PatternSpec spec = to_spec(a.pattern);
  Tensor<int64_t> draws;  // --random-table-out: the draws of the pattern as given
  if (!a.random_table_out.empty()) {
    draws = materialize(spec, sizes).random_draws;
    require(draws.numel() > 0, "--random-table-out", a.random_table_out,
            "needs a pattern with random draws (bigbird or bigbird-etc with --num-random-blocks "
            ">= 1, random with --num-random >= 1)");
  }
  // [B, H, N, M] (api/convention_mask.h); the file drops the batch and head dimensions of 1.
  Tensor<uint8_t> out = convention_mask(spec, sizes, conv, a.compat.global_mask.empty() ? nullptr : &gm,
                                        Spelling::flag);
  const int64_t batch = out.dim(0);
  Shape shape = {sizes.seq_len_q, sizes.seq_len_k};
  if (sizes.num_heads > 1 || batch > 1) shape.insert(shape.begin(), sizes.num_heads);
  if (batch > 1) shape.insert(shape.begin(), batch);
  out.shape = shape;
  write_npy(a.out, out, a.mask_dtype == "bool");
  if (!a.random_table_out.empty()) write_npy(a.random_table_out, draws);
}

}  // namespace

void register_mask(CLI::App& app) {
  auto args = std::make_shared<MaskArgs>();
  CLI::App* cmd = app.add_subcommand(
      "mask", "write the pattern's allowed mask (1 = may attend) as .npy, [N, M] or [H, N, M]");
  add_size_flags(cmd, args->sizes, /*allow_range=*/false, /*seq_len_required=*/false);
  cmd->add_option("--out", args->out, "M.npy: the mask")->required();
  cmd->add_option("--mask-dtype", args->mask_dtype, "uint8 | bool")->capture_default_str();
  cmd->add_option("--random-table-out", args->random_table_out,
                  "T.npy: also write the pattern's random draws, int64: bigbird [num_heads, "
                  "nb-2, r] (HF's rand_attn), bigbird-etc [num_heads, nb, r], random "
                  "[num_heads, seq_len_q, num_random]; -1 where a row has fewer");
  add_pattern_flags(cmd, args->pattern);
  add_convention_flags(cmd, args->conventions, /*tensors=*/false);
  add_attention_window_flag(cmd, args->compat);
  cmd->add_option("--cu-seqlens-q", args->layout.cu_seqlens_q,
                  "CQ.npy: int32/int64 [B + 1]: write the packed batch's allowed set [total_q, "
                  "total_k] ([num_heads, total_q, total_k] for H > 1), block diagonal (contract "
                  "§2.10); replaces --seq-len");
  cmd->add_option("--cu-seqlens-k", args->layout.cu_seqlens_k,
                  "CK.npy: int32/int64 [B + 1], the key rows of each sequence; needs --cu-seqlens-q");
  cmd->add_option("--global-mask", args->compat.global_mask,
                  "G.npy: [batch, seq_len_k] bool/uint8, 1 = global token, per batch element "
                  "(pattern longformer; replaces --global; output [batch, H, N, M])");
  add_preset_layer_flags(cmd, args->preset, "the pattern flags (one head: every head of a "
                                            "preset's layer has its pattern)");
  args->cmd = cmd;
  cmd->callback([args] { run_mask(*args); });
}

}  // namespace sparseattn::cli
