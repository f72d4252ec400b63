// Checks contract §2.10–§2.12 through the command line: `attend` and `check` with
// --cu-seqlens-q/-k (packed batches), --cache-seqlens (a preallocated KV cache) and
// --block-table (paged KV), and §5.1's refusals (exit 2, one line naming the argument, no
// file written).
//
// Gradients (contract §7.8): `check --dout` judges a packed batch's dq, dk, dv sequence by
// sequence and refuses them with a cache.
//
// The decode case is the one the layouts exist for: one query against a 4096-slot cache
// with 1000 slots filled. The right candidate passes; a candidate that read the empty slots
// and one that took the key-padding view (the query itself padded: o = 0) both fail. The
// oracle's values are checked by hand-computed cases in tests/api/layout_test.cpp.
#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

Tensor<int32_t> ints(Shape shape, std::vector<int32_t> values) {
  Tensor<int32_t> t(std::move(shape));
  t.data = std::move(values);
  return t;
}

class Layouts : public CliTest {
 protected:
  nlohmann::json json_of(const RunResult& r) const {
    return r.exit_code <= 1 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }
};

// --- decoding against a preallocated cache -------------------------------------------------

TEST_F(Layouts, DecodeIntoAPreallocatedCacheChecksAgainstTheFilledSlots) {
  Tensor<double> q = uniform_tensor({1, 4, 1, 16}, 1);
  Tensor<double> k = uniform_tensor({1, 2, 4096, 16}, 2), v = uniform_tensor({1, 2, 4096, 16}, 3);
  for (int64_t h = 0; h < 2; ++h)  // the empty slots hold stale values, never read
    for (int64_t t = 1000; t < 4096; ++t)
      for (int64_t e = 0; e < 16; ++e) {
        k.data[static_cast<size_t>((h * 4096 + t) * 16 + e)] = 0.0;
        v.data[static_cast<size_t>((h * 4096 + t) * 16 + e)] = 9.0;
      }
  write_npy(path("q.npy"), q);
  write_npy(path("k.npy"), k);
  write_npy(path("v.npy"), v);
  write_npy(path("seqlens.npy"), ints({1}, {1000}));
  const std::string qkv = "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  const std::string cache = " --cache-seqlens " + path("seqlens.npy") + " --pattern dense --causal";
  RunResult r = run("attend " + qkv + cache + " --impl cpu_k01_dense_flash --out " + path("o.npy") +
                    " --lse " + path("lse.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<double> o = read_npy_float(path("o.npy"), "o");
  EXPECT_EQ(o.shape, Shape({1, 4, 1, 16}));

  r = run("check " + qkv + cache + " --candidate " + path("o.npy") + " --candidate-lse " + path("lse.npy"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(json_of(r).value("layout", "").find("KV cache"), std::string::npos);

  // Reading every slot: 3096 stale keys of score 0 and value 9 outweigh the 1000 real ones.
  r = run("attend " + qkv + " --pattern dense --causal --out " + path("o_all.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("check " + qkv + cache + " --candidate " + path("o_all.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  // The key-padding view: the query sits at the padded position 4095, o = 0.
  write_npy(path("o_zero.npy"), Tensor<float>({1, 4, 1, 16}, 0.0f));
  r = run("check " + qkv + cache + " --candidate " + path("o_zero.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_GT(json_of(r)["o"]["num_mismatched"].get<int64_t>(), 0);
}

TEST_F(Layouts, PagedPoolsGiveTheContiguousCachesOutput) {
  // Two elements, page_size 4, 3 pages each; pool pages shuffled; element 1 shares page 2
  // with element 0 (the same first 4 keys); entries past the length are -1.
  const int64_t H = 2, D = 8, page = 4;
  Tensor<double> q = uniform_tensor({2, H, 2, D}, 4);
  Tensor<double> pool_k = uniform_tensor({6, H, page, D}, 5), pool_v = uniform_tensor({6, H, page, D}, 6);
  const std::vector<std::vector<int32_t>> table = {{2, 5, 0}, {2, 1, -1}};
  const std::vector<int32_t> lens = {11, 6};
  Tensor<double> ck({2, H, 12, D}, 0.0), cv({2, H, 12, D}, 0.0);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < lens[static_cast<size_t>(b)]; ++t)
        for (int64_t e = 0; e < D; ++e) {
          const int64_t pg = table[static_cast<size_t>(b)][static_cast<size_t>(t / page)];
          const size_t from = static_cast<size_t>(((pg * H + h) * page + t % page) * D + e);
          const size_t to = static_cast<size_t>(((b * H + h) * 12 + t) * D + e);
          ck.data[to] = pool_k.data[from];
          cv.data[to] = pool_v.data[from];
        }
  write_npy(path("q.npy"), q);
  write_npy(path("pk.npy"), pool_k);
  write_npy(path("pv.npy"), pool_v);
  write_npy(path("ck.npy"), ck);
  write_npy(path("cv.npy"), cv);
  write_npy(path("lens.npy"), ints({2}, {11, 6}));
  write_npy(path("table.npy"), ints({2, 3}, {2, 5, 0, 2, 1, -1}));
  const std::string common = " --q " + path("q.npy") + " --cache-seqlens " + path("lens.npy") +
                             " --pattern window --window 3 --causal";
  RunResult r = run("attend" + common + " --k " + path("pk.npy") + " --v " + path("pv.npy") +
                    " --block-table " + path("table.npy") + " --out " + path("o_paged.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("attend" + common + " --k " + path("ck.npy") + " --v " + path("cv.npy") + " --out " +
          path("o_cache.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_float(path("o_paged.npy"), "o").data, read_npy_float(path("o_cache.npy"), "o").data);
  r = run("check" + common + " --k " + path("pk.npy") + " --v " + path("pv.npy") + " --block-table " +
          path("table.npy") + " --candidate " + path("o_cache.npy"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// --- packed variable-length batches --------------------------------------------------------

class Varlen : public Layouts {
 protected:
  void SetUp() override {
    Layouts::SetUp();
    write_npy(path("q.npy"), uniform_tensor({kTq, 4, 8}, 7));
    write_npy(path("k.npy"), uniform_tensor({kTk, 2, 8}, 8));
    write_npy(path("v.npy"), uniform_tensor({kTk, 2, 8}, 9));
    write_npy(path("cu_q.npy"), ints({4}, {0, 5, 5, kTq}));
    write_npy(path("cu_k.npy"), ints({4}, {0, 7, 9, kTk}));
  }
  std::string flags() const {
    return " --q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy") +
           " --cu-seqlens-q " + path("cu_q.npy") + " --cu-seqlens-k " + path("cu_k.npy") +
           " --pattern window --window 2 --causal";
  }
  static constexpr int32_t kTq = 13, kTk = 17;
};

TEST_F(Varlen, AttendWritesPackedOutputsThatCheckPasses) {
  RunResult r = run("attend" + flags() + " --impl cpu_k02_window_band --out " + path("o.npy") +
                    " --lse " + path("lse.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_header(path("o.npy"), "o").shape, Shape({kTq, 4, 8}));
  EXPECT_EQ(read_npy_header(path("lse.npy"), "lse").shape, Shape({4, kTq}));
  r = run("check" + flags() + " --candidate " + path("o.npy") + " --candidate-lse " + path("lse.npy"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(json_of(r).value("layout", "").find("3 sequences"), std::string::npos);
}

// One problem over the whole packed batch (no sequence boundaries): sequence 2's queries
// see sequence 1's keys; check names the sequence.
TEST_F(Varlen, ACandidateThatCrossesSequencesFailsNamingTheSequence) {
  const Tensor<double> q = read_npy_float(path("q.npy"), "q"), k = read_npy_float(path("k.npy"), "k");
  auto bhsd = [&](const Tensor<double>& x, const std::string& name) {  // [T, H, d] -> [1, H, T, d]
    Tensor<double> y({1, x.dim(1), x.dim(0), x.dim(2)});
    for (int64_t t = 0; t < x.dim(0); ++t)
      for (int64_t h = 0; h < x.dim(1); ++h)
        for (int64_t e = 0; e < x.dim(2); ++e)
          y.data[static_cast<size_t>((h * x.dim(0) + t) * x.dim(2) + e)] =
              x.data[static_cast<size_t>((t * x.dim(1) + h) * x.dim(2) + e)];
    write_npy(path(name), y);
  };
  bhsd(q, "q4.npy");
  bhsd(k, "k4.npy");
  bhsd(read_npy_float(path("v.npy"), "v"), "v4.npy");
  RunResult r = run("attend --q " + path("q4.npy") + " --k " + path("k4.npy") + " --v " + path("v4.npy") +
                    " --pattern window --window 2 --causal --out " + path("o4.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Tensor<double> o4 = read_npy_float(path("o4.npy"), "o");
  Tensor<double> packed({kTq, 4, 8});
  for (int64_t t = 0; t < kTq; ++t)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t e = 0; e < 8; ++e)
        packed.data[static_cast<size_t>((t * 4 + h) * 8 + e)] = o4.data[static_cast<size_t>((h * kTq + t) * 8 + e)];
  write_npy(path("o_cross.npy"), packed);
  r = run("check" + flags() + " --candidate " + path("o_cross.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const nlohmann::json j = json_of(r);
  EXPECT_NE(j["o"]["reason"].get<std::string>().find("sequence "), std::string::npos) << j.dump(2);
  // Every batch index the report and its probes give is the failing sequence's, not 0 (the
  // probes ran on that sequence as a batch of one).
  const int64_t seq = j["o"]["worst_row"]["batch"].get<int64_t>();
  EXPECT_EQ(j["o"]["worst_index"][0].get<int64_t>(), seq);
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& x) {
    if (x.is_object())
      for (auto it = x.begin(); it != x.end(); ++it) {
        if (it.key() == "batch") EXPECT_EQ(it->get<int64_t>(), seq) << x.dump();
        walk(*it);
      }
    else if (x.is_array())
      for (const auto& e : x) walk(e);
  };
  walk(j["probes"]);
  if (seq != 0) EXPECT_EQ(j["probable_cause"].get<std::string>().find("(batch 0,"), std::string::npos);
}

TEST_F(Varlen, GradientsArePackedLikeTheirInputs) {
  write_npy(path("dout.npy"), uniform_tensor({kTq, 4, 8}, 10));
  const RunResult r = run("attend" + flags() + " --out " + path("o.npy") +
                          " --dout " + path("dout.npy") + " --dq " + path("dq.npy") + " --dk " +
                          path("dk.npy") + " --dv " + path("dv.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy_header(path("dq.npy"), "dq").shape, Shape({kTq, 4, 8}));
  EXPECT_EQ(read_npy_header(path("dk.npy"), "dk").shape, Shape({kTk, 2, 8}));
  EXPECT_EQ(read_npy_header(path("dv.npy"), "dv").shape, Shape({kTk, 2, 8}));
}

// check --dout under a packed batch (contract §7.8): attend's packed gradients pass; a dk
// whose rows of sequence 2 are sequence 0's, a dk that is not 0 on the keys of sequence 1
// (no query reads them) and a scaled dv each fail, the report naming the sequence.
TEST_F(Varlen, CheckJudgesPackedGradientsSequenceBySequence) {
  write_npy(path("dout.npy"), uniform_tensor({kTq, 4, 8}, 10));
  RunResult r = run("attend" + flags() + " --out " + path("o.npy") + " --lse " + path("lse.npy") +
                    " --dout " + path("dout.npy") + " --dq " + path("dq.npy") + " --dk " +
                    path("dk.npy") + " --dv " + path("dv.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string base = "check" + flags() + " --candidate " + path("o.npy") +
                           " --candidate-lse " + path("lse.npy") + " --dout " + path("dout.npy");
  auto grads = [&](const std::string& dq, const std::string& dk, const std::string& dv) {
    return " --candidate-dq " + path(dq) + " --candidate-dk " + path(dk) + " --candidate-dv " + path(dv);
  };
  r = run(base + grads("dq.npy", "dk.npy", "dv.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = json_of(r);
  EXPECT_EQ(j["gradient_oracle"], "b1_dense_masked_grad");
  for (const char* t : {"dq", "dk", "dv"}) {
    EXPECT_TRUE(j[t]["pass"].get<bool>()) << t;
    // Every row of the packed tensor is compared: sequence 1's keys (no query) against 0.
    EXPECT_EQ(j[t]["num_compared"], j[t]["num_elements"]) << t;
  }
  EXPECT_EQ(j["dk"]["num_elements"].get<int64_t>(), kTk * 2 * 8);

  const Tensor<double> dk = read_npy_float(path("dk.npy"), "dk");
  const size_t row = 2 * 8;  // one packed key row: 2 kv heads of 8
  Tensor<double> crossed = dk;  // sequence 2 (key rows 9..16) given sequence 0's rows 0..7
  std::copy(dk.data.begin(), dk.data.begin() + 8 * row, crossed.data.begin() + 9 * row);
  write_npy(path("dk_crossed.npy"), crossed);
  Tensor<double> leaked = dk;  // sequence 1's keys 7, 8 given sequence 0's last rows
  std::copy(dk.data.begin() + 5 * row, dk.data.begin() + 7 * row, leaked.data.begin() + 7 * row);
  write_npy(path("dk_leaked.npy"), leaked);
  Tensor<double> dv = read_npy_float(path("dv.npy"), "dv");
  for (double& x : dv.data) x *= 1.01;
  write_npy(path("dv_scaled.npy"), dv);

  struct Case {
    std::string dk, dv, tensor;
    int64_t sequence;  // -1: any
  };
  for (const Case& c : {Case{"dk_crossed.npy", "dv.npy", "dk", 2}, Case{"dk_leaked.npy", "dv.npy", "dk", 1},
                        Case{"dk.npy", "dv_scaled.npy", "dv", -1}}) {
    r = run(base + grads("dq.npy", c.dk, c.dv));
    EXPECT_EQ(r.exit_code, 1) << c.dk << " " << c.dv << "\n" << r.out;
    j = json_of(r);
    const nlohmann::json& t = j[c.tensor];
    EXPECT_FALSE(t["pass"].get<bool>()) << c.tensor;
    EXPECT_TRUE(j["dq"]["pass"].get<bool>());
    const int64_t seq = t["worst_row"]["batch"].get<int64_t>();
    if (c.sequence >= 0) EXPECT_EQ(seq, c.sequence) << t.dump(2);
    EXPECT_EQ(t["worst_index"][0].get<int64_t>(), seq);
    EXPECT_EQ(t["reason"].get<std::string>().rfind("sequence " + std::to_string(seq) + ": ", 0), 0u)
        << t["reason"];
    EXPECT_FALSE(j["probable_cause"].get<std::string>().empty());
    if (c.sequence == 1)  // keys no query reads: their gradient is 0
      EXPECT_NE(t["probable_cause"].get<std::string>().find("no queries"), std::string::npos) << t.dump(2);
  }
  // The crossed rows fail only in sequence 2: mismatches are keyed by sequence.
  r = run(base + grads("dq.npy", "dk_crossed.npy", "dv.npy"));
  const nlohmann::json crossed_report = json_of(r);  // named: a range-for does not keep it alive
  for (const auto& m : crossed_report["dk"]["mismatches"].items())
    EXPECT_EQ(m.key().rfind("2,", 0), 0u) << m.key();
}

// Decoding is forward only (contract §2.11): check refuses gradients with a cache, and under
// any layout a gradient without --dout, by name, in one line.
TEST_F(Layouts, CheckRefusesGradientsItCannotJudgeNamingTheFlag) {
  write_npy(path("q.npy"), uniform_tensor({2, 2, 1, 8}, 11));
  write_npy(path("k.npy"), uniform_tensor({2, 2, 10, 8}, 12));
  write_npy(path("v.npy"), uniform_tensor({2, 2, 10, 8}, 13));
  write_npy(path("lens.npy"), ints({2}, {3, 9}));
  write_npy(path("table.npy"), ints({2, 3}, {0, 1, 2, 3, 4, 5}));
  write_npy(path("pool.npy"), uniform_tensor({6, 2, 4, 8}, 14));
  write_npy(path("o.npy"), Tensor<double>({2, 2, 1, 8}, 0.0));
  const std::string qkv = " --q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  const std::string paged = " --q " + path("q.npy") + " --k " + path("pool.npy") + " --v " +
                            path("pool.npy") + " --block-table " + path("table.npy");
  const std::string grad = " --dout " + path("o.npy") + " --candidate-dq " + path("q.npy");
  struct Case {
    std::string flags, says;
  };
  const std::vector<Case> cases = {
      {qkv + " --cache-seqlens " + path("lens.npy") + grad, "--cache-seqlens = given"},
      {paged + " --cache-seqlens " + path("lens.npy") + grad, "--cache-seqlens = given"},
      {qkv + " --cache-seqlens " + path("lens.npy") + " --candidate-dq " + path("q.npy"),
       "--candidate-dq"},
      {qkv + " --cache-seqlens " + path("lens.npy") + " --dout " + path("o.npy"), "--dout"},
  };
  for (const Case& c : cases) {
    const RunResult r = run("check" + c.flags + " --pattern dense --candidate " + path("o.npy"));
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// `mask` of a packed batch: each sequence's own mask on the diagonal, nothing between.
TEST_F(Varlen, MaskWritesTheBlockDiagonalAllowedSet) {
  RunResult r = run("mask --cu-seqlens-q " + path("cu_q.npy") + " --cu-seqlens-k " + path("cu_k.npy") +
                    " --pattern window --window 2 --causal --out " + path("m.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor<uint8_t> m = read_npy_mask(path("m.npy"), "m");
  ASSERT_EQ(m.shape, Shape({kTq, kTk}));
  const std::vector<int64_t> cq = {0, 5, 5, kTq}, ck = {0, 7, 9, kTk};
  int64_t ones = 0;
  for (size_t b = 0; b + 1 < cq.size(); ++b) {
    const int64_t lq = cq[b + 1] - cq[b], lk = ck[b + 1] - ck[b];
    if (lq == 0) continue;
    r = run("mask --seq-len " + std::to_string(lq) + " --seq-len-k " + std::to_string(lk) +
            " --pattern window --window 2 --causal --out " + path("mb.npy"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Tensor<uint8_t> mb = read_npy_mask(path("mb.npy"), "mb");
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j)
        EXPECT_EQ(m.data[static_cast<size_t>((cq[b] + i) * kTk + ck[b] + j)],
                  mb.data[static_cast<size_t>(i * lk + j)]);
  }
  for (uint8_t x : m.data) ones += x;
  int64_t diagonal_ones = 0;  // every allowed pair lies in a diagonal block
  for (size_t b = 0; b + 1 < cq.size(); ++b)
    for (int64_t i = cq[b]; i < cq[b + 1]; ++i)
      for (int64_t j = ck[b]; j < ck[b + 1]; ++j) diagonal_ones += m.data[static_cast<size_t>(i * kTk + j)];
  EXPECT_EQ(ones, diagonal_ones);
  EXPECT_GT(ones, 0);
}

// --- bad input (contract §5.1) -------------------------------------------------------------

// --- info under a layout (api/layout_info.h) ------------------------------------------------

// Hand-counted: window 2, causal, each sequence bottom-right against its own keys.
// Sequence 0 (5 queries at positions 2..6 of 7 keys): 3 keys each = 15; sequence 1 (no
// rows): 0; sequence 2 (8 against 8): 1 + 2 + 6·3 = 21. Per head 36, two heads 72.
TEST_F(Varlen, InfoSumsEachSequencesOwnPattern) {
  const std::string lists =
      " --cu-seqlens-q " + path("cu_q.npy") + " --cu-seqlens-k " + path("cu_k.npy");
  RunResult r = run("info" + lists + " --pattern window --window 2 --causal --num-heads 2 "
                    "--head-dim 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = json_of(r);
  EXPECT_EQ(j["layout"], "varlen");
  EXPECT_EQ(j["num_sequences"].get<int64_t>(), 3);
  EXPECT_EQ(j["total_q"].get<int64_t>(), kTq);
  EXPECT_EQ(j["total_k"].get<int64_t>(), kTk);
  EXPECT_EQ(j["nnz"].get<int64_t>(), 72);
  EXPECT_EQ(j["empty_rows"].get<int64_t>(), 0);
  EXPECT_EQ(j["flops"].get<double>(), 4.0 * 72 * 8);
  EXPECT_EQ(j["dense_flops"].get<double>(), 4.0 * 2 * (5 * 7 + 0 * 2 + 8 * 8) * 8);
  EXPECT_EQ(j["mask_pairs"].get<int64_t>(), 2 * kTq * kTk);
  const std::vector<int64_t> nnz = {30, 0, 42};
  for (size_t b = 0; b < 3; ++b) EXPECT_EQ(j["sequences"][b]["nnz"].get<int64_t>(), nnz[b]) << b;
  EXPECT_EQ(j["sequences"][0]["seq_len_k"].get<int64_t>(), 7);
  r = run("info" + lists + " --pattern window --window 2 --causal --num-heads 2 --head-dim 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nnz"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("72"), std::string::npos) << r.out;
}

// Two queries per element, dense causal: element 0 (5 keys) 4 + 5 = 9; element 1 (no key)
// two empty rows; element 2 (1 key) query 0 at position -1 sees nothing, query 1 one key.
TEST_F(Layouts, InfoCountsACacheByItsFilledSlots) {
  write_npy(path("lens.npy"), ints({3}, {5, 0, 1}));
  const RunResult r = run("info --cache-seqlens " + path("lens.npy") +
                          " --seq-len 2 --pattern dense --causal --num-heads 2 --head-dim 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = json_of(r);
  EXPECT_EQ(j["layout"], "kv_cache");
  EXPECT_EQ(j["total_q"].get<int64_t>(), 6);
  EXPECT_EQ(j["total_k"].get<int64_t>(), 6);
  EXPECT_EQ(j["nnz"].get<int64_t>(), 2 * (9 + 0 + 1));
  EXPECT_EQ(j["empty_rows"].get<int64_t>(), 2 * (0 + 2 + 1));
  EXPECT_EQ(j["flops"].get<double>(), 4.0 * 20 * 4);
  EXPECT_FALSE(j.contains("mask_pairs"));
}

TEST_F(Varlen, InfoRefusesBadLayoutsNamingTheFlag) {
  write_npy(path("cu_bad.npy"), ints({4}, {0, 6, 5, kTq}));
  write_npy(path("lens.npy"), ints({2}, {3, -1}));
  write_npy(path("table.npy"), ints({2, 1}, {0, 1}));
  const std::string lists =
      " --cu-seqlens-q " + path("cu_q.npy") + " --cu-seqlens-k " + path("cu_k.npy");
  struct Case {
    std::string flags, says;
  };
  const std::vector<Case> cases = {
      {" --cu-seqlens-q " + path("cu_bad.npy") + " --cu-seqlens-k " + path("cu_k.npy"),
       "--cu-seqlens-q[2] = 5"},
      {lists + " --seq-len 4", "--seq-len = 4"},
      {lists + " --seq-len-k 4", "--seq-len-k"},
      {" --cache-seqlens " + path("lens.npy") + " --seq-len 1", "--cache-seqlens[1] = -1"},
      {" --cache-seqlens " + path("cu_q.npy"), "--seq-len = missing"},
      {" --cache-seqlens " + path("cu_q.npy") + " --block-table " + path("table.npy") + " --seq-len 1",
       "--block-table"},
      {"", "--seq-len = missing"},
  };
  for (const Case& c : cases) {
    const RunResult r = run("info" + c.flags + " --pattern dense");
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.flags << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(Varlen, BadLayoutsExitTwoNamingTheFlagAndWriteNothing) {
  Tensor<double> floats({4}, 0.0);
  write_npy(path("cu_float.npy"), floats);
  write_npy(path("cu_bad.npy"), ints({4}, {0, 6, 5, kTq}));
  write_npy(path("cu_short.npy"), ints({3}, {0, 5, kTq}));
  const std::string qkv = " --q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  const std::string out = " --out " + path("o.npy");
  struct Case {
    std::string flags, says;
  };
  const std::vector<Case> cases = {
      {" --cu-seqlens-q " + path("cu_float.npy") + " --cu-seqlens-k " + path("cu_k.npy"),
       "--cu-seqlens-q dtype = float64: must be int32 or int64"},
      {" --cu-seqlens-q " + path("cu_bad.npy") + " --cu-seqlens-k " + path("cu_k.npy"),
       "--cu-seqlens-q[2] = 5"},
      {" --cu-seqlens-q " + path("cu_q.npy") + " --cu-seqlens-k " + path("cu_short.npy"),
       "--cu-seqlens-k"},
      {" --cu-seqlens-q " + path("cu_q.npy"), "--cu-seqlens-q"},
      {" --cu-seqlens-q " + path("cu_q.npy") + " --cu-seqlens-k " + path("cu_k.npy") +
           " --layout bshd", "--layout"},
      {" --cache-seqlens " + path("cu_q.npy"), "--q shape"},
  };
  for (const Case& c : cases) {
    const RunResult r = run("attend" + qkv + c.flags + out);
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists("o.npy"));
  }
}

TEST_F(Layouts, BadCachesExitTwoNamingTheFlag) {
  write_npy(path("q.npy"), uniform_tensor({2, 2, 1, 8}, 11));
  write_npy(path("k.npy"), uniform_tensor({2, 2, 10, 8}, 12));
  write_npy(path("v.npy"), uniform_tensor({2, 2, 10, 8}, 13));
  write_npy(path("lens_big.npy"), ints({2}, {3, 11}));
  write_npy(path("lens.npy"), ints({2}, {3, 9}));
  write_npy(path("table.npy"), ints({2, 2}, {0, 7, 1, -1}));
  const std::string qkv = " --q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  struct Case {
    std::string flags, says;
  };
  const std::vector<Case> cases = {
      {" --cache-seqlens " + path("lens_big.npy"), "--cache-seqlens[1] = 11: must be in [0, 10]"},
      {" --block-table " + path("table.npy"), "--cache-seqlens"},
      {" --cache-seqlens " + path("lens.npy") + " --dout " + path("q.npy") + " --dq " + path("dq.npy"),
       "--cache-seqlens"},
  };
  for (const Case& c : cases) {
    const RunResult r = run("attend" + qkv + c.flags + " --out " + path("o.npy"));
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_FALSE(exists("o.npy"));
  }
  write_npy(path("table_bad.npy"), ints({2, 2}, {5, -1, 1, -1}));
  const RunResult r = run("attend" + qkv + " --cache-seqlens " + path("lens.npy") + " --block-table " +
                          path("table_bad.npy") + " --out " + path("o.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--block-table[0][0] = 5"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sparseattn::testing_cli
