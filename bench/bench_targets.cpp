// bench_targets: the CPU performance targets report (bench/targets.h) from one bench_cpu run.
//
//   build/bench_targets BENCH_JSON OUT_DIR [--peers DIR] [--modern FILE] [--decode FILE]
//                       [--selected FILE]
//
// Reads BENCH_JSON (bench_cpu --benchmark_out=... --benchmark_out_format=json), the --json
// files of bench_modern, bench_decode and bench_selected (default: bench_modern.json,
// bench_decode.json and bench_selected.json in OUT_DIR — `make bench`'s OUT_DIR is BENCH_JSON's
// folder, `make bench-quick`'s its own, so a quick report never shows a full run's figures;
// each optional: absent, its rows say "not measured" with the command that writes it; not
// JSON, they point at it) and every DIR/*.json of `make peers-bench` (default:
// OUT_DIR/../peers), prints the table and writes
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
using sparseattn::bench::InputFile;
using sparseattn::bench::PeerFile;

namespace {

// An optional input: absent, or read (json null when it is not JSON).
InputFile read_optional(const std::string& path) {
  InputFile f;
  f.path = path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return f;
  f.present = true;
  std::ifstream in(path);
  f.json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (f.json.is_discarded()) f.json = nullptr;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string peers_dir, modern, decode, selected;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string* opt = args[i] == "--peers"      ? &peers_dir
                       : args[i] == "--modern"   ? &modern
                       : args[i] == "--decode"   ? &decode
                       : args[i] == "--selected" ? &selected
                                                 : nullptr;
    if (!opt) {
      positional.push_back(args[i]);
      continue;
    }
    if (i + 1 >= args.size() || args[i + 1].empty()) {
      std::cerr << "bench_targets: error: " << args[i] << " needs a path\n";
      return 2;
    }
    *opt = args[++i];
  }
  if (positional.size() != 2) {
    std::cerr << "usage: bench_targets BENCH_JSON OUT_DIR [--peers DIR] [--modern FILE] "
                 "[--decode FILE] [--selected FILE]\n";
    return 2;
  }
  const std::string in = positional[0], out = positional[1];
  if (peers_dir.empty()) peers_dir = (fs::path(out).parent_path() / "peers").string();
  auto beside = [&](const std::string& given, const char* name) {
    return given.empty() ? (fs::path(out) / name).string() : given;
  };
  const sparseattn::bench::ExtraFiles extra{
      read_optional(beside(modern, "bench_modern.json")),
      read_optional(beside(decode, "bench_decode.json")),
      read_optional(beside(selected, "bench_selected.json"))};
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
    const auto report = sparseattn::bench::evaluate_targets(bench, peers, extra);
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
