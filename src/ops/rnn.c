/*
** rnn.c — the fused LSTM layer under gpu.nn.LSTM (gpu.fused.lstm in Lua): the time loop of
** one layer and direction, given the input projections of every step (one GEMM, done by
** the caller). Each step is one GEMM of the previous hidden state by W_hh^T (the backend's
** matmul, BLAS or cuBLAS) and one pass of the backend's cell kernel (kernels/rnn.h); the
** backward pass through time is the same loop reversed, and the weight gradient one GEMM
** over all steps at the end. hc (L, N, 2, H) holds h and c of every step: one array, so
** one tape node carries the gradients of both.
*/
#include <string.h>
#include "ops.h"

/* ---- checks ------------------------------------------------------------------------------- */

static gl_status same_place(const char *fn, const gl_array *ref, const gl_array *x, const char *what) {
  char d1[16], d2[16];
  if (!gl_device_eq(gl_array_device(ref), gl_array_device(x)))
    return gl_fail(GL_EDEVICE, "%s: %s is on %s but the input is on %s (move it with :to())", fn, what,
                   gl_device_name(gl_array_device(x), d1), gl_device_name(gl_array_device(ref), d2));
  if (x->dtype != ref->dtype)
    return gl_fail(GL_EINVAL, "%s: %s is %s, expected %s like the input", fn, what, gl_dtypes[x->dtype].name,
                   gl_dtypes[ref->dtype].name);
  return GL_OK;
}

static gl_status want_shape(const char *fn, const gl_array *x, const char *what, int nd, const int64_t *want) {
  if (x->ndim == nd && memcmp(x->shape, want, (size_t)nd * sizeof want[0]) == 0) return GL_OK;
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  return gl_fail(GL_EINVAL, "%s: %s has shape %s, expected %s", fn, what, gl_shape_str(x->ndim, x->shape, s1),
                 gl_shape_str(nd, want, s2));
}

/* The geometry (L, N, H) from xp (L, N, 4H) and w (4H, H), every operand checked, and
** the backend (with the cell kernel and matmul for the dtype). */
static gl_status lstm_check(const char *fn, const gl_array *xp, const gl_array *w, const gl_array *h0,
                            const gl_array *c0, int64_t *L, int64_t *N, int64_t *H, const gl_backend **be) {
  char s[GL_SHAPE_BUFSZ];
  if (xp->dtype != GL_FLOAT32 && xp->dtype != GL_FLOAT64)
    return gl_fail(GL_EINVAL, "%s: the input projection must be float32 or float64, got %s", fn,
                   gl_dtypes[xp->dtype].name);
  if (xp->ndim != 3 || xp->shape[0] < 1)
    return gl_fail(GL_EINVAL, "%s: the input projection must be (L, N, 4 hidden) with L >= 1, got shape %s", fn,
                   gl_shape_str(xp->ndim, xp->shape, s));
  GL_TRY(same_place(fn, xp, w, "weight_hh"));
  GL_TRY(same_place(fn, xp, h0, "h0"));
  GL_TRY(same_place(fn, xp, c0, "c0"));
  if (w->ndim != 2 || w->shape[0] != 4 * w->shape[1])
    return gl_fail(GL_EINVAL, "%s: weight_hh must be (4 hidden, hidden), got shape %s", fn,
                   gl_shape_str(w->ndim, w->shape, s));
  *L = xp->shape[0];
  *N = xp->shape[1];
  *H = w->shape[1];
  int64_t want[3] = { *L, *N, 4 * *H };
  GL_TRY(want_shape(fn, xp, "the input projection", 3, want));
  int64_t st[2] = { *N, *H };
  GL_TRY(want_shape(fn, h0, "h0", 2, st));
  GL_TRY(want_shape(fn, c0, "c0", 2, st));
  GL_TRY(gl_backend_supporting(gl_array_device(xp), GL_OP_MATMUL, 0, (gl_dtype)xp->dtype, fn, be));
  if ((*be)->lstm_cell == NULL) {
    char dn[16];
    return gl_fail(GL_ENOTSUP, "%s is not supported on %s", fn, gl_device_name(gl_array_device(xp), dn));
  }
  return GL_OK;
}

/* Operands made contiguous (copies in tmp[], released by args_release). */
typedef struct lstm_args { gl_array tmp[6]; const gl_array *a[6]; } lstm_args;

static gl_status contig(lstm_args *g, int i, const gl_array *x) {
  return gl_op_as_contig(x, (gl_dtype)x->dtype, &g->tmp[i], &g->a[i]);
}

static void args_release(lstm_args *g) {
  for (int i = 0; i < 6; i++) gl_array_release(&g->tmp[i]);
}

/* Views: step t of a (L, N, K) array as (N, K); h (part 0) or c (part 1) of step t of hc. */
static gl_array step_of(const gl_array *a, int64_t t) {
  gl_array v = *a;
  gl_view_select(&v, 0, t);
  return v;
}

static gl_array state_of(const gl_array *hc, int64_t t, int part) {
  gl_array v = *hc;
  gl_view_select(&v, 0, t);
  gl_view_select(&v, 1, part);
  return v;
}

/* The time step processed at position s (0-based) and the one before it (-1: the initial state). */
static int64_t time_at(int64_t s, int64_t L, bool reverse) { return reverse ? L - 1 - s : s; }

/* ---- forward -------------------------------------------------------------------------------- */

gl_status gl_op_lstm(gl_array *hc, gl_array *gates, const gl_array *xp, const gl_array *w, const gl_array *h0,
                     const gl_array *c0, bool reverse) {
  const char *fn = "lstm";
  int64_t L = 0, N = 0, H = 0;
  const gl_backend *be;
  GL_TRY(lstm_check(fn, xp, w, h0, c0, &L, &N, &H, &be));
  gl_device dev = gl_array_device(xp);
  gl_dtype dt = (gl_dtype)xp->dtype;
  lstm_args g;
  memset(&g, 0, sizeof g);
  gl_array hw = { 0 };
  int64_t hcs[4] = { L, N, 2, H }, gs[3] = { L, N, 4 * H }, hws[2] = { N, 4 * H };
  gl_status st = contig(&g, 0, xp);
  if (st == GL_OK) st = contig(&g, 1, w);
  if (st == GL_OK) st = contig(&g, 2, h0);
  if (st == GL_OK) st = contig(&g, 3, c0);
  if (st == GL_OK) st = gl_array_alloc(hc, dt, 4, hcs, dev);
  if (st == GL_OK) st = gl_array_alloc(gates, dt, 3, gs, dev);
  if (st == GL_OK) st = gl_array_alloc(&hw, dt, 2, hws, dev);
  if (st == GL_OK && N > 0 && H > 0) {
    gl_array wt = *g.a[1];
    gl_view_transpose(&wt, 0, 1);                                   /* (H, 4H), BLAS reads it in place */
    for (int64_t s = 0; s < L && st == GL_OK; s++) {
      int64_t t = time_at(s, L, reverse), tp = s > 0 ? time_at(s - 1, L, reverse) : -1;
      gl_array hp = tp < 0 ? *g.a[2] : state_of(hc, tp, 0), cp = tp < 0 ? *g.a[3] : state_of(hc, tp, 1);
      st = be->matmul(&hw, &hp, &wt);
      if (st != GL_OK) break;
      gl_array xt = step_of(g.a[0], t), gt = step_of(gates, t), ht = state_of(hc, t, 0), ct = state_of(hc, t, 1);
      gl_lstm_cell cell = { 0 };
      cell.N = N;
      cell.H = H;
      cell.xp = gl_array_data(&xt);
      cell.hw = gl_array_data(&hw);
      cell.gates = gl_array_data(&gt);
      cell.c_prev = gl_array_data(&cp);
      cell.c_prev_ld = cp.strides[0];
      cell.h = gl_array_data(&ht);
      cell.c = gl_array_data(&ct);
      cell.hc_ld = 2 * H;
      st = be->lstm_cell(dev, false, dt, &cell);
    }
  } else if (st == GL_OK && hc->size > 0) {
    st = gl_op_fill(hc, gl_scalar_float(0));
    if (st == GL_OK) st = gl_op_fill(gates, gl_scalar_float(0));
  }
  gl_array_release(&hw);
  args_release(&g);
  if (st != GL_OK) { gl_array_release(hc); gl_array_release(gates); }
  return st;
}

/* ---- backward through time ---------------------------------------------------------------- */

gl_status gl_op_lstm_bwd(gl_array *dxp, gl_array *dw, gl_array *dh0, gl_array *dc0, const gl_array *ghc,
                         const gl_array *gates, const gl_array *hc, const gl_array *w, const gl_array *h0,
                         const gl_array *c0, bool reverse) {
  const char *fn = "lstm_backward";
  int64_t L = 0, N = 0, H = 0;
  const gl_backend *be;
  GL_TRY(lstm_check(fn, gates, w, h0, c0, &L, &N, &H, &be));
  GL_TRY(same_place(fn, gates, hc, "hc"));
  GL_TRY(same_place(fn, gates, ghc, "grad_output"));
  int64_t hcs[4] = { L, N, 2, H };
  GL_TRY(want_shape(fn, hc, "hc", 4, hcs));
  GL_TRY(want_shape(fn, ghc, "grad_output", 4, hcs));
  gl_device dev = gl_array_device(gates);
  gl_dtype dt = (gl_dtype)gates->dtype;
  lstm_args g;
  memset(&g, 0, sizeof g);
  gl_array hprev = { 0 };
  int64_t gs[3] = { L, N, 4 * H }, ws[2] = { 4 * H, H }, ss[2] = { N, H }, ps[3] = { L, N, H };
  gl_status st = contig(&g, 0, ghc);
  if (st == GL_OK) st = contig(&g, 1, gates);
  if (st == GL_OK) st = contig(&g, 2, hc);
  if (st == GL_OK) st = contig(&g, 3, w);
  if (st == GL_OK) st = contig(&g, 4, h0);
  if (st == GL_OK) st = contig(&g, 5, c0);
  if (st == GL_OK) st = gl_array_alloc(dxp, dt, 3, gs, dev);
  if (st == GL_OK) st = gl_array_alloc(dw, dt, 2, ws, dev);
  if (st == GL_OK) st = gl_array_alloc(dh0, dt, 2, ss, dev);
  if (st == GL_OK) st = gl_array_alloc(dc0, dt, 2, ss, dev);
  if (st == GL_OK) st = gl_array_alloc(&hprev, dt, 3, ps, dev);
  /* dh0 and dc0 carry the gradients of the state from step to step */
  if (st == GL_OK && dh0->size > 0) st = gl_op_fill(dh0, gl_scalar_float(0));
  if (st == GL_OK && dc0->size > 0) st = gl_op_fill(dc0, gl_scalar_float(0));
  if (st == GL_OK && N > 0 && H > 0) {
    for (int64_t s = L - 1; s >= 0 && st == GL_OK; s--) {
      int64_t t = time_at(s, L, reverse), tp = s > 0 ? time_at(s - 1, L, reverse) : -1;
      gl_array hp = tp < 0 ? *g.a[4] : state_of(g.a[2], tp, 0), cp = tp < 0 ? *g.a[5] : state_of(g.a[2], tp, 1);
      gl_array hpt = step_of(&hprev, t);
      st = be->copy(&hpt, &hp);                                     /* h_prev of step t, for dW */
      if (st != GL_OK) break;
      gl_array gt = step_of(g.a[1], t), ct = state_of(g.a[2], t, 1), dht = state_of(g.a[0], t, 0);
      gl_array dct = state_of(g.a[0], t, 1), dgt = step_of(dxp, t);
      gl_lstm_cell cell = { 0 };
      cell.N = N;
      cell.H = H;
      cell.gates = gl_array_data(&gt);
      cell.c_prev = gl_array_data(&cp);
      cell.c_prev_ld = cp.strides[0];
      cell.c = gl_array_data(&ct);
      cell.hc_ld = 2 * H;
      cell.dh_out = gl_array_data(&dht);
      cell.dc_out = gl_array_data(&dct);
      cell.dh_next = gl_array_data(dh0);
      cell.dc_next = gl_array_data(dc0);
      cell.dgates = gl_array_data(&dgt);
      st = be->lstm_cell(dev, true, dt, &cell);
      if (st == GL_OK) st = be->matmul(dh0, &dgt, g.a[3]);         /* dh_prev = dgates W_hh */
    }
    if (st == GL_OK) {                                              /* dW_hh = sum_t dgates_t^T h_prev_t */
      gl_array a = *dxp, b = hprev;
      int64_t as[2] = { L * N, 4 * H }, bs[2] = { L * N, H };
      st = gl_view_reshape(&a, 2, as);
      if (st == GL_OK) st = gl_view_reshape(&b, 2, bs);
      if (st == GL_OK) st = gl_view_transpose(&a, 0, 1);
      if (st == GL_OK) st = be->matmul(dw, &a, &b);
    }
  } else if (st == GL_OK) {
    if (dxp->size > 0) st = gl_op_fill(dxp, gl_scalar_float(0));
    if (st == GL_OK && dw->size > 0) st = gl_op_fill(dw, gl_scalar_float(0));
  }
  gl_array_release(&hprev);
  args_release(&g);
  if (st != GL_OK) {
    gl_array_release(dxp); gl_array_release(dw); gl_array_release(dh0); gl_array_release(dc0);
  }
  return st;
}
