#include "api/layout_flags.h"

#include "core/error.h"
#include "api/inputs.h"
#include "core/npy.h"

namespace sparseattn::api {

namespace {

// An integer .npy file of rank `rank`, as int64 values; FieldError naming `field` otherwise.
Tensor<int64_t> read_index_file(const std::string& path, Field field, int64_t rank,
                                const char* shape) {
  const std::string flag = spell(field, Spelling::flag);
  const NpyHeader header = read_npy_header(path, flag);
  require_field(header.dtype == NpyDtype::int32 || header.dtype == NpyDtype::int64, field,
                " dtype", npy_dtype_name(header.dtype), "must be int32 or int64");
  Tensor<int64_t> x = read_npy_int(path, flag);
  require_field(x.rank() == rank, field, " shape", shape_text(x.shape),
                std::string("must be ") + shape);
  return x;
}

}  // namespace

void add_layout_flags(CLI::App* cmd, LayoutFlags& flags) {
  cmd->add_option("--cu-seqlens-q", flags.cu_seqlens_q,
                  "CQ.npy: int32/int64 [B + 1], 0 = c_0 <= ... <= c_B = total_q: q, k, v are "
                  "then packed [total, heads, head_dim] and sequence b is q rows c_b .. c_{b+1} - 1 "
                  "(FlashAttention's varlen; contract §2.10); o is then [total_q, num_heads, "
                  "head_dim_v] and lse [num_heads, total_q]; needs --cu-seqlens-k");
  cmd->add_option("--cu-seqlens-k", flags.cu_seqlens_k,
                  "CK.npy: int32/int64 [B + 1], the key rows of each sequence, ending at total_k "
                  "(contract §2.10); needs --cu-seqlens-q");
  cmd->add_option("--cache-seqlens", flags.cache_seqlens,
                  "S.npy: int32/int64 [B], 0 <= S[b] <= L_cache: k, v are a KV cache [B, num_kv_heads, "
                  "L_cache, head_dim] of which element b's first S[b] slots are filled; query i sits "
                  "at i + S[b] - seq_len_q (contract §2.11)");
  cmd->add_option("--block-table", flags.block_table,
                  "T.npy: int32/int64 [B, max_pages]: k, v are page pools [num_pages, num_kv_heads, "
                  "page_size, head_dim] (--layout bshd: [num_pages, page_size, num_kv_heads, "
                  "head_dim]) and key t of element b lives in page T[b][t / page_size]; entries "
                  "of pages m >= ceil(S[b] / page_size) are never read (contract §2.12); needs "
                  "--cache-seqlens");
}

SeqLayout read_layout(const LayoutFlags& flags) {
  SeqLayout layout;
  const bool cu_q = !flags.cu_seqlens_q.empty(), cu_k = !flags.cu_seqlens_k.empty();
  require_field(cu_q || !cu_k, Field::cu_seqlens_q, "", "missing",
                "must be given with --cu-seqlens-k (both lists, or neither; contract §2.10)");
  require_field(cu_k || !cu_q, Field::cu_seqlens_k, "", "missing",
                "must be given with --cu-seqlens-q (both lists, or neither; contract §2.10)");
  require_field(flags.block_table.empty() || !flags.cache_seqlens.empty(), Field::cache_seqlens,
                "", "missing", "must be given with --block-table (the filled length of each "
                               "element, contract §2.12)");
  require_field(!cu_q || flags.cache_seqlens.empty(), Field::cache_seqlens, "", "given",
                "must not be given with --cu-seqlens-q: a packed batch has no cache "
                "(contract §2.10-§2.11)");
  if (cu_q) {
    Varlen v;
    v.cu_seqlens_q = read_index_file(flags.cu_seqlens_q, Field::cu_seqlens_q, 1, "[B + 1]").data;
    v.cu_seqlens_k = read_index_file(flags.cu_seqlens_k, Field::cu_seqlens_k, 1, "[B + 1]").data;
    layout.varlen = std::move(v);
  }
  if (!flags.cache_seqlens.empty()) {
    KvCache c;
    c.cache_seqlens = read_index_file(flags.cache_seqlens, Field::cache_seqlens, 1, "[B]").data;
    if (!flags.block_table.empty()) {
      const Tensor<int64_t> t =
          read_index_file(flags.block_table, Field::block_table, 2, "[B, max_pages]");
      c.block_table = t.data;
      c.max_pages = t.dim(1);
    }
    layout.cache = std::move(c);
  }
  return layout;
}

void require_layout_conventions(const Conventions& conv, const SeqLayout& layout, bool compat) {
  if (!layout.any()) return;
  const std::string with =
      layout.varlen ? "a packed batch (cu_seqlens)" : "a KV cache (cache_seqlens)";
  auto refuse = [&](bool given, Field field, const std::string& value, const std::string& why) {
    require_field(!given, field, "", value,
                  "must keep its default under " + with + " (" + why + ", contract §2.10-§2.12)");
  };
  refuse(layout.varlen.has_value() && conv.bshd, Field::layout, "bshd",
         "a packed batch is [total, heads, head_dim], one layout");
  refuse(conv.padding_align_valid, Field::padding_align, "valid", "the layout has no padding");
  refuse(conv.padded_queries_any, Field::padded_queries, "any", "the layout has no padded query");
  refuse(conv.key_padding_ignore, Field::key_padding_polarity, "ignore",
         "the layout has no key padding mask");
  refuse(conv.causal_top_left, Field::causal_align, "top-left",
         "each sequence is aligned bottom-right, as FlashAttention's varlen and kvcache calls");
  refuse(conv.masked_score.has_value(), Field::masked_score, to_text(conv.masked_score.value_or(0)),
         "masked keys leave the softmax");
  require_field(!compat, layout.varlen ? Field::cu_seqlens_q : Field::cache_seqlens, "", "given",
                "must not be given with the compatibility flags (their definitions are HF's, "
                "contract §3.12)");
}

LayoutCall layout_call_from_files(const std::string& q, const std::string& k,
                                  const std::string& v, const LayoutFlags& layout,
                                  const PatternFlags& pattern, const Conventions& conv,
                                  bool compat, const std::string& scale, const ScoreFlags& score) {
  LayoutCall call;
  call.layout = read_layout(layout);
  require_layout_conventions(conv, call.layout, compat);
  call.conv = conv;
  call.spec = to_spec(pattern);
  require_layout_spec(call.spec, call.layout);
  call.q = read_npy_float(q, "--q");
  call.k = read_npy_float(k, "--k");
  call.v = read_npy_float(v, "--v");
  if (!scale.empty()) call.scale = parse_finite("--scale", scale, -INFINITY);
  AttentionShape s;  // what the score parameters are checked against: B sequences, H_q heads
  if (call.layout.varlen) {
    require(call.q.rank() == 3, "--q shape", shape_text(call.q.shape),
            "must be packed [total_q, num_heads, head_dim] with --cu-seqlens-q (contract §2.10)");
    s.num_heads = call.q.dim(1);
    s.batch = static_cast<int64_t>(call.layout.varlen->cu_seqlens_q.size()) - 1;
  } else {
    require(call.q.rank() == 4, "--q shape", shape_text(call.q.shape),
            "must be [batch, num_heads, seq_len_q, head_dim] with --cache-seqlens (contract §2.11)");
    s.num_heads = call.q.dim(conv.bshd ? 2 : 1);
    s.batch = call.q.dim(0);
  }
  s.num_kv_heads = s.num_heads;
  call.mods = to_score_mods(score, s);
  require_finite_layout(call, "--");  // a cache's empty slots are never read: need not be finite
  return call;
}

}  // namespace sparseattn::api
