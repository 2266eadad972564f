/*
** binary.cu — dst = a op b for every binary op of kernels/elem_ops.h on the GPU, operands
** in the compute dtype, broadcast by 0 strides; a scalar operand arrives by value (its
** bytes already in the compute dtype, up to a complex128's 16) instead of as a device
** buffer. The math is elem.h's and complex.h's (the CPU's), stamped per (op, dtype) by
** templates.
*/
#include "cuda_common.cuh"
#include "elem.h"
#include <type_traits>

/* The integer expressions are shared by signed and unsigned types ("b < 0" on uint8). */
#pragma nv_diag_suppress 186
#pragma nv_diag_suppress 514

/* ---- the ops as functors ---------------------------------------------------------------- */

enum {
#define GL_X(name, ...) GL_KB_##name,
  GL_BINARY_OPS(GL_X)
#undef GL_X
  GL_KB_N
};

/* Kinds (elem_ops.h): whether an op returns bool. dtypes_: which dtypes it takes (its
** kind's and, by its complex column, complex); cxout_: what complex operands give. The
** complex functions of an op without them (NOCX) are never instantiated. */
enum { GL_KK_BA, GL_KK_BD, GL_KK_BC, GL_KK_BL, GL_KK_BB, GL_KK_BS };

#define GL_KB_CX_(cx, id) GL_KB_CX__(id, GL_CX_FN_##cx)
#define GL_KB_CX__(id, f) GL_KB_CX___(id, f)
#define GL_KB_CX___(id, f) gl_##id##_##f(a, b)
#define GL_KB_CXFN_(cx, id) GL_KB_CXFN__(GL_CX_HAS_##cx, cx, id)
#define GL_KB_CXFN__(has, cx, id) GL_KB_CXFN___(has, cx, id)
#define GL_KB_CXFN___(has, cx, id) GL_KB_CXFN_##has(cx, id)
#define GL_KB_CXFN_0(cx, id) 0
#define GL_KB_CXFN_1(cx, id) GL_KB_CX_(cx, id)
#define GL_X(name, kind, F, D, I, cx)                                                         \
  struct gl_b_##name {                                                                        \
    static constexpr int kind_ = GL_KK_##kind, dtypes_ = GL_OP_DTYPES(kind, cx), cxout_ = GL_CX_OUT(cx); \
    static __device__ __forceinline__ auto f(float a, float b) { (void)a; (void)b; return F; } \
    static __device__ __forceinline__ auto d(double a, double b) { (void)a; (void)b; return D; } \
    template <class T, class UT>                                                              \
    static __device__ __forceinline__ auto i(T a, T b) { (void)a; (void)b; return I; }       \
    static __device__ __forceinline__ auto c64(gl_complex64 a, gl_complex64 b) {             \
      (void)a; (void)b; return GL_KB_CXFN_(cx, complex64); }                                  \
    static __device__ __forceinline__ auto c128(gl_complex128 a, gl_complex128 b) {          \
      (void)a; (void)b; return GL_KB_CXFN_(cx, complex128); }                                 \
  };
GL_BINARY_OPS(GL_X)
#undef GL_X

/* ---- kernels ------------------------------------------------------------------------------ */

template <int DT>
using gl_ct = decltype(gl_dt<DT>::load(typename gl_dt<DT>::S()));

template <class Op, int DT>
__device__ __forceinline__ auto gl_apply(gl_ct<DT> a, gl_ct<DT> b) {
  if constexpr (DT == GL_KD_COMPLEX64) return Op::c64(a, b);
  else if constexpr (DT == GL_KD_COMPLEX128) return Op::c128(a, b);
  else if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT32) return Op::f(a, b);
  else if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT64) return Op::d(a, b);
  else return Op::template i<typename gl_dt<DT>::T, typename gl_dt<DT>::UT>(a, b);
}

/* What op Op stores for dtype DT (GL_KOUT_*): bool for comparisons and logic, else DT's. */
template <class Op, int DT>
constexpr int gl_kb_out() {
  if constexpr (gl_dt<DT>::kind == GL_KIND_COMPLEX) return Op::cxout_ == GL_CXOUT_BOOL ? GL_KOUT_BOOL : GL_KOUT_SAME;
  else return Op::kind_ == GL_KK_BC || Op::kind_ == GL_KK_BL ? GL_KOUT_BOOL : GL_KOUT_SAME;
}

/* a.p or b.p NULL: that operand is the scalar whose bytes are in its bits. */
template <class Op, int DT, int OUT, bool CONTIG>
__global__ void gl_k_binary(const gl_kiter it, void *dst, const gl_kval a, const gl_kval b) {
  typedef typename gl_dt<DT>::S S;
  const S *pa = (const S *)a.p, *pb = (const S *)b.p;
  const gl_ct<DT> as = gl_dt<DT>::load(gl_from_bits<DT>(a.bits));
  const gl_ct<DT> bs = gl_dt<DT>::load(gl_from_bits<DT>(b.bits));
  GL_KLOOP(i, it.n) {
    if (CONTIG) {
      gl_ct<DT> x = pa ? gl_dt<DT>::load(pa[i]) : as;
      gl_ct<DT> y = pb ? gl_dt<DT>::load(pb[i]) : bs;
      gl_put<DT, OUT>(dst, i, gl_apply<Op, DT>(x, y));
    } else {
      int64_t off[3];
      gl_offsets<3>(it, i, off);
      gl_ct<DT> x = pa ? gl_dt<DT>::load(pa[off[1]]) : as;
      gl_ct<DT> y = pb ? gl_dt<DT>::load(pb[off[2]]) : bs;
      gl_put<DT, OUT>(dst, off[0], gl_apply<Op, DT>(x, y));
    }
  }
}

/* The contiguous fast path, for dst and array operands all 16-byte aligned: 16 bytes of each
** operand per access (VEC elements: 2 float64, 4 float32, 8 float16, 16 bool, 1 complex128),
** U accesses of each in flight per thread before any store (2 for 16-, 8- and 4-byte
** elements, 1 where 16 bytes already hold 8 or 16 elements: more would spill registers), a
** grid-stride loop over the n / VEC vectors on a grid of one wave; the n % VEC last elements
** take one thread each. Indices are 32-bit: the launcher cuts bigger arrays into
** GL_KCHUNK-element launches. dst may be an operand itself (an in-place op): each thread
** reads its elements before it writes them. a and b start at this launch's first element. */
template <class S> struct gl_kb_unroll { enum { n = gl_vw<S>::n >= 8 ? 1 : 2 }; };

template <class Op, int DT, int OUT>
__global__ void __launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)
gl_k_binary_vec(uint32_t n, void *dst, const gl_kval a, const gl_kval b) {
  typedef typename gl_dt<DT>::S S;
  constexpr int VEC = gl_vw<S>::n, U = gl_kb_unroll<S>::n;
  typedef gl_pack<S, VEC> PI;
  typedef gl_pack<gl_out_t<DT, OUT>, VEC> PO;
  const S *pa = (const S *)a.p, *pb = (const S *)b.p;
  const gl_ct<DT> as = gl_dt<DT>::load(gl_from_bits<DT>(a.bits));
  const gl_ct<DT> bs = gl_dt<DT>::load(gl_from_bits<DT>(b.bits));
  const uint32_t nv = n / VEC, stride = blockDim.x * gridDim.x;
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  for (uint32_t i = t; i < nv; i += U * stride) {
    PI x[U], y[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      uint32_t j = i + u * stride;
      if (j < nv) {
        if (pa) x[u] = ((const PI *)pa)[j];
        if (pb) y[u] = ((const PI *)pb)[j];
      }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      uint32_t j = i + u * stride;
      if (j < nv) {
        PO o;
#pragma unroll
        for (int k = 0; k < VEC; k++)
          o.v[k] = gl_out<DT, OUT>(gl_apply<Op, DT>(pa ? gl_dt<DT>::load(x[u].v[k]) : as,
                                                    pb ? gl_dt<DT>::load(y[u].v[k]) : bs));
        ((PO *)dst)[j] = o;
      }
    }
  }
  uint32_t e = nv * VEC + t;                    /* the tail: fewer than VEC elements */
  if (e < n) {
    gl_ct<DT> x = pa ? gl_dt<DT>::load(pa[e]) : as;
    gl_ct<DT> y = pb ? gl_dt<DT>::load(pb[e]) : bs;
    gl_put<DT, OUT>(dst, (int64_t)e, gl_apply<Op, DT>(x, y));
  }
}

/* ---- launchers ---------------------------------------------------------------------------- */

/* v moved on by e0 elements of type S (a scalar stays as it is). */
template <class S>
static gl_kval gl_kval_at(gl_kval v, int64_t e0) {
  if (v.p) v.p = (const S *)v.p + e0;
  return v;
}

template <class Op, int DT>
static int binary_dt(cudaStream_t s, const gl_kiter *it, void *dst, gl_kval a, gl_kval b) {
  if constexpr (!GL_DT_IN(Op::dtypes_, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    constexpr int OUT = gl_kb_out<Op, DT>();
    typedef typename gl_dt<DT>::S S;
    if (it->contiguous && gl_kaligned16(dst) && (a.p == NULL || gl_kaligned16(a.p)) &&
        (b.p == NULL || gl_kaligned16(b.p))) {
      typedef gl_out_t<DT, OUT> O;
      for (int64_t e0 = 0; e0 < it->n; e0 += GL_KCHUNK) {
        int64_t n = it->n - e0 < GL_KCHUNK ? it->n - e0 : GL_KCHUNK;
        unsigned grid = gl_kgrid((n / gl_vw<S>::n + gl_kb_unroll<S>::n - 1) / gl_kb_unroll<S>::n);
        gl_k_binary_vec<Op, DT, OUT><<<grid, GL_KTHREADS, 0, s>>>((uint32_t)n, (O *)dst + e0, gl_kval_at<S>(a, e0),
                                                                    gl_kval_at<S>(b, e0));
        int rc = gl_klaunched();
        if (rc != 0) return rc;
      }
      return 0;
    } else if (it->contiguous)
      gl_k_binary<Op, DT, OUT, true><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, dst, a, b);
    else
      gl_k_binary<Op, DT, OUT, false><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, dst, a, b);
    return gl_klaunched();
  }
}

extern "C" int gl_klaunch_binary(void *stream, int op, int ct, const gl_kiter *it, void *dst, gl_kval a, gl_kval b) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  switch (op) {
#define GL_X(name, ...) \
    case GL_KB_##name: return GL_DISPATCH_DTYPE_ALL(ct, DT, binary_dt<gl_b_##name, DT>(s, it, dst, a, b));
    GL_BINARY_OPS(GL_X)
#undef GL_X
    default: return GL_KERR_NOTSUP;
  }
}
