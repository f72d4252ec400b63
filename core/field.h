// The parameters a caller sets, by identity (contract §5).
//
// Three front ends reach the same typed request — command-line flags, pattern files (JSON)
// and Python keywords — and each spells a parameter its own way: `--num-random-blocks`,
// `"num_random_blocks"` in a file (`heads[3].window` inside a per-head list),
// `num_random_blocks=` in Python (`global` is `global_tokens=` there: `global` is a Python
// keyword). The library names a bad parameter by its `Field`, never by a spelling; each
// front end spells the field from the one table in field.cpp when it reports the error.
// Adding a parameter is one `Field` value and one row of that table (CONTRIBUTING.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"

namespace sparseattn {

enum class Field {
  // the pattern (PatternSpec, contract §3)
  pattern, causal, window, dilation, global, num_random, block_size, num_random_blocks,
  num_global_tokens, random_table, seed, segment_ids, mask, key_padding_mask, heads, tile,
  window_left, window_right, chunk_size, kernel_size,
  // the conventions of other libraries (contract §1.6, docs/conventions.md)
  layout, lse_base, padded_queries, key_padding_polarity, causal_align, masked_score,
  padding_align,
  // the attention itself (contract §2.1, §2.7–§2.9)
  q, k, v, impl, scale, softcap, alibi_slopes, sinks,
  // the sequence layouts (contract §2.10–§2.12)
  cu_seqlens_q, cu_seqlens_k, cache_seqlens,
  block_table,  // the last: kFieldCount below counts up to it
};
inline constexpr size_t kFieldCount = static_cast<size_t>(Field::block_table) + 1;

// How a front end writes a field.
enum class Spelling {
  name,     // the field's own name: the PatternSpec member, the pattern file's key ("window")
  flag,     // the command line ("--window")
  keyword,  // Python ("window"; "global_tokens" for Field::global)
};

// The field written the way `spelling` writes it ("--num-random-blocks").
std::string spell(Field field, Spelling spelling);

// A command-line flag written the way `spelling` writes it: a field's flag as its row of
// the table says ("--global" -> keyword "global_tokens", name "global"; "--pattern-file"
// -> "heads"); any other flag by the one rule every front end shares: "--max-seconds" ->
// "max_seconds" (keyword and name), itself as a flag. The Python test of CLI/Python parity
// (python/tests/test_parity.py) maps every option of the CLI with it.
std::string spell_flag(const std::string& flag, Spelling spelling);

// Every row of the table: (field, name, flag, keyword), in the enum's order (the Python
// module exposes it as field_spellings()).
struct FieldSpelling {
  Field field;
  const char* name;
  const char* flag;
  const char* keyword;
};
const FieldSpelling* field_spellings(size_t* count);

// Bad input that names a field instead of a spelling. `detail` follows the field's name
// ("[3]" for an element, " shape", " length", " entry"); `head` >= 0 when the field belongs
// to head `head` of a per-head pattern. what() reads as InvalidArgument's, in Spelling::name
// ("invalid heads[3].window = -1: must be an integer >= 0"); front ends call spelled().
class FieldError : public InvalidArgument {
 public:
  FieldError(Field field, std::string detail, const std::string& value,
             const std::string& allowed, int64_t head = -1);

  // The field asks for a buffer that cannot fit in memory (core/tensor.h checked_numel):
  // still bad input, which Python raises as MemoryError.
  static FieldError exceeds_memory(Field field, std::string detail, const MemoryLimitError& e);
  bool is_memory_limit() const { return memory_limit_; }

  Field field() const { return field_; }
  const std::string& detail() const { return detail_; }
  int64_t head() const { return head_; }

  // The same error with head `head` (a per-head pattern's builder adds it).
  FieldError at_head(int64_t head) const;

  // The argument as `spelling` writes it: "heads[3].window", "--window", "global_tokens[1]".
  std::string argument_as(Spelling spelling) const;
  // The whole error as an InvalidArgument naming the argument that way.
  InvalidArgument spelled(Spelling spelling) const;

 private:
  Field field_;
  std::string detail_;
  int64_t head_;
  bool memory_limit_ = false;
};

// Throws FieldError(field, detail, value, allowed) unless ok.
template <class T>
void require_field(bool ok, Field field, const std::string& detail, const T& value,
                   const std::string& allowed) {
  if (!ok) throw FieldError(field, detail, to_text(value), allowed);
}

}  // namespace sparseattn
