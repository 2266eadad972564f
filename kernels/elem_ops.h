/*
** elem_ops.h — the list of elementwise ops: one X-macro row per op with its Lua name, its
** kind (which real dtypes it takes and what it returns), three expressions: for float
** (float16, bfloat16 and float32 compute in float), for double, and for integers
** (computed in their own type T, wrapping like NumPy; UT is T's unsigned counterpart), and
** its complex column: whether complex64/complex128 take it, through which function of
** complex.h, and what it returns. The functions the expressions call live in elem.h and
** complex.h; this file is only the list, so the op enums in backend.h can be generated
** from it without pulling in any math.
**
** Kinds, unary:
**   UF  float math: integer inputs become float (gl_float_for: bool/uint8/int8 -> float16,
**       int16/uint16 -> float32, int32/uint32/int64/uint64 -> float64)
**   US  same dtype in and out (ints computed exactly; neg refuses bool)
**   UP  predicate: bool out (isnan, ...)
**   UL  logical not: truthiness in, bool out
**   UB  bitwise not: integer/bool only
** Kinds, binary:
**   BA  arithmetic in the promoted dtype      BD  true division / float-only math
**   BC  comparison -> bool                    BL  logical -> bool (truthiness)
**   BB  bitwise, integer/bool only            BS  shifts, integers only
** The complex column (complex operands are always of the compute dtype, as real ones):
**   NOCX     no complex kernel: the op refuses complex64 and complex128 ("not supported")
**   CX(f)    gl_complex128_f / gl_complex64_f (complex.h), a result of the complex dtype
**   CXR(f)   the same, a real result (complex64 -> float32, complex128 -> float64)
**   CXB(f)   the same, a bool result
*/
#ifndef GL_KERNELS_ELEM_OPS_H
#define GL_KERNELS_ELEM_OPS_H

#include "dtypes.h"

/* ---- the dtypes each kind takes --------------------------------------------------------- */

/* GL_KINDS_<kind>: the real dtype kinds (bool, uint, int, float) the ops of a kind have
** kernels for, on every device; GL_DTYPES_<kind> the same as a kernels/dtypes.h set. An
** op's complex kernels are its own (the complex column below): GL_OP_DTYPES(kind, cx) is
** all it takes. The CPU's row tables and the CUDA kernels are stamped from these, and the
** backends' supports() read them. */
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
/* The complex column's forms (NOCX, CX, CXR and CXB are never macros themselves: a row's
** column reaches these by pasting): GL_CX_HAS_<col> is 1 where complex dtypes take the op,
** GL_CX_FN_<col> the function's suffix, GL_CX_OUT_<col> what it returns (SAME, REAL or
** BOOL: gl_cxout's GL_CXOUT_<that>). */
#define GL_CX_HAS_NOCX 0
#define GL_CX_HAS_CX(f) 1
#define GL_CX_HAS_CXR(f) 1
#define GL_CX_HAS_CXB(f) 1
#define GL_CX_FN_CX(f) f
#define GL_CX_FN_CXR(f) f
#define GL_CX_FN_CXB(f) f
#define GL_CX_OUT_NOCX NONE
#define GL_CX_OUT_CX(f) SAME
#define GL_CX_OUT_CXR(f) REAL
#define GL_CX_OUT_CXB(f) BOOL
typedef enum gl_cxout { GL_CXOUT_NONE, GL_CXOUT_SAME, GL_CXOUT_REAL, GL_CXOUT_BOOL } gl_cxout;
/* The column's gl_cxout value. */
#define GL_CX_OUT(cx) GL_CX_OUT_V_(GL_CX_OUT_##cx)
#define GL_CX_OUT_V_(o) GL_CX_OUT_V__(o)
#define GL_CX_OUT_V__(o) GL_CXOUT_##o
/* GL_CX_IF(cx, code...): code where the op takes complex dtypes, else nothing. */
#define GL_CX_IF(cx, ...) GL_DT_IF_(GL_CX_HAS_##cx, __VA_ARGS__)
/* The dtypes an op of kind 'kind' and complex column 'cx' takes: the kind's real ones, and
** complex64/complex128 where its column names a function. */
#define GL_OP_DTYPES(kind, cx) (GL_DTYPES_##kind | GL_CX_HAS_##cx * GL_DTSET_COMPLEX)

/* The kinds, in their order (backend.h's gl_opkind). */
#define GL_OP_KINDS(X) X(UF) X(US) X(UP) X(UL) X(UB) X(BA) X(BD) X(BC) X(BL) X(BB) X(BS)
enum {
#define GL_X(kind) GL_DTYPES_##kind = GL_DTSET_OF_KINDS(GL_KINDS_##kind),
  GL_OP_KINDS(GL_X)
#undef GL_X
  GL_DTYPES_END_
};

/* ---- the ops ---------------------------------------------------------------------------- */

/* X(name, kind, float expr, double expr, integer expr, complex) over x (unary) */
#define GL_UNARY_OPS(X) \
  X(abs,        US, fabsf(x),               fabs(x),                 ((x) < 0 ? (T)(0 - (UT)(x)) : (x)), CXR(abs))       \
  X(neg,        US, -(x),                   -(x),                    (T)(0 - (UT)(x)), CX(neg))                          \
  X(sign,       US, gl_signf(x),            gl_sign(x),              (T)(((x) > 0) - ((x) < 0)), CX(sign))               \
  X(square,     US, (x) * (x),              (x) * (x),               (T)((UT)(x) * (UT)(x)), CX(square))                 \
  X(relu,       US, ((x) < 0 ? 0.0f : (x)), ((x) < 0 ? 0.0 : (x)),   ((x) < 0 ? (T)0 : (x)), NOCX)                       \
  X(floor,      US, floorf(x),              floor(x),                (x), NOCX)                                          \
  X(ceil,       US, ceilf(x),               ceil(x),                 (x), NOCX)                                          \
  X(round,      US, rintf(x),               rint(x),                 (x), CX(round))                                     \
  X(trunc,      US, truncf(x),              trunc(x),                (x), NOCX)                                          \
  X(conj,       US, (x),                    (x),                     (x), CX(conj))                                      \
  X(exp,        UF, gl_vexpf(x),            exp(x),                  0, CX(exp))                                         \
  X(expm1,      UF, gl_vexpm1f(x),          expm1(x),                0, CX(expm1))                                       \
  X(log,        UF, gl_vlogf(x),            log(x),                  0, CX(log))                                         \
  X(log1p,      UF, gl_vlog1pf(x),          log1p(x),                0, CX(log1p))                                       \
  X(log2,       UF, gl_vlog2f(x),           log2(x),                 0, CX(log2))                                        \
  X(log10,      UF, gl_vlog10f(x),          log10(x),                0, CX(log10))                                       \
  X(sqrt,       UF, sqrtf(x),               sqrt(x),                 0, CX(sqrt))                                        \
  X(rsqrt,      UF, 1.0f / sqrtf(x),        1.0 / sqrt(x),           0, CX(rsqrt))                                       \
  X(reciprocal, UF, 1.0f / (x),             1.0 / (x),               0, CX(reciprocal))                                  \
  X(sin,        UF, sinf(x),                sin(x),                  0, CX(sin))                                         \
  X(cos,        UF, cosf(x),                cos(x),                  0, CX(cos))                                         \
  X(tan,        UF, tanf(x),                tan(x),                  0, CX(tan))                                         \
  X(asin,       UF, asinf(x),               asin(x),                 0, CX(asin))                                        \
  X(acos,       UF, acosf(x),               acos(x),                 0, CX(acos))                                        \
  X(atan,       UF, atanf(x),               atan(x),                 0, CX(atan))                                        \
  X(sinh,       UF, sinhf(x),               sinh(x),                 0, CX(sinh))                                        \
  X(cosh,       UF, coshf(x),               cosh(x),                 0, CX(cosh))                                        \
  X(tanh,       UF, gl_vtanhf(x),           tanh(x),                 0, CX(tanh))                                        \
  X(asinh,      UF, asinhf(x),              asinh(x),                0, CX(asinh))                                       \
  X(acosh,      UF, acoshf(x),              acosh(x),                0, CX(acosh))                                       \
  X(atanh,      UF, atanhf(x),              atanh(x),                0, CX(atanh))                                       \
  X(sigmoid,    UF, gl_vsigmoidf(x),        gl_sigmoid(x),           0, NOCX)                                            \
  X(softplus,   UF, gl_vsoftplusf(x),       gl_softplus(x),          0, NOCX)                                            \
  X(gelu,       UF, gl_vgeluf(x),           gl_gelu(x),              0, NOCX)                                            \
  X(erf,        UF, gl_verff(x),            erf(x),                  0, NOCX)                                            \
  X(angle,      UF, atan2f(0.0f, x),        atan2(0.0, x),           0, CXR(angle))                                      \
  X(isnan,      UP, ((x) != (x)),           ((x) != (x)),            0, CXB(isnan))                                      \
  X(isinf,      UP, (fabsf(x) == INFINITY), (fabs(x) == (double)INFINITY), 0, CXB(isinf))                                \
  X(isfinite,   UP, (fabsf(x) < INFINITY),  (fabs(x) < (double)INFINITY),  1, CXB(isfinite))                             \
  X(logical_not, UL, ((x) == 0),            ((x) == 0),              ((x) == 0), CXB(logical_not))                       \
  X(bitwise_not, UB, 0,                     0,                       (T)~(UT)(x), NOCX)                                  \
  /* NumPy's and PyTorch's further float math: exp2 ... isneginf */                                                       \
  X(exp2,       UF, exp2f(x),               exp2(x),                 0, CX(exp2))                                        \
  X(cbrt,       UF, cbrtf(x),               cbrt(x),                 0, NOCX)                                            \
  X(rint,       UF, rintf(x),               rint(x),                 0, CX(rint))                                        \
  X(sinc,       UF, gl_sincf(x),            gl_sinc(x),              0, NOCX)                                            \
  X(degrees,    UF, (x) * 57.2957795130823208768f, (x) * 57.2957795130823208768, 0, NOCX)                                \
  X(radians,    UF, (x) * 0.0174532925199432957692f, (x) * 0.0174532925199432957692, 0, NOCX)                           \
  X(frac,       US, (x) - truncf(x),        (x) - trunc(x),          (T)0, NOCX)                                         \
  X(signbit,    UP, (copysignf(1.0f, x) < 0), (copysign(1.0, x) < 0), ((x) < 0), NOCX)                                  \
  X(isposinf,   UP, ((x) == INFINITY),      ((x) == (double)INFINITY), 0, NOCX)                                          \
  X(isneginf,   UP, ((x) == -INFINITY),     ((x) == -(double)INFINITY), 0, NOCX)                                       \
  /* ---- special functions (gpu.special; kernels/special.h) ---- */                                                 \
  X(erfc,       UF, (float)gl_erfc((double)(x)), gl_erfc(x), 0, NOCX)                                                  \
  X(erfcx,      UF, (float)gl_erfcx((double)(x)), gl_erfcx(x), 0, NOCX)                                                \
  X(erfinv,     UF, gl_verfinvf(x),         gl_erfinv(x),            0, NOCX)                                            \
  X(erfcinv,    UF, (float)gl_erfcinv((double)(x)), gl_erfcinv(x), 0, NOCX)                                            \
  X(lgamma,     UF, gl_lgammaf(x),          gl_gammaln(x),           0, NOCX)                                            \
  X(digamma,    UF, (float)gl_digamma((double)(x)), gl_digamma(x), 0, NOCX)                                            \
  X(ndtr,       UF, (float)gl_ndtr((double)(x)), gl_ndtr(x), 0, NOCX)                                                  \
  X(ndtri,      UF, (float)gl_ndtri((double)(x)), gl_ndtri(x), 0, NOCX)                                                \
  X(log_ndtr,   UF, (float)gl_log_ndtr((double)(x)), gl_log_ndtr(x), 0, NOCX)                                          \
  X(i0,         UF, (float)gl_i0((double)(x)), gl_i0(x), 0, NOCX)                                                      \
  X(i0e,        UF, (float)gl_i0e((double)(x)), gl_i0e(x), 0, NOCX)                                                    \
  X(i1,         UF, (float)gl_i1((double)(x)), gl_i1(x), 0, NOCX)                                                      \
  X(i1e,        UF, (float)gl_i1e((double)(x)), gl_i1e(x), 0, NOCX)                                                    \
  X(entr,       UF, (float)gl_entr((double)(x)), gl_entr(x), 0, NOCX)                                                  \
  X(logit,      UF, (float)gl_logit((double)(x)), gl_logit(x), 0, NOCX)                                                \
  X(bessel_j0,  UF, (float)gl_bessel_j0((double)(x)), gl_bessel_j0(x), 0, NOCX)                                        \
  X(bessel_j1,  UF, (float)gl_bessel_j1((double)(x)), gl_bessel_j1(x), 0, NOCX)                                        \
  X(exp1,       UF, (float)gl_exp1((double)(x)), gl_exp1(x), 0, NOCX)                                                  \
  X(expi,       UF, (float)gl_expi((double)(x)), gl_expi(x), 0, NOCX)

/* X(name, kind, float expr, double expr, integer expr, complex) over a, b (binary) */
#define GL_BINARY_OPS(X) \
  X(add,         BA, (a) + (b),             (a) + (b),               (T)((UT)(a) + (UT)(b)), CX(add))                    \
  X(sub,         BA, (a) - (b),             (a) - (b),               (T)((UT)(a) - (UT)(b)), CX(sub))                    \
  X(mul,         BA, (a) * (b),             (a) * (b),               (T)((UT)(a) * (UT)(b)), CX(mul))                    \
  X(div,         BD, (a) / (b),             (a) / (b),               0, CX(div))                                         \
  X(floordiv,    BA, gl_floordivf(a, b),    gl_floordiv(a, b),       GL_IFLOORDIV(T, UT, a, b), NOCX)                    \
  X(mod,         BA, gl_modf_(a, b),        gl_mod(a, b),            GL_IMOD(T, a, b), NOCX)                             \
  X(pow,         BA, powf(a, b),            pow(a, b),               GL_IPOW(T, a, b), CX(pow))                          \
  X(maximum,     BA, gl_maxf(a, b),         gl_max(a, b),            ((a) > (b) ? (a) : (b)), NOCX)                      \
  X(minimum,     BA, gl_minf(a, b),         gl_min(a, b),            ((a) < (b) ? (a) : (b)), NOCX)                      \
  X(atan2,       BD, atan2f(a, b),          atan2(a, b),             0, NOCX)                                            \
  X(hypot,       BD, hypotf(a, b),          hypot(a, b),             0, NOCX)                                            \
  X(logaddexp,   BD, gl_vlogaddexpf(a, b),  gl_logaddexp(a, b),      0, NOCX)                                            \
  X(lt,          BC, (a) < (b),             (a) < (b),               (a) < (b), NOCX)                                    \
  X(le,          BC, (a) <= (b),            (a) <= (b),              (a) <= (b), NOCX)                                   \
  X(gt,          BC, (a) > (b),             (a) > (b),               (a) > (b), NOCX)                                    \
  X(ge,          BC, (a) >= (b),            (a) >= (b),              (a) >= (b), NOCX)                                   \
  X(eq,          BC, (a) == (b),            (a) == (b),              (a) == (b), CXB(eq))                                \
  X(ne,          BC, (a) != (b),            (a) != (b),              (a) != (b), CXB(ne))                                \
  X(logical_and, BL, ((a) != 0 && (b) != 0), ((a) != 0 && (b) != 0), ((a) != 0 && (b) != 0), CXB(logical_and))           \
  X(logical_or,  BL, ((a) != 0 || (b) != 0), ((a) != 0 || (b) != 0), ((a) != 0 || (b) != 0), CXB(logical_or))            \
  X(logical_xor, BL, (((a) != 0) != ((b) != 0)), (((a) != 0) != ((b) != 0)), (((a) != 0) != ((b) != 0)), CXB(logical_xor)) \
  X(bitwise_and, BB, 0,                     0,                       (T)((a) & (b)), NOCX)                               \
  X(bitwise_or,  BB, 0,                     0,                       (T)((a) | (b)), NOCX)                               \
  X(bitwise_xor, BB, 0,                     0,                       (T)((a) ^ (b)), NOCX)                               \
  X(left_shift,  BS, 0,                     0,                       GL_ISHL(T, UT, a, b), NOCX)                         \
  X(right_shift, BS, 0,                     0,                       GL_ISHR(T, a, b), NOCX)                             \
  /* NumPy's further binary math: logaddexp2 ... lcm */                                                                     \
  X(logaddexp2,  BD, gl_logaddexp2f(a, b),  gl_logaddexp2(a, b),     0, NOCX)                                            \
  X(fmod,        BA, fmodf(a, b),           fmod(a, b),              GL_IFMOD(T, a, b), NOCX)                            \
  X(fmax,        BA, gl_fmaxf(a, b),        gl_fmax(a, b),           ((a) > (b) ? (a) : (b)), NOCX)                      \
  X(fmin,        BA, gl_fminf(a, b),        gl_fmin(a, b),           ((a) < (b) ? (a) : (b)), NOCX)                      \
  X(copysign,    BD, copysignf(a, b),       copysign(a, b),          0, NOCX)                                            \
  X(nextafter,   BD, nextafterf(a, b),      nextafter(a, b),         0, NOCX)                                            \
  X(heaviside,   BD, gl_heavisidef(a, b),   gl_heaviside(a, b),      0, NOCX)                                            \
  X(gcd,         BS, 0,                     0,                       GL_IGCD(T, UT, a, b), NOCX)                         \
  X(lcm,         BS, 0,                     0,                       GL_ILCM(T, UT, a, b), NOCX)                       \
  /* ---- special functions (gpu.special; kernels/special.h) ---- */                                                 \
  X(xlogy,      BD, (float)gl_xlogy((double)(a), (double)(b)), gl_xlogy(a, b), 0, NOCX)                                \
  X(xlog1py,    BD, (float)gl_xlog1py((double)(a), (double)(b)), gl_xlog1py(a, b), 0, NOCX)                            \
  X(betaln,     BD, (float)gl_betaln((double)(a), (double)(b)), gl_betaln(a, b), 0, NOCX)                              \
  X(beta,       BD, (float)gl_beta((double)(a), (double)(b)), gl_beta(a, b), 0, NOCX)                                  \
  X(zeta,       BD, (float)gl_zeta((double)(a), (double)(b)), gl_zeta(a, b), 0, NOCX)                                  \
  X(polygamma,  BD, (float)gl_polygamma((double)(a), (double)(b)), gl_polygamma(a, b), 0, NOCX)                        \
  X(gammainc,   BD, (float)gl_gammainc((double)(a), (double)(b)), gl_gammainc(a, b), 0, NOCX)                          \
  X(gammaincc,  BD, (float)gl_gammaincc((double)(a), (double)(b)), gl_gammaincc(a, b), 0, NOCX)                        \
  X(rel_entr,   BD, (float)gl_rel_entr((double)(a), (double)(b)), gl_rel_entr(a, b), 0, NOCX)

#endif
