/*
** fused.cu — gpu.fused on the GPU: optimizer steps (one grid-stride pass over a parameter,
** its gradient and state; the same update rules and subnormal flushing as
** src/backend/cpu/cpu_fused.c) and softmax cross-entropy, one warp per row forward (max,
** sum of exponentials, loss and probabilities by warp shuffles) and one thread per
** element backward.
*/
#include <float.h>
#include "cuda_common.cuh"
#include "fused.h"

template <class T> struct tiny;
template <> struct tiny<float> { static __device__ __forceinline__ float v() { return FLT_MIN; } };
template <> struct tiny<double> { static __device__ __forceinline__ double v() { return DBL_MIN; } };

/* Subnormal state becomes 0 (see cpu_fused.c: on the GPU it is for agreeing with the CPU). */
template <class T> __device__ __forceinline__ T flush(T x) {
  return x > -tiny<T>::v() && x < tiny<T>::v() ? (T)0 : x;
}

template <class T>
__global__ void gl_k_sgd(int64_t n, T *p, const T *g, T *buf, gl_koptim hp) {
  const T lr = (T)hp.lr, wd = (T)hp.weight_decay, mom = (T)hp.momentum;
  const T damp = (T)(1 - hp.dampening), sgn = hp.maximize ? (T)-1 : (T)1;
  GL_KLOOP(i, n) {
    T gi = sgn * g[i] + wd * p[i];
    if (buf) {
      T b = flush<T>(hp.first ? gi : mom * buf[i] + damp * gi);
      buf[i] = b;
      gi = hp.nesterov ? gi + mom * b : b;
    }
    p[i] -= lr * gi;
  }
}

template <class T>
__global__ void gl_k_adam(int64_t n, T *p, const T *g, T *m, T *v, T *vmax, gl_koptim hp) {
  const T eps = (T)hp.eps, b1 = (T)hp.beta1, b2 = (T)hp.beta2;
  const T c1 = (T)(1 - hp.beta1), c2 = (T)(1 - hp.beta2);
  const T step = (T)(hp.lr / hp.bc1), rbc2 = (T)(1 / sqrt(hp.bc2));
  const T sgn = hp.maximize ? (T)-1 : (T)1;
  const T shrink = hp.decoupled ? (T)(1 - hp.lr * hp.weight_decay) : (T)1;
  const T gwd = hp.decoupled ? (T)0 : (T)hp.weight_decay;
  GL_KLOOP(i, n) {
    T pi = p[i];
    T gi = sgn * g[i] + gwd * pi;
    pi *= shrink;
    T mi = flush<T>(b1 * m[i] + c1 * gi);
    T vi = flush<T>(b2 * v[i] + c2 * (gi * gi));
    m[i] = mi;
    v[i] = vi;
    if (vmax) { vi = vmax[i] > vi ? vmax[i] : vi; vmax[i] = vi; }
    p[i] = pi - step * (mi / (sqrt(vi) * rbc2 + eps));
  }
}

template <class T>
__global__ void gl_k_rmsprop(int64_t n, T *p, const T *g, T *sq, T *buf, T *ga, gl_koptim hp) {
  const T lr = (T)hp.lr, wd = (T)hp.weight_decay, eps = (T)hp.eps;
  const T a = (T)hp.alpha, ca = (T)(1 - hp.alpha), mom = (T)hp.momentum;
  GL_KLOOP(i, n) {
    T gi = g[i] + wd * p[i];
    T s = flush<T>(a * sq[i] + ca * (gi * gi));
    sq[i] = s;
    if (ga) { T mm = flush<T>(a * ga[i] + ca * gi); ga[i] = mm; s -= mm * mm; }
    T avg = sqrt(s) + eps;
    if (buf) { T b = flush<T>(mom * buf[i] + gi / avg); buf[i] = b; p[i] -= lr * b; }
    else p[i] -= lr * (gi / avg);
  }
}

template <class T>
static int optim_t(cudaStream_t s, int kind, int64_t n, void *p, const void *g, void *s0, void *s1, void *s2,
                   const gl_koptim *hp) {
  unsigned nb = gl_kblocks(n);
  switch (kind) {
    case 0: gl_k_sgd<T><<<nb, GL_KTHREADS, 0, s>>>(n, (T *)p, (const T *)g, (T *)s0, *hp); break;
    case 1: gl_k_adam<T><<<nb, GL_KTHREADS, 0, s>>>(n, (T *)p, (const T *)g, (T *)s0, (T *)s1, (T *)s2, *hp); break;
    case 2: gl_k_rmsprop<T><<<nb, GL_KTHREADS, 0, s>>>(n, (T *)p, (const T *)g, (T *)s0, (T *)s1, (T *)s2, *hp); break;
    default: return GL_KERR_NOTSUP;
  }
  return (int)cudaGetLastError();
}

extern "C" int gl_klaunch_optim(void *stream, int kind, int dt, int64_t n, void *p, const void *g, void *s0,
                                void *s1, void *s2, const gl_koptim *hp) {
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == GL_KD_FLOAT32) return optim_t<float>(s, kind, n, p, g, s0, s1, s2, hp);
  if (dt == GL_KD_FLOAT64) return optim_t<double>(s, kind, n, p, g, s0, s1, s2, hp);
  return GL_KERR_NOTSUP;
}

/* ---- softmax cross-entropy ---------------------------------------------------------------- */

__device__ __forceinline__ float gl_expt(float x) { return expf(x); }
__device__ __forceinline__ double gl_expt(double x) { return exp(x); }
__device__ __forceinline__ float gl_logt(float x) { return logf(x); }
__device__ __forceinline__ double gl_logt(double x) { return log(x); }

template <class T> __device__ __forceinline__ T warp_max(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) { T w = __shfl_xor_sync(0xffffffffu, v, o); v = w > v ? w : v; }
  return v;
}
template <class T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* One warp per row; 8 rows per block of 256 threads. */
template <class T>
__global__ void gl_k_xent(int64_t N, int64_t C, T *loss, T *probs, const T *z, const int64_t *labels,
                          const T *target, T on, T off) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); i < N; i += warps) {
    const T *zi = z + i * C;
    T *pi = probs + i * C;
    T m = -INFINITY;
    for (int64_t c = lane; c < C; c += 32) m = zi[c] > m ? zi[c] : m;
    m = warp_max(m);
    if (!isfinite(m)) m = 0;
    T sum = 0, zsum = 0, tz = 0;
    for (int64_t c = lane; c < C; c += 32) {
      T e = gl_expt(zi[c] - m);
      pi[c] = e;
      sum += e;
      zsum += zi[c];
      if (target) tz += target[i * C + c] * zi[c];
    }
    sum = warp_sum(sum);
    zsum = warp_sum(zsum);
    tz = warp_sum(tz);
    const T r = 1 / sum;
    for (int64_t c = lane; c < C; c += 32) pi[c] *= r;
    if (lane == 0) {
      T lse = m + gl_logt(sum);
      if (labels) {
        int64_t l = labels[i];
        tz = l >= 1 && l <= C ? on * zi[l - 1] + off * zsum : (T)NAN;
      }
      loss[i] = lse - tz;
    }
  }
}

template <class T>
__global__ void gl_k_xent_bwd(int64_t N, int64_t C, T *dst, const T *probs, const int64_t *labels,
                              const T *target, T on, T off, const T *gout, int64_t gstride, T scale) {
  GL_KLOOP(j, N * C) {
    int64_t i = j / C, c = j - i * C;
    T k = gout[i * gstride] * scale;
    if (labels) {                    /* the CPU's order of operations: bit-equal results */
      int64_t l = labels[i];
      T d = (probs[j] - off) * k;
      if (c == l - 1) d -= on * k;
      dst[j] = l >= 1 && l <= C ? d : (T)NAN;
    } else {
      dst[j] = (probs[j] - target[j]) * k;
    }
  }
}

template <class T>
static int xent_t(cudaStream_t s, int64_t N, int64_t C, void *loss, void *probs, const void *z,
                  const int64_t *labels, const void *target, double smoothing) {
  int64_t blocks = (N + 7) / 8;
  unsigned nb = (unsigned)(blocks > GL_KMAXBLOCKS ? GL_KMAXBLOCKS : blocks);
  gl_k_xent<T><<<nb, 256, 0, s>>>(N, C, (T *)loss, (T *)probs, (const T *)z, labels, (const T *)target,
                                  (T)(1 - smoothing), (T)(smoothing / (double)C));
  return (int)cudaGetLastError();
}

extern "C" int gl_klaunch_xent(void *stream, int dt, int64_t N, int64_t C, void *loss, void *probs, const void *z,
                               const int64_t *labels, const void *target, double smoothing) {
  if (N <= 0 || C <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == GL_KD_FLOAT32) return xent_t<float>(s, N, C, loss, probs, z, labels, target, smoothing);
  if (dt == GL_KD_FLOAT64) return xent_t<double>(s, N, C, loss, probs, z, labels, target, smoothing);
  return GL_KERR_NOTSUP;
}

template <class T>
static int xent_bwd_t(cudaStream_t s, int64_t N, int64_t C, void *dst, const void *probs, const int64_t *labels,
                      const void *target, double smoothing, const void *gout, int64_t gstride, double scale) {
  gl_k_xent_bwd<T><<<gl_kblocks(N * C), GL_KTHREADS, 0, s>>>(N, C, (T *)dst, (const T *)probs, labels,
                                                            (const T *)target, (T)(1 - smoothing),
                                                            (T)(smoothing / (double)C), (const T *)gout, gstride,
                                                            (T)scale);
  return (int)cudaGetLastError();
}

extern "C" int gl_klaunch_xent_bwd(void *stream, int dt, int64_t N, int64_t C, void *dst, const void *probs,
                                   const int64_t *labels, const void *target, double smoothing, const void *gout,
                                   int64_t gstride, double scale) {
  if (N <= 0 || C <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == GL_KD_FLOAT32) return xent_bwd_t<float>(s, N, C, dst, probs, labels, target, smoothing, gout, gstride, scale);
  if (dt == GL_KD_FLOAT64) return xent_bwd_t<double>(s, N, C, dst, probs, labels, target, smoothing, gout, gstride, scale);
  return GL_KERR_NOTSUP;
}
