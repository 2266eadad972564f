/*
** warp.cuh — what the one-warp-per-row kernels of fused.cu and attention.cu share: exp, log
** and sqrt of float or double by overload, a warp's butterfly max and sum (every lane gets
** the result), and the size of a grid of 256-thread blocks.
*/
#ifndef GL_KERNELS_WARP_CUH
#define GL_KERNELS_WARP_CUH

#include "cuda_common.cuh"

__device__ __forceinline__ float gl_expt(float x) { return expf(x); }
__device__ __forceinline__ double gl_expt(double x) { return exp(x); }
__device__ __forceinline__ float gl_logt(float x) { return logf(x); }
__device__ __forceinline__ double gl_logt(double x) { return log(x); }
__device__ __forceinline__ float gl_sqrtt(float x) { return sqrtf(x); }
__device__ __forceinline__ double gl_sqrtt(double x) { return sqrt(x); }

template <class T> __device__ __forceinline__ T gl_warp_max(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) { T w = __shfl_xor_sync(0xffffffffu, v, o); v = w > v ? w : v; }
  return v;
}

template <class T> __device__ __forceinline__ T gl_warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* blocks, at most GL_KMAXBLOCKS (the kernels' grid-stride loops take the rest). */
static inline unsigned gl_kcap(int64_t blocks) {
  return (unsigned)(blocks > GL_KMAXBLOCKS ? GL_KMAXBLOCKS : blocks);
}

/* Blocks of 256 threads for one warp per row: 8 rows a block. */
static inline unsigned gl_warp_row_blocks(int64_t rows) { return gl_kcap((rows + 7) / 8); }

#endif
