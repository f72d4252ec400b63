// bench_decode: the decode kernel (optimized/cpu/decode.h) against the memory system — a
// memory-bound kernel is measured in bytes per second against a probed copy bandwidth
// (optimized/cpu/copy_probe.h), not in FLOPs (docs/benchmarks.md, "Decode against a KV
// cache").
//
//   build/bench_decode [--l-cache 32768] [--heads 32] [--kv-heads 8] [--head-dim 128]
//                      [--page-size 256] [--threads 2] [--rounds 7] [--repeats 5]
//                      [--huge-pages] [--json FILE]
//
// The case: batch 1, L_q 1 (one decoding step), a full cache of L_cache keys, H_q query
// heads on H_kv kv heads, bf16 q, K, V (k09_decode_bf16 on inputs already in bfloat16: the
// registry entry's rounding of a float32 cache is conversion, not decoding, and is left
// out), dense. Two layouts of the same keys: the contiguous cache [1, H_kv, L_cache, d] and
// page pools of page_size slots, pages shuffled through the block table.
//   bytes   K and V read once, q read, o and lse written: what one call must move;
//   GB/s    bytes / time (median of --repeats calls);
//   frac    GB/s over the copy probe's (2·bytes copied / time, the STREAM convention, best
//           of 5 copies of 256 MiB, probed before and after the rounds; the lower is used),
//           and over the read probe's (bytes read / time, best of 5 reads of 256 MiB, every
//           thread summing its slice: the ceiling of a kernel that only reads; the same
//           before/after rule);
//   CPU     process CPU time per call (all threads; a machine shared with other jobs
//           stretches wall time, not this);
//   ratio   paged / contiguous time within one round; median, lowest and highest over the
//           rounds (after one warm-up round), the rounds interleaving the two layouts.
// Both layouts are first checked against the oracle a1_dense_masked on the same bf16 values
// (kTolBfloat16, contract §4.2) and must agree bit for bit (same keys in the same blocks);
// the program exits 1 otherwise and times nothing (contract §4.11).
// --huge-pages: every buffer (the cache and the probes') 2 MiB aligned and marked
// MADV_HUGEPAGE; the run prints how much of the process then sits in huge pages (the
// system's transparent-huge-page setting decides). Without it, 64-byte aligned 4 KiB pages.
// --json FILE writes the printed figures (the shape, bytes per call, each layout's time, GB/s,
// fraction of each probe and CPU time, the ratio) to FILE through a temporary name renamed into
// place (contract §5.4); bench_targets (bench/targets.h) reads it as the decode target's row.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <string>
#include <vector>

#include <sys/mman.h>

#include <nlohmann/json.hpp>

#include "api/peak_probe.h"
#include "core/bfloat16.h"
#include "core/check.h"
#include "core/npy.h"
#include "core/numerics.h"
#include "core/seeded_inputs.h"
#include "optimized/cpu/copy_probe.h"
#include "optimized/cpu/decode.h"
#include "optimized/cpu/isa.h"
#include "reference/attention.h"

namespace sparseattn::bench {
namespace {

struct Options {
  int64_t l_cache = 32768, heads = 32, kv_heads = 8, head_dim = 128, page_size = 256;
  int threads = 2, rounds = 7, repeats = 5;
  std::string json;  // --json FILE; empty: print only
  bool huge_pages = false;  // --huge-pages: every buffer 2 MiB aligned, MADV_HUGEPAGE
};

// The bench's buffers (q, K, V and the probes'), 64-byte aligned as a framework's tensors
// are (PyTorch's CPU allocator aligns to 64 bytes; std::vector's malloc puts a buffer this
// large 16 bytes past a page boundary). With --huge-pages they are 2 MiB aligned and marked
// MADV_HUGEPAGE (transparent huge pages, where the kernel's setting allows them): a 4 KiB
// page holds 16 keys of one head's K at head_dim 128 in bf16, so a 32k-key cache crosses a
// page — a TLB miss, and a hardware prefetch stream that stops — every 16 keys.
template <class T>
struct BenchAllocator {
  using value_type = T;
  bool huge = false;
  BenchAllocator() = default;
  explicit BenchAllocator(bool h) : huge(h) {}
  template <class U>
  BenchAllocator(const BenchAllocator<U>& o) : huge(o.huge) {}
  T* allocate(size_t n) {
    const size_t align = huge ? size_t{2} << 20 : 64;
    const size_t bytes = (n * sizeof(T) + align - 1) / align * align;
    void* p = std::aligned_alloc(align, bytes);
    if (p == nullptr) throw std::bad_alloc();
    if (huge) (void)madvise(p, bytes, MADV_HUGEPAGE);  // a request; smaps says what came
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const BenchAllocator<U>& o) const { return huge == o.huge; }
  template <class U>
  bool operator!=(const BenchAllocator<U>& o) const { return huge != o.huge; }
};
using Bf16Buffer = std::vector<uint16_t, BenchAllocator<uint16_t>>;
using ByteBuffer = std::vector<unsigned char, BenchAllocator<unsigned char>>;

// The process's anonymous memory in transparent huge pages, MiB (/proc/self/smaps_rollup;
// −1 where it cannot be read).
double anon_huge_mib() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return -1.0;
  char line[256];
  double kib = -1.0;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "AnonHugePages:", 14) == 0) kib = std::atof(line + 14);
  std::fclose(f);
  return kib < 0.0 ? -1.0 : kib / 1024.0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Read bandwidth, bytes read per second, best of 5 reads of 256 MiB (every thread its slice).
double read_bandwidth(bool huge) {
  const int64_t bytes = int64_t{256} << 20;
  ByteBuffer src(static_cast<size_t>(bytes), 1, BenchAllocator<unsigned char>(huge));
  volatile uint64_t sink = cpu::read_probe(src.data(), bytes, 1);  // fault in
  double best = 0.0;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = cpu::read_probe(src.data(), bytes, 1);
    best = std::max(best, static_cast<double>(bytes) / seconds_since(t0));
  }
  (void)sink;
  return best;
}

// Copy bandwidth, bytes per second (read + written), best of 5 copies of 256 MiB.
double copy_bandwidth(bool huge) {
  const int64_t bytes = int64_t{256} << 20;
  const BenchAllocator<unsigned char> alloc(huge);
  ByteBuffer src(static_cast<size_t>(bytes), 1, alloc), dst(static_cast<size_t>(bytes), 0, alloc);
  volatile unsigned char sink = cpu::copy_probe(src.data(), dst.data(), bytes, 1);  // fault in
  double best = 0.0;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = cpu::copy_probe(src.data(), dst.data(), bytes, 1);
    best = std::max(best, 2.0 * static_cast<double>(bytes) / seconds_since(t0));
  }
  (void)sink;
  return best;
}

int run(const Options& opt) {
  omp_set_num_threads(opt.threads);
  const int64_t L = opt.l_cache, hq = opt.heads, hkv = opt.kv_heads, d = opt.head_dim;
  const int64_t ps = opt.page_size, pages = (L + ps - 1) / ps;
  testing_inputs::TestRng rng(testing_inputs::seed_of("bench_decode"));
  const BenchAllocator<uint16_t> alloc(opt.huge_pages);
  auto draw = [&](int64_t n) {
    Bf16Buffer x(static_cast<size_t>(n), 0, alloc);
    for (uint16_t& e : x) e = float_to_bfloat16(static_cast<float>(rng.uniform(-1.0, 1.0)));
    return x;
  };
  const Bf16Buffer q = draw(hq * d), k = draw(hkv * L * d), v = draw(hkv * L * d);
  // The pools: logical page m of the element lives in pool page table[m] (a shuffle).
  std::vector<int64_t> table(static_cast<size_t>(pages));
  std::iota(table.begin(), table.end(), 0);
  for (int64_t i = pages - 1; i > 0; --i) std::swap(table[i], table[rng.below(i + 1)]);
  Bf16Buffer kp(static_cast<size_t>(pages * hkv * ps * d), 0, alloc), vp(kp.size(), 0, alloc);
  for (int64_t h = 0; h < hkv; ++h)
    for (int64_t t = 0; t < L; ++t) {
      const int64_t to = ((table[t / ps] * hkv + h) * ps + t % ps) * d, from = (h * L + t) * d;
      std::copy_n(k.begin() + from, d, kp.begin() + to);
      std::copy_n(v.begin() + from, d, vp.begin() + to);
    }
  KvCache contiguous;
  contiguous.cache_seqlens = {L};
  contiguous.seq_len_cache = L;
  KvCache paged;
  paged.cache_seqlens = {L};
  paged.block_table = table;
  paged.max_pages = pages;
  paged.page_size = ps;
  paged.num_pages = pages;

  PatternSpec spec;  // dense
  const Pattern pattern = materialize(spec, {1, hq, 1, pages * ps});
  const Pattern pattern_contiguous = materialize(spec, {1, hq, 1, L});
  auto inputs = [&](const KvCache& c, const uint16_t* kk, const uint16_t* vv, const Pattern& p) {
    cpu::DecodeInputsBf16 in;
    in.q = q.data();
    in.k = kk;
    in.v = vv;
    in.shape = AttentionShape{1, hq, 1, c.capacity(), d, d, hkv};
    in.cache = &c;
    in.pattern = &p;
    in.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
    return in;
  };
  const cpu::DecodeInputsBf16 in_c = inputs(contiguous, k.data(), v.data(), pattern_contiguous);
  const cpu::DecodeInputsBf16 in_p = inputs(paged, kp.data(), vp.data(), pattern);
  Tensor<float> o_c({1, hq, 1, d}), lse_c({1, hq, 1}), o_p({1, hq, 1, d}), lse_p({1, hq, 1});
  const cpu::Outputs out_c{o_c.ptr(), lse_c.ptr()}, out_p{o_p.ptr(), lse_p.ptr()};

  // Checked before anything is timed: the oracle on the same bf16 values, both layouts.
  {
    auto widen = [](const Bf16Buffer& x, const Shape& s) {
      Tensor<double> t(s);
      for (size_t i = 0; i < x.size(); ++i) t.data[i] = bfloat16_to_float(x[i]);
      return t;
    };
    const AttentionResult ref =
        a1_dense_masked(widen(q, {1, hq, 1, d}), widen(k, {1, hkv, L, d}),
                        widen(v, {1, hkv, L, d}), pattern_contiguous, nullptr);
    cpu::k09_decode_bf16(in_c, out_c);
    cpu::k09_decode_bf16(in_p, out_p);
    const CheckReport ro = check_close(o_c, ref.o, kTolBfloat16);
    const CheckReport rl = check_close(lse_c, ref.lse, kTolBfloat16);
    if (!ro.pass || !rl.pass || o_c.data != o_p.data || lse_c.data != lse_p.data) {
      std::fprintf(stderr, "bench_decode: the kernel fails its check (%s); nothing timed\n",
                   !ro.pass ? report_json(ro, "o", kTolBfloat16).c_str()
                            : !rl.pass ? report_json(rl, "lse", kTolBfloat16).c_str()
                                       : "paged and contiguous outputs differ");
      return 1;
    }
  }

  const double copy_before = copy_bandwidth(opt.huge_pages);
  const double read_before = read_bandwidth(opt.huge_pages);
  // Wall time per call (median of the repeats) and process CPU time per call (their mean).
  double cpu_c = 0.0, cpu_p = 0.0;
  auto time_one = [&](const cpu::DecodeInputsBf16& in, const cpu::Outputs& out, double& cpu_sum) {
    std::vector<double> t;
    const double c0 = api::process_cpu_seconds();
    for (int r = 0; r < opt.repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      cpu::k09_decode_bf16(in, out);
      t.push_back(seconds_since(t0));
    }
    cpu_sum += (api::process_cpu_seconds() - c0) / opt.repeats;
    return median(t);
  };
  std::vector<double> tc, tp, ratio;
  for (int round = 0; round <= opt.rounds; ++round) {
    double ignored = 0.0;
    const double c = time_one(in_c, out_c, round == 0 ? ignored : cpu_c);
    const double p = time_one(in_p, out_p, round == 0 ? ignored : cpu_p);
    if (round == 0) continue;  // warm-up
    tc.push_back(c);
    tp.push_back(p);
    ratio.push_back(p / c);
  }
  cpu_c /= opt.rounds;
  cpu_p /= opt.rounds;
  const double huge_mib = anon_huge_mib();  // while q, K, V are held
  const double copy_after = copy_bandwidth(opt.huge_pages);
  const double read_after = read_bandwidth(opt.huge_pages);
  const double copy = std::min(copy_before, copy_after);
  const double read = std::min(read_before, read_after);
  const double bytes = 2.0 * (2.0 * static_cast<double>(hkv * L * d)) +  // K and V, bf16
                       2.0 * static_cast<double>(hq * d) +                // q
                       4.0 * static_cast<double>(hq * (d + 1));           // o, lse (float32)
  const double c = median(tc), p = median(tp);
  std::printf("bench_decode: L_cache %lld, H_q %lld, H_kv %lld, head_dim %lld, L_q 1, bf16 K/V, "
              "dense, %d threads, %s build\n",
              static_cast<long long>(L), static_cast<long long>(hq), static_cast<long long>(hkv),
              static_cast<long long>(d), opt.threads, cpu::isa_name(cpu::active_isa()));
  if (opt.huge_pages)
    std::printf("pages             2 MiB asked for (--huge-pages); %.0f MiB of the process in "
                "huge pages while the cache was held\n", huge_mib);
  else
    std::printf("pages             4 KiB (no --huge-pages)\n");
  std::printf("copy probe        %8.2f GB/s (before %.2f, after %.2f; read + written)\n",
              copy / 1e9, copy_before / 1e9, copy_after / 1e9);
  std::printf("read probe        %8.2f GB/s (before %.2f, after %.2f; read only)\n", read / 1e9,
              read_before / 1e9, read_after / 1e9);
  std::printf("bytes per call    %8.2f MB\n", bytes / 1e6);
  std::printf("contiguous        %8.3f ms  %8.2f GB/s  %5.1f%% of copy  %5.1f%% of read  "
              "(CPU %.3f ms per call)\n",
              c * 1e3, bytes / c / 1e9, 100.0 * bytes / c / copy, 100.0 * bytes / c / read,
              cpu_c * 1e3);
  std::printf("paged (ps %lld)    %8.3f ms  %8.2f GB/s  %5.1f%% of copy  %5.1f%% of read  "
              "(CPU %.3f ms per call)\n",
              static_cast<long long>(ps), p * 1e3, bytes / p / 1e9, 100.0 * bytes / p / copy,
              100.0 * bytes / p / read, cpu_p * 1e3);
  std::printf("paged/contiguous  %8.3f  (rounds: lowest %.3f, highest %.3f, %d rounds)\n",
              median(ratio), *std::min_element(ratio.begin(), ratio.end()),
              *std::max_element(ratio.begin(), ratio.end()), opt.rounds);
  if (!opt.json.empty()) {
    auto layout = [&](double t, double cpu_s) {
      return nlohmann::json{{"ms", t * 1e3},
                            {"gbps", bytes / t / 1e9},
                            {"frac_copy", bytes / t / copy},
                            {"frac_read", bytes / t / read},
                            {"cpu_ms", cpu_s * 1e3}};
    };
    const nlohmann::json j{
        {"kernel", "cpu_k09_decode_bf16"},
        {"isa", cpu::isa_name(cpu::active_isa())},
        {"threads", opt.threads},
        {"l_cache", L},
        {"num_heads", hq},
        {"num_kv_heads", hkv},
        {"head_dim", d},
        {"page_size", ps},
        {"rounds", opt.rounds},
        {"repeats", opt.repeats},
        {"huge_pages", opt.huge_pages},
        {"anon_huge_mib", huge_mib},
        {"bytes_per_call", bytes},
        {"copy_gbps", copy / 1e9},
        {"copy_before_gbps", copy_before / 1e9},
        {"copy_after_gbps", copy_after / 1e9},
        {"read_gbps", read / 1e9},
        {"read_before_gbps", read_before / 1e9},
        {"read_after_gbps", read_after / 1e9},
        {"contiguous", layout(c, cpu_c)},
        {"paged", layout(p, cpu_p)},
        {"paged_over_contiguous",
         {{"median", median(ratio)},
          {"min", *std::min_element(ratio.begin(), ratio.end())},
          {"max", *std::max_element(ratio.begin(), ratio.end())}}}};
    try {
      write_text_atomic(opt.json, j.dump(2) + "\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_decode: cannot write --json = %s: %s\n", opt.json.c_str(), e.what());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace sparseattn::bench

int main(int argc, char** argv) {
  sparseattn::bench::Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](long long lo) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_decode: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      const long long x = std::atoll(argv[++i]);
      if (x < lo) {
        std::fprintf(stderr, "bench_decode: %s must be >= %lld\n", a.c_str(), lo);
        std::exit(2);
      }
      return x;
    };
    if (a == "--json") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_decode: --json needs a value\n");
        return 2;
      }
      opt.json = argv[++i];
      continue;
    }
    if (a == "--huge-pages") {
      opt.huge_pages = true;
      continue;
    }
    if (a == "--l-cache") opt.l_cache = value(1);
    else if (a == "--heads") opt.heads = value(1);
    else if (a == "--kv-heads") opt.kv_heads = value(1);
    else if (a == "--head-dim") opt.head_dim = value(1);
    else if (a == "--page-size") opt.page_size = value(1);
    else if (a == "--threads") opt.threads = static_cast<int>(value(1));
    else if (a == "--rounds") opt.rounds = static_cast<int>(value(1));
    else if (a == "--repeats") opt.repeats = static_cast<int>(value(1));
    else {
      std::fprintf(stderr, "bench_decode: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (opt.heads % opt.kv_heads != 0) {
    std::fprintf(stderr, "bench_decode: --heads must be a multiple of --kv-heads\n");
    return 2;
  }
  return sparseattn::bench::run(opt);
}
