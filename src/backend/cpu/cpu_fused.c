/*
** cpu_fused.c — the fused kernels of gpu.fused on the CPU: optimizer steps in one pass over
** each parameter (PyTorch's update rules, in the parameter's precision), and softmax
** cross-entropy forward (loss and probabilities per row, max-shifted) and backward.
** Rows and elements are split across the free cores above 32768 elements.
*/
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <omp.h>
#include "cpu.h"
#include "../../../kernels/vmath.h"

/* ---- optimizer steps ------------------------------------------------------------------------ */

/* One function per (rule, type); T float or double. The loop bodies are what
** lua/gpu/optim.lua's composite path computed, op for op, fused. State that decays
** geometrically (the moments of a weight whose gradient is 0, e.g. behind a dead ReLU)
** reaches subnormal numbers after ~800 Adam steps, and every multiply that makes or reads
** one costs a ~100-cycle microcode assist on x86: 20x slower steps were measured. So the
** stored state is flushed to zero below the smallest normal number (FLUSH). */
#define FLUSH(T, x) ((x) > -(T)TINY_##T && (x) < (T)TINY_##T ? (T)0 : (x))
#define TINY_float FLT_MIN
#define TINY_double DBL_MIN
#define GL_OPTIM_STAMP(T, SQRT, SFX)                                                              \
  static void sgd_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict buf,            \
                        const gl_optim_hp *hp, int nt) {                                           \
    const T lr = (T)hp->lr, wd = (T)hp->weight_decay, mom = (T)hp->momentum;                       \
    const T damp = (T)(1 - hp->dampening), sgn = hp->maximize ? (T)-1 : (T)1;                      \
    const int first = hp->first, nesterov = hp->nesterov;                                          \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1)")                   \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T gi = sgn * g[i] + wd * p[i];                                                               \
      if (buf) {                                                                                   \
        T b = first ? gi : mom * buf[i] + damp * gi;                                               \
        b = FLUSH(T, b);                                                                           \
        buf[i] = b;                                                                                \
        gi = nesterov ? gi + mom * b : b;                                                          \
      }                                                                                            \
      p[i] -= lr * gi;                                                                             \
    }                                                                                              \
  }                                                                                                \
  static void adam_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict m,             \
                         T *restrict v, T *restrict vmax, const gl_optim_hp *hp, int nt) {         \
    const T lr = (T)hp->lr, wd = (T)hp->weight_decay, eps = (T)hp->eps;                            \
    const T b1 = (T)hp->beta1, b2 = (T)hp->beta2, c1 = (T)(1 - hp->beta1), c2 = (T)(1 - hp->beta2); \
    const T step = (T)(hp->lr / hp->bc1), rbc2 = (T)(1 / sqrt(hp->bc2));                           \
    const T sgn = hp->maximize ? (T)-1 : (T)1;                                                     \
    const T shrink = hp->decoupled ? (T)(1 - hp->lr * hp->weight_decay) : (T)1;                    \
    const T gwd = hp->decoupled ? (T)0 : wd;                                                       \
    (void)lr;                                                                                      \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1)")                   \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T pi = p[i];                                                                                 \
      T gi = sgn * g[i] + gwd * pi;                                                                \
      pi *= shrink;                                                                                \
      T mi = FLUSH(T, b1 * m[i] + c1 * gi);                                                        \
      T vi = FLUSH(T, b2 * v[i] + c2 * (gi * gi));                                                 \
      m[i] = mi;                                                                                   \
      v[i] = vi;                                                                                   \
      if (vmax) { vi = vmax[i] > vi ? vmax[i] : vi; vmax[i] = vi; }                                \
      p[i] = pi - step * (mi / (SQRT(vi) * rbc2 + eps));                                           \
    }                                                                                              \
  }                                                                                                \
  static void rmsprop_##SFX(int64_t n, T *restrict p, const T *restrict g, T *restrict sq,         \
                            T *restrict buf, T *restrict ga, const gl_optim_hp *hp, int nt) {      \
    const T lr = (T)hp->lr, wd = (T)hp->weight_decay, eps = (T)hp->eps;                            \
    const T a = (T)hp->alpha, ca = (T)(1 - hp->alpha), mom = (T)hp->momentum;                      \
    _Pragma("omp parallel for simd num_threads(nt) schedule(static) if(nt > 1)")                   \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T gi = g[i] + wd * p[i];                                                                     \
      T s = FLUSH(T, a * sq[i] + ca * (gi * gi));                                                  \
      sq[i] = s;                                                                                   \
      if (ga) { T m = FLUSH(T, a * ga[i] + ca * gi); ga[i] = m; s -= m * m; }                      \
      T avg = SQRT(s) + eps;                                                                       \
      if (buf) { T b = FLUSH(T, mom * buf[i] + gi / avg); buf[i] = b; p[i] -= lr * b; }            \
      else p[i] -= lr * (gi / avg);                                                                \
    }                                                                                              \
  }

GL_OPTIM_STAMP(float, sqrtf, f32)
GL_OPTIM_STAMP(double, sqrt, f64)
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
        _Pragma("omp simd")                                                                       \
        for (int64_t c = 0; c < C; c++) di[c] = (pi[c] - off) * k;                                \
        int64_t l = lab[i];                                                                       \
        if (l >= 1 && l <= C) di[l - 1] -= on * k;                                                \
        else for (int64_t c = 0; c < C; c++) di[c] = (T)NAN;                                      \
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
