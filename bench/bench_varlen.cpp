// bench_varlen: what a packed batch of variable-length sequences (contract §2.10) costs the
// walk of api/layout_walk.h, as ratios within one interleaved run (docs/benchmarks.md,
// "Packed variable-length batches").
//
//   build/bench_varlen [--sequences 48] [--min-len 64] [--max-len 8192] [--heads 2]
//                      [--head-dim 64] [--window 256] [--mask-sequences 16]
//                      [--mask-max-len 2048] [--rounds 3] [--json FILE]
//
// For dense causal (cpu_k01_dense_flash) and a causal window (cpu_k02_window_band), float32,
// H_q = H_kv = --heads:
//   walk / one by one: the packed batch through attend_varlen against the same sequences run
//     one by one from problems made beforehand (make_problem) — the walk's own cost (reading
//     each sequence out of the packed tensors, its pattern, writing it back); target <= 1.10.
//     The walk's float32 roundings are prepared once too (round_varlen_inputs), as the
//     one-by-one problems' are: conversion is never timed (registry.h). Lengths are
//     log-uniform in [--min-len, --max-len] (seeded), as a training batch of documents;
//   walk from float64 / one by one: the same walk without the prepared roundings (each
//     sequence's rows rounded as they are read: what `sparseattn attend` does); no target;
//   mask / walk: one problem of total_q x total_k whose explicit mask is block diagonal
//     (cpu_k06_generic_tiles, the only kernel that reads an explicit mask) against the walk,
//     on a smaller mix (--mask-sequences up to --mask-max-len: the mask is total² bytes),
//     twice: against the walk through k06 itself (the same kernel: what the layout alone
//     saves) and through the case's kernel (what a user gets); target >= 3 for both. The
//     mask's pattern is built before timing (its O(total²) scan excluded); one more ratio
//     (no target) adds that build (materialize of the total² mask) to the mask's side.
// Every variant's o is compared with the walk's before anything is timed (the one-by-one
// run must equal it exactly, the mask's within float32's tolerance). A round runs every
// variant once (median of 2 calls) after one unrecorded warm-up; each ratio is printed as
// the median over the rounds with the lowest and highest. Exits 1 when outputs disagree.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "api/layout_walk.h"
#include "core/check.h"
#include "core/numerics.h"
#include "core/seeded_inputs.h"
#include "registry/registry.h"

namespace sparseattn::bench {
namespace {

struct Options {
  int64_t sequences = 48, min_len = 64, max_len = 8192, heads = 2, head_dim = 64, window = 256;
  int64_t mask_sequences = 16, mask_max_len = 2048, rounds = 3;
  std::string json;
};

// Output equality of two float32 walks (exact: the same kernel on the same rounded rows).
bool same_o(const Output& a, const Output& b) { return a.o32.data == b.o32.data; }

double seconds(const std::function<void()>& f) {
  double best[2];
  for (double& t : best) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return (best[0] + best[1]) / 2;
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

// Log-uniform lengths in [lo, hi] from a seeded stream.
std::vector<int64_t> lengths(int64_t count, int64_t lo, int64_t hi, uint64_t seed) {
  const Tensor<double> u = testing_inputs::random_tensor({count}, seed, 0.0, 1.0);
  std::vector<int64_t> out;
  for (double x : u.data)
    out.push_back(std::clamp<int64_t>(std::llround(std::exp(std::log(double(lo)) +
                                                            x * (std::log(double(hi)) - std::log(double(lo))))),
                                      lo, hi));
  return out;
}

api::VarlenInputs packed_batch(const std::vector<int64_t>& lens, const Options& o,
                               const PatternSpec& spec) {
  api::VarlenInputs in;
  std::vector<int64_t> cu = {0};
  for (int64_t l : lens) cu.push_back(cu.back() + l);
  in.q = testing_inputs::random_tensor({cu.back(), o.heads, o.head_dim}, 1);
  in.k = testing_inputs::random_tensor({cu.back(), o.heads, o.head_dim}, 2);
  in.v = testing_inputs::random_tensor({cu.back(), o.heads, o.head_dim}, 3);
  in.varlen = {cu, cu};
  in.spec = spec;
  return in;
}

struct Ratio {
  std::string name;
  std::vector<double> values;
  double target;
  bool at_most;
};

int run(const Options& o) {
  PatternSpec dense;
  dense.causal = true;
  PatternSpec window;
  window.kind = PatternKind::window;
  window.window = o.window;
  window.causal = true;
  struct Case {
    const char* name;
    PatternSpec spec;
    const Kernel* kernel;
  };
  const std::vector<Case> cases = {{"dense causal", dense, &find_kernel("cpu_k01_dense_flash")},
                                   {"window causal", window, &find_kernel("cpu_k02_window_band")}};
  const std::vector<int64_t> mix = lengths(o.sequences, o.min_len, o.max_len, 7);
  const std::vector<int64_t> small = lengths(o.mask_sequences, o.min_len, o.mask_max_len, 8);
  int64_t total = 0, total_small = 0;
  for (int64_t l : mix) total += l;
  for (int64_t l : small) total_small += l;
  std::printf("bench_varlen: %lld sequences, %lld tokens (lengths %lld..%lld, log-uniform); mask "
              "mix %lld sequences, %lld tokens; %lld heads, head_dim %lld\n",
              (long long)o.sequences, (long long)total, (long long)o.min_len, (long long)o.max_len,
              (long long)o.mask_sequences, (long long)total_small, (long long)o.heads,
              (long long)o.head_dim);
  std::vector<Ratio> ratios;
  std::vector<std::function<void(size_t round)>> rounds_of;
  for (const Case& c : cases) {
    // walk / one by one
    auto in64 = std::make_shared<api::VarlenInputs>(packed_batch(mix, o, c.spec));
    auto in = std::make_shared<api::VarlenInputs>(*in64);
    api::round_varlen_inputs(*in);
    auto patterns = std::make_shared<std::vector<Pattern>>();
    for (int64_t l : mix) patterns->push_back(api::sequence_pattern(c.spec, o.heads, l, l));
    auto problems = std::make_shared<std::vector<Problem>>();
    for (size_t b = 0; b < mix.size(); ++b) {
      const int64_t lo = in->varlen.cu_seqlens_q[b], hi = in->varlen.cu_seqlens_q[b + 1];
      problems->push_back(make_problem(packed_rows(in->q, lo, hi), packed_rows(in->k, lo, hi),
                                       packed_rows(in->v, lo, hi), (*patterns)[b], nullptr));
    }
    const Output walk = api::attend_varlen(*c.kernel, *in);
    if (!same_o(walk, api::attend_varlen(*c.kernel, *in64))) {
      std::fprintf(stderr, "bench_varlen: %s: the walk from float64 differs from the prepared one\n", c.name);
      return 1;
    }
    for (size_t b = 0; b < mix.size(); ++b) {
      Output ob;
      c.kernel->run((*problems)[b], ob);
      const Tensor<float> piece = packed_rows(walk.o32, in->varlen.cu_seqlens_q[b], in->varlen.cu_seqlens_q[b + 1]);
      if (piece.data != ob.o32.data) {
        std::fprintf(stderr, "bench_varlen: %s: the walk's sequence %zu differs from its own run\n", c.name, b);
        return 1;
      }
    }
    const size_t one = ratios.size();
    ratios.push_back({std::string(c.name) + ": walk / one by one", {}, 1.10, true});
    ratios.push_back({std::string(c.name) + ": walk from float64 / one by one", {}, 0.0, true});
    // The problems point into `patterns`: the closure keeps them alive.
    rounds_of.push_back([=, &ratios, keep = patterns](size_t) {
      const double t_walk = seconds([&] { api::attend_varlen(*c.kernel, *in); });
      const double t_each = seconds([&] {
        for (const Problem& p : *problems) {
          Output ob;
          c.kernel->run(p, ob);
        }
      });
      const double t_walk64 = seconds([&] { api::attend_varlen(*c.kernel, *in64); });
      ratios[one].values.push_back(t_walk / t_each);
      ratios[one + 1].values.push_back(t_walk64 / t_each);
    });
    // mask / walk
    auto small_in = std::make_shared<api::VarlenInputs>(packed_batch(small, o, c.spec));
    api::round_varlen_inputs(*small_in);
    const int64_t t = total_small;
    PatternSpec block;
    block.kind = PatternKind::explicit_mask;
    Tensor<uint8_t> mask({t, t}, 0);
    for (size_t b = 0; b + 1 < small_in->varlen.cu_seqlens_q.size(); ++b) {
      const int64_t lo = small_in->varlen.cu_seqlens_q[b], hi = small_in->varlen.cu_seqlens_q[b + 1];
      const Pattern seq = api::sequence_pattern(c.spec, 1, hi - lo, hi - lo);
      for (int64_t i = lo; i < hi; ++i)
        for (int64_t j = lo; j < hi; ++j) mask.data[static_cast<size_t>(i * t + j)] = seq.allowed(0, 0, i - lo, j - lo);
    }
    block.mask = std::move(mask);
    auto block_spec = std::make_shared<PatternSpec>(block);  // to time the pattern's build
    auto block_pattern = std::make_shared<Pattern>(materialize(block, {1, o.heads, t, t}));
    auto whole = std::make_shared<Problem>(make_problem(packed_rows(small_in->q, 0, t), packed_rows(small_in->k, 0, t),
                                                        packed_rows(small_in->v, 0, t), *block_pattern, nullptr));
    const Kernel& k06 = find_kernel("cpu_k06_generic_tiles");
    Output masked;
    k06.run(*whole, masked);
    const Output small_walk = api::attend_varlen(*c.kernel, *small_in);
    const Output small_walk06 = api::attend_varlen(k06, *small_in);
    Tensor<float> packed({t, o.heads, o.head_dim});
    scatter_packed_rows(masked.o32, packed, 0);
    const CheckReport agree = check_close(packed, tensor_cast<double>(small_walk.o32), kTolFloat32);
    const CheckReport agree06 = check_close(packed, tensor_cast<double>(small_walk06.o32), kTolFloat32);
    if (!agree.pass || !agree06.pass) {
      std::fprintf(stderr, "bench_varlen: %s: the block-diagonal mask's o differs from the walk's: %s\n",
                   c.name, (agree.pass ? agree06 : agree).reason.c_str());
      return 1;
    }
    const size_t two = ratios.size();
    ratios.push_back({std::string(c.name) + ": block-diagonal mask (k06) / walk (k06)", {}, 3.0, false});
    ratios.push_back({std::string(c.name) + ": block-diagonal mask (k06) / walk (" +
                          std::string(c.kernel->name).substr(4, 3) + ")", {}, 3.0, false});
    ratios.push_back({std::string(c.name) + ": mask's pattern build + k06 / walk (" +
                          std::string(c.kernel->name).substr(4, 3) + ")", {}, 0.0, false});
    rounds_of.push_back([=, &ratios, &k06, keep = block_pattern](size_t) {
      const double t_mask = seconds([&] {
        Output out;
        k06.run(*whole, out);
      });
      const double t_build = seconds([&] { materialize(*block_spec, {1, o.heads, t, t}); });
      const double t_walk06 = seconds([&] { api::attend_varlen(k06, *small_in); });
      const double t_walk = seconds([&] { api::attend_varlen(*c.kernel, *small_in); });
      ratios[two].values.push_back(t_mask / t_walk06);
      ratios[two + 1].values.push_back(t_mask / t_walk);
      ratios[two + 2].values.push_back((t_build + t_mask) / t_walk);
    });
  }
  for (auto& f : rounds_of) f(0);  // warm-up, unrecorded
  for (Ratio& r : ratios) r.values.clear();
  for (int64_t round = 0; round < o.rounds; ++round)
    for (auto& f : rounds_of) f(static_cast<size_t>(round));
  std::string json = "[\n";
  for (const Ratio& r : ratios) {
    const double m = median(r.values);
    const double lo = *std::min_element(r.values.begin(), r.values.end());
    const double hi = *std::max_element(r.values.begin(), r.values.end());
    const bool has_target = r.target > 0.0;
    const bool met = !has_target || (r.at_most ? m <= r.target : m >= r.target);
    if (has_target)
      std::printf("  %-56s %.3fx (rounds %.3f..%.3f)  target %s %.2fx: %s\n", r.name.c_str(), m, lo,
                  hi, r.at_most ? "<=" : ">=", r.target, met ? "met" : "NOT met");
    else
      std::printf("  %-56s %.3fx (rounds %.3f..%.3f)  (no target)\n", r.name.c_str(), m, lo, hi);
    json += "  {\"ratio\": \"" + r.name + "\", \"median\": " + std::to_string(m) + ", \"min\": " +
            std::to_string(lo) + ", \"max\": " + std::to_string(hi) + ", \"met\": " +
            (has_target ? (met ? "true" : "false") : "null") + "}" + (&r == &ratios.back() ? "\n" : ",\n");
  }
  json += "]\n";
  if (!o.json.empty()) {
    const std::string tmp = o.json + ".tmp";  // no half-written file (contract §5.4)
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr || std::fputs(json.c_str(), f) < 0 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), o.json.c_str()) != 0) {
      std::fprintf(stderr, "bench_varlen: cannot write %s\n", o.json.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace sparseattn::bench

int main(int argc, char** argv) {
  sparseattn::bench::Options o;
  CLI::App app{"bench_varlen: a packed batch through the walk, as ratios in one run"};
  app.add_option("--sequences", o.sequences, "sequences in the mix, >= 1")->check(CLI::PositiveNumber);
  app.add_option("--min-len", o.min_len, "shortest sequence, tokens >= 1")->check(CLI::PositiveNumber);
  app.add_option("--max-len", o.max_len, "longest sequence, tokens >= --min-len")->check(CLI::PositiveNumber);
  app.add_option("--heads", o.heads, "heads (H_q = H_kv), >= 1")->check(CLI::PositiveNumber);
  app.add_option("--head-dim", o.head_dim, "head_dim, >= 1")->check(CLI::PositiveNumber);
  app.add_option("--window", o.window, "one-sided causal window, tokens >= 0")->check(CLI::NonNegativeNumber);
  app.add_option("--mask-sequences", o.mask_sequences, "sequences of the mask mix, >= 1")
      ->check(CLI::PositiveNumber);
  app.add_option("--mask-max-len", o.mask_max_len, "longest sequence of the mask mix, >= --min-len")
      ->check(CLI::PositiveNumber);
  app.add_option("--rounds", o.rounds, "timed rounds, >= 1")->check(CLI::PositiveNumber);
  app.add_option("--json", o.json, "FILE: the ratios as JSON");
  CLI11_PARSE(app, argc, argv);
  if (o.max_len < o.min_len || o.mask_max_len < o.min_len) {
    std::fprintf(stderr, "bench_varlen: --max-len and --mask-max-len must be >= --min-len (%lld)\n",
                 static_cast<long long>(o.min_len));
    return 2;
  }
  try {
    return sparseattn::bench::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_varlen: %s\n", e.what());
    return 1;
  }
}
