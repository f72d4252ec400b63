// Checks contract §5.4 (no partial output: the report is renamed into place, a bad input leaves nothing) for the CPU targets report.
// bench/targets.h on synthetic bench_cpu JSON: every row's status (met, not met, not
// measured, not built, not applicable) and its measured values, the FMA-pipe bound
// 2d/(2d + c) and the notes built from it (hand-computed below), the fallback n of the
// speedup rows, repetitions reduced to their median, the peers' files, the rows of
// bench_modern's, bench_decode's and bench_selected's files (met, not met, absent, broken);
// then the bench_targets binary end to end, and those three programs' --json on a tiny run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/targets.h"

namespace sparseattn::bench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// One bench_cpu row as Google Benchmark writes it (time in ms, counters at top level).
// flops follow the pattern: 4 · keys_per_row · d · n; cpu_GFLOP/s = cpu_frac · peak.
json point(const std::string& kernel, const std::string& family, int64_t d, int64_t n,
           double cpu_frac, double keys_per_row, double peak_cpu = 100.0) {
  const double flops = 4.0 * keys_per_row * d * n;
  const double cpu_gflops = cpu_frac * peak_cpu;
  return json{{"name", kernel + "/" + family + "/D" + std::to_string(d) + "/seq_len:" +
                           std::to_string(n) + "/min_time:0.300/real_time"},
              {"run_name", kernel + "/" + family + "/D" + std::to_string(d) + "/seq_len:" +
                               std::to_string(n) + "/min_time:0.300/real_time"},
              {"run_type", "iteration"},
              {"real_time", flops / (cpu_gflops * 1e9) * 1e3},  // as if the wall = CPU time
              {"time_unit", "ms"},
              {"flops", flops},
              {"dense_flops", 4.0 * n * static_cast<double>(n) * d},
              {"GFLOP/s", cpu_gflops},
              {"cpu_GFLOP/s", cpu_gflops},
              {"frac_peak", cpu_frac},
              {"cpu_frac_peak", cpu_frac},
              {"peak_gflops", 2 * peak_cpu},
              {"peak_cpu_gflops", peak_cpu}};
}

json error_point(const std::string& kernel, const std::string& family, int64_t d, int64_t n,
                 const std::string& message) {
  return json{{"name", kernel + "/" + family + "/D" + std::to_string(d) + "/seq_len:" +
                           std::to_string(n) + "/min_time:0.300/real_time"},
              {"run_type", "iteration"},
              {"error_occurred", true},
              {"error_message", message}};
}

json bench_json(json points, const std::string& mode = "full",
                const std::string& isa = "avx512 (supported: avx2 avx512; avx512_bf16: yes)") {
  return json{{"context",
               {{"date", "2026-11-30T15:00:00+00:00"},
                {"mode", mode},
                {"cpu_isa", isa},
                {"fma_probe_lanes", "16"},
                {"omp_threads", "2"},
                {"peak_fma_gflops", "190.0"},
                {"peak_fma_cpu_gflops", "99.0"}}},
              {"benchmarks", std::move(points)}};
}

const TargetRow& row(const TargetsReport& r, const std::string& id) {
  for (const TargetRow& t : r.rows)
    if (t.id == id) return t;
  ADD_FAILURE() << "no row " << id;
  static TargetRow none;
  return none;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(BenchTargets, FmaPipeBoundIsTwoDOverTwoDPlusSoftmaxOps) {
  EXPECT_NEAR(fma_pipe_bound(64, kSoftmaxOpsAll), 128.0 / 151.0, 1e-12);
  EXPECT_NEAR(fma_pipe_bound(64, kSoftmaxOpsFmaMul), 128.0 / 139.0, 1e-12);
  EXPECT_NEAR(fma_pipe_bound(32, kSoftmaxOpsAll), 64.0 / 87.0, 1e-12);
  EXPECT_NEAR(fma_pipe_bound(128, kSoftmaxOpsFmaMul), 256.0 / 267.0, 1e-12);
  // The counts of flash_tile.h's softmax_update: 1 max + 1 subtract + 20 exp + 1 sum.
  EXPECT_EQ(kSoftmaxOpsAll, 1 + 1 + kExpOps + 1);
}

// The full grid with every kind of row: met, not met (three verdicts), missing points,
// an error row, the speedup fallback, no bf16 entry, no peers' files.
TEST(BenchTargets, FullGridRows) {
  const double window_keys = 513, longformer_keys = 515;
  json pts = json::array({
      point("cpu_k01_dense_flash", "dense", 64, 1024, 0.30, 1024),  // n < 2048: not counted
      point("cpu_k01_dense_flash", "dense", 64, 2048, 0.90, 2048),
      point("cpu_k01_dense_flash", "dense", 64, 4096, 0.88, 4096),
      point("cpu_k01_dense_flash", "dense", 64, 16384, 0.70, 16384),
      point("cpu_k01_dense_flash", "dense", 128, 2048, 0.80, 2048),
      point("cpu_k01_dense_flash", "dense", 128, 4096, 0.86, 4096),
      point("cpu_k02_window_band", "window_w256", 64, 16384, 0.50, window_keys),
      point("cpu_k04_longformer", "longformer_w256_g2", 64, 4096, 0.40, longformer_keys),
      point("cpu_k01_dense_flash", "dense", 64, 512, 0.50, 512),
      error_point("cpu_k05_bigbird_blocks", "bigbird_b64_r3", 64, 16384,
                  "validation failed: o: mismatch"),
      json{{"name", "peak_fma/real_time"}, {"run_type", "iteration"}, {"GFLOP/s", 190.0}},
      json{{"name", "cpu_k01_dense_flash/dense/D64_BigO"}, {"run_type", "aggregate"}},
  });
  const TargetsReport r = evaluate_targets(bench_json(pts), {});

  // dense d64: n 2048 and 4096 at 90% and 88%, but n 16384 at 70%: the worst decides.
  const TargetRow& d64 = row(r, "dense_d64");
  EXPECT_EQ(d64.status, "not met");
  ASSERT_EQ(d64.values.size(), 3u);  // n 2048, 4096, 16384; not 512 or 1024
  EXPECT_EQ(d64.values[0]["seq_len"], 2048);
  EXPECT_NEAR(d64.values[2]["cpu_frac_peak"].get<double>(), 0.70, 1e-12);
  EXPECT_TRUE(has(d64.measured, "n 16384: 70% per CPU-second")) << d64.measured;
  // 85% lies between 2·64/(128+23) = 84.8% and 2·64/(128+11) = 92.1%.
  EXPECT_TRUE(has(d64.bound, "FMA pipes: ≤ 85%–92% of peak at d 64")) << d64.bound;
  EXPECT_TRUE(has(d64.bound, "needs the softmax's adds, compares and integer operations off the "
                             "FMA pipes"))
      << d64.bound;
  EXPECT_TRUE(has(d64.bound, "exp: 20 ops per 16 scores, 13% of the vector work")) << d64.bound;
  // Dense at n 16384: 2/16384 B/FLOP of packing, at 70 GFLOP/s.
  EXPECT_TRUE(has(d64.bound, "memory: 0.0001 B/FLOP panel packing (K transposed once per head; "
                             "V and the chunks read in place) = 0.01 GB/s at the measured 70 "
                             "GFLOP/s"))
      << d64.bound;

  // dense d128: 80% at n 2048, under the 92%–96% bound.
  const TargetRow& d128 = row(r, "dense_d128");
  EXPECT_EQ(d128.status, "not met");
  EXPECT_TRUE(has(d128.bound, "≤ 92%–96% of peak at d 128")) << d128.bound;
  EXPECT_TRUE(has(d128.bound, "is under the FMA-pipe bound: the gap (80% measured)")) << d128.bound;

  // dense d32: no point at all.
  const TargetRow& d32 = row(r, "dense_d32");
  EXPECT_EQ(d32.status, "not measured");
  EXPECT_EQ(d32.measured, "not measured");
  EXPECT_TRUE(d32.bound.empty());

  // window w256 at n 16384: 50%; bound 85%–92% × 513/576.
  const TargetRow& w = row(r, "window_w256");
  EXPECT_EQ(w.status, "not met");
  EXPECT_TRUE(has(w.bound, "× 0.89 counted share of the scores computed = 75%–82%")) << w.bound;
  // 2 / 513 keys per row.
  EXPECT_TRUE(has(w.bound, "memory: 0.0039 B/FLOP panel packing")) << w.bound;

  // window vs dense at 16384: pattern 50 GFLOP/s per CPU-second against dense's 70:
  // 0.71 of the FLOP ratio (16384/513 = 31.9).
  const TargetRow& ws = row(r, "window_w256_vs_dense");
  EXPECT_EQ(ws.status, "not met");
  ASSERT_EQ(ws.values.size(), 1u);
  EXPECT_EQ(ws.values[0]["seq_len"], 16384);
  EXPECT_NEAR(ws.values[0]["flop_ratio"].get<double>(), 16384.0 / 513.0, 1e-9);
  EXPECT_NEAR(ws.values[0]["of_flop_ratio_cpu"].get<double>(), 50.0 / 70.0, 1e-9);
  EXPECT_NEAR(ws.values[0]["of_flop_ratio_wall"].get<double>(), 50.0 / 70.0, 1e-9);
  EXPECT_TRUE(has(ws.measured, "22.8× of a 31.9× FLOP ratio = 0.71 of it")) << ws.measured;
  EXPECT_TRUE(has(ws.bound, "(50% against 70% of peak per CPU-second)")) << ws.bound;

  // Longformer: n 16384 missing; the speedup falls back to n 4096, where dense ran at 88%.
  EXPECT_EQ(row(r, "longformer_w256_g2").status, "not measured");
  const TargetRow& ls = row(r, "longformer_w256_g2_vs_dense");
  EXPECT_TRUE(has(ls.what, "n 4096 (n 16384 not measured for both")) << ls.what;
  EXPECT_NEAR(ls.values[0]["of_flop_ratio_cpu"].get<double>(), 0.40 / 0.88, 1e-9);
  EXPECT_EQ(ls.status, "not met");
  // Its pattern bound: (513 + 2) / (64 + 512 + 2·16) = 0.85 counted share on 16 lanes.
  EXPECT_TRUE(has(ls.bound, "× 0.85 counted share")) << ls.bound;
  // The Longformer note names k04's mask; the window's does not.
  EXPECT_TRUE(has(ls.bound, "mask: k04 masks a band row by two fills per edge chunk")) << ls.bound;
  EXPECT_FALSE(has(ws.bound, "mask:")) << ws.bound;

  // BigBird: the point reported an error instead of a time.
  const TargetRow& bb = row(r, "bigbird_b64_r3");
  EXPECT_EQ(bb.status, "not measured");
  EXPECT_TRUE(has(bb.measured, "n 16384: error (validation failed: o: mismatch)")) << bb.measured;

  EXPECT_EQ(row(r, "bf16").status, "not built");
  EXPECT_EQ(row(r, "peers").measured, "run make peers-bench");

  // The interleaved peaks' range and the start-up one land in the context.
  EXPECT_NEAR(r.context["peak_startup_cpu_gflops"].get<double>(), 99.0, 1e-12);
  EXPECT_NEAR(r.context["peak_interleaved"]["cpu_gflops_max"].get<double>(), 100.0, 1e-12);

  // JSON and markdown carry the same rows.
  const json j = to_json(r);
  ASSERT_EQ(j["targets"].size(), r.rows.size());
  EXPECT_EQ(j["targets"][0]["met"], false);
  EXPECT_TRUE(j["targets"][2]["met"].is_null());  // not measured: neither true nor false
  const std::string md = to_markdown(r);
  EXPECT_TRUE(has(md, "| dense float32 (`cpu_k01_dense_flash`), head_dim 64, n ≥ 2048 | ≥ 85% of "
                      "peak per CPU-second |"))
      << md;
  EXPECT_TRUE(has(md, "| **no** |"));
}

TEST(BenchTargets, MetRowsHaveNoBoundNote) {
  json pts = json::array({
      point("cpu_k01_dense_flash", "dense", 32, 2048, 0.66, 2048),
      point("cpu_k01_dense_flash", "dense", 64, 16384, 0.70, 16384),
      point("cpu_k05_bigbird_blocks", "bigbird_b64_r3", 64, 16384, 0.72, 512),
      point("cpu_k02_window_band", "window_w256", 64, 16384, 0.72, 513),
  });
  const TargetsReport r = evaluate_targets(bench_json(pts), {});
  for (const char* id : {"dense_d32", "bigbird_b64_r3", "window_w256", "window_w256_vs_dense"}) {
    EXPECT_EQ(row(r, id).status, "met") << id;
    EXPECT_TRUE(row(r, id).bound.empty()) << id;
  }
  // 0.72 / 0.70 = 1.03 of the FLOP ratio, at n 16384 itself.
  EXPECT_NEAR(row(r, "window_w256_vs_dense").values[0]["of_flop_ratio_cpu"].get<double>(),
              0.72 / 0.70, 1e-9);
  EXPECT_FALSE(has(row(r, "window_w256_vs_dense").what, "not measured for both"));
}

// engine_parts rows (bench_cpu, optimized/cpu/engine_probe.h) as Google Benchmark writes them.
json engine_point(int64_t d, double qk, double pv, double step) {
  const std::string name = "engine_parts/D" + std::to_string(d) + "/iterations:1";
  return json{{"name", name},           {"run_name", name},       {"run_type", "iteration"},
              {"real_time", 400.0},     {"time_unit", "ms"},      {"head_dim", d},
              {"qk_frac_peak", qk},     {"pv_frac_peak", pv},     {"step_frac_peak", step},
              {"peak_cpu_gflops", 230.0}};
}

// The measured ceiling of the engine is set beside each fraction-of-peak target it bounds,
// times the counted share for a window, and decides the verdict when the target is above it.
TEST(BenchTargets, EngineCeilingIsReportedAndBoundsTheTargets) {
  json pts = json::array({
      point("cpu_k01_dense_flash", "dense", 64, 4096, 0.55, 4096),
      point("cpu_k01_dense_flash", "dense", 128, 4096, 0.58, 4096),
      point("cpu_k02_window_band", "window_w256", 64, 16384, 0.43, 513),
      engine_point(64, 0.80, 0.76, 0.64),
      engine_point(128, 0.92, 0.90, 0.88),
  });
  const std::map<int64_t, EngineCeiling> e = parse_engine_ceilings(bench_json(pts));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_DOUBLE_EQ(e.at(64).qk, 0.80);
  EXPECT_DOUBLE_EQ(e.at(64).pv, 0.76);
  EXPECT_DOUBLE_EQ(e.at(64).step, 0.64);
  // Kernel points are not engine rows, nor the other way round.
  EXPECT_EQ(parse_bench_points(bench_json(pts)).size(), 3u);

  const TargetsReport r = evaluate_targets(bench_json(pts), {});
  const TargetRow& ceiling = row(r, "engine_ceiling_d64");
  EXPECT_EQ(ceiling.status, "reported");
  EXPECT_EQ(ceiling.measured, "QKᵀ 80%, P·V 76%, tile step with the softmax 64% of peak per CPU-second");
  // d 64: 85% is above the measured step (64%): the verdict names the engine on this core.
  const TargetRow& d64 = row(r, "dense_d64");
  EXPECT_TRUE(has(d64.bound, "measured here (`engine_parts/D64`: one thread, hot in cache): QKᵀ "
                             "micro-kernel 80%, P·V 76%, a tile step with its softmax 64% of peak"))
      << d64.bound;
  EXPECT_TRUE(has(d64.bound, "The target (85%) is above what the engine's tile step reaches on hot "
                             "data on this machine (64%)"))
      << d64.bound;
  EXPECT_TRUE(has(d64.bound, "(55% measured)")) << d64.bound;
  // d 128: the step reaches 88% > 85%: the static verdict stays (no engine verdict).
  const TargetRow& d128 = row(r, "dense_d128");
  EXPECT_TRUE(has(d128.bound, "tile step with its softmax 88% of peak")) << d128.bound;
  EXPECT_FALSE(has(d128.bound, "above what the engine's tile step reaches")) << d128.bound;
  // The window counts 513 of 576 scores computed: 64% × 0.89 = 57%.
  const TargetRow& w = row(r, "window_w256");
  EXPECT_TRUE(has(w.bound, "64% of peak × 0.89 = 57%")) << w.bound;
  EXPECT_TRUE(has(w.bound, "The target (70%) is above what the engine's tile step reaches on hot "
                           "data on this machine (57%)"))
      << w.bound;
  // Without engine rows: no ceiling row, no measured part in the notes.
  const TargetsReport none = evaluate_targets(bench_json(json::array({pts[0]})), {});
  for (const TargetRow& t : none.rows) EXPECT_NE(t.id.rfind("engine_ceiling", 0), 0u) << t.id;
  EXPECT_FALSE(has(row(none, "dense_d64").bound, "measured here")) << row(none, "dense_d64").bound;
}

TEST(BenchTargets, QuickGridSaysSo) {
  json pts = json::array({point("cpu_k01_dense_flash", "dense", 64, 2048, 0.5, 2048)});
  const TargetsReport r = evaluate_targets(bench_json(pts, "quick"), {});
  EXPECT_EQ(row(r, "bigbird_b64_r3").measured, "not measured in the quick grid");
  EXPECT_EQ(row(r, "dense_d128").measured, "not measured in the quick grid");
  EXPECT_EQ(row(r, "dense_d64").status, "not met");
}

TEST(BenchTargets, RepetitionsGiveTheirMedian) {
  json pts = json::array({point("cpu_k01_dense_flash", "dense", 64, 2048, 0.95, 2048),
                          point("cpu_k01_dense_flash", "dense", 64, 2048, 0.60, 2048),
                          point("cpu_k01_dense_flash", "dense", 64, 2048, 0.80, 2048)});
  const std::vector<BenchPoint> p = parse_bench_points(bench_json(pts));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NEAR(p[0].cpu_frac_peak, 0.80, 1e-12);
  EXPECT_EQ(p[0].head_dim, 64);
  EXPECT_EQ(p[0].seq_len, 2048);
  EXPECT_THROW(parse_bench_points(json{{"context", json::object()}}), std::runtime_error);
}

TEST(BenchTargets, Bf16EntriesPairWithTheirFloat32Kernel) {
  json pts = json::array({
      point("cpu_k01_dense_flash", "dense", 64, 2048, 0.50, 2048),
      point("cpu_k01_dense_flash_bf16", "dense", 64, 2048, 1.00, 2048),  // 2× the f32 rate
      point("cpu_k02_window_band", "window_w256", 64, 4096, 0.50, 513),
      point("cpu_k02_window_band_bf16", "window_w256", 64, 4096, 0.60, 513),  // 1.2×
      point("cpu_k05_bigbird_blocks_bf16", "bigbird_b64_r3", 64, 4096, 0.60, 512),  // no f32
  });
  const TargetsReport r = evaluate_targets(bench_json(pts), {});
  const TargetRow& dense = row(r, "bf16/cpu_k01_dense_flash_bf16/dense/D64");
  EXPECT_EQ(dense.status, "met");
  EXPECT_NEAR(dense.values[0]["ratio_cpu"].get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(dense.values[0]["ratio_wall"].get<double>(), 2.0, 1e-12);
  const TargetRow& window = row(r, "bf16/cpu_k02_window_band_bf16/window_w256/D64");
  EXPECT_EQ(window.status, "not met");
  EXPECT_TRUE(has(window.measured, "1.20× per CPU-second")) << window.measured;
  // (128 + 23) / (64 + 23 + 1) = 1.72, (128 + 11) / (64 + 11 + 1) = 1.83.
  EXPECT_TRUE(has(window.bound, "≤ 1.72–1.83× at d 64")) << window.bound;
  const TargetRow& bird = row(r, "bf16/cpu_k05_bigbird_blocks_bf16/bigbird_b64_r3/D64");
  EXPECT_EQ(bird.status, "not measured");
  EXPECT_TRUE(has(bird.measured, "no float32 `cpu_k05_bigbird_blocks` point")) << bird.measured;
  for (const TargetRow& t : r.rows) EXPECT_NE(t.status, "not built");

  // The bound follows the engine the run used (bench_cpu's bf16_engine context).
  json widen = bench_json(pts);
  widen["context"]["bf16_engine"] = "widen (vdpbf16ps 0.50× the FMA FLOP rate)";
  const TargetsReport rw = evaluate_targets(widen, {});
  const TargetRow& w = row(rw, "bf16/cpu_k02_window_band_bf16/window_w256/D64");
  EXPECT_TRUE(has(w.bound, "the engine that ran: widen (vdpbf16ps 0.50× the FMA FLOP rate). The "
                           "widening engine runs the float32 FMAs"))
      << w.bound;
  EXPECT_FALSE(has(w.bound, "halves the 2d FMA slots")) << w.bound;
  json amx = bench_json(pts);
  amx["context"]["bf16_engine"] = "amx (AMX-BF16 tiles)";
  const TargetsReport ra = evaluate_targets(amx, {});
  const TargetRow& a = row(ra, "bf16/cpu_k02_window_band_bf16/window_w256/D64");
  // (128 + 23) / (0 + 23 + 1) = 6.3, (128 + 11) / (11 + 1) = 11.6.
  EXPECT_TRUE(has(a.bound, "≤ 6.3–11.6× at d 64")) << a.bound;

  // Without AVX512-BF16 the 1.6× target does not apply; the ratio is still shown.
  const TargetsReport r2 =
      evaluate_targets(bench_json(pts, "full", "avx2 (supported: avx2; avx512_bf16: no)"), {});
  EXPECT_EQ(row(r2, "bf16/cpu_k01_dense_flash_bf16/dense/D64").status, "not applicable");
  EXPECT_EQ(row(r2, "bf16/cpu_k02_window_band_bf16/window_w256/D64").measured,
            "1.20× per CPU-second (1.20× wall)");
}

TEST(BenchTargets, PeersFilesAreReadOrPointedAt) {
  const json pts = json::array({engine_point(64, 0.80, 0.76, 0.64)});
  std::vector<PeerFile> peers = {
      {"build/peers/peers.json",
       json{{"targets", json::array({json{{"what", "dense d64 vs SDPA"},
                                          {"threshold", ">= 1.15x"},
                                          {"measured", "1.08x"},
                                          {"met", false}}})}}},
      {"build/peers/other.json", json{{"rows", 3}}},
      // make peers-bench's peers.json: the dense SDPA case and the FlexAttention cases are
      // held to 2x, the others reported.
      {"build/peers/cases.json",
       json{{"meta", {{"shape", {{"seq_len", 4096}, {"head_dim", 64}, {"num_heads", 12}}},
                      {"threads", 2}}},
            {"cases", json::array({json{{"case", "sdpa_dense"},
                                        {"peer", "torch SDPA"},
                                        {"impl", "cpu_k01_dense_flash"},
                                        {"peer_median_s", 0.5},
                                        {"ratio_median", 1.08},
                                        {"ratio_min", 0.92},
                                        {"ratio_max", 1.40}},
                                   json{{"case", "flex_window"},
                                        {"peer", "FlexAttention CPU (window 256; create_block_mask)"},
                                        {"impl", "cpu_k02_window_band"},
                                        {"ratio_median", 2.14},
                                        {"ratio_min", 2.0},
                                        {"ratio_max", 2.3}},
                                   json{{"case", "flex_bigbird"},
                                        {"peer", "FlexAttention CPU (BigBird; block_mask export)"},
                                        {"impl", "cpu_k05_bigbird_blocks"},
                                        {"ratio_median", 1.87},
                                        {"ratio_min", 1.8},
                                        {"ratio_max", 1.9}},
                                   json{{"case", "gqa_dense"},
                                        {"peer", "torch SDPA enable_gqa (32/8 heads)"},
                                        {"impl", "cpu_k01_dense_flash"},
                                        {"ratio_median", 1.44},
                                        {"ratio_min", 1.3},
                                        {"ratio_max", 1.5}},
                                   json{{"case", "hf_bigbird"},
                                        {"peer", "HF BigBird block-sparse (block 64, r 3)"},
                                        {"impl", "cpu_k05_bigbird_blocks"},
                                        {"ratio_median", 5.9},
                                        {"ratio_min", 5.0},
                                        {"ratio_max", 6.5}}})}}},
      {"build/peers/broken.json", json()},
  };
  const TargetsReport r = evaluate_targets(bench_json(pts), peers);
  const TargetRow& sdpa = row(r, "peers/dense d64 vs SDPA");
  EXPECT_EQ(sdpa.status, "not met");
  EXPECT_EQ(sdpa.measured, "1.08x");
  EXPECT_EQ(row(r, "peers/build/peers/other.json").status, "see file");
  const TargetRow& dense = row(r, "peers/sdpa_dense");
  EXPECT_EQ(dense.status, "not met");  // 1.08 < 2
  EXPECT_TRUE(has(dense.threshold, "≥ 2×")) << dense.threshold;
  // SDPA's own rate: 4·12·4096²·64 = 51.5 GFLOP in 0.5 s on 2 threads = 51.5 GFLOP/s per
  // thread, 52% of the context's 99 GFLOP/s per CPU-second; twice that is 104%.
  EXPECT_TRUE(has(dense.bound, "SDPA itself runs at 52% of the FMA peak here (51.5 GFLOP in "
                               "0.500 s on 2 threads, against the start-up probe's 99.0 GFLOP/s "
                               "per CPU-second): 2× SDPA needs 104% of peak, against the engine's "
                               "measured tile step of 64% (`engine_parts/D64`)"))
      << dense.bound;
  EXPECT_EQ(row(r, "peers/flex_window").status, "met");  // 2.14 >= 2
  const TargetRow& flex_bird = row(r, "peers/flex_bigbird");
  EXPECT_EQ(flex_bird.status, "not met");  // 1.87 < 2
  EXPECT_TRUE(has(flex_bird.bound, "cpu_k05_bigbird_blocks")) << flex_bird.bound;
  EXPECT_FALSE(has(flex_bird.bound, "SDPA itself")) << flex_bird.bound;
  EXPECT_EQ(row(r, "peers/gqa_dense").status, "reported");  // no threshold against enable_gqa
  EXPECT_EQ(dense.measured, "1.08× (rounds 0.92–1.40; > 1: sparseattn faster)");
  EXPECT_TRUE(has(dense.what, "n 4096, head_dim 64, 12 heads")) << dense.what;
  const TargetRow& bird = row(r, "peers/hf_bigbird");
  EXPECT_EQ(bird.status, "reported");
  EXPECT_NEAR(bird.values["ratio_median"].get<double>(), 5.9, 1e-12);
  EXPECT_TRUE(has(row(r, "peers/build/peers/broken.json").measured, "did not parse"));
  for (const TargetRow& t : r.rows) EXPECT_NE(t.id, "peers");
}

// bench_modern --json as the program writes it: the g = 8 variants against their baselines.
json modern_json(int64_t heads, double dense_ratio, double k02_ratio, bool with_k06 = true) {
  const std::string g = "gqa g=" + std::to_string(heads);
  json v = json::array({json{{"name", "dense k01 mha"}, {"median_ms", 411.1}},
                        json{{"name", "dense k01 " + g}, {"median_ms", 390.2},
                             {"vs", "dense k01 mha"}, {"ratio", dense_ratio},
                             {"ratio_min", 0.884}, {"ratio_max", 1.025}},
                        json{{"name", "dense k01 softcap"}, {"median_ms", 448.8},
                             {"vs", "dense k01 mha"}, {"ratio", 1.09}},
                        json{{"name", "window k02 mha"}, {"median_ms", 68.0}},
                        json{{"name", "window k02 " + g}, {"median_ms", 71.4},
                             {"vs", "window k02 mha"}, {"ratio", k02_ratio},
                             {"ratio_min", 0.95}, {"ratio_max", 1.12}}});
  if (with_k06) {
    v.push_back(json{{"name", "window k06 mha"}, {"median_ms", 65.7}});
    v.push_back(json{{"name", "window k06 " + g}, {"median_ms", 62.6}, {"vs", "window k06 mha"},
                     {"ratio", 1.0}, {"ratio_min", 0.855}, {"ratio_max", 1.079}});
  }
  return json{{"isa", "avx512"}, {"threads", 2}, {"n", 4096}, {"head_dim", 64},
              {"heads", heads}, {"window", 256}, {"rounds", 11}, {"variants", v}};
}

// bench_decode --json: frac_copy = gbps / copy_gbps, as the program computes them.
json decode_json(double frac_c, double frac_p, double cpu_ms) {
  const double copy = 8.15, bytes = 134.2e6;
  auto layout = [&](double f) {
    return json{{"ms", bytes / (f * copy * 1e9) * 1e3}, {"gbps", f * copy}, {"frac_copy", f},
                {"cpu_ms", cpu_ms}};
  };
  return json{{"kernel", "cpu_k09_decode_bf16"}, {"isa", "avx512"}, {"threads", 2},
              {"l_cache", 32768}, {"num_heads", 32}, {"num_kv_heads", 8}, {"head_dim", 128},
              {"page_size", 256}, {"rounds", 11}, {"repeats", 5}, {"bytes_per_call", bytes},
              {"copy_gbps", copy}, {"contiguous", layout(frac_c)}, {"paged", layout(frac_p)},
              {"paged_over_contiguous", {{"median", 1.07}, {"min", 0.94}, {"max", 1.23}}}};
}

// bench_selected --json: k08 at `frac` of a 226.5 GFLOP/s peak, the bf16 twin beside it.
json selected_json(double frac, bool with_bf16 = true) {
  const double peak = 226.5;
  json kernels = json::array({json{{"name", "cpu_k08_selected_gather"}, {"cpu_s_per_call", 1.029},
                                   {"gflop_per_cpu_s", frac * peak}, {"frac_peak", frac},
                                   {"cpu_time_vs_k08", 1.0}}});
  if (with_bf16)
    kernels.push_back(json{{"name", "cpu_k08_selected_gather_bf16"}, {"cpu_s_per_call", 1.016},
                           {"gflop_per_cpu_s", 63.4}, {"frac_peak", 63.4 / peak},
                           {"cpu_time_vs_k08", 1.016 / 1.029}});
  return json{{"n", 16384}, {"k", 2048}, {"num_heads", 8}, {"num_kv_heads", 1},
              {"num_sel_heads", 1}, {"head_dim", 64}, {"threads", 1}, {"nnz", 251666432},
              {"gflop_kept", 64.4}, {"gathered_bytes", 16.1e9}, {"peak_cpu_gflops", peak},
              {"kernels", kernels}};
}

InputFile file(const std::string& path, json j) { return InputFile{path, true, std::move(j)}; }

TEST(BenchTargets, GroupedHeadsRowsFromBenchModern) {
  const json pts = json::array();
  ExtraFiles extra;
  extra.modern = file("out/bench_modern.json", modern_json(8, 0.936, 1.05, /*with_k06=*/false));
  const TargetsReport r = evaluate_targets(bench_json(pts), {}, extra);
  const TargetRow& dense = row(r, "gqa_dense_k01");
  EXPECT_EQ(dense.status, "met");  // 0.936 <= 1.0
  EXPECT_TRUE(dense.bound.empty());
  EXPECT_EQ(dense.measured, "0.936× (rounds 0.884–1.025; GQA 390.2 ms, MHA 411.1 ms, median of 11 "
                            "rounds)");
  EXPECT_TRUE(has(dense.what, "n 4096, head_dim 64 (`out/bench_modern.json`)")) << dense.what;
  const TargetRow& k02 = row(r, "gqa_window_k02");
  EXPECT_EQ(k02.status, "not met");  // 1.05 > 1.0
  EXPECT_TRUE(has(k02.what, "window 256")) << k02.what;
  EXPECT_NEAR(k02.values["ratio"].get<double>(), 1.05, 1e-12);
  EXPECT_NEAR(k02.values["mha_median_ms"].get<double>(), 68.0, 1e-12);
  EXPECT_TRUE(has(k02.bound, "the packed panels")) << k02.bound;
  EXPECT_TRUE(has(k02.bound, "above it (1.050×)")) << k02.bound;
  // The file has no k06 variant: pointed at, neither met nor measured.
  const TargetRow& k06 = row(r, "gqa_window_k06");
  EXPECT_EQ(k06.status, "see file");
  EXPECT_EQ(k06.measured, "`out/bench_modern.json` has no \"window k06 gqa g=8\" ratio");
  // The same file at g = 4 is not the target's point.
  extra.modern = file("m.json", modern_json(4, 0.9, 0.9));
  const TargetsReport r4 = evaluate_targets(bench_json(pts), {}, extra);
  EXPECT_EQ(row(r4, "gqa_dense_k01").status, "not measured");
  EXPECT_TRUE(has(row(r4, "gqa_dense_k01").measured, "ran with H_q 4 (g = 4), not g = 8"));
  // Absent (the default ExtraFiles): the command that writes it; not JSON: pointed at.
  const TargetsReport none = evaluate_targets(bench_json(pts), {});
  for (const char* id : {"gqa_dense_k01", "gqa_window_k02", "gqa_window_k06"}) {
    EXPECT_EQ(row(none, id).status, "not measured") << id;
    EXPECT_EQ(row(none, id).measured,
              "no `build/bench/bench_modern.json`: run `make bench`, or `build/bench_modern "
              "--heads 8 --json build/bench/bench_modern.json`");
  }
  extra.modern = file("bad.json", json());
  EXPECT_EQ(row(evaluate_targets(bench_json(pts), {}, extra), "gqa_window_k06").measured,
            "`bad.json` did not parse");
  extra.modern = file("other.json", json{{"rows", 3}});
  EXPECT_EQ(row(evaluate_targets(bench_json(pts), {}, extra), "gqa_dense_k01").status, "see file");
}

TEST(BenchTargets, DecodeRowFromBenchDecode) {
  const json pts = json::array();
  ExtraFiles extra;
  extra.decode = file("d.json", decode_json(0.65, 0.62, 20.0));
  const TargetRow met = row(evaluate_targets(bench_json(pts), {}, extra), "decode_k09_bf16");
  EXPECT_EQ(met.status, "met");  // the worse layout, 62%, >= 60%
  EXPECT_TRUE(met.bound.empty());
  EXPECT_TRUE(has(met.measured, "contiguous 5.30 GB/s = 65%, paged 5.05 GB/s = 62% of the copy "
                                "probe's 8.15 GB/s (134.2 MB per call"))
      << met.measured;
  EXPECT_TRUE(has(met.measured, "paged/contiguous 1.07 (rounds 0.94–1.23)")) << met.measured;
  EXPECT_TRUE(has(met.what, "L_cache 32768, H_q 32, H_kv 8, head_dim 128, page_size 256")) << met.what;
  // Contiguous met, paged not: the worse layout decides.
  extra.decode = file("d.json", decode_json(0.65, 0.59, 20.0));
  EXPECT_EQ(row(evaluate_targets(bench_json(pts), {}, extra), "decode_k09_bf16").status, "not met");
  // 27%: 134.2 MB / 60 ms = 2.24 GB/s per CPU-second, × 2 threads = 4.47 = 55% of 8.15.
  extra.decode = file("d.json", decode_json(0.27, 0.27, 60.0));
  const TargetRow slow = row(evaluate_targets(bench_json(pts), {}, extra), "decode_k09_bf16");
  EXPECT_EQ(slow.status, "not met");
  EXPECT_TRUE(has(slow.bound, "per CPU-second 2.24 GB/s, × 2 threads = 4.47 GB/s = 55% of the "
                              "probe had every thread its core;"))
      << slow.bound;
  // g = 32 / 8 = 4: 4·128·4 = 2048 FLOPs per 512 bytes.
  EXPECT_TRUE(has(slow.bound, "g = 4 dot products of head_dim 128 and g accumulations of it, "
                              "4·d·g = 2048 FLOPs per 4·d = 512 bytes of bf16 K and V (4 FLOP per "
                              "byte)"))
      << slow.bound;
  EXPECT_FALSE(has(slow.bound, "lost time to other jobs")) << slow.bound;
  EXPECT_FALSE(has(slow.bound, "a pure read")) << slow.bound;  // an older file: no read probe
  // The read probe and the page size, when the file has them: 0.27 · 8.15 / 11.0 = 20%.
  json with_read = decode_json(0.27, 0.27, 60.0);
  with_read["read_gbps"] = 11.0;
  for (const char* l : {"contiguous", "paged"}) with_read[l]["frac_read"] = 0.27 * 8.15 / 11.0;
  with_read["huge_pages"] = false;
  extra.decode = file("d.json", with_read);
  const TargetRow read4k = row(evaluate_targets(bench_json(pts), {}, extra), "decode_k09_bf16");
  EXPECT_TRUE(has(read4k.bound, "; a pure read reaches 11.00 GB/s here, the kernel 20% of it; the "
                                "cache in 4 KiB pages"))
      << read4k.bound;
  with_read["huge_pages"] = true;
  with_read["anon_huge_mib"] = 258.0;
  extra.decode = file("d.json", with_read);
  EXPECT_TRUE(has(row(evaluate_targets(bench_json(pts), {}, extra), "decode_k09_bf16").bound,
                  "the cache in 2 MiB pages (258 MiB landed in huge pages)"));
  // 26 ms of CPU: 5.16 GB/s × 2 = 127% of the probe: the wall clock lost it, not the kernel.
  extra.decode = file("d.json", decode_json(0.27, 0.27, 26.0));
  EXPECT_TRUE(has(row(evaluate_targets(bench_json(pts), {}, extra), "decode_k09_bf16").bound,
                  "(the wall clock lost time to other jobs: per CPU-second the target is reached)"));
  EXPECT_EQ(row(evaluate_targets(bench_json(pts), {}), "decode_k09_bf16").measured,
            "no `build/bench/bench_decode.json`: run `make bench`, or `build/bench_decode --json "
            "build/bench/bench_decode.json`");
  extra.decode = file("broken.json", json());
  const TargetRow broken = row(evaluate_targets(bench_json(pts), {}, extra), "decode_k09_bf16");
  EXPECT_EQ(broken.status, "see file");
  EXPECT_EQ(broken.measured, "`broken.json` did not parse");
  extra.decode = file("sel.json", selected_json(0.5));  // another program's file
  EXPECT_EQ(row(evaluate_targets(bench_json(pts), {}, extra), "decode_k09_bf16").measured,
            "`sel.json` is not bench_decode's JSON (no \"contiguous\")");
}

TEST(BenchTargets, SelectedRowFromBenchSelected) {
  const json pts = json::array();
  ExtraFiles extra;
  extra.selected = file("s.json", selected_json(0.55));
  const TargetRow met = row(evaluate_targets(bench_json(pts), {}, extra), "selected_k08");
  EXPECT_EQ(met.status, "met");
  EXPECT_TRUE(met.bound.empty());
  EXPECT_TRUE(has(met.what, "n 16384, K 2048, H_q 8, head_dim 64, 1 thread (`s.json`)")) << met.what;
  extra.selected = file("s.json", selected_json(0.28));
  const TargetRow slow = row(evaluate_targets(bench_json(pts), {}, extra), "selected_k08");
  EXPECT_EQ(slow.status, "not met");
  // 0.28 · 226.5 = 63.4; the bf16 twin 1.016 / 1.029 = 0.99× k08's CPU time at 63.4 / 226.5.
  EXPECT_EQ(slow.measured, "63.4 GFLOP per CPU-second = 28% of the peak's 226.5 (1.029 CPU-s per "
                           "call); bf16 twin 0.99× k08's CPU time (28% of the peak)");
  // 16.1 GB / 1.029 s = 15.65 GB/s; head_dim 64: 32 broadcasts and 32 FMAs per key and list.
  EXPECT_TRUE(has(slow.bound, "gathered rows: 16100.0 MB of k and v rows per call (each row once "
                              "for the 8 heads of a list) = 15.65 GB/s per CPU-second"))
      << slow.bound;
  EXPECT_TRUE(has(slow.bound, "broadcast-bound: one broadcast load of a key's two floats per FMA "
                              "(32 loads and 32 FMAs per key and list at head_dim 64)"))
      << slow.bound;
  extra.selected = file("s.json", selected_json(0.28, /*with_bf16=*/false));
  EXPECT_FALSE(has(row(evaluate_targets(bench_json(pts), {}, extra), "selected_k08").measured,
                   "bf16"));
  EXPECT_EQ(row(evaluate_targets(bench_json(pts), {}), "selected_k08").status, "not measured");
  extra.selected = file("broken.json", json());
  EXPECT_EQ(row(evaluate_targets(bench_json(pts), {}, extra), "selected_k08").measured,
            "`broken.json` did not parse");
  json no_k08 = selected_json(0.5);
  no_k08["kernels"] = json::array();
  extra.selected = file("s.json", no_k08);
  EXPECT_EQ(row(evaluate_targets(bench_json(pts), {}, extra), "selected_k08").measured,
            "`s.json` has no `cpu_k08_selected_gather` figures");
}

int run(const std::string& cmd) {
  const int s = std::system(cmd.c_str());
  return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

TEST(BenchTargets, BinaryWritesBothFilesAndNothingOnBadInput) {
  const fs::path dir = fs::temp_directory_path() / ("bench_targets_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "bench");
  const fs::path in = dir / "bench_cpu.json";
  std::ofstream(in) << bench_json(json::array(
                           {point("cpu_k01_dense_flash", "dense", 64, 2048, 0.9, 2048)}))
                           .dump();
  const std::string bin = SPARSEATTN_BENCH_TARGETS_BIN;
  ASSERT_EQ(run(bin + " " + in.string() + " " + (dir / "bench").string() + " > /dev/null"), 0);
  std::ifstream jf(dir / "bench" / "targets.json");
  const json j = json::parse(jf);
  EXPECT_EQ(j["targets"][0]["id"], "dense_d64");
  EXPECT_EQ(j["targets"][0]["status"], "met");
  EXPECT_TRUE(fs::exists(dir / "bench" / "targets.md"));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir / "bench")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2u);  // no temporary left behind

  // A file that is not JSON: exit 2, no report written.
  const fs::path bad = dir / "bad.json";
  std::ofstream(bad) << "{ not json";
  EXPECT_EQ(run(bin + " " + bad.string() + " " + (dir / "out2").string() + " 2> /dev/null"), 2);
  EXPECT_FALSE(fs::exists(dir / "out2" / "targets.md"));
  EXPECT_EQ(run(bin + " " + (dir / "absent.json").string() + " " + (dir / "out3").string() +
                " 2> /dev/null"),
            2);
  EXPECT_EQ(run(bin + " only_one_argument 2> /dev/null"), 2);
  fs::remove_all(dir);
}

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

const json& target(const json& report, const std::string& id) {
  for (const json& t : report["targets"])
    if (t["id"] == id) return t;
  ADD_FAILURE() << "no row " << id;
  static const json none;
  return none;
}

TEST(BenchTargets, BinaryReadsTheOtherProgramsFiles) {
  const fs::path dir = fs::temp_directory_path() / ("bench_targets_extra_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  const fs::path in = dir / "bench_cpu.json";
  std::ofstream(in) << bench_json(json::array()).dump();
  // Defaults: OUT_DIR/bench_modern.json etc.; --decode elsewhere overrides its default.
  std::ofstream(dir / "out" / "bench_modern.json") << modern_json(8, 0.9, 0.95).dump();
  std::ofstream(dir / "out" / "bench_decode.json") << "{ not json";
  std::ofstream(dir / "decode.json") << decode_json(0.7, 0.66, 20.0).dump();
  const std::string bin = SPARSEATTN_BENCH_TARGETS_BIN;
  const std::string base = bin + " " + in.string() + " " + (dir / "out").string();
  ASSERT_EQ(run(base + " > /dev/null"), 0);
  json j = read_json(dir / "out" / "targets.json");
  EXPECT_EQ(target(j, "gqa_window_k06")["status"], "met");
  EXPECT_EQ(target(j, "decode_k09_bf16")["status"], "see file");
  EXPECT_EQ(target(j, "decode_k09_bf16")["measured"],
            "`" + (dir / "out" / "bench_decode.json").string() + "` did not parse");
  EXPECT_EQ(target(j, "selected_k08")["status"], "not measured");
  EXPECT_TRUE(has(target(j, "selected_k08")["measured"].get<std::string>(),
                  "--json " + (dir / "out" / "bench_selected.json").string()));
  ASSERT_EQ(run(base + " --decode " + (dir / "decode.json").string() + " > /dev/null"), 0);
  j = read_json(dir / "out" / "targets.json");
  EXPECT_EQ(target(j, "decode_k09_bf16")["status"], "met");
  EXPECT_NEAR(target(j, "decode_k09_bf16")["values"]["contiguous"]["frac_copy"].get<double>(), 0.7,
              1e-12);
  EXPECT_EQ(run(base + " --decode 2> /dev/null"), 2);  // a flag without its path
  fs::remove_all(dir);
}

// The three programs' --json on a tiny problem (seconds): each file parses, has the figures
// bench_targets reads, and gives its rows a measured status (met or not: the sizes are not the
// targets' — only the plumbing is checked here).
TEST(BenchTargets, TinyRunsOfTheBenchProgramsFeedTheReport) {
#if defined(SPARSEATTN_BENCH_DECODE_BIN) && defined(SPARSEATTN_BENCH_SELECTED_BIN) && \
    defined(SPARSEATTN_BENCH_MODERN_BIN)
  const fs::path dir = fs::temp_directory_path() / ("bench_targets_tiny_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string quiet = " > /dev/null 2>&1";
  ASSERT_EQ(run(std::string(SPARSEATTN_BENCH_MODERN_BIN) + " --n 128 --heads 8 --window 32 --rounds 1 "
                "--repeats 1 --json " + (dir / "bench_modern.json").string() + quiet),
            0);
  ASSERT_EQ(run(std::string(SPARSEATTN_BENCH_DECODE_BIN) + " --l-cache 512 --heads 4 --kv-heads 2 "
                "--head-dim 64 --page-size 64 --threads 1 --rounds 1 --repeats 1 --json " +
                (dir / "bench_decode.json").string() + quiet),
            0);
  ASSERT_EQ(run(std::string(SPARSEATTN_BENCH_SELECTED_BIN) + " --n 96 --k 16 --heads 8 "
                "--head-dim 32 --repeats 1 --no-k06 --json " + (dir / "bench_selected.json").string() +
                quiet),
            0);
  const json d = read_json(dir / "bench_decode.json");
  EXPECT_EQ(d["l_cache"], 512);
  EXPECT_EQ(d["num_kv_heads"], 2);
  // bytes per call: K and V in bf16, q in bf16, o and lse in float32.
  EXPECT_NEAR(d["bytes_per_call"].get<double>(), 2.0 * 2 * 2 * 512 * 64 + 2.0 * 4 * 64 + 4.0 * 4 * 65,
              1e-9);
  EXPECT_NEAR(d["contiguous"]["frac_copy"].get<double>(),
              d["contiguous"]["gbps"].get<double>() / d["copy_gbps"].get<double>(), 1e-9);
  for (const char* key : {"ms", "gbps", "frac_copy", "cpu_ms"}) EXPECT_TRUE(d["paged"][key].is_number()) << key;
  EXPECT_TRUE(d["paged_over_contiguous"]["median"].is_number());
  const json s = read_json(dir / "bench_selected.json");
  ASSERT_EQ(s["kernels"].size(), 2u);  // k08 and its bf16 twin; k06 left out
  EXPECT_EQ(s["kernels"][0]["name"], "cpu_k08_selected_gather");
  EXPECT_EQ(s["kernels"][1]["name"], "cpu_k08_selected_gather_bf16");
  // nnz: queries 0..15 keep i + 1 keys, the other 80 keep 16; 8 heads.
  EXPECT_EQ(s["nnz"], 8 * (16 * 17 / 2 + 80 * 16));
  EXPECT_NEAR(s["gflop_kept"].get<double>(), 4.0 * s["nnz"].get<double>() * 32 * 1e-9, 1e-12);
  EXPECT_NEAR(s["kernels"][0]["frac_peak"].get<double>(),
              s["kernels"][0]["gflop_per_cpu_s"].get<double>() / s["peak_cpu_gflops"].get<double>(),
              1e-9);
  std::ofstream(dir / "bench_cpu.json") << bench_json(json::array()).dump();
  ASSERT_EQ(run(std::string(SPARSEATTN_BENCH_TARGETS_BIN) + " " + (dir / "bench_cpu.json").string() +
                " " + dir.string() + " > /dev/null"),
            0);
  const json j = read_json(dir / "targets.json");
  for (const char* id : {"gqa_dense_k01", "gqa_window_k02", "gqa_window_k06", "decode_k09_bf16",
                         "selected_k08"}) {
    const std::string st = target(j, id)["status"];
    EXPECT_TRUE(st == "met" || st == "not met") << id << ": " << st;
  }
  fs::remove_all(dir);
#else
  GTEST_SKIP() << "the benchmark programs are not built (SPARSEATTN_BUILD_BENCH off)";
#endif
}

}  // namespace
}  // namespace sparseattn::bench
