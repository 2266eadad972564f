/*
** rnn.cu — the fused recurrent cells on the GPU (LSTM, GRU, Elman RNN): one time step over
** (N, H), one thread per (row, unit) in a grid-stride loop through kernels/rnn.h's element
** math (the CPU's), forward or backward. src/ops/rnn.c runs the time loop; the GEMMs of each
** step are cuBLAS's.
*/
#include "cuda_common.cuh"
#include "rnn.h"

/* The element functions of each cell by value type. */
template <class T> struct gl_rnn;
#define GL_RNN_TRAITS(T, SFX)                                                                     \
  template <> struct gl_rnn<T> {                                                                  \
    static __device__ __forceinline__ void fwd(const gl_lstm_cell *s, int64_t r, int64_t j) { gl_lstm_fwd_##SFX(s, r, j); } \
    static __device__ __forceinline__ void bwd(const gl_lstm_cell *s, int64_t r, int64_t j) { gl_lstm_bwd_##SFX(s, r, j); } \
    static __device__ __forceinline__ void fwd(const gl_gru_cell *s, int64_t r, int64_t j) { gl_gru_fwd_##SFX(s, r, j); } \
    static __device__ __forceinline__ void bwd(const gl_gru_cell *s, int64_t r, int64_t j) { gl_gru_bwd_##SFX(s, r, j); } \
    static __device__ __forceinline__ void fwd(const gl_rnn_cell *s, int64_t r, int64_t j) { gl_rnn_fwd_##SFX(s, r, j); } \
    static __device__ __forceinline__ void bwd(const gl_rnn_cell *s, int64_t r, int64_t j) { gl_rnn_bwd_##SFX(s, r, j); } \
  };
GL_RNN_TRAITS(float, f32)
GL_RNN_TRAITS(double, f64)
#undef GL_RNN_TRAITS

/* ---- kernels ------------------------------------------------------------------------------ */

template <class T, class C>
__global__ void gl_k_rnn_cell(C s, int backward) {
  GL_KLOOP(k, s.N * s.H) {
    int64_t r = k / s.H, j = k - r * s.H;
    if (backward) gl_rnn<T>::bwd(&s, r, j);
    else gl_rnn<T>::fwd(&s, r, j);
  }
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <class C>
static int launch_cell(void *stream, int dt, int backward, const C *s) {
  int64_t n = s->N * s->H;
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == GL_KD_FLOAT32) gl_k_rnn_cell<float, C><<<gl_kblocks(n), GL_KTHREADS, 0, st>>>(*s, backward);
  else if (dt == GL_KD_FLOAT64) gl_k_rnn_cell<double, C><<<gl_kblocks(n), GL_KTHREADS, 0, st>>>(*s, backward);
  else return GL_KERR_NOTSUP;
  return (int)cudaGetLastError();
}

extern "C" int gl_klaunch_lstm_cell(void *stream, int dt, int backward, const gl_lstm_cell *s) {
  return launch_cell(stream, dt, backward, s);
}

extern "C" int gl_klaunch_gru_cell(void *stream, int dt, int backward, const gl_gru_cell *s) {
  return launch_cell(stream, dt, backward, s);
}

extern "C" int gl_klaunch_rnn_cell(void *stream, int dt, int backward, const gl_rnn_cell *s) {
  return launch_cell(stream, dt, backward, s);
}
