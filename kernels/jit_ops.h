/*
** jit_ops.h — the element math of gpulua's own ops as functions for the code gpu.fuse
** generates (part of the prelude of every kernel compiled at run time, after elem.h), so
** a fused a:exp() * b computes exactly what the unfused ops compute: gl_jf_<op> in float
** (float16, bfloat16, float32), gl_jd_<op> in double, gl_j<id>_<op> on each integer dtype
** (gl_jint32_add; bool computes in uint8's), wrapping as elem_ops.h's integer expressions
** do, and on each complex dtype (gl_jcomplex64_exp: complex.h's function of the op's
** complex column), stamped from kernels/dtypes.h's rows. An op without an expression
** for a type (0 in its row, NOCX) is never called for it: the trace asked the op itself
** first.
*/
#ifndef GL_KERNELS_JIT_OPS_H
#define GL_KERNELS_JIT_OPS_H

#include "elem.h"
#include "jit_abi.h"   /* GL_JIT_FN */

/* The integer functions of op (name, I), one per integer row (bool shares uint8's). */
#define GL_JIT_INTS_(ROW, name, I) GL_DTYPE_ROWS_(ROW, (name, I))
#define GL_JIT_INT_ROW_(F, c, E, id, S, kind, half, CT, UT, ...) \
  GL_DT_WHEN(kind, (0, 1, 1, 0), GL_JIT_CALL_(F, GL_DT_UNPAREN_ c, CT, UT, id))
#define GL_JIT_CALL_(F, ...) F(__VA_ARGS__)

/* The complex functions of op (name, cx), one per complex row: what the op's column
** names, returning what it returns. */
#define GL_JIT_CXS_(ROW, name, cx) GL_CX_IF(cx, GL_DTYPE_ROWS_(ROW, (name, cx)))
#define GL_JIT_CX_ROW_(F, c, E, id, S, kind, ...) GL_DT_IF_(GL_JIT_IS_CX_##kind, GL_JIT_CALL_(F, GL_DT_UNPAREN_ c, S, id))
#define GL_JIT_IS_CX_BOOL 0
#define GL_JIT_IS_CX_UINT 0
#define GL_JIT_IS_CX_INT 0
#define GL_JIT_IS_CX_FLOAT 0
#define GL_JIT_IS_CX_COMPLEX 1
#define GL_JIT_CX_FN_(id, cx) GL_JIT_CX_FN__(id, GL_CX_FN_##cx)
#define GL_JIT_CX_FN__(id, f) GL_JIT_CX_FN___(id, f)
#define GL_JIT_CX_FN___(id, f) gl_##id##_##f
#define GL_JIT_CX_T_(cx, S) GL_JIT_CX_T__(GL_CX_OUT_##cx, S)
#define GL_JIT_CX_T__(out, S) GL_JIT_CX_T___(out, S)
#define GL_JIT_CX_T___(out, S) GL_JIT_CX_T_##out(S)
#define GL_JIT_CX_T_SAME(S) S
#define GL_JIT_CX_T_REAL(S) GL_JIT_REAL_##S
#define GL_JIT_CX_T_BOOL(S) int
#define GL_JIT_REAL_gl_complex64 float
#define GL_JIT_REAL_gl_complex128 double

#define GL_JIT_INT1_(name, I, TT, UUT, sfx) \
  GL_JIT_FN TT gl_j##sfx##_##name(TT x) { typedef TT T; typedef UUT UT; (void)sizeof(UT); return (T)(I); }
#define GL_JIT_INT1_ROW_(c, ...) GL_JIT_INT_ROW_(GL_JIT_INT1_, c, __VA_ARGS__)
#define GL_JIT_CX1_(name, cx, S, id) \
  GL_JIT_FN GL_JIT_CX_T_(cx, S) gl_j##id##_##name(S x) { return GL_JIT_CX_FN_(id, cx)(x); }
#define GL_JIT_CX1_ROW_(c, ...) GL_JIT_CX_ROW_(GL_JIT_CX1_, c, __VA_ARGS__)
#define GL_JIT_UNARY_(name, kind, F, D, I, cx)                 \
  GL_JIT_FN float gl_jf_##name(float x) { return (float)(F); } \
  GL_JIT_FN double gl_jd_##name(double x) { return (double)(D); } \
  GL_JIT_INTS_(GL_JIT_INT1_ROW_, name, I) \
  GL_JIT_CXS_(GL_JIT_CX1_ROW_, name, cx)
GL_UNARY_OPS(GL_JIT_UNARY_)

#define GL_JIT_INT2_(name, I, TT, UUT, sfx) \
  GL_JIT_FN TT gl_j##sfx##_##name(TT a, TT b) { typedef TT T; typedef UUT UT; (void)sizeof(UT); return (T)(I); }
#define GL_JIT_INT2_ROW_(c, ...) GL_JIT_INT_ROW_(GL_JIT_INT2_, c, __VA_ARGS__)
#define GL_JIT_CX2_(name, cx, S, id) \
  GL_JIT_FN GL_JIT_CX_T_(cx, S) gl_j##id##_##name(S a, S b) { return GL_JIT_CX_FN_(id, cx)(a, b); }
#define GL_JIT_CX2_ROW_(c, ...) GL_JIT_CX_ROW_(GL_JIT_CX2_, c, __VA_ARGS__)
#define GL_JIT_BINARY_(name, kind, F, D, I, cx)                           \
  GL_JIT_FN float gl_jf_##name(float a, float b) { return (float)(F); }    \
  GL_JIT_FN double gl_jd_##name(double a, double b) { return (double)(D); } \
  GL_JIT_INTS_(GL_JIT_INT2_ROW_, name, I) \
  GL_JIT_CXS_(GL_JIT_CX2_ROW_, name, cx)
GL_BINARY_OPS(GL_JIT_BINARY_)

#endif
