/*
** cpu_fused.c — the fused kernels of gpu.fused on the CPU: optimizer steps in one pass over
** each parameter (kernels/nn.h's element steps, in the parameter's precision: SGD, Adam,
** RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam), softmax
** cross-entropy forward (loss and probabilities per row, max-shifted) and backward, and
** layer norm over the last axis forward and backward.
** Rows and elements are split across the free cores above 32768 elements.
*/
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <omp.h>
#include "cpu.h"
#include "../../../kernels/vmath.h"
#include "../../../kernels/nn.h"

/* ---- optimizer steps ------------------------------------------------------------------------ */

/* One loop per (rule, type) over kernels/nn.h's element step; the constants are private to
** each thread (shared, they are read through a pointer that the stores may alias). */
#define GL_OPTIM_STAMP(T, SFX)                                                                    \
  static void sgd_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict buf,            \
                        const gl_optim_hp *hp, int nt) {                                           \
    const gl_optim_k_##SFX k = gl_optim_consts_##SFX(hp);                                          \
    const int first = hp->first, nesterov = hp->nesterov;                                          \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)")   \
    for (int64_t i = 0; i < n; i++)                                                                \
      p[i] = gl_sgd_##SFX(p[i], g[i], buf ? buf + i : NULL, first, nesterov, k);                   \
  }                                                                                                \
  static void adam_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict m,             \
                         T *restrict v, T *restrict vmax, const gl_optim_hp *hp, int nt) {         \
    const gl_optim_k_##SFX k = gl_optim_consts_##SFX(hp);                                          \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)")   \
    for (int64_t i = 0; i < n; i++)                                                                \
      p[i] = gl_adam_##SFX(p[i], g[i], m + i, v + i, vmax ? vmax + i : NULL, k);                   \
  }                                                                                                \
  static void rmsprop_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict sq,         \
                            T *restrict buf, T *restrict ga, const gl_optim_hp *hp, int nt) {      \
    const gl_optim_k_##SFX k = gl_optim_consts_##SFX(hp);                                          \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)")   \
    for (int64_t i = 0; i < n; i++)                                                                \
      p[i] = gl_rmsprop_##SFX(p[i], g[i], sq + i, buf ? buf + i : NULL, ga ? ga + i : NULL, k);   \
  }                                                                                                \
  static void adagrad_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict sum,        \
                            const gl_optim_hp *hp, int nt) {                                       \
    const gl_optim_k_##SFX k = gl_optim_consts_##SFX(hp);                                          \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)")   \
    for (int64_t i = 0; i < n; i++)                                                                \
      p[i] = gl_adagrad_##SFX(p[i], g[i], sum + i, k);                                             \
  }                                                                                                \
  /* Adadelta, Adamax, NAdam: two state arrays each. */                                           \
  static void adadelta_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict sq,        \
                             T *restrict acc, const gl_optim_hp *hp, int nt) {                     \
    const gl_optim_k_##SFX k = gl_optim_consts_##SFX(hp);                                          \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)")   \
    for (int64_t i = 0; i < n; i++)                                                                \
      p[i] = gl_adadelta_##SFX(p[i], g[i], sq + i, acc + i, k);                                    \
  }                                                                                                \
  static void adamax_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict m,           \
                           T *restrict u, const gl_optim_hp *hp, int nt) {                         \
    const gl_optim_k_##SFX k = gl_optim_consts_##SFX(hp);                                          \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)")   \
    for (int64_t i = 0; i < n; i++)                                                                \
      p[i] = gl_adamax_##SFX(p[i], g[i], m + i, u + i, k);                                         \
  }                                                                                                \
  static void nadam_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict m,            \
                          T *restrict v, const gl_optim_hp *hp, int nt) {                          \
    const gl_optim_k_##SFX k = gl_optim_consts_##SFX(hp);                                          \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)")   \
    for (int64_t i = 0; i < n; i++)                                                                \
      p[i] = gl_nadam_##SFX(p[i], g[i], m + i, v + i, k);                                          \
  }                                                                                                \
  /* RAdam: one loop per branch (the branch is the step's, not the element's). */                 \
  static void radam_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict m,            \
                          T *restrict v, const gl_optim_hp *hp, int nt) {                          \
    const gl_optim_k_##SFX k = gl_optim_consts_##SFX(hp);                                          \
    if (hp->rectify) {                                                                             \
      _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)") \
      for (int64_t i = 0; i < n; i++) p[i] = gl_radam_##SFX(p[i], g[i], m + i, v + i, 1, k);       \
    } else {                                                                                       \
      _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1) firstprivate(k)") \
      for (int64_t i = 0; i < n; i++) p[i] = gl_radam_##SFX(p[i], g[i], m + i, v + i, 0, k);       \
    }                                                                                              \
  }

GL_OPTIM_STAMP(float, f32)
GL_OPTIM_STAMP(double, f64)
#undef GL_OPTIM_STAMP

#define DATA(T, a) ((a) ? (T *)gl_array_data(a) : NULL)

gl_status gl_cpu_optim_step(gl_optim_kind kind, const gl_array *p, const gl_array *g,
                            const gl_array *const st[3], const gl_optim_hp *hp) {
  int64_t n = p->size;
  int nt = gl_cpu_team_size(n);
  if (p->dtype == GL_FLOAT32) {
    float *pp = DATA(float, p), *s0 = DATA(float, st[0]), *s1 = DATA(float, st[1]), *s2 = DATA(float, st[2]);
    const float *gg = DATA(float, g);
    switch (kind) {
      case GL_OPTIM_SGD: sgd_f32(n, pp, gg, s0, hp, nt); break;
      case GL_OPTIM_ADAM: adam_f32(n, pp, gg, s0, s1, s2, hp, nt); break;
      case GL_OPTIM_RMSPROP: rmsprop_f32(n, pp, gg, s0, s1, s2, hp, nt); break;
      case GL_OPTIM_ADAGRAD: adagrad_f32(n, pp, gg, s0, hp, nt); break;
      case GL_OPTIM_ADADELTA: adadelta_f32(n, pp, gg, s0, s1, hp, nt); break;
      case GL_OPTIM_ADAMAX: adamax_f32(n, pp, gg, s0, s1, hp, nt); break;
      case GL_OPTIM_NADAM: nadam_f32(n, pp, gg, s0, s1, hp, nt); break;
      case GL_OPTIM_RADAM: radam_f32(n, pp, gg, s0, s1, hp, nt); break;
    }
  } else {
    double *pp = DATA(double, p), *s0 = DATA(double, st[0]), *s1 = DATA(double, st[1]), *s2 = DATA(double, st[2]);
    const double *gg = DATA(double, g);
    switch (kind) {
      case GL_OPTIM_SGD: sgd_f64(n, pp, gg, s0, hp, nt); break;
      case GL_OPTIM_ADAM: adam_f64(n, pp, gg, s0, s1, s2, hp, nt); break;
      case GL_OPTIM_RMSPROP: rmsprop_f64(n, pp, gg, s0, s1, s2, hp, nt); break;
      case GL_OPTIM_ADAGRAD: adagrad_f64(n, pp, gg, s0, hp, nt); break;
      case GL_OPTIM_ADADELTA: adadelta_f64(n, pp, gg, s0, s1, hp, nt); break;
      case GL_OPTIM_ADAMAX: adamax_f64(n, pp, gg, s0, s1, hp, nt); break;
      case GL_OPTIM_NADAM: nadam_f64(n, pp, gg, s0, s1, hp, nt); break;
      case GL_OPTIM_RADAM: radam_f64(n, pp, gg, s0, s1, hp, nt); break;
    }
  }
  gl_cpu_team_done(nt);
  return GL_OK;
}

/* ---- softmax cross-entropy ------------------------------------------------------------------ */

/* Per row i of z (C wide): m = max, s = sum exp(z - m), lse = m + log s; probs = exp(z - lse);
** loss = lse - sum t z with t = (1 - eps) onehot(label) + eps / C, or the target row (a
** distribution: its gradient is probs - t). A label outside 1..C (the Lua layer refuses
** them first) gives a NaN row, never a read outside the row.
** float32 rows use the vectorised expf of kernels/vmath.h (<= 2 ULP). */
#define GL_XENT_STAMP(T, EXP, LOG, SFX)                                                           \
  static void xent_##SFX(int64_t N, int64_t C, T *restrict loss, T *restrict probs,               \
                         const T *restrict z, const int64_t *restrict lab, const T *restrict tg,  \
                         double smoothing, int nt) {                                              \
    const T on = (T)(1 - smoothing), off = (T)(smoothing / (double)C);                            \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")                       \
    for (int64_t i = 0; i < N; i++) {                                                             \
      const T *zi = z + i * C;                                                                    \
      T *pi = probs + i * C;                                                                      \
      T m = zi[0];                                                                                \
      for (int64_t c = 1; c < C; c++) m = zi[c] > m ? zi[c] : m;                                  \
      if (!isfinite(m)) m = 0; /* all -inf rows, or NaN: let the arithmetic say so */             \
      T s = 0, zsum = 0;                                                                          \
      _Pragma("omp simd reduction(+:s, zsum)")                                                    \
      for (int64_t c = 0; c < C; c++) {                                                           \
        T e = EXP(zi[c] - m);                                                                     \
        pi[c] = e;                                                                                \
        s += e;                                                                                   \
        zsum += zi[c];                                                                            \
      }                                                                                           \
      T lse = m + LOG(s), r = 1 / s;                                                              \
      _Pragma("omp simd")                                                                         \
      for (int64_t c = 0; c < C; c++) pi[c] *= r;                                                 \
      T tz;                                                                                       \
      if (lab) {                                                                                  \
        int64_t l = lab[i];                                                                       \
        tz = l >= 1 && l <= C ? on * zi[l - 1] + off * zsum : (T)NAN; /* bad label: NaN */        \
      } else {                                                                                    \
        const T *ti = tg + i * C;                                                                 \
        T acc = 0;                                                                                \
        _Pragma("omp simd reduction(+:acc)")                                                      \
        for (int64_t c = 0; c < C; c++) acc += ti[c] * zi[c];                                     \
        tz = acc;                                                                                 \
      }                                                                                           \
      loss[i] = lse - tz;                                                                         \
    }                                                                                             \
  }                                                                                               \
  static void xent_bwd_##SFX(int64_t N, int64_t C, T *dst, const T *p, const int64_t *restrict lab, \
                             const T *restrict tg, double smoothing, const T *restrict gout,      \
                             int64_t gstride, double scale, int nt) {                             \
    const T on = (T)(1 - smoothing), off = (T)(smoothing / (double)C);                            \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")                       \
    for (int64_t i = 0; i < N; i++) {                                                             \
      const T k = gout[i * gstride] * (T)scale;                                                   \
      const T *pi = p + i * C;                                                                    \
      T *di = dst + i * C;                                                                        \
      if (lab) {                                                                                  \
        int64_t l = lab[i];                                                                       \
        if (l >= 1 && l <= C) {                                                                   \
          _Pragma("omp simd")                                                                     \
          for (int64_t c = 0; c < C; c++) di[c] = gl_xent_grad_##SFX(pi[c], c == l - 1, on, off, k); \
        } else {                                                                                  \
          for (int64_t c = 0; c < C; c++) di[c] = (T)NAN;                                         \
        }                                                                                         \
      } else {                                                                                    \
        const T *ti = tg + i * C;                                                                 \
        _Pragma("omp simd")                                                                       \
        for (int64_t c = 0; c < C; c++) di[c] = (pi[c] - ti[c]) * k;                              \
      }                                                                                           \
    }                                                                                             \
  }

GL_XENT_STAMP(float, gl_vexpf, logf, f32)
GL_XENT_STAMP(double, exp, log, f64)
#undef GL_XENT_STAMP

gl_status gl_cpu_xent(const gl_array *loss, const gl_array *probs, const gl_array *logits,
                      const gl_array *labels, const gl_array *target, double smoothing) {
  int64_t N = logits->shape[0], C = logits->shape[1];
  int nt = gl_cpu_team_size(N * C * 4);
  const int64_t *lab = DATA(const int64_t, labels);
  if (logits->dtype == GL_FLOAT32)
    xent_f32(N, C, DATA(float, loss), DATA(float, probs), DATA(const float, logits), lab,
             DATA(const float, target), smoothing, nt);
  else
    xent_f64(N, C, DATA(double, loss), DATA(double, probs), DATA(const double, logits), lab,
             DATA(const double, target), smoothing, nt);
  gl_cpu_team_done(nt);
  return GL_OK;
}

gl_status gl_cpu_xent_bwd(const gl_array *dst, const gl_array *probs, const gl_array *labels,
                          const gl_array *target, double smoothing, const gl_array *gout, double scale) {
  int64_t N = probs->shape[0], C = probs->shape[1];
  int64_t gs = gout->ndim == 0 ? 0 : 1;
  int nt = gl_cpu_team_size(N * C);
  const int64_t *lab = DATA(const int64_t, labels);
  if (probs->dtype == GL_FLOAT32)
    xent_bwd_f32(N, C, DATA(float, dst), DATA(const float, probs), lab, DATA(const float, target), smoothing,
                 DATA(const float, gout), gs, scale, nt);
  else
    xent_bwd_f64(N, C, DATA(double, dst), DATA(const double, probs), lab, DATA(const double, target), smoothing,
                 DATA(const double, gout), gs, scale, nt);
  gl_cpu_team_done(nt);
  return GL_OK;
}

/* ---- layer norm ------------------------------------------------------------------------------ */

/* One pass per row (the row stays in cache between its loops): mean, biased variance of
** the centred values, rstd, then y; rows split across the free cores. The backward per row:
** with xhat = (x - mean) rstd and gh = g w, gx = rstd (gh - mean(gh) - xhat mean(gh xhat));
** gw = sum over rows of g xhat and gb = sum of g, accumulated per thread in blocks of rows
** and added up at the end (a fixed order: the same numbers at any thread count for a
** given team size). */
#define GL_LN_STAMP(T, SQRT, SFX)                                                                 \
  static void ln_##SFX(int64_t R, int64_t D, T *restrict y, T *restrict mean, T *restrict rstd,   \
                       const T *restrict x, const T *restrict w, const T *restrict b, double eps, \
                       int nt) {                                                                  \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")                       \
    for (int64_t i = 0; i < R; i++) {                                                             \
      const T *xi = x + i * D;                                                                    \
      T *yi = y + i * D;                                                                          \
      T s = 0;                                                                                    \
      _Pragma("omp simd reduction(+:s)")                                                          \
      for (int64_t j = 0; j < D; j++) s += xi[j];                                                 \
      const T m = s / (T)D;                                                                       \
      T v = 0;                                                                                    \
      _Pragma("omp simd reduction(+:v)")                                                          \
      for (int64_t j = 0; j < D; j++) v += (xi[j] - m) * (xi[j] - m);                             \
      const T r = (T)1 / SQRT(v / (T)D + (T)eps);                                                 \
      mean[i] = m;                                                                                \
      rstd[i] = r;                                                                                \
      if (w && b) {                                                                               \
        _Pragma("omp simd")                                                                       \
        for (int64_t j = 0; j < D; j++) yi[j] = (xi[j] - m) * r * w[j] + b[j];                    \
      } else {                                                                                    \
        _Pragma("omp simd")                                                                       \
        for (int64_t j = 0; j < D; j++) yi[j] = (xi[j] - m) * r * (w ? w[j] : (T)1) + (b ? b[j] : (T)0); \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  static void ln_bwd_##SFX(int64_t R, int64_t D, T *restrict gx, T *restrict gw, T *restrict gb,  \
                           const T *restrict g, const T *restrict x, const T *restrict mean,      \
                           const T *restrict rstd, const T *restrict w, T *restrict part, int nt) { \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                            \
    {                                                                                             \
      const int t = omp_get_thread_num();                                                         \
      T *pw = part ? part + (int64_t)t * 2 * D : NULL, *pb = pw ? pw + D : NULL;                  \
      _Pragma("omp for schedule(static)")                                                         \
      for (int64_t i = 0; i < R; i++) {                                                           \
        const T *xi = x + i * D, *gi = g + i * D;                                                 \
        T *dxi = gx + i * D;                                                                      \
        const T m = mean[i], r = rstd[i];                                                         \
        T a = 0, c = 0;                                                                           \
        _Pragma("omp simd reduction(+:a, c)")                                                     \
        for (int64_t j = 0; j < D; j++) {                                                         \
          T gh = gi[j] * (w ? w[j] : (T)1);                                                       \
          a += gh;                                                                                \
          c += gh * (xi[j] - m) * r;                                                              \
        }                                                                                         \
        a /= (T)D;                                                                                \
        c /= (T)D;                                                                                \
        _Pragma("omp simd")                                                                       \
        for (int64_t j = 0; j < D; j++) {                                                         \
          T xh = (xi[j] - m) * r;                                                                 \
          dxi[j] = r * (gi[j] * (w ? w[j] : (T)1) - a - xh * c);                                  \
        }                                                                                         \
        if (pw) {                                                                                 \
          _Pragma("omp simd")                                                                     \
          for (int64_t j = 0; j < D; j++) {                                                       \
            pw[j] += gi[j] * (xi[j] - m) * r;                                                     \
            pb[j] += gi[j];                                                                       \
          }                                                                                       \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    if (part) {                                                                                   \
      for (int64_t j = 0; j < D; j++) { gw[j] = 0; gb[j] = 0; }                                   \
      for (int t = 0; t < nt; t++)                                                                \
        for (int64_t j = 0; j < D; j++) {                                                         \
          gw[j] += part[(int64_t)t * 2 * D + j];                                                  \
          gb[j] += part[(int64_t)t * 2 * D + D + j];                                              \
        }                                                                                         \
    }                                                                                             \
  }

GL_LN_STAMP(float, sqrtf, f32)
GL_LN_STAMP(double, sqrt, f64)
#undef GL_LN_STAMP

gl_status gl_cpu_layer_norm(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                            const gl_array *w, const gl_array *b, double eps) {
  int64_t D = x->shape[x->ndim - 1], R = x->size / D;
  int nt = gl_cpu_team_size(x->size * 4);
  if (x->dtype == GL_FLOAT32)
    ln_f32(R, D, DATA(float, y), DATA(float, mean), DATA(float, rstd), DATA(const float, x), DATA(const float, w),
           DATA(const float, b), eps, nt);
  else
    ln_f64(R, D, DATA(double, y), DATA(double, mean), DATA(double, rstd), DATA(const double, x),
           DATA(const double, w), DATA(const double, b), eps, nt);
  gl_cpu_team_done(nt);
  return GL_OK;
}

gl_status gl_cpu_layer_norm_bwd(const gl_array *gx, const gl_array *gw, const gl_array *gb, const gl_array *g,
                                const gl_array *x, const gl_array *mean, const gl_array *rstd, const gl_array *w) {
  int64_t D = x->shape[x->ndim - 1], R = x->size / D;
  int nt = gl_cpu_team_size(x->size * 4);
  void *part = NULL;
  if (gw != NULL) {
    part = calloc((size_t)nt * 2 * (size_t)D, gl_dtypes[x->dtype].size);   /* zeros: a thread the team lacks adds none */
    if (part == NULL) {
      gl_cpu_team_done(nt);
      return gl_fail(GL_ENOMEM, "layer_norm_backward: out of host memory for %d x %lld partial sums", nt, (long long)D);
    }
  }
  if (x->dtype == GL_FLOAT32)
    ln_bwd_f32(R, D, DATA(float, gx), DATA(float, gw), DATA(float, gb), DATA(const float, g), DATA(const float, x),
               DATA(const float, mean), DATA(const float, rstd), DATA(const float, w), (float *)part, nt);
  else
    ln_bwd_f64(R, D, DATA(double, gx), DATA(double, gw), DATA(double, gb), DATA(const double, g),
               DATA(const double, x), DATA(const double, mean), DATA(const double, rstd), DATA(const double, w),
               (double *)part, nt);
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

/* A tile's scores: s (mq, nk), rows GL_ATT_TK apart, = scale q_t k_b^T (zeros when E = 0). */
#define GL_ATT_SCORES_STAMP(T, GEMM, SFX)                                                         \
  static inline void att_scores_##SFX(const gl_cpu_blas *bl, int64_t mq, int64_t nk, int64_t E,  \
                                      T scale, const T *qt, const T *kb, T *s) {                  \
    if (E > 0)                                                                                    \
      bl->GEMM(GL_CBLAS_ROW_MAJOR, GL_CBLAS_NO_TRANS, GL_CBLAS_TRANS, (int)mq, (int)nk, (int)E,   \
               scale, qt, (int)E, kb, (int)E, 0, s, GL_ATT_TK);                                   \
    else                                                                                          \
      for (int64_t c = 0; c < mq * GL_ATT_TK; c++) s[c] = 0;                                      \
  }
GL_ATT_SCORES_STAMP(float, sgemm, f32)
GL_ATT_SCORES_STAMP(double, dgemm, f64)
#undef GL_ATT_SCORES_STAMP

#define GL_ATT_STAMP(T, GEMM, EXP, LOG, SFX)                                                      \
  static void att_##SFX(const gl_cpu_blas *bl, int64_t B, int64_t L, int64_t S, int64_t E,        \
                        int64_t Ev, T *restrict out, T *restrict lse, const T *q, const T *k,     \
                        const T *v, T scale, bool causal, int nt) {                               \
    const int64_t nq = (L + GL_ATT_TQ - 1) / GL_ATT_TQ;                                           \
    const int ldv = Ev > 0 ? (int)Ev : 1;                                                         \
    _Pragma("omp parallel for num_threads(nt) schedule(dynamic) if(nt > 1)")                      \
    for (int64_t t = 0; t < B * nq; t++) {                                                        \
      const int64_t b = t / nq, i0 = (t - b * nq) * GL_ATT_TQ;                                    \
      const int64_t mq = L - i0 < GL_ATT_TQ ? L - i0 : GL_ATT_TQ;                                 \
      const T *qt = q + (b * L + i0) * E, *kb = k + b * S * E, *vb = v + b * S * Ev;              \
      T *ot = out + (b * L + i0) * Ev, *lt = lse + b * L + i0;                                    \
      T s[GL_ATT_TQ * GL_ATT_TK], m[GL_ATT_TQ], l[GL_ATT_TQ];                                     \
      for (int64_t r = 0; r < mq; r++) { m[r] = -(T)INFINITY; l[r] = 0; }                         \
      for (int64_t c = 0; c < mq * Ev; c++) ot[c] = 0;                                            \
      const int64_t send = causal ? (i0 + mq < S ? i0 + mq : S) : S;                              \
      for (int64_t j0 = 0; j0 < send; j0 += GL_ATT_TK) {                                          \
        const int64_t nk = send - j0 < GL_ATT_TK ? send - j0 : GL_ATT_TK;                         \
        att_scores_##SFX(bl, mq, nk, E, scale, qt, kb + j0 * E, s);                               \
        for (int64_t r = 0; r < mq; r++) {                                                        \
          T *sr = s + r * GL_ATT_TK, *orow = ot + r * Ev;                                         \
          int64_t lim = att_keys(causal, i0, r, j0, nk);                                          \
          T bm = -(T)INFINITY;                                                                    \
          for (int64_t j = 0; j < lim; j++) bm = sr[j] > bm ? sr[j] : bm;                         \
          if (bm > m[r]) {                 /* rescale what was summed under the old maximum */    \
            const T f = m[r] == -(T)INFINITY ? 0 : EXP(m[r] - bm);                                \
            l[r] *= f;                                                                            \
            _Pragma("omp simd")                                                                   \
            for (int64_t c = 0; c < Ev; c++) orow[c] *= f;                                        \
            m[r] = bm;                                                                            \
          }                                                                                       \
          T sum = 0;                                                                              \
          if (m[r] == -(T)INFINITY) lim = 0;                                                      \
          for (int64_t j = 0; j < lim; j++) {                                                     \
            const T p = EXP(sr[j] - m[r]);                                                        \
            sr[j] = p;                                                                            \
            sum += p;                                                                             \
          }                                                                                       \
          for (int64_t j = lim; j < nk; j++) sr[j] = 0;                                           \
          l[r] += sum;                                                                            \
        }                                                                                         \
        if (Ev > 0)                                                                               \
          bl->GEMM(GL_CBLAS_ROW_MAJOR, GL_CBLAS_NO_TRANS, GL_CBLAS_NO_TRANS, (int)mq, (int)Ev, (int)nk, \
                   1, s, GL_ATT_TK, vb + j0 * Ev, ldv, 1, ot, ldv);                               \
      }                                                                                           \
      for (int64_t r = 0; r < mq; r++) {                                                          \
        const T rl = 1 / l[r];             /* no key (l = 0): NaN, as softmax over nothing */     \
        T *orow = ot + r * Ev;                                                                    \
        _Pragma("omp simd")                                                                       \
        for (int64_t c = 0; c < Ev; c++) orow[c] *= rl;                                           \
        lt[r] = m[r] + LOG(l[r]);                                                                 \
      }                                                                                           \
    }                                                                                             \
  }

GL_ATT_STAMP(float, sgemm, expf, logf, f32)
GL_ATT_STAMP(double, dgemm, exp, log, f64)
#undef GL_ATT_STAMP

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
  if (q->dtype == GL_FLOAT32)
    att_f32(bl, B, L, S, E, Ev, DATA(float, out), DATA(float, lse), DATA(const float, q), DATA(const float, k),
            DATA(const float, v), (float)scale, causal, nt);
  else
    att_f64(bl, B, L, S, E, Ev, DATA(double, out), DATA(double, lse), DATA(const double, q), DATA(const double, k),
            DATA(const double, v), scale, causal, nt);
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
#define GL_ATT_BWD_STAMP(T, GEMM, EXP, SFX)                                                       \
  static void att_bwd_##SFX(const gl_cpu_blas *bl, int64_t B, int64_t L, int64_t S, int64_t E,    \
                            int64_t Ev, T *gq, T *gk, T *gv, const T *g, const T *q, const T *k,  \
                            const T *v, const T *out, const T *lse, T scale, bool causal,         \
                            int64_t nc, T *part, T *work, int nt) {                               \
    const int64_t nq = (L + GL_ATT_TQ - 1) / GL_ATT_TQ, slab = S * (E + Ev);                      \
    const int lde = E > 0 ? (int)E : 1, ldv = (int)Ev;                                            \
    _Pragma("omp parallel for num_threads(nt) schedule(dynamic) if(nt > 1)")                      \
    for (int64_t u = 0; u < B * nc; u++) {                                                        \
      const int64_t b = u / nc, c = u - b * nc;                                                   \
      T *s = work + (int64_t)omp_get_thread_num() * (2 * GL_ATT_TQ * GL_ATT_TK + GL_ATT_TQ);      \
      T *dp = s + GL_ATT_TQ * GL_ATT_TK, *d = dp + GL_ATT_TQ * GL_ATT_TK;                         \
      const T *kb = k + b * S * E, *vb = v + b * S * Ev;                                          \
      T *gkb = nc > 1 ? part + u * slab : gk + b * S * E;                                         \
      T *gvb = nc > 1 ? part + u * slab + S * E : gv + b * S * Ev;                                \
      for (int64_t x = 0; x < S * E; x++) gkb[x] = 0;                                             \
      for (int64_t x = 0; x < S * Ev; x++) gvb[x] = 0;                                            \
      for (int64_t it = c; it < nq && !gl_interrupted(); it += nc) {                              \
        const int64_t i0 = it * GL_ATT_TQ, mq = L - i0 < GL_ATT_TQ ? L - i0 : GL_ATT_TQ;          \
        const T *qt = q + (b * L + i0) * E, *gt = g + (b * L + i0) * Ev;                          \
        const T *ot = out + (b * L + i0) * Ev, *lt = lse + b * L + i0;                            \
        T *gqt = gq + (b * L + i0) * E;                                                           \
        for (int64_t x = 0; x < mq * E; x++) gqt[x] = 0;                                          \
        for (int64_t r = 0; r < mq; r++) {                                                        \
          T sum = 0;                                                                              \
          if (lt[r] != -(T)INFINITY)                                                              \
            for (int64_t x = 0; x < Ev; x++) sum += gt[r * Ev + x] * ot[r * Ev + x];              \
          d[r] = sum;                                                                             \
        }                                                                                         \
        const int64_t send = causal ? (i0 + mq < S ? i0 + mq : S) : S;                            \
        for (int64_t j0 = 0; j0 < send; j0 += GL_ATT_TK) {                                        \
          const int64_t nk = send - j0 < GL_ATT_TK ? send - j0 : GL_ATT_TK;                       \
          att_scores_##SFX(bl, mq, nk, E, scale, qt, kb + j0 * E, s);                             \
          bl->GEMM(GL_CBLAS_ROW_MAJOR, GL_CBLAS_NO_TRANS, GL_CBLAS_TRANS, (int)mq, (int)nk, (int)Ev, \
                   1, gt, ldv, vb + j0 * Ev, ldv, 0, dp, GL_ATT_TK);                              \
          for (int64_t r = 0; r < mq; r++) {                                                      \
            T *sr = s + r * GL_ATT_TK, *dr = dp + r * GL_ATT_TK;                                  \
            const int64_t lim = lt[r] == -(T)INFINITY ? 0 : att_keys(causal, i0, r, j0, nk);      \
            const T m = lt[r], dr0 = d[r];                                                        \
            for (int64_t j = 0; j < lim; j++) {                                                   \
              const T p = EXP(sr[j] - m);                                                         \
              sr[j] = p;                                                                          \
              dr[j] = scale * p * (dr[j] - dr0);                                                  \
            }                                                                                     \
            for (int64_t j = lim; j < nk; j++) sr[j] = dr[j] = 0;                                 \
          }                                                                                       \
          bl->GEMM(GL_CBLAS_ROW_MAJOR, GL_CBLAS_TRANS, GL_CBLAS_NO_TRANS, (int)nk, (int)Ev, (int)mq, \
                   1, s, GL_ATT_TK, gt, ldv, 1, gvb + j0 * Ev, ldv);                              \
          if (E > 0) {                                                                            \
            bl->GEMM(GL_CBLAS_ROW_MAJOR, GL_CBLAS_NO_TRANS, GL_CBLAS_NO_TRANS, (int)mq, (int)E, (int)nk, \
                     1, dp, GL_ATT_TK, kb + j0 * E, lde, 1, gqt, lde);                            \
            bl->GEMM(GL_CBLAS_ROW_MAJOR, GL_CBLAS_TRANS, GL_CBLAS_NO_TRANS, (int)nk, (int)E, (int)mq, \
                     1, dp, GL_ATT_TK, qt, lde, 1, gkb + j0 * E, lde);                            \
          }                                                                                       \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    if (nc == 1) return;                                                                          \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")                       \
    for (int64_t x = 0; x < B * slab; x++) {                                                      \
      const int64_t b = x / slab, y = x - b * slab;                                               \
      const T *src = part + b * nc * slab + y;                                                    \
      T sum = 0;                                                                                  \
      for (int64_t c = 0; c < nc; c++) sum += src[c * slab];                                      \
      if (y < S * E) gk[b * S * E + y] = sum;                                                     \
      else gv[b * S * Ev + (y - S * E)] = sum;                                                    \
    }                                                                                             \
  }

GL_ATT_BWD_STAMP(float, sgemm, expf, f32)
GL_ATT_BWD_STAMP(double, dgemm, exp, f64)
#undef GL_ATT_BWD_STAMP

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
  if (q->dtype == GL_FLOAT32)
    att_bwd_f32(bl, B, L, S, E, Ev, DATA(float, gq), DATA(float, gk), DATA(float, gv), DATA(const float, g),
                DATA(const float, q), DATA(const float, k), DATA(const float, v), DATA(const float, out),
                DATA(const float, lse), (float)scale, causal, nc, part, work, nt);
  else
    att_bwd_f64(bl, B, L, S, E, Ev, DATA(double, gq), DATA(double, gk), DATA(double, gv), DATA(const double, g),
                DATA(const double, q), DATA(const double, k), DATA(const double, v), DATA(const double, out),
                DATA(const double, lse), scale, causal, nc, part, work, nt);
  gl_cpu_free(dev, work, wbytes);
  if (part != NULL) gl_cpu_free(dev, part, pbytes);
  gl_cpu_team_done(nt);
  return gl_interrupt_check();
}
