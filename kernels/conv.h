/*
** conv.h — the plain C face of kernels/conv.cu: im2col and col2im for NCHW convolutions
** and pooling windows, called by src/backend/cuda/cuda_conv.c. Same conventions as
** launch.h: a stream travels as void *, the result is 0, GL_KERR_NOTSUP or a cudaError_t.
*/
#ifndef GL_KERNELS_CONV_H
#define GL_KERNELS_CONV_H

#include <stdint.h>
#include "dtypes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The geometry of one im2col/col2im: the image (N, C, H, W), the output grid OH x OW and
** the window (kernel, stride, padding, dilation; [0] rows, [1] columns). */
typedef struct gl_kconv {
  int64_t N, C, H, W, OH, OW;
  int32_t k[2], s[2], p[2], d[2];
} gl_kconv;

/* The dtypes im2col and col2im take (float16/bfloat16 are run in float32 by the ops layer). */
#define GL_KCONV_DTYPES GL_DTSET_WIDE_FLOAT

/* cols (N, C*kh*kw, OH*OW) = the windows of img (N, C, H, W); taps outside the image read
** padval. Both contiguous, dtype dt (one of GL_KCONV_DTYPES). */
int gl_klaunch_im2col(void *stream, const gl_kconv *g, void *cols, const void *img, int dt, double padval);
/* img (N, C, H, W) = for each pixel, the sum of the column entries that read it, in
** kernel order (a gather: no atomics, the same order as the CPU's loops). */
int gl_klaunch_col2im(void *stream, const gl_kconv *g, void *img, const void *cols, int dt);

#ifdef __cplusplus
}
#endif

#endif
