/*
** random_dist.h — NumPy's Generator distributions, one element at a time, for both
** devices (src/backend/cpu/cpu_random.c and kernels/random.cu run this code), so a seed
** gives the same numbers on cpu and cuda.
**
** ---- the stream of one element ------------------------------------------------------
** A sampler call that fills n elements with a generator at offset o gives element i
** (C order) its own sequence of counter blocks, read in order as 64-bit values
** x = w0:w1, then w2:w3:
**
**     block (o + i, sub = 0, 1, 2, ...) = Philox4x32-10(counter = (lo32(o + i), hi32(o + i),
**                                                                 sub, 0), key = seed)
**
** (sub 0 is kernels/philox.h's block o + i). A rejection sampler takes as many values as
** it needs from its own sequence, so every element depends only on (seed, o, i) and its
** parameters, never on another element, a thread or the launch. The call then advances
** the offset by n blocks.
**
** From a value x: u01(x) = (x >> 11) 2^-53 in [0, 1); uopen(x) = ((x >> 11) + 1/2) 2^-53
** in (0, 1); a standard normal takes two values, Box-Muller's first output
** (gl_rand_normal2d; gamma's own, gl_rand_normal_v); a standard exponential is -log(uopen).
**
** The algorithms (the same as NumPy's where named; none copies code):
**   gamma          Marsaglia and Tsang (2000); shape < 1 by gamma(shape + 1) u^(1/shape)
**   beta           Johnk's rejection for a, b <= 1, else Ga / (Ga + Gb)
**   poisson        multiplication of uniforms for lam < 10, else Hormann's PTRS (1993)
**   binomial       inversion for n min(p, 1-p) < 30, else Hormann's BTRS (1993)
**   hypergeometric sequential draws without replacement over m = min(sample, total -
**                  sample) when m <= 100, else Stadlober's ratio of uniforms (HRUA)
**   vonmises       Best and Fisher (1979); zipf: Devroye's rejection; logseries: Kemp's
**   wald, triangular, geometric, gumbel, laplace, logistic, pareto, power, rayleigh,
**   weibull, standard_cauchy: inversion or the usual transforms of exponentials/normals
**   chisquare 2 G(df/2); f, standard_t, noncentral_chisquare, negative_binomial (a
**   gamma-poisson mixture), lognormal: compositions in the same element stream.
** A loop stops after GL_RDIST_MAXTRY tries (never reached for valid parameters: each try
** is accepted with probability above 0.5) so a kernel always ends.
*/
#ifndef GL_KERNELS_RANDOM_DIST_H
#define GL_KERNELS_RANDOM_DIST_H

#include <math.h>
#include <stdbool.h>
#include "philox.h"

#define GL_RDIST_MAXTRY 1000

/* The samplers (numbered as the host's table in src/ops/random.c). */
enum {
  GL_RD_GAMMA = 0,          /* (shape, scale) */
  GL_RD_BETA,               /* (a, b) */
  GL_RD_POISSON,            /* (lam) */
  GL_RD_BINOMIAL,           /* (n, p) */
  GL_RD_EXPONENTIAL,        /* (scale) */
  GL_RD_CHISQUARE,          /* (df) */
  GL_RD_NONCENTRAL_CHISQUARE, /* (df, nonc) */
  GL_RD_F,                  /* (dfnum, dfden) */
  GL_RD_GEOMETRIC,          /* (p) */
  GL_RD_GUMBEL,             /* (loc, scale) */
  GL_RD_HYPERGEOMETRIC,     /* (ngood, nbad, nsample) */
  GL_RD_LAPLACE,            /* (loc, scale) */
  GL_RD_LOGISTIC,           /* (loc, scale) */
  GL_RD_LOGNORMAL,          /* (mean, sigma) */
  GL_RD_LOGSERIES,          /* (p) */
  GL_RD_NEGATIVE_BINOMIAL,  /* (n, p) */
  GL_RD_PARETO,             /* (a) */
  GL_RD_POWER,              /* (a) */
  GL_RD_RAYLEIGH,           /* (scale) */
  GL_RD_STANDARD_CAUCHY,    /* () */
  GL_RD_STANDARD_T,         /* (df) */
  GL_RD_TRIANGULAR,         /* (left, mode, right) */
  GL_RD_VONMISES,           /* (mu, kappa) */
  GL_RD_WALD,               /* (mean, scale) */
  GL_RD_WEIBULL,            /* (a) */
  GL_RD_ZIPF,               /* (a) */
  GL_RD_NORMAL,             /* (loc, scale) */
  GL_NRDIST
};

/* 'pre' (the CPU's, else NULL): the words of the element's first npre sub-blocks, made
** ahead for many elements at once (vectorised); the stream reads them instead of making
** them, the same words. */
typedef struct gl_rstream {
  uint64_t seed, block;
  uint32_t sub, pos;
  uint32_t w[4];
#ifndef __CUDACC__
  const uint32_t *pre;
  uint32_t npre;
#endif
} gl_rstream;

GL_HD void gl_rs_init(gl_rstream *s, uint64_t seed, uint64_t block) {
  s->seed = seed; s->block = block; s->sub = 0; s->pos = 4;
#ifndef __CUDACC__
  s->pre = NULL; s->npre = 0;
#endif
}

/* The next 64-bit value of the element's sequence. */
GL_HD uint64_t gl_rs_next(gl_rstream *s) {
  if (s->pos >= 4) {
#ifndef __CUDACC__
    if (s->sub < s->npre) {
      for (int t = 0; t < 4; t++) s->w[t] = s->pre[4 * s->sub + t];
      s->sub++;
    } else
#endif
    gl_philox_block_sub(s->seed, s->block, s->sub++, s->w);
    s->pos = 0;
  }
  uint64_t x = gl_rand_u64(s->w[s->pos], s->w[s->pos + 1]);
  s->pos += 2;
  return x;
}

GL_HD double gl_rs_u01(gl_rstream *s) { return gl_rand_u01d(gl_rs_next(s)); }
GL_HD double gl_rand_uopen(uint64_t x) { return ((double)(int64_t)(x >> 11) + 0.5) * 0x1p-53; }
GL_HD double gl_rs_uopen(gl_rstream *s) { return gl_rand_uopen(gl_rs_next(s)); }
GL_HD double gl_rs_exp(gl_rstream *s) { return -log(gl_rs_uopen(s)); }
GL_HD double gl_rs_normal(gl_rstream *s) {
  uint64_t xa = gl_rs_next(s), xb = gl_rs_next(s);
  return gl_rand_normal1d(xa, xb);
}

/* Box-Muller's z0 from the same two values as gl_rand_normal1d, in double arithmetic a compiler
** vectorises: kernels/vmath.h's double log and fdlibm's sin and cos polynomials on [-pi/4, pi/4]
** (within about an ulp of libm's). Gamma's normals: the cpu runs their first tries over a
** whole chunk, and the numbers are the same on both devices but for the fma contraction. */
GL_HD double gl_rand_normal_v(uint64_t xa, uint64_t xb) {
  double u1 = (double)(int64_t)(xa >> 11) * 0x1p-53 + 0x1p-54;    /* (0, 1) */
  double r = sqrt(-2.0 * gl_vm_logd(u1));
  double q = 4.0 * gl_rand_u01d(xb);
  uint64_t k = (uint64_t)(int64_t)(q + 0.5);                       /* q >= 0: floor */
  double x = (q - (double)(int64_t)k) * 1.57079632679489661923, z = x * x;
  double sp = fma(z, 1.58969099521155010221e-10, -2.50507602534068634195e-08);
  sp = fma(sp, z, 2.75573137070700676789e-06);
  sp = fma(sp, z, -1.98412698298579493134e-04);
  sp = fma(sp, z, 8.33333333332248946124e-03);
  sp = fma(sp, z, -1.66666666666666324348e-01);
  double sn = fma(x * z, sp, x);
  double cp = fma(z, -1.13596475577881948265e-11, 2.08757232129817482790e-09);
  cp = fma(cp, z, -2.75573143513906633035e-07);
  cp = fma(cp, z, 2.48015872894767294178e-05);
  cp = fma(cp, z, -1.38888888888741095749e-03);
  cp = fma(cp, z, 4.16666666666666019037e-02);
  double cs = fma(z * z, cp, fma(-0.5, z, 1.0));
  uint64_t odd = (uint64_t)0 - (k & 1), neg = ((k + 1) & 2) << 62;   /* masks: no bools */
  uint64_t C = (gl_vm_f64_bits(sn) & odd) | (gl_vm_f64_bits(cs) & ~odd);
  return r * gl_vm_bits_f64(C ^ neg);
}
GL_HD double gl_rs_normal_v(gl_rstream *s) {
  uint64_t xa = gl_rs_next(s), xb = gl_rs_next(s);
  return gl_rand_normal_v(xa, xb);
}

/* Gamma's constants, which depend on the shape only (a call with one shape makes them once):
** d = a' - 1/3, c = 1/sqrt(9d), a' = a + 1 below 1. */
typedef struct gl_rs_gamma_c {
  double a, d, c;
} gl_rs_gamma_c;

GL_HD void gl_rs_gamma_setup(gl_rs_gamma_c *g, double a) {
  g->a = a;
  g->d = (a < 1.0 ? a + 1.0 : a) - 1.0 / 3.0;
  g->c = 1.0 / sqrt(9.0 * g->d);
}

/* Marsaglia-Tsang's first test of a try from the normal x and the uniform u: v = (1 + c x)^3
** when it accepts (1), else 0 (the try needs the log test, or is rejected). */
GL_HD int gl_rs_gamma_squeeze(const gl_rs_gamma_c *g, double x, double u, double *v) {
  double t = 1.0 + g->c * x, x2 = x * x;
  *v = t * t * t;
  return (t > 0) & (u < 1.0 - 0.0331 * x2 * x2);
}

/* Standard gamma of shape a >= 0 (Marsaglia-Tsang). */
GL_HD double gl_rs_gamma_run(gl_rstream *s, const gl_rs_gamma_c *g) {
  double a = g->a;
  if (a <= 0) return 0.0;
  double boost = 1.0;
  if (a < 1.0) boost = exp(log(gl_rs_uopen(s)) / a);   /* G(a) = G(a + 1) U^(1/a), U drawn first */
  double d = g->d, c = g->c, v = 1.0;
  for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
    double x = gl_rs_normal_v(s);
    if (!(1.0 + c * x > 0)) continue;
    double u = gl_rs_uopen(s), x2 = x * x;
    if (gl_rs_gamma_squeeze(g, x, u, &v)) break;
    if (log(u) < 0.5 * x2 + d * (1.0 - v + log(v))) break;
  }
  return d * v * boost;
}

GL_HD double gl_rs_gamma(gl_rstream *s, double a) {
  gl_rs_gamma_c g;
  gl_rs_gamma_setup(&g, a);
  return gl_rs_gamma_run(s, &g);
}

GL_HD double gl_rs_beta(gl_rstream *s, double a, double b) {
  if (a <= 1.0 && b <= 1.0) {                  /* Johnk */
    for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
      double u = gl_rs_uopen(s), v = gl_rs_uopen(s);
      double lx = log(u) / a, ly = log(v) / b;
      double x = exp(lx), y = exp(ly);
      if (x + y <= 1.0) {
        if (x + y > 0) return x / (x + y);
        double m = lx > ly ? lx : ly;         /* both underflowed: in logs */
        lx -= m; ly -= m;
        return exp(lx - log(exp(lx) + exp(ly)));
      }
    }
    return a / (a + b);
  }
  double ga = gl_rs_gamma(s, a), gb = gl_rs_gamma(s, b);
  return ga / (ga + gb);
}

/* Poisson's constants, which depend on lam only (a call with one lam makes them once). */
typedef struct gl_rs_poisson_c {
  double lam, lim;                                 /* lim = e^-lam (multiplication) */
  double slam, loglam, b, a, inva, vr;             /* PTRS */
} gl_rs_poisson_c;

GL_HD void gl_rs_poisson_setup(gl_rs_poisson_c *c, double lam) {
  gl_rs_poisson_c zero = { 0 };
  *c = zero;
  c->lam = lam;
  if (lam <= 0) return;
  if (lam < 10.0) { c->lim = exp(-lam); return; }
  c->slam = sqrt(lam); c->loglam = log(lam);
  c->b = 0.931 + 2.53 * c->slam; c->a = -0.059 + 0.02483 * c->b;
  c->inva = 1.1239 + 1.1328 / (c->b - 3.4); c->vr = 0.9277 - 3.6224 / (c->b - 2.0);
}

GL_HD double gl_rs_poisson_run(gl_rstream *s, const gl_rs_poisson_c *c) {
  double lam = c->lam;
  if (lam <= 0) return 0.0;
  if (lam < 10.0) {                            /* multiply uniforms until below e^-lam */
    double lim = c->lim, prod = 1.0, k = 0;
    for (;;) {
      prod *= gl_rs_u01(s);
      if (prod <= lim || k > 1000) return k;
      k += 1;
    }
  }
  double loglam = c->loglam, b = c->b, a = c->a, inva = c->inva, vr = c->vr;   /* PTRS */
  double k = 0;
  for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
    double u = gl_rs_u01(s) - 0.5, v = gl_rs_u01(s);
    double us = 0.5 - fabs(u);
    k = floor((2.0 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(inva) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1.0)) return k;
  }
  return k < 0 ? 0 : k;
}

GL_HD double gl_rs_poisson(gl_rstream *s, double lam) {
  gl_rs_poisson_c c;
  gl_rs_poisson_setup(&c, lam);
  return gl_rs_poisson_run(s, &c);
}

/* log(k!) - ((k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2): Stirling's correction. */
GL_HD double gl_rs_stirling(double k) {
  if (k < 10) {
    const double t[10] = {
      0.08106146679532733, 0.041340695955409457, 0.027677925684997717, 0.020790672103765839,
      0.016644691189821259, 0.013876128823072875, 0.011896709945893313, 0.010411265261973668,
      0.0092554621827094508, 0.0083305634333594725,
    };
    return t[(int)k];
  }
  double r = 1.0 / (k + 1.0), r2 = r * r;
  return (1.0 / 12 - (1.0 / 360 - r2 / 1260) * r2) * r;
}

/* Binomial's constants, which depend on (n, p) only (a call with one pair makes them
** once): 'fixed' >= 0 is the value itself (n <= 0, p <= 0 or p >= 1). */
typedef struct gl_rs_binomial_c {
  double n, p, q, np, fixed;
  bool flip;
  double q0, bound;                                              /* inversion */
  double spq, b, a, c, alpha, vr, urvr, m, r, nr, npq;           /* BTRS */
} gl_rs_binomial_c;

GL_HD void gl_rs_binomial_setup(gl_rs_binomial_c *c, double n, double p) {
  gl_rs_binomial_c zero = { 0 };
  *c = zero;
  c->fixed = -1;
  if (n <= 0 || p <= 0) { c->fixed = 0.0; return; }
  if (p >= 1) { c->fixed = n; return; }
  c->flip = p > 0.5;
  if (c->flip) p = 1.0 - p;
  c->n = n; c->p = p; c->q = 1.0 - p; c->np = n * p;
  double q = c->q, np = c->np;
  if (np < 30.0) {
    c->q0 = exp(n * log1p(-p)); c->bound = fmin(n, np + 10.0 * sqrt(np * q + 1.0));
    return;
  }
  c->spq = sqrt(np * q); c->b = 1.15 + 2.53 * c->spq; c->a = -0.0873 + 0.0248 * c->b + 0.01 * p;
  c->c = np + 0.5; c->alpha = (2.83 + 5.1 / c->b) * c->spq; c->vr = 0.92 - 4.2 / c->b; c->urvr = 0.86 * c->vr;
  c->m = floor((n + 1) * p); c->r = p / q; c->nr = (n + 1) * c->r; c->npq = np * q;
}

GL_HD double gl_rs_binomial_run(gl_rstream *s, const gl_rs_binomial_c *cc) {
  if (cc->fixed >= 0) return cc->fixed;
  double n = cc->n, p = cc->p, q = cc->q, np = cc->np, k = 0;
  if (np < 30.0) {                             /* inversion from 0 up */
    double q0 = cc->q0, bound = cc->bound;
    for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
      double u = gl_rs_u01(s), px = q0;
      k = 0;
      while (u > px) {
        u -= px;
        k += 1;
        if (k > bound) break;
        px *= (n - k + 1) * p / (k * q);
      }
      if (k <= bound) break;
    }
  } else {                                     /* BTRS */
    double b = cc->b, a = cc->a, c = cc->c, alpha = cc->alpha, vr = cc->vr, urvr = cc->urvr;
    double m = cc->m, r = cc->r, nr = cc->nr, npq = cc->npq;
    for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
      double v = gl_rs_u01(s), u;
      if (v <= urvr) {
        u = v / vr - 0.43;
        k = floor((2 * a / (0.5 - fabs(u)) + b) * u + c);
        break;
      }
      if (v >= vr) {
        u = gl_rs_u01(s) - 0.5;
      } else {
        u = v / vr - 0.93;
        u = (u < 0 ? -0.5 : 0.5) - u;
        v = gl_rs_u01(s) * vr;
      }
      double us = 0.5 - fabs(u);
      k = floor((2 * a / us + b) * u + c);
      if (k < 0 || k > n) continue;
      v = v * alpha / (a / (us * us) + b);
      double km = fabs(k - m);
      if (km <= 15) {                          /* f(k) / f(m) by the recurrence */
        double f = 1.0;
        if (m < k) for (double i = m + 1; i <= k; i += 1) f *= nr / i - r;
        else for (double i = k + 1; i <= m; i += 1) v *= nr / i - r;
        if (v <= f) break;
        continue;
      }
      v = log(v);
      double rho = (km / npq) * (((km / 3.0 + 0.625) * km + 1.0 / 6.0) / npq + 0.5);
      double tt = -km * km / (2.0 * npq);
      if (v < tt - rho) break;
      if (v > tt + rho) continue;
      double nm = n - m + 1, h = (m + 0.5) * log((m + 1) / (r * nm)) + gl_rs_stirling(m) + gl_rs_stirling(n - m);
      double nk = n - k + 1;
      if (v <= h + (n + 1) * log(nm / nk) + (k + 0.5) * log(nk * r / (k + 1)) - gl_rs_stirling(k) - gl_rs_stirling(n - k))
        break;
    }
    if (k < 0) k = 0;
    if (k > n) k = n;
  }
  return cc->flip ? n - k : k;
}

GL_HD double gl_rs_binomial(gl_rstream *s, double n, double p) {
  gl_rs_binomial_c c;
  gl_rs_binomial_setup(&c, n, p);
  return gl_rs_binomial_run(s, &c);
}

GL_HD double gl_rs_chisq(gl_rstream *s, double df) { return 2.0 * gl_rs_gamma(s, df / 2.0); }

/* Stadlober's ratio of uniforms (HRUA), for m = min(sample, total - sample) above 100
** draws: returns how many of the smaller colour (mingb of total) m draws take. */
GL_HD double gl_rs_hyper_hrua(gl_rstream *s, double total, double mingb, double maxgb, double m) {
  const double d1 = 1.7155277699214135, d2 = 0.8989161620588988;    /* 2 sqrt(2/e), 3 - 2 sqrt(3/e) */
  double p = mingb / total, q = maxgb / total;
  double a = m * p + 0.5;
  double c = sqrt((total - m) * m * p * q / (total - 1) + 0.5);
  double h = d1 * c + d2;
  double mode = floor((m + 1) * (mingb + 1) / (total + 2));
  double g = lgamma(mode + 1) + lgamma(mingb - mode + 1) + lgamma(m - mode + 1) + lgamma(maxgb - m + mode + 1);
  double b = fmin(fmin(m, mingb) + 1, floor(a + 16 * c));
  double k = mode;
  for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
    double u = gl_rs_uopen(s), v = gl_rs_u01(s);
    double x = a + h * (v - 0.5) / u;
    if (x < 0 || x >= b) continue;
    double kk = floor(x);
    double tt = g - (lgamma(kk + 1) + lgamma(mingb - kk + 1) + lgamma(m - kk + 1) + lgamma(maxgb - m + kk + 1));
    if (u * (4 - u) - 3 <= tt) { k = kk; break; }      /* squeeze: accept */
    if (u * (u - tt) >= 1) continue;                    /* squeeze: reject */
    if (2 * log(u) <= tt) { k = kk; break; }
  }
  return k;
}

GL_HD double gl_rs_hypergeometric(gl_rstream *s, double good, double bad, double sample) {
  double total = good + bad, m = sample > total / 2 ? total - sample : sample;
  if (m > 100) {
    double mingb = fmin(good, bad), k = gl_rs_hyper_hrua(s, total, mingb, fmax(good, bad), m);
    if (good > bad) k = m - k;                          /* the good ones among m draws */
    return sample > total / 2 ? good - k : k;           /* m drew the complement */
  }
  double rt = total, rg = good;
  while (m > 0 && rg > 0 && rt > rg) {
    /* one draw: good with probability rg / rt */
    if ((double)gl_rand_mulhi64(gl_rs_next(s), (uint64_t)rt) < rg) rg -= 1;
    rt -= 1;
    m -= 1;
  }
  if (rt == rg) rg -= m;
  return sample > total / 2 ? rg : good - rg;
}

GL_HD double gl_rs_vonmises(gl_rstream *s, double mu, double kappa) {
  const double pi = 3.14159265358979323846;
  if (kappa < 1e-8) return pi * (2.0 * gl_rs_u01(s) - 1.0);
  double res;
  if (kappa > 1e6) {                           /* wrapped normal */
    res = mu + sqrt(1.0 / kappa) * gl_rs_normal(s);
  } else {
    double sp;
    if (kappa < 1e-5) {
      sp = 1.0 / kappa + kappa;
    } else {
      double r = 1.0 + sqrt(1.0 + 4.0 * kappa * kappa), rho = (r - sqrt(2.0 * r)) / (2.0 * kappa);
      sp = (1.0 + rho * rho) / (2.0 * rho);
    }
    double w = 0;
    for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
      double z = cos(pi * gl_rs_u01(s));
      w = (1.0 + sp * z) / (sp + z);
      double y = kappa * (sp - w), v = gl_rs_uopen(s);
      if (y * (2.0 - y) - v >= 0 || log(y / v) + 1.0 - y >= 0) break;
    }
    double u = gl_rs_u01(s);
    res = acos(fmin(1.0, fmax(-1.0, w)));
    if (u < 0.5) res = -res;
    res += mu;
  }
  bool neg = res < 0;
  double mod = fmod(fabs(res) + pi, 2.0 * pi) - pi;
  return neg ? -mod : mod;
}

GL_HD double gl_rs_zipf(gl_rstream *s, double a) {
  double am1 = a - 1.0, b = pow(2.0, am1), x = 1;
  for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
    double u = 1.0 - gl_rs_u01(s), v = gl_rs_u01(s);
    x = floor(pow(u, -1.0 / am1));
    if (!(x >= 1) || x > 9.2e18) continue;
    double tt = pow(1.0 + 1.0 / x, am1);
    if (v * x * (tt - 1.0) / (b - 1.0) <= tt / b) return x;
  }
  return x >= 1 && x <= 9.2e18 ? x : 1;
}

GL_HD double gl_rs_logseries(gl_rstream *s, double p) {
  double r = log1p(-p);
  for (int t = 0; t < GL_RDIST_MAXTRY; t++) {
    double v = gl_rs_u01(s);
    if (v >= p) return 1;
    double q = -expm1(r * gl_rs_u01(s));
    if (v <= q * q) {
      double res = floor(1.0 + log(v) / log(q));
      if (res < 1 || v == 0) continue;
      return res;
    }
    return v >= q ? 1 : 2;
  }
  return 1;
}

/* One element of sampler 'kind' with parameters (a, b, c) from the element's stream s. */
GL_HD double gl_rdist_draw_from(gl_rstream *s, int kind, double a, double b, double c) {
  const double pi = 3.14159265358979323846;
  switch (kind) {
    case GL_RD_GAMMA: return gl_rs_gamma(s, a) * b;
    case GL_RD_BETA: return gl_rs_beta(s, a, b);
    case GL_RD_POISSON: return gl_rs_poisson(s, a);
    case GL_RD_BINOMIAL: return gl_rs_binomial(s, a, b);
    case GL_RD_EXPONENTIAL: return a * gl_rs_exp(s);
    case GL_RD_CHISQUARE: return gl_rs_chisq(s, a);
    case GL_RD_NONCENTRAL_CHISQUARE:
      if (b == 0) return gl_rs_chisq(s, a);
      if (a > 1) {
        double z = gl_rs_normal(s) + sqrt(b);
        return gl_rs_chisq(s, a - 1) + z * z;
      } else {
        double i = gl_rs_poisson(s, b / 2.0);
        return gl_rs_chisq(s, a + 2.0 * i);
      }
    case GL_RD_F: {
      double x = gl_rs_chisq(s, a) * b, y = gl_rs_chisq(s, b) * a;
      return x / y;
    }
    case GL_RD_GEOMETRIC: {
      if (a >= 1) return 1;
      double k = ceil(log(gl_rs_uopen(s)) / log1p(-a));
      return k < 1 ? 1 : k;
    }
    case GL_RD_GUMBEL: return a - b * log(-log(gl_rs_uopen(s)));
    case GL_RD_HYPERGEOMETRIC: return gl_rs_hypergeometric(s, a, b, c);
    case GL_RD_LAPLACE: {
      double u = gl_rs_uopen(s);
      return u < 0.5 ? a + b * log(2.0 * u) : a - b * log(2.0 * (1.0 - u));
    }
    case GL_RD_LOGISTIC: {
      double u = gl_rs_uopen(s);
      return a + b * log(u / (1.0 - u));
    }
    case GL_RD_LOGNORMAL: return exp(a + b * gl_rs_normal(s));
    case GL_RD_LOGSERIES: return gl_rs_logseries(s, a);
    case GL_RD_NEGATIVE_BINOMIAL: {
      if (b >= 1) return 0;
      double y = gl_rs_gamma(s, a) * ((1.0 - b) / b);
      return gl_rs_poisson(s, y);
    }
    case GL_RD_PARETO: return expm1(gl_rs_exp(s) / a);
    case GL_RD_POWER: return pow(-expm1(-gl_rs_exp(s)), 1.0 / a);
    case GL_RD_RAYLEIGH: return a * sqrt(2.0 * gl_rs_exp(s));
    case GL_RD_STANDARD_CAUCHY: return tan(pi * (gl_rs_uopen(s) - 0.5));
    case GL_RD_STANDARD_T: {
      double z = gl_rs_normal(s), g = gl_rs_gamma(s, a / 2.0);
      return sqrt(a / 2.0) * z / sqrt(g);
    }
    case GL_RD_TRIANGULAR: {
      double base = c - a, lb = b - a, u = gl_rs_u01(s);
      if (u <= lb / base) return a + sqrt(u * lb * base);
      return c - sqrt((1.0 - u) * (c - b) * base);
    }
    case GL_RD_VONMISES: return gl_rs_vonmises(s, a, b);
    case GL_RD_WALD: {
      double y = gl_rs_normal(s);
      y = a * y * y;
      double x = a + (a / (2.0 * b)) * (y - sqrt(4.0 * b * y + y * y));
      return gl_rs_u01(s) <= a / (a + x) ? x : a * a / x;
    }
    case GL_RD_WEIBULL: return a == 0 ? 0.0 : pow(gl_rs_exp(s), 1.0 / a);
    case GL_RD_ZIPF: return gl_rs_zipf(s, a);
    case GL_RD_NORMAL: return a + b * gl_rs_normal(s);
    default: return 0.0;
  }
}

/* One element of sampler 'kind' with parameters (a, b, c) from block 'block'. */
GL_HD double gl_rdist_draw(int kind, uint64_t seed, uint64_t block, double a, double b, double c) {
  gl_rstream st;
  gl_rs_init(&st, seed, block);
  return gl_rdist_draw_from(&st, kind, a, b, c);
}

#endif
