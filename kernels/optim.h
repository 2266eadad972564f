/*
** optim.h — the element math of the fused optimizer steps (gpu.optim's fused path),
** written once for gcc and nvcc: the hyper-parameters of a step, the constants derived from
** them, and the step of one element for SGD, Adam (AdamW, AMSGrad), RMSprop, Adagrad,
** Adadelta, Adamax, NAdam and RAdam (PyTorch's rules). src/backend/cpu/cpu_fused.c and
** kernels/fused.cu loop over these; backend.h takes gl_optim_hp from here.
**
** State that decays geometrically (the moments of a weight whose gradient stays 0, e.g.
** behind a dead ReLU) reaches subnormal numbers after ~800 Adam steps, and every x86
** multiply that makes or reads one costs a ~100-cycle microcode assist: the stored state is
** flushed to 0 below the smallest normal number (on the GPU too, so both devices agree).
**
** Each function exists for float (suffix _f32) and double (_f64). C has no templates, so
** each is stamped per type by a small macro of its own (one function each, instantiated by
** GL_OPTIM_FUNCTIONS at the end); the .cu files reach them by type through fused.cu's
** gl_optim_steps<T>.
*/
#ifndef GL_KERNELS_OPTIM_H
#define GL_KERNELS_OPTIM_H

#include <float.h>
#include <math.h>
#include "half.h"

/* Fused optimizer steps: PyTorch's update rules, one pass over each parameter. */
typedef enum gl_optim_kind {
  GL_OPTIM_SGD, GL_OPTIM_ADAM, GL_OPTIM_RMSPROP, GL_OPTIM_ADAGRAD, GL_OPTIM_ADADELTA, GL_OPTIM_ADAMAX,
  GL_OPTIM_NADAM, GL_OPTIM_RADAM
} gl_optim_kind;
#define GL_OPTIM_KINDS 8

typedef struct gl_optim_hp {
  double lr, weight_decay, eps;  /* adagrad: lr is the step's, lr / (1 + (t - 1) lr_decay) */
  double beta1, beta2;           /* adam, adamax, nadam, radam */
  double bc1, bc2;               /* bias corrections 1 - beta1^t, 1 - beta2^t (adam, adamax: bc1,
                                    nadam: bc2, radam) */
  double momentum, dampening;    /* sgd; rmsprop uses momentum */
  double alpha;                  /* rmsprop: smoothing of the square average */
  double rho;                    /* adadelta: smoothing of both averages */
  double grad_step, avg_step;    /* nadam: the step sizes of g and of exp_avg, lr (1 - mu_t) /
                                    (1 - prod mu_1..t) and lr mu_t+1 / (1 - prod mu_1..t+1);
                                    radam: avg_step, lr r_t sqrt(bc2) / bc1 when rectified */
  int decoupled;                 /* adam: AdamW's decay of p instead of g += wd * p */
  int amsgrad;                   /* adam: st[2] holds the running max of v */
  int nesterov, maximize;        /* sgd (maximize also for adam, adagrad, adadelta, adamax) */
  int first;                     /* sgd: the momentum buffer is new: buf = g */
  int centered;                  /* rmsprop: st[2] holds the gradient average */
  int rectify;                   /* radam: the variance is tractable (rho_t > 5): the adaptive step */
} gl_optim_hp;

/* The constants of a step in the parameter's type, made once per call from gl_optim_hp by
** gl_optim_args_f64_of (in double, then narrowed for float). They go by value: behind a
** pointer they could alias the state the step writes, and the compiler would reload them for
** every element (10% slower). */
#define GL_OPTIM_ARGS(T, SFX)                                                                     \
  typedef struct gl_optim_args_##SFX {                                                            \
    T lr, weight_decay, eps, beta1, beta2, momentum, alpha, rho;                                  \
    T one_minus_beta1, one_minus_beta2, one_minus_dampening, one_minus_alpha, one_minus_rho;      \
    T adam_step;               /* lr / bc1 (0 without a bias correction) */                       \
    T bias_correction2;        /* bc2 */                                                          \
    T rsqrt_bias_correction2;  /* 1 / sqrt(bc2) (0 without a bias correction) */                  \
    T grad_sign;               /* -1 when maximizing, else 1 */                                   \
    T param_scale;             /* AdamW: 1 - lr wd (p decays before the step), else 1 */          \
    T grad_weight_decay;       /* wd added to the gradient (0 under AdamW's decoupled decay) */   \
    T grad_step, avg_step;     /* NAdam's and RAdam's step sizes (gl_optim_hp) */                 \
  } gl_optim_args_##SFX;
GL_OPTIM_ARGS(float, f32)
GL_OPTIM_ARGS(double, f64)
#undef GL_OPTIM_ARGS

GL_HD gl_optim_args_f64 gl_optim_args_f64_of(const gl_optim_hp *hp) {
  gl_optim_args_f64 k;
  k.lr = hp->lr;
  k.weight_decay = hp->weight_decay;
  k.eps = hp->eps;
  k.beta1 = hp->beta1;
  k.beta2 = hp->beta2;
  k.momentum = hp->momentum;
  k.alpha = hp->alpha;
  k.rho = hp->rho;
  k.one_minus_beta1 = 1 - hp->beta1;
  k.one_minus_beta2 = 1 - hp->beta2;
  k.one_minus_dampening = 1 - hp->dampening;
  k.one_minus_alpha = 1 - hp->alpha;
  k.one_minus_rho = 1 - hp->rho;
  k.adam_step = hp->bc1 > 0 ? hp->lr / hp->bc1 : 0;
  k.bias_correction2 = hp->bc2;
  k.rsqrt_bias_correction2 = hp->bc2 > 0 ? 1 / sqrt(hp->bc2) : 0;
  k.grad_sign = hp->maximize ? -1 : 1;
  k.param_scale = hp->decoupled ? 1 - hp->lr * hp->weight_decay : 1;
  k.grad_weight_decay = hp->decoupled ? 0 : hp->weight_decay;
  k.grad_step = hp->grad_step;
  k.avg_step = hp->avg_step;
  return k;
}

GL_HD gl_optim_args_f32 gl_optim_args_f32_of(const gl_optim_hp *hp) {
  const gl_optim_args_f64 d = gl_optim_args_f64_of(hp);
  gl_optim_args_f32 k;
  k.lr = (float)d.lr; k.weight_decay = (float)d.weight_decay; k.eps = (float)d.eps;
  k.beta1 = (float)d.beta1; k.beta2 = (float)d.beta2; k.momentum = (float)d.momentum;
  k.alpha = (float)d.alpha; k.rho = (float)d.rho;
  k.one_minus_beta1 = (float)d.one_minus_beta1; k.one_minus_beta2 = (float)d.one_minus_beta2;
  k.one_minus_dampening = (float)d.one_minus_dampening; k.one_minus_alpha = (float)d.one_minus_alpha;
  k.one_minus_rho = (float)d.one_minus_rho;
  k.adam_step = (float)d.adam_step; k.bias_correction2 = (float)d.bias_correction2;
  k.rsqrt_bias_correction2 = (float)d.rsqrt_bias_correction2;
  k.grad_sign = (float)d.grad_sign; k.param_scale = (float)d.param_scale;
  k.grad_weight_decay = (float)d.grad_weight_decay;
  k.grad_step = (float)d.grad_step; k.avg_step = (float)d.avg_step;
  return k;
}

/* ---- the element steps: the new value of one parameter element from its gradient and its
** state (NULL where the rule has none), which is updated in place. */

/* Stored state below the smallest normal number is 0 (see the top of the file). */
#define GL_OPTIM_FLUSH(T, TINY, SFX) \
  GL_HD T gl_flush_##SFX(T x) { return x > -(T)TINY && x < (T)TINY ? (T)0 : x; }

/* SGD with momentum buf (NULL: none; first: the buffer starts as g), Nesterov or not. */
#define GL_OPTIM_SGD(T, SQRT, SFX)                                                                \
  GL_HD T gl_sgd_##SFX(T p, T g, T *__restrict__ buf, int first, int nesterov, gl_optim_args_##SFX k) { \
    T gi = k.grad_sign * g + k.weight_decay * p;                                                  \
    if (buf) {                                                                                    \
      T b = gl_flush_##SFX(first ? gi : k.momentum * *buf + k.one_minus_dampening * gi);          \
      *buf = b;                                                                                   \
      gi = nesterov ? gi + k.momentum * b : b;                                                    \
    }                                                                                             \
    return p - k.lr * gi;                                                                         \
  }

/* Adam and AdamW: moments m and v; vmax (NULL: none) the running max of v (AMSGrad). */
#define GL_OPTIM_ADAM(T, SQRT, SFX)                                                               \
  GL_HD T gl_adam_##SFX(T p, T g, T *__restrict__ m, T *__restrict__ v, T *__restrict__ vmax,      \
                        gl_optim_args_##SFX k) {                                                  \
    T gi = k.grad_sign * g + k.grad_weight_decay * p;                                             \
    p *= k.param_scale;                                                                           \
    T mi = gl_flush_##SFX(k.beta1 * *m + k.one_minus_beta1 * gi);                                 \
    T vi = gl_flush_##SFX(k.beta2 * *v + k.one_minus_beta2 * (gi * gi));                          \
    *m = mi;                                                                                      \
    *v = vi;                                                                                      \
    if (vmax) { vi = *vmax > vi ? *vmax : vi; *vmax = vi; }                                       \
    return p - k.adam_step * (mi / (SQRT(vi) * k.rsqrt_bias_correction2 + k.eps));                \
  }

/* RMSprop: the square average sq; buf (NULL: none) the momentum buffer; ga (NULL: none) the
** gradient average of the centred variant. */
#define GL_OPTIM_RMSPROP(T, SQRT, SFX)                                                            \
  GL_HD T gl_rmsprop_##SFX(T p, T g, T *__restrict__ sq, T *__restrict__ buf, T *__restrict__ ga,  \
                           gl_optim_args_##SFX k) {                                               \
    T gi = g + k.weight_decay * p;                                                                \
    T s = gl_flush_##SFX(k.alpha * *sq + k.one_minus_alpha * (gi * gi));                          \
    *sq = s;                                                                                      \
    if (ga) { T mm = gl_flush_##SFX(k.alpha * *ga + k.one_minus_alpha * gi); *ga = mm; s -= mm * mm; } \
    T avg = SQRT(s) + k.eps;                                                                      \
    if (buf) { T b = gl_flush_##SFX(k.momentum * *buf + gi / avg); *buf = b; return p - k.lr * b; } \
    return p - k.lr * (gi / avg);                                                                 \
  }

/* Adagrad: sum += g^2 (never decays: no flush); k.lr is the step's decayed rate. */
#define GL_OPTIM_ADAGRAD(T, SQRT, SFX)                                                            \
  GL_HD T gl_adagrad_##SFX(T p, T g, T *__restrict__ sum, gl_optim_args_##SFX k) {                \
    T gi = k.grad_sign * g + k.weight_decay * p;                                                  \
    T s = *sum + gi * gi;                                                                         \
    *sum = s;                                                                                     \
    return p - k.lr * (gi / (SQRT(s) + k.eps));                                                   \
  }

/* Adadelta: the update is sqrt(acc_delta + eps) / sqrt(square_avg + eps) g. */
#define GL_OPTIM_ADADELTA(T, SQRT, SFX)                                                           \
  GL_HD T gl_adadelta_##SFX(T p, T g, T *__restrict__ sq, T *__restrict__ acc, gl_optim_args_##SFX k) { \
    T gi = k.grad_sign * g + k.weight_decay * p;                                                  \
    T s = gl_flush_##SFX(k.rho * *sq + k.one_minus_rho * (gi * gi));                              \
    *sq = s;                                                                                      \
    T delta = SQRT(*acc + k.eps) / SQRT(s + k.eps) * gi;                                          \
    *acc = gl_flush_##SFX(k.rho * *acc + k.one_minus_rho * (delta * delta));                      \
    return p - k.lr * delta;                                                                      \
  }

/* Adamax: u = max(b2 u, |g| + eps), NaN kept (torch's amax); u >= eps: not flushed (with
** eps = 0 a flushed u would turn m / u into 0 / 0 earlier than the array ops do). */
#define GL_OPTIM_ADAMAX(T, SQRT, SFX)                                                             \
  GL_HD T gl_adamax_##SFX(T p, T g, T *__restrict__ m, T *__restrict__ u, gl_optim_args_##SFX k) { \
    T gi = k.grad_sign * g + k.weight_decay * p;                                                  \
    T mi = gl_flush_##SFX(k.beta1 * *m + k.one_minus_beta1 * gi);                                 \
    T ui = k.beta2 * *u, a = (gi < 0 ? -gi : gi) + k.eps;                                         \
    ui = a > ui || a != a ? a : ui;                                                               \
    *m = mi;                                                                                      \
    *u = ui;                                                                                      \
    return p - k.adam_step * (mi / ui);                                                           \
  }

/* NAdam (Dozat; PyTorch 2's mu products): two steps over the same denominator. */
#define GL_OPTIM_NADAM(T, SQRT, SFX)                                                              \
  GL_HD T gl_nadam_##SFX(T p, T g, T *__restrict__ m, T *__restrict__ v, gl_optim_args_##SFX k) { \
    T gi = g + k.weight_decay * p;                                                                \
    T mi = gl_flush_##SFX(k.beta1 * *m + k.one_minus_beta1 * gi);                                 \
    T vi = gl_flush_##SFX(k.beta2 * *v + k.one_minus_beta2 * (gi * gi));                          \
    *m = mi;                                                                                      \
    *v = vi;                                                                                      \
    T denom = SQRT(vi / k.bias_correction2) + k.eps;                                              \
    p = p - k.grad_step * (gi / denom);                                                           \
    return p - k.avg_step * (mi / denom);                                                         \
  }

/* RAdam: the adaptive step once the variance is tractable (rectify), plain momentum before. */
#define GL_OPTIM_RADAM(T, SQRT, SFX)                                                              \
  GL_HD T gl_radam_##SFX(T p, T g, T *__restrict__ m, T *__restrict__ v, int rectify,             \
                         gl_optim_args_##SFX k) {                                                 \
    T gi = g + k.weight_decay * p;                                                                \
    T mi = gl_flush_##SFX(k.beta1 * *m + k.one_minus_beta1 * gi);                                 \
    T vi = gl_flush_##SFX(k.beta2 * *v + k.one_minus_beta2 * (gi * gi));                          \
    *m = mi;                                                                                      \
    *v = vi;                                                                                      \
    return rectify ? p - k.avg_step * (mi / (SQRT(vi) + k.eps)) : p - k.adam_step * mi;           \
  }

/* Every element step of one type. */
#define GL_OPTIM_FUNCTIONS(T, SQRT, TINY, SFX)                                                     \
  GL_OPTIM_FLUSH(T, TINY, SFX) GL_OPTIM_SGD(T, SQRT, SFX) GL_OPTIM_ADAM(T, SQRT, SFX)                \
  GL_OPTIM_RMSPROP(T, SQRT, SFX) GL_OPTIM_ADAGRAD(T, SQRT, SFX) GL_OPTIM_ADADELTA(T, SQRT, SFX)      \
  GL_OPTIM_ADAMAX(T, SQRT, SFX) GL_OPTIM_NADAM(T, SQRT, SFX) GL_OPTIM_RADAM(T, SQRT, SFX)
GL_OPTIM_FUNCTIONS(float, sqrtf, FLT_MIN, f32)
GL_OPTIM_FUNCTIONS(double, sqrt, DBL_MIN, f64)

#endif
