// Checks contract §7.4–§7.6 through the command line: `attend --dout` under the
// compatibility flags (--global-mask, --q-global --k-global --v-global, --compat
// hf-bigbird) and under a finite --masked-score writes the float64 gradient definitions of
// reference/backward/compat_grad.h (bit for bit, the global projections' gradients in
// --dq-global, --dk-global, --dv-global), `check --dout` passes them and names the
// definition in "gradient_oracle", and catches planted wrong gradients — each the gradient
// of a neighbouring convention — with the report's fields (pass, rows, rows_are); bad
// input is refused with one line, exit 2, nothing written.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"
#include "reference/backward/backward.h"
#include "reference/backward/compat_grad.h"
#include "reference/masked_score.h"

namespace sparseattn::testing_cli {
namespace {

class ConventionGrads : public CliTest {
 protected:
  void write(const std::string& name, const Tensor<double>& t) { write_npy(path(name), t); }
  std::string p(const std::string& name) const { return " " + path(name); }
  nlohmann::json check_json(const std::string& args, int want_exit) {
    const RunResult r = run("check " + args);
    EXPECT_EQ(r.exit_code, want_exit) << r.out << r.err;
    if (r.exit_code > 1) return {};
    return nlohmann::json::parse(r.out);
  }
};

// Longformer, two batch elements with their own global sets ({0, 4} and {2}), seq_len 7,
// window 1, head_dim 3, head_dim_v 2, global projections.
struct Longformer {
  Tensor<double> q = uniform_tensor({2, 1, 7, 3}, 1), k = uniform_tensor({2, 1, 7, 3}, 2),
                 v = uniform_tensor({2, 1, 7, 2}, 3), qg = uniform_tensor({2, 1, 7, 3}, 4),
                 kg = uniform_tensor({2, 1, 7, 3}, 5), vg = uniform_tensor({2, 1, 7, 2}, 6),
                 dout = uniform_tensor({2, 1, 7, 2}, 7);
  Tensor<uint8_t> mask = [] {
    Tensor<uint8_t> m({2, 7}, 0);
    m.data[0] = m.data[4] = m.data[7 + 2] = 1;
    return m;
  }();
  PatternSpec spec = [] {
    PatternSpec s;
    s.kind = PatternKind::longformer;
    s.window = 1;
    return s;
  }();
  CompatGradientResult grad(bool projections) const {
    LongformerGlobals g;
    g.global_mask = mask;
    if (projections) g.q_global = &qg, g.k_global = &kg, g.v_global = &vg;
    return longformer_compat_grad(q, k, v, dout, spec, g, nullptr);
  }
};

const char* kLongformer = " --pattern longformer --window 1";

TEST_F(ConventionGrads, LongformerProjectionsAttendWritesTheDefinitionAndCheckPassesIt) {
  const Longformer lf;
  for (auto [n, t] : {std::pair<const char*, const Tensor<double>*>{"q.npy", &lf.q}, {"k.npy", &lf.k},
                      {"v.npy", &lf.v}, {"qg.npy", &lf.qg}, {"kg.npy", &lf.kg}, {"vg.npy", &lf.vg},
                      {"do.npy", &lf.dout}})
    write(n, *t);
  write_npy(path("gm.npy"), lf.mask, true);
  const std::string in = "--q" + p("q.npy") + " --k" + p("k.npy") + " --v" + p("v.npy") +
                         kLongformer + " --global-mask" + p("gm.npy") + " --q-global" + p("qg.npy") +
                         " --k-global" + p("kg.npy") + " --v-global" + p("vg.npy");
  const std::string outs = " --dq" + p("dq.npy") + " --dk" + p("dk.npy") + " --dv" + p("dv.npy") +
                           " --dq-global" + p("dqg.npy") + " --dk-global" + p("dkg.npy") +
                           " --dv-global" + p("dvg.npy");
  const RunResult a = run("attend " + in + " --out" + p("o.npy") + " --dout" + p("do.npy") + outs);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const CompatGradientResult g = lf.grad(true);
  const std::pair<const char*, const Tensor<double>*> want[] = {
      {"dq.npy", &g.dq}, {"dk.npy", &g.dk}, {"dv.npy", &g.dv},
      {"dqg.npy", &g.dq_global}, {"dkg.npy", &g.dk_global}, {"dvg.npy", &g.dv_global}};
  for (const auto& [file, t] : want) {
    const Tensor<double> x = read_npy_float(path(file), file);
    EXPECT_EQ(x.shape, t->shape) << file;
    EXPECT_EQ(x.data, t->data) << file;  // the float64 definition, bit for bit
  }
  const std::string cands = " --dout" + p("do.npy") + " --candidate-dq" + p("dq.npy") +
                            " --candidate-dk" + p("dk.npy") + " --candidate-dv" + p("dv.npy") +
                            " --candidate-dq-global" + p("dqg.npy") + " --candidate-dk-global" +
                            p("dkg.npy") + " --candidate-dv-global" + p("dvg.npy");
  const nlohmann::json j = check_json(in + " --candidate" + p("o.npy") + cands, 0);
  EXPECT_EQ(j["gradient_oracle"], "longformer_compat_grad");
  for (const char* t : {"dq", "dk", "dv", "dq_global", "dk_global", "dv_global"}) {
    EXPECT_TRUE(j[t]["pass"].get<bool>()) << t;
    EXPECT_EQ(j[t]["tensor"], t);
  }

  // --layout bshd: every tensor [B, L, H, d], the projections and their gradients too.
  auto bshd = [](const Tensor<double>& t) {  // [B, H, L, d] -> [B, L, H, d]; H = 1 here
    Tensor<double> x = t;
    x.shape = {t.shape[0], t.shape[2], t.shape[1], t.shape[3]};
    return x;
  };
  for (auto [n, t] : {std::pair<const char*, const Tensor<double>*>{"q.npy", &lf.q}, {"k.npy", &lf.k},
                      {"v.npy", &lf.v}, {"qg.npy", &lf.qg}, {"kg.npy", &lf.kg}, {"vg.npy", &lf.vg},
                      {"do.npy", &lf.dout}})
    write(std::string("s") + n, bshd(*t));
  std::string in_s = in;
  for (const char* n : {"q.npy", "k.npy", "v.npy", "qg.npy", "kg.npy", "vg.npy"})
    in_s.replace(in_s.find(path(n)), path(n).size(), path(std::string("s") + n));
  const RunResult s = run("attend " + in_s + " --layout bshd --out" + p("so.npy") + " --dout" +
                          p("sdo.npy") + " --dq-global" + p("sdqg.npy") + " --dk" + p("sdk.npy"));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(read_npy_float(path("sdqg.npy"), "dqg").data, g.dq_global.data);  // H = 1: same bytes
  EXPECT_EQ(read_npy_float(path("sdqg.npy"), "dqg").shape, (Shape{2, 7, 1, 3}));
  EXPECT_EQ(read_npy_float(path("sdk.npy"), "dk").data, g.dk.data);
}

// Planted mistakes, each the gradient of a neighbouring convention, written as a float64
// file: check --dout fails (exit 1) and its report says which rows.
TEST_F(ConventionGrads, LongformerPlantedWrongGradientsAreCaughtWhereTheyDiffer) {
  const Longformer lf;
  for (auto [n, t] : {std::pair<const char*, const Tensor<double>*>{"q.npy", &lf.q}, {"k.npy", &lf.k},
                      {"v.npy", &lf.v}, {"qg.npy", &lf.qg}, {"kg.npy", &lf.kg}, {"vg.npy", &lf.vg},
                      {"do.npy", &lf.dout}})
    write(n, *t);
  write_npy(path("gm.npy"), lf.mask, true);
  const std::string qkv = "--q" + p("q.npy") + " --k" + p("k.npy") + " --v" + p("v.npy") +
                          kLongformer + " --global-mask" + p("gm.npy");
  const std::string proj = " --q-global" + p("qg.npy") + " --k-global" + p("kg.npy") +
                           " --v-global" + p("vg.npy");
  ASSERT_EQ(run("attend " + qkv + " --out" + p("o.npy")).exit_code, 0);
  ASSERT_EQ(run("attend " + qkv + proj + " --out" + p("og.npy")).exit_code, 0);

  // 1. Per-batch globals, no projections: dq with the global rows' term dropped (their
  //    rows zeroed, as if the projections carried them). Fails exactly at the global query
  //    rows of each batch element: 0 and 4 in batch 0, 2 in batch 1.
  Tensor<double> dropped = lf.grad(false).dq;
  for (int64_t row : {0, 4, 7 + 2})
    for (int64_t e = 0; e < 3; ++e) dropped.data[static_cast<size_t>(row * 3 + e)] = 0.0;
  write("dq_dropped.npy", dropped);
  nlohmann::json j = check_json(qkv + " --candidate" + p("o.npy") + " --dout" + p("do.npy") +
                                    " --candidate-dq" + p("dq_dropped.npy"), 1);
  EXPECT_FALSE(j["dq"]["pass"].get<bool>());
  EXPECT_FALSE(j["pass"].get<bool>());
  EXPECT_EQ(j["dq"]["rows_are"], "query");
  EXPECT_EQ(j["dq"]["rows"]["0,0"], "0,4");
  EXPECT_EQ(j["dq"]["rows"]["1,0"], "2");
  EXPECT_EQ(j["gradient_oracle"], "longformer_compat_grad");

  // 2. Projections given, but dk computed as if the global rows read k (the projections'
  //    gradient ignored): every key a global row attends gets a wrong dk.
  write("dk_noproj.npy", lf.grad(false).dk);
  j = check_json(qkv + proj + " --candidate" + p("og.npy") + " --dout" + p("do.npy") +
                     " --candidate-dk" + p("dk_noproj.npy"), 1);
  EXPECT_FALSE(j["dk"]["pass"].get<bool>());
  EXPECT_EQ(j["dk"]["rows_are"], "key");
  EXPECT_EQ(j["dk"]["rows"]["0,0"], "0-6");  // a global row attends every key
  EXPECT_GT(j["dk"]["max_abs_error"].get<double>(), 1e-3);

  // 3. dk_global and dv_global swapped for the non-projection gradients: both fail.
  const CompatGradientResult g = lf.grad(true);
  write("dkg_wrong.npy", g.dk);
  write("dvg_wrong.npy", g.dv);
  j = check_json(qkv + proj + " --candidate" + p("og.npy") + " --dout" + p("do.npy") +
                     " --candidate-dk-global" + p("dkg_wrong.npy") + " --candidate-dv-global" +
                     p("dvg_wrong.npy"), 1);
  EXPECT_FALSE(j["dk_global"]["pass"].get<bool>());
  EXPECT_FALSE(j["dv_global"]["pass"].get<bool>());
  const RunResult text = run("check " + qkv + proj + " --candidate" + p("og.npy") + " --dout" +
                             p("do.npy") + " --candidate-dv-global" + p("dvg_wrong.npy") +
                             " --format text");
  EXPECT_NE(text.out.find("dv_global: mismatched elements 28 / 28"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("dv_global fails at (batch, head) 0,0: key rows 0-6"), std::string::npos)
      << text.out;
}

// HF BigBird, n = 10, block 2 (5 blocks), eval-mode table (every draw repeats a listed
// block): the set-semantics gradient of --pattern bigbird fails under --compat hf-bigbird
// on every row of a middle query block, whose listing repeats blocks.
TEST_F(ConventionGrads, HfBigBirdAttendWritesTheListingGradientAndSetSemanticsFails) {
  const int64_t n = 10;
  const Tensor<double> q = uniform_tensor({1, 1, n, 3}, 11), k = uniform_tensor({1, 1, n, 3}, 12),
                       v = uniform_tensor({1, 1, n, 2}, 13), dout = uniform_tensor({1, 1, n, 2}, 14);
  Tensor<int64_t> table({1, 3, 1}, 0);  // rand_attn [1, n_b - 2, 1], all 0 (HF's eval mode)
  write("q.npy", q), write("k.npy", k), write("v.npy", v), write("do.npy", dout);
  write_npy(path("t.npy"), table);
  const std::string in = "--q" + p("q.npy") + " --k" + p("k.npy") + " --v" + p("v.npy") +
                         " --pattern bigbird --block-size 2 --random-table" + p("t.npy");
  const std::string grads = " --dout" + p("do.npy") + " --dq" + p("dq.npy") + " --dk" + p("dk.npy") +
                            " --dv" + p("dv.npy");
  ASSERT_EQ(run("attend " + in + " --compat hf-bigbird --out" + p("o.npy") + grads).exit_code, 0);
  const CompatGradientResult g =
      hf_listing_grad(q, k, v, dout, hf_bigbird_listing(n, 2, 1, table), nullptr, nullptr);
  EXPECT_EQ(read_npy_float(path("dq.npy"), "dq").data, g.dq.data);
  EXPECT_EQ(read_npy_float(path("dk.npy"), "dk").data, g.dk.data);
  EXPECT_EQ(read_npy_float(path("dv.npy"), "dv").data, g.dv.data);
  const std::string cands = " --dout" + p("do.npy") + " --candidate-dq" + p("sdq.npy") +
                            " --candidate-dv" + p("sdv.npy");
  nlohmann::json j = check_json(in + " --compat hf-bigbird --candidate" + p("o.npy") +
                                    " --dout" + p("do.npy") + " --candidate-dq" + p("dq.npy") +
                                    " --candidate-dk" + p("dk.npy") + " --candidate-dv" + p("dv.npy"), 0);
  EXPECT_EQ(j["gradient_oracle"], "hf_listing_grad");
  // The planted mistake: set semantics (b1 on the ITC pattern with the same table).
  ASSERT_EQ(run("attend " + in + " --out" + p("so.npy") + " --dout" + p("do.npy") + " --dq" +
                p("sdq.npy") + " --dv" + p("sdv.npy")).exit_code, 0);
  j = check_json(in + " --compat hf-bigbird --candidate" + p("o.npy") + cands, 1);
  EXPECT_FALSE(j["dq"]["pass"].get<bool>());
  // Query blocks 0 and 4 list every block once: their rows (0, 1, 8, 9) agree; blocks 1..3
  // list block 0 twice (HF's first block and the all-0 random draw).
  EXPECT_EQ(j["dq"]["rows"]["0,0"], "2-7");
}

// FlagAttention's case: a causal sliding window masked with -1e6, seq_len_q 7 >
// seq_len_k 4, so rows 0..2 have no allowed key and o = mean(v) there.
TEST_F(ConventionGrads, MaskedScoreAttendWritesItsGradientAndTheRemovedKeysOneFailsOnDv) {
  const Tensor<double> q = uniform_tensor({1, 1, 7, 3}, 21), k = uniform_tensor({1, 1, 4, 3}, 22),
                       v = uniform_tensor({1, 1, 4, 2}, 23), dout = uniform_tensor({1, 1, 7, 2}, 24);
  write("q.npy", q), write("k.npy", k), write("v.npy", v), write("do.npy", dout);
  const std::string in = "--q" + p("q.npy") + " --k" + p("k.npy") + " --v" + p("v.npy") +
                         " --pattern window --window 1 --causal";
  const std::string grads = " --dout" + p("do.npy") + " --dq" + p("dq.npy") + " --dk" + p("dk.npy") +
                            " --dv" + p("dv.npy");
  ASSERT_EQ(run("attend " + in + " --masked-score -1e6 --out" + p("o.npy") + grads).exit_code, 0);
  PatternSpec spec;
  spec.kind = PatternKind::window;
  spec.window = 1;
  spec.causal = true;
  const GradientResult g =
      masked_score_grad(q, k, v, dout, materialize(spec, {1, 1, 7, 4}), nullptr, -1e6);
  EXPECT_EQ(read_npy_float(path("dq.npy"), "dq").data, g.dq.data);
  EXPECT_EQ(read_npy_float(path("dk.npy"), "dk").data, g.dk.data);
  EXPECT_EQ(read_npy_float(path("dv.npy"), "dv").data, g.dv.data);
  nlohmann::json j = check_json(in + " --masked-score -1e6 --candidate" + p("o.npy") + " --dout" +
                                    p("do.npy") + " --candidate-dq" + p("dq.npy") + " --candidate-dk" +
                                    p("dk.npy") + " --candidate-dv" + p("dv.npy"), 0);
  EXPECT_EQ(j["gradient_oracle"], "masked_score_grad");
  // The planted mistake: the -inf convention's gradient (b1). dq and dk agree (exp(-1e6)
  // is 0 in float64 wherever a row has an allowed key); dv misses the empty rows' mean.
  ASSERT_EQ(run("attend " + in + " --out" + p("o_inf.npy") + " --dout" + p("do.npy") + " --dq" +
                p("bdq.npy") + " --dv" + p("bdv.npy")).exit_code, 0);
  j = check_json(in + " --masked-score -1e6 --candidate" + p("o.npy") + " --dout" + p("do.npy") +
                     " --candidate-dq" + p("bdq.npy") + " --candidate-dv" + p("bdv.npy"), 1);
  EXPECT_TRUE(j["dq"]["pass"].get<bool>());
  EXPECT_FALSE(j["dv"]["pass"].get<bool>());
  EXPECT_EQ(j["dv"]["rows_are"], "key");
  EXPECT_EQ(j["dv"]["rows"]["0,0"], "0-3");  // an empty row spreads do over every key
}

TEST_F(ConventionGrads, BadInputIsRefusedWithOneLineAndNoOutput) {
  const Longformer lf;
  for (auto [n, t] : {std::pair<const char*, const Tensor<double>*>{"q.npy", &lf.q}, {"k.npy", &lf.k},
                      {"v.npy", &lf.v}, {"qg.npy", &lf.qg}, {"kg.npy", &lf.kg}, {"vg.npy", &lf.vg},
                      {"do.npy", &lf.dout}})
    write(n, *t);
  write_npy(path("gm.npy"), lf.mask, true);
  const std::string qkv = "--q" + p("q.npy") + " --k" + p("k.npy") + " --v" + p("v.npy") + kLongformer;
  const std::string gm = " --global-mask" + p("gm.npy");
  const std::string proj = " --q-global" + p("qg.npy") + " --k-global" + p("kg.npy") +
                           " --v-global" + p("vg.npy");
  const std::string out = " --out" + p("o.npy");
  struct Bad {
    std::string args, names;
  };
  const Bad bad[] = {
      {"attend " + qkv + gm + out + " --dout" + p("do.npy") + " --dq-global" + p("dqg.npy"),
       "--dq-global"},  // no projections to be the gradient of
      {"attend " + qkv + gm + proj + out + " --dk-global" + p("dqg.npy"), "--dk-global"},  // no --dout
      {"attend " + qkv + gm + proj + out + " --dout" + p("do.npy") + " --dq" + p("dq.npy") +
           " --impl cpu_k06_generic_tiles", "--impl"},
      {"attend " + qkv + gm + proj + out + " --dout" + p("do.npy") + " --dq-global" + p("qg.npy"),
       "--dq-global"},  // an output naming an input
      {"attend " + qkv + gm + out + " --dout" + p("do.npy") + " --dq" + p("dq.npy") +
           " --masked-score -1e9", "--masked-score"},
      {"check " + qkv + gm + " --candidate" + p("do.npy") + " --dout" + p("do.npy") +
           " --candidate-dv-global" + p("v.npy"), "--candidate-dv-global"},
      {"check " + qkv + gm + proj + " --candidate" + p("do.npy") + " --dout" + p("do.npy") +
           " --candidate-dk-global" + p("v.npy"), "--candidate-dk-global shape"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.args);
    const RunResult r = run(b.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("invalid " + b.names), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists("o.npy"));
    EXPECT_FALSE(exists("dq.npy"));
    EXPECT_FALSE(exists("dqg.npy"));
    EXPECT_TRUE(no_temp_files());
  }
  // HF BigBird with --dout and the float32 listing kernel: refused by --impl.
  Tensor<int64_t> table({1, 3, 1}, 0);
  write_npy(path("t.npy"), table);
  write("q10.npy", uniform_tensor({1, 1, 10, 3}, 1));
  write("v10.npy", uniform_tensor({1, 1, 10, 2}, 2));
  write("do10.npy", uniform_tensor({1, 1, 10, 2}, 3));
  const RunResult r = run("attend --q" + p("q10.npy") + " --k" + p("q10.npy") + " --v" + p("v10.npy") +
                          " --pattern bigbird --block-size 2 --random-table" + p("t.npy") +
                          " --compat hf-bigbird --impl cpu_k07_hf_listing" + out + " --dout" +
                          p("do10.npy") + " --dq" + p("dq.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("invalid --impl"), std::string::npos) << r.err;
  EXPECT_FALSE(exists("dq.npy"));
}

}  // namespace
}  // namespace sparseattn::testing_cli
