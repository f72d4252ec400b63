// Checks contract §4.10 (`check --tolerance-rule reference-error`): a bfloat16 candidate
// computed in a sound order (bf16 inputs, float32 scores and softmax, o rounded to bf16)
// passes at seq_len_k 16,384 where the float32 table is too tight, and a candidate with one
// wrong row, which a float16-sized table is too loose to catch, fails naming that row.
#include <cmath>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "core/npy.h"

namespace sparseattn::testing_cli {
namespace {

// float -> bfloat16 (round to nearest even) -> float, written here from the format's
// definition (8 bits of significand), not the library's rounding.
float bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

class ToleranceRule : public CliTest {};

TEST_F(ToleranceRule, Bf16SoundOrderPassesAtLongRowsAndOneWrongRowFails) {
  const int64_t Lq = 256, Lk = 16384, D = 8;  // one head, small head_dim: stays fast
  const Tensor<double> q = uniform_tensor({1, 1, Lq, D}, 1), k = uniform_tensor({1, 1, Lk, D}, 2),
                       v = uniform_tensor({1, 1, Lk, D}, 3);
  write_npy(path("q.npy"), q);
  write_npy(path("k.npy"), k);
  write_npy(path("v.npy"), v);
  Tensor<float> o({1, 1, Lq, D}, 0.0f);
  const float scale = 1.0f / std::sqrt(8.0f);
  std::vector<float> s(static_cast<size_t>(Lk));
  for (int64_t i = 0; i < Lq; ++i) {
    float m = -INFINITY;
    for (int64_t j = 0; j < Lk; ++j) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d)
        dot += bf16(static_cast<float>(q.data[i * D + d])) * bf16(static_cast<float>(k.data[j * D + d]));
      s[j] = dot * scale;
      m = std::max(m, s[j]);
    }
    float z = 0.0f;
    std::vector<float> acc(D, 0.0f);
    for (int64_t j = 0; j < Lk; ++j) {
      const float p = std::exp(s[j] - m);
      z += p;
      for (int64_t d = 0; d < D; ++d) acc[d] += p * bf16(static_cast<float>(v.data[j * D + d]));
    }
    for (int64_t d = 0; d < D; ++d) o.data[i * D + d] = bf16(acc[d] / z);
  }
  write_npy(path("o.npy"), o);  // bfloat16 values in a float32 file
  Tensor<float> bad = o;
  for (int64_t d = 0; d < D; ++d) bad.data[17 * D + d] += 0.0018f;  // row 17 off
  write_npy(path("bad.npy"), bad);
  const std::string qkv = "check --q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy");
  const std::string rule = " --tolerance-rule reference-error --factor 2 --naive-dtype bfloat16";

  // The float32 row of the table is too tight for a bf16 result.
  EXPECT_EQ(run(qkv + " --candidate " + path("o.npy")).exit_code, 1);
  const RunResult good = run(qkv + " --candidate " + path("o.npy") + rule);
  ASSERT_EQ(good.exit_code, 0) << good.out << good.err;
  const nlohmann::json g = nlohmann::json::parse(good.out);
  const nlohmann::json& re = g["o"]["reference_error"];
  EXPECT_EQ(re["naive_dtype"], "bfloat16");
  std::cout << "bf16 candidate: max error " << re["candidate"]["max_abs_error"] << ", mean "
            << re["candidate"]["mean_abs_error"] << "; naive bf16: max "
            << re["naive"]["max_abs_error"] << ", mean " << re["naive"]["mean_abs_error"] << "\n";
  EXPECT_GT(re["naive"]["max_abs_error"].get<double>(), 2e-5);  // above the float32 table
  EXPECT_LE(re["candidate"]["max_abs_error"].get<double>(),
            2 * re["naive"]["max_abs_error"].get<double>() + 1e-6);

  // A tolerance sized for float16 (2e-3) is too loose to see the wrong row ...
  EXPECT_EQ(run(qkv + " --candidate " + path("bad.npy") + " --atol 2e-3 --rtol 2e-3").exit_code, 0);
  // ... the reference-error rule is not, and names the row.
  const RunResult r = run(qkv + " --candidate " + path("bad.npy") + rule);
  ASSERT_EQ(r.exit_code, 1) << r.out;
  const nlohmann::json b = nlohmann::json::parse(r.out);
  EXPECT_EQ(b["o"]["rows"]["0,0"], "17");
  EXPECT_EQ(b["o"]["reference_error"]["pass"], false);
  EXPECT_EQ(b["tolerance_rule"], "reference-error");
}

TEST_F(ToleranceRule, BadRuleArgumentsAreArgumentErrors) {
  const Tensor<double> x = uniform_tensor({1, 1, 4, 2}, 1);
  write_npy(path("x.npy"), x);
  const std::string base = "check --q " + path("x.npy") + " --k " + path("x.npy") + " --v " +
                           path("x.npy") + " --candidate " + path("x.npy");
  for (const char* bad : {" --tolerance-rule loose", " --tolerance-rule reference-error --factor 0.5",
                          " --tolerance-rule reference-error --naive-dtype int8",
                          " --tolerance-rule reference-error --floor -1"}) {
    const RunResult r = run(base + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << r.err;
  }
}

}  // namespace
}  // namespace sparseattn::testing_cli
