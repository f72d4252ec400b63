#!/usr/bin/env bash
# `make gpu-deps`: packs, here (Debian, where apt works), everything this project's CMake
# configure needs that a bare GPU machine lacks, into .gpu-deps/ (git-ignored), to be
# carried to that machine. scripts/gpu_check.sh finds it there, unpacks it under the
# build folder and builds the compiled libraries FROM SOURCE with the machine's own
# compiler, so nothing compiled here has to match the GPU machine's glibc or libstdc++.
#
#   make gpu-deps                    # here; then on the GPU machine, carrying .gpu-deps:
#   bash scripts/gpu_check.sh        # (docs/cuda.md, "make gpu-check")
#
# What .gpu-deps/deps.tar.gz holds (all from Debian bookworm; nothing from anywhere else):
#   src/googletest  the googletest package's /usr/src/googletest (gtest + gmock sources)
#   src/benchmark   Google Benchmark, the `benchmark` source package's upstream tarball
#   src/fmt         {fmt}, the `fmtlib` source package's upstream tarball
#   prefix/         header-only packages with their CMake configs: nlohmann-json3-dev,
#                   libcli11-dev, libeigen3-dev (unpacked with dpkg -x, docs dropped)
#   stub/           CMake stand-ins for Boost (iostreams, filesystem) and OpenSSL (crypto),
#                   which only the plotting and real-data targets link — none of the GPU
#                   check's targets. Configure succeeds; a target that does link them fails
#                   with "-lsparseattn_gpu_deps_lacks_boost" (or _openssl) and says why.
# Source packages come through apt-get source with a private deb-src list and private
# state folders under /tmp (the machine's apt configuration is not touched).
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=$PWD/.gpu-deps
WORK=$(mktemp -d /tmp/sparseattn-gpu-deps.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
SUITE=${GPU_DEPS_SUITE:-bookworm}
MIRROR=${GPU_DEPS_MIRROR:-http://deb.debian.org/debian}

say() { echo "gpu-deps: $*"; }
mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/debs" "$WORK/srcpkg" "$WORK/root"
echo "deb-src $MIRROR $SUITE main" >"$WORK/apt/sources.list"
APT=(-o "Dir::Etc::SourceList=$WORK/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$WORK/apt/lists" -o "Dir::Cache=$WORK/apt/cache")

say "downloading Debian packages (binary: headers and googletest's sources)"
(cd "$WORK/debs" && apt-get download googletest nlohmann-json3-dev libcli11-dev libeigen3-dev)
say "downloading Debian source packages benchmark and fmtlib"
apt-get "${APT[@]}" -qq update
(cd "$WORK/srcpkg" && apt-get "${APT[@]}" source --download-only benchmark fmtlib >/dev/null)

R=$WORK/root
mkdir -p "$R/src" "$R/prefix" "$R/stub"
for deb in "$WORK"/debs/*.deb; do dpkg -x "$deb" "$WORK/x"; done
cp -a "$WORK/x/usr/src/googletest" "$R/src/googletest"
cp -a "$WORK/x/usr/include" "$R/prefix/include"
mkdir -p "$R/prefix/share"
cp -a "$WORK/x/usr/share/cmake" "$R/prefix/share/cmake"
cp -a "$WORK/x/usr/share/eigen3" "$R/prefix/share/eigen3"
rm -rf "$R/src/googletest/"{docs,googletest/docs,googlemock/docs,googletest/test,googlemock/test,googletest/samples}
for name in benchmark fmtlib; do
  tarball=$(ls "$WORK"/srcpkg/${name}_*.orig.tar.gz)
  mkdir -p "$WORK/s-$name"
  tar -xzf "$tarball" -C "$WORK/s-$name"
  dir=$(find "$WORK/s-$name" -mindepth 1 -maxdepth 1 -type d | head -1)
  target=$R/src/$([ "$name" = fmtlib ] && echo fmt || echo benchmark)
  mv "$dir" "$target"
  rm -rf "$target"/{test,docs,doc,bindings,.github,.ycm_extra_conf.py}
done
# fmt's CMakeLists adds its doc/ and test/ folders only when asked (FMT_DOC, FMT_TEST off).

# Boost and OpenSSL stand-ins. FindBoost asks for BoostConfig.cmake first; FindOpenSSL
# takes OPENSSL_INCLUDE_DIR / OPENSSL_CRYPTO_LIBRARY from the cache (gpu_check.sh sets them).
mkdir -p "$R/stub/lib/cmake/Boost-1.74.0" "$R/stub/include/openssl"
cat >"$R/stub/lib/cmake/Boost-1.74.0/BoostConfig.cmake" <<'EOF'
# Stand-in made by scripts/gpu_deps.sh: the GPU check's targets never link Boost; the
# plotting / real-data ones do, and fail to link on a machine that only has this.
set(Boost_VERSION 1.74.0)
set(Boost_VERSION_STRING 1.74.0)
set(Boost_INCLUDE_DIRS "")
set(Boost_FOUND TRUE)
foreach(_c headers iostreams filesystem)
  set(Boost_${_c}_FOUND TRUE)
  if(NOT TARGET Boost::${_c})
    add_library(Boost::${_c} INTERFACE IMPORTED)
    set_target_properties(Boost::${_c} PROPERTIES INTERFACE_LINK_LIBRARIES sparseattn_gpu_deps_lacks_boost)
  endif()
endforeach()
EOF
cat >"$R/stub/lib/cmake/Boost-1.74.0/BoostConfigVersion.cmake" <<'EOF'
set(PACKAGE_VERSION 1.74.0)
set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(PACKAGE_FIND_VERSION STREQUAL "" OR PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
EOF
cat >"$R/stub/include/openssl/opensslv.h" <<'EOF'
/* Stand-in made by scripts/gpu_deps.sh for CMake's FindOpenSSL: not OpenSSL. */
# define OPENSSL_VERSION_NUMBER 0x30000000L
# define OPENSSL_VERSION_TEXT "stand-in 3.0.0 (scripts/gpu_deps.sh)"
EOF
cp "$R/stub/include/openssl/opensslv.h" "$R/stub/include/openssl/ssl.h"
: >"$R/stub/libsparseattn_gpu_deps_lacks_openssl.so"

{
  echo "made by scripts/gpu_deps.sh on $(date -u '+%Y-%m-%d %H:%M UTC') from Debian $SUITE"
  ls "$WORK"/debs "$WORK"/srcpkg | grep -E '\.(deb|dsc)$'
} >"$R/MANIFEST"
rm -rf "$DEST"
mkdir -p "$DEST"
tar -czf "$DEST/deps.tar.gz" -C "$R" .
cp "$R/MANIFEST" "$DEST/MANIFEST"
say "$(du -sh "$DEST/deps.tar.gz" | cut -f1) in $DEST/deps.tar.gz ($(du -sh "$R" | cut -f1) unpacked); carry .gpu-deps"
