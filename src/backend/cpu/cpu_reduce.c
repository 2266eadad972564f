/*
** cpu_reduce.c — reductions (sum, prod, mean, var, max, min, argmax, argmin, all, any,
** norm, logsumexp) and scans (cumsum, cumprod) on the CPU.
**
** Every element is read in a "compute type" (CT): float for float32/float16/bfloat16
** results, double for float64, int64 for integer results (accumulated as uint64, so
** overflow wraps as in NumPy instead of being undefined). Kernels are stamped once per
** CT; an input whose storage is not the CT (float16, int32, a float64 input summed into
** float32, ...) is converted in small chunks into a buffer first, so only three copies
** of each kernel exist.
**
** A reduction is planned on the axes it keeps (outputs) and the axes it reduces, each
** set sorted by stride and merged where contiguous (src/core/iter.h's idea), then run in
** one of two shapes:
**   inner: the reduced axes hold the fastest-moving elements: each output reduces a
**          vector with many independent lanes (the compiler vectorises them);
**   outer: a kept axis is the fastest: whole rows are accumulated into a row of outputs
**          (acc[j] += x[r, j]), vectorised along the row, never striding down columns.
** Sums are blocked and pairwise: each lane adds UNROLL values, and the lane vectors of
** consecutive blocks are combined by a binary-counter cascade (pairwise over blocks),
** so the error grows with log(n), not n (the same for blocks of rows in the outer
** shape). OpenMP splits independent outputs (or, for few outputs, the reduced range)
** across threads above PAR_MIN elements, on the cores that are free (gl_cpu_team_size).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"
#include "../../../kernels/convert.h"
#include "../../../kernels/vmath.h"

/* 512-bit vectors where the CPU has them (gcc's default for -march=native on recent
** Xeons is 256): these loops are bandwidth-bound and gain from wider loads. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("prefer-vector-width=512")
#endif

/* Below this many elements a call runs on one thread. */
#define PAR_MIN 32768
/* Lane vectors are LANE_BYTES: 64 floats, 32 doubles or int64s (four 512-bit registers,
** enough independent adds to hide their latency); each lane adds UNROLL values of a
** block before the block enters the cascade. */
#define LANE_BYTES 256
#define L32 (LANE_BYTES / 4)
#define L64 (LANE_BYTES / 8)
#define UNROLL 16
/* Conversion chunk (elements; a multiple of every block size) and outer-shape row width. */
#define CHUNK 2048
#define ROW_W 4096
/* Rows added per block before the outer cascade. */
#define ROW_BLOCK 8
/* Rows (of ROW_W elements at most) of the outer shape between two polls for a stop. */
#define ROW_POLL 64
#define MAX_THREADS 256

enum { CT_F32, CT_F64, CT_I64, NCT };

/* A finished value: f for float CTs (float results already rounded to float), i for
** int64 ones. */
typedef union rval { double f; int64_t i; } rval;

/* Kernels by what they compute. */
enum {
  K_SUM, K_SUMABS, K_SUMSQ, K_SUMDEV, K_SUMEXP, K_SUMPOW, K_SUMNZ,  /* sums of a map */
  K_PROD, K_MAX, K_MIN, K_MAXABS, K_MINABS, K_ALL, K_ANY,
  NKID
};
#define IS_SUM(k) ((k) <= K_SUMNZ)

/* The state of one reduction pass over a vector: sums keep the cascade (bit k of n set:
** level k holds a partial of 2^k blocks); the other kernels keep one lane vector in lv[0]. */
typedef struct kstate {
  uint64_t n;
  union {
    _Alignas(64) float f[64][LANE_BYTES / 4];
    double d[64][LANE_BYTES / 8];
    uint64_t u[64][LANE_BYTES / 8];
    int64_t i[64][LANE_BYTES / 8];
    int32_t b[64][LANE_BYTES / 4];
  } lv;
} kstate;

/* A conversion buffer of CHUNK elements of any CT. */
typedef union ctbuf {
  _Alignas(64) float f[CHUNK];
  double d[CHUNK];
  int64_t i[CHUNK];
} ctbuf;

typedef void (*init_fn)(kstate *st);
/* Reduces n elements x[0], x[s], ... (of the CT) into st; a: per-output parameter (the
** mean of var, the shift of logsumexp), p: the norm's order. */
typedef void (*vec_fn)(kstate *st, const void *x, int64_t s, int64_t n, double a, double p);
typedef rval (*fin_fn)(const kstate *st);
/* Row kernels of the outer shape: acc[j] (op)= map(x[j*s]) for j < w; first: acc[j] =
** map(x[j*s]). ac: per-column parameter (CT), p: the norm's order. */
typedef void (*row_fn)(void *acc, const void *x, int64_t s, int64_t w, const void *ac, double p,
                       int first);
typedef void (*vadd_fn)(void *d, const void *s, int64_t n);
/* acc (the accumulator type) -> finished values. */
typedef void (*torval_fn)(rval *r, const void *acc, int64_t n);
/* First i < n with x[i*s] == m (or NaN when m is NaN), -1 if none. */
typedef int64_t (*find_fn)(const void *x, int64_t s, int64_t n, rval m);
/* best/idx over rows: first row initialises, later rows replace on a strict improvement
** (or a first NaN), so ties keep the first position as NumPy does. */
typedef void (*arg_fn)(void *best, int64_t *idx, const void *x, int64_t s, int64_t w, int64_t k,
                       int first);
/* Converts n elements x[0], x[s], ... of a dtype into a contiguous CT buffer. */
typedef void (*conv_fn)(void *out, const void *x, int64_t s, int64_t n);
/* Scans: a contiguous CT buffer in place from a carry (line), or a row into an
** accumulator row. */
typedef void (*scanline_fn)(void *buf, int64_t n, void *carry);
typedef void (*scanrow_fn)(void *acc, const void *x, int64_t w, int first);
typedef void (*store_fn)(void *d, int64_t ds, const void *buf, int64_t n);

#define ISNAN_F(v) ((v) != (v))
#define ISNAN_I(v) 0
#define GT(a, b) ((a) > (b))
#define LT(a, b) ((a) < (b))
#define NOABS(v) (v)

/* ---- maps of the sums: v the element, A the per-output parameter, P the order ---- */
#define MAP_SUM(v, A, P, ABS, EXP, POW, CT) (v)
#define MAP_SUMABS(v, A, P, ABS, EXP, POW, CT) ABS(v)
#define MAP_SUMSQ(v, A, P, ABS, EXP, POW, CT) ((v) * (v))
#define MAP_SUMDEV(v, A, P, ABS, EXP, POW, CT) (((v) - (A)) * ((v) - (A)))
#define MAP_SUMEXP(v, A, P, ABS, EXP, POW, CT) EXP((v) - (A))
#define MAP_SUMPOW(v, A, P, ABS, EXP, POW, CT) POW(ABS(v), (P))
#define MAP_SUMNZ(v, A, P, ABS, EXP, POW, CT) ((v) != 0 ? (CT)1 : (CT)0)

/* ---- kernels, stamped per compute type ------------------------------------------ */

/* Sum of MAP over a vector: blocks of L*UNROLL elements into L lanes, then the cascade. */
#define SUM_VEC(name, CT, AT, L, MAP, ABS, EXP, POW)                                       \
  static void name(kstate *st, const void *x_, int64_t s, int64_t n, double a_, double p_) { \
    const CT *x = x_;                                                                    \
    const CT a = (CT)a_, p = (CT)p_;                                                     \
    (void)a; (void)p;                                                                    \
    AT (*lv)[L] = (AT (*)[L])(void *)&st->lv;                                             \
    for (int64_t i = 0; i < n;) {                                                        \
      AT t[L];                                                                           \
      int64_t m = n - i < (int64_t)(L * UNROLL) ? n - i : (int64_t)(L * UNROLL);         \
      for (int l = 0; l < L; l++) t[l] = 0;                                              \
      if (m == L * UNROLL && s == 1) {                                                   \
        const CT *q = x + i;                                                             \
        for (int u = 0; u < UNROLL; u++)                                                 \
          for (int l = 0; l < L; l++) { CT v = q[u * L + l]; t[l] += (AT)(MAP(v, a, p, ABS, EXP, POW, CT)); } \
      } else if (m == L * UNROLL) {                                                      \
        const CT *q = x + i * s;                                                         \
        for (int u = 0; u < UNROLL; u++)                                                 \
          for (int l = 0; l < L; l++) { CT v = q[(u * L + l) * s]; t[l] += (AT)(MAP(v, a, p, ABS, EXP, POW, CT)); } \
      } else {                                                                           \
        for (int64_t k = 0; k < m; k++) { CT v = x[(i + k) * s]; t[k % L] += (AT)(MAP(v, a, p, ABS, EXP, POW, CT)); } \
      }                                                                                  \
      int lev = 0;                                                                       \
      for (; (st->n >> lev) & 1; lev++)                                                  \
        for (int l = 0; l < L; l++) t[l] += lv[lev][l];                                  \
      memcpy(lv[lev], t, sizeof t);                                                      \
      st->n++;                                                                           \
      i += m;                                                                            \
    }                                                                                    \
  }

/* Row form of the same sum (outer shape). */
#define SUM_ROW(name, CT, AT, MAP, ABS, EXP, POW)                                          \
  static void name(void *acc_, const void *x_, int64_t s, int64_t w, const void *ac_, double p_, \
                   int first) {                                                          \
    AT *acc = acc_;                                                                      \
    const CT *x = x_, *ac = ac_;                                                         \
    const CT p = (CT)p_;                                                                 \
    (void)ac; (void)p;                                                                   \
    if (s == 1 && first) {                                                               \
      for (int64_t j = 0; j < w; j++) { CT v = x[j]; acc[j] = (AT)(MAP(v, ac[j], p, ABS, EXP, POW, CT)); } \
    } else if (s == 1) {                                                                 \
      for (int64_t j = 0; j < w; j++) { CT v = x[j]; acc[j] += (AT)(MAP(v, ac[j], p, ABS, EXP, POW, CT)); } \
    } else if (first) {                                                                  \
      for (int64_t j = 0; j < w; j++) { CT v = x[j * s]; acc[j] = (AT)(MAP(v, ac[j], p, ABS, EXP, POW, CT)); } \
    } else {                                                                             \
      for (int64_t j = 0; j < w; j++) { CT v = x[j * s]; acc[j] += (AT)(MAP(v, ac[j], p, ABS, EXP, POW, CT)); } \
    }                                                                                    \
  }

#define SUM_FIN(name, AT, L, TORVAL)                                                       \
  static rval name(const kstate *st) {                                                   \
    const AT (*lv)[L] = (const AT (*)[L])(const void *)&st->lv;                           \
    AT t[L];                                                                             \
    for (int l = 0; l < L; l++) t[l] = 0;                                                \
    for (uint64_t b = st->n; b; b &= b - 1) {                                            \
      int lev = __builtin_ctzll(b);                                                      \
      for (int l = 0; l < L; l++) t[l] += lv[lev][l];                                    \
    }                                                                                    \
    for (int h = L / 2; h >= 1; h /= 2)                                                  \
      for (int l = 0; l < h; l++) t[l] += t[l + h];                                      \
    return TORVAL(t[0]);                                                                 \
  }

/* max/min (of MAPV(x)) with NaN propagation: a NaN element always wins and stays. The
** fast loop is a plain vmaxps-style select plus z += v * 0, which stays 0 unless a NaN or
** an infinity went by; only then is the call redone with the exact NaN-aware select. */
#define EXT_VEC(name, CT, L, MAPV, BETTER, ISNAN, NANCHK)                                  \
  static void name(kstate *st, const void *x_, int64_t s, int64_t n, double a_, double p_) { \
    const CT *x = x_;                                                                    \
    CT m[L];                                                                             \
    (void)a_; (void)p_;                                                                  \
    memcpy(m, &st->lv, sizeof m);                                                        \
    int64_t i = 0;                                                                       \
    if (s == 1 && n >= L) {                                                              \
      CT f[L], z[L];                                                                     \
      for (int l = 0; l < L; l++) { f[l] = m[l]; z[l] = 0; }                             \
      for (; i + L <= n; i += L)                                                         \
        for (int l = 0; l < L; l++) { CT v = MAPV(x[i + l]); f[l] = BETTER(v, f[l]) ? v : f[l]; NANCHK(z[l], v); } \
      int clean = 1;                                                                     \
      for (int l = 0; l < L; l++) clean &= z[l] == 0;                                    \
      if (clean) memcpy(m, f, sizeof m);                                                 \
      else i = 0;                                                                        \
    }                                                                                    \
    for (; i < n; i++) { CT v = MAPV(x[i * s]); m[0] = (BETTER(v, m[0]) || ISNAN(v)) ? v : m[0]; } \
    memcpy(&st->lv, m, sizeof m);                                                        \
  }
#define NANCHK_F(z, v) ((z) += (v) * 0)
#define NANCHK_I(z, v) ((void)(z), (void)(v))

#define EXT_ROW(name, CT, MAPV, BETTER, ISNAN)                                             \
  static void name(void *acc_, const void *x_, int64_t s, int64_t w, const void *ac_, double p_, \
                   int first) {                                                          \
    CT *acc = acc_;                                                                      \
    const CT *x = x_;                                                                    \
    (void)ac_; (void)p_;                                                                 \
    if (first) { for (int64_t j = 0; j < w; j++) acc[j] = MAPV(x[j * s]); return; }     \
    if (s == 1)                                                                          \
      for (int64_t j = 0; j < w; j++) { CT v = MAPV(x[j]); acc[j] = (BETTER(v, acc[j]) || ISNAN(v)) ? v : acc[j]; } \
    else                                                                                 \
      for (int64_t j = 0; j < w; j++) { CT v = MAPV(x[j * s]); acc[j] = (BETTER(v, acc[j]) || ISNAN(v)) ? v : acc[j]; } \
  }

#define EXT_INIT(name, CT, L, ID)                                                          \
  static void name(kstate *st) {                                                         \
    CT *m = (CT *)(void *)&st->lv;                                                     \
    for (int l = 0; l < L; l++) m[l] = ID;                                               \
    st->n = 0;                                                                           \
  }

#define EXT_FIN(name, CT, L, BETTER, ISNAN, TORVAL)                                        \
  static rval name(const kstate *st) {                                                   \
    const CT *m = (const CT *)(const void *)&st->lv;                                   \
    CT r = m[0];                                                                         \
    for (int l = 1; l < L; l++) r = (BETTER(m[l], r) || ISNAN(m[l])) ? m[l] : r;         \
    return TORVAL(r);                                                                    \
  }

/* Products in lanes (no cascade: rounding is relative, not absolute). */
#define PROD_VEC(name, CT, AT, L)                                                          \
  static void name(kstate *st, const void *x_, int64_t s, int64_t n, double a_, double p_) { \
    const CT *x = x_;                                                                    \
    AT t[L];                                                                             \
    (void)a_; (void)p_;                                                                  \
    memcpy(t, &st->lv, sizeof t);                                                      \
    int64_t i = 0;                                                                       \
    if (s == 1)                                                                          \
      for (; i + L <= n; i += L)                                                         \
        for (int l = 0; l < L; l++) t[l] *= (AT)x[i + l];                                \
    for (; i < n; i++) t[0] *= (AT)x[i * s];                                             \
    memcpy(&st->lv, t, sizeof t);                                                      \
  }

#define PROD_ROW(name, CT, AT)                                                             \
  static void name(void *acc_, const void *x_, int64_t s, int64_t w, const void *ac_, double p_, \
                   int first) {                                                          \
    AT *acc = acc_;                                                                      \
    const CT *x = x_;                                                                    \
    (void)ac_; (void)p_;                                                                 \
    if (first) { for (int64_t j = 0; j < w; j++) acc[j] = (AT)x[j * s]; return; }       \
    if (s == 1) for (int64_t j = 0; j < w; j++) acc[j] *= (AT)x[j];                      \
    else for (int64_t j = 0; j < w; j++) acc[j] *= (AT)x[j * s];                         \
  }

#define PROD_INIT(name, AT, L)                                                             \
  static void name(kstate *st) {                                                         \
    AT *t = (AT *)(void *)&st->lv;                                                     \
    for (int l = 0; l < L; l++) t[l] = 1;                                                \
    st->n = 0;                                                                           \
  }

#define PROD_FIN(name, AT, L, TORVAL)                                                      \
  static rval name(const kstate *st) {                                                   \
    AT t[L];                                                                             \
    memcpy(t, &st->lv, sizeof t);                                                      \
    for (int h = L / 2; h >= 1; h /= 2)                                                  \
      for (int l = 0; l < h; l++) t[l] *= t[l + h];                                      \
    return TORVAL(t[0]);                                                                 \
  }

/* all/any of x != 0 (NaN counts as true, as in NumPy), lanes of BT. */
#define LOGIC_VEC(name, CT, BT, L, OP)                                                     \
  static void name(kstate *st, const void *x_, int64_t s, int64_t n, double a_, double p_) { \
    const CT *x = x_;                                                                    \
    BT t[L];                                                                             \
    (void)a_; (void)p_;                                                                  \
    memcpy(t, &st->lv, sizeof t);                                                      \
    int64_t i = 0;                                                                       \
    if (s == 1)                                                                          \
      for (; i + L <= n; i += L)                                                         \
        for (int l = 0; l < L; l++) t[l] OP (BT)(x[i + l] != 0);                         \
    for (; i < n; i++) t[0] OP (BT)(x[i * s] != 0);                                      \
    memcpy(&st->lv, t, sizeof t);                                                      \
  }

#define LOGIC_ROW(name, CT, OP)                                                            \
  static void name(void *acc_, const void *x_, int64_t s, int64_t w, const void *ac_, double p_, \
                   int first) {                                                          \
    uint8_t *acc = acc_;                                                                 \
    const CT *x = x_;                                                                    \
    (void)ac_; (void)p_;                                                                 \
    if (first) { for (int64_t j = 0; j < w; j++) acc[j] = (uint8_t)(x[j * s] != 0); return; } \
    for (int64_t j = 0; j < w; j++) acc[j] OP (uint8_t)(x[j * s] != 0);                  \
  }

#define LOGIC_INIT(name, BT, L, ID)                                                        \
  static void name(kstate *st) {                                                         \
    BT *t = (BT *)(void *)&st->lv;                                                     \
    for (int l = 0; l < L; l++) t[l] = ID;                                               \
    st->n = 0;                                                                           \
  }

#define LOGIC_FIN(name, BT, L, OP)                                                         \
  static rval name(const kstate *st) {                                                   \
    const BT *t = (const BT *)(const void *)&st->lv;                                   \
    BT r = t[0];                                                                         \
    for (int l = 1; l < L; l++) r OP t[l];                                               \
    rval v;                                                                              \
    v.i = r != 0;                                                                        \
    return v;                                                                            \
  }

static void sum_init(kstate *st) { st->n = 0; }

#define VADD(name, AT)                                                                     \
  static void name(void *d_, const void *s_, int64_t n) {                                \
    AT *d = d_;                                                                          \
    const AT *s = s_;                                                                    \
    for (int64_t i = 0; i < n; i++) d[i] += s[i];                                        \
  }

#define TORVALS(name, AT, TORVAL)                                                          \
  static void name(rval *r, const void *acc_, int64_t n) {                               \
    const AT *acc = acc_;                                                                \
    for (int64_t i = 0; i < n; i++) r[i] = TORVAL(acc[i]);                               \
  }

/* Finds the first match: blocks of 64 are tested with a vectorisable OR, then scanned. */
#define FIND(name, CT, ISNAN, FROMRVAL)                                                    \
  static int64_t name(const void *x_, int64_t s, int64_t n, rval m_) {                   \
    const CT *x = x_;                                                                    \
    const CT m = FROMRVAL(m_);                                                           \
    const int nan = ISNAN(m);                                                            \
    int64_t i = 0;                                                                       \
    if (s == 1)                                                                          \
      for (; i + 64 <= n; i += 64) {                                                     \
        int hit = 0;                                                                     \
        for (int l = 0; l < 64; l++) hit |= (x[i + l] == m) | (nan & ISNAN(x[i + l]));   \
        if (hit) break;                                                                  \
      }                                                                                  \
    for (; i < n; i++) {                                                                 \
      CT v = x[i * s];                                                                   \
      if (v == m || (nan && ISNAN(v))) return i;                                         \
    }                                                                                    \
    return -1;                                                                           \
  }

#define ARG_ROW(name, CT, BETTER, ISNAN)                                                   \
  static void name(void *best_, int64_t *idx, const void *x_, int64_t s, int64_t w, int64_t k, \
                   int first) {                                                          \
    CT *best = best_;                                                                    \
    const CT *x = x_;                                                                    \
    if (first) {                                                                         \
      for (int64_t j = 0; j < w; j++) { best[j] = x[j * s]; idx[j] = k; }                \
      return;                                                                            \
    }                                                                                    \
    for (int64_t j = 0; j < w; j++) {                                                    \
      CT v = x[j * s], b = best[j];                                                      \
      int take = BETTER(v, b) || (ISNAN(v) && !ISNAN(b));                                \
      best[j] = take ? v : b;                                                            \
      idx[j] = take ? k : idx[j];                                                        \
    }                                                                                    \
  }

#define SCAN_LINE(name, AT, OP)                                                            \
  static void name(void *buf_, int64_t n, void *carry_) {                                \
    AT *buf = buf_, c = *(AT *)carry_;                                                   \
    for (int64_t i = 0; i < n; i++) { c = c OP buf[i]; buf[i] = c; }                    \
    *(AT *)carry_ = c;                                                                   \
  }

#define SCAN_ROW(name, AT, OP)                                                             \
  static void name(void *acc_, const void *x_, int64_t w, int first) {                   \
    AT *acc = acc_;                                                                      \
    const AT *x = x_;                                                                    \
    if (first) { memcpy(acc, x, (size_t)w * sizeof *acc); return; }                      \
    for (int64_t j = 0; j < w; j++) acc[j] = acc[j] OP x[j];                             \
  }

#define TORVAL_F(v) ((rval){ .f = (double)(v) })
#define TORVAL_I(v) ((rval){ .i = (int64_t)(v) })
#define FROMRVAL_F32(r) ((float)(r).f)
#define FROMRVAL_F64(r) ((r).f)
#define FROMRVAL_I64(r) ((r).i)

/* Everything for one floating compute type. */
#define STAMP_FLOAT(sfx, CT, L, BT, ABS, EXP, POW, NEGINF, POSINF, FROMRVAL)             \
  SUM_VEC(vec_sum_##sfx, CT, CT, L, MAP_SUM, ABS, EXP, POW)                              \
  SUM_VEC(vec_sumabs_##sfx, CT, CT, L, MAP_SUMABS, ABS, EXP, POW)                        \
  SUM_VEC(vec_sumsq_##sfx, CT, CT, L, MAP_SUMSQ, ABS, EXP, POW)                          \
  SUM_VEC(vec_sumdev_##sfx, CT, CT, L, MAP_SUMDEV, ABS, EXP, POW)                        \
  SUM_VEC(vec_sumexp_##sfx, CT, CT, L, MAP_SUMEXP, ABS, EXP, POW)                        \
  SUM_VEC(vec_sumpow_##sfx, CT, CT, L, MAP_SUMPOW, ABS, EXP, POW)                        \
  SUM_VEC(vec_sumnz_##sfx, CT, CT, L, MAP_SUMNZ, ABS, EXP, POW)                          \
  SUM_ROW(row_sum_##sfx, CT, CT, MAP_SUM, ABS, EXP, POW)                                 \
  SUM_ROW(row_sumabs_##sfx, CT, CT, MAP_SUMABS, ABS, EXP, POW)                           \
  SUM_ROW(row_sumsq_##sfx, CT, CT, MAP_SUMSQ, ABS, EXP, POW)                             \
  SUM_ROW(row_sumdev_##sfx, CT, CT, MAP_SUMDEV, ABS, EXP, POW)                           \
  SUM_ROW(row_sumexp_##sfx, CT, CT, MAP_SUMEXP, ABS, EXP, POW)                           \
  SUM_ROW(row_sumpow_##sfx, CT, CT, MAP_SUMPOW, ABS, EXP, POW)                           \
  SUM_ROW(row_sumnz_##sfx, CT, CT, MAP_SUMNZ, ABS, EXP, POW)                             \
  SUM_FIN(fin_sum_##sfx, CT, L, TORVAL_F)                                                \
  EXT_VEC(vec_max_##sfx, CT, L, NOABS, GT, ISNAN_F, NANCHK_F)                                      \
  EXT_VEC(vec_min_##sfx, CT, L, NOABS, LT, ISNAN_F, NANCHK_F)                                      \
  EXT_VEC(vec_maxabs_##sfx, CT, L, ABS, GT, ISNAN_F, NANCHK_F)                                     \
  EXT_VEC(vec_minabs_##sfx, CT, L, ABS, LT, ISNAN_F, NANCHK_F)                                     \
  EXT_ROW(row_max_##sfx, CT, NOABS, GT, ISNAN_F)                                         \
  EXT_ROW(row_min_##sfx, CT, NOABS, LT, ISNAN_F)                                         \
  EXT_ROW(row_maxabs_##sfx, CT, ABS, GT, ISNAN_F)                                        \
  EXT_ROW(row_minabs_##sfx, CT, ABS, LT, ISNAN_F)                                        \
  EXT_INIT(init_max_##sfx, CT, L, NEGINF)                                                \
  EXT_INIT(init_min_##sfx, CT, L, POSINF)                                                \
  EXT_FIN(fin_max_##sfx, CT, L, GT, ISNAN_F, TORVAL_F)                                   \
  EXT_FIN(fin_min_##sfx, CT, L, LT, ISNAN_F, TORVAL_F)                                   \
  PROD_VEC(vec_prod_##sfx, CT, CT, L)                                                    \
  PROD_ROW(row_prod_##sfx, CT, CT)                                                       \
  PROD_INIT(init_prod_##sfx, CT, L)                                                      \
  PROD_FIN(fin_prod_##sfx, CT, L, TORVAL_F)                                              \
  LOGIC_VEC(vec_all_##sfx, CT, BT, L, &=)                                                \
  LOGIC_VEC(vec_any_##sfx, CT, BT, L, |=)                                                \
  LOGIC_ROW(row_all_##sfx, CT, &=)                                                       \
  LOGIC_ROW(row_any_##sfx, CT, |=)                                                       \
  LOGIC_INIT(init_all_##sfx, BT, L, 1)                                                   \
  LOGIC_INIT(init_any_##sfx, BT, L, 0)                                                   \
  LOGIC_FIN(fin_all_##sfx, BT, L, &=)                                                    \
  LOGIC_FIN(fin_any_##sfx, BT, L, |=)                                                    \
  VADD(vadd_##sfx, CT)                                                                   \
  TORVALS(torvals_##sfx, CT, TORVAL_F)                                                   \
  FIND(find_##sfx, CT, ISNAN_F, FROMRVAL)                                                \
  ARG_ROW(argrow_max_##sfx, CT, GT, ISNAN_F)                                             \
  ARG_ROW(argrow_min_##sfx, CT, LT, ISNAN_F)                                             \
  SCAN_LINE(scanline_sum_##sfx, CT, +)                                                   \
  SCAN_LINE(scanline_prod_##sfx, CT, *)                                                  \
  SCAN_ROW(scanrow_sum_##sfx, CT, +)                                                     \
  SCAN_ROW(scanrow_prod_##sfx, CT, *)

STAMP_FLOAT(f32, float, L32, int32_t, fabsf, gl_vexpf, powf, -INFINITY, INFINITY, FROMRVAL_F32)
STAMP_FLOAT(f64, double, L64, int64_t, fabs, exp, pow, -HUGE_VAL, HUGE_VAL, FROMRVAL_F64)

/* int64: sums and products wrap (uint64 arithmetic); no float maps. */
SUM_VEC(vec_sum_i64, int64_t, uint64_t, L64, MAP_SUM, NOABS, NOABS, NOABS)
SUM_ROW(row_sum_i64, int64_t, uint64_t, MAP_SUM, NOABS, NOABS, NOABS)
SUM_FIN(fin_sum_i64, uint64_t, L64, TORVAL_I)
EXT_VEC(vec_max_i64, int64_t, L64, NOABS, GT, ISNAN_I, NANCHK_I)
EXT_VEC(vec_min_i64, int64_t, L64, NOABS, LT, ISNAN_I, NANCHK_I)
EXT_ROW(row_max_i64, int64_t, NOABS, GT, ISNAN_I)
EXT_ROW(row_min_i64, int64_t, NOABS, LT, ISNAN_I)
EXT_INIT(init_max_i64, int64_t, L64, INT64_MIN)
EXT_INIT(init_min_i64, int64_t, L64, INT64_MAX)
EXT_FIN(fin_max_i64, int64_t, L64, GT, ISNAN_I, TORVAL_I)
EXT_FIN(fin_min_i64, int64_t, L64, LT, ISNAN_I, TORVAL_I)
PROD_VEC(vec_prod_i64, int64_t, uint64_t, L64)
PROD_ROW(row_prod_i64, int64_t, uint64_t)
PROD_INIT(init_prod_i64, uint64_t, L64)
PROD_FIN(fin_prod_i64, uint64_t, L64, TORVAL_I)
LOGIC_VEC(vec_all_i64, int64_t, int64_t, L64, &=)
LOGIC_VEC(vec_any_i64, int64_t, int64_t, L64, |=)
LOGIC_ROW(row_all_i64, int64_t, &=)
LOGIC_ROW(row_any_i64, int64_t, |=)
LOGIC_INIT(init_all_i64, int64_t, L64, 1)
LOGIC_INIT(init_any_i64, int64_t, L64, 0)
LOGIC_FIN(fin_all_i64, int64_t, L64, &=)
LOGIC_FIN(fin_any_i64, int64_t, L64, |=)
VADD(vadd_i64, uint64_t)
TORVALS(torvals_i64, uint64_t, TORVAL_I)
FIND(find_i64, int64_t, ISNAN_I, FROMRVAL_I64)
ARG_ROW(argrow_max_i64, int64_t, GT, ISNAN_I)
ARG_ROW(argrow_min_i64, int64_t, LT, ISNAN_I)
SCAN_LINE(scanline_sum_i64, uint64_t, +)
SCAN_LINE(scanline_prod_i64, uint64_t, *)
SCAN_ROW(scanrow_sum_i64, uint64_t, +)
SCAN_ROW(scanrow_prod_i64, uint64_t, *)

typedef struct kfuns {
  init_fn init;
  vec_fn vec;
  fin_fn fin;
  row_fn row;
} kfuns;

#define KF_SUMS(sfx)                                                                       \
  [K_SUM] = { sum_init, vec_sum_##sfx, fin_sum_##sfx, row_sum_##sfx },                    \
  [K_SUMABS] = { sum_init, vec_sumabs_##sfx, fin_sum_##sfx, row_sumabs_##sfx },           \
  [K_SUMSQ] = { sum_init, vec_sumsq_##sfx, fin_sum_##sfx, row_sumsq_##sfx },              \
  [K_SUMDEV] = { sum_init, vec_sumdev_##sfx, fin_sum_##sfx, row_sumdev_##sfx },           \
  [K_SUMEXP] = { sum_init, vec_sumexp_##sfx, fin_sum_##sfx, row_sumexp_##sfx },           \
  [K_SUMPOW] = { sum_init, vec_sumpow_##sfx, fin_sum_##sfx, row_sumpow_##sfx },           \
  [K_SUMNZ] = { sum_init, vec_sumnz_##sfx, fin_sum_##sfx, row_sumnz_##sfx }
#define KF_REST(sfx)                                                                       \
  [K_PROD] = { init_prod_##sfx, vec_prod_##sfx, fin_prod_##sfx, row_prod_##sfx },         \
  [K_MAX] = { init_max_##sfx, vec_max_##sfx, fin_max_##sfx, row_max_##sfx },              \
  [K_MIN] = { init_min_##sfx, vec_min_##sfx, fin_min_##sfx, row_min_##sfx },              \
  [K_ALL] = { init_all_##sfx, vec_all_##sfx, fin_all_##sfx, row_all_##sfx },              \
  [K_ANY] = { init_any_##sfx, vec_any_##sfx, fin_any_##sfx, row_any_##sfx }

static const kfuns kernels[NCT][NKID] = {
  [CT_F32] = { KF_SUMS(f32), KF_REST(f32),
               [K_MAXABS] = { init_max_f32, vec_maxabs_f32, fin_max_f32, row_maxabs_f32 },
               [K_MINABS] = { init_min_f32, vec_minabs_f32, fin_min_f32, row_minabs_f32 } },
  [CT_F64] = { KF_SUMS(f64), KF_REST(f64),
               [K_MAXABS] = { init_max_f64, vec_maxabs_f64, fin_max_f64, row_maxabs_f64 },
               [K_MINABS] = { init_min_f64, vec_minabs_f64, fin_min_f64, row_minabs_f64 } },
  [CT_I64] = { [K_SUM] = { sum_init, vec_sum_i64, fin_sum_i64, row_sum_i64 }, KF_REST(i64) },
};

static const vadd_fn vadds[NCT] = { vadd_f32, vadd_f64, vadd_i64 };
static const torval_fn torvals[NCT] = { torvals_f32, torvals_f64, torvals_i64 };
static const find_fn finds[NCT] = { find_f32, find_f64, find_i64 };
static const arg_fn argrows[NCT][2] = {
  { argrow_min_f32, argrow_max_f32 }, { argrow_min_f64, argrow_max_f64 },
  { argrow_min_i64, argrow_max_i64 },
};
static const scanline_fn scanlines[NCT][2] = {
  { scanline_sum_f32, scanline_prod_f32 }, { scanline_sum_f64, scanline_prod_f64 },
  { scanline_sum_i64, scanline_prod_i64 },
};
static const scanrow_fn scanrows[NCT][2] = {
  { scanrow_sum_f32, scanrow_prod_f32 }, { scanrow_sum_f64, scanrow_prod_f64 },
  { scanrow_sum_i64, scanrow_prod_i64 },
};
static const size_t ct_size[NCT] = { sizeof(float), sizeof(double), sizeof(int64_t) };

/* ---- conversions: dtype -> CT buffers, CT buffers and finished values -> dtype ---- */

#define CONV_TO_F32_I(v) ((float)(v))
#define CONV_TO_F32_F(v) ((float)(v))
#define CONV_TO_F64_I(v) ((double)(v))
#define CONV_TO_F64_F(v) ((double)(v))
#define CONV_TO_I64_I(v) ((int64_t)(v))
#define CONV_TO_I64_F(v) gl_sat_int64((double)(v))
#define CONV_VK_BOOL I
#define CONV_VK_UINT I
#define CONV_VK_INT I
#define CONV_VK_FLOAT F

/* conv_<id>_<ct>: elements of one dtype row to a CT buffer (an integer or a float value
** converted as its kind VK says). */
#define CONV(id, S, half, VK, CTT, TO)                                                      \
  static void conv_##id##_##CTT(void *out_, const void *x_, int64_t s, int64_t n) {      \
    const S *x = x_;                                                                     \
    if (s == 1) for (int64_t i = 0; i < n; i++) ((TO##_T *)out_)[i] = TO##_##VK(GL_DT_LOAD(half, x[i])); \
    else for (int64_t i = 0; i < n; i++) ((TO##_T *)out_)[i] = TO##_##VK(GL_DT_LOAD(half, x[i * s])); \
  }
#define CONV_TO_F32_T float
#define CONV_TO_F64_T double
#define CONV_TO_I64_T int64_t
#define CONV3(E, id, S, kind, half, ...) CONV3_(id, S, half, CONV_VK_##kind)
#define CONV3_(...) CONV3__(__VA_ARGS__)
#define CONV3__(id, S, half, VK) CONV(id, S, half, VK, f32, CONV_TO_F32) CONV(id, S, half, VK, f64, CONV_TO_F64) \
                                 CONV(id, S, half, VK, i64, CONV_TO_I64)
GL_DTYPE_LIST(CONV3)
#define CONV_ENTRY(E, id, ...) [GL_##E] = { conv_##id##_f32, conv_##id##_f64, conv_##id##_i64 },
static const conv_fn convs[GL_NDTYPE][NCT] = { GL_DTYPE_LIST(CONV_ENTRY) };

/* CT buffer (accumulator representation) -> dtype, with a destination stride. */
#define STORE(E, id, S, kind, half, CTT, AT, VK)                                            \
  static void store_##CTT##_##id(void *d_, int64_t ds, const void *b_, int64_t n) {      \
    S *d = d_;                                                                           \
    const AT *b = b_;                                                                    \
    for (int64_t i = 0; i < n; i++) d[i * ds] = GL_DT_STORE(kind, half, S, id, VK, b[i]); \
  }
#define STORE3(E, id, S, kind, half, ...) STORE(E, id, S, kind, half, f32, float, FLOAT) \
                                          STORE(E, id, S, kind, half, f64, double, FLOAT) \
                                          STORE(E, id, S, kind, half, i64, int64_t, INT)
GL_DTYPE_LIST(STORE3)
#define STORE_ENTRY(E, id, ...) [GL_##E] = { store_f32_##id, store_f64_##id, store_i64_##id },
static const store_fn stores[GL_NDTYPE][NCT] = { GL_DTYPE_LIST(STORE_ENTRY) };

/* Finished values -> dtype. */
#define STORE_RV(E, id, S, kind, half, ...)                                                 \
  static void storerv_##id(void *d_, int64_t ds, const rval *r, int64_t n, int isint) {   \
    S *d = d_;                                                                           \
    if (isint) for (int64_t i = 0; i < n; i++) d[i * ds] = GL_DT_STORE(kind, half, S, id, INT, r[i].i); \
    else for (int64_t i = 0; i < n; i++) d[i * ds] = GL_DT_STORE(kind, half, S, id, FLOAT, r[i].f); \
  }
GL_DTYPE_LIST(STORE_RV)
typedef void (*storerv_fn)(void *d, int64_t ds, const rval *r, int64_t n, int isint);
#define STORE_RV_ENTRY(E, id, ...) [GL_##E] = storerv_##id,
static const storerv_fn storervs[GL_NDTYPE] = { GL_DTYPE_LIST(STORE_RV_ENTRY) };

static int ct_of(gl_dtype t) {
  if (t == GL_FLOAT64) return CT_F64;
  if (gl_dtype_is_float(t)) return CT_F32;
  return CT_I64;
}

/* Is the stored dtype the CT itself (no conversion pass)? */
static bool is_native(gl_dtype t, int ct) {
  return (ct == CT_F32 && t == GL_FLOAT32) || (ct == CT_F64 && t == GL_FLOAT64) ||
         (ct == CT_I64 && t == GL_INT64);
}

/* OpenMP's thread count as it was at the first call: OpenBLAS's set_num_threads (which
** gl_cpu_blas_threads calls) changes omp_get_max_threads() afterwards. */
int gl_cpu_max_threads(void) {
#ifdef _OPENMP
  static _Atomic int n = 0;
  int v = n;
  if (v == 0) {
    v = omp_get_max_threads();
    v = v > MAX_THREADS ? MAX_THREADS : v < 1 ? 1 : v;
    n = v;
  }
  return v;
#else
  return 1;
#endif
}
#define max_threads gl_cpu_max_threads

#ifdef __linux__
static _Atomic int64_t load_read_ms = -1000, team_end_ms = -1000;
static _Atomic int load_others = 0, team_last = 1;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
#endif

/* The threads for 'work' elements: one below PAR_MIN, else OpenMP's count less the
** cores other runnable tasks hold. On a shared or loaded machine a team waits at its
** closing barrier for a thread the scheduler has not run yet, milliseconds where the
** work itself takes one or two, so busy cores are left alone. The busy count is
** /proc/loadavg's instantaneous "running" field (read at most every 20 ms) less this
** thread and, for a few ms after a parallel region, our own spinning workers. An
** explicit OMP_NUM_THREADS is obeyed as it is. */
int gl_cpu_team_size(int64_t work) {
  int nt = max_threads();
  if (nt <= 1 || work < PAR_MIN) return 1;
#if defined(__linux__) && defined(_OPENMP)
  static int explicit_threads = -1;
  if (explicit_threads < 0) explicit_threads = getenv("OMP_NUM_THREADS") != NULL;
  if (explicit_threads) return nt;
  int64_t t = now_ms();
  if (t - load_read_ms >= 20) {
    load_read_ms = t;
    FILE *f = fopen("/proc/loadavg", "r");
    int running = 0;
    if (f) {
      if (fscanf(f, "%*f %*f %*f %d", &running) != 1) running = 0;
      fclose(f);
    }
    int ours = t - team_end_ms < 20 ? team_last : 1;
    load_others = running > ours ? running - ours : 0;
  }
  int free_cores = omp_get_num_procs() - load_others;
  if (free_cores < nt) nt = free_cores < 1 ? 1 : free_cores;
  if (nt > 1) { team_last = nt; team_end_ms = t; }   /* gl_cpu_team_done moves the time on */
#endif
  return nt;
}

/* Notes the end of a parallel region of nt threads (their workers spin for a while). */
void gl_cpu_team_done(int nt) {
#ifdef __linux__
  if (nt > 1) { team_last = nt; team_end_ms = now_ms(); }
#else
  (void)nt;
#endif
}

/* ---- plans ------------------------------------------------------------------------ */

typedef gl_rdim rdim;   /* extent, src and dst strides (core/iter.h) */

typedef struct rjob {
  gl_redop op;
  double param;
  int ct;                     /* compute type */
  int rct;                    /* CT of the finished values (ALL/ANY/ARG: int) */
  gl_dtype sdt, ddt;
  bool native;
  const char *src;
  char *dst;
  int64_t ssz, dsz;
  int np, nr;
  rdim kd[GL_MAXDIMS];        /* kept axes, outer to inner by stride */
  rdim rd[GL_MAXDIMS];        /* reduced axes, outer to inner by stride */
  int64_t M, K;
  int nt;
} rjob;

/* Offsets (src, dst) of the o-th combination of dims d[0..n-1] in C order. */
static void dims_offset(const rdim *d, int n, int64_t o, int64_t *so, int64_t *dof) {
  int64_t s = 0, t = 0;
  for (int k = n - 1; k >= 0 && o > 0; k--) {
    int64_t i = o % d[k].n;
    o /= d[k].n;
    s += i * d[k].ss;
    t += i * d[k].ds;
  }
  *so = s;
  *dof = t;
}

/* An odometer over dims d[0..n-1]: 'off' is the src offset of the current position. */
typedef struct odo { int64_t idx[GL_MAXDIMS]; int64_t off; } odo;

static void odo_next(odo *o, const rdim *d, int n) {
  for (int k = n - 1; k >= 0; k--) {
    o->off += d[k].ss;
    if (++o->idx[k] < d[k].n) return;
    o->off -= d[k].ss * d[k].n;
    o->idx[k] = 0;
  }
}

/* ---- the inner shape: one output reduces a (strided) vector, or rows of them ----- */

static const rdim one_elem = { 1, 1, 0 };

/* Runs kernel f over n elements at x (stride s, source dtype), converting in chunks when
** the storage is not the CT. A poll for a stop every GL_POLL_SPAN elements (a multiple of
** every block, so the sums' blocks and their cascade are the same as in one call). */
static void vec_any(const rjob *j, vec_fn f, kstate *st, const char *x, int64_t s, int64_t n,
                    double a, double p) {
  if (j->native) {
    for (int64_t i = 0; i < n && !gl_interrupted(); i += GL_POLL_SPAN)
      f(st, x + i * s * j->ssz, s, n - i < GL_POLL_SPAN ? n - i : GL_POLL_SPAN, a, p);
    return;
  }
  ctbuf buf;
  conv_fn cv = convs[j->sdt][j->ct];
  for (int64_t i = 0; i < n; i += CHUNK) {
    if (i % GL_POLL_SPAN == 0 && gl_interrupted()) return;
    int64_t m = n - i < CHUNK ? n - i : CHUNK;
    cv(&buf, x + i * s * j->ssz, s, m);
    f(st, &buf, 1, m, a, p);
  }
}

/* Work units of the reduced region: elements of the one vector (nr <= 1), or its rows. */
static int64_t region_units(const rjob *j) {
  if (j->nr <= 1) return j->nr ? j->rd[0].n : 1;
  return j->K / j->rd[j->nr - 1].n;
}

static void region(const rjob *j, vec_fn f, kstate *st, const char *base, double a, double p,
                   int64_t lo, int64_t hi) {
  const rdim *in = j->nr ? &j->rd[j->nr - 1] : &one_elem;
  if (j->nr <= 1) {
    vec_any(j, f, st, base + lo * in->ss * j->ssz, in->ss, hi - lo, a, p);
    return;
  }
  for (int64_t r = lo; r < hi && !gl_interrupted(); r++) {
    int64_t so, unused;
    dims_offset(j->rd, j->nr - 1, r, &so, &unused);
    vec_any(j, f, st, base + so * j->ssz, in->ss, in->n, a, p);
  }
}

static bool rv_isnan(rval v, int ct) { return ct != CT_I64 && v.f != v.f; }

/* Combines per-thread partials of kernel 'kid'. */
static rval combine(int kid, int ct, const rval *part, int n) {
  rval r = part[0];
  for (int t = 1; t < n; t++) {
    rval v = part[t];
    if (IS_SUM(kid)) {
      if (ct == CT_I64) r.i = (int64_t)((uint64_t)r.i + (uint64_t)v.i);
      else r.f += v.f;
    } else if (kid == K_PROD) {
      if (ct == CT_I64) r.i = (int64_t)((uint64_t)r.i * (uint64_t)v.i);
      else r.f *= v.f;
    } else if (kid == K_ALL) {
      r.i = r.i && v.i;
    } else if (kid == K_ANY) {
      r.i = r.i || v.i;
    } else {
      bool max = kid == K_MAX || kid == K_MAXABS;
      if (rv_isnan(r, ct)) continue;
      if (rv_isnan(v, ct)) { r = v; continue; }
      if (ct == CT_I64) r.i = (max ? v.i > r.i : v.i < r.i) ? v.i : r.i;
      else r.f = (max ? v.f > r.f : v.f < r.f) ? v.f : r.f;
    }
  }
  return r;
}

/* One pass of kernel 'kid' over the reduced region at 'base'; with 'par' the region is
** split among threads and the partials combined. */
static rval pass(const rjob *j, int kid, const char *base, double a, double p, bool par) {
  const kfuns *kf = &kernels[j->ct][kid];
  int64_t units = region_units(j);
  if (!par || units < 2) {
    kstate st;
    kf->init(&st);
    region(j, kf->vec, &st, base, a, p, 0, units);
    return kf->fin(&st);
  }
  rval part[MAX_THREADS];
  int used = 1;
#ifdef _OPENMP
  #pragma omp parallel num_threads(j->nt)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    /* element ranges stay multiples of the conversion chunk (and so of every block) */
    int64_t grain = j->nr <= 1 ? CHUNK : 1;
    int64_t per = ((units + nt - 1) / nt + grain - 1) / grain * grain;
    int64_t lo = t * per, hi = lo + per < units ? lo + per : units;
    kstate st;
    kf->init(&st);
    if (lo < hi) region(j, kf->vec, &st, base, a, p, lo, hi);
    part[t] = kf->fin(&st);
    if (t == 0) used = nt;
  }
  gl_cpu_team_done(used);
#else
  {
    kstate st;
    kf->init(&st);
    region(j, kf->vec, &st, base, a, p, 0, units);
    part[0] = kf->fin(&st);
  }
#endif
  return combine(kid, j->ct, part, used);
}

/* The index of the first element equal to m in the (one-axis) region at base. */
static int64_t find_first(const rjob *j, const char *base, rval m) {
  if (j->nr == 0) return 0;
  const rdim *in = &j->rd[0];
  find_fn f = finds[j->ct];
  if (j->native) {
    for (int64_t i = 0; i < in->n && !gl_interrupted(); i += GL_POLL_SPAN) {
      int64_t k = f(base + i * in->ss * j->ssz, in->ss, in->n - i < GL_POLL_SPAN ? in->n - i : GL_POLL_SPAN, m);
      if (k >= 0) return i + k;
    }
    return 0;
  }
  ctbuf buf;
  conv_fn cv = convs[j->sdt][j->ct];
  for (int64_t i = 0; i < in->n; i += CHUNK) {
    if (i % GL_POLL_SPAN == 0 && gl_interrupted()) return 0;
    int64_t n = in->n - i < CHUNK ? in->n - i : CHUNK;
    cv(&buf, base + i * in->ss * j->ssz, in->ss, n);
    int64_t k = f(&buf, 1, n, m);
    if (k >= 0) return i + k;
  }
  return 0;
}

/* Rounds an intermediate to the CT, as if it had been computed there. */
static double rnd(const rjob *j, double v) { return j->ct == CT_F32 ? (double)(float)v : v; }

static double var_divisor(const rjob *j) {
  double d = (double)j->K - j->param;
  return d > 0 ? d : 0;
}

static rval norm_value(const rjob *j, const char *base, bool par) {
  double p = j->param;
  rval r;
  if (p == 2) {
    r.f = rnd(j, sqrt(pass(j, K_SUMSQ, base, 0, 0, par).f));
  } else if (p == 1) {
    r = pass(j, K_SUMABS, base, 0, 0, par);
  } else if (isinf(p)) {
    r = pass(j, p > 0 ? K_MAXABS : K_MINABS, base, 0, 0, par);
  } else if (p == 0) {
    r = pass(j, K_SUMNZ, base, 0, 0, par);
  } else {
    r.f = rnd(j, pow(pass(j, K_SUMPOW, base, 0, p, par).f, 1.0 / p));
  }
  return r;
}

/* The finished value of one output whose reduced region starts at base. */
static rval output_value(const rjob *j, const char *base, bool par) {
  rval r;
  double K = (double)j->K;
  switch (j->op) {
    case GL_R_SUM: return pass(j, K_SUM, base, 0, 0, par);
    case GL_R_PROD: return pass(j, K_PROD, base, 0, 0, par);
    case GL_R_MAX: return pass(j, K_MAX, base, 0, 0, par);
    case GL_R_MIN: return pass(j, K_MIN, base, 0, 0, par);
    case GL_R_ALL: return pass(j, K_ALL, base, 0, 0, par);
    case GL_R_ANY: return pass(j, K_ANY, base, 0, 0, par);
    case GL_R_MEAN:
      r.f = rnd(j, pass(j, K_SUM, base, 0, 0, par).f / K);
      return r;
    case GL_R_VAR: {
      double mean = rnd(j, pass(j, K_SUM, base, 0, 0, par).f / K);
      r.f = rnd(j, pass(j, K_SUMDEV, base, mean, 0, par).f / var_divisor(j));
      return r;
    }
    case GL_R_NORM: return norm_value(j, base, par);
    case GL_R_LOGSUMEXP: {
      double m = pass(j, K_MAX, base, 0, 0, par).f;
      double shift = isfinite(m) ? m : 0;       /* scipy: a non-finite max shifts by 0 */
      r.f = rnd(j, log(pass(j, K_SUMEXP, base, shift, 0, par).f) + shift);
      return r;
    }
    case GL_R_ARGMAX: case GL_R_ARGMIN: {
      rval m = pass(j, j->op == GL_R_ARGMAX ? K_MAX : K_MIN, base, 0, 0, par);
      r.i = find_first(j, base, m);
      return r;
    }
    default:
      r.i = 0;
      return r;
  }
}

static void inner_output(const rjob *j, int64_t o, bool par) {
  int64_t so, dof;
  dims_offset(j->kd, j->np, o, &so, &dof);
  rval v = output_value(j, j->src + so * j->ssz, par);
  storervs[j->ddt](j->dst + dof * j->dsz, 1, &v, 1, j->rct == CT_I64);
}

static void run_inner(const rjob *j) {
  /* outputs are shared among threads when there are enough of them to balance;
  ** otherwise each output's own range is split */
  bool big = j->nt > 1;
  if (big && j->M >= 4 * j->nt) {
    #pragma omp parallel for schedule(static) num_threads(j->nt)
    for (int64_t o = 0; o < j->M; o++) if (!gl_interrupted()) inner_output(j, o, false);
    gl_cpu_team_done(j->nt);
    return;
  }
  for (int64_t o = 0; o < j->M && !gl_interrupted(); o++) inner_output(j, o, big);
}

/* ---- the outer shape: rows of the fastest kept axis accumulate into a row ----------- */

typedef struct ows {
  unsigned char *mem;
  void *lv[66];               /* cascade levels + the block being summed (swapped around) */
  void *acc, *aux, *buf;      /* ROW_W each (8 bytes per element) */
  int64_t *idx;
  rval *rv;
  int nlev;
} ows;

static bool ows_init(ows *w, int64_t K) {
  int64_t blocks = (K + ROW_BLOCK - 1) / ROW_BLOCK;
  int nlev = 1;
  while (((int64_t)1 << (nlev - 1)) < blocks && nlev < 64) nlev++;
  size_t row = (size_t)ROW_W * 8;
  w->mem = malloc(row * (size_t)(nlev + 1 + 5));
  if (w->mem == NULL) return false;
  w->nlev = nlev;
  for (int k = 0; k <= nlev; k++) w->lv[k] = w->mem + row * (size_t)k;
  unsigned char *p = w->mem + row * (size_t)(nlev + 1);
  w->acc = p;
  w->aux = p + row;
  w->buf = p + 2 * row;
  w->idx = (int64_t *)(void *)(p + 3 * row);
  w->rv = (rval *)(void *)(p + 4 * row);
  return true;
}

/* The row at offset 'off' (elements) of x as CT: in place when native, else converted. */
static const void *row_ct(const rjob *j, const ows *w, const char *x, int64_t off, int64_t s,
                          int64_t n, int64_t *stride) {
  if (j->native) { *stride = s; return x + off * j->ssz; }
  convs[j->sdt][j->ct](w->buf, x + off * j->ssz, s, n);
  *stride = 1;
  return w->buf;
}

/* Sum of a map over all rows of the reduced region into w->rv[0..n-1], pairwise over
** blocks of ROW_BLOCK rows. */
static void outer_sum(const rjob *j, ows *w, int kid, const char *x, int64_t s, int64_t n,
                      const void *aux, double p) {
  row_fn rowk = kernels[j->ct][kid].row;
  vadd_fn vadd = vadds[j->ct];
  void *t = w->lv[w->nlev];                 /* the block being summed */
  uint64_t blocks = 0;
  odo o;
  memset(&o, 0, sizeof o);
  for (int64_t r = 0; r < j->K; r++) {
    if (r % ROW_POLL == 0 && r > 0 && gl_interrupted()) break;
    int64_t rs;
    const void *row = row_ct(j, w, x, o.off, s, n, &rs);
    rowk(t, row, rs, n, aux, p, r % ROW_BLOCK == 0);
    odo_next(&o, j->rd, j->nr);
    if (r % ROW_BLOCK == ROW_BLOCK - 1 || r == j->K - 1) {
      int lev = 0;
      for (; (blocks >> lev) & 1; lev++) vadd(t, w->lv[lev], n);
      void *tmp = w->lv[lev];
      w->lv[lev] = t;
      t = tmp;
      blocks++;
    }
  }
  w->lv[w->nlev] = t;
  bool have = false;
  for (int lev = 0; lev < 64; lev++) {
    if (!((blocks >> lev) & 1)) continue;
    if (!have) memcpy(w->acc, w->lv[lev], (size_t)n * ct_size[j->ct]);
    else vadd(w->acc, w->lv[lev], n);
    have = true;
  }
  torvals[j->ct](w->rv, w->acc, n);
}

/* A non-sum kernel (prod, max, min, all, any) over all rows into w->rv. */
static void outer_rows(const rjob *j, ows *w, int kid, const char *x, int64_t s, int64_t n) {
  row_fn rowk = kernels[j->ct][kid].row;
  odo o;
  memset(&o, 0, sizeof o);
  for (int64_t r = 0; r < j->K; r++) {
    if (r % ROW_POLL == 0 && r > 0 && gl_interrupted()) break;
    int64_t rs;
    const void *row = row_ct(j, w, x, o.off, s, n, &rs);
    rowk(w->acc, row, rs, n, NULL, 0, r == 0);
    odo_next(&o, j->rd, j->nr);
  }
  if (kid == K_ALL || kid == K_ANY) {
    const uint8_t *b = w->acc;
    for (int64_t i = 0; i < n; i++) w->rv[i].i = b[i];
  } else {
    torvals[j->ct](w->rv, w->acc, n);
  }
}

/* Finished values -> a CT row (parameters of a second pass). */
static void rv_to_ct(const rjob *j, void *dst, const rval *r, int64_t n) {
  if (j->ct == CT_F32) for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = (float)r[i].f;
  else for (int64_t i = 0; i < n; i++) ((double *)dst)[i] = r[i].f;
}

static void outer_norm(const rjob *j, ows *w, const char *x, int64_t s, int64_t n) {
  double p = j->param;
  if (p == 2) {
    outer_sum(j, w, K_SUMSQ, x, s, n, NULL, 0);
    for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, sqrt(w->rv[i].f));
  } else if (p == 1) {
    outer_sum(j, w, K_SUMABS, x, s, n, NULL, 0);
  } else if (isinf(p)) {
    outer_rows(j, w, p > 0 ? K_MAXABS : K_MINABS, x, s, n);
  } else if (p == 0) {
    outer_sum(j, w, K_SUMNZ, x, s, n, NULL, 0);
  } else {
    outer_sum(j, w, K_SUMPOW, x, s, n, NULL, p);
    for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, pow(w->rv[i].f, 1.0 / p));
  }
}

/* Item 'item' of the outer shape: a chunk of cw outputs along kept axis jk, at one
** position of the other kept axes. */
static void outer_item(const rjob *j, ows *w, int jk, int64_t cw, int64_t item) {
  const rdim *jd = &j->kd[jk];
  int64_t nchunk = (jd->n + cw - 1) / cw;
  int64_t rest = item / nchunk, c0 = item % nchunk * cw;
  int64_t n = jd->n - c0 < cw ? jd->n - c0 : cw;
  rdim others[GL_MAXDIMS];
  int no = 0;
  for (int k = 0; k < j->np; k++) if (k != jk) others[no++] = j->kd[k];
  int64_t so, dof;
  dims_offset(others, no, rest, &so, &dof);
  const char *x = j->src + (so + c0 * jd->ss) * j->ssz;
  char *d = j->dst + (dof + c0 * jd->ds) * j->dsz;
  int64_t s = jd->ss;
  double K = (double)j->K;
  switch (j->op) {
    case GL_R_SUM: outer_sum(j, w, K_SUM, x, s, n, NULL, 0); break;
    case GL_R_PROD: outer_rows(j, w, K_PROD, x, s, n); break;
    case GL_R_MAX: outer_rows(j, w, K_MAX, x, s, n); break;
    case GL_R_MIN: outer_rows(j, w, K_MIN, x, s, n); break;
    case GL_R_ALL: outer_rows(j, w, K_ALL, x, s, n); break;
    case GL_R_ANY: outer_rows(j, w, K_ANY, x, s, n); break;
    case GL_R_MEAN:
      outer_sum(j, w, K_SUM, x, s, n, NULL, 0);
      for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, w->rv[i].f / K);
      break;
    case GL_R_VAR:
      outer_sum(j, w, K_SUM, x, s, n, NULL, 0);
      for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, w->rv[i].f / K);
      rv_to_ct(j, w->aux, w->rv, n);
      outer_sum(j, w, K_SUMDEV, x, s, n, w->aux, 0);
      for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, w->rv[i].f / var_divisor(j));
      break;
    case GL_R_NORM: outer_norm(j, w, x, s, n); break;
    case GL_R_LOGSUMEXP: {
      outer_rows(j, w, K_MAX, x, s, n);
      for (int64_t i = 0; i < n; i++) if (!isfinite(w->rv[i].f)) w->rv[i].f = 0;
      rv_to_ct(j, w->aux, w->rv, n);
      outer_sum(j, w, K_SUMEXP, x, s, n, w->aux, 0);
      for (int64_t i = 0; i < n; i++) {
        double shift = j->ct == CT_F32 ? (double)((float *)w->aux)[i] : ((double *)w->aux)[i];
        w->rv[i].f = rnd(j, log(w->rv[i].f) + shift);
      }
      break;
    }
    case GL_R_ARGMAX: case GL_R_ARGMIN: {
      arg_fn f = argrows[j->ct][j->op == GL_R_ARGMAX];
      odo o;
      memset(&o, 0, sizeof o);
      for (int64_t r = 0; r < j->K; r++) {
        if (r % ROW_POLL == 0 && r > 0 && gl_interrupted()) break;
        int64_t rs;
        const void *row = row_ct(j, w, x, o.off, s, n, &rs);
        f(w->acc, w->idx, row, rs, n, r, r == 0);
        odo_next(&o, j->rd, j->nr);
      }
      for (int64_t i = 0; i < n; i++) w->rv[i].i = w->idx[i];
      break;
    }
    default: break;
  }
  storervs[j->ddt](d, jd->ds, w->rv, n, j->rct == CT_I64);
}

static gl_status run_outer(const rjob *j) {
  int jk = 0;                               /* the kept axis with the smallest stride */
  for (int k = 1; k < j->np; k++)
    if (llabs(j->kd[k].ss) <= llabs(j->kd[jk].ss)) jk = k;
  /* whole rows (up to ROW_W) stream best; narrower chunks when there would be fewer
  ** items than threads */
  int64_t W = j->kd[jk].n, cw = W < ROW_W ? W : ROW_W;
  bool big = j->nt > 1;
  if (big && j->M / W * ((W + cw - 1) / cw) < j->nt && W >= 512) {
    cw = (W + j->nt - 1) / j->nt;
    cw = (cw + 63) / 64 * 64;
  }
  int64_t items = j->M / W * ((W + cw - 1) / cw);
  bool par = big && items > 1;
  int failed = 0;
  #pragma omp parallel num_threads(par ? j->nt : 1) reduction(|: failed)
  {
    ows w;
    bool ok = ows_init(&w, j->K);
    failed = !ok;
    /* every thread meets the loop (a worksharing construct), even one without rows */
    #pragma omp for schedule(static)
    for (int64_t it = 0; it < items; it++) if (ok && !gl_interrupted()) outer_item(j, &w, jk, cw, it);
    if (ok) free(w.mem);
  }
  if (par) gl_cpu_team_done(j->nt);
  return failed ? gl_fail(GL_ENOMEM, "out of memory for a reduction's work rows") : gl_interrupt_check();
}

/* ---- entry points ------------------------------------------------------------------ */

static bool is_arg(gl_redop op) { return op == GL_R_ARGMAX || op == GL_R_ARGMIN; }

/* An integer or bool result is made only by the ops that compute in int64 (sum, prod) or in
** the source's own type (max, min, argmax, argmin, all, any). */
bool gl_cpu_has_reduce(gl_redop op, gl_dtype dt) {
  if ((unsigned)op >= GL_NREDOP || (unsigned)dt >= GL_NDTYPE) return false;
  return gl_dtype_is_float(dt) || !(op == GL_R_MEAN || op == GL_R_VAR || op == GL_R_NORM || op == GL_R_LOGSUMEXP);
}

gl_status gl_cpu_reduce(gl_redop op, const gl_array *dst, const gl_array *src, double param) {
  if (dst->ndim != src->ndim)
    return gl_fail(GL_EINVAL, "reduce: dst has %d dims, src %d", dst->ndim, src->ndim);
  rjob j;
  memset(&j, 0, sizeof j);
  j.op = op;
  j.param = param;
  j.sdt = (gl_dtype)src->dtype;
  j.ddt = (gl_dtype)dst->dtype;
  /* the compute type: max/min/arg/all/any read the source's own type; the rest compute
  ** in the result's */
  bool by_src = op == GL_R_MAX || op == GL_R_MIN || is_arg(op) || op == GL_R_ALL || op == GL_R_ANY;
  j.ct = ct_of(by_src ? j.sdt : j.ddt);
  j.rct = (is_arg(op) || op == GL_R_ALL || op == GL_R_ANY) ? CT_I64 : j.ct;
  if (!gl_cpu_has_reduce(op, j.ddt))
    return gl_fail(GL_ENOTSUP, "reduce: an integer result needs sum or prod, not op %d", (int)op);
  j.native = is_native(j.sdt, j.ct);
  j.src = gl_array_data(src);
  j.dst = gl_array_data(dst);
  j.ssz = (int64_t)gl_array_itemsize(src);
  j.dsz = (int64_t)gl_array_itemsize(dst);
  int bad = gl_raxes_split(dst, src, j.kd, &j.np, &j.M, j.rd, &j.nr, &j.K);
  if (bad >= 0)
    return gl_fail(GL_EINVAL, "reduce: dst extent %lld on axis %d does not match src extent %lld",
                   (long long)dst->shape[bad], bad, (long long)src->shape[bad]);
  if (j.M == 0) return GL_OK;
  if (is_arg(op) && j.nr > 1) return gl_fail(GL_EINVAL, "reduce: argmax/argmin take one axis");
  if (j.K == 0 && (by_src && op != GL_R_ALL && op != GL_R_ANY))
    return gl_fail(GL_EINVAL, "zero-size array to a reduction which has no identity");
  j.np = gl_rdims_sort_merge(j.kd, j.np, true);
  j.nr = gl_rdims_sort_merge(j.rd, j.nr, false);
  if (j.K == 0) { j.nr = 1; j.rd[0] = (rdim){ 0, 1, 0 }; }
  j.nt = gl_cpu_team_size(j.M * (j.K > 0 ? j.K : 1));
  bool inner;
  if (j.np == 0 || j.K == 0) inner = true;
  else if (j.nr == 0) inner = false;
  else {
    const rdim *r = &j.rd[j.nr - 1];
    int64_t ks = INT64_MAX, kn = 0;
    for (int k = 0; k < j.np; k++)
      if (llabs(j.kd[k].ss) <= ks) { ks = llabs(j.kd[k].ss); kn = j.kd[k].n; }
    inner = llabs(r->ss) < ks && (r->n >= 64 || r->n >= kn);
  }
  if (inner) { run_inner(&j); return gl_interrupt_check(); }
  return run_outer(&j);
}

/* ---- scans ---------------------------------------------------------------------------- */

gl_status gl_cpu_scan(gl_redop op, const gl_array *dst, const gl_array *src, int axis) {
  if (op != GL_R_SUM && op != GL_R_PROD) return gl_fail(GL_ENOTSUP, "scan: op %d is not a scan", (int)op);
  if (dst->size == 0) return GL_OK;
  gl_dtype sdt = (gl_dtype)src->dtype, ddt = (gl_dtype)dst->dtype;
  int ct = ct_of(ddt), isprod = op == GL_R_PROD;
  int64_t K = src->shape[axis], sa = src->strides[axis], da = dst->strides[axis];
  int64_t ssz = (int64_t)gl_array_itemsize(src), dsz = (int64_t)gl_array_itemsize(dst);
  rdim d[GL_MAXDIMS];
  int n = 0;
  for (int k = 0; k < src->ndim; k++)
    if (k != axis && src->shape[k] != 1) d[n++] = (rdim){ src->shape[k], src->strides[k], dst->strides[k] };
  n = gl_rdims_sort_merge(d, n, true);
  /* rows (the scan axis outside a contiguous one) or lines (the scan axis innermost) */
  bool rows = n > 0 && llabs(d[n - 1].ss) < llabs(sa) && d[n - 1].n > 1;
  rdim in = rows ? d[n - 1] : (rdim){ 1, 1, 1 };
  int nout = rows ? n - 1 : n;
  int64_t outer = 1;
  for (int k = 0; k < nout; k++) outer *= d[k].n;
  int64_t nchunk = (in.n + CHUNK - 1) / CHUNK, items = outer * nchunk;
  const char *sb = gl_array_data(src);
  char *db = gl_array_data(dst);
  conv_fn cv = convs[sdt][ct];
  store_fn stf = stores[ddt][ct];
  int nt = gl_cpu_team_size(dst->size);
  bool par = nt > 1 && items > 1;
  #pragma omp parallel for schedule(static) num_threads(par ? nt : 1)
  for (int64_t it = 0; it < items; it++) {
    if (gl_interrupted()) continue;
    ctbuf buf, acc;
    int64_t so, dof, c0 = it % nchunk * CHUNK;
    dims_offset(d, nout, it / nchunk, &so, &dof);
    const char *x = sb + (so + c0 * in.ss) * ssz;
    char *y = db + (dof + c0 * in.ds) * dsz;
    if (rows) {
      int64_t w = in.n - c0 < CHUNK ? in.n - c0 : CHUNK;
      for (int64_t k = 0; k < K; k++) {
        if (k % ROW_POLL == 0 && k > 0 && gl_interrupted()) break;
        cv(&buf, x + k * sa * ssz, in.ss, w);
        scanrows[ct][isprod](&acc, &buf, w, k == 0);
        stf(y + k * da * dsz, in.ds, &acc, w);
      }
    } else {
      union { float f; double d; uint64_t u; } carry;
      if (ct == CT_F32) carry.f = isprod ? 1.0f : 0.0f;
      else if (ct == CT_F64) carry.d = isprod ? 1.0 : 0.0;
      else carry.u = isprod ? 1 : 0;
      for (int64_t k = 0; k < K; k += CHUNK) {
        if (k % GL_POLL_SPAN == 0 && k > 0 && gl_interrupted()) break;
        int64_t m = K - k < CHUNK ? K - k : CHUNK;
        cv(&buf, x + k * sa * ssz, sa, m);
        scanlines[ct][isprod](&buf, m, &carry);
        stf(y + k * da * dsz, da, &buf, m);
      }
    }
  }
  if (par) gl_cpu_team_done(nt);
  return gl_interrupt_check();
}
