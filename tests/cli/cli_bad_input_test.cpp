// contract §5 through the CLI: every bad input gives a non-zero exit, one line
// "sparseattn: error: invalid <argument> = <value>: <allowed>" naming the argument, and
// no output file (not even a temp file). Each case's name says what is wrong.
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

class BadInput : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    write_npy(path("q.npy"), uniform_tensor({2, 16, 4}, 1));
    write_npy(path("k.npy"), uniform_tensor({2, 16, 4}, 2));
    write_npy(path("v.npy"), uniform_tensor({2, 16, 4}, 3));
    write_npy(path("o.npy.ok"), uniform_tensor({2, 16, 4}, 4));
  }
  std::string qkv(const std::string& q = "q.npy", const std::string& k = "k.npy",
                  const std::string& v = "v.npy") const {
    return "--q " + path(q) + " --k " + path(k) + " --v " + path(v);
  }
  std::string attend(const std::string& extra) const {
    return "attend " + qkv() + " --out " + path("out.npy") + " --lse " + path("lse.npy") + " " +
           extra;
  }
  std::string mask(const std::string& extra) const {
    return "mask --seq-len 16 --out " + path("out.npy") + " " + extra;
  }

  // Runs `args`; expects failure naming `argument`, and neither out.npy nor lse.npy.
  void expect_rejected(const std::string& args, const std::string& argument) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args;  // contract §5: every argument or input error
    EXPECT_EQ(r.err.rfind("sparseattn: error: invalid " + argument, 0), 0u)
        << "stderr: " << r.err << "\nargs: " << args;
    EXPECT_NE(r.err.find(" = "), std::string::npos) << r.err;
    EXPECT_FALSE(exists("out.npy")) << args;
    EXPECT_FALSE(exists("lse.npy")) << args;
    EXPECT_TRUE(no_temp_files()) << args;
  }
};

TEST_F(BadInput, ShapeMismatchHeadDim) {
  write_npy(path("k5.npy"), uniform_tensor({2, 16, 5}, 2));
  expect_rejected("attend " + qkv("q.npy", "k5.npy") + " --out " + path("out.npy"), "k head_dim");
}

TEST_F(BadInput, ShapeMismatchValueLength) {
  write_npy(path("v15.npy"), uniform_tensor({2, 15, 4}, 3));
  expect_rejected("attend " + qkv("q.npy", "k.npy", "v15.npy") + " --out " + path("out.npy"),
                  "v seq_len");
}

TEST_F(BadInput, NonFiniteScale) {
  expect_rejected(attend("--scale nan"), "--scale");
  expect_rejected(attend("--scale inf"), "--scale");
  expect_rejected(attend("--scale 1e999"), "--scale");
  expect_rejected(attend("--scale abc"), "--scale");
}

TEST_F(BadInput, NegativeWindow) { expect_rejected(attend("--pattern window --window -1"), "--window"); }

TEST_F(BadInput, DilationBelowOne) {
  expect_rejected(attend("--pattern window --window 2 --dilation 0"), "--dilation");
}

TEST_F(BadInput, BlockSizeBelowOne) {
  expect_rejected(attend("--pattern bigbird --block-size 0"), "--block-size");
}

TEST_F(BadInput, GlobalOutOfRange) {
  expect_rejected(attend("--pattern longformer --window 1 --global 3,16"), "--global");
  expect_rejected(mask("--pattern longformer --global 1,x"), "--global");
  expect_rejected(mask("--pattern longformer --global -2"), "--global");
}

TEST_F(BadInput, RandomTableOutOfRange) {
  // 16 tokens in blocks of 4: nb = 4, table [1, nb-2 = 2, 1]; block 4 does not exist.
  Tensor<int64_t> table({1, 2, 1}, 0);
  table.data = {1, 4};
  write_npy(path("table.npy"), table);
  expect_rejected(mask("--pattern bigbird --block-size 4 --num-random-blocks 1 --random-table " +
                       path("table.npy")),
                  "--random-table entry");
}

TEST_F(BadInput, RandomTableOfTheWrongShape) {
  write_npy(path("table.npy"), Tensor<int64_t>({1, 3, 1}, 0));
  expect_rejected(mask("--pattern bigbird --block-size 4 --random-table " + path("table.npy")),
                  "--random-table shape");
}

TEST_F(BadInput, ExplicitMaskOfTheWrongShape) {
  write_npy(path("m.npy"), Tensor<uint8_t>({16, 15}, 1), true);
  expect_rejected(attend("--pattern explicit --mask " + path("m.npy")), "--mask shape");
}

TEST_F(BadInput, KeyPaddingMaskOfTheWrongBatch) {
  write_npy(path("pad.npy"), Tensor<uint8_t>({2, 16}, 1), true);
  expect_rejected(attend("--key-padding-mask " + path("pad.npy")), "--key-padding-mask shape");
}

TEST_F(BadInput, SegmentIdsDecreasing) {
  Tensor<int64_t> ids({16}, 0);
  ids.data[5] = 2;  // then back to 0
  write_npy(path("seg.npy"), ids);
  expect_rejected(mask("--pattern hierarchical --segment-ids " + path("seg.npy")), "--segment-ids");
}

TEST_F(BadInput, MalformedNpyBadMagic) {
  std::ofstream(path("junk.npy")) << "not a numpy file at all";
  expect_rejected("attend " + qkv("junk.npy") + " --out " + path("out.npy"), "--q");
}

TEST_F(BadInput, TruncatedNpy) {
  const std::string bytes = slurp(path("k.npy"));
  std::ofstream(path("short.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 5);
  expect_rejected("attend " + qkv("q.npy", "short.npy") + " --out " + path("out.npy"), "--k");
}

TEST_F(BadInput, IntegerDtypeForQ) {
  write_npy(path("qi.npy"), Tensor<int32_t>({2, 16, 4}, 1));
  expect_rejected("attend " + qkv("qi.npy") + " --out " + path("out.npy"), "--q");
}

TEST_F(BadInput, TooLargeSizes) {
  // 10^8 x 10^8 uint8 mask: 10 PB.
  expect_rejected("mask --seq-len 100000000 --out " + path("out.npy"), "mask shape");
  expect_rejected("mask --seq-len 100000 --num-heads 100000000 --out " + path("out.npy"),
                  "mask shape");
}

TEST_F(BadInput, SizesBelowOne) {
  expect_rejected("mask --seq-len 0 --out " + path("out.npy"), "--seq-len");
  expect_rejected("mask --seq-len 4 --seq-len-k 0 --out " + path("out.npy"), "--seq-len-k");
  expect_rejected("mask --seq-len 4 --num-heads 0 --out " + path("out.npy"), "--num-heads");
}

TEST_F(BadInput, UnknownPatternAndImpl) {
  expect_rejected(attend("--pattern bogus"), "--pattern");
  expect_rejected(attend("--impl no_such_kernel"), "--impl");
}

TEST_F(BadInput, ImplThatDoesNotServeThePattern) {
  expect_rejected(attend("--impl a3_window_band"), "--impl");  // dense pattern
}

TEST_F(BadInput, FlagTheChosenPatternWouldIgnore) {
  expect_rejected(attend("--pattern bigbird --window 256"), "--window");
  expect_rejected(mask("--num-random-blocks 3"), "--num-random-blocks");
}

// The library names the field (core/field.h); the command line spells it as the flag, and
// a field inside a pattern file as the file's own path to it.
TEST_F(BadInput, AFieldIsSpelledAsTheFlagOrWhereTheFileWritesIt) {
  expect_rejected(mask("--pattern longformer --window 1 --global 3,16"), "--global[1] = 16");
  std::ofstream(path("heads.json")) << R"([{"pattern": "window", "window": 1}, {"pattern": "window", "window": -2}])";
  expect_rejected(mask("--num-heads 2 --pattern-file " + path("heads.json")),
                  "--pattern-file " + path("heads.json") + ": [1].window = -2");
  // A head's field that only the sizes can refuse: named by the head's index.
  std::ofstream(path("late.json")) <<
      R"({"heads": [{"pattern": "window", "window": 1}, {"pattern": "longformer", "window": 1, "global": [20]}]})";
  expect_rejected(mask("--num-heads 2 --pattern-file " + path("late.json")),
                  "--pattern-file: heads[1].global[0] = 20");
}

// contract §3.3: the (left, right) window comes as a pair and replaces --window.
TEST_F(BadInput, WindowLeftAndRightComeAsAPairAndReplaceWindow) {
  expect_rejected(attend("--pattern window --window-left 2"), "--window-right = none: must be given too");
  expect_rejected(mask("--pattern longformer --global 0 --window-right 3"),
                  "--window-left = none: must be given too");
  expect_rejected(attend("--pattern window --window 2 --window-left 1 --window-right 1"),
                  "--window = 2: must not be given with");
  expect_rejected(mask("--pattern window --window 0 --window-left 1 --window-right 1"),
                  "--window = 0: must not be given with");
  expect_rejected(attend("--pattern window --window-left -2 --window-right 0"),
                  "--window-left = -2: must be an integer >= -1");
  expect_rejected(mask("--pattern random --window-left 1 --window-right -3"),
                  "--window-right = -3: must be an integer >= -1");
  expect_rejected(attend("--pattern dense --window-left 1 --window-right 1"),
                  "--window-left = 1: not used by pattern dense");
  expect_rejected(mask("--pattern chunked --chunk-size 4 --window-left -1 --window-right -1"),
                  "--window-left = -1: not used by pattern chunked");
  expect_rejected(mask("--pattern window --window-left 1 --window-right 1 --attention-window 4"),
                  "--attention-window = 4: replaces --window-left/--window-right");
}

// contract §3.14.
TEST_F(BadInput, ChunkSize) {
  expect_rejected(attend("--pattern chunked --chunk-size 0"), "--chunk-size = 0: must be an integer >= 1");
  expect_rejected(mask("--pattern chunked --chunk-size -5 --causal"), "--chunk-size = -5");
  expect_rejected(attend("--pattern chunked"), "--chunk-size = none: the chunked pattern needs");
  expect_rejected(mask("--pattern window --window 1 --chunk-size 4"),
                  "--chunk-size = 4: not used by pattern window");
  expect_rejected(attend("--pattern chunked --chunk-size 4 --window 2"),
                  "--window = 2: not used by pattern chunked");
  expect_rejected(mask("--pattern chunked --chunk-size 4 --dilation 2"),
                  "--dilation = 2: not used by pattern chunked");
}

// contract §3.15.
TEST_F(BadInput, KernelSize) {
  expect_rejected(attend("--pattern neighborhood --kernel-size 4"),
                  "--kernel-size = 4: must be an odd integer >= 1");
  expect_rejected(mask("--pattern neighborhood --kernel-size 0"), "--kernel-size = 0");
  expect_rejected(attend("--pattern neighborhood --kernel-size 17"),
                  "--kernel-size = 17: must be an odd integer in [1, seq_len_k] = [1, 16]");
  expect_rejected(mask("--pattern neighborhood --kernel-size 5 --dilation 4"),
                  "--dilation = 4: must be in [1, floor(seq_len_k / kernel_size)] = [1, 3]");
  expect_rejected(attend("--pattern neighborhood"), "--kernel-size = none: the neighborhood pattern needs");
  expect_rejected(mask("--pattern chunked --chunk-size 2 --kernel-size 3"),
                  "--kernel-size = 3: not used by pattern chunked");
  expect_rejected(mask("--pattern neighborhood --kernel-size 3 --chunk-size 2"),
                  "--chunk-size = 2: not used by pattern neighborhood");
  expect_rejected(mask("--pattern neighborhood --kernel-size 3 --seq-len-k 8"),
                  "seq_len_q = 16: must be <= seq_len_k (8)");
}

// The pattern file spells the new keys where it writes them.
TEST_F(BadInput, ModernPatternKeysInAFile) {
  std::ofstream(path("both.json")) << R"({"pattern": "window", "window": 0, "window_left": 1, "window_right": 2})";
  expect_rejected(mask("--pattern-file " + path("both.json")),
                  "--pattern-file " + path("both.json") + ": window = 0: must not be given with");
  std::ofstream(path("chunk.json")) << R"([{"pattern": "chunked", "chunk_size": 0}])";
  expect_rejected(mask("--pattern-file " + path("chunk.json")),
                  "--pattern-file " + path("chunk.json") + ": [0].chunk_size = 0");
  std::ofstream(path("hood.json")) << R"({"heads": [{"pattern": "neighborhood", "kernel_size": 21}]})";
  expect_rejected(mask("--pattern-file " + path("hood.json")),
                  "--pattern-file: heads[0].kernel_size = 21");
  std::ofstream(path("lone.json")) << R"({"pattern": "window", "window_left": 3})";
  expect_rejected(mask("--pattern-file " + path("lone.json")),
                  "--pattern-file " + path("lone.json") + ": window_right = none");
}

TEST_F(BadInput, UnsupportedOutputDtype) { expect_rejected(attend("--dtype float16"), "--dtype"); }

TEST_F(BadInput, CandidateOfTheWrongShape) {
  write_npy(path("cand.npy"), uniform_tensor({2, 15, 4}, 4));
  expect_rejected("check " + qkv() + " --candidate " + path("cand.npy"), "--candidate shape");
}

TEST_F(BadInput, NegativeTolerance) {
  expect_rejected("check " + qkv() + " --candidate " + path("o.npy.ok") + " --atol -1",
                  "--atol");
}

TEST_F(BadInput, ExistingOutputIsNotClobberedOnFailure) {
  std::ofstream(path("out.npy")) << "previous result";
  const RunResult r = run(attend("--pattern window --window -1"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(slurp(path("out.npy")), "previous result");
}

// Outputs are renamed into place: a path that is not a regular file (a device, a folder)
// must be refused before any work, never replaced.
TEST_F(BadInput, OutputThatIsNotARegularFileIsRefused) {
  const RunResult r = run("attend " + qkv() + " --out /dev/null");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("sparseattn: error: invalid --out = /dev/null", 0), 0u) << r.err;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  expect_rejected("attend " + qkv() + " --out " + path(""), "--out");
}

// `--out q.npy` would overwrite its own input; `--lse` equal to `--out` would lose one.
TEST_F(BadInput, OutputNamingAnInputIsRefusedAndTheInputSurvives) {
  const std::string before = slurp(path("q.npy"));
  const RunResult r = run("attend " + qkv() + " --out " + path("q.npy"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("invalid --out"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("must differ from --q"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(path("q.npy")), before);
  expect_rejected("attend " + qkv() + " --out " + path("out.npy") + " --lse " + path("out.npy"),
                  "--lse");
}

// A NaN in q would otherwise read as a fully masked row (o = 0, lse = -inf): refused, with
// its position.
TEST_F(BadInput, NonFiniteInputIsRefusedWithItsIndex) {
  Tensor<double> q = uniform_tensor({2, 16, 4}, 1);
  q.data[(1 * 16 + 3) * 4 + 2] = std::nan("");
  write_npy(path("qnan.npy"), q);
  expect_rejected("attend " + qkv("qnan.npy") + " --out " + path("out.npy"), "--q[0,1,3,2] = nan");
}

TEST_F(BadInput, ReachTokenAndLayersOutOfRange) {
  const std::string reach = "reach --seq-len 16 --pattern window --window 1 ";
  expect_rejected(reach + "--token -1", "--token");
  expect_rejected(reach + "--layers 0", "--layers");
}

// contract §3: num_random beyond the keys means all the keys (canonicalization bounds the
// table of draws by seq_len), but a table of draws that cannot fit even so — here
// [1, 4e6, 4e6] int64, 128 TB — is refused by name before any work, not as "tensor shape".
TEST_F(BadInput, RandomDrawTableTooLargeNamesTheFlag) {
  expect_rejected("info --seq-len 4000000 --pattern random --num-random 1000000000000000",
                  "--num-random");
}

// CLI11 alone would wrap "-1" into 2^64-1 for the unsigned seed and clamp an overflowing
// window to INT64_MAX; the strict validators refuse both, naming the flag and the text.
TEST_F(BadInput, IntegersAreParsedStrictly) {
  for (const std::string& args : {mask("--pattern random --num-random 1 --seed -1"),
                                  mask("--pattern random --num-random 1 --seed 18446744073709551616"),
                                  mask("--pattern window --window 9223372036854775808"),
                                  mask("--pattern chunked --chunk-size 0x10"),
                                  mask("--pattern window --window-left 1e3 --window-right 1"),
                                  mask("--pattern neighborhood --kernel-size 9223372036854775809")}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err.rfind("sparseattn: error: --", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("must be an integer in"), std::string::npos) << r.err;
    EXPECT_FALSE(exists("out.npy")) << args;
  }
}

}  // namespace
}  // namespace sparseattn::testing_cli
