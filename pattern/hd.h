// SPARSEATTN_HD marks index arithmetic shared by host code and CUDA kernels, so the
// pattern's rules are written once and compiled for both (the pattern is
// defined once).
#pragma once

#if defined(__CUDACC__)
#define SPARSEATTN_HD __host__ __device__ inline
#else
#define SPARSEATTN_HD inline
#endif
