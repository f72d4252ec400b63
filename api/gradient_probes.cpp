// Cause probes for failing gradients; see gradient_probes.h.
#include "api/gradient_probes.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "api/check_report.h"

namespace sparseattn::api {

namespace {

// b1_dense_masked_grad's gradients with the softmax Jacobian's row sum left out:
// ds_ij = p_ij · dp_ij instead of p_ij · (dp_ij − Σ_k p_ik dp_ik) — a backward pass that
// forgets D_i = rowsum(dO ∘ O). dv is unaffected. q, k, v, dout rank 4 (bhsd).
GradientResult grad_without_row_sum(const Tensor<double>& q, const Tensor<double>& k,
                                    const Tensor<double>& v, const Tensor<double>& dout,
                                    const Pattern& pattern, double scale) {
  const int64_t B = q.dim(0), H = q.dim(1), Lq = q.dim(2), D = q.dim(3);
  const int64_t Lk = k.dim(2), Dv = v.dim(3);
  GradientResult g;
  g.dq = Tensor<double>(q.shape, 0.0);
  g.dk = Tensor<double>(k.shape, 0.0);
  g.dv = Tensor<double>(v.shape, 0.0);
  std::vector<double> p(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t bh = b * H + h;
      for (int64_t i = 0; i < Lq; ++i) {
        const double* qi = q.ptr() + (bh * Lq + i) * D;
        const double* doi = dout.ptr() + (bh * Lq + i) * Dv;
        double m = -INFINITY;
        for (int64_t j = 0; j < Lk; ++j) {
          p[j] = -INFINITY;
          if (!pattern.allowed(b, h, i, j)) continue;
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * k.data[(bh * Lk + j) * D + d];
          p[j] = scale * dot;
          m = std::max(m, p[j]);
        }
        if (m == -INFINITY) continue;  // fully masked row: no gradient
        double l = 0.0;
        for (int64_t j = 0; j < Lk; ++j) l += std::exp(p[j] - m);
        for (int64_t j = 0; j < Lk; ++j) {
          const double pj = std::exp(p[j] - m) / l;
          if (pj == 0.0) continue;
          double dp = 0.0;
          for (int64_t d = 0; d < Dv; ++d) {
            dp += doi[d] * v.data[(bh * Lk + j) * Dv + d];
            g.dv.data[(bh * Lk + j) * Dv + d] += pj * doi[d];
          }
          const double ds = pj * dp;  // the missing "- row_sum"
          for (int64_t d = 0; d < D; ++d) {
            g.dq.data[(bh * Lq + i) * D + d] += scale * ds * k.data[(bh * Lk + j) * D + d];
            g.dk.data[(bh * Lk + j) * D + d] += scale * ds * qi[d];
          }
        }
      }
    }
  return g;
}

}  // namespace

GradientCause gradient_cause(const Tensor<double>& q, const Tensor<double>& k,
                             const Tensor<double>& v, const Tensor<double>& dout,
                             const Pattern& pattern, const double* scale,
                             const std::array<const Tensor<double>*, 3>& oracle,
                             const std::array<const TensorReport*, 3>& reports,
                             const std::array<const Tensor<double>*, 3>& cands,
                             const ProbeOptions& options) {
  GradientCause out;
  nlohmann::json tried = nlohmann::json::array();
  const int64_t B = q.dim(0), H = q.dim(1), Lq = q.dim(2), D = q.dim(3);
  const int64_t Lk = k.dim(2), Dv = v.dim(3);
  // References of the judged gradients; dk's shape stands in where one was not judged.
  const Tensor<double>* refs[3] = {oracle[0], oracle[1], oracle[2]};

  // Rule before probes: non-finite values only where the oracle's gradient is exactly 0
  // for want of a pair — dq of a fully masked query row, dk and dv of a key no query attends.
  {
    std::vector<uint8_t> empty_q(static_cast<size_t>(B * H * Lq), 1);
    std::vector<uint8_t> empty_k(static_cast<size_t>(B * H * Lk), 1);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Lq; ++i)
          for (int64_t j = 0; j < Lk; ++j)
            if (pattern.allowed(b, h, i, j)) {
              empty_q[static_cast<size_t>((b * H + h) * Lq + i)] = 0;
              empty_k[static_cast<size_t>((b * H + h) * Lk + j)] = 0;
            }
    bool nonfinite = false, only_empty = true;
    for (int t = 0; t < 3; ++t) {
      if (!cands[t] || !refs[t]) continue;
      const std::vector<uint8_t>& empty = t == 0 ? empty_q : empty_k;
      const int64_t width = t == 2 ? Dv : D;
      for (int64_t e = 0; e < refs[t]->numel(); ++e)
        if (!std::isfinite(cands[t]->data[e])) {
          nonfinite = true;
          if (!empty[static_cast<size_t>(e / width)]) only_empty = false;
        }
    }
    if (nonfinite && only_empty) {
      out.probable_cause =
          "NaN/Inf in the gradients of fully masked query rows (dq) or of keys no query attends "
          "(dk, dv): contract §7.2 gives them exactly 0; a softmax over an empty set divides 0 by 0";
      out.probes = {{"tried", tried}};
      return out;
    }
  }

  if (options.mode == ProbeOptions::Mode::never) {
    out.probable_cause = "unknown: probes not run (--probes never)";
    out.probes = {{"tried", tried}, {"skipped", "--probes never"}};
    return out;
  }
  const double work = static_cast<double>(B) * H * Lq * Lk * static_cast<double>(D + Dv);
  if (work > kMaxGradientProbeWork && options.mode == ProbeOptions::Mode::automatic) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "skipped: %.3g multiply-adds per gradient oracle run exceed the gradient probe "
                  "limit %.3g (--probes always runs them; or check a smaller slice, e.g. one head)",
                  work, kMaxGradientProbeWork);
    out.probable_cause = "unknown: gradient probes skipped above the size limit";
    out.probes = {{"tried", tried}, {"skipped", buf}};
    return out;
  }

  std::string cause;
  // Every judged gradient matches `alt` (dq, dk, dv) within its own tolerance.
  auto judge = [&](const std::string& name, const std::array<const Tensor<double>*, 3>& alt,
                   const std::string& text) {
    if (!cause.empty()) return;
    bool ok = true;
    for (int t = 0; t < 3 && ok; ++t)
      if (cands[t] && reports[t] && alt[t]) ok = matches(*cands[t], *alt[t], reports[t]->tol, {});
    tried.push_back({{"probe", name}, {"matches", ok}});
    if (ok) cause = text;
  };
  auto rerun = [&](const std::string& name, const Pattern& p, const double* s,
                   const std::string& text) {
    if (!cause.empty()) return;
    GradientResult g;
    try {
      g = b1_dense_masked_grad(q, k, v, dout, p, s);
    } catch (const std::exception&) {
      return;
    }
    judge(name, {&g.dq, &g.dk, &g.dv}, text);
  };
  auto num = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return std::string(buf);
  };
  const double given = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(D));

  if (given != 1.0 && given != 0.0) {  // dq, dk without their factor scale; dv as it is
    Tensor<double> unscaled[2];  // dq, dk over scale (only those judged)
    for (int t = 0; t < 2; ++t)
      if (refs[t]) {
        unscaled[t] = *refs[t];
        for (double& x : unscaled[t].data) x /= given;
      }
    judge("dq, dk without the scale factor", {&unscaled[0], &unscaled[1], refs[2]},
          "dq and dk lack the scale factor (candidate = oracle / " + num(given) +
              "): the scores are scale * q.k, so dQ = scale * dS K and dK = scale * dS^T Q "
              "(docs/backward.md)");
  }
  {
    const GradientResult g = grad_without_row_sum(q, k, v, dout, pattern, given);
    judge("softmax Jacobian without rowsum(dO * O)", {&g.dq, &g.dk, &g.dv},
          "the softmax Jacobian's row sum is missing: dS = P * dP where it must be "
          "P * (dP - rowsum(dO * O)) (docs/backward.md)");
  }
  if (D > 1) {
    const double sd = 1.0 / static_cast<double>(D);
    if (std::fabs(sd - given) > 1e-15)
      rerun("scale 1/head_dim", pattern, &sd,
            "scale 1/head_dim (candidate gradients match the oracle's with --scale " + num(sd) + ")");
  }
  const double one = 1.0;
  if (given != 1.0)
    rerun("scale 1", pattern, &one, "scale 1 (candidate gradients match the oracle's with --scale 1)");
  const PatternKind kind = pattern.spec.kind;
  const bool banded = kind == PatternKind::window || kind == PatternKind::longformer ||
                      kind == PatternKind::random;
  auto with_spec = [&](const PatternSpec& spec, Pattern* p) {
    try {
      *p = materialize(spec, pattern.sizes);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
  if (banded)
    for (int delta : {-1, 1}) {
      PatternSpec sp = pattern.spec;
      if (sp.window + delta < 0) continue;
      sp.window += delta;
      Pattern p;
      if (with_spec(sp, &p))
        rerun(delta < 0 ? "window one narrower" : "window one wider", p, scale,
              std::string("window one ") + (delta < 0 ? "narrower" : "wider") +
                  " (candidate gradients match --window " + std::to_string(sp.window) + ")");
    }
  if (banded || kind == PatternKind::dense) {
    PatternSpec sp = pattern.spec;
    sp.causal = !sp.causal;
    Pattern p;
    if (with_spec(sp, &p))
      rerun(sp.causal ? "causal" : "not causal", p, scale,
            sp.causal ? "causal mask applied (candidate gradients match with --causal)"
                      : "causal mask missing (candidate gradients match without --causal)");
  }
  out.probable_cause = cause.empty() ? "unknown: no gradient probe matched (a local error, not one "
                                       "of the usual backward-pass mistakes)"
                                     : cause;
  out.probes = {{"tried", tried}};
  return out;
}

}  // namespace sparseattn::api
