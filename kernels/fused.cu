/*
** fused.cu — gpu.fused on the GPU: optimizer steps (one grid-stride pass over a parameter,
** its gradient and state through kernels/optim.h's element steps, as on the CPU: SGD, Adam,
** RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam) and softmax
** cross-entropy, one warp per row forward (max, sum of exponentials, loss and
** probabilities by warp shuffles) and one thread per element backward.
*/
#include "warp.cuh"
#include "fused.h"
#include "xent.h"

/* optim.h's element steps by type. */
template <class T> struct gl_optim_steps;
#define GL_OPTIM_STEPS(T, SFX)                                                                    \
  template <> struct gl_optim_steps<T> {                                                          \
    typedef gl_optim_args_##SFX args;                                                             \
    static __device__ __forceinline__ args of(const gl_optim_hp *hp) { return gl_optim_args_##SFX##_of(hp); } \
    static __device__ __forceinline__ T sgd(T p, T g, T *b, int f, int n, args k) { return gl_sgd_##SFX(p, g, b, f, n, k); } \
    static __device__ __forceinline__ T adam(T p, T g, T *m, T *v, T *vm, args k) { return gl_adam_##SFX(p, g, m, v, vm, k); } \
    static __device__ __forceinline__ T rmsprop(T p, T g, T *s, T *b, T *ga, args k) { return gl_rmsprop_##SFX(p, g, s, b, ga, k); } \
    static __device__ __forceinline__ T adagrad(T p, T g, T *s, args k) { return gl_adagrad_##SFX(p, g, s, k); } \
    static __device__ __forceinline__ T adadelta(T p, T g, T *s, T *a, args k) { return gl_adadelta_##SFX(p, g, s, a, k); } \
    static __device__ __forceinline__ T adamax(T p, T g, T *m, T *u, args k) { return gl_adamax_##SFX(p, g, m, u, k); } \
    static __device__ __forceinline__ T nadam(T p, T g, T *m, T *v, args k) { return gl_nadam_##SFX(p, g, m, v, k); } \
    static __device__ __forceinline__ T radam(T p, T g, T *m, T *v, int r, args k) { return gl_radam_##SFX(p, g, m, v, r, k); } \
  };
GL_OPTIM_STEPS(float, f32)
GL_OPTIM_STEPS(double, f64)
#undef GL_OPTIM_STEPS

/* xent.h's gradient of one logit by type. */
__device__ __forceinline__ float xent_grad(float p, int hit, float on, float off, float k) {
  return gl_xent_grad_f32(p, hit, on, off, k);
}
__device__ __forceinline__ double xent_grad(double p, int hit, double on, double off, double k) {
  return gl_xent_grad_f64(p, hit, on, off, k);
}

template <class T>
__global__ void gl_k_sgd(int64_t n, T *p, const T *g, T *buf, gl_optim_hp hp) {
  const typename gl_optim_steps<T>::args k = gl_optim_steps<T>::of(&hp);
  GL_KLOOP(i, n) p[i] = gl_optim_steps<T>::sgd(p[i], g[i], buf ? buf + i : NULL, hp.first, hp.nesterov, k);
}

template <class T>
__global__ void gl_k_adam(int64_t n, T *p, const T *g, T *m, T *v, T *vmax, gl_optim_hp hp) {
  const typename gl_optim_steps<T>::args k = gl_optim_steps<T>::of(&hp);
  GL_KLOOP(i, n) p[i] = gl_optim_steps<T>::adam(p[i], g[i], m + i, v + i, vmax ? vmax + i : NULL, k);
}

template <class T>
__global__ void gl_k_rmsprop(int64_t n, T *p, const T *g, T *sq, T *buf, T *ga, gl_optim_hp hp) {
  const typename gl_optim_steps<T>::args k = gl_optim_steps<T>::of(&hp);
  GL_KLOOP(i, n) p[i] = gl_optim_steps<T>::rmsprop(p[i], g[i], sq + i, buf ? buf + i : NULL, ga ? ga + i : NULL, k);
}

template <class T>
__global__ void gl_k_adagrad(int64_t n, T *p, const T *g, T *sum, gl_optim_hp hp) {
  const typename gl_optim_steps<T>::args k = gl_optim_steps<T>::of(&hp);
  GL_KLOOP(i, n) p[i] = gl_optim_steps<T>::adagrad(p[i], g[i], sum + i, k);
}

/* Adadelta (square_avg, acc_delta), Adamax (exp_avg, exp_inf), NAdam and RAdam (exp_avg,
** exp_avg_sq): two state arrays each; kind picks the element step. */
template <class T>
__global__ void gl_k_optim2(int kind, int64_t n, T *p, const T *g, T *s0, T *s1, gl_optim_hp hp) {
  const typename gl_optim_steps<T>::args k = gl_optim_steps<T>::of(&hp);
  switch (kind) {
    case GL_OPTIM_ADADELTA: GL_KLOOP(i, n) p[i] = gl_optim_steps<T>::adadelta(p[i], g[i], s0 + i, s1 + i, k); break;
    case GL_OPTIM_ADAMAX: GL_KLOOP(i, n) p[i] = gl_optim_steps<T>::adamax(p[i], g[i], s0 + i, s1 + i, k); break;
    case GL_OPTIM_NADAM: GL_KLOOP(i, n) p[i] = gl_optim_steps<T>::nadam(p[i], g[i], s0 + i, s1 + i, k); break;
    default: GL_KLOOP(i, n) p[i] = gl_optim_steps<T>::radam(p[i], g[i], s0 + i, s1 + i, hp.rectify, k); break;
  }
}

/* The launchers of one dtype: GL_KERR_NOTSUP outside GL_KFUSED_DTYPES (optim.h's element steps
** are float and double). */
template <int DT>
static int optim_dt(cudaStream_t s, int kind, int64_t n, void *p, const void *g, void *s0, void *s1, void *s2,
                    const gl_optim_hp *hp) {
  if constexpr (!GL_DT_IN(GL_KFUSED_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    unsigned nb = gl_kblocks(n);
    switch (kind) {
      case GL_OPTIM_SGD: gl_k_sgd<T><<<nb, GL_KTHREADS, 0, s>>>(n, (T *)p, (const T *)g, (T *)s0, *hp); break;
      case GL_OPTIM_ADAM: gl_k_adam<T><<<nb, GL_KTHREADS, 0, s>>>(n, (T *)p, (const T *)g, (T *)s0, (T *)s1, (T *)s2, *hp); break;
      case GL_OPTIM_RMSPROP: gl_k_rmsprop<T><<<nb, GL_KTHREADS, 0, s>>>(n, (T *)p, (const T *)g, (T *)s0, (T *)s1, (T *)s2, *hp); break;
      case GL_OPTIM_ADAGRAD: gl_k_adagrad<T><<<nb, GL_KTHREADS, 0, s>>>(n, (T *)p, (const T *)g, (T *)s0, *hp); break;
      case GL_OPTIM_ADADELTA: case GL_OPTIM_ADAMAX: case GL_OPTIM_NADAM: case GL_OPTIM_RADAM:
        gl_k_optim2<T><<<nb, GL_KTHREADS, 0, s>>>(kind, n, (T *)p, (const T *)g, (T *)s0, (T *)s1, *hp);
        break;
      default: return GL_KERR_NOTSUP;
    }
    return (int)cudaGetLastError();
  }
}

extern "C" int gl_klaunch_optim(void *stream, int kind, int dt, int64_t n, void *p, const void *g, void *s0,
                                void *s1, void *s2, const gl_optim_hp *hp) {
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, optim_dt<DT>(s, kind, n, p, g, s0, s1, s2, hp));
}

/* ---- softmax cross-entropy ---------------------------------------------------------------- */


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
    m = gl_warp_max(m);
    if (!isfinite(m)) m = 0;
    T sum = 0, zsum = 0, tz = 0;
    for (int64_t c = lane; c < C; c += 32) {
      T e = gl_expt(zi[c] - m);
      pi[c] = e;
      sum += e;
      zsum += zi[c];
      if (target) tz += target[i * C + c] * zi[c];
    }
    sum = gl_warp_sum(sum);
    zsum = gl_warp_sum(zsum);
    tz = gl_warp_sum(tz);
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
    if (labels) {
      int64_t l = labels[i];
      dst[j] = l >= 1 && l <= C ? xent_grad(probs[j], c == l - 1, on, off, k) : (T)NAN;
    } else {
      dst[j] = (probs[j] - target[j]) * k;
    }
  }
}

template <int DT>
static int xent_dt(cudaStream_t s, int64_t N, int64_t C, void *loss, void *probs, const void *z,
                   const int64_t *labels, const void *target, double smoothing) {
  if constexpr (!GL_DT_IN(GL_KFUSED_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    unsigned nb = gl_warp_row_blocks(N);
    gl_k_xent<T><<<nb, 256, 0, s>>>(N, C, (T *)loss, (T *)probs, (const T *)z, labels, (const T *)target,
                                    (T)(1 - smoothing), (T)(smoothing / (double)C));
    return (int)cudaGetLastError();
  }
}

extern "C" int gl_klaunch_xent(void *stream, int dt, int64_t N, int64_t C, void *loss, void *probs, const void *z,
                               const int64_t *labels, const void *target, double smoothing) {
  if (N <= 0 || C <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, xent_dt<DT>(s, N, C, loss, probs, z, labels, target, smoothing));
}

template <int DT>
static int xent_bwd_dt(cudaStream_t s, int64_t N, int64_t C, void *dst, const void *probs, const int64_t *labels,
                       const void *target, double smoothing, const void *gout, int64_t gstride, double scale) {
  if constexpr (!GL_DT_IN(GL_KFUSED_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    gl_k_xent_bwd<T><<<gl_kblocks(N * C), GL_KTHREADS, 0, s>>>(N, C, (T *)dst, (const T *)probs, labels,
                                                              (const T *)target, (T)(1 - smoothing),
                                                              (T)(smoothing / (double)C), (const T *)gout, gstride,
                                                              (T)scale);
    return (int)cudaGetLastError();
  }
}

extern "C" int gl_klaunch_xent_bwd(void *stream, int dt, int64_t N, int64_t C, void *dst, const void *probs,
                                   const int64_t *labels, const void *target, double smoothing, const void *gout,
                                   int64_t gstride, double scale) {
  if (N <= 0 || C <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, xent_bwd_dt<DT>(s, N, C, dst, probs, labels, target, smoothing, gout, gstride,
                                                   scale));
}

/* ---- layer norm ----------------------------------------------------------------------------- */


/* One warp per row, as the cross-entropy: the mean, then the variance of the centred values
** (two reads of the row, as the CPU does), then y. */
template <class T>
__global__ void gl_k_layer_norm(int64_t R, int64_t D, T *y, T *mean, T *rstd, const T *x, const T *w, const T *b,
                                T eps) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); i < R; i += warps) {
    const T *xi = x + i * D;
    T *yi = y + i * D;
    T s = 0;
    for (int64_t j = lane; j < D; j += 32) s += xi[j];
    const T m = gl_warp_sum(s) / (T)D;
    T v = 0;
    for (int64_t j = lane; j < D; j += 32) v += (xi[j] - m) * (xi[j] - m);
    const T r = (T)1 / gl_sqrtt(gl_warp_sum(v) / (T)D + eps);
    for (int64_t j = lane; j < D; j += 32) yi[j] = (xi[j] - m) * r * (w ? w[j] : (T)1) + (b ? b[j] : (T)0);
    if (lane == 0) { mean[i] = m; rstd[i] = r; }
  }
}

/* gx: one warp per row; gx = rstd (g w - mean(g w) - xhat mean(g w xhat)). */
template <class T>
__global__ void gl_k_layer_norm_bwd(int64_t R, int64_t D, T *gx, const T *g, const T *x, const T *mean, const T *rstd,
                                    const T *w) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); i < R; i += warps) {
    const T *xi = x + i * D, *gi = g + i * D;
    const T m = mean[i], r = rstd[i];
    T a = 0, c = 0;
    for (int64_t j = lane; j < D; j += 32) {
      T gh = gi[j] * (w ? w[j] : (T)1);
      a += gh;
      c += gh * (xi[j] - m) * r;
    }
    a = gl_warp_sum(a) / (T)D;
    c = gl_warp_sum(c) / (T)D;
    for (int64_t j = lane; j < D; j += 32)
      gx[i * D + j] = r * (gi[j] * (w ? w[j] : (T)1) - a - (xi[j] - m) * r * c);
  }
}

/* gw, gb: one thread per column, down the rows (coalesced across the threads of a block). */
template <class T>
__global__ void gl_k_layer_norm_bwd_wb(int64_t R, int64_t D, T *gw, T *gb, const T *g, const T *x, const T *mean,
                                       const T *rstd) {
  GL_KLOOP(j, D) {
    T sw = 0, sb = 0;
    for (int64_t i = 0; i < R; i++) {
      T gv = g[i * D + j];
      sw += gv * (x[i * D + j] - mean[i]) * rstd[i];
      sb += gv;
    }
    gw[j] = sw;
    gb[j] = sb;
  }
}

template <int DT>
static int layer_norm_dt(cudaStream_t s, int64_t R, int64_t D, void *y, void *mean, void *rstd, const void *x,
                         const void *w, const void *b, double eps) {
  if constexpr (!GL_DT_IN(GL_KFUSED_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    unsigned nb = gl_warp_row_blocks(R);
    gl_k_layer_norm<T><<<nb, 256, 0, s>>>(R, D, (T *)y, (T *)mean, (T *)rstd, (const T *)x, (const T *)w,
                                          (const T *)b, (T)eps);
    return (int)cudaGetLastError();
  }
}

extern "C" int gl_klaunch_layer_norm(void *stream, int dt, int64_t R, int64_t D, void *y, void *mean, void *rstd,
                                     const void *x, const void *w, const void *b, double eps) {
  if (R <= 0 || D <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, layer_norm_dt<DT>(s, R, D, y, mean, rstd, x, w, b, eps));
}

template <int DT>
static int layer_norm_bwd_dt(cudaStream_t s, int64_t R, int64_t D, void *gx, void *gw, void *gb, const void *g,
                             const void *x, const void *mean, const void *rstd, const void *w) {
  if constexpr (!GL_DT_IN(GL_KFUSED_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    unsigned nb = gl_warp_row_blocks(R);
    gl_k_layer_norm_bwd<T><<<nb, 256, 0, s>>>(R, D, (T *)gx, (const T *)g, (const T *)x, (const T *)mean,
                                              (const T *)rstd, (const T *)w);
    int rc = (int)cudaGetLastError();
    if (rc != 0 || gw == NULL) return rc;
    gl_k_layer_norm_bwd_wb<T><<<gl_kblocks(D), GL_KTHREADS, 0, s>>>(R, D, (T *)gw, (T *)gb, (const T *)g,
                                                                     (const T *)x, (const T *)mean, (const T *)rstd);
    return (int)cudaGetLastError();
  }
}

extern "C" int gl_klaunch_layer_norm_bwd(void *stream, int dt, int64_t R, int64_t D, void *gx, void *gw, void *gb,
                                         const void *g, const void *x, const void *mean, const void *rstd,
                                         const void *w) {
  if (R <= 0 || D <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, layer_norm_bwd_dt<DT>(s, R, D, gx, gw, gb, g, x, mean, rstd, w));
}
