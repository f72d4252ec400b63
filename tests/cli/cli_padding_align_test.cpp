// Checks contract §2.6 (`--padding-align valid`, FlashAttention's alignment under right
// padding) through the CLI: hand-computed o and lse for L_q = L_k and L_q != L_k, outputs of
// FlashAttention's own test reference (construct_local_mask, written out below) that pass
// with the flag and fail without it naming it, gradients, `attend` per batch element,
// `mask`, and the refusals (non-right padding names --key-padding-mask, exit 2).
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

class PaddingAlign : public CliTest {
 protected:
  void write_qkv(const Tensor<double>& q, const Tensor<double>& k, const Tensor<double>& v) {
    write_npy(path("q.npy"), q);
    write_npy(path("k.npy"), k);
    write_npy(path("v.npy"), v);
  }
  // Right padding: batch element b has n[b] real keys of lk.
  void write_padding(const std::vector<int64_t>& n, int64_t lk) {
    Tensor<uint8_t> pad({static_cast<int64_t>(n.size()), lk}, 0);
    for (size_t b = 0; b < n.size(); ++b)
      for (int64_t j = 0; j < n[b]; ++j) pad.data[b * lk + j] = 1;
    write_npy(path("pad.npy"), pad, true);
  }
  std::string qkv() const {
    return "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy") +
           " --key-padding-mask " + path("pad.npy");
  }
  RunResult check(const std::string& flags) const {
    return run("check " + qkv() + " --candidate " + path("o.npy") + " --candidate-lse " +
               path("lse.npy") + " " + flags);
  }
  static nlohmann::json json(const RunResult& r) {
    return r.out.empty() ? nlohmann::json() : nlohmann::json::parse(r.out);
  }
};

// q = 0: every allowed score is 0, so o_i is the mean of the allowed v_j and lse_i = ln |A(i)|.
// v_j = (j, 10 j) for key j. `keys[i]` lists query i's allowed keys; empty = fully masked.
void uniform_candidate(const std::vector<std::vector<int64_t>>& keys, Tensor<double>& o,
                       Tensor<double>& lse) {
  const int64_t lq = static_cast<int64_t>(keys.size());
  o = Tensor<double>({1, 1, lq, 2}, 0.0);
  lse = Tensor<double>({1, 1, lq}, -INFINITY);
  for (int64_t i = 0; i < lq; ++i) {
    if (keys[i].empty()) continue;
    for (int64_t j : keys[i]) o.data[i * 2] += j, o.data[i * 2 + 1] += 10.0 * j;
    o.data[i * 2] /= keys[i].size(), o.data[i * 2 + 1] /= keys[i].size();
    lse.data[i] = std::log(static_cast<double>(keys[i].size()));
  }
}

Tensor<double> v_of_index(int64_t lk) {
  Tensor<double> v({1, 1, lk, 2});
  for (int64_t j = 0; j < lk; ++j) v.data[j * 2] = j, v.data[j * 2 + 1] = 10.0 * j;
  return v;
}

TEST_F(PaddingAlign, SelfAttentionHandComputedAgreesWithTheDefault) {
  // 4 tokens, causal, padding [1, 1, 1, 0]: query i sits at i either way (m = n = 3).
  write_qkv(Tensor<double>({1, 1, 4, 2}, 0.0), Tensor<double>({1, 1, 4, 2}, 0.0), v_of_index(4));
  write_padding({3}, 4);
  Tensor<double> o, lse;
  uniform_candidate({{0}, {0, 1}, {0, 1, 2}, {}}, o, lse);  // query 3 is padded
  write_npy(path("o.npy"), o);
  write_npy(path("lse.npy"), lse);
  EXPECT_EQ(check("--causal").exit_code, 0);
  const RunResult r = check("--causal --padding-align valid");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(json(r)["conventions"].get<std::string>().find("--padding-align valid"),
            std::string::npos);
  // --padded-queries any leaves row 3 (i >= m) uncompared under the valid alignment.
  o.data[6] = 99.0;
  write_npy(path("o.npy"), o);
  EXPECT_EQ(check("--causal --padding-align valid").exit_code, 1);
  const RunResult any = check("--causal --padding-align valid --padded-queries any");
  EXPECT_EQ(any.exit_code, 0) << any.out;
  EXPECT_EQ(json(any)["rows_not_compared"], 1);
}

TEST_F(PaddingAlign, FewerQueriesHandComputedTheWorkedExample) {
  // docs/conventions.md: L_q = 2, L_k = 4, causal, padding [1, 1, 1, 0] (n = 3, m = 2).
  write_qkv(Tensor<double>({1, 1, 2, 2}, 0.0), Tensor<double>({1, 1, 4, 2}, 0.0), v_of_index(4));
  write_padding({3}, 4);
  Tensor<double> o, lse;
  uniform_candidate({{0, 1}, {0, 1, 2}}, o, lse);  // valid: queries at 1 and 2
  write_npy(path("o.npy"), o);
  write_npy(path("lse.npy"), lse);
  EXPECT_EQ(o.data[0], 0.5);
  EXPECT_EQ(lse.data[1], std::log(3.0));
  EXPECT_EQ(check("--causal --padding-align valid").exit_code, 0);
  const RunResult full = check("--causal");
  ASSERT_EQ(full.exit_code, 1);
  EXPECT_EQ(json(full)["probable_cause"],
            "causal aligned to the valid key count, as FlashAttention does with padding: "
            "pass --padding-align valid");
  EXPECT_EQ(json(full)["o"]["rows"]["0,0"], "0-1");

  uniform_candidate({{0, 1, 2}, {}}, o, lse);  // full (§2.4): query 1 at the padded key 3
  write_npy(path("o.npy"), o);
  write_npy(path("lse.npy"), lse);
  EXPECT_EQ(check("--causal").exit_code, 0);
  const RunResult valid = check("--causal --padding-align valid");
  ASSERT_EQ(valid.exit_code, 1);
  EXPECT_NE(json(valid)["probable_cause"].get<std::string>().find("pass --padding-align full"),
            std::string::npos) << valid.out;
  // The worst row is reported with its keys under the valid alignment: row 1 sees 0-2.
  const nlohmann::json w = json(valid)["o"]["worst_row"];
  EXPECT_EQ(w["row"], 1);
  EXPECT_EQ(w["allowed_keys"], "0-2");
  EXPECT_EQ(w["padded_query"], false);

  const RunResult m = run("mask --seq-len 2 --seq-len-k 4 --causal --key-padding-mask " +
                          path("pad.npy") + " --padding-align valid --out " + path("m.npy"));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const Tensor<uint8_t> mask = read_npy_mask(path("m.npy"), "m");
  EXPECT_EQ(mask.data, (std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 1, 0}));
}

TEST_F(PaddingAlign, MoreQueriesThanKeysHandComputed) {
  // L_q = 4, L_k = 2, causal, padding [1, 0] (n = 1, m = 4): query i at i + 1 - 4, so only
  // query 3 (position 0) sees key 0; under §2.4 query i sits at i - 2: query 2 sees key 0,
  // query 3 sits on the padded key 1.
  write_qkv(Tensor<double>({1, 1, 4, 2}, 0.0), Tensor<double>({1, 1, 2, 2}, 0.0), v_of_index(2));
  write_padding({1}, 2);
  Tensor<double> o, lse;
  uniform_candidate({{}, {}, {}, {0}}, o, lse);
  write_npy(path("o.npy"), o);
  write_npy(path("lse.npy"), lse);
  EXPECT_EQ(check("--causal --padding-align valid").exit_code, 0);
  EXPECT_EQ(check("--causal").exit_code, 1);
  uniform_candidate({{}, {}, {0}, {}}, o, lse);
  write_npy(path("o.npy"), o);
  write_npy(path("lse.npy"), lse);
  EXPECT_EQ(check("--causal").exit_code, 0);
  EXPECT_EQ(check("--causal --padding-align valid").exit_code, 1);
}

// FlashAttention's test reference, written from its definition: construct_local_mask with
// sk = the valid key count, sq = the valid query count (seqlen_q when no query padding mask
// is passed), window (left, right) with causal meaning right = 0; key padding on top.
struct FlashReference {
  std::vector<int64_t> n;  // valid keys per batch element
  int64_t lq, lk, left, right;
  bool allowed(int64_t b, int64_t i, int64_t j) const {
    const int64_t sk = n[b], sq = lq == lk ? n[b] : lq;
    if (j >= sk || (lq == lk && i >= sq)) return false;  // padded key, padded query
    const int64_t p = i + sk - sq;
    if (left < 0) return j <= p + right;
    return !(j > std::min(p + right, sk) || j < p - left);
  }
};

TEST_F(PaddingAlign, FlashAttentionReferenceOutputsPassOnlyWithTheFlag) {
  struct Case {
    int64_t lq, lk, left, right;
    std::string flags;
  };
  const std::vector<Case> cases = {
      {5, 9, -1, 0, "--causal"},                              // causal, L_q < L_k
      {9, 5, -1, 0, "--causal"},                              // causal, L_q > L_k
      {5, 9, 2, 2, "--pattern window --window 2"},            // symmetric window
      {9, 6, 1, 1, "--pattern window --window 1"},
      {6, 11, 3, 0, "--pattern window --window 3 --causal"},  // causal window
  };
  for (const Case& c : cases) {
    const Dims d{3, 2, c.lq, c.lk, 4, 3};
    const Tensor<double> q = uniform_tensor({d.B, d.H, d.Lq, d.D}, 1);
    const Tensor<double> k = uniform_tensor({d.B, d.H, d.Lk, d.D}, 2);
    const Tensor<double> v = uniform_tensor({d.B, d.H, d.Lk, d.Dv}, 3);
    write_qkv(q, k, v);
    const FlashReference fa{{c.lk, c.lk - 3, 1}, c.lq, c.lk, c.left, c.right};
    write_padding(fa.n, c.lk);
    std::vector<double> o, lse;
    independent_attention(q, k, v, d, 0.5, [&](int64_t b, int64_t, int64_t i, int64_t j) {
      return fa.allowed(b, i, j);
    }, o, lse);
    Tensor<double> ot({d.B, d.H, d.Lq, d.Dv}), lt({d.B, d.H, d.Lq});
    ot.data = o, lt.data = lse;
    write_npy(path("o.npy"), ot);
    write_npy(path("lse.npy"), lt);
    const std::string flags = c.flags + " --scale 0.5";
    const RunResult ok = check(flags + " --padding-align valid");
    EXPECT_EQ(ok.exit_code, 0) << c.flags << " " << c.lq << "x" << c.lk << ": " << ok.out;
    const RunResult bad = check(flags);
    ASSERT_EQ(bad.exit_code, 1) << c.flags;
    const std::string what = c.flags.find("--causal") != std::string::npos ? "causal" : "window";
    EXPECT_EQ(json(bad)["probable_cause"],
              what + " aligned to the valid key count, as FlashAttention does with padding: "
                     "pass --padding-align valid")
        << c.flags << " " << c.lq << "x" << c.lk;
    EXPECT_NE(bad.err.find("pass --padding-align valid"), std::string::npos) << bad.err;
  }
}

TEST_F(PaddingAlign, GradientsAreEachBatchElementsOwnUnpaddedProblem) {
  // §2.6: batch element b under the valid alignment is the unpadded problem of its n_b keys.
  // Its gradients, computed by `attend --dout` on that problem alone (no padding, default
  // alignment), stitched with dk = dv = 0 on the padded keys, must pass `check --dout
  // --padding-align valid` and fail without the flag.
  const int64_t B = 2, H = 2, Lq = 3, Lk = 7, D = 4, Dv = 3;
  const std::vector<int64_t> n = {5, 2};
  const Tensor<double> q = uniform_tensor({B, H, Lq, D}, 4), k = uniform_tensor({B, H, Lk, D}, 5),
                       v = uniform_tensor({B, H, Lk, Dv}, 6), dout = uniform_tensor({B, H, Lq, Dv}, 7);
  write_qkv(q, k, v);
  write_npy(path("dout.npy"), dout);
  write_padding(n, Lk);
  Tensor<double> o({B, H, Lq, Dv}), lse({B, H, Lq}), dq({B, H, Lq, D}), dk({B, H, Lk, D}, 0.0),
      dv({B, H, Lk, Dv}, 0.0);
  const std::string pattern = " --pattern window --window 1 --causal";
  for (int64_t b = 0; b < B; ++b) {
    Tensor<double> qb({1, H, Lq, D}), kb({1, H, n[b], D}), vb({1, H, n[b], Dv}), db({1, H, Lq, Dv});
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t e = 0; e < Lq * D; ++e) qb.data[h * Lq * D + e] = q.data[(b * H + h) * Lq * D + e];
      for (int64_t e = 0; e < Lq * Dv; ++e) db.data[h * Lq * Dv + e] = dout.data[(b * H + h) * Lq * Dv + e];
      for (int64_t e = 0; e < n[b] * D; ++e) kb.data[h * n[b] * D + e] = k.data[(b * H + h) * Lk * D + e];
      for (int64_t e = 0; e < n[b] * Dv; ++e) vb.data[h * n[b] * Dv + e] = v.data[(b * H + h) * Lk * Dv + e];
    }
    write_npy(path("qb.npy"), qb), write_npy(path("kb.npy"), kb), write_npy(path("vb.npy"), vb);
    write_npy(path("db.npy"), db);
    const RunResult r = run("attend --q " + path("qb.npy") + " --k " + path("kb.npy") + " --v " +
                            path("vb.npy") + " --out " + path("ob.npy") + " --lse " + path("lb.npy") +
                            " --dout " + path("db.npy") + " --dq " + path("dqb.npy") + " --dk " +
                            path("dkb.npy") + " --dv " + path("dvb.npy") + pattern);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Tensor<double> ob = read_npy_float(path("ob.npy"), "o"), lb = read_npy_float(path("lb.npy"), "l"),
                         dqb = read_npy_float(path("dqb.npy"), "dq"), dkb = read_npy_float(path("dkb.npy"), "dk"),
                         dvb = read_npy_float(path("dvb.npy"), "dv");
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t e = 0; e < Lq * Dv; ++e) o.data[(b * H + h) * Lq * Dv + e] = ob.data[h * Lq * Dv + e];
      for (int64_t e = 0; e < Lq; ++e) lse.data[(b * H + h) * Lq + e] = lb.data[h * Lq + e];
      for (int64_t e = 0; e < Lq * D; ++e) dq.data[(b * H + h) * Lq * D + e] = dqb.data[h * Lq * D + e];
      for (int64_t e = 0; e < n[b] * D; ++e) dk.data[(b * H + h) * Lk * D + e] = dkb.data[h * n[b] * D + e];
      for (int64_t e = 0; e < n[b] * Dv; ++e) dv.data[(b * H + h) * Lk * Dv + e] = dvb.data[h * n[b] * Dv + e];
    }
  }
  write_npy(path("o.npy"), o), write_npy(path("lse.npy"), lse);
  write_npy(path("dq.npy"), dq), write_npy(path("dk.npy"), dk), write_npy(path("dv.npy"), dv);
  const std::string grads = " --dout " + path("dout.npy") + " --candidate-dq " + path("dq.npy") +
                            " --candidate-dk " + path("dk.npy") + " --candidate-dv " + path("dv.npy");
  const RunResult ok = check(pattern + grads + " --padding-align valid");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  const RunResult bad = check(pattern + grads);
  ASSERT_EQ(bad.exit_code, 1);
  EXPECT_FALSE(json(bad)["dq"]["pass"].get<bool>());

  // attend --padding-align valid --dout gives the same, through the oracle and a kernel that
  // serves explicit masks (each batch element runs on its own aligned pattern).
  for (const char* impl : {"a1_dense_masked", "cpu_k06_generic_tiles"}) {
    const RunResult a = run("attend " + qkv() + " --out " + path("o2.npy") + " --lse " +
                            path("lse2.npy") + " --dout " + path("dout.npy") + " --dq " +
                            path("dq2.npy") + " --dk " + path("dk2.npy") + " --dv " + path("dv2.npy") +
                            pattern + " --padding-align valid --impl " + impl);
    ASSERT_EQ(a.exit_code, 0) << impl << ": " << a.err;
    const RunResult c = run("check " + qkv() + " --candidate " + path("o2.npy") + " --candidate-lse " +
                            path("lse2.npy") + " --dout " + path("dout.npy") + " --candidate-dq " +
                            path("dq2.npy") + " --candidate-dk " + path("dk2.npy") + " --candidate-dv " +
                            path("dv2.npy") + pattern + " --padding-align valid");
    EXPECT_EQ(c.exit_code, 0) << impl << ": " << c.out;
  }
  // A kernel that cannot serve the per-batch explicit mask is refused, saying why.
  const RunResult k02 = run("attend " + qkv() + " --out " + path("o3.npy") + pattern +
                            " --padding-align valid --impl cpu_k02_window_band");
  EXPECT_EQ(k02.exit_code, 2);
  EXPECT_NE(k02.err.find("--padding-align valid"), std::string::npos) << k02.err;
  EXPECT_FALSE(exists("o3.npy"));
}

TEST_F(PaddingAlign, PerBatchSelectionsKeepTheirOwnListsInTheValidMask) {
  // L_q = L_k = 4 (nothing moves, contract §2.6), selected with one list per batch element
  // (§3.16, B_sel = 2): batch 0 lists key 0 for every query, batch 1 lists key i for query
  // i. Padding: batch 0 none, batch 1 the last token. Batch 1's mask is its own diagonal
  // minus the padded query and key; reading batch 0's lists for it would give column 0.
  Tensor<int64_t> idx({2, 1, 4, 1});
  idx.data = {0, 0, 0, 0, 0, 1, 2, 3};
  write_npy(path("I.npy"), idx);
  write_padding({4, 3}, 4);
  const RunResult m = run("mask --seq-len 4 --pattern selected --kv-indices " + path("I.npy") +
                          " --key-padding-mask " + path("pad.npy") + " --padding-align valid --out " +
                          path("m.npy"));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const Tensor<uint8_t> mask = read_npy_mask(path("m.npy"), "m");
  EXPECT_EQ(mask.shape, (Shape{2, 1, 4, 4}));
  EXPECT_EQ(mask.data, (std::vector<uint8_t>{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
                                             1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
  // The default alignment (contract §2.4) agrees here: the same mask.
  ASSERT_EQ(run("mask --seq-len 4 --pattern selected --kv-indices " + path("I.npy") +
                " --key-padding-mask " + path("pad.npy") + " --out " + path("m24.npy")).exit_code, 0);
  EXPECT_EQ(read_npy_mask(path("m24.npy"), "m").data, mask.data);
}

TEST_F(PaddingAlign, RefusalsExitTwoAndWriteNothing) {
  write_qkv(uniform_tensor({2, 1, 3, 2}, 1), uniform_tensor({2, 1, 5, 2}, 2),
            uniform_tensor({2, 1, 5, 2}, 3));
  Tensor<uint8_t> pad({2, 5}, 1);
  pad.data[5 + 1] = 0;  // batch element 1: [1, 0, 1, 1, 1], not right padding
  write_npy(path("pad.npy"), pad, true);
  const RunResult a = run("attend " + qkv() + " --out " + path("o.npy") + " --causal --padding-align valid");
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.err.find("invalid --key-padding-mask = batch element 1"), std::string::npos) << a.err;
  EXPECT_FALSE(exists("o.npy"));
  const RunResult m = run("mask --seq-len 3 --seq-len-k 5 --causal --key-padding-mask " +
                          path("pad.npy") + " --padding-align valid --out " + path("m.npy"));
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("--key-padding-mask"), std::string::npos) << m.err;
  EXPECT_FALSE(exists("m.npy"));
  // The same mask is fine without the flag (§2.4 takes any padding).
  EXPECT_EQ(run("attend " + qkv() + " --out " + path("o.npy") + " --causal").exit_code, 0);
  std::filesystem::remove(path("o.npy"));

  write_padding({5, 2}, 5);
  const std::string out = " --out " + path("o.npy");
  for (const char* bad :
       {" --causal --padding-align left",                                     // no such value
        " --causal --padding-align valid --causal-align top-left",            // two diagonals
        " --pattern random --num-random 1 --padding-align valid",             // draws over L_k
        " --pattern window --window 1 --padding-align valid --padded-queries any"}) {
    const RunResult r = run("attend " + qkv() + out + std::string(bad));
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists("o.npy")) << bad;
  }
  const RunResult none = run("attend --q " + path("q.npy") + " --k " + path("k.npy") + " --v " +
                             path("v.npy") + out + " --causal --padding-align valid");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("invalid --padding-align = valid: needs a key padding mask"),
            std::string::npos) << none.err;
}

}  // namespace
}  // namespace sparseattn::testing_cli
