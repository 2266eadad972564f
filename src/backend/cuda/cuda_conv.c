/*
** cuda_conv.c — im2col and col2im on the GPU (kernels/conv.cu), the contract of
** backend.h's entries: contiguous float32/float64 operands of one dtype, geometry checked
** by the ops layer. With these, every conv/pool layer runs on cuda through im2col and
** cuBLAS when cuDNN is missing (cuda_cudnn.c is the fast path).
*/
#include "cuda.h"
#include "../../../kernels/conv.h"

/* The kernels' geometry from the image shape and the window; OH, OW by the formula the
** ops layer used to shape the columns. */
static void geometry(gl_kconv *g, const gl_array *img, const int *k, const int *stride, const int *pad,
                     const int *dil) {
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
}

gl_status gl_cuda_im2col(const gl_array *dst, const gl_array *src, const int *k, const int *stride,
                         const int *pad, const int *dil, double padval) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  gl_kconv g;
  geometry(&g, src, k, stride, pad, dil);
  if (dst->shape[2] != g.OH * g.OW || dst->dtype != src->dtype)
    return gl_fail(GL_EINVAL, "im2col: internal: columns do not match the geometry");
  int rc = gl_klaunch_im2col(s, &g, gl_array_data(dst), gl_array_data(src), src->dtype, padval);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "im2col of %s arrays is not supported on cuda", gl_dtypes[src->dtype].name);
  return gl_cuda_launched(dev, s, rc, "im2col");
}

gl_status gl_cuda_col2im(const gl_array *dst, const gl_array *cols, const int *k, const int *stride,
                         const int *pad, const int *dil) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  gl_kconv g;
  geometry(&g, dst, k, stride, pad, dil);
  if (cols->shape[2] != g.OH * g.OW || dst->dtype != cols->dtype)
    return gl_fail(GL_EINVAL, "col2im: internal: columns do not match the geometry");
  int rc = gl_klaunch_col2im(s, &g, gl_array_data(dst), gl_array_data(cols), dst->dtype);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "col2im of %s arrays is not supported on cuda", gl_dtypes[dst->dtype].name);
  return gl_cuda_launched(dev, s, rc, "col2im");
}
