#!/usr/bin/env bash
# Downloads (never installs) the Debian packages this project's CMake configure needs into
# .gpu-deps/, for a GPU machine that has nvcc and PyTorch but no network and none of them.
# scripts/gpu_check.sh unpacks them there (dpkg -x into /tmp, never into /) only if a
# plain configure fails. Run here, where apt works; then carry .gpu-deps with the call:
#   scripts/gpu_deps.sh && echo /.gpu-deps/ >> .git/info/exclude
#   device run: command "make gpu-check", carry [".gpu-deps"]
# Checked on Debian 12 (2026-11-29): these 23 packages (16 MB), unpacked with dpkg -x, let
# CMake configure the project with CMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF (every package
# found under the unpacked prefix). Header-only packages need nothing else; the few shared libraries (benchmark, fmt, Boost
# iostreams/filesystem, OpenSSL's crypto) come with their runtime packages.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev libbenchmark1debian
  libcli11-dev nlohmann-json3-dev
  libfmt-dev libfmt9
  libeigen3-dev libspectra-dev
  libboost-iostreams-dev libboost-iostreams1.74-dev libboost-iostreams1.74.0
  libboost-filesystem-dev libboost-filesystem1.74-dev libboost-filesystem1.74.0
  libboost1.74-dev libboost-dev libboost-regex1.74.0 libboost-system1.74-dev libboost-system1.74.0
  libssl-dev
)
mkdir -p .gpu-deps
cd .gpu-deps
apt-get download "${packages[@]}"
du -sh . | sed 's/^/gpu-deps: /'
