/*
** reduce.c — reductions and scans: which axes, keepdims, NumPy's result dtypes, the
** checks that must fail before any kernel runs (an axis out of range or repeated, the
** maximum of nothing), and the few compositions of backend calls: std = sqrt(var),
** argmax's 1-based positions, matrix norms.
*/
#include <math.h>
#include <string.h>
#include "ops.h"

static bool is_arg(gl_redop op) { return op == GL_R_ARGMAX || op == GL_R_ARGMIN; }

/* NumPy's result dtype; 'want' (>= 0) is the dtype option where the op takes one. */
static gl_status result_dtype(gl_redop op, const char *name, gl_dtype in, int want, gl_dtype *out) {
  bool intlike = !gl_dtype_is_float(in);
  switch (op) {
    case GL_R_SUM: case GL_R_PROD:
      if (want == GL_BOOL) return gl_fail(GL_EINVAL, "%s cannot accumulate in bool (use any/all)", name);
      *out = want >= 0 ? (gl_dtype)want : intlike ? GL_INT64 : in;
      return GL_OK;
    case GL_R_MEAN: case GL_R_VAR:
      if (want >= 0 && !gl_dtype_is_float((gl_dtype)want))
        return gl_fail(GL_EINVAL, "%s needs a float dtype, got %s", name, gl_dtypes[want].name);
      *out = want >= 0 ? (gl_dtype)want : intlike ? GL_FLOAT64 : in;
      return GL_OK;
    case GL_R_NORM: case GL_R_LOGSUMEXP:
      *out = intlike ? GL_FLOAT64 : in;
      return GL_OK;
    case GL_R_MAX: case GL_R_MIN: *out = in; return GL_OK;
    case GL_R_ARGMAX: case GL_R_ARGMIN: *out = GL_INT64; return GL_OK;
    case GL_R_ALL: case GL_R_ANY: *out = GL_BOOL; return GL_OK;
    default: return gl_fail(GL_EINVAL, "unknown reduction %d", (int)op);
  }
}

/* The result dtype of op over x (result_dtype) and a backend of x's device that makes it. */
static gl_status reduce_plan(gl_redop op, const char *name, const gl_array *x, int want, gl_dtype *ot,
                             const gl_backend **be) {
  GL_TRY(result_dtype(op, name, (gl_dtype)x->dtype, want, ot));
  if (gl_dtype_is_complex((gl_dtype)x->dtype))      /* the loads a complex source needs */
    GL_TRY(gl_backend_supporting(gl_array_device(x), GL_OP_REDUCE, op, (gl_dtype)x->dtype, name, be));
  return gl_backend_supporting(gl_array_device(x), GL_OP_REDUCE, op, *ot, name, be);
}

/* Marks the reduced axes (all when naxes < 0); errors name the axis 1-based. */
static gl_status mark_axes(const gl_array *x, const int *axes, int naxes, bool *red, int *nred) {
  memset(red, 0, GL_MAXDIMS * sizeof *red);
  *nred = 0;
  if (naxes < 0) {
    for (int d = 0; d < x->ndim; d++) red[d] = true;
    *nred = x->ndim;
    return GL_OK;
  }
  for (int i = 0; i < naxes; i++) {
    int a = axes[i];
    if (a < 0 || a >= x->ndim)
      return gl_fail(GL_EINVAL, "axis %d is out of range for %d-d array", a + 1, x->ndim);
    if (red[a]) return gl_fail(GL_EINVAL, "repeated axis %d", a + 1);
    red[a] = true;
    (*nred)++;
  }
  return GL_OK;
}

/* A 1-D view of x (or, when the strides do not allow one, a contiguous copy in *tmp). */
static gl_status flat_view(const gl_array *x, gl_array *view, gl_array *tmp) {
  int64_t n = x->size;
  *view = *x;
  gl_status st = gl_view_reshape(view, 1, &n);
  if (st != GL_ENOTSUP) return st;
  GL_TRY(gl_op_copy(tmp, x, (gl_dtype)x->dtype, gl_array_device(x)));
  *view = *tmp;
  return gl_view_reshape(view, 1, &n);
}

static bool has_identity(gl_redop op, double param) {
  if (op == GL_R_MAX || op == GL_R_MIN || is_arg(op)) return false;
  if (op == GL_R_NORM && isinf(param)) return false;
  return true;
}

/* ---- repeated elements ------------------------------------------------------------------ */

/* A reduced axis of stride 0 (a broadcast view: expand) repeats the same elements, so the
** backend needs them only once: such axes are cut to extent 1 in *v, and the count of
** repeats is returned for repeat_law to put back. A reduction over gpu.ones(1):expand(2^62)
** then costs what its storage costs, where the loop would run for years. */
static int64_t drop_repeats(gl_array *v, const bool *red) {
  int64_t repeats = 1;
  for (int d = 0; d < v->ndim; d++) {
    if (!red[d] || v->strides[d] != 0 || v->shape[d] <= 1) continue;
    repeats *= v->shape[d];                   /* divides v->size, which fits */
    v->size /= v->shape[d];
    v->shape[d] = 1;
  }
  return repeats;
}

/* A scalar that acts on an element of dtype t as the count r does in a product (x * r)
** or a power (x ^ r). Integer arithmetic wraps modulo 2^b, so an r outside t's range is
** replaced by one inside with the same effect: r mod 2^b for a product; for a power,
** 2^(b-2) + r mod 2^(b-2), as odd x have x^(2^(b-2)) = 1 mod 2^b and even x give 0 once
** r >= b. */
static gl_scalar repeat_scalar(gl_dtype t, int64_t r, bool power) {
  int64_t lo, hi;
  if (!gl_dtype_is_int(t) || !gl_dtype_int_range(t, &lo, &hi) || r <= hi) {
    return gl_dtype_is_float(t) ? gl_scalar_float((double)r) : gl_scalar_int(r);
  }
  int bits = 8 * (int)gl_dtypes[t].size;      /* < 64: an int64 r always fits int64 */
  if (!power) {
    uint64_t m = (uint64_t)r & ((UINT64_C(1) << bits) - 1);
    return gl_scalar_int(m > (uint64_t)hi ? (int64_t)(m - (UINT64_C(1) << bits)) : (int64_t)m);
  }
  int64_t period = INT64_C(1) << (bits - 2);
  return gl_scalar_int(period + r % period);
}

/* out = out how by in place. float16 and bfloat16 go through float32, where a count of
** repeats (up to 2^62) neither overflows (float16 ends at 65504: 0 * inf would be NaN) nor
** loses its digits; bool is left alone (an OR of equal values is the value). */
static gl_status repeat_apply(const gl_array *out, gl_binop how, gl_scalar by) {
  gl_dtype t = (gl_dtype)out->dtype;
  gl_operand op = { NULL, by };
  if (t == GL_BOOL) return GL_OK;
  if (t != GL_FLOAT16 && t != GL_BFLOAT16) return gl_op_binary_(out, how, op);
  gl_array wide = { 0 };
  gl_status st = gl_op_copy(&wide, out, GL_FLOAT32, gl_array_device(out));
  if (st == GL_OK) st = gl_op_binary_(&wide, how, op);
  if (st == GL_OK) st = gl_op_assign(out, &wide);
  gl_array_release(&wide);
  return st;
}

/* x^r in place for a float x: a count past 2^24 (float32's digits; 2^53 for float64)
** rounds to an even float, which would drop the sign of a negative x, so the power is
** |x|^(r - r % 2), times x when r is odd. */
static gl_status float_power(const gl_array *out, int64_t r) {
  gl_array mag = { 0 };
  gl_status st = gl_op_unary(&mag, GL_U_abs, out);
  if (st == GL_OK) st = repeat_apply(&mag, GL_B_pow, gl_scalar_float((double)(r - (r & 1))));
  if (st == GL_OK && (r & 1)) {
    gl_operand by = { &mag, gl_scalar_int(0) };
    st = gl_op_binary_(out, GL_B_mul, by);
  } else if (st == GL_OK) {
    st = gl_op_assign(out, &mag);
  }
  gl_array_release(&mag);
  return st;
}

gl_status gl_op_times_repeats(const gl_array *out, int64_t repeats) {
  return repeat_apply(out, GL_B_mul, repeat_scalar((gl_dtype)out->dtype, repeats, false));
}

/* Puts the repeats dropped by drop_repeats back into out: a sum is repeats times the sum
** of the distinct part, a product its power, logsumexp adds log(repeats), a p-norm
** multiplies by repeats^(1/p) (the count of nonzeros, p = 0, by repeats). max, min, all,
** any, mean and the arg positions are the same over the repeats; var gets ddof / repeats
** instead (reduce_raw), which leaves its divisor's ratio to the sum of squares as it was. */
static gl_status repeat_law(const gl_array *out, gl_redop op, int64_t repeats, double param) {
  gl_dtype t = (gl_dtype)out->dtype;
  switch (op) {
    case GL_R_SUM: return gl_op_times_repeats(out, repeats);
    case GL_R_PROD:
      if (gl_dtype_is_float(t)) return float_power(out, repeats);
      return repeat_apply(out, GL_B_pow, repeat_scalar(t, repeats, true));
    case GL_R_LOGSUMEXP: return repeat_apply(out, GL_B_add, gl_scalar_float(log((double)repeats)));
    case GL_R_NORM:
      if (isinf(param)) return GL_OK;
      return repeat_apply(out, GL_B_mul, gl_scalar_float(param == 0 ? (double)repeats : pow((double)repeats, 1.0 / param)));
    default: return GL_OK;
  }
}

/* The reduction proper: out gets the result (reduced axes dropped unless keepdims);
** backend semantics (0-based argmax positions). */
static gl_status reduce_raw(gl_array *out, gl_redop op, const char *name, const gl_array *x,
                            const int *axes, int naxes, bool keepdims, int want, double param) {
  bool red[GL_MAXDIMS];
  int nred;
  GL_TRY(mark_axes(x, axes, naxes, red, &nred));
  gl_dtype ot = GL_FLOAT32;
  const gl_backend *be;
  GL_TRY(reduce_plan(op, name, x, want, &ot, &be));

  const gl_array *src = x;
  gl_array flat, tmp = { 0 };
  int nd = x->ndim;
  if (is_arg(op) && nred > 1) {
    if (naxes >= 0) return gl_fail(GL_EINVAL, "%s takes one axis, got %d", name, nred);
    GL_TRY(flat_view(x, &flat, &tmp));         /* no axis: a position in the flattened array */
    src = &flat;
  }
  bool all[GL_MAXDIMS];
  for (int d = 0; d < GL_MAXDIMS; d++) all[d] = true;
  const bool *reduced = src == x ? red : all;  /* of src's axes */
  gl_array distinct = *src;
  int64_t repeats = drop_repeats(&distinct, reduced);
  if (op == GL_R_VAR) param /= (double)repeats;
  src = &distinct;
  int64_t kshape[GL_MAXDIMS], oshape[GL_MAXDIMS], M = 1, K = 1;
  int ond = 0;
  for (int d = 0; d < src->ndim; d++) {
    bool r = reduced[d];
    kshape[d] = r ? 1 : src->shape[d];
    if (r) K *= src->shape[d];
    else M *= src->shape[d];
  }
  for (int d = 0; d < nd; d++) {
    if (!red[d]) oshape[ond++] = x->shape[d];
    else if (keepdims) oshape[ond++] = 1;
  }
  gl_status st = GL_OK;
  if (K == 0 && M > 0 && !has_identity(op, param))
    st = gl_fail(GL_EINVAL, "zero-size array to reduction '%s' which has no identity", name);
  if (st == GL_OK) st = gl_array_alloc(out, ot, ond, oshape, gl_array_device(x));
  if (st == GL_OK && M > 0) {
    gl_array dv = *out;                  /* the backend's view: src's ndim, 1 on reduced axes */
    dv.ndim = (uint8_t)src->ndim;
    memcpy(dv.shape, kshape, (size_t)src->ndim * sizeof *kshape);
    gl_contiguous_strides(dv.ndim, dv.shape, dv.strides);
    st = be->reduce(op, &dv, src, param);
    if (st == GL_OK && repeats > 1) st = repeat_law(out, op, repeats, param);
    if (st != GL_OK) gl_array_release(out);
  }
  gl_array_release(&tmp);
  return st;
}

gl_status gl_op_reduce(gl_array *out, gl_redop op, const gl_array *x, const int *axes, int naxes,
                       bool keepdims, int dtype, double param) {
  if ((unsigned)op >= GL_NREDOP) return gl_fail(GL_EINVAL, "unknown reduction %d", (int)op);
  GL_TRY(reduce_raw(out, op, gl_redop_name[op], x, axes, naxes, keepdims, dtype, param));
  if (!is_arg(op) || out->size == 0) return GL_OK;
  gl_operand one = { NULL, gl_scalar_int(1) };
  gl_status st = gl_op_binary_(out, GL_B_add, one);      /* 1-based positions */
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_std(gl_array *out, const gl_array *x, const int *axes, int naxes, bool keepdims,
                    int dtype, double ddof) {
  GL_TRY(reduce_raw(out, GL_R_VAR, "std", x, axes, naxes, keepdims, dtype, ddof));
  if (out->size == 0) return GL_OK;
  gl_status st = gl_op_unary_(out, GL_U_sqrt);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* NumPy's matrix norms that need no SVD: ord 1/-1 (max/min column sum of |x|) and
** inf/-inf (max/min row sum), over (row, col) axes r and c. */
/* The matrix 2-norm (largest singular value), -2 (smallest) and nuclear norm (their sum)
** over (row, col) axes r and c: SVD values of x with r and c moved last. */
static gl_status singular_norm(gl_array *out, const gl_array *x, int r, int c, bool keepdims, double ord) {
  int perm[GL_MAXDIMS], nd = 0;
  for (int d = 0; d < x->ndim; d++) if (d != r && d != c) perm[nd++] = d;
  perm[nd] = r;
  perm[nd + 1] = c;
  gl_array v = *x, s = { 0 };
  GL_TRY(gl_view_permute(&v, perm));
  if (v.shape[nd] == 0 || v.shape[nd + 1] == 0)
    return gl_fail(GL_EINVAL, "the matrix %s-norm of an empty matrix is undefined", ord == GL_NORM_NUC ? "nuclear" : ord > 0 ? "2" : "-2");
  GL_TRY(gl_op_la_svd(NULL, &s, NULL, &v, false));
  int last = nd;
  gl_redop op = ord == GL_NORM_NUC ? GL_R_SUM : ord > 0 ? GL_R_MAX : GL_R_MIN;
  gl_status st = gl_op_reduce(out, op, &s, &last, 1, false, -1, 0);
  gl_array_release(&s);
  if (st != GL_OK || !keepdims) return st;
  int64_t shape[GL_MAXDIMS];
  for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
  shape[r] = shape[c] = 1;
  st = gl_view_reshape(out, x->ndim, shape);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

static gl_status matrix_norm(gl_array *out, const gl_array *x, int r, int c, bool keepdims, double ord) {
  if (fabs(ord) == 2 || ord == GL_NORM_NUC) return singular_norm(out, x, r, c, keepdims, ord);
  if (fabs(ord) != 1 && !isinf(ord))
    return gl_fail(GL_EINVAL, "invalid norm order %g for matrices (1, -1, 2, -2, math.huge, -math.huge, 'fro', 'nuc')", ord);
  int sum_axis = isinf(ord) ? c : r, ext_axis = isinf(ord) ? r : c;
  gl_array sums = { 0 };
  GL_TRY(reduce_raw(&sums, GL_R_NORM, "norm", x, &sum_axis, 1, true, -1, 1.0));
  gl_status st = reduce_raw(out, ord > 0 ? GL_R_MAX : GL_R_MIN, "norm", &sums, &ext_axis, 1, true, -1, 0);
  gl_array_release(&sums);
  if (st != GL_OK || keepdims) return st;
  int64_t shape[GL_MAXDIMS];
  int nd = 0;
  for (int d = 0; d < x->ndim; d++) if (d != r && d != c) shape[nd++] = x->shape[d];
  st = gl_view_reshape(out, nd, shape);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_norm(gl_array *out, const gl_array *x, const int *axes, int naxes, bool keepdims,
                     double ord) {
  if (isnan(ord)) return reduce_raw(out, GL_R_NORM, "norm", x, axes, naxes, keepdims, -1, 2.0);
  bool red[GL_MAXDIMS];
  int nred;
  GL_TRY(mark_axes(x, axes, naxes, red, &nred));
  if ((nred == 1 || (naxes < 0 && x->ndim <= 1)) && ord == GL_NORM_NUC)
    return gl_fail(GL_EINVAL, "the nuclear norm is a matrix norm: it needs two axes");
  if (nred == 1 || (naxes < 0 && x->ndim <= 1))
    return reduce_raw(out, GL_R_NORM, "norm", x, axes, naxes, keepdims, -1, ord);
  if (nred != 2)
    return gl_fail(GL_EINVAL, "ord needs one axis (a vector norm) or two (a matrix norm), got %d", nred);
  int r = naxes < 0 ? 0 : axes[0], c = naxes < 0 ? 1 : axes[1];
  return matrix_norm(out, x, r, c, keepdims, ord);
}

gl_status gl_op_scan(gl_array *out, gl_redop op, const gl_array *x, int axis, int dtype) {
  if (op != GL_R_SUM && op != GL_R_PROD) return gl_fail(GL_EINVAL, "a scan is a sum or a prod, not op %d", (int)op);
  const char *name = op == GL_R_SUM ? "cumsum" : "cumprod";
  gl_dtype ot = GL_FLOAT32;
  const gl_backend *be;
  GL_TRY(reduce_plan(op, name, x, dtype, &ot, &be));
  const gl_array *src = x;
  gl_array flat, tmp = { 0 };
  if (axis < 0) {
    GL_TRY(flat_view(x, &flat, &tmp));
    src = &flat;
    axis = 0;
  } else if (axis >= x->ndim) {
    return gl_fail(GL_EINVAL, "axis %d is out of range for %d-d array", axis + 1, x->ndim);
  }
  gl_status st = gl_array_alloc(out, ot, src->ndim, src->shape, gl_array_device(x));
  if (st == GL_OK && out->size > 0) {
    st = be->scan(op, out, src, axis);
    if (st != GL_OK) gl_array_release(out);
  }
  gl_array_release(&tmp);
  return st;
}
