/*
** conv.c — im2col / col2im for NCHW convolutions and pooling: checks the geometry, works
** out the output size, makes the input contiguous (float16/bfloat16 run in float32) and
** calls the backend's optional entries.
*/
#include "ops.h"

static gl_status check_geom(const char *fn, const int *k, const int *stride, const int *pad,
                            const int *dil) {
  for (int i = 0; i < 2; i++) {
    if (k[i] < 1) return gl_fail(GL_EINVAL, "%s: kernel size must be positive, got %d", fn, k[i]);
    if (stride[i] < 1) return gl_fail(GL_EINVAL, "%s: stride must be positive, got %d", fn, stride[i]);
    if (pad[i] < 0) return gl_fail(GL_EINVAL, "%s: padding must be >= 0, got %d", fn, pad[i]);
    if (dil[i] < 1) return gl_fail(GL_EINVAL, "%s: dilation must be positive, got %d", fn, dil[i]);
  }
  return GL_OK;
}

gl_status gl_conv_out_size(const char *fn, int64_t H, int64_t W, const int *k, const int *stride,
                           const int *pad, const int *dil, int64_t *oh, int64_t *ow) {
  GL_TRY(check_geom(fn, k, stride, pad, dil));
  int64_t eh = H + 2 * pad[0] - (int64_t)dil[0] * (k[0] - 1) - 1;
  int64_t ew = W + 2 * pad[1] - (int64_t)dil[1] * (k[1] - 1) - 1;
  if (eh < 0 || ew < 0)
    return gl_fail(GL_EINVAL, "%s: the (dilated) kernel %dx%d is larger than the padded input %lldx%lld",
                   fn, (int)((int64_t)dil[0] * (k[0] - 1) + 1), (int)((int64_t)dil[1] * (k[1] - 1) + 1),
                   (long long)(H + 2 * pad[0]), (long long)(W + 2 * pad[1]));
  *oh = eh / stride[0] + 1;
  *ow = ew / stride[1] + 1;
  return GL_OK;
}

/* The backend (entry present) and the compute dtype for x's dtype. */
static gl_status conv_backend(const char *fn, const gl_array *x, bool col2im, const gl_backend **be,
                              gl_dtype *ct) {
  GL_TRY(gl_backend_for(gl_array_device(x), be));
  if ((col2im ? (void *)(*be)->col2im : (void *)(*be)->im2col) == NULL) {
    char dn[16];
    return gl_fail(GL_ENOTSUP, "%s is not supported on %s", fn, gl_device_name(gl_array_device(x), dn));
  }
  switch (x->dtype) {
    case GL_FLOAT32: case GL_FLOAT64: *ct = (gl_dtype)x->dtype; return GL_OK;
    case GL_FLOAT16: case GL_BFLOAT16: *ct = GL_FLOAT32; return GL_OK;
    default:
      return gl_fail(GL_EINVAL, "%s needs a float array, got %s (convert with astype)", fn,
                     gl_dtypes[x->dtype].name);
  }
}

/* src in dtype ct and contiguous: a view of x or a copy in *tmp. */
static gl_status as_contig(const gl_array *x, gl_dtype ct, gl_array *tmp, const gl_array **src) {
  if (x->dtype == ct && gl_array_is_contiguous(x)) { *src = x; return GL_OK; }
  GL_TRY(gl_op_copy(tmp, x, ct, gl_array_device(x)));
  *src = tmp;
  return GL_OK;
}

/* out = result converted to dt (result released), or result itself. */
static gl_status finish(gl_array *out, gl_array *res, gl_dtype dt) {
  if ((gl_dtype)res->dtype == dt) { *out = *res; return GL_OK; }
  gl_status st = gl_op_copy(out, res, dt, gl_array_device(res));
  gl_array_release(res);
  return st;
}

gl_status gl_op_im2col(gl_array *out, const gl_array *x, const int *k, const int *stride,
                       const int *pad, const int *dil, double padval) {
  if (x->ndim != 4) {
    char s[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "im2col: input must be 4-D (N, C, H, W), got shape %s",
                   gl_shape_str(x->ndim, x->shape, s));
  }
  int64_t oh, ow;
  GL_TRY(gl_conv_out_size("im2col", x->shape[2], x->shape[3], k, stride, pad, dil, &oh, &ow));
  const gl_backend *be;
  gl_dtype ct;
  GL_TRY(conv_backend("im2col", x, false, &be, &ct));
  int64_t shape[3] = { x->shape[0], x->shape[1] * k[0] * (int64_t)k[1], oh * ow };
  gl_array tmp = { 0 }, res = { 0 };
  const gl_array *src;
  GL_TRY(as_contig(x, ct, &tmp, &src));
  gl_status st = gl_array_alloc(&res, ct, 3, shape, gl_array_device(x));
  if (st == GL_OK && res.size > 0) st = be->im2col(&res, src, k, stride, pad, dil, padval);
  gl_array_release(&tmp);
  if (st != GL_OK) { gl_array_release(&res); return st; }
  return finish(out, &res, (gl_dtype)x->dtype);
}

gl_status gl_op_col2im(gl_array *out, const gl_array *cols, const int64_t *oshape, const int *k,
                       const int *stride, const int *pad, const int *dil) {
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ], s3[GL_SHAPE_BUFSZ];
  for (int i = 0; i < 4; i++)
    if (oshape[i] < (i < 2 ? 0 : 1))
      return gl_fail(GL_EINVAL, "col2im: output_shape must be {N, C, H, W} with N, C >= 0 and H, W > 0");
  int64_t oh, ow;
  GL_TRY(gl_conv_out_size("col2im", oshape[2], oshape[3], k, stride, pad, dil, &oh, &ow));
  int64_t want[3] = { oshape[0], oshape[1] * k[0] * (int64_t)k[1], oh * ow };
  if (cols->ndim != 3 || cols->shape[0] != want[0] || cols->shape[1] != want[1] || cols->shape[2] != want[2])
    return gl_fail(GL_EINVAL, "col2im: columns of shape %s do not fit output_shape %s with this kernel "
                   "(expected %s)", gl_shape_str(cols->ndim, cols->shape, s1), gl_shape_str(4, oshape, s2),
                   gl_shape_str(3, want, s3));
  const gl_backend *be;
  gl_dtype ct;
  GL_TRY(conv_backend("col2im", cols, true, &be, &ct));
  gl_array tmp = { 0 }, res = { 0 };
  const gl_array *src;
  GL_TRY(as_contig(cols, ct, &tmp, &src));
  gl_status st = gl_array_alloc(&res, ct, 4, oshape, gl_array_device(cols));
  if (st == GL_OK && res.size > 0) st = be->col2im(&res, src, k, stride, pad, dil);
  gl_array_release(&tmp);
  if (st != GL_OK) { gl_array_release(&res); return st; }
  return finish(out, &res, (gl_dtype)cols->dtype);
}
