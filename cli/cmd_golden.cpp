// sparseattn golden — writes the versioned set of golden test vectors (docs/golden.md).
//
//   sparseattn golden --out DIR
//
// Small cases covering every pattern kind the flags build (dense, window, longformer,
// random, bigbird, bigbird-etc, hierarchical, explicit) and the awkward shapes: seq_len 1,
// a partial last block, seq_len_q != seq_len_k, head_dim != head_dim_v, fully masked rows,
// key padding; and the attention of current models (contract §2.7-§2.9): grouped and
// multi-query kv heads, softcap, ALiBi slopes, sinks (a gpt-oss-like and a Gemma-2-like
// layer among them), (left, right) windows, chunked and neighborhood patterns. Per case:
// q, k, v, dout (float64, counter-based PRNG: the same bytes on every machine), the oracle's
// o and lse (a1_dense_masked, contract §4.1) and gradients dq, dk, dv (and dsinks with
// sinks; b1_dense_masked_grad, contract §7, §7.7), plus any pattern or score input files. manifest.json names
// every parameter: shapes, the pattern flags exactly as `sparseattn check` takes them, the
// scale, the convention flags (contract §1.6 defaults) and the tolerance per candidate
// dtype (contract §4.3). Regenerating gives byte-identical files. Files are written
// atomically; the manifest last.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "api/pattern_flags.h"
#include "api/results.h"
#include "api/score_flags.h"
#include "core/error.h"
#include "core/npy.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"
#include "pattern/prng.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

constexpr const char* kGoldenVersion = "sparseattn-golden-2";

struct GoldenCase {
  const char* name;
  int64_t batch, num_heads, seq_len_q, seq_len_k, head_dim, head_dim_v;
  const char* flags;  // pattern flags; "@name" is a file of this set
  const char* covers;
  int64_t num_kv_heads = 0;  // 0: num_heads (contract §2.7)
  const char* score = "";    // --softcap / --alibi-slopes / --sinks flags (contract §2.8-§2.9)
};

// The set. Changing a case changes kGoldenVersion.
const std::vector<GoldenCase>& cases() {
  static const std::vector<GoldenCase> c = {
      {"dense", 1, 2, 16, 16, 8, 8, "--pattern dense", "dense, every key"},
      {"dense_causal_seq_len_1", 1, 2, 1, 1, 4, 4, "--pattern dense --causal", "seq_len 1"},
      {"window_dilated_causal", 1, 2, 20, 20, 8, 8,
       "--pattern window --window 2 --dilation 2 --causal", "window, dilation, causal"},
      {"window_causal_lq5_lk12", 1, 2, 5, 12, 4, 4, "--pattern window --window 2 --causal",
       "seq_len_q != seq_len_k, bottom-right causal alignment (contract §3.1)"},
      {"longformer_hd5_hdv3", 1, 2, 17, 17, 5, 3, "--pattern longformer --window 2 --global 0,9",
       "longformer global rows and columns; head_dim != head_dim_v"},
      {"random_tokens", 1, 2, 16, 16, 4, 4,
       "--pattern random --window 1 --num-random 3 --global 0 --seed 3", "token-level random keys"},
      {"bigbird_partial_block", 1, 2, 22, 22, 4, 4,
       "--pattern bigbird --block-size 4 --num-random-blocks 1 --seed 5",
       "bigbird ITC, partial last block (22 = 5 * 4 + 2)"},
      {"bigbird_etc", 1, 2, 26, 26, 4, 4,
       "--pattern bigbird-etc --block-size 4 --num-random-blocks 1 --num-global-tokens 2 --seed 1",
       "bigbird ETC with global tokens placed first"},
      {"hierarchical", 1, 1, 12, 12, 4, 4, "--pattern hierarchical --segment-ids @segment_ids.npy",
       "hierarchical segments"},
      {"explicit_mask", 1, 2, 10, 10, 4, 4, "--pattern explicit --mask @explicit_mask.npy",
       "an explicit per-head mask, including an empty row"},
      {"key_padding_fully_masked", 2, 2, 9, 9, 4, 4,
       "--pattern window --window 1 --key-padding-mask @key_padding.npy",
       "key padding (batch 0: last 3 tokens); batch 1 fully padded: every row fully masked, "
       "o = 0, lse = -inf"},
      // The attention of current models (contract §2.7-§2.9, §3.3, §3.14, §3.15).
      {"gqa_window", 1, 4, 16, 16, 8, 8, "--pattern window --window 3",
       "grouped-query heads, g = 2: query head h reads kv head h / 2", 2},
      {"mqa_causal_lq6_lk14", 2, 3, 6, 14, 4, 4, "--pattern dense --causal",
       "multi-query (one kv head), bottom-right causal with seq_len_q < seq_len_k", 1},
      {"softcap", 1, 2, 12, 12, 8, 8, "--pattern dense --causal",
       "softcap 0.5 on the scaled score (Gemma 2's rule)", 0, "--softcap 0.5"},
      {"alibi_per_batch", 2, 2, 10, 13, 4, 4, "--pattern dense --causal",
       "ALiBi slopes [batch, num_heads], distance from the bottom-right position", 0,
       "--alibi-slopes @alibi_slopes.npy"},
      {"sinks_lq_gt_lk", 1, 2, 9, 6, 4, 4, "--pattern dense --causal",
       "sinks; queries before the first key: real rows without keys, o = 0, lse = sink", 0,
       "--sinks @sinks.npy"},
      {"gpt_oss_like", 1, 8, 20, 20, 8, 8, "--pattern window --window 7 --causal",
       "gpt-oss's layer scaled down: g = 4, a causal window of 8 keys, sinks", 2,
       "--sinks @sinks8.npy"},
      {"gemma2_like", 1, 4, 18, 18, 8, 8, "--pattern window --window 5 --causal",
       "Gemma 2's local layer scaled down: g = 2, a causal window, softcap", 2,
       "--softcap 0.75"},
      {"window_left3_right1", 1, 2, 15, 15, 4, 4, "--pattern window --window-left 3 --window-right 1",
       "(left, right) window (3, 1), FlashAttention's window_size"},
      {"chunked_causal_lq7_lk12", 1, 2, 7, 12, 4, 4, "--pattern chunked --chunk-size 5 --causal",
       "chunked (Llama 4), causal, seq_len_q != seq_len_k"},
      {"neighborhood_dilated", 1, 2, 16, 16, 4, 4,
       "--pattern neighborhood --kernel-size 5 --dilation 2",
       "neighborhood (NATTEN), kernel 5, dilation 2: the window shifted inward at the ends"},
  };
  return c;
}

Tensor<double> uniform(const Shape& shape, uint64_t stream) {
  Tensor<double> t(shape);
  const uint64_t key = prng_stream_key(20260101, stream, 0);
  for (int64_t e = 0; e < t.numel(); ++e)
    t.data[e] = static_cast<double>(prng_bits(key, static_cast<uint64_t>(e)) >> 11) /
                    4503599627370496.0 - 1.0;  // [-1, 1)
  return t;
}

// The pattern files some cases name (written before the cases that read them).
void write_pattern_files(const std::filesystem::path& dir) {
  Tensor<int64_t> seg({12});
  for (int64_t i = 0; i < 12; ++i) seg.data[i] = i < 3 ? 0 : i < 8 ? 1 : 2;
  write_npy((dir / "segment_ids.npy").string(), seg);
  Tensor<uint8_t> mask({2, 10, 10}, 0);
  const uint64_t key = prng_stream_key(20260101, 99, 0);
  for (int64_t e = 0; e < mask.numel(); ++e)
    mask.data[e] = (prng_bits(key, static_cast<uint64_t>(e)) >> 60) < 6;  // ~3/8 allowed
  for (int64_t j = 0; j < 10; ++j) mask.data[4 * 10 + j] = 0;  // head 0 row 4: empty
  write_npy((dir / "explicit_mask.npy").string(), mask, true);
  Tensor<uint8_t> pad({2, 9}, 1);
  for (int64_t j = 0; j < 9; ++j) pad.data[9 + j] = 0;
  for (int64_t j = 6; j < 9; ++j) pad.data[j] = 0;
  write_npy((dir / "key_padding.npy").string(), pad, true);
  // Score inputs (contract §2.8-§2.9): slopes [batch 2, heads 2], sinks [2] and [8].
  Tensor<double> slopes({2, 2});
  slopes.data = {0.5, 0.25, 0.125, 0.0};
  write_npy((dir / "alibi_slopes.npy").string(), slopes);
  Tensor<double> sinks({2});
  sinks.data = {0.5, -1.0};
  write_npy((dir / "sinks.npy").string(), sinks);
  write_npy((dir / "sinks8.npy").string(), uniform({8}, 98));
}

// "@file" -> dir/file.
std::string resolve_files(const std::string& flags, const std::filesystem::path& dir) {
  std::string resolved;
  for (size_t p = 0; p < flags.size();) {
    const size_t at = flags.find('@', p);
    if (at == std::string::npos) {
      resolved += flags.substr(p);
      break;
    }
    resolved += flags.substr(p, at - p) + (dir.string() + "/");
    p = at + 1;
  }
  return resolved;
}

// Parses a case's pattern and score flags with the CLI's own flags.
PatternFlags parse_flags(const std::string& flags, const std::filesystem::path& dir) {
  CLI::App app;
  PatternFlags f;
  add_pattern_flags(&app, f);
  app.parse(resolve_files(flags, dir), false);
  return f;
}
ScoreFlags parse_score_flags(const std::string& flags, const std::filesystem::path& dir) {
  CLI::App app;
  ScoreFlags f;
  add_score_flags(&app, f);
  app.parse(resolve_files(flags, dir), false);
  return f;
}

std::string manifest_flags(const std::string& flags) {
  std::string s = flags;
  for (size_t p; (p = s.find('@')) != std::string::npos;) s.erase(p, 1);
  return s;
}

void run_golden(const std::string& out) {
  namespace fs = std::filesystem;
  require(!out.empty(), "--out", out, "must name a directory");
  std::error_code ec;
  fs::create_directories(out, ec);
  require(!ec && fs::is_directory(out), "--out", out, "must be a directory that can be created");
  const fs::path dir(out);
  write_pattern_files(dir);
  nlohmann::json list = nlohmann::json::array();
  uint64_t stream = 0;
  for (const GoldenCase& c : cases()) {
    const PatternFlags flags = parse_flags(c.flags, dir);
    PatternSizes sizes;
    sizes.batch = c.batch;
    sizes.num_heads = c.num_heads;
    sizes.seq_len_q = c.seq_len_q;
    sizes.seq_len_k = c.seq_len_k;
    const Pattern pattern = build_pattern(flags, sizes);
    const int64_t hkv = c.num_kv_heads > 0 ? c.num_kv_heads : c.num_heads;
    const Tensor<double> q = uniform({c.batch, c.num_heads, c.seq_len_q, c.head_dim}, ++stream);
    const Tensor<double> k = uniform({c.batch, hkv, c.seq_len_k, c.head_dim}, ++stream);
    const Tensor<double> v = uniform({c.batch, hkv, c.seq_len_k, c.head_dim_v}, ++stream);
    const Tensor<double> dout =
        uniform({c.batch, c.num_heads, c.seq_len_q, c.head_dim_v}, ++stream);
    AttentionShape shape;
    shape.batch = c.batch, shape.num_heads = c.num_heads, shape.num_kv_heads = hkv;
    const ScoreMods mods = to_score_mods(parse_score_flags(c.score, dir), shape);
    const AttentionResult r = a1_dense_masked(q, k, v, pattern, nullptr, mods);
    const GradientResult g = b1_dense_masked_grad(q, k, v, dout, pattern, nullptr, mods);
    nlohmann::json files;
    auto put = [&](const char* what, const Tensor<double>& x) {
      const std::string name = std::string(c.name) + "." + what + ".npy";
      write_npy((dir / name).string(), x);
      files[what] = name;
    };
    put("q", q), put("k", k), put("v", v), put("dout", dout);
    put("o", r.o), put("lse", r.lse), put("dq", g.dq), put("dk", g.dk), put("dv", g.dv);
    if (mods.has_sinks()) put("dsinks", g.dsinks);
    list.push_back({
        {"name", c.name},
        {"covers", c.covers},
        {"shape", {{"batch", c.batch}, {"num_heads", c.num_heads}, {"num_kv_heads", hkv},
                   {"seq_len_q", c.seq_len_q}, {"seq_len_k", c.seq_len_k},
                   {"head_dim", c.head_dim}, {"head_dim_v", c.head_dim_v}}},
        {"pattern_flags", manifest_flags(c.flags)},
        {"score_flags", manifest_flags(c.score)},
        {"pattern", describe(pattern.spec)},
        {"scale", 1.0 / std::sqrt(static_cast<double>(c.head_dim))},
        {"files", files},
        {"fully_masked_rows", [&] {
           int64_t n = 0;
           for (double x : r.lse.data) n += x == -INFINITY;
           return n;
         }()},
    });
  }
  auto tol = [](CandidateDtype d) {
    const Tolerance t = tolerance_for(d);
    return nlohmann::json{{"atol", t.atol}, {"rtol", t.rtol}};
  };
  const nlohmann::json manifest = {
      {"version", kGoldenVersion},
      {"generator", "sparseattn golden --out DIR"},
      {"oracle", "a1_dense_masked (o, lse); b1_dense_masked_grad (dq, dk, dv, dsinks)"},
      {"layout", "q, o, dout, dq [batch, num_heads, seq_len, d]; k, v, dk, dv [batch, "
                 "num_kv_heads, seq_len_k, d]; lse [batch, num_heads, seq_len_q], natural log, "
                 "-inf on fully masked rows (the sink's value with sinks); dsinks [num_heads] "
                 "(contract §1.1, §2, §2.7-§2.9)"},
      {"conventions", "--layout bhsd --lse-base e --padded-queries zero "
                      "--key-padding-polarity keep --causal-align bottom-right --masked-score -inf "
                      "--padding-align full"},
      {"pass_rule", "every element: |x - ref| <= atol + rtol * |ref|; -inf matches -inf "
                    "(contract §4.2)"},
      {"tolerance", {{"float64", tol(CandidateDtype::float64)},
                     {"float32", tol(CandidateDtype::float32)},
                     {"float16", tol(CandidateDtype::float16)}}},
      {"pattern_files", {"segment_ids.npy", "explicit_mask.npy", "key_padding.npy"}},
      {"score_files", {"alibi_slopes.npy", "sinks.npy", "sinks8.npy"}},
      {"cases", list},
  };
  write_text_atomic((dir / "manifest.json").string(), manifest.dump(2) + "\n");
}

}  // namespace

void register_golden(CLI::App& app) {
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "golden", "write the versioned golden test vectors (.npy + manifest.json) to a directory");
  cmd->add_option("--out", *out, "DIR: the directory (created if missing; files overwritten)")
      ->required();
  cmd->callback([out] { run_golden(*out); });
}

}  // namespace sparseattn::cli
