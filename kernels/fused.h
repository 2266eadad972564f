/*
** fused.h — the plain C face of kernels/fused.cu: optimizer steps, softmax
** cross-entropy and layer norm (gpu.fused), called by src/backend/cuda/cuda_fused.c. Same conventions as
** launch.h: a stream travels as void *, the result is 0, GL_KERR_NOTSUP or a cudaError_t.
*/
#ifndef GL_KERNELS_FUSED_H
#define GL_KERNELS_FUSED_H

#include <stdint.h>
#include "optim.h"
#include "dtypes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dtypes of the parameters, gradients, states and logits the fused kernels take. */
#define GL_KFUSED_DTYPES GL_DTSET_WIDE_FLOAT

/* kind: a gl_optim_kind (kernels/optim.h); p, g and the state arrays s0..s2 (NULL where unused)
** contiguous of dtype dt (one of GL_KFUSED_DTYPES), n elements each. */
int gl_klaunch_optim(void *stream, int kind, int dt, int64_t n, void *p, const void *g, void *s0, void *s1,
                     void *s2, const gl_optim_hp *hp);
/* Rows of z (N, C): loss (N), probs (N, C); labels int64 1-based (or NULL: target (N, C)). */
int gl_klaunch_xent(void *stream, int dt, int64_t N, int64_t C, void *loss, void *probs, const void *z,
                    const int64_t *labels, const void *target, double smoothing);
/* dst (N, C) = (probs - t) * gout[i * gstride] * scale. */
int gl_klaunch_xent_bwd(void *stream, int dt, int64_t N, int64_t C, void *dst, const void *probs,
                        const int64_t *labels, const void *target, double smoothing, const void *gout,
                        int64_t gstride, double scale);

/* Layer norm over rows of x (R, D): y (R, D), mean (R), rstd (R); w, b (D) or NULL. */
int gl_klaunch_layer_norm(void *stream, int dt, int64_t R, int64_t D, void *y, void *mean, void *rstd, const void *x,
                          const void *w, const void *b, double eps);
/* Its backward: gx (R, D) and, where not NULL, gw and gb (D). */
int gl_klaunch_layer_norm_bwd(void *stream, int dt, int64_t R, int64_t D, void *gx, void *gw, void *gb, const void *g,
                              const void *x, const void *mean, const void *rstd, const void *w);

#ifdef __cplusplus
}
#endif

#endif
