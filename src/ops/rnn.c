/*
** rnn.c — the fused recurrent layers under gpu.nn.LSTM, GRU and RNN (gpu.fused.lstm, gru, rnn
** in Lua): the time loop of one layer and direction, given the input projections of every step (one GEMM, done by
** the caller). Each step is one GEMM of the previous hidden state by W_hh^T (the backend's
** matmul, BLAS or cuBLAS) and one pass of the backend's cell kernel (kernels/rnn.h); the
** backward pass through time is the same loop reversed, and the weight gradient one GEMM
** over all steps at the end. hc (L, N, 2, H) holds h and c of every step: one array, so
** one tape node carries the gradients of both.
*/
#include <string.h>
#include "ops.h"

/* One layer and direction of a cell: its geometry, backend and arrays, and the cell's part of
** a time step (see "the time loop" below); the checks fill the first part. */
typedef struct seq_loop seq_loop;
struct seq_loop {
  const gl_backend *be;
  gl_device dev;
  gl_dtype dt;
  int64_t L, N, H;
  bool reverse, backward, relu;
  /* The cell's kernel at step t; tp is the step before (-1: none, the initial state), hp its h. */
  gl_status (*step)(const seq_loop *q, int64_t t, int64_t tp, const gl_array *hp);
  const gl_array *w;              /* W_hh (G H, H) */
  const gl_array *h0, *c0;        /* (N, H) */
  gl_array hs, cs;                /* (L, N, H): h and (LSTM) c of every step */
  const gl_array *xp, *b;         /* forward: (L, N, XG H); GRU's b_hh (3H) or NULL */
  const gl_array *gates;          /* (L, N, 4H) (the RNN keeps none): forward out, backward in */
  gl_array *hw;                   /* forward: (N, G H) h_prev W_hh^T of the step */
  gl_array dhs, dcs;              /* backward: (L, N, H) the gradients of h and c from outside */
  gl_array *dh, *dc;              /* backward: (N, H) the gradients carried to the step before */
  gl_array *dxp, *dhw, *hprev;    /* backward: (L, N, XG H) out, GRU's (L, N, 3H), (L, N, H) */
  gl_array *dmm;                  /* backward: (N, H) the carried gradient's GEMM (dmm_src W_hh) */
  gl_array *dmm_src;              /* backward: (L, N, G H) what that GEMM reads, at step t */
};

static gl_status lstm_step(const seq_loop *q, int64_t t, int64_t tp, const gl_array *hp);
static gl_status gru_step(const seq_loop *q, int64_t t, int64_t tp, const gl_array *hp);
static gl_status rnn_step(const seq_loop *q, int64_t t, int64_t tp, const gl_array *hp);

/* ---- checks ------------------------------------------------------------------------------- */

static const char *gate_cols(int G) { return G == 4 ? "4 hidden" : G == 3 ? "3 hidden" : "hidden"; }

/* The geometry (L, N, H) of a recurrent layer from x (L, N, XG H) (the input projection, or
** what the backward reads: 'what' names it) and w (G H, H), G the gate count (LSTM 4, GRU 3,
** RNN 1), with h0 (N, H) checked, and the backend (with matmul for the dtype; the caller
** checks its cell entry). */
static gl_status seq_check(const char *fn, const gl_array *x, const char *what, int XG, const gl_array *w, int G,
                           const gl_array *h0, seq_loop *q) {
  char s[GL_SHAPE_BUFSZ];
  if (x->dtype != GL_FLOAT32 && x->dtype != GL_FLOAT64)
    return gl_fail(GL_EINVAL, "%s: %s must be float32 or float64, got %s", fn, what, gl_dtypes[x->dtype].name);
  if (x->ndim != 3 || x->shape[0] < 1)
    return gl_fail(GL_EINVAL, "%s: %s must be (L, N, %s) with L >= 1, got shape %s", fn, what, gate_cols(XG),
                   gl_shape_str(x->ndim, x->shape, s));
  GL_TRY(gl_op_like_input(fn, x, w, "weight_hh"));
  GL_TRY(gl_op_like_input(fn, x, h0, "h0"));
  if (w->ndim != 2 || w->shape[0] != G * w->shape[1])
    return gl_fail(GL_EINVAL, "%s: weight_hh must be (%s, hidden), got shape %s", fn, gate_cols(G),
                   gl_shape_str(w->ndim, w->shape, s));
  memset(q, 0, sizeof *q);
  q->dev = gl_array_device(x);
  q->dt = (gl_dtype)x->dtype;
  q->L = x->shape[0];
  q->N = x->shape[1];
  q->H = w->shape[1];
  int64_t want[3] = { q->L, q->N, XG * q->H };
  GL_TRY(gl_op_want_shape(fn, x, what, 3, want));
  int64_t st[2] = { q->N, q->H };
  GL_TRY(gl_op_want_shape(fn, h0, "h0", 2, st));
  return gl_backend_supporting(q->dev, GL_OP_MATMUL, 0, q->dt, fn, &q->be);
}

/* What a backward reads besides x: the forward's states ('what') and their gradient, on x's
** device and of its dtype, both of shape (nd, shape). */
static gl_status saved_check(const char *fn, const gl_array *x, const gl_array *states, const char *what,
                             const gl_array *grad, int nd, const int64_t *shape) {
  GL_TRY(gl_op_like_input(fn, x, states, what));
  GL_TRY(gl_op_like_input(fn, x, grad, "grad_output"));
  GL_TRY(gl_op_want_shape(fn, states, what, nd, shape));
  return gl_op_want_shape(fn, grad, "grad_output", nd, shape);
}

static gl_status no_cell(const char *fn, const gl_array *x) {
  char dn[16];
  return gl_fail(GL_ENOTSUP, "%s is not supported on %s", fn, gl_device_name(gl_array_device(x), dn));
}

static gl_status lstm_check(const char *fn, const gl_array *xp, const char *xp_what, const gl_array *w,
                            const gl_array *h0, const gl_array *c0, seq_loop *q) {
  GL_TRY(seq_check(fn, xp, xp_what, 4, w, 4, h0, q));
  GL_TRY(gl_op_like_input(fn, xp, c0, "c0"));
  int64_t st[2] = { q->N, q->H };
  GL_TRY(gl_op_want_shape(fn, c0, "c0", 2, st));
  q->step = lstm_step;
  return q->be->lstm_cell == NULL ? no_cell(fn, xp) : GL_OK;
}

/* Operands made contiguous (copies in tmp[], released by args_release). */
typedef struct seq_args { gl_array tmp[6]; const gl_array *a[6]; } seq_args;

static gl_status contig(seq_args *g, int i, const gl_array *x) {
  return gl_op_as_contig(x, (gl_dtype)x->dtype, &g->tmp[i], &g->a[i]);
}

/* Operands x[0..n) made contiguous into g->a[0..n) (a NULL stays NULL). */
static gl_status contig_all(seq_args *g, int n, const gl_array *const *x) {
  gl_status st = GL_OK;
  for (int i = 0; i < n && st == GL_OK; i++)
    if (x[i] != NULL) st = contig(g, i, x[i]);
  return st;
}

static void args_release(seq_args *g) {
  for (int i = 0; i < 6; i++) gl_array_release(&g->tmp[i]);
}

/* Views: step t of a (L, N, K) array as (N, K); h (part 0) or c (part 1) of step t of hc. */
static gl_array step_of(const gl_array *a, int64_t t) {
  gl_array v = *a;
  gl_view_select(&v, 0, t);
  return v;
}

/* Part 'part' (0: h, 1: c) of every step of hc (L, N, 2, H), as an (L, N, H) view. */
static gl_array states_of(const gl_array *hc, int part) {
  gl_array v = *hc;
  gl_view_select(&v, 2, part);
  return v;
}

/* The time step processed at position s (0-based) and the one before it (-1: the initial state). */
static int64_t time_at(int64_t s, int64_t L, bool reverse) { return reverse ? L - 1 - s : s; }

/* h_prev of every step (L, N, H) in time order: h0 at the first step processed, else hs of
** the step before it (so dW_hh is one GEMM over all steps). */
static gl_status prev_states(const gl_backend *be, gl_array *hprev, const gl_array *hs, const gl_array *h0,
                             int64_t L, bool reverse) {
  gl_status st = GL_OK;
  for (int64_t s = 0; s < L && st == GL_OK; s++) {
    int64_t t = time_at(s, L, reverse), tp = s > 0 ? time_at(s - 1, L, reverse) : -1;
    gl_array dst = step_of(hprev, t), src = tp < 0 ? *h0 : step_of(hs, tp);
    st = be->copy(&dst, &src);
  }
  return st;
}

/* dw (G H, H) = sum_t dg_t^T hprev_t, dg (L, N, G H) and hprev (L, N, H): one GEMM. */
static gl_status weight_grad(const gl_backend *be, gl_array *dw, const gl_array *dg, const gl_array *hprev) {
  gl_array a = *dg, b = *hprev;
  int64_t as[2] = { dg->shape[0] * dg->shape[1], dg->shape[2] }, bs[2] = { as[0], hprev->shape[2] };
  gl_status st = gl_view_reshape(&a, 2, as);
  if (st == GL_OK) st = gl_view_reshape(&b, 2, bs);
  if (st == GL_OK) st = gl_view_transpose(&a, 0, 1);
  if (st == GL_OK) st = be->matmul(dw, &a, &b);
  return st;
}

/* ---- the time loop ------------------------------------------------------------------------------
** One loop serves the three cells, forward and backward: the cell's part of a step is a function
** (lstm_step, gru_step, rnn_step) that fills the backend's cell struct from the seq_loop's
** arrays (each cell uses its own; (L, N, ...) arrays are sliced at step t) and runs the
** backend's kernel. */

/* Forward: each step, h_prev W_hh^T (one GEMM) then the cell. */
static gl_status time_loop(const seq_loop *q) {
  gl_array wt = *q->w;
  gl_view_transpose(&wt, 0, 1);                                     /* (H, G H), BLAS reads it in place */
  gl_status st = GL_OK;
  for (int64_t s = 0; s < q->L && st == GL_OK; s++) {
    int64_t t = time_at(s, q->L, q->reverse), tp = s > 0 ? time_at(s - 1, q->L, q->reverse) : -1;
    gl_array hp = tp < 0 ? *q->h0 : step_of(&q->hs, tp);
    st = q->be->matmul(q->hw, &hp, &wt);
    if (st == GL_OK) st = q->step(q, t, tp, &hp);
  }
  return st;
}

/* Backward through time: h_prev of every step gathered, then from the last step to the first
** the cell's backward and the GEMM that carries dh to the step before; last dw (G H, H) =
** dW_hh = sum_t dg_t^T h_prev_t, dg the gradients that GEMM reads (dmm_src), one GEMM. A
** layer without units (N or H 0) has zero gradients. */
static gl_status time_loop_bwd(const seq_loop *q, gl_array *dw) {
  if (q->N == 0 || q->H == 0) {
    gl_status st = q->dxp->size > 0 ? gl_op_fill(q->dxp, gl_scalar_float(0)) : GL_OK;
    return st == GL_OK && dw->size > 0 ? gl_op_fill(dw, gl_scalar_float(0)) : st;
  }
  gl_status st = prev_states(q->be, q->hprev, &q->hs, q->h0, q->L, q->reverse);
  for (int64_t s = q->L - 1; s >= 0 && st == GL_OK; s--) {
    int64_t t = time_at(s, q->L, q->reverse), tp = s > 0 ? time_at(s - 1, q->L, q->reverse) : -1;
    gl_array hp = step_of(q->hprev, t), src = step_of(q->dmm_src, t);
    st = q->step(q, t, tp, &hp);
    if (st == GL_OK) st = q->be->matmul(q->dmm, &src, q->w);
  }
  return st == GL_OK ? weight_grad(q->be, dw, q->dmm_src, q->hprev) : st;
}

static void *data_at(const gl_array *a, int64_t t) {
  gl_array v = step_of(a, t);
  return gl_array_data(&v);
}

/* A layer's forward: its operands in[0..n) (xp, w, h0, then the LSTM's c0 or the GRU's b_hh)
** made contiguous; the states (the LSTM's hc (L, N, 2, H) when 'hc', else hs (L, N, H)) and
** the gates ((L, N, 4H); NULL: none) allocated; the loop run over q, G H the width of W_hh,
** or zeros where N or H is 0. */
static gl_status seq_forward(seq_loop *q, bool reverse, const gl_array *const *in, int n, bool hc, gl_array *states,
                             gl_array *gates, int G) {
  int64_t L = q->L, N = q->N, H = q->H;
  q->reverse = reverse;
  seq_args g;
  memset(&g, 0, sizeof g);
  gl_array hw = { 0 };
  int64_t hcs[4] = { L, N, 2, H }, hss[3] = { L, N, H }, gs[3] = { L, N, 4 * H }, hws[2] = { N, G * H };
  gl_status st = contig_all(&g, n, in);
  if (st == GL_OK) st = gl_array_alloc(states, q->dt, hc ? 4 : 3, hc ? hcs : hss, q->dev);
  if (st == GL_OK && gates != NULL) st = gl_array_alloc(gates, q->dt, 3, gs, q->dev);
  if (st == GL_OK) st = gl_array_alloc(&hw, q->dt, 2, hws, q->dev);
  if (st == GL_OK && N > 0 && H > 0) {
    q->xp = g.a[0];
    q->w = g.a[1];
    q->h0 = g.a[2];
    q->c0 = q->b = g.a[3];                                          /* the LSTM's c0 or the GRU's b_hh */
    q->hs = hc ? states_of(states, 0) : *states;
    if (hc) q->cs = states_of(states, 1);
    q->gates = gates;
    q->hw = &hw;
    st = time_loop(q);
  } else if (st == GL_OK) {
    if (states->size > 0) st = gl_op_fill(states, gl_scalar_float(0));
    if (st == GL_OK && gates != NULL && gates->size > 0) st = gl_op_fill(gates, gl_scalar_float(0));
  }
  gl_array_release(&hw);
  args_release(&g);
  if (st != GL_OK) {
    gl_array_release(states);
    if (gates != NULL) gl_array_release(gates);
  }
  return st;
}

/* The start of a layer's backward: its operands in[0..n) made contiguous into g; dxp (L, N,
** XG H) and dw (G H, H) the gradients out, dh0 (N, H) the gradient of h carried from step to
** step (zeroed) and hprev (L, N, H) allocated; q set to run backward through them, the GEMM
** carrying dh reading dxp (a cell whose carried GEMM reads another array sets dmm, dmm_src). */
static gl_status seq_backward(seq_loop *q, bool reverse, seq_args *g, const gl_array *const *in, int n, int XG,
                              int G, gl_array *dxp, gl_array *dw, gl_array *dh0, gl_array *hprev) {
  int64_t L = q->L, N = q->N, H = q->H;
  int64_t xs[3] = { L, N, XG * H }, ws[2] = { G * H, H }, ss[2] = { N, H }, ps[3] = { L, N, H };
  memset(g, 0, sizeof *g);
  gl_status st = contig_all(g, n, in);
  if (st == GL_OK) st = gl_array_alloc(dxp, q->dt, 3, xs, q->dev);
  if (st == GL_OK) st = gl_array_alloc(dw, q->dt, 2, ws, q->dev);
  if (st == GL_OK) st = gl_array_alloc(dh0, q->dt, 2, ss, q->dev);
  if (st == GL_OK) st = gl_array_alloc(hprev, q->dt, 3, ps, q->dev);
  if (st == GL_OK && dh0->size > 0) st = gl_op_fill(dh0, gl_scalar_float(0));
  q->reverse = reverse;
  q->backward = true;
  q->dh = dh0;
  q->dxp = dxp;
  q->hprev = hprev;
  q->dmm = dh0;
  q->dmm_src = dxp;
  return st;
}

/* ---- LSTM ---------------------------------------------------------------------------------------
** xp (L, N, 4H) = x W_ih^T + b_ih + b_hh; hc (L, N, 2, H) h and c of every step, gates (L, N,
** 4H) the activations i, f, g, o. */

static gl_status lstm_step(const seq_loop *q, int64_t t, int64_t tp, const gl_array *hp) {
  (void)hp;
  gl_array cp = tp < 0 ? *q->c0 : step_of(&q->cs, tp);
  gl_lstm_cell cell = { 0 };
  cell.N = q->N;
  cell.H = q->H;
  cell.gates = data_at(q->gates, t);
  cell.c_prev = gl_array_data(&cp);
  cell.c_prev_ld = cp.strides[0];
  cell.c = data_at(&q->cs, t);
  cell.hc_ld = 2 * q->H;
  if (q->backward) {
    cell.dh_out = data_at(&q->dhs, t);
    cell.dc_out = data_at(&q->dcs, t);
    cell.dh_next = gl_array_data(q->dh);
    cell.dc_next = gl_array_data(q->dc);
    cell.dgates = data_at(q->dxp, t);
  } else {
    cell.xp = data_at(q->xp, t);
    cell.hw = gl_array_data(q->hw);
    cell.h = data_at(&q->hs, t);
  }
  return q->be->lstm_cell(q->dev, q->backward, q->dt, &cell);
}

gl_status gl_op_lstm(gl_array *hc, gl_array *gates, const gl_array *xp, const gl_array *w, const gl_array *h0,
                     const gl_array *c0, bool reverse) {
  seq_loop q;
  GL_TRY(lstm_check("lstm", xp, "the input projection", w, h0, c0, &q));
  return seq_forward(&q, reverse, (const gl_array *[]){ xp, w, h0, c0 }, 4, true, hc, gates, 4);
}

gl_status gl_op_lstm_bwd(gl_array *dxp, gl_array *dw, gl_array *dh0, gl_array *dc0, const gl_array *ghc,
                         const gl_array *gates, const gl_array *hc, const gl_array *w, const gl_array *h0,
                         const gl_array *c0, bool reverse) {
  const char *fn = "lstm_backward";
  seq_loop q;
  GL_TRY(lstm_check(fn, gates, "gates", w, h0, c0, &q));
  const int64_t L = q.L, N = q.N, H = q.H;
  int64_t hcs[4] = { L, N, 2, H };
  GL_TRY(saved_check(fn, gates, hc, "hc", ghc, 4, hcs));
  seq_args g;
  gl_array hprev = { 0 };
  int64_t ss[2] = { N, H };
  const gl_array *in[6] = { ghc, gates, hc, w, h0, c0 };
  /* dh0 and dc0 carry the gradients of the state from step to step; dh_prev = dgates W_hh */
  gl_status st = seq_backward(&q, reverse, &g, in, 6, 4, 4, dxp, dw, dh0, &hprev);
  if (st == GL_OK) st = gl_array_alloc(dc0, q.dt, 2, ss, q.dev);
  if (st == GL_OK && dc0->size > 0) st = gl_op_fill(dc0, gl_scalar_float(0));
  if (st == GL_OK) {
    q.dhs = states_of(g.a[0], 0);
    q.dcs = states_of(g.a[0], 1);
    q.gates = g.a[1];
    q.hs = states_of(g.a[2], 0);
    q.cs = states_of(g.a[2], 1);
    q.w = g.a[3];
    q.h0 = g.a[4];
    q.c0 = g.a[5];
    q.dc = dc0;
    st = time_loop_bwd(&q, dw);
  }
  gl_array_release(&hprev);
  args_release(&g);
  if (st != GL_OK) {
    gl_array_release(dxp); gl_array_release(dw); gl_array_release(dh0); gl_array_release(dc0);
  }
  return st;
}

/* ---- GRU --------------------------------------------------------------------------------------
** PyTorch's GRU: xp (L, N, 3H) = x W_ih^T + b_ih, b = b_hh (3H) or NULL (kept apart: b_hn sits
** inside r * (W_hn h + b_hn)); hs (L, N, H) the hidden states, gates (L, N, 4H) r, z, n and
** W_hn h + b_hn of every step. */

static gl_status gru_check(const char *fn, const gl_array *xp, const char *xp_what, int XG, const gl_array *w,
                           const gl_array *b, const gl_array *h0, seq_loop *q) {
  GL_TRY(seq_check(fn, xp, xp_what, XG, w, 3, h0, q));
  if (b != NULL) {
    GL_TRY(gl_op_like_input(fn, xp, b, "bias_hh"));
    int64_t bs[1] = { 3 * q->H };
    GL_TRY(gl_op_want_shape(fn, b, "bias_hh", 1, bs));
  }
  q->step = gru_step;
  return q->be->gru_cell == NULL ? no_cell(fn, xp) : GL_OK;
}

static gl_status gru_step(const seq_loop *q, int64_t t, int64_t tp, const gl_array *hp) {
  (void)tp;
  gl_gru_cell cell = { 0 };
  cell.N = q->N;
  cell.H = q->H;
  cell.gates = data_at(q->gates, t);
  cell.h_prev = gl_array_data(hp);
  if (q->backward) {
    cell.dh_out = data_at(&q->dhs, t);
    cell.dh_mm = gl_array_data(q->dmm);
    cell.dh_carry = gl_array_data(q->dh);
    cell.dxp = data_at(q->dxp, t);
    cell.dhw = data_at(q->dhw, t);
  } else {
    cell.xp = data_at(q->xp, t);
    cell.hw = gl_array_data(q->hw);
    cell.b = q->b != NULL ? gl_array_data(q->b) : NULL;
    cell.h = data_at(&q->hs, t);
  }
  return q->be->gru_cell(q->dev, q->backward, q->dt, &cell);
}

gl_status gl_op_gru(gl_array *hs, gl_array *gates, const gl_array *xp, const gl_array *w, const gl_array *b,
                    const gl_array *h0, bool reverse) {
  seq_loop q;
  GL_TRY(gru_check("gru", xp, "the input projection", 3, w, b, h0, &q));
  return seq_forward(&q, reverse, (const gl_array *[]){ xp, w, h0, b }, 4, false, hs, gates, 3);
}

gl_status gl_op_gru_bwd(gl_array *dxp, gl_array *dw, gl_array *db, gl_array *dh0, const gl_array *ghs,
                        const gl_array *gates, const gl_array *hs, const gl_array *w, const gl_array *h0,
                        bool reverse) {
  const char *fn = "gru_backward";
  seq_loop q;
  GL_TRY(gru_check(fn, gates, "gates", 4, w, NULL, h0, &q));
  const int64_t L = q.L, N = q.N, H = q.H;
  int64_t hss[3] = { L, N, H };
  GL_TRY(saved_check(fn, gates, hs, "hs", ghs, 3, hss));
  seq_args g;
  gl_array hprev = { 0 }, dhw = { 0 }, dmm = { 0 };
  int64_t xs[3] = { L, N, 3 * H }, ss[2] = { N, H };
  const gl_array *in[5] = { ghs, gates, hs, w, h0 };
  /* dh0 carries dh z from step to step, dmm the GEMM dhw W_hh of the step after */
  gl_status st = seq_backward(&q, reverse, &g, in, 5, 3, 3, dxp, dw, dh0, &hprev);
  if (st == GL_OK) st = gl_array_alloc(&dhw, q.dt, 3, xs, q.dev);
  if (st == GL_OK) st = gl_array_alloc(&dmm, q.dt, 2, ss, q.dev);
  if (st == GL_OK && dmm.size > 0) st = gl_op_fill(&dmm, gl_scalar_float(0));
  if (st == GL_OK) {
    q.dhs = *g.a[0];
    q.gates = g.a[1];
    q.hs = *g.a[2];
    q.w = g.a[3];
    q.h0 = g.a[4];
    q.dhw = &dhw;
    q.dmm = &dmm;                                                    /* dh_prev's GEMM part: dhw W_hh */
    q.dmm_src = &dhw;
    st = time_loop_bwd(&q, dw);
  }
  int axes[2] = { 0, 1 };
  if (st == GL_OK) st = gl_op_binary_(dh0, GL_B_add, (gl_operand){ .arr = &dmm });
  if (st == GL_OK) st = gl_op_reduce(db, GL_R_SUM, &dhw, axes, 2, false, -1, 0);
  gl_array_release(&hprev);
  gl_array_release(&dhw);
  gl_array_release(&dmm);
  args_release(&g);
  if (st != GL_OK) {
    gl_array_release(dxp); gl_array_release(dw); gl_array_release(db); gl_array_release(dh0);
  }
  return st;
}

/* ---- Elman RNN ---------------------------------------------------------------------------------
** xp (L, N, H) = x W_ih^T + b_ih + b_hh; hs (L, N, H) the hidden states, h = act(xp + h_prev
** W_hh^T), act tanh or (relu) max(0, .); the backward reads act' from hs itself. */

static gl_status rnn_check(const char *fn, const gl_array *xp, const char *xp_what, const gl_array *w,
                           const gl_array *h0, seq_loop *q) {
  GL_TRY(seq_check(fn, xp, xp_what, 1, w, 1, h0, q));
  q->step = rnn_step;
  return q->be->rnn_cell == NULL ? no_cell(fn, xp) : GL_OK;
}

static gl_status rnn_step(const seq_loop *q, int64_t t, int64_t tp, const gl_array *hp) {
  (void)tp;
  (void)hp;
  gl_rnn_cell cell = { 0 };
  cell.N = q->N;
  cell.H = q->H;
  cell.relu = q->relu;
  cell.h = data_at(&q->hs, t);
  if (q->backward) {
    cell.dh_out = data_at(&q->dhs, t);
    cell.dh_next = gl_array_data(q->dh);
    cell.dxp = data_at(q->dxp, t);
  } else {
    cell.xp = data_at(q->xp, t);
    cell.hw = gl_array_data(q->hw);
  }
  return q->be->rnn_cell(q->dev, q->backward, q->dt, &cell);
}

gl_status gl_op_rnn(gl_array *hs, const gl_array *xp, const gl_array *w, const gl_array *h0, bool reverse,
                    bool relu) {
  seq_loop q;
  GL_TRY(rnn_check("rnn", xp, "the input projection", w, h0, &q));
  q.relu = relu;
  return seq_forward(&q, reverse, (const gl_array *[]){ xp, w, h0 }, 3, false, hs, NULL, 1);
}

gl_status gl_op_rnn_bwd(gl_array *dxp, gl_array *dw, gl_array *dh0, const gl_array *ghs, const gl_array *hs,
                        const gl_array *w, const gl_array *h0, bool reverse, bool relu) {
  const char *fn = "rnn_backward";
  seq_loop q;
  GL_TRY(rnn_check(fn, hs, "hs", w, h0, &q));
  const int64_t L = q.L, N = q.N, H = q.H;
  GL_TRY(gl_op_like_input(fn, hs, ghs, "grad_output"));
  int64_t hss[3] = { L, N, H };
  GL_TRY(gl_op_want_shape(fn, ghs, "grad_output", 3, hss));
  seq_args g;
  gl_array hprev = { 0 };
  const gl_array *in[4] = { ghs, hs, w, h0 };
  /* dh0 carries the gradient of h_prev from step to step (overwritten by each step's GEMM:
  ** dh_prev = da W_hh) */
  gl_status st = seq_backward(&q, reverse, &g, in, 4, 1, 1, dxp, dw, dh0, &hprev);
  if (st == GL_OK) {
    q.relu = relu;
    q.dhs = *g.a[0];
    q.hs = *g.a[1];
    q.w = g.a[2];
    q.h0 = g.a[3];
    st = time_loop_bwd(&q, dw);
  }
  gl_array_release(&hprev);
  args_release(&g);
  if (st != GL_OK) { gl_array_release(dxp); gl_array_release(dw); gl_array_release(dh0); }
  return st;
}

/* ---- the library's LSTM and GRU (gl_backend.dnn: oneDNN on the cpu) ---------------------------
** A whole layer and direction from x itself (the input projection inside the library), float32
** only. LSTM: y (L + 1, N, H), the steps' h then, as row L + 1, the last c (one array, so one
** tape node carries every gradient); GRU: y (L, N, H). ws (bytes, uint8) the workspace the
** backward reads. Weights in the library's gate order (backend.h's gl_dnn_rnn). */

static gl_status dnn_rnn_check(const char *fn, int kind, const gl_array *x, const gl_array *wi, const gl_array *wh,
                               const gl_array *b, const gl_array *h0, const gl_array *c0, gl_dnn_rnn *r,
                               const gl_dnn **dnn) {
  char s[GL_SHAPE_BUFSZ];
  int G = kind == GL_DNN_LSTM ? 4 : 3;
  if (x->ndim != 3 || x->shape[0] < 1)
    return gl_fail(GL_EINVAL, "%s: the input must be (L, N, input_size) with L >= 1, got shape %s", fn,
                   gl_shape_str(x->ndim, x->shape, s));
  GL_TRY(gl_op_like_input(fn, x, wi, "weight_ih"));
  GL_TRY(gl_op_like_input(fn, x, wh, "weight_hh"));
  GL_TRY(gl_op_like_input(fn, x, b, "bias"));
  GL_TRY(gl_op_like_input(fn, x, h0, "h0"));
  if (c0) GL_TRY(gl_op_like_input(fn, x, c0, "c0"));
  if (wh->ndim != 2 || wh->shape[0] != G * wh->shape[1])
    return gl_fail(GL_EINVAL, "%s: weight_hh must be (%s, hidden), got shape %s", fn, gate_cols(G),
                   gl_shape_str(wh->ndim, wh->shape, s));
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->L = x->shape[0];
  r->N = x->shape[1];
  r->I = x->shape[2];
  r->H = wh->shape[1];
  int64_t ws[2] = { G * r->H, r->I }, bs[1] = { 4 * r->H }, ss[2] = { r->N, r->H };
  GL_TRY(gl_op_want_shape(fn, wi, "weight_ih", 2, ws));
  GL_TRY(gl_op_want_shape(fn, b, "bias", 1, bs));
  GL_TRY(gl_op_want_shape(fn, h0, "h0", 2, ss));
  if (c0) GL_TRY(gl_op_want_shape(fn, c0, "c0", 2, ss));
  if (r->N < 1 || r->I < 1 || r->H < 1)
    return gl_fail(GL_EINVAL, "%s: the library's recurrent layers need N, input_size and hidden >= 1, got %s", fn,
                   gl_shape_str(x->ndim, x->shape, s));
  /* (an expanded view can claim more than memory holds: refused before the library plans it) */
  const int64_t lim = (int64_t)1 << 40;
  if (r->L > lim / r->N || r->I > lim / 4 || r->H > lim / 8 || r->L * r->N > lim / (r->I + 4 * r->H))
    return gl_fail(GL_ETOOBIG, "input %s with hidden %lld is too big", gl_shape_str(x->ndim, x->shape, s),
                   (long long)r->H);
  GL_TRY(gl_op_dnn_table(fn, gl_array_device(x), (gl_dtype)x->dtype, GL_DNN_RNN, dnn));
  if ((*dnn)->rnn_fwd != NULL) return GL_OK;
  char dn[16];
  return gl_fail(GL_ENOTSUP, "%s is not supported on %s (%s runs whole networks: gpu.dnn.rnn)", fn,
                 gl_device_name(gl_array_device(x), dn), (*dnn)->name);
}

/* The library's operands x, W_ih, W_hh, b, h0 and (LSTM) c0 made contiguous in g and given to r. */
static gl_status dnn_operands(gl_dnn_rnn *r, seq_args *g, bool lstm, const gl_array *x, const gl_array *wi,
                              const gl_array *wh, const gl_array *b, const gl_array *h0, const gl_array *c0) {
  memset(g, 0, sizeof *g);
  const gl_array *in[6] = { x, wi, wh, b, h0, lstm ? c0 : NULL };
  GL_TRY(contig_all(g, 6, in));
  r->x = gl_array_data(g->a[0]);
  r->w_ih = gl_array_data(g->a[1]);
  r->w_hh = gl_array_data(g->a[2]);
  r->b = gl_array_data(g->a[3]);
  r->h0 = gl_array_data(g->a[4]);
  r->c0 = lstm ? gl_array_data(g->a[5]) : NULL;
  return GL_OK;
}

gl_status gl_op_dnn_rnn(gl_array *y, gl_array *ws, int kind, const gl_array *x, const gl_array *wi, const gl_array *wh,
                        const gl_array *b, const gl_array *h0, const gl_array *c0, bool reverse) {
  const char *fn = kind == GL_DNN_LSTM ? "dnn.lstm" : "dnn.gru";
  gl_dnn_rnn r;
  const gl_dnn *dnn;
  GL_TRY(dnn_rnn_check(fn, kind, x, wi, wh, b, h0, kind == GL_DNN_LSTM ? c0 : NULL, &r, &dnn));
  r.reverse = reverse;
  size_t nbytes = 0;
  GL_TRY(dnn->rnn_workspace(&r, &nbytes));
  gl_device dev = gl_array_device(x);
  seq_args g;
  gl_status st = dnn_operands(&r, &g, kind == GL_DNN_LSTM, x, wi, wh, b, h0, c0);
  int64_t ys[3] = { r.L + (kind == GL_DNN_LSTM), r.N, r.H }, wss[1] = { (int64_t)nbytes };
  if (st == GL_OK) st = gl_array_alloc(y, GL_FLOAT32, 3, ys, dev);
  if (st == GL_OK) st = gl_array_alloc(ws, GL_UINT8, 1, wss, dev);
  if (st == GL_OK) {
    r.y = gl_array_data(y);
    r.cn = kind == GL_DNN_LSTM ? (float *)r.y + r.L * r.N * r.H : NULL;
    r.ws = gl_array_data(ws);
    st = dnn->rnn_fwd(&r);
  }
  args_release(&g);
  if (st != GL_OK) { gl_array_release(y); gl_array_release(ws); }
  return st;
}

gl_status gl_op_dnn_rnn_bwd(gl_array *dx, gl_array *dwi, gl_array *dwh, gl_array *db, gl_array *dh0, gl_array *dc0,
                            int kind, const gl_array *gy, const gl_array *y, const gl_array *ws, const gl_array *x,
                            const gl_array *wi, const gl_array *wh, const gl_array *b, const gl_array *h0,
                            const gl_array *c0, bool reverse) {
  const char *fn = kind == GL_DNN_LSTM ? "dnn.lstm_backward" : "dnn.gru_backward";
  bool lstm = kind == GL_DNN_LSTM;
  gl_dnn_rnn r;
  const gl_dnn *dnn;
  GL_TRY(dnn_rnn_check(fn, kind, x, wi, wh, b, h0, lstm ? c0 : NULL, &r, &dnn));
  r.reverse = reverse;
  GL_TRY(gl_op_like_input(fn, x, y, "the forward's output"));
  GL_TRY(gl_op_like_input(fn, x, gy, "grad_output"));
  int64_t ys[3] = { r.L + lstm, r.N, r.H };
  GL_TRY(gl_op_want_shape(fn, y, "the forward's output", 3, ys));
  GL_TRY(gl_op_want_shape(fn, gy, "grad_output", 3, ys));
  size_t nbytes = 0;
  GL_TRY(dnn->rnn_workspace(&r, &nbytes));
  int64_t wss[1] = { (int64_t)nbytes };
  if (ws->dtype != GL_UINT8 || !gl_device_eq(gl_array_device(ws), gl_array_device(x)))
    return gl_fail(GL_EINVAL, "%s: the workspace must be the forward's (uint8 on the input's device)", fn);
  GL_TRY(gl_op_want_shape(fn, ws, "the workspace", 1, wss));
  gl_device dev = gl_array_device(x);
  seq_args g, g2;
  memset(&g2, 0, sizeof g2);
  const gl_array *in2[3] = { gy, y, ws };
  gl_status st = dnn_operands(&r, &g, lstm, x, wi, wh, b, h0, c0);
  if (st == GL_OK) st = contig_all(&g2, 3, in2);
  int64_t xs[3] = { r.L, r.N, r.I }, wis[2] = { (lstm ? 4 : 3) * r.H, r.I }, whs[2] = { (lstm ? 4 : 3) * r.H, r.H };
  int64_t bs[1] = { 4 * r.H }, ss[2] = { r.N, r.H };
  if (st == GL_OK) st = gl_array_alloc(dx, GL_FLOAT32, 3, xs, dev);
  if (st == GL_OK) st = gl_array_alloc(dwi, GL_FLOAT32, 2, wis, dev);
  if (st == GL_OK) st = gl_array_alloc(dwh, GL_FLOAT32, 2, whs, dev);
  if (st == GL_OK) st = gl_array_alloc(db, GL_FLOAT32, 1, bs, dev);
  if (st == GL_OK) st = gl_array_alloc(dh0, GL_FLOAT32, 2, ss, dev);
  if (st == GL_OK && lstm) st = gl_array_alloc(dc0, GL_FLOAT32, 2, ss, dev);
  if (st == GL_OK) {
    r.y = gl_array_data(g2.a[1]);
    r.cn = lstm ? (float *)r.y + r.L * r.N * r.H : NULL;
    r.ws = gl_array_data(g2.a[2]);
    r.dy = gl_array_data(g2.a[0]);
    r.dcn = lstm ? (const float *)r.dy + r.L * r.N * r.H : NULL;
    r.dx = gl_array_data(dx);
    r.dw_ih = gl_array_data(dwi);
    r.dw_hh = gl_array_data(dwh);
    r.db = gl_array_data(db);
    r.dh0 = gl_array_data(dh0);
    r.dc0 = lstm ? gl_array_data(dc0) : NULL;
    st = dnn->rnn_bwd(&r);
  }
  args_release(&g);
  args_release(&g2);
  if (st != GL_OK) {
    gl_array_release(dx); gl_array_release(dwi); gl_array_release(dwh); gl_array_release(db);
    gl_array_release(dh0); gl_array_release(dc0);
  }
  return st;
}
