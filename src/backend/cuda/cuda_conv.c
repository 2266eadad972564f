/*
** cuda_conv.c — im2col and col2im on the GPU (kernels/conv.cu), the contract of
** backend.h's entries: contiguous float32/float64 operands of one dtype, geometry checked
** by the ops layer. With these, every conv/pool layer runs on cuda through im2col and
** cuBLAS when cuDNN is missing (cuda_cudnn.c is the fast path).
*/
#include "cuda.h"
#include "../../../kernels/conv.h"

/* The kernels' geometry from the image (N, C, H, W) and the window; OH, OW by the formula
** the ops layer used to shape the columns, which must match it. */
static gl_status geometry(gl_kconv *g, const gl_array *img, const gl_array *cols, const int *k, const int *stride,
                          const int *pad, const int *dil, const char *op) {
  g->N = img->shape[0];
  g->C = img->shape[1];
  g->H = img->shape[2];
  g->W = img->shape[3];
  g->OH = (g->H + 2 * pad[0] - (int64_t)dil[0] * (k[0] - 1) - 1) / stride[0] + 1;
  g->OW = (g->W + 2 * pad[1] - (int64_t)dil[1] * (k[1] - 1) - 1) / stride[1] + 1;
  for (int i = 0; i < 2; i++) {
    g->k[i] = k[i];
    g->s[i] = stride[i];
    g->p[i] = pad[i];
    g->d[i] = dil[i];
  }
  if (cols->shape[2] != g->OH * g->OW || cols->dtype != img->dtype)
    return gl_fail(GL_EINVAL, "%s: internal: columns do not match the geometry", op);
  return GL_OK;
}

/* What a launcher's rc means for op on dt arrays. */
static gl_status launched(gl_device dev, cudaStream_t s, int rc, gl_dtype dt, const char *op) {
  if (rc == GL_KERR_NOTSUP) return gl_fail(GL_ENOTSUP, "%s of %s arrays is not supported on cuda", op, gl_dtypes[dt].name);
  return gl_cuda_launched(dev, s, rc, op);
}

gl_status gl_cuda_im2col(const gl_array *dst, const gl_array *src, const int *k, const int *stride,
                         const int *pad, const int *dil, double padval) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  gl_kconv g;
  GL_TRY(gl_cuda_enter(dev, &s));
  GL_TRY(geometry(&g, src, dst, k, stride, pad, dil, "im2col"));
  int rc = gl_klaunch_im2col(s, &g, gl_array_data(dst), gl_array_data(src), src->dtype, padval);
  return launched(dev, s, rc, (gl_dtype)src->dtype, "im2col");
}

gl_status gl_cuda_col2im(const gl_array *dst, const gl_array *cols, const int *k, const int *stride,
                         const int *pad, const int *dil) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  gl_kconv g;
  GL_TRY(gl_cuda_enter(dev, &s));
  GL_TRY(geometry(&g, dst, cols, k, stride, pad, dil, "col2im"));
  return launched(dev, s, gl_klaunch_col2im(s, &g, gl_array_data(dst), gl_array_data(cols), dst->dtype),
                  (gl_dtype)dst->dtype, "col2im");
}
