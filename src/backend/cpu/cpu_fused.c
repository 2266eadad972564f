/*
** cpu_fused.c — the fused kernels of gpu.fused on the CPU: optimizer steps in one pass over
** each parameter (kernels/optim.h's element steps, in the parameter's precision: SGD, Adam,
** RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam), softmax
** cross-entropy forward (loss and probabilities per row, max-shifted) and backward, and
** layer norm over the last axis forward and backward, and attention in FlashAttention's GEMM
** tiles forward and backward. Rows and elements are split across the free cores above 32768
** elements.
*/
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "cpu.h"
#include "../../../kernels/vmath.h"
#include "../../../kernels/optim.h"
#include "../../../kernels/xent.h"

/* ---- optimizer steps ------------------------------------------------------------------------ */

/* The loop of one (rule, type) over kernels/optim.h's element step STEP, an expression of
** element i; every loop has gl_cpu_optim_step's signature (state arrays s0..s2, NULL where
** unused), so one table holds them. The constants are private to each thread (shared, they
** are read through a pointer that the stores may alias). */
typedef void optim_loop(int64_t n, void *p, const void *g, void *s0, void *s1, void *s2, const gl_optim_hp *hp,
                        int nt);
#define GL_OPTIM_LOOP(T, SFX, NAME, STEP)                                                           \
  static void NAME##_##SFX(int64_t n, void *pv, const void *gv, void *s0v, void *s1v, void *s2v,     \
                           const gl_optim_hp *hp, int nt) {                                         \
    T *p = pv, *s0 = s0v, *s1 = s1v, *s2 = s2v;                                                     \
    const T *g = gv;                                                                                \
    const gl_optim_args_##SFX k = gl_optim_args_##SFX##_of(hp);                                     \
    const int first = hp->first, nesterov = hp->nesterov;                                           \
    (void)s1; (void)s2; (void)first; (void)nesterov;                                                \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)")    \
    for (int64_t i = 0; i < n; i++) p[i] = STEP;                                                    \
  }
/* RAdam has one loop per branch (the branch is the step's, not the element's). */
#define GL_OPTIM_LOOPS(T, SFX)                                                                      \
  GL_OPTIM_LOOP(T, SFX, sgd, gl_sgd_##SFX(p[i], g[i], s0 ? s0 + i : NULL, first, nesterov, k))       \
  GL_OPTIM_LOOP(T, SFX, adam, gl_adam_##SFX(p[i], g[i], s0 + i, s1 + i, s2 ? s2 + i : NULL, k))      \
  GL_OPTIM_LOOP(T, SFX, rmsprop, gl_rmsprop_##SFX(p[i], g[i], s0 + i, s1 ? s1 + i : NULL, s2 ? s2 + i : NULL, k)) \
  GL_OPTIM_LOOP(T, SFX, adagrad, gl_adagrad_##SFX(p[i], g[i], s0 + i, k))                           \
  GL_OPTIM_LOOP(T, SFX, adadelta, gl_adadelta_##SFX(p[i], g[i], s0 + i, s1 + i, k))                 \
  GL_OPTIM_LOOP(T, SFX, adamax, gl_adamax_##SFX(p[i], g[i], s0 + i, s1 + i, k))                     \
  GL_OPTIM_LOOP(T, SFX, nadam, gl_nadam_##SFX(p[i], g[i], s0 + i, s1 + i, k))                       \
  GL_OPTIM_LOOP(T, SFX, radam, gl_radam_##SFX(p[i], g[i], s0 + i, s1 + i, 1, k))                    \
  GL_OPTIM_LOOP(T, SFX, radam_momentum, gl_radam_##SFX(p[i], g[i], s0 + i, s1 + i, 0, k))
GL_OPTIM_LOOPS(float, f32)
GL_OPTIM_LOOPS(double, f64)

/* The loops by rule and type (float32, float64); RAdam before its variance is tractable
** sits after the rules. */
static optim_loop *const optim_loops[GL_OPTIM_KINDS + 1][2] = {
  [GL_OPTIM_SGD] = { sgd_f32, sgd_f64 },
  [GL_OPTIM_ADAM] = { adam_f32, adam_f64 },
  [GL_OPTIM_RMSPROP] = { rmsprop_f32, rmsprop_f64 },
  [GL_OPTIM_ADAGRAD] = { adagrad_f32, adagrad_f64 },
  [GL_OPTIM_ADADELTA] = { adadelta_f32, adadelta_f64 },
  [GL_OPTIM_ADAMAX] = { adamax_f32, adamax_f64 },
  [GL_OPTIM_NADAM] = { nadam_f32, nadam_f64 },
  [GL_OPTIM_RADAM] = { radam_f32, radam_f64 },
  [GL_OPTIM_KINDS] = { radam_momentum_f32, radam_momentum_f64 },
};

#define DATA(T, a) ((a) ? (T *)gl_array_data(a) : NULL)

gl_status gl_cpu_optim_step(gl_optim_kind kind, const gl_array *p, const gl_array *g,
                            const gl_array *const st[3], const gl_optim_hp *hp) {
  int64_t n = p->size;
  int nt = gl_cpu_team_size(n);
  int row = kind == GL_OPTIM_RADAM && !hp->rectify ? GL_OPTIM_KINDS : (int)kind;
  optim_loops[row][p->dtype == GL_FLOAT32 ? 0 : 1](n, DATA(void, p), DATA(const void, g), DATA(void, st[0]),
                                                   DATA(void, st[1]), DATA(void, st[2]), hp, nt);
  gl_cpu_team_done(nt);
  return GL_OK;
}

/* ---- softmax cross-entropy ------------------------------------------------------------------ */

/* Per row i of z (C wide): m = max, s = sum exp(z - m), lse = m + log s; probs = exp(z - lse);
** loss = lse - sum t z with t = (1 - eps) onehot(label) + eps / C (on = 1 - eps, off = eps / C),
** or the target row (a distribution: its gradient is probs - t). A label outside 1..C (the
** Lua layer refuses them first) gives a NaN row, never a read outside the row.
** float32 rows use the vectorised expf of kernels/vmath.h (<= 2 ULP).
**
** A row of a type is a function over void * arrays and the row index i; the one loop over the
** rows calls the row of the arrays' type, both inlined into it (a call per row would cost up to
** 3% on rows of a few hundred elements). */
#define GL_ROW static inline __attribute__((always_inline)) void
#define GL_XENT_ROW(T, EXP, LOG, SFX)                                                             \
  GL_ROW xent_row_##SFX(int64_t i, int64_t C, void *loss, void *probs, const void *z,        \
                             const int64_t *lab, const void *tg, double on, double off) {         \
    const T *restrict zi = (const T *)z + i * C;                                                  \
    T *restrict pi = (T *)probs + i * C, m = zi[0], s = 0, zsum = 0;                              \
    for (int64_t c = 1; c < C; c++) m = zi[c] > m ? zi[c] : m;                                    \
    if (!isfinite(m)) m = 0; /* all -inf rows, or NaN: let the arithmetic say so */               \
    _Pragma("omp simd reduction(+:s, zsum)")                                                      \
    for (int64_t c = 0; c < C; c++) { T e = EXP(zi[c] - m); pi[c] = e; s += e; zsum += zi[c]; }   \
    const T lse = m + LOG(s), r = 1 / s;                                                          \
    _Pragma("omp simd")                                                                           \
    for (int64_t c = 0; c < C; c++) pi[c] *= r;                                                   \
    ((T *)loss)[i] = lse - xent_tz_##SFX(i, C, zi, zsum, lab, tg, on, off);                       \
  }
/* sum t z of row i: from its label (bad label: NaN) or its target row. */
#define GL_XENT_TZ(T, SFX)                                                                        \
  static inline T xent_tz_##SFX(int64_t i, int64_t C, const T *restrict zi, T zsum, const int64_t *lab, \
                                const void *tg, double on, double off) {                          \
    if (lab) return lab[i] >= 1 && lab[i] <= C ? (T)on * zi[lab[i] - 1] + (T)off * zsum : (T)NAN; \
    const T *restrict ti = (const T *)tg + i * C;                                                 \
    T acc = 0;                                                                                    \
    _Pragma("omp simd reduction(+:acc)")                                                          \
    for (int64_t c = 0; c < C; c++) acc += ti[c] * zi[c];                                         \
    return acc;                                                                                   \
  }
/* Row i of the backward: dst = (probs - t) gout[i * gstride] scale. */
#define GL_XENT_BWD_ROW(T, SFX)                                                                   \
  GL_ROW xent_bwd_row_##SFX(int64_t i, int64_t C, void *dst, const void *probs, const int64_t *lab, \
                                 const void *tg, double on, double off, const void *gout, int64_t gstride, double scale) { \
    const T k = ((const T *)gout)[i * gstride] * (T)scale, von = (T)on, voff = (T)off;            \
    const T *pi = (const T *)probs + i * C, *restrict ti = lab ? NULL : (const T *)tg + i * C;    \
    T *di = (T *)dst + i * C;                                                                     \
    const int64_t l = lab ? lab[i] : 0;                                                           \
    if (!lab) { _Pragma("omp simd") for (int64_t c = 0; c < C; c++) di[c] = (pi[c] - ti[c]) * k; } \
    else if (l >= 1 && l <= C) {                                                                  \
      _Pragma("omp simd")                                                                         \
      for (int64_t c = 0; c < C; c++) di[c] = gl_xent_grad_##SFX(pi[c], c == l - 1, von, voff, k); \
    } else {                                                                                      \
      for (int64_t c = 0; c < C; c++) di[c] = (T)NAN; /* bad label */                            \
    }                                                                                             \
  }
GL_XENT_TZ(float, f32)
GL_XENT_TZ(double, f64)
GL_XENT_ROW(float, gl_vexpf, logf, f32)
GL_XENT_ROW(double, exp, log, f64)
GL_XENT_BWD_ROW(float, f32)
GL_XENT_BWD_ROW(double, f64)

gl_status gl_cpu_xent(const gl_array *loss, const gl_array *probs, const gl_array *logits,
                      const gl_array *labels, const gl_array *target, double smoothing) {
  int64_t N = logits->shape[0], C = logits->shape[1];
  int nt = gl_cpu_team_size(N * C * 4);
  const bool f32 = logits->dtype == GL_FLOAT32;
  const int64_t *lab = DATA(const int64_t, labels);
  void *ls = DATA(void, loss), *pr = DATA(void, probs);
  const void *z = DATA(const void, logits), *tg = DATA(const void, target);
  const double on = 1 - smoothing, off = smoothing / (double)C;
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
  for (int64_t i = 0; i < N; i++) {
    if (f32) xent_row_f32(i, C, ls, pr, z, lab, tg, on, off);
    else xent_row_f64(i, C, ls, pr, z, lab, tg, on, off);
  }
  gl_cpu_team_done(nt);
  return GL_OK;
}

gl_status gl_cpu_xent_bwd(const gl_array *dst, const gl_array *probs, const gl_array *labels,
                          const gl_array *target, double smoothing, const gl_array *gout, double scale) {
  int64_t N = probs->shape[0], C = probs->shape[1];
  int64_t gs = gout->ndim == 0 ? 0 : 1;
  int nt = gl_cpu_team_size(N * C);
  const bool f32 = probs->dtype == GL_FLOAT32;
  const int64_t *lab = DATA(const int64_t, labels);
  void *d = DATA(void, dst);
  const void *pr = DATA(const void, probs), *tg = DATA(const void, target), *go = DATA(const void, gout);
  const double on = 1 - smoothing, off = smoothing / (double)C;
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
  for (int64_t i = 0; i < N; i++) {
    if (f32) xent_bwd_row_f32(i, C, d, pr, lab, tg, on, off, go, gs, scale);
    else xent_bwd_row_f64(i, C, d, pr, lab, tg, on, off, go, gs, scale);
  }
  gl_cpu_team_done(nt);
  return GL_OK;
}

/* ---- layer norm ------------------------------------------------------------------------------ */

/* One pass per row (the row stays in cache between its loops): mean, biased variance of
** the centred values, rstd, then y; rows split across the free cores. The backward per row:
** with xhat = (x - mean) rstd and gh = g w, gx = rstd (gh - mean(gh) - xhat mean(gh xhat));
** gw = sum over rows of g xhat and gb = sum of g, accumulated per thread (its slab of 'part':
** gw then gb, D each) and added up at the end (a fixed order: the same numbers at any thread
** count for a given team size). Rows are functions as above. */
#define GL_LN_ROW(T, SQRT, SFX)                                                                   \
  GL_ROW ln_row_##SFX(int64_t i, int64_t D, void *y, void *mean, void *rstd, const void *x,  \
                           const void *wv, const void *bv, double eps) {                          \
    const T *restrict xi = (const T *)x + i * D, *restrict w = wv, *restrict b = bv;              \
    T *restrict yi = (T *)y + i * D, s = 0, v = 0;                                                \
    _Pragma("omp simd reduction(+:s)")                                                            \
    for (int64_t j = 0; j < D; j++) s += xi[j];                                                   \
    const T m = s / (T)D;                                                                         \
    _Pragma("omp simd reduction(+:v)")                                                            \
    for (int64_t j = 0; j < D; j++) v += (xi[j] - m) * (xi[j] - m);                               \
    const T r = (T)1 / SQRT(v / (T)D + (T)eps);                                                   \
    ((T *)mean)[i] = m;                                                                           \
    ((T *)rstd)[i] = r;                                                                           \
    ln_apply_##SFX(D, yi, xi, m, r, w, b);                                                        \
  }
/* y = (x - m) r w + b over a row (w, b NULL: 1, 0). */
#define GL_LN_APPLY(T, SFX)                                                                       \
  static inline void ln_apply_##SFX(int64_t D, T *restrict yi, const T *restrict xi, T m, T r,    \
                                    const T *restrict w, const T *restrict b) {                   \
    if (w && b) {                                                                                 \
      _Pragma("omp simd")                                                                         \
      for (int64_t j = 0; j < D; j++) yi[j] = (xi[j] - m) * r * w[j] + b[j];                      \
    } else {                                                                                      \
      _Pragma("omp simd")                                                                         \
      for (int64_t j = 0; j < D; j++) yi[j] = (xi[j] - m) * r * (w ? w[j] : (T)1) + (b ? b[j] : (T)0); \
    }                                                                                             \
  }
/* Row i of the backward: gx, and (slab not NULL) g xhat and g added to the thread's slab. */
#define GL_LN_BWD_ROW(T, SFX)                                                                     \
  GL_ROW ln_bwd_row_##SFX(int64_t i, int64_t D, void *gx, void *slab, const void *g, const void *x, \
                               const void *mean, const void *rstd, const void *wv) {              \
    const T *restrict xi = (const T *)x + i * D, *restrict gi = (const T *)g + i * D, *restrict w = wv; \
    T *restrict dxi = (T *)gx + i * D, *restrict pw = slab, a = 0, c = 0;                         \
    const T m = ((const T *)mean)[i], r = ((const T *)rstd)[i];                                   \
    _Pragma("omp simd reduction(+:a, c)")                                                         \
    for (int64_t j = 0; j < D; j++) { T gh = gi[j] * (w ? w[j] : (T)1); a += gh; c += gh * (xi[j] - m) * r; } \
    a /= (T)D, c /= (T)D;                                                                         \
    _Pragma("omp simd")                                                                           \
    for (int64_t j = 0; j < D; j++) dxi[j] = r * (gi[j] * (w ? w[j] : (T)1) - a - (xi[j] - m) * r * c); \
    if (!pw) return;                                                                              \
    _Pragma("omp simd")                                                                           \
    for (int64_t j = 0; j < D; j++) { pw[j] += gi[j] * (xi[j] - m) * r; pw[D + j] += gi[j]; }     \
  }
/* gw, gb = the sums of the nt slabs of part. */
typedef void ln_sum_fn(int64_t D, int nt, void *gw, void *gb, const void *part);
#define GL_LN_SUM(T, SFX)                                                                         \
  static void ln_sum_##SFX(int64_t D, int nt, void *gwv, void *gbv, const void *partv) {          \
    T *gw = gwv, *gb = gbv;                                                                       \
    const T *part = partv;                                                                        \
    for (int64_t j = 0; j < D; j++) { gw[j] = 0; gb[j] = 0; }                                     \
    for (int t = 0; t < nt; t++)                                                                  \
      for (int64_t j = 0; j < D; j++) {                                                           \
        gw[j] += part[(int64_t)t * 2 * D + j];                                                    \
        gb[j] += part[(int64_t)t * 2 * D + D + j];                                                \
      }                                                                                           \
  }
#define GL_LN_FUNCTIONS(T, SQRT, SFX) \
  GL_LN_APPLY(T, SFX) GL_LN_ROW(T, SQRT, SFX) GL_LN_BWD_ROW(T, SFX) GL_LN_SUM(T, SFX)
GL_LN_FUNCTIONS(float, sqrtf, f32)
GL_LN_FUNCTIONS(double, sqrt, f64)

gl_status gl_cpu_layer_norm(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                            const gl_array *w, const gl_array *b, double eps) {
  int64_t D = x->shape[x->ndim - 1], R = x->size / D;
  int nt = gl_cpu_team_size(x->size * 4);
  const bool f32 = x->dtype == GL_FLOAT32;
  void *yd = DATA(void, y), *md = DATA(void, mean), *rd = DATA(void, rstd);
  const void *xd = DATA(const void, x), *wd = DATA(const void, w), *bd = DATA(const void, b);
#pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
  for (int64_t i = 0; i < R; i++) {
    if (f32) ln_row_f32(i, D, yd, md, rd, xd, wd, bd, eps);
    else ln_row_f64(i, D, yd, md, rd, xd, wd, bd, eps);
  }
  gl_cpu_team_done(nt);
  return GL_OK;
}

gl_status gl_cpu_layer_norm_bwd(const gl_array *gx, const gl_array *gw, const gl_array *gb, const gl_array *g,
                                const gl_array *x, const gl_array *mean, const gl_array *rstd, const gl_array *w) {
  int64_t D = x->shape[x->ndim - 1], R = x->size / D;
  int nt = gl_cpu_team_size(x->size * 4);
  size_t slab = 2 * (size_t)D * gl_dtypes[x->dtype].size;
  char *part = NULL;
  if (gw != NULL) {
    part = calloc((size_t)nt, slab);   /* zeros: a thread the team lacks adds none */
    if (part == NULL) {
      gl_cpu_team_done(nt);
      return gl_fail(GL_ENOMEM, "layer_norm_backward: out of host memory for %d x %lld partial sums", nt, (long long)D);
    }
  }
  bool f32 = x->dtype == GL_FLOAT32;
  void *gxd = DATA(void, gx);
  const void *gd = DATA(const void, g), *xd = DATA(const void, x), *md = DATA(const void, mean);
  const void *rd = DATA(const void, rstd), *wd = DATA(const void, w);
#pragma omp parallel num_threads(nt) if(nt > 1)
  {
    void *mine = part ? part + (size_t)omp_get_thread_num() * slab : NULL;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < R; i++) {
      if (f32) ln_bwd_row_f32(i, D, gxd, mine, gd, xd, md, rd, wd);
      else ln_bwd_row_f64(i, D, gxd, mine, gd, xd, md, rd, wd);
    }
  }
  if (part) {
    ln_sum_fn *sum = f32 ? ln_sum_f32 : ln_sum_f64;
    sum(D, nt, DATA(void, gw), DATA(void, gb), part);
  }
  free(part);
  gl_cpu_team_done(nt);
  return GL_OK;
}

/* ---- attention ------------------------------------------------------------------------------- */

/* FlashAttention's forward on the CPU in GEMM tiles: each tile of GL_ATT_TQ query rows walks
** the keys in blocks of GL_ATT_TK, the block's scores one BLAS GEMM (Q_t K_b^T, never the
** (L, S) matrix), an online softmax per row (the running maximum m, the running sum l of
** exp(s - m), the output tile rescaled by exp(m_old - m_new) whenever the maximum grows),
** then the output tile += P V_b, a second GEMM. Causal: keys past a row's position are
** masked, blocks past the tile's last row skipped. Tiles (batch x heads x query tiles) are
** split across the free cores, each GEMM on one thread. */
#define GL_ATT_TQ 64
#define GL_ATT_TK 64

/* Keys j0 + j with j < att_keys(...) take part in query row i0 + r (causal: key <= row). */
static inline int64_t att_keys(bool causal, int64_t i0, int64_t r, int64_t j0, int64_t nk) {
  int64_t lim = nk;
  if (causal && i0 + r + 1 - j0 < lim) lim = i0 + r + 1 - j0;
  return lim < 0 ? 0 : lim;
}

/* The tile loops below are written once over void * arrays; what depends on the element type
** (BLAS's sgemm or dgemm, the exp and log, the per-row passes) is an att_ops table per type. */
typedef struct att_ops {
  size_t size;                                            /* bytes of an element */
  /* c (m, n) = alpha op(a) op(b) + beta c, row-major, op the transpose where ta / tb */
  void (*gemm)(const gl_cpu_blas *bl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const void *a, int lda, const void *b, int ldb, double beta, void *c, int ldc);
  /* forward: row r of a key block (its scores sr, lim keys of nk taking part) into the running
  ** maximum m[r], sum l[r] and output row orow (Ev); sr becomes exp(s - m) */
  void (*online_row)(int64_t r, void *sr, int64_t lim, int64_t nk, void *orow, int64_t Ev, void *m, void *l);
  /* forward: the tile's rows start with m = -inf, l = 0; end with out /= l, lse = m + log l */
  void (*start_rows)(int64_t mq, void *m, void *l);
  void (*finish_rows)(int64_t mq, int64_t Ev, void *ot, void *lt, const void *m, const void *l);
  /* backward: d[r] = rowsum(g * out) for the rows whose lse is finite, else 0 */
  void (*dot_rows)(int64_t mq, int64_t Ev, const void *gt, const void *ot, const void *lt, void *d);
  /* backward: row r of a block: sr = P = exp(s - lse), dr = dS = scale P (dP - d[r]) */
  void (*grad_row)(int64_t r, void *sr, void *dr, int64_t lim, int64_t nk, const void *lt, const void *d,
                   double scale);
  /* backward: gk, gv of every head = the sum of the nc chunks' slabs of part */
  void (*sum_parts)(int64_t B, int64_t S, int64_t E, int64_t Ev, int64_t nc, void *gk, void *gv,
                    const void *part, int nt);
} att_ops;

/* Element i of an array of elements of 'size' bytes. */
static inline void *att_at(const void *base, int64_t i, size_t size) { return (char *)(uintptr_t)base + i * (int64_t)size; }

/* n elements of 'size' bytes set to 0 (an empty array may have no data pointer). */
static inline void att_zero(void *p, int64_t n, size_t size) {
  if (n > 0) memset(p, 0, (size_t)n * size);
}

#define GL_ATT_GEMM(T, GEMM, SFX)                                                                 \
  static void att_gemm_##SFX(const gl_cpu_blas *bl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, \
                             double alpha, const void *a, int lda, const void *b, int ldb, double beta, \
                             void *c, int ldc) {                                                  \
    bl->GEMM(GL_CBLAS_ROW_MAJOR, ta ? GL_CBLAS_TRANS : GL_CBLAS_NO_TRANS, tb ? GL_CBLAS_TRANS : GL_CBLAS_NO_TRANS, \
             (int)m, (int)n, (int)k, (T)alpha, a, lda, b, ldb, (T)beta, c, ldc);                  \
  }
#define GL_ATT_ONLINE_ROW(T, EXP, SFX)                                                            \
  static void att_online_row_##SFX(int64_t r, void *srv, int64_t lim, int64_t nk, void *orowv, int64_t Ev, \
                                   void *mv, void *lv) {                                          \
    T *sr = srv, *orow = orowv, *m = (T *)mv + r, *l = (T *)lv + r, bm = -(T)INFINITY, sum = 0;   \
    for (int64_t j = 0; j < lim; j++) bm = sr[j] > bm ? sr[j] : bm;                               \
    if (bm > *m) {                           /* rescale what was summed under the old maximum */  \
      const T f = *m == -(T)INFINITY ? 0 : EXP(*m - bm);                                          \
      _Pragma("omp simd") for (int64_t c = 0; c < Ev; c++) orow[c] *= f;                          \
      *l *= f, *m = bm;                                                                           \
    }                                                                                             \
    if (*m == -(T)INFINITY) lim = 0;                                                              \
    for (int64_t j = 0; j < lim; j++) { const T p = EXP(sr[j] - *m); sr[j] = p; sum += p; }       \
    for (int64_t j = lim; j < nk; j++) sr[j] = 0;                                                 \
    *l += sum;                                                                                    \
  }
#define GL_ATT_ROWS(T, LOG, SFX)                                                                  \
  static void att_start_rows_##SFX(int64_t mq, void *mv, void *lv) {                              \
    T *m = mv, *l = lv;                                                                           \
    for (int64_t r = 0; r < mq; r++) { m[r] = -(T)INFINITY; l[r] = 0; }                           \
  }                                                                                               \
  static void att_finish_rows_##SFX(int64_t mq, int64_t Ev, void *ot, void *ltv, const void *mv, const void *lv) { \
    T *lt = ltv;                                                                                  \
    const T *m = mv, *l = lv;                                                                     \
    for (int64_t r = 0; r < mq; r++) {                                                            \
      const T rl = 1 / l[r], *orow = (T *)ot + r * Ev; /* no key (l = 0): NaN, as softmax over nothing */ \
      _Pragma("omp simd")                                                                         \
      for (int64_t c = 0; c < Ev; c++) ((T *)orow)[c] *= rl;                                      \
      lt[r] = m[r] + LOG(l[r]);                                                                   \
    }                                                                                             \
  }
#define GL_ATT_DOT_ROWS(T, SFX)                                                                   \
  static void att_dot_rows_##SFX(int64_t mq, int64_t Ev, const void *gtv, const void *otv, const void *ltv, \
                                 void *dv) {                                                      \
    const T *gt = gtv, *ot = otv, *lt = ltv;                                                      \
    T *d = dv;                                                                                    \
    for (int64_t r = 0; r < mq; r++) {                                                            \
      T sum = 0;                                                                                  \
      if (lt[r] != -(T)INFINITY)                                                                  \
        for (int64_t x = 0; x < Ev; x++) sum += gt[r * Ev + x] * ot[r * Ev + x];                  \
      d[r] = sum;                                                                                 \
    }                                                                                             \
  }
#define GL_ATT_GRAD_ROW(T, EXP, SFX)                                                              \
  static void att_grad_row_##SFX(int64_t r, void *srv, void *drv, int64_t lim, int64_t nk, const void *ltv, \
                                 const void *dv, double scale) {                                  \
    T *sr = srv, *dr = drv;                                                                       \
    const T m = ((const T *)ltv)[r], dr0 = ((const T *)dv)[r], sc = (T)scale;                     \
    if (m == -(T)INFINITY) lim = 0;                                                               \
    for (int64_t j = 0; j < lim; j++) {                                                           \
      const T p = EXP(sr[j] - m);                                                                 \
      sr[j] = p;                                                                                  \
      dr[j] = sc * p * (dr[j] - dr0);                                                             \
    }                                                                                             \
    for (int64_t j = lim; j < nk; j++) sr[j] = dr[j] = 0;                                         \
  }
#define GL_ATT_SUM_PARTS(T, SFX)                                                                  \
  static void att_sum_parts_##SFX(int64_t B, int64_t S, int64_t E, int64_t Ev, int64_t nc, void *gkv, \
                                  void *gvv, const void *partv, int nt) {                         \
    const int64_t slab = S * (E + Ev);                                                            \
    T *gk = gkv, *gv = gvv;                                                                       \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")                       \
    for (int64_t x = 0; x < B * slab; x++) {                                                      \
      const int64_t b = x / slab, y = x - b * slab;                                               \
      const T *src = (const T *)partv + b * nc * slab + y;                                        \
      T sum = 0;                                                                                  \
      for (int64_t c = 0; c < nc; c++) sum += src[c * slab];                                      \
      if (y < S * E) gk[b * S * E + y] = sum;                                                     \
      else gv[b * S * Ev + (y - S * E)] = sum;                                                    \
    }                                                                                             \
  }
#define GL_ATT_FUNCTIONS(T, GEMM, EXP, LOG, SFX)                                                  \
  GL_ATT_GEMM(T, GEMM, SFX) GL_ATT_ONLINE_ROW(T, EXP, SFX) GL_ATT_ROWS(T, LOG, SFX)               \
  GL_ATT_DOT_ROWS(T, SFX) GL_ATT_GRAD_ROW(T, EXP, SFX) GL_ATT_SUM_PARTS(T, SFX)                   \
  static const att_ops att_ops_##SFX = { sizeof(T), att_gemm_##SFX, att_online_row_##SFX,         \
    att_start_rows_##SFX, att_finish_rows_##SFX, att_dot_rows_##SFX, att_grad_row_##SFX, att_sum_parts_##SFX };
GL_ATT_FUNCTIONS(float, sgemm, expf, logf, f32)
GL_ATT_FUNCTIONS(double, dgemm, exp, log, f64)

/* A tile's scores: s (mq, nk), rows GL_ATT_TK apart, = scale q_t k_b^T (zeros when E = 0). */
static void att_scores(const att_ops *op, const gl_cpu_blas *bl, int64_t mq, int64_t nk, int64_t E, double scale,
                       const void *qt, const void *kb, void *s) {
  if (E > 0) op->gemm(bl, false, true, mq, nk, E, scale, qt, (int)E, kb, (int)E, 0, s, GL_ATT_TK);
  else att_zero(s, mq * GL_ATT_TK, op->size);
}

/* A forward tile's scratch: the scores of a block, then the running maxima and sums. */
typedef union att_scratch {
  float f32[GL_ATT_TQ * GL_ATT_TK + 2 * GL_ATT_TQ];
  double f64[GL_ATT_TQ * GL_ATT_TK + 2 * GL_ATT_TQ];
} att_scratch;

static void att_fwd(const att_ops *op, const gl_cpu_blas *bl, int64_t B, int64_t L, int64_t S, int64_t E,
                    int64_t Ev, void *out, void *lse, const void *q, const void *k, const void *v, double scale,
                    bool causal, int nt) {
  const int64_t nq = (L + GL_ATT_TQ - 1) / GL_ATT_TQ;
  const int ldv = Ev > 0 ? (int)Ev : 1;
  const size_t sz = op->size;
#pragma omp parallel for num_threads(nt) schedule(dynamic) if(nt > 1)
  for (int64_t t = 0; t < B * nq; t++) {
    const int64_t b = t / nq, i0 = (t - b * nq) * GL_ATT_TQ;
    const int64_t mq = L - i0 < GL_ATT_TQ ? L - i0 : GL_ATT_TQ;
    const void *qt = att_at(q, (b * L + i0) * E, sz), *kb = att_at(k, b * S * E, sz), *vb = att_at(v, b * S * Ev, sz);
    void *ot = att_at(out, (b * L + i0) * Ev, sz), *lt = att_at(lse, b * L + i0, sz);
    att_scratch w;
    void *s = sz == sizeof(float) ? (void *)w.f32 : (void *)w.f64;
    void *m = att_at(s, GL_ATT_TQ * GL_ATT_TK, sz), *l = att_at(m, GL_ATT_TQ, sz);
    op->start_rows(mq, m, l);
    att_zero(ot, mq * Ev, sz);
    const int64_t send = causal ? (i0 + mq < S ? i0 + mq : S) : S;
    for (int64_t j0 = 0; j0 < send; j0 += GL_ATT_TK) {
      const int64_t nk = send - j0 < GL_ATT_TK ? send - j0 : GL_ATT_TK;
      att_scores(op, bl, mq, nk, E, scale, qt, att_at(kb, j0 * E, sz), s);
      for (int64_t r = 0; r < mq; r++)
        op->online_row(r, att_at(s, r * GL_ATT_TK, sz), att_keys(causal, i0, r, j0, nk), nk, att_at(ot, r * Ev, sz),
                       Ev, m, l);
      if (Ev > 0) op->gemm(bl, false, false, mq, Ev, nk, 1, s, GL_ATT_TK, att_at(vb, j0 * Ev, sz), ldv, 1, ot, ldv);
    }
    op->finish_rows(mq, Ev, ot, lt, m, l);
  }
}

/* What both directions check first: a dtype the kernels have (the ops layer runs half dtypes
** in float32 when told GL_ENOTSUP), rows BLAS can take; the BLAS itself. */
static gl_status att_prepare(const char *op, const gl_array *q, int64_t E, int64_t Ev, const gl_cpu_blas **bl) {
  if (q->dtype != GL_FLOAT32 && q->dtype != GL_FLOAT64)
    return gl_fail(GL_ENOTSUP, "%s of %s is not supported on the cpu", op, gl_dtypes[q->dtype].name);
  if (E > INT_MAX || Ev > INT_MAX)
    return gl_fail(GL_ETOOBIG, "%s: rows of %lld and %lld elements are more than BLAS takes", op, (long long)E,
                   (long long)Ev);
  return gl_cpu_blas_get(bl);
}

gl_status gl_cpu_attention(const gl_array *out, const gl_array *lse, const gl_array *q, const gl_array *k,
                           const gl_array *v, double scale, bool causal) {
  int nd = q->ndim;
  int64_t L = q->shape[nd - 2], E = q->shape[nd - 1], S = k->shape[nd - 2], Ev = v->shape[nd - 1];
  int64_t B = L > 0 ? q->size / (L * (E > 0 ? E : 1)) : 0;
  if (E == 0) B = lse->size / (L > 0 ? L : 1);
  const gl_cpu_blas *bl;
  GL_TRY(att_prepare("attention", q, E, Ev, &bl));
  int nt = gl_cpu_team_size(B * L * S * (E + Ev) * 2);
  gl_cpu_blas_threads(bl, 1);                            /* each tile's GEMMs on its own thread */
  const att_ops *op = q->dtype == GL_FLOAT32 ? &att_ops_f32 : &att_ops_f64;
  double sc = q->dtype == GL_FLOAT32 ? (double)(float)scale : scale;   /* the scale in the arrays' precision */
  att_fwd(op, bl, B, L, S, E, Ev, DATA(void, out), DATA(void, lse), DATA(const void, q), DATA(const void, k),
          DATA(const void, v), sc, causal, nt);
  gl_cpu_team_done(nt);
  return GL_OK;
}

/* FlashAttention-2's backward in the same GEMM tiles. Per query tile (rows i) and key block
** (keys j): S = Q_i K_j^T * scale (GEMM), P = exp(S - lse) (the forward's logsumexp: no
** softmax pass), gv_j += P^T G_i (GEMM), dP = G_i V_j^T (GEMM), dS = scale * P * (dP - D)
** with D = rowsum(G * out) per row, gq_i += dS K_j (GEMM), gk_j += dS^T Q_i (GEMM). Only
** one (64, 64) block of P and one of dS exist at a time.
**
** Work units are (head b, query chunk c): chunk c of a head takes its query tiles c, c +
** nc, c + 2 nc, ... (interleaved, so causal chunks get equal work). A unit writes its rows
** of gq alone; gk and gv of a head get contributions from every chunk, so with nc > 1 each
** unit sums into its own slab of 'part' ((S, E) then (S, Ev)), added up after the parallel
** region; with nc = 1 (heads enough for the team) straight into gk and gv. A row whose lse
** is -inf (no key) has P = dS = 0 and D = 0, so a NaN in its out cannot leak in. 'work'
** holds each thread's two blocks and D. */
static void att_bwd(const att_ops *op, const gl_cpu_blas *bl, int64_t B, int64_t L, int64_t S, int64_t E,
                    int64_t Ev, void *gq, void *gk, void *gv, const void *g, const void *q, const void *k,
                    const void *v, const void *out, const void *lse, double scale, bool causal, int64_t nc,
                    void *part, void *work, int nt) {
  const int64_t nq = (L + GL_ATT_TQ - 1) / GL_ATT_TQ, slab = S * (E + Ev);
  const int lde = E > 0 ? (int)E : 1, ldv = (int)Ev;
  const size_t sz = op->size;
#pragma omp parallel for num_threads(nt) schedule(dynamic) if(nt > 1)
  for (int64_t u = 0; u < B * nc; u++) {
    const int64_t b = u / nc, c = u - b * nc;
    void *s = att_at(work, (int64_t)omp_get_thread_num() * (2 * GL_ATT_TQ * GL_ATT_TK + GL_ATT_TQ), sz);
    void *dp = att_at(s, GL_ATT_TQ * GL_ATT_TK, sz), *d = att_at(dp, GL_ATT_TQ * GL_ATT_TK, sz);
    const void *kb = att_at(k, b * S * E, sz), *vb = att_at(v, b * S * Ev, sz);
    void *gkb = nc > 1 ? att_at(part, u * slab, sz) : att_at(gk, b * S * E, sz);
    void *gvb = nc > 1 ? att_at(part, u * slab + S * E, sz) : att_at(gv, b * S * Ev, sz);
    att_zero(gkb, S * E, sz);
    att_zero(gvb, S * Ev, sz);
    for (int64_t it = c; it < nq && !gl_interrupted(); it += nc) {
      const int64_t i0 = it * GL_ATT_TQ, mq = L - i0 < GL_ATT_TQ ? L - i0 : GL_ATT_TQ;
      const void *qt = att_at(q, (b * L + i0) * E, sz), *gt = att_at(g, (b * L + i0) * Ev, sz);
      const void *ot = att_at(out, (b * L + i0) * Ev, sz), *lt = att_at(lse, b * L + i0, sz);
      void *gqt = att_at(gq, (b * L + i0) * E, sz);
      att_zero(gqt, mq * E, sz);
      op->dot_rows(mq, Ev, gt, ot, lt, d);
      const int64_t send = causal ? (i0 + mq < S ? i0 + mq : S) : S;
      for (int64_t j0 = 0; j0 < send; j0 += GL_ATT_TK) {
        const int64_t nk = send - j0 < GL_ATT_TK ? send - j0 : GL_ATT_TK;
        att_scores(op, bl, mq, nk, E, scale, qt, att_at(kb, j0 * E, sz), s);
        op->gemm(bl, false, true, mq, nk, Ev, 1, gt, ldv, att_at(vb, j0 * Ev, sz), ldv, 0, dp, GL_ATT_TK);
        for (int64_t r = 0; r < mq; r++)
          op->grad_row(r, att_at(s, r * GL_ATT_TK, sz), att_at(dp, r * GL_ATT_TK, sz), att_keys(causal, i0, r, j0, nk),
                       nk, lt, d, scale);
        op->gemm(bl, true, false, nk, Ev, mq, 1, s, GL_ATT_TK, gt, ldv, 1, att_at(gvb, j0 * Ev, sz), ldv);
        if (E > 0) {
          op->gemm(bl, false, false, mq, E, nk, 1, dp, GL_ATT_TK, att_at(kb, j0 * E, sz), lde, 1, gqt, lde);
          op->gemm(bl, true, false, nk, E, mq, 1, dp, GL_ATT_TK, qt, lde, 1, att_at(gkb, j0 * E, sz), lde);
        }
      }
    }
  }
  if (nc > 1) op->sum_parts(B, S, E, Ev, nc, gk, gv, part, nt);
}

gl_status gl_cpu_attention_bwd(const gl_array *gq, const gl_array *gk, const gl_array *gv, const gl_array *g,
                               const gl_array *q, const gl_array *k, const gl_array *v, const gl_array *out,
                               const gl_array *lse, double scale, bool causal) {
  int nd = q->ndim;
  int64_t L = q->shape[nd - 2], E = q->shape[nd - 1], S = k->shape[nd - 2], Ev = v->shape[nd - 1];
  int64_t B = lse->size / L;                   /* the ops layer calls with L, S, Ev > 0 */
  const gl_cpu_blas *bl;
  GL_TRY(att_prepare("attention_backward", q, E, Ev, &bl));
  int nt = gl_cpu_team_size(B * L * S * (E + Ev) * 4);
  /* query chunks per head: enough units for two rounds of the team, at most one per tile */
  int64_t nq = (L + GL_ATT_TQ - 1) / GL_ATT_TQ, nc = 1;
  if (B < 2 * (int64_t)nt) nc = (2 * (int64_t)nt + B - 1) / B;
  if (nc > nq) nc = nq;
  if (nt == 1) nc = 1;
  /* scratch from the caching allocator: the slabs can be megabytes, fresh pages are slow */
  gl_device dev = gl_array_device(q);
  size_t isz = gl_array_itemsize(q);
  size_t wbytes = (size_t)nt * (2 * GL_ATT_TQ * GL_ATT_TK + GL_ATT_TQ) * isz;
  size_t pbytes = nc > 1 ? (size_t)(B * nc) * (size_t)(S * (E + Ev)) * isz : 0;
  void *work = NULL, *part = NULL;
  GL_TRY(gl_cpu_alloc(dev, wbytes, &work));
  if (pbytes > 0) {
    gl_status st = gl_cpu_alloc(dev, pbytes, &part);
    if (st != GL_OK) {
      gl_cpu_free(dev, work, wbytes);
      return st;
    }
  }
  gl_cpu_blas_threads(bl, 1);                            /* each unit's GEMMs on its own thread */
  const att_ops *op = q->dtype == GL_FLOAT32 ? &att_ops_f32 : &att_ops_f64;
  double sc = q->dtype == GL_FLOAT32 ? (double)(float)scale : scale;   /* the scale in the arrays' precision */
  att_bwd(op, bl, B, L, S, E, Ev, DATA(void, gq), DATA(void, gk), DATA(void, gv), DATA(const void, g),
          DATA(const void, q), DATA(const void, k), DATA(const void, v), DATA(const void, out),
          DATA(const void, lse), sc, causal, nc, part, work, nt);
  gl_cpu_free(dev, work, wbytes);
  if (part != NULL) gl_cpu_free(dev, part, pbytes);
  gl_cpu_team_done(nt);
  return gl_interrupt_check();
}
