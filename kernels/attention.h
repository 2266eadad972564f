/*
** attention.h — the plain C face of kernels/attention.cu: scaled dot-product attention
** without the (L, S) score matrix (gpu.fused.attention), called by
** src/backend/cuda/cuda_fused.c. Same conventions as launch.h: a stream travels as void *,
** the result is 0, GL_KERR_NOTSUP or a cudaError_t.
*/
#ifndef GL_KERNELS_ATTENTION_H
#define GL_KERNELS_ATTENTION_H

#include <stdint.h>
#include "dtypes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dtypes it takes, and the widest value row (Ev) a warp holds in registers. */
#define GL_KATT_DTYPES GL_DTSET_WIDE_FLOAT
#define GL_KATT_MAX_EV 256

/* q (B, L, E), k (B, S, E), v (B, S, Ev) contiguous: out (B, L, Ev) = softmax(q k^T scale) v,
** lse (B, L) each row's logsumexp (-inf without keys); causal: key j <= query i only.
** GL_KERR_NOTSUP for another dtype or Ev > GL_KATT_MAX_EV. */
int gl_klaunch_attention(void *stream, int dt, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, void *out,
                         void *lse, const void *q, const void *k, const void *v, double scale, int causal);

/* The backward from g (B, L, Ev) = d loss / d out and the forward's out and lse: gq (B, L, E),
** gk (B, S, E), gv (B, S, Ev), overwritten; dsum is scratch of B * L elements of the dtype
** (the rows' sum of g * out). Rows with lse = -inf (no key) add nothing and get zero gq.
** Any widths; nothing is launched when B, L, S or Ev is 0 (the caller fills zeros).
** GL_KERR_NOTSUP for another dtype. */
int gl_klaunch_attention_bwd(void *stream, int dt, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, void *gq,
                             void *gk, void *gv, void *dsum, const void *g, const void *q, const void *k,
                             const void *v, const void *out, const void *lse, double scale, int causal);

#ifdef __cplusplus
}
#endif

#endif
