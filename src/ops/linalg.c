/*
** linalg.c — matmul, dot and outer with NumPy's rules: shapes (1-D operands promoted
** and the added axis removed again, batch axes broadcast), dtype promotion, and the
** operands viewed so the backend sees dst (..., M, N), a (..., M, K), b (..., K, N) of
** one dtype with the batch axes already broadcast (0 strides, no copies).
*/
#include <string.h>
#include "ops.h"

/* ---- matmul ---------------------------------------------------------------------------- */

/* Casts x to dt when it differs (into *tmp) and views it expanded to ndim/shape. */
static gl_status operand_as(const gl_array *x, gl_dtype dt, int ndim, const int64_t *shape,
                            gl_array *tmp, gl_array *view) {
  const gl_array *src = x;
  if (x->dtype != dt) {
    GL_TRY(gl_op_copy(tmp, x, dt, gl_array_device(x)));
    src = tmp;
  }
  *view = *src;
  return gl_view_expand(view, ndim, shape);
}

gl_status gl_op_matmul(gl_array *out, const gl_array *a, const gl_array *b) {
  GL_TRY(gl_same_device(a, b));
  if (a->ndim == 0 || b->ndim == 0)
    return gl_fail(GL_EINVAL, "matmul needs arrays of at least 1 dimension, the %s is 0-d "
                   "(multiply by a scalar with *)", a->ndim == 0 ? "first operand" : "second operand");
  /* 1-D operands: a (K) as (1, K), b (K) as (K, 1) */
  gl_array va = *a, vb = *b;
  if (a->ndim == 1) GL_TRY(gl_view_unsqueeze(&va, 0));
  if (b->ndim == 1) GL_TRY(gl_view_unsqueeze(&vb, 1));
  int64_t M = va.shape[va.ndim - 2], K = va.shape[va.ndim - 1];
  int64_t K2 = vb.shape[vb.ndim - 2], N = vb.shape[vb.ndim - 1];
  if (K != K2) {
    char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "shapes %s and %s do not align: %lld (dim %d) != %lld (dim %d)",
                   gl_shape_str(a->ndim, a->shape, s1), gl_shape_str(b->ndim, b->shape, s2),
                   (long long)K, a->ndim, (long long)K2, b->ndim == 1 ? 1 : b->ndim - 1);
  }
  /* batch axes broadcast; full = batch + (M, N) */
  int nbatch;
  int64_t full[GL_MAXDIMS];
  if (gl_broadcast_shapes(va.ndim - 2, va.shape, vb.ndim - 2, vb.shape, &nbatch, full) != GL_OK) {
    char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "shapes %s and %s do not align: batch dimensions cannot be broadcast together",
                   gl_shape_str(a->ndim, a->shape, s1), gl_shape_str(b->ndim, b->shape, s2));
  }
  int nd = nbatch + 2;
  full[nbatch] = M;
  full[nbatch + 1] = N;
  /* the result drops the axes the 1-D operands gained */
  int ond = 0;
  int64_t oshape[GL_MAXDIMS];
  for (int d = 0; d < nd; d++) {
    if ((d == nd - 2 && a->ndim == 1) || (d == nd - 1 && b->ndim == 1)) continue;
    oshape[ond++] = full[d];
  }
  gl_dtype dt = gl_promote((gl_dtype)a->dtype, (gl_dtype)b->dtype);
  const gl_backend *be;
  GL_TRY(gl_backend_supporting(gl_array_device(a), GL_OP_MATMUL, 0, dt, "matmul", &be));
  GL_TRY(gl_array_alloc(out, dt, ond, oshape, gl_array_device(a)));
  if (out->size == 0) return GL_OK;
  if (K == 0) {                                    /* sums of nothing */
    gl_status st = gl_op_fill(out, gl_scalar_int(0));
    if (st != GL_OK) gl_array_release(out);
    return st;
  }

  gl_array ov = *out, ta = { 0 }, tb = { 0 }, ea, eb;
  int64_t ashape[GL_MAXDIMS], bshape[GL_MAXDIMS];
  memcpy(ashape, full, sizeof ashape);
  memcpy(bshape, full, sizeof bshape);
  ashape[nd - 1] = K;
  bshape[nd - 2] = K;
  gl_status st = gl_view_reshape(&ov, nd, full);   /* contiguous: always a view */
  if (st == GL_OK) st = operand_as(&va, dt, nd, ashape, &ta, &ea);
  if (st == GL_OK) st = operand_as(&vb, dt, nd, bshape, &tb, &eb);
  int64_t repeats = 1;
  if (st == GL_OK && K > 1 && ea.strides[nd - 1] == 0 && eb.strides[nd - 2] == 0) {
    /* both operands are broadcast along K (expand): the K products of each sum are equal,
    ** so one of them times K, where the loop over gpu.ones(1):expand(2^40) would run for
    ** an hour */
    repeats = K;
    ea.shape[nd - 1] = eb.shape[nd - 2] = 1;
    ea.size /= K;
    eb.size /= K;
  }
  if (st == GL_OK) st = be->matmul(&ov, &ea, &eb);
  if (st == GL_OK && repeats > 1) st = gl_op_times_repeats(&ov, repeats);
  gl_array_release(&ta);
  gl_array_release(&tb);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* ---- dot --------------------------------------------------------------------------------- */

/* NumPy's dot. 0-d operands multiply; when b has at most 2 dimensions (or a is 1-D)
** dot is matmul. Otherwise it sums over a's last axis and b's second-to-last with no
** broadcasting: the result has shape a.shape[:-1] + b.shape[:-2] + b.shape[-1:], done
** here as one (P, K) @ (K, Q) matmul with b's axis -2 moved to the front. */
gl_status gl_op_dot(gl_array *out, const gl_array *a, const gl_array *b) {
  GL_TRY(gl_same_device(a, b));
  if (a->ndim == 0 || b->ndim == 0) {
    gl_operand oa = { a, gl_scalar_int(0) }, ob = { b, gl_scalar_int(0) };
    return gl_op_binary(out, GL_B_mul, oa, ob);
  }
  if (b->ndim <= 2 || a->ndim == 1) return gl_op_matmul(out, a, b);
  int64_t K = a->shape[a->ndim - 1], Kb = b->shape[b->ndim - 2];
  if (K != Kb) {
    char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "shapes %s and %s do not align: %lld (dim %d) != %lld (dim %d)",
                   gl_shape_str(a->ndim, a->shape, s1), gl_shape_str(b->ndim, b->shape, s2),
                   (long long)K, a->ndim, (long long)Kb, b->ndim - 1);
  }
  int ond = a->ndim - 1 + b->ndim - 1;
  if (ond > GL_MAXDIMS)
    return gl_fail(GL_EINVAL, "the result would have %d dimensions (at most %d)", ond, GL_MAXDIMS);
  int64_t oshape[GL_MAXDIMS], P = 1, Q = 1;
  int n = 0;
  for (int d = 0; d < a->ndim - 1; d++) { oshape[n++] = a->shape[d]; P *= a->shape[d]; }
  for (int d = 0; d < b->ndim; d++) {
    if (d == b->ndim - 2) continue;
    oshape[n++] = b->shape[d];
    Q *= b->shape[d];
  }
  /* a as (P, K); b as (K, Q): its axis -2 first, the rest in order */
  gl_array a2 = { 0 }, b2 = { 0 }, va = *a, vb = *b, r = { 0 };
  int perm[GL_MAXDIMS];
  perm[0] = b->ndim - 2;
  for (int d = 0, j = 1; d < b->ndim; d++) if (d != b->ndim - 2) perm[j++] = d;
  gl_status st = gl_view_permute(&vb, perm);
  int64_t s2a[2] = { P, K }, s2b[2] = { K, Q };
  if (st == GL_OK && gl_view_reshape(&va, 2, s2a) != GL_OK) {
    st = gl_op_copy(&a2, a, (gl_dtype)a->dtype, gl_array_device(a));
    if (st == GL_OK) { va = a2; st = gl_view_reshape(&va, 2, s2a); }
  }
  if (st == GL_OK && gl_view_reshape(&vb, 2, s2b) != GL_OK) {
    st = gl_op_copy(&b2, &vb, (gl_dtype)b->dtype, gl_array_device(b));
    if (st == GL_OK) { vb = b2; st = gl_view_reshape(&vb, 2, s2b); }
  }
  if (st == GL_OK) st = gl_op_matmul(&r, &va, &vb);
  if (st == GL_OK) {
    *out = r;                                  /* (P, Q) is contiguous: reshape is a view */
    st = gl_view_reshape(out, ond, oshape);
    if (st != GL_OK) gl_array_release(out);
  }
  gl_array_release(&a2);
  gl_array_release(&b2);
  return st;
}

/* ---- outer ------------------------------------------------------------------------------- */

/* NumPy's outer: both operands flattened, out[i, j] = a[i] * b[j], as one broadcast
** multiply of a viewed (n, 1) and b viewed (1, m). */
gl_status gl_op_outer(gl_array *out, const gl_array *a, const gl_array *b) {
  GL_TRY(gl_same_device(a, b));
  gl_array t[2] = { { 0 }, { 0 } }, v[2];
  const gl_array *x[2] = { a, b };
  gl_status st = GL_OK;
  for (int i = 0; i < 2 && st == GL_OK; i++) {
    int64_t shape[2] = { i == 0 ? x[i]->size : 1, i == 0 ? 1 : x[i]->size };
    v[i] = *x[i];
    if (gl_view_reshape(&v[i], 2, shape) != GL_OK) {
      st = gl_op_copy(&t[i], x[i], (gl_dtype)x[i]->dtype, gl_array_device(x[i]));
      if (st == GL_OK) { v[i] = t[i]; st = gl_view_reshape(&v[i], 2, shape); }
    }
  }
  if (st == GL_OK) {
    gl_operand oa = { &v[0], gl_scalar_int(0) }, ob = { &v[1], gl_scalar_int(0) };
    st = gl_op_binary(out, GL_B_mul, oa, ob);
  }
  gl_array_release(&t[0]);
  gl_array_release(&t[1]);
  return st;
}
