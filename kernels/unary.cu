/*
** unary.cu — dst = op(src) for every unary op of kernels/elem_ops.h on the GPU. The math is
** elem.h's and complex.h's (the CPU's), stamped per (op, dtype) by templates: one functor
** per op from the X-macro row, one kernel per (functor, dtype, contiguous or strided).
*/
#include "cuda_common.cuh"
#include "elem.h"
#include <type_traits>

/* The integer expressions are shared by signed and unsigned types ("x < 0" on uint8). */
#pragma nv_diag_suppress 186
#pragma nv_diag_suppress 514

/* ---- the ops as functors ---------------------------------------------------------------- */

enum {
#define GL_X(name, ...) GL_KU_##name,
  GL_UNARY_OPS(GL_X)
#undef GL_X
  GL_KU_N
};

/* Kinds (elem_ops.h): whether an op returns bool. dtypes_: which dtypes it takes (its
** kind's and, by its complex column, complex); cxout_: what a complex input gives. The
** complex functions of an op without them (NOCX) are never instantiated. */
enum { GL_KK_UF, GL_KK_US, GL_KK_UP, GL_KK_UL, GL_KK_UB };

#define GL_KU_CX_(cx, id) GL_KU_CX__(id, GL_CX_FN_##cx)
#define GL_KU_CX__(id, f) GL_KU_CX___(id, f)
#define GL_KU_CX___(id, f) gl_##id##_##f(x)
#define GL_KU_CXFN_(cx, id) GL_KU_CXFN__(GL_CX_HAS_##cx, cx, id)
#define GL_KU_CXFN__(has, cx, id) GL_KU_CXFN___(has, cx, id)
#define GL_KU_CXFN___(has, cx, id) GL_KU_CXFN_##has(cx, id)
#define GL_KU_CXFN_0(cx, id) 0
#define GL_KU_CXFN_1(cx, id) GL_KU_CX_(cx, id)
#define GL_X(name, kind, F, D, I, cx)                                                         \
  struct gl_u_##name {                                                                        \
    static constexpr int kind_ = GL_KK_##kind, dtypes_ = GL_OP_DTYPES(kind, cx), cxout_ = GL_CX_OUT(cx); \
    static __device__ __forceinline__ auto f(float x) { (void)x; return F; }                  \
    static __device__ __forceinline__ auto d(double x) { (void)x; return D; }                 \
    template <class T, class UT> static __device__ __forceinline__ auto i(T x) { (void)x; return I; } \
    static __device__ __forceinline__ auto c64(gl_complex64 x) { (void)x; return GL_KU_CXFN_(cx, complex64); } \
    static __device__ __forceinline__ auto c128(gl_complex128 x) { (void)x; return GL_KU_CXFN_(cx, complex128); } \
  };
GL_UNARY_OPS(GL_X)
#undef GL_X

/* ---- kernels ------------------------------------------------------------------------------ */

template <class Op, int DT>
__device__ __forceinline__ auto gl_apply(typename gl_dt<DT>::S s) {
  auto x = gl_dt<DT>::load(s);
  if constexpr (DT == GL_KD_COMPLEX64) return Op::c64(x);
  else if constexpr (DT == GL_KD_COMPLEX128) return Op::c128(x);
  else if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT32) return Op::f(x);
  else if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT64) return Op::d(x);
  else return Op::template i<typename gl_dt<DT>::T, typename gl_dt<DT>::UT>(x);
}

/* What op Op stores for dtype DT (GL_KOUT_*). */
template <class Op, int DT>
constexpr int gl_ku_out() {
  if constexpr (gl_dt<DT>::kind == GL_KIND_COMPLEX)
    return Op::cxout_ == GL_CXOUT_BOOL ? GL_KOUT_BOOL : Op::cxout_ == GL_CXOUT_REAL ? GL_KOUT_REAL : GL_KOUT_SAME;
  else return Op::kind_ == GL_KK_UP || Op::kind_ == GL_KK_UL ? GL_KOUT_BOOL : GL_KOUT_SAME;
}

template <class Op, int DT, int OUT, bool CONTIG>
__global__ void gl_k_unary(const gl_kiter it, void *dst, const typename gl_dt<DT>::S *src) {
  GL_KLOOP(i, it.n) {
    if (CONTIG) gl_put<DT, OUT>(dst, i, gl_apply<Op, DT>(src[i]));
    else {
      int64_t off[2];
      gl_offsets<2>(it, i, off);
      gl_put<DT, OUT>(dst, off[0], gl_apply<Op, DT>(src[off[1]]));
    }
  }
}

/* The contiguous fast path, for dst and src both 16-byte aligned: 16 bytes of src per
** access (VEC elements), U accesses in flight per thread before any store (2 for 8-byte and
** 4-byte elements, 1 where 16 bytes hold 8 or 16), a grid-stride loop over the n / VEC
** vectors on a grid of one wave; the n % VEC last elements take one thread each. 32-bit
** indices: the launcher cuts bigger arrays into GL_KCHUNK-element launches. dst may be src
** (in place): each thread reads its elements before it writes them. */
template <class S> struct gl_ku_unroll { enum { n = gl_vw<S>::n >= 8 ? 1 : 2 }; };

template <class Op, int DT, int OUT>
__global__ void __launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)
gl_k_unary_vec(uint32_t n, void *dst, const typename gl_dt<DT>::S *src) {
  typedef typename gl_dt<DT>::S S;
  constexpr int VEC = gl_vw<S>::n, U = gl_ku_unroll<S>::n;
  typedef gl_pack<S, VEC> PI;
  typedef gl_pack<gl_out_t<DT, OUT>, VEC> PO;
  const uint32_t nv = n / VEC, stride = blockDim.x * gridDim.x;
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  for (uint32_t i = t; i < nv; i += U * stride) {
    PI x[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      uint32_t j = i + u * stride;
      if (j < nv) x[u] = ((const PI *)src)[j];
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      uint32_t j = i + u * stride;
      if (j < nv) {
        PO o;
#pragma unroll
        for (int k = 0; k < VEC; k++) o.v[k] = gl_out<DT, OUT>(gl_apply<Op, DT>(x[u].v[k]));
        ((PO *)dst)[j] = o;
      }
    }
  }
  uint32_t e = nv * VEC + t;                    /* the tail: fewer than VEC elements */
  if (e < n) gl_put<DT, OUT>(dst, (int64_t)e, gl_apply<Op, DT>(src[e]));
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <class Op, int DT>
static int unary_dt(cudaStream_t s, const gl_kiter *it, void *dst, const void *src) {
  if constexpr (!GL_DT_IN(Op::dtypes_, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    constexpr int OUT = gl_ku_out<Op, DT>();
    typedef typename gl_dt<DT>::S S;
    if (it->contiguous && gl_kaligned16(dst) && gl_kaligned16(src)) {
      typedef gl_out_t<DT, OUT> O;
      for (int64_t e0 = 0; e0 < it->n; e0 += GL_KCHUNK) {
        int64_t n = it->n - e0 < GL_KCHUNK ? it->n - e0 : GL_KCHUNK;
        unsigned grid = gl_kgrid((n / gl_vw<S>::n + gl_ku_unroll<S>::n - 1) / gl_ku_unroll<S>::n);
        gl_k_unary_vec<Op, DT, OUT><<<grid, GL_KTHREADS, 0, s>>>((uint32_t)n, (O *)dst + e0, (const S *)src + e0);
        int rc = gl_klaunched();
        if (rc != 0) return rc;
      }
      return 0;
    } else if (it->contiguous)
      gl_k_unary<Op, DT, OUT, true><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, dst, (const S *)src);
    else
      gl_k_unary<Op, DT, OUT, false><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, dst, (const S *)src);
    return gl_klaunched();
  }
}

extern "C" int gl_klaunch_unary(void *stream, int op, int dt, const gl_kiter *it, void *dst, const void *src) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  switch (op) {
#define GL_X(name, ...) \
    case GL_KU_##name: return GL_DISPATCH_DTYPE_ALL(dt, DT, unary_dt<gl_u_##name, DT>(s, it, dst, src));
    GL_UNARY_OPS(GL_X)
#undef GL_X
    default: return GL_KERR_NOTSUP;
  }
}
