/*
** attention.cu — FlashAttention's forward, flash-style on the GPU: one warp per query row
** walks the keys with an online softmax (running maximum, running sum, running output
** rescaled when the maximum grows), so the (L, S) scores are never stored. Each lane holds
** Ev / 32 (at most GL_KATT_MAX_EV / 32) output columns in registers; the dot product of a
** key is a warp sum. The same arithmetic as the CPU's (src/backend/cpu/cpu_fused.c), one
** key at a time instead of blocks of 64.
*/
#include "cuda_common.cuh"
#include "attention.h"

__device__ __forceinline__ float gl_att_exp(float x) { return expf(x); }
__device__ __forceinline__ double gl_att_exp(double x) { return exp(x); }
__device__ __forceinline__ float gl_att_log(float x) { return logf(x); }
__device__ __forceinline__ double gl_att_log(double x) { return log(x); }

template <class T> __device__ __forceinline__ T gl_att_warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* ---- kernels --------------------------------------------------------------------------------- */

#define GL_ATT_PER_LANE (GL_KATT_MAX_EV / 32)

/* One warp per row r of the B * L query rows; 8 rows per block of 256 threads. */
template <class T>
__global__ void gl_k_attention(int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, T *out, T *lse, const T *q,
                               const T *k, const T *v, T scale, int causal) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < B * L; r += warps) {
    const int64_t b = r / L, i = r - b * L;
    const T *qi = q + r * E, *kb = k + b * S * E, *vb = v + b * S * Ev;
    T acc[GL_ATT_PER_LANE];
#pragma unroll
    for (int c = 0; c < GL_ATT_PER_LANE; c++) acc[c] = 0;
    T m = -(T)INFINITY, l = 0;
    const int64_t send = causal ? (i + 1 < S ? i + 1 : S) : S;
    for (int64_t j = 0; j < send; j++) {
      const T *kj = kb + j * E;
      T d = 0;
      for (int64_t e = lane; e < E; e += 32) d += qi[e] * kj[e];
      const T s = gl_att_warp_sum(d) * scale;
      if (s > m) {
        const T f = m == -(T)INFINITY ? (T)0 : gl_att_exp(m - s);
        l *= f;
#pragma unroll
        for (int c = 0; c < GL_ATT_PER_LANE; c++) acc[c] *= f;
        m = s;
      }
      if (m == -(T)INFINITY) continue;
      const T p = gl_att_exp(s - m);
      l += p;
      const T *vj = vb + j * Ev;
#pragma unroll
      for (int c = 0; c < GL_ATT_PER_LANE; c++) {
        const int64_t col = lane + 32 * (int64_t)c;
        if (col < Ev) acc[c] += p * vj[col];
      }
    }
    const T rl = (T)1 / l;
#pragma unroll
    for (int c = 0; c < GL_ATT_PER_LANE; c++) {
      const int64_t col = lane + 32 * (int64_t)c;
      if (col < Ev) out[r * Ev + col] = acc[c] * rl;
    }
    if (lane == 0) lse[r] = m + gl_att_log(l);
  }
}

/* ---- launchers ------------------------------------------------------------------------------- */

template <int DT>
static int attention_dt(cudaStream_t s, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, void *out, void *lse,
                        const void *q, const void *k, const void *v, double scale, int causal) {
  if constexpr (!GL_DT_IN(GL_KATT_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    int64_t blocks = (B * L + 7) / 8;
    unsigned nb = (unsigned)(blocks > GL_KMAXBLOCKS ? GL_KMAXBLOCKS : blocks);
    gl_k_attention<T><<<nb, 256, 0, s>>>(B, L, S, E, Ev, (T *)out, (T *)lse, (const T *)q, (const T *)k,
                                         (const T *)v, (T)scale, causal);
    return (int)cudaGetLastError();
  }
}

extern "C" int gl_klaunch_attention(void *stream, int dt, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev,
                                    void *out, void *lse, const void *q, const void *k, const void *v, double scale,
                                    int causal) {
  if (Ev > GL_KATT_MAX_EV) return GL_KERR_NOTSUP;
  if (B <= 0 || L <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, attention_dt<DT>(s, B, L, S, E, Ev, out, lse, q, k, v, scale, causal));
}
