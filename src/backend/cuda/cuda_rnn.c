/*
** cuda_rnn.c — the fused LSTM cell on the GPU (kernels/rnn.cu), backend.h's lstm_cell
** contract: one time step, the pointers of s on this device (src/ops/rnn.c made them).
*/
#include "cuda.h"

gl_status gl_cuda_lstm_cell(gl_device dev, bool backward, gl_dtype dt, const gl_lstm_cell *s) {
  cudaStream_t st;
  GL_TRY(gl_cuda_enter(dev, &st));
  int rc = gl_klaunch_lstm_cell(st, (int)dt, backward ? 1 : 0, s);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "lstm of %s is not supported on cuda", gl_dtypes[dt].name);
  return gl_cuda_launched(dev, st, rc, backward ? "lstm_backward" : "lstm");
}
