#!/usr/bin/env bash
# Installs whatever this project needs that the machine lacks (Debian packages), so that
# `make demo` and `make test` work on a fresh Debian machine. Installs nothing that is
# already present; prints what it installs. Needs root (or sudo) only when something
# is missing.
#
#   scripts/setup.sh         what `make`, `make test` and `make sanitize` need (GCC's
#                            AddressSanitizer/UBSan runtimes come with build-essential;
#                            qemu-user runs the CPU tests on an emulated AVX2-only CPU,
#                            binutils' objdump checks where AVX-512 instructions are)
#   scripts/setup.sh fuzz    that, plus clang and its compiler-rt (libFuzzer, ASan, UBSan
#                            for clang) for `make fuzz`
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libeigen3-dev libspectra-dev
  libgnuplot-iostream-dev gnuplot-nox libboost-iostreams-dev
  libssl-dev libboost-filesystem-dev
  python3 python3-pip python3-dev python3-venv
  qemu-user binutils
)
if [ "${1:-}" = "fuzz" ]; then
  # Debian's default clang and the matching compiler-rt (libclang_rt.fuzzer and the
  # sanitizer runtimes live in libclang-rt-<version>-dev; libclang-rt-dev follows clang).
  packages+=(clang libclang-rt-dev)
fi

# The Python package (python/, `make python`, pytest in `make test`) builds with pybind11
# and runs with numpy; its tests need pytest. pip first (into the python3 on PATH); where
# that python3 is Debian's own and refuses pip (PEP 668), Debian's packages instead.
python_missing=()
for m in numpy pytest pybind11; do
  python3 -c "import $m" 2>/dev/null || python_missing+=("$m")
done
if [ ${#python_missing[@]} -gt 0 ]; then
  echo "setup: installing missing Python packages: ${python_missing[*]} (python3 -m pip)"
  if ! python3 -m pip install -q "${python_missing[@]}"; then
    echo "setup: pip refused; using Debian's python3-numpy python3-pytest pybind11-dev"
    packages+=(python3-numpy python3-pytest pybind11-dev)
  fi
fi

# The notebooks (notebooks/, `make notebooks`, the third stage of `make test`) run in a
# Jupyter kernel: jupytext reads their percent-format .py files, nbclient and ipykernel
# execute them, matplotlib draws. From PyPI (Debian has no jupytext); where pip is refused,
# the build and the other tests still work and the notebook stage says what is missing.
notebook_missing=()
for m in jupytext nbclient ipykernel matplotlib; do
  python3 -c "import $m" 2>/dev/null || notebook_missing+=("$m")
done
if [ ${#notebook_missing[@]} -gt 0 ]; then
  echo "setup: installing missing Python packages for the notebooks: ${notebook_missing[*]} (python3 -m pip)"
  python3 -m pip install -q "${notebook_missing[@]}" ||
    echo "setup: pip refused; the notebooks will not run until ${notebook_missing[*]} are installed (a virtual environment: docs/python.md)" >&2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing missing Debian packages: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "setup: not root and no sudo; run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
