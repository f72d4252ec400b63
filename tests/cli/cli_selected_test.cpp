// Checks contract §3.16–§3.18 through the command line: `select` writes the hand-computed
// indices of each method; `attend --pattern selected --kv-indices` gives the hand-computed
// o and lse (exp(s_j) = w_j by construction), with --duplicates count weighing a repeated
// key twice, and cpu_k08_selected_gather agrees; `mask --pattern selected-blocks` writes
// the hand-computed mask; every bad input exits 2 with one line naming the flag, and
// writes no file.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "tests/cli/cli_harness.h"

namespace sparseattn::testing_cli {
namespace {

class SelectedCli : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // q = 1, k_j = log w_j with w = (1, 2, 3, 4), v = (1, 2, 3, 4), head_dim 1, scale 1.
    Tensor<double> q({1, 1, 4, 1}, 1.0), k({1, 1, 4, 1}), v({1, 1, 4, 1});
    k.data = {0.0, std::log(2.0), std::log(3.0), std::log(4.0)};
    v.data = {1.0, 2.0, 3.0, 4.0};
    write_npy(path("q.npy"), q);
    write_npy(path("k.npy"), k);
    write_npy(path("v.npy"), v);
    // Row 0 {0, 2}; row 1 {3, 3, 1}; row 2 all -1; row 3 {0, 1, 2}.
    Tensor<int64_t> idx({1, 1, 4, 3});
    idx.data = {2, 0, -1, 3, 3, 1, -1, -1, -1, 0, 1, 2};
    write_npy(path("I.npy"), idx);
  }
  std::string qkv() const {
    return "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy") +
           " --scale 1";
  }
  // One line on stderr naming `flag`, exit 2, no `out` file.
  void expect_refused(const std::string& args, const std::string& flag, const std::string& out) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("invalid " + flag), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists(out)) << args;
  }
};

TEST_F(SelectedCli, AttendOverAGivenSelectionByHand) {
  for (const char* impl : {"a1_dense_masked", "cpu_k08_selected_gather"}) {
    SCOPED_TRACE(impl);
    const RunResult r = run("attend " + qkv() + " --pattern selected --kv-indices " + path("I.npy") +
                            " --impl " + impl + " --dtype float64 --out " + path("o.npy") + " --lse " +
                            path("lse.npy"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Tensor<double> o = read_npy_float(path("o.npy"), "o");
    const Tensor<double> lse = read_npy_float(path("lse.npy"), "lse");
    const double tol = std::string(impl) == "a1_dense_masked" ? 1e-14 : 1e-5;
    EXPECT_NEAR(o.data[0], 2.5, tol);             // (1·1 + 3·3) / 4
    EXPECT_NEAR(lse.data[0], std::log(4.0), tol);
    EXPECT_NEAR(o.data[1], 20.0 / 6.0, tol);      // {1, 3} once: (2·2 + 4·4) / 6
    EXPECT_EQ(o.data[2], 0.0);                    // all -1: o = 0, lse = -inf
    EXPECT_EQ(lse.data[2], -INFINITY);
    EXPECT_NEAR(o.data[3], 14.0 / 6.0, tol);
    const RunResult c = run("attend " + qkv() + " --pattern selected --kv-indices " + path("I.npy") +
                            " --duplicates count --impl " + impl + " --dtype float64 --out " +
                            path("oc.npy") + " --lse " + path("lsec.npy"));
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const Tensor<double> oc = read_npy_float(path("oc.npy"), "o");
    const Tensor<double> lsec = read_npy_float(path("lsec.npy"), "lse");
    EXPECT_NEAR(oc.data[1], 3.6, tol);            // 3 twice: (2·2 + 2·4·4) / 10
    EXPECT_NEAR(lsec.data[1], std::log(10.0), tol);
  }
}

TEST_F(SelectedCli, MaskOfSelectedBlocksByHand) {
  Tensor<int64_t> b({1, 1, 2, 2});
  b.data = {1, 1, 0, -1};
  write_npy(path("B.npy"), b);
  const RunResult r = run("mask --seq-len 4 --pattern selected-blocks --block-indices " + path("B.npy") +
                          " --block-size-q 2 --block-size-k 2 --out " + path("m.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<uint8_t> m = read_npy_mask(path("m.npy"), "m");
  EXPECT_EQ(m.data, (std::vector<uint8_t>{0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0}));
}

TEST_F(SelectedCli, SelectWritesHandComputedIndices) {
  Tensor<double> s({1, 1, 2, 4});
  s.data = {1, 3, 3, 2, -INFINITY, 5, 5, 5};
  write_npy(path("S.npy"), s);
  RunResult r = run("select --method topk --scores " + path("S.npy") + " --top-k 3 --causal --out " +
                    path("T.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_int(path("T.npy"), "T").data, (std::vector<int64_t>{1, 2, 0, 1, 2, 3}));
  // nsa over 8 keys in blocks of 2 (4 blocks), 3 in all, 1 initial and 1 local.
  Tensor<double> ns({1, 1, 8, 4});
  for (int64_t i = 0; i < 8; ++i) {
    const double row[] = {9, 1, 5, 7};
    for (int64_t c = 0; c < 4; ++c) ns.data[static_cast<size_t>(i * 4 + c)] = row[c];
  }
  write_npy(path("N.npy"), ns);
  r = run("select --method nsa --scores " + path("N.npy") +
          " --block-size-k 2 --num-selected 3 --num-initial 1 --num-local 1 --out " + path("NI.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<int64_t> ni = read_npy_int(path("NI.npy"), "NI");
  EXPECT_EQ(std::vector<int64_t>(ni.data.end() - 3, ni.data.end()), (std::vector<int64_t>{0, 3, 2}));
  // moba: C = 2, k = (1, 3, -1, -1, 0, 0): query 5 keeps its chunk 2 and chunk 0.
  Tensor<double> mq({1, 1, 6, 1}, 1.0), mk({1, 1, 6, 1});
  mk.data = {1, 3, -1, -1, 0, 0};
  write_npy(path("mq.npy"), mq);
  write_npy(path("mk.npy"), mk);
  r = run("select --method moba --q " + path("mq.npy") + " --k " + path("mk.npy") +
          " --chunk-size 2 --top-k 2 --out " + path("M.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<int64_t> mi = read_npy_int(path("M.npy"), "M");
  EXPECT_EQ(std::vector<int64_t>(mi.data.end() - 2, mi.data.end()), (std::vector<int64_t>{2, 0}));
}

TEST_F(SelectedCli, ReachOverASelectionByHand) {
  // contract §6.1 on the 4-token table: edges j -> i for j in A(i) = {0,2}, {1,3}, {}, {0,1,2}
  // plus the self edges: 7 + 2 (rows 2 and 3 lack their own key) = 9 of 16 pairs after one
  // layer; after two, A(1) gains A(3) and row 3 already has every key: 2 + 4 + 1 + 4 = 11.
  const RunResult r = run("reach --pattern selected --kv-indices " + path("I.npy") + " --seq-len 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["connected_fraction"][0].get<double>(), 9.0 / 16.0);
  EXPECT_DOUBLE_EQ(j["connected_fraction"][1].get<double>(), 11.0 / 16.0);
}

TEST_F(SelectedCli, BadInputNamesTheFlagAndWritesNothing) {
  Tensor<int64_t> bad({1, 1, 4, 1}, 0);
  bad.data[2] = 4;  // L_k = 4
  write_npy(path("bad.npy"), bad);
  const std::string o = " --out " + path("o.npy");
  expect_refused("attend " + qkv() + " --pattern selected --kv-indices " + path("bad.npy") + o,
                 "--kv-indices[0,0,2,0] = 4", "o.npy");
  Tensor<int64_t> rank3({1, 4, 1}, 0);
  write_npy(path("r3.npy"), rank3);
  expect_refused("attend " + qkv() + " --pattern selected --kv-indices " + path("r3.npy") + o,
                 "--kv-indices shape", "o.npy");
  Tensor<int64_t> three({1, 3, 4, 1}, 0);  // H_sel = 3 with one head
  write_npy(path("h3.npy"), three);
  expect_refused("attend " + qkv() + " --pattern selected --kv-indices " + path("h3.npy") + o,
                 "--kv-indices shape", "o.npy");
  expect_refused("attend " + qkv() + " --pattern selected --kv-indices " + path("I.npy") +
                     " --duplicates twice" + o,
                 "--duplicates", "o.npy");
  expect_refused("attend " + qkv() + " --pattern selected-blocks --block-indices " + path("I.npy") +
                     " --block-size-q 0 --block-size-k 2" + o,
                 "--block-size-q", "o.npy");
  expect_refused("attend " + qkv() + " --pattern window --window 1 --kv-indices " + path("I.npy") + o,
                 "--kv-indices", "o.npy");
  Tensor<double> s({1, 1, 4, 2}, 0.0);
  write_npy(path("S.npy"), s);
  const std::string out = " --out " + path("sel.npy");
  expect_refused("select --method nsa --scores " + path("S.npy") +
                     " --block-size-k 2 --num-selected 1 --num-initial 1 --num-local 1" + out,
                 "--num-selected", "sel.npy");
  expect_refused("select --method topk --scores " + path("S.npy") + " --top-k 0" + out, "--top-k",
                 "sel.npy");
  expect_refused("select --method topk --scores " + path("S.npy") + " --top-k 1 --chunk-size 2" + out,
                 "--chunk-size", "sel.npy");
  expect_refused("select --method topk --scores " + path("I.npy") + " --top-k 1" + out, "--scores",
                 "sel.npy");  // an int file: the dtype is refused by name
  expect_refused("select --method nsa --scores " + path("S.npy") +
                     " --block-size-k 1 --num-selected 2" + out,
                 "--scores shape", "sel.npy");  // 4 keys in blocks of 1: 4 blocks, 2 given
}


// ---- --block-mask DIR (contract §3.17): FlexAttention's BlockMask tables ----------------

class BlockMaskCli : public SelectedCli {
 protected:
  // Writes FlexAttention's tables into folder `dir` (int32 as FlexAttention stores them);
  // an empty `full_num` leaves the full pair out.
  void write_block_mask(const std::string& dir, Shape num_shape, std::vector<int32_t> num,
                        std::vector<int32_t> idx, std::vector<int32_t> full_num = {},
                        std::vector<int32_t> full_idx = {}) {
    std::filesystem::create_directories(path(dir));
    Shape idx_shape = num_shape;
    idx_shape.push_back(static_cast<int64_t>(idx.size()) / (num_shape[0] * num_shape[1] * num_shape[2]));
    auto put = [&](const char* file, const Shape& shape, std::vector<int32_t> v) {
      Tensor<int32_t> t(shape);
      t.data = std::move(v);
      write_npy(path(dir + "/" + file), t);
    };
    put("kv_num_blocks.npy", num_shape, std::move(num));
    put("kv_indices.npy", idx_shape, std::move(idx));
    if (full_num.empty()) return;
    put("full_kv_num_blocks.npy", num_shape, std::move(full_num));
    put("full_kv_indices.npy", idx_shape, std::move(full_idx));
  }
  // 4 tokens in blocks of 2. Partial: block 1 for query block 0, block 0 for query block
  // 1; full: block 1 for query block 1. Past the counts: garbage (7, -3, 5, 9), never read.
  void write_bm() {
    write_block_mask("bm", {1, 1, 2}, {1, 1}, {1, 7, 0, -3}, {0, 1}, {5, 5, 1, 9});
  }
};

TEST_F(BlockMaskCli, AFolderIsReadAsItsBlockIndicesByHand) {
  write_bm();
  const std::string bm = " --pattern selected-blocks --block-mask " + path("bm") +
                         " --block-size-q 2 --block-size-k 2";
  RunResult r = run("mask --seq-len 4" + bm + " --out " + path("m.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Query block 0 {1}: keys 2, 3; query block 1 {0} partial + {1} full: every key.
  const std::vector<uint8_t> want = {0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(read_npy_mask(path("m.npy"), "m").data, want);
  // The same in a pattern file (the folder relative to the file).
  std::ofstream(path("p.json")) << R"({"pattern": "selected-blocks", "block_mask": "bm",
                                       "block_size_q": 2, "block_size_k": 2})";
  r = run("mask --seq-len 4 --pattern-file " + path("p.json") + " --out " + path("mf.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_mask(path("mf.npy"), "m").data, want);
  // attend through the imported pattern equals the oracle on that mask, written as explicit.
  r = run("attend " + qkv() + bm + " --dtype float64 --out " + path("o.npy") + " --lse " + path("lse.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("attend " + qkv() + " --pattern explicit --mask " + path("m.npy") + " --dtype float64 --out " +
          path("oe.npy") + " --lse " + path("lsee.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_float(path("o.npy"), "o").data, read_npy_float(path("oe.npy"), "o").data);
  EXPECT_EQ(read_npy_float(path("lse.npy"), "lse").data, read_npy_float(path("lsee.npy"), "lse").data);
  // Rows 2, 3 see every key: o = (1 + 4 + 9 + 16) / 10 (exp(s_j) = w_j = v_j).
  EXPECT_NEAR(read_npy_float(path("o.npy"), "o").data[3], 3.0, 1e-14);
  // info and reach read it too (every subcommand with pattern flags).
  r = run("info --seq-len 4" + bm + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["nnz"].get<int64_t>(), 12);
  EXPECT_EQ(run("reach --seq-len 4" + bm + " --json").exit_code, 0);
}

TEST_F(BlockMaskCli, BlockSizesDefaultToFlexAttentions128) {
  // One query block of 128 covers the 4 tokens: the table has one row; block 0 = every key.
  write_block_mask("one", {1, 1, 1}, {1}, {0});
  const RunResult r = run("mask --seq-len 4 --pattern selected-blocks --block-mask " + path("one") +
                          " --out " + path("m.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_mask(path("m.npy"), "m").data, std::vector<uint8_t>(16, 1));
  // Read at block 2 instead, the same table is refused: 2 query blocks are needed.
  EXPECT_EQ(run("mask --seq-len 4 --pattern selected-blocks --block-mask " + path("one") +
                " --block-size-q 2 --block-size-k 2 --out " + path("m2.npy")).exit_code, 2);
}

TEST_F(BlockMaskCli, BadFoldersExitTwoNamingTheFileAndTheShape) {
  write_bm();
  const std::string o = " --out " + path("o.npy");
  auto attend = [&](const std::string& dir, const std::string& more = "") {
    return "attend " + qkv() + " --pattern selected-blocks --block-mask " + path(dir) +
           " --block-size-q 2 --block-size-k 2" + more + o;
  };
  const std::string bm = path("bm") + "/";
  // Missing files: the required one, or half of the full pair.
  std::filesystem::create_directories(path("empty"));
  expect_refused(attend("empty"), "--block-mask " + path("empty") + "/kv_num_blocks.npy = missing: must "
                 "exist: the folder holds kv_num_blocks.npy int32 [B, H, Q_blocks]", "o.npy");
  write_block_mask("half", {1, 1, 2}, {1, 1}, {1, 0, 0, 0});
  std::filesystem::copy_file(bm + "full_kv_num_blocks.npy", path("half/full_kv_num_blocks.npy"));
  expect_refused(attend("half"), "--block-mask " + path("half") + "/full_kv_indices.npy = missing", "o.npy");
  // Another dtype: the file and the shape it must have.
  write_block_mask("float", {1, 1, 2}, {1, 1}, {1, 0, 0, 0});
  write_npy(path("float/kv_indices.npy"), Tensor<double>({1, 1, 2, 2}, 0.0));
  expect_refused(attend("float"), "--block-mask " + path("float") + "/kv_indices.npy = dtype float64", "o.npy");
  EXPECT_NE(run(attend("float")).err.find("[B, H, Q_blocks, KV_blocks]"), std::string::npos);
  // Rank and shape.
  write_block_mask("rank", {1, 1, 2}, {1, 1}, {1, 0, 0, 0});
  write_npy(path("rank/kv_num_blocks.npy"), Tensor<int32_t>({2}, 1));
  expect_refused(attend("rank"), "--block-mask " + path("rank") + "/kv_num_blocks.npy shape = [2]: must be "
                 "[B, H, Q_blocks]", "o.npy");
  write_block_mask("shape", {1, 1, 2}, {1, 1}, {1, 0, 0, 0});
  write_npy(path("shape/kv_indices.npy"), Tensor<int32_t>({1, 1, 3, 2}, 0));
  expect_refused(attend("shape"), "--block-mask " + path("shape") + "/kv_indices.npy shape = [1, 1, 3, 2]: "
                 "must be [1, 1, 2, KV_blocks >= 1]", "o.npy");
  // A read index out of range; the garbage past the counts is not read.
  write_block_mask("far", {1, 1, 2}, {1, 1}, {2, 0, 0, 0});
  expect_refused(attend("far"), "--block-mask " + path("far") + "/kv_indices.npy[0,0,0,0] = 2: must be a "
                 "key block in [0, 2)", "o.npy");
  // Beside another kind, --block-indices or --pattern-file.
  expect_refused("attend " + qkv() + " --pattern window --window 1 --block-mask " + path("bm") + o,
                 "--block-mask", "o.npy");
  expect_refused(attend("bm", " --block-indices " + path("I.npy")), "--block-mask", "o.npy");
  std::ofstream(path("w.json")) << R"({"pattern": "window", "window": 1})";
  expect_refused("attend " + qkv() + " --pattern-file " + path("w.json") + " --block-mask " + path("bm") + o,
                 "--block-mask", "o.npy");
}

// ---- check probes (contract §4.9): each planted mistake is named -------------------------

class SelectedProbes : public CliTest {
 protected:
  static constexpr int64_t kHq = 4, kHkv = 2, kL = 8, kD = 4;
  void SetUp() override {
    CliTest::SetUp();
    write_npy(path("q.npy"), uniform_tensor({1, kHq, kL, kD}, 1));
    write_npy(path("k.npy"), uniform_tensor({1, kHkv, kL, kD}, 2));
    write_npy(path("v.npy"), uniform_tensor({1, kHkv, kL, kD}, 3));
  }
  std::string qkv() const {
    return "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  }
  // The oracle's o and lse under `flags` into o_<tag>.npy, lse_<tag>.npy.
  void attend(const std::string& tag, const std::string& flags) {
    const RunResult r = run("attend " + qkv() + " --dtype float64 --out " + path("o_" + tag + ".npy") +
                            " --lse " + path("lse_" + tag + ".npy") + " " + flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // check of candidate <tag> under `flags`: its exit code and probable cause.
  std::pair<int, std::string> check(const std::string& tag, const std::string& flags) {
    const RunResult r = run("check " + qkv() + " --candidate " + path("o_" + tag + ".npy") +
                            " --candidate-lse " + path("lse_" + tag + ".npy") + " " + flags);
    if (r.exit_code > 1) return {r.exit_code, r.err};
    return {r.exit_code, nlohmann::json::parse(r.out).value("probable_cause", std::string("(none)"))};
  }
  // A [1, H_sel, L, K] table from rows of K entries (each row repeated for every head
  // unless `heads` lists them all).
  std::string table(const std::string& name, int64_t hsel, int64_t rows, std::vector<int64_t> v) {
    Tensor<int64_t> t({1, hsel, rows, static_cast<int64_t>(v.size()) / (hsel * rows)});
    t.data = std::move(v);
    write_npy(path(name), t);
    return path(name);
  }
};

TEST_F(SelectedProbes, MinusOneReadAsAKeyIsNamed) {
  // Two lists per kv head, 8 queries, K = 3, a -1 in every row.
  std::vector<int64_t> good, zero, last;
  for (int64_t r = 0; r < 2 * kL; ++r)
    for (const int64_t e : {(r * 3 + 1) % kL, int64_t{-1}, (r * 5 + 2) % kL}) {
      good.push_back(e);
      zero.push_back(e < 0 ? 0 : e);
      last.push_back(e < 0 ? kL - 1 : e);
    }
  const std::string pat = "--pattern selected --kv-indices ";
  attend("good", pat + table("I.npy", 2, kL, good));
  attend("zero", pat + table("I0.npy", 2, kL, zero));
  attend("last", pat + table("IL.npy", 2, kL, last));
  EXPECT_EQ(check("good", pat + path("I.npy")).first, 0);
  auto c = check("zero", pat + path("I.npy"));
  EXPECT_EQ(c.first, 1);
  EXPECT_NE(c.second.find("-1 (an empty slot) read as key 0"), std::string::npos) << c.second;
  c = check("last", pat + path("I.npy"));
  EXPECT_EQ(c.first, 1);
  EXPECT_NE(c.second.find("read as the last key 7"), std::string::npos) << c.second;
  // A gather kernel reading slot by slot counts key 0 once per empty slot: rows 5, 6, 13
  // and 14 list key 0 already and weigh it twice, which the set-semantics table above
  // cannot explain.
  attend("zero_counted", pat + path("I0.npy") + " --duplicates count");
  c = check("zero_counted", pat + path("I.npy"));
  EXPECT_EQ(c.first, 1);
  EXPECT_NE(c.second.find("each empty slot counting key 0 once more"), std::string::npos) << c.second;
}

TEST_F(SelectedProbes, RowsReadPerQueryHeadIsNamed) {
  // A per-kv-head table (H_sel = 2): a kernel reading row h mod 2 gives heads 1 and 2 the
  // other group's lists; the candidate is the oracle on that table written per query head.
  std::vector<int64_t> kv, tiled;
  for (int64_t r = 0; r < 2 * kL; ++r)
    for (int64_t c = 0; c < 2; ++c) kv.push_back((r * 3 + c * 5 + (r >= kL ? 4 : 0)) % kL);
  for (int64_t h = 0; h < kHq; ++h)
    for (int64_t r = 0; r < kL; ++r)
      for (int64_t c = 0; c < 2; ++c) tiled.push_back(kv[static_cast<size_t>(((h % 2) * kL + r) * 2 + c)]);
  const std::string pat = "--pattern selected --kv-indices ";
  attend("tiled", pat + table("T.npy", kHq, kL, tiled));
  const auto c = check("tiled", pat + table("K.npy", 2, kL, kv));
  EXPECT_EQ(c.first, 1);
  EXPECT_NE(c.second.find("kv_indices read per query head"), std::string::npos) << c.second;
}

TEST_F(SelectedProbes, DuplicatesCountedIsNamed) {
  std::vector<int64_t> v;
  for (int64_t r = 0; r < kL; ++r)
    for (const int64_t e : {r % kL, r % kL, (r + 3) % kL}) v.push_back(e);
  const std::string pat = "--pattern selected --kv-indices " + table("D.npy", 1, kL, v);
  attend("counted", pat + " --duplicates count");
  attend("once", pat);
  auto c = check("counted", pat);
  EXPECT_EQ(c.first, 1);
  EXPECT_NE(c.second.find("duplicates counted: a key listed twice"), std::string::npos) << c.second;
  c = check("once", pat + " --duplicates count");
  EXPECT_EQ(c.first, 1);
  EXPECT_NE(c.second.find("duplicates counted once"), std::string::npos) << c.second;
}

TEST_F(SelectedProbes, BlockSizeOffByOneIsNamed) {
  // One list per query (b_q = 1) of key blocks of 2 (4 blocks); the candidate read blocks
  // of 3 tokens (3 blocks: entries stay below 3).
  std::vector<int64_t> v;
  for (int64_t r = 0; r < kL; ++r)
    for (const int64_t e : {r % 3, (r + 1) % 3}) v.push_back(e);
  const std::string t = table("B.npy", 1, kL, v);
  const std::string pat = "--pattern selected-blocks --block-indices " + t + " --block-size-q 1";
  attend("three", pat + " --block-size-k 3");
  const auto c = check("three", pat + " --block-size-k 2");
  EXPECT_EQ(c.first, 1);
  EXPECT_NE(c.second.find("block_size_k read as 3 instead of 2"), std::string::npos) << c.second;
}

}  // namespace
}  // namespace sparseattn::testing_cli
