/*
** cpu_rnn.c — the fused LSTM cell on the CPU: one time step over (N, H) with kernels/rnn.h's
** element math, forward or backward, rows split across the free cores when the step is
** big enough to pay for the team (a char-rnn step of 32 x 256 units is not).
*/
#include <omp.h>
#include "cpu.h"

gl_status gl_cpu_lstm_cell(gl_device dev, bool backward, gl_dtype dt, const gl_lstm_cell *s) {
  (void)dev;
  int64_t N = s->N, H = s->H;
  int nt = gl_cpu_team_size(N * H * 8);
  if (dt == GL_FLOAT32) {
    if (backward) {
      #pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
      for (int64_t r = 0; r < N; r++)
        for (int64_t j = 0; j < H; j++) gl_lstm_bwd_f32(s, r, j);
    } else {
      #pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
      for (int64_t r = 0; r < N; r++)
        for (int64_t j = 0; j < H; j++) gl_lstm_fwd_f32(s, r, j);
    }
    gl_cpu_team_done(nt);
    return GL_OK;
  }
  if (dt == GL_FLOAT64) {
    if (backward) {
      #pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
      for (int64_t r = 0; r < N; r++)
        for (int64_t j = 0; j < H; j++) gl_lstm_bwd_f64(s, r, j);
    } else {
      #pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
      for (int64_t r = 0; r < N; r++)
        for (int64_t j = 0; j < H; j++) gl_lstm_fwd_f64(s, r, j);
    }
    gl_cpu_team_done(nt);
    return GL_OK;
  }
  return gl_fail(GL_EINVAL, "lstm: float32 or float64 expected, got %s", gl_dtypes[dt].name);
}
