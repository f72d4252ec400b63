// Checks contract §5.4 (no partial output: the report is renamed into place, a bad input leaves nothing) for the CPU targets report.
// bench/targets.h on synthetic bench_cpu JSON: every row's status (met, not met, not
// measured, not built, not applicable) and its measured values, the FMA-pipe bound
// 2d/(2d + c) and the notes built from it (hand-computed below), the fallback n of the
// speedup rows, repetitions reduced to their median, the peers' files; then the
// bench_targets binary end to end.
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
      point("cpu_k05_bigbird_blocks", "bigbird_b64_r3", 64, 16384, 0.65, 512),
      point("cpu_k02_window_band", "window_w256", 64, 16384, 0.66, 513),
  });
  const TargetsReport r = evaluate_targets(bench_json(pts), {});
  for (const char* id : {"dense_d32", "bigbird_b64_r3", "window_w256", "window_w256_vs_dense"}) {
    EXPECT_EQ(row(r, id).status, "met") << id;
    EXPECT_TRUE(row(r, id).bound.empty()) << id;
  }
  // 0.66 / 0.70 = 0.94 of the FLOP ratio, at n 16384 itself.
  EXPECT_NEAR(row(r, "window_w256_vs_dense").values[0]["of_flop_ratio_cpu"].get<double>(),
              0.66 / 0.70, 1e-9);
  EXPECT_FALSE(has(row(r, "window_w256_vs_dense").what, "not measured for both"));
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

  // Without AVX512-BF16 the 1.6× target does not apply; the ratio is still shown.
  const TargetsReport r2 =
      evaluate_targets(bench_json(pts, "full", "avx2 (supported: avx2; avx512_bf16: no)"), {});
  EXPECT_EQ(row(r2, "bf16/cpu_k01_dense_flash_bf16/dense/D64").status, "not applicable");
  EXPECT_EQ(row(r2, "bf16/cpu_k02_window_band_bf16/window_w256/D64").measured,
            "1.20× per CPU-second (1.20× wall)");
}

TEST(BenchTargets, PeersFilesAreReadOrPointedAt) {
  const json pts = json::array();
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
       json{{"meta", {{"shape", {{"seq_len", 4096}, {"head_dim", 64}, {"num_heads", 12}}}}},
            {"cases", json::array({json{{"case", "sdpa_dense"},
                                        {"peer", "torch SDPA"},
                                        {"impl", "cpu_k01_dense_flash"},
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
  EXPECT_EQ(row(r, "peers/flex_window").status, "met");  // 2.14 >= 2
  const TargetRow& flex_bird = row(r, "peers/flex_bigbird");
  EXPECT_EQ(flex_bird.status, "not met");  // 1.87 < 2
  EXPECT_TRUE(has(flex_bird.bound, "cpu_k05_bigbird_blocks")) << flex_bird.bound;
  EXPECT_EQ(row(r, "peers/gqa_dense").status, "reported");  // no threshold against enable_gqa
  EXPECT_EQ(dense.measured, "1.08× (rounds 0.92–1.40; > 1: sparseattn faster)");
  EXPECT_TRUE(has(dense.what, "n 4096, head_dim 64, 12 heads")) << dense.what;
  const TargetRow& bird = row(r, "peers/hf_bigbird");
  EXPECT_EQ(bird.status, "reported");
  EXPECT_NEAR(bird.values["ratio_median"].get<double>(), 5.9, 1e-12);
  EXPECT_TRUE(has(row(r, "peers/build/peers/broken.json").measured, "did not parse"));
  for (const TargetRow& t : r.rows) EXPECT_NE(t.id, "peers");
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

}  // namespace
}  // namespace sparseattn::bench
