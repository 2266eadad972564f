/*
** reduce.c — reductions and scans: which axes, keepdims, NumPy's result dtypes, the
** checks that must fail before any kernel runs (an axis out of range or repeated, the
** maximum of nothing), and the few compositions of backend calls: std = sqrt(var),
** argmax's 1-based positions, matrix norms, and the complex reductions that are real ones
** of the parts (below, "complex arrays").
*/
#include <math.h>
#include <string.h>
#include "ops.h"

static bool is_arg(gl_redop op) { return op == GL_R_ARGMAX || op == GL_R_ARGMIN; }

/* The dtype a sum or product of dtype t accumulates in by default: NumPy's, the widest of
** its kind for bool and the integers (unsigned to uint64, the rest to int64), else t. */
static gl_dtype sum_dtype(gl_dtype t) {
  if (gl_dtypes[t].kind == GL_KIND_UINT) return GL_UINT64;
  if (gl_dtype_is_int(t) || t == GL_BOOL) return GL_INT64;
  return t;
}

/* NumPy's result dtype; 'want' (>= 0) is the dtype option where the op takes one. A
** complex array's var, std and norm are real (its parts' dtype), its mean complex. */
static gl_status result_dtype(gl_redop op, const char *name, gl_dtype in, int want, gl_dtype *out) {
  bool intlike = !gl_dtype_is_float(in) && !gl_dtype_is_complex(in);
  switch (op) {
    case GL_R_SUM: case GL_R_PROD:
      if (want == GL_BOOL) return gl_fail(GL_EINVAL, "%s cannot accumulate in bool (use any/all)", name);
      *out = want >= 0 ? (gl_dtype)want : sum_dtype(in);
      return GL_OK;
    case GL_R_MEAN: case GL_R_VAR:
      if (want >= 0 && !gl_dtype_is_float((gl_dtype)want) && !gl_dtype_is_complex((gl_dtype)want))
        return gl_fail(GL_EINVAL, "%s needs a float or complex dtype, got %s", name, gl_dtypes[want].name);
      *out = want >= 0 ? (gl_dtype)want : intlike ? GL_FLOAT64 : in;
      if (op == GL_R_VAR) *out = gl_real_for(*out);
      return GL_OK;
    case GL_R_NORM:
      *out = intlike ? GL_FLOAT64 : gl_real_for(in);
      return GL_OK;
    case GL_R_LOGSUMEXP:
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

/* The array a scan along 'axis' walks: x itself, or (axis < 0: over the flattened array)
** its 1-D view (a copy in *tmp when its strides allow none), *axis then 0. */
static gl_status flat_or_self(const gl_array *x, int *axis, gl_array *flat, gl_array *tmp, const gl_array **src) {
  *src = x;
  if (*axis >= 0) return GL_OK;
  GL_TRY(flat_view(x, flat, tmp));
  *src = flat;
  *axis = 0;
  return GL_OK;
}

static bool has_identity(gl_redop op, double param) {
  if (op == GL_R_MAX || op == GL_R_MIN || is_arg(op)) return false;
  if (op == GL_R_NORM && isinf(param)) return false;
  return true;
}

/* ---- complex parts ---------------------------------------------------------------------- */

/* Part p (0: real, 1: imaginary) of complex x as a real view of x's shape. */
static void part_view(const gl_array *x, int p, gl_array *v) {
  *v = *x;
  gl_view_part(v, p);                 /* cannot fail on a complex array */
}

/* x = x^r in place for a complex x and r >= 1, by squaring from the top bit (62 steps at
** most), as NumPy's power of a complex number by an integer does. */
static gl_status complex_power(const gl_array *x, int64_t r) {
  gl_array base = { 0 };
  GL_TRY(gl_op_copy(&base, x, (gl_dtype)x->dtype, gl_array_device(x)));
  gl_operand self = { x, gl_scalar_int(0) }, by = { &base, gl_scalar_int(0) };
  int top = 63;
  while (top > 0 && !((r >> top) & 1)) top--;
  gl_status st = GL_OK;
  for (int b = top - 1; b >= 0 && st == GL_OK; b--) {
    st = gl_op_binary_(x, GL_B_mul, self);
    if (st == GL_OK && ((r >> b) & 1)) st = gl_op_binary_(x, GL_B_mul, by);
  }
  gl_array_release(&base);
  return st;
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
  if (!gl_dtype_is_complex((gl_dtype)out->dtype))
    return repeat_apply(out, GL_B_mul, repeat_scalar((gl_dtype)out->dtype, repeats, false));
  gl_array re, im;                              /* a complex number times a count: each part */
  part_view(out, 0, &re);
  part_view(out, 1, &im);
  gl_scalar by = repeat_scalar((gl_dtype)re.dtype, repeats, false);
  gl_status st = repeat_apply(&re, GL_B_mul, by);
  return st == GL_OK ? repeat_apply(&im, GL_B_mul, by) : st;
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
      if (gl_dtype_is_complex(t)) return complex_power(out, repeats);
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

/* ---- complex arrays ----------------------------------------------------------------------- */

/* A complex array is reduced natively by the backends only where its parts cannot be
** reduced apart: prod, max, min, argmax, argmin (NumPy's order: by the real parts, then
** the imaginary ones, a NaN in either part winning as a real NaN does) and cumprod. Sums,
** means, the 2-norm and any are real reductions of the parts: x seen as real (x.shape +
** (2,), torch's view_as_real) with the parts' axis kept (sum, mean) or reduced too (norm,
** any), so complex64 sums as float32 does on each device; the variance (real) is the sum of
** the parts' variances. all and the other norms reduce a map of x (nonzero, |x|) made once
** per distinct element. */

/* Real view of complex x with the parts' axis last (x's ndim: an axis below GL_MAXDIMS). */
static gl_status parts_view(const gl_array *x, gl_array *rv) {
  *rv = *x;
  return gl_view_as_real(rv);
}

/* The reduced axes as a list (all of x's when naxes < 0), with the parts' axis (x->ndim)
** added when 'parts'. */
static int axes_list(const gl_array *x, const int *axes, int naxes, bool parts, int *out) {
  int n = 0;
  if (naxes < 0) for (int d = 0; d < x->ndim; d++) out[n++] = d;
  else for (int i = 0; i < naxes; i++) out[n++] = axes[i];
  if (parts) out[n++] = x->ndim;
  return n;
}

/* out without its last axis (extent 1, kept by keepdims when the parts' axis was reduced). */
static gl_status drop_last_axis(gl_array *out) {
  gl_status st = gl_view_reshape(out, out->ndim - 1, out->shape);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* An elementwise map of x into a new array of x's shape; 'arg' its parameter. */
typedef gl_status (*elem_map)(gl_array *out, const gl_array *x, int arg);

static gl_status map_cast(gl_array *out, const gl_array *x, int dt) {
  return gl_op_copy(out, x, (gl_dtype)dt, gl_array_device(x));
}

static gl_status map_abs(gl_array *out, const gl_array *x, int unused) {
  (void)unused;
  return gl_op_unary(out, GL_U_abs, x);       /* |z|: real, in the parts' dtype */
}

/* f(x) for a reduction over the axes red marks, made once per element x holds (a reduced
** axis of stride 0, an expand, repeats its elements): *tmp holds them, *view is tmp seen
** with x's shape again (those axes of stride 0), so the reduction still counts the repeats
** and the map costs what x's storage costs. */
static gl_status map_distinct(const gl_array *x, const bool *red, elem_map f, int arg, gl_array *tmp,
                              gl_array *view) {
  gl_array d = *x;
  drop_repeats(&d, red);
  GL_TRY(f(tmp, &d, arg));
  *view = *tmp;
  for (int k = 0; k < x->ndim; k++)
    if (view->shape[k] != x->shape[k]) { view->shape[k] = x->shape[k]; view->strides[k] = 0; }
  view->size = x->size;
  return GL_OK;
}

/* op over complex x (want: -1 or a complex dtype), the parts' way or the backend's. */
static gl_status reduce_complex(gl_array *out, gl_redop op, const char *name, const gl_array *x, const int *axes,
                                int naxes, bool keepdims, int want, double param) {
  int list[GL_MAXDIMS + 1], wreal = want >= 0 ? (int)gl_real_for((gl_dtype)want) : -1, nred;
  bool red[GL_MAXDIMS];
  gl_array rv;
  GL_TRY(mark_axes(x, axes, naxes, red, &nred));   /* x's axes, before the parts' one is added */
  switch (op) {
    case GL_R_SUM: case GL_R_MEAN: {
      GL_TRY(parts_view(x, &rv));
      GL_TRY(reduce_raw(out, op, name, &rv, list, axes_list(x, axes, naxes, false, list), keepdims, wreal, 0));
      gl_status st = gl_view_as_complex(out);     /* contiguous, its last axis the parts */
      if (st != GL_OK) gl_array_release(out);
      return st;
    }
    case GL_R_VAR: {                            /* var(re) + var(im), each a pass of its own */
      gl_array re, im, vim = { 0 };
      part_view(x, 0, &re);
      part_view(x, 1, &im);
      GL_TRY(reduce_raw(out, GL_R_VAR, name, &re, axes, naxes, keepdims, wreal, param));
      gl_status st = reduce_raw(&vim, GL_R_VAR, name, &im, axes, naxes, keepdims, wreal, param);
      gl_operand add = { &vim, gl_scalar_int(0) };
      if (st == GL_OK && out->size > 0) st = gl_op_binary_(out, GL_B_add, add);
      gl_array_release(&vim);
      if (st != GL_OK) gl_array_release(out);
      return st;
    }
    case GL_R_NORM:                             /* the 2-norm (the other orders take |x|) */
    case GL_R_ANY:
      GL_TRY(parts_view(x, &rv));
      GL_TRY(reduce_raw(out, op, name, &rv, list, axes_list(x, axes, naxes, true, list), keepdims, -1, param));
      return keepdims ? drop_last_axis(out) : GL_OK;
    case GL_R_ALL: {
      gl_array tmp = { 0 }, nz;
      GL_TRY(map_distinct(x, red, map_cast, GL_BOOL, &tmp, &nz));
      gl_status st = reduce_raw(out, GL_R_ALL, name, &nz, axes, naxes, keepdims, -1, 0);
      gl_array_release(&tmp);
      return st;
    }
    default:                                    /* the backend's own (or its refusal) */
      return reduce_raw(out, op, name, x, axes, naxes, keepdims, want, param);
  }
}

/* The reduction with NumPy's dtype option: a complex array reduced as a real dtype loses
** its imaginary parts first (NumPy's unsafe cast, as astype), a real one reduced as complex
** gains zero ones; then complex arrays take reduce_complex, the rest reduce_raw. */
static gl_status reduce_any(gl_array *out, gl_redop op, const char *name, const gl_array *x, const int *axes,
                            int naxes, bool keepdims, int want, double param) {
  gl_dtype dt = (gl_dtype)x->dtype, ot;
  GL_TRY(result_dtype(op, name, dt, want, &ot));       /* refuse a bad dtype before any copy */
  bool red[GL_MAXDIMS];
  int nred;
  GL_TRY(mark_axes(x, axes, naxes, red, &nred));
  if (want >= 0 && gl_dtype_is_complex((gl_dtype)want) != gl_dtype_is_complex(dt)) {
    gl_array tmp = { 0 }, cast;
    GL_TRY(map_distinct(x, red, map_cast, want, &tmp, &cast));
    gl_status st = reduce_any(out, op, name, &cast, axes, naxes, keepdims, want, param);
    gl_array_release(&tmp);
    return st;
  }
  if (gl_dtype_is_complex(dt)) return reduce_complex(out, op, name, x, axes, naxes, keepdims, want, param);
  return reduce_raw(out, op, name, x, axes, naxes, keepdims, want, param);
}

gl_status gl_op_reduce(gl_array *out, gl_redop op, const gl_array *x, const int *axes, int naxes,
                       bool keepdims, int dtype, double param) {
  if ((unsigned)op >= GL_NREDOP) return gl_fail(GL_EINVAL, "unknown reduction %d", (int)op);
  GL_TRY(reduce_any(out, op, gl_redop_name[op], x, axes, naxes, keepdims, dtype, param));
  if (!is_arg(op) || out->size == 0) return GL_OK;
  gl_operand one = { NULL, gl_scalar_int(1) };
  gl_status st = gl_op_binary_(out, GL_B_add, one);      /* 1-based positions */
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_std(gl_array *out, const gl_array *x, const int *axes, int naxes, bool keepdims,
                    int dtype, double ddof) {
  GL_TRY(reduce_any(out, GL_R_VAR, "std", x, axes, naxes, keepdims, dtype, ddof));
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

/* |x| of complex x (made once per distinct element), for the norms other than the 2-norm
** and the Frobenius norm, which reduce the parts. */
static gl_status complex_abs(const gl_array *x, const int *axes, int naxes, gl_array *tmp, gl_array *mag) {
  bool red[GL_MAXDIMS];
  int nred;
  GL_TRY(mark_axes(x, axes, naxes, red, &nred));
  return map_distinct(x, red, map_abs, 0, tmp, mag);
}

gl_status gl_op_norm(gl_array *out, const gl_array *x, const int *axes, int naxes, bool keepdims,
                     double ord) {
  bool cx = gl_dtype_is_complex((gl_dtype)x->dtype);
  if (isnan(ord) && cx) return reduce_complex(out, GL_R_NORM, "norm", x, axes, naxes, keepdims, -1, 2.0);
  if (isnan(ord)) return reduce_raw(out, GL_R_NORM, "norm", x, axes, naxes, keepdims, -1, 2.0);
  bool red[GL_MAXDIMS];
  int nred;
  GL_TRY(mark_axes(x, axes, naxes, red, &nred));
  if ((nred == 1 || (naxes < 0 && x->ndim <= 1)) && ord == GL_NORM_NUC)
    return gl_fail(GL_EINVAL, "the nuclear norm is a matrix norm: it needs two axes");
  bool vector = nred == 1 || (naxes < 0 && x->ndim <= 1);
  if (!vector && nred != 2)
    return gl_fail(GL_EINVAL, "ord needs one axis (a vector norm) or two (a matrix norm), got %d", nred);
  int r = naxes < 0 ? 0 : axes[0], c = naxes < 0 ? 1 : axes[1];
  if (cx && vector && ord == 2)
    return reduce_complex(out, GL_R_NORM, "norm", x, axes, naxes, keepdims, -1, 2.0);
  if (cx && (vector || !(fabs(ord) == 2 || ord == GL_NORM_NUC))) {
    gl_array tmp = { 0 }, mag;                 /* the norms of |x| (the 2-norms: its SVD) */
    GL_TRY(complex_abs(x, axes, naxes, &tmp, &mag));
    gl_status st = vector ? reduce_raw(out, GL_R_NORM, "norm", &mag, axes, naxes, keepdims, -1, ord)
                          : matrix_norm(out, &mag, r, c, keepdims, ord);
    gl_array_release(&tmp);
    return st;
  }
  if (vector) return reduce_raw(out, GL_R_NORM, "norm", x, axes, naxes, keepdims, -1, ord);
  return matrix_norm(out, x, r, c, keepdims, ord);
}

gl_status gl_op_scan(gl_array *out, gl_redop op, const gl_array *x, int axis, int dtype) {
  if (op != GL_R_SUM && op != GL_R_PROD) return gl_fail(GL_EINVAL, "a scan is a sum or a prod, not op %d", (int)op);
  const char *name = op == GL_R_SUM ? "cumsum" : "cumprod";
  if (axis >= x->ndim) return gl_fail(GL_EINVAL, "axis %d is out of range for %d-d array", axis + 1, x->ndim);
  gl_dtype ot = GL_FLOAT32, dt = (gl_dtype)x->dtype;
  GL_TRY(result_dtype(op, name, dt, dtype, &ot));
  if (dtype >= 0 && gl_dtype_is_complex((gl_dtype)dtype) != gl_dtype_is_complex(dt)) {
    gl_array cast = { 0 };                     /* as reduce_any: NumPy's cast first */
    GL_TRY(gl_op_copy(&cast, x, (gl_dtype)dtype, gl_array_device(x)));
    gl_status st = gl_op_scan(out, op, &cast, axis, dtype);
    gl_array_release(&cast);
    return st;
  }
  const gl_backend *be;
  const gl_array *src = x;
  gl_array flat, tmp = { 0 };
  if (gl_dtype_is_complex(dt) && op == GL_R_SUM) {   /* a cumsum of the parts */
    gl_array rv;
    GL_TRY(flat_or_self(x, &axis, &flat, &tmp, &src));
    gl_status st = parts_view(src, &rv);
    if (st == GL_OK) st = gl_op_scan(out, GL_R_SUM, &rv, axis, dtype >= 0 ? (int)gl_real_for((gl_dtype)dtype) : -1);
    if (st == GL_OK && (st = gl_view_as_complex(out)) != GL_OK) gl_array_release(out);
    gl_array_release(&tmp);
    return st;
  }
  GL_TRY(reduce_plan(op, name, x, dtype, &ot, &be));
  GL_TRY(flat_or_self(x, &axis, &flat, &tmp, &src));
  gl_status st = gl_array_alloc(out, ot, src->ndim, src->shape, gl_array_device(x));
  if (st == GL_OK && out->size > 0) {
    st = be->scan(op, out, src, axis);
    if (st != GL_OK) gl_array_release(out);
  }
  gl_array_release(&tmp);
  return st;
}
