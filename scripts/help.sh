#!/usr/bin/env bash
# `make help`: the targets, and which tools this machine has (✓) or lacks (✗).
set -u
have() { if eval "$2" >/dev/null 2>&1; then printf '  ✓ %-12s %s\n' "$1" "$3"; else printf '  ✗ %-12s %s\n' "$1" "$4"; fi; }
pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

cat <<'TXT'
sparseattn — targets
  make              build build/sparseattn, the libraries, tests and benchmarks
  make demo         the main job on the stored real data (data/), report in build/real-data-report/
  make demo-synthetic  the same ladder on seeded random q/k/v (a table)
  make test         build and run the Google Test suite, pytest and the notebooks (installs what is missing)
  make sanitize     the CPU build and the whole suite under ASan + UBSan (build-sanitize/)
  make fuzz         libFuzzer targets (clang) for FUZZ_SECONDS each, default 60 (build-fuzz/)
  make bench        the full Google Benchmark suite (JSON into build/bench/), then the targets
                    report build/bench/targets.{md,json} (each target: met, or what bounds it)
  make bench-quick  small sizes only (what CI runs); report in build/bench/quick/
  make bench-modern GQA, softcap, sinks and ALiBi vs plain on the CPU kernels: ratios of one interleaved run
  make peers-bench  sparseattn vs PyTorch SDPA and HF Longformer/BigBird, kernel time (installs torch into build/peers-venv; not CI)
  make notebooks    execute every notebook of notebooks/ (also part of make test)
  make exercises    grade exercises/ex*.py against the oracle (SOLUTIONS=DIR: a folder of hand-ins)
  make figures-teaching  the teaching figures (pattern masks, BigBird gather, online softmax) into docs/figures/
  make lint         references resolve inside the repository; includes go down the layers
  make plots        figures into docs/figures/ from benchmark output
  make sweep        time every kernel on your pattern: PATTERN_FILE=p.json SEQ_LEN=1024:65536
  make figures      regenerate every figure in docs/figures/ (full benchmark: ~20 min, idle machine)
  make gpu-check    on a machine with an NVIDIA GPU: CUDA tests, memcheck, GPU benchmarks
  make help         this page
  make clean        remove build/, build-sanitize/ and build-fuzz/

This machine:
TXT
have "g++"        "command -v g++"   "$(g++ --version 2>/dev/null | head -1)" "missing: apt-get install build-essential"
have "cmake"      "command -v cmake" "$(cmake --version 2>/dev/null | head -1)" "missing: apt-get install cmake"
have "OpenMP"     "echo 'int main(){}' | g++ -fopenmp -x c++ - -o /dev/null" "g++ -fopenmp works" "missing: g++ without libgomp"
have "gtest"      "pkg libgtest-dev" "libgtest-dev" "missing (make test installs libgtest-dev)"
have "benchmark"  "pkg libbenchmark-dev" "libbenchmark-dev" "missing (make installs libbenchmark-dev)"
have "CLI11"      "pkg libcli11-dev" "libcli11-dev" "missing (make installs libcli11-dev)"
have "Eigen"      "pkg libeigen3-dev" "libeigen3-dev" "missing (make installs libeigen3-dev)"
have "Spectra"    "pkg libspectra-dev" "libspectra-dev" "missing (make installs libspectra-dev)"
have "clang"      "command -v clang++ && pkg libclang-rt-dev" "$(clang++ --version 2>/dev/null | head -1): make fuzz works" "missing (make fuzz installs clang libclang-rt-dev)"
have "gnuplot"    "command -v gnuplot" "$(gnuplot --version 2>/dev/null)" "missing (make installs gnuplot-nox): no plots"
nvcc_path=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
have "nvcc"       "test -n '$nvcc_path'" "$nvcc_path: CUDA kernels are compiled" "missing: CUDA kernels are not built; CPU parts build and test"
have "GPU"        "command -v nvidia-smi && nvidia-smi -L" "$(nvidia-smi -L 2>/dev/null | head -1)" "none: CUDA tests skip (reported as skipped, not passed)"
