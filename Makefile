# sparseattn — the entry point. CMake does the building underneath (build/).
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
NVCC    := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CMAKE_FLAGS ?=
ifneq ($(NVCC),)
CMAKE_FLAGS += -DCMAKE_CUDA_COMPILER=$(NVCC)
endif
# ccache (installed by scripts/setup.sh) lets every build tree of one machine -- the main
# one, the sanitizer one, a second checkout -- reuse objects compiled once.
CCACHE  := $(shell command -v ccache 2>/dev/null)
# Paths under the checkout are hashed relative to the build folder, so that trees at the
# same depth (build/, build-sanitize/, the wheel's build-wheel/, a second worktree) share hits.
export CCACHE_BASEDIR ?= $(CURDIR)
CCACHE_FLAGS :=
ifneq ($(CCACHE),)
CCACHE_FLAGS := -DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_C_COMPILER_LAUNCHER=$(CCACHE)
CMAKE_FLAGS += $(CCACHE_FLAGS)
ifneq ($(NVCC),)
CMAKE_FLAGS += -DCMAKE_CUDA_COMPILER_LAUNCHER=$(CCACHE)
endif
endif

.PHONY: all setup configure build python pip-check notebooks test exercises lint sanitize fuzz demo demo-synthetic help bench bench-quick bench-modern bench-varlen peers-bench plots plots-graph figures figures-teaching gpu-deps gpu-check clean

all: build

setup:
	@scripts/setup.sh

# Configuring runs in a second make, after setup: that make reads this file again and so
# finds the ccache that setup may just have installed (a fresh machine's first build is
# the one that most needs it, since build-sanitize/ and the wheel of pip-check reuse it).
$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory configure-main

.PHONY: configure-main configure-sanitize configure-fuzz
configure-main:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: setup configure
	cmake --build $(BUILD) -j $(JOBS)

# The Python module, built in the main tree and copied into python/sparseattn/, so that
# `PYTHONPATH=python python3 -c "import sparseattn"` works in place (docs/python.md).
# Users install the package with `pip install .` instead.
python: setup configure
	cmake --build $(BUILD) -j $(JOBS) --target _sparseattn

# What a user does: `pip install .` into a new virtual environment, import, and run
# docs/python.md's examples against the installed package (scripts/pip_check.sh).
pip-check: setup
	@scripts/pip_check.sh

# Every notebook of notebooks/ executed end to end in a Jupyter kernel against the in-place
# module (scripts/run_notebooks.py; executed copies with their outputs in $(BUILD)/notebooks/;
# notebooks/README.md lists them). `make test` runs them too, as its third stage.
notebooks: python
	@py=$$(head -1 $(BUILD)/python_executable.txt 2>/dev/null || echo python3); \
	  "$$py" scripts/run_notebooks.py --out $(BUILD)/notebooks

# CTest, then the Python package's pytest suite (python/tests), then the notebooks (each one
# test), then one line counting passed, failed and skipped apart over all three (a skip is
# not a pass).
test: build
	@scripts/run_tests.sh $(BUILD) $(JOBS)

# Grades exercises/ex*.py against the oracle (exercises/grader, pytest); a teacher grades a
# folder of hand-ins kept elsewhere with `make exercises SOLUTIONS=DIR` (the same as
# `pytest exercises/grader --solutions DIR`). The grader's own tests run in `make test`.
PYTHON_EXE = $(shell head -1 $(BUILD)/python_executable.txt 2>/dev/null || echo python3)
exercises: python
	PYTHONPATH=python$(if $(PYTHONPATH),:$(PYTHONPATH)) $(PYTHON_EXE) -m pytest -q -p no:cacheprovider \
	  exercises/grader $(if $(SOLUTIONS),--solutions $(SOLUTIONS))

# Every reference resolves inside the repository (scripts/check_refs.py: no outside
# document, no issue number, no contract section or path that does not exist), no
# lower layer includes or links a higher one (scripts/check_layers.py), and every kernel
# header holds one '// Measured:' line naming its docs page and no tuning log
# (scripts/check_headers.py). Python 3 only, nothing built; each checker first proves on
# its own examples that it can fail.
lint:
	python3 scripts/check_refs.py --self-test
	python3 scripts/check_refs.py
	python3 scripts/check_layers.py --self-test
	python3 scripts/check_layers.py
	python3 scripts/check_headers.py --self-test
	python3 scripts/check_headers.py
	python3 scripts/check_fuzz_sources.py --self-test
	python3 scripts/check_fuzz_sources.py

# `make sanitize` (docs/robustness.md): the CPU build (CUDA off) in its own tree with
# AddressSanitizer + UndefinedBehaviorSanitizer (-DSPARSEATTN_SANITIZE=ON), then the whole
# CTest suite under it -- the CLI tests run the sanitized binary. Any finding aborts its
# process (halt_on_error, -fno-sanitize-recover=all), so it fails its test; leaks are
# reported by LeakSanitizer at exit.
SANITIZE_BUILD ?= build-sanitize
SANITIZE_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:print_stacktrace=1:strict_string_checks=1:check_initialization_order=1 \
                UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

$(SANITIZE_BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory configure-sanitize

configure-sanitize:
	cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DSPARSEATTN_CUDA=OFF \
	  -DSPARSEATTN_SANITIZE=ON -DSPARSEATTN_BUILD_BENCH=OFF -DSPARSEATTN_PYTHON=OFF $(CCACHE_FLAGS)

# RealJob (the main job over the stored 4096-token data, every kernel) is left out here:
# its code paths are the ones the small tests sanitize, at the suite's largest sizes (its
# five tests took 73 s of CPU unsanitized, the most of any group); `make test` runs it.
SANITIZE_CTEST_ARGS ?= -E ^RealJob\.
sanitize: setup $(SANITIZE_BUILD)/CMakeCache.txt
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	@$(SANITIZE_ENV) CTEST_ARGS='$(SANITIZE_CTEST_ARGS)' scripts/run_tests.sh $(SANITIZE_BUILD) $(JOBS)

# `make fuzz` (docs/robustness.md): the libFuzzer targets of tests/fuzz/ (clang, ASan +
# UBSan) in build-fuzz/, each run for FUZZ_SECONDS from its seed corpus
# (tests/fuzz/corpus/<target>/). CI runs `make fuzz FUZZ_SECONDS=10`.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
CLANGXX      ?= clang++

$(FUZZ_BUILD)/CMakeCache.txt:
	@scripts/setup.sh fuzz
	@$(MAKE) --no-print-directory configure-fuzz

configure-fuzz:
	cmake -S tests/fuzz -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=$(CLANGXX) $(CCACHE_FLAGS)

fuzz: $(FUZZ_BUILD)/CMakeCache.txt
	@scripts/setup.sh fuzz
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@scripts/run_fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The main job needs only the CLI binary; building just it keeps a fresh `make demo` short.
# `make demo` runs it on the stored real data (data/: all-MiniLM-L6-v2 on GPL-3, 4096
# tokens; report in $(BUILD)/real-data-report/, docs/real-data.md explains it);
# `make demo-synthetic` runs the synthetic one (random q/k/v).
demo: setup configure
	cmake --build $(BUILD) -j $(JOBS) --target sparseattn
	$(BUILD)/sparseattn demo-real --data data --out $(BUILD)/real-data-report

demo-synthetic: setup configure
	cmake --build $(BUILD) -j $(JOBS) --target sparseattn
	$(BUILD)/sparseattn demo

# Benchmarks (bench/bench_cpu.cpp): JSON into $(BUILD)/bench/; `make plots` draws docs/figures/.
BENCH_JSON ?= $(BUILD)/bench/bench_cpu.json
# Idle OpenMP threads sleep instead of spinning: on a machine shared with other jobs a
# spinning thread burns the core its descheduled partner needs (measured: k01 dense at
# seq_len 2048 went from 26% to 46% of the FMA peak). Override: make bench OMP_WAIT_POLICY=active
export OMP_WAIT_POLICY ?= passive

# Both end with the targets report (bench/targets.h): $(BUILD)/bench_targets reads bench_cpu's
# JSON (and $(BUILD)/peers/*.json of `make peers-bench` if present) and writes targets.md and
# targets.json next to it -- even when a benchmark failed validation (bench_cpu exits 1; the
# report says "not measured" for that point, and make still fails with bench_cpu's status).
# `make bench` also runs, at the sizes docs/benchmarks.md states, bench_modern (GQA g = 8
# against MHA, n 4096, head_dim 64), bench_decode (k09 bf16 against the copy probe, L_cache
# 32768, H_q 32, H_kv 8, head_dim 128) and bench_selected (k08 on DSA's shape, n 16384, K
# 2048, 8 heads, head_dim 64), their --json into $(BUILD)/bench/ (removed first: a program that
# fails leaves no stale file), which the report reads for the GQA, decode and selected rows
# (a few minutes more). `make bench-quick` does not run them (CI): its report, in
# $(BUILD)/bench/quick/, says "not measured" for those rows with the command that measures them.
BENCH_DIR = $(dir $(BENCH_JSON))
bench: build
	@mkdir -p $(BUILD)/bench
	@rm -f $(BENCH_DIR)bench_modern.json $(BENCH_DIR)bench_decode.json $(BENCH_DIR)bench_selected.json
	@rc=0; $(BUILD)/bench_cpu --benchmark_out=$(BENCH_JSON) --benchmark_out_format=json || rc=$$?; \
	  $(BUILD)/bench_backward --benchmark_out=$(BUILD)/bench/bench_backward.json --benchmark_out_format=json || rc=$$?; \
	  $(BUILD)/bench_modern --n 4096 --head-dim 64 --heads 8 --rounds 11 --repeats 3 \
	    --json $(BENCH_DIR)bench_modern.json || rc=$$?; \
	  $(BUILD)/bench_decode --rounds 11 --repeats 5 --json $(BENCH_DIR)bench_decode.json || rc=$$?; \
	  $(BUILD)/bench_selected --n 16384 --k 2048 --heads 8 --head-dim 64 --repeats 2 \
	    --json $(BENCH_DIR)bench_selected.json || rc=$$?; \
	  $(BUILD)/bench_targets $(BENCH_JSON) $(BENCH_DIR) --peers $(BUILD)/peers || rc=$$?; \
	  exit $$rc

bench-quick: build
	@mkdir -p $(BUILD)/bench/quick
	@rc=0; $(BUILD)/bench_cpu --quick --benchmark_out=$(BUILD)/bench/bench_cpu_quick.json --benchmark_out_format=json || rc=$$?; \
	  $(BUILD)/bench_targets $(BUILD)/bench/bench_cpu_quick.json $(BUILD)/bench/quick --peers $(BUILD)/peers || rc=$$?; \
	  exit $$rc

# Grouped kv heads, softcap, sinks and ALiBi on the CPU kernels: ratios within one interleaved
# run at n 4096, head_dim 64, dense and window (bench/bench_modern.cpp; docs/benchmarks.md,
# "Modern attention: the cost of GQA, softcap, sinks and ALiBi"). JSON into $(BUILD)/bench/.
bench-modern:
	cmake --build $(BUILD) --target bench_modern
	@mkdir -p $(BUILD)/bench
	$(BUILD)/bench_modern --json $(BUILD)/bench/bench_modern.json

# `make bench-varlen` (docs/benchmarks.md, "Packed variable-length batches"): a packed batch
# through the walk against the same sequences one by one and a block-diagonal mask.
bench-varlen:
	cmake --build $(BUILD) --target bench_varlen
	@mkdir -p $(BUILD)/bench
	$(BUILD)/bench_varlen --json $(BUILD)/bench/bench_varlen.json

# sparseattn against PyTorch and HuggingFace (tools/peers_bench.py; docs/benchmarks.md,
# "Peers"): installs torch, transformers and numpy into the throwaway virtual environment
# PEERS_VENV (tools/peer_venv.py; about 5.6 GB, a second run only checks it), then times
# against the matching kernels on identical inputs, kernel time only, interleaved rounds:
# SDPA dense and with a boolean window mask, HF Longformer and HF BigBird; FlexAttention on
# the CPU (torch.compile, a BlockMask: causal, window, window + globals, BigBird, softcap
# and sinks by score_mod; compile time reported apart); SDPA enable_gqa for grouped kv
# heads and one-query decode against a long cache. Every case's outputs agree before it is
# timed. JSON and a Markdown table into $(BUILD)/peers/. Not in CI, not in `make test`.
#   make peers-bench PEERS_FLAGS="--rounds 11 --threads 2"
PEERS_VENV  ?= $(BUILD)/peers-venv
PEERS_FLAGS ?=
peers-bench: python
	$(PYTHON_EXE) tools/peers_bench.py --venv $(PEERS_VENV) --out $(BUILD)/peers $(PEERS_FLAGS)

plots: build plots-graph
	$(BUILD)/plot_bench $(if $(wildcard $(BENCH_JSON)),$(BENCH_JSON),docs/figures/bench_cpu.json) docs/figures
	$(BUILD)/plot_backward $(if $(wildcard $(BUILD)/bench/bench_backward.json),$(BUILD)/bench/bench_backward.json,docs/figures/bench_backward.json) docs/figures

# Your own pattern (docs/benchmarks.md, "Your own pattern: sparseattn sweep"): every exact
# kernel serving PATTERN_FILE, validated then timed over SEQ_LEN, into $(BUILD)/sweep/.
#   make sweep PATTERN_FILE=docs/examples/pattern_mixed_heads.json SEQ_LEN=1024:8192
.PHONY: sweep
PATTERN_FILE ?= docs/examples/pattern_mixed_heads.json
SEQ_LEN      ?= 1024:8192
SWEEP_FLAGS  ?= --target cpu --max-seconds 60
sweep: setup configure
	cmake --build $(BUILD) -j $(JOBS) --target sparseattn
	$(BUILD)/sparseattn sweep --pattern-file $(PATTERN_FILE) --seq-len $(SEQ_LEN) $(SWEEP_FLAGS) --out $(BUILD)/sweep

# Every figure in docs/figures/, regenerated by one command (about 20 minutes on an idle
# 2-core machine; do not run it on a shared one and quote the numbers): the full CPU
# benchmark with its JSON kept next to the figures, its figures and targets table, the
# sweep example of docs/benchmarks.md, and the teaching, graph and real-data figures
# (figures-teaching, which alone needs no benchmark run).
figures: build figures-teaching
	$(BUILD)/bench_cpu --benchmark_out=docs/figures/bench_cpu.json --benchmark_out_format=json
	$(BUILD)/plot_bench docs/figures/bench_cpu.json docs/figures
	$(BUILD)/sparseattn sweep --pattern-file docs/examples/pattern_mixed_heads.json --seq-len 1024:8192 \
	  --impl cpu_k06_generic_tiles,a2_sparse_rows,a1_dense_masked --repeats 3 --max-seconds 60 --fit-from 2048 \
	  --quiet --out docs/figures/sweep_mixed_heads

# Graph figures (graph/plots/plot_reach.cpp): docs/figures/reach_*.{svg,png}, computed by the graph
# module itself; the numbers behind them are printed (docs/information-flow.md).
plots-graph: setup configure
	cmake --build $(BUILD) -j $(JOBS) --target plot_reach
	@mkdir -p docs/figures
	$(BUILD)/plot_reach docs/figures

# Teaching figures (tools/plots/plot_teaching.cpp): every pattern's mask, the BigBird
# gather and the online softmax as PNG, from the pattern module and the reference ladder;
# the reach curves (plots-graph); the real-data figures of docs/real-data.md (the report of
# `demo-real` on the stored data, copied). docs/figures/README.md lists which target draws
# which figure. Needs no benchmark run (about 2 minutes on 2 shared cores, most of it demo-real).
REAL_FIGURES = real_heatmap.png real_mass_kept.png real_error_vs_time.png
figures-teaching: setup configure plots-graph
	cmake --build $(BUILD) -j $(JOBS) --target plot_teaching sparseattn
	$(BUILD)/plot_teaching docs/figures
	$(BUILD)/sparseattn demo-real --data data --out $(BUILD)/real-data-report > /dev/null
	cp $(addprefix $(BUILD)/real-data-report/,$(REAL_FIGURES)) docs/figures/

# The GPU run (docs/cuda.md): `make gpu-deps` here (Debian, apt) packs the C++ libraries a
# bare GPU machine lacks into .gpu-deps/ (sources and headers, ~2 MB); there, carrying
# .gpu-deps, `make gpu-check` (or `bash scripts/gpu_check.sh` where make is absent) builds,
# runs the CUDA tests one kernel family per process, memcheck, the GPU benchmarks and the
# PyTorch baselines within one deadline (8 min; --deadline), results into $OUT or gpu-results/.
gpu-deps:
	@scripts/gpu_deps.sh

gpu-check:
	@bash scripts/gpu_check.sh

help:
	@scripts/help.sh

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
