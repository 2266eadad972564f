/*
** cpu_dnnl_pool.c — max and average 2-D pooling on the cpu: direct loops over the plain NCHW
** planes, or oneDNN's blocked pooling through cpu_dnnl.c's cache when GPULUA_DNNL_POOL=1.
*/
#include <math.h>
#include <string.h>
#include "cpu_dnnl.h"

#ifdef GL_WITH_DNNL

/* Pooling runs in direct loops over the plain NCHW planes: measured on the 2-core EPYC
** (float32, the bench CNN's 128x32x28x28 max pool, 1 thread, CPU time), oneDNN's pooling on
** plain layouts (its simple_nchw kernel) took 43 ms forward where nn's im2col path took 13
** and these loops take a few; its blocked kernel needs a reorder in and out and was no faster
** than im2col. GPULUA_DNNL_POOL=1 takes oneDNN's blocked pooling instead (to measure it
** again on another machine). Max pooling propagates NaN (oneDNN's lets a NaN lose) and
** its backward sends each window's gradient to the first position holding the maximum
** (the first NaN), as nn's own path does. */

/* The output columns [lo, hi) whose tap kj reads inside a row of W: 0 <= ow*s - p + kj < W. */
static void tap_range(int64_t OW, int64_t W, int s, int p, int kj, int64_t *lo, int64_t *hi) {
  int64_t a = (int64_t)p - kj, b = W - 1 + p - kj;
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  *hi = b < 0 ? 0 : b / s + 1;
  if (*hi > OW) *hi = OW;
  if (*lo > *hi) *lo = *hi;
}

/* Whether x (n floats) holds a NaN. */
static bool has_nan(const float *x, int64_t n) {
  int nt = gl_cpu_team_size(n);
  int found = 0;
  _Pragma("omp parallel for num_threads(nt) schedule(static) reduction(|:found) if (nt > 1)")
  for (int64_t i = 0; i < n; i++) found |= x[i] != x[i];
  gl_cpu_team_done(nt);
  return found != 0;
}

typedef struct pool_geom {
  int64_t planes, H, W, OH, OW;
  const int *k, *s, *p;
} pool_geom;

/* y = the maxima (x without NaN) or the means (padding counted as zeros) of each window. */
static void pool_fwd_direct(bool max, float *y, const float *x, const pool_geom *g) {
  const int *k = g->k, *s = g->s, *p = g->p;
  float scale = 1.0f / (float)(k[0] * k[1]);
  int nt = gl_cpu_team_size(g->planes * g->OH * g->OW * k[0] * k[1]);
  _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
  for (int64_t pc = 0; pc < g->planes; pc++) {
    const float *in = x + pc * g->H * g->W;
    for (int64_t oh = 0; oh < g->OH; oh++) {
      float *yr = y + (pc * g->OH + oh) * g->OW;
      for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] = max ? -INFINITY : 0.0f;
      for (int ki = 0; ki < k[0]; ki++) {
        int64_t ih = oh * s[0] - p[0] + ki;
        if (ih < 0 || ih >= g->H) continue;
        const float *r = in + ih * g->W;
        for (int kj = 0; kj < k[1]; kj++) {
          int64_t lo, hi, off = (int64_t)kj - p[1];
          tap_range(g->OW, g->W, s[1], p[1], kj, &lo, &hi);
          if (max)
            for (int64_t ow = lo; ow < hi; ow++) {
              float v = r[ow * s[1] + off];
              yr[ow] = v > yr[ow] ? v : yr[ow];
            }
          else
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += r[ow * s[1] + off];
        }
      }
      if (!max)
        for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] *= scale;
    }
  }
  gl_cpu_team_done(nt);
}

/* Max pooling of planes holding a NaN: each window's first NaN, else its maximum. */
static void max_pool_nan(float *y, const float *x, const pool_geom *g) {
  const int *k = g->k, *s = g->s, *p = g->p;
  int nt = gl_cpu_team_size(g->planes * g->OH * g->OW * k[0] * k[1]);
  _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
  for (int64_t pc = 0; pc < g->planes; pc++) {
    const float *in = x + pc * g->H * g->W;
    for (int64_t oh = 0; oh < g->OH; oh++)
      for (int64_t ow = 0; ow < g->OW; ow++) {
        float m = -INFINITY;
        for (int ki = 0; ki < k[0] && m == m; ki++) {
          int64_t ih = oh * s[0] - p[0] + ki;
          for (int kj = 0; kj < k[1] && ih >= 0 && ih < g->H && m == m; kj++) {
            int64_t iw = ow * s[1] - p[1] + kj;
            if (iw < 0 || iw >= g->W) continue;
            float v = in[ih * g->W + iw];
            if (v > m || v != v) m = v;
          }
        }
        y[(pc * g->OH + oh) * g->OW + ow] = m;
      }
  }
  gl_cpu_team_done(nt);
}

/* dx from dy: max sends each window's gradient to the first position equal to its output
** y (the first NaN where y is NaN); avg spreads it evenly over the window. */
static void pool_bwd_direct(bool max, float *dx, const float *x, const float *y, const float *dy,
                            const pool_geom *g) {
  const int *k = g->k, *s = g->s, *p = g->p;
  float scale = 1.0f / (float)(k[0] * k[1]);
  /* windows as wide as their stride, unpadded (2x2 by 2, Keras's default pooling): each
  ** input in one window at most, found by its corner without tap ranges */
  bool tiled = s[0] == k[0] && s[1] == k[1] && p[0] == 0 && p[1] == 0;
  int nt = gl_cpu_team_size(g->planes * g->OH * g->OW * k[0] * k[1]);
  _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
  for (int64_t pc = 0; pc < g->planes; pc++) {
    const float *in = x + pc * g->H * g->W;
    float *d = dx + pc * g->H * g->W;
    memset(d, 0, sizeof(float) * (size_t)(g->H * g->W));
    for (int64_t oh = 0; oh < g->OH; oh++) {
      const float *yr = y ? y + (pc * g->OH + oh) * g->OW : NULL, *gr = dy + (pc * g->OH + oh) * g->OW;
      if (!max) {
        for (int ki = 0; ki < k[0]; ki++) {
          int64_t ih = oh * s[0] - p[0] + ki;
          if (ih < 0 || ih >= g->H) continue;
          float *r = d + ih * g->W;
          for (int kj = 0; kj < k[1]; kj++) {
            int64_t lo, hi, off = (int64_t)kj - p[1];
            tap_range(g->OW, g->W, s[1], p[1], kj, &lo, &hi);
            for (int64_t ow = lo; ow < hi; ow++) r[ow * s[1] + off] += gr[ow] * scale;
          }
        }
        continue;
      }
      if (tiled) {                  /* windows that tile the plane: one at a time, to the */
        for (int64_t ow = 0; ow < g->OW; ow++) {   /* first position equal to y (NaN: the first NaN) */
          const float *w0 = in + oh * k[0] * g->W + ow * k[1];
          float m = yr[ow];
          bool nan = m != m;
          int64_t at = 0;
          for (int ki = 0, found = 0; ki < k[0] && !found; ki++)
            for (int kj = 0; kj < k[1]; kj++) {
              float v = w0[ki * g->W + kj];
              if (nan ? v != v : v == m) { at = ki * g->W + kj; found = 1; break; }
            }
          d[oh * k[0] * g->W + ow * k[1] + at] += gr[ow];
        }
        continue;
      }
      /* tap by tap over a chunk of outputs: each output's first maximum in window order
      ** (ki, kj), as the forward met it, then its gradient to that spot; where y is NaN, the
      ** first NaN */
      for (int64_t c0 = 0; c0 < g->OW; c0 += 256) {
        int64_t c1 = g->OW - c0 < 256 ? g->OW : c0 + 256;
        float best[256];
        int64_t at[256];
        for (int64_t i = 0; i < c1 - c0; i++) at[i] = -1;
        for (int ki = 0; ki < k[0]; ki++) {
          int64_t ih = oh * s[0] - p[0] + ki;
          if (ih < 0 || ih >= g->H) continue;
          const float *r = in + ih * g->W;
          for (int kj = 0; kj < k[1]; kj++) {
            int64_t lo, hi, off = (int64_t)kj - p[1];
            tap_range(g->OW, g->W, s[1], p[1], kj, &lo, &hi);
            if (lo < c0) lo = c0;
            if (hi > c1) hi = c1;
            for (int64_t ow = lo; ow < hi; ow++) {
              int64_t i = ow - c0, pos = ih * g->W + ow * s[1] + off;
              float v = r[ow * s[1] + off], m = yr[ow];
              bool take = at[i] < 0 || (m == m ? v > best[i] : (v != v && best[i] == best[i]));
              best[i] = take ? v : best[i];
              at[i] = take ? pos : at[i];
            }
          }
        }
        for (int64_t ow = c0; ow < c1; ow++)
          if (at[ow - c0] >= 0) d[at[ow - c0]] += gr[ow];
      }
    }
  }
  gl_cpu_team_done(nt);
}

/* oneDNN's pooling (GPULUA_DNNL_POOL=1): blocked nChw8c, reordered in and out; its backward
** reads the forward's workspace (where each maximum was), so the forward runs again in
** training mode: the dnn interface hands backward x, y and dy. */
/* What pool_build builds: pooling op (max or average) of x (shape xs) into y (shape ys). */
typedef struct pool_ctx {
  int op;
  bool max;
  const int64_t *xs, *ys;
  const int *k, *stride, *pad;
} pool_ctx;

static dnnl_status_t pool_desc(dnnl_pooling_v2_desc_t *pd, int op, const pool_ctx *c) {
  const int64_t *xs = c->xs, *ys = c->ys;
  const int *k = c->k, *stride = c->stride, *pad = c->pad;
  dnnl_memory_desc_t x, y;
  gl_dnnl_md4(&x, xs, dnnl_nChw8c);
  gl_dnnl_md4(&y, ys, dnnl_nChw8c);
  dnnl_dims_t st = { stride[0], stride[1] }, kk = { k[0], k[1] }, dil = { 0, 0 }, pl = { pad[0], pad[1] }, pr;
  for (int i = 0; i < 2; i++) pr[i] = (ys[2 + i] - 1) * stride[i] + k[i] - xs[2 + i] - pad[i];
  dnnl_alg_kind_t alg = c->max ? dnnl_pooling_max : dnnl_pooling_avg_include_padding;
  if (op == OP_POOL_BWD) return gl_dnnl.dnnl_pooling_v2_backward_desc_init(pd, alg, &x, &y, st, kk, dil, pl, pr);
  return gl_dnnl.dnnl_pooling_v2_forward_desc_init(pd, op == OP_POOL_FWD ? dnnl_forward_inference
                                                                        : dnnl_forward_training,
                                                   alg, &x, &y, st, kk, dil, pl, pr);
}

/* Builds the entry of a pooling op: forward (x, y [, workspace when training max]) or
** backward (dy [, workspace for max], dx). */
static dnnl_status_t pool_build(gl_dnnl_entry *e, const void *ctx) {
  const pool_ctx *c = ctx;
  dnnl_memory_desc_t x, y;
  gl_dnnl_md4(&x, c->xs, dnnl_nchw);
  gl_dnnl_md4(&y, c->ys, dnnl_nchw);
  dnnl_pooling_v2_desc_t fd, bd;
  dnnl_status_t s = pool_desc(&fd, c->op == OP_POOL_FWD ? OP_POOL_FWD : OP_POOL_FWD_TRAIN, c);
  if (s != dnnl_success) return s;
  if (c->op != OP_POOL_BWD) {
    bool ws = c->op == OP_POOL_FWD_TRAIN && c->max;
    const gl_dnnl_arg a[] = { gl_dnnl_in(DNNL_ARG_SRC, &x), gl_dnnl_out(DNNL_ARG_DST, &y),
                              gl_dnnl_when(ws, gl_dnnl_out(DNNL_ARG_WORKSPACE, NULL)) };
    if ((s = gl_dnnl_make(e, &fd)) != dnnl_success) return s;
    return gl_dnnl_args(e, a, 3);
  }
  const gl_dnnl_arg a[] = { gl_dnnl_in(DNNL_ARG_DIFF_DST, &y),
                            gl_dnnl_when(c->max, gl_dnnl_in(DNNL_ARG_WORKSPACE, NULL)),
                            gl_dnnl_out(DNNL_ARG_DIFF_SRC, &x) };
  s = pool_desc(&bd, OP_POOL_BWD, c);
  if (s == dnnl_success) s = gl_dnnl_make_bwd(e, &fd, &bd);
  return s == dnnl_success ? gl_dnnl_args(e, a, 3) : s;
}

static void pool_key(int64_t *key, const pool_ctx *c, int nt) {
  memset(key, 0, GL_DNNL_KEYLEN * sizeof key[0]);
  int n = 0;
  key[n++] = c->op;
  key[n++] = c->max;
  key[n++] = nt;
  for (int i = 0; i < 4; i++) { key[n++] = c->xs[i]; key[n++] = c->ys[i]; }
  for (int i = 0; i < 2; i++) { key[n++] = c->k[i]; key[n++] = c->stride[i]; key[n++] = c->pad[i]; }
}

/* The cached (or new) entry of a pooling op, lock held; NULL with *st set on failure. */
static gl_dnnl_entry *pool_entry(int op, bool max, int nt, const int64_t *xs, const int64_t *ys, const int *k,
                                 const int *stride, const int *pad, gl_status *st) {
  pool_ctx c = { op, max, xs, ys, k, stride, pad };
  int64_t key[GL_DNNL_KEYLEN];
  pool_key(key, &c, nt);
  gl_dnnl_entry *e;
  dnnl_status_t s = gl_dnnl_entry_get(key, pool_build, &c, &e);
  if (s != dnnl_success) *st = gl_dnnl_fail("pooling setup", s);
  return e;
}

static pool_geom pool_geom_of(const gl_array *x, const gl_array *y, const int *k, const int *stride, const int *pad) {
  pool_geom g = { x->shape[0] * x->shape[1], x->shape[2], x->shape[3], y->shape[2], y->shape[3], k, stride, pad };
  return g;
}

gl_status gl_dnnl_pool2d(bool max, const gl_array *y, const gl_array *x, const int *k, const int *stride,
                         const int *pad) {
  pool_geom g = pool_geom_of(x, y, k, stride, pad);
  if (max && has_nan(gl_array_data(x), x->size)) {
    max_pool_nan(gl_array_data(y), gl_array_data(x), &g);
    return gl_interrupt_check();
  }
  if (!gl_dnnl_pool_onednn) {
    pool_fwd_direct(max, gl_array_data(y), gl_array_data(x), &g);
    return gl_interrupt_check();
  }
  int saved, nt = gl_dnnl_threads_begin(y->size * k[0] * k[1], &saved);
  gl_status st = GL_OK;
  gl_dnnl_lock();
  gl_dnnl_entry *e = pool_entry(OP_POOL_FWD, max, nt, x->shape, y->shape, k, stride, pad, &st);
  if (e) {
    void *data[2] = { gl_array_data(x), gl_array_data(y) };
    st = gl_dnnl_entry_run(e, data);
  }
  gl_dnnl_unlock();
  gl_dnnl_threads_end(nt, saved);
  return st == GL_OK ? gl_interrupt_check() : st;
}

gl_status gl_dnnl_pool2d_bwd(bool max, const gl_array *dx, const gl_array *x, const gl_array *y,
                             const gl_array *dy, const int *k, const int *stride, const int *pad) {
  pool_geom g = pool_geom_of(x, dy, k, stride, pad);
  if (!gl_dnnl_pool_onednn || (max && has_nan(gl_array_data(x), x->size))) {
    pool_bwd_direct(max, gl_array_data(dx), gl_array_data(x), gl_array_data(y), gl_array_data(dy), &g);
    return gl_interrupt_check();
  }
  int saved, nt = gl_dnnl_threads_begin(dy->size * k[0] * k[1], &saved);
  gl_status st = GL_OK;
  gl_dnnl_lock();
  gl_dnnl_entry *f = max ? pool_entry(OP_POOL_FWD_TRAIN, max, nt, x->shape, dy->shape, k, stride, pad, &st) : NULL;
  void *y2 = NULL, *ws = NULL;
  size_t ybytes = (size_t)dy->size * sizeof(float), wsbytes = 0;
  if (f) {                              /* the maxima's positions, into a workspace */
    wsbytes = gl_dnnl.dnnl_memory_desc_get_size(gl_dnnl.dnnl_primitive_desc_query_md(f->pd, dnnl_query_workspace_md, 0));
    st = gl_cpu_alloc(gl_cpu(), ybytes, &y2);
    if (st == GL_OK) st = gl_cpu_alloc(gl_cpu(), wsbytes ? wsbytes : 1, &ws);
    if (st == GL_OK) {
      void *data[3] = { gl_array_data(x), y2, ws };
      st = gl_dnnl_entry_run(f, data);
    }
  }
  gl_dnnl_entry *e = st == GL_OK ? pool_entry(OP_POOL_BWD, max, nt, x->shape, dy->shape, k, stride, pad, &st) : NULL;
  if (e) {
    void *data[3] = { gl_array_data(dy), max ? ws : gl_array_data(dx), gl_array_data(dx) };
    st = gl_dnnl_entry_run(e, data);
  }
  gl_dnnl_unlock();
  if (y2) gl_cpu_free(gl_cpu(), y2, ybytes);
  if (ws) gl_cpu_free(gl_cpu(), ws, wsbytes ? wsbytes : 1);
  gl_dnnl_threads_end(nt, saved);
  return st == GL_OK ? gl_interrupt_check() : st;
}

#endif
