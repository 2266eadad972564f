/*
** linalg_lapack.c — gpu.linalg's factorizations with numpy.linalg's rules: matrices in
** the last two axes, any leading axes a batch; float32, float64, complex64 and complex128
** computed as they are, float16/bfloat16 computed in float32 and given back in their dtype,
** integers and bool promoted to float64 (NumPy's rule). Results that are real by nature
** (singular values, Hermitian eigenvalues, log|det|, residuals) are of the part type of a
** complex input (float64 for complex128), eig's are complex for every input. Each op checks
** shapes, makes a contiguous operand of the compute dtype (so views and strided inputs
** work), allocates the outputs on the input's device and calls the backend's linalg entry
** (backend.h, gl_la_op), whose per matrix failures come back as NumPy's LinAlgError
** messages naming the 1-based batch element: "matrix is singular (batch 3)".
*/
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops.h"

/* An operand made ready for the backend: src contiguous of dtype ct (maybe tmp). */
typedef struct la_operand {
  gl_array tmp;
  const gl_array *src;
} la_operand;

/* The compute dtype for x's dtype, and the dtype results are given in. */
static void la_dtypes(gl_dtype dt, gl_dtype *ct, gl_dtype *rt) {
  switch (dt) {
    case GL_FLOAT32: case GL_FLOAT64: case GL_COMPLEX64: case GL_COMPLEX128: *ct = *rt = dt; break;
    case GL_FLOAT16: case GL_BFLOAT16: *ct = GL_FLOAT32; *rt = dt; break;
    default: *ct = *rt = GL_FLOAT64; break;     /* integers and bool, as NumPy */
  }
}

/* The backend of x's device when it has op in dtype ct, else "not supported on <device>"
** (the binding names the function). */
static gl_status la_backend(const gl_array *x, gl_la_op op, gl_dtype ct, const gl_backend **be) {
  GL_TRY(gl_backend_for(gl_array_device(x), be));
  if ((*be)->linalg == NULL || !(*be)->supports(GL_OP_LINALG, (int)op, ct)) {
    char dn[16];
    return gl_fail(GL_ENOTSUP, "%s is not supported on %s (compute on the cpu: x:cpu())", gl_dtypes[ct].name,
                   gl_device_name(gl_array_device(x), dn));
  }
  return GL_OK;
}

/* Checks that x holds matrices (square ones when asked), of extents LAPACK's 32-bit
** integers index. */
static gl_status la_check_matrix(const gl_array *x, bool square) {
  if (x->ndim < 2)
    return gl_fail(GL_EINVAL, "%d-dimensional array given; the array must be at least two-dimensional", x->ndim);
  int64_t m = x->shape[x->ndim - 2], n = x->shape[x->ndim - 1];
  if (square && m != n) {
    char s[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "the last 2 dimensions of the array must be square, got %s",
                   gl_shape_str(x->ndim, x->shape, s));
  }
  if (m > INT_MAX / 8 || n > INT_MAX / 8 || m * n > INT_MAX / 8)
    return gl_fail(GL_ETOOBIG, "array is too big for LAPACK (matrices of %lld x %lld)", (long long)m, (long long)n);
  return GL_OK;
}

/* op->src = x as a contiguous array of dtype ct. */
static gl_status la_operand_of(const gl_array *x, gl_dtype ct, la_operand *op) {
  memset(&op->tmp, 0, sizeof op->tmp);
  return gl_op_as_contig(x, ct, &op->tmp, &op->src);
}

/* The dtype an output computed in dtype dt is given in, when the call's answer dtype is rt:
** integer (lstsq's rank) and complex outputs as they are, the others in rt's part type
** (a half input's float32 results back in its dtype; a complex input's real results stay
** real). */
static gl_dtype la_answer(gl_dtype dt, gl_dtype rt) {
  return gl_dtype_is_int(dt) || gl_dtype_is_complex(dt) ? dt : gl_real_for(rt);
}

/* Replaces *out by its copy in dtype rt when they differ. */
static gl_status la_give(gl_array *out, gl_dtype rt) {
  if (out->storage == NULL || out->dtype == rt) return GL_OK;
  gl_array c = { 0 };
  gl_status st = gl_op_copy(&c, out, rt, gl_array_device(out));
  gl_array_release(out);
  if (st == GL_OK) *out = c;
  return st;
}

/* A LinAlgError for batch element 'bad' (0-based) of x. */
static gl_status la_bad(const gl_array *x, int64_t bad, const char *what) {
  if (x->ndim > 2) return gl_fail(GL_EINVAL, "%s (batch %lld)", what, (long long)bad + 1);
  return gl_fail(GL_EINVAL, "%s", what);
}

/* Shape = x's batch axes followed by the 'ntail' extents given. */
static int la_shape(const gl_array *x, int64_t *shape, int ntail, int64_t t0, int64_t t1) {
  int nb = x->ndim - 2;
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nb);
  if (ntail > 0) shape[nb] = t0;
  if (ntail > 1) shape[nb + 1] = t1;
  return nb + ntail;
}

/* Releases the n outputs (after a failure). */
static void la_release(gl_array **outs, int n) {
  for (int i = 0; i < n; i++) if (outs[i]) gl_array_release(outs[i]);
}

/* What an output holds: elements of the compute dtype, its part type (real by nature:
** singular values, Hermitian eigenvalues) or its complex type (eig's). */
typedef enum la_kind { LA_SAME, LA_REAL, LA_COMPLEX, LA_PIVOTS } la_kind;

static gl_dtype la_kind_dtype(la_kind k, gl_dtype ct) {
  return k == LA_REAL ? gl_real_for(ct) : k == LA_COMPLEX ? gl_complex_for(ct) : k == LA_PIVOTS ? GL_INT32 : ct;
}

/* Allocates outs[i] (NULL: skipped) of dtype dts[i] with shapes[i], calls the backend,
** turns a failed matrix into 'what', gives the outputs back as la_answer says for rt, and
** releases everything on failure. */
typedef struct la_call {
  gl_la_op op;
  gl_la_args args;
  gl_array *outs[4];
  int nd[4];
  int64_t shapes[4][GL_MAXDIMS];
  gl_dtype dts[4];
  la_kind kinds[4];        /* la_unary: what each output holds (dts follow from it) */
  const char *what;        /* the failure's message */
  const gl_array *x;       /* the input the batch index refers to */
} la_call;

static gl_status la_run(const gl_backend *be, la_call *c, gl_dtype rt) {
  gl_device dev = gl_array_device(c->x);
  gl_status st = GL_OK;
  for (int i = 0; i < 4 && st == GL_OK; i++) {
    if (c->outs[i] == NULL) continue;
    st = gl_array_alloc(c->outs[i], c->dts[i], c->nd[i], c->shapes[i], dev);
    c->args.out[i] = st == GL_OK ? c->outs[i] : NULL;
    if (st != GL_OK) c->outs[i] = NULL;
  }
  /* results with no element (an empty batch, or matrices of no rows or columns whose
  ** results are empty too): nothing to compute, however long the batch */
  bool empty = true;
  for (int i = 0; i < 4; i++) if (c->outs[i] && c->outs[i]->size > 0) empty = false;
  int64_t bad = -1;
  if (st == GL_OK && !empty) st = be->linalg(c->op, &c->args, &bad);
  if (st == GL_OK && bad >= 0) st = la_bad(c->x, bad, c->what);
  for (int i = 0; i < 4 && st == GL_OK; i++)
    if (c->outs[i]) st = la_give(c->outs[i], la_answer(c->dts[i], rt));
  if (st != GL_OK) la_release(c->outs, 4);
  return st;
}

/* ---- solve --------------------------------------------------------------------------- */

/* NumPy 2's solve: b is a vector (..., n) only when it is 1-D, else (..., n, k); the batch
** axes of a and b broadcast. */
gl_status gl_op_la_solve(gl_array *out, const gl_array *a, const gl_array *b) {
  GL_TRY(gl_same_device(a, b));
  GL_TRY(la_check_matrix(a, true));
  int64_t n = a->shape[a->ndim - 1];
  bool vec = b->ndim == 1;
  if (b->ndim == 0) return gl_fail(GL_EINVAL, "b must be at least one-dimensional, got a 0-d array");
  gl_array vb = *b;
  if (vec) GL_TRY(gl_view_unsqueeze(&vb, 1));
  if (vb.shape[vb.ndim - 2] != n) {
    char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "shapes %s and %s do not match: b needs %lld rows",
                   gl_shape_str(a->ndim, a->shape, s1), gl_shape_str(b->ndim, b->shape, s2), (long long)n);
  }
  int nb;
  int64_t full[GL_MAXDIMS];
  if (gl_broadcast_shapes(a->ndim - 2, a->shape, vb.ndim - 2, vb.shape, &nb, full) != GL_OK) {
    char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "shapes %s and %s do not match: their batch dimensions cannot be broadcast",
                   gl_shape_str(a->ndim, a->shape, s1), gl_shape_str(b->ndim, b->shape, s2));
  }
  int64_t k = vb.shape[vb.ndim - 1];
  gl_dtype ct, rt;
  la_dtypes(gl_promote((gl_dtype)a->dtype, (gl_dtype)b->dtype), &ct, &rt);
  const gl_backend *be;
  GL_TRY(la_backend(a, GL_LA_SOLVE, ct, &be));
  gl_array va = *a;
  int64_t ash[GL_MAXDIMS], bsh[GL_MAXDIMS];
  memcpy(ash, full, sizeof ash);
  memcpy(bsh, full, sizeof bsh);
  ash[nb] = n; ash[nb + 1] = n;
  bsh[nb] = n; bsh[nb + 1] = k;
  GL_TRY(gl_view_expand(&va, nb + 2, ash));
  GL_TRY(gl_view_expand(&vb, nb + 2, bsh));
  la_operand oa, ob;
  GL_TRY(la_operand_of(&va, ct, &oa));
  gl_status st = la_operand_of(&vb, ct, &ob);
  if (st != GL_OK) { gl_array_release(&oa.tmp); return st; }
  la_call c = { .op = GL_LA_SOLVE, .args = { .in = { oa.src, ob.src } }, .outs = { out },
                .nd = { nb + 2 }, .dts = { ct }, .what = "matrix is singular", .x = oa.src };
  memcpy(c.shapes[0], bsh, sizeof bsh);
  st = la_run(be, &c, rt);
  if (st == GL_OK && vec) {
    st = gl_view_squeeze(out, out->ndim - 1);
    if (st != GL_OK) gl_array_release(out);
  }
  gl_array_release(&oa.tmp);
  gl_array_release(&ob.tmp);
  return st;
}

/* ---- one square (or any) matrix operand in, outputs by shape --------------------------- */

/* Runs the one-matrix call c on c->x (checked, its outputs' shapes set): x made contiguous
** in its compute dtype, in which every output is made; the results are given back in the
** dtype NumPy answers in (give_back), else left in the compute dtype. *rt (may be NULL):
** that answer dtype. */
static gl_status la_unary(la_call *c, bool give_back, gl_dtype *rt) {
  gl_dtype ct, answer;
  la_dtypes((gl_dtype)c->x->dtype, &ct, &answer);
  if (rt) *rt = answer;
  const gl_backend *be;
  GL_TRY(la_backend(c->x, c->op, ct, &be));
  la_operand oa;
  GL_TRY(la_operand_of(c->x, ct, &oa));
  c->args.in[0] = oa.src;
  for (int i = 0; i < 4; i++) c->dts[i] = la_kind_dtype(c->kinds[i], ct);
  gl_status st = la_run(be, c, give_back ? answer : ct);
  gl_array_release(&oa.tmp);
  return st;
}

gl_status gl_op_la_inv(gl_array *out, const gl_array *a) {
  GL_TRY(la_check_matrix(a, true));
  int64_t n = a->shape[a->ndim - 1];
  la_call c = { .op = GL_LA_INV, .outs = { out }, .what = "matrix is singular", .x = a };
  c.nd[0] = la_shape(a, c.shapes[0], 2, n, n);
  return la_unary(&c, true, NULL);
}

/* slogdet in the compute dtype; *rt gets the dtype the results are to be given in. */
static gl_status slogdet_ct(gl_array *sign, gl_array *logabs, const gl_array *a, gl_dtype *rt) {
  GL_TRY(la_check_matrix(a, true));
  la_call c = { .op = GL_LA_SLOGDET, .outs = { sign, logabs }, .kinds = { LA_SAME, LA_REAL },
                .what = "slogdet failed", .x = a };
  c.nd[0] = c.nd[1] = la_shape(a, c.shapes[0], 0, 0, 0);
  memcpy(c.shapes[1], c.shapes[0], sizeof c.shapes[0]);
  return la_unary(&c, false, rt);
}

gl_status gl_op_la_slogdet(gl_array *sign, gl_array *logabs, const gl_array *a) {
  gl_dtype rt;
  GL_TRY(slogdet_ct(sign, logabs, a, &rt));
  gl_status st = la_give(sign, la_answer((gl_dtype)sign->dtype, rt));
  if (st == GL_OK) st = la_give(logabs, la_answer((gl_dtype)logabs->dtype, rt));
  if (st != GL_OK) { gl_array_release(sign); gl_array_release(logabs); }
  return st;
}

/* NumPy's det: sign * exp(logabsdet) of slogdet, computed before a half dtype rounds. A
** complex sign times the real exp is the product of its parts (sign viewed as real, (...,
** 2), times exp (..., 1)), viewed as complex again. */
gl_status gl_op_la_det(gl_array *out, const gl_array *a) {
  gl_array sign = { 0 }, logabs = { 0 }, e = { 0 };
  gl_dtype rt;
  GL_TRY(slogdet_ct(&sign, &logabs, a, &rt));
  bool cplx = gl_dtype_is_complex((gl_dtype)sign.dtype);
  gl_status st = gl_op_unary(&e, GL_U_exp, &logabs);
  gl_array vs = sign, ve = e;
  if (st == GL_OK && cplx) st = gl_view_as_real(&vs);
  if (st == GL_OK && cplx) st = gl_view_unsqueeze(&ve, ve.ndim);
  if (st == GL_OK) {
    gl_operand os = { &vs, gl_scalar_int(0) }, oe = { &ve, gl_scalar_int(0) };
    st = gl_op_binary(out, GL_B_mul, os, oe);
    if (st == GL_OK && cplx) {
      st = gl_view_as_complex(out);
      if (st != GL_OK) gl_array_release(out);
    }
  }
  if (st == GL_OK) st = la_give(out, la_answer((gl_dtype)out->dtype, rt));
  gl_array_release(&sign);
  gl_array_release(&logabs);
  gl_array_release(&e);
  return st;
}

gl_status gl_op_la_cholesky(gl_array *out, const gl_array *a, bool upper) {
  GL_TRY(la_check_matrix(a, true));
  int64_t n = a->shape[a->ndim - 1];
  la_call c = { .op = GL_LA_CHOLESKY, .args = { .flags = upper ? GL_LA_UPPER : 0 }, .outs = { out },
                .what = "matrix is not positive definite", .x = a };
  c.nd[0] = la_shape(a, c.shapes[0], 2, n, n);
  return la_unary(&c, true, NULL);
}

gl_status gl_op_la_qr(gl_array *q, gl_array *r, const gl_array *a, bool complete) {
  GL_TRY(la_check_matrix(a, false));
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], kq = complete ? m : (m < n ? m : n);
  la_call c = { .op = GL_LA_QR, .outs = { q, r }, .what = "QR failed", .x = a };
  c.nd[0] = la_shape(a, c.shapes[0], 2, m, kq);
  c.nd[1] = la_shape(a, c.shapes[1], 2, kq, n);
  return la_unary(&c, true, NULL);
}

gl_status gl_op_la_svd(gl_array *u, gl_array *s, gl_array *vh, const gl_array *a, bool full) {
  GL_TRY(la_check_matrix(a, false));
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n;
  la_call c = { .op = GL_LA_SVD, .args = { .flags = full ? GL_LA_FULL : 0 }, .outs = { u, s, vh },
                .kinds = { LA_SAME, LA_REAL, LA_SAME }, .what = "SVD did not converge", .x = a };
  c.nd[0] = la_shape(a, c.shapes[0], 2, m, full ? m : k);
  c.nd[1] = la_shape(a, c.shapes[1], 1, k, 0);
  c.nd[2] = la_shape(a, c.shapes[2], 2, full ? n : k, n);
  return la_unary(&c, true, NULL);
}

gl_status gl_op_la_eigh(gl_array *w, gl_array *v, const gl_array *a, bool upper) {
  GL_TRY(la_check_matrix(a, true));
  int64_t n = a->shape[a->ndim - 1];
  la_call c = { .op = GL_LA_EIGH, .args = { .flags = upper ? GL_LA_UPPER : 0 }, .outs = { w, v },
                .kinds = { LA_REAL, LA_SAME }, .what = "eigenvalues did not converge", .x = a };
  c.nd[0] = la_shape(a, c.shapes[0], 1, n, 0);
  c.nd[1] = la_shape(a, c.shapes[1], 2, n, n);
  return la_unary(&c, true, NULL);
}

/* NumPy's eig / eigvals (v NULL), with complex results for every input (torch.linalg.eig's
** rule; NumPy gives a real input's results real when every eigenvalue is). A device whose
** backend has no general eigensolver for the dtype computes on the host: the input is
** copied to the cpu and the results back. */
gl_status gl_op_la_eig(gl_array *w, gl_array *v, const gl_array *a) {
  GL_TRY(la_check_matrix(a, true));
  int64_t n = a->shape[a->ndim - 1];
  gl_device dev = gl_array_device(a), host = { GL_CPU, 0 };
  gl_dtype ct, rt;
  la_dtypes((gl_dtype)a->dtype, &ct, &rt);
  const gl_backend *be;
  GL_TRY(gl_backend_for(dev, &be));
  if (dev.type != GL_CPU && (be->linalg == NULL || !be->supports(GL_OP_LINALG, GL_LA_EIG, ct))) {
    gl_array ha = { 0 }, hw = { 0 }, hv = { 0 };
    gl_status st = gl_op_copy(&ha, a, (gl_dtype)a->dtype, host);
    if (st == GL_OK) st = gl_op_la_eig(&hw, v ? &hv : NULL, &ha);
    if (st == GL_OK) st = gl_op_copy(w, &hw, (gl_dtype)hw.dtype, dev);
    if (st == GL_OK && v) {
      st = gl_op_copy(v, &hv, (gl_dtype)hv.dtype, dev);
      if (st != GL_OK) gl_array_release(w);
    }
    gl_array_release(&ha);
    gl_array_release(&hw);
    gl_array_release(&hv);
    return st;
  }
  la_call c = { .op = GL_LA_EIG, .outs = { w, v }, .kinds = { LA_COMPLEX, LA_COMPLEX },
                .what = "eigenvalues did not converge", .x = a };
  c.nd[0] = la_shape(a, c.shapes[0], 1, n, 0);
  c.nd[1] = la_shape(a, c.shapes[1], 2, n, n);
  return la_unary(&c, true, NULL);
}

gl_status gl_op_la_lu(gl_array *lu, gl_array *pivots, const gl_array *a) {
  GL_TRY(la_check_matrix(a, false));
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
  la_call c = { .op = GL_LA_LU, .outs = { lu, pivots }, .kinds = { LA_SAME, LA_PIVOTS }, .what = "LU failed",
                .x = a };
  c.nd[0] = la_shape(a, c.shapes[0], 2, m, n);
  c.nd[1] = la_shape(a, c.shapes[1], 1, m < n ? m : n, 0);
  return la_unary(&c, true, NULL);
}

/* Every pivot (int32, contiguous, on any device) within 1..n, read on the host: getrs reads
** rows by them, so one out of range would read outside the matrix. */
static gl_status la_check_pivots(const gl_array *piv, int64_t n) {
  if (piv->size == 0) return GL_OK;
  int32_t *h = malloc(sizeof(int32_t) * (size_t)piv->size);
  if (h == NULL) return gl_fail(GL_ENOMEM, "out of memory for the pivots (%lld)", (long long)piv->size);
  gl_status st = gl_op_to_host(h, piv);
  for (int64_t i = 0; st == GL_OK && i < piv->size; i++)
    if (h[i] < 1 || h[i] > n)
      st = gl_fail(GL_EINVAL, "pivots must be between 1 and %lld, got %d", (long long)n, (int)h[i]);
  free(h);
  return st;
}

/* torch.linalg.lu_solve's left forms: lu (..., n, n) and pivots (..., n) (any integer dtype,
** made int32; each within 1..n, checked) as gl_op_la_lu gives them, b (..., n, k); the
** batch axes of lu and b broadcast. adjoint: solves A^H x = b. */
gl_status gl_op_la_lu_solve(gl_array *out, const gl_array *lu, const gl_array *pivots, const gl_array *b,
                            bool adjoint) {
  GL_TRY(gl_same_device(lu, b));
  GL_TRY(gl_same_device(lu, pivots));
  GL_TRY(la_check_matrix(lu, true));
  int64_t n = lu->shape[lu->ndim - 1];
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  if (!gl_dtype_is_int((gl_dtype)pivots->dtype) || pivots->ndim != lu->ndim - 1 ||
      memcmp(pivots->shape, lu->shape, sizeof(int64_t) * (size_t)pivots->ndim) != 0)
    return gl_fail(GL_EINVAL, "pivots %s of %s do not match LU %s: an integer (..., n) expected",
                   gl_shape_str(pivots->ndim, pivots->shape, s1), gl_dtypes[pivots->dtype].name,
                   gl_shape_str(lu->ndim, lu->shape, s2));
  if (b->ndim < 2 || b->shape[b->ndim - 2] != n)
    return gl_fail(GL_EINVAL, "shapes %s and %s do not match: b needs %lld rows", gl_shape_str(lu->ndim, lu->shape, s1),
                   gl_shape_str(b->ndim, b->shape, s2), (long long)n);
  int nb;
  int64_t full[GL_MAXDIMS];
  if (gl_broadcast_shapes(lu->ndim - 2, lu->shape, b->ndim - 2, b->shape, &nb, full) != GL_OK)
    return gl_fail(GL_EINVAL, "shapes %s and %s do not match: their batch dimensions cannot be broadcast",
                   gl_shape_str(lu->ndim, lu->shape, s1), gl_shape_str(b->ndim, b->shape, s2));
  int64_t k = b->shape[b->ndim - 1];
  gl_dtype ct, rt;
  la_dtypes(gl_promote((gl_dtype)lu->dtype, (gl_dtype)b->dtype), &ct, &rt);
  const gl_backend *be;
  GL_TRY(la_backend(lu, GL_LA_LU_SOLVE, ct, &be));
  gl_array va = *lu, vb = *b, vp = *pivots;
  int64_t ash[GL_MAXDIMS], bsh[GL_MAXDIMS], psh[GL_MAXDIMS];
  memcpy(ash, full, sizeof ash);
  memcpy(bsh, full, sizeof bsh);
  memcpy(psh, full, sizeof psh);
  ash[nb] = n; ash[nb + 1] = n;
  bsh[nb] = n; bsh[nb + 1] = k;
  psh[nb] = n;
  GL_TRY(gl_view_expand(&va, nb + 2, ash));
  GL_TRY(gl_view_expand(&vb, nb + 2, bsh));
  GL_TRY(gl_view_expand(&vp, nb + 1, psh));
  la_operand oa, ob, op;
  GL_TRY(la_operand_of(&va, ct, &oa));
  gl_status st = la_operand_of(&vb, ct, &ob);
  if (st == GL_OK) {
    st = la_operand_of(&vp, GL_INT32, &op);
    if (st != GL_OK) gl_array_release(&ob.tmp);
  }
  if (st == GL_OK) st = la_check_pivots(op.src, n);
  if (st != GL_OK) {
    gl_array_release(&oa.tmp);
    gl_array_release(&ob.tmp);
    gl_array_release(&op.tmp);
    return st;
  }
  la_call c = { .op = GL_LA_LU_SOLVE,
                .args = { .in = { oa.src, ob.src, op.src }, .flags = adjoint ? GL_LA_ADJOINT : 0 },
                .outs = { out }, .nd = { nb + 2 }, .dts = { ct }, .what = "lu_solve failed", .x = oa.src };
  memcpy(c.shapes[0], bsh, sizeof bsh);
  st = la_run(be, &c, rt);
  gl_array_release(&oa.tmp);
  gl_array_release(&ob.tmp);
  gl_array_release(&op.tmp);
  return st;
}

/* NumPy's lstsq: a (m, n), b (m) or (m, k); rcond < 0 (NumPy's None): machine epsilon
** times max(m, n). residuals: (k) (or (1) for a 1-D b) when rank == n < m, else empty. */
gl_status gl_op_la_lstsq(gl_array *x, gl_array *res, gl_array *rank, gl_array *s, const gl_array *a,
                         const gl_array *b, double rcond) {
  GL_TRY(gl_same_device(a, b));
  if (a->ndim != 2) return gl_fail(GL_EINVAL, "a must be two-dimensional, got %d dimensions", a->ndim);
  GL_TRY(la_check_matrix(a, false));
  if (b->ndim != 1 && b->ndim != 2)
    return gl_fail(GL_EINVAL, "b must be one- or two-dimensional, got %d dimensions", b->ndim);
  int64_t m = a->shape[0], n = a->shape[1];
  if (b->shape[0] != m) {
    char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "shapes %s and %s do not match: b needs %lld rows",
                   gl_shape_str(a->ndim, a->shape, s1), gl_shape_str(b->ndim, b->shape, s2), (long long)m);
  }
  bool vec = b->ndim == 1;
  gl_array vb = *b;
  if (vec) GL_TRY(gl_view_unsqueeze(&vb, 1));
  int64_t k = vb.shape[1];
  gl_dtype ct, rt;
  la_dtypes(gl_promote((gl_dtype)a->dtype, (gl_dtype)b->dtype), &ct, &rt);
  const gl_backend *be;
  GL_TRY(la_backend(a, GL_LA_LSTSQ, ct, &be));
  if (rcond < 0) rcond = (gl_real_for(ct) == GL_FLOAT32 ? (double)FLT_EPSILON : DBL_EPSILON) * (double)(m > n ? m : n);
  la_operand oa, ob;
  GL_TRY(la_operand_of(a, ct, &oa));
  gl_status st = la_operand_of(&vb, ct, &ob);
  if (st != GL_OK) { gl_array_release(&oa.tmp); return st; }
  gl_array resk = { 0 };
  la_call c = { .op = GL_LA_LSTSQ, .args = { .in = { oa.src, ob.src }, .rcond = rcond },
                .outs = { x, rank, s, &resk }, .nd = { 2, 0, 1, 1 },
                .dts = { ct, GL_INT64, gl_real_for(ct), gl_real_for(ct) }, .what = "SVD did not converge in linear least squares", .x = a };
  c.shapes[0][0] = n; c.shapes[0][1] = k;
  c.shapes[2][0] = m < n ? m : n;
  c.shapes[3][0] = k;
  st = la_run(be, &c, rt);
  if (st == GL_OK) {
    int64_t r = 0;
    st = gl_op_to_host(&r, rank);
    int64_t rs[1] = { r == n && m > n ? k : 0 };
    if (st == GL_OK && rs[0] == k) { *res = resk; resk.storage = NULL; }
    else if (st == GL_OK) st = gl_array_alloc(res, gl_real_for((gl_dtype)x->dtype), 1, rs, gl_array_device(a));
    if (st == GL_OK && vec) st = gl_view_squeeze(x, 1);
    if (st != GL_OK) { gl_array *o[4] = { x, rank, s, res }; la_release(o, 4); }
  }
  gl_array_release(&resk);
  gl_array_release(&oa.tmp);
  gl_array_release(&ob.tmp);
  return st;
}
