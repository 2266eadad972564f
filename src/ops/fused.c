/*
** fused.c — the fused kernels under gpu.nn and gpu.optim (gpu.fused in Lua): linear
** (x @ w^T + b in one call), softmax cross-entropy and layer norm forward and backward, and
** optimizer steps that make one pass over each parameter instead of a dozen array ops. Checks
** everything here, then calls the backend's optional entries (xent, xent_bwd,
** optim_step); a device without them gets a "not supported" error and the Lua layer
** keeps its composite path.
*/
#include <math.h>
#include <string.h>
#include "ops.h"

static gl_status need_entry(const char *fn, const gl_array *x, const void *entry) {
  if (entry != NULL) return GL_OK;
  char dn[16];
  return gl_fail(GL_ENOTSUP, "%s is not supported on %s", fn, gl_device_name(gl_array_device(x), dn));
}

/* x's dtype is one the fused kernels of its device take (a device not built in fails later). */
static gl_status need_float(const char *what, const gl_array *x) {
  gl_device dev = gl_array_device(x);
  const gl_backend *be = gl_backend_get(dev.type);
  if (be == NULL || be->supports(GL_OP_FUSED, 0, (gl_dtype)x->dtype)) return GL_OK;
  char list[96];
  return gl_fail(GL_EINVAL, "%s must be %s, got %s", what, gl_supported_dtypes(dev, GL_OP_FUSED, 0, list, sizeof list),
                 gl_dtypes[x->dtype].name);
}

/* x is on ref's device; refname names ref in the message ("the parameter", "query"). */
static gl_status need_device(const char *what, const char *refname, const gl_array *ref, const gl_array *x) {
  if (gl_device_eq(gl_array_device(x), gl_array_device(ref))) return GL_OK;
  char d1[16], d2[16];
  return gl_fail(GL_EDEVICE, "%s is on %s but %s is on %s (move it with :to())", what,
                 gl_device_name(gl_array_device(x), d1), refname, gl_device_name(gl_array_device(ref), d2));
}

/* x is on ref's device, of its dtype and (same_shape) of its shape. */
static gl_status need_same(const char *what, const char *refname, const gl_array *ref, const gl_array *x,
                           bool same_shape) {
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  GL_TRY(need_device(what, refname, ref, x));
  if (x->dtype != ref->dtype)
    return gl_fail(GL_EINVAL, "%s is %s, expected %s like %s", what, gl_dtypes[x->dtype].name,
                   gl_dtypes[ref->dtype].name, refname);
  if (same_shape && (x->ndim != ref->ndim || x->size != ref->size ||
                     memcmp(x->shape, ref->shape, (size_t)x->ndim * sizeof x->shape[0]) != 0))
    return gl_fail(GL_EINVAL, "%s has shape %s, expected %s", what, gl_shape_str(x->ndim, x->shape, s1),
                   gl_shape_str(ref->ndim, ref->shape, s2));
  return GL_OK;
}

/* ---- linear ---------------------------------------------------------------------------- */

gl_status gl_op_linear(gl_array *out, const gl_array *x, const gl_array *w, const gl_array *b) {
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  if (w->ndim != 2)
    return gl_fail(GL_EINVAL, "weight must be 2-D (out_features, in_features), got shape %s",
                   gl_shape_str(w->ndim, w->shape, s1));
  if (x->ndim < 1 || x->shape[x->ndim - 1] != w->shape[1])
    return gl_fail(GL_EINVAL, "input of shape %s does not fit weight %s (expected %lld input features)",
                   gl_shape_str(x->ndim, x->shape, s1), gl_shape_str(w->ndim, w->shape, s2),
                   (long long)w->shape[1]);
  if (b != NULL && (b->ndim != 1 || b->shape[0] != w->shape[0]))
    return gl_fail(GL_EINVAL, "bias of shape %s does not fit weight %s (expected (%lld))",
                   gl_shape_str(b->ndim, b->shape, s1), gl_shape_str(w->ndim, w->shape, s2),
                   (long long)w->shape[0]);
  gl_array wt = *w;
  GL_TRY(gl_view_transpose(&wt, 0, 1));
  GL_TRY(gl_op_matmul(out, x, &wt));
  if (b == NULL) return GL_OK;
  gl_operand ob = { b, { 0 } };
  gl_status st = gl_op_binary_(out, GL_B_add, ob);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* ---- softmax cross-entropy --------------------------------------------------------------- */

/* logits (N, C) float; exactly one of labels (int64 (N), 1-based) and target (N, C). */
static gl_status xent_check(const gl_array *logits, const gl_array *labels,
                            const gl_array *target) {
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  if (logits->ndim != 2)
    return gl_fail(GL_EINVAL, "logits must be (N, C), got shape %s", gl_shape_str(logits->ndim, logits->shape, s1));
  GL_TRY(need_float("logits", logits));
  if (labels != NULL) {
    if (labels->dtype != GL_INT64 || labels->ndim != 1 || labels->shape[0] != logits->shape[0])
      return gl_fail(GL_EINVAL, "labels must be int64 of shape (%lld), got %s %s",
                     (long long)logits->shape[0], gl_dtypes[labels->dtype].name,
                     gl_shape_str(labels->ndim, labels->shape, s1));
    GL_TRY(gl_same_device(logits, labels));
  } else {
    if (target == NULL) return gl_fail(GL_EINVAL, "labels or a target distribution expected");
    if (target->dtype != logits->dtype || target->ndim != 2 || target->shape[0] != logits->shape[0] ||
        target->shape[1] != logits->shape[1])
      return gl_fail(GL_EINVAL, "target must be %s of shape %s, got %s %s", gl_dtypes[logits->dtype].name,
                     gl_shape_str(2, logits->shape, s1), gl_dtypes[target->dtype].name,
                     gl_shape_str(target->ndim, target->shape, s2));
    GL_TRY(gl_same_device(logits, target));
  }
  return GL_OK;
}

gl_status gl_op_xent(gl_array *loss, gl_array *probs, const gl_array *logits, const gl_array *labels,
                     const gl_array *target, double smoothing) {
  const char *fn = "cross_entropy";
  GL_TRY(xent_check(logits, labels, target));
  if (!(smoothing >= 0 && smoothing <= 1))
    return gl_fail(GL_EINVAL, "label_smoothing must be in [0, 1], got %g", smoothing);
  const gl_backend *be;
  GL_TRY(gl_backend_for(gl_array_device(logits), &be));
  GL_TRY(need_entry(fn, logits, (const void *)be->xent));
  gl_array tz = { 0 }, tl = { 0 }, tt = { 0 };
  const gl_array *z = NULL, *l = NULL, *t = NULL;
  gl_status st = gl_op_as_contig(logits, (gl_dtype)logits->dtype, &tz, &z);
  if (st == GL_OK && labels) st = gl_op_as_contig(labels, (gl_dtype)labels->dtype, &tl, &l);
  if (st == GL_OK && target) st = gl_op_as_contig(target, (gl_dtype)target->dtype, &tt, &t);
  gl_device dev = gl_array_device(logits);
  if (st == GL_OK) st = gl_array_alloc(loss, (gl_dtype)logits->dtype, 1, logits->shape, dev);
  if (st == GL_OK) {
    st = gl_array_alloc(probs, (gl_dtype)logits->dtype, 2, logits->shape, dev);
    if (st != GL_OK) gl_array_release(loss);
  }
  if (st == GL_OK && logits->size > 0) {
    st = be->xent(loss, probs, z, l, t, smoothing);
    if (st != GL_OK) { gl_array_release(loss); gl_array_release(probs); }
  }
  gl_array_release(&tz);
  gl_array_release(&tl);
  gl_array_release(&tt);
  return st;
}

gl_status gl_op_xent_bwd(gl_array *out, const gl_array *probs, const gl_array *labels, const gl_array *target,
                         double smoothing, const gl_array *gout, double scale) {
  const char *fn = "cross_entropy_backward";
  char s1[GL_SHAPE_BUFSZ];
  GL_TRY(xent_check(probs, labels, target));
  if (gout->dtype != probs->dtype || !(gout->ndim == 0 || (gout->ndim == 1 && gout->shape[0] == probs->shape[0])))
    return gl_fail(GL_EINVAL, "the incoming gradient must be %s, 0-d or of shape (%lld), got %s %s",
                   gl_dtypes[probs->dtype].name, (long long)probs->shape[0], gl_dtypes[gout->dtype].name,
                   gl_shape_str(gout->ndim, gout->shape, s1));
  GL_TRY(gl_same_device(probs, gout));
  const gl_backend *be;
  GL_TRY(gl_backend_for(gl_array_device(probs), &be));
  GL_TRY(need_entry(fn, probs, (const void *)be->xent_bwd));
  gl_array tp = { 0 }, tl = { 0 }, tt = { 0 }, tg = { 0 };
  const gl_array *p = NULL, *l = NULL, *t = NULL, *g = NULL;
  gl_status st = gl_op_as_contig(probs, (gl_dtype)probs->dtype, &tp, &p);
  if (st == GL_OK && labels) st = gl_op_as_contig(labels, (gl_dtype)labels->dtype, &tl, &l);
  if (st == GL_OK && target) st = gl_op_as_contig(target, (gl_dtype)target->dtype, &tt, &t);
  if (st == GL_OK) st = gl_op_as_contig(gout, (gl_dtype)gout->dtype, &tg, &g);
  if (st == GL_OK) st = gl_array_alloc(out, (gl_dtype)probs->dtype, 2, probs->shape, gl_array_device(probs));
  if (st == GL_OK && probs->size > 0) {
    st = be->xent_bwd(out, p, l, t, smoothing, g, scale);
    if (st != GL_OK) gl_array_release(out);
  }
  gl_array_release(&tp);
  gl_array_release(&tl);
  gl_array_release(&tt);
  gl_array_release(&tg);
  return st;
}

/* ---- optimizer steps ----------------------------------------------------------------------- */

static const char *const optim_fn[GL_OPTIM_KINDS] = { "sgd_", "adam_", "rmsprop_", "adagrad_", "adadelta_", "adamax_",
                                                      "nadam_", "radam_" };
static const char *const state_name[GL_OPTIM_KINDS][3] = {
  { "momentum_buffer", "-", "-" },
  { "exp_avg", "exp_avg_sq", "max_exp_avg_sq" },
  { "square_avg", "momentum_buffer", "grad_avg" },
  { "sum", "-", "-" },
  { "square_avg", "acc_delta", "-" },
  { "exp_avg", "exp_inf", "-" },
  { "exp_avg", "exp_avg_sq", "-" },
  { "exp_avg", "exp_avg_sq", "-" },
};

gl_status gl_op_optim_step(gl_optim_kind kind, const gl_array *p, const gl_array *g, const gl_array *const st[3],
                           const gl_optim_hp *hp) {
  const char *fn = optim_fn[kind];
  GL_TRY(gl_array_writable(p, "the parameter"));     /* p and the state are updated in place */
  for (int i = 0; i < 3; i++)
    if (st[i] != NULL) GL_TRY(gl_array_writable(st[i], state_name[kind][i]));
  if (!gl_array_is_contiguous(p))
    return gl_fail(GL_EINVAL, "the parameter must be contiguous (it is updated in place)");
  GL_TRY(need_float("the parameter", p));
  GL_TRY(need_same("the gradient", "the parameter", p, g, true));
  for (int i = 0; i < 3; i++) {
    if (st[i] == NULL) continue;
    GL_TRY(need_same(state_name[kind][i], "the parameter", p, st[i], true));
    if (!gl_array_is_contiguous(st[i])) return gl_fail(GL_EINVAL, "%s must be contiguous", state_name[kind][i]);
  }
  bool need[3] = { false, false, false };
  switch (kind) {
    case GL_OPTIM_SGD: need[0] = hp->momentum != 0; break;
    case GL_OPTIM_ADAM: need[0] = need[1] = true; need[2] = hp->amsgrad != 0; break;
    case GL_OPTIM_RMSPROP: need[0] = true; need[1] = hp->momentum > 0; need[2] = hp->centered != 0; break;
    case GL_OPTIM_ADAGRAD: need[0] = true; break;
    case GL_OPTIM_ADADELTA: case GL_OPTIM_ADAMAX: case GL_OPTIM_NADAM: case GL_OPTIM_RADAM:
      need[0] = need[1] = true;
      break;
  }
  for (int i = 0; i < 3; i++)
    if (need[i] && st[i] == NULL) return gl_fail(GL_EINVAL, "the state array %s is missing", state_name[kind][i]);
  /* the bias corrections the rule divides by (the binding makes them from step >= 1) */
  bool bc1 = kind == GL_OPTIM_ADAM || kind == GL_OPTIM_ADAMAX || kind == GL_OPTIM_RADAM;
  bool bc2 = kind == GL_OPTIM_ADAM || kind == GL_OPTIM_NADAM || kind == GL_OPTIM_RADAM;
  if ((bc1 && !(hp->bc1 > 0)) || (bc2 && !(hp->bc2 > 0)))
    return gl_fail(GL_EINVAL, "step must be a positive integer");
  const gl_backend *be;
  GL_TRY(gl_backend_for(gl_array_device(p), &be));
  GL_TRY(need_entry(fn, p, (const void *)be->optim_step));
  gl_array tg = { 0 };
  const gl_array *gc = NULL;
  GL_TRY(gl_op_as_contig(g, (gl_dtype)g->dtype, &tg, &gc));
  const gl_array *sts[3] = { need[0] ? st[0] : NULL, need[1] ? st[1] : NULL, need[2] ? st[2] : NULL };
  gl_status s = gl_array_begin_write(p);
  for (int i = 0; i < 3 && s == GL_OK; i++)
    if (sts[i] != NULL) s = gl_array_begin_write(sts[i]);
  if (s == GL_OK && p->size > 0) s = be->optim_step(kind, p, gc, sts, hp);
  gl_array_release(&tg);
  return s;
}

/* ---- layer norm ------------------------------------------------------------------------------ */

/* x (..., D) float with D >= 1; p (D) of x's dtype and device, or NULL. */
static gl_status ln_param(const char *what, const gl_array *x, const gl_array *p) {
  char s1[GL_SHAPE_BUFSZ];
  if (p == NULL) return GL_OK;
  int64_t D = x->shape[x->ndim - 1];
  if (p->ndim != 1 || p->shape[0] != D)
    return gl_fail(GL_EINVAL, "%s must be (%lld), got shape %s", what, (long long)D, gl_shape_str(p->ndim, p->shape, s1));
  return need_same(what, "the input", x, p, false);
}

static gl_status ln_input(const gl_array *x) {
  char s1[GL_SHAPE_BUFSZ];
  if (x->ndim < 1 || x->shape[x->ndim - 1] < 1)
    return gl_fail(GL_EINVAL, "input must have a last axis of at least 1 element, got shape %s",
                   gl_shape_str(x->ndim, x->shape, s1));
  return need_float("input", x);
}

gl_status gl_op_layer_norm(gl_array *y, gl_array *mean, gl_array *rstd, const gl_array *x, const gl_array *w,
                           const gl_array *b, double eps) {
  GL_TRY(ln_input(x));
  GL_TRY(ln_param("weight", x, w));
  GL_TRY(ln_param("bias", x, b));
  if (!(eps >= 0) || !isfinite(eps)) return gl_fail(GL_EINVAL, "eps must be finite and >= 0, got %g", eps);
  const gl_backend *be;
  GL_TRY(gl_backend_for(gl_array_device(x), &be));
  GL_TRY(need_entry("layer_norm", x, (const void *)be->layer_norm));
  gl_device dev = gl_array_device(x);
  gl_dtype dt = (gl_dtype)x->dtype;
  gl_array tx = { 0 }, tw = { 0 }, tb = { 0 };
  const gl_array *xc = NULL, *wc = NULL, *bc = NULL;
  gl_status st = gl_op_as_contig(x, dt, &tx, &xc);
  if (st == GL_OK && w) st = gl_op_as_contig(w, dt, &tw, &wc);
  if (st == GL_OK && b) st = gl_op_as_contig(b, dt, &tb, &bc);
  bool have_y = false, have_m = false;
  if (st == GL_OK) st = gl_array_alloc(y, dt, x->ndim, x->shape, dev);
  if (st == GL_OK) { have_y = true; st = gl_array_alloc(mean, dt, x->ndim - 1, x->shape, dev); }
  if (st == GL_OK) { have_m = true; st = gl_array_alloc(rstd, dt, x->ndim - 1, x->shape, dev); }
  if (st == GL_OK && x->size > 0) {
    st = be->layer_norm(y, mean, rstd, xc, wc, bc, eps);
    if (st != GL_OK) gl_array_release(rstd);
  }
  if (st != GL_OK) {
    if (have_y) gl_array_release(y);
    if (have_m) gl_array_release(mean);
  }
  gl_array_release(&tx);
  gl_array_release(&tw);
  gl_array_release(&tb);
  return st;
}

gl_status gl_op_layer_norm_bwd(gl_array *gx, gl_array *gw, gl_array *gb, const gl_array *g, const gl_array *x,
                               const gl_array *mean, const gl_array *rstd, const gl_array *w, bool want_wb) {
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  GL_TRY(ln_input(x));
  GL_TRY(need_same("the incoming gradient", "the input", x, g, true));
  GL_TRY(ln_param("weight", x, w));
  int64_t R = x->size / x->shape[x->ndim - 1];
  const gl_array *saved[2] = { mean, rstd };
  for (int i = 0; i < 2; i++) {
    const gl_array *s = saved[i];
    if (s->ndim != x->ndim - 1 || s->size != R ||
        (x->ndim > 1 && memcmp(s->shape, x->shape, (size_t)s->ndim * sizeof s->shape[0]) != 0))
      return gl_fail(GL_EINVAL, "%s must have shape %s (the input's less its last axis), got %s", i ? "rstd" : "mean",
                     gl_shape_str(x->ndim - 1, x->shape, s1), gl_shape_str(s->ndim, s->shape, s2));
    GL_TRY(need_same(i ? "rstd" : "mean", "the input", x, s, false));
  }
  const gl_backend *be;
  GL_TRY(gl_backend_for(gl_array_device(x), &be));
  GL_TRY(need_entry("layer_norm_backward", x, (const void *)be->layer_norm_bwd));
  gl_device dev = gl_array_device(x);
  gl_dtype dt = (gl_dtype)x->dtype;
  int64_t D = x->shape[x->ndim - 1];
  gl_array t[5] = { { 0 } };
  const gl_array *c[5] = { NULL };
  const gl_array *src[5] = { g, x, mean, rstd, w };
  gl_status st = GL_OK;
  for (int i = 0; i < 5 && st == GL_OK; i++)
    if (src[i] != NULL) st = gl_op_as_contig(src[i], dt, &t[i], &c[i]);
  int made = 0;
  if (st == GL_OK) { st = gl_array_alloc(gx, dt, x->ndim, x->shape, dev); made += st == GL_OK; }
  if (st == GL_OK && want_wb) { st = gl_array_alloc(gw, dt, 1, &D, dev); made += st == GL_OK; }
  if (st == GL_OK && want_wb) { st = gl_array_alloc(gb, dt, 1, &D, dev); made += st == GL_OK; }
  if (st == GL_OK && x->size > 0)
    st = be->layer_norm_bwd(gx, want_wb ? gw : NULL, want_wb ? gb : NULL, c[0], c[1], c[2], c[3], c[4]);
  if (st == GL_OK && x->size == 0 && want_wb) {
    /* no rows: the parameter gradients are zeros */
    st = gl_op_fill(gw, gl_scalar_int(0));
    if (st == GL_OK) st = gl_op_fill(gb, gl_scalar_int(0));
  }
  if (st != GL_OK) {
    if (made > 0) gl_array_release(gx);
    if (made > 1) gl_array_release(gw);
    if (made > 2) gl_array_release(gb);
  }
  for (int i = 0; i < 5; i++) gl_array_release(&t[i]);
  return st;
}

/* ---- attention ------------------------------------------------------------------------------- */

/* float16 and bfloat16 attention: the statistics (lse) are float32, and what no backend
** computes in the half dtype (cuDNN's fused SDPA, where it builds a plan, is the only one)
** is computed in float32 from float32 copies and rounded back, on every device. */
static bool attention_half(int dt) { return dt == GL_FLOAT16 || dt == GL_BFLOAT16; }
static gl_dtype attention_lse_dtype(int dt) { return attention_half(dt) ? GL_FLOAT32 : (gl_dtype)dt; }

/* q (..., L, E), k (..., S, E), v (..., S, Ev) with the same leading axes, one float dtype
** (the fused kernels' or a half one), one device; a finite scale. */
static gl_status attention_check(const gl_array *q, const gl_array *k, const gl_array *v, double scale) {
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ], s3[GL_SHAPE_BUFSZ];
  int nd = q->ndim;
  bool ok = nd >= 2 && k->ndim == nd && v->ndim == nd && q->shape[nd - 1] == k->shape[nd - 1] &&
            k->shape[nd - 2] == v->shape[nd - 2];
  for (int i = 0; ok && i < nd - 2; i++) ok = q->shape[i] == k->shape[i] && q->shape[i] == v->shape[i];
  if (!ok)
    return gl_fail(GL_EINVAL, "query %s, key %s and value %s must be (..., L, E), (..., S, E), (..., S, Ev) with the "
                   "same leading axes", gl_shape_str(q->ndim, q->shape, s1), gl_shape_str(k->ndim, k->shape, s2),
                   gl_shape_str(v->ndim, v->shape, s3));
  if (!attention_half(q->dtype) && need_float("query", q) != GL_OK) {
    char list[96];
    return gl_fail(GL_EINVAL, "query must be float16, bfloat16, %s, got %s",
                   gl_supported_dtypes(gl_array_device(q), GL_OP_FUSED, 0, list, sizeof list), gl_dtypes[q->dtype].name);
  }
  GL_TRY(need_same("key", "query", q, k, false));
  GL_TRY(need_same("value", "query", q, v, false));
  if (!isfinite(scale)) return gl_fail(GL_EINVAL, "scale must be finite, got %g", scale);
  return GL_OK;
}

/* The output's shape: the query's (..., L, E) with the value's last axis Ev. */
static void attention_out_shape(const gl_array *q, const gl_array *v, int64_t *os) {
  memcpy(os, q->shape, (size_t)q->ndim * sizeof os[0]);
  os[q->ndim - 1] = v->shape[q->ndim - 1];
}

/* Contiguous copies of n operands in dtype dt (t[i] holds a copy where one was made). */
static gl_status attention_operands(int n, const gl_array *const *src, gl_dtype dt, gl_array *t, const gl_array **c) {
  gl_status st = GL_OK;
  for (int i = 0; i < n && st == GL_OK; i++) st = gl_op_as_contig(src[i], dt, &t[i], &c[i]);
  return st;
}

static void attention_release(int n, gl_array *t) {
  for (int i = 0; i < n; i++) gl_array_release(&t[i]);
}

/* The backend's forward into out (q's dtype) and lse; a half dtype the backend refuses
** (GL_ENOTSUP) runs in float32 and is rounded into out. */
static gl_status attention_forward(const gl_backend *be, gl_array *out, gl_array *lse, const gl_array *q,
                                   const gl_array *k, const gl_array *v, double scale, bool causal) {
  const gl_array *src[3] = { q, k, v };
  gl_array t[3] = { { 0 } };
  const gl_array *c[3] = { NULL };
  gl_status st = attention_operands(3, src, (gl_dtype)q->dtype, t, c);
  if (st == GL_OK) st = be->attention(out, lse, c[0], c[1], c[2], scale, causal);
  attention_release(3, t);
  if (st != GL_ENOTSUP || !attention_half(q->dtype)) return st;
  gl_array out32 = { 0 };
  st = attention_operands(3, src, GL_FLOAT32, t, c);
  if (st == GL_OK) st = gl_array_alloc(&out32, GL_FLOAT32, out->ndim, out->shape, gl_array_device(q));
  if (st == GL_OK) st = be->attention(&out32, lse, c[0], c[1], c[2], scale, causal);
  if (st == GL_OK) st = gl_op_assign(out, &out32);
  gl_array_release(&out32);
  attention_release(3, t);
  return st;
}

gl_status gl_op_attention(gl_array *out, gl_array *lse, const gl_array *q, const gl_array *k, const gl_array *v,
                          double scale, bool causal) {
  GL_TRY(attention_check(q, k, v, scale));
  int nd = q->ndim;
  const gl_backend *be;
  GL_TRY(gl_backend_for(gl_array_device(q), &be));
  GL_TRY(need_entry("attention", q, (const void *)be->attention));
  gl_dtype dt = (gl_dtype)q->dtype;
  gl_device dev = gl_array_device(q);
  int64_t os[GL_MAXDIMS];
  attention_out_shape(q, v, os);
  gl_status st = gl_array_alloc(out, dt, nd, os, dev);
  if (st != GL_OK) return st;
  st = gl_array_alloc(lse, attention_lse_dtype(dt), nd - 1, q->shape, dev);
  if (st == GL_OK && out->size > 0) {
    st = attention_forward(be, out, lse, q, k, v, scale, causal);
    if (st != GL_OK) gl_array_release(lse);
  } else if (st == GL_OK && lse->size > 0) {
    st = gl_op_fill(lse, gl_scalar_float(-INFINITY));   /* no value columns: the rows' lse still */
    if (st != GL_OK) gl_array_release(lse);
  }
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* The backward reads what the forward made: g and out (..., L, Ev), lse (..., L) (float32
** for a half dtype); the gradients are allocated like q, k and v. Half dtypes run in
** float32 (no backend has a half backward: cuDNN's is not done). */
gl_status gl_op_attention_bwd(gl_array *gq, gl_array *gk, gl_array *gv, const gl_array *g, const gl_array *q,
                              const gl_array *k, const gl_array *v, const gl_array *out, const gl_array *lse,
                              double scale, bool causal) {
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  GL_TRY(attention_check(q, k, v, scale));
  int nd = q->ndim;
  int64_t os[GL_MAXDIMS];
  attention_out_shape(q, v, os);
  const gl_array *like_out[2] = { g, out };
  static const char *const like_out_name[2] = { "the gradient", "out" };
  for (int i = 0; i < 2; i++) {
    const gl_array *a = like_out[i];
    if (a->ndim != nd || memcmp(a->shape, os, (size_t)nd * sizeof os[0]) != 0)
      return gl_fail(GL_EINVAL, "%s must have the output's shape %s, got %s", like_out_name[i], gl_shape_str(nd, os, s1),
                     gl_shape_str(a->ndim, a->shape, s2));
    GL_TRY(need_same(like_out_name[i], "query", q, a, false));
  }
  if (lse->ndim != nd - 1 || memcmp(lse->shape, q->shape, (size_t)(nd - 1) * sizeof os[0]) != 0)
    return gl_fail(GL_EINVAL, "lse must have shape %s (the query's less its last axis), got %s",
                   gl_shape_str(nd - 1, q->shape, s1), gl_shape_str(lse->ndim, lse->shape, s2));
  gl_dtype dt = (gl_dtype)q->dtype, ct = attention_lse_dtype(dt);    /* ct: the dtype it computes in */
  GL_TRY(need_device("lse", "query", q, lse));
  if (lse->dtype != ct)
    return gl_fail(GL_EINVAL, "lse is %s, expected %s (the forward's, for a %s query)", gl_dtypes[lse->dtype].name,
                   gl_dtypes[ct].name, gl_dtypes[dt].name);
  const gl_backend *be;
  GL_TRY(gl_backend_for(gl_array_device(q), &be));
  GL_TRY(need_entry("attention_backward", q, (const void *)be->attention_bwd));
  gl_device dev = gl_array_device(q);
  gl_array t[6] = { { 0 } }, w[3] = { { 0 } };
  const gl_array *c[6] = { NULL };
  const gl_array *src[6] = { g, q, k, v, out, lse };
  gl_status st = attention_operands(6, src, ct, t, c);
  gl_array *res[3] = { gq, gk, gv };
  int made = 0;
  for (int i = 0; i < 3 && st == GL_OK; i++) {
    st = gl_array_alloc(res[i], dt, nd, src[i + 1]->shape, dev);
    made += st == GL_OK;
  }
  /* no query row, no key or no value column: nothing flows (E = 0 still has gv = P^T g) */
  bool flows = lse->size > 0 && k->shape[nd - 2] > 0 && v->shape[nd - 1] > 0;
  gl_array *r[3] = { gq, gk, gv };                  /* where the backend writes: float32 temporaries for half */
  for (int i = 0; i < 3 && st == GL_OK && flows && ct != dt; i++) {
    st = gl_array_alloc(&w[i], ct, nd, src[i + 1]->shape, dev);
    r[i] = &w[i];
  }
  if (st == GL_OK && flows) st = be->attention_bwd(r[0], r[1], r[2], c[0], c[1], c[2], c[3], c[4], c[5], scale, causal);
  for (int i = 0; i < 3 && st == GL_OK && flows && ct != dt; i++) st = gl_op_assign(res[i], r[i]);
  for (int i = 0; i < 3 && st == GL_OK && !flows; i++)
    if (res[i]->size > 0) st = gl_op_fill(res[i], gl_scalar_int(0));
  if (st != GL_OK)
    for (int i = 0; i < made; i++) gl_array_release(res[i]);
  attention_release(3, w);
  attention_release(6, t);
  return st;
}
