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
// dtype (contract §4.3). `layout_cases` (version 3) add the sequence layouts (contract
// §2.10-§2.12): a packed batch with its cu_seqlens and gradients, decoding against a cache
// with its cache_seqlens, and the same cache paged with its block_table. Regenerating gives
// byte-identical files. Files are written atomically; the manifest last.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "api/layout_walk.h"
#include "api/pattern_flags.h"
#include "api/results.h"
#include "api/score_flags.h"
#include "core/error.h"
#include "core/npy.h"
#include "reference/attention.h"
#include "reference/backward/backward.h"
#include "registry/backward.h"
#include "registry/registry.h"
#include "pattern/prng.h"

namespace sparseattn::cli {

using namespace api;  // the shared services below every front end (api/)

namespace {

// Version 3 added `layout_cases` (contract §2.10-§2.12); the cases of versions 1 and 2 are
// unchanged, byte for byte (their PRNG streams and files are the same).
constexpr const char* kGoldenVersion = "sparseattn-golden-3";

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

// ---- the sequence layouts (contract §2.10-§2.12): `layout_cases` of the manifest ----------

// Their inputs draw PRNG streams from here on, clear of the cases above (streams 1 .. 4 per
// case, in order) and the pattern files' (98, 99), so adding a case above changes none of them.
constexpr uint64_t kLayoutStreams = 1000;

template <class T>
Tensor<int32_t> int32_list(const Shape& shape, const std::vector<T>& values) {
  Tensor<int32_t> t(shape);
  for (size_t i = 0; i < values.size(); ++i) t.data[i] = static_cast<int32_t>(values[i]);
  return t;
}

int64_t count_fully_masked(const Tensor<double>& lse) {
  int64_t n = 0;
  for (double x : lse.data) n += x == -INFINITY;
  return n;
}

// The packed batch (contract §2.10, §7.8): three sequences, the middle one empty, the first
// with seq_len_q < seq_len_k; grouped heads; a causal window restarting per sequence. Its
// o and lse are the oracle walk's (a1_dense_masked per sequence), its dq, dk, dv the gradient
// oracle's (b1_dense_masked_grad per sequence), all packed.
nlohmann::json write_varlen_case(const std::filesystem::path& dir, uint64_t& stream) {
  const char* name = "varlen_window_causal";
  const char* flags = "--pattern window --window 3 --causal";
  const std::vector<int64_t> cu_q = {0, 5, 5, 12}, cu_k = {0, 9, 9, 18};
  const int64_t hq = 4, hkv = 2, d = 4, tq = cu_q.back(), tk = cu_k.back();
  VarlenInputs in;
  in.q = uniform({tq, hq, d}, ++stream);
  in.k = uniform({tk, hkv, d}, ++stream);
  in.v = uniform({tk, hkv, d}, ++stream);
  const Tensor<double> dout = uniform({tq, hq, d}, ++stream);
  in.varlen = {cu_q, cu_k};
  in.spec = to_spec(parse_flags(flags, dir));
  const Output o = attend_varlen(find_kernel("a1_dense_masked"), in);
  const GradOutput g = attend_varlen_grad(find_grad_kernel("b1_dense_masked_grad"), in, dout);
  nlohmann::json files;
  auto put = [&](const char* what, const auto& x) {
    const std::string file = std::string(name) + "." + what + ".npy";
    write_npy((dir / file).string(), x);
    files[what] = file;
  };
  put("q", in.q), put("k", in.k), put("v", in.v), put("dout", dout);
  put("o", o.o), put("lse", o.lse), put("dq", g.dq), put("dk", g.dk), put("dv", g.dv);
  put("cu_seqlens_q", int32_list({4}, cu_q)), put("cu_seqlens_k", int32_list({4}, cu_k));
  return {
      {"name", name},
      {"covers", "packed batch (cu_seqlens): 3 sequences, the middle one empty, seq_len_q 5 < "
                 "seq_len_k 9 then 7 < 9; g = 2; a causal window per sequence, bottom-right "
                 "against its own keys; gradients packed like their inputs (contract §2.10, §7.8)"},
      {"layout", "varlen"},
      {"shape", {{"num_sequences", 3}, {"total_q", tq}, {"total_k", tk}, {"num_heads", hq},
                 {"num_kv_heads", hkv}, {"head_dim", d}, {"head_dim_v", d}}},
      {"pattern_flags", flags},
      {"layout_flags", "--cu-seqlens-q " + files["cu_seqlens_q"].get<std::string>() +
                           " --cu-seqlens-k " + files["cu_seqlens_k"].get<std::string>()},
      {"score_flags", ""},
      {"pattern", describe(in.spec)},
      {"scale", 1.0 / std::sqrt(static_cast<double>(d))},
      {"files", files},
      {"fully_masked_rows", count_fully_masked(o.lse)},
  };
}

// Decoding against a cache (contract §2.11) and the same keys in shuffled pages (§2.12):
// 3 elements filled to 7, 0 (every row without keys: o = 0, lse = -inf) and 12 = the
// capacity; the slots past each length hold values a correct reader never reads. Forward
// only (contract §2.11): o and lse, no gradients. The paged case's o and lse are the
// contiguous case's, byte for byte.
std::vector<nlohmann::json> write_cache_cases(const std::filesystem::path& dir, uint64_t& stream) {
  const char* flags = "--pattern window --window 5 --causal";
  const int64_t batch = 3, hq = 4, hkv = 2, lq = 2, capacity = 12, d = 4, page = 4;
  const std::vector<int64_t> lens = {7, 0, capacity};
  const Tensor<double> q = uniform({batch, hq, lq, d}, ++stream);
  const Tensor<double> k = uniform({batch, hkv, capacity, d}, ++stream);
  const Tensor<double> v = uniform({batch, hkv, capacity, d}, ++stream);
  // Pages: element 0's two in pages 5, 2; element 2's three in 7, 0, 3; pages 1, 4, 6 hold
  // no element's keys (noise); -1 past each length.
  const std::vector<int64_t> table = {5, 2, -1, -1, -1, -1, 7, 0, 3};
  const int64_t num_pages = 8, max_pages = capacity / page;
  Tensor<double> pool_k = uniform({num_pages, hkv, page, d}, ++stream);
  Tensor<double> pool_v = uniform({num_pages, hkv, page, d}, ++stream);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t m = 0; m < max_pages; ++m) {
      const int64_t pg = table[static_cast<size_t>(b * max_pages + m)];
      if (pg < 0) continue;
      for (int64_t h = 0; h < hkv; ++h)
        for (int64_t t = 0; t < page; ++t)
          for (int64_t e = 0; e < d; ++e) {
            const size_t from = static_cast<size_t>(((b * hkv + h) * capacity + m * page + t) * d + e);
            const size_t to = static_cast<size_t>(((pg * hkv + h) * page + t) * d + e);
            pool_k.data[to] = k.data[from];
            pool_v.data[to] = v.data[from];
          }
    }
  const PatternSpec spec = to_spec(parse_flags(flags, dir));
  std::vector<nlohmann::json> out;
  for (const bool paged : {false, true}) {
    const char* name = paged ? "decode_paged_shuffled" : "decode_cache_window";
    CacheInputs in;
    in.q = q;
    in.k = paged ? pool_k : k;
    in.v = paged ? pool_v : v;
    in.cache.cache_seqlens = lens;
    if (paged) {
      in.cache.block_table = table;
      in.cache.max_pages = max_pages;
    }
    in.spec = spec;
    const Output o = attend_cache(find_kernel("a1_dense_masked"), in);
    nlohmann::json files;
    auto put = [&](const char* what, const auto& x) {
      const std::string file = std::string(name) + "." + what + ".npy";
      write_npy((dir / file).string(), x);
      files[what] = file;
    };
    put("q", in.q), put("k", in.k), put("v", in.v), put("o", o.o), put("lse", o.lse);
    put("cache_seqlens", int32_list({batch}, lens));
    std::string layout_flags = "--cache-seqlens " + files["cache_seqlens"].get<std::string>();
    nlohmann::json shape = {{"batch", batch}, {"num_heads", hq}, {"num_kv_heads", hkv},
                            {"seq_len_q", lq}, {"capacity", capacity}, {"head_dim", d},
                            {"head_dim_v", d}};
    if (paged) {
      put("block_table", int32_list({batch, max_pages}, table));
      layout_flags += " --block-table " + files["block_table"].get<std::string>();
      shape["num_pages"] = num_pages, shape["page_size"] = page, shape["max_pages"] = max_pages;
    }
    out.push_back({
        {"name", name},
        {"covers", paged ? "paged KV (block_table): decode_cache_window's keys in shuffled pages "
                           "of 4 slots, pages 1, 4, 6 unused, -1 past each length; the same o "
                           "and lse (contract §2.12)"
                         : "decoding against a KV cache (cache_seqlens 7, 0 and 12 = the "
                           "capacity): 2 queries at positions n - 2, n - 1; element 1 has no "
                           "key (o = 0, lse = -inf); slots past n never read (contract §2.11)"},
        {"layout", paged ? "paged_kv" : "kv_cache"},
        {"shape", shape},
        {"pattern_flags", flags},
        {"layout_flags", layout_flags},
        {"score_flags", ""},
        {"pattern", describe(spec)},
        {"scale", 1.0 / std::sqrt(static_cast<double>(d))},
        {"files", files},
        {"fully_masked_rows", count_fully_masked(o.lse)},
    });
  }
  return out;
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
  uint64_t layout_stream = kLayoutStreams;
  nlohmann::json layout_list = nlohmann::json::array();
  layout_list.push_back(write_varlen_case(dir, layout_stream));
  for (nlohmann::json& c : write_cache_cases(dir, layout_stream)) layout_list.push_back(std::move(c));
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
      {"layout_conventions",
       "layout_cases (contract §2.10-§2.12), each run as `sparseattn check` with its "
       "layout_flags: varlen: q, o, dout, dq [total_q, num_heads, d], k, v, dk, dv [total_k, "
       "num_kv_heads, d], lse [num_heads, total_q]; sequence b is q rows cu_seqlens_q[b] .. "
       "cu_seqlens_q[b+1] - 1 against k rows cu_seqlens_k[b] .. cu_seqlens_k[b+1] - 1, bottom-"
       "right aligned within it. kv_cache: q, o [batch, num_heads, seq_len_q, d], k, v [batch, "
       "num_kv_heads, capacity, d] of which element b's keys are slots 0 .. cache_seqlens[b] - "
       "1 (the others never read), lse [batch, num_heads, seq_len_q]. paged_kv: k, v [num_pages, "
       "num_kv_heads, page_size, d]; key t of element b is slot t % page_size of page "
       "block_table[b][t // page_size]. Forward only for kv_cache and paged_kv; the index "
       "arrays int32"},
      {"layout_cases", layout_list},
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
