/*
** rnn.h — the element math of the fused LSTM cell (gpu.fused.lstm), written once for gcc and
** nvcc: one step of PyTorch's LSTM for one (row, unit) and its backward. The gate layout is
** PyTorch's (i, f, g, o blocks of H along the last axis). src/ops/rnn.c runs the time loop
** (one GEMM of the hidden state per step through the backend's matmul), the backends loop
** over (N, H) with these (cpu_rnn.c, kernels/rnn.cu); backend.h takes gl_lstm_cell from here.
*/
#ifndef GL_KERNELS_RNN_H
#define GL_KERNELS_RNN_H

#include <math.h>
#include <stdint.h>
#include "half.h"
#include "vmath.h"
#include "elem.h"

/* One time step of the cell over N rows of H units. Pointers are of the step's dtype
** (float or double); the (N, 4H) gate arrays are contiguous, the (N, H) states have row
** strides *_ld (elements), their units contiguous.
** Forward: pre = xp + hw (pre-activations), gates = (sigmoid i, sigmoid f, tanh g, sigmoid o),
**   c = f c_prev + i g, h = o tanh(c).
** Backward: with dh = dh_out + dh_next and dc = dc_out + dc_next + dh o (1 - tanh(c)^2):
**   dgates = the pre-activation gradients (di, df, dg, do), dc_next := dc f (in place: the
**   gradient of c_prev, read by the step before). */
typedef struct gl_lstm_cell {
  int64_t N, H;
  const void *xp, *hw;           /* forward: (N, 4H) input projection and h_prev W_hh^T */
  void *gates;                   /* forward: out (N, 4H); backward: in, the activations */
  const void *c_prev;            /* (N, H), row stride c_prev_ld */
  void *h, *c;                   /* forward: out; backward: c read (row stride hc_ld) */
  const void *dh_out, *dc_out;   /* backward: the gradients from outside (row stride hc_ld) */
  void *dh_next, *dc_next;       /* backward: (N, H) contiguous, from the later step */
  void *dgates;                  /* backward: out (N, 4H) */
  int64_t c_prev_ld, hc_ld;
} gl_lstm_cell;

#define GL_RNN_STAMP(T, SIG, TANH, SFX)                                                           \
  GL_HD void gl_lstm_fwd_##SFX(const gl_lstm_cell *s, int64_t r, int64_t j) {                     \
    int64_t H = s->H, g0 = r * 4 * H + j;                                                         \
    const T *xp = (const T *)s->xp, *hw = (const T *)s->hw;                                       \
    T *gt = (T *)s->gates;                                                                        \
    T i = SIG(xp[g0] + hw[g0]), f = SIG(xp[g0 + H] + hw[g0 + H]);                                 \
    T g = TANH(xp[g0 + 2 * H] + hw[g0 + 2 * H]), o = SIG(xp[g0 + 3 * H] + hw[g0 + 3 * H]);        \
    T c = f * ((const T *)s->c_prev)[r * s->c_prev_ld + j] + i * g;                               \
    gt[g0] = i; gt[g0 + H] = f; gt[g0 + 2 * H] = g; gt[g0 + 3 * H] = o;                           \
    ((T *)s->c)[r * s->hc_ld + j] = c;                                                            \
    ((T *)s->h)[r * s->hc_ld + j] = o * TANH(c);                                                  \
  }                                                                                               \
  GL_HD void gl_lstm_bwd_##SFX(const gl_lstm_cell *s, int64_t r, int64_t j) {                     \
    int64_t H = s->H, g0 = r * 4 * H + j, k = r * H + j, hk = r * s->hc_ld + j;                   \
    const T *gt = (const T *)s->gates;                                                            \
    T i = gt[g0], f = gt[g0 + H], g = gt[g0 + 2 * H], o = gt[g0 + 3 * H];                         \
    T *dhn = (T *)s->dh_next, *dcn = (T *)s->dc_next, *dg = (T *)s->dgates;                       \
    T tc = TANH(((const T *)s->c)[hk]);                                                           \
    T dh = ((const T *)s->dh_out)[hk] + dhn[k];                                                   \
    T dc = ((const T *)s->dc_out)[hk] + dcn[k] + dh * o * (1 - tc * tc);                          \
    T cp = ((const T *)s->c_prev)[r * s->c_prev_ld + j];                                          \
    dg[g0] = dc * g * i * (1 - i);                                                                \
    dg[g0 + H] = dc * cp * f * (1 - f);                                                           \
    dg[g0 + 2 * H] = dc * i * (1 - g * g);                                                        \
    dg[g0 + 3 * H] = dh * tc * o * (1 - o);                                                       \
    dcn[k] = dc * f;                                                                              \
  }

GL_RNN_STAMP(float, gl_vsigmoidf, gl_vtanhf, f32)
GL_RNN_STAMP(double, gl_sigmoid, tanh, f64)
#undef GL_RNN_STAMP

/* The plain C face of kernels/rnn.cu (src/backend/cuda/cuda_rnn.c calls it): one step of
** the cell on the GPU, s's pointers on the device; dt a GL_KD_* code (float32 or float64).
** 0, GL_KERR_NOTSUP or a cudaError_t, as launch.h's launchers. */
#ifdef __cplusplus
extern "C" {
#endif
int gl_klaunch_lstm_cell(void *stream, int dt, int backward, const gl_lstm_cell *s);
#ifdef __cplusplus
}
#endif

#endif
