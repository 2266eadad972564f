/*
** cpu_conv.c — im2col and col2im for NCHW convolutions (stride, padding, dilation), in
** float32 and float64; one (image, channel) plane per OpenMP iteration, with a poll for a
** stop before each kernel row of a plane.
*/
#include <string.h>
#include <omp.h>
#include "cpu.h"

#define PAR_MIN 32768

/* A convolution's geometry: planes (N * C) of H x W, OH x OW outputs (L of them), a
** k[0] x k[1] kernel (KK taps) with stride s, padding p and dilation d. */
typedef struct conv_geom {
  int64_t planes, H, W, OH, OW, L, KK;
  const int *k, *s, *p, *d;
} conv_geom;

static conv_geom conv_geometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t L, const int *k,
                               const int *stride, const int *pad, const int *dil) {
  int64_t OW = (W + 2 * pad[1] - (int64_t)dil[1] * (k[1] - 1) - 1) / stride[1] + 1;
  return (conv_geom){ .planes = N * C, .H = H, .W = W, .OH = L / OW, .OW = OW, .L = L,
                      .KK = (int64_t)k[0] * k[1], .k = k, .s = stride, .p = pad, .d = dil };
}

/* One im2col row: r[ow] = irow[ow * s + w0], padv where that column lies outside the
** image or the whole row does (irow NULL). */
static inline void im2col_row(gl_dtype dt, void *r, const void *irow, int64_t OW, int64_t W, int64_t s,
                              int64_t w0, double padv) {
  if (dt == GL_FLOAT32) {
    float *o = r, pv = (float)padv;
    const float *in = irow;
    for (int64_t ow = 0; ow < OW; ow++) o[ow] = in == NULL || ow * s + w0 < 0 || ow * s + w0 >= W ? pv : in[ow * s + w0];
  } else {
    double *o = r;
    const double *in = irow;
    for (int64_t ow = 0; ow < OW; ow++) o[ow] = in == NULL || ow * s + w0 < 0 || ow * s + w0 >= W ? padv : in[ow * s + w0];
  }
}

/* One col2im row: irow[ow * s + w0] += r[ow] where that column lies inside the image. */
static inline void col2im_row(gl_dtype dt, void *irow, const void *r, int64_t OW, int64_t W, int64_t s, int64_t w0) {
  if (dt == GL_FLOAT32) {
    float *o = irow;
    const float *in = r;
    for (int64_t ow = 0; ow < OW; ow++) if (ow * s + w0 >= 0 && ow * s + w0 < W) o[ow * s + w0] += in[ow];
  } else {
    double *o = irow;
    const double *in = r;
    for (int64_t ow = 0; ow < OW; ow++) if (ow * s + w0 >= 0 && ow * s + w0 < W) o[ow * s + w0] += in[ow];
  }
}

/* dst (planes, KK, L) = the kernel taps of src (planes, H, W): row (ki, kj, oh) of a
** plane's columns holds input row oh * s[0] - p[0] + ki * d[0]. */
static void im2col(gl_dtype dt, char *dst, const char *src, const conv_geom *g, double padv) {
  int64_t esz = (int64_t)gl_dtypes[dt].size;
  int nt = gl_cpu_team_size(g->planes * g->KK * g->L);
  #pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t pc = 0; pc < g->planes; pc++) {
    const char *in = src + pc * g->H * g->W * esz;
    char *out = dst + pc * g->KK * g->L * esz;
    for (int ki = 0; ki < g->k[0] && !gl_interrupted(); ki++)
      for (int kj = 0; kj < g->k[1]; kj++) {
        char *row = out + ((int64_t)ki * g->k[1] + kj) * g->L * esz;
        int64_t w0 = (int64_t)kj * g->d[1] - g->p[1];
        for (int64_t oh = 0; oh < g->OH; oh++) {
          int64_t ih = oh * g->s[0] - g->p[0] + (int64_t)ki * g->d[0];
          const char *irow = ih < 0 || ih >= g->H ? NULL : in + ih * g->W * esz;
          im2col_row(dt, row + oh * g->OW * esz, irow, g->OW, g->W, g->s[1], w0, padv);
        }
      }
  }
}

/* dst (planes, H, W) = the sum of each column of cols (planes, KK, L) into the input
** position im2col read it from. */
static void col2im(gl_dtype dt, char *dst, const char *cols, const conv_geom *g) {
  int64_t esz = (int64_t)gl_dtypes[dt].size;
  int nt = gl_cpu_team_size(g->planes * g->KK * g->L);
  #pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t pc = 0; pc < g->planes; pc++) {
    char *img = dst + pc * g->H * g->W * esz;
    const char *in = cols + pc * g->KK * g->L * esz;
    if (gl_interrupted()) continue;
    memset(img, 0, (size_t)(g->H * g->W * esz));
    for (int ki = 0; ki < g->k[0] && !gl_interrupted(); ki++)
      for (int kj = 0; kj < g->k[1]; kj++) {
        const char *row = in + ((int64_t)ki * g->k[1] + kj) * g->L * esz;
        int64_t w0 = (int64_t)kj * g->d[1] - g->p[1];
        for (int64_t oh = 0; oh < g->OH; oh++) {
          int64_t ih = oh * g->s[0] - g->p[0] + (int64_t)ki * g->d[0];
          if (ih >= 0 && ih < g->H) col2im_row(dt, img + ih * g->W * esz, row + oh * g->OW * esz, g->OW, g->W, g->s[1], w0);
        }
      }
  }
}

gl_status gl_cpu_im2col(const gl_array *dst, const gl_array *src, const int *k, const int *stride,
                        const int *pad, const int *dil, double padval) {
  gl_dtype dt = (gl_dtype)src->dtype;
  if (dt != GL_FLOAT32 && dt != GL_FLOAT64)
    return gl_fail(GL_ENOTSUP, "im2col of %s arrays is not supported on cpu", gl_dtypes[dt].name);
  conv_geom g = conv_geometry(src->shape[0], src->shape[1], src->shape[2], src->shape[3], dst->shape[2], k,
                              stride, pad, dil);
  im2col(dt, gl_array_data(dst), gl_array_data(src), &g, padval);
  return gl_interrupt_check();
}

gl_status gl_cpu_col2im(const gl_array *dst, const gl_array *cols, const int *k, const int *stride,
                        const int *pad, const int *dil) {
  gl_dtype dt = (gl_dtype)dst->dtype;
  if (dt != GL_FLOAT32 && dt != GL_FLOAT64)
    return gl_fail(GL_ENOTSUP, "col2im of %s arrays is not supported on cpu", gl_dtypes[dt].name);
  conv_geom g = conv_geometry(dst->shape[0], dst->shape[1], dst->shape[2], dst->shape[3], cols->shape[2], k,
                              stride, pad, dil);
  col2im(dt, gl_array_data(dst), gl_array_data(cols), &g);
  return gl_interrupt_check();
}
