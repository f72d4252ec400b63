// The shared pattern flags (api/pattern_flags.h). Each flag's help gives its unit and
// range in the field's words; to_spec() checks ranges that do not depend on the sizes
// (materialize() checks the rest, e.g. --global against seq_len), and refuses a flag
// that the chosen --pattern would silently ignore.
#include "api/pattern_flags.h"

#include "api/pattern_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/field.h"
#include "core/npy.h"
#include "pattern/block_mask.h"

namespace sparseattn::api {

namespace {


// CLI11 alone reads integers with strtoll(text, 0): "010" is octal eight, "08" fails,
// "0x10" is sixteen; it also wraps "-1" into 2^64-1 for an unsigned flag and clamps an
// overflowing integer to the type's maximum. This validator sees the text first: it
// accepts only decimal digits (and a leading '-' for signed flags), checks the range, and
// rewrites the text without its leading zeros, so the conversion that follows can only
// read decimal (contract §5: integers are decimal, "010" is ten).
std::string decimal_integer(std::string& text, bool is_signed) {
  const std::string range = is_signed ? "[-2^63, 2^63)" : "[0, 2^64)";
  const std::string allowed = text + " must be an integer in " + range +
                              ", written in decimal (a leading 0 is still decimal: 010 is ten)";
  const bool negative = is_signed && !text.empty() && text[0] == '-';
  const size_t digits = negative ? 1 : 0;
  if (text.size() == digits || text.find_first_not_of("0123456789", digits) != std::string::npos)
    return allowed;
  const size_t first = std::min(text.find_first_not_of('0', digits), text.size() - 1);
  std::string canonical = (negative ? "-" : "") + text.substr(first);
  if (canonical == "-0") canonical = "0";
  errno = 0;
  if (is_signed) std::strtoll(canonical.c_str(), nullptr, 10);
  else std::strtoull(canonical.c_str(), nullptr, 10);
  if (errno == ERANGE) return allowed;
  text = canonical;
  return "";
}

void make_decimal(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    const bool is_unsigned = type.rfind("UINT", 0) == 0;
    const bool is_signed = type.rfind("INT", 0) == 0;
    if (!is_signed && !is_unsigned) continue;
    // transform(), not check(): CLI11 hands check() validators a copy of the text, and
    // the rewrite must reach the conversion. transform() also runs first.
    opt->transform(CLI::Validator(
        [is_signed](std::string& text) { return decimal_integer(text, is_signed); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) make_decimal(*sub);
}

}  // namespace

std::vector<int64_t> parse_positions(const std::string& text) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  const std::string allowed = "comma-separated token positions, integers >= 0 (e.g. 0,1,4095)";
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    errno = 0;
    const long long v = item.empty() ? -1 : std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || errno == ERANGE || v < 0)
      throw InvalidArgument("--global", text, allowed);
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

void add_pattern_flags(CLI::App* cmd, PatternFlags& f) {
  cmd->add_option("--pattern-file", f.pattern_file,
                  "P.json: the pattern as JSON, keys = these flags' names without \"--\" "
                  "({\"pattern\": \"window\", \"window\": 64}); a list = one pattern per head "
                  "(api/pattern_file.h, docs/benchmarks.md); replaces the other pattern flags");
  cmd->add_option("--pattern", f.pattern,
                  "which keys each query may attend (contract §3): dense | window | longformer | "
                  "random | bigbird | bigbird-etc | hierarchical | explicit | chunked | "
                  "neighborhood | selected | selected-blocks")
      ->capture_default_str();
  cmd->add_option("--window", f.window,
                  "W: one-sided window half-width in window steps (tokens when --dilation 1), "
                  "integer >= 0; W = 2 allows 5 keys (i-2 .. i+2). HF Longformer's "
                  "attention_window = 2W. Not with --window-left/--window-right "
                  "[window, longformer, random]")
      ->capture_default_str()
      ->each([&f](const std::string&) { f.window_given = true; });
  // The pair binds through a function so that "not given" stays distinct from every value.
  cmd->add_option_function<int64_t>(
      "--window-left", [&f](const int64_t& v) { f.window_left = v; },
      "L: window steps before the query's position, integer >= -1 (-1 = unbounded); keys "
      "p + D*t with -L <= t <= R: FlashAttention's window_size=(L, R). Needs --window-right; "
      "replaces --window (L = R = W) [window, longformer, random]");
  cmd->add_option_function<int64_t>(
      "--window-right", [&f](const int64_t& v) { f.window_right = v; },
      "R: window steps after the query's position, integer >= -1 (-1 = unbounded); "
      "--causal makes it 0. Needs --window-left [window, longformer, random]");
  cmd->add_option_function<int64_t>(
      "--chunk-size", [&f](const int64_t& v) { f.chunk_size = v; },
      "C: tokens per chunk, integer >= 1 (beyond max(seq_len_q, seq_len_k) acts as it); "
      "query at position p attends the keys j with floor(p/C) = floor(j/C) (Llama 4's chunked "
      "attention) [chunked]");
  cmd->add_option_function<int64_t>(
      "--kernel-size", [&f](const int64_t& v) { f.kernel_size = v; },
      "K: keys per query, odd integer in [1, seq_len_k], K * D <= seq_len_k; the K keys of the "
      "query's residue class mod D nearest to it, shifted inward at the ends (NATTEN) "
      "[neighborhood]");
  cmd->add_option("--dilation", f.dilation,
                  "D: tokens between neighbouring window keys, integer >= 1; keys i + D*t, "
                  "|t| <= W [window, longformer, random, neighborhood]")
      ->capture_default_str();
  cmd->add_flag("--causal", f.causal,
                "keys only at or before the query's position (t <= 0) "
                "[dense, window, longformer, random, chunked, neighborhood, selected, "
                "selected-blocks]");
  cmd->add_option("--global", f.global,
                  "I,J,...: global token positions, integers in [0, seq_len) (decimal); each "
                  "attends every key and is attended by every query, except that with --causal "
                  "global rows and columns obey causality too: no query sees a key after its "
                  "position (contract §3) [longformer, random]");
  cmd->add_option("--num-random", f.num_random,
                  "R: random keys per query, integer >= 0, drawn without replacement from "
                  "the keys not already allowed [random]")
      ->capture_default_str();
  cmd->add_option("--block-size", f.block_size,
                  "B: tokens per block, integer >= 1; the last block may be partial "
                  "[bigbird, bigbird-etc]")
      ->capture_default_str();
  cmd->add_option("--num-random-blocks", f.num_random_blocks,
                  "R: random key blocks per query block, integer >= 0; fewer when fewer remain "
                  "(reported by `info`) [bigbird, bigbird-etc]")
      ->capture_default_str();
  cmd->add_option("--num-global-tokens", f.num_global_tokens,
                  "G: extra global tokens placed first, integer in [0, seq_len] [bigbird-etc]")
      ->capture_default_str();
  cmd->add_option("--random-table", f.random_table,
                  "T.npy: explicit random draws, replacing --seed, in the layout mask "
                  "--random-table-out writes: bigbird int [num_heads or 1, nb-2, R] key blocks in "
                  "[0, nb), nb = ceil(seq_len / B) (HF's rand_attn); bigbird-etc [.., nb, R]; "
                  "random [num_heads or 1, seq_len_q, num_random] keys in [0, seq_len_k); -1 = "
                  "no draw [random, bigbird, bigbird-etc]");
  cmd->add_option("--segment-ids", f.segment_ids,
                  "S.npy: one segment id per token, int [seq_len], non-decreasing "
                  "[hierarchical]");
  cmd->add_option("--mask", f.mask,
                  "M.npy: allowed mask, bool or uint8 [seq_len_q, seq_len_k] or "
                  "[num_heads, seq_len_q, seq_len_k]; 1 = may attend [explicit]");
  cmd->add_option("--key-padding-mask", f.key_padding_mask,
                  "P.npy: bool or uint8 [batch, seq_len_k]; 1 = real token. Padded keys are "
                  "never attended, padded query rows give o = 0, lse = -inf [any pattern]");
  cmd->add_option("--seed", f.seed,
                  "S: seed of the counter-based PRNG, integer in [0, 2^64); draws are keyed by "
                  "(seed, head, row) [random, bigbird, bigbird-etc]")
      ->capture_default_str();
  // contract §3.16–§3.17: attention over a given selection.
  cmd->add_option("--kv-indices", f.kv_indices,
                  "I.npy: int32/int64 [B_sel, H_sel, seq_len_q, K] keys per query, B_sel in {1, "
                  "batch}, H_sel in {1, num_kv_heads, num_heads} (kv heads: query head h reads "
                  "row h / g); -1 = empty slot, else a key in [0, seq_len_k); K >= 1 [selected]");
  cmd->add_option("--duplicates", f.duplicates,
                  "once | count: a key listed twice in a row counts once (set semantics) or "
                  "twice in the softmax [selected]")
      ->capture_default_str();
  cmd->add_option("--block-indices", f.block_indices,
                  "I.npy: int32/int64 [B_sel, H_sel, ceil(seq_len_q / BQ), K] key blocks per "
                  "query block; -1 = empty slot, else a block in [0, ceil(seq_len_k / BK)) "
                  "[selected-blocks]");
  cmd->add_option_function<int64_t>(
      "--block-size-q", [&f](const int64_t& v) { f.block_size_q = v; },
      "BQ: queries per query block, integer >= 1 (1: one list per query, as MoBA and NSA) "
      "[selected-blocks]");
  cmd->add_option_function<int64_t>(
      "--block-size-k", [&f](const int64_t& v) { f.block_size_k = v; },
      "BK: keys per key block, integer >= 1; the last block may be partial [selected-blocks]");
  cmd->add_option("--block-mask", f.block_mask,
                  "DIR: FlexAttention's BlockMask as .npy files, read as --block-indices: "
                  "kv_num_blocks.npy int32 [B, H, Q_blocks], kv_indices.npy int32 [B, H, "
                  "Q_blocks, KV_blocks], optional full_kv_num_blocks.npy and full_kv_indices.npy "
                  "(the same shapes); a block listed partial or full is attended whole; "
                  "--block-size-q/-k default to 128 (FlexAttention's BLOCK_SIZE) [selected-blocks]");
  // Every integer flag here is decimal: decimal_integer_flags() (called once for the
  // whole app by register_commands()) attaches the decimal validator.
}

void decimal_integer_flags(CLI::App& app) { make_decimal(app); }

PatternSpec to_spec(const PatternFlags& f) {
  if (!f.pattern_file.empty()) return spec_from_pattern_file(f);
  PatternSpec s;
  try {
    s.kind = parse_pattern_kind(f.pattern);
  } catch (const FieldError&) {
    throw FieldError(Field::pattern, "", f.pattern,
                     "must be one of dense|window|longformer|random|bigbird|bigbird-etc|"
                     "hierarchical|explicit|chunked|neighborhood|selected|selected-blocks");
  }
  require_field(s.kind != PatternKind::per_head, Field::pattern, "", f.pattern,
                "per-head patterns are built with the library (PatternSpec::per_head) or a "
                "--pattern-file list, not from flags; or use --pattern explicit with a "
                "[num_heads, n, n] mask");
  // The flags fill the typed spec; validate_spec() (pattern/) checks every range and every
  // field the kind would ignore, and main() spells its FieldError as the flag.
  s.causal = f.causal;
  s.window = f.window;
  // --window 0 beside the pair is refused too, not only the nonzero window validate_spec()
  // sees (contract §3.3: the pair replaces --window).
  require_field(!f.window_given || (!f.window_left && !f.window_right), Field::window, "",
                f.window,
                "must not be given with --window-left/--window-right: the pair replaces the "
                "symmetric window (give --window-left W --window-right W instead)");
  s.window_left = f.window_left;
  s.window_right = f.window_right;
  s.chunk_size = f.chunk_size;
  s.kernel_size = f.kernel_size;
  s.dilation = f.dilation;
  s.global = parse_positions(f.global);
  s.num_random = f.num_random;
  s.block_size = f.block_size;
  s.num_random_blocks = f.num_random_blocks;
  s.num_global_tokens = f.num_global_tokens;
  s.seed = f.seed;
  s.duplicates = parse_duplicates(f.duplicates);
  s.block_size_q = f.block_size_q;
  s.block_size_k = f.block_size_k;
  if (!f.block_mask.empty()) {  // contract §3.17: the BlockMask is another spelling of the table
    require(s.kind == PatternKind::selected_blocks, "--block-mask", f.block_mask,
            "needs --pattern selected-blocks (its tables become block_indices), not --pattern " +
                f.pattern);
    require(f.block_indices.empty(), "--block-mask", f.block_mask,
            "replaces --block-indices: give one of them");
    // FlexAttention's BLOCK_SIZE default, each side, when the command line gives none.
    if (!s.block_size_q) s.block_size_q = kFlexBlockSize;
    if (!s.block_size_k) s.block_size_k = kFlexBlockSize;
  }
  // Files are read only after the fields are known to be right (a --mask given to bigbird
  // is refused before its file is opened): placeholders stand for the files meanwhile.
  PatternSpec shape_only = s;
  if (!f.random_table.empty()) shape_only.random_table = Tensor<int64_t>();
  if (!f.mask.empty()) shape_only.mask = Tensor<uint8_t>();
  if (!f.segment_ids.empty()) shape_only.segment_ids = {0};
  if (!f.kv_indices.empty()) shape_only.kv_indices = Tensor<int64_t>({1, 1, 1, 1}, -1);
  if (!f.block_indices.empty() || !f.block_mask.empty())
    shape_only.block_indices = Tensor<int64_t>({1, 1, 1, 1}, -1);
  validate_spec(shape_only);
  if (!f.kv_indices.empty()) s.kv_indices = read_npy_int(f.kv_indices, "--kv-indices");
  if (!f.block_indices.empty()) s.block_indices = read_npy_int(f.block_indices, "--block-indices");
  if (!f.block_mask.empty()) s.block_indices = read_block_mask(f.block_mask, "--block-mask");
  if (!f.random_table.empty()) s.random_table = read_npy_int(f.random_table, "--random-table");
  if (!f.segment_ids.empty()) {
    const Tensor<int64_t> ids = read_npy_int(f.segment_ids, "--segment-ids");
    require(ids.rank() == 1, "--segment-ids shape", shape_text(ids.shape),
            "must be [seq_len] (one id per token)");
    s.segment_ids = ids.data;
  }
  if (!f.mask.empty()) s.mask = read_npy_mask(f.mask, "--mask");
  if (!f.key_padding_mask.empty())
    s.key_padding_mask = read_npy_mask(f.key_padding_mask, "--key-padding-mask");
  validate_spec(s);
  return s;
}

Tensor<int64_t> read_block_mask(const std::string& dir, const std::string& flag) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  const std::string pair_text =
      "kv_num_blocks.npy int32 [B, H, Q_blocks] and kv_indices.npy int32 [B, H, Q_blocks, "
      "KV_blocks]; optional full_kv_num_blocks.npy and full_kv_indices.npy of the same shapes";
  // Each file is named as "--block-mask bm/kv_indices.npy", the shape it must have beside
  // every reading error (a float file, a missing one).
  auto name = [&](const char* file) { return flag + " " + base + file; };
  auto read = [&](const char* file, const std::string& shape) -> Tensor<int64_t> {
    const std::string path = base + file;
    require(std::filesystem::exists(path), name(file), "missing",
            "must exist: the folder holds " + pair_text);
    try {
      return read_npy_int(path, name(file));
    } catch (const MemoryLimitError&) {
      throw;
    } catch (const InvalidArgument& e) {
      // The reader's problem ("dtype float32; expected ...") as the value, the shape as the rule.
      throw InvalidArgument(name(file), e.allowed(), "must be an int32 (or int64) .npy " + shape);
    }
  };
  const Tensor<int64_t> num = read("kv_num_blocks.npy", "[B, H, Q_blocks]");
  const Tensor<int64_t> idx = read("kv_indices.npy", "[B, H, Q_blocks, KV_blocks]");
  BlockMaskNames names;
  names.kv_num_blocks = name("kv_num_blocks.npy");
  names.kv_indices = name("kv_indices.npy");
  names.full_kv_num_blocks = name("full_kv_num_blocks.npy");
  names.full_kv_indices = name("full_kv_indices.npy");
  const bool has_num = std::filesystem::exists(base + "full_kv_num_blocks.npy");
  const bool has_idx = std::filesystem::exists(base + "full_kv_indices.npy");
  require(has_num == has_idx, has_num ? names.full_kv_indices : names.full_kv_num_blocks, "missing",
          "must exist beside " + (has_num ? names.full_kv_num_blocks : names.full_kv_indices) +
              " (the full pair is both or neither)");
  if (!has_num) return block_indices_from_block_mask(num, idx, nullptr, nullptr, names);
  const Tensor<int64_t> full_num = read("full_kv_num_blocks.npy", "[B, H, Q_blocks]");
  const Tensor<int64_t> full_idx = read("full_kv_indices.npy", "[B, H, Q_blocks, KV_blocks]");
  return block_indices_from_block_mask(num, idx, &full_num, &full_idx, names);
}

Pattern build_pattern(const PatternFlags& flags, const PatternSizes& sizes) {
  return materialize(to_spec(flags), sizes);
}

}  // namespace sparseattn::api
