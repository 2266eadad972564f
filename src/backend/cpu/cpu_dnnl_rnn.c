/*
** cpu_dnnl_rnn.c — oneDNN's LSTM and GRU (linear-before-reset, PyTorch's) on the cpu: one
** layer and direction per primitive (nn's loop over layers and directions stays in Lua),
** forward training (the workspace kept for the backward) and backward. Weights arrive in
** PyTorch's (G, H, in) order, oneDNN's ldgoi; the primitive picks its own layout (any) and
** the call reorders. The backward accumulates into its weight and bias gradients: those
** outputs are zeroed first (slot.zero). The last h (dst_iter) goes to a scratch buffer
** forward and is read from y's last step backward (the same values); its gradient is zero
** (nn reads h_n from y).
*/
#include <string.h>
#include "cpu_dnnl.h"

#ifdef GL_WITH_DNNL

static void rnn_key(int64_t *key, int op, const gl_dnn_rnn *r, int nt) {
  memset(key, 0, GL_DNNL_KEYLEN * sizeof key[0]);
  int64_t k[] = { op, nt, r->L, r->N, r->I, r->H, r->reverse };
  memcpy(key, k, sizeof k);
}

/* What rnn_build builds: the forward or backward of r. */
typedef struct rnn_ctx {
  const gl_dnn_rnn *r;
  bool backward;
} rnn_ctx;

/* An output the primitive accumulates into (zeroed before each run). */
static gl_dnnl_arg zeroed(gl_dnnl_arg a) {
  a.zero = true;
  return a;
}

/* The memory descriptors of one layer and direction in the caller's layouts. */
typedef struct rnn_mds {
  dnnl_memory_desc_t x, st, wi, wh, b, y;
} rnn_mds;

static void rnn_mds_of(rnn_mds *m, const gl_dnn_rnn *r, bool any) {
  int G = r->kind == GL_DNN_LSTM ? 4 : 3;
  dnnl_dims_t x = { r->L, r->N, r->I }, st = { 1, 1, r->N, r->H }, wi = { 1, 1, r->I, G, r->H };
  dnnl_dims_t wh = { 1, 1, r->H, G, r->H }, b = { 1, 1, 4, r->H }, y = { r->L, r->N, r->H };
  gl_dnnl.dnnl_memory_desc_init_by_tag(&m->x, 3, x, dnnl_f32, dnnl_tnc);
  gl_dnnl.dnnl_memory_desc_init_by_tag(&m->st, 4, st, dnnl_f32, dnnl_ldnc);
  gl_dnnl.dnnl_memory_desc_init_by_tag(&m->wi, 5, wi, dnnl_f32, any ? dnnl_format_tag_any : dnnl_ldgoi);
  gl_dnnl.dnnl_memory_desc_init_by_tag(&m->wh, 5, wh, dnnl_f32, any ? dnnl_format_tag_any : dnnl_ldgoi);
  gl_dnnl.dnnl_memory_desc_init_by_tag(&m->b, 4, b, dnnl_f32, dnnl_ldgo);
  gl_dnnl.dnnl_memory_desc_init_by_tag(&m->y, 3, y, dnnl_f32, dnnl_tnc);
}

static dnnl_status_t rnn_fwd_desc(dnnl_rnn_desc_t *d, const gl_dnn_rnn *r, const rnn_mds *a) {
  dnnl_rnn_direction_t dir = r->reverse ? dnnl_unidirectional_right2left : dnnl_unidirectional_left2right;
  if (r->kind == GL_DNN_LSTM)
    return gl_dnnl.dnnl_lstm_forward_desc_init(d, dnnl_forward_training, dir, &a->x, &a->st, &a->st, &a->wi, &a->wh, &a->b,
                                         &a->y, &a->st, &a->st, 0);
  return gl_dnnl.dnnl_lbr_gru_forward_desc_init(d, dnnl_forward_training, dir, &a->x, &a->st, &a->wi, &a->wh, &a->b, &a->y,
                                          &a->st, 0);
}

/* Builds the entry of a forward (arguments x, h0, [c0,] w_ih, w_hh, b, y, hn, [cn,] ws) or a
** backward (the forward's inputs and outputs, then dy, dhn, [dcn,] dx, dh0, [dc0,] dw_ih,
** dw_hh, db). */
static dnnl_status_t rnn_build(gl_dnnl_entry *e, const void *ctx) {
  const rnn_ctx *c = ctx;
  const gl_dnn_rnn *r = c->r;
  bool lstm = r->kind == GL_DNN_LSTM, bwd = c->backward;
  /* GPULUA_DNNL_REFUSE=1 reaches nn's fallback (the fused loop) in the specs */
  if (gl_dnnl_refuse) return dnnl_unimplemented;
  rnn_mds u, a;
  rnn_mds_of(&u, r, false);
  rnn_mds_of(&a, r, true);
  dnnl_rnn_desc_t fd, bd;
  dnnl_status_t s = rnn_fwd_desc(&fd, r, &a);
  if (s != dnnl_success) return s;
  if (!bwd) {
    s = gl_dnnl_make(e, &fd);
  } else {
    dnnl_rnn_direction_t dir = r->reverse ? dnnl_unidirectional_right2left : dnnl_unidirectional_left2right;
    if (lstm)
      s = gl_dnnl.dnnl_lstm_backward_desc_init(&bd, dnnl_backward, dir, &a.x, &a.st, &a.st, &a.wi, &a.wh, &a.b,
                                               &a.y, &a.st, &a.st, &a.x, &a.st, &a.st, &a.wi, &a.wh, &a.b, &a.y,
                                               &a.st, &a.st, 0);
    else
      s = gl_dnnl.dnnl_lbr_gru_backward_desc_init(&bd, dnnl_backward, dir, &a.x, &a.st, &a.wi, &a.wh, &a.b,
                                                  &a.y, &a.st, &a.x, &a.st, &a.wi, &a.wh, &a.b, &a.y, &a.st, 0);
    if (s == dnnl_success) s = gl_dnnl_make_bwd(e, &fd, &bd);
  }
  if (s != dnnl_success) return s;
  const gl_dnnl_arg f[] = {
    gl_dnnl_in(DNNL_ARG_SRC_LAYER, &u.x), gl_dnnl_in(DNNL_ARG_SRC_ITER, &u.st),
    gl_dnnl_when(lstm, gl_dnnl_in(DNNL_ARG_SRC_ITER_C, &u.st)), gl_dnnl_in(DNNL_ARG_WEIGHTS_LAYER, &u.wi),
    gl_dnnl_in(DNNL_ARG_WEIGHTS_ITER, &u.wh), gl_dnnl_in(DNNL_ARG_BIAS, &u.b),
    gl_dnnl_io(DNNL_ARG_DST_LAYER, !bwd, &u.y), gl_dnnl_io(DNNL_ARG_DST_ITER, !bwd, &u.st),
    gl_dnnl_when(lstm, gl_dnnl_io(DNNL_ARG_DST_ITER_C, !bwd, &u.st)), gl_dnnl_io(DNNL_ARG_WORKSPACE, !bwd, NULL),
  };
  if ((s = gl_dnnl_args(e, f, (int)(sizeof f / sizeof f[0]))) != dnnl_success || !bwd) return s;
  const gl_dnnl_arg b[] = {
    gl_dnnl_in(DNNL_ARG_DIFF_DST_LAYER, &u.y), gl_dnnl_in(DNNL_ARG_DIFF_DST_ITER, &u.st),
    gl_dnnl_when(lstm, gl_dnnl_in(DNNL_ARG_DIFF_DST_ITER_C, &u.st)), gl_dnnl_out(DNNL_ARG_DIFF_SRC_LAYER, &u.x),
    gl_dnnl_out(DNNL_ARG_DIFF_SRC_ITER, &u.st), gl_dnnl_when(lstm, gl_dnnl_out(DNNL_ARG_DIFF_SRC_ITER_C, &u.st)),
    zeroed(gl_dnnl_out(DNNL_ARG_DIFF_WEIGHTS_LAYER, &u.wi)), zeroed(gl_dnnl_out(DNNL_ARG_DIFF_WEIGHTS_ITER, &u.wh)),
    zeroed(gl_dnnl_out(DNNL_ARG_DIFF_BIAS, &u.b)),
  };
  return gl_dnnl_args(e, b, (int)(sizeof b / sizeof b[0]));
}

/* The entry of the forward or backward of r (lock held), built on a miss; *out NULL with
** the status on failure. */
static gl_status rnn_entry(bool backward, const gl_dnn_rnn *r, int nt, gl_dnnl_entry **out) {
  int op = r->kind == GL_DNN_LSTM ? (backward ? OP_LSTM_BWD : OP_LSTM_FWD) : (backward ? OP_GRU_BWD : OP_GRU_FWD);
  int64_t key[GL_DNNL_KEYLEN];
  rnn_key(key, op, r, nt);
  rnn_ctx c = { r, backward };
  dnnl_status_t s = gl_dnnl_entry_get(key, rnn_build, &c, out);
  if (s == dnnl_success) return GL_OK;
  return s == dnnl_unimplemented ? gl_fail(GL_ENOTSUP, "oneDNN has no %s %s for this shape",
                                           r->kind == GL_DNN_LSTM ? "LSTM" : "GRU", backward ? "backward" : "forward")
                                 : gl_dnnl_fail("recurrent layer setup", s);
}

static int64_t rnn_work(const gl_dnn_rnn *r) { return r->L * r->N * r->H * (r->I + r->H) * 4; }

gl_status gl_dnnl_rnn_workspace(const gl_dnn_rnn *r, size_t *bytes) {
  int saved, nt = gl_dnnl_threads_begin(rnn_work(r), &saved);
  gl_dnnl_lock();
  gl_dnnl_entry *e;
  gl_status st = rnn_entry(false, r, nt, &e);
  if (st == GL_OK) {
    *bytes = 0;
    for (int i = 0; i < e->nslot; i++)
      if (e->s[i].arg == DNNL_ARG_WORKSPACE) *bytes = e->s[i].user_bytes;
  }
  gl_dnnl_unlock();
  gl_dnnl_threads_end(nt, saved);
  return st;
}

/* Runs the forward or backward of r: the arguments' buffers in rnn_build's order, with a
** scratch (N, H) for the last h forward (and its zero gradient backward). */
static gl_status rnn_run(bool backward, const gl_dnn_rnn *r) {
  bool lstm = r->kind == GL_DNN_LSTM;
  size_t sb = (size_t)(r->N * r->H) * sizeof(float);
  void *hbuf;
  GL_TRY(gl_cpu_alloc(gl_cpu(), sb ? sb : 1, &hbuf));
  if (backward) memset(hbuf, 0, sb);
  void *last = (float *)r->y + (r->reverse ? 0 : (r->L - 1) * r->N * r->H);   /* h_n: y's last step */
  void *data[GL_DNNL_NSLOT];
  int n = 0;
  data[n++] = (void *)r->x;
  data[n++] = (void *)r->h0;
  if (lstm) data[n++] = (void *)r->c0;
  data[n++] = (void *)r->w_ih;
  data[n++] = (void *)r->w_hh;
  data[n++] = (void *)r->b;
  data[n++] = r->y;
  data[n++] = backward ? last : hbuf;
  if (lstm) data[n++] = r->cn;
  data[n++] = r->ws;
  if (backward) {
    data[n++] = (void *)r->dy;
    data[n++] = hbuf;
    if (lstm) data[n++] = (void *)r->dcn;
    data[n++] = r->dx;
    data[n++] = r->dh0;
    if (lstm) data[n++] = r->dc0;
    data[n++] = r->dw_ih;
    data[n++] = r->dw_hh;
    data[n++] = r->db;
  }
  int saved, nt = gl_dnnl_threads_begin(rnn_work(r), &saved);
  gl_dnnl_lock();
  gl_dnnl_entry *e;
  gl_status st = rnn_entry(backward, r, nt, &e);
  if (st == GL_OK) st = gl_dnnl_entry_run(e, data);
  gl_dnnl_unlock();
  gl_dnnl_threads_end(nt, saved);
  gl_cpu_free(gl_cpu(), hbuf, sb ? sb : 1);
  return st == GL_OK ? gl_interrupt_check() : st;
}

gl_status gl_dnnl_rnn_fwd(const gl_dnn_rnn *r) { return rnn_run(false, r); }
gl_status gl_dnnl_rnn_bwd(const gl_dnn_rnn *r) { return rnn_run(true, r); }

#endif
