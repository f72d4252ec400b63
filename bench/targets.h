// The CPU performance targets report: reads bench_cpu's JSON (Google Benchmark's format,
// counters as bench/bench_cpu.cpp writes them) and gives one row per target — what,
// threshold, measured value(s), met or not, and when not met a roofline-style note of what
// bounds it (FMA pipes, exp, memory). `bench_targets` (bench/bench_targets.cpp) writes it
// as targets.md and targets.json; `make bench` and `make bench-quick` run it last.
//
// The bound of the note, per score (one allowed query-key pair), from the engine every
// optimized CPU kernel drives (optimized/cpu/flash_tile.h, optimized/cpu/simd.h):
//   - QKᵀ and PV: head_dim + head_dim_v multiply-adds, i.e. 2d lane-FMAs — the FLOPs the
//     benchmark counts (4d per score) and the only work the FMA peak probe measures;
//   - the online softmax (FlashTile::row_max / rescale_factors / exponentiate), per vector of kLanes scores: 1 max,
//     1 subtract of the row max, the exp (vexp: 2 clamps, 9 FMAs — rounding, the two-part
//     ln 2 reduction, 5 polynomial steps and the last p·r² + r —, 2 multiplies, 2 adds,
//     1 float→int convert, 1 integer add, 1 shift, 1 compare, 1 blend: 20 operations), and
//     1 add into the row sum: kSoftmaxOpsAll = 23 vector operations, of which
//     kSoftmaxOpsFmaMul = 11 (9 FMAs + 2 multiplies) need the FMA/multiply pipes. These are
//     the 256-bit build's counts; the 512-bit build's exp takes 15 instead of 20
//     (vrndscaleps, vscalefps), 18 in all: inside the same range, so one range serves both.
// Both counts are per kLanes scores, as the 2d FMAs are per kLanes scores of a vector, so
// the fraction of peak an FMA-pipe-bound tile can reach is
//     2d / (2d + c),   c = 23 when every softmax operation competes for the FMA pipes,
//                      c = 11 when the adds, compares and integer operations go elsewhere
// (head_dim 64: 85% … 92%; 32: 74% … 85%; 128: 92% … 96%). Not counted: the rescale of
// O when a row's max moves (head_dim_v / 64 multiplies per vector of scores, rare after the
// first chunks), the per-chunk copy into micro-kernel blocks (loads and stores, 2d floats
// per key per 64-row tile) and the panel packing (O(n·d) per head): those are in the
// memory part of the note, as bytes moved per counted FLOP.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sparseattn::bench {

inline constexpr int kSoftmaxOpsAll = 23;     // vector operations per kLanes scores
inline constexpr int kSoftmaxOpsFmaMul = 11;  // of them, on the FMA/multiply pipes
inline constexpr int kExpOps = 20;            // of the 23, the exp (vexp)
inline constexpr int64_t kTileRows = 64;      // query rows per tile (flash_tile.h kBr)

// FMA-pipe bound: the fraction of the FMA peak a tile reaches when the 2d FMAs per score
// and `softmax_ops` other vector operations per kLanes scores share the FMA pipes.
double fma_pipe_bound(int64_t head_dim, int softmax_ops);

// One measured point of bench_cpu's JSON ("kernel/family/D<head_dim>/seq_len:<n>/...").
struct BenchPoint {
  std::string kernel, family;
  int64_t head_dim = 0, seq_len = 0;
  double real_ms = 0.0;           // wall time per call
  double flops = 0.0, dense_flops = 0.0;
  double gflops = 0.0, cpu_gflops = 0.0;
  double frac_peak = 0.0, cpu_frac_peak = 0.0;
  double peak_gflops = 0.0, peak_cpu_gflops = 0.0;  // the probe next to the point
  std::string error;              // non-empty: the benchmark reported this instead of a time
};
// Every kernel point of the JSON's "benchmarks" (iteration runs; BigO/RMS rows and the
// peak_fma row are skipped). Repetitions of one point are reduced to the one with the
// median cpu_frac_peak. Throws std::runtime_error when "benchmarks" is missing.
std::vector<BenchPoint> parse_bench_points(const nlohmann::json& bench);

// The float32 engine's own ceiling, measured by bench_cpu's `engine_parts/D<head_dim>`
// (optimized/cpu/engine_probe.h): its micro-kernels and a whole tile step, one thread, hot
// in cache, as fractions of the FMA probe per CPU-second. A kernel on that engine cannot
// beat `step` (times the share of its computed scores that are counted).
struct EngineCeiling {
  int64_t head_dim = 0;
  double qk = 0.0, pv = 0.0, step = 0.0;  // fractions of peak per CPU-second
};
// Every engine_parts row of the JSON, by head_dim (absent: none measured).
std::map<int64_t, EngineCeiling> parse_engine_ceilings(const nlohmann::json& bench);

// A file of `make peers-bench` (build/peers/*.json) as read: its path and contents.
struct PeerFile {
  std::string path;
  nlohmann::json json;  // null when the file did not parse
};

// An optional input of its own program (bench_modern, bench_decode, bench_selected --json):
// absent, present and parsed, or present and not JSON.
struct InputFile {
  std::string path;       // as given to bench_targets; "" = the default build/bench/ name
  bool present = false;   // the file exists
  nlohmann::json json;    // null when present but not JSON
};

// The three other programs' files. Each gives its rows; an absent one "not measured" with the
// command that writes it, one that is not (their) JSON "see file", pointed at.
struct ExtraFiles {
  InputFile modern;    // bench/bench_modern.cpp: GQA g = 8 against MHA, <= 1.0x its time
  InputFile decode;    // bench/bench_decode.cpp: k09 bf16, >= 60% of the copy probe
  InputFile selected;  // bench/bench_selected.cpp: k08, >= 50% of the FMA peak per CPU-second
};

// One row of the report. status: "met", "not met", "not measured", "not built",
// "not applicable" (the target's condition does not hold on this CPU), "see file",
// "reported" (a peers' ratio the targets set no threshold for).
struct TargetRow {
  std::string id;          // stable key, e.g. "dense_d64"
  std::string what;        // the target in words, with its measurement point
  std::string threshold;   // e.g. ">= 85% of peak per CPU-second"
  std::string measured;    // the value(s), in words
  std::string status;
  std::string bound;       // roofline-style note; empty when met
  nlohmann::json values;   // the numbers behind `measured`
};

struct TargetsReport {
  nlohmann::json context;  // date, mode, ISA, start-up and interleaved peaks, load
  std::vector<TargetRow> rows;
};

// Evaluates every target on bench_cpu's JSON (`bench`), the other programs' files (`extra`)
// and the peers' files.
TargetsReport evaluate_targets(const nlohmann::json& bench, const std::vector<PeerFile>& peers,
                               const ExtraFiles& extra = {});

std::string to_markdown(const TargetsReport& report);
nlohmann::json to_json(const TargetsReport& report);

}  // namespace sparseattn::bench
