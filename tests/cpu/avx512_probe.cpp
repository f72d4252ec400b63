// The negative control of run_on_avx2_only_cpu.sh: one AVX-512 instruction, executed
// unconditionally. On a CPU (or an emulated one) without AVX-512 it must die of SIGILL;
// if it does not, the emulator does not stand for an AVX2-only machine and the test that
// runs the CPU kernels on it would prove nothing.
int main() {
  __asm__ volatile("vpxord %%zmm0, %%zmm0, %%zmm0" ::: "xmm0");
  return 0;
}
