// How the sequences of one call are laid out when they are not one [B, H, L, d] block:
// packed variable-length batches (cu_seqlens, contract §2.10), a KV cache filled to
// cache_seqlens (contract §2.11) and paged KV (block_table, contract §2.12).
//
// Each layout is a description plus the two operations every consumer needs: validate it
// against the tensors' sizes, and read sequence b out of it as an ordinary [1, H, L, d]
// problem. The oracle and the generic kernels run one sequence at a time on those reads
// (api/layout_walk.h); a kernel that reads a layout in place (the decode kernel) says so in
// its registry entry.
#pragma once

#include <cstdint>
#include <vector>

#include "core/field.h"
#include "core/tensor.h"

namespace sparseattn {

// contract §2.10. Sequence b is query rows cu_seqlens_q[b] .. cu_seqlens_q[b+1] − 1 of the
// packed q [total_q, H_q, d] against key rows cu_seqlens_k[b] .. cu_seqlens_k[b+1] − 1 of
// the packed k [total_k, H_kv, d] and v [total_k, H_kv, d_v]. Both lists have B + 1 entries,
// start at 0, never decrease, and end at total_q / total_k (validate_varlen).
struct Varlen {
  std::vector<int64_t> cu_seqlens_q, cu_seqlens_k;

  int64_t num_sequences() const { return static_cast<int64_t>(cu_seqlens_q.size()) - 1; }
  int64_t seq_len_q(int64_t b) const { return at(cu_seqlens_q, b + 1) - at(cu_seqlens_q, b); }
  int64_t seq_len_k(int64_t b) const { return at(cu_seqlens_k, b + 1) - at(cu_seqlens_k, b); }
  int64_t total_q() const { return cu_seqlens_q.back(); }
  int64_t total_k() const { return cu_seqlens_k.back(); }

 private:
  static int64_t at(const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; }
};

// contract §2.11–§2.12. k and v are a cache [B, H_kv, L_cache, d] whose first
// cache_seqlens[b] slots of batch element b hold its keys (the others are not part of any
// row), or — with a block table — page pools [num_pages, H_kv, page_size, d] where logical
// key t of element b lives in page block_table[b][t / page_size], slot t % page_size.
struct KvCache {
  std::vector<int64_t> cache_seqlens;  // [B]: 0 <= cache_seqlens[b] <= capacity()
  // Paged only (empty: a contiguous cache): [B, max_pages], row-major. Entries of pages
  // beyond a sequence's length are never read and may hold anything (−1 included).
  std::vector<int64_t> block_table;
  int64_t max_pages = 0;
  int64_t page_size = 0;   // slots per page (the pools' third axis)
  int64_t num_pages = 0;   // pages in the pools (their first axis)
  int64_t seq_len_cache = 0;  // contiguous only: L_cache (the cache's third axis)

  bool paged() const { return !block_table.empty() || max_pages > 0; }
  int64_t batch() const { return static_cast<int64_t>(cache_seqlens.size()); }
  int64_t seq_len_k(int64_t b) const { return cache_seqlens[static_cast<size_t>(b)]; }
  // The most keys one element may hold: L_cache, or max_pages · page_size.
  int64_t capacity() const { return paged() ? max_pages * page_size : seq_len_cache; }
  // The page holding logical key t of element b (paged only; t < seq_len_k(b)).
  int64_t page(int64_t b, int64_t t) const {
    return block_table[static_cast<size_t>(b * max_pages + t / page_size)];
  }
};

// Checks one cu_seqlens list (contract §2.10, §5.1): at least 2 entries, the first 0,
// non-decreasing, the last `total` (the packed tensor's first axis). Throws FieldError
// naming `field` (Field::cu_seqlens_q or Field::cu_seqlens_k) and the first bad entry.
void validate_cu_seqlens(const std::vector<int64_t>& cu, int64_t total, Field field);

// Checks both lists and that they have the same number of entries (FieldError naming
// cu_seqlens_k otherwise).
void validate_varlen(const Varlen& varlen, int64_t total_q, int64_t total_k);

// Checks a cache for q's batch `batch` (contract §2.11–§2.12, §5.1): cache_seqlens has
// `batch` entries, each in [0, capacity()]; paged: block_table is [batch, max_pages] and
// every entry that is read (page m < ceil(cache_seqlens[b] / page_size)) is in
// [0, num_pages). Throws FieldError naming cache_seqlens or block_table.
void validate_kv_cache(const KvCache& cache, int64_t batch);

// Sequence rows [lo, hi) of a packed tensor x [total, H, d] as [1, H, hi − lo, d] — the
// transpose into the layout every kernel reads (contract §1.1). A copy of the sequence
// only, never padded to another length.
template <class T>
Tensor<T> packed_rows(const Tensor<T>& x, int64_t lo, int64_t hi);

// The inverse: writes y [1, H, hi − lo, d] into rows [lo, hi) of x [total, H, d].
template <class T>
void scatter_packed_rows(const Tensor<T>& y, Tensor<T>& x, int64_t lo);

// lse of one sequence [1, H, L] into columns [lo, lo + L) of the packed lse [H, total]
// (FlashAttention's varlen layout, contract §2.10).
template <class T>
void scatter_packed_lse(const Tensor<T>& y, Tensor<T>& x, int64_t lo);

// The keys (or values) element b holds, [1, H_kv, cache_seqlens[b], d], read from the
// contiguous cache [B, H_kv, L_cache, d] or, paged, from the pool [num_pages, H_kv,
// page_size, d] through the block table (contract §2.11–§2.12). `cache` must be valid.
template <class T>
Tensor<T> cache_rows(const Tensor<T>& kv, const KvCache& cache, int64_t b);

}  // namespace sparseattn
