/*
** cuda_common.cuh — what every kernels/*.cu shares (nvcc only): dtype traits, loads and
** stores from kernels/convert.h, offsets of a strided walk, launch geometry.
*/
#ifndef GL_KERNELS_CUDA_COMMON_CUH
#define GL_KERNELS_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>
#include "launch.h"
#include "half.h"

/* convert.h's X-macro names dtypes by their src/core enum names; kernels never include
** src/, so the names are given here (the host checks the numbers agree). */
enum {
  GL_BOOL = GL_KD_BOOL, GL_UINT8 = GL_KD_UINT8, GL_INT32 = GL_KD_INT32, GL_INT64 = GL_KD_INT64,
  GL_FLOAT16 = GL_KD_FLOAT16, GL_BFLOAT16 = GL_KD_BFLOAT16, GL_FLOAT32 = GL_KD_FLOAT32,
  GL_FLOAT64 = GL_KD_FLOAT64
};
#include "convert.h"

/* ---- dtype traits ------------------------------------------------------------------- */

/* S: stored type. T/UT: the types of elem_ops.h's integer expressions (as cpu_elem.c).
** fam: 0 computes in float (float32, float16, bfloat16), 1 in double, 2 in T. */
template <int DT> struct gl_dt;
template <> struct gl_dt<GL_KD_BOOL>     { typedef uint8_t S;  typedef uint8_t T; typedef uint32_t UT; enum { fam = 2 }; };
template <> struct gl_dt<GL_KD_UINT8>    { typedef uint8_t S;  typedef uint8_t T; typedef uint32_t UT; enum { fam = 2 }; };
template <> struct gl_dt<GL_KD_INT32>    { typedef int32_t S;  typedef int32_t T; typedef uint32_t UT; enum { fam = 2 }; };
template <> struct gl_dt<GL_KD_INT64>    { typedef int64_t S;  typedef int64_t T; typedef uint64_t UT; enum { fam = 2 }; };
template <> struct gl_dt<GL_KD_FLOAT16>  { typedef uint16_t S; typedef float T;   typedef uint32_t UT; enum { fam = 0 }; };
template <> struct gl_dt<GL_KD_BFLOAT16> { typedef uint16_t S; typedef float T;   typedef uint32_t UT; enum { fam = 0 }; };
template <> struct gl_dt<GL_KD_FLOAT32>  { typedef float S;    typedef float T;   typedef uint32_t UT; enum { fam = 0 }; };
template <> struct gl_dt<GL_KD_FLOAT64>  { typedef double S;   typedef double T;  typedef uint64_t UT; enum { fam = 1 }; };

/* convert.h's loads and stores as one template per dtype. */
template <int DT> struct gl_cv;
#define GL_CV_STAMP(DN, DTY, DK, DE)                                                        \
  template <> struct gl_cv<DE> {                                                            \
    static __device__ __forceinline__ auto load(DTY v) { return GL_LOAD_##DN(v); }          \
    template <class V> static __device__ __forceinline__ DTY store_i(V v) { return GL_STORE_##DN##_I(v); } \
    template <class V> static __device__ __forceinline__ DTY store_f(V v) { return GL_STORE_##DN##_F(v); } \
  };
GL_FOREACH_DTYPE(GL_CV_STAMP)
#undef GL_CV_STAMP

/* A value of dtype SD converted to dtype DD exactly as the CPU's copy does. */
template <int DD, int SD>
__device__ __forceinline__ typename gl_dt<DD>::S gl_convert(typename gl_dt<SD>::S x) {
  auto v = gl_cv<SD>::load(x);
  if constexpr (gl_dt<SD>::fam == 2) return gl_cv<DD>::store_i(v);
  else return gl_cv<DD>::store_f(v);
}

/* The scalar of dtype DT whose bits the host put in the low bytes of 'bits'. */
template <int DT>
__device__ __forceinline__ typename gl_dt<DT>::S gl_from_bits(uint64_t bits) {
  typename gl_dt<DT>::S v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/* ---- results of the elementwise kernels ------------------------------------------------ */

/* The stored form of an elementwise result: bool (OUTBOOL: comparisons, logic, predicates),
** else DT's, halves rounded from the float they were computed in. */
template <int DT, bool OUTBOOL>
using gl_out_t = typename std::conditional<OUTBOOL, uint8_t, typename gl_dt<DT>::S>::type;

template <int DT, bool OUTBOOL, class V>
__device__ __forceinline__ gl_out_t<DT, OUTBOOL> gl_out(V v) {
  if constexpr (OUTBOOL) return (uint8_t)(v != 0);
  else if constexpr (DT == GL_KD_FLOAT16) return gl_f32_to_f16(v);
  else if constexpr (DT == GL_KD_BFLOAT16) return gl_f32_to_bf16(v);
  else return (typename gl_dt<DT>::S)v;
}

template <int DT, bool OUTBOOL, class V>
__device__ __forceinline__ void gl_put(void *dst, int64_t i, V v) {
  ((gl_out_t<DT, OUTBOOL> *)dst)[i] = gl_out<DT, OUTBOOL>(v);
}

/* ---- strided walks ---------------------------------------------------------------------- */

/* Element offsets of linear index i (C order over it.shape) for the first NARGS operands. */
template <int NARGS>
__device__ __forceinline__ void gl_offsets(const gl_kiter &it, int64_t i, int64_t *off) {
  if (it.ndim == 1) {
#pragma unroll
    for (int k = 0; k < NARGS; k++) off[k] = i * it.strides[k][0];
    return;
  }
#pragma unroll
  for (int k = 0; k < NARGS; k++) off[k] = 0;
  for (int d = it.ndim - 1; d >= 0; d--) {
    int64_t s = it.shape[d], q = i / s, r = i - q * s;
    i = q;
#pragma unroll
    for (int k = 0; k < NARGS; k++) off[k] += r * it.strides[k][d];
  }
}

#define GL_KTHREADS 256
#ifndef GL_KMAXBLOCKS                  /* tools/kemu builds also with a tiny cap and chunk */
#define GL_KMAXBLOCKS (1 << 20)
#endif

/* Grid-stride loops: at most GL_KMAXBLOCKS blocks, each thread takes every stride-th element. */
#define GL_KLOOP(i, n)                                                                   \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);              \
       i += (int64_t)blockDim.x * gridDim.x)

static inline unsigned gl_kblocks(int64_t n) {
  int64_t b = (n + GL_KTHREADS - 1) / GL_KTHREADS;
  return (unsigned)(b > GL_KMAXBLOCKS ? GL_KMAXBLOCKS : b < 1 ? 1 : b);
}

/* ---- the vectorised fast paths ------------------------------------------------------------ */

/* N elements of T moved as one access of sizeof(T) * N bytes (a power of two up to 16):
** 16 bytes of S is one 128-bit load or store. The address must be aligned to the size. */
template <class T, int N>
struct alignas(sizeof(T) * N) gl_pack { T v[N]; };

/* The fast paths index with 32 bits; their launchers cut bigger arrays into launches of
** this many elements (a multiple of every vector width, so alignment carries over). With
** the unrolled grid-stride loops, indices stay below 2^31 + one grid of threads. */
#ifndef GL_KCHUNK
#define GL_KCHUNK ((int64_t)1 << 30)
#endif

/* Elements of type T in 16 bytes. */
template <class T> struct gl_vw { enum { n = 16 / sizeof(T) }; };

static inline bool gl_kaligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Blocks of GL_KTHREADS resident per multiprocessor in the fast paths' grids: their kernels
** keep to 64 registers (__launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)), so the grid is
** one full wave and a grid-stride loop leaves no tail wave. */
#define GL_KBLOCKS_PER_SM 4

/* The current device's multiprocessor count, asked once per device (per .cu file). Only
** grids of more than a few dozen blocks ask, so small ops pay nothing for it. A failed
** question is cleared: the launch after it would report it as its own error. */
static inline int gl_ksm_count(void) {
  static int cache[64];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) { cudaGetLastError(); return 16; }
  int v = __atomic_load_n(&cache[dev], __ATOMIC_RELAXED);
  if (v > 0) return v;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0) {
    cudaGetLastError();
    return 16;
  }
  __atomic_store_n(&cache[dev], v, __ATOMIC_RELAXED);
  return v;
}

/* Blocks for a grid-stride loop over 'units' per-thread work items: one thread per item up
** to one full wave of the device (GL_KBLOCKS_PER_SM blocks per multiprocessor). */
static inline unsigned gl_kgrid(int64_t units) {
  int64_t b = (units + GL_KTHREADS - 1) / GL_KTHREADS;
  if (b <= 32) return (unsigned)(b < 1 ? 1 : b);
  int64_t cap = (int64_t)gl_ksm_count() * GL_KBLOCKS_PER_SM;
  return (unsigned)(b < cap ? b : cap);
}

/* The error of the launch just made (clears it; a sticky one stays for the host to see). */
static inline int gl_klaunched(void) { return (int)cudaGetLastError(); }

#endif
