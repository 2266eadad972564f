/*
** conv.c — im2col / col2im for NCHW convolutions and pooling: checks the geometry, works
** out the output size, makes the input contiguous (float16/bfloat16 run in float32) and
** calls the backend's optional entries. Below them, the library path (gl_backend.dnn:
** cuDNN on cuda) that lua/gpu/conv.lua prefers where the device has it.
*/
#include <math.h>
#include <string.h>
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

/* im2col's columns (N, C*kh*kw, oh*ow), both products checked: C and the output extents
** may come from a huge broadcast view, the kernel size from the user. */
static gl_status cols_shape(int64_t N, int64_t C, const int *k, int64_t oh, int64_t ow, gl_dtype dt,
                            int64_t *shape) {
  shape[0] = N;
  int64_t kk = (int64_t)k[0] * k[1];
  if (!gl_mul_overflow(C, kk, &shape[1]) && !gl_mul_overflow(oh, ow, &shape[2])) return GL_OK;
  const int64_t factors[5] = { N, C, kk, oh, ow };
  return gl_too_big(gl_shape_count(5, factors), dt);
}

/* The backend (entry present) and the compute dtype for x's dtype. */
static gl_status conv_backend(const char *fn, const gl_array *x, bool col2im, const gl_backend **be,
                              gl_dtype *ct) {
  GL_TRY(gl_backend_for(gl_array_device(x), be));
  if ((col2im ? (void *)(*be)->col2im : (void *)(*be)->im2col) == NULL) {
    char dn[16];
    return gl_fail(GL_ENOTSUP, "%s is not supported on %s", fn, gl_device_name(gl_array_device(x), dn));
  }
  *ct = gl_dtypes[x->dtype].storage_only ? GL_FLOAT32 : (gl_dtype)x->dtype;   /* halves run in float32 */
  if ((*be)->supports(GL_OP_CONV, 0, *ct)) return GL_OK;
  return gl_fail(GL_EINVAL, "%s needs a float array, got %s (convert with astype)", fn, gl_dtypes[x->dtype].name);
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
  int64_t shape[3];
  GL_TRY(cols_shape(x->shape[0], x->shape[1], k, oh, ow, ct, shape));
  gl_array tmp = { 0 }, res = { 0 };
  const gl_array *src;
  GL_TRY(gl_op_as_contig(x, ct, &tmp, &src));
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
  size_t nbytes;                         /* first: H + 2 * pad must not overflow below */
  GL_TRY(gl_shape_nbytes(4, oshape, (gl_dtype)cols->dtype, &nbytes));
  int64_t oh, ow, want[3];
  GL_TRY(gl_conv_out_size("col2im", oshape[2], oshape[3], k, stride, pad, dil, &oh, &ow));
  GL_TRY(cols_shape(oshape[0], oshape[1], k, oh, ow, (gl_dtype)cols->dtype, want));
  if (cols->ndim != 3 || cols->shape[0] != want[0] || cols->shape[1] != want[1] || cols->shape[2] != want[2])
    return gl_fail(GL_EINVAL, "col2im: columns of shape %s do not fit output_shape %s with this kernel "
                   "(expected %s)", gl_shape_str(cols->ndim, cols->shape, s1), gl_shape_str(4, oshape, s2),
                   gl_shape_str(3, want, s3));
  const gl_backend *be;
  gl_dtype ct;
  GL_TRY(conv_backend("col2im", cols, true, &be, &ct));
  gl_array tmp = { 0 }, res = { 0 };
  const gl_array *src;
  GL_TRY(gl_op_as_contig(cols, ct, &tmp, &src));
  gl_status st = gl_array_alloc(&res, ct, 4, oshape, gl_array_device(cols));
  if (st == GL_OK && res.size > 0) st = be->col2im(&res, src, k, stride, pad, dil);
  gl_array_release(&tmp);
  if (st != GL_OK) { gl_array_release(&res); return st; }
  return finish(out, &res, (gl_dtype)cols->dtype);
}

/* ---- library kernels: gl_backend.dnn (cuDNN on cuda) ------------------------------------------
** Checks in the order a user can act on: devices, dtypes, shapes and geometry, then
** whether the device has the library. Operands are made contiguous here; the backend
** gets one float dtype for all data operands. */

static gl_status dnn_float(const char *fn, const gl_array *x, const char *what, bool halves) {
  if (GL_DTSET_HAS(halves ? GL_DTSET_FLOAT : GL_DTSET_WIDE_FLOAT, x->dtype)) return GL_OK;
  return gl_fail(GL_EINVAL, "%s: %s must be %s, got %s", fn, what,
                 halves ? "a float array (float16, bfloat16, float32, float64)" : "float32 or float64",
                 gl_dtypes[x->dtype].name);
}

static gl_status dnn_same_dtype(const char *fn, const gl_array *ref, const gl_array *x, const char *what,
                                gl_dtype want) {
  if ((gl_dtype)x->dtype == want) return GL_OK;
  return gl_fail(GL_EINVAL, "%s: %s is %s, expected %s (the input is %s)", fn, what, gl_dtypes[x->dtype].name,
                 gl_dtypes[want].name, gl_dtypes[ref->dtype].name);
}

static gl_status dnn_ndim(const char *fn, const gl_array *x, const char *what, int nd, const char *layout) {
  if (x->ndim == nd) return GL_OK;
  char s[GL_SHAPE_BUFSZ];
  return gl_fail(GL_EINVAL, "%s: %s must be %d-D %s, got shape %s", fn, what, nd, layout,
                 gl_shape_str(x->ndim, x->shape, s));
}

static const char *const family_name[GL_NDNN_FAMILY] = { "convolution", "pooling", "batch norm", "softmax",
                                                         "layer norm", "recurrent layers" };

/* Whether table d has the entries of 'family' (layer norm is optional: oneDNN only; the
** recurrent layers are oneDNN's per layer and direction (rnn_fwd...) or cuDNN's whole
** network (rnn_net...), whose library part may be missing: rnn_net_unavailable says why). */
static bool dnn_has(const gl_dnn *d, gl_dnn_family family) {
  if (family == GL_DNN_RNN)
    return (d->rnn_fwd != NULL && d->rnn_bwd != NULL && d->rnn_workspace != NULL) ||
           (d->rnn_net != NULL && d->rnn_net_bwd != NULL && d->rnn_net_reserve != NULL);
  return family != GL_DNN_LAYER_NORM || (d->layer_norm != NULL && d->layer_norm_bwd != NULL);
}

/* Why d cannot run 'family' though the library loaded (NULL: it can). */
static const char *dnn_lacks(const gl_dnn *d, gl_dnn_family family) {
  if (!dnn_has(d, family))
    return family == GL_DNN_RNN ? "the library's recurrent layers are not wired in" : "the library has no layer norm here";
  if (family == GL_DNN_RNN && d->rnn_net && d->rnn_net_unavailable) return d->rnn_net_unavailable();
  return NULL;
}

/* The device's dnn table, or why there is none (or why it does not take 'family' in dt). */
static gl_status dnn_table(const char *fn, gl_device dev, gl_dtype dt, gl_dnn_family family, const gl_dnn **out) {
  const gl_backend *be;
  GL_TRY(gl_backend_for(dev, &be));
  char dn[16];
  if (be->dnn == NULL)
    return gl_fail(GL_ENOTSUP, "%s is not supported on %s (%s; nn uses its own path)", fn, gl_device_name(dev, dn),
                   be->dnn_paths.missing ? be->dnn_paths.missing : "no library for the nn layers");
  const char *why = be->dnn->unavailable();
  if (why) return gl_fail(GL_ENOTSUP, "%s is not supported on %s (%s)", fn, gl_device_name(dev, dn), why);
  if (!dnn_has(be->dnn, family))
    return gl_fail(GL_ENOTSUP, "%s is not supported on %s (%s has no %s here)", fn, gl_device_name(dev, dn),
                   be->dnn->name, family_name[family]);
  const char *lacks = dnn_lacks(be->dnn, family);
  if (lacks) return gl_fail(GL_ENOTSUP, "%s is not supported on %s (%s)", fn, gl_device_name(dev, dn), lacks);
  if (be->dnn->takes && !be->dnn->takes(family, dt))
    return gl_fail(GL_ENOTSUP, "%s is not supported on %s for %s (%s has no %s %s; nn uses its own path)", fn,
                   gl_device_name(dev, dn), gl_dtypes[dt].name, be->dnn->name, gl_dtypes[dt].name,
                   family_name[family]);
  *out = be->dnn;
  return GL_OK;
}

gl_status gl_op_dnn_table(const char *fn, gl_device dev, gl_dtype dt, gl_dnn_family family, const gl_dnn **out) {
  return dnn_table(fn, dev, dt, family, out);
}

const char *gl_op_dnn_unavailable(gl_device dev, int dt, int family) {
  const gl_backend *be = gl_backend_get(dev.type);
  if (be == NULL) return "this device type is not built in";
  if (be->dnn == NULL) return be->dnn_paths.missing ? be->dnn_paths.missing : "no library for the nn layers here";
  const char *why = be->dnn->unavailable();
  if (why == NULL && family == GL_DNN_WHOLE_RNN) {
    if (be->dnn->rnn_net == NULL) return "the library runs recurrent layers one layer and direction at a time";
    family = GL_DNN_RNN;
  }
  if (why == NULL && family >= 0 && family < GL_NDNN_FAMILY) why = dnn_lacks(be->dnn, (gl_dnn_family)family);
  if (why || dt < 0 || be->dnn->takes == NULL) return why;
  if ((family >= 0 && !be->dnn->takes((gl_dnn_family)family, (gl_dtype)dt)) ||
      (family < 0 && !be->dnn->takes(GL_DNN_CONV, (gl_dtype)dt)))
    return "the library does not take this dtype";
  return NULL;
}

/* Up to 5 operands made contiguous (copies in tmp[], released by dnn_release). */
typedef struct dnn_args { gl_array tmp[5]; const gl_array *a[5]; } dnn_args;

static gl_status dnn_contig(dnn_args *g, int i, const gl_array *x) {
  if (x == NULL) { g->a[i] = NULL; return GL_OK; }
  return gl_op_as_contig(x, (gl_dtype)x->dtype, &g->tmp[i], &g->a[i]);
}

static void dnn_release(dnn_args *g) {
  for (int i = 0; i < 5; i++) gl_array_release(&g->tmp[i]);
}

/* Geometry of a convolution of x (N, C, H, W) by w (O, C/groups, kh, kw): the output's
** shape, errors naming fn. */
static gl_status dnn_conv_geom(const char *fn, const int64_t *xs, const int64_t *ws, const gl_dnn_conv *c,
                               int64_t *ys) {
  if (c->groups < 1 || ws[0] % c->groups != 0)
    return gl_fail(GL_EINVAL, "%s: groups (%d) must be a positive integer dividing the %lld output channels", fn,
                   c->groups, (long long)ws[0]);
  if (xs[1] != ws[1] * c->groups)
    return gl_fail(GL_EINVAL, "%s: expected %lld input channels (weight %lld x groups %d), got %lld", fn,
                   (long long)(ws[1] * c->groups), (long long)ws[1], c->groups, (long long)xs[1]);
  int k[2] = { (int)ws[2], (int)ws[3] };
  if (ws[2] > 65536 || ws[3] > 65536) return gl_fail(GL_EINVAL, "%s: kernel too large", fn);
  int64_t oh, ow;
  GL_TRY(gl_conv_out_size(fn, xs[2], xs[3], k, c->stride, c->pad, c->dil, &oh, &ow));
  ys[0] = xs[0];
  ys[1] = ws[0];
  ys[2] = oh;
  ys[3] = ow;
  return GL_OK;
}

typedef enum { CONV_FWD, CONV_BWD_DATA, CONV_BWD_FILTER } conv_dir;

/* The two operands of a convolution direction: on one device, a float a, b of a's dtype. */
static gl_status dnn_conv_operands(const char *fn, const gl_array *a, const char *aname, const gl_array *b,
                                   const char *bname) {
  GL_TRY(gl_op_input_device(fn, a, b, bname));
  GL_TRY(dnn_float(fn, a, aname, true));
  return dnn_same_dtype(fn, a, b, bname, (gl_dtype)a->dtype);
}

/* The checked operands a, b of a convolution direction (fwd: x, w; bwd_data: dy, w;
** bwd_filter: x, dy) made contiguous, out (oshape, a's dtype and device) allocated and
** computed by the device's library; an empty operand gives zeros. */
static gl_status dnn_conv_run(const char *fn, conv_dir dir, gl_array *out, const gl_array *a, const gl_array *b,
                              const int64_t *oshape, const gl_dnn_conv *c) {
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(a), (gl_dtype)a->dtype, GL_DNN_CONV, &dnn));
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_status st = dnn_contig(&g, 0, a);
  if (st == GL_OK) st = dnn_contig(&g, 1, b);
  if (st == GL_OK) st = gl_array_alloc(out, (gl_dtype)a->dtype, 4, oshape, gl_array_device(a));
  if (st == GL_OK && out->size > 0 && a->size > 0 && b->size > 0) {
    switch (dir) {
      case CONV_FWD: st = dnn->conv2d(out, g.a[0], g.a[1], c); break;
      case CONV_BWD_DATA: st = dnn->conv2d_bwd_data(out, g.a[0], g.a[1], c); break;
      case CONV_BWD_FILTER: st = dnn->conv2d_bwd_filter(out, g.a[0], g.a[1], c); break;
    }
  } else if (st == GL_OK && out->size > 0) {
    st = gl_op_fill(out, gl_scalar_float(0));
  }
  dnn_release(&g);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* A backward direction's given shape (the input's or the weight's): each extent at least
** least[i], and its bytes countable, before the geometry's arithmetic (H + 2 * pad,
** in/groups x groups) can overflow on it. */
static gl_status dnn_given_shape(const char *fn, const int64_t *shape, const int64_t least[4], const char *rule,
                                 gl_dtype dt) {
  for (int i = 0; i < 4; i++)
    if (shape[i] < least[i]) return gl_fail(GL_EINVAL, "%s: %s", fn, rule);
  size_t nbytes;
  return gl_shape_nbytes(4, shape, dt, &nbytes);
}

/* dy must have the forward output's shape for input xshape and weight wshape. */
static gl_status dnn_dy_shape(const char *fn, const gl_array *dy, const int64_t *xshape, const int64_t *wshape,
                              const gl_dnn_conv *c) {
  int64_t ys[4];
  GL_TRY(dnn_conv_geom(fn, xshape, wshape, c, ys));
  return gl_op_want_shape(fn, dy, "grad_output", 4, ys);
}

gl_status gl_op_dnn_conv2d(gl_array *out, const gl_array *x, const gl_array *w, const gl_dnn_conv *c) {
  const char *fn = "conv2d";
  GL_TRY(dnn_conv_operands(fn, x, "input", w, "weight"));
  GL_TRY(dnn_ndim(fn, x, "input", 4, "(N, C, H, W)"));
  GL_TRY(dnn_ndim(fn, w, "weight", 4, "(out, in/groups, kh, kw)"));
  int64_t ys[4];
  GL_TRY(dnn_conv_geom(fn, x->shape, w->shape, c, ys));
  return dnn_conv_run(fn, CONV_FWD, out, x, w, ys, c);
}

gl_status gl_op_dnn_conv2d_bwd_data(gl_array *out, const gl_array *dy, const gl_array *w, const int64_t *xshape,
                                    const gl_dnn_conv *c) {
  const char *fn = "conv2d_backward_data";
  GL_TRY(dnn_conv_operands(fn, dy, "grad_output", w, "weight"));
  GL_TRY(dnn_ndim(fn, w, "weight", 4, "(out, in/groups, kh, kw)"));
  static const int64_t least[4] = { 0, 0, 1, 1 };
  GL_TRY(dnn_given_shape(fn, xshape, least, "input_shape must be {N, C, H, W} with N, C >= 0 and H, W > 0",
                         (gl_dtype)dy->dtype));
  GL_TRY(dnn_dy_shape(fn, dy, xshape, w->shape, c));
  return dnn_conv_run(fn, CONV_BWD_DATA, out, dy, w, xshape, c);
}

gl_status gl_op_dnn_conv2d_bwd_filter(gl_array *out, const gl_array *x, const gl_array *dy, const int64_t *wshape,
                                      const gl_dnn_conv *c) {
  const char *fn = "conv2d_backward_filter";
  GL_TRY(dnn_conv_operands(fn, x, "input", dy, "grad_output"));
  GL_TRY(dnn_ndim(fn, x, "input", 4, "(N, C, H, W)"));
  static const int64_t least[4] = { 1, 1, 1, 1 };
  GL_TRY(dnn_given_shape(fn, wshape, least, "weight_shape must be {out, in/groups, kh, kw} of positive sizes",
                         (gl_dtype)x->dtype));
  GL_TRY(dnn_dy_shape(fn, dy, x->shape, wshape, c));
  return dnn_conv_run(fn, CONV_BWD_FILTER, out, x, dy, wshape, c);
}

/* Pooling geometry: no dilation, padding at most half the window (so no window is all
** padding); the output's shape into ys. */
static gl_status dnn_pool_geom(const char *fn, const gl_array *x, const int *k, const int *stride, const int *pad,
                               int64_t *ys) {
  GL_TRY(dnn_ndim(fn, x, "input", 4, "(N, C, H, W)"));
  static const int one[2] = { 1, 1 };
  int64_t oh, ow;
  GL_TRY(gl_conv_out_size(fn, x->shape[2], x->shape[3], k, stride, pad, one, &oh, &ow));
  if (pad[0] * 2 > k[0] || pad[1] * 2 > k[1])
    return gl_fail(GL_EINVAL, "%s: padding %dx%d must be at most half the kernel %dx%d", fn, pad[0], pad[1], k[0], k[1]);
  ys[0] = x->shape[0];
  ys[1] = x->shape[1];
  ys[2] = oh;
  ys[3] = ow;
  return GL_OK;
}

gl_status gl_op_dnn_pool2d(gl_array *out, bool max, const gl_array *x, const int *k, const int *stride,
                           const int *pad) {
  const char *fn = max ? "max_pool2d" : "avg_pool2d";
  GL_TRY(dnn_float(fn, x, "input", true));
  int64_t ys[4];
  GL_TRY(dnn_pool_geom(fn, x, k, stride, pad, ys));
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(x), (gl_dtype)x->dtype, GL_DNN_POOL, &dnn));
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_status st = dnn_contig(&g, 0, x);
  if (st == GL_OK) st = gl_array_alloc(out, (gl_dtype)x->dtype, 4, ys, gl_array_device(x));
  if (st == GL_OK && out->size > 0) st = dnn->pool2d(max, out, g.a[0], k, stride, pad);
  dnn_release(&g);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_dnn_pool2d_bwd(gl_array *out, bool max, const gl_array *x, const gl_array *y, const gl_array *dy,
                               const int *k, const int *stride, const int *pad) {
  const char *fn = max ? "max_pool2d_backward" : "avg_pool2d_backward";
  GL_TRY(gl_op_input_device(fn, x, y, "output"));
  GL_TRY(gl_op_input_device(fn, x, dy, "grad_output"));
  GL_TRY(dnn_float(fn, x, "input", true));
  GL_TRY(dnn_same_dtype(fn, x, y, "output", (gl_dtype)x->dtype));
  GL_TRY(dnn_same_dtype(fn, x, dy, "grad_output", (gl_dtype)x->dtype));
  int64_t ys[4];
  GL_TRY(dnn_pool_geom(fn, x, k, stride, pad, ys));
  GL_TRY(gl_op_want_shape(fn, y, "output", 4, ys));
  GL_TRY(gl_op_want_shape(fn, dy, "grad_output", 4, ys));
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(x), (gl_dtype)x->dtype, GL_DNN_POOL, &dnn));
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_status st = dnn_contig(&g, 0, x);
  if (st == GL_OK) st = dnn_contig(&g, 1, y);
  if (st == GL_OK) st = dnn_contig(&g, 2, dy);
  if (st == GL_OK) st = gl_array_alloc(out, (gl_dtype)x->dtype, 4, x->shape, gl_array_device(x));
  if (st == GL_OK && out->size > 0 && dy->size > 0) st = dnn->pool2d_bwd(max, out, g.a[0], g.a[1], g.a[2], k, stride, pad);
  else if (st == GL_OK && out->size > 0) st = gl_op_fill(out, gl_scalar_float(0));
  dnn_release(&g);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* x (N, C), (N, C, L) or (N, C, H, W) as a 4-D view for the backend (x contiguous). */
static gl_array bn_view4(const gl_array *x) {
  gl_array v = *x;
  int64_t h = x->ndim >= 3 ? x->shape[2] : 1, w = x->ndim == 4 ? x->shape[3] : 1;
  v.ndim = 4;
  v.shape[2] = h;
  v.shape[3] = w;
  v.strides[3] = 1;
  v.strides[2] = w;
  v.strides[1] = h * w;
  v.strides[0] = x->shape[1] * h * w;
  return v;
}

/* Batch-norm operands: x a float32/float64 array of 2 to 4 axes, the per-channel ones
** (may be NULL where allowed) 1-D of C elements of x's dtype on x's device. */
static gl_status bn_check(const char *fn, const gl_array *x, const gl_array *const *per, const char *const *names,
                          int n) {
  GL_TRY(dnn_float(fn, x, "input", false));
  if (x->ndim < 2 || x->ndim > 4) {
    char s[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "%s: input must be (N, C), (N, C, L) or (N, C, H, W), got shape %s", fn,
                   gl_shape_str(x->ndim, x->shape, s));
  }
  int64_t C = x->shape[1];
  for (int i = 0; i < n; i++) {
    if (per[i] == NULL) continue;
    GL_TRY(gl_op_input_device(fn, x, per[i], names[i]));
    GL_TRY(dnn_same_dtype(fn, x, per[i], names[i], (gl_dtype)x->dtype));
    GL_TRY(gl_op_want_shape(fn, per[i], names[i], 1, &C));
  }
  return GL_OK;
}

gl_status gl_op_dnn_batch_norm(gl_array *y, gl_array *save_mean, gl_array *save_invstd, const gl_array *x,
                               const gl_array *w, const gl_array *b, const gl_array *rmean, const gl_array *rvar,
                               bool training, double momentum, double eps) {
  const char *fn = "batch_norm";
  const gl_array *per[4] = { w, b, rmean, rvar };
  static const char *const names[4] = { "weight", "bias", "running_mean", "running_var" };
  GL_TRY(bn_check(fn, x, per, names, 4));
  if (w == NULL || b == NULL) return gl_fail(GL_EINVAL, "%s: weight and bias are required", fn);
  if ((rmean == NULL) != (rvar == NULL))
    return gl_fail(GL_EINVAL, "%s: running_mean and running_var go together (both or neither)", fn);
  if (!training && rmean == NULL) return gl_fail(GL_EINVAL, "%s: inference needs running_mean and running_var", fn);
  if (!(eps > 0) || !(momentum >= 0 && momentum <= 1))
    return gl_fail(GL_EINVAL, "%s: eps must be positive and momentum in [0, 1], got %g and %g", fn, eps, momentum);
  bool update = training && rmean != NULL;       /* the running statistics are written */
  if (update) {
    GL_TRY(gl_array_writable(rmean, names[2]));
    GL_TRY(gl_array_writable(rvar, names[3]));
  }
  if (rmean && (!gl_array_is_contiguous(rmean) || !gl_array_is_contiguous(rvar)))
    return gl_fail(GL_EINVAL, "%s: running_mean and running_var must be contiguous (they are updated in place)", fn);
  int64_t C = x->shape[1], n = C > 0 ? x->size / C : 0;
  if (training && n < 2)
    return gl_fail(GL_EINVAL, "%s: training needs more than one value per channel, got %lld", fn, (long long)n);
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(x), (gl_dtype)x->dtype, GL_DNN_BATCH_NORM, &dnn));
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_device dev = gl_array_device(x);
  gl_status st = dnn_contig(&g, 0, x);
  if (st == GL_OK) st = dnn_contig(&g, 1, w);
  if (st == GL_OK) st = dnn_contig(&g, 2, b);
  if (st == GL_OK) st = gl_array_alloc(y, (gl_dtype)x->dtype, x->ndim, x->shape, dev);
  if (st == GL_OK && training) st = gl_array_alloc(save_mean, (gl_dtype)x->dtype, 1, &C, dev);
  if (st == GL_OK && training) st = gl_array_alloc(save_invstd, (gl_dtype)x->dtype, 1, &C, dev);
  if (st == GL_OK && x->size > 0 && update) st = gl_array_begin_write(rmean);
  if (st == GL_OK && x->size > 0 && update) st = gl_array_begin_write(rvar);
  if (st == GL_OK && x->size > 0) {
    gl_array x4 = bn_view4(g.a[0]), y4 = bn_view4(y);
    if (training) st = dnn->batch_norm_train(&y4, save_mean, save_invstd, &x4, g.a[1], g.a[2], rmean, rvar, momentum, eps);
    else st = dnn->batch_norm_infer(&y4, &x4, g.a[1], g.a[2], rmean, rvar, eps);
  }
  dnn_release(&g);
  if (st != GL_OK) {
    gl_array_release(y);
    if (training) { gl_array_release(save_mean); gl_array_release(save_invstd); }
  }
  return st;
}

gl_status gl_op_dnn_batch_norm_bwd(gl_array *dx, gl_array *dw, gl_array *db, const gl_array *x, const gl_array *dy,
                                   const gl_array *w, const gl_array *save_mean, const gl_array *save_invstd,
                                   double eps) {
  const char *fn = "batch_norm_backward";
  const gl_array *per[3] = { w, save_mean, save_invstd };
  static const char *const names[3] = { "weight", "save_mean", "save_invstd" };
  GL_TRY(bn_check(fn, x, per, names, 3));
  if (w == NULL || save_mean == NULL || save_invstd == NULL)
    return gl_fail(GL_EINVAL, "%s: weight, save_mean and save_invstd are required", fn);
  GL_TRY(gl_op_input_device(fn, x, dy, "grad_output"));
  GL_TRY(dnn_same_dtype(fn, x, dy, "grad_output", (gl_dtype)x->dtype));
  GL_TRY(gl_op_want_shape(fn, dy, "grad_output", x->ndim, x->shape));
  if (!(eps > 0)) return gl_fail(GL_EINVAL, "%s: eps must be positive, got %g", fn, eps);
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(x), (gl_dtype)x->dtype, GL_DNN_BATCH_NORM, &dnn));
  int64_t C = x->shape[1];
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_device dev = gl_array_device(x);
  gl_status st = dnn_contig(&g, 0, x);
  if (st == GL_OK) st = dnn_contig(&g, 1, dy);
  if (st == GL_OK) st = dnn_contig(&g, 2, w);
  if (st == GL_OK) st = dnn_contig(&g, 3, save_mean);
  if (st == GL_OK) st = dnn_contig(&g, 4, save_invstd);
  if (st == GL_OK) st = gl_array_alloc(dx, (gl_dtype)x->dtype, x->ndim, x->shape, dev);
  if (st == GL_OK) st = gl_array_alloc(dw, (gl_dtype)x->dtype, 1, &C, dev);
  if (st == GL_OK) st = gl_array_alloc(db, (gl_dtype)x->dtype, 1, &C, dev);
  if (st == GL_OK && x->size > 0) {
    gl_array x4 = bn_view4(g.a[0]), dy4 = bn_view4(g.a[1]), dx4 = bn_view4(dx);
    st = dnn->batch_norm_bwd(&dx4, dw, db, &x4, &dy4, g.a[2], g.a[3], g.a[4], eps);
  } else if (st == GL_OK) {                  /* an empty batch: no gradient reaches w, b */
    st = gl_op_fill(dw, gl_scalar_float(0));
    if (st == GL_OK) st = gl_op_fill(db, gl_scalar_float(0));
  }
  dnn_release(&g);
  if (st != GL_OK) { gl_array_release(dx); gl_array_release(dw); gl_array_release(db); }
  return st;
}

/* ---- softmax over the last axis ------------------------------------------------------------ */

/* x as (rows, C) for the backend: a contiguous 2-D view (a copy when x is strided). */
static gl_status dnn_rows(dnn_args *g, int i, const gl_array *x, gl_array *view) {
  GL_TRY(dnn_contig(g, i, x));
  *view = *g->a[i];
  int64_t C = x->shape[x->ndim - 1], rs[2] = { C > 0 ? x->size / C : 0, C };
  GL_TRY(gl_view_reshape(view, 2, rs));
  g->a[i] = view;
  return GL_OK;
}

gl_status gl_op_dnn_softmax(gl_array *out, bool log, const gl_array *x) {
  const char *fn = log ? "log_softmax" : "softmax";
  GL_TRY(dnn_float(fn, x, "input", true));
  if (x->ndim < 1) return gl_fail(GL_EINVAL, "%s: the input must have at least 1 dimension", fn);
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(x), (gl_dtype)x->dtype, GL_DNN_SOFTMAX, &dnn));
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_array xv, ov;
  gl_status st = dnn_rows(&g, 0, x, &xv);
  if (st == GL_OK) st = gl_array_alloc(out, (gl_dtype)x->dtype, x->ndim, x->shape, gl_array_device(x));
  if (st == GL_OK && out->size > 0) {
    ov = *out;
    st = gl_view_reshape(&ov, 2, xv.shape);
    if (st == GL_OK) st = dnn->softmax(log, &ov, &xv);
    if (st != GL_OK) gl_array_release(out);
  }
  dnn_release(&g);
  return st;
}

gl_status gl_op_dnn_softmax_bwd(gl_array *out, bool log, const gl_array *y, const gl_array *dy) {
  const char *fn = log ? "log_softmax_backward" : "softmax_backward";
  GL_TRY(gl_op_input_device(fn, y, dy, "grad_output"));
  GL_TRY(dnn_float(fn, y, "output", true));
  GL_TRY(dnn_same_dtype(fn, y, dy, "grad_output", (gl_dtype)y->dtype));
  if (y->ndim < 1) return gl_fail(GL_EINVAL, "%s: the output must have at least 1 dimension", fn);
  GL_TRY(gl_op_want_shape(fn, dy, "grad_output", y->ndim, y->shape));
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(y), (gl_dtype)y->dtype, GL_DNN_SOFTMAX, &dnn));
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_array yv, gv, ov;
  gl_status st = dnn_rows(&g, 0, y, &yv);
  if (st == GL_OK) st = dnn_rows(&g, 1, dy, &gv);
  if (st == GL_OK) st = gl_array_alloc(out, (gl_dtype)y->dtype, y->ndim, y->shape, gl_array_device(y));
  if (st == GL_OK && out->size > 0) {
    ov = *out;
    st = gl_view_reshape(&ov, 2, yv.shape);
    if (st == GL_OK) st = dnn->softmax_bwd(log, &ov, &yv, &gv);
    if (st != GL_OK) gl_array_release(out);
  }
  dnn_release(&g);
  return st;
}


/* ---- layer norm over the last axis (oneDNN on the cpu) ---------------------------------------- */

/* x (..., D) with D >= 1 of float32/float64; the optional per-feature operands (D) of x's dtype and device. */
static gl_status ln_check(const char *fn, const gl_array *x, const gl_array *const *per, const char *const *names,
                          int n) {
  GL_TRY(dnn_float(fn, x, "input", false));
  if (x->ndim < 1 || x->shape[x->ndim - 1] < 1) {
    char s[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "%s: input must have a last axis of at least 1 element, got shape %s", fn,
                   gl_shape_str(x->ndim, x->shape, s));
  }
  int64_t D = x->shape[x->ndim - 1];
  for (int i = 0; i < n; i++) {
    if (per[i] == NULL) continue;
    GL_TRY(gl_op_input_device(fn, x, per[i], names[i]));
    GL_TRY(dnn_same_dtype(fn, x, per[i], names[i], (gl_dtype)x->dtype));
    GL_TRY(gl_op_want_shape(fn, per[i], names[i], 1, &D));
  }
  return GL_OK;
}

/* x as (R, D) for the backend (x contiguous). */
static gl_array ln_view2(const gl_array *x) {
  gl_array v = *x;
  int64_t D = x->shape[x->ndim - 1];
  v.ndim = 2;
  v.shape[0] = x->size / D;
  v.shape[1] = D;
  v.strides[1] = 1;
  v.strides[0] = D;
  return v;
}

/* Three outputs of dt on dev: out[i] of rank nd[i] and shape sh[i]; none is left made
** on failure. */
static gl_status alloc3(gl_array *const out[3], const int nd[3], const int64_t *const sh[3], gl_dtype dt,
                        gl_device dev) {
  for (int i = 0; i < 3; i++) {
    gl_status st = gl_array_alloc(out[i], dt, nd[i], sh[i], dev);
    if (st != GL_OK) {
      while (i-- > 0) gl_array_release(out[i]);
      return st;
    }
  }
  return GL_OK;
}

gl_status gl_op_dnn_layer_norm(gl_array *y, gl_array *mean, gl_array *rstd, const gl_array *x, const gl_array *w,
                               const gl_array *b, double eps) {
  const char *fn = "layer_norm";
  const gl_array *per[2] = { w, b };
  static const char *const names[2] = { "weight", "bias" };
  GL_TRY(ln_check(fn, x, per, names, 2));
  if (!(eps >= 0) || !isfinite(eps)) return gl_fail(GL_EINVAL, "%s: eps must be finite and >= 0, got %g", fn, eps);
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(x), (gl_dtype)x->dtype, GL_DNN_LAYER_NORM, &dnn));
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_device dev = gl_array_device(x);
  gl_dtype dt = (gl_dtype)x->dtype;
  gl_array *const out[3] = { y, mean, rstd };
  const int nd[3] = { x->ndim, x->ndim - 1, x->ndim - 1 };
  const int64_t *const sh[3] = { x->shape, x->shape, x->shape };
  gl_status st = dnn_contig(&g, 0, x);
  if (st == GL_OK) st = dnn_contig(&g, 1, w);
  if (st == GL_OK) st = dnn_contig(&g, 2, b);
  bool made = st == GL_OK && (st = alloc3(out, nd, sh, dt, dev)) == GL_OK;
  if (st == GL_OK && x->size > 0) {
    gl_array x2 = ln_view2(g.a[0]), y2 = ln_view2(y);
    st = dnn->layer_norm(&y2, mean, rstd, &x2, g.a[1], g.a[2], eps);
  }
  dnn_release(&g);
  if (st != GL_OK && made)
    for (int i = 0; i < 3; i++) gl_array_release(out[i]);
  return st;
}

gl_status gl_op_dnn_layer_norm_bwd(gl_array *dx, gl_array *dw, gl_array *db, const gl_array *x, const gl_array *dy,
                                   const gl_array *w, const gl_array *mean, const gl_array *rstd, double eps) {
  const char *fn = "layer_norm_backward";
  const gl_array *per[1] = { w };
  static const char *const names[1] = { "weight" };
  GL_TRY(ln_check(fn, x, per, names, 1));
  GL_TRY(gl_op_input_device(fn, x, dy, "grad_output"));
  GL_TRY(dnn_same_dtype(fn, x, dy, "grad_output", (gl_dtype)x->dtype));
  GL_TRY(gl_op_want_shape(fn, dy, "grad_output", x->ndim, x->shape));
  const gl_array *saved[2] = { mean, rstd };
  static const char *const snames[2] = { "mean", "rstd" };
  for (int i = 0; i < 2; i++) {
    GL_TRY(gl_op_input_device(fn, x, saved[i], snames[i]));
    GL_TRY(dnn_same_dtype(fn, x, saved[i], snames[i], (gl_dtype)x->dtype));
    GL_TRY(gl_op_want_shape(fn, saved[i], snames[i], x->ndim - 1, x->shape));
  }
  if (!(eps >= 0) || !isfinite(eps)) return gl_fail(GL_EINVAL, "%s: eps must be finite and >= 0, got %g", fn, eps);
  const gl_dnn *dnn;
  GL_TRY(dnn_table(fn, gl_array_device(x), (gl_dtype)x->dtype, GL_DNN_LAYER_NORM, &dnn));
  int64_t D = x->shape[x->ndim - 1];
  dnn_args g;
  memset(&g, 0, sizeof g);
  gl_device dev = gl_array_device(x);
  gl_dtype dt = (gl_dtype)x->dtype;
  gl_array *const out[3] = { dx, dw, db };
  const int nd[3] = { x->ndim, 1, 1 };
  const int64_t *const sh[3] = { x->shape, &D, &D };
  gl_status st = dnn_contig(&g, 0, x);
  if (st == GL_OK) st = dnn_contig(&g, 1, dy);
  if (st == GL_OK) st = dnn_contig(&g, 2, w);
  if (st == GL_OK) st = dnn_contig(&g, 3, mean);
  if (st == GL_OK) st = dnn_contig(&g, 4, rstd);
  bool made = st == GL_OK && (st = alloc3(out, nd, sh, dt, dev)) == GL_OK;
  if (st == GL_OK && x->size > 0) {
    gl_array x2 = ln_view2(g.a[0]), dy2 = ln_view2(g.a[1]), dx2 = ln_view2(dx);
    st = dnn->layer_norm_bwd(&dx2, dw, db, &x2, &dy2, g.a[2], g.a[3], g.a[4], eps);
  } else if (st == GL_OK) {                  /* no rows: no gradient reaches w, b */
    st = gl_op_fill(dw, gl_scalar_float(0));
    if (st == GL_OK) st = gl_op_fill(db, gl_scalar_float(0));
  }
  dnn_release(&g);
  if (st != GL_OK && made)
    for (int i = 0; i < 3; i++) gl_array_release(out[i]);
  return st;
}
