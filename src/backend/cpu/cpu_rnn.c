/*
** cpu_rnn.c — the fused recurrent cells on the CPU (LSTM, GRU, Elman RNN): one time step over
** (N, H) with kernels/rnn.h's element math, forward or backward, rows split across the free
** cores when the step is big enough to pay for the team (a char-rnn step of 32 x 256 units
** is not).
*/
#include <omp.h>
#include "cpu.h"

/* The (row, unit) loop of one cell function FN of kernels/rnn.h over the N x H units of a
** cell struct of type CELL, its rows split over a team of nt; named FN_loop. */
typedef void cell_loop(const void *cell, int nt);
#define GL_CELL_LOOP(CELL, FN)                                                                    \
  static void FN##_loop(const void *cell, int nt) {                                               \
    const CELL *s = cell;                                                                         \
    const int64_t N = s->N, H = s->H;                                                             \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")                       \
    for (int64_t r = 0; r < N; r++)                                                               \
      for (int64_t j = 0; j < H; j++) FN(s, r, j);                                                \
  }
#define GL_CELL_LOOPS(CELL, KIND)                                                                 \
  GL_CELL_LOOP(CELL, gl_##KIND##_fwd_f32) GL_CELL_LOOP(CELL, gl_##KIND##_fwd_f64)                 \
  GL_CELL_LOOP(CELL, gl_##KIND##_bwd_f32) GL_CELL_LOOP(CELL, gl_##KIND##_bwd_f64)
GL_CELL_LOOPS(gl_lstm_cell, lstm)
GL_CELL_LOOPS(gl_gru_cell, gru)
GL_CELL_LOOPS(gl_rnn_cell, rnn)

/* One step of a cell: loops[backward][float64] over the cell struct; work sizes the team. */
static gl_status run_cell(const char *op, gl_dtype dt, bool backward, const void *cell, int64_t work,
                          cell_loop *const loops[2][2]) {
  if (dt != GL_FLOAT32 && dt != GL_FLOAT64)
    return gl_fail(GL_EINVAL, "%s: float32 or float64 expected, got %s", op, gl_dtypes[dt].name);
  int nt = gl_cpu_team_size(work);
  loops[backward][dt == GL_FLOAT64](cell, nt);
  gl_cpu_team_done(nt);
  return GL_OK;
}

gl_status gl_cpu_lstm_cell(gl_device dev, bool backward, gl_dtype dt, const gl_lstm_cell *s) {
  static cell_loop *const loops[2][2] = { { gl_lstm_fwd_f32_loop, gl_lstm_fwd_f64_loop },
                                          { gl_lstm_bwd_f32_loop, gl_lstm_bwd_f64_loop } };
  (void)dev;
  return run_cell("lstm", dt, backward, s, s->N * s->H * 8, loops);
}

gl_status gl_cpu_gru_cell(gl_device dev, bool backward, gl_dtype dt, const gl_gru_cell *s) {
  static cell_loop *const loops[2][2] = { { gl_gru_fwd_f32_loop, gl_gru_fwd_f64_loop },
                                          { gl_gru_bwd_f32_loop, gl_gru_bwd_f64_loop } };
  (void)dev;
  return run_cell("gru", dt, backward, s, s->N * s->H * 8, loops);
}

gl_status gl_cpu_rnn_cell(gl_device dev, bool backward, gl_dtype dt, const gl_rnn_cell *s) {
  static cell_loop *const loops[2][2] = { { gl_rnn_fwd_f32_loop, gl_rnn_fwd_f64_loop },
                                          { gl_rnn_bwd_f32_loop, gl_rnn_bwd_f64_loop } };
  (void)dev;
  return run_cell("rnn", dt, backward, s, s->N * s->H * 2, loops);
}
