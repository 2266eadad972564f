/*
** rnn.cu — the fused LSTM cell on the GPU: one time step over (N, H), one thread per
** (row, unit) in a grid-stride loop through kernels/rnn.h's element math (the CPU's), forward
** or backward. src/ops/rnn.c runs the time loop; the GEMMs of each step are cuBLAS's.
*/
#include "cuda_common.cuh"
#include "rnn.h"

template <class T> struct gl_rnn;
template <> struct gl_rnn<float> {
  static __device__ __forceinline__ void fwd(const gl_lstm_cell *s, int64_t r, int64_t j) { gl_lstm_fwd_f32(s, r, j); }
  static __device__ __forceinline__ void bwd(const gl_lstm_cell *s, int64_t r, int64_t j) { gl_lstm_bwd_f32(s, r, j); }
};
template <> struct gl_rnn<double> {
  static __device__ __forceinline__ void fwd(const gl_lstm_cell *s, int64_t r, int64_t j) { gl_lstm_fwd_f64(s, r, j); }
  static __device__ __forceinline__ void bwd(const gl_lstm_cell *s, int64_t r, int64_t j) { gl_lstm_bwd_f64(s, r, j); }
};

/* ---- kernels ------------------------------------------------------------------------------ */

template <class T>
__global__ void gl_k_lstm_cell(gl_lstm_cell s, int backward) {
  GL_KLOOP(k, s.N * s.H) {
    int64_t r = k / s.H, j = k - r * s.H;
    if (backward) gl_rnn<T>::bwd(&s, r, j);
    else gl_rnn<T>::fwd(&s, r, j);
  }
}

/* ---- launchers ---------------------------------------------------------------------------- */

extern "C" int gl_klaunch_lstm_cell(void *stream, int dt, int backward, const gl_lstm_cell *s) {
  int64_t n = s->N * s->H;
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == GL_KD_FLOAT32) gl_k_lstm_cell<float><<<gl_kblocks(n), GL_KTHREADS, 0, st>>>(*s, backward);
  else if (dt == GL_KD_FLOAT64) gl_k_lstm_cell<double><<<gl_kblocks(n), GL_KTHREADS, 0, st>>>(*s, backward);
  else return GL_KERR_NOTSUP;
  return (int)cudaGetLastError();
}
