// The selection functions of contract §3.18, in float64. Ranking: a candidate outranks
// another when its score is higher, or equal and its index lower (the tie rule; torch.topk
// leaves ties unspecified). Each function validates every shape and value first.
#include "pattern/select.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"

namespace sparseattn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::string at_text(std::initializer_list<int64_t> idx) {
  std::string s = "[";
  for (int64_t x : idx) s += (s.size() > 1 ? "," : "") + std::to_string(x);
  return s + "]";
}

void require_rank(const Tensor<double>& t, size_t rank, const char* name, const std::string& want) {
  require(t.rank() == rank, std::string(name) + " shape", shape_text(t.shape), "must be " + want);
  for (size_t d = 0; d < rank; ++d)
    require(t.dim(d) >= 1, std::string(name) + " shape", shape_text(t.shape),
            "must have every dimension >= 1: " + want);
}

void require_finite(const Tensor<double>& t, const char* name) {
  for (size_t e = 0; e < t.data.size(); ++e)
    if (!std::isfinite(t.data[e]))
      throw InvalidArgument(std::string(name) + "[flat " + std::to_string(e) + "]", to_text(t.data[e]),
                            "must be finite");
}

void require_count(int64_t v, const char* name, const char* what) {
  require(v >= 1, name, v, std::string("must be an integer >= 1 (") + what + ")");
}

// The `slots` best of `cand` (indices into `score`), in rank order, written to out[0..slots),
// -1 after the last.
void rank_into(std::vector<int64_t>& cand, const double* score, int64_t slots, int64_t* out) {
  auto better = [score](int64_t a, int64_t b) {
    return score[a] > score[b] || (score[a] == score[b] && a < b);
  };
  const int64_t take = std::min<int64_t>(slots, static_cast<int64_t>(cand.size()));
  std::partial_sort(cand.begin(), cand.begin() + take, cand.end(), better);
  for (int64_t s = 0; s < slots; ++s) out[s] = s < take ? cand[static_cast<size_t>(s)] : -1;
}

}  // namespace

Tensor<int64_t> select_topk(const Tensor<double>& scores, int64_t top_k, bool causal) {
  require_rank(scores, 4, "scores", "[batch, num_heads, seq_len_q, N] (N candidates per row)");
  require_count(top_k, "top_k", "indices per row");
  for (size_t e = 0; e < scores.data.size(); ++e)
    require(!std::isnan(scores.data[e]) && scores.data[e] != -kNegInf,
            "scores[flat " + std::to_string(e) + "]", scores.data[e],
            "must be finite or -inf (-inf: not a candidate)");
  const int64_t rows = scores.dim(0) * scores.dim(1), lq = scores.dim(2), n = scores.dim(3);
  Tensor<int64_t> out({scores.dim(0), scores.dim(1), lq, top_k}, -1);
  std::vector<int64_t> cand;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < lq; ++i) {
      const double* s = scores.ptr() + (r * lq + i) * n;
      const int64_t hi = causal ? std::min(n, i + n - lq + 1) : n;  // j <= i + N - L_q
      cand.clear();
      for (int64_t j = 0; j < hi; ++j)
        if (s[j] != kNegInf) cand.push_back(j);
      rank_into(cand, s, top_k, out.ptr() + (r * lq + i) * top_k);
    }
  return out;
}

Tensor<double> dsa_index_scores(const Tensor<double>& index_q, const Tensor<double>& index_k,
                                const Tensor<double>& weights) {
  require_rank(index_q, 4, "index_q", "[batch, seq_len_q, index_heads, index_dim]");
  require_rank(index_k, 3, "index_k", "[batch, seq_len_k, index_dim]");
  require_rank(weights, 3, "weights", "[batch, seq_len_q, index_heads]");
  const int64_t B = index_q.dim(0), lq = index_q.dim(1), hi = index_q.dim(2), di = index_q.dim(3);
  const int64_t lk = index_k.dim(1);
  require(index_k.dim(0) == B && index_k.dim(2) == di, "index_k shape", shape_text(index_k.shape),
          "must be [batch (" + std::to_string(B) + "), seq_len_k, index_dim (" + std::to_string(di) +
              ")] to match index_q " + shape_text(index_q.shape));
  require(weights.dim(0) == B && weights.dim(1) == lq && weights.dim(2) == hi, "weights shape",
          shape_text(weights.shape),
          "must be " + shape_text({B, lq, hi}) + " to match index_q " + shape_text(index_q.shape));
  require_finite(index_q, "index_q");
  require_finite(index_k, "index_k");
  require_finite(weights, "weights");
  Tensor<double> s({B, 1, lq, lk}, kNegInf);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lq; ++t)
      for (int64_t j = 0; j <= std::min(lk - 1, t + lk - lq); ++j) {
        double acc = 0.0;
        for (int64_t h = 0; h < hi; ++h) {
          const double* qv = index_q.ptr() + ((b * lq + t) * hi + h) * di;
          const double* kv = index_k.ptr() + (b * lk + j) * di;
          double dot = 0.0;
          for (int64_t d = 0; d < di; ++d) dot += qv[d] * kv[d];
          acc += weights.data[static_cast<size_t>((b * lq + t) * hi + h)] * std::max(dot, 0.0);
        }
        s.data[static_cast<size_t>((b * lq + t) * lk + j)] = acc;
      }
  return s;
}

Tensor<int64_t> select_dsa(const Tensor<double>& index_q, const Tensor<double>& index_k,
                           const Tensor<double>& weights, int64_t top_k) {
  require_count(top_k, "top_k", "keys per query");
  // -inf marks the keys after the query (causal); select_topk skips them.
  return select_topk(dsa_index_scores(index_q, index_k, weights), top_k, false);
}

Tensor<int64_t> select_moba(const Tensor<double>& q, const Tensor<double>& k, int64_t chunk_size,
                            int64_t top_k) {
  require_rank(q, 4, "q", "[batch, num_heads, seq_len_q, head_dim]");
  require_rank(k, 4, "k", "[batch, num_kv_heads, seq_len_k, head_dim]");
  require_count(chunk_size, "chunk_size", "keys per chunk");
  require_count(top_k, "top_k", "chunks per query, its own included");
  const int64_t B = q.dim(0), H = q.dim(1), lq = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), lk = k.dim(2);
  require(k.dim(0) == B && k.dim(3) == D && H % Hkv == 0, "k shape", shape_text(k.shape),
          "must be [batch (" + std::to_string(B) + "), num_kv_heads dividing " + std::to_string(H) +
              ", seq_len_k, head_dim (" + std::to_string(D) + ")] to match q " + shape_text(q.shape));
  require_finite(q, "q");
  require_finite(k, "k");
  const int64_t nc = (lk + chunk_size - 1) / chunk_size, g = H / Hkv;
  // mean(K_chunk) per (batch, kv head, chunk): the chunk's keys, the last one partial.
  std::vector<double> mean(static_cast<size_t>(B * Hkv * nc * D), 0.0);
  for (int64_t bk = 0; bk < B * Hkv; ++bk)
    for (int64_t c = 0; c < nc; ++c) {
      const int64_t j0 = c * chunk_size, j1 = std::min(lk, j0 + chunk_size);
      double* m = mean.data() + (bk * nc + c) * D;
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t d = 0; d < D; ++d) m[d] += k.data[static_cast<size_t>((bk * lk + j) * D + d)];
      for (int64_t d = 0; d < D; ++d) m[d] /= static_cast<double>(j1 - j0);
    }
  Tensor<int64_t> out({B, H, lq, top_k}, -1);
  std::vector<double> gate(static_cast<size_t>(nc));
  std::vector<int64_t> cand;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < lq; ++i) {
        const int64_t p = i + lk - lq;
        int64_t* row = out.ptr() + ((b * H + h) * lq + i) * top_k;
        if (p < 0) continue;  // before the first key: nothing to select
        const int64_t own = p / chunk_size;
        const double* qi = q.ptr() + ((b * H + h) * lq + i) * D;
        cand.clear();
        for (int64_t c = 0; c < own; ++c) {
          const double* m = mean.data() + ((b * Hkv + h / g) * nc + c) * D;
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * m[d];
          gate[static_cast<size_t>(c)] = dot;
          cand.push_back(c);
        }
        row[0] = own;
        if (top_k > 1) rank_into(cand, gate.data(), top_k - 1, row + 1);
      }
  return out;
}

Tensor<int64_t> select_nsa(const Tensor<double>& scores, int64_t block_size_k, int64_t num_selected,
                           int64_t num_initial, int64_t num_local, int64_t seq_len_k) {
  require_rank(scores, 4, "scores", "[batch, num_heads, seq_len_q, num_key_blocks]");
  require_count(block_size_k, "block_size_k", "tokens per key block");
  require_count(num_selected, "num_selected", "blocks per query, the forced ones included");
  require(num_initial >= 0, "num_initial", num_initial, "must be an integer >= 0 (blocks)");
  require(num_local >= 0, "num_local", num_local, "must be an integer >= 0 (blocks)");
  require(num_selected >= num_initial + num_local, "num_selected", num_selected,
          "must be >= num_initial + num_local = " + std::to_string(num_initial + num_local) +
              " (the forced blocks count in it)");
  require_count(seq_len_k, "seq_len_k", "keys");
  const int64_t nk = (seq_len_k + block_size_k - 1) / block_size_k;
  require(scores.dim(3) == nk, "scores shape", shape_text(scores.shape),
          "must have ceil(seq_len_k / block_size_k) = " + std::to_string(nk) + " blocks on axis 3");
  for (size_t e = 0; e < scores.data.size(); ++e)
    require(!std::isnan(scores.data[e]) && scores.data[e] != -kNegInf,
            "scores[flat " + std::to_string(e) + "]", scores.data[e],
            "must be finite or -inf (-inf: not a candidate)");
  const int64_t rows = scores.dim(0) * scores.dim(1), lq = scores.dim(2);
  Tensor<int64_t> out({scores.dim(0), scores.dim(1), lq, num_selected}, -1);
  std::vector<int64_t> forced, cand;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < lq; ++i) {
      const int64_t p = i + seq_len_k - lq;
      if (p < 0) continue;
      const int64_t cur = p / block_size_k;
      forced.clear();
      for (int64_t c = 0; c <= cur; ++c)
        if (c < num_initial || c > cur - num_local) forced.push_back(c);  // ascending, once
      const double* s = scores.ptr() + (r * lq + i) * nk;
      cand.clear();
      for (int64_t c = 0; c <= cur; ++c)
        if (!(c < num_initial || c > cur - num_local) && s[c] != kNegInf) cand.push_back(c);
      int64_t* row = out.ptr() + (r * lq + i) * num_selected;
      const int64_t nf = static_cast<int64_t>(forced.size());
      std::copy(forced.begin(), forced.end(), row);
      rank_into(cand, s, num_selected - nf, row + nf);
    }
  return out;
}

}  // namespace sparseattn
