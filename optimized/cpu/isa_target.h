// Compiles the code between SPARSEATTN_ISA_BEGIN and SPARSEATTN_ISA_END for one SIMD build
// (isa.h), in a namespace of its own, so the two builds of one source link side by side.
//
// The build is chosen by the compile definition the CMake object library sets:
//   SPARSEATTN_ISA_AVX2    namespace sparseattn::cpu::avx2,   256-bit vectors (8 floats)
//   SPARSEATTN_ISA_AVX512  namespace sparseattn::cpu::avx512, 512-bit vectors (16 floats)
//
// Why a target pragma and not -mavx512f on the whole file: with the flag, every inline
// function the file instantiates (std::vector's, std::sort's, core/'s) would be emitted
// with AVX-512 instructions as a weak symbol the linker may pick for the whole program,
// and an AVX2 machine would die of SIGILL in code that is not ours. Under the pragma, only
// the functions defined inside the region get the wider instruction set; the library code
// they call keeps the build's floor (x86-64-v3). tests/cpu/cpu_isa_test.cpp disassembles
// the library and checks that no AVX-512 instruction lies outside the avx512 namespace.
//
// AMX (amx-tile, amx-bf16) is enabled with the avx512 build for the AMX engine's intrinsics
// (flash_tile_amx.h); GCC emits AMX instructions only from those intrinsics, and
// tests/cpu/bf16_isolation_check.py checks that they lie in that engine alone.
//
// Rule for every file that uses it: include all headers first, then open the region.
#pragma once

#if defined(__clang__)
#error "the per-ISA CPU kernels use GCC's target pragma; clang is not wired up"
#endif

#if defined(SPARSEATTN_ISA_AVX512)
#define SPARSEATTN_ISA avx512
#define SPARSEATTN_ISA_TARGET \
  _Pragma(                     \
      "GCC target(\"avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16\")")
#elif defined(SPARSEATTN_ISA_AVX2)
#define SPARSEATTN_ISA avx2
#define SPARSEATTN_ISA_TARGET _Pragma("GCC target(\"avx2,fma,f16c,bmi,bmi2\")")
#else
#error "compile with -DSPARSEATTN_ISA_AVX2 or -DSPARSEATTN_ISA_AVX512 (optimized/cpu/CMakeLists.txt)"
#endif

#define SPARSEATTN_ISA_BEGIN \
  _Pragma("GCC push_options") SPARSEATTN_ISA_TARGET namespace sparseattn::cpu::SPARSEATTN_ISA {
#define SPARSEATTN_ISA_END \
  }                        \
  _Pragma("GCC pop_options")
