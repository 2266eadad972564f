/*
** dnn_rnn.c — a whole multi-layer recurrent network in one library call (gl_dnn.rnn_net) under
** nn.RNN, nn.LSTM and nn.GRU, on a device whose backend table has it: checks devices, dtypes
** and shapes, then asks x's backend for the entries (a backend without them makes nn run its
** own loop), makes every operand contiguous and allocates the results. The parameters come as
** one flat array in PyTorch's order (the layer concatenates them, so autograd sees one input);
** the backend places them in its library's weight layout and checks the extents its library
** takes.
*/
#include <string.h>
#include "ops.h"

static const int gates_of[] = { [GL_RNN_TANH] = 1, [GL_RNN_RELU] = 1, [GL_RNN_LSTM] = 4, [GL_RNN_GRU] = 3 };

/* How many parameters PyTorch's layer has (the flat w's size). */
static int64_t rnn_params(const gl_dnn_rnn_net *r) {
  int64_t G = gates_of[r->mode], H = r->hidden, n = 0;
  for (int l = 0; l < r->layers; l++) {
    int64_t in = l == 0 ? r->input : r->dirs * H;
    n += r->dirs * (G * H * in + G * H * H + (r->bias ? 2 * G * H : 0));
  }
  return n;
}

/* Checks the operands of a forward (and of a backward: the same inputs) and fills r's sizes. */
static gl_status rnn_check(const char *fn, const gl_array *x, const gl_array *w, const gl_array *hx,
                           const gl_array *cx, gl_dnn_rnn_net *r) {
  char s1[GL_SHAPE_BUFSZ];
  if (!GL_DTSET_HAS(GL_DTSET_FLOAT, x->dtype))
    return gl_fail(GL_EINVAL, "%s: input must be a float array, got %s", fn, gl_dtypes[x->dtype].name);
  if ((int)r->mode < GL_RNN_TANH || r->mode > GL_RNN_GRU || r->layers < 1 || (r->dirs != 1 && r->dirs != 2))
    return gl_fail(GL_EINVAL, "%s: bad mode, num_layers or directions", fn);
  if (x->ndim != 3 || x->shape[0] < 1 || x->shape[1] < 1 || x->shape[2] < 1)
    return gl_fail(GL_EINVAL, "%s: input must be (seq, batch, input_size) with every extent >= 1, got shape %s", fn,
                   gl_shape_str(x->ndim, x->shape, s1));
  GL_TRY(gl_op_like_input(fn, x, hx, "h0"));
  GL_TRY(gl_op_like_input(fn, x, w, "the weights"));
  if (hx->ndim != 3 || hx->shape[2] < 1)
    return gl_fail(GL_EINVAL, "%s: h0 must be (num_layers * directions, batch, hidden_size), got shape %s", fn,
                   gl_shape_str(hx->ndim, hx->shape, s1));
  r->seq = x->shape[0];
  r->batch = x->shape[1];
  r->input = x->shape[2];
  r->hidden = hx->shape[2];
  int64_t hs[3] = { (int64_t)r->layers * r->dirs, r->batch, r->hidden };
  GL_TRY(gl_op_want_shape(fn, hx, "h0", 3, hs));
  if (r->mode == GL_RNN_LSTM) {
    if (cx == NULL) return gl_fail(GL_EINVAL, "%s: an LSTM needs c0", fn);
    GL_TRY(gl_op_like_input(fn, x, cx, "c0"));
    GL_TRY(gl_op_want_shape(fn, cx, "c0", 3, hs));
  } else if (cx != NULL) {
    return gl_fail(GL_EINVAL, "%s: c0 is for an LSTM only (mode is not lstm)", fn);
  }
  int64_t np = rnn_params(r);
  return gl_op_want_shape(fn, w, "the flat weights", 1, &np);
}

/* out's size: y (seq, batch, dirs * hidden), hy [, cy] (layers * dirs, batch, hidden). */
static int64_t rnn_out_size(const gl_dnn_rnn_net *r) {
  int64_t ny = r->seq * r->batch * r->dirs * r->hidden, nh = (int64_t)r->layers * r->dirs * r->batch * r->hidden;
  return ny + nh * (r->mode == GL_RNN_LSTM ? 2 : 1);
}

/* Up to 6 operands made contiguous (copies in tmp[]). */
typedef struct rnn_args { gl_array tmp[6]; const gl_array *a[6]; } rnn_args;

/* Operands src[0..n) (NULL ones stay NULL) into g->a[0..n). */
static gl_status rnn_contig(rnn_args *g, int n, const gl_array *const *src) {
  gl_status st = GL_OK;
  for (int i = 0; i < n && st == GL_OK; i++)
    st = src[i] ? gl_op_as_contig(src[i], (gl_dtype)src[i]->dtype, &g->tmp[i], &g->a[i]) : GL_OK;
  return st;
}

static void rnn_release(rnn_args *g) {
  for (int i = 0; i < 6; i++) gl_array_release(&g->tmp[i]);
}

/* Allocates the next result res[*made] and counts it made. */
static gl_status rnn_alloc(gl_array *const *res, int *made, gl_dtype dt, int nd, const int64_t *shape, gl_device dev) {
  gl_status st = gl_array_alloc(res[*made], dt, nd, shape, dev);
  *made += st == GL_OK;
  return st;
}

/* Releases the results made so far (after a failure). */
static void rnn_unmake(gl_array *const *res, int made) {
  for (int i = 0; i < made; i++) gl_array_release(res[i]);
}

/* The device's table when it runs whole networks (a table whose recurrent entries are per
** layer and direction runs under gl_op_dnn_rnn in rnn.c instead). */
static gl_status net_table(const char *fn, gl_device dev, gl_dtype dt, const gl_dnn **dnn) {
  GL_TRY(gl_op_dnn_table(fn, dev, dt, GL_DNN_RNN, dnn));
  if ((*dnn)->rnn_net != NULL) return GL_OK;
  char dn[16];
  return gl_fail(GL_ENOTSUP, "%s is not supported on %s (%s runs recurrent layers one at a time: gpu.dnn.lstm, "
                 "gpu.dnn.gru)", fn, gl_device_name(dev, dn), (*dnn)->name);
}

gl_status gl_op_dnn_rnn_net(gl_array *out, gl_array *reserve, const gl_array *x, const gl_array *w, const gl_array *hx,
                        const gl_array *cx, gl_dnn_rnn_net *r, bool training) {
  const char *fn = "rnn";
  GL_TRY(rnn_check(fn, x, w, hx, cx, r));
  const gl_dnn *dnn;
  gl_device dev = gl_array_device(x);
  gl_dtype dt = (gl_dtype)x->dtype;
  GL_TRY(net_table(fn, dev, dt, &dnn));
  size_t rbytes = 0;
  if (training) GL_TRY(dnn->rnn_net_reserve(dev, r, dt, &rbytes));
  rnn_args g;
  memset(&g, 0, sizeof g);
  const gl_array *in[4] = { x, w, hx, cx };
  gl_status st = rnn_contig(&g, 4, in);
  int64_t n = rnn_out_size(r), nb = (int64_t)rbytes;
  gl_array *res[2] = { out, reserve };
  int made = 0;
  if (st == GL_OK) st = rnn_alloc(res, &made, dt, 1, &n, dev);
  if (st == GL_OK) st = rnn_alloc(res, &made, GL_UINT8, 1, &nb, dev);
  if (st == GL_OK) st = dnn->rnn_net(r, out, training ? reserve : NULL, g.a[0], g.a[1], g.a[2], g.a[3]);
  rnn_release(&g);
  if (st != GL_OK) rnn_unmake(res, made);
  return st;
}

gl_status gl_op_dnn_rnn_net_bwd(gl_array *dx, gl_array *dw, gl_array *dhx, gl_array *dcx, const gl_array *g,
                            const gl_array *out, const gl_array *reserve, const gl_array *x, const gl_array *w,
                            const gl_array *hx, const gl_array *cx, gl_dnn_rnn_net *r) {
  const char *fn = "rnn_backward";
  GL_TRY(rnn_check(fn, x, w, hx, cx, r));
  int64_t n = rnn_out_size(r);
  GL_TRY(gl_op_like_input(fn, x, g, "the incoming gradient"));
  GL_TRY(gl_op_want_shape(fn, g, "the incoming gradient", 1, &n));
  GL_TRY(gl_op_like_input(fn, x, out, "the forward's result"));
  GL_TRY(gl_op_want_shape(fn, out, "the forward's result", 1, &n));
  if (!gl_device_eq(gl_array_device(x), gl_array_device(reserve)) || reserve->dtype != GL_UINT8 || reserve->ndim != 1)
    return gl_fail(GL_EINVAL, "%s: reserve must be the forward's uint8 reserve on the input's device", fn);
  if (reserve->size == 0)
    return gl_fail(GL_EINVAL, "%s: the forward ran without training = true (no reserve to go back through)", fn);
  const gl_dnn *dnn;
  gl_device dev = gl_array_device(x);
  gl_dtype dt = (gl_dtype)x->dtype;
  GL_TRY(net_table(fn, dev, dt, &dnn));
  size_t rbytes = 0;
  GL_TRY(dnn->rnn_net_reserve(dev, r, dt, &rbytes));
  if ((int64_t)rbytes != reserve->size)
    return gl_fail(GL_EINVAL, "%s: reserve has %lld bytes, this network needs %zu (not the forward of these operands)",
                   fn, (long long)reserve->size, rbytes);
  rnn_args a;
  memset(&a, 0, sizeof a);
  const gl_array *in[6] = { x, w, hx, cx, g, out };
  gl_status st = rnn_contig(&a, 6, in);
  /* a backend's backward may write into the reserve: it gets a copy, so that
  ** the saved one serves a second backward (retain_graph) and the caller's array is left as
  ** it was */
  gl_array rcopy = { 0 };
  if (st == GL_OK) st = gl_op_copy(&rcopy, reserve, GL_UINT8, dev);
  gl_array *res[4] = { dx, dw, dhx, dcx };
  int made = 0;
  if (st == GL_OK) st = rnn_alloc(res, &made, dt, 3, x->shape, dev);
  if (st == GL_OK) st = rnn_alloc(res, &made, dt, 1, w->shape, dev);
  if (st == GL_OK) st = rnn_alloc(res, &made, dt, 3, hx->shape, dev);
  if (st == GL_OK && cx) st = rnn_alloc(res, &made, dt, 3, cx->shape, dev);
  if (st == GL_OK)
    st = dnn->rnn_net_bwd(r, dx, dw, dhx, cx ? dcx : NULL, a.a[4], a.a[5], &rcopy, a.a[0], a.a[1], a.a[2], a.a[3]);
  rnn_release(&a);
  gl_array_release(&rcopy);
  if (st != GL_OK) rnn_unmake(res, made);
  return st;
}
