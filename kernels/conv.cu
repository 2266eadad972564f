/*
** conv.cu — im2col and col2im on the GPU (src/backend/cpu/cpu_conv.c is the reference):
** the fallback under nn's Conv2d, pooling and their gradients when cuDNN is not there,
** and gpu.im2col / gpu.col2im on cuda arrays.
**
** im2col runs one thread per column entry (writes coalesced along the output row).
** col2im is a gather: one thread per image pixel sums the entries of the windows that
** cover it, kernel row then kernel column, like the CPU's loops; no atomics, so results
** are deterministic and equal to the CPU's in float64.
*/
#include "cuda_common.cuh"
#include "conv.h"

/* ---- kernels ------------------------------------------------------------------------------ */

template <class T>
__global__ void gl_k_im2col(const gl_kconv g, T *cols, const T *img, T padv) {
  const int64_t L = g.OH * g.OW, KK = (int64_t)g.k[0] * g.k[1];
  const int64_t n = g.N * g.C * KK * L;
  GL_KLOOP(i, n) {
    int64_t l = i % L, r = i / L;
    int64_t kk = r % KK, pc = r / KK;            /* kernel tap, (image, channel) plane */
    int64_t oh = l / g.OW, ow = l - oh * g.OW;
    int64_t ki = kk / g.k[1], kj = kk - ki * g.k[1];
    int64_t ih = oh * g.s[0] - g.p[0] + ki * g.d[0];
    int64_t iw = ow * g.s[1] - g.p[1] + kj * g.d[1];
    cols[i] = (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) ? padv : img[(pc * g.H + ih) * g.W + iw];
  }
}

/* Accumulates in T (float or double): each pixel has at most kh * kw terms. */
template <class T>
__global__ void gl_k_col2im(const gl_kconv g, T *img, const T *cols) {
  const int64_t L = g.OH * g.OW, KK = (int64_t)g.k[0] * g.k[1];
  const int64_t n = g.N * g.C * g.H * g.W;
  GL_KLOOP(i, n) {
    int64_t iw = i % g.W, r = i / g.W;
    int64_t ih = r % g.H, pc = r / g.H;
    const T *plane = cols + pc * KK * L;
    T sum = 0;
    for (int ki = 0; ki < g.k[0]; ki++) {
      int64_t t = ih + g.p[0] - (int64_t)ki * g.d[0];          /* = oh * stride */
      if (t < 0) break;                                       /* larger ki only lower it */
      if (t % g.s[0] != 0) continue;
      int64_t oh = t / g.s[0];
      if (oh >= g.OH) continue;
      for (int kj = 0; kj < g.k[1]; kj++) {
        int64_t u = iw + g.p[1] - (int64_t)kj * g.d[1];
        if (u < 0) break;
        if (u % g.s[1] != 0) continue;
        int64_t ow = u / g.s[1];
        if (ow >= g.OW) continue;
        sum += plane[((int64_t)ki * g.k[1] + kj) * L + oh * g.OW + ow];
      }
    }
    img[i] = sum;
  }
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <int DT>
static int im2col_dt(cudaStream_t s, const gl_kconv *g, void *cols, const void *img, double padval, int64_t n) {
  if constexpr (!GL_DT_IN(GL_KCONV_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    gl_k_im2col<T><<<gl_kblocks(n), GL_KTHREADS, 0, s>>>(*g, (T *)cols, (const T *)img, (T)padval);
    return gl_klaunched();
  }
}

template <int DT>
static int col2im_dt(cudaStream_t s, const gl_kconv *g, void *img, const void *cols, int64_t n) {
  if constexpr (!GL_DT_IN(GL_KCONV_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    gl_k_col2im<T><<<gl_kblocks(n), GL_KTHREADS, 0, s>>>(*g, (T *)img, (const T *)cols);
    return gl_klaunched();
  }
}

extern "C" int gl_klaunch_im2col(void *stream, const gl_kconv *g, void *cols, const void *img, int dt,
                                 double padval) {
  int64_t n = g->N * g->C * (int64_t)g->k[0] * g->k[1] * g->OH * g->OW;
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, im2col_dt<DT>(s, g, cols, img, padval, n));
}

extern "C" int gl_klaunch_col2im(void *stream, const gl_kconv *g, void *img, const void *cols, int dt) {
  int64_t n = g->N * g->C * g->H * g->W;
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, col2im_dt<DT>(s, g, img, cols, n));
}
