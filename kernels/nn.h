/*
** nn.h — the element math of gpu.fused, written once for gcc and nvcc: the hyper-parameters
** of an optimizer step, the step of one element for SGD, Adam (AdamW, AMSGrad), RMSprop,
** Adagrad, Adadelta, Adamax, NAdam and RAdam (PyTorch's rules), and the cross-entropy
** gradient of one logit. src/backend/cpu/cpu_fused.c
** and kernels/fused.cu loop over these; backend.h takes gl_optim_hp from here.
**
** State that decays geometrically (the moments of a weight whose gradient stays 0, e.g.
** behind a dead ReLU) reaches subnormal numbers after ~800 Adam steps, and every x86
** multiply that makes or reads one costs a ~100-cycle microcode assist: the stored state is
** flushed to 0 below the smallest normal number (on the GPU too, so both devices agree).
*/
#ifndef GL_KERNELS_NN_H
#define GL_KERNELS_NN_H

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

/* Per type T (float: f32, double: f64): the constants of a step in T, set once per call
** by gl_optim_consts_SFX, and the new value of one parameter element given its gradient
** and state (NULL where the rule has none), which are updated in place. The constants go
** by value: behind a pointer they could alias the state the step writes, and the
** compiler would reload them for every element (10% slower). */
#define GL_NN_STAMP(T, SQRT, TINY, SFX)                                                          \
  typedef struct gl_optim_k_##SFX {                                                             \
    T lr, wd, eps, b1, b2, c1, c2, step, rbc2, sgn, shrink, gwd, mom, damp, a, ca, rho, crho,    \
      bc2, gstep, astep;                                                                        \
  } gl_optim_k_##SFX;                                                                           \
  GL_HD gl_optim_k_##SFX gl_optim_consts_##SFX(const gl_optim_hp *hp) {                         \
    gl_optim_k_##SFX k;                                                                         \
    k.lr = (T)hp->lr; k.wd = (T)hp->weight_decay; k.eps = (T)hp->eps;                           \
    k.b1 = (T)hp->beta1; k.b2 = (T)hp->beta2; k.c1 = (T)(1 - hp->beta1); k.c2 = (T)(1 - hp->beta2); \
    k.step = hp->bc1 > 0 ? (T)(hp->lr / hp->bc1) : (T)0;                                       \
    k.rbc2 = hp->bc2 > 0 ? (T)(1 / sqrt(hp->bc2)) : (T)0;                                      \
    k.sgn = hp->maximize ? (T)-1 : (T)1;                                                        \
    k.shrink = hp->decoupled ? (T)(1 - hp->lr * hp->weight_decay) : (T)1;                       \
    k.gwd = hp->decoupled ? (T)0 : (T)hp->weight_decay;                                         \
    k.mom = (T)hp->momentum; k.damp = (T)(1 - hp->dampening);                                   \
    k.a = (T)hp->alpha; k.ca = (T)(1 - hp->alpha);                                              \
    k.rho = (T)hp->rho; k.crho = (T)(1 - hp->rho);                                              \
    k.bc2 = (T)hp->bc2; k.gstep = (T)hp->grad_step; k.astep = (T)hp->avg_step;                  \
    return k;                                                                                   \
  }                                                                                             \
  GL_HD T gl_flush_##SFX(T x) { return x > -(T)TINY && x < (T)TINY ? (T)0 : x; }               \
  GL_HD T gl_sgd_##SFX(T p, T g, T *__restrict__ buf, int first, int nesterov, gl_optim_k_##SFX k) {  \
    T gi = k.sgn * g + k.wd * p;                                                              \
    if (buf) {                                                                                  \
      T b = gl_flush_##SFX(first ? gi : k.mom * *buf + k.damp * gi);                          \
      *buf = b;                                                                                 \
      gi = nesterov ? gi + k.mom * b : b;                                                      \
    }                                                                                           \
    return p - k.lr * gi;                                                                      \
  }                                                                                             \
  GL_HD T gl_adam_##SFX(T p, T g, T *__restrict__ m, T *__restrict__ v, T *__restrict__ vmax, gl_optim_k_##SFX k) {             \
    T gi = k.sgn * g + k.gwd * p;                                                             \
    p *= k.shrink;                                                                             \
    T mi = gl_flush_##SFX(k.b1 * *m + k.c1 * gi);                                             \
    T vi = gl_flush_##SFX(k.b2 * *v + k.c2 * (gi * gi));                                      \
    *m = mi;                                                                                    \
    *v = vi;                                                                                    \
    if (vmax) { vi = *vmax > vi ? *vmax : vi; *vmax = vi; }                                     \
    return p - k.step * (mi / (SQRT(vi) * k.rbc2 + k.eps));                                  \
  }                                                                                             \
  GL_HD T gl_rmsprop_##SFX(T p, T g, T *__restrict__ sq, T *__restrict__ buf, T *__restrict__ ga, gl_optim_k_##SFX k) {         \
    T gi = g + k.wd * p;                                                                       \
    T s = gl_flush_##SFX(k.a * *sq + k.ca * (gi * gi));                                       \
    *sq = s;                                                                                    \
    if (ga) { T mm = gl_flush_##SFX(k.a * *ga + k.ca * gi); *ga = mm; s -= mm * mm; }         \
    T avg = SQRT(s) + k.eps;                                                                   \
    if (buf) { T b = gl_flush_##SFX(k.mom * *buf + gi / avg); *buf = b; return p - k.lr * b; } \
    return p - k.lr * (gi / avg);                                                              \
  }                                                                                             \
  /* Adagrad: sum += g^2 (never decays: no flush); k.lr is the step's decayed rate. */        \
  GL_HD T gl_adagrad_##SFX(T p, T g, T *__restrict__ sum, gl_optim_k_##SFX k) {                   \
    T gi = k.sgn * g + k.wd * p;                                                              \
    T s = *sum + gi * gi;                                                                       \
    *sum = s;                                                                                   \
    return p - k.lr * (gi / (SQRT(s) + k.eps));                                                \
  }                                                                                             \
  /* Adadelta: the update is sqrt(acc_delta + eps) / sqrt(square_avg + eps) g. */              \
  GL_HD T gl_adadelta_##SFX(T p, T g, T *__restrict__ sq, T *__restrict__ acc, gl_optim_k_##SFX k) { \
    T gi = k.sgn * g + k.wd * p;                                                              \
    T s = gl_flush_##SFX(k.rho * *sq + k.crho * (gi * gi));                                   \
    *sq = s;                                                                                    \
    T delta = SQRT(*acc + k.eps) / SQRT(s + k.eps) * gi;                                     \
    *acc = gl_flush_##SFX(k.rho * *acc + k.crho * (delta * delta));                           \
    return p - k.lr * delta;                                                                   \
  }                                                                                             \
  /* Adamax: u = max(b2 u, |g| + eps), NaN kept (torch's amax); u >= eps: not flushed (with   \
  ** eps = 0 a flushed u would turn m / u into 0 / 0 earlier than the array ops do). */        \
  GL_HD T gl_adamax_##SFX(T p, T g, T *__restrict__ m, T *__restrict__ u, gl_optim_k_##SFX k) {   \
    T gi = k.sgn * g + k.wd * p;                                                              \
    T mi = gl_flush_##SFX(k.b1 * *m + k.c1 * gi);                                             \
    T ui = k.b2 * *u, a = (gi < 0 ? -gi : gi) + k.eps;                                        \
    ui = a > ui || a != a ? a : ui;                                                             \
    *m = mi;                                                                                    \
    *u = ui;                                                                                    \
    return p - k.step * (mi / ui);                                                             \
  }                                                                                             \
  /* NAdam (Dozat; PyTorch 2's mu products): two steps over the same denominator. */          \
  GL_HD T gl_nadam_##SFX(T p, T g, T *__restrict__ m, T *__restrict__ v, gl_optim_k_##SFX k) {    \
    T gi = g + k.wd * p;                                                                       \
    T mi = gl_flush_##SFX(k.b1 * *m + k.c1 * gi);                                             \
    T vi = gl_flush_##SFX(k.b2 * *v + k.c2 * (gi * gi));                                      \
    *m = mi;                                                                                    \
    *v = vi;                                                                                    \
    T denom = SQRT(vi / k.bc2) + k.eps;                                                        \
    p = p - k.gstep * (gi / denom);                                                            \
    return p - k.astep * (mi / denom);                                                         \
  }                                                                                             \
  /* RAdam: the adaptive step once the variance is tractable, plain momentum before. */       \
  GL_HD T gl_radam_##SFX(T p, T g, T *__restrict__ m, T *__restrict__ v, int rectify, gl_optim_k_##SFX k) { \
    T gi = g + k.wd * p;                                                                       \
    T mi = gl_flush_##SFX(k.b1 * *m + k.c1 * gi);                                             \
    T vi = gl_flush_##SFX(k.b2 * *v + k.c2 * (gi * gi));                                      \
    *m = mi;                                                                                    \
    *v = vi;                                                                                    \
    return rectify ? p - k.astep * (mi / (SQRT(vi) + k.eps)) : p - k.step * mi;               \
  }                                                                                             \
  /* d/dz of the cross-entropy for a logit of probability p, 'hit' when it is the label's     \
  ** (t = off + on there, off elsewhere), times the incoming gradient k. */                    \
  GL_HD T gl_xent_grad_##SFX(T p, int hit, T on, T off, T k) {                                  \
    T d = (p - off) * k;                                                                        \
    return hit ? d - on * k : d;                                                                \
  }

GL_NN_STAMP(float, sqrtf, FLT_MIN, f32)
GL_NN_STAMP(double, sqrt, DBL_MIN, f64)
#undef GL_NN_STAMP

#endif
