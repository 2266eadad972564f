/*
** elem.h — the math of every elementwise op (the list is in elem_ops.h), written once for
** gcc (CPU loops) and nvcc (CUDA kernels). Helpers here give NumPy's semantics where C's
** operators differ: NaN-propagating max/min, Python's floor division and modulo, integer
** division by zero, wrapping integer arithmetic without undefined behaviour. The complex
** math is complex.h's; its complex64 forms are stamped here from the op list.
*/
#ifndef GL_KERNELS_ELEM_H
#define GL_KERNELS_ELEM_H

#include <math.h>
#include <stdint.h>
#include "half.h"
#include "elem_ops.h"
#include "vmath.h"
#include "complex.h"
#include "special.h"

/* ---- helpers with NumPy's semantics ------------------------------------------------ */

GL_HD float gl_signf(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x; }      /* nan, ±0 kept */
GL_HD double gl_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
GL_HD float gl_maxf(float a, float b) { return (a != a || a > b) ? a : b; }      /* nan wins */
GL_HD float gl_minf(float a, float b) { return (a != a || a < b) ? a : b; }
GL_HD double gl_max(double a, double b) { return (a != a || a > b) ? a : b; }
GL_HD double gl_min(double a, double b) { return (a != a || a < b) ? a : b; }

/* Python's floor division and modulo for floats (the result of % takes b's sign). */
GL_HD double gl_floordiv(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return copysign(0.0, a / b);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1.0 : fl;
}
GL_HD double gl_mod(double a, double b) {
  if (b == 0) return fmod(a, b);                    /* nan */
  double m = fmod(a, b);
  if (m != 0) { if ((b < 0) != (m < 0)) m += b; }
  else m = copysign(0.0, b);
  return m;
}
GL_HD float gl_floordivf(float a, float b) { return (float)gl_floordiv((double)a, (double)b); }
GL_HD float gl_modf_(float a, float b) { return (float)gl_mod((double)a, (double)b); }

/* Integer floor division and modulo; division by zero gives 0 (NumPy also gives 0, with
** a warning), and MIN / -1 wraps instead of trapping. GL_IS_MINUS_ONE holds only for a
** signed -1 (an unsigned type's largest value is not -1). */
#define GL_IS_MINUS_ONE(b) ((b) < 0 && (b) + 1 == 0)
#define GL_IFLOORDIV(T, UT, a, b) \
  ((b) == 0 ? (T)0 : GL_IS_MINUS_ONE(b) ? (T)(0 - (UT)(a)) \
   : (T)((a) / (b) - (((a) % (b) != 0) && (((a) < 0) != ((b) < 0)))))
#define GL_IMOD(T, a, b) \
  ((b) == 0 || GL_IS_MINUS_ONE(b) ? (T)0 \
   : (T)((a) % (b) + ((((a) % (b)) != 0 && ((((a) % (b)) < 0) != ((b) < 0))) ? (b) : 0)))

/* Integer power by squaring, wrapping; a negative exponent gives the truncated real
** result (0 unless the base is 1 or -1), where NumPy raises. An unsigned exponent is never
** negative (uint64 above 2^63 included): GL_IPOW picks gl_upow for unsigned T. */
GL_HD uint64_t gl_upow(uint64_t x, uint64_t b) {
  uint64_t r = 1;
  while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }
  return r;
}
GL_HD int64_t gl_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  return (int64_t)gl_upow((uint64_t)a, (uint64_t)b);
}
#define GL_IPOW(T, a, b) ((T)-1 > 0 ? (T)gl_upow((uint64_t)(a), (uint64_t)(b)) : (T)gl_ipow(a, b))

/* Shifts by a count outside 0..bits-1 (negative ones included) give 0 (left) or the sign
** fill (right), as NumPy's npy_lshift/npy_rshift, which compare the count as unsigned. */
#define GL_ISHL(T, UT, a, b) ((b) < 0 || (b) >= (int64_t)(8 * sizeof(T)) ? (T)0 : (T)((UT)(a) << (b)))
#define GL_ISHR(T, a, b) \
  ((b) < 0 || (b) >= (int64_t)(8 * sizeof(T)) ? (T)((a) < 0 ? -1 : 0) : (T)((a) >> (b)))

GL_HD float gl_gelu_tanhf(float x) { return 0.5f * x * (1.0f + gl_vtanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }
GL_HD double gl_sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }
GL_HD double gl_softplus(double x) { return x > 30 ? x : log1p(exp(x)); }
/* log(e^a + e^b) as NumPy's npy_logaddexp: equal arguments (two infinities of one sign
** included) give a + ln 2, else max + log1p(e^-|a - b|); NaN propagates. */
GL_HD double gl_logaddexp(double a, double b) {
  if (a == b) return a + 0.693147180559945309417232121458176568;
  double d = a - b;
  if (d > 0) return a + log1p(exp(-d));
  if (d <= 0) return b + log1p(exp(d));
  return d;                                                         /* nan */
}
/* gelu = x Phi(x) in the erfc form, which keeps full precision for negative x (1 + erf
** cancels); below -40 Phi(x) underflows, and -inf gives -0 (not -inf * 0 = nan), as the
** float kernel does. */
GL_HD double gl_gelu(double x) {
  return x < -40.0 ? -0.0 : 0.5 * x * erfc(x * -0.70710678118654752440);
}

/* ---- NumPy's further float and integer math (exp2, sinc, fmax, gcd, ...) ----------------- */

/* log2(2^a + 2^b) as NumPy's npy_logaddexp2: equal arguments give a + 1, else max +
** log2(1 + 2^-|a - b|); NaN propagates. The float form computes in double. */
GL_HD double gl_logaddexp2(double a, double b) {
  if (a == b) return a + 1.0;
  double d = a - b;
  if (d > 0) return a + log1p(exp2(-d)) * 1.44269504088896340735992468100189214;
  if (d <= 0) return b + log1p(exp2(d)) * 1.44269504088896340735992468100189214;
  return d;                                                         /* nan */
}
GL_HD float gl_logaddexp2f(float a, float b) { return (float)gl_logaddexp2((double)a, (double)b); }
/* sin(pi x) with the argument reduced exactly first (x - 2 round(x / 2) is in [-1, 1]), so
** that it is 0 at every integer and keeps its relative precision near them. */
GL_HD double gl_sinpi(double x) {
  double r = x - 2.0 * rint(0.5 * x);
  double a = fabs(r);
  if (a > 0.5) a = 1.0 - a;
  double s = sin(3.14159265358979323846 * a);
  return r < 0 ? -s : s;
}
/* sinc(x) = sin(pi x) / (pi x), 1 at 0 (NumPy's np.sinc); NaN at ±inf. */
GL_HD double gl_sinc(double x) { return x == 0 ? 1.0 : gl_sinpi(x) / (3.14159265358979323846 * x); }
GL_HD float gl_sincf(float x) { return (float)gl_sinc((double)x); }
/* fmax/fmin: the number where the other is NaN; between equal values (-0 and +0) the
** second, as NumPy's loops (C's fmax may give either zero, and did differ between paths). */
GL_HD float gl_fmaxf(float a, float b) { return (b != b || a > b) ? a : b; }
GL_HD float gl_fminf(float a, float b) { return (b != b || a < b) ? a : b; }
GL_HD double gl_fmax(double a, double b) { return (b != b || a > b) ? a : b; }
GL_HD double gl_fmin(double a, double b) { return (b != b || a < b) ? a : b; }
/* NumPy's heaviside(x, h0): 0 below 0, h0 at 0, 1 above; NaN for a NaN x. */
GL_HD double gl_heaviside(double a, double b) { return a != a ? a : a < 0 ? 0.0 : a > 0 ? 1.0 : b; }
GL_HD float gl_heavisidef(float a, float b) { return a != a ? a : a < 0 ? 0.0f : a > 0 ? 1.0f : b; }
/* C's remainder of integers (the sign of a, NumPy's fmod): 0 for b = 0 (NumPy warns and
** gives 0) and for MIN % -1 (no trap). */
#define GL_IFMOD(T, a, b) ((b) == 0 || GL_IS_MINUS_ONE(b) ? (T)0 : (T)((a) % (b)))
/* gcd and lcm of integers by their magnitudes as unsigned values (|MIN| fits), the
** result wrapped to T as NumPy's (gcd(MIN, 0) is MIN); lcm(0, x) = 0. */
GL_HD uint64_t gl_ugcd(uint64_t a, uint64_t b) {
  while (b) { uint64_t t = a % b; a = b; b = t; }
  return a;
}
GL_HD uint64_t gl_ulcm(uint64_t a, uint64_t b) {
  uint64_t g = gl_ugcd(a, b);
  return g == 0 ? 0 : a / g * b;
}
#define GL_IMAG(UT, x) ((x) < 0 ? (UT)(0 - (UT)(x)) : (UT)(x))
#define GL_IGCD(T, UT, a, b) ((T)gl_ugcd((uint64_t)GL_IMAG(UT, a), (uint64_t)GL_IMAG(UT, b)))
#define GL_ILCM(T, UT, a, b) ((T)gl_ulcm((uint64_t)GL_IMAG(UT, a), (uint64_t)GL_IMAG(UT, b)))

/* ---- complex64: each op's complex128 function between a widening and a rounding --------- */

#define GL_CX64_U_(name, kind, F, D, I, cx) GL_CX64_U_##cx
#define GL_CX64_U_NOCX
#define GL_CX64_U_CX(f) \
  GL_HD gl_complex64 gl_complex64_##f(gl_complex64 z) { return gl_complex128_narrow(gl_complex128_##f(gl_complex64_widen(z))); }
#define GL_CX64_U_CXR(f) \
  GL_HD float gl_complex64_##f(gl_complex64 z) { return (float)gl_complex128_##f(gl_complex64_widen(z)); }
#define GL_CX64_U_CXB(f) \
  GL_HD int gl_complex64_##f(gl_complex64 z) { return gl_complex128_##f(gl_complex64_widen(z)); }
GL_UNARY_OPS(GL_CX64_U_)

#define GL_CX64_B_(name, kind, F, D, I, cx) GL_CX64_B_##cx
#define GL_CX64_B_NOCX
#define GL_CX64_B_CX(f) \
  GL_HD gl_complex64 gl_complex64_##f(gl_complex64 a, gl_complex64 b) { \
    return gl_complex128_narrow(gl_complex128_##f(gl_complex64_widen(a), gl_complex64_widen(b))); }
#define GL_CX64_B_CXB(f) \
  GL_HD int gl_complex64_##f(gl_complex64 a, gl_complex64 b) { \
    return gl_complex128_##f(gl_complex64_widen(a), gl_complex64_widen(b)); }
GL_BINARY_OPS(GL_CX64_B_)

#endif
