#include "cli/inputs.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/npy.h"

namespace sparseattn::cli {

AttentionInputs load_attention_inputs(const std::string& q_path, const std::string& k_path,
                                      const std::string& v_path, const PatternFlags& flags) {
  AttentionInputs in;
  in.q = read_npy_float(q_path, "--q");
  in.k = read_npy_float(k_path, "--k");
  in.v = read_npy_float(v_path, "--v");
  in.q.shape = as_rank4(in.q.shape, "--q");
  in.k.shape = as_rank4(in.k.shape, "--k");
  in.v.shape = as_rank4(in.v.shape, "--v");
  in.shape = attention_shape(in.q.shape, in.k.shape, in.v.shape);
  PatternSizes sizes;
  sizes.batch = in.shape.batch;
  sizes.num_heads = in.shape.num_heads;
  sizes.seq_len_q = in.shape.seq_len_q;
  sizes.seq_len_k = in.shape.seq_len_k;
  in.pattern = build_pattern(flags, sizes);
  return in;
}

double parse_finite(const std::string& flag, const std::string& text, double min_value) {
  const std::string allowed = min_value == -INFINITY
                                  ? "must be a finite real number"
                                  : "must be a finite real number >= " + to_text(min_value);
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x) || x < min_value)
    throw InvalidArgument(flag, text, allowed);
  return x;
}

void add_size_flags(CLI::App* cmd, SizeFlags& f) {
  cmd->add_option("--seq-len", f.seq_len, "N: query sequence length in tokens, integer >= 1")
      ->required();
  f.seq_len_k_flag = cmd->add_option(
      "--seq-len-k", f.seq_len_k,
      "M: key sequence length in tokens, integer >= 1; default N. When M != N queries align "
      "bottom-right (query i sits at key position i + M - N)");
  cmd->add_option("--num-heads", f.num_heads, "H: attention heads, integer >= 1")
      ->capture_default_str();
}

PatternSizes to_sizes(const SizeFlags& f, const PatternFlags& pattern) {
  const bool has_k = f.seq_len_k_flag && f.seq_len_k_flag->count() > 0;
  require(f.seq_len >= 1, "--seq-len", f.seq_len, "must be an integer >= 1");
  require(!has_k || f.seq_len_k >= 1, "--seq-len-k", f.seq_len_k, "must be an integer >= 1");
  require(f.num_heads >= 1, "--num-heads", f.num_heads, "must be an integer >= 1");
  PatternSizes s;
  s.batch = key_padding_batch(pattern);
  s.num_heads = f.num_heads;
  s.seq_len_q = f.seq_len;
  s.seq_len_k = has_k ? f.seq_len_k : f.seq_len;
  return s;
}

int64_t key_padding_batch(const PatternFlags& flags) {
  if (flags.key_padding_mask.empty()) return 1;
  const Shape s = read_npy_header(flags.key_padding_mask, "--key-padding-mask").shape;
  return s.size() == 2 ? s[0] : 1;  // other ranks: materialize() reports the shape
}

}  // namespace sparseattn::cli
