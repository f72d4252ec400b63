// sparseattn attend — runs one registered kernel on .npy inputs and writes o (and lse),
// and, given dO, the gradients dq, dk, dv of the backward kernel that matches --impl.
//
//   sparseattn attend --q Q.npy --k K.npy --v V.npy --out O.npy [--lse LSE.npy]
//                     [--impl a1_dense_masked] [--scale S] [--dtype float32|float64]
//                     [--dout DO.npy [--dq DQ.npy] [--dk DK.npy] [--dv DV.npy]
//                                    [--dq-global DQG.npy --dk-global DKG.npy --dv-global DVG.npy]]
//                     [pattern flags] [compatibility flags]
//   sparseattn attend --preset NAME --layer L --q Q.npy --k K.npy --v V.npy --out O.npy ...
//                     (one layer of a model preset: its pattern, scale and softcap; q, k, v
//                     with its heads and head_dim; cli/presets.h, contract §6.4)
//   sparseattn attend --cu-seqlens-q CQ.npy --cu-seqlens-k CK.npy --q Q.npy ... (packed
//                     [total, heads, d], contract §2.10; o [total_q, H, d_v], lse [H, total_q])
//   sparseattn attend --cache-seqlens S.npy [--block-table T.npy] --q Q.npy ... (k, v a KV
//                     cache or its page pools, contract §2.11-§2.12; forward only)
//
// Compatibility flags (contract §3.12, api/compat_flags.h): --compat hf-bigbird (--impl
// a1_dense_masked or cpu_k07_hf_listing), --global-mask, --q-global/--k-global/--v-global
// (any kernel serving longformer, run per batch element), --attention-window. With --dout
// under them, or under a finite --masked-score, --impl is a1_dense_masked and the gradients
// are that convention's float64 definition (contract §7.4–§7.6,
// reference/backward/compat_grad.h); --dq-global etc. write the global projections'.
// --padding-align valid (contract §2.6) with seq_len_q != seq_len_k runs the kernel (and its
// backward) once per batch element on that element's aligned pattern, an explicit mask.
// Shapes (contract §1): q [B,H,Lq,D], k [B,H,Lk,D], v [B,H,Lk,Dv]; o [B,H,Lq,Dv] and lse
// [B,H,Lq] keep q's leading dimensions as given in the file (rank 2 in, rank 2 out).
// Backward (contract §7, docs/backward.md): dO has o's shape; dq, dk, dv keep the shapes of
// q, k, v as given in their files. The backward kernel is the registry's entry whose
// forward is --impl (registry/backward_kernels.def); it consumes this run's o and lse.
// Nothing is written until every kernel has finished; every file is written atomically,
// and all of them or none.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/presets.h"
#include "api/compat_flags.h"
#include "api/conventions.h"
#include "api/inputs.h"
#include "api/layout_check.h"
#include "api/layout_flags.h"
#include "api/padding_align.h"
#include "api/results.h"
#include "api/score_flags.h"
#include "core/error.h"
#include "core/npy.h"
#include "registry/backward.h"
#include "registry/registry.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

struct AttendArgs {
  std::string q, k, v, out, lse;
  std::string dout, dq, dk, dv;  // backward: dO in, gradients out
  std::string dq_global, dk_global, dv_global;  // gradients of --q-global/--k-global/--v-global
  std::string dsinks;  // the sinks' gradient (contract §2.9)
  std::string impl = "a1_dense_masked";
  std::string scale;  // text: parsed by parse_finite (rejects nan/inf)
  std::string dtype;  // "" = the kernel's own output dtype
  PatternFlags pattern;
  ConventionFlags conventions;
  CompatFlags compat;  // contract §3.12
  ScoreFlags score;    // contract §2.8-§2.9
  PresetLayerFlags preset;  // --preset NAME --layer L (contract §6.4, cli/presets.h)
  LayoutFlags layout;  // --cu-seqlens-q/-k, --cache-seqlens, --block-table (contract §2.10-§2.12)
  CLI::App* cmd = nullptr;
};

// [a, b, c, d] -> [a, c, b, d] in place of x (bshd <-> bhsd); empty tensors stay empty.
template <class T>
void swap_12(Tensor<T>& x) {
  if (x.numel() == 0) return;
  const int64_t a = x.shape[0], b = x.shape[1], c = x.shape[2], d = x.shape[3];
  Tensor<T> y({a, c, b, d});
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t l = 0; l < c; ++l)
        std::copy_n(x.ptr() + ((i * b + j) * c + l) * d, d, y.ptr() + ((i * c + l) * b + j) * d);
  x = std::move(y);
}

// o/lse keep q's rank: a rank-2 q [Lq, D] gives o [Lq, Dv] and lse [Lq].
Shape out_shape(const Shape& q_file_shape, const Shape& rank4) {
  const size_t drop = 4 - q_file_shape.size();
  return Shape(rank4.begin() + static_cast<std::ptrdiff_t>(drop), rank4.end());
}

// One output file: its path (empty: not asked for) and its tensor in the chosen dtype.
struct Pending {
  std::string path;
  Tensor<double> f64;
  Tensor<float> f32;
  bool as_f64;
};

// Writes every asked-for output, each atomically; on any failure removes those already
// written, so the outputs appear all together or not at all.
void write_all(std::vector<Pending>& files) {
  std::vector<std::string> written;
  try {
    for (Pending& f : files) {
      if (f.path.empty()) continue;
      if (f.as_f64) write_npy(f.path, f.f64);
      else write_npy(f.path, f.f32);
      written.push_back(f.path);
    }
  } catch (...) {
    for (const std::string& w : written) std::remove(w.c_str());
    throw;
  }
}

// The tensor of a kernel's output in the requested dtype, reshaped to `shape`. A float32
// kernel's output widened to float64 is exact, but still float32-accurate.
Pending pending(const std::string& path, Tensor<double>& x64, Tensor<float>& x32,
                bool kernel_is_f64, bool want_f64, const Shape& shape) {
  Pending p{path, {}, {}, want_f64};
  if (want_f64) p.f64 = kernel_is_f64 ? std::move(x64) : tensor_cast<double>(x32);
  else p.f32 = kernel_is_f64 ? tensor_cast<float>(x64) : std::move(x32);
  p.f64.shape = shape;
  p.f32.shape = shape;
  return p;
}

template <class T>
int64_t count_nan(const Tensor<T>& x) {
  int64_t n = 0;
  for (T e : x.data) n += std::isnan(e);
  return n;
}

// contract §2: never a silent NaN. Exact kernels never produce one; an approximation may have
// no lse estimate for some rows (Nyströmformer's estimate of the normalizer can be <= 0),
// so such a file is refused rather than written.
void refuse_nan(const AttendArgs& a, const Kernel& kernel, const Output& out) {
  const int64_t o_nan = count_nan(out.o) + count_nan(out.o32);
  require(o_nan == 0, "--impl", kernel.name,
          "produced " + std::to_string(o_nan) + " NaN values in o; nothing was written");
  if (a.lse.empty()) return;
  const int64_t lse_nan = count_nan(out.lse) + count_nan(out.lse32);
  require(lse_nan == 0, "--lse", a.lse,
          std::string(kernel.name) + " has no lse estimate for " + std::to_string(lse_nan) +
              " rows (NaN); nothing was written. Run without --lse, or use an exact kernel");
}

// contract §7 / §5: dO [B,H,Lq,Dv] (o's shape; leading 1s may be omitted), finite; with
// --layout bshd [B,Lq,H,Dv], returned bhsd.
Tensor<double> load_dout(const std::string& path, const AttentionShape& s, bool bshd) {
  Tensor<double> d = read_npy_float(path, "--dout");
  if (!bshd) return checked_dout(std::move(d), s, "--dout");
  const Shape want = {s.batch, s.seq_len_q, s.num_heads, s.head_dim_v};
  Shape got = d.shape;
  while (got.size() < 4 && !got.empty()) got.insert(got.begin(), 1);
  require(got == want, "--dout shape", shape_text(d.shape),
          "must be o's shape " + shape_text(want) + " (leading 1s may be omitted)");
  require_finite(d, "--dout");
  d.shape = want;
  swap_12(d);
  return d;
}

// Packed batches, caches and paged KV (contract §2.10–§2.12): the walk of api/layout_walk.h
// for the kernel and, with --dout (packed batches only), its backward entry.
void run_attend_layout(AttendArgs& a, const Conventions& conv) {
  const LayoutCall call = layout_call_from_files(a.q, a.k, a.v, a.layout, a.pattern, conv,
                                                 compat_requested(a.compat), a.scale, a.score);
  const Kernel& kernel = find_kernel(a.impl);
  const bool backward = !a.dout.empty();
  GradOutput gout;
  const GradKernel* grad = backward ? &backward_for(a.impl) : nullptr;
  if (backward) {
    Tensor<double> dout = read_npy_float(a.dout, "--dout");
    require_finite(dout, "--dout");
    gout = attend_layout_grad(*grad, call, dout);  // refuses a cache (forward only)
  }
  Output out = attend_layout(kernel, call);
  refuse_nan(a, kernel, out);
  const bool kernel_is_f64 = kernel.dtype == DType::float64;
  const bool f64 = !a.dtype.empty() ? a.dtype == "float64" : kernel_is_f64;
  const Shape o_shape = kernel_is_f64 ? out.o.shape : out.o32.shape;
  const Shape lse_shape = kernel_is_f64 ? out.lse.shape : out.lse32.shape;
  std::vector<Pending> files;
  files.push_back(pending(a.out, out.o, out.o32, kernel_is_f64, f64, o_shape));
  files.push_back(pending(a.lse, out.lse, out.lse32, kernel_is_f64, f64, lse_shape));
  if (backward) {
    const bool grad_f64 = grad->dtype == DType::float64;
    const Shape q_shape = call.q.shape, k_shape = call.k.shape, v_shape = call.v.shape;
    files.push_back(pending(a.dq, gout.dq, gout.dq32, grad_f64, f64, q_shape));
    files.push_back(pending(a.dk, gout.dk, gout.dk32, grad_f64, f64, k_shape));
    files.push_back(pending(a.dv, gout.dv, gout.dv32, grad_f64, f64, v_shape));
    Tensor<float> none;
    const Shape dsinks_shape = gout.dsinks.shape;
    if (!a.dsinks.empty()) files.push_back(pending(a.dsinks, gout.dsinks, none, true, f64, dsinks_shape));
  }
  write_all(files);
}

void run_attend(const AttendArgs& args) {
  AttendArgs a = args;  // --preset fills the pattern, scale and softcap below
  require(a.dtype.empty() || a.dtype == "float32" || a.dtype == "float64", "--dtype", a.dtype,
          "must be float32 or float64");
  const bool backward = !a.dout.empty();
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--dq", a.dq},
                                   {"--dk", a.dk}, {"--dv", a.dv}, {"--dq-global", a.dq_global},
                                   {"--dk-global", a.dk_global}, {"--dv-global", a.dv_global}})
    require(path.empty() || backward, flag, path, "needs --dout DO.npy (the gradient of o)");
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--dq-global", a.dq_global},
                                   {"--dk-global", a.dk_global}, {"--dv-global", a.dv_global}})
    require(path.empty() || !a.compat.q_global.empty(), flag, path,
            "needs --q-global, --k-global and --v-global (the projections it is the gradient of)");
  require(a.dsinks.empty() || (backward && !a.score.sinks.empty()), "--dsinks", a.dsinks,
          "needs --dout DO.npy and --sinks S.npy (it is the gradient of the sinks)");
  require(!backward || !a.dq.empty() || !a.dk.empty() || !a.dv.empty() || !a.dq_global.empty() ||
              !a.dk_global.empty() || !a.dv_global.empty() || !a.dsinks.empty(),
          "--dout", a.dout, "asks for gradients: give at least one of --dq, --dk, --dv");
  check_outputs({{"--out", a.out}, {"--lse", a.lse}, {"--dq", a.dq}, {"--dk", a.dk}, {"--dv", a.dv},
                 {"--dq-global", a.dq_global}, {"--dk-global", a.dk_global},
                 {"--dv-global", a.dv_global}, {"--dsinks", a.dsinks}},
                {{"--q", a.q}, {"--k", a.k}, {"--v", a.v}, {"--dout", a.dout},
                 {"--sinks", a.score.sinks}, {"--alibi-slopes", a.score.alibi_slopes},
                 {"--q-global", a.compat.q_global}, {"--k-global", a.compat.k_global},
                 {"--v-global", a.compat.v_global}, {"--global-mask", a.compat.global_mask}});
  // A packed batch [total, heads, d] reads its heads where bshd does.
  apply_preset_call(a.cmd, a.preset, a.pattern, a.scale, a.score, a.q, a.k, a.v,
                    a.conventions.layout == "bshd" || !a.layout.cu_seqlens_q.empty());
  if (a.layout.requested()) {
    run_attend_layout(a, parse_conventions(a.conventions));
    return;
  }
  const Shape q_file_shape = read_npy_header(a.q, "--q").shape;
  const Shape k_file_shape = read_npy_header(a.k, "--k").shape;
  const Shape v_file_shape = read_npy_header(a.v, "--v").shape;
  const Conventions conv = parse_conventions(a.conventions);
  require(!conv.masked_score || a.impl == "a1_dense_masked", "--masked-score",
          a.conventions.masked_score, "needs --impl a1_dense_masked (the kernels remove masked keys)");
  // A flag with no effect is an error: attend writes every row, so there is nothing for
  // --padded-queries any to leave uncompared (it is check's flag, contract §1.6).
  require(!conv.padded_queries_any, "--padded-queries", a.conventions.padded_queries,
          "must be zero for attend: it writes padded rows as o = 0, lse = -inf (contract §2.4); "
          "'any' only tells check not to compare them");
  PatternFlags pattern_flags = a.pattern;
  apply_attention_window(a.compat, pattern_flags);
  AttentionInputs in = load_inputs_with(a.q, a.k, a.v, pattern_flags, conv);
  ScoreMods mods = to_score_mods(a.score, in.shape);
  require_combinable(in.shape, mods, conv, compat_requested(a.compat), Spelling::flag);
  if (compat_requested(a.compat)) {  // contract §3.12: its own path
    require(!conv.masked_score, "--masked-score", a.conventions.masked_score,
            "must be -inf under the compatibility flags (their definitions remove masked keys)");
    require(!backward || a.impl == "a1_dense_masked", "--impl", a.impl,
            "must be a1_dense_masked with --dout under the compatibility flags (the gradients "
            "are the mode's float64 definition, contract §7.4-§7.5)");
    require(!conv.padding_align_valid, "--padding-align", a.conventions.padding_align,
            "must be full under the compatibility flags (their definitions are HF's, contract §3.12)");
    const CompatRequest request = read_compat(a.compat, conv.bshd);
    double s = 0.0;
    if (!a.scale.empty()) s = parse_finite("--scale", a.scale, -INFINITY);
    const double* sp = a.scale.empty() ? nullptr : &s;
    Tensor<double> dout;
    if (backward) dout = load_dout(a.dout, in.shape, conv.bshd);  // before any O(n^2) work
    AttentionResult r = compat_attend(request, in, sp, a.impl);
    ReferenceGradients grads;
    if (backward) grads = reference_gradients(in, sp, conv, &request, dout);
    // Conventions of the outputs (contract §1.6), as below: lse in base 2, o bshd.
    if (conv.lse_base2)
      for (double& x : r.lse.data) x /= std::log(2.0);
    if (conv.bshd) {
      swap_12(r.o);
      for (Tensor<double>* t : {&grads.g.dq, &grads.g.dk, &grads.g.dv, &grads.g.dq_global,
                                &grads.g.dk_global, &grads.g.dv_global})
        swap_12(*t);
    }
    // Default dtype: the implementation's own (float32 for the CPU kernels, k07 included).
    const bool f64 = !a.dtype.empty() ? a.dtype == "float64"
                                      : find_kernel(a.impl).dtype == DType::float64;
    Tensor<float> none_o, none_lse;
    Shape lse_rank4 = r.lse.shape;
    lse_rank4.push_back(1);
    Shape lse_shape = out_shape(q_file_shape, lse_rank4);
    lse_shape.pop_back();
    Shape o_shape = q_file_shape;  // q's leading dimensions (either layout), head_dim_v last
    o_shape.back() = r.o.shape.back();
    std::vector<Pending> files;
    files.push_back(pending(a.out, r.o, none_o, true, f64, o_shape));
    files.push_back(pending(a.lse, r.lse, none_lse, true, f64, lse_shape));
    if (backward) {
      Tensor<float> none;
      auto file_shape = [](const std::string& path, const char* flag) {
        return read_npy_header(path, flag).shape;
      };
      files.push_back(pending(a.dq, grads.g.dq, none, true, f64, q_file_shape));
      files.push_back(pending(a.dk, grads.g.dk, none, true, f64, k_file_shape));
      files.push_back(pending(a.dv, grads.g.dv, none, true, f64, v_file_shape));
      if (request.projections()) {  // the global projections' files keep their own ranks
        files.push_back(pending(a.dq_global, grads.g.dq_global, none, true, f64,
                                file_shape(a.compat.q_global, "--q-global")));
        files.push_back(pending(a.dk_global, grads.g.dk_global, none, true, f64,
                                file_shape(a.compat.k_global, "--k-global")));
        files.push_back(pending(a.dv_global, grads.g.dv_global, none, true, f64,
                                file_shape(a.compat.v_global, "--v-global")));
      }
    }
    write_all(files);
    return;
  }
  // contract §2.6: under --padding-align valid with seq_len_q != seq_len_k every batch
  // element runs on its own aligned pattern (an explicit mask: kernels serving "any").
  ValidCounts counts;
  if (conv.padding_align_valid) counts = valid_counts(in.pattern);
  const bool per_batch = conv.padding_align_valid && valid_alignment_moves(in.pattern, counts);
  const Pattern first = per_batch ? valid_batch_pattern(in.pattern, counts, 0) : Pattern{};
  const Kernel& kernel = [&]() -> const Kernel& {
    try {
      return serving_kernel(a.impl, per_batch ? first : in.pattern);
    } catch (const InvalidArgument& e) {
      if (!per_batch) throw;
      throw InvalidArgument("--impl", a.impl,
                            e.allowed() + " (under --padding-align valid each batch element runs "
                                          "on its own aligned pattern, an explicit mask; "
                                          "contract §2.6)");
    }
  }();
  // Under a finite --masked-score the gradient is its float64 definition (contract §7.6),
  // not the registry's: --impl is a1_dense_masked there (required above).
  const GradKernel* grad = backward && !conv.masked_score ? &backward_for(a.impl) : nullptr;
  Tensor<double> dout;
  if (backward) dout = load_dout(a.dout, in.shape, conv.bshd);  // before any O(n^2) work
  double scale = 0.0;
  if (!a.scale.empty()) scale = parse_finite("--scale", a.scale, -INFINITY);
  AttentionResult masked;  // --masked-score VALUE: the dense definition with that score
  GradOutput gout;
  if (conv.masked_score) {
    Conventions c = conv;
    c.lse_base2 = false;  // converted below with the kernels' lse
    masked = convention_oracle(in.q, in.k, in.v, in.pattern,
                               a.scale.empty() ? nullptr : &scale, c);
    if (backward) {
      ReferenceGradients g = reference_gradients(in, a.scale.empty() ? nullptr : &scale, c,
                                                 nullptr, dout);
      gout.dq = std::move(g.g.dq), gout.dk = std::move(g.g.dk), gout.dv = std::move(g.g.dv);
    }
  }
  const double* scale_ptr = a.scale.empty() ? nullptr : &scale;
  Output out;
  // A kernel names what it refuses by field (FieldError: a scale beyond float32's range,
  // contract §4); main() spells it as the flag the user typed.
  if (!per_batch) {
    const Problem problem = make_problem(std::move(in.q), std::move(in.k), std::move(in.v),
                                         in.pattern, scale_ptr, std::move(mods));
    kernel.run(problem, out);
    if (grad != nullptr) {
      refuse_nan(a, kernel, out);  // before the backward pass reads o and lse
      gout = run_backward(*grad, problem, out, std::move(dout), a.impl);
    }
  } else {
    for (int64_t b = 0; b < in.shape.batch; ++b) {
      const Pattern pb = b == 0 ? first : valid_batch_pattern(in.pattern, counts, b);
      serving_kernel(a.impl, pb);
      const Problem problem = make_problem(batch_slice(in.q, b), batch_slice(in.k, b),
                                           batch_slice(in.v, b), pb, scale_ptr);
      Output ob;
      kernel.run(problem, ob);
      if (grad != nullptr) {
        refuse_nan(a, kernel, ob);
        const GradOutput gb = run_backward(*grad, problem, ob, batch_slice(dout, b), a.impl);
        append_batch(gout.dq, gb.dq), append_batch(gout.dk, gb.dk), append_batch(gout.dv, gb.dv);
        append_batch(gout.dq32, gb.dq32), append_batch(gout.dk32, gb.dk32);
        append_batch(gout.dv32, gb.dv32);
      }
      append_batch(out.o, ob.o), append_batch(out.lse, ob.lse);
      append_batch(out.o32, ob.o32), append_batch(out.lse32, ob.lse32);
    }
  }
  if (conv.masked_score) {
    out.o = std::move(masked.o);
    out.lse = std::move(masked.lse);
  }
  refuse_nan(a, kernel, out);

  // Conventions of the outputs (contract §1.6): lse in base 2, o and gradients bshd.
  if (conv.lse_base2) {
    for (double& x : out.lse.data) x /= std::log(2.0);
    for (float& x : out.lse32.data) x = static_cast<float>(x / std::log(2.0));
  }
  if (conv.bshd) {
    swap_12(out.o), swap_12(out.o32);
    swap_12(gout.dq), swap_12(gout.dq32), swap_12(gout.dk), swap_12(gout.dk32);
    swap_12(gout.dv), swap_12(gout.dv32);
  }
  const bool kernel_is_f64 = out.o.numel() > 0 || out.o32.numel() == 0;
  const std::string dtype = !a.dtype.empty() ? a.dtype : kernel_is_f64 ? "float64" : "float32";
  const bool f64 = dtype == "float64";
  const Shape lse_rank4 = {out.lse.numel() ? out.lse.shape[0] : out.lse32.shape[0],
                           out.lse.numel() ? out.lse.shape[1] : out.lse32.shape[1],
                           out.lse.numel() ? out.lse.shape[2] : out.lse32.shape[2], 1};
  Shape lse_shape = out_shape(q_file_shape, lse_rank4);
  lse_shape.pop_back();
  Shape o_shape = q_file_shape;  // q's leading dimensions (either layout), head_dim_v last
  o_shape.back() = kernel_is_f64 ? out.o.shape.back() : out.o32.shape.back();
  std::vector<Pending> files;
  files.push_back(pending(a.out, out.o, out.o32, kernel_is_f64, f64, o_shape));
  files.push_back(pending(a.lse, out.lse, out.lse32, kernel_is_f64, f64, lse_shape));
  if (backward) {
    const bool grad_f64 = grad == nullptr || grad->dtype == DType::float64;
    files.push_back(pending(a.dq, gout.dq, gout.dq32, grad_f64, f64, q_file_shape));
    files.push_back(pending(a.dk, gout.dk, gout.dk32, grad_f64, f64, k_file_shape));
    files.push_back(pending(a.dv, gout.dv, gout.dv32, grad_f64, f64, v_file_shape));
    Tensor<float> none;  // dσ is float64 in every backward kernel (contract §2.9)
    const Shape dsinks_shape = gout.dsinks.shape;  // a copy: pending() moves the tensor
    if (!a.dsinks.empty())
      files.push_back(pending(a.dsinks, gout.dsinks, none, true, f64, dsinks_shape));
  }
  write_all(files);
}

}  // namespace

void register_attend(CLI::App& app) {
  auto args = std::make_shared<AttendArgs>();
  CLI::App* cmd = app.add_subcommand(
      "attend", "run one kernel (default: the float64 oracle) on .npy inputs, write o and lse");
  cmd->add_option("--q", args->q, "Q.npy: queries [batch, num_heads, seq_len_q, head_dim], "
                                  "float16/32/64 (rank 2 or 3: leading dimensions are 1)")
      ->required();
  cmd->add_option("--k", args->k,
                  "K.npy: keys [batch, num_kv_heads, seq_len_k, head_dim]; num_kv_heads divides "
                  "q's num_heads (grouped-query attention: q head h reads kv head h / (num_heads / "
                  "num_kv_heads), contract §2.7)")
      ->required();
  cmd->add_option("--v", args->v, "V.npy: values [batch, num_kv_heads, seq_len_k, head_dim_v]")
      ->required();
  cmd->add_option("--out", args->out,
                  "O.npy: output o [batch, num_heads, seq_len_q, head_dim_v] (with --cu-seqlens-q "
                  "packed [total_q, num_heads, head_dim_v])")
      ->required();
  cmd->add_option("--lse", args->lse,
                  "LSE.npy: also write lse [batch, num_heads, seq_len_q] (with --cu-seqlens-q "
                  "[num_heads, total_q]), natural log; -inf on fully masked rows");
  std::string names;
  for (const Kernel& k : kernels()) names += (names.empty() ? "" : ", ") + std::string(k.name);
  cmd->add_option("--impl", args->impl, "kernel, one of the registry's: " + names)
      ->capture_default_str();
  cmd->add_option("--scale", args->scale,
                  "S: score scale, finite real; default 1/sqrt(head_dim)");
  cmd->add_option("--dtype", args->dtype,
                  "output dtype: float32 | float64; default the kernel's own (float64 for the "
                  "reference ladder)");
  cmd->add_option("--dout", args->dout,
                  "DO.npy: gradient of the loss w.r.t. o, o's shape [batch, num_heads, "
                  "seq_len_q, head_dim_v], finite; runs the backward kernel matching --impl");
  cmd->add_option("--dq", args->dq, "DQ.npy: write dq (q's shape); needs --dout");
  cmd->add_option("--dk", args->dk, "DK.npy: write dk (k's shape); needs --dout");
  cmd->add_option("--dv", args->dv, "DV.npy: write dv (v's shape); needs --dout");
  cmd->add_option("--dq-global", args->dq_global,
                  "DQG.npy: write the gradient of --q-global (its shape); needs --dout and the "
                  "global projections (contract §7.5)");
  cmd->add_option("--dk-global", args->dk_global,
                  "DKG.npy: write the gradient of --k-global (its shape); needs --dout");
  cmd->add_option("--dv-global", args->dv_global,
                  "DVG.npy: write the gradient of --v-global (its shape); needs --dout");
  cmd->add_option("--dsinks", args->dsinks,
                  "DS.npy: write the gradient of --sinks [num_heads of q]; needs --dout and --sinks "
                  "(contract §2.9)");
  add_pattern_flags(cmd, args->pattern);
  add_convention_flags(cmd, args->conventions);
  add_compat_flags(cmd, args->compat);
  add_score_flags(cmd, args->score);
  add_layout_flags(cmd, args->layout);
  add_preset_layer_flags(cmd, args->preset,
                         "the pattern flags, --scale and --softcap (q, k, v must have its heads "
                         "and head_dim)");
  args->cmd = cmd;
  cmd->callback([args] { run_attend(*args); });
}

}  // namespace sparseattn::cli
