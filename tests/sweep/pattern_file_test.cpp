// Checks contract §3.13 (one pattern source) and §5.2 (errors name the field) for pattern files.
// `--pattern-file P.json` (api/pattern_file.h) must give exactly the PatternSpec, and so the
// mask, that the same flags give: every flag combination is written out by flags_to_json,
// read back by spec_from_pattern_file and compared, spec by spec and mask by mask. A per-head
// list gives each head its own pattern; a bad file gets one line naming the file and field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/pattern_file.h"
#include "api/pattern_flags.h"
#include "core/error.h"
#include "core/npy.h"
#include "pattern/pattern.h"

namespace sparseattn::api {
namespace {

class PatternFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sparseattn_pattern_file_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The error of reading `text` as a pattern file ("" when it reads).
  std::string error_of(const std::string& text, PatternFlags flags = {}) const {
    flags.pattern_file = write("bad.json", text);
    try {
      spec_from_pattern_file(flags);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
};

// Every allowed (h, i, j) of two patterns for the same sizes, compared exactly.
void expect_same_mask(const PatternSpec& a, const PatternSpec& b, PatternSizes z,
                      const std::string& what) {
  const Pattern pa = materialize(a, z), pb = materialize(b, z);
  int64_t differ = 0;
  for (int64_t h = 0; h < z.num_heads; ++h) {
    const Tensor<uint8_t> ma = dense_mask(pa.head(h)), mb = dense_mask(pb.head(h));
    for (int64_t e = 0; e < ma.numel(); ++e) differ += ma.data[e] != mb.data[e];
  }
  EXPECT_EQ(differ, 0) << what;
}

TEST_F(PatternFile, EveryFlagCombinationRoundTripsToTheSameSpecAndMask) {
  // Files the flags name: a hierarchical segment list, an explicit mask, a random table, a
  // key padding mask (n = 40, block 8: nb = 5, so a table is [1, 3, 2]).
  const int64_t n = 40;
  Tensor<int64_t> seg({n});
  for (int64_t i = 0; i < n; ++i) seg.data[i] = i / 7;
  write_npy(path("seg.npy"), seg);
  Tensor<uint8_t> mask({n, n});
  for (int64_t e = 0; e < mask.numel(); ++e) mask.data[e] = (e * 7919) % 5 == 0;
  write_npy(path("mask.npy"), mask, true);
  Tensor<int64_t> table({1, 3, 2});
  table.data = {3, 4, 0, 4, 0, 1};
  write_npy(path("table.npy"), table);
  Tensor<uint8_t> pad({1, n}, 1);
  pad.data[n - 1] = pad.data[n - 2] = 0;
  write_npy(path("pad.npy"), pad, true);

  auto flags = [](const std::string& kind) {
    PatternFlags f;
    f.pattern = kind;
    return f;
  };
  std::vector<PatternFlags> cases;
  cases.push_back(flags("dense"));
  cases.push_back(flags("dense"));
  cases.back().causal = true;
  for (int64_t w : {0, 3, 100})
    for (int64_t d : {1, 3})
      for (bool causal : {false, true}) {
        PatternFlags f = flags("window");
        f.window = w, f.dilation = d, f.causal = causal;
        cases.push_back(f);
      }
  cases.push_back(flags("longformer"));
  cases.back().window = 2, cases.back().global = "0,17,39";
  cases.push_back(cases.back());
  cases.back().causal = true, cases.back().dilation = 2;
  cases.push_back(flags("random"));
  cases.back().window = 1, cases.back().num_random = 5, cases.back().seed = 12345678901234567890ull;
  cases.push_back(flags("random"));
  cases.back().global = "5", cases.back().num_random = 3, cases.back().causal = true;
  for (int64_t bs : {1, 8, 64})
    for (int64_t r : {0, 2}) {
      PatternFlags f = flags("bigbird");
      f.block_size = bs, f.num_random_blocks = r, f.seed = 7;
      cases.push_back(f);
    }
  cases.push_back(flags("bigbird"));
  cases.back().block_size = 8, cases.back().num_random_blocks = 2,
  cases.back().random_table = path("table.npy");
  cases.push_back(flags("bigbird-etc"));
  cases.back().block_size = 8, cases.back().num_random_blocks = 1,
  cases.back().num_global_tokens = 3, cases.back().seed = 2;
  cases.push_back(flags("hierarchical"));
  cases.back().segment_ids = path("seg.npy");
  cases.push_back(flags("explicit"));
  cases.back().mask = path("mask.npy");
  cases.push_back(flags("window"));
  cases.back().window = 4, cases.back().key_padding_mask = path("pad.npy");
  // contract §3.3, §3.14, §3.15: the new keys are the new flags' names.
  cases.push_back(flags("window"));
  cases.back().window_left = 3, cases.back().window_right = -1;
  cases.push_back(flags("longformer"));
  cases.back().window_left = -1, cases.back().window_right = 0, cases.back().global = "4";
  cases.push_back(flags("chunked"));
  cases.back().chunk_size = 6, cases.back().causal = true;
  cases.push_back(flags("neighborhood"));
  cases.back().kernel_size = 5, cases.back().dilation = 3;

  for (size_t c = 0; c < cases.size(); ++c) {
    const PatternFlags& f = cases[c];
    const nlohmann::json j = flags_to_json(f);
    SCOPED_TRACE(j.dump());
    PatternFlags from_file;
    from_file.pattern_file = write("case" + std::to_string(c) + ".json", j.dump());
    const PatternSpec want = to_spec(f), got = to_spec(from_file);
    EXPECT_EQ(describe(got), describe(want));
    EXPECT_EQ(got.key_padding_mask.has_value(), want.key_padding_mask.has_value());
    expect_same_mask(got, want, PatternSizes{1, 2, n, n}, j.dump());
    // The object alone reads into the same typed spec (no flags in between).
    EXPECT_EQ(describe(spec_from_json(j, "x", "")), describe(want));
  }
}

TEST_F(PatternFile, DashesAndUnderscoresAndGlobalAsTextReadAlike) {
  PatternFlags a, b;
  a.pattern_file = write("a.json", R"({"pattern": "bigbird", "block-size": 16, "num-random-blocks": 1})");
  b.pattern_file = write("b.json", R"({"pattern": "bigbird", "block_size": 16, "num_random_blocks": 1})");
  EXPECT_EQ(describe(to_spec(a)), describe(to_spec(b)));
  EXPECT_EQ(describe(to_spec(a)), "bigbird(block_size=16, num_random_blocks=1, seed=0)");
  PatternFlags c;
  c.pattern_file = write("c.json", R"({"pattern": "longformer", "window": 2, "global": "0,9"})");
  EXPECT_EQ(to_spec(c).global, (std::vector<int64_t>{0, 9}));
}

TEST_F(PatternFile, AListIsOnePatternPerHead) {
  PatternFlags w, bb;
  w.pattern = "window", w.window = 5;
  bb.pattern = "bigbird", bb.block_size = 8, bb.num_random_blocks = 2, bb.seed = 3;
  const std::string text =
      nlohmann::json::array({flags_to_json(w), flags_to_json(bb), flags_to_json(w)}).dump();
  for (const std::string& form : {text, "{\"heads\": " + text + "}"}) {
    PatternFlags f;
    f.pattern_file = write("heads.json", form);
    EXPECT_EQ(pattern_file_heads(f), 3);
    const PatternSpec s = to_spec(f);
    ASSERT_EQ(s.kind, PatternKind::per_head);
    ASSERT_EQ(s.per_head.size(), 3u);
    const int64_t n = 48;
    const Pattern p = materialize(s, PatternSizes{1, 3, n, n});
    const Pattern pw = materialize(to_spec(w), PatternSizes{1, 1, n, n});
    // Random draws are keyed by (seed, head, row): the file's head 1 is head 1 of a
    // 3-head bigbird pattern.
    const Pattern pb3 = materialize(to_spec(bb), PatternSizes{1, 3, n, n});
    EXPECT_EQ(dense_mask(p.head(0)).data, dense_mask(pw.head(0)).data);
    EXPECT_EQ(dense_mask(p.head(1)).data, dense_mask(pb3.head(1)).data);
    EXPECT_EQ(dense_mask(p.head(2)).data, dense_mask(pw.head(0)).data);
    EXPECT_NE(dense_mask(p.head(1)).data, dense_mask(pw.head(0)).data);
  }
}

TEST_F(PatternFile, BadFilesGetOneLineNamingTheField) {
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"{\"pattern\": \"window\",", "must be valid JSON"},
      {"", "must be valid JSON"},
      {"42", "must be an object of pattern flags"},
      {R"({"pattern": "window", "windw": 3})", "bad.json: windw = 3: unknown key"},
      {R"({"pattern": "window", "window": "3"})", "bad.json: window = \"3\": must be a JSON integer"},
      {R"({"pattern": "window", "window": 3.5})", "bad.json: window = 3.5: must be a JSON integer"},
      {R"({"pattern": "window", "window": -1})", "bad.json: window = -1: must be an integer >= 0"},
      {R"({"pattern": "window", "dilation": 0})", "bad.json: dilation = 0: must be an integer >= 1"},
      {R"({"pattern": "bigbird", "window": 4})", "bad.json: window = 4: not used by pattern bigbird"},
      {R"({"pattern": "windows"})", "bad.json: pattern = windows: must be one of"},
      {R"({"pattern": 3})", "bad.json: pattern = 3: must be a string"},
      {R"({"pattern": "per-head"})", "written as a list"},
      {R"({"pattern": "window", "causal": 1})", "bad.json: causal = 1: must be true or false"},
      {R"({"pattern": "longformer", "global": [0, -3]})", "bad.json: global[1] = -3"},
      {R"({"pattern": "window", "seed": -1})", "bad.json: seed = -1"},
      {R"({"pattern": "hierarchical"})", "bad.json: segment_ids = none"},
      {R"({"pattern": "explicit", "mask": ""})", "bad.json: mask = \"\""},
      {R"([{"pattern": "window", "window": 1}, 5])", "bad.json: [1] = 5: must be an object"},
      {R"([{"pattern": "window", "window": -2}])", "bad.json: [0].window = -2"},
      {R"([{"pattern": "window", "key_padding_mask": "p.npy"}])", "[0].key_padding_mask"},
      {"[]", "must list one pattern per head"},
      {R"({"heads": [{"pattern": "dense"}], "window": 3})", "bad.json: window = 3: beside \"heads\""},
      {R"({"heads": {"pattern": "dense"}})", "bad.json: heads = "},
      {R"({"layers": [{"pattern": "dense"}]})", "bad.json: layers = [...]: per-layer files are read by `sparseattn reach` only"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string err = error_of(c.text);
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;  // one line
    EXPECT_EQ(err.rfind("invalid ", 0), 0u) << err;
  }
  // A missing file, and a flag given beside the file (it would be silently ignored).
  PatternFlags missing;
  missing.pattern_file = path("nope.json");
  EXPECT_THROW(to_spec(missing), InvalidArgument);
  PatternFlags both;
  both.window = 3;
  const std::string err = error_of(R"({"pattern": "window"})", both);
  EXPECT_NE(err.find("invalid --window = 3: --pattern-file replaces the pattern flags"), std::string::npos)
      << err;
}

TEST_F(PatternFile, NpyPathsAreRelativeToTheFile) {
  std::filesystem::create_directories(dir_ / "sub");
  Tensor<int64_t> seg({6});
  seg.data = {0, 0, 1, 1, 1, 2};
  write_npy(path("sub/seg.npy"), seg);
  PatternFlags f;
  f.pattern_file = write("sub/h.json", R"({"pattern": "hierarchical", "segment_ids": "seg.npy"})");
  EXPECT_EQ(to_spec(f).segment_ids, seg.data);
}

}  // namespace
}  // namespace sparseattn::api
