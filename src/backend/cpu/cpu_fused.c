/*
** cpu_fused.c — the fused kernels of gpu.fused on the CPU: optimizer steps in one pass over
** each parameter (kernels/nn.h's element steps, in the parameter's precision), and softmax
** cross-entropy forward (loss and probabilities per row, max-shifted) and backward.
** Rows and elements are split across the free cores above 32768 elements.
*/
#include <math.h>
#include <stdint.h>
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
    float *pp = DATA(float, p);
    const float *gg = DATA(float, g);
    switch (kind) {
      case GL_OPTIM_SGD: sgd_f32(n, pp, gg, DATA(float, st[0]), hp, nt); break;
      case GL_OPTIM_ADAM: adam_f32(n, pp, gg, DATA(float, st[0]), DATA(float, st[1]), DATA(float, st[2]), hp, nt); break;
      case GL_OPTIM_RMSPROP: rmsprop_f32(n, pp, gg, DATA(float, st[0]), DATA(float, st[1]), DATA(float, st[2]), hp, nt); break;
    }
  } else {
    double *pp = DATA(double, p);
    const double *gg = DATA(double, g);
    switch (kind) {
      case GL_OPTIM_SGD: sgd_f64(n, pp, gg, DATA(double, st[0]), hp, nt); break;
      case GL_OPTIM_ADAM: adam_f64(n, pp, gg, DATA(double, st[0]), DATA(double, st[1]), DATA(double, st[2]), hp, nt); break;
      case GL_OPTIM_RMSPROP: rmsprop_f64(n, pp, gg, DATA(double, st[0]), DATA(double, st[1]), DATA(double, st[2]), hp, nt); break;
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
