/*
** cpu_reduce_kernels.c — the lane kernels of the CPU's reductions (sums of a map, products,
** max/min, all/any, the first match of argmax/argmin) and the conversions between dtypes
** and compute types (cpu_reduce.h).
**
** Each kernel is written once, as a loop over a compute type passed as a constant: the
** element steps (elem_*) switch on the CT and the kernel, and every (CT, kernel) pair the
** reductions use is instantiated by an entry of RK_LIST, where both are constants, so the
** switches fold away and each instance is the plain typed loop the compiler vectorises.
**
** Sums are blocked and pairwise: each lane adds UNROLL values, and the lane vectors of
** consecutive blocks are combined by a binary-counter cascade (pairwise over blocks), so
** the error grows with log(n), not n. Products keep lanes without a cascade (their
** rounding is relative, not absolute). max/min propagate NaN: a NaN element always wins
** and stays.
*/
#include <math.h>
#include <string.h>
#include "cpu_reduce.h"
#include "../../../kernels/convert.h"
#include "../../../kernels/vmath.h"

/* 512-bit vectors where the CPU has them (gcc's default for -march=native on recent
** Xeons is 256): these loops are bandwidth-bound and gain from wider loads. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("prefer-vector-width=512")
#endif

/* Each lane adds UNROLL values of a block before the block enters the cascade. */
#define UNROLL 16

/* The element steps and loops below take the CT and the kernel as constants. */
#define RK_INLINE static inline __attribute__((always_inline))

RK_INLINE int lane_count(gl_ct ct) { return ct == CT_F32 ? L32 : L64; }
RK_INLINE bool is_max(gl_rkernel k) { return k == K_MAX || k == K_MAXABS; }
RK_INLINE bool is_abs(gl_rkernel k) { return k == K_MAXABS || k == K_MINABS; }
RK_INLINE bool is_logic(gl_rkernel k) { return k == K_ALL || k == K_ANY; }
/* Whether a sum's map reads the per-output parameter a. */
RK_INLINE bool takes_param(gl_rkernel k) { return k == K_SUMDEV || k == K_SUMEXP; }

/* ---- the maps of the sums: v the element, a the per-output parameter, p the order ---- */

RK_INLINE float map_f32(gl_rkernel k, float v, float a, float p) {
  switch (k) {
    case K_SUMABS: return fabsf(v);
    case K_SUMSQ: return v * v;
    case K_SUMDEV: return (v - a) * (v - a);
    case K_SUMEXP: return gl_vexpf(v - a);
    case K_SUMPOW: return powf(fabsf(v), p);
    case K_SUMNZ: return v != 0 ? 1.0f : 0.0f;
    default: return v;
  }
}

RK_INLINE double map_f64(gl_rkernel k, double v, double a, double p) {
  switch (k) {
    case K_SUMDEV: return (v - a) * (v - a);
    case K_SUMEXP: return exp(v - a);
    case K_SUMABS: return fabs(v);
    case K_SUMPOW: return pow(fabs(v), p);
    case K_SUMSQ: return v * v;
    case K_SUMNZ: return v != 0 ? 1.0 : 0.0;
    default: return v;
  }
}

/* ---- element steps ------------------------------------------------------------------- */

/* t[l] += map(x[i]): one element of a sum (a map's parameter a, order p). */
RK_INLINE void elem_sum(gl_ct ct, gl_rkernel k, lanes *t, int l, const void *x, int64_t i,
                        double a, double p) {
  switch (ct) {
    case CT_F32: t->f[l] += map_f32(k, ((const float *)x)[i], (float)a, (float)p); break;
    case CT_F64: t->d[l] += map_f64(k, ((const double *)x)[i], a, p); break;
    default: t->u[l] += (uint64_t)((const int64_t *)x)[i]; break;
  }
}

/* acc[j] = (first) or += map(x[i]), with acc[j]'s own parameter ac[j]. */
RK_INLINE void elem_sum_row(gl_ct ct, gl_rkernel k, void *acc, int64_t j, const void *x, int64_t i,
                            const void *ac, double p, bool first) {
  if (ct == CT_F32) {
    float v = map_f32(k, ((const float *)x)[i], takes_param(k) ? ((const float *)ac)[j] : 0, (float)p);
    float *d = (float *)acc + j;
    *d = first ? v : *d + v;
  } else if (ct == CT_F64) {
    double v = map_f64(k, ((const double *)x)[i], takes_param(k) ? ((const double *)ac)[j] : 0, p);
    double *d = (double *)acc + j;
    *d = first ? v : *d + v;
  } else {
    uint64_t *d = (uint64_t *)acc + j;
    *d = (first ? 0 : *d) + (uint64_t)((const int64_t *)x)[i];
  }
}

/* t[l] (op)= u[m] for the lane folds: + for sums, * for products, & and | for all/any. */
RK_INLINE void elem_fold(gl_ct ct, gl_rkernel k, lanes *t, int l, const lanes *u, int m) {
  if (is_logic(k) && ct == CT_F32) t->b[l] = k == K_ALL ? t->b[l] & u->b[m] : t->b[l] | u->b[m];
  else if (is_logic(k)) t->i[l] = k == K_ALL ? t->i[l] & u->i[m] : t->i[l] | u->i[m];
  else if (ct == CT_F32) t->f[l] = k == K_PROD ? t->f[l] * u->f[m] : t->f[l] + u->f[m];
  else if (ct == CT_F64) t->d[l] = k == K_PROD ? t->d[l] * u->d[m] : t->d[l] + u->d[m];
  else t->u[l] = k == K_PROD ? t->u[l] * u->u[m] : t->u[l] + u->u[m];
}

/* Whether x[i] is nonzero (NaN counts as true, as in NumPy). */
RK_INLINE bool elem_nonzero(gl_ct ct, const void *x, int64_t i) {
  switch (ct) {
    case CT_F32: return ((const float *)x)[i] != 0;
    case CT_F64: return ((const double *)x)[i] != 0;
    default: return ((const int64_t *)x)[i] != 0;
  }
}

/* t[l] (*=, &=, |=) x[i]: one element of a product, all or any. */
RK_INLINE void elem_prod_logic(gl_ct ct, gl_rkernel k, lanes *t, int l, const void *x, int64_t i) {
  if (is_logic(k) && ct == CT_F32) {
    int32_t b = (int32_t)elem_nonzero(ct, x, i);
    t->b[l] = k == K_ALL ? t->b[l] & b : t->b[l] | b;
  } else if (is_logic(k)) {
    int64_t b = (int64_t)elem_nonzero(ct, x, i);
    t->i[l] = k == K_ALL ? t->i[l] & b : t->i[l] | b;
  } else if (ct == CT_F32) {
    t->f[l] *= ((const float *)x)[i];
  } else if (ct == CT_F64) {
    t->d[l] *= ((const double *)x)[i];
  } else {
    t->u[l] *= (uint64_t)((const int64_t *)x)[i];
  }
}

/* The row form: acc[j] = (first) or (*=, &=, |=) x[i]; all/any rows are uint8. */
RK_INLINE void elem_prod_logic_row(gl_ct ct, gl_rkernel k, void *acc, int64_t j, const void *x,
                                   int64_t i, bool first) {
  if (is_logic(k)) {
    uint8_t b = (uint8_t)elem_nonzero(ct, x, i), *d = (uint8_t *)acc + j;
    *d = first ? b : k == K_ALL ? *d & b : *d | b;
  } else if (ct == CT_F32) {
    float v = ((const float *)x)[i], *d = (float *)acc + j;
    *d = first ? v : *d * v;
  } else if (ct == CT_F64) {
    double v = ((const double *)x)[i], *d = (double *)acc + j;
    *d = first ? v : *d * v;
  } else {
    uint64_t v = (uint64_t)((const int64_t *)x)[i], *d = (uint64_t *)acc + j;
    *d = first ? v : *d * v;
  }
}

/* m[j] = v (first), or v where v = x[i] (|x[i]| for maxabs/minabs) beats m[j] or is NaN. With
** nancheck, z[j] += v * 0 as well, which stays 0 unless a NaN or an infinity went by. */
RK_INLINE void elem_ext(gl_ct ct, gl_rkernel k, void *m, int64_t j, const void *x, int64_t i,
                        bool first, void *z) {
  if (ct == CT_F32) {
    float v = ((const float *)x)[i], *d = (float *)m + j;
    v = is_abs(k) ? fabsf(v) : v;
    if (z) {
      *d = (is_max(k) ? v > *d : v < *d) ? v : *d;
      ((float *)z)[j] += v * 0;
    } else {
      *d = first || (is_max(k) ? v > *d : v < *d) || v != v ? v : *d;
    }
  } else if (ct == CT_F64) {
    double v = ((const double *)x)[i], *d = (double *)m + j;
    v = is_abs(k) ? fabs(v) : v;
    if (z) {
      *d = (is_max(k) ? v > *d : v < *d) ? v : *d;
      ((double *)z)[j] += v * 0;
    } else {
      *d = first || (is_max(k) ? v > *d : v < *d) || v != v ? v : *d;
    }
  } else {
    int64_t v = ((const int64_t *)x)[i], *d = (int64_t *)m + j;
    *d = first || (is_max(k) ? v > *d : v < *d) ? v : *d;
  }
}

/* The identity of kernel k in lane l. */
RK_INLINE void elem_identity(gl_ct ct, gl_rkernel k, lanes *t, int l) {
  if (is_logic(k) && ct == CT_F32) t->b[l] = k == K_ALL;
  else if (is_logic(k)) t->i[l] = k == K_ALL;
  else if (k == K_PROD && ct == CT_F32) t->f[l] = 1;
  else if (k == K_PROD && ct == CT_F64) t->d[l] = 1;
  else if (k == K_PROD) t->u[l] = 1;
  else if (ct == CT_F32) t->f[l] = is_max(k) ? -INFINITY : INFINITY;
  else if (ct == CT_F64) t->d[l] = is_max(k) ? -HUGE_VAL : HUGE_VAL;
  else t->i[l] = is_max(k) ? INT64_MIN : INT64_MAX;
}

/* Lane l of t as a finished value. */
RK_INLINE rval elem_rval(gl_ct ct, gl_rkernel k, const lanes *t, int l) {
  rval r;
  if (is_logic(k)) r.i = ct == CT_F32 ? t->b[l] != 0 : t->i[l] != 0;
  else if (ct == CT_F32) r.f = (double)t->f[l];
  else if (ct == CT_F64) r.f = t->d[l];
  else r.i = t->i[l];
  return r;
}

/* ---- the kernels over a vector ------------------------------------------------------ */

/* Sum of a map: blocks of L*UNROLL elements into L lanes, then the cascade. */
RK_INLINE void sum_vec(gl_ct ct, gl_rkernel k, kstate *st, const void *x, int64_t s, int64_t n,
                       double a, double p) {
  const int L = lane_count(ct);
  for (int64_t i = 0; i < n;) {
    lanes t;
    int64_t m = n - i < L * UNROLL ? n - i : L * UNROLL;
    memset(&t, 0, sizeof t);
    if (m == L * UNROLL && s == 1) {
      for (int u = 0; u < UNROLL; u++)
        for (int l = 0; l < L; l++) elem_sum(ct, k, &t, l, x, i + u * L + l, a, p);
    } else if (m == L * UNROLL) {
      for (int u = 0; u < UNROLL; u++)
        for (int l = 0; l < L; l++) elem_sum(ct, k, &t, l, x, (i + u * L + l) * s, a, p);
    } else {
      for (int64_t j = 0; j < m; j++) elem_sum(ct, k, &t, (int)(j % L), x, (i + j) * s, a, p);
    }
    int lev = 0;
    for (; (st->n >> lev) & 1; lev++)
      for (int l = 0; l < L; l++) elem_fold(ct, K_SUM, &t, l, &st->lv[lev], l);
    st->lv[lev] = t;
    st->n++;
    i += m;
  }
}

/* max/min: the fast loop is a plain vmaxps-style select plus the NaN check of elem_ext;
** only when that saw a NaN or an infinity is the vector redone with the exact NaN-aware
** select. Element i goes to lane i mod L in every loop (and in the sums' and products'),
** so an interleaved vector keeps each of its outputs in lanes of their own (rk_fin). */
RK_INLINE void ext_vec(gl_ct ct, gl_rkernel k, kstate *st, const void *x, int64_t s, int64_t n) {
  const int L = lane_count(ct);
  lanes m = st->lv[0];
  int64_t i = 0;
  if (s == 1 && n >= L) {
    lanes f = m, z;
    memset(&z, 0, sizeof z);
    for (; i + L <= n; i += L)
      for (int l = 0; l < L; l++) elem_ext(ct, k, &f, l, x, i + l, false, ct == CT_I64 ? NULL : &z);
    bool clean = true;
    for (int l = 0; l < L; l++) clean &= ct == CT_I64 || (ct == CT_F32 ? z.f[l] == 0 : z.d[l] == 0);
    if (clean) m = f;
    else i = 0;
  }
  for (; i < n; i++) elem_ext(ct, k, &m, i & (L - 1), x, i * s, false, NULL);
  st->lv[0] = m;
}

/* Products, all and any in lanes. */
RK_INLINE void prod_logic_vec(gl_ct ct, gl_rkernel k, kstate *st, const void *x, int64_t s,
                              int64_t n) {
  const int L = lane_count(ct);
  lanes t = st->lv[0];
  int64_t i = 0;
  if (s == 1)
    for (; i + L <= n; i += L)
      for (int l = 0; l < L; l++) elem_prod_logic(ct, k, &t, l, x, i + l);
  for (; i < n; i++) elem_prod_logic(ct, k, &t, i & (L - 1), x, i * s);
  st->lv[0] = t;
}

RK_INLINE void rk_vec(gl_ct ct, gl_rkernel k, kstate *st, const void *x, int64_t s, int64_t n,
                      double a, double p) {
  if (gl_rk_is_sum(k)) sum_vec(ct, k, st, x, s, n, a, p);
  else if (k == K_PROD || is_logic(k)) prod_logic_vec(ct, k, st, x, s, n);
  else ext_vec(ct, k, st, x, s, n);
}

/* The row form: acc[j] (op)= map(x[j*s]), the contiguous and first-row cases apart. */
RK_INLINE void row_step(gl_ct ct, gl_rkernel k, void *acc, int64_t j, const void *x, int64_t i,
                        const void *ac, double p, bool first) {
  if (gl_rk_is_sum(k)) elem_sum_row(ct, k, acc, j, x, i, ac, p, first);
  else if (k == K_PROD || is_logic(k)) elem_prod_logic_row(ct, k, acc, j, x, i, first);
  else elem_ext(ct, k, acc, j, x, i, first, NULL);
}

RK_INLINE void rk_row(gl_ct ct, gl_rkernel k, void *acc, const void *x, int64_t s, int64_t w,
                      const void *ac, double p, bool first) {
  if (s == 1 && first) for (int64_t j = 0; j < w; j++) row_step(ct, k, acc, j, x, j, ac, p, true);
  else if (s == 1) for (int64_t j = 0; j < w; j++) row_step(ct, k, acc, j, x, j, ac, p, false);
  else if (first) for (int64_t j = 0; j < w; j++) row_step(ct, k, acc, j, x, j * s, ac, p, true);
  else for (int64_t j = 0; j < w; j++) row_step(ct, k, acc, j, x, j * s, ac, p, false);
}

RK_INLINE void rk_init(gl_ct ct, gl_rkernel k, kstate *st) {
  st->n = 0;
  if (!gl_rk_is_sum(k))
    for (int l = 0; l < lane_count(ct); l++) elem_identity(ct, k, &st->lv[0], l);
}

/* The extremum of an extremum kernel's lanes (they already hold |x| for the abs kernels),
** the last NaN lane winning, with selects rather than a branch per lane: which lane wins
** is as random as the data, and mispredicted branches here cost a row-wise max a tenth of
** its time. */
/* ext_fin_f32, ext_fin_f64: typed, so that the selects stay in float registers (through
** doubles, the compiler branches again) */
#define EXT_FIN_FN(name, T, n)                                                               \
  RK_INLINE T name(const T *v, bool max) {                                                  \
    T x = v[0], nanv = x;                                                                   \
    int nan = x != x;                                                                       \
    for (int l = 1; l < (n); l++) {                                                         \
      x = (max ? v[l] > x : v[l] < x) ? v[l] : x;                                           \
      nanv = v[l] != v[l] ? v[l] : nanv;                                                    \
      nan |= v[l] != v[l];                                                                  \
    }                                                                                       \
    return nan ? nanv : x;                                                                  \
  }
EXT_FIN_FN(ext_fin_f32, float, L32)
EXT_FIN_FN(ext_fin_f64, double, L64)

RK_INLINE rval ext_fin(gl_ct ct, bool max, const lanes *m) {
  rval r;
  if (ct == CT_F32) {
    r.f = (double)ext_fin_f32(m->f, max);
  } else if (ct == CT_F64) {
    r.f = ext_fin_f64(m->d, max);
  } else {
    int64_t x = m->i[0];
    for (int l = 1; l < L64; l++) x = (max ? m->i[l] > x : m->i[l] < x) ? m->i[l] : x;
    r.i = x;
  }
  return r;
}

/* t[l] = the extremum of t[l] and t[l + h] (a NaN wins and stays), l < h. */
RK_INLINE void ext_halve(gl_ct ct, bool max, lanes *t, int h) {
  for (int l = 0; l < h; l++) {
    if (ct == CT_F32) {
      float v = t->f[l + h], m = t->f[l];
      t->f[l] = (max ? v > m : v < m) || v != v ? v : m;
    } else if (ct == CT_F64) {
      double v = t->d[l + h], m = t->d[l];
      t->d[l] = (max ? v > m : v < m) || v != v ? v : m;
    } else {
      int64_t v = t->i[l + h], m = t->i[l];
      t->i[l] = (max ? v > m : v < m) ? v : m;
    }
  }
}

/* Folds the lanes into out[0..w): w = 1 for a vector of one output; w > 1 (a power of two
** up to 32) for a vector interleaving w outputs (element i of output i mod w), whose
** outputs' lanes are kept apart by folding halves onto halves only down to w. Sums and
** products fold pairwise, max/min in order (w = 1) or by halves. */
RK_INLINE void rk_fin(gl_ct ct, gl_rkernel k, const kstate *st, int w, rval *out) {
  const bool ext = !gl_rk_is_sum(k) && k != K_PROD && !is_logic(k);
  if (ext && w == 1) { out[0] = ext_fin(ct, is_max(k), &st->lv[0]); return; }
  const int L = lane_count(ct);
  lanes t;
  if (gl_rk_is_sum(k)) {
    memset(&t, 0, sizeof t);
    for (uint64_t b = st->n; b; b &= b - 1)
      for (int l = 0; l < L; l++) elem_fold(ct, K_SUM, &t, l, &st->lv[__builtin_ctzll(b)], l);
  } else {
    t = st->lv[0];
  }
  for (int h = L / 2; h >= w; h /= 2) {
    if (ext) ext_halve(ct, is_max(k), &t, h);
    else for (int l = 0; l < h; l++) elem_fold(ct, k, &t, l, &t, l + h);
  }
  for (int r = 0; r < w; r++) out[r] = elem_rval(ct, k, &t, r);
}

/* ---- the instances --------------------------------------------------------------------- */

/* The (CT, kernel) pairs the reductions use: every kernel for the float CTs; int64 has no
** float maps (its integer results are sums, products, max/min, all/any). X(C, K, A) gets
** each pair and A, the arguments of the call it makes. */
#define RK_FLOAT(X, C, A) X(C, SUM, A) X(C, SUMABS, A) X(C, SUMSQ, A) X(C, SUMDEV, A) X(C, SUMEXP, A) \
  X(C, SUMPOW, A) X(C, SUMNZ, A) X(C, PROD, A) X(C, MAX, A) X(C, MIN, A) X(C, MAXABS, A)              \
  X(C, MINABS, A) X(C, ALL, A) X(C, ANY, A)
#define RK_LIST(X, A) RK_FLOAT(X, F32, A) RK_FLOAT(X, F64, A) \
  X(I64, SUM, A) X(I64, PROD, A) X(I64, MAX, A) X(I64, MIN, A) X(I64, ALL, A) X(I64, ANY, A)
#define RK_CASE(C, K) (CT_##C * NKID + K_##K)

/* The loops as functions of their own (a frame each in a debugger or a profile). */
#define RK_VEC_FN(C, K, A) static __attribute__((noinline)) void vec_##C##_##K(kstate *st, \
  const void *x, int64_t s, int64_t n, double a, double p) { rk_vec(CT_##C, K_##K, st, x, s, n, a, p); }
RK_LIST(RK_VEC_FN, ~)
#define RK_ROW_FN(C, K, A) static __attribute__((noinline)) void row_##C##_##K(void *acc, const void *x, \
  int64_t s, int64_t w, const void *ac, double p, bool first) { rk_row(CT_##C, K_##K, acc, x, s, w, ac, p, first); }
RK_LIST(RK_ROW_FN, ~)

void gl_rk_vec(gl_ct ct, gl_rkernel k, kstate *st, const void *x, int64_t s, int64_t n, double a,
               double p) {
#define RK_VEC_CASE(C, K, A) case RK_CASE(C, K): vec_##C##_##K A; return;
  switch (ct * NKID + k) { RK_LIST(RK_VEC_CASE, (st, x, s, n, a, p)) default: return; }
}

void gl_rk_row(gl_ct ct, gl_rkernel k, void *acc, const void *x, int64_t s, int64_t w,
               const void *ac, double p, bool first) {
#define RK_ROW_CASE(C, K, A) case RK_CASE(C, K): row_##C##_##K A; return;
  switch (ct * NKID + k) { RK_LIST(RK_ROW_CASE, (acc, x, s, w, ac, p, first)) default: return; }
}

void gl_rk_init(gl_ct ct, gl_rkernel k, kstate *st) {
#define RK_INIT_CASE(C, K, A) case RK_CASE(C, K): rk_init(CT_##C, K_##K, A); return;
  switch (ct * NKID + k) { RK_LIST(RK_INIT_CASE, st) default: st->n = 0; return; }
}

void gl_rk_fin(gl_ct ct, gl_rkernel k, const kstate *st, int w, rval *out) {
#define RK_FIN_CASE(C, K, A) case RK_CASE(C, K): rk_fin(CT_##C, K_##K, GL_DT_UNPAREN_ A); return;
  switch (ct * NKID + k) { RK_LIST(RK_FIN_CASE, (st, w, out)) default: out[0].i = 0; return; }
}

/* ---- row sums' cascade and finished values --------------------------------------------- */

void gl_rk_vadd(gl_ct ct, void *d, const void *s, int64_t n) {
  if (ct == CT_F32) for (int64_t i = 0; i < n; i++) ((float *)d)[i] += ((const float *)s)[i];
  else if (ct == CT_F64) for (int64_t i = 0; i < n; i++) ((double *)d)[i] += ((const double *)s)[i];
  else for (int64_t i = 0; i < n; i++) ((uint64_t *)d)[i] += ((const uint64_t *)s)[i];
}

void gl_rk_to_rvals(gl_ct ct, rval *r, const void *acc, int64_t n) {
  if (ct == CT_F32) for (int64_t i = 0; i < n; i++) r[i].f = (double)((const float *)acc)[i];
  else if (ct == CT_F64) for (int64_t i = 0; i < n; i++) r[i].f = ((const double *)acc)[i];
  else for (int64_t i = 0; i < n; i++) r[i].i = (int64_t)((const uint64_t *)acc)[i];
}

/* ---- argmax/argmin -------------------------------------------------------------------- */

/* 1 where x[i] is m (or a NaN, with nan), else 0. */
RK_INLINE int elem_matches(gl_ct ct, const void *x, int64_t i, rval m, int nan) {
  if (ct == CT_F32) {
    float v = ((const float *)x)[i];
    return (v == (float)m.f) | (nan & (v != v));
  }
  if (ct == CT_F64) {
    double v = ((const double *)x)[i];
    return (v == m.f) | (nan & (v != v));
  }
  return ((const int64_t *)x)[i] == m.i;
}

/* Blocks of 64 are tested with a vectorisable OR, then scanned. */
RK_INLINE int64_t rk_find(gl_ct ct, const void *x, int64_t s, int64_t n, rval m) {
  const int nan = ct != CT_I64 && m.f != m.f;
  int64_t i = 0;
  if (s == 1)
    for (; i + 64 <= n; i += 64) {
      int hit = 0;
      for (int l = 0; l < 64; l++) hit |= elem_matches(ct, x, i + l, m, nan);
      if (hit) break;
    }
  for (; i < n; i++)
    if (elem_matches(ct, x, i * s, m, nan)) return i;
  return -1;
}

int64_t gl_rk_find(gl_ct ct, const void *x, int64_t s, int64_t n, rval m) {
  switch (ct) {
    case CT_F32: return rk_find(CT_F32, x, s, n, m);
    case CT_F64: return rk_find(CT_F64, x, s, n, m);
    default: return rk_find(CT_I64, x, s, n, m);
  }
}

/* best[j], idx[j] take x[i] (row k) where it beats best[j], or is a NaN where best[j] is not. */
RK_INLINE void elem_arg(gl_ct ct, bool max, void *best, int64_t *idx, int64_t j, const void *x,
                        int64_t i, int64_t k, bool first) {
  bool take;
  if (ct == CT_F32) {
    float v = ((const float *)x)[i], b = ((float *)best)[j];
    take = first | (max ? v > b : v < b) | ((v != v) & (b == b));
    ((float *)best)[j] = take ? v : b;
  } else if (ct == CT_F64) {
    double v = ((const double *)x)[i], b = ((double *)best)[j];
    take = first | (max ? v > b : v < b) | ((v != v) & (b == b));
    ((double *)best)[j] = take ? v : b;
  } else {
    int64_t v = ((const int64_t *)x)[i], b = ((int64_t *)best)[j];
    take = first | (max ? v > b : v < b);
    ((int64_t *)best)[j] = take ? v : b;
  }
  idx[j] = take ? k : idx[j];
}

RK_INLINE void rk_argrow(gl_ct ct, bool max, void *best, int64_t *idx, const void *x, int64_t s,
                         int64_t w, int64_t k, bool first) {
  if (first) for (int64_t j = 0; j < w; j++) elem_arg(ct, max, best, idx, j, x, j * s, k, true);
  else if (s == 1) for (int64_t j = 0; j < w; j++) elem_arg(ct, max, best, idx, j, x, j, k, false);
  else for (int64_t j = 0; j < w; j++) elem_arg(ct, max, best, idx, j, x, j * s, k, false);
}

void gl_rk_argrow(gl_ct ct, bool max, void *best, int64_t *idx, const void *x, int64_t s,
                  int64_t w, int64_t k, bool first) {
#define ARG_LIST(X, A) X(F32, 0, A) X(F32, 1, A) X(F64, 0, A) X(F64, 1, A) X(I64, 0, A) X(I64, 1, A)
#define ARG_CASE(C, M, A) case CT_##C * 2 + M: rk_argrow(CT_##C, M, GL_DT_UNPAREN_ A); return;
  switch (ct * 2 + max) { ARG_LIST(ARG_CASE, (best, idx, x, s, w, k, first)) default: return; }
}

/* ---- conversions: dtype -> CT buffers, CT buffers and finished values -> dtype ---------- */

#define CONV_TO_F32_I(v) ((float)(v))
#define CONV_TO_F32_F(v) ((float)(v))
#define CONV_TO_F64_I(v) ((double)(v))
#define CONV_TO_F64_F(v) ((double)(v))
#define CONV_TO_I64_I(v) ((int64_t)(v))
#define CONV_TO_I64_F(v) gl_sat_int64((double)(v))
#define CONV_TO_F32_T float
#define CONV_TO_F64_T double
#define CONV_TO_I64_T int64_t
#define CONV_VK_BOOL I
#define CONV_VK_UINT I
#define CONV_VK_INT I
#define CONV_VK_FLOAT F

/* load_<id>_<ct>: elements of one dtype row to a CT buffer (an integer or a float value
** converted as its kind VK says). */
#define LOAD(id, S, half, VK, CTT, TO)                                                          \
  static void load_##id##_##CTT(void *out_, const void *x_, int64_t s, int64_t n) {             \
    const S *x = x_;                                                                         \
    TO##_T *out = out_;                                                                      \
    if (s == 1) for (int64_t i = 0; i < n; i++) out[i] = TO##_##VK(GL_DT_LOAD(half, x[i]));     \
    else for (int64_t i = 0; i < n; i++) out[i] = TO##_##VK(GL_DT_LOAD(half, x[i * s]));        \
  }
#define LOAD3(E, id, S, kind, half, ...) LOAD3_(id, S, half, CONV_VK_##kind)
#define LOAD3_(...) LOAD3__(__VA_ARGS__)
#define LOAD3__(id, S, half, VK) LOAD(id, S, half, VK, f32, CONV_TO_F32) \
  LOAD(id, S, half, VK, f64, CONV_TO_F64) LOAD(id, S, half, VK, i64, CONV_TO_I64)
GL_DTYPE_REAL_LIST(LOAD3)
#define LOAD_ENTRY(E, id, ...) [GL_##E] = { load_##id##_f32, load_##id##_f64, load_##id##_i64 },
const gl_ct_load_fn gl_ct_loads[GL_NDTYPE][NCT] = { GL_DTYPE_REAL_LIST(LOAD_ENTRY) };

/* store_<ct>_<id>: a CT buffer (accumulator representation) -> dtype, with a stride. */
#define STORE(E, id, S, kind, half, CTT, AT, VK)                                            \
  static void store_##CTT##_##id(void *d_, int64_t ds, const void *b_, int64_t n) {      \
    S *d = d_;                                                                           \
    const AT *b = b_;                                                                    \
    for (int64_t i = 0; i < n; i++) d[i * ds] = GL_DT_STORE(kind, half, S, id, VK, b[i]); \
  }
#define STORE3(E, id, S, kind, half, ...) STORE(E, id, S, kind, half, f32, float, FLOAT) \
                                          STORE(E, id, S, kind, half, f64, double, FLOAT) \
                                          STORE(E, id, S, kind, half, i64, int64_t, INT)
GL_DTYPE_REAL_LIST(STORE3)
#define STORE_ENTRY(E, id, ...) [GL_##E] = { store_f32_##id, store_f64_##id, store_i64_##id },
const gl_ct_store_fn gl_ct_stores[GL_NDTYPE][NCT] = { GL_DTYPE_REAL_LIST(STORE_ENTRY) };

/* storerv_<id>: finished values -> dtype. */
#define STORE_RV(E, id, S, kind, half, ...)                                                 \
  static void storerv_##id(void *d_, int64_t ds, const rval *r, int64_t n, bool isint) {  \
    S *d = d_;                                                                           \
    if (isint) for (int64_t i = 0; i < n; i++) d[i * ds] = GL_DT_STORE(kind, half, S, id, INT, r[i].i); \
    else for (int64_t i = 0; i < n; i++) d[i * ds] = GL_DT_STORE(kind, half, S, id, FLOAT, r[i].f); \
  }
GL_DTYPE_REAL_LIST(STORE_RV)
#define STORE_RV_ENTRY(E, id, ...) [GL_##E] = storerv_##id,
const gl_rval_store_fn gl_rval_stores[GL_NDTYPE] = { GL_DTYPE_REAL_LIST(STORE_RV_ENTRY) };
