/*
** binary.cu — dst = a op b for every binary op of kernels/elem_ops.h on the GPU, operands
** in the compute dtype, broadcast by 0 strides; a scalar operand arrives by value (its bits
** already in the compute dtype) instead of as a device buffer. The math is elem.h's (the
** CPU's), stamped per (op, dtype) by templates.
*/
#include "cuda_common.cuh"
#include "elem.h"

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

/* Kinds (elem_ops.h): which dtypes an op takes and whether it returns bool. */
enum { GL_KK_BA, GL_KK_BD, GL_KK_BC, GL_KK_BL, GL_KK_BB, GL_KK_BS };

#define GL_X(name, kind, F, D, I)                                                             \
  struct gl_b_##name {                                                                        \
    static constexpr int kind_ = GL_KK_##kind;                                                \
    static __device__ __forceinline__ auto f(float a, float b) { (void)a; (void)b; return F; } \
    static __device__ __forceinline__ auto d(double a, double b) { (void)a; (void)b; return D; } \
    template <class T, class UT>                                                              \
    static __device__ __forceinline__ auto i(T a, T b) { (void)a; (void)b; return I; }       \
  };
GL_BINARY_OPS(GL_X)
#undef GL_X

static constexpr bool is_float(int dt) {
  return dt == GL_KD_FLOAT16 || dt == GL_KD_BFLOAT16 || dt == GL_KD_FLOAT32 || dt == GL_KD_FLOAT64;
}
static constexpr bool is_int(int dt) { return dt == GL_KD_UINT8 || dt == GL_KD_INT32 || dt == GL_KD_INT64; }

/* The same table as cpu_elem.c's binary_table. */
static constexpr bool binary_takes(int kind, int dt) {
  return kind == GL_KK_BA ? (is_float(dt) || is_int(dt))
       : kind == GL_KK_BD ? is_float(dt)
       : kind == GL_KK_BB ? (is_int(dt) || dt == GL_KD_BOOL)
       : kind == GL_KK_BS ? is_int(dt)
       : true;
}

/* ---- kernels ------------------------------------------------------------------------------ */

template <int DT>
using gl_ct = decltype(gl_cv<DT>::load(typename gl_dt<DT>::S()));

template <class Op, int DT>
__device__ __forceinline__ auto gl_apply(gl_ct<DT> a, gl_ct<DT> b) {
  if constexpr (gl_dt<DT>::fam == 0) return Op::f(a, b);
  else if constexpr (gl_dt<DT>::fam == 1) return Op::d(a, b);
  else return Op::template i<typename gl_dt<DT>::T, typename gl_dt<DT>::UT>(a, b);
}

template <int DT, bool OUTBOOL, class V>
__device__ __forceinline__ void gl_put(void *dst, int64_t i, V v) {
  if constexpr (OUTBOOL) ((uint8_t *)dst)[i] = (uint8_t)(v != 0);
  else if constexpr (DT == GL_KD_FLOAT16) ((uint16_t *)dst)[i] = gl_f32_to_f16(v);
  else if constexpr (DT == GL_KD_BFLOAT16) ((uint16_t *)dst)[i] = gl_f32_to_bf16(v);
  else ((typename gl_dt<DT>::S *)dst)[i] = (typename gl_dt<DT>::S)v;
}

/* a or b NULL: that operand is the scalar whose bits are in abits / bbits. */
template <class Op, int DT, bool OUTBOOL, bool CONTIG>
__global__ void gl_k_binary(const gl_kiter it, void *dst, const typename gl_dt<DT>::S *a, uint64_t abits,
                            const typename gl_dt<DT>::S *b, uint64_t bbits) {
  const gl_ct<DT> as = gl_cv<DT>::load(gl_from_bits<DT>(abits));
  const gl_ct<DT> bs = gl_cv<DT>::load(gl_from_bits<DT>(bbits));
  GL_KLOOP(i, it.n) {
    if (CONTIG) {
      gl_ct<DT> x = a ? gl_cv<DT>::load(a[i]) : as;
      gl_ct<DT> y = b ? gl_cv<DT>::load(b[i]) : bs;
      gl_put<DT, OUTBOOL>(dst, i, gl_apply<Op, DT>(x, y));
    } else {
      int64_t off[3];
      gl_offsets<3>(it, i, off);
      gl_ct<DT> x = a ? gl_cv<DT>::load(a[off[1]]) : as;
      gl_ct<DT> y = b ? gl_cv<DT>::load(b[off[2]]) : bs;
      gl_put<DT, OUTBOOL>(dst, off[0], gl_apply<Op, DT>(x, y));
    }
  }
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <class Op, int DT>
static int binary_dt(cudaStream_t s, const gl_kiter *it, void *dst, gl_kval a, gl_kval b) {
  if constexpr (!binary_takes(Op::kind_, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    constexpr bool OB = Op::kind_ == GL_KK_BC || Op::kind_ == GL_KK_BL;
    typedef typename gl_dt<DT>::S S;
    if (it->contiguous)
      gl_k_binary<Op, DT, OB, true><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(
          *it, dst, (const S *)a.p, a.bits, (const S *)b.p, b.bits);
    else
      gl_k_binary<Op, DT, OB, false><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(
          *it, dst, (const S *)a.p, a.bits, (const S *)b.p, b.bits);
    return gl_klaunched();
  }
}

template <class Op>
static int binary_op(cudaStream_t s, int ct, const gl_kiter *it, void *dst, gl_kval a, gl_kval b) {
  switch (ct) {
    case GL_KD_BOOL: return binary_dt<Op, GL_KD_BOOL>(s, it, dst, a, b);
    case GL_KD_UINT8: return binary_dt<Op, GL_KD_UINT8>(s, it, dst, a, b);
    case GL_KD_INT32: return binary_dt<Op, GL_KD_INT32>(s, it, dst, a, b);
    case GL_KD_INT64: return binary_dt<Op, GL_KD_INT64>(s, it, dst, a, b);
    case GL_KD_FLOAT16: return binary_dt<Op, GL_KD_FLOAT16>(s, it, dst, a, b);
    case GL_KD_BFLOAT16: return binary_dt<Op, GL_KD_BFLOAT16>(s, it, dst, a, b);
    case GL_KD_FLOAT32: return binary_dt<Op, GL_KD_FLOAT32>(s, it, dst, a, b);
    case GL_KD_FLOAT64: return binary_dt<Op, GL_KD_FLOAT64>(s, it, dst, a, b);
    default: return GL_KERR_NOTSUP;
  }
}

extern "C" int gl_klaunch_binary(void *stream, int op, int ct, const gl_kiter *it, void *dst, gl_kval a, gl_kval b) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  switch (op) {
#define GL_X(name, kind, F, D, I) case GL_KB_##name: return binary_op<gl_b_##name>(s, ct, it, dst, a, b);
    GL_BINARY_OPS(GL_X)
#undef GL_X
    default: return GL_KERR_NOTSUP;
  }
}
