/*
** cpu_rnn.c — the fused recurrent cells on the CPU (LSTM, GRU, Elman RNN): one time step over
** (N, H) with kernels/rnn.h's element math, forward or backward, rows split across the free
** cores when the step is big enough to pay for the team (a char-rnn step of 32 x 256 units
** is not).
*/
#include <omp.h>
#include "cpu.h"

/* The (row, unit) loop of one cell: FN (a forward or backward of kernels/rnn.h) over the
** N x H units of cell struct S, its rows split over a team of NT. */
#define GL_PRAGMA(x) _Pragma(#x)
#define GL_CELL_LOOP(S, N, H, NT, FN)                                                             \
  do {                                                                                            \
    GL_PRAGMA(omp parallel for num_threads(NT) schedule(static) if(NT > 1))                       \
    for (int64_t r = 0; r < (N); r++)                                                             \
      for (int64_t j = 0; j < (H); j++) FN(S, r, j);                                              \
  } while (0)

gl_status gl_cpu_lstm_cell(gl_device dev, bool backward, gl_dtype dt, const gl_lstm_cell *s) {
  (void)dev;
  int64_t N = s->N, H = s->H;
  int nt = gl_cpu_team_size(N * H * 8);
  if (dt == GL_FLOAT32) {
    if (backward) GL_CELL_LOOP(s, N, H, nt, gl_lstm_bwd_f32);
    else GL_CELL_LOOP(s, N, H, nt, gl_lstm_fwd_f32);
  } else if (dt == GL_FLOAT64) {
    if (backward) GL_CELL_LOOP(s, N, H, nt, gl_lstm_bwd_f64);
    else GL_CELL_LOOP(s, N, H, nt, gl_lstm_fwd_f64);
  } else {
    return gl_fail(GL_EINVAL, "lstm: float32 or float64 expected, got %s", gl_dtypes[dt].name);
  }
  gl_cpu_team_done(nt);
  return GL_OK;
}

gl_status gl_cpu_gru_cell(gl_device dev, bool backward, gl_dtype dt, const gl_gru_cell *s) {
  (void)dev;
  int64_t N = s->N, H = s->H;
  int nt = gl_cpu_team_size(N * H * 8);
  if (dt == GL_FLOAT32) {
    if (backward) GL_CELL_LOOP(s, N, H, nt, gl_gru_bwd_f32);
    else GL_CELL_LOOP(s, N, H, nt, gl_gru_fwd_f32);
  } else if (dt == GL_FLOAT64) {
    if (backward) GL_CELL_LOOP(s, N, H, nt, gl_gru_bwd_f64);
    else GL_CELL_LOOP(s, N, H, nt, gl_gru_fwd_f64);
  } else {
    return gl_fail(GL_EINVAL, "gru: float32 or float64 expected, got %s", gl_dtypes[dt].name);
  }
  gl_cpu_team_done(nt);
  return GL_OK;
}

gl_status gl_cpu_rnn_cell(gl_device dev, bool backward, gl_dtype dt, const gl_rnn_cell *s) {
  (void)dev;
  int64_t N = s->N, H = s->H;
  int nt = gl_cpu_team_size(N * H * 2);
  if (dt == GL_FLOAT32) {
    if (backward) GL_CELL_LOOP(s, N, H, nt, gl_rnn_bwd_f32);
    else GL_CELL_LOOP(s, N, H, nt, gl_rnn_fwd_f32);
  } else if (dt == GL_FLOAT64) {
    if (backward) GL_CELL_LOOP(s, N, H, nt, gl_rnn_bwd_f64);
    else GL_CELL_LOOP(s, N, H, nt, gl_rnn_fwd_f64);
  } else {
    return gl_fail(GL_EINVAL, "rnn: float32 or float64 expected, got %s", gl_dtypes[dt].name);
  }
  gl_cpu_team_done(nt);
  return GL_OK;
}
