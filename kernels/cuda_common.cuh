/*
** cuda_common.cuh — what every kernels/*.cu shares (nvcc only): dtype traits, loads and
** stores from kernels/convert.h, the dispatch over dtypes, offsets of a strided walk,
** launch geometry.
*/
#ifndef GL_KERNELS_CUDA_COMMON_CUH
#define GL_KERNELS_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>
#include "launch.h"
#include "half.h"

#include "convert.h"

/* ---- dtype traits, from the rows of kernels/dtypes.h ------------------------------------ */

/* S: stored type; T: compute type (what elem_ops.h's expressions see) and UT the unsigned
** type they wrap in (as cpu_elem.c); kind: GL_KIND_*; compute: the gl_kcompute a reduction
** of the dtype computes in (float32 for float16 and bfloat16); prec: a float's significand
** bits. load: a stored element as T; store_i / store_f / store_c: an integer / a float / a
** complex value as stored (convert.h's rules, the CPU's). */
template <int DT> struct gl_dt;
/* What a dtype of kind 'kind' whose compute type has 'size' bytes reduces in. */
constexpr gl_kcompute gl_compute_of(int kind, size_t size) {
  return kind != GL_KIND_FLOAT ? GL_KCOMPUTE_INT64 : size == sizeof(double) ? GL_KCOMPUTE_FLOAT64 : GL_KCOMPUTE_FLOAT32;
}
#define GL_DT_TRAITS_(E, id, S_, kind_, half_, CT_, UT_, prec_, ...)                              \
  template <> struct gl_dt<GL_KD_##E> {                                                          \
    typedef S_ S;                                                                                \
    typedef CT_ T;                                                                               \
    typedef UT_ UT;                                                                              \
    static constexpr int kind = GL_KIND_##kind_, prec = prec_;                                   \
    static constexpr gl_kcompute compute = gl_compute_of(GL_KIND_##kind_, sizeof(CT_));          \
    static __host__ __device__ __forceinline__ T load(S x) { return GL_DT_LOAD(half_, x); }      \
    template <class V> static __host__ __device__ __forceinline__ S store_i(V v) {                \
      return GL_DT_STORE(kind_, half_, S_, id, INT, v);                                          \
    }                                                                                            \
    template <class V> static __host__ __device__ __forceinline__ S store_f(V v) {                \
      return GL_DT_STORE(kind_, half_, S_, id, FLOAT, v);                                        \
    }                                                                                            \
    template <class V> static __host__ __device__ __forceinline__ S store_c(V v) {                \
      return GL_DT_STORE(kind_, half_, S_, id, COMPLEX, v);                                      \
    }                                                                                            \
  };
GL_DTYPE_LIST(GL_DT_TRAITS_)
#undef GL_DT_TRAITS_

/* Whether dtype DT is in a set of kernels/dtypes.h (GL_DTSET_FLOAT, ...), for if constexpr. */
#define GL_DT_IN(set, DT) ((((set) >> (DT)) & 1) != 0)

/* ---- the one switch over dtypes ---------------------------------------------------------- */

/* f(std::integral_constant<int, DT>()) for the dtype number dt, or 'otherwise' for a number
** that is no dtype: every per-dtype launcher stamps its templates through this, so adding a
** dtype is a row of kernels/dtypes.h. GL_DISPATCH_DTYPE(dt, DT, expr) gives expr (an int:
** 0, GL_KERR_NOTSUP or a cudaError_t) with DT a constexpr int, GL_KERR_NOTSUP for a bad
** number; it nests (copy.cu dispatches on both dtypes). It stamps the real dtypes (a complex
** dt gives 'otherwise'); GL_DISPATCH_DTYPE_ALL stamps every row, for the families whose
** templates take complex elements (copies, indexing). */
#define GL_DT_CASE_(E, ...) case GL_KD_##E: return f(std::integral_constant<int, GL_KD_##E>());
template <class R, class F>
__host__ __device__ __forceinline__ R gl_dispatch_dtype(int dt, R otherwise, F &&f) {
  switch (dt) {
    GL_DTYPE_REAL_LIST(GL_DT_CASE_)
    default: return otherwise;
  }
}
template <class R, class F>
__host__ __device__ __forceinline__ R gl_dispatch_dtype_all(int dt, R otherwise, F &&f) {
  switch (dt) {
    GL_DTYPE_LIST(GL_DT_CASE_)
    default: return otherwise;
  }
}
#undef GL_DT_CASE_
#define GL_DISPATCH_DTYPE(dt, DT, ...) GL_DISPATCH_DTYPE_IN_(gl_dispatch_dtype, dt, DT, __VA_ARGS__)
#define GL_DISPATCH_DTYPE_ALL(dt, DT, ...) GL_DISPATCH_DTYPE_IN_(gl_dispatch_dtype_all, dt, DT, __VA_ARGS__)
#define GL_DISPATCH_DTYPE_IN_(fn, dt, DT, ...)                                                    \
  fn((dt), (int)GL_KERR_NOTSUP, [&](auto DT##_c_) -> int {                                        \
    constexpr int DT = decltype(DT##_c_)::value;                                                  \
    return __VA_ARGS__;                                                                           \
  })

/* A value of dtype SD converted to dtype DD exactly as the CPU's copy does. */
template <int DD, int SD>
__device__ __forceinline__ typename gl_dt<DD>::S gl_convert(typename gl_dt<SD>::S x) {
  auto v = gl_dt<SD>::load(x);
  if constexpr (gl_dt<SD>::kind == GL_KIND_COMPLEX) return gl_dt<DD>::store_c(v);
  else if constexpr (gl_dt<SD>::compute == GL_KCOMPUTE_INT64) return gl_dt<DD>::store_i(v);
  else return gl_dt<DD>::store_f(v);
}

/* The scalar of dtype DT whose bytes the host put in the low bytes of 'bits' (a gl_kval's:
** up to 16, a complex128). */
template <int DT>
__device__ __forceinline__ typename gl_dt<DT>::S gl_from_bits(const uint64_t *bits) {
  typename gl_dt<DT>::S v;
  memcpy(&v, bits, sizeof v);
  return v;
}

/* ---- results of the elementwise kernels ------------------------------------------------ */

/* What an elementwise kernel stores (OUT): DT's own element (halves rounded from the float
** they were computed in), bool (comparisons, logic, predicates: v != 0) or, for a complex
** DT, its real part's type (abs, angle). */
enum { GL_KOUT_SAME, GL_KOUT_BOOL, GL_KOUT_REAL };
template <int DT, int OUT> struct gl_kout { typedef typename gl_dt<DT>::S type; };
template <int DT> struct gl_kout<DT, GL_KOUT_BOOL> { typedef uint8_t type; };
template <int DT> struct gl_kout<DT, GL_KOUT_REAL> { typedef decltype(typename gl_dt<DT>::S().re) type; };
template <int DT, int OUT>
using gl_out_t = typename gl_kout<DT, OUT>::type;

template <int DT, int OUT, class V>
__device__ __forceinline__ gl_out_t<DT, OUT> gl_out(V v) {
  if constexpr (OUT == GL_KOUT_BOOL) return (uint8_t)(v != 0);
  else if constexpr (OUT == GL_KOUT_REAL) return v;
  else if constexpr (DT == GL_KD_FLOAT16) return gl_f32_to_f16(v);
  else if constexpr (DT == GL_KD_BFLOAT16) return gl_f32_to_bf16(v);
  else return (typename gl_dt<DT>::S)v;
}

template <int DT, int OUT, class V>
__device__ __forceinline__ void gl_put(void *dst, int64_t i, V v) {
  ((gl_out_t<DT, OUT> *)dst)[i] = gl_out<DT, OUT>(v);
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
