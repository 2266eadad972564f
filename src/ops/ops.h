/*
** ops.h — device-neutral operations: validate arguments, work out the output's shape
** and dtype, allocate on the operands' device and call that device's backend.
**
** Every function returns a gl_status (message in gl_errmsg()). Outputs are closed
** descriptors (storage NULL) that the function fills; on failure they stay closed.
*/
#ifndef GL_OPS_H
#define GL_OPS_H

#include <float.h>
#include "../backend/backend.h"

/* ---- creation ------------------------------------------------------------------ */
gl_status gl_op_full(gl_array *out, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev,
                     gl_scalar v);
/* [start, stop) by step, NumPy's arange; length ceil((stop - start) / step). */
gl_status gl_op_arange(gl_array *out, double start, double stop, double step, gl_dtype dt,
                       gl_device dev);
/* n points from start to stop inclusive. */
gl_status gl_op_linspace(gl_array *out, double start, double stop, int64_t n, gl_dtype dt,
                         gl_device dev);
/* n x m with ones on diagonal k (0 main, >0 above). */
gl_status gl_op_eye(gl_array *out, int64_t n, int64_t m, int64_t k, gl_dtype dt, gl_device dev);
/* A new array on 'dev' from a contiguous host buffer of dtype dt. */
gl_status gl_op_from_host(gl_array *out, const void *host, gl_dtype dt, int ndim,
                          const int64_t *shape, gl_device dev);

/* ---- copies -------------------------------------------------------------------- */
/* dst[...] = src broadcast to dst's shape, converting dtype; same device. Safe when
** src and dst overlap. */
gl_status gl_op_assign(const gl_array *dst, const gl_array *src);
gl_status gl_op_fill(const gl_array *dst, gl_scalar v);
/* A new C-contiguous copy with dtype dt on device dev (any device pair). */
gl_status gl_op_copy(gl_array *out, const gl_array *src, gl_dtype dt, gl_device dev);
/* *src = x itself when it is contiguous and of dtype dt, else a contiguous dt copy made
** in *tmp (which stays closed otherwise; release it after use). */
gl_status gl_op_as_contig(const gl_array *x, gl_dtype dt, gl_array *tmp, const gl_array **src);
/* Writes src's elements in C order, in src's dtype, to host memory. */
gl_status gl_op_to_host(void *host, const gl_array *src);

/* ---- elements -------------------------------------------------------------------- */
/* The element at 'offset' elements past the array's data pointer. */
gl_status gl_op_get(const gl_array *a, int64_t offset, gl_scalar *out);

/* ---- elementwise (elementwise.c) ------------------------------------------------------ */
/* An elementwise op in two steps, for a caller that allocates the result itself (the Lua
** binding keeps small cpu results inside their userdata): _plan decides, and refuses,
** everything before any allocation (the result's dtype, shape and device, the compute
** dtype and the backend that has the kernel); _run fills 'out', an array allocated with
** the plan's dtype, shape and device, and leaves it as it was on failure. gl_op_unary and
** gl_op_binary are the two steps with gl_array_alloc between them. */
typedef struct gl_plan {
  gl_dtype dtype;            /* the result's */
  gl_device device;
  int ndim;
  int64_t shape[GL_MAXDIMS];
  gl_dtype ct;               /* the kernel's (operands are cast to it) */
  int op;                    /* the op as run (bool arithmetic becomes logic, as in NumPy) */
  const gl_backend *be;
  /* A flat plan's (small, one shape, C-contiguous operands of the compute dtype, no
  ** scalar, on a backend with flat kernels): the operand whose shape the result has, so the
  ** result's descriptor is made without checks; NULL for the general walk. */
  const gl_array *like;
} gl_plan;
gl_status gl_op_unary_plan(gl_plan *p, gl_unop op, const gl_array *x);
gl_status gl_op_unary_run(const gl_array *out, const gl_plan *p, const gl_array *x);
gl_status gl_op_binary_plan(gl_plan *p, gl_binop op, gl_operand a, gl_operand b);
gl_status gl_op_binary_run(const gl_array *out, const gl_plan *p, gl_operand a, gl_operand b);
/* out = op(x); dtype by the op's kind (float math on ints gives float, as NumPy). */
gl_status gl_op_unary(gl_array *out, gl_unop op, const gl_array *x);
/* x = op(x) in place; an error if the result dtype would differ. */
gl_status gl_op_unary_(const gl_array *x, gl_unop op);
/* out = a op b with broadcasting and NumPy 2 promotion (scalars are weak). */
gl_status gl_op_binary(gl_array *out, gl_binop op, gl_operand a, gl_operand b);
/* dst = dst op b in place; b must broadcast to dst's shape, the result cast same_kind. */
gl_status gl_op_binary_(const gl_array *dst, gl_binop op, gl_operand b);
/* out = cond ? a : b, broadcast over all three. */
gl_status gl_op_where(gl_array *out, const gl_array *cond, gl_operand a, gl_operand b);

/* ---- indexing, joining, sorting (index.c); axes are 0-based ---------------------- */
/* NumPy's take: out = x.shape[:axis] + idx.shape + x.shape[axis+1:]; idx int32/int64
** with 1-based positions (negatives from the end), all checked before any kernel runs. */
gl_status gl_op_take(gl_array *out, const gl_array *x, int axis, const gl_array *idx);
/* x[..., idx, ...] = v (or += when accumulate) along 'axis'; v a scalar or an array
** broadcast to x.shape[:axis] + idx.shape + x.shape[axis+1:]. Repeated positions: the
** last write wins (accumulate: all add). */
gl_status gl_op_index_put(const gl_array *x, int axis, const gl_array *idx, gl_operand v, bool accumulate);
gl_status gl_op_scatter_extreme(gl_array *out, gl_array *seen, int64_t n, const gl_array *idx,
                                const gl_array *src, bool max);
/* x[mask]: mask bool with the shape of x's leading axes; out (count, x.shape[k:]...). */
gl_status gl_op_mask_select(gl_array *out, const gl_array *x, const gl_array *mask);
/* x[mask] = v: a scalar, an array broadcast to the selection (count, x.shape[k:]...), or
** an array of x's shape read through the mask. */
gl_status gl_op_mask_assign(const gl_array *x, const gl_array *mask, gl_operand v);
/* Joins n arrays along an existing (concat) or a new (stack) axis; dtypes promote. */
gl_status gl_op_concat(gl_array *out, int n, const gl_array *const *xs, int axis);
gl_status gl_op_stack(gl_array *out, int n, const gl_array *const *xs, int axis);
/* NumPy's tile, repeat (one count, or an int array of per-element counts) and roll. */
gl_status gl_op_tile(gl_array *out, const gl_array *x, int nreps, const int64_t *reps);
gl_status gl_op_repeat(gl_array *out, const gl_array *x, int64_t n, int axis);
gl_status gl_op_repeat_counts(gl_array *out, const gl_array *x, const gl_array *counts, int axis);
gl_status gl_op_roll(gl_array *out, const gl_array *x, int64_t shift, int axis);
/* Stable sort along 'axis'; NaN is larger than every number (PyTorch's rule, as max and
** argmax have it): last ascending, first descending, NaNs in their original order.
** Values and/or int64 1-based positions (either may be NULL). */
gl_status gl_op_sort(gl_array *values, gl_array *indices, const gl_array *x, int axis, bool descending);
/* The k largest (or smallest) along 'axis', sorted, with their 1-based positions; NaNs
** count as the largest. */
gl_status gl_op_topk(gl_array *values, gl_array *indices, const gl_array *x, int64_t k, int axis,
                     bool largest);

/* ---- selection and bin counts (select.c) ------------------------------------------- */
/* Along 'axis' (x at least 1-D), x rearranged so that each 0-based position of kth[] (nk
** of them, any order, repeats allowed, each in range) holds the element a sort would put
** there, no larger one before it and no smaller one after it (NaN largest): values and/or
** int64 1-based positions (either may be NULL), NumPy's partition / argpartition. */
gl_status gl_op_partition(gl_array *values, gl_array *indices, const gl_array *x, int axis,
                          const int64_t *kth, int nk);
/* counts (1-D: int64, float64 with weights) of the elements of x (any shape) per bin of
** 'edges' (1-D, increasing, >= 2: edges[k] <= v < edges[k + 1], the last bin closed;
** outside values and NaN left out; uniform: the edges are equal steps, binned by NumPy's
** arithmetic), or, edges NULL, of the values 0 .. nbins - 1 of an integer x (others left
** out). weights: NULL or of x's size, summed instead of counted (in float64). */
gl_status gl_op_histcounts(gl_array *counts, const gl_array *x, const gl_array *weights,
                           const gl_array *edges, bool uniform, int64_t nbins);
/* out (int64, v's length): how many elements of the sorted 1-D a are < v[i] (right: <=),
** NaN last; a and v of one real dtype. */
gl_status gl_op_searchsorted(gl_array *out, const gl_array *a, const gl_array *v, bool right);

/* ---- linear algebra (linalg.c) ----------------------------------------------------- */
/* out = a @ b, NumPy's matmul: 1-D operands promoted then the added axis removed, batch
** axes broadcast, dtypes promoted (bool: or of ands; integers wrap). Neither may be 0-d. */
gl_status gl_op_matmul(gl_array *out, const gl_array *a, const gl_array *b);
/* NumPy's dot: 0-d operands multiply; N-D sums over a's last and b's second-to-last axis. */
gl_status gl_op_dot(gl_array *out, const gl_array *a, const gl_array *b);
/* NumPy's outer: out (a.size, b.size) = flattened a times flattened b. */
gl_status gl_op_outer(gl_array *out, const gl_array *a, const gl_array *b);

/* ---- numpy.linalg over LAPACK (linalg_lapack.c): matrices in the last two axes, the
** leading axes a batch; float32/float64 and complex64/complex128 as they are, float16/
** bfloat16 computed in float32 and given back in their dtype, integers and bool as float64;
** the results real by nature (singular values, eigh's w, log|det|) of a complex input in its
** part type. A matrix that fails
** (singular, not positive definite, no convergence) is an error naming its 1-based batch
** element. */
/* x = a^-1 b: b (..., n) when 1-D, else (..., n, k); batch axes broadcast. */
gl_status gl_op_la_solve(gl_array *out, const gl_array *a, const gl_array *b);
gl_status gl_op_la_inv(gl_array *out, const gl_array *a);
/* sign and log|det| (...); a singular matrix gives 0 and -inf. det = sign * exp(log|det|). */
gl_status gl_op_la_slogdet(gl_array *sign, gl_array *logabs, const gl_array *a);
gl_status gl_op_la_det(gl_array *out, const gl_array *a);
/* L (lower, a = L L^H) from a's lower triangle, or with upper U (a = U^H U) from its upper. */
gl_status gl_op_la_cholesky(gl_array *out, const gl_array *a, bool upper);
/* q (..., m, kq) (q NULL: R only), r (..., kq, n); kq = min(m, n), or m when complete. */
gl_status gl_op_la_qr(gl_array *q, gl_array *r, const gl_array *a, bool complete);
/* u (..., m, ku), s (..., k) descending, vh (..., kv, n); u and vh NULL: values only;
** k = min(m, n), ku = kv = k or (full) m and n. */
gl_status gl_op_la_svd(gl_array *u, gl_array *s, gl_array *vh, const gl_array *a, bool full);
/* w (..., n) ascending, v (..., n, n) (NULL: values only), from a's lower (or upper) triangle. */
gl_status gl_op_la_eigh(gl_array *w, gl_array *v, const gl_array *a, bool upper);
/* w (..., n) and v (..., n, n) (NULL: values only) of a general a: a v = v diag(w), both
** complex whatever a's dtype. */
gl_status gl_op_la_eig(gl_array *w, gl_array *v, const gl_array *a);
/* torch.linalg.lu_factor_ex's factors: lu (..., m, n) packed as getrf's, pivots (...,
** min(m, n)) int32 1-based; a singular matrix is not an error here. */
gl_status gl_op_la_lu(gl_array *lu, gl_array *pivots, const gl_array *a);
/* x with P L U x = b (adjoint: (P L U)^H x = b) from lu_factor's lu (..., n, n) and pivots
** (..., n, each within 1..n), b (..., n, k); batch axes broadcast (getrs). */
gl_status gl_op_la_lu_solve(gl_array *out, const gl_array *lu, const gl_array *pivots, const gl_array *b,
                            bool adjoint);
/* NumPy's lstsq of a (m, n), b (m) or (m, k): x, residuals, rank (0-d int64), s; rcond < 0:
** NumPy's default (machine epsilon times max(m, n)). */
gl_status gl_op_la_lstsq(gl_array *x, gl_array *res, gl_array *rank, gl_array *s, const gl_array *a,
                         const gl_array *b, double rcond);

/* ---- Fourier transforms (fft.c): backend.h's gl_fft_kind over 0-based axes of x --------- */
/* out = scale * the transform of x over axes[0..naxes-1] (distinct; the last one is the halved
** axis of R2C and C2R). C2C: sign -1 forward, +1 inverse; out complex of x's shape. R2C: x
** real, out complex with n / 2 + 1 entries on the last axis. C2R: x with last_n / 2 + 1
** entries there, out real with last_n. Computed in complex64 for complex64, float32, float16
** and bfloat16 inputs, else in complex128 (NumPy's promotion). */
gl_status gl_op_fft(gl_array *out, const gl_array *x, gl_fft_kind kind, int naxes, const int *axes, int sign,
                    int64_t last_n, double scale);

/* ---- convolution helpers (conv.c); NCHW, k/stride/pad/dil hold (h, w) --------------- */
/* The output height and width of a convolution or pooling window; errors name fn. */
gl_status gl_conv_out_size(const char *fn, int64_t H, int64_t W, const int *k, const int *stride,
                           const int *pad, const int *dil, int64_t *oh, int64_t *ow);
/* out (N, C*kh*kw, OH*OW) = the windows of x (N, C, H, W); taps in the padding read padval. */
gl_status gl_op_im2col(gl_array *out, const gl_array *x, const int *k, const int *stride,
                       const int *pad, const int *dil, double padval);
/* out (oshape: N, C, H, W) = the sum of the columns' entries over the windows (im2col's adjoint). */
gl_status gl_op_col2im(gl_array *out, const gl_array *cols, const int64_t *oshape, const int *k,
                       const int *stride, const int *pad, const int *dil);

/* Library kernels (gl_backend.dnn: cuDNN on cuda, oneDNN on the cpu), NCHW. Each checks devices, dtypes
** (data of one float dtype; batch norm float32/float64 only, its per-channel operands of
** x's dtype) and geometry before it asks whether x's device has the library (an error
** naming the reason when not). Outputs are new contiguous arrays of x's dtype. */
/* The family gl_op_dnn_unavailable takes for a whole recurrent network in one call
** (rnn_net...), beside the gl_dnn_family values, whose GL_DNN_RNN is either form. */
#define GL_DNN_WHOLE_RNN GL_NDNN_FAMILY
/* NULL when dev can run them (for data of dtype dt in 'family', a gl_dnn_family or
** GL_DNN_WHOLE_RNN; -1: any dtype, the convolutions'), else why not. */
const char *gl_op_dnn_unavailable(gl_device dev, int dt, int family);
/* The device's dnn table for 'family' in dt, or a failure saying why not (naming fn). */
gl_status gl_op_dnn_table(const char *fn, gl_device dev, gl_dtype dt, gl_dnn_family family, const gl_dnn **out);
/* out (N, O, OH, OW) = x (N, C, H, W) cross-correlated with w (O, C/groups, kh, kw), no bias. */
gl_status gl_op_dnn_conv2d(gl_array *out, const gl_array *x, const gl_array *w, const gl_dnn_conv *c);
/* out (xshape) = conv2d's gradient with respect to x, given dy (its output's shape). */
gl_status gl_op_dnn_conv2d_bwd_data(gl_array *out, const gl_array *dy, const gl_array *w, const int64_t *xshape,
                                    const gl_dnn_conv *c);
/* out (wshape) = conv2d's gradient with respect to w, given x and dy. */
gl_status gl_op_dnn_conv2d_bwd_filter(gl_array *out, const gl_array *x, const gl_array *dy, const int64_t *wshape,
                                      const gl_dnn_conv *c);
/* Max (padding never wins) or average (padding counted as zeros) pooling, no dilation,
** padding at most half the window; bwd: out (x's shape) from x, y and dy. */
gl_status gl_op_dnn_pool2d(gl_array *out, bool max, const gl_array *x, const int *k, const int *stride,
                           const int *pad);
gl_status gl_op_dnn_pool2d_bwd(gl_array *out, bool max, const gl_array *x, const gl_array *y, const gl_array *dy,
                               const int *k, const int *stride, const int *pad);
/* Batch norm of x (N, C [, H [, W]]) per channel. training: batch statistics, save_mean
** and save_invstd (C) for the backward, running mean/var (both or neither) updated in
** place; else y from the running statistics (save_* untouched). */
gl_status gl_op_dnn_batch_norm(gl_array *y, gl_array *save_mean, gl_array *save_invstd, const gl_array *x,
                               const gl_array *w, const gl_array *b, const gl_array *rmean, const gl_array *rvar,
                               bool training, double momentum, double eps);
/* dx, dw, db (C) of a training-mode batch norm, from its saved statistics. */
gl_status gl_op_dnn_batch_norm_bwd(gl_array *dx, gl_array *dw, gl_array *db, const gl_array *x, const gl_array *dy,
                                   const gl_array *w, const gl_array *save_mean, const gl_array *save_invstd,
                                   double eps);
/* Softmax (log: log-softmax) over the last axis of x (any shape, at least 1-D); bwd: dx
** from the forward's output y and dy (both of y's shape). */
gl_status gl_op_dnn_softmax(gl_array *out, bool log, const gl_array *x);
gl_status gl_op_dnn_softmax_bwd(gl_array *out, bool log, const gl_array *y, const gl_array *dy);
/* A library's whole-network RNN (dnn_rnn.c): r's mode, layers, dirs and bias given; the sizes
** are read from x (seq, batch, input) and hx (layers * dirs, batch, hidden). out (flat: y, hy
** [, cy]) and reserve (uint8; empty unless training) are new arrays; w is the flat parameters
** in PyTorch's order. */
gl_status gl_op_dnn_rnn_net(gl_array *out, gl_array *reserve, const gl_array *x, const gl_array *w, const gl_array *hx,
                            const gl_array *cx, gl_dnn_rnn_net *r, bool training);
/* dx, dw, dhx [, dcx (LSTM)] of gl_op_dnn_rnn_net from g (out's shape), out and reserve. */
gl_status gl_op_dnn_rnn_net_bwd(gl_array *dx, gl_array *dw, gl_array *dhx, gl_array *dcx, const gl_array *g,
                                const gl_array *out, const gl_array *reserve, const gl_array *x, const gl_array *w,
                                const gl_array *hx, const gl_array *cx, gl_dnn_rnn_net *r);
/* Layer norm over the last axis of x (..., D): y, and mean, rstd (x's shape less its last
** axis; rstd = 1/sqrt(biased variance + eps)), the form of gl_op_layer_norm; w, b (D) or NULL.
** bwd: dx, dw, db (D) from x, dy and the saved statistics. */
gl_status gl_op_dnn_layer_norm(gl_array *y, gl_array *mean, gl_array *rstd, const gl_array *x, const gl_array *w,
                               const gl_array *b, double eps);
gl_status gl_op_dnn_layer_norm_bwd(gl_array *dx, gl_array *dw, gl_array *db, const gl_array *x, const gl_array *dy,
                                   const gl_array *w, const gl_array *mean, const gl_array *rstd, double eps);

/* ---- fused kernels for nn and optim (fused.c) -------------------------------------- */
/* out = x (..., K) @ w (N, K)^T + b (N) (b may be NULL), in one call. */
gl_status gl_op_linear(gl_array *out, const gl_array *x, const gl_array *w, const gl_array *b);
/* Softmax cross-entropy of logits (N, C) float32/float64 against int64 1-based labels (N),
** with label smoothing, or against a target distribution (N, C) (labels NULL): loss (N)
** per row and probs (N, C), the softmax that the backward uses. A label outside 1..C gives a
** NaN row (no device sync to check them here: nn checks them first, with a clear error). */
gl_status gl_op_xent(gl_array *loss, gl_array *probs, const gl_array *logits, const gl_array *labels,
                     const gl_array *target, double smoothing);
/* out (N, C) = (probs - t) * gout * scale, gout 0-d or (N). */
gl_status gl_op_xent_bwd(gl_array *out, const gl_array *probs, const gl_array *labels, const gl_array *target,
                         double smoothing, const gl_array *gout, double scale);
/* Layer norm over the last axis of x (..., D) float32/float64 with w, b (D) or NULL:
** y (x's shape), mean and rstd (x's shape less the last axis), rstd = 1 / sqrt(var + eps). */
gl_status gl_op_layer_norm(gl_array *y, gl_array *mean, gl_array *rstd, const gl_array *x, const gl_array *w,
                           const gl_array *b, double eps);
/* Its backward: gx from g (x's shape), the saved mean and rstd and w (or NULL); with
** want_wb, gw and gb (D) too. */
gl_status gl_op_layer_norm_bwd(gl_array *gx, gl_array *gw, gl_array *gb, const gl_array *g, const gl_array *x,
                               const gl_array *mean, const gl_array *rstd, const gl_array *w, bool want_wb);
/* softmax(q k^T * scale) v of q (..., L, E), k (..., S, E), v (..., S, Ev) (the same leading
** axes; float32/float64) without the (L, S) scores: out (..., L, Ev), lse (..., L). */
gl_status gl_op_attention(gl_array *out, gl_array *lse, const gl_array *q, const gl_array *k, const gl_array *v,
                          double scale, bool causal);
/* Its backward from g = d loss / d out, the forward's out and lse (FlashAttention-2's: the
** probabilities recomputed in tiles, never all at once): gq, gk, gv shaped as q, k, v. */
gl_status gl_op_attention_bwd(gl_array *gq, gl_array *gk, gl_array *gv, const gl_array *g, const gl_array *q,
                              const gl_array *k, const gl_array *v, const gl_array *out, const gl_array *lse,
                              double scale, bool causal);
/* One optimizer step in place over p (contiguous float32/float64) with gradient g and the
** rule's state arrays (backend.h's optim_step says which; NULL where unused). */
gl_status gl_op_optim_step(gl_optim_kind kind, const gl_array *p, const gl_array *g, const gl_array *const st[3],
                           const gl_optim_hp *hp);

/* ---- the fused recurrent layers (rnn.c) --------------------------------------------------- */
/* One layer and direction of an LSTM over the input projections xp (L, N, 4H) (x W_ih^T +
** biases, PyTorch's gate order i, f, g, o) from h0, c0 (N, H), float32/float64: hc (L, N,
** 2, H) the h and c of every step, gates (L, N, 4H) the activations the backward reads;
** reverse runs from step L to 1. */
gl_status gl_op_lstm(gl_array *hc, gl_array *gates, const gl_array *xp, const gl_array *w, const gl_array *h0,
                     const gl_array *c0, bool reverse);
/* Backpropagation through time from the gradient of hc: dxp (L, N, 4H), dw (4H, H), dh0, dc0. */
gl_status gl_op_lstm_bwd(gl_array *dxp, gl_array *dw, gl_array *dh0, gl_array *dc0, const gl_array *ghc,
                         const gl_array *gates, const gl_array *hc, const gl_array *w, const gl_array *h0,
                         const gl_array *c0, bool reverse);
/* The same for PyTorch's GRU: xp (L, N, 3H) = x W_ih^T + b_ih (gates r, z, n), w (3H, H), b =
** b_hh (3H) or NULL, h0 (N, H): hs (L, N, H) the hidden states, gates (L, N, 4H) r, z, n and
** W_hn h + b_hn of every step. Backward from the gradient of hs: dxp, dw, db (3H), dh0. */
gl_status gl_op_gru(gl_array *hs, gl_array *gates, const gl_array *xp, const gl_array *w, const gl_array *b,
                    const gl_array *h0, bool reverse);
gl_status gl_op_gru_bwd(gl_array *dxp, gl_array *dw, gl_array *db, gl_array *dh0, const gl_array *ghs,
                        const gl_array *gates, const gl_array *hs, const gl_array *w, const gl_array *h0,
                        bool reverse);
/* The Elman RNN: xp (L, N, H) = x W_ih^T + b_ih + b_hh, hs (L, N, H) = act(xp_t + h_{t-1} W_hh^T),
** act tanh or relu. Backward from the gradient of hs: dxp, dw (H, H), dh0. */
gl_status gl_op_rnn(gl_array *hs, const gl_array *xp, const gl_array *w, const gl_array *h0, bool reverse,
                    bool relu);
gl_status gl_op_rnn_bwd(gl_array *dxp, gl_array *dw, gl_array *dh0, const gl_array *ghs, const gl_array *hs,
                        const gl_array *w, const gl_array *h0, bool reverse, bool relu);
/* The library's LSTM or GRU (kind GL_DNN_LSTM / GL_DNN_GRU; gl_backend.dnn, oneDNN on the
** cpu, float32): one layer and direction from x (L, N, I), w_ih (G H, I), w_hh (G H, H) in the
** library's gate order, b (4H), h0, c0 (N, H; LSTM only, else NULL). y: LSTM (L + 1, N, H), the
** steps' h and then the last c; GRU (L, N, H). ws: the workspace (uint8) for the backward,
** which from the gradient of y gives dx, dw_ih, dw_hh, db, dh0 and dc0 (LSTM). */
gl_status gl_op_dnn_rnn(gl_array *y, gl_array *ws, int kind, const gl_array *x, const gl_array *wi, const gl_array *wh,
                        const gl_array *b, const gl_array *h0, const gl_array *c0, bool reverse);
gl_status gl_op_dnn_rnn_bwd(gl_array *dx, gl_array *dwi, gl_array *dwh, gl_array *db, gl_array *dh0, gl_array *dc0,
                            int kind, const gl_array *gy, const gl_array *y, const gl_array *ws, const gl_array *x,
                            const gl_array *wi, const gl_array *wh, const gl_array *b, const gl_array *h0,
                            const gl_array *c0, bool reverse);

/* ---- reductions and scans (reduce.c); axes are 0-based ------------------------- */
/* out = op over 'axes' (naxes of them; naxes < 0: all, 0: none), the reduced axes dropped
** or, with keepdims, kept as 1. dtype: the result dtype where NumPy takes one (sum, prod:
** any but bool; mean, var: a float), -1 for NumPy's default (integer sums int64, integer
** means float64, max/min keep, all/any bool). param: ddof for VAR, the order for NORM.
** ARGMAX/ARGMIN give int64 1-BASED positions along one axis (all axes: the position in
** the flattened array). The maximum of nothing is an error; sum/prod/mean/... of
** nothing are 0/1/NaN. */
gl_status gl_op_reduce(gl_array *out, gl_redop op, const gl_array *x, const int *axes, int naxes,
                       bool keepdims, int dtype, double param);
/* sqrt of var (NumPy's std), same arguments. */
gl_status gl_op_std(gl_array *out, const gl_array *x, const int *axes, int naxes, bool keepdims,
                    int dtype, double ddof);
/* NumPy's linalg.norm: ord NaN is the default (2-norm of everything reduced, Frobenius
** for matrices); otherwise a vector norm over one axis (2, 1, inf, -inf, 0 or any p) or a
** matrix norm over two (1, -1, inf, -inf; 2, -2 and GL_NORM_NUC from singular values). */
#define GL_NORM_NUC (-DBL_MAX)     /* the nuclear norm's ord (no p-norm has this order) */
gl_status gl_op_norm(gl_array *out, const gl_array *x, const int *axes, int naxes, bool keepdims,
                     double ord);
/* Inclusive cumsum (op GL_R_SUM) or cumprod (GL_R_PROD) along 'axis' (< 0: over the
** flattened array, giving 1-D); dtype as for sum (-1: NumPy's default). */
gl_status gl_op_scan(gl_array *out, gl_redop op, const gl_array *x, int axis, int dtype);

/* ---- random numbers (random.c); the stream is documented in kernels/philox.h ------ */
/* A generator: the Philox key and the next unused 128-bit counter block. Every call
** below reads blocks from g->offset on and, when it succeeds, advances g->offset past
** them (so the state never depends on the device or the thread count). */
typedef struct gl_rng { uint64_t seed, offset; } gl_rng;
/* uniform [a, b) or normal (mean a, std b) of a float dtype; b - a, a, b finite, std >= 0. */
gl_status gl_op_random(gl_array *out, gl_rng *g, gl_rand_dist dist, double a, double b, gl_dtype dt,
                       int ndim, const int64_t *shape, gl_device dev);
/* Integers lo..hi inclusive (lo <= hi, both fit dt: int32, int64 or uint8). */
gl_status gl_op_randint(gl_array *out, gl_rng *g, int64_t lo, int64_t hi, gl_dtype dt, int ndim,
                        const int64_t *shape, gl_device dev);
/* 1 with probability p (a number in [0, 1], or an array broadcast to shape on dev), else 0. */
gl_status gl_op_bernoulli(gl_array *out, gl_rng *g, double p, const gl_array *parr, gl_dtype dt,
                          int ndim, const int64_t *shape, gl_device dev);
/* int64 1-D of length k: the first k values of a random permutation of 1..n (all of it
** when k == n; a sample without replacement otherwise). Computed on the host. */
gl_status gl_op_permutation(gl_array *out, gl_rng *g, int64_t n, int64_t k, gl_device dev);
/* x shuffled in place along its first axis. */
gl_status gl_op_shuffle(const gl_array *x, gl_rng *g);
/* NumPy's distributions (kernels/random_dist.h: sampler 'kind', GL_RD_*): each parameter
** par[k] or, where parr[k] is set, an array broadcast to shape on dev; checked as NumPy
** checks them (every element). Continuous samplers make float dtypes, discrete ones integer
** or float dtypes (computed in float64 / int64, then cast). */
gl_status gl_op_sample(gl_array *out, gl_rng *g, int kind, const double par[3], const gl_array *const parr[3],
                       gl_dtype dt, int ndim, const int64_t *shape, gl_device dev);
/* The samplers' table: count, name, parameter count and names, whether integer-valued. */
int gl_sampler_count(void);
const char *gl_sampler_name(int kind);
int gl_sampler_nparams(int kind);
const char *gl_sampler_param(int kind, int k);
bool gl_sampler_discrete(int kind);

/* ---- helpers ------------------------------------------------------------------- */
/* GL_EINVAL unless both arrays are on one device; the message names both and :to(). */
gl_status gl_same_device(const gl_array *a, const gl_array *b);
/* Checks of an op fn's operand x (called 'what' in the message) against its input ref:
** GL_EDEVICE unless on ref's device ("x is on D but the input is on E (move it with :to())");
** like_input also GL_EINVAL unless of ref's dtype. */
gl_status gl_op_input_device(const char *fn, const gl_array *ref, const gl_array *x, const char *what);
gl_status gl_op_like_input(const char *fn, const gl_array *ref, const gl_array *x, const char *what);
/* GL_EINVAL unless x (called 'what') has the shape want (nd axes); the message shows both. */
gl_status gl_op_want_shape(const char *fn, const gl_array *x, const char *what, int nd, const int64_t *want);
/* The backend of dev when it has kernels for op 'which' of family 'op' (see backend.h's
** gl_op; which < 0: any op of the family) in dtype dt; else GL_ENOTSUP "<name> is not
** supported for <dtype> on <device>" (name NULL: the family's). Asked before anything is
** allocated, so a refusal leaves no trace. */
gl_status gl_backend_supporting(gl_device dev, gl_op op, int which, gl_dtype dt, const char *name,
                                const gl_backend **out);
/* The same for a's device and dtype, any op of the family. */
gl_status gl_backend_of(const gl_array *a, gl_op op, const gl_backend **out);
/* The dtypes dev's backend has kernels for (op, which), as "float32, float64 or int64", in
** buf (of 'size' bytes), for messages. */
const char *gl_supported_dtypes(gl_device dev, gl_op op, int which, char *buf, size_t size);
/* out *= repeats in place, for a sum of that many equal terms that a broadcast view
** repeats: integers wrap as the sum would, float16/bfloat16 multiply in float32, bool
** stays (reduce.c). */
gl_status gl_op_times_repeats(const gl_array *out, int64_t repeats);

#endif
