/*
** binary.cu — dst = a op b for every binary op of kernels/elem_ops.h on the GPU, operands
** in the compute dtype, broadcast by 0 strides; a scalar operand arrives by value (its bits
** already in the compute dtype) instead of as a device buffer. The math is elem.h's (the
** CPU's), stamped per (op, dtype) by templates.
*/
#include "cuda_common.cuh"
#include "elem.h"
#include <type_traits>

/* The integer expressions are shared by signed and unsigned types ("b < 0" on uint8). */
#pragma nv_diag_suppress 186
#pragma nv_diag_suppress 514

/* ---- the ops as functors ---------------------------------------------------------------- */

enum {
#define GL_X(name, kind, F, D, I) GL_KB_##name,
  GL_BINARY_OPS(GL_X)
#undef GL_X
  GL_KB_N
};

/* Kinds (elem_ops.h): whether an op returns bool; GL_DTYPES_<kind> which dtypes it takes. */
enum { GL_KK_BA, GL_KK_BD, GL_KK_BC, GL_KK_BL, GL_KK_BB, GL_KK_BS };

#define GL_X(name, kind, F, D, I)                                                             \
  struct gl_b_##name {                                                                        \
    static constexpr int kind_ = GL_KK_##kind, dtypes_ = GL_DTYPES_##kind;                    \
    static __device__ __forceinline__ auto f(float a, float b) { (void)a; (void)b; return F; } \
    static __device__ __forceinline__ auto d(double a, double b) { (void)a; (void)b; return D; } \
    template <class T, class UT>                                                              \
    static __device__ __forceinline__ auto i(T a, T b) { (void)a; (void)b; return I; }       \
  };
GL_BINARY_OPS(GL_X)
#undef GL_X

/* ---- kernels ------------------------------------------------------------------------------ */

template <int DT>
using gl_ct = decltype(gl_dt<DT>::load(typename gl_dt<DT>::S()));

template <class Op, int DT>
__device__ __forceinline__ auto gl_apply(gl_ct<DT> a, gl_ct<DT> b) {
  if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT32) return Op::f(a, b);
  else if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT64) return Op::d(a, b);
  else return Op::template i<typename gl_dt<DT>::T, typename gl_dt<DT>::UT>(a, b);
}

/* a or b NULL: that operand is the scalar whose bits are in abits / bbits. */
template <class Op, int DT, bool OUTBOOL, bool CONTIG>
__global__ void gl_k_binary(const gl_kiter it, void *dst, const typename gl_dt<DT>::S *a, uint64_t abits,
                            const typename gl_dt<DT>::S *b, uint64_t bbits) {
  const gl_ct<DT> as = gl_dt<DT>::load(gl_from_bits<DT>(abits));
  const gl_ct<DT> bs = gl_dt<DT>::load(gl_from_bits<DT>(bbits));
  GL_KLOOP(i, it.n) {
    if (CONTIG) {
      gl_ct<DT> x = a ? gl_dt<DT>::load(a[i]) : as;
      gl_ct<DT> y = b ? gl_dt<DT>::load(b[i]) : bs;
      gl_put<DT, OUTBOOL>(dst, i, gl_apply<Op, DT>(x, y));
    } else {
      int64_t off[3];
      gl_offsets<3>(it, i, off);
      gl_ct<DT> x = a ? gl_dt<DT>::load(a[off[1]]) : as;
      gl_ct<DT> y = b ? gl_dt<DT>::load(b[off[2]]) : bs;
      gl_put<DT, OUTBOOL>(dst, off[0], gl_apply<Op, DT>(x, y));
    }
  }
}

/* The contiguous fast path, for dst and array operands all 16-byte aligned: 16 bytes of each
** operand per access (VEC elements: 2 float64, 4 float32, 8 float16, 16 bool), U accesses of
** each in flight per thread before any store (2 for 8-byte and 4-byte elements, 1 where 16
** bytes already hold 8 or 16 elements: more would spill registers), a grid-stride loop over
** the n / VEC vectors on a grid of one wave; the n % VEC last elements take one thread each.
** Indices are 32-bit: the launcher cuts bigger arrays into GL_KCHUNK-element launches. dst
** may be an operand itself (an in-place op): each thread reads its elements before it
** writes them. */
template <class S> struct gl_kb_unroll { enum { n = gl_vw<S>::n >= 8 ? 1 : 2 }; };

template <class Op, int DT, bool OUTBOOL>
__global__ void __launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)
gl_k_binary_vec(uint32_t n, void *dst, const typename gl_dt<DT>::S *a, uint64_t abits,
                const typename gl_dt<DT>::S *b, uint64_t bbits) {
  typedef typename gl_dt<DT>::S S;
  constexpr int VEC = gl_vw<S>::n, U = gl_kb_unroll<S>::n;
  typedef gl_pack<S, VEC> PI;
  typedef gl_pack<gl_out_t<DT, OUTBOOL>, VEC> PO;
  const gl_ct<DT> as = gl_dt<DT>::load(gl_from_bits<DT>(abits));
  const gl_ct<DT> bs = gl_dt<DT>::load(gl_from_bits<DT>(bbits));
  const uint32_t nv = n / VEC, stride = blockDim.x * gridDim.x;
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  for (uint32_t i = t; i < nv; i += U * stride) {
    PI x[U], y[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      uint32_t j = i + u * stride;
      if (j < nv) {
        if (a) x[u] = ((const PI *)a)[j];
        if (b) y[u] = ((const PI *)b)[j];
      }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      uint32_t j = i + u * stride;
      if (j < nv) {
        PO o;
#pragma unroll
        for (int k = 0; k < VEC; k++)
          o.v[k] = gl_out<DT, OUTBOOL>(gl_apply<Op, DT>(a ? gl_dt<DT>::load(x[u].v[k]) : as,
                                                        b ? gl_dt<DT>::load(y[u].v[k]) : bs));
        ((PO *)dst)[j] = o;
      }
    }
  }
  uint32_t e = nv * VEC + t;                    /* the tail: fewer than VEC elements */
  if (e < n) {
    gl_ct<DT> x = a ? gl_dt<DT>::load(a[e]) : as;
    gl_ct<DT> y = b ? gl_dt<DT>::load(b[e]) : bs;
    gl_put<DT, OUTBOOL>(dst, (int64_t)e, gl_apply<Op, DT>(x, y));
  }
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <class Op, int DT>
static int binary_dt(cudaStream_t s, const gl_kiter *it, void *dst, gl_kval a, gl_kval b) {
  if constexpr (!GL_DT_IN(Op::dtypes_, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    constexpr bool OB = Op::kind_ == GL_KK_BC || Op::kind_ == GL_KK_BL;
    typedef typename gl_dt<DT>::S S;
    if (it->contiguous && gl_kaligned16(dst) && (a.p == NULL || gl_kaligned16(a.p)) &&
        (b.p == NULL || gl_kaligned16(b.p))) {
      typedef gl_out_t<DT, OB> O;
      const S *pa = (const S *)a.p, *pb = (const S *)b.p;
      for (int64_t e0 = 0; e0 < it->n; e0 += GL_KCHUNK) {
        int64_t n = it->n - e0 < GL_KCHUNK ? it->n - e0 : GL_KCHUNK;
        unsigned grid = gl_kgrid((n / gl_vw<S>::n + gl_kb_unroll<S>::n - 1) / gl_kb_unroll<S>::n);
        gl_k_binary_vec<Op, DT, OB><<<grid, GL_KTHREADS, 0, s>>>(
            (uint32_t)n, (O *)dst + e0, pa ? pa + e0 : NULL, a.bits[0], pb ? pb + e0 : NULL, b.bits[0]);
        int rc = gl_klaunched();
        if (rc != 0) return rc;
      }
      return 0;
    } else if (it->contiguous)
      gl_k_binary<Op, DT, OB, true><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(
          *it, dst, (const S *)a.p, a.bits[0], (const S *)b.p, b.bits[0]);
    else
      gl_k_binary<Op, DT, OB, false><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(
          *it, dst, (const S *)a.p, a.bits[0], (const S *)b.p, b.bits[0]);
    return gl_klaunched();
  }
}

extern "C" int gl_klaunch_binary(void *stream, int op, int ct, const gl_kiter *it, void *dst, gl_kval a, gl_kval b) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  switch (op) {
#define GL_X(name, kind, F, D, I) \
    case GL_KB_##name: return GL_DISPATCH_DTYPE(ct, DT, binary_dt<gl_b_##name, DT>(s, it, dst, a, b));
    GL_BINARY_OPS(GL_X)
#undef GL_X
    default: return GL_KERR_NOTSUP;
  }
}
