// The one spelling table of the request's fields (core/field.h).
#include "core/field.h"

#include <utility>

namespace sparseattn {

namespace {

struct Row {
  Field field;
  const char* name;     // PatternSpec member / pattern-file key
  const char* flag;     // command line
  const char* keyword;  // Python
};

// One row per Field, in the enum's order (the test walks every value).
constexpr Row kRows[] = {
    {Field::pattern, "pattern", "--pattern", "pattern"},
    {Field::causal, "causal", "--causal", "causal"},
    {Field::window, "window", "--window", "window"},
    {Field::dilation, "dilation", "--dilation", "dilation"},
    {Field::global, "global", "--global", "global_tokens"},
    {Field::num_random, "num_random", "--num-random", "num_random"},
    {Field::block_size, "block_size", "--block-size", "block_size"},
    {Field::num_random_blocks, "num_random_blocks", "--num-random-blocks", "num_random_blocks"},
    {Field::num_global_tokens, "num_global_tokens", "--num-global-tokens", "num_global_tokens"},
    {Field::random_table, "random_table", "--random-table", "random_table"},
    {Field::seed, "seed", "--seed", "seed"},
    {Field::segment_ids, "segment_ids", "--segment-ids", "segment_ids"},
    {Field::mask, "mask", "--mask", "mask"},
    {Field::key_padding_mask, "key_padding_mask", "--key-padding-mask", "key_padding_mask"},
    {Field::heads, "heads", "--pattern-file", "heads"},
    {Field::tile, "tile", "tile", "tile"},
    {Field::window_left, "window_left", "--window-left", "left"},
    {Field::window_right, "window_right", "--window-right", "right"},
    {Field::chunk_size, "chunk_size", "--chunk-size", "chunk_size"},
    {Field::kernel_size, "kernel_size", "--kernel-size", "kernel_size"},
    {Field::layout, "layout", "--layout", "layout"},
    {Field::lse_base, "lse_base", "--lse-base", "lse_base"},
    {Field::padded_queries, "padded_queries", "--padded-queries", "padded_queries"},
    {Field::key_padding_polarity, "key_padding_polarity", "--key-padding-polarity",
     "key_padding_polarity"},
    {Field::causal_align, "causal_align", "--causal-align", "causal_align"},
    {Field::masked_score, "masked_score", "--masked-score", "masked_score"},
    {Field::padding_align, "padding_align", "--padding-align", "padding_align"},
    {Field::q, "q", "--q", "q"},
    {Field::k, "k", "--k", "k"},
    {Field::v, "v", "--v", "v"},
    {Field::impl, "impl", "--impl", "impl"},
    {Field::scale, "scale", "--scale", "scale"},
    {Field::softcap, "softcap", "--softcap", "softcap"},
    {Field::alibi_slopes, "alibi_slopes", "--alibi-slopes", "alibi_slopes"},
    {Field::sinks, "sinks", "--sinks", "sinks"},
    {Field::cu_seqlens_q, "cu_seqlens_q", "--cu-seqlens-q", "cu_seqlens_q"},
    {Field::cu_seqlens_k, "cu_seqlens_k", "--cu-seqlens-k", "cu_seqlens_k"},
    {Field::cache_seqlens, "cache_seqlens", "--cache-seqlens", "cache_seqlens"},
    {Field::block_table, "block_table", "--block-table", "block_table"},
};

constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < sizeof(kRows) / sizeof(kRows[0]); ++i)
    if (static_cast<size_t>(kRows[i].field) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kRows lists every Field, in the enum's order");
static_assert(sizeof(kRows) / sizeof(kRows[0]) == kFieldCount, "one row per Field");

const Row& row(Field f) { return kRows[static_cast<size_t>(f)]; }

std::string argument_text(Field f, Spelling s, const std::string& detail, int64_t head) {
  const Row& r = row(f);
  std::string out = s == Spelling::flag ? r.flag : s == Spelling::keyword ? r.keyword : r.name;
  // A head's field: "heads[3].window" in Python (Pattern.per_head's list) and in a file;
  // the command line reads per-head patterns only from --pattern-file, so it names that.
  if (head >= 0)
    out = std::string(s == Spelling::flag ? "--pattern-file: " : "") + "heads[" +
          std::to_string(head) + "]." + (s == Spelling::keyword ? r.keyword : r.name);
  return out + detail;
}

}  // namespace

std::string spell(Field field, Spelling spelling) { return argument_text(field, spelling, "", -1); }

std::string spell_flag(const std::string& flag, Spelling spelling) {
  for (const Row& r : kRows)
    if (flag == r.flag) return spell(r.field, spelling);
  if (spelling == Spelling::flag) return flag;
  size_t start = 0;
  while (start < flag.size() && flag[start] == '-') ++start;
  std::string out = flag.substr(start);
  for (char& ch : out)
    if (ch == '-') ch = '_';
  return out;
}

const FieldSpelling* field_spellings(size_t* count) {
  static const FieldSpelling* table = [] {
    static FieldSpelling rows[kFieldCount];
    for (size_t i = 0; i < kFieldCount; ++i)
      rows[i] = {kRows[i].field, kRows[i].name, kRows[i].flag, kRows[i].keyword};
    return rows;
  }();
  *count = kFieldCount;
  return table;
}

FieldError::FieldError(Field field, std::string detail, const std::string& value,
                       const std::string& allowed, int64_t head)
    : InvalidArgument(argument_text(field, Spelling::name, detail, head), value, allowed),
      field_(field),
      detail_(std::move(detail)),
      head_(head) {}

FieldError FieldError::exceeds_memory(Field field, std::string detail, const MemoryLimitError& e) {
  FieldError out(field, std::move(detail), e.value(), e.allowed());
  out.memory_limit_ = true;
  return out;
}

FieldError FieldError::at_head(int64_t head) const {
  FieldError out(field_, detail_, value(), allowed(), head);
  out.memory_limit_ = memory_limit_;
  return out;
}

std::string FieldError::argument_as(Spelling spelling) const {
  return argument_text(field_, spelling, detail_, head_);
}

InvalidArgument FieldError::spelled(Spelling spelling) const {
  return InvalidArgument(argument_as(spelling), value(), allowed());
}

}  // namespace sparseattn
