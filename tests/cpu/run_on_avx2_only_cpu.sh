#!/bin/bash
# Runs a test binary on an emulated AVX2-only CPU (QEMU user mode, -cpu Haswell-v4: AVX2,
# FMA, no AVX-512), so that one binary is shown to run correctly where the CPU kernels'
# 512-bit build must never be reached (optimized/cpu/isa.h; contract §4.6).
#   run_on_avx2_only_cpu.sh AVX512_PROBE TEST_BINARY [ARGS...]
# First the control: AVX512_PROBE executes one AVX-512 instruction and must die of SIGILL
# on the emulated CPU. Exit 77 (CTest: skipped, never passed) without qemu-x86_64.
set -u
probe=$1
shift
qemu=$(command -v qemu-x86_64) || {
  echo "SKIPPED: qemu-x86_64 (Debian's qemu-user) is not installed: no AVX2-only CPU to run on"
  exit 77
}
cpu=Haswell-v4
# QEMU warns about CPUID bits of the model it does not emulate (pcid, x2apic, ...): noise.
quiet() { grep -v "TCG doesn't support requested feature" >&2; }
"$qemu" -cpu "$cpu" "$probe" 2> >(quiet)
rc=$?
if [ "$rc" -ne 132 ]; then
  echo "control failed: an AVX-512 instruction on -cpu $cpu gave exit $rc, not SIGILL (132)"
  exit 1
fi
echo "control: an AVX-512 instruction dies of SIGILL on -cpu $cpu"
exec "$qemu" -cpu "$cpu" "$@" 2> >(quiet)
