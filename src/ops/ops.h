/*
** ops.h — device-neutral operations: validate arguments, work out the output's shape
** and dtype, allocate on the operands' device and call that device's backend.
**
** Every function returns a gl_status (message in gl_errmsg()). Outputs are closed
** descriptors (storage NULL) that the function fills; on failure they stay closed.
*/
#ifndef GL_OPS_H
#define GL_OPS_H

#include "../backend/backend.h"

/* ---- creation ------------------------------------------------------------------ */
gl_status gl_op_empty(gl_array *out, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev);
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
/* Writes src's elements in C order, in src's dtype, to host memory. */
gl_status gl_op_to_host(void *host, const gl_array *src);

/* ---- elements -------------------------------------------------------------------- */
/* The element at 'offset' elements past the array's data pointer. */
gl_status gl_op_get(const gl_array *a, int64_t offset, gl_scalar *out);

/* ---- elementwise (elementwise.c) ------------------------------------------------------ */
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

/* ---- helpers ------------------------------------------------------------------- */
/* GL_EINVAL unless both arrays are on one device; the message names both and :to(). */
gl_status gl_same_device(const gl_array *a, const gl_array *b);
/* The backend of a's device, and whether it supports (op, dtype). */
gl_status gl_backend_of(const gl_array *a, gl_op op, const gl_backend **out);

#endif
