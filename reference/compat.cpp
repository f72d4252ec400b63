// Compatibility modes (contract §3.12); see compat.h. Serial, float64, written to be read.
#include "reference/compat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace sparseattn {

BlockListing hf_bigbird_listing(int64_t seq_len, int64_t block_size, int64_t num_heads,
                                const Tensor<int64_t>& rand_attn) {
  require(block_size >= 1, "block_size", block_size, "must be >= 1");
  require(seq_len % block_size == 0, "seq_len", seq_len,
          "must be a multiple of --block-size " + std::to_string(block_size) +
              " under --compat hf-bigbird (HF pads to a multiple itself)");
  const int64_t nb = seq_len / block_size;
  require(nb >= 5, "seq_len", seq_len,
          "must span at least 5 blocks under --compat hf-bigbird (HF's block-sparse layout "
          "lists 5 distinct blocks per middle query block)");
  require(rand_attn.rank() == 3 && (rand_attn.dim(0) == 1 || rand_attn.dim(0) == num_heads) &&
              rand_attn.dim(1) == nb - 2,
          "random_table shape", shape_text(rand_attn.shape),
          "must be [num_heads or 1, " + std::to_string(nb - 2) + ", r] (HF's rand_attn)");
  for (int64_t x : rand_attn.data)
    require(x >= 0 && x < nb, "random_table entry", x, "must be in [0, " + std::to_string(nb) + ")");
  const int64_t r = rand_attn.dim(2);
  BlockListing out;
  out.block_size = block_size;
  out.num_blocks = nb;
  out.lists.resize(static_cast<size_t>(num_heads));
  for (int64_t h = 0; h < num_heads; ++h) {
    const int64_t th = rand_attn.dim(0) == 1 ? 0 : h;
    auto rand_row = [&](int64_t row, std::vector<int64_t>& l) {
      for (int64_t t = 0; t < r; ++t) l.push_back(rand_attn.data[static_cast<size_t>((th * (nb - 2) + row) * r + t)]);
    };
    auto& lists = out.lists[static_cast<size_t>(h)];
    lists.resize(static_cast<size_t>(nb));
    for (int64_t qb = 0; qb < nb; ++qb) {
      std::vector<int64_t>& l = lists[static_cast<size_t>(qb)];
      if (qb == 0 || qb == nb - 1) {  // global query blocks: every block once
        for (int64_t c = 0; c < nb; ++c) l.push_back(c);
      } else if (qb == 1) {           // HF's "second" block
        l = {0, 1, 2, nb - 1};
        rand_row(0, l);
      } else if (qb == nb - 2) {      // HF's "second last" block
        l = {0, nb - 3, nb - 2, nb - 1};
        rand_row(nb - 3, l);
      } else {                        // middle: first, band, random, last (HF's order)
        l = {0, qb - 1, qb, qb + 1};
        rand_row(qb - 1, l);
        l.push_back(nb - 1);
      }
    }
  }
  return out;
}

void validate_listing_inputs(const AttentionShape& s, const BlockListing& listing,
                             const Tensor<uint8_t>* key_padding_mask) {
  const int64_t n = listing.num_blocks * listing.block_size;
  require(s.seq_len_q == n && s.seq_len_k == n, "seq_len", s.seq_len_q,
          "must equal the listing's " + std::to_string(n) + " tokens");
  require(static_cast<int64_t>(listing.lists.size()) == s.num_heads, "num_heads", s.num_heads,
          "must equal the listing's " + std::to_string(listing.lists.size()));
  if (key_padding_mask)
    require(key_padding_mask->numel() == s.batch * n, "key_padding_mask shape",
            shape_text(key_padding_mask->shape), "must be [batch, seq_len]");
}

AttentionResult hf_listing_oracle(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const BlockListing& listing,
                                  const Tensor<uint8_t>* key_padding_mask, const double* scale) {
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
  validate_listing_inputs(s, listing, key_padding_mask);
  const int64_t n = listing.num_blocks * listing.block_size;
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  const int64_t b_sz = listing.block_size, d = s.head_dim, dv = s.head_dim_v;
  AttentionResult out{Tensor<double>({s.batch, s.num_heads, n, dv}, 0.0),
                      Tensor<double>({s.batch, s.num_heads, n}, -std::numeric_limits<double>::infinity())};
  auto real = [&](int64_t b, int64_t j) {
    return !key_padding_mask || key_padding_mask->data[static_cast<size_t>(b * n + j)] != 0;
  };
  std::vector<double> scores;
  std::vector<int64_t> keys;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const int64_t bh = b * s.num_heads + h;
      for (int64_t i = 0; i < n; ++i) {
        if (!real(b, i)) continue;  // padded query: fully masked (contract §2.4)
        // The listed keys, a key as often as its block is listed; padded keys dropped.
        keys.clear();
        for (int64_t c : listing.lists[static_cast<size_t>(h)][static_cast<size_t>(i / b_sz)])
          for (int64_t j = c * b_sz; j < (c + 1) * b_sz; ++j)
            if (real(b, j)) keys.push_back(j);
        if (keys.empty()) continue;
        scores.assign(keys.size(), 0.0);
        double m = -std::numeric_limits<double>::infinity();
        for (size_t t = 0; t < keys.size(); ++t) {
          double dot = 0.0;
          for (int64_t x = 0; x < d; ++x)
            dot += q.data[static_cast<size_t>((bh * n + i) * d + x)] *
                   k.data[static_cast<size_t>((bh * n + keys[t]) * d + x)];
          scores[t] = sc * dot;
          m = std::max(m, scores[t]);
        }
        double l = 0.0;
        for (double& x : scores) l += (x = std::exp(x - m));
        double* o = &out.o.data[static_cast<size_t>((bh * n + i) * dv)];
        for (size_t t = 0; t < keys.size(); ++t)
          for (int64_t x = 0; x < dv; ++x)
            o[x] += scores[t] / l * v.data[static_cast<size_t>((bh * n + keys[t]) * dv + x)];
        out.lse.data[static_cast<size_t>(bh * n + i)] = m + std::log(l);
      }
    }
  return out;
}

void validate_longformer_globals(const AttentionShape& s, const Shape& q4, const Shape& k4,
                                 const Shape& v4, const PatternSpec& spec,
                                 const LongformerGlobals& g) {
  require(spec.kind == PatternKind::longformer, "pattern", pattern_kind_name(spec.kind),
          "must be longformer for --global-mask and --q-global/--k-global/--v-global");
  const bool proj = g.q_global || g.k_global || g.v_global;
  require(!proj || (g.q_global && g.k_global && g.v_global), "--q-global", "",
          "--q-global, --k-global and --v-global go together");
  if (proj) {
    require(as_rank4(g.q_global->shape, "--q-global") == q4, "--q-global shape",
            shape_text(g.q_global->shape), "must be q's " + shape_text(q4));
    require(as_rank4(g.k_global->shape, "--k-global") == k4, "--k-global shape",
            shape_text(g.k_global->shape), "must be k's " + shape_text(k4));
    require(as_rank4(g.v_global->shape, "--v-global") == v4, "--v-global shape",
            shape_text(g.v_global->shape), "must be v's " + shape_text(v4));
  }
  if (g.global_mask) {
    const Tensor<uint8_t>& gm = *g.global_mask;
    const bool ok = (gm.rank() == 2 && gm.dim(0) == s.batch && gm.dim(1) == s.seq_len_k) ||
                    (gm.rank() == 1 && s.batch == 1 && gm.dim(0) == s.seq_len_k);
    require(ok, "--global-mask shape", shape_text(gm.shape),
            "must be [batch, seq_len_k] = [" + std::to_string(s.batch) + ", " +
                std::to_string(s.seq_len_k) + "]");
    for (uint8_t x : gm.data) require(x <= 1, "--global-mask entry", int(x), "must be 0 or 1");
    require(spec.global.empty(), "--global-mask", "", "replaces --global: give one of them");
  }
}

LongformerBatch longformer_batch(const PatternSpec& spec, const LongformerGlobals& g, int64_t b,
                                 const AttentionShape& s) {
  PatternSpec sb = spec;
  if (g.global_mask) {
    sb.global.clear();
    for (int64_t j = 0; j < s.seq_len_k; ++j)
      if (g.global_mask->data[static_cast<size_t>(b * s.seq_len_k + j)]) sb.global.push_back(j);
  }
  if (spec.key_padding_mask) {
    const Tensor<uint8_t>& kp = *spec.key_padding_mask;
    Tensor<uint8_t> row({1, s.seq_len_k}, 0);
    const int64_t kb = kp.rank() == 2 ? b : 0;
    for (int64_t j = 0; j < s.seq_len_k; ++j) row.data[static_cast<size_t>(j)] = kp.data[static_cast<size_t>(kb * s.seq_len_k + j)];
    sb.key_padding_mask = row;
  }
  LongformerBatch out{materialize(sb, PatternSizes{1, s.num_heads, s.seq_len_q, s.seq_len_k}),
                      std::vector<uint8_t>(static_cast<size_t>(s.seq_len_q), 0)};
  // A global query sits at key position p = i + L_k - L_q (contract §3.1).
  for (int64_t p : sb.global) {
    const int64_t i = p - (s.seq_len_k - s.seq_len_q);
    if (i >= 0 && i < s.seq_len_q) out.global_row[static_cast<size_t>(i)] = 1;
  }
  return out;
}

AttentionResult longformer_compat(const Tensor<double>& q, const Tensor<double>& k,
                                  const Tensor<double>& v, const PatternSpec& spec,
                                  const LongformerGlobals& g, const AttendFn& attend) {
  const AttentionShape s = attention_shape(q.shape, k.shape, v.shape);
  const Shape q4 = as_rank4(q.shape, "q"), k4 = as_rank4(k.shape, "k"), v4 = as_rank4(v.shape, "v");
  validate_longformer_globals(s, q4, k4, v4, spec, g);
  const bool proj = g.q_global != nullptr;
  const Tensor<double> q_r4 = [&] { Tensor<double> t = q; t.shape = q4; return t; }();
  const Tensor<double> k_r4 = [&] { Tensor<double> t = k; t.shape = k4; return t; }();
  const Tensor<double> v_r4 = [&] { Tensor<double> t = v; t.shape = v4; return t; }();
  AttentionResult out{Tensor<double>({s.batch, s.num_heads, s.seq_len_q, s.head_dim_v}, 0.0),
                      Tensor<double>({s.batch, s.num_heads, s.seq_len_q}, 0.0)};
  const int64_t o_per = s.num_heads * s.seq_len_q * s.head_dim_v, l_per = s.num_heads * s.seq_len_q;
  for (int64_t b = 0; b < s.batch; ++b) {
    const LongformerBatch lb = longformer_batch(spec, g, b, s);
    AttentionResult r = attend(batch_slice(q_r4, b), batch_slice(k_r4, b), batch_slice(v_r4, b), lb.pattern);
    if (proj) {
      const Tensor<double> qg = [&] { Tensor<double> t = *g.q_global; t.shape = q4; return batch_slice(t, b); }();
      const Tensor<double> kg = [&] { Tensor<double> t = *g.k_global; t.shape = k4; return batch_slice(t, b); }();
      const Tensor<double> vg = [&] { Tensor<double> t = *g.v_global; t.shape = v4; return batch_slice(t, b); }();
      const AttentionResult rg = attend(qg, kg, vg, lb.pattern);
      // A global query's row comes from the global projections (contract §3.12).
      for (int64_t i = 0; i < s.seq_len_q; ++i) {
        if (!lb.global_row[static_cast<size_t>(i)]) continue;
        for (int64_t h = 0; h < s.num_heads; ++h) {
          const int64_t row = h * s.seq_len_q + i;
          for (int64_t x = 0; x < s.head_dim_v; ++x)
            r.o.data[static_cast<size_t>(row * s.head_dim_v + x)] = rg.o.data[static_cast<size_t>(row * s.head_dim_v + x)];
          r.lse.data[static_cast<size_t>(row)] = rg.lse.data[static_cast<size_t>(row)];
        }
      }
    }
    std::copy(r.o.data.begin(), r.o.data.begin() + o_per, out.o.data.begin() + b * o_per);
    std::copy(r.lse.data.begin(), r.lse.data.begin() + l_per, out.lse.data.begin() + b * l_per);
  }
  return out;
}

}  // namespace sparseattn
