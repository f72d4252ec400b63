#include "api/layout_info.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/field.h"

namespace sparseattn::api {

namespace {

LayoutInfoSequence count(const PatternSpec& spec, int64_t heads, int64_t head_dim, int64_t lq,
                         int64_t lk) {
  LayoutInfoSequence s;
  s.seq_len_q = lq;
  s.seq_len_k = lk;
  s.dense_flops = 4.0 * static_cast<double>(heads) * static_cast<double>(lq) *
                  static_cast<double>(lk) * static_cast<double>(head_dim);
  if (lq == 0) return s;  // no rows
  if (lk == 0) {          // rows without keys: fully masked (contract §2.3, §2.10)
    s.empty_rows = heads * lq;
    return s;
  }
  const PatternStats st = pattern_stats(sequence_pattern(spec, heads, lq, lk));
  s.nnz = st.nnz;
  s.empty_rows = st.empty_rows;
  s.flops = attention_flops(st, head_dim, head_dim);
  return s;
}

double ratio(double a, double b) { return b > 0.0 ? a / b : 0.0; }

}  // namespace

LayoutInfo layout_info(const PatternSpec& spec, int64_t num_heads, int64_t head_dim,
                       const SeqLayout& layout, int64_t seq_len_q) {
  require(num_heads >= 1, "--num-heads", num_heads, "must be an integer >= 1");
  require(head_dim >= 1, "--head-dim", head_dim, "must be an integer >= 1");
  // Every front end's refusal (the CLI's --block-table, Python's block_table=).
  require_field(!layout.cache || !layout.cache->paged(), Field::block_table, "", "given",
                "must not be given to info: paging moves keys but changes no count; give the "
                "cache_seqlens alone (contract §2.12)");
  validate_spec(spec);
  require_layout_spec(spec, layout);
  LayoutInfo r;
  r.pattern = describe(spec);
  r.num_heads = num_heads;
  r.head_dim = head_dim;
  if (layout.varlen) {
    const Varlen& vl = *layout.varlen;
    // The lists' own last entries are the totals (validate_cu_seqlens refuses empty lists first).
    validate_varlen(vl, vl.cu_seqlens_q.empty() ? 0 : vl.cu_seqlens_q.back(),
                    vl.cu_seqlens_k.empty() ? 0 : vl.cu_seqlens_k.back());
    r.layout = "varlen";
    r.total_q = vl.total_q();
    r.total_k = vl.total_k();
    r.mask_pairs = num_heads * r.total_q * r.total_k;
    for (int64_t b = 0; b < vl.num_sequences(); ++b)
      r.sequences.push_back(count(spec, num_heads, head_dim, vl.seq_len_q(b), vl.seq_len_k(b)));
  } else {
    require(layout.cache.has_value(), "layout", "none", "must be a packed batch or a cache");
    require(seq_len_q >= 1, "--seq-len", seq_len_q,
            "must be an integer >= 1 (L_q: the queries of each element) with --cache-seqlens");
    const KvCache& cache = *layout.cache;
    require_field(cache.batch() >= 1, Field::cache_seqlens, " shape", "[0]",
                  "must have one entry per batch element, at least 1");
    r.layout = "kv_cache";
    for (int64_t b = 0; b < cache.batch(); ++b) {
      const int64_t n = cache.seq_len_k(b);
      require_field(n >= 0, Field::cache_seqlens, "[" + std::to_string(b) + "]", n,
                    "must be >= 0 (the keys element " + std::to_string(b) + " holds)");
      r.total_q += seq_len_q;
      r.total_k += n;
      r.sequences.push_back(count(spec, num_heads, head_dim, seq_len_q, n));
    }
  }
  for (const LayoutInfoSequence& s : r.sequences) {
    r.nnz += s.nnz;
    r.empty_rows += s.empty_rows;
    r.flops += s.flops;
    r.dense_flops += s.dense_flops;
  }
  return r;
}

nlohmann::json layout_info_json(const LayoutInfo& r) {
  nlohmann::json j;
  j["layout"] = r.layout;
  j["pattern"] = r.pattern;
  j["num_heads"] = r.num_heads;
  j["head_dim"] = r.head_dim;
  j["num_sequences"] = r.sequences.size();
  j["total_q"] = r.total_q;
  j["total_k"] = r.total_k;
  j["nnz"] = r.nnz;
  j["empty_rows"] = r.empty_rows;
  j["flops"] = r.flops;
  j["dense_flops"] = r.dense_flops;
  j["flops_fraction"] = ratio(r.flops, r.dense_flops);
  if (r.layout == "varlen") {
    j["mask_pairs"] = r.mask_pairs;
    j["mask_flops_fraction"] = ratio(static_cast<double>(r.nnz), static_cast<double>(r.mask_pairs));
  }
  nlohmann::json seqs = nlohmann::json::array();
  for (const LayoutInfoSequence& s : r.sequences)
    seqs.push_back({{"seq_len_q", s.seq_len_q},
                    {"seq_len_k", s.seq_len_k},
                    {"nnz", s.nnz},
                    {"empty_rows", s.empty_rows},
                    {"flops", s.flops},
                    {"density", ratio(static_cast<double>(s.nnz),
                                      static_cast<double>(r.num_heads * s.seq_len_q * s.seq_len_k))}});
  j["sequences"] = seqs;
  return j;
}

std::string layout_info_text(const LayoutInfo& r) {
  const bool varlen = r.layout == "varlen";
  std::string out;
  out += fmt::format("{:<27}{}\n", "layout", varlen ? "packed batch (cu_seqlens, contract §2.10)"
                                                    : "KV cache (cache_seqlens, contract §2.11)");
  out += fmt::format("{:<27}{}\n", "pattern", r.pattern);
  out += fmt::format("{:<27}{}\n", varlen ? "sequences" : "batch", r.sequences.size());
  out += fmt::format("{:<27}{}\n", "total_q", r.total_q);
  out += fmt::format("{:<27}{}\n", "total_k", r.total_k);
  out += fmt::format("{:<27}{}\n", "nnz", r.nnz);
  out += fmt::format("{:<27}{}\n", "empty rows", r.empty_rows);
  out += fmt::format("{:<27}{:.6g} ({:.6f} of the sequences' dense FLOPs)\n", "FLOPs", r.flops,
                     ratio(r.flops, r.dense_flops));
  if (varlen)
    out += fmt::format("{:<27}{} (nnz / mask pairs {:.6f})\n", "block-diagonal mask pairs",
                       r.mask_pairs, ratio(static_cast<double>(r.nnz), static_cast<double>(r.mask_pairs)));
  out += fmt::format("{:>8} {:>10} {:>10} {:>14} {:>10} {:>12}\n", varlen ? "sequence" : "element",
                     "seq_len_q", "seq_len_k", "nnz", "empty", "FLOPs");
  for (size_t b = 0; b < r.sequences.size(); ++b) {
    const LayoutInfoSequence& s = r.sequences[b];
    out += fmt::format("{:>8} {:>10} {:>10} {:>14} {:>10} {:>12.6g}\n", b, s.seq_len_q, s.seq_len_k,
                       s.nnz, s.empty_rows, s.flops);
  }
  return out;
}

}  // namespace sparseattn::api
