// Checks contract §3.13 (a pattern file reaches the one pattern source) and §5.3 (exit codes) through the binary.
// `sparseattn sweep` end to end at tiny sizes (files written, parseable, every point
// validated), `--pattern-file` giving byte-identical `mask` output to the flags, bad files
// exiting 2 with one line, and the `info` / `reach` sweeps over --seq-len ranges.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/cli/cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

class Sweep : public CliTest {
 protected:
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
  }
};

const char* kPerHead = R"([{"pattern": "window", "window": 16},
                           {"pattern": "bigbird", "block_size": 16, "num_random_blocks": 1}])";

TEST_F(Sweep, TinySweepFromAPatternFileWritesJsonCsvAndFigures) {
  write("p.json", kPerHead);
  const RunResult r = run("sweep --pattern-file " + path("p.json") +
                          " --seq-len 64:256 --impl cpu_k06_generic_tiles --head-dim 16 --repeats 2 "
                          "--quiet --out " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");  // --quiet: no progress line
  const nlohmann::json j = nlohmann::json::parse(slurp(path("out/sweep.json")));
  EXPECT_EQ(j["num_heads"], 2);  // the per-head file fixes H
  EXPECT_EQ(j["seq_lens"], nlohmann::json({64, 128, 256}));
  EXPECT_EQ(j["dense_baseline"], "cpu_k01_dense_flash");
  for (const char* key : {"machine", "date", "commit", "load_average", "peak_fma", "fits", "notes"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_GT(j["peak_fma"]["gflops"].get<double>(), 0.0);
  // 3 sizes x (the kernel + the dense baseline), each validated and timed.
  ASSERT_EQ(j["points"].size(), 6u);
  for (const auto& p : j["points"]) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p["validated"], true);
    EXPECT_EQ(p["oracle"], "full");
    EXPECT_GT(p["median_s"].get<double>(), 0.0);
    EXPECT_LE(p["min_s"].get<double>(), p["median_s"].get<double>());
    EXPECT_LE(p["median_s"].get<double>(), p["max_s"].get<double>());
    EXPECT_GT(p["peak_bytes"].get<int64_t>(), 0);
    EXPECT_EQ(p["repeats"], 2);
  }
  // CSV: a header and one line per point.
  const std::string csv = slurp(path("out/sweep.csv"));
  EXPECT_EQ(csv.rfind("impl,pattern,seq_len,validated,median_s,", 0), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
  EXPECT_NE(csv.find("cpu_k06_generic_tiles,pattern,256,1,"), std::string::npos);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  for (const char* fig : {"time_vs_seq_len", "memory_vs_seq_len", "speedup_vs_dense", "fraction_of_peak"})
    for (const char* ext : {".png", ".svg"}) {
      const std::string f = std::string("out/") + fig + ext;
      EXPECT_TRUE(exists(f)) << f;
      EXPECT_GT(std::filesystem::file_size(path(f)), 1000u) << f;
    }
  EXPECT_NE(slurp(path("out/time_vs_seq_len.svg")).find("slope"), std::string::npos);
}

TEST_F(Sweep, TheReportSaysWhichClockItFittedAndEveryPointHasBoth) {
  const RunResult r = run("sweep --pattern window --window 8 --seq-len 64,128 --impl "
                          "cpu_k06_generic_tiles --head-dim 16 --repeats 2 --threads 1 "
                          "--dense-baseline none --quiet --out " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(path("out/sweep.json")));
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["omp_threads"], 1);
  const nlohmann::json& load = j["load"];
  EXPECT_EQ(load["threads"], 1);
  EXPECT_EQ(load["source"], "procs_running");
  const bool busy = load["busy"].get<bool>();
  const std::string measure = busy ? "cpu" : "wall";
  EXPECT_EQ(j["fit_measure"], measure);
  EXPECT_EQ(j["fits"][0]["measure"], measure);
  EXPECT_TRUE(j["fits"][0]["flop_slope"].is_number());
  // The text says the same, in one line, and warns only when busy.
  EXPECT_NE(r.out.find(std::string("load        slopes fitted on ") +
                       (busy ? "CPU time" : "wall time") + ": "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("warning: busy machine") != std::string::npos, busy) << r.out;
  EXPECT_NE(r.out.find("FLOP slope"), std::string::npos);
  for (const auto& p : j["points"]) {
    EXPECT_GT(p["cpu_median_s"].get<double>(), 0.0) << p.dump();
    EXPECT_GE(p["others_runnable"].get<double>(), 0.0) << p.dump();
  }
  EXPECT_NE(slurp(path("out/sweep.csv")).find(",cpu_median_s,cpu_min_s,cpu_max_s,others_runnable\n"),
            std::string::npos);
}

TEST_F(Sweep, BadArgumentsExitTwoWithOneLine) {
  write("p.json", kPerHead);
  const std::string base = "sweep --pattern-file " + path("p.json") + " --out " + path("o") + " ";
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"--seq-len 0:64", "--seq-len"},
           {"--seq-len 64:32", "--seq-len"},
           {"--seq-len 64 --impl nope", "--impl"},
           {"--seq-len 64 --impl cpu_k02_window_band", "--impl"},  // does not serve per-head
           {"--seq-len 64 --impl nystrom", "--impl"},              // an approximation
           {"--seq-len 64 --repeats 0", "--repeats"},
           {"--seq-len 64 --max-seconds nan", "--max-seconds"},
           {"--seq-len 64 --target gpu", "--target"},
           {"--seq-len 64 --window 3", "--window"},  // beside --pattern-file
           {"--seq-len 64 --threads 0", "--threads"},
           {"--seq-len 64 --threads 1025", "--threads"},
           {"--seq-len 64 --threads two", "--threads"},
       }) {
    SCOPED_TRACE(args);
    const RunResult r = run(base + args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("sparseattn: error: invalid " + flag, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists("o/sweep.json"));
  }
}

TEST_F(Sweep, PatternFileMasksEqualTheFlagsMasks) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--pattern window --window 3 --dilation 2 --causal",
       R"({"pattern": "window", "window": 3, "dilation": 2, "causal": true})"},
      {"--pattern longformer --window 2 --global 0,30",
       R"({"pattern": "longformer", "window": 2, "global": [0, 30]})"},
      {"--pattern bigbird --block-size 4 --num-random-blocks 2 --seed 9",
       R"({"pattern": "bigbird", "block_size": 4, "num_random_blocks": 2, "seed": 9})"},
      {"--pattern random --window 1 --num-random 3 --seed 4",
       R"({"pattern": "random", "window": 1, "num_random": 3, "seed": 4})"},
  };
  for (const auto& [flags, json] : cases) {
    SCOPED_TRACE(flags);
    write("p.json", json);
    const RunResult a = run("mask --seq-len 37 --num-heads 2 --out " + path("a.npy") + " " + flags);
    const RunResult b =
        run("mask --seq-len 37 --num-heads 2 --out " + path("b.npy") + " --pattern-file " + path("p.json"));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(slurp(path("a.npy")), slurp(path("b.npy")));
  }
  // attend: the same output bytes from the flags and from the file.
  write_npy(path("q.npy"), uniform_tensor({1, 2, 37, 8}, 1));
  write_npy(path("k.npy"), uniform_tensor({1, 2, 37, 8}, 2));
  write_npy(path("v.npy"), uniform_tensor({1, 2, 37, 8}, 3));
  const std::string qkv = "attend --q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  write("p.json", cases[2].second);
  const RunResult fa = run(qkv + " --out " + path("oa.npy") + " " + cases[2].first);
  const RunResult fb = run(qkv + " --out " + path("ob.npy") + " --pattern-file " + path("p.json"));
  ASSERT_EQ(fa.exit_code, 0) << fa.err;
  ASSERT_EQ(fb.exit_code, 0) << fb.err;
  EXPECT_EQ(slurp(path("oa.npy")), slurp(path("ob.npy")));
  // A per-head file fixes the head count (head by head equality: pattern_file_test).
  write("p.json", kPerHead);
  const RunResult r = run("mask --seq-len 48 --out " + path("m.npy") + " --pattern-file " + path("p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_mask(path("m.npy"), "m").shape, (Shape{2, 48, 48}));
  // A bad file: exit 2, one line naming the file's field.
  write("bad.json", R"([{"pattern": "window", "window": -4}])");
  const RunResult bad = run("info --seq-len 64 --pattern-file " + path("bad.json"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.json: [0].window = -4: must be an integer >= 0"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST_F(Sweep, InfoSweepIsAJsonArrayOnePerLength) {
  const RunResult r = run("info --seq-len 256:1024 --pattern window --window 8 --head-dim 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const int64_t n = 256 << i;
    EXPECT_EQ(j[i]["seq_len_q"], n);
    // Window 8: 17 keys per row minus the clipped ends, 2 * (8 + 7 + ... + 1) = 72 short.
    EXPECT_EQ(j[i]["nnz"], 17 * n - 72);
    EXPECT_DOUBLE_EQ(j[i]["flops"].get<double>(), 4.0 * (17 * n - 72) * 16);
    // A tiled kernel computes whole tiles: at least the pattern's FLOPs.
    EXPECT_GE(j[i]["tiled_flops"].get<double>(), j[i]["flops"].get<double>());
    EXPECT_GT(j[i]["layout_bytes"].get<int64_t>(), 0);
    EXPECT_GE(j[i]["bytes_tiled"].get<double>(), j[i]["bytes_min"].get<double>());
    EXPECT_EQ(j[i]["tiles"]["full"].get<int64_t>() + j[i]["tiles"]["partial"].get<int64_t>(),
              j[i]["tiles"]["listed"].get<int64_t>());
  }
  // The same length given alone: one object, the same numbers.
  const RunResult one = run("info --seq-len 512 --pattern window --window 8 --head-dim 16 --json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out), j[1]);
}

TEST_F(Sweep, ReachSweepGivesDepthDiameterAndGapPerLength) {
  // A window of one-sided width w needs ceil((n - 1) / w) layers (contract §6).
  const RunResult r = run("reach --seq-len 64,100,256 --pattern window --window 4 --json --plot " + path("fig"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t start = r.out.find('[');
  ASSERT_NE(start, std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(start, r.out.rfind(']') - start + 1));
  ASSERT_EQ(j.size(), 3u);
  for (const auto& [i, n] : std::vector<std::pair<size_t, int64_t>>{{0, 64}, {1, 100}, {2, 256}}) {
    EXPECT_EQ(j[i]["seq_len"], n);
    EXPECT_EQ(j[i]["mixing_depth"], (n - 1 + 3) / 4);
    EXPECT_EQ(j[i]["diameter"], (n - 1 + 3) / 4);
  }
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(exists("fig/reach_vs_seq_len.png"));
    EXPECT_TRUE(exists("fig/reach_vs_seq_len.svg"));
  }
  // A per-layer pattern file (one window-2 layer, repeated past the stack) over a sweep.
  std::ofstream(path("layers.json")) << R"({"layers": [{"pattern": "window", "window": 2}]})";
  const RunResult l = run("reach --seq-len 32:64 --pattern-file " + path("layers.json") + " --json");
  ASSERT_EQ(l.exit_code, 0) << l.err;
  const nlohmann::json lj = nlohmann::json::parse(l.out);
  EXPECT_EQ(lj[0]["mixing_depth"], 16);  // ceil(31 / 2)
  EXPECT_EQ(lj[1]["mixing_depth"], 32);  // ceil(63 / 2)
  // --token applies to one length only.
  const RunResult t = run("reach --seq-len 32:64 --pattern window --window 2 --token 3");
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_EQ(t.err.rfind("sparseattn: error: invalid --token", 0), 0u) << t.err;
}

TEST_F(Sweep, DemoRunsThePatternFlagsOnly) {
  const RunResult r = run("demo --seq-len 40 --num-heads 2 --head-dim 8 --pattern window --window 3 "
                          "--json " + path("d.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(path("d.json")));
  std::set<std::string> patterns;
  for (const auto& row : j["rows"]) patterns.insert(row["pattern"].get<std::string>());
  EXPECT_EQ(patterns, (std::set<std::string>{"window"}));
}

// Contract §2.7–§2.9 through the binary: --num-kv-heads, --softcap, --sinks reach every
// point's problem and its oracle (the engine's planted liar: sweep_modern_test), auto runs
// only kernels whose features serve them, a named kernel without them is refused by name,
// and bad values exit 2 with one line naming the flag.
class SweepModern : public Sweep {
 protected:
  void SetUp() override {
    Sweep::SetUp();
    Tensor<double> sinks({4});
    sinks.data = {0.5, -1.0, 2.0, 1.5};
    write_npy(path("sinks.npy"), sinks);
    Tensor<double> three({3});
    three.data = {0.5, -1.0, 2.0};
    write_npy(path("sinks3.npy"), three);
  }
  std::string base(const std::string& out = "o") const {
    return "sweep --pattern window --window 8 --num-heads 4 --head-dim 16 --repeats 1 --quiet "
           "--out " + path(out) + " ";
  }
  std::string mods() const {
    return " --num-kv-heads 2 --softcap 5 --sinks " + path("sinks.npy") + " ";
  }
};

TEST_F(SweepModern, EveryPointIsValidatedWithTheModifiers) {
  const RunResult r = run(base("out") + mods() + "--seq-len 64,128 --impl a6_flash_modern,cpu_k06_generic_tiles");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(path("out/sweep.json")));
  EXPECT_EQ(j["num_heads"], 4);
  EXPECT_EQ(j["num_kv_heads"], 2);
  EXPECT_EQ(j["score_mods"], "softcap=5, sinks");
  EXPECT_EQ(j["dense_baseline"], "cpu_k01_dense_flash");  // it serves them too
  EXPECT_EQ(j["failures"], 0);
  ASSERT_EQ(j["points"].size(), 6u);  // 2 sizes x (2 kernels + the baseline)
  for (const auto& p : j["points"]) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p["validated"], true);
    EXPECT_EQ(p["oracle"], "full");
  }
  EXPECT_NE(r.out.find("num_heads 4, H_kv 2, softcap=5, sinks"), std::string::npos) << r.out;
}

TEST_F(SweepModern, AutoRunsOnlyKernelsServingTheFeatures) {
  const RunResult plain = run(base("plain") + "--seq-len 64 --dense-baseline none --target reference");
  const RunResult modern = run(base("modern") + mods() + "--seq-len 64 --dense-baseline none --target reference");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(modern.exit_code, 0) << modern.err;
  auto impls = [&](const std::string& dir) {
    std::set<std::string> out;
    const nlohmann::json doc = nlohmann::json::parse(slurp(path(dir + "/sweep.json")));
    for (const auto& p : doc["points"]) {  // doc named: a temporary's points would dangle
      EXPECT_EQ(p["validated"], true) << p.dump();
      out.insert(p["impl"].get<std::string>());
    }
    return out;
  };
  const std::set<std::string> p = impls("plain"), m = impls("modern");
  EXPECT_TRUE(p.count("a2_sparse_rows") && p.count("a5_flash_tiled"));  // kPlain kernels
  EXPECT_EQ(m, (std::set<std::string>{"a1_dense_masked", "a6_flash_modern"}));
}

TEST_F(SweepModern, BadValuesExitTwoWithOneLineNamingTheFlag) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {mods() + "--impl a6_flash_modern,a2_sparse_rows",
            "invalid --impl = a2_sparse_rows: does not serve grouped-query heads, softcap, sinks"},
           {mods() + "--impl cpu_k06_generic_tiles --dense-baseline a5_flash_tiled",
            "invalid --dense-baseline = a5_flash_tiled: does not serve grouped-query heads"},
           {"--softcap 0", "invalid --softcap = 0: must be a finite number > 0"},
           {"--softcap -2", "invalid --softcap = -2: must be a finite number > 0"},
           {"--sinks " + path("sinks3.npy"), "invalid --sinks shape = [3]: must be [4]"},
           {"--num-kv-heads 3", "invalid --num-kv-heads = 3: must be an integer in [1, 4] that "
                                "divides --num-heads 4"},
           {"--num-kv-heads 8", "invalid --num-kv-heads = 8: must be an integer in [1, 4]"},
           {"--num-kv-heads 0", "invalid --num-kv-heads = 0: "},
       }) {
    SCOPED_TRACE(args);
    const RunResult r = run(base() + "--seq-len 64 " + args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("sparseattn: error: " + needle, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists("o/sweep.json"));
  }
}

}  // namespace
}  // namespace sparseattn::testing_cli
