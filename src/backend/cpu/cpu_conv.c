/*
** cpu_conv.c — im2col and col2im for NCHW convolutions (stride, padding, dilation), in
** float32 and float64; one (image, channel) plane per OpenMP iteration, with a poll for a
** stop before each kernel row of a plane.
*/
#include <string.h>
#include <omp.h>
#include "cpu.h"

#define PAR_MIN 32768

#define IM2COL(T)                                                                                  \
  static void im2col_##T(T *dst, const T *src, int64_t N, int64_t C, int64_t H, int64_t W,         \
                         int64_t OH, int64_t OW, const int *k, const int *s, const int *p,         \
                         const int *d, T padv) {                                                   \
    int64_t planes = N * C, L = OH * OW, KK = (int64_t)k[0] * k[1];                                \
    int nt = gl_cpu_team_size(planes * KK * L);                                                    \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")                       \
    for (int64_t pc = 0; pc < planes; pc++) {                                                      \
      const T *in = src + pc * H * W;                                                              \
      T *out = dst + pc * KK * L;                                                                  \
      for (int ki = 0; ki < k[0] && !gl_interrupted(); ki++)                                      \
        for (int kj = 0; kj < k[1]; kj++) {                                                        \
          T *row = out + ((int64_t)ki * k[1] + kj) * L;                                            \
          for (int64_t oh = 0; oh < OH; oh++) {                                                    \
            int64_t ih = oh * s[0] - p[0] + (int64_t)ki * d[0];                                    \
            T *r = row + oh * OW;                                                                  \
            if (ih < 0 || ih >= H) {                                                               \
              for (int64_t ow = 0; ow < OW; ow++) r[ow] = padv;                                    \
              continue;                                                                            \
            }                                                                                      \
            const T *irow = in + ih * W;                                                           \
            for (int64_t ow = 0; ow < OW; ow++) {                                                  \
              int64_t iw = ow * s[1] - p[1] + (int64_t)kj * d[1];                                  \
              r[ow] = (iw < 0 || iw >= W) ? padv : irow[iw];                                       \
            }                                                                                      \
          }                                                                                        \
        }                                                                                          \
    }                                                                                              \
  }

#define COL2IM(T)                                                                                  \
  static void col2im_##T(T *dst, const T *cols, int64_t N, int64_t C, int64_t H, int64_t W,        \
                         int64_t OH, int64_t OW, const int *k, const int *s, const int *p,         \
                         const int *d) {                                                           \
    int64_t planes = N * C, L = OH * OW, KK = (int64_t)k[0] * k[1];                                \
    int nt = gl_cpu_team_size(planes * KK * L);                                                    \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")                       \
    for (int64_t pc = 0; pc < planes; pc++) {                                                      \
      T *img = dst + pc * H * W;                                                                   \
      const T *in = cols + pc * KK * L;                                                            \
      if (gl_interrupted()) continue;                                                              \
      memset(img, 0, sizeof(T) * (size_t)(H * W));                                                 \
      for (int ki = 0; ki < k[0] && !gl_interrupted(); ki++)                                      \
        for (int kj = 0; kj < k[1]; kj++) {                                                        \
          const T *row = in + ((int64_t)ki * k[1] + kj) * L;                                       \
          for (int64_t oh = 0; oh < OH; oh++) {                                                    \
            int64_t ih = oh * s[0] - p[0] + (int64_t)ki * d[0];                                    \
            if (ih < 0 || ih >= H) continue;                                                       \
            const T *r = row + oh * OW;                                                            \
            T *irow = img + ih * W;                                                                \
            for (int64_t ow = 0; ow < OW; ow++) {                                                  \
              int64_t iw = ow * s[1] - p[1] + (int64_t)kj * d[1];                                  \
              if (iw >= 0 && iw < W) irow[iw] += r[ow];                                            \
            }                                                                                      \
          }                                                                                        \
        }                                                                                          \
    }                                                                                              \
  }

IM2COL(float)
IM2COL(double)
COL2IM(float)
COL2IM(double)

gl_status gl_cpu_im2col(const gl_array *dst, const gl_array *src, const int *k, const int *stride,
                        const int *pad, const int *dil, double padval) {
  int64_t N = src->shape[0], C = src->shape[1], H = src->shape[2], W = src->shape[3];
  int64_t L = dst->shape[2];
  int64_t OW = (W + 2 * pad[1] - (int64_t)dil[1] * (k[1] - 1) - 1) / stride[1] + 1;
  int64_t OH = L / OW;
  if (src->dtype == GL_FLOAT32)
    im2col_float(gl_array_data(dst), gl_array_data(src), N, C, H, W, OH, OW, k, stride, pad, dil,
                 (float)padval);
  else if (src->dtype == GL_FLOAT64)
    im2col_double(gl_array_data(dst), gl_array_data(src), N, C, H, W, OH, OW, k, stride, pad, dil,
                  padval);
  else
    return gl_fail(GL_ENOTSUP, "im2col of %s arrays is not supported on cpu", gl_dtypes[src->dtype].name);
  return gl_interrupt_check();
}

gl_status gl_cpu_col2im(const gl_array *dst, const gl_array *cols, const int *k, const int *stride,
                        const int *pad, const int *dil) {
  int64_t N = dst->shape[0], C = dst->shape[1], H = dst->shape[2], W = dst->shape[3];
  int64_t L = cols->shape[2];
  int64_t OW = (W + 2 * pad[1] - (int64_t)dil[1] * (k[1] - 1) - 1) / stride[1] + 1;
  int64_t OH = L / OW;
  if (dst->dtype == GL_FLOAT32)
    col2im_float(gl_array_data(dst), gl_array_data(cols), N, C, H, W, OH, OW, k, stride, pad, dil);
  else if (dst->dtype == GL_FLOAT64)
    col2im_double(gl_array_data(dst), gl_array_data(cols), N, C, H, W, OH, OW, k, stride, pad, dil);
  else
    return gl_fail(GL_ENOTSUP, "col2im of %s arrays is not supported on cpu", gl_dtypes[dst->dtype].name);
  return gl_interrupt_check();
}
