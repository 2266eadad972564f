/*
** cuda_rnn.c — the fused recurrent cells on the GPU (kernels/rnn.cu), backend.h's lstm_cell,
** gru_cell and rnn_cell contracts: one time step, the pointers of s on this device
** (src/ops/rnn.c made them).
*/
#include "cuda.h"

/* The launcher's answer as a status naming the op. */
static gl_status cell_done(gl_device dev, cudaStream_t st, int rc, gl_dtype dt, const char *op) {
  if (rc == GL_KERR_NOTSUP) return gl_fail(GL_ENOTSUP, "%s of %s is not supported on cuda", op, gl_dtypes[dt].name);
  return gl_cuda_launched(dev, st, rc, op);
}

gl_status gl_cuda_lstm_cell(gl_device dev, bool backward, gl_dtype dt, const gl_lstm_cell *s) {
  cudaStream_t st;
  GL_TRY(gl_cuda_enter(dev, &st));
  int rc = gl_klaunch_lstm_cell(st, (int)dt, backward ? 1 : 0, s);
  return cell_done(dev, st, rc, dt, backward ? "lstm_backward" : "lstm");
}

gl_status gl_cuda_gru_cell(gl_device dev, bool backward, gl_dtype dt, const gl_gru_cell *s) {
  cudaStream_t st;
  GL_TRY(gl_cuda_enter(dev, &st));
  int rc = gl_klaunch_gru_cell(st, (int)dt, backward ? 1 : 0, s);
  return cell_done(dev, st, rc, dt, backward ? "gru_backward" : "gru");
}

gl_status gl_cuda_rnn_cell(gl_device dev, bool backward, gl_dtype dt, const gl_rnn_cell *s) {
  cudaStream_t st;
  GL_TRY(gl_cuda_enter(dev, &st));
  int rc = gl_klaunch_rnn_cell(st, (int)dt, backward ? 1 : 0, s);
  return cell_done(dev, st, rc, dt, backward ? "rnn_backward" : "rnn");
}
