/*
** elementwise.c — unary and binary ops, where, in-place forms: dtype rules (NumPy 2,
** NEP 50 weak scalars), broadcasting, casting operands to the compute dtype, and the
** aliasing rules that make x:add_(x[...]) safe.
*/
#include <string.h>
#include "ops.h"

/* ---- dtype rules ------------------------------------------------------------------------ */

/* NumPy's "same_kind" casting, for results written into an existing array. */
static bool same_kind(gl_dtype from, gl_dtype to) {
  static const int order[] = { [GL_KIND_BOOL] = 0, [GL_KIND_UINT] = 1, [GL_KIND_INT] = 2, [GL_KIND_FLOAT] = 3,
                               [GL_KIND_COMPLEX] = 4 };
  gl_kind kf = gl_dtypes[from].kind, kt = gl_dtypes[to].kind;
  if (kf == GL_KIND_UINT && kt == GL_KIND_INT) return true;
  return order[kf] <= order[kt];
}

static gl_status operand_dtype(gl_opkind kind, bool div, gl_operand o, gl_dtype other, bool other_is_array,
                               gl_dtype *out) {
  if (o.arr) { *out = (gl_dtype)o.arr->dtype; return GL_OK; }
  gl_kind k = gl_dtypes[other].kind;
  if (other_is_array && o.s.isint && !o.s.isbool && (k == GL_KIND_UINT || k == GL_KIND_INT)) {
    /* NumPy 2 compares with any Python int exactly, and true division casts both
    ** operands to float64 first: neither overflows, so neither raises. */
    if (kind == GL_K_BC && !gl_scalar_fits(other, o.s)) { *out = GL_INT64; return GL_OK; }
    if (kind == GL_K_BD && div) { *out = GL_FLOAT64; return GL_OK; }
  }
  if (other_is_array) return (gl_status)gl_promote_scalar(other, o.s, out);
  *out = o.s.isbool ? GL_BOOL : o.s.isint ? GL_INT64 : GL_DEFAULT_DTYPE;
  return GL_OK;
}

/* The compute dtype (ct) and output dtype (ot) of a op b; may remap the op (bool
** arithmetic becomes logic, as in NumPy). */
static gl_status binary_types(gl_binop *op, gl_operand a, gl_operand b, gl_dtype *ct, gl_dtype *ot) {
  gl_dtype da, db;
  if (a.arr && b.arr) {
    da = (gl_dtype)a.arr->dtype;
    db = (gl_dtype)b.arr->dtype;
    *ct = gl_promote(da, db);
  } else if (a.arr) {
    GL_TRY(operand_dtype((gl_opkind)gl_binop_kind[*op], *op == GL_B_div, b, (gl_dtype)a.arr->dtype, true, &db));
    *ct = db;
  } else {
    GL_TRY(operand_dtype((gl_opkind)gl_binop_kind[*op], *op == GL_B_div, a, (gl_dtype)b.arr->dtype, true, &da));
    *ct = da;
  }
  const char *name = gl_binop_name[*op];
  gl_kind k = gl_dtypes[*ct].kind;
  switch ((gl_opkind)gl_binop_kind[*op]) {
    case GL_K_BA:
      if (k == GL_KIND_BOOL) {
        switch (*op) {
          case GL_B_add: case GL_B_maximum: case GL_B_fmax: *op = GL_B_logical_or; break;
          case GL_B_mul: case GL_B_minimum: case GL_B_fmin: *op = GL_B_logical_and; break;
          default:
            return gl_fail(GL_EINVAL, "%s is not supported for bool arrays (convert with astype first)", name);
        }
        *ot = GL_BOOL;
        return GL_OK;
      }
      *ot = *ct;
      return GL_OK;
    case GL_K_BD:
      /* true division of integers is in float64 (NumPy's rule); the other float math in
      ** the float type that holds the operands (int8 -> float16, as NumPy's loops) */
      if (k != GL_KIND_FLOAT && k != GL_KIND_COMPLEX) *ct = *op == GL_B_div ? GL_FLOAT64 : gl_float_for(*ct);
      /* the float kernels step in float: a half's neighbour would round back to itself */
      if (*op == GL_B_nextafter && (*ct == GL_FLOAT16 || *ct == GL_BFLOAT16)) {
        const gl_array *x = a.arr ? a.arr : b.arr;
        return gl_fail(GL_EINVAL, "nextafter is not supported for %s (it computes in %s; convert to float32 first)",
                       gl_dtypes[x->dtype].name, gl_dtypes[*ct].name);
      }
      *ot = *ct;
      return GL_OK;
    case GL_K_BC: case GL_K_BL:
      *ot = GL_BOOL;
      return GL_OK;
    case GL_K_BB:
      if (k == GL_KIND_FLOAT || k == GL_KIND_COMPLEX)
        return gl_fail(GL_EINVAL, "%s needs integer or bool arrays, got %s", name, gl_dtypes[*ct].name);
      *ot = *ct;
      return GL_OK;
    case GL_K_BS:
      if (k == GL_KIND_FLOAT || k == GL_KIND_COMPLEX || k == GL_KIND_BOOL)
        return gl_fail(GL_EINVAL, "%s needs integer arrays, got %s", name, gl_dtypes[*ct].name);
      *ot = *ct;
      return GL_OK;
    default:
      return gl_fail(GL_EINVAL, "%s is not a binary op", name);
  }
}

/* What a unary op computes in (ct) and returns (ot) for input dtype 'in'. A complex input
** computes in its own dtype; what it returns is the op's complex column's (abs and angle
** a real result). An op that takes no complex is refused by supports() ("not supported
** for complex64"). */
static gl_status unary_types(gl_unop *op, gl_dtype in, gl_dtype *ct, gl_dtype *ot) {
  const char *name = gl_unop_name[*op];
  gl_kind k = gl_dtypes[in].kind;
  if (k == GL_KIND_COMPLEX && gl_unop_kind[*op] != GL_K_UB) {
    *ct = *ot = in;
    if (gl_unop_cxout[*op] == GL_CXOUT_REAL) *ot = gl_real_for(in);
    if (gl_unop_cxout[*op] == GL_CXOUT_BOOL) *ot = GL_BOOL;
    return GL_OK;
  }
  switch ((gl_opkind)gl_unop_kind[*op]) {
    case GL_K_UF: *ct = *ot = gl_float_for(in); return GL_OK;
    case GL_K_US:
      if (*op == GL_U_neg && k == GL_KIND_BOOL)
        return gl_fail(GL_EINVAL, "negation of a bool array is not supported (use logical_not)");
      if (*op == GL_U_frac && k != GL_KIND_FLOAT)          /* PyTorch's frac takes floats only */
        return gl_fail(GL_EINVAL, "frac needs a float array, got %s", gl_dtypes[in].name);
      *ct = *ot = in;
      return GL_OK;
    case GL_K_UP: case GL_K_UL: *ct = in; *ot = GL_BOOL; return GL_OK;
    case GL_K_UB:
      if (k == GL_KIND_FLOAT || k == GL_KIND_COMPLEX)
        return gl_fail(GL_EINVAL, "%s needs integer or bool arrays, got %s", name, gl_dtypes[in].name);
      if (k == GL_KIND_BOOL) { *op = GL_U_logical_not; *ct = in; *ot = GL_BOOL; return GL_OK; }
      *ct = *ot = in;
      return GL_OK;
    default:
      return gl_fail(GL_EINVAL, "%s is not a unary op", name);
  }
}

/* ---- operands ---------------------------------------------------------------------------- */

/* Does 'a' cover exactly the same elements in the same order as 'dst'? Then a kernel may
** read it while writing dst. */
static bool same_layout(const gl_array *dst, const gl_array *a) {
  if (a->storage != dst->storage || a->offset != dst->offset || a->ndim != dst->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != dst->shape[i] || (a->shape[i] > 1 && a->strides[i] != dst->strides[i])) return false;
  return true;
}

/* Turns an operand into one the backend can take for output 'dst': cast to ct (into
** *tmp) when its dtype differs, copied when it overlaps dst without the same layout,
** then viewed broadcast to dst's shape (in *view). */
static gl_status prepare(gl_operand *o, gl_dtype ct, const gl_array *dst, gl_array *tmp, gl_array *view) {
  if (o->arr == NULL) return GL_OK;
  const gl_array *src = o->arr;
  if (src->dtype == ct && src->storage != dst->storage && src->ndim == dst->ndim &&
      memcmp(src->shape, dst->shape, (size_t)src->ndim * sizeof *src->shape) == 0)
    return GL_OK;                       /* already of the output's shape and dtype */
  bool alias = dst->storage != NULL && src->storage == dst->storage && !same_layout(dst, src);
  if (src->dtype != ct || alias) {
    GL_TRY(gl_op_copy(tmp, src, ct, gl_array_device(src)));
    src = tmp;
  }
  *view = *src;
  GL_TRY(gl_view_expand(view, dst->ndim, dst->shape));
  o->arr = view;
  return GL_OK;
}

/* be: the backend of dst's device, which has the kernel for (op, ct). 'inplace': dst is an
** existing array: refused first when it is read-only, and the write counted
** (gl_array_begin_write) once the operands are ready, before anything is written: a cast of
** an operand that fails (out of memory) leaves dst's version as it was. */
static gl_status run_binary(const gl_backend *be, gl_binop op, gl_dtype ct, const gl_array *dst, gl_operand a,
                            gl_operand b, bool inplace) {
  if (inplace) GL_TRY(gl_array_writable(dst, NULL));
  gl_array ta = { 0 }, tb = { 0 }, va, vb;
  gl_status st = prepare(&a, ct, dst, &ta, &va);
  if (st == GL_OK) st = prepare(&b, ct, dst, &tb, &vb);
  if (st == GL_OK && inplace) st = gl_array_begin_write(dst);
  if (st == GL_OK && dst->size > 0) st = be->binary(op, ct, dst, a, b);
  gl_array_release(&ta);
  gl_array_release(&tb);
  return st;
}

static gl_status result_shape(gl_operand a, gl_operand b, int *ndim, int64_t *shape) {
  if (a.arr && b.arr)
    return gl_broadcast_shapes(a.arr->ndim, a.arr->shape, b.arr->ndim, b.arr->shape, ndim, shape);
  const gl_array *x = a.arr ? a.arr : b.arr;
  *ndim = x->ndim;
  memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
  return GL_OK;
}

/* ---- entry points ---------------------------------------------------------------------- */

/* ---- flat plans ----------------------------------------------------------------------
**
** The common small call, x + y on two arrays of one shape and dtype, settled in a few
** tests: the general rules (promotion, broadcasting, the backend look-up) and the walk
** (prepare, the strided iterator) cost several times a 100-element kernel. A flat plan
** is exactly what the general one would be (same dtype, shape and kernel, the row kernel
** that the backend's small-row path runs), so the results are the same bits. */

/* x's backend when x is a small, C-contiguous array and the backend has a flat kernel for
** (family, op, ct); else NULL. */
static const gl_backend *flat_backend(const gl_array *x, gl_op family, int op, gl_dtype ct) {
  if (x->size > GL_FLAT_MAX || !gl_array_is_contiguous(x)) return NULL;
  const gl_backend *be = gl_backend_get(x->storage->device.type);
  if (be == NULL || (family == GL_OP_BINARY ? be->binary_flat == NULL : be->unary_flat == NULL)) return NULL;
  return be->supports(family, op, ct) ? be : NULL;
}

static bool binary_flat_plan(gl_plan *p, gl_binop op, const gl_array *a, const gl_array *b) {
  gl_dtype dt = (gl_dtype)a->dtype;
  if (b->dtype != dt || b->ndim != a->ndim || b->size != a->size || !gl_device_eq(a->storage->device, b->storage->device))
    return false;
  gl_kind k = gl_dtypes[dt].kind;
  gl_opkind kind = (gl_opkind)gl_binop_kind[op];
  /* the ops whose compute and result dtype are the operands' own (binary_types) */
  if (!((kind == GL_K_BA && k != GL_KIND_BOOL) || (kind == GL_K_BD && (k == GL_KIND_FLOAT || k == GL_KIND_COMPLEX))))
    return false;
  if (op == GL_B_nextafter) return false;             /* binary_types refuses the halves */
  for (int i = 0; i < a->ndim; i++)            /* (a loop: ndim is small, a libc call costs more) */
    if (a->shape[i] != b->shape[i]) return false;
  const gl_backend *be = gl_array_is_contiguous(b) ? flat_backend(a, GL_OP_BINARY, op, dt) : NULL;
  if (be == NULL) return false;
  p->dtype = p->ct = dt;
  p->device = a->storage->device;
  p->ndim = a->ndim;
  for (int i = 0; i < a->ndim; i++) p->shape[i] = a->shape[i];
  p->op = (int)op;
  p->be = be;
  p->like = a;
  return true;
}

gl_status gl_op_binary_plan(gl_plan *p, gl_binop op, gl_operand a, gl_operand b) {
  if (a.arr && b.arr && binary_flat_plan(p, op, a.arr, b.arr)) return GL_OK;
  p->like = NULL;
  if (a.arr && b.arr) GL_TRY(gl_same_device(a.arr, b.arr));
  p->ct = p->dtype = GL_FLOAT32;
  GL_TRY(binary_types(&op, a, b, &p->ct, &p->dtype));
  p->op = (int)op;
  GL_TRY(result_shape(a, b, &p->ndim, p->shape));
  p->device = gl_array_device(a.arr ? a.arr : b.arr);
  return gl_backend_supporting(p->device, GL_OP_BINARY, op, p->ct, gl_binop_name[op], &p->be);
}

gl_status gl_op_binary_run(const gl_array *out, const gl_plan *p, gl_operand a, gl_operand b) {
  if (p->like != NULL) {
    if (out->size > 0)
      p->be->binary_flat((gl_binop)p->op, p->ct, gl_array_data(out), gl_array_data(a.arr), gl_array_data(b.arr), out->size);
    return GL_OK;
  }
  return run_binary(p->be, (gl_binop)p->op, p->ct, out, a, b, false);
}

gl_status gl_op_binary(gl_array *out, gl_binop op, gl_operand a, gl_operand b) {
  gl_plan p;
  GL_TRY(gl_op_binary_plan(&p, op, a, b));
  GL_TRY(gl_array_alloc(out, p.dtype, p.ndim, p.shape, p.device));
  gl_status st = gl_op_binary_run(out, &p, a, b);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_binary_(const gl_array *dst, gl_binop op, gl_operand b) {
  gl_operand a = { dst, gl_scalar_int(0) };
  if (b.arr) GL_TRY(gl_same_device(dst, b.arr));
  gl_dtype ct = GL_FLOAT32, ot = GL_FLOAT32;
  GL_TRY(binary_types(&op, a, b, &ct, &ot));
  int ndim;
  int64_t shape[GL_MAXDIMS];
  GL_TRY(result_shape(a, b, &ndim, shape));
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  if (ndim != dst->ndim || memcmp(shape, dst->shape, (size_t)ndim * sizeof *shape) != 0)
    return gl_fail(GL_EINVAL, "in-place result of shape %s does not fit the array of shape %s",
                   gl_shape_str(ndim, shape, s1), gl_shape_str(dst->ndim, dst->shape, s2));
  if (!same_kind(ot, (gl_dtype)dst->dtype))
    return gl_fail(GL_EINVAL, "cannot store the %s result of %s in a %s array in place",
                   gl_dtypes[ot].name, gl_binop_name[op], gl_dtypes[dst->dtype].name);
  const gl_backend *be;
  GL_TRY(gl_backend_supporting(gl_array_device(dst), GL_OP_BINARY, op, ct, gl_binop_name[op], &be));
  if (ot == dst->dtype) return run_binary(be, op, ct, dst, a, b, true);
  GL_TRY(gl_array_writable(dst, NULL));        /* refused before the work; assign counts the write */
  gl_array tmp = { 0 };
  GL_TRY(gl_array_alloc(&tmp, ot, dst->ndim, dst->shape, gl_array_device(dst)));
  gl_status st = run_binary(be, op, ct, &tmp, a, b, false);
  if (st == GL_OK) st = gl_op_assign(dst, &tmp);
  gl_array_release(&tmp);
  return st;
}

/* be: the backend of dst's device, which has the kernel for (op, ct); 'inplace' as for
** run_binary. */
static gl_status run_unary(const gl_backend *be, gl_unop op, gl_dtype ct, const gl_array *dst, const gl_array *x,
                           bool inplace) {
  gl_array tmp = { 0 };
  gl_status st = GL_OK;
  gl_opkind k = (gl_opkind)gl_unop_kind[op];
  bool cast = (k == GL_K_UF || k == GL_K_US || k == GL_K_UB) && x->dtype != ct;
  bool alias = x->storage == dst->storage && !same_layout(dst, x);
  if (cast || alias) {
    st = gl_op_copy(&tmp, x, cast ? ct : (gl_dtype)x->dtype, gl_array_device(x));
    x = &tmp;
  }
  if (st == GL_OK && inplace) st = gl_array_begin_write(dst);
  if (st == GL_OK && dst->size > 0) st = be->unary(op, dst, x);
  gl_array_release(&tmp);
  return st;
}

gl_status gl_op_unary_plan(gl_plan *p, gl_unop op, const gl_array *x) {
  p->ct = p->dtype = GL_FLOAT32;
  gl_unop asked = op;
  GL_TRY(unary_types(&op, (gl_dtype)x->dtype, &p->ct, &p->dtype));
  p->op = (int)op;
  p->ndim = x->ndim;
  memcpy(p->shape, x->shape, (size_t)x->ndim * sizeof *x->shape);
  p->device = gl_array_device(x);
  p->like = NULL;
  /* flat: x already of the compute dtype (no cast), the op as asked */
  const gl_backend *be = op == asked && p->ct == x->dtype ? flat_backend(x, GL_OP_UNARY, op, p->ct) : NULL;
  if (be != NULL) {
    p->be = be;
    p->like = x;
    return GL_OK;
  }
  return gl_backend_supporting(p->device, GL_OP_UNARY, op, p->ct, gl_unop_name[op], &p->be);
}

gl_status gl_op_unary_run(const gl_array *out, const gl_plan *p, const gl_array *x) {
  if (p->like != NULL) {
    if (out->size > 0) p->be->unary_flat((gl_unop)p->op, p->ct, gl_array_data(out), gl_array_data(x), out->size);
    return GL_OK;
  }
  return run_unary(p->be, (gl_unop)p->op, p->ct, out, x, false);
}

gl_status gl_op_unary(gl_array *out, gl_unop op, const gl_array *x) {
  gl_plan p;
  GL_TRY(gl_op_unary_plan(&p, op, x));
  GL_TRY(gl_array_alloc(out, p.dtype, p.ndim, p.shape, p.device));
  gl_status st = gl_op_unary_run(out, &p, x);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_unary_(const gl_array *x, gl_unop op) {
  gl_dtype ct = GL_FLOAT32, ot = GL_FLOAT32;
  gl_unop op0 = op;
  GL_TRY(unary_types(&op, (gl_dtype)x->dtype, &ct, &ot));
  if (ot != x->dtype)
    return gl_fail(GL_EINVAL, "%s_ would change the dtype from %s to %s (use %s without _)",
                   gl_unop_name[op0], gl_dtypes[x->dtype].name, gl_dtypes[ot].name, gl_unop_name[op0]);
  const gl_backend *be;
  GL_TRY(gl_backend_supporting(gl_array_device(x), GL_OP_UNARY, op, ct, gl_unop_name[op], &be));
  return run_unary(be, op, ct, x, x, true);
}

gl_status gl_op_where(gl_array *out, const gl_array *cond, gl_operand a, gl_operand b) {
  if (a.arr) GL_TRY(gl_same_device(cond, a.arr));
  if (b.arr) GL_TRY(gl_same_device(cond, b.arr));
  gl_dtype ot = GL_FLOAT32;
  if (a.arr && b.arr) ot = gl_promote((gl_dtype)a.arr->dtype, (gl_dtype)b.arr->dtype);
  else if (a.arr || b.arr) {
    gl_binop dummy = GL_B_maximum;
    gl_dtype ct;
    GL_TRY(binary_types(&dummy, a, b, &ct, &ot));
    ot = ct;
  } else {
    ot = a.s.isbool && b.s.isbool ? GL_BOOL : a.s.isint && b.s.isint ? GL_INT64
       : a.s.iscomplex || b.s.iscomplex ? gl_complex_for(GL_DEFAULT_DTYPE) : GL_DEFAULT_DTYPE;
  }
  int ndim = cond->ndim, n2;
  int64_t shape[GL_MAXDIMS], s2[GL_MAXDIMS];
  memcpy(shape, cond->shape, (size_t)ndim * sizeof *shape);
  gl_operand ops[2] = { a, b };
  for (int i = 0; i < 2; i++) {
    if (!ops[i].arr) continue;
    GL_TRY(gl_broadcast_shapes(ndim, shape, ops[i].arr->ndim, ops[i].arr->shape, &n2, s2));
    ndim = n2;
    memcpy(shape, s2, (size_t)n2 * sizeof *s2);
  }
  const gl_backend *be;
  GL_TRY(gl_backend_supporting(gl_array_device(cond), GL_OP_COPY, -1, ot, "where", &be));   /* a select of bits */
  GL_TRY(gl_array_alloc(out, ot, ndim, shape, gl_array_device(cond)));
  gl_array tc = { 0 }, ta = { 0 }, tb = { 0 }, vc, va, vb;
  gl_operand c = { cond, gl_scalar_int(0) };
  gl_status st = prepare(&c, GL_BOOL, out, &tc, &vc);
  if (st == GL_OK) st = prepare(&a, ot, out, &ta, &va);
  if (st == GL_OK) st = prepare(&b, ot, out, &tb, &vb);
  if (st == GL_OK && out->size > 0) st = be->where(out, c.arr, a, b);
  gl_array_release(&tc);
  gl_array_release(&ta);
  gl_array_release(&tb);
  if (st != GL_OK) gl_array_release(out);
  return st;
}
