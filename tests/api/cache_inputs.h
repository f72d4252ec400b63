// The KV caches the decode tests build (contract §2.11 a cache filled to cache_seqlens,
// §2.12 page pools read through block_table), written once for
// tests/cpu/decode_kernel_test.cpp and tests/cuda/cuda_layout_kernels_test.cpp. `S` is any
// struct with the sizes hq, hkv, lq, d, dv. Every slot no sequence reads holds NaN, so a
// kernel that reads one fails its comparison.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "api/layout_walk.h"
#include "core/seeded_inputs.h"
#include "core/tensor.h"

namespace sparseattn::testing_cache {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Uniform in [-1, 1), drawn in storage order.
inline Tensor<double> uniform(const Shape& shape, testing_inputs::TestRng& rng) {
  Tensor<double> t(shape);
  for (double& x : t.data) x = rng.uniform(-1.0, 1.0);
  return t;
}

// q [B, H_q, L_q, d] and a contiguous cache k [B, H_kv, L_cache, d], v [.., d_v] filled to
// `seqlens` (B = seqlens.size()), NaN past them.
template <class S>
api::CacheInputs contiguous_cache(const S& z, const std::vector<int64_t>& seqlens,
                                  int64_t l_cache, testing_inputs::TestRng& rng) {
  const int64_t batch = static_cast<int64_t>(seqlens.size());
  api::CacheInputs in;
  in.q = uniform({batch, z.hq, z.lq, z.d}, rng);
  in.k = uniform({batch, z.hkv, l_cache, z.d}, rng);
  in.v = uniform({batch, z.hkv, l_cache, z.dv}, rng);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < z.hkv; ++h)
      for (int64_t t = seqlens[b]; t < l_cache; ++t) {
        std::fill_n(in.k.ptr() + ((b * z.hkv + h) * l_cache + t) * z.d, z.d, kNaN);
        std::fill_n(in.v.ptr() + ((b * z.hkv + h) * l_cache + t) * z.dv, z.dv, kNaN);
      }
  in.cache.cache_seqlens = seqlens;
  return in;
}

// q and page pools k [num_pages, H_kv, page_size, d], v [.., d_v]: each element's pages drawn
// from a shuffled list, element 1's first page the same as element 0's (a shared prefix:
// element 1 then holds element 0's first page_size keys), −1 in the table past each length,
// a few pages nobody reads.
template <class S>
api::CacheInputs paged_cache(const S& z, const std::vector<int64_t>& seqlens, int64_t page_size,
                             int64_t max_pages, testing_inputs::TestRng& rng) {
  const int64_t batch = static_cast<int64_t>(seqlens.size());
  const int64_t num_pages = batch * max_pages + 3;
  std::vector<int64_t> order(static_cast<size_t>(num_pages));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = num_pages - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  api::CacheInputs in;
  in.q = uniform({batch, z.hq, z.lq, z.d}, rng);
  in.k = Tensor<double>({num_pages, z.hkv, page_size, z.d}, kNaN);
  in.v = Tensor<double>({num_pages, z.hkv, page_size, z.dv}, kNaN);
  in.cache.cache_seqlens = seqlens;
  in.cache.max_pages = max_pages;
  in.cache.block_table.assign(static_cast<size_t>(batch * max_pages), -1);
  size_t next = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t used = (seqlens[b] + page_size - 1) / page_size;
    for (int64_t m = 0; m < used; ++m) {
      const bool shared = b == 1 && m == 0 && seqlens[0] >= page_size;
      in.cache.block_table[b * max_pages + m] = shared ? in.cache.block_table[0] : order[next++];
    }
  }
  // Fill exactly the slots some element reads (a shared page gets one set of values).
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seqlens[b]; ++t) {
      const int64_t page = in.cache.block_table[b * max_pages + t / page_size];
      for (int64_t h = 0; h < z.hkv; ++h) {
        double* kr = in.k.ptr() + ((page * z.hkv + h) * page_size + t % page_size) * z.d;
        double* vr = in.v.ptr() + ((page * z.hkv + h) * page_size + t % page_size) * z.dv;
        if (!std::isnan(kr[0])) continue;
        for (int64_t c = 0; c < z.d; ++c) kr[c] = rng.uniform(-1.0, 1.0);
        for (int64_t c = 0; c < z.dv; ++c) vr[c] = rng.uniform(-1.0, 1.0);
      }
    }
  return in;
}

}  // namespace sparseattn::testing_cache
