/*
** complex.h — the complex math of the elementwise ops (elem_ops.h's complex column names
** the function of each op), written once for gcc (CPU loops, the run-time C kernels), nvcc
** and NVRTC (CUDA kernels), so both devices compute the same values.
**
** gl_complex128_<f> is the math, in double, on kernels/dtypes.h's interleaved elements;
** gl_complex64_<f> widens to it and rounds back (elem.h stamps those from the op list), so
** a complex64 result is its double result rounded once. NumPy's rules throughout: its
** formulas for division, reciprocal, sign (NumPy 2: z / |z|), log1p, expm1 and integer
** powers; C99 Annex G's special values and branch cuts for the rest (signed zeros choose
** the side of a cut: sqrt(-1 + 0i) = i, sqrt(-1 - 0i) = -i; log(0) = -inf + 0i). The
** inverse functions use Kahan's formulas ("Branch cuts for complex elementary functions",
** 1987), which keep those signs and their accuracy near the cuts without extra precision.
*/
#ifndef GL_KERNELS_COMPLEX_H
#define GL_KERNELS_COMPLEX_H

#include <math.h>
#include <stdint.h>
#include "half.h"      /* GL_HD */
#include "dtypes.h"    /* gl_complex64, gl_complex128 */

/* The bigger functions are not forced inline: each is stamped into two loops per device. */
#ifdef __CUDACC__
#define GL_CXF static __host__ __device__ inline
#else
#define GL_CXF static inline
#endif

typedef gl_complex128 gl_cz;

#define GL_CX_PI 3.14159265358979323846
#define GL_CX_PI_2 1.57079632679489661923
#define GL_CX_PI_4 0.78539816339744830962
#define GL_CX_LN2 0.69314718055994530942
#define GL_CX_LOG2E 1.44269504088896340736
#define GL_CX_LOG10E 0.43429448190325182765
#define GL_CX_DBL_MAX 1.7976931348623157e308
#define GL_CX_DBL_MIN 2.2250738585072014e-308
#define GL_CX_INF ((double)INFINITY)
#define GL_CX_NAN ((double)NAN)

GL_HD gl_cz gl_cz_make(double re, double im) { return gl_make_complex128(re, im); }
GL_HD int gl_cx_isnan(double x) { return x != x; }
GL_HD int gl_cx_isinf(double x) { return fabs(x) == GL_CX_INF; }
GL_HD int gl_cx_finite(double x) { return fabs(x) < GL_CX_INF; }

/* ---- arithmetic (NumPy's formulas) ------------------------------------------------------ */

GL_HD gl_cz gl_complex128_add(gl_cz a, gl_cz b) { return gl_cz_make(a.re + b.re, a.im + b.im); }
GL_HD gl_cz gl_complex128_sub(gl_cz a, gl_cz b) { return gl_cz_make(a.re - b.re, a.im - b.im); }
GL_HD gl_cz gl_complex128_mul(gl_cz a, gl_cz b) {
  return gl_cz_make(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
GL_HD gl_cz gl_complex128_neg(gl_cz z) { return gl_cz_make(-z.re, -z.im); }
GL_HD gl_cz gl_complex128_conj(gl_cz z) { return gl_cz_make(z.re, -z.im); }
GL_HD gl_cz gl_complex128_square(gl_cz z) { return gl_cz_make(z.re * z.re - z.im * z.im, z.re * z.im + z.im * z.re); }

/* a / b by Smith's method (scaled by the larger part of b: no overflow of |b|^2); a NaN in
** a with an infinite part or a nonzero b, or an infinite b, gives NaN in both parts; a zero
** b gives infinities (or NaN) part by part. */
GL_CXF gl_cz gl_complex128_div(gl_cz a, gl_cz b) {
  double abr = fabs(b.re), abi = fabs(b.im);
  int anr = gl_cx_isnan(a.re), ani = gl_cx_isnan(a.im);
  if (!gl_cx_isnan(b.re) && !gl_cx_isnan(b.im) && (anr || ani) &&
      ((((!anr && gl_cx_isinf(a.re)) || (!ani && gl_cx_isinf(a.im))) && (b.re != 0 || b.im != 0)) ||
       (gl_cx_isinf(b.re) && gl_cx_isinf(b.im)))) {
    double nan = anr ? a.re : a.im;
    return gl_cz_make(nan, nan);
  }
  if (abr >= abi) {
    if (abr == 0 && abi == 0) {
      if ((anr && (a.im == 0 || ani)) || (a.re == 0 && ani))
        return gl_cz_make(anr ? a.re : a.im, ani ? a.im : a.re);
      return gl_cz_make(a.re / abr, a.im / abi);
    }
    double rat = b.im / b.re, scl = 1.0 / (b.re + b.im * rat);
    return gl_cz_make((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
  }
  if (abr < abi) {
    double rat = b.re / b.im, scl = 1.0 / (b.im + b.re * rat);
    return gl_cz_make((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
  }
  return gl_cz_make(GL_CX_NAN, GL_CX_NAN);                      /* b has a NaN part */
}

/* 1 / z, scaled by the larger part (NumPy's reciprocal: 1 / 0 is NaN + NaN i). */
GL_CXF gl_cz gl_complex128_reciprocal(gl_cz z) {
  if (fabs(z.im) <= fabs(z.re)) {
    double r = z.im / z.re, d = z.re + z.im * r;
    return gl_cz_make(1 / d, -r / d);
  }
  double r = z.re / z.im, d = z.re * r + z.im;
  return gl_cz_make(r / d, -1 / d);
}

/* ---- real results and predicates ---------------------------------------------------------- */

GL_HD double gl_complex128_abs(gl_cz z) { return hypot(z.re, z.im); }
GL_HD double gl_complex128_angle(gl_cz z) { return atan2(z.im, z.re); }
GL_HD int gl_complex128_isnan(gl_cz z) { return gl_cx_isnan(z.re) || gl_cx_isnan(z.im); }
GL_HD int gl_complex128_isinf(gl_cz z) { return gl_cx_isinf(z.re) || gl_cx_isinf(z.im); }
GL_HD int gl_complex128_isfinite(gl_cz z) { return gl_cx_finite(z.re) && gl_cx_finite(z.im); }
GL_HD int gl_complex128_logical_not(gl_cz z) { return !(z.re != 0 || z.im != 0); }
GL_HD int gl_complex128_eq(gl_cz a, gl_cz b) { return a.re == b.re && a.im == b.im; }
GL_HD int gl_complex128_ne(gl_cz a, gl_cz b) { return a.re != b.re || a.im != b.im; }
GL_HD int gl_complex128_logical_and(gl_cz a, gl_cz b) { return (a.re != 0 || a.im != 0) && (b.re != 0 || b.im != 0); }
GL_HD int gl_complex128_logical_or(gl_cz a, gl_cz b) { return a.re != 0 || a.im != 0 || b.re != 0 || b.im != 0; }
GL_HD int gl_complex128_logical_xor(gl_cz a, gl_cz b) { return (a.re != 0 || a.im != 0) != (b.re != 0 || b.im != 0); }

/* NumPy 2's sign: z / |z|, 0 for 0; an infinite part gives its unit direction, two
** infinite parts or a NaN give NaN. */
GL_CXF gl_cz gl_complex128_sign(gl_cz z) {
  double a = hypot(z.re, z.im);
  if (gl_cx_isnan(a)) return gl_cz_make(GL_CX_NAN, GL_CX_NAN);
  if (gl_cx_isinf(a)) {
    if (gl_cx_isinf(z.re)) return gl_cx_isinf(z.im) ? gl_cz_make(GL_CX_NAN, GL_CX_NAN) : gl_cz_make(z.re > 0 ? 1.0 : -1.0, 0.0);
    return gl_cz_make(0.0, z.im > 0 ? 1.0 : -1.0);
  }
  if (a == 0) return gl_cz_make(0.0, 0.0);
  return gl_cz_make(z.re / a, z.im / a);
}

/* rint of each part, as NumPy's rint (gpulua's round) */
GL_HD gl_cz gl_complex128_round(gl_cz z) { return gl_cz_make(rint(z.re), rint(z.im)); }
GL_HD gl_cz gl_complex128_rint(gl_cz z) { return gl_complex128_round(z); }      /* NumPy's rint */

/* ---- exp, log, sqrt --------------------------------------------------------------------------- */

/* e^|x| / 2 times c, finite where the product is (|x| up to twice exp's overflow point). */
GL_HD double gl_cx_halfexp_times(double ax, double c) {
  double e = exp(0.5 * ax);
  return (0.5 * e * c) * e;
}

GL_CXF gl_cz gl_complex128_exp(gl_cz z) {
  double x = z.re, y = z.im;
  if (gl_cx_finite(x) && gl_cx_finite(y)) {
    if (y == 0) return gl_cz_make(exp(x), y);
    double c = cos(y), s = sin(y);
    if (x > 709.0) return gl_cz_make(2 * gl_cx_halfexp_times(x, c), 2 * gl_cx_halfexp_times(x, s));
    double e = exp(x);
    return gl_cz_make(e * c, e * s);
  }
  if (gl_cx_isnan(x)) return y == 0 ? gl_cz_make(x, y) : gl_cz_make(x, GL_CX_NAN);
  if (gl_cx_isinf(x)) {
    if (x > 0) {
      if (y == 0) return gl_cz_make(x, y);
      if (gl_cx_finite(y)) return gl_cz_make(x * cos(y), x * sin(y));
      return gl_cz_make(x, GL_CX_NAN);                     /* +inf + i inf or i NaN */
    }
    if (gl_cx_finite(y)) return gl_cz_make(0.0 * cos(y), 0.0 * sin(y));
    return gl_cz_make(0.0, 0.0);                     /* -inf + i inf or i NaN */
  }
  return gl_cz_make(GL_CX_NAN, GL_CX_NAN);                       /* finite x, y inf or NaN */
}

/* log|z| without overflow or underflow of |z| and with full accuracy near |z| = 1 (as
** CPython's cmath and NumPy), + i arg z. */
GL_CXF gl_cz gl_complex128_log(gl_cz z) {
  double ax = fabs(z.re), ay = fabs(z.im), rr;
  if (gl_cx_isnan(ax) || gl_cx_isnan(ay)) {
    if (gl_cx_isinf(ax) || gl_cx_isinf(ay)) return gl_cz_make(GL_CX_INF, GL_CX_NAN);
    return gl_cz_make(GL_CX_NAN, GL_CX_NAN);
  }
  if (gl_cx_isinf(ax) || gl_cx_isinf(ay)) return gl_cz_make(GL_CX_INF, atan2(z.im, z.re));
  if (ax > GL_CX_DBL_MAX / 4 || ay > GL_CX_DBL_MAX / 4) {
    rr = log(hypot(ax / 2, ay / 2)) + GL_CX_LN2;
  } else if (ax < GL_CX_DBL_MIN && ay < GL_CX_DBL_MIN) {
    if (ax == 0 && ay == 0) return gl_cz_make(-GL_CX_INF, atan2(z.im, z.re));
    rr = log(hypot(ldexp(ax, 53), ldexp(ay, 53))) - 53 * GL_CX_LN2;
  } else {
    double h = hypot(ax, ay);
    if (0.71 <= h && h <= 1.73) {
      double am = ax > ay ? ax : ay, an = ax > ay ? ay : ax;
      rr = log1p((am - 1) * (am + 1) + an * an) / 2;
    } else {
      rr = log(h);
    }
  }
  return gl_cz_make(rr, atan2(z.im, z.re));
}

GL_HD gl_cz gl_complex128_log2(gl_cz z) {
  gl_cz w = gl_complex128_log(z);
  return gl_cz_make(w.re * GL_CX_LOG2E, w.im * GL_CX_LOG2E);
}
GL_HD gl_cz gl_complex128_log10(gl_cz z) {
  gl_cz w = gl_complex128_log(z);
  return gl_cz_make(w.re * GL_CX_LOG10E, w.im * GL_CX_LOG10E);
}

/* log(1 + z); near 0 the real part is log1p of |1 + z|^2 - 1 = x (2 + x) + y^2, which keeps
** the relative accuracy that log(1 + z) loses there. */
GL_CXF gl_cz gl_complex128_log1p(gl_cz z) {
  double x = z.re, y = z.im;
  if (fabs(x) < 1 && fabs(y) < 1)
    return gl_cz_make(0.5 * log1p(x * (2 + x) + y * y), atan2(y, 1 + x));
  return gl_complex128_log(gl_cz_make(1 + x, y));
}

/* e^z - 1 as NumPy: (e^x - 1) cos y - 2 sin^2(y / 2) + i e^x sin y, the real part exact
** near 0 (the imaginary part of a real z stays 0). */
GL_CXF gl_cz gl_complex128_expm1(gl_cz z) {
  double x = z.re, y = z.im, h = sin(y / 2);
  if (y == 0) return gl_cz_make(expm1(x), y);
  return gl_cz_make(expm1(x) * cos(y) - 2 * h * h, exp(x) * sin(y));
}

/* The principal square root (real part >= 0), scaled where |z| would overflow. */
GL_CXF gl_cz gl_complex128_sqrt(gl_cz z) {
  double a = z.re, b = z.im;
  if (a == 0 && b == 0) return gl_cz_make(0.0, b);
  if (gl_cx_isinf(b)) return gl_cz_make(GL_CX_INF, b);
  if (gl_cx_isnan(a)) return gl_cz_make(a, GL_CX_NAN);
  if (gl_cx_isinf(a)) {
    if (a < 0) return gl_cz_make(fabs(b - b), copysign(a, b));      /* NaN or 0, +-inf */
    return gl_cz_make(a, copysign(b - b, b));                        /* inf, NaN or +-0 */
  }
  double scale = 1;
  if (fabs(a) >= GL_CX_DBL_MAX / 2.5 || fabs(b) >= GL_CX_DBL_MAX / 2.5) {
    a *= 0.25;
    b *= 0.25;
    scale = 2;
  } else if (fabs(a) < 0x1p-1000 && fabs(b) < 0x1p-1000) {     /* subnormal: bits lost in hypot */
    a *= 0x1p600;
    b *= 0x1p600;
    scale = 0x1p-300;
  }
  if (a >= 0) {
    double t = sqrt((a + hypot(a, b)) * 0.5);
    return gl_cz_make(t * scale, b / (2 * t) * scale);
  }
  double t = sqrt((-a + hypot(a, b)) * 0.5);
  return gl_cz_make(fabs(b) / (2 * t) * scale, copysign(t, b) * scale);
}

/* 1 / sqrt(z), a true division (1 / 0 is inf + NaN i, as 1 / sqrt(0j) in NumPy) */
GL_HD gl_cz gl_complex128_rsqrt(gl_cz z) { return gl_complex128_div(gl_cz_make(1.0, 0.0), gl_complex128_sqrt(z)); }

/* For Annex G's multiplication: where (*a, *b) is infinite, its parts as +-1 or +-0 (its
** direction) and the other operand's NaN parts as +-0; whether it was. */
GL_HD int gl_cx_box_inf(double *a, double *b, double *c, double *d) {
  if (!(gl_cx_isinf(*a) || gl_cx_isinf(*b))) return 0;
  *a = copysign(gl_cx_isinf(*a) ? 1.0 : 0.0, *a);
  *b = copysign(gl_cx_isinf(*b) ? 1.0 : 0.0, *b);
  if (gl_cx_isnan(*c)) *c = copysign(0.0, *c);
  if (gl_cx_isnan(*d)) *d = copysign(0.0, *d);
  return 1;
}

/* a * b with C99 Annex G's recovery of infinities (its G.5.1 multiplication): where the
** plain product is NaN in both parts, an infinite operand (or an overflow) gives an
** infinite result. What cpow's e^(b log a) multiplies with, as C's complex operator does. */
GL_CXF gl_cz gl_cx_mul_annexg(gl_cz z, gl_cz w) {
  double a = z.re, b = z.im, c = w.re, d = w.im;
  double ac = a * c, bd = b * d, ad = a * d, bc = b * c, x = ac - bd, y = ad + bc;
  if (!(gl_cx_isnan(x) && gl_cx_isnan(y))) return gl_cz_make(x, y);
  int recalc = gl_cx_box_inf(&a, &b, &c, &d);
  recalc |= gl_cx_box_inf(&c, &d, &a, &b);
  if (!recalc && (gl_cx_isinf(ac) || gl_cx_isinf(bd) || gl_cx_isinf(ad) || gl_cx_isinf(bc))) {
    double *p[4] = { &a, &b, &c, &d };
    for (int k = 0; k < 4; k++) if (gl_cx_isnan(*p[k])) *p[k] = copysign(0.0, *p[k]);
    recalc = 1;
  }
  if (recalc) return gl_cz_make(GL_CX_INF * (a * c - b * d), GL_CX_INF * (a * d + b * c));
  return gl_cz_make(x, y);
}

/* a^b as NumPy: a^0 = 1; 0^b = 0 for Re b > 0, else NaN; integer real b in (-100, 100) by
** repeated multiplication (exact for small Gaussian integers, and an infinite a stays
** sensible); else e^(b log a), as C's cpow. */
GL_CXF gl_cz gl_complex128_pow(gl_cz a, gl_cz b) {
  if (b.re == 0 && b.im == 0) return gl_cz_make(1.0, 0.0);
  if (a.re == 0 && a.im == 0) return b.re > 0 ? gl_cz_make(0.0, 0.0) : gl_cz_make(GL_CX_NAN, GL_CX_NAN);
  if (b.im == 0 && b.re > -100 && b.re < 100 && b.re == (double)(int)b.re) {
    int n = (int)b.re;
    if (n == 1) return a;
    if (n == 2) return gl_complex128_mul(a, a);
    if (n == 3) return gl_complex128_mul(a, gl_complex128_mul(a, a));
    unsigned m = (unsigned)(n < 0 ? -n : n);
    gl_cz r = gl_cz_make(1.0, 0.0), p = a;
    for (;;) {
      if (m & 1) r = gl_complex128_mul(r, p);
      m >>= 1;
      if (m == 0) break;
      p = gl_complex128_mul(p, p);
    }
    return n < 0 ? gl_complex128_div(gl_cz_make(1.0, 0.0), r) : r;
  }
  return gl_complex128_exp(gl_cx_mul_annexg(b, gl_complex128_log(a)));
}

/* 2^z = e^(z ln 2), as NumPy's nc_exp2 */
GL_CXF gl_cz gl_complex128_exp2(gl_cz z) {
  const double ln2 = 0.693147180559945309417232121458176568;
  return gl_complex128_exp(gl_cz_make(z.re * ln2, z.im * ln2));
}

/* ---- hyperbolic and circular functions -------------------------------------------------------- */

/* sinh(x + iy) = sinh x cos y + i cosh x sin y, without overflow of cosh x where the
** product is finite. */
GL_CXF gl_cz gl_complex128_sinh(gl_cz z) {
  double x = z.re, y = z.im;
  if (gl_cx_finite(x) && gl_cx_finite(y)) {
    if (y == 0) return gl_cz_make(sinh(x), y);
    double c = cos(y), s = sin(y);
    if (fabs(x) < 20) return gl_cz_make(sinh(x) * c, cosh(x) * s);
    return gl_cz_make(copysign(1.0, x) * gl_cx_halfexp_times(fabs(x), c), gl_cx_halfexp_times(fabs(x), s));
  }
  if (x == 0) return gl_cz_make(x, y - y);                         /* +-0 + i inf or i NaN */
  if (gl_cx_isinf(x)) {
    if (y == 0) return gl_cz_make(x, y);
    if (gl_cx_finite(y)) return gl_cz_make(x * cos(y), GL_CX_INF * sin(y));
    return gl_cz_make(x, y - y);                                    /* +-inf, NaN */
  }
  if (gl_cx_isnan(x) && y == 0) return gl_cz_make(x, y);
  return gl_cz_make(GL_CX_NAN, GL_CX_NAN);
}

/* cosh(x + iy) = cosh x cos y + i sinh x sin y (even in z). */
GL_CXF gl_cz gl_complex128_cosh(gl_cz z) {
  double x = z.re, y = z.im;
  if (gl_cx_finite(x) && gl_cx_finite(y)) {
    if (y == 0) return gl_cz_make(cosh(x), x * y);
    double c = cos(y), s = sin(y);
    if (fabs(x) < 20) return gl_cz_make(cosh(x) * c, sinh(x) * s);
    return gl_cz_make(gl_cx_halfexp_times(fabs(x), c), copysign(1.0, x) * gl_cx_halfexp_times(fabs(x), s));
  }
  if (x == 0) return gl_cz_make(y - y, copysign(0.0, x) * copysign(0.0, y));   /* NaN +- i0 */
  if (gl_cx_isinf(x)) {
    if (y == 0) return gl_cz_make(GL_CX_INF, copysign(0.0, x) * y);
    if (gl_cx_finite(y)) return gl_cz_make(GL_CX_INF * cos(y), x * sin(y));
    return gl_cz_make(GL_CX_INF, y - y);                             /* inf, NaN */
  }
  if (gl_cx_isnan(x) && y == 0) return gl_cz_make(x, copysign(0.0, x) * y);
  return gl_cz_make(GL_CX_NAN, GL_CX_NAN);
}

/* tanh by Kahan's formula (no cancellation, t = tan y kept finite), saturating to +-1 +
** i0 sin 2y for large |x|. */
GL_CXF gl_cz gl_complex128_tanh(gl_cz z) {
  double x = z.re, y = z.im;
  if (gl_cx_isnan(x)) return y == 0 ? gl_cz_make(x, y) : gl_cz_make(x, GL_CX_NAN);
  if (gl_cx_isinf(x)) {
    if (!gl_cx_finite(y)) return gl_cz_make(copysign(1.0, x), copysign(0.0, y));
    return gl_cz_make(copysign(1.0, x), copysign(0.0, sin(2 * y)));
  }
  if (!gl_cx_finite(y)) return gl_cz_make(x == 0 ? x : GL_CX_NAN, GL_CX_NAN);   /* +-0 + i NaN, else NaN */
  if (fabs(x) > 22) {
    double e = exp(-2 * fabs(x));
    return gl_cz_make(copysign(1.0, x), 4 * sin(y) * cos(y) * e);
  }
  double t = tan(y), beta = 1 + t * t, s = sinh(x), rho = sqrt(1 + s * s), den = 1 + beta * s * s;
  return gl_cz_make(beta * rho * s / den, t / den);
}

/* The circular functions through the hyperbolic ones: sin z = -i sinh(iz), cos z =
** cosh(iz), tan z = -i tanh(iz) (Annex G's definitions, signed zeros included). */
GL_HD gl_cz gl_cx_times_i(gl_cz z) { return gl_cz_make(-z.im, z.re); }
GL_HD gl_cz gl_cx_times_minus_i(gl_cz z) { return gl_cz_make(z.im, -z.re); }
GL_HD gl_cz gl_complex128_sin(gl_cz z) { return gl_cx_times_minus_i(gl_complex128_sinh(gl_cx_times_i(z))); }
GL_HD gl_cz gl_complex128_cos(gl_cz z) { return gl_complex128_cosh(gl_cx_times_i(z)); }
GL_HD gl_cz gl_complex128_tan(gl_cz z) { return gl_cx_times_minus_i(gl_complex128_tanh(gl_cx_times_i(z))); }

/* ---- inverse functions -------------------------------------------------------------------- */

/* acos by Kahan: 2 atan2(Re sqrt(1 - z), Re sqrt(1 + z)) + i asinh(Im(conj(sqrt(1 + z))
** sqrt(1 - z))); 1 - z is (1 - x, -y), so a signed zero picks the side of each cut. Annex
** G's values for infinities and NaN. */
GL_CXF gl_cz gl_complex128_acos(gl_cz z) {
  double x = z.re, y = z.im;
  if (!gl_cx_finite(x) || !gl_cx_finite(y)) {
    if (gl_cx_isinf(y)) {
      double re = gl_cx_isnan(x) ? x : gl_cx_isinf(x) ? (x < 0 ? 3 * GL_CX_PI_4 : GL_CX_PI_4) : GL_CX_PI_2;
      return gl_cz_make(re, -y);
    }
    if (gl_cx_isinf(x)) {
      if (gl_cx_isnan(y)) return gl_cz_make(GL_CX_NAN, GL_CX_INF);      /* NaN +- i inf */
      return gl_cz_make(x < 0 ? GL_CX_PI : 0.0, -copysign(GL_CX_INF, y));
    }
    if (gl_cx_isnan(y) && x == 0) return gl_cz_make(GL_CX_PI_2, y);
    return gl_cz_make(GL_CX_NAN, GL_CX_NAN);
  }
  gl_cz s1 = gl_complex128_sqrt(gl_cz_make(1 - x, -y)), s2 = gl_complex128_sqrt(gl_cz_make(1 + x, y));
  return gl_cz_make(2 * atan2(s1.re, s2.re), asinh(s2.re * s1.im - s2.im * s1.re));
}

/* asinh, odd and conjugate-symmetric: computed for the first quadrant (Kahan's asin of
** iz there), the signs of x and y then given back; Annex G's values for infinities and
** NaN. */
GL_CXF gl_cz gl_complex128_asinh(gl_cz z) {
  double x = z.re, y = z.im, ax = fabs(x), ay = fabs(y), re, im;
  if (!gl_cx_finite(x) || !gl_cx_finite(y)) {
    if (gl_cx_isinf(ax) || gl_cx_isinf(ay)) {
      if (gl_cx_isnan(x)) return gl_cz_make(GL_CX_INF, GL_CX_NAN);
      if (gl_cx_isnan(y)) return gl_cz_make(x, GL_CX_NAN);
      re = GL_CX_INF;
      im = gl_cx_isinf(ax) ? (gl_cx_isinf(ay) ? GL_CX_PI_4 : 0.0) : GL_CX_PI_2;
      return gl_cz_make(copysign(re, x), copysign(im, y));
    }
    return y == 0 ? gl_cz_make(GL_CX_NAN, y) : gl_cz_make(GL_CX_NAN, GL_CX_NAN);
  }
  /* asinh(w) = -i asin(iw); asin(v) = atan2(Re v, Re(sqrt(1 - v) sqrt(1 + v))) + i asinh(Im(
  ** conj(sqrt(1 - v)) sqrt(1 + v))) with v = i w = -ay + i ax */
  gl_cz s1 = gl_complex128_sqrt(gl_cz_make(1 + ay, -ax)), s2 = gl_complex128_sqrt(gl_cz_make(1 - ay, ax));
  double p = atan2(-ay, s1.re * s2.re - s1.im * s2.im);
  double q = asinh(s1.re * s2.im - s1.im * s2.re);
  re = q;                  /* -i (p + i q) = q - i p */
  im = -p;
  return gl_cz_make(copysign(re, x), copysign(im, y));
}

GL_HD gl_cz gl_complex128_asin(gl_cz z) {
  return gl_cx_times_minus_i(gl_complex128_asinh(gl_cx_times_i(z)));
}

/* acosh(z) = +-i acos(z): the real part |Im acos z|, the imaginary part Re acos z with the
** sign of y (Annex G; positive for a NaN y, whatever its sign bit). */
GL_HD gl_cz gl_complex128_acosh(gl_cz z) {
  gl_cz w = gl_complex128_acos(z);
  return gl_cz_make(fabs(w.im), gl_cx_isnan(z.im) ? w.re : copysign(w.re, z.im));
}

/* atanh, odd and conjugate-symmetric: Re = log1p(4|x| / ((1 - |x|)^2 + y^2)) / 4, Im =
** atan2(2|y|, (1 - |x|)(1 + |x|) - y^2) / 2 in the first quadrant, the signs given back;
** for huge |z| atanh z ~ 1/z + i pi/2; Annex G's values for infinities and NaN. */
GL_CXF gl_cz gl_complex128_atanh(gl_cz z) {
  double x = z.re, y = z.im, ax = fabs(x), ay = fabs(y), re, im;
  if (!gl_cx_finite(x) || !gl_cx_finite(y)) {
    if (gl_cx_isnan(x)) {
      if (gl_cx_isinf(y)) return gl_cz_make(copysign(0.0, x), copysign(GL_CX_PI_2, y));
      return gl_cz_make(x, GL_CX_NAN);
    }
    if (gl_cx_isinf(ax)) {
      if (gl_cx_isnan(y)) return gl_cz_make(copysign(0.0, x), y);
      return gl_cz_make(copysign(0.0, x), copysign(GL_CX_PI_2, y));
    }
    if (gl_cx_isinf(ay)) return gl_cz_make(copysign(0.0, x), copysign(GL_CX_PI_2, y));
    return x == 0 ? gl_cz_make(x, GL_CX_NAN) : gl_cz_make(GL_CX_NAN, GL_CX_NAN);         /* y NaN */
  }
  if (ax > 1e150 || ay > 1e150) {
    gl_cz r = gl_complex128_reciprocal(gl_cz_make(ax, ay));
    return gl_cz_make(copysign(r.re, x), copysign(GL_CX_PI_2, y));
  }
  if (ax == 1 && ay == 0) return gl_cz_make(copysign(GL_CX_INF, x), y);
  double d = (1 - ax) * (1 - ax) + ay * ay;
  if (d > 1e-280) re = 0.25 * log1p(4 * ax / d);
  else re = 0.25 * log(4 * ax) - 0.5 * log(hypot(1 - ax, ay));
  im = 0.5 * atan2(2 * ay, (1 - ax) * (1 + ax) - ay * ay);
  return gl_cz_make(copysign(re, x), copysign(im, y));
}

GL_HD gl_cz gl_complex128_atan(gl_cz z) {
  return gl_cx_times_minus_i(gl_complex128_atanh(gl_cx_times_i(z)));
}

/* ---- complex64 ---------------------------------------------------------------------------- */

/* A complex64 value widened to complex128 and a complex128 result rounded to complex64:
** every complex64 function is its complex128 function between these (elem.h stamps them). */
GL_HD gl_cz gl_complex64_widen(gl_complex64 z) { return gl_cz_make((double)z.re, (double)z.im); }
GL_HD gl_complex64 gl_complex128_narrow(gl_cz z) { return gl_make_complex64((float)z.re, (float)z.im); }

#endif
