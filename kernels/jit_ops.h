/*
** jit_ops.h — the element math of gpulua's own ops as functions for the code gpu.fuse
** generates (part of the prelude of every kernel compiled at run time, after elem.h), so
** a fused a:exp() * b computes exactly what the unfused ops compute: gl_jf_<op> in float
** (float16, bfloat16, float32), gl_jd_<op> in double, gl_ji32_, gl_ji64_, gl_ju8_ on the
** integers (wrapping as elem_ops.h's integer expressions do). An op without an expression
** for a type (0 in its row) is never called for it: the trace asked the op itself first.
*/
#ifndef GL_KERNELS_JIT_OPS_H
#define GL_KERNELS_JIT_OPS_H

#include "elem.h"
#include "jit_abi.h"   /* GL_JIT_FN */

#define GL_JIT_INT1_(name, I, TT, UUT, sfx) \
  GL_JIT_FN TT gl_j##sfx##_##name(TT x) { typedef TT T; typedef UUT UT; (void)sizeof(UT); return (T)(I); }
#define GL_JIT_UNARY_(name, kind, F, D, I)                     \
  GL_JIT_FN float gl_jf_##name(float x) { return (float)(F); } \
  GL_JIT_FN double gl_jd_##name(double x) { return (double)(D); } \
  GL_JIT_INT1_(name, I, int32_t, uint32_t, i32) GL_JIT_INT1_(name, I, int64_t, uint64_t, i64) \
  GL_JIT_INT1_(name, I, uint8_t, uint32_t, u8)
GL_UNARY_OPS(GL_JIT_UNARY_)

#define GL_JIT_INT2_(name, I, TT, UUT, sfx) \
  GL_JIT_FN TT gl_j##sfx##_##name(TT a, TT b) { typedef TT T; typedef UUT UT; (void)sizeof(UT); return (T)(I); }
#define GL_JIT_BINARY_(name, kind, F, D, I)                               \
  GL_JIT_FN float gl_jf_##name(float a, float b) { return (float)(F); }    \
  GL_JIT_FN double gl_jd_##name(double a, double b) { return (double)(D); } \
  GL_JIT_INT2_(name, I, int32_t, uint32_t, i32) GL_JIT_INT2_(name, I, int64_t, uint64_t, i64) \
  GL_JIT_INT2_(name, I, uint8_t, uint32_t, u8)
GL_BINARY_OPS(GL_JIT_BINARY_)

#endif
