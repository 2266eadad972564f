/*
** rnn.h — the element math of the fused recurrent cells (gpu.fused.lstm, gru, rnn), written
** once for gcc and nvcc: one step of PyTorch's LSTM, GRU or Elman RNN for one (row, unit) and
** its backward. Gate layouts are PyTorch's (LSTM i, f, g, o; GRU r, z, n: blocks of H along
** the last axis). src/ops/rnn.c runs the time loop (one GEMM of the hidden state per step
** through the backend's matmul), the backends loop over (N, H) with these (cpu_rnn.c,
** kernels/rnn.cu); backend.h takes the cell structs from here.
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

/* Each cell function exists for float (suffix _f32, the vectorisable sigmoid and tanh of
** vmath.h) and double (_f64), stamped per type by a small macro of its own (C has no
** templates); kernels/rnn.cu reaches them by type through its gl_rnn<T>. */
#define GL_LSTM_FWD(T, SIG, TANH, SFX)                                                            \
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
  }
#define GL_LSTM_BWD(T, SIG, TANH, SFX)                                                            \
  GL_HD void gl_lstm_bwd_##SFX(const gl_lstm_cell *s, int64_t r, int64_t j) {                     \
    int64_t H = s->H, g0 = r * 4 * H + j, k = r * H + j, hk = r * s->hc_ld + j;                   \
    const T *gt = (const T *)s->gates;                                                            \
    T i = gt[g0], f = gt[g0 + H], g = gt[g0 + 2 * H], o = gt[g0 + 3 * H];                         \
    T *dhn = (T *)s->dh_next, *dcn = (T *)s->dc_next, *dg = (T *)s->dgates;                       \
    T tc = TANH(((const T *)s->c)[hk]), dh = ((const T *)s->dh_out)[hk] + dhn[k];                 \
    T dc = ((const T *)s->dc_out)[hk] + dcn[k] + dh * o * (1 - tc * tc);                          \
    T cp = ((const T *)s->c_prev)[r * s->c_prev_ld + j];                                          \
    dg[g0] = dc * g * i * (1 - i);                                                                \
    dg[g0 + H] = dc * cp * f * (1 - f);                                                           \
    dg[g0 + 2 * H] = dc * i * (1 - g * g);                                                        \
    dg[g0 + 3 * H] = dh * tc * o * (1 - o);                                                       \
    dcn[k] = dc * f;                                                                              \
  }

/* One time step of PyTorch's GRU cell (gpu.fused.gru) over N rows of H units, every array
** contiguous with rows of its width. Gates r, z, n are blocks of H along the last axis:
**   r = sigmoid(xp_r + hw_r + b_r), z = sigmoid(xp_z + hw_z + b_z),
**   hn = hw_n + b_n, n = tanh(xp_n + r hn), h = n + z (h_prev - n) (= (1 - z) n + z h_prev),
** xp the input projection (x W_ih^T + b_ih), hw = h_prev W_hh^T, b = b_hh (NULL: none);
** gates (N, 4H) keeps r, z, n, hn for the backward.
** Backward: dh = dh_out + dh_carry + dh_mm (dh_mm the previous pass's dhw W_hh, dh_carry its
** dh z); writes dxp (N, 3H) the pre-activation gradients (dr, dz, dn), dhw (N, 3H) those
** of h_prev W_hh^T + b_hh (dr, dz, dn r), and dh_carry := dh z (in place). */
typedef struct gl_gru_cell {
  int64_t N, H;
  const void *xp, *hw, *b;       /* forward: (N, 3H), (N, 3H), (3H) or NULL */
  void *gates;                   /* forward: out (N, 4H); backward: in */
  const void *h_prev;            /* (N, H) */
  void *h;                       /* forward: out (N, H) */
  const void *dh_out, *dh_mm;    /* backward: (N, H) */
  void *dh_carry;                /* backward: (N, H), in and out */
  void *dxp, *dhw;               /* backward: out (N, 3H) */
} gl_gru_cell;

/* One time step of the Elman RNN (gpu.fused.rnn): h = act(xp + hw), act tanh or relu (relu
** set), the biases inside xp. Backward: dxp = (dh_out + dh_next) act'(h), from h itself
** (1 - h^2, or h > 0 as PyTorch's relu at 0). */
typedef struct gl_rnn_cell {
  int64_t N, H;
  int relu;
  const void *xp, *hw;           /* forward: (N, H) each */
  void *h;                       /* forward: out; backward: in (N, H) */
  const void *dh_out, *dh_next;  /* backward: (N, H) */
  void *dxp;                     /* backward: out (N, H) */
} gl_rnn_cell;

#define GL_GRU_FWD(T, SIG, TANH, SFX)                                                             \
  GL_HD void gl_gru_fwd_##SFX(const gl_gru_cell *s, int64_t r, int64_t j) {                       \
    int64_t H = s->H, g0 = r * 3 * H + j, q0 = r * 4 * H + j, k = r * H + j;                      \
    const T *xp = (const T *)s->xp, *hw = (const T *)s->hw, *b = (const T *)s->b;                 \
    T *gt = (T *)s->gates;                                                                        \
    T br = b ? b[j] : (T)0, bz = b ? b[j + H] : (T)0, bn = b ? b[j + 2 * H] : (T)0;               \
    T rg = SIG(xp[g0] + hw[g0] + br), z = SIG(xp[g0 + H] + hw[g0 + H] + bz);                      \
    T hn = hw[g0 + 2 * H] + bn, n = TANH(xp[g0 + 2 * H] + rg * hn);                               \
    gt[q0] = rg; gt[q0 + H] = z; gt[q0 + 2 * H] = n; gt[q0 + 3 * H] = hn;                         \
    ((T *)s->h)[k] = n + z * (((const T *)s->h_prev)[k] - n);                                     \
  }
#define GL_GRU_BWD(T, SIG, TANH, SFX)                                                             \
  GL_HD void gl_gru_bwd_##SFX(const gl_gru_cell *s, int64_t r, int64_t j) {                       \
    int64_t H = s->H, g0 = r * 3 * H + j, q0 = r * 4 * H + j, k = r * H + j;                      \
    const T *gt = (const T *)s->gates;                                                            \
    T rg = gt[q0], z = gt[q0 + H], n = gt[q0 + 2 * H], hn = gt[q0 + 3 * H];                       \
    T *dcar = (T *)s->dh_carry, *dx = (T *)s->dxp, *dw = (T *)s->dhw;                             \
    T dh = ((const T *)s->dh_out)[k] + dcar[k] + ((const T *)s->dh_mm)[k];                        \
    T dn = dh * (1 - z) * (1 - n * n);                                                            \
    T dz = dh * (((const T *)s->h_prev)[k] - n) * z * (1 - z);                                    \
    T dr = dn * hn * rg * (1 - rg);                                                               \
    dx[g0] = dr; dx[g0 + H] = dz; dx[g0 + 2 * H] = dn;                                            \
    dw[g0] = dr; dw[g0 + H] = dz; dw[g0 + 2 * H] = dn * rg;                                       \
    dcar[k] = dh * z;                                                                             \
  }
#define GL_RNN_FWD(T, SIG, TANH, SFX)                                                             \
  GL_HD void gl_rnn_fwd_##SFX(const gl_rnn_cell *s, int64_t r, int64_t j) {                       \
    int64_t k = r * s->H + j;                                                                     \
    T a = ((const T *)s->xp)[k] + ((const T *)s->hw)[k];                                          \
    ((T *)s->h)[k] = s->relu ? (a > 0 ? a : (T)0) : TANH(a);                                      \
  }
#define GL_RNN_BWD(T, SIG, TANH, SFX)                                                             \
  GL_HD void gl_rnn_bwd_##SFX(const gl_rnn_cell *s, int64_t r, int64_t j) {                       \
    int64_t k = r * s->H + j;                                                                     \
    T h = ((const T *)s->h)[k], dh = ((const T *)s->dh_out)[k] + ((const T *)s->dh_next)[k];      \
    ((T *)s->dxp)[k] = s->relu ? (h > 0 ? dh : (T)0) : dh * (1 - h * h);                          \
  }

/* Every cell function of one type. */
#define GL_CELL_FUNCTIONS(T, SIG, TANH, SFX)                                                      \
  GL_LSTM_FWD(T, SIG, TANH, SFX) GL_LSTM_BWD(T, SIG, TANH, SFX) GL_GRU_FWD(T, SIG, TANH, SFX)     \
  GL_GRU_BWD(T, SIG, TANH, SFX) GL_RNN_FWD(T, SIG, TANH, SFX) GL_RNN_BWD(T, SIG, TANH, SFX)
GL_CELL_FUNCTIONS(float, gl_vsigmoidf, gl_vtanhf, f32)
GL_CELL_FUNCTIONS(double, gl_sigmoid, tanh, f64)

/* The plain C face of kernels/rnn.cu (src/backend/cuda/cuda_rnn.c calls it): one step of
** a cell (LSTM, GRU, Elman RNN) on the GPU, s's pointers on the device; dt a GL_KD_* code (float32 or float64).
** 0, GL_KERR_NOTSUP or a cudaError_t, as launch.h's launchers. */
#ifdef __cplusplus
extern "C" {
#endif
int gl_klaunch_lstm_cell(void *stream, int dt, int backward, const gl_lstm_cell *s);
int gl_klaunch_gru_cell(void *stream, int dt, int backward, const gl_gru_cell *s);
int gl_klaunch_rnn_cell(void *stream, int dt, int backward, const gl_rnn_cell *s);
#ifdef __cplusplus
}
#endif

#endif
