#include "api/inputs.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "api/pattern_file.h"
#include "core/error.h"
#include "core/npy.h"

namespace sparseattn::api {

AttentionInputs load_attention_inputs(const std::string& q_path, const std::string& k_path,
                                      const std::string& v_path, const PatternFlags& flags,
                                      Tensor<double> (*reorder)(const Tensor<double>&)) {
  AttentionInputs in;
  in.q = read_npy_float(q_path, "--q");
  in.k = read_npy_float(k_path, "--k");
  in.v = read_npy_float(v_path, "--v");
  in.q.shape = as_rank4(in.q.shape, "--q");
  in.k.shape = as_rank4(in.k.shape, "--k");
  in.v.shape = as_rank4(in.v.shape, "--v");
  if (reorder != nullptr) {  // another layout (e.g. bshd, contract §1.6) into ours
    in.q = reorder(in.q);
    in.k = reorder(in.k);
    in.v = reorder(in.v);
  }
  // k and v may have fewer heads than q (contract §2.7); the commands refuse what does not
  // combine with them yet (api/score_flags.h require_combinable).
  in.shape = attention_shape(in.q.shape, in.k.shape, in.v.shape, KvHeads::grouped);
  require_finite(in.q, "--q");
  require_finite(in.k, "--k");
  require_finite(in.v, "--v");
  PatternSizes sizes;
  sizes.batch = in.shape.batch;
  sizes.num_heads = in.shape.num_heads;
  sizes.seq_len_q = in.shape.seq_len_q;
  sizes.seq_len_k = in.shape.seq_len_k;
  in.pattern = build_pattern(flags, sizes);
  return in;
}

void check_outputs(const std::vector<PathArg>& outputs, const std::vector<PathArg>& inputs) {
  namespace fs = std::filesystem;
  auto resolved = [](const std::string& p) {
    std::error_code ec;
    const fs::path r = fs::weakly_canonical(fs::path(p), ec);
    return ec ? fs::absolute(fs::path(p)).lexically_normal() : r;
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    const PathArg& out = outputs[o];
    if (out.path.empty()) continue;
    check_output_path(out.path, out.flag);
    const fs::path r = resolved(out.path);
    for (const PathArg& in : inputs)
      if (!in.path.empty() && resolved(in.path) == r)
        throw InvalidArgument(out.flag, out.path, "must differ from " + in.flag + " (an input)");
    for (size_t p = 0; p < o; ++p)
      if (!outputs[p].path.empty() && resolved(outputs[p].path) == r)
        throw InvalidArgument(out.flag, out.path, "must differ from " + outputs[p].flag);
  }
}

void require_finite(const Tensor<double>& x, const std::string& what) {
  for (size_t e = 0; e < x.data.size(); ++e) {
    if (std::isfinite(x.data[e])) continue;
    std::string index;
    size_t rest = e;
    std::vector<int64_t> pos(x.shape.size());
    for (size_t a = x.shape.size(); a-- > 0;) {
      pos[a] = static_cast<int64_t>(rest % static_cast<size_t>(x.shape[a]));
      rest /= static_cast<size_t>(x.shape[a]);
    }
    for (size_t a = 0; a < pos.size(); ++a) index += (a ? "," : "") + std::to_string(pos[a]);
    throw InvalidArgument(what + "[" + index + "]", to_text(x.data[e]), "must be finite");
  }
}

double parse_finite(const std::string& flag, const std::string& text, double min_value) {
  const std::string allowed = min_value == -INFINITY
                                  ? "must be a finite real number"
                                  : "must be a finite real number >= " + to_text(min_value);
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  // strtod sets ERANGE on overflow (x = ±HUGE_VAL, refused as not finite below) and on
  // underflow, where x is the nearest double: a subnormal such as 5e-324 is a finite real
  // and kept (below 2.5e-324 it rounds to 0, as float() does in Python).
  if (text.empty() || *end != '\0' || !std::isfinite(x) || x < min_value)
    throw InvalidArgument(flag, text, allowed);
  return x;
}

void add_size_flags(CLI::App* cmd, SizeFlags& f, bool allow_range, bool seq_len_required) {
  CLI::Option* seq_len =
      allow_range
          ? cmd->add_option("--seq-len", f.seq_len_text,
                            "N: query sequence length in tokens, integer >= 1; or a sweep: A:B (A, "
                            "B and the powers of two between) or A,B,C")
          : cmd->add_option("--seq-len", f.seq_len,
                            "N: query sequence length in tokens, integer >= 1");
  seq_len->required(seq_len_required);
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
  // A per-head --pattern-file fixes the head count; an explicit different --num-heads is
  // then reported by materialize().
  const int64_t file_heads = pattern_file_heads(pattern);
  s.num_heads = f.num_heads == 1 && file_heads > 0 ? file_heads : f.num_heads;
  s.seq_len_q = f.seq_len;
  s.seq_len_k = has_k ? f.seq_len_k : f.seq_len;
  return s;
}

int64_t key_padding_batch(const PatternFlags& flags) {
  if (flags.key_padding_mask.empty()) return 1;
  const Shape s = read_npy_header(flags.key_padding_mask, "--key-padding-mask").shape;
  return s.size() == 2 ? s[0] : 1;  // other ranks: materialize() reports the shape
}

}  // namespace sparseattn::api
