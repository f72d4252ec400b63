// bench_targets: the CPU performance targets report (bench/targets.h) from one bench_cpu run.
//
//   build/bench_targets BENCH_JSON OUT_DIR [--peers DIR]
//
// Reads BENCH_JSON (bench_cpu --benchmark_out=... --benchmark_out_format=json) and every
// DIR/*.json of `make peers-bench` (default: OUT_DIR/../peers), prints the table and writes
// OUT_DIR/targets.md and OUT_DIR/targets.json, each to a temporary name renamed into place.
// Exit status: 0 the report was written (met or not: the report says which); 2 a bad
// argument or an unreadable benchmark file.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench/targets.h"
#include "core/npy.h"

namespace fs = std::filesystem;
using sparseattn::bench::PeerFile;

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string peers_dir;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--peers" && i + 1 < args.size()) {
      peers_dir = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      break;
    }
  if (args.size() != 2) {
    std::cerr << "usage: bench_targets BENCH_JSON OUT_DIR [--peers DIR]\n";
    return 2;
  }
  const std::string in = args[0], out = args[1];
  if (peers_dir.empty()) peers_dir = (fs::path(out).parent_path() / "peers").string();
  try {
    std::ifstream f(in);
    if (!f) {
      std::cerr << "bench_targets: error: cannot read BENCH_JSON = " << in << "\n";
      return 2;
    }
    const nlohmann::json bench = nlohmann::json::parse(f);
    std::vector<PeerFile> peers;
    std::error_code ec;
    if (fs::is_directory(peers_dir, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(peers_dir, ec))
        if (e.path().extension() == ".json") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const fs::path& p : files) {
        std::ifstream pf(p);
        peers.push_back({p.string(), nlohmann::json::parse(pf, nullptr, /*allow_exceptions=*/false)});
        if (peers.back().json.is_discarded()) peers.back().json = nullptr;
      }
    }
    const auto report = sparseattn::bench::evaluate_targets(bench, peers);
    const std::string md = sparseattn::bench::to_markdown(report);
    fs::create_directories(out);
    sparseattn::write_text_atomic((fs::path(out) / "targets.md").string(), md);
    sparseattn::write_text_atomic((fs::path(out) / "targets.json").string(),
                                  sparseattn::bench::to_json(report).dump(2) + "\n");
    std::cout << md << "\nwrote " << out << "/targets.md and " << out << "/targets.json\n";
  } catch (const std::exception& e) {
    std::cerr << "bench_targets: error: " << in << ": " << e.what() << "\n";
    return 2;
  }
  return 0;
}
