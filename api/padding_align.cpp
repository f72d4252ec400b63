#include "api/padding_align.h"

#include <algorithm>

#include <memory>

#include "api/check_report.h"
#include "api/check_result.h"
#include "api/probe_rows.h"
#include "core/field.h"
#include "core/error.h"

namespace sparseattn::api {

namespace {

bool alignable(PatternKind k) {
  return k == PatternKind::dense || k == PatternKind::window || k == PatternKind::longformer;
}

// The truncated problem of batch element b (contract §2.6): the spec with no key padding,
// its global positions below n (a global key at or after n is padded; no query sits there).
PatternSpec truncated_spec(const PatternSpec& spec, int64_t n) {
  PatternSpec s = spec;
  s.key_padding_mask.reset();
  auto keep = [n](std::vector<int64_t>& g) {
    g.erase(std::remove_if(g.begin(), g.end(), [n](int64_t x) { return x >= n; }), g.end());
  };
  keep(s.global);
  for (PatternSpec& h : s.per_head) keep(h.global);
  return s;
}

}  // namespace

ValidCounts valid_counts(const Pattern& pattern) {
  require_field(pattern.has_key_padding(), Field::padding_align, "", "valid",
                "needs a key padding mask (--key-padding-mask, key_padding_mask=): it aligns "
                "each batch element by its valid key count (contract §2.6)");
  const PatternSizes& z = pattern.sizes;
  if (z.seq_len_q != z.seq_len_k) {
    const PatternSpec& s = pattern.spec;
    bool ok = s.kind == PatternKind::per_head ? !s.per_head.empty() : alignable(s.kind);
    for (const PatternSpec& h : s.per_head) ok = ok && alignable(h.kind);
    require_field(ok, Field::padding_align, "", "valid",
            std::string("with seq_len_q != seq_len_k needs pattern dense, window or longformer, "
                        "not ") +
                pattern_kind_name(s.kind) +
                " (random keys are drawn over the whole key sequence, an explicit mask lists "
                "A(i) itself: nothing to align; contract §2.6)");
  }
  const Tensor<uint8_t>& kp = *pattern.spec.key_padding_mask;  // [B, L_k] (materialize)
  ValidCounts c;
  for (int64_t b = 0; b < z.batch; ++b) {
    const uint8_t* row = kp.ptr() + b * z.seq_len_k;
    int64_t n = 0;
    while (n < z.seq_len_k && row[n]) ++n;
    for (int64_t j = n; j < z.seq_len_k; ++j)
      require_field(row[j] == 0, Field::key_padding_mask, "",
              "batch element " + std::to_string(b) + ": key " + std::to_string(j) +
                  " real after padded key " + std::to_string(n),
              "must be right padding for --padding-align valid: each row n_b ones, then zeros "
              "(contract §2.6)");
    c.keys.push_back(n);
    c.queries.push_back(z.seq_len_q == z.seq_len_k ? n : z.seq_len_q);
  }
  return c;
}

bool valid_alignment_moves(const Pattern& pattern, const ValidCounts& counts) {
  if (pattern.sizes.seq_len_q == pattern.sizes.seq_len_k) return false;  // p_b(i) = i
  for (int64_t n : counts.keys)
    if (n < pattern.sizes.seq_len_k) return true;
  return false;
}

Pattern valid_batch_pattern(const Pattern& pattern, const ValidCounts& counts, int64_t b) {
  const PatternSizes& z = pattern.sizes;
  require_field(z.seq_len_q != z.seq_len_k, Field::padding_align, "", "valid",
          "needs no per-batch pattern when seq_len_q = seq_len_k (the alignments agree)");
  const int64_t n = counts.keys[static_cast<size_t>(b)];
  const int64_t m = counts.queries[static_cast<size_t>(b)];
  const bool per_head = pattern.spec.kind == PatternKind::per_head;
  const int64_t slices = per_head ? z.num_heads : 1;
  Tensor<uint8_t> mask(per_head ? Shape{z.num_heads, z.seq_len_q, z.seq_len_k}
                                : Shape{z.seq_len_q, z.seq_len_k},
                       0);
  if (n > 0 && m > 0) {
    // The unpadded problem of b: m queries, n keys, bottom-right (query i at i + n - m).
    const Pattern t = materialize(truncated_spec(pattern.spec, n), {1, z.num_heads, m, n});
    for (int64_t h = 0; h < slices; ++h) {
      const Tensor<uint8_t> d = dense_mask(t.head(h));  // [m, n]
      for (int64_t i = 0; i < m; ++i)
        std::copy_n(d.ptr() + i * n, n, mask.ptr() + (h * z.seq_len_q + i) * z.seq_len_k);
    }
  }
  PatternSpec e;
  e.kind = PatternKind::explicit_mask;
  e.mask = std::move(mask);
  e.tile = pattern.spec.tile;
  return materialize(e, {1, z.num_heads, z.seq_len_q, z.seq_len_k});
}

AttentionResult attend_valid_aligned(const Tensor<double>& q, const Tensor<double>& k,
                                     const Tensor<double>& v, const Pattern& pattern,
                                     const BatchAttend& attend) {
  const ValidCounts c = valid_counts(pattern);
  if (!valid_alignment_moves(pattern, c)) return attend(q, k, v, pattern);
  AttentionResult r;
  for (int64_t b = 0; b < pattern.sizes.batch; ++b) {
    const AttentionResult rb = attend(batch_slice(q, b), batch_slice(k, b), batch_slice(v, b),
                                      valid_batch_pattern(pattern, c, b));
    append_batch(r.o, rb.o);
    append_batch(r.lse, rb.lse);
  }
  return r;
}

GradientResult grad_valid_aligned(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const Tensor<double>& dout,
                                  const Pattern& pattern, const BatchGrad& grad) {
  const ValidCounts c = valid_counts(pattern);
  if (!valid_alignment_moves(pattern, c)) return grad(q, k, v, dout, pattern);
  GradientResult r;
  for (int64_t b = 0; b < pattern.sizes.batch; ++b) {
    const GradientResult gb = grad(batch_slice(q, b), batch_slice(k, b), batch_slice(v, b),
                                   batch_slice(dout, b), valid_batch_pattern(pattern, c, b));
    append_batch(r.dq, gb.dq);
    append_batch(r.dk, gb.dk);
    append_batch(r.dv, gb.dv);
  }
  return r;
}

Tensor<uint8_t> valid_allowed_mask(const Pattern& pattern) {
  const ValidCounts c = valid_counts(pattern);
  const PatternSizes& z = pattern.sizes;
  const Shape shape = {z.batch, z.num_heads, z.seq_len_q, z.seq_len_k};
  checked_numel(shape, 1, "mask shape");
  Tensor<uint8_t> out(shape, 0);
  const bool moves = valid_alignment_moves(pattern, c);
  const int64_t plane = z.seq_len_q * z.seq_len_k;
  for (int64_t b = 0; b < z.batch; ++b) {
    const Pattern pb = moves ? valid_batch_pattern(pattern, c, b) : Pattern{};
    for (int64_t h = 0; h < z.num_heads; ++h) {
      uint8_t* dst = out.ptr() + (b * z.num_heads + h) * plane;
      if (moves) {
        const Tensor<uint8_t> d = dense_mask(pb.head(h));
        std::copy(d.data.begin(), d.data.end(), dst);
        continue;
      }
      // Nothing moves: contract §2.4's mask, which the valid alignment equals here. A
      // selection with one list per batch element (contract §3.16) has its own layouts.
      const Tensor<uint8_t> d = dense_mask(pattern.head_of(b, h));
      for (int64_t i = 0; i < z.seq_len_q; ++i)
        for (int64_t j = 0; j < z.seq_len_k; ++j)
          dst[i * z.seq_len_k + j] = d.data[i * z.seq_len_k + j] &&
                                     !valid_query_padded(c, b, i) && j < c.keys[b];
    }
  }
  return out;
}

std::vector<uint8_t> valid_padded_rows(const Pattern& pattern) {
  const ValidCounts c = valid_counts(pattern);
  const PatternSizes& z = pattern.sizes;
  std::vector<uint8_t> rows(static_cast<size_t>(z.batch * z.seq_len_q), 0);
  for (int64_t b = 0; b < z.batch; ++b)
    for (int64_t i = 0; i < z.seq_len_q; ++i)
      rows[static_cast<size_t>(b * z.seq_len_q + i)] = valid_query_padded(c, b, i);
  return rows;
}

std::vector<uint8_t> valid_empty_rows(const Pattern& pattern) {
  const Tensor<uint8_t> m = valid_allowed_mask(pattern);
  const int64_t rows = m.numel() / pattern.sizes.seq_len_k;
  std::vector<uint8_t> empty(static_cast<size_t>(rows), 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < pattern.sizes.seq_len_k && empty[r]; ++j)
      if (m.data[r * pattern.sizes.seq_len_k + j]) empty[r] = 0;
  return empty;
}

void restate_worst_rows(CheckResult& result, const Pattern& pattern) {
  const PatternSizes& z = pattern.sizes;
  const ValidCounts c = valid_counts(pattern);
  const RowKeys keys = valid_row_keys(pattern);
  std::vector<int64_t> row;
  for (TensorReport* t : result.tensors_mutable()) {
    if (!t->worst_row) continue;
    WorstRow& w = *t->worst_row;
    if (w.batch >= z.batch || w.head >= z.num_heads) continue;
    std::vector<int64_t> allowed;
    if (t->rows_are == RowKind::query) {
      if (w.row >= z.seq_len_q) continue;
      keys(w.batch, w.head, w.row, allowed);
      w.padded = valid_query_padded(c, w.batch, w.row);
    } else {  // a key row: the queries that attend it
      if (w.row >= z.seq_len_k) continue;
      for (int64_t i = 0; i < z.seq_len_q; ++i) {
        keys(w.batch, w.head, i, row);
        if (std::binary_search(row.begin(), row.end(), w.row)) allowed.push_back(i);
      }
      w.padded = w.row >= c.keys[static_cast<size_t>(w.batch)];
    }
    w.allowed = ranges_text(allowed);
    w.num_allowed = static_cast<int64_t>(allowed.size());
    w.fully_masked = allowed.empty();
  }
}

RowKeys valid_row_keys(const Pattern& pattern) {
  const ValidCounts c = valid_counts(pattern);
  const PatternSizes& z = pattern.sizes;
  if (!valid_alignment_moves(pattern, c)) {
    // Positions as contract §2.4's (seq_len_q = seq_len_k, or no padding): the pattern's rows.
    auto p = std::make_shared<const Pattern>(pattern);
    return [p](int64_t b, int64_t h, int64_t i, std::vector<int64_t>& keys) {
      pattern_row_keys(*p, b, h, i, keys);
    };
  }
  // One unpadded problem per distinct valid count n: m = L_q queries, n keys (contract §2.6).
  auto problems = std::make_shared<std::vector<std::shared_ptr<const Pattern>>>(
      static_cast<size_t>(z.seq_len_k + 1));
  for (int64_t n : c.keys)
    if (n > 0 && !(*problems)[static_cast<size_t>(n)])
      (*problems)[static_cast<size_t>(n)] = std::make_shared<const Pattern>(
          materialize(truncated_spec(pattern.spec, n), {1, z.num_heads, z.seq_len_q, n}));
  return [problems, c](int64_t b, int64_t h, int64_t i, std::vector<int64_t>& keys) {
    keys.clear();
    const int64_t n = c.keys[static_cast<size_t>(b)];
    if (n == 0 || valid_query_padded(c, b, i)) return;
    layout_row_keys(*(*problems)[static_cast<size_t>(n)], h, i, keys);  // keys < n: all real
  };
}

std::string padding_align_cause(bool causal, bool to_valid) {
  const std::string what = causal ? "causal" : "window";
  return to_valid ? what + " aligned to the valid key count, as FlashAttention does with "
                           "padding: pass --padding-align valid"
                  : what + " aligned to the full lengths (query i at i + seq_len_k - "
                           "seq_len_q whatever the padding, contract §2.4): pass "
                           "--padding-align full";
}

}  // namespace sparseattn::api
