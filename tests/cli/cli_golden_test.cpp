// Checks contract §4.1 and §7.3 through the golden test vectors (docs/golden.md): `sparseattn
// golden` regenerates byte-identical files, its manifest documents every case, and each
// case's o, lse, dq, dk, dv pass `sparseattn check` under the manifest's own pattern flags;
// version 3's layout cases (contract §2.10-§2.12) under their own layout flags as well.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <algorithm>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

class Golden : public CliTest {};

TEST_F(Golden, RegeneratesByteIdenticalAndEveryCasePassesCheck) {
  ASSERT_EQ(run("golden --out " + path("a")).exit_code, 0);
  ASSERT_EQ(run("golden --out " + path("b")).exit_code, 0);
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_ / "a")) names.insert(e.path().filename().string());
  std::set<std::string> names_b;
  for (const auto& e : fs::directory_iterator(dir_ / "b")) names_b.insert(e.path().filename().string());
  EXPECT_EQ(names, names_b);
  for (const std::string& n : names)
    EXPECT_EQ(slurp(path("a/" + n)), slurp(path("b/" + n))) << n << " differs between runs";

  const nlohmann::json m = nlohmann::json::parse(slurp(path("a/manifest.json")));
  EXPECT_EQ(m["version"], "sparseattn-golden-3");
  EXPECT_EQ(m["tolerance"]["float32"]["atol"], 2e-5);
  EXPECT_EQ(m["tolerance"]["float64"]["rtol"], 1e-12);
  std::set<std::string> kinds;
  bool seq_len_1 = false, lq_ne_lk = false, d_ne_dv = false, partial_block = false;
  int64_t fully_masked = 0;
  bool saw_hd5 = false, grouped = false, multi_query = false, softcap = false, alibi = false;
  int sinks = 0;
  for (const nlohmann::json& c : m["cases"]) {
    const std::string flags = c["pattern_flags"];
    const size_t p = flags.find("--pattern ") + 10;
    kinds.insert(flags.substr(p, flags.find(' ', p) - p));
    const nlohmann::json& s = c["shape"];
    seq_len_1 |= s["seq_len_q"] == 1;
    lq_ne_lk |= s["seq_len_q"] != s["seq_len_k"];
    d_ne_dv |= s["head_dim"] != s["head_dim_v"];
    partial_block |= flags.find("--block-size 4") != std::string::npos &&
                     s["seq_len_q"].get<int64_t>() % 4 != 0;
    fully_masked += c["fully_masked_rows"].get<int64_t>();
    EXPECT_EQ(names.count(c["files"]["q"].get<std::string>()), 1u);
    // The manifest's flags, relative to the set's directory, judge the set's own outputs.
    std::string f = flags + " " + c["score_flags"].get<std::string>();
    for (const char* file : {"segment_ids.npy", "explicit_mask.npy", "key_padding.npy",
                             "alibi_slopes.npy", "sinks8.npy", "sinks.npy"}) {
      const size_t at = f.find(std::string(" ") + file);
      if (at != std::string::npos)
        f.replace(at + 1, std::string(file).size(), path("a/" + std::string(file)));
    }
    const std::string score = c["score_flags"];
    grouped |= s["num_kv_heads"] != s["num_heads"] && s["num_kv_heads"] != 1;
    multi_query |= s["num_kv_heads"] == 1 && s["num_heads"] != 1;
    softcap |= score.find("--softcap") != std::string::npos;
    alibi |= score.find("--alibi-slopes") != std::string::npos;
    auto file = [&](const char* what) { return path("a/" + c["files"][what].get<std::string>()); };
    // The manifest's scale is contract §2.1's 1/sqrt(head_dim) (head_dim, not head_dim_v),
    // and check is run with it, so a wrong field fails here rather than going unread.
    const double scale = c["scale"].get<double>();
    EXPECT_DOUBLE_EQ(scale, 1.0 / std::sqrt(s["head_dim"].get<double>())) << c["name"];
    if (c["name"] == "longformer_hd5_hdv3") {
      EXPECT_NEAR(scale, 0.4472135955, 1e-10);
      saw_hd5 = true;
    }
    char scale_text[32];
    std::snprintf(scale_text, sizeof scale_text, "%.17g", scale);
    const RunResult r = run("check --q " + file("q") + " --k " + file("k") + " --v " + file("v") +
                            " --candidate " + file("o") + " --candidate-lse " + file("lse") +
                            " --dout " + file("dout") + " --candidate-dq " + file("dq") +
                            " --candidate-dk " + file("dk") + " --candidate-dv " + file("dv") +
                            " --scale " + scale_text + " " + f);
    EXPECT_EQ(r.exit_code, 0) << c["name"] << ": " << r.out << r.err;
    if (c["files"].contains("dsinks")) {
      // dsinks has no candidate flag in check: attend --dout --dsinks must write these bytes.
      ++sinks;
      const RunResult a = run("attend --q " + file("q") + " --k " + file("k") + " --v " +
                              file("v") + " --out " + path("o.npy") + " --dout " + file("dout") +
                              " --dsinks " + path("ds.npy") + " --scale " + scale_text + " " + f);
      EXPECT_EQ(a.exit_code, 0) << a.err;
      EXPECT_EQ(slurp(path("ds.npy")), slurp(file("dsinks"))) << c["name"];
    }
  }
  EXPECT_TRUE(grouped && multi_query && softcap && alibi) << "the modern cases must be in the set";
  EXPECT_EQ(sinks, 2);
  EXPECT_TRUE(saw_hd5) << "the head_dim != head_dim_v case must be in the set";
  EXPECT_EQ(kinds, (std::set<std::string>{"dense", "window", "longformer", "random", "bigbird",
                                          "bigbird-etc", "hierarchical", "explicit", "chunked",
                                          "neighborhood"}));
  EXPECT_TRUE(seq_len_1 && lq_ne_lk && d_ne_dv && partial_block);
  EXPECT_GE(fully_masked, 2 * 9 + 1);  // the fully padded batch and the empty explicit row
}

// Version 3's layout_cases (contract §2.10-§2.12): each passes `sparseattn check` under its
// manifest's own layout and pattern flags (the packed batch with its gradients, §7.8); the
// stored index arrays are the awkward ones the manifest promises; the paged case gives the
// contiguous cache's o and lse byte for byte; and a candidate that reads the cache's empty
// slots fails, so the slots past each length do hold values a reader must not read.
TEST_F(Golden, LayoutCasesPassCheckUnderTheirLayoutFlags) {
  ASSERT_EQ(run("golden --out " + path("a")).exit_code, 0);
  const nlohmann::json m = nlohmann::json::parse(slurp(path("a/manifest.json")));
  ASSERT_TRUE(m.contains("layout_cases"));
  auto in_dir = [&](const std::string& flags) {  // every .npy named by the manifest is in a/
    std::string out, word;
    std::istringstream words(flags);
    while (words >> word) {
      const bool file = word.size() > 4 && word.compare(word.size() - 4, 4, ".npy") == 0;
      out += " " + (file ? path("a/" + word) : word);
    }
    return out;
  };
  std::set<std::string> layouts;
  for (const nlohmann::json& c : m["layout_cases"]) {
    const std::string layout = c["layout"], name = c["name"];
    layouts.insert(layout);
    auto file = [&](const char* what) { return path("a/" + c["files"][what].get<std::string>()); };
    char scale_text[32];
    std::snprintf(scale_text, sizeof scale_text, "%.17g", c["scale"].get<double>());
    const std::string call = "check --q " + file("q") + " --k " + file("k") + " --v " + file("v") +
                             " --candidate " + file("o") + " --candidate-lse " + file("lse") +
                             " --scale " + scale_text + in_dir(c["layout_flags"]) +
                             in_dir(c["pattern_flags"]);
    std::string grads;
    if (layout == "varlen") {
      grads = " --dout " + file("dout") + " --candidate-dq " + file("dq") + " --candidate-dk " +
              file("dk") + " --candidate-dv " + file("dv");
      const Tensor<int64_t> cq = read_npy_int(file("cu_seqlens_q"), "cq");
      const Tensor<int64_t> ck = read_npy_int(file("cu_seqlens_k"), "ck");
      bool empty = false, lq_ne_lk = false;
      for (int64_t b = 0; b + 1 < cq.numel(); ++b) {
        const int64_t lq = cq.data[b + 1] - cq.data[b], lk = ck.data[b + 1] - ck.data[b];
        empty |= lq == 0 && lk == 0;
        lq_ne_lk |= lq != lk && lq > 0;
      }
      EXPECT_EQ(cq.numel(), 4);
      EXPECT_TRUE(empty && lq_ne_lk) << name;
      EXPECT_EQ(cq.data.back(), c["shape"]["total_q"].get<int64_t>());
    } else {
      const Tensor<int64_t> lens = read_npy_int(file("cache_seqlens"), "lens");
      const int64_t capacity = c["shape"]["capacity"];
      EXPECT_NE(std::find(lens.data.begin(), lens.data.end(), 0), lens.data.end()) << name;
      EXPECT_NE(std::find(lens.data.begin(), lens.data.end(), capacity), lens.data.end()) << name;
      EXPECT_GT(c["fully_masked_rows"].get<int64_t>(), 0) << name;  // the element without keys
      EXPECT_FALSE(c["files"].contains("dout")) << "decoding is forward only";
    }
    if (layout == "paged_kv") {
      const Tensor<int64_t> t = read_npy_int(file("block_table"), "table");
      int64_t unread = 0;
      bool shuffled = false;
      for (int64_t b = 0; b < t.dim(0); ++b)
        for (int64_t p = 0; p < t.dim(1); ++p) {
          const int64_t e = t.data[static_cast<size_t>(b * t.dim(1) + p)];
          unread += e == -1;
          shuffled |= e >= 0 && e != b * t.dim(1) + p;
        }
      EXPECT_TRUE(shuffled && unread > 0) << name;
      // The same keys, paged: the contiguous case's o and lse, byte for byte.
      for (const char* what : {"o", "lse"})
        EXPECT_EQ(slurp(file(what)), slurp(path("a/decode_cache_window." + std::string(what) + ".npy")))
            << what;
    }
    const RunResult r = run(call + grads);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.out << r.err;
    if (layout == "kv_cache") {  // read every slot: the empty ones hold other values
      const RunResult all = run("attend --q " + file("q") + " --k " + file("k") + " --v " + file("v") +
                                in_dir(c["pattern_flags"]) + " --out " + path("o_all.npy"));
      ASSERT_EQ(all.exit_code, 0) << all.err;
      EXPECT_EQ(run(call.substr(0, call.find(" --candidate ")) + " --candidate " + path("o_all.npy") +
                    call.substr(call.find(" --scale "))).exit_code, 1);
    }
  }
  EXPECT_EQ(layouts, (std::set<std::string>{"varlen", "kv_cache", "paged_kv"}));
  EXPECT_NE(m["layout_conventions"].get<std::string>().find("cu_seqlens_q[b]"), std::string::npos);
}

TEST_F(Golden, AnOutputThatIsAFileIsAnArgumentError) {
  std::ofstream(path("f")) << "x";
  const RunResult r = run("golden --out " + path("f"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sparseattn::testing_cli
