// The compatibility-mode flags (contract §3.12); see compat_flags.h.
#include "api/compat_flags.h"

#include <cmath>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/npy.h"
#include "reference/compat.h"
#include "registry/registry.h"

namespace sparseattn::api {

void add_attention_window_flag(CLI::App* cmd, CompatFlags& f) {
  f.window_flag = cmd->get_option("--window");
  f.attention_window_flag = cmd->add_option("--attention-window", f.attention_window,
                  "N: HF Longformer's attention_window, the TOTAL width 2W (even, >= 0); "
                  "sets --window W = N/2. Give it or --window, not both");
}

void add_compat_flags(CLI::App* cmd, CompatFlags& f) {
  cmd->add_option("--compat", f.compat,
                  "hf-bigbird: HuggingFace's block-sparse BigBird exactly (pattern bigbird, "
                  "--random-table = HF's rand_attn, seq_len a multiple of --block-size): "
                  "a key block listed twice counts twice (contract §3.12)");
  cmd->add_option("--global-mask", f.global_mask,
                  "G.npy: [batch, seq_len_k] bool/uint8, 1 = global token, per batch element "
                  "(pattern longformer; replaces --global)");
  cmd->add_option("--q-global", f.q_global,
                  "QG.npy: global-query projections, q's shape; global rows use QG, KG, VG "
                  "(pattern longformer; with --k-global and --v-global)");
  cmd->add_option("--k-global", f.k_global, "KG.npy: global-key projections, k's shape");
  cmd->add_option("--v-global", f.v_global, "VG.npy: global-value projections, v's shape");
  add_attention_window_flag(cmd, f);
}

void apply_attention_window(const CompatFlags& f, PatternFlags& pattern) {
  if (!f.attention_window_flag || f.attention_window_flag->count() == 0) return;
  require(f.attention_window >= 0, "--attention-window", f.attention_window,
          "must be an even integer >= 0 (HF's total width 2W)");
  require(f.attention_window % 2 == 0, "--attention-window", f.attention_window,
          "must be even: it is HF's total width 2W (W = N/2 keys on each side)");
  require(!f.window_flag || f.window_flag->count() == 0, "--attention-window", f.attention_window,
          "replaces --window (one-sided W = N/2): give one of them");
  pattern.window = f.attention_window / 2;
}

bool compat_requested(const CompatFlags& f) {
  return !f.compat.empty() || !f.global_mask.empty() || !f.q_global.empty() ||
         !f.k_global.empty() || !f.v_global.empty();
}

namespace {

AttentionResult hf_bigbird(const AttentionInputs& in, const double* scale, const std::string& impl) {
  const PatternSpec& spec = in.pattern.spec;
  require(spec.kind == PatternKind::bigbird, "--compat", "hf-bigbird",
          std::string("needs --pattern bigbird, not ") + pattern_kind_name(spec.kind));
  require(spec.random_table.has_value(), "--compat", "hf-bigbird",
          "needs --random-table T.npy (HF's rand_attn [num_heads or 1, n_b - 2, r])");
  BlockListing listing;
  try {
    listing = hf_bigbird_listing(in.shape.seq_len_q, spec.block_size, in.shape.num_heads,
                                 *spec.random_table);
  } catch (const InvalidArgument& e) {
    if (e.argument() == "seq_len") throw InvalidArgument("--q seq_len", std::to_string(in.shape.seq_len_q), std::string(e.what()).substr(std::string(e.what()).find(": ") + 2));
    throw;
  }
  const Tensor<uint8_t>* kp = spec.key_padding_mask ? &*spec.key_padding_mask : nullptr;
  if (impl == "a1_dense_masked") return hf_listing_oracle(in.q, in.k, in.v, listing, kp, scale);
  // An optimized entry of HF's listing (its name ends in _hf_listing): run through the
  // registry on the pattern itself, every repeat counted — outside what it `serves` under
  // the normal contract, which is the point of this mode (contract §3.12).
  const std::string suffix = "_hf_listing";
  const bool listing_kernel =
      impl.size() > suffix.size() && impl.compare(impl.size() - suffix.size(), suffix.size(), suffix) == 0;
  std::string listing_kernels;
  for (const Kernel& k : kernels()) {
    const std::string name = k.name;
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      listing_kernels += ", " + name;
  }
  require(listing_kernel, "--impl", impl,
          "under --compat hf-bigbird must be a1_dense_masked (float64, the definition) or an "
          "entry of HF's listing" + listing_kernels);
  const Kernel& kernel = find_kernel(impl);
  const Problem problem = make_problem(in.q, in.k, in.v, in.pattern, scale);
  Output out;
  kernel.run(problem, out);
  if (out.o.numel() > 0) return {std::move(out.o), std::move(out.lse)};
  return {tensor_cast<double>(out.o32), tensor_cast<double>(out.lse32)};
}

}  // namespace

AttentionResult compat_attend(const CompatFlags& f, const AttentionInputs& in, const double* scale,
                              const std::string& impl) {
  const bool longformer = !f.global_mask.empty() || !f.q_global.empty() || !f.k_global.empty() ||
                          !f.v_global.empty();
  require(f.compat.empty() || f.compat == "hf-bigbird", "--compat", f.compat, "must be hf-bigbird");
  if (!f.compat.empty()) {
    require(!longformer, "--compat", f.compat,
            "does not combine with --global-mask/--q-global/--k-global/--v-global (Longformer)");
    return hf_bigbird(in, scale, impl);
  }
  LongformerGlobals g;
  if (!f.global_mask.empty()) g.global_mask = read_npy_mask(f.global_mask, "--global-mask");
  Tensor<double> qg, kg, vg;
  if (!f.q_global.empty() || !f.k_global.empty() || !f.v_global.empty()) {
    require(!f.q_global.empty() && !f.k_global.empty() && !f.v_global.empty(), "--q-global",
            f.q_global, "--q-global, --k-global and --v-global go together");
    qg = read_npy_float(f.q_global, "--q-global");
    kg = read_npy_float(f.k_global, "--k-global");
    vg = read_npy_float(f.v_global, "--v-global");
    require_finite(qg, "--q-global");
    require_finite(kg, "--k-global");
    require_finite(vg, "--v-global");
    g.q_global = &qg;
    g.k_global = &kg;
    g.v_global = &vg;
  }
  const Kernel& kernel = find_kernel(impl);
  AttendFn attend = [&](const Tensor<double>& q, const Tensor<double>& k, const Tensor<double>& v,
                        const Pattern& p) -> AttentionResult {
    require(kernel.serves(p), "--impl", impl, "does not serve " + describe(p.spec));
    const Problem problem = make_problem(q, k, v, p, scale);
    Output out;
    kernel.run(problem, out);
    if (out.o.numel() > 0) return {std::move(out.o), std::move(out.lse)};
    return {tensor_cast<double>(out.o32), tensor_cast<double>(out.lse32)};
  };
  return longformer_compat(in.q, in.k, in.v, in.pattern.spec, g, attend);
}

}  // namespace sparseattn::api
