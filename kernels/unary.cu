/*
** unary.cu — dst = op(src) for every unary op of kernels/elem_ops.h on the GPU. The math is
** elem.h's (the CPU's), stamped per (op, dtype) by templates: one functor per op from the
** X-macro row, one kernel per (functor, dtype, contiguous or strided).
*/
#include "cuda_common.cuh"
#include "elem.h"

/* The integer expressions are shared by signed and unsigned types ("x < 0" on uint8). */
#pragma nv_diag_suppress 186
#pragma nv_diag_suppress 514

/* ---- the ops as functors ---------------------------------------------------------------- */

enum {
#define GL_X(name, kind, F, D, I) GL_KU_##name,
  GL_UNARY_OPS(GL_X)
#undef GL_X
  GL_KU_N
};

/* Kinds (elem_ops.h): which input dtypes an op takes and whether it returns bool. */
enum { GL_KK_UF, GL_KK_US, GL_KK_UP, GL_KK_UL, GL_KK_UB };

#define GL_X(name, kind, F, D, I)                                                             \
  struct gl_u_##name {                                                                        \
    static constexpr int kind_ = GL_KK_##kind;                                                \
    static __device__ __forceinline__ auto f(float x) { (void)x; return F; }                  \
    static __device__ __forceinline__ auto d(double x) { (void)x; return D; }                 \
    template <class T, class UT> static __device__ __forceinline__ auto i(T x) { (void)x; return I; } \
  };
GL_UNARY_OPS(GL_X)
#undef GL_X

static constexpr bool unary_takes(int kind, int dt) {
  return kind == GL_KK_UF ? (dt == GL_KD_FLOAT16 || dt == GL_KD_BFLOAT16 || dt == GL_KD_FLOAT32 || dt == GL_KD_FLOAT64)
       : kind == GL_KK_UB ? (dt == GL_KD_UINT8 || dt == GL_KD_INT32 || dt == GL_KD_INT64)
       : true;
}

/* ---- kernels ------------------------------------------------------------------------------ */

template <class Op, int DT>
__device__ __forceinline__ auto gl_apply(typename gl_dt<DT>::S s) {
  auto x = gl_cv<DT>::load(s);
  if constexpr (gl_dt<DT>::fam == 0) return Op::f(x);
  else if constexpr (gl_dt<DT>::fam == 1) return Op::d(x);
  else return Op::template i<typename gl_dt<DT>::T, typename gl_dt<DT>::UT>(x);
}

/* Stores a result: bool out for predicates, else the input's dtype (halves rounded). */
template <int DT, bool OUTBOOL, class V>
__device__ __forceinline__ void gl_put(void *dst, int64_t i, V v) {
  if constexpr (OUTBOOL) ((uint8_t *)dst)[i] = (uint8_t)(v != 0);
  else if constexpr (DT == GL_KD_FLOAT16) ((uint16_t *)dst)[i] = gl_f32_to_f16(v);
  else if constexpr (DT == GL_KD_BFLOAT16) ((uint16_t *)dst)[i] = gl_f32_to_bf16(v);
  else ((typename gl_dt<DT>::S *)dst)[i] = (typename gl_dt<DT>::S)v;
}

template <class Op, int DT, bool OUTBOOL, bool CONTIG>
__global__ void gl_k_unary(const gl_kiter it, void *dst, const typename gl_dt<DT>::S *src) {
  GL_KLOOP(i, it.n) {
    if (CONTIG) gl_put<DT, OUTBOOL>(dst, i, gl_apply<Op, DT>(src[i]));
    else {
      int64_t off[2];
      gl_offsets<2>(it, i, off);
      gl_put<DT, OUTBOOL>(dst, off[0], gl_apply<Op, DT>(src[off[1]]));
    }
  }
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <class Op, int DT>
static int unary_dt(cudaStream_t s, const gl_kiter *it, void *dst, const void *src) {
  if constexpr (!unary_takes(Op::kind_, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    constexpr bool OB = Op::kind_ == GL_KK_UP || Op::kind_ == GL_KK_UL;
    typedef typename gl_dt<DT>::S S;
    if (it->contiguous)
      gl_k_unary<Op, DT, OB, true><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, dst, (const S *)src);
    else
      gl_k_unary<Op, DT, OB, false><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, dst, (const S *)src);
    return gl_klaunched();
  }
}

template <class Op>
static int unary_op(cudaStream_t s, int dt, const gl_kiter *it, void *dst, const void *src) {
  switch (dt) {
    case GL_KD_BOOL: return unary_dt<Op, GL_KD_BOOL>(s, it, dst, src);
    case GL_KD_UINT8: return unary_dt<Op, GL_KD_UINT8>(s, it, dst, src);
    case GL_KD_INT32: return unary_dt<Op, GL_KD_INT32>(s, it, dst, src);
    case GL_KD_INT64: return unary_dt<Op, GL_KD_INT64>(s, it, dst, src);
    case GL_KD_FLOAT16: return unary_dt<Op, GL_KD_FLOAT16>(s, it, dst, src);
    case GL_KD_BFLOAT16: return unary_dt<Op, GL_KD_BFLOAT16>(s, it, dst, src);
    case GL_KD_FLOAT32: return unary_dt<Op, GL_KD_FLOAT32>(s, it, dst, src);
    case GL_KD_FLOAT64: return unary_dt<Op, GL_KD_FLOAT64>(s, it, dst, src);
    default: return GL_KERR_NOTSUP;
  }
}

extern "C" int gl_klaunch_unary(void *stream, int op, int dt, const gl_kiter *it, void *dst, const void *src) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  switch (op) {
#define GL_X(name, kind, F, D, I) case GL_KU_##name: return unary_op<gl_u_##name>(s, dt, it, dst, src);
    GL_UNARY_OPS(GL_X)
#undef GL_X
    default: return GL_KERR_NOTSUP;
  }
}
