/*
** special.h — the special functions of gpu.special (SciPy's scipy.special and PyTorch's
** torch.special names), written once for gcc (the CPU rows) and nvcc (the CUDA kernels and
** NVRTC's prelude). Each is a double function; elem_ops.h's float column rounds the double
** result, so float32 is correctly rounded but for the double's few ulp.
**
** The methods are the textbook ones, re-derived here: recurrences and asymptotic series
** with Bernoulli numbers (digamma, Hurwitz zeta, the Stirling correction), Halley's
** iteration on erf/erfc (erfinv, erfcinv, ndtri), continued fractions (erfcx, the upper
** incomplete gamma, E1), power series (the modified Bessel functions, the lower incomplete
** gamma, Ei) and Hankel's asymptotic expansions (I0, I1, J0, J1 for large arguments). C99's
** lgamma, tgamma, erf and erfc are the building blocks. Values at the edges (NaN, ±inf,
** poles) are SciPy's, except where a comment says PyTorch's.
*/
#ifndef GL_KERNELS_SPECIAL_H
#define GL_KERNELS_SPECIAL_H

#include <math.h>
#include "vmath.h"   /* gl_vlgammaf_pos */

/* Not inlined on the device: each function is compiled once per file rather than into every
** kernel of every dtype and layout that calls it (their loops would multiply nvcc's time). */
#ifdef __CUDACC__
#define GL_SF __host__ __device__ __noinline__ inline
#else
#define GL_SF static inline
#endif

/* No fma contraction on the host: the rows here (cpu_elem.c, contraction on) and the run-time
** compiled kernels (src/ops/jit.c, -ffp-contract=off) must give the same bits, as the CUDA
** kernels (--fmad=false) do; the recurrences here would round differently with an fma. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#define GL_SF_POP_OPTIONS 1
#endif

#define GL_SF_INF ((double)INFINITY)
#define GL_SF_NAN ((double)NAN)
#define GL_SF_PI 3.14159265358979323846
#define GL_SF_EULER 0.57721566490153286061                 /* Euler's gamma */
#define GL_SF_LN_SQRT_2PI 0.91893853320467274178            /* log(sqrt(2 pi)) */
#define GL_SF_2_SQRTPI 1.12837916709551257390               /* 2/sqrt(pi) */
#define GL_SF_1_SQRTPI 0.56418958354775628695               /* 1/sqrt(pi) */
#define GL_SF_SQRT2 1.41421356237309504880
#define GL_SF_SQRT1_2 0.70710678118654752440

/* ---- gamma family -------------------------------------------------------------------- */

/* log|Gamma(x)|: C's lgamma (+inf at the poles). SciPy's gammaln(-inf) is -inf (a Cephes
** quirk); PyTorch's and C's is +inf, which this keeps. */
GL_SF double gl_gammaln(double x) { return lgamma(x); }

/* float32 log|Gamma(x)|: kernels/vmath.h's branch-free path on 0 < x < inf (the CPU rows run it
** over whole blocks, then this for the rest), libm's lgamma in double elsewhere. */
GL_SF float gl_lgammaf(float x) {
  return x > 0 && x < INFINITY ? gl_vlgammaf_pos(x) : (float)gl_gammaln((double)x);
}

/* pi cot(pi x) without the rounding of pi x near the poles: x's distance f to the nearest
** integer is exact, and cos(pi f) is sin(pi (1/2 - |f|)). */
GL_SF double gl_sf_picot(double x) {
  double f = x - rint(x);
  return GL_SF_PI * sin(GL_SF_PI * (0.5 - fabs(f))) / sin(GL_SF_PI * f);
}

/* digamma's Taylor series at its positive zero x0 (a sum of two doubles), over [1, 2]:
** c_k = (-1)^(k+1) zeta(k+1, x0), its k-th derivative over k!, forty-two of them (the
** radius is x0, so |d| <= 0.54 needs 0.37^42). Near x0 the recurrence would leave only its
** rounding. */
#define GL_SF_PSI_X0_HI 1.4616321449683622
#define GL_SF_PSI_X0_LO 9.549995429965697e-17
#define GL_SF_PSI_12_COEFS {                                                                \
    0.9676722454476212, -0.44276316898359208, 0.25849976095565103, -0.16394270544240652, \
    0.10782405069126237, -0.072199561256454714, 0.04880428816414311, -0.033161126474847362, \
    0.022597648232218104, -0.01542476590494896, 0.010538791616612175, -0.0072045343863568687, \
    0.0049267813957298533, -0.0033698016554393282, 0.002305126326734928, -0.0015769367714301972, \
    0.0010788252019162967, -0.00073807093899600515, 0.00050495326583460199, -0.00034546802510630769, \
    0.00023635601564027053, -0.00016170622091974803, 0.0001106337276874741, -7.5691795821950661e-05, \
    5.1785757952220809e-05, -3.5430070947659604e-05, 2.4240066118601318e-05, -1.6584242271854135e-05, \
    1.134638458466385e-05, -7.7628176684620943e-06, 5.3110609208898636e-06, -3.6336507898010456e-06, \
    2.4860227331295378e-06, -1.7008538854332607e-06, 1.1636675363548843e-06, -7.9614254312419699e-07, \
    5.4469419306694457e-07, -3.7266161283438227e-07, 2.5496265520215542e-07, -1.7443695117727745e-07, \
    1.1934394829830244e-07, -8.1651151894884088e-08 }
GL_SF double gl_sf_psi_12(double x) {
  const double c[42] = GL_SF_PSI_12_COEFS;
  double d = (x - GL_SF_PSI_X0_HI) - GL_SF_PSI_X0_LO, p = c[41];
  for (int k = 40; k >= 0; k--) p = p * d + c[k];
  return p * d;
}

/* digamma(x) = Gamma'(x)/Gamma(x): reflection psi(x) = psi(1 - x) - pi cot(pi x) for x < 0;
** on (0, 10) the recurrence psi(x) = psi(x + 1) - 1/x into [1, 2] and the series there;
** from 10 the asymptotic series log x - 1/2x - sum B_2k / (2k x^2k). Poles: NaN at the
** negative integers, -inf at +0 and +inf at -0 (SciPy's; PyTorch gives -inf at both).
** gl_sf_digamma_reduce does all but the recurrence's sum and the series on [1, 2): it
** returns 1 with *xr in [1, 2) and psi(x) = *r + (gl_sf_psi_12(*xr) + gl_sf_psi_steps(*xr,
** *n)), or 0 with psi(x) in *r, so the CPU can run both over many elements at once (the
** same operations in the same order). */
GL_SF int gl_sf_digamma_reduce(double x, double *xr, double *r, double *n) {
  if (x == 0) { *r = signbit(x) ? GL_SF_INF : -GL_SF_INF; return 0; }
  if (x != x || x == GL_SF_INF) { *r = x; return 0; }
  double rr = 0;
  if (x < 0) {
    if (x == floor(x)) { *r = GL_SF_NAN; return 0; }               /* -inf too */
    rr = -gl_sf_picot(x);
    x = 1 - x;
  }
  if (x < 1) { rr -= 1 / x; x += 1; }
  if (x < 10) {
    double nn = floor(x) - 1;
    *xr = x - nn;                                                  /* exact, in [1, 2) */
    *r = rr; *n = nn;
    return 1;
  }
  double z = 1 / (x * x);
  double t = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 -
             z * (691.0 / 32760 - z * (1.0 / 12 - z * (3617.0 / 8160))))))));
  *r = rr + (log(x) - 0.5 / x - t);
  return 0;
}

/* The recurrence's sum 1/(x + n - 1) + ... + 1/x, largest k first (n < 9). */
GL_SF double gl_sf_psi_steps(double x, double n) {
  double s = 0;
  for (double k = n - 1; k >= 0; k--) s += 1 / (x + k);
  return s;
}

GL_SF double gl_digamma(double x) {
  double xr, r, n;
  if (!gl_sf_digamma_reduce(x, &xr, &r, &n)) return r;
  return r + (gl_sf_psi_12(xr) + gl_sf_psi_steps(xr, n));
}

/* B_2j / (2j)!, j = 1..13: the Euler-Maclaurin tail of the Hurwitz zeta. */
#define GL_SF_EM_COEFS                                                                    \
  { 0.083333333333333329, -0.0013888888888888889, 3.3068783068783071e-05,                   \
    -8.2671957671957675e-07, 2.08767569878681e-08, -5.2841901386874932e-10,                 \
    1.3382536530684679e-11, -3.3896802963225827e-13, 8.5860620562778452e-15,                \
    -2.1748686985580619e-16, 5.5090028283602295e-18, -1.3954464685812522e-19,               \
    3.5347070396294673e-21 }

/* The Hurwitz zeta sum_k (k + q)^-s, s > 1: the terms directly while k + q < 3(s + 26)/4 (or
** until they no longer count), then Euler-Maclaurin at w = q + N (its j-th term shrinks as
** ((s + 2j) / (2 pi w))^2, so thirteen of them reach 1e-17 from there): w^(1-s)/(s-1) + w^-s/2
** + sum_j B_2j/(2j)! s(s+1)...(s+2j-2) w^(-s-2j+1). SciPy's edges: s = 1 gives inf, s < 1
** NaN, q a non-positive integer inf, q < 0 with s not an integer NaN. */
GL_SF double gl_zeta(double s, double q) {
  if (s != s || q != q) return GL_SF_NAN;
  if (s == 1) return GL_SF_INF;
  if (s < 1) return GL_SF_NAN;
  if (q <= 0) {
    if (q == floor(q)) return GL_SF_INF;
    if (s != floor(s)) return GL_SF_NAN;
  }
  if (q == GL_SF_INF) return 0;
  if (s == GL_SF_INF) return q == 1 ? 1 : q > 1 ? 0 : GL_SF_INF;
  double w = q, sum = 0, lim = 0.75 * (s + 26);
  for (int k = 0; w < lim && k < 100000; k++) {
    double t = pow(w, -s);
    sum += t;
    if (w > 0 && fabs(t) <= 1e-17 * fabs(sum)) return sum;
    w += 1;
  }
  const double c[13] = GL_SF_EM_COEFS;
  double a = pow(w, -s);
  sum += w * a / (s - 1) + 0.5 * a;
  double t = a * s / w;
  for (int j = 0; j < 13; j++) {
    if (j > 0) t *= (s + 2 * j - 1) * (s + 2 * j) / (w * w);
    double d = c[j] * t;
    sum += d;
    if (fabs(d) <= 1e-17 * fabs(sum)) break;
  }
  return sum;
}

/* polygamma(n, x), n a non-negative integer: digamma for n = 0, else
** (-1)^(n+1) n! zeta(n + 1, x). A negative or fractional n gives NaN. */
GL_SF double gl_polygamma(double n, double x) {
  if (n != n || x != x) return GL_SF_NAN;
  if (n < 0 || n != floor(n)) return GL_SF_NAN;
  if (n == 0) return gl_digamma(x);
  double f = 1;
  for (double k = 2; k <= n && f < GL_SF_INF; k++) f *= k;
  double z = gl_zeta(n + 1, x);
  return fmod(n, 2.0) == 1 ? f * z : -f * z;
}

/* The Stirling correction delta(x) = lgamma(x) - ((x - 1/2) log x - x + log sqrt(2 pi)),
** x >= 10: its asymptotic series sum B_2k / (2k (2k-1) x^(2k-1)), eight terms. */
GL_SF double gl_sf_lgcorr(double x) {
  double z = 1 / (x * x);
  return (1.0 / 12 - z * (1.0 / 360 - z * (1.0 / 1260 - z * (1.0 / 1680 - z * (1.0 / 1188 -
         z * (691.0 / 360360 - z * (1.0 / 156 - z * (3617.0 / 122400)))))))) / x;
}

/* B(p, o) where p is a non-positive integer (a pole of Gamma(p)): SciPy's values. With o an
** integer and 1 - p - o > 0, (-1)^o B(1 - p - o, o) (Gamma's reflection): finite for o > 0,
** an infinity of that sign for o <= 0 (a pole again); else +inf. *finite says which. */
GL_SF double gl_sf_beta_pole(double p, double o, int *finite) {
  *finite = 0;
  if (o == floor(o) && 1 - p - o > 0) {
    double sign = fmod(o, 2.0) == 0 ? 1 : -1;
    if (o <= 0) return sign * GL_SF_INF;
    *finite = 1;
    double c = 1 - p - o, r = 1;                                   /* B(c, o) = (o-1)! / (c (c+1) ... (c+o-1)) */
    if (o > 50) return sign * exp(lgamma(c) + lgamma(o) - lgamma(c + o));
    for (double k = 0; k < o; k++) r *= (k + 1) / (c + k);
    return sign * r / o;
  }
  return GL_SF_INF;
}

/* log|B(a, b)| = lgamma(a) + lgamma(b) - lgamma(a + b), the large parts of the lgammas
** cancelled by hand where a or b is large (>= 10): with a <= b,
**   both large: log sqrt(2 pi) - log(b)/2 - (a - 1/2) log1p(b/a) - b log1p(a/b) + deltas
**               (finite where a + b overflows)
**   b large:    lgamma(a) + a - (b - 1/2) log1p(a/b) - a log(a + b) + delta(b) - delta(a+b).
** At the poles SciPy's: log of the finite limit, else +inf; +inf where a or b is -inf, NaN at
** (inf, inf). */
GL_SF double gl_betaln(double a, double b) {
  if (a != a || b != b) return GL_SF_NAN;
  if (a == -GL_SF_INF || b == -GL_SF_INF) return GL_SF_INF;        /* SciPy's */
  if (a == GL_SF_INF && b == GL_SF_INF) return GL_SF_NAN;
  if (a <= 0 && a == floor(a)) { int fin; double v = gl_sf_beta_pole(a, b, &fin); return fin ? log(fabs(v)) : GL_SF_INF; }
  if (b <= 0 && b == floor(b)) { int fin; double v = gl_sf_beta_pole(b, a, &fin); return fin ? log(fabs(v)) : GL_SF_INF; }
  if (a > b) { double t = a; a = b; b = t; }
  if (b == GL_SF_INF) return a > 0 ? -GL_SF_INF : GL_SF_NAN;
  if (a >= 10) {
    double c = gl_sf_lgcorr(a) + gl_sf_lgcorr(b) - gl_sf_lgcorr(a + b);
    return GL_SF_LN_SQRT_2PI - 0.5 * log(b) - (a - 0.5) * log1p(b / a) - b * log1p(a / b) + c;
  }
  if (a > 0 && b >= 10) {
    double c = gl_sf_lgcorr(b) - gl_sf_lgcorr(a + b);
    return lgamma(a) + (a - (b - 0.5) * log1p(a / b) - a * log(a + b) + c);
  }
  return lgamma(a) + lgamma(b) - lgamma(a + b);
}

/* B(a, b): Gamma(a) / Gamma(a + b) * Gamma(b) while a + b < 170 (the ratio first, so no
** product overflows), else exp(betaln) (positive a, b); the poles as gl_sf_beta_pole, the
** infinities as betaln's. */
GL_SF double gl_beta(double a, double b) {
  if (a != a || b != b) return GL_SF_NAN;
  if (a == -GL_SF_INF || b == -GL_SF_INF) return GL_SF_INF;        /* SciPy's */
  if (a == GL_SF_INF && b == GL_SF_INF) return GL_SF_NAN;
  int fin;
  if (a <= 0 && a == floor(a)) return gl_sf_beta_pole(a, b, &fin);
  if (b <= 0 && b == floor(b)) return gl_sf_beta_pole(b, a, &fin);
  if (a > b) { double t = a; a = b; b = t; }
  if (b == GL_SF_INF) return a > 0 ? 0 : GL_SF_NAN;
  if (a + b < 170 && fabs(a) > 1e-300) return tgamma(a) / tgamma(a + b) * tgamma(b);
  if (a > 0) return exp(gl_betaln(a, b));
  double s = (tgamma(a) < 0) != (tgamma(a + b) < 0) ? -1 : 1;   /* only b is large here */
  return s * exp(gl_betaln(a, b));
}

/* ---- error function family ----------------------------------------------------------- */

GL_SF double gl_erfc(double x) { return erfc(x); }

/* exp(x^2), the rounding of x^2 carried (x^2 = h + l exactly, e^l ~ 1 + l). */
GL_SF double gl_sf_expx2(double x) {
  double h = x * x, l = fma(x, x, -h);
  return exp(h) * (1 + l);
}

/* erfcx(x) = exp(x^2) erfc(x): the product below 12, the continued fraction
** erfcx(x) = 1/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) above (40 levels:
** converged to the last bit there), and 2 exp(x^2) - erfcx(-x) for x < 0. */
GL_SF double gl_sf_erfcx_pos(double x) {
  if (x < 12) return gl_sf_expx2(x) * erfc(x);
  if (x == GL_SF_INF) return 0;
  double f = x;
  for (int k = 40; k >= 1; k--) f = x + 0.5 * k / f;
  return GL_SF_1_SQRTPI / f;
}
GL_SF double gl_erfcx(double x) {
  if (x != x) return x;
  if (x >= 0) return gl_sf_erfcx_pos(x);
  if (x < -26.7) return GL_SF_INF;
  return 2 * gl_sf_expx2(x) - gl_sf_erfcx_pos(-x);
}

/* A first guess at erfinv(y), w = -log((1 - y)(1 + y)): M. Giles' single-precision
** polynomials ("Approximating the erfinv function", GPU Computing Gems, 2011), good to
** ~1e-7 where Halley's step below makes it exact. */
GL_SF double gl_sf_erfinv_guess(double y, double w) {
  double p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w; p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3;
    p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w; p = 2.83297682 + p * w;
  }
  return p * y;
}

/* Halley's iteration x -= u / (1 + x u), u = f(x) / f'(x), on f = erf(x) - y: f''/f' is
** -2x. Cubic convergence: a step below 1e-7 x leaves nothing. */
GL_SF double gl_sf_erfinv_halley(double x, double y) {
  for (int i = 0; i < 12; i++) {
    double u = (erf(x) - y) / (GL_SF_2_SQRTPI * exp(-x * x));
    double dx = u / (1 + x * u);
    x -= dx;
    if (!(fabs(dx) > 1e-7 * fabs(x))) break;
  }
  return x;
}

/* erfc(x) = q for 0 < q <= 1/2 (x >= 0.47), by the same iteration on f = erfc(x) - q, whose
** u = sqrt(pi)/2 (q e^(x^2) - erfcx(x)) stays in range to the smallest subnormal q
** (q e^(x^2) = exp(log q + x^2), x^2 as two doubles). The first guess: Giles' down to
** q = 1e-16, below that the asymptotic erfc(x) ~ e^(-x^2) / (x sqrt pi) solved by
** x = sqrt(-log(q x sqrt pi)), three rounds. */
GL_SF double gl_sf_erfcinv_tail(double q) {
  double lq = log(q), x;
  if (q > 1e-16) x = gl_sf_erfinv_guess(1 - q, -log(q * (2 - q)));
  else {
    x = sqrt(-lq);
    for (int i = 0; i < 3; i++) x = sqrt(-lq - log(x * 1.77245385090551602730));
  }
  for (int i = 0; i < 12; i++) {
    double h = x * x, l = fma(x, x, -h);
    double u = 0.88622692545275801365 * (exp((lq + h) + l) - gl_sf_erfcx_pos(x));
    double dx = u / (1 + x * u);
    x -= dx;
    if (!(fabs(dx) > 1e-7 * fabs(x))) break;
  }
  return x;
}

/* erfinv on [-1, 1]: Halley on erf inside |y| <= 1/2, on erfc at 1 - |y| (exact) outside. */
GL_SF double gl_erfinv(double y) {
  double a = fabs(y);
  if (!(a <= 1)) return GL_SF_NAN;
  if (a == 1) return y * GL_SF_INF;
  if (a <= 0.5) return y == 0 ? y : gl_sf_erfinv_halley(gl_sf_erfinv_guess(y, -log1p(-y * y)), y);
  double x = gl_sf_erfcinv_tail(1 - a);
  return y < 0 ? -x : x;
}

/* erfcinv on [0, 2]: erfcinv(z) = erfinv(1 - z) where 1 - z is exact (1/2 <= z <= 3/2),
** the erfc solve at z or at 2 - z (exact) in the tails. */
GL_SF double gl_erfcinv(double z) {
  if (!(z >= 0 && z <= 2)) return GL_SF_NAN;
  if (z == 0) return GL_SF_INF;
  if (z == 2) return -GL_SF_INF;
  if (z < 0.5) return gl_sf_erfcinv_tail(z);
  if (z <= 1.5) return gl_erfinv(1 - z);
  return -gl_sf_erfcinv_tail(2 - z);
}

/* erfc(x / sqrt 2) with the rounding of the quotient t taken back: in the tail erfc's
** relative slope is 2t, so the half ulp of t would cost x^2/2 ulp (500 at x = 30). The
** remainder d = x/sqrt 2 - t comes from fma and sqrt 2 as two doubles; erfc(t + d) =
** erfc(t) - d 2/sqrt(pi) e^(-t^2) to far below the last bit. */
GL_SF double gl_sf_erfc_sqrt1_2(double x) {
  const double s_hi = 1.4142135623730951, s_lo = -9.667293313452913e-17;
  double t = x / s_hi;
  double d = (fma(-t, s_hi, x) - t * s_lo) / s_hi;
  double e = erfc(t);
  return fabs(t) < 1e300 ? e - d * GL_SF_2_SQRTPI * exp(-t * t) : e;
}

/* The standard normal CDF: 1/2 + erf(x/sqrt 2)/2 inside |x| < 1, else through erfc (no
** cancellation in the lower tail). */
GL_SF double gl_ndtr(double x) {
  if (fabs(x) < 1) return 0.5 + 0.5 * erf(x * GL_SF_SQRT1_2);
  return x > 0 ? 1 - 0.5 * gl_sf_erfc_sqrt1_2(x) : 0.5 * gl_sf_erfc_sqrt1_2(-x);
}

/* Its inverse: ndtri(p) = -sqrt(2) erfcinv(2p), 2p exact. */
GL_SF double gl_ndtri(double p) {
  if (!(p >= 0 && p <= 1)) return GL_SF_NAN;
  return -GL_SF_SQRT2 * gl_erfcinv(2 * p);
}

/* log ndtr(x): log1p(-ndtr(-x)) above 0 (ndtr's own rounding near 1 would be all of it),
** log ndtr(x) on (-1, 0], and below -1 log(erfcx(t)/2) - t^2 with t = -x/sqrt 2, which
** never underflows. */
GL_SF double gl_log_ndtr(double x) {
  if (x != x) return x;
  if (x > 0) return log1p(-0.5 * gl_sf_erfc_sqrt1_2(x));
  if (x > -1) return log(gl_ndtr(x));
  return log(0.5 * gl_erfcx(-x / GL_SF_SQRT2)) - 0.5 * x * x;
}

/* ---- log-weighted terms ------------------------------------------------------------------ */

/* x log y and x log1p y, 0 where x = 0 and y is not NaN (SciPy's and PyTorch's). */
GL_SF double gl_xlogy(double x, double y) {
  if (x == 0 && y == y) return 0;
  return x * log(y);
}
GL_SF double gl_xlog1py(double x, double y) {
  if (x == 0 && y == y) return 0;
  return x * log1p(y);
}


/* ---- incomplete gamma -------------------------------------------------------------------- */

/* log1p(t) - t, its series inside |t| < 0.3 (where the difference would cancel). */
GL_SF double gl_sf_log1pmx(double t) {
  if (fabs(t) >= 0.3) return log1p(t) - t;
  double p = t, s = 0;
  for (int k = 2; k < 60; k++) {
    p *= -t;
    double d = p / k;
    s += d;
    if (fabs(d) <= 1e-17 * fabs(s)) break;
  }
  return s;
}

/* x^a e^-x / Gamma(a): from 10 up by Stirling, sqrt(a / 2 pi) (x/a)^a e^(a-x) e^-delta(a).
** Near x = a as exp(a log1pmx((x-a)/a)), whose exponent is then small; away from it as
** pow(x/a, a) e^(a - x) with the roundings of x/a and a - x carried (x/a = q + r, a - x =
** s + e exactly: (q + r)^a = q^a (1 + a r/q), e^(s+e) = e^s (1 + e); q^a e^s as the square
** of q^(a/2) e^(s/2), which stays in range where its factors would not), so the result keeps
** a few ulp where the exponent alone would cost its size in ulp; in logs where those
** factors would overflow or underflow. Below 10 plainly, exp(a log x - x - lgamma(a)). */
GL_SF double gl_sf_igam_pre(double a, double x) {
  if (a < 10) return exp(a * log(x) - x - lgamma(a));
  double t = (x - a) / a, k = sqrt(a / (2 * GL_SF_PI)) * exp(-gl_sf_lgcorr(a));
  if (fabs(t) >= 0.5) {
    double q = x / a, r = fma(-q, a, x) / a;
    double s = a - x, bb = a - s, e = (a - (s + bb)) + (bb - x);  /* two-sum: a - x = s + e */
    double ph = pow(q, 0.5 * a), eh = exp(0.5 * s), m = ph * eh;  /* the square root of q^a e^s */
    if (ph > 1e-300 && ph < 1e300 && eh > 1e-300 && eh < 1e300 && m > 1e-300 && m < 1e300)
      return k * m * m * (1 + a * r / q) * (1 + e);
  }
  return k * exp(a * gl_sf_log1pmx(t));
}

/* Temme's uniform expansion for a large a (DLMF 8.12): with lambda = x/a and eta =
** sign(lambda - 1) sqrt(2 (lambda - 1 - log lambda)), Q = erfc(eta sqrt(a/2))/2 + R and
** P = erfc(-eta sqrt(a/2))/2 - R, R = e^(-a eta^2/2) / sqrt(2 pi a) (c0(eta) + c1(eta)/a),
** c0 = 1/(lambda-1) - 1/eta, c1 = 1/eta^3 - 1/(lambda-1)^3 - 1/(lambda-1)^2 - 1/(12(lambda-1))
** (their Taylor series near eta = 0, where both cancel). The next term is below 1e-15 from
** a = 1e6, where the series and the fraction would need thousands of terms. */
GL_SF double gl_sf_igam_temme(double a, double x, int upper) {
  double t = (x - a) / a, h = -gl_sf_log1pmx(t);                  /* lambda - 1 - log lambda */
  double eta = (t < 0 ? -1 : 1) * sqrt(2 * h), c0, c1;
  if (fabs(t) < 1e-3) {
    c0 = -1.0 / 3 + eta / 12 - 2 * eta * eta / 135;
    c1 = -1.0 / 540 - eta / 288;
  } else {
    c0 = 1 / t - 1 / eta;
    c1 = 1 / (eta * eta * eta) - 1 / (t * t * t) - 1 / (t * t) - 1 / (12 * t);
  }
  double r = exp(-a * h) / sqrt(2 * GL_SF_PI * a) * (c0 + c1 / a);
  double z = eta * sqrt(0.5 * a);
  return upper ? 0.5 * erfc(z) + r : 0.5 * erfc(-z) - r;
}

/* The regularised incomplete gammas P(a, x) (upper = 0) and Q(a, x) = 1 - P (upper = 1).
** Below x = a + 1 the series P = x^a e^-x / Gamma(a+1) sum x^n / ((a+1)...(a+n)); above,
** Legendre's continued fraction Q = x^a e^-x / Gamma(a) / (x + 1 - a - 1(1-a) / (x + 3 - a
** - 2(2-a) / ...)) by Lentz's method; the other one as 1 minus it (each is below ~0.6
** where it is summed, so no cancellation). SciPy's edges: NaN for a < 0 or x < 0, and at
** a = x = 0; P(0, x > 0) = 1. Above a = 1e6, Temme's expansion. */
GL_SF double gl_sf_igam(double a, double x, int upper) {
  if (a != a || x != x || a < 0 || x < 0) return GL_SF_NAN;
  if (a == 0) return x > 0 ? (double)!upper : GL_SF_NAN;
  if (x == 0) return (double)upper;
  if (a == GL_SF_INF) return x == GL_SF_INF ? GL_SF_NAN : (double)upper;
  if (x == GL_SF_INF) return (double)!upper;
  if (a > 1e6) return gl_sf_igam_temme(a, x, upper);
  double pre = gl_sf_igam_pre(a, x);
  if (x < a + 1) {
    double t = 1, s = 1;
    for (int n = 1; n < 100000; n++) {
      t *= x / (a + n);
      s += t;
      if (t <= 1e-17 * s) break;
    }
    double p = pre * s / a;
    return upper ? 1 - p : p;
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int n = 1; n < 100000; n++) {
    double an = -n * (n - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) <= 1e-16) break;
  }
  double q = pre * h;
  return upper ? q : 1 - q;
}
GL_SF double gl_gammainc(double a, double x) { return gl_sf_igam(a, x, 0); }
GL_SF double gl_gammaincc(double a, double x) { return gl_sf_igam(a, x, 1); }

/* ---- Bessel functions -------------------------------------------------------------------- */

/* I_nu(x) e^-x, nu = 0 or 1, x >= 0: the power series (x/2)^nu sum (x^2/4)^k / (k! (k+nu)!)
** up to 30 (q = x^2/4 enters the k-th term k times: its rounding r is taken back as
** r sum k t_k), above Hankel's expansion e^x / sqrt(2 pi x) sum (-1)^k a_k(nu) / x^k,
** a_k = (4nu^2 - 1)(4nu^2 - 9)...(4nu^2 - (2k-1)^2) / (k! 8^k), to its smallest term
** (e^-2x, below 1e-26 from 30). */
GL_SF double gl_sf_besseli_series(double x, int nu) {
  double h = x * x, l = fma(x, x, -h), r = h > 0 ? l / h : 0;
  double q = 0.25 * h, t = nu ? 0.5 * x : 1, s = t, sk = 0;
  for (int k = 1; k < 500; k++) {
    t *= q / (k * (double)(k + nu));
    s += t;
    sk += k * t;
    if (t <= 1e-17 * s) break;
  }
  return s + r * sk;
}
GL_SF double gl_sf_besselie(double x, int nu) {
  if (x == GL_SF_INF) return 0;
  if (x <= 30) return gl_sf_besseli_series(x, nu) * exp(-x);
  double mu = 4.0 * nu * nu, t = 1, s = 1;
  for (int k = 1; k < 200; k++) {
    double m = 2 * k - 1;
    double nt = -t * (mu - m * m) / (8 * k * x);
    if (fabs(nt) >= fabs(t)) break;
    t = nt;
    s += t;
    if (fabs(t) <= 1e-17 * fabs(s)) break;
  }
  return s / sqrt(2 * GL_SF_PI * x);
}
GL_SF double gl_i0e(double x) { return gl_sf_besselie(fabs(x), 0); }
GL_SF double gl_i1e(double x) { double r = gl_sf_besselie(fabs(x), 1); return x < 0 ? -r : r; }
/* I0 and I1 from the scaled ones, e^|x| in two halves (finite up to |x| = 713, where e^x
** alone overflows at 709.8). */
GL_SF double gl_i0(double x) {
  double a = fabs(x);
  if (a == GL_SF_INF) return GL_SF_INF;
  if (a <= 30) return gl_sf_besseli_series(a, 0);
  double e = exp(0.5 * a);
  return gl_sf_besselie(a, 0) * e * e;
}
GL_SF double gl_i1(double x) {
  double a = fabs(x);
  if (a == GL_SF_INF) return x;
  double e = exp(0.5 * a), r = a <= 30 ? gl_sf_besseli_series(a, 1) : gl_sf_besselie(a, 1) * e * e;
  return x < 0 ? -r : r;
}

/* J0 and J1 (nu = 0, 1) for x >= 0. Below 25, Miller's backward recurrence J_(k-1) =
** (2k/x) J_k - J_(k+1) from an even N far above x (started at 0, 1e-30; rescaled as it
** grows), normalised by 1 = J0 + 2 (J2 + J4 + ...). From 25 on, Hankel's expansion
** sqrt(2 / pi x) (P cos chi - Q sin chi), chi = x - (2nu + 1) pi/4, P and Q the even and
** odd terms of sum (-1)^floor(k/2) a_k(nu) / x^k (a_k as for I), cos chi and sin chi
** from cos x and sin x so no pi/4 is rounded into a large x. Near the zeros the error is
** absolute (a few 1e-17), as SciPy's. */
GL_SF double gl_sf_besselj(double x, int nu) {
  if (x == GL_SF_INF) return 0;
  if (x < 1e-8) return nu ? 0.5 * x : 1 - 0.25 * x * x;
  if (x < 25) {
    int n = 2 * (int)(0.5 * x + 8 + 2 * sqrt(x)) + 10;
    double jp = 0, j = 1e-30, norm = 0, j0 = 0, j1 = 0;
    for (int k = n; k >= 1; k--) {
      double jm = 2 * k / x * j - jp;                             /* J_(k-1) */
      jp = j;
      j = jm;
      if (k - 1 == 1) j1 = j;
      if (k - 1 == 0) j0 = j;
      if ((k - 1) % 2 == 0 && k - 1 > 0) norm += 2 * j;
      if (fabs(j) > 1e250) { j *= 1e-250; jp *= 1e-250; norm *= 1e-250; j1 *= 1e-250; }
    }
    norm += j0;
    return (nu ? j1 : j0) / norm;
  }
  double mu = 4.0 * nu * nu, t = 1, p = 1, q = 0;
  for (int k = 1; k < 200; k++) {
    double m = 2 * k - 1;
    double nt = t * (mu - m * m) / (8 * k * x);
    if (fabs(nt) >= fabs(t) || fabs(nt) <= 1e-18) break;
    t = nt;
    int r = k % 4;                                 /* sign (-1)^floor(k/2): + - - + */
    double term = (r == 0 || r == 1) ? t : -t;
    if (k % 2) q += term; else p += term;
  }
  double c = cos(x), s = sin(x), cc, sc;
  if (nu == 0) { cc = (c + s) * GL_SF_SQRT1_2; sc = (s - c) * GL_SF_SQRT1_2; }
  else { cc = (s - c) * GL_SF_SQRT1_2; sc = -(s + c) * GL_SF_SQRT1_2; }
  return sqrt(2 / (GL_SF_PI * x)) * (p * cc - q * sc);
}
GL_SF double gl_bessel_j0(double x) { return x != x ? x : gl_sf_besselj(fabs(x), 0); }
GL_SF double gl_bessel_j1(double x) {
  if (x != x) return x;
  double r = gl_sf_besselj(fabs(x), 1);
  return x < 0 ? -r : r;
}

/* ---- exponential integrals --------------------------------------------------------------- */

/* E1(x) for x > 0: the series -gamma - log x - sum (-x)^k / (k k!) up to 1/2, above the
** continued fraction e^-x / (x + 1 - 1/(x + 3 - 4/(x + 5 - 9/...))), evaluated from
** level 30 + 120/x up.
** NaN below 0 (SciPy's real exp1), inf at 0. */
GL_SF double gl_exp1(double x) {
  if (x != x || x < 0) return GL_SF_NAN;
  if (x == 0) return GL_SF_INF;
  if (x == GL_SF_INF) return 0;
  if (x <= 0.5) {
    double t = 1, s = 0;
    for (int k = 1; k < 100; k++) {
      t *= -x / k;
      double d = t / k;
      s += d;
      if (fabs(d) <= 1e-17 * fabs(s)) break;
    }
    return -GL_SF_EULER - log(x) - s;
  }
  int n = 30 + (int)(120.0 / x);
  double g = x + 2 * n + 1;
  for (int k = n; k >= 1; k--) g = x + (2 * k - 1) - (double)k * k / g;
  return exp(-x) / g;
}

/* Ei(x): -E1(-x) below 0; the series gamma + log x + sum x^k / (k k!) up to 50, above the
** asymptotic e^x / x sum k! / x^k to its smallest term (below 1e-20 there). */
GL_SF double gl_expi(double x) {
  if (x != x) return x;
  if (x < 0) return -gl_exp1(-x);
  if (x == 0) return -GL_SF_INF;
  if (x == GL_SF_INF) return x;
  if (x <= 50) {
    double t = 1, s = 0;
    for (int k = 1; k < 500; k++) {
      t *= x / k;
      double d = t / k;
      s += d;
      if (d <= 1e-17 * s) break;
    }
    return (GL_SF_EULER + log(x)) + s;
  }
  double t = 1, s = 1;
  for (int k = 1; k < 100; k++) {
    double nt = t * k / x;
    if (nt >= t) break;
    t = nt;
    s += t;
    if (t <= 1e-17 * s) break;
  }
  double e = exp(0.5 * x);
  return e * (e / x * s);
}

/* ---- entropies and logit ----------------------------------------------------------------- */

/* -x log x (0 at 0, -inf below). */
GL_SF double gl_entr(double x) {
  if (x != x) return x;
  if (x > 0) return -x * log(x);
  return x == 0 ? 0 : -GL_SF_INF;
}
/* x log(x / y), 0 at x = 0 <= y, inf elsewhere off the positive quadrant. Where x/y is
** near 1, log1p((x - y) / y) (x - y exact); where x/y would overflow or underflow,
** log x - log y. */
GL_SF double gl_rel_entr(double x, double y) {
  if (x != x || y != y) return GL_SF_NAN;
  if (x > 0 && y > 0) {
    double r = x / y;
    if (r > 0.5 && r < 2) return x * log1p((x - y) / y);
    if (r == GL_SF_INF || r < 2.2250738585072014e-308) return x * (log(x) - log(y));
    return x * log(r);
  }
  return x == 0 && y >= 0 ? 0 : GL_SF_INF;
}
/* log(x / (1 - x)), as log1p((2x - 1) / (1 - x)) on [1/4, 3/4] where 2x - 1 is exact and
** the result small. */
GL_SF double gl_logit(double x) {
  if (!(x >= 0 && x <= 1)) return GL_SF_NAN;
  if (x >= 0.25 && x <= 0.75) return log1p((2 * x - 1) / (1 - x));
  return log(x / (1 - x));
}
#ifdef GL_SF_POP_OPTIONS
#pragma GCC pop_options
#undef GL_SF_POP_OPTIONS
#endif

#endif
