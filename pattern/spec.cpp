#include "pattern/spec.h"

#include <sstream>

#include "core/error.h"
#include "core/field.h"

namespace sparseattn {

namespace {

struct KindName {
  PatternKind kind;
  const char* name;
};

constexpr KindName kKindNames[] = {
    {PatternKind::dense, "dense"},
    {PatternKind::window, "window"},
    {PatternKind::longformer, "longformer"},
    {PatternKind::random, "random"},
    {PatternKind::bigbird, "bigbird"},
    {PatternKind::bigbird_etc, "bigbird-etc"},
    {PatternKind::hierarchical, "hierarchical"},
    {PatternKind::explicit_mask, "explicit"},
    {PatternKind::per_head, "per-head"},
    {PatternKind::chunked, "chunked"},
    {PatternKind::neighborhood, "neighborhood"},
    {PatternKind::selected, "selected"},
    {PatternKind::selected_blocks, "selected-blocks"},
};

std::string join(const std::vector<int64_t>& xs) {
  std::ostringstream s;
  for (size_t i = 0; i < xs.size(); ++i) s << (i ? "," : "") << xs[i];
  return s.str();
}

}  // namespace

const char* pattern_kind_name(PatternKind kind) {
  for (const KindName& k : kKindNames)
    if (k.kind == kind) return k.name;
  return "?";
}

PatternKind parse_pattern_kind(const std::string& name) {
  std::string known;
  for (const KindName& k : kKindNames) {
    if (name == k.name) return k.kind;
    known += (known.empty() ? "" : "|") + std::string(k.name);
  }
  throw FieldError(Field::pattern, "", name, "must be one of " + known);
}

const char* duplicates_name(Duplicates d) { return d == Duplicates::count ? "count" : "once"; }

Duplicates parse_duplicates(const std::string& name) {
  if (name == "once") return Duplicates::once;
  if (name == "count") return Duplicates::count;
  throw FieldError(Field::duplicates, "", name,
                   "must be once (a repeated key counts once) or count (as often as listed)");
}

std::string describe(const PatternSpec& s) {
  std::ostringstream d;
  d << pattern_kind_name(s.kind) << '(';
  switch (s.kind) {
    case PatternKind::dense:
      d << "causal=" << s.causal;
      break;
    case PatternKind::window:
    case PatternKind::longformer:
    case PatternKind::random:
      if (s.window_left || s.window_right)
        d << "window_left=" << (s.window_left ? std::to_string(*s.window_left) : "none")
          << ", window_right=" << (s.window_right ? std::to_string(*s.window_right) : "none");
      else
        d << "window=" << s.window;
      d << ", dilation=" << s.dilation << ", causal=" << s.causal;
      if (s.kind != PatternKind::window) d << ", global=[" << join(s.global) << ']';
      if (s.kind == PatternKind::random && s.random_table)
        d << ", num_random=" << s.random_table->dim(2)
          << ", random_table=" << shape_text(s.random_table->shape);
      else if (s.kind == PatternKind::random)
        d << ", num_random=" << s.num_random << ", seed=" << s.seed;
      break;
    case PatternKind::bigbird:
    case PatternKind::bigbird_etc:
      d << "block_size=" << s.block_size << ", num_random_blocks=" << s.num_random_blocks;
      if (s.kind == PatternKind::bigbird_etc) d << ", num_global_tokens=" << s.num_global_tokens;
      if (s.random_table) {
        d << ", random_table=" << shape_text(s.random_table->shape);
      } else {
        d << ", seed=" << s.seed;
      }
      break;
    case PatternKind::hierarchical: {
      int64_t segments = s.segment_ids.empty() ? 0 : 1;
      for (size_t i = 1; i < s.segment_ids.size(); ++i)
        segments += s.segment_ids[i] != s.segment_ids[i - 1];
      d << "segments=" << segments;
      break;
    }
    case PatternKind::explicit_mask:
      d << "mask=" << (s.mask ? shape_text(s.mask->shape) : "none");
      break;
    case PatternKind::chunked:
      d << "chunk_size=" << (s.chunk_size ? std::to_string(*s.chunk_size) : "none")
        << ", causal=" << s.causal;
      break;
    case PatternKind::neighborhood:
      d << "kernel_size=" << (s.kernel_size ? std::to_string(*s.kernel_size) : "none")
        << ", dilation=" << s.dilation << ", causal=" << s.causal;
      break;
    case PatternKind::selected:
      d << "kv_indices=" << (s.kv_indices ? shape_text(s.kv_indices->shape) : "none")
        << ", duplicates=" << duplicates_name(s.duplicates) << ", causal=" << s.causal;
      break;
    case PatternKind::selected_blocks:
      d << "block_indices=" << (s.block_indices ? shape_text(s.block_indices->shape) : "none")
        << ", block_size_q=" << (s.block_size_q ? std::to_string(*s.block_size_q) : "none")
        << ", block_size_k=" << (s.block_size_k ? std::to_string(*s.block_size_k) : "none")
        << ", causal=" << s.causal;
      break;
    case PatternKind::per_head:
      for (size_t h = 0; h < s.per_head.size(); ++h) d << (h ? "; " : "") << describe(s.per_head[h]);
      break;
  }
  if (s.key_padding_mask) d << ", key_padding_mask=" << shape_text(s.key_padding_mask->shape);
  d << ')';
  return d.str();
}

}  // namespace sparseattn
