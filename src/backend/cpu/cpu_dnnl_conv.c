/*
** cpu_dnnl_conv.c — oneDNN's convolution (forward, backward data, backward weights) on the
** cpu, with im2col + sgemm for a case oneDNN has no implementation for. The primitives let
** oneDNN choose its blocked layouts and reorder the plain NCHW/OIHW arrays in and out
** (cpu_dnnl.c's cache and gl_dnnl_entry_run).
*/
#include <string.h>
#include "cpu_dnnl.h"

#ifdef GL_WITH_DNNL

/* The geometry of a convolution of x (N, C, H, W) by w (O, C/G, kh, kw) giving y (N, O, OH,
** OW), in oneDNN's terms: dilation counted from 0, the right/bottom padding whatever makes
** the output extents PyTorch's (negative where the last rows are never read). */
typedef struct conv_geom {
  int64_t x[4], w[4], y[4];
  dnnl_dims_t stride, dil, pl, pr;
  int groups;
} conv_geom;

static void conv_geom_of(conv_geom *g, const int64_t *xs, const int64_t *ws, const int64_t *ys, const gl_dnn_conv *c) {
  memset(g, 0, sizeof *g);
  memcpy(g->x, xs, sizeof g->x);
  memcpy(g->w, ws, sizeof g->w);
  memcpy(g->y, ys, sizeof g->y);
  for (int i = 0; i < 2; i++) {
    g->stride[i] = c->stride[i];
    g->dil[i] = c->dil[i] - 1;
    g->pl[i] = c->pad[i];
    g->pr[i] = (ys[2 + i] - 1) * c->stride[i] + (ws[2 + i] - 1) * c->dil[i] + 1 - xs[2 + i] - c->pad[i];
  }
  g->groups = c->groups;
}

static void conv_key(int64_t *key, int op, const conv_geom *g, int nt) {
  memset(key, 0, GL_DNNL_KEYLEN * sizeof key[0]);
  int k = 0;
  key[k++] = op;
  key[k++] = nt;
  for (int i = 0; i < 4; i++) { key[k++] = g->x[i]; key[k++] = g->w[i]; }
  for (int i = 0; i < 2; i++) { key[k++] = g->stride[i]; key[k++] = g->dil[i]; key[k++] = g->pl[i]; }
  key[k++] = g->groups;
}

/* The weights' plain layout: OIHW, or for groups (G, O/G, I/G, kh, kw), the same bytes. */
static void weights_md(dnnl_memory_desc_t *md, const conv_geom *g, bool any) {
  if (g->groups == 1) {
    gl_dnnl_md4(md, g->w, any ? dnnl_format_tag_any : dnnl_oihw);
    return;
  }
  dnnl_dims_t d = { g->groups, g->w[0] / g->groups, g->w[1], g->w[2], g->w[3] };
  gl_dnnl.dnnl_memory_desc_init_by_tag(md, 5, d, dnnl_f32, any ? dnnl_format_tag_any : dnnl_goihw);
}

static dnnl_status_t conv_fwd_desc(dnnl_convolution_desc_t *cd, const conv_geom *g, bool any) {
  dnnl_memory_desc_t x, w, y;
  gl_dnnl_md4(&x, g->x, any ? dnnl_format_tag_any : dnnl_nchw);
  weights_md(&w, g, any);
  gl_dnnl_md4(&y, g->y, any ? dnnl_format_tag_any : dnnl_nchw);
  return gl_dnnl.dnnl_dilated_convolution_forward_desc_init(cd, dnnl_forward_training, dnnl_convolution_direct, &x, &w,
                                                      NULL, &y, g->stride, g->dil, g->pl, g->pr);
}

/* What conv_build builds: direction op of geometry g. */
typedef struct conv_ctx {
  int op;
  const conv_geom *g;
} conv_ctx;

/* Builds the entry of a convolution direction (arguments in conv_run's data order);
** dnnl_unimplemented sends conv_run to im2col. */
static dnnl_status_t conv_build(gl_dnnl_entry *e, const void *ctx) {
  const conv_ctx *c = ctx;
  const conv_geom *g = c->g;
  /* oneDNN has reference kernels for every geometry seen so far: the refusal path is
  ** reached in the specs through GPULUA_DNNL_REFUSE=1 */
  if (gl_dnnl_refuse) return dnnl_unimplemented;
  const bool any = true;              /* oneDNN picks its layouts (see cpu_dnnl.c) */
  dnnl_memory_desc_t x, w, y, xa, wa, ya;
  gl_dnnl_md4(&x, g->x, dnnl_nchw);
  weights_md(&w, g, false);
  gl_dnnl_md4(&y, g->y, dnnl_nchw);
  gl_dnnl_md4(&xa, g->x, any ? dnnl_format_tag_any : dnnl_nchw);
  weights_md(&wa, g, any);
  gl_dnnl_md4(&ya, g->y, any ? dnnl_format_tag_any : dnnl_nchw);
  dnnl_convolution_desc_t fd, bd;
  dnnl_status_t s = conv_fwd_desc(&fd, g, any);
  if (s != dnnl_success) return s;
  if (c->op == OP_CONV_FWD) {
    const gl_dnnl_arg a[] = { gl_dnnl_in(DNNL_ARG_SRC, &x), gl_dnnl_in(DNNL_ARG_WEIGHTS, &w),
                              gl_dnnl_out(DNNL_ARG_DST, &y) };
    if ((s = gl_dnnl_make(e, &fd)) != dnnl_success) return s;
    return gl_dnnl_args(e, a, 3);
  }
  if (c->op == OP_CONV_BWD_DATA) {
    const gl_dnnl_arg a[] = { gl_dnnl_in(DNNL_ARG_DIFF_DST, &y), gl_dnnl_in(DNNL_ARG_WEIGHTS, &w),
                              gl_dnnl_out(DNNL_ARG_DIFF_SRC, &x) };
    s = gl_dnnl.dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, &ya,
                                                                 g->stride, g->dil, g->pl, g->pr);
    if (s == dnnl_success) s = gl_dnnl_make_bwd(e, &fd, &bd);
    return s == dnnl_success ? gl_dnnl_args(e, a, 3) : s;
  }
  const gl_dnnl_arg a[] = { gl_dnnl_in(DNNL_ARG_SRC, &x), gl_dnnl_in(DNNL_ARG_DIFF_DST, &y),
                            gl_dnnl_out(DNNL_ARG_DIFF_WEIGHTS, &w) };
  s = gl_dnnl.dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, NULL, &ya,
                                                                  g->stride, g->dil, g->pl, g->pr);
  if (s == dnnl_success) s = gl_dnnl_make_bwd(e, &fd, &bd);
  return s == dnnl_success ? gl_dnnl_args(e, a, 3) : s;
}

/* The path for a case oneDNN has no implementation for: im2col + sgemm per image and
** group, as nn's own convolution does (K = C/G * kh * kw, L = OH * OW). */
static gl_status conv_im2col(int op, const conv_geom *g, float *a0, float *a1, float *out, const gl_dnn_conv *c) {
  const gl_cpu_blas *bl;
  GL_TRY(gl_cpu_blas_get(&bl));
  int64_t N = g->x[0], C = g->x[1], O = g->w[0], G = g->groups, Og = O / G;
  int64_t K = g->w[1] * g->w[2] * g->w[3], L = g->y[2] * g->y[3], CHW = C * g->x[2] * g->x[3];
  int k[2] = { (int)g->w[2], (int)g->w[3] };
  gl_array cols, img;
  memset(&cols, 0, sizeof cols);
  int64_t cs[4] = { 1, C * k[0] * k[1], L }, is[4] = { 1, C, g->x[2], g->x[3] };
  GL_TRY(gl_array_alloc(&cols, GL_FLOAT32, 3, cs, gl_cpu()));
  gl_status st = gl_array_init(&img, GL_FLOAT32, 4, is);
  gl_storage xs = { .refcount = 1, .nbytes = (size_t)CHW * sizeof(float), .device = gl_cpu() };
  img.storage = &xs;
  float *cd = gl_array_data(&cols);
  gl_cpu_blas_threads(bl, gl_cpu_team_size(Og * K * L));
  for (int64_t n = 0; n < N && st == GL_OK; n++) {
    /* fwd: a0 x, a1 w, out y; bwd_data: a0 dy, a1 w, out dx; bwd_weights: a0 x, a1 dy, out dw */
    if (op != OP_CONV_BWD_DATA) {
      xs.data = a0 + n * CHW;
      st = gl_cpu_im2col(&cols, &img, k, c->stride, c->pad, c->dil, 0.0);
    }
    for (int64_t gi = 0; gi < G && st == GL_OK; gi++) {
      float *cg = cd + gi * K * L;
      if (op == OP_CONV_FWD)
        bl->sgemm(GL_CBLAS_ROW_MAJOR, GL_CBLAS_NO_TRANS, GL_CBLAS_NO_TRANS, (int)Og, (int)L, (int)K, 1.0f,
                  a1 + gi * Og * K, (int)K, cg, (int)L, 0.0f, out + (n * O + gi * Og) * L, (int)L);
      else if (op == OP_CONV_BWD_DATA)
        bl->sgemm(GL_CBLAS_ROW_MAJOR, GL_CBLAS_TRANS, GL_CBLAS_NO_TRANS, (int)K, (int)L, (int)Og, 1.0f,
                  a1 + gi * Og * K, (int)K, a0 + (n * O + gi * Og) * L, (int)L, 0.0f, cg, (int)L);
      else
        bl->sgemm(GL_CBLAS_ROW_MAJOR, GL_CBLAS_NO_TRANS, GL_CBLAS_TRANS, (int)Og, (int)K, (int)L, 1.0f,
                  a1 + (n * O + gi * Og) * L, (int)L, cg, (int)L, n == 0 ? 0.0f : 1.0f, out + gi * Og * K, (int)K);
    }
    if (op == OP_CONV_BWD_DATA && st == GL_OK) {
      xs.data = out + n * CHW;
      st = gl_cpu_col2im(&img, &cols, k, c->stride, c->pad, c->dil);
    }
  }
  gl_array_release(&cols);
  return st == GL_OK ? gl_interrupt_check() : st;
}

/* One convolution direction: a0, a1 the operands, out the result (see conv_im2col). */
static gl_status conv_run(int op, const gl_array *x_or_dy, const gl_array *a1, const gl_array *out,
                          const int64_t *xs, const int64_t *ws, const int64_t *ys, const gl_dnn_conv *c) {
  conv_geom g;
  conv_geom_of(&g, xs, ws, ys, c);
  int saved, nt = gl_dnnl_threads_begin(ys[0] * ys[1] * ys[2] * ys[3] * ws[1] * ws[2] * ws[3], &saved);
  int64_t key[GL_DNNL_KEYLEN];
  conv_key(key, op, &g, nt);
  conv_ctx ctx = { op, &g };
  gl_dnnl_lock();
  gl_dnnl_entry *e;
  dnnl_status_t s = gl_dnnl_entry_get(key, conv_build, &ctx, &e);
  gl_status st;
  float *a0 = gl_array_data(x_or_dy), *b = gl_array_data(a1), *o = gl_array_data(out);
  if (s == dnnl_success) {
    void *data[3] = { a0, b, o };
    st = gl_dnnl_entry_run(e, data);
  } else if (s == dnnl_unimplemented) {
    st = conv_im2col(op, &g, a0, b, o, c);
  } else {
    st = gl_dnnl_fail("convolution setup", s);
  }
  gl_dnnl_unlock();
  gl_dnnl_threads_end(nt, saved);
  return st == GL_OK ? gl_interrupt_check() : st;
}

gl_status gl_dnnl_conv2d(const gl_array *y, const gl_array *x, const gl_array *w, const gl_dnn_conv *c) {
  return conv_run(OP_CONV_FWD, x, w, y, x->shape, w->shape, y->shape, c);
}
gl_status gl_dnnl_conv2d_bwd_data(const gl_array *dx, const gl_array *dy, const gl_array *w, const gl_dnn_conv *c) {
  return conv_run(OP_CONV_BWD_DATA, dy, w, dx, dx->shape, w->shape, dy->shape, c);
}
gl_status gl_dnnl_conv2d_bwd_filter(const gl_array *dw, const gl_array *x, const gl_array *dy, const gl_dnn_conv *c) {
  return conv_run(OP_CONV_BWD_WEIGHTS, x, dy, dw, x->shape, dw->shape, dy->shape, c);
}

#endif
