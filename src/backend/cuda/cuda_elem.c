/*
** cuda_elem.c — unary, binary and where on the GPU: the walk over the operands is
** collapsed here (gl_iter), scalars are converted to the compute dtype here and travel to
** the kernel by value, and kernels/unary.cu, binary.cu, copy.cu do the rest.
*/
#include <string.h>
#include "cuda.h"

/* A stand-in with dst's shape and all strides 0, for walking a scalar operand. */
static void scalar_view(gl_array *v, const gl_array *dst) {
  memset(v, 0, sizeof *v);
  v->ndim = dst->ndim;
  v->size = dst->size;
  v->dtype = dst->dtype;
  memcpy(v->shape, dst->shape, sizeof v->shape);
}

/* The kernel's view of an operand: its first element, or a scalar's bits in dtype dt. */
static gl_kval kval(gl_operand o, gl_dtype dt) {
  gl_kval k;
  memset(k.bits, 0, sizeof k.bits);
  k.p = NULL;
  if (o.arr) k.p = gl_array_data(o.arr);
  else gl_scalar_store(dt, k.bits, o.s);
  return k;
}

gl_status gl_cuda_unary(gl_unop op, const gl_array *dst, const gl_array *src) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  const gl_array *ops[2] = { dst, src };
  gl_kiter k;
  gl_cuda_kiter(&k, 2, ops, NULL);
  int rc = gl_klaunch_unary(s, (int)op, src->dtype, &k, gl_array_data(dst), gl_array_data(src));
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "%s is not defined for %s arrays", gl_unop_name[op], gl_dtypes[src->dtype].name);
  return gl_cuda_launched(dev, s, rc, gl_unop_name[op]);
}

gl_status gl_cuda_binary(gl_binop op, gl_dtype ct, const gl_array *dst, gl_operand a, gl_operand b) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  gl_array sa, sb;
  const gl_array *ops[3] = { dst, a.arr, b.arr };
  bool scalar[3] = { false, a.arr == NULL, b.arr == NULL };
  if (a.arr == NULL) { scalar_view(&sa, dst); ops[1] = &sa; }
  if (b.arr == NULL) { scalar_view(&sb, dst); ops[2] = &sb; }
  gl_kiter k;
  gl_cuda_kiter(&k, 3, ops, scalar);
  int rc = gl_klaunch_binary(s, (int)op, (int)ct, &k, gl_array_data(dst), kval(a, ct), kval(b, ct));
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "%s is not defined for %s arrays", gl_binop_name[op], gl_dtypes[ct].name);
  return gl_cuda_launched(dev, s, rc, gl_binop_name[op]);
}

gl_status gl_cuda_where(const gl_array *dst, const gl_array *cond, gl_operand a, gl_operand b) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  gl_dtype dt = (gl_dtype)dst->dtype;
  gl_array sa, sb;
  const gl_array *ops[4] = { dst, cond, a.arr, b.arr };
  bool scalar[4] = { false, false, a.arr == NULL, b.arr == NULL };
  if (a.arr == NULL) { scalar_view(&sa, dst); ops[2] = &sa; }
  if (b.arr == NULL) { scalar_view(&sb, dst); ops[3] = &sb; }
  gl_kiter k;
  gl_cuda_kiter(&k, 4, ops, scalar);
  int rc = gl_klaunch_where(s, &k, gl_array_data(dst), (int)gl_dtypes[dt].size, gl_array_data(cond),
                            kval(a, dt), kval(b, dt));
  return gl_cuda_launched(dev, s, rc, "where");
}
