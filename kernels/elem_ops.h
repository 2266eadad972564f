/*
** elem_ops.h — the list of elementwise ops: one X-macro row per op with its Lua name, its
** kind (which dtypes it takes and what it returns) and three expressions: for float
** (float16, bfloat16 and float32 compute in float), for double, and for integers
** (computed in their own type T, wrapping like NumPy; UT is T's unsigned counterpart).
** The functions the expressions call live in elem.h; this file is only the list, so the
** op enums in backend.h can be generated from it without pulling in any math.
**
** Kinds, unary:
**   UF  float math: integer inputs become float (NumPy: bool/uint8 -> float16,
**       int32/int64 -> float64)
**   US  same dtype in and out (ints computed exactly; neg refuses bool)
**   UP  predicate: bool out (isnan, ...)
**   UL  logical not: truthiness in, bool out
**   UB  bitwise not: integer/bool only
** Kinds, binary:
**   BA  arithmetic in the promoted dtype      BD  true division / float-only math
**   BC  comparison -> bool                    BL  logical -> bool (truthiness)
**   BB  bitwise, integer/bool only            BS  shifts, integers only
*/
#ifndef GL_KERNELS_ELEM_OPS_H
#define GL_KERNELS_ELEM_OPS_H

#include "dtypes.h"

/* ---- the dtypes each kind takes --------------------------------------------------------- */

/* GL_KINDS_<kind>: the dtype kinds (bool, uint, int, float) the ops of a kind have kernels
** for, on every device; GL_DTYPES_<kind> the same as a kernels/dtypes.h set. The CPU's row
** tables and the CUDA kernels are stamped from these, and the backends' supports() read
** them. */
#define GL_KINDS_UF (0, 0, 0, 1)
#define GL_KINDS_US (1, 1, 1, 1)
#define GL_KINDS_UP (1, 1, 1, 1)
#define GL_KINDS_UL (1, 1, 1, 1)
#define GL_KINDS_UB (0, 1, 1, 0)
#define GL_KINDS_BA (0, 1, 1, 1)
#define GL_KINDS_BD (0, 0, 0, 1)
#define GL_KINDS_BC (1, 1, 1, 1)
#define GL_KINDS_BL (1, 1, 1, 1)
#define GL_KINDS_BB (1, 1, 1, 0)
#define GL_KINDS_BS (0, 1, 1, 0)
/* The kinds, in their order (backend.h's gl_opkind). */
#define GL_OP_KINDS(X) X(UF) X(US) X(UP) X(UL) X(UB) X(BA) X(BD) X(BC) X(BL) X(BB) X(BS)
enum {
#define GL_X(kind) GL_DTYPES_##kind = GL_DTSET_OF_KINDS(GL_KINDS_##kind),
  GL_OP_KINDS(GL_X)
#undef GL_X
  GL_DTYPES_END_
};

/* ---- the ops ---------------------------------------------------------------------------- */

/* X(name, kind, float expr, double expr, integer expr) over x (unary) */
#define GL_UNARY_OPS(X) \
  X(abs,        US, fabsf(x),               fabs(x),                 ((x) < 0 ? (T)(0 - (UT)(x)) : (x))) \
  X(neg,        US, -(x),                   -(x),                    (T)(0 - (UT)(x)))    \
  X(sign,       US, gl_signf(x),            gl_sign(x),              (T)(((x) > 0) - ((x) < 0))) \
  X(square,     US, (x) * (x),              (x) * (x),               (T)((UT)(x) * (UT)(x))) \
  X(relu,       US, ((x) < 0 ? 0.0f : (x)), ((x) < 0 ? 0.0 : (x)),   ((x) < 0 ? (T)0 : (x))) \
  X(floor,      US, floorf(x),              floor(x),                (x))                 \
  X(ceil,       US, ceilf(x),               ceil(x),                 (x))                 \
  X(round,      US, rintf(x),               rint(x),                 (x))                 \
  X(trunc,      US, truncf(x),              trunc(x),                (x))                 \
  X(exp,        UF, gl_vexpf(x),            exp(x),                  0)                   \
  X(expm1,      UF, gl_vexpm1f(x),          expm1(x),                0)                   \
  X(log,        UF, gl_vlogf(x),            log(x),                  0)                   \
  X(log1p,      UF, gl_vlog1pf(x),          log1p(x),                0)                   \
  X(log2,       UF, gl_vlog2f(x),           log2(x),                 0)                   \
  X(log10,      UF, gl_vlog10f(x),          log10(x),                0)                   \
  X(sqrt,       UF, sqrtf(x),               sqrt(x),                 0)                   \
  X(rsqrt,      UF, 1.0f / sqrtf(x),        1.0 / sqrt(x),           0)                   \
  X(reciprocal, UF, 1.0f / (x),             1.0 / (x),               0)                   \
  X(sin,        UF, sinf(x),            sin(x),                  0)                   \
  X(cos,        UF, cosf(x),            cos(x),                  0)                   \
  X(tan,        UF, tanf(x),                tan(x),                  0)                   \
  X(asin,       UF, asinf(x),               asin(x),                 0)                   \
  X(acos,       UF, acosf(x),               acos(x),                 0)                   \
  X(atan,       UF, atanf(x),               atan(x),                 0)                   \
  X(sinh,       UF, sinhf(x),               sinh(x),                 0)                   \
  X(cosh,       UF, coshf(x),               cosh(x),                 0)                   \
  X(tanh,       UF, gl_vtanhf(x),           tanh(x),                 0)                   \
  X(sigmoid,    UF, gl_vsigmoidf(x),        gl_sigmoid(x),           0)                   \
  X(softplus,   UF, gl_vsoftplusf(x),       gl_softplus(x),          0)                   \
  X(gelu,       UF, gl_vgeluf(x),           gl_gelu(x),              0)                   \
  X(erf,        UF, gl_verff(x),            erf(x),                  0)                   \
  X(isnan,      UP, ((x) != (x)),           ((x) != (x)),            0)                   \
  X(isinf,      UP, (fabsf(x) == INFINITY), (fabs(x) == (double)INFINITY), 0)             \
  X(isfinite,   UP, (fabsf(x) < INFINITY),  (fabs(x) < (double)INFINITY),  1)             \
  X(logical_not, UL, ((x) == 0),            ((x) == 0),              ((x) == 0))          \
  X(bitwise_not, UB, 0,                     0,                       (T)~(UT)(x))

/* X(name, kind, float expr, double expr, integer expr) over a, b (binary) */
#define GL_BINARY_OPS(X) \
  X(add,         BA, (a) + (b),             (a) + (b),               (T)((UT)(a) + (UT)(b))) \
  X(sub,         BA, (a) - (b),             (a) - (b),               (T)((UT)(a) - (UT)(b))) \
  X(mul,         BA, (a) * (b),             (a) * (b),               (T)((UT)(a) * (UT)(b))) \
  X(div,         BD, (a) / (b),             (a) / (b),               0)                   \
  X(floordiv,    BA, gl_floordivf(a, b),    gl_floordiv(a, b),       GL_IFLOORDIV(T, UT, a, b)) \
  X(mod,         BA, gl_modf_(a, b),        gl_mod(a, b),            GL_IMOD(T, a, b))    \
  X(pow,         BA, powf(a, b),            pow(a, b),               (T)gl_ipow(a, b))    \
  X(maximum,     BA, gl_maxf(a, b),         gl_max(a, b),            ((a) > (b) ? (a) : (b))) \
  X(minimum,     BA, gl_minf(a, b),         gl_min(a, b),            ((a) < (b) ? (a) : (b))) \
  X(atan2,       BD, atan2f(a, b),          atan2(a, b),             0)                   \
  X(hypot,       BD, hypotf(a, b),          hypot(a, b),             0)                   \
  X(logaddexp,   BD, gl_vlogaddexpf(a, b),  gl_logaddexp(a, b),      0)                   \
  X(lt,          BC, (a) < (b),             (a) < (b),               (a) < (b))           \
  X(le,          BC, (a) <= (b),            (a) <= (b),              (a) <= (b))          \
  X(gt,          BC, (a) > (b),             (a) > (b),               (a) > (b))           \
  X(ge,          BC, (a) >= (b),            (a) >= (b),              (a) >= (b))          \
  X(eq,          BC, (a) == (b),            (a) == (b),              (a) == (b))          \
  X(ne,          BC, (a) != (b),            (a) != (b),              (a) != (b))          \
  X(logical_and, BL, ((a) != 0 && (b) != 0), ((a) != 0 && (b) != 0), ((a) != 0 && (b) != 0)) \
  X(logical_or,  BL, ((a) != 0 || (b) != 0), ((a) != 0 || (b) != 0), ((a) != 0 || (b) != 0)) \
  X(logical_xor, BL, (((a) != 0) != ((b) != 0)), (((a) != 0) != ((b) != 0)), (((a) != 0) != ((b) != 0))) \
  X(bitwise_and, BB, 0,                     0,                       (T)((a) & (b)))      \
  X(bitwise_or,  BB, 0,                     0,                       (T)((a) | (b)))      \
  X(bitwise_xor, BB, 0,                     0,                       (T)((a) ^ (b)))      \
  X(left_shift,  BS, 0,                     0,                       GL_ISHL(T, UT, a, b)) \
  X(right_shift, BS, 0,                     0,                       GL_ISHR(T, a, b))

#endif
