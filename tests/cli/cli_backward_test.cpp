// `sparseattn attend --dout` and `sparseattn check --dout` (contract §7, docs/backward.md):
// gradients written by attend equal the library's float64 gradient oracle (b1) on the
// same files, keep the files' ranks, and pass `check`; a float32 --impl's gradients pass
// check at the float32 tolerance; a wrong gradient fails check (exit 1); bad input (dO of
// the wrong shape, a non-finite dO, --dq without --dout, an --impl without a backward) is
// refused with one line on stderr, exit 2, and no output file.
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"
#include "reference/backward/backward.h"

namespace sparseattn::testing_cli {
namespace {

class Backward : public CliTest {
 protected:
  // q [Lq, D], k [Lk, D], v [Lk, Dv], dout [Lq, Dv]: rank 2 (one batch, one head).
  void write_inputs(int64_t Lq, int64_t Lk, int64_t D, int64_t Dv) {
    q_ = uniform_tensor({Lq, D}, 11);
    k_ = uniform_tensor({Lk, D}, 12);
    v_ = uniform_tensor({Lk, Dv}, 13);
    dout_ = uniform_tensor({Lq, Dv}, 14);
    write_npy(path("q.npy"), q_);
    write_npy(path("k.npy"), k_);
    write_npy(path("v.npy"), v_);
    write_npy(path("do.npy"), dout_);
  }
  std::string qkv() const {
    return "--q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  }
  Tensor<double> q_, k_, v_, dout_;
};

// An unequal-length causal window: rows before the first key are fully masked.
const char* kPattern = " --pattern window --window 3 --dilation 2 --causal";

TEST_F(Backward, AttendWritesTheOracleGradientsWithTheFilesRanks) {
  write_inputs(13, 9, 5, 3);
  const RunResult r = run("attend " + qkv() + " --out " + path("o.npy") + " --dout " +
                          path("do.npy") + " --dq " + path("dq.npy") + " --dk " + path("dk.npy") +
                          " --dv " + path("dv.npy") + kPattern);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  PatternSpec spec;
  spec.kind = PatternKind::window;
  spec.window = 3;
  spec.dilation = 2;
  spec.causal = true;
  const Pattern pattern = materialize(spec, {1, 1, 13, 9});
  auto r4 = [](Tensor<double> t) {
    t.shape = as_rank4(t.shape, "t");
    return t;
  };
  const GradientResult g = b1_dense_masked_grad(r4(q_), r4(k_), r4(v_), r4(dout_), pattern, nullptr);
  const Tensor<double> dq = read_npy_float(path("dq.npy"), "dq");
  const Tensor<double> dk = read_npy_float(path("dk.npy"), "dk");
  const Tensor<double> dv = read_npy_float(path("dv.npy"), "dv");
  EXPECT_EQ(dq.shape, (Shape{13, 5}));
  EXPECT_EQ(dk.shape, (Shape{9, 5}));
  EXPECT_EQ(dv.shape, (Shape{9, 3}));
  EXPECT_EQ(dq.data, g.dq.data);  // the default --impl is a1, whose backward is b1 itself
  EXPECT_EQ(dk.data, g.dk.data);
  EXPECT_EQ(dv.data, g.dv.data);
  // Rows 0..3 sit before key 0 (bottom-right alignment): fully masked, dq exactly 0.
  for (int64_t e = 0; e < 4 * 5; ++e) EXPECT_EQ(dq.data[e], 0.0);
}

TEST_F(Backward, Float32ImplGradientsPassCheckAndAWrongOneFails) {
  write_inputs(70, 70, 16, 8);
  const std::string pat = " --pattern bigbird --block-size 8 --num-random-blocks 2";
  const RunResult a = run("attend " + qkv() + " --impl cpu_k06_generic_tiles --out " +
                          path("o.npy") + " --dout " + path("do.npy") + " --dq " + path("dq.npy") +
                          " --dk " + path("dk.npy") + " --dv " + path("dv.npy") + pat);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(read_npy_header(path("dq.npy"), "dq").dtype, NpyDtype::float32);
  const std::string grads = " --dout " + path("do.npy") + " --candidate-dq " + path("dq.npy") +
                            " --candidate-dk " + path("dk.npy") + " --candidate-dv " + path("dv.npy");
  const RunResult c = run("check " + qkv() + " --candidate " + path("o.npy") + grads + pat);
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const nlohmann::json j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["gradient_oracle"], "b1_dense_masked_grad");
  for (const char* t : {"o", "dq", "dk", "dv"}) {
    EXPECT_TRUE(j[t]["pass"].get<bool>()) << t;
    EXPECT_EQ(j[t]["tensor"], t);
    EXPECT_EQ(j[t]["atol"].get<double>(), 2e-5) << t;  // float32 file: float32 tolerance
  }
  // dv perturbed by 1e-3 at one element: check fails, exit 1, and says where.
  Tensor<double> dv = read_npy_float(path("dv.npy"), "dv");
  dv.data[77] += 1e-3;
  write_npy(path("dv_bad.npy"), tensor_cast<float>(dv));
  const RunResult bad = run("check " + qkv() + " --candidate " + path("o.npy") + " --dout " +
                            path("do.npy") + " --candidate-dv " + path("dv_bad.npy") + pat);
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  const nlohmann::json jb = nlohmann::json::parse(bad.out);
  EXPECT_FALSE(jb["dv"]["pass"].get<bool>());
  EXPECT_FALSE(jb["pass"].get<bool>());
}

// Every bad input: exit 2, one line on stderr naming the flag, nothing written.
TEST_F(Backward, BadInputIsRefusedWithOneLineAndNoOutput) {
  write_inputs(6, 6, 4, 3);
  write_npy(path("do_wide.npy"), uniform_tensor({6, 4}, 20));  // Dv is 3
  Tensor<double> nan_do = uniform_tensor({6, 3}, 21);
  nan_do.data[7] = NAN;
  write_npy(path("do_nan.npy"), nan_do);
  const std::string outs = " --out " + path("o.npy") + " --dq " + path("dq.npy");
  struct Bad {
    std::string args, names;
  };
  const Bad bad[] = {
      {"attend " + qkv() + outs + " --dout " + path("do_wide.npy"), "--dout shape"},
      {"attend " + qkv() + outs + " --dout " + path("do_nan.npy"), "--dout[2,1]"},
      {"attend " + qkv() + outs, "--dq"},
      {"attend " + qkv() + " --out " + path("o.npy") + " --dout " + path("do.npy"), "--dout"},
      {"attend " + qkv() + outs + " --dout " + path("do.npy") +
           " --impl cpu_k02_window_band --pattern window --window 1", "--impl"},
      {"attend " + qkv() + outs + " --dout " + path("do.npy") + " --dk " + path("do.npy"),
       "--dk"},  // an output naming an input
      {"check " + qkv() + " --candidate " + path("do.npy") + " --candidate-dq " + path("q.npy"),
       "--candidate-dq"},
      {"check " + qkv() + " --candidate " + path("do.npy") + " --dout " + path("do_nan.npy") +
           " --candidate-dq " + path("q.npy"), "--dout[2,1]"},
      {"check " + qkv() + " --candidate " + path("do.npy") + " --dout " + path("do.npy") +
           " --candidate-dk " + path("do.npy"), "--candidate-dk shape"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.args);
    const RunResult r = run(b.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("invalid " + b.names), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists("o.npy"));
    EXPECT_FALSE(exists("dq.npy"));
    EXPECT_TRUE(no_temp_files());
  }
}

}  // namespace
}  // namespace sparseattn::testing_cli
