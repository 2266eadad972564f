/*
** xent.h — the element math of the fused softmax cross-entropy shared by gcc and nvcc: the
** gradient of one logit (src/backend/cpu/cpu_fused.c and kernels/fused.cu).
*/
#ifndef GL_KERNELS_XENT_H
#define GL_KERNELS_XENT_H

#include "half.h"

/* d/dz of the cross-entropy for a logit of probability p, 'hit' when it is the label's
** (t = off + on there, off elsewhere), times the incoming gradient k. */
#define GL_XENT_GRAD(T, SFX)                                                                      \
  GL_HD T gl_xent_grad_##SFX(T p, int hit, T on, T off, T k) {                                    \
    T d = (p - off) * k;                                                                          \
    return hit ? d - on * k : d;                                                                  \
  }
GL_XENT_GRAD(float, f32)
GL_XENT_GRAD(double, f64)
#undef GL_XENT_GRAD

#endif
