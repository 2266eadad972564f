/*
** select.c — partition (kth order statistics along an axis) and bin counts.
*/
#include <stdlib.h>
#include "ops.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

gl_status gl_op_partition(gl_array *values, gl_array *indices, const gl_array *x, int axis,
                          const int64_t *kth, int nk) {
  if (x->ndim == 0) return gl_fail(GL_EINVAL, "partition needs an array of at least 1 dimension");
  if (axis < 0 || axis >= x->ndim) return gl_fail(GL_EINVAL, "partition: axis %d is out of range", axis + 1);
  int64_t n = x->shape[axis];
  if (nk < 1) return gl_fail(GL_EINVAL, "partition: kth is empty");
  for (int i = 0; i < nk; i++)
    if (kth[i] < 0 || kth[i] >= n)
      return gl_fail(GL_EINVAL, "kth = %lld is out of range for axis %d of size %lld",
                     (long long)kth[i] + 1, axis + 1, (long long)n);
  const gl_backend *be;
  GL_TRY(gl_backend_of(x, GL_OP_SELECT, &be));
  int64_t *ks = malloc((size_t)nk * sizeof *ks);     /* ascending and distinct */
  if (ks == NULL) return gl_fail(GL_ENOMEM, "partition: out of host memory");
  for (int i = 0; i < nk; i++) ks[i] = kth[i];
  qsort(ks, (size_t)nk, sizeof *ks, cmp_i64);
  int m = 0;
  for (int i = 0; i < nk; i++)
    if (m == 0 || ks[i] != ks[m - 1]) ks[m++] = ks[i];
  gl_status st = GL_OK;
  if (values) st = gl_array_alloc(values, (gl_dtype)x->dtype, x->ndim, x->shape, gl_array_device(x));
  if (st == GL_OK && indices) st = gl_array_alloc(indices, GL_INT64, x->ndim, x->shape, gl_array_device(x));
  if (st == GL_OK && x->size > 0) st = be->partition(values, indices, x, axis, ks, m);
  free(ks);
  if (st == GL_OK && indices && x->size > 0) {
    gl_operand one = { NULL, gl_scalar_int(1) };
    st = gl_op_binary_(indices, GL_B_add, one);          /* 1-based positions */
  }
  if (st != GL_OK) {
    if (values) gl_array_release(values);
    if (indices) gl_array_release(indices);
  }
  return st;
}

gl_status gl_op_histcounts(gl_array *counts, const gl_array *x, const gl_array *weights,
                           const gl_array *edges, bool uniform, int64_t nbins) {
  if (weights) {
    GL_TRY(gl_same_device(x, weights));
    if (weights->size != x->size)
      return gl_fail(GL_EINVAL, "histcounts: weights must have x's %lld elements, got %lld",
                     (long long)x->size, (long long)weights->size);
  }
  if (edges) {
    GL_TRY(gl_same_device(x, edges));
    if (edges->ndim != 1 || edges->size < 2)
      return gl_fail(GL_EINVAL, "histcounts: edges must be 1-D with at least 2 elements");
    nbins = edges->size - 1;
  } else {
    if (gl_dtypes[x->dtype].kind == GL_KIND_FLOAT)
      return gl_fail(GL_EINVAL, "histcounts: without edges x must be an integer array, got %s",
                     gl_dtypes[x->dtype].name);
    if (nbins < 0) return gl_fail(GL_EINVAL, "histcounts: the bin count must be >= 0, got %lld", (long long)nbins);
  }
  const gl_backend *be;
  GL_TRY(gl_backend_of(x, GL_OP_HISTOGRAM, &be));
  gl_array tx = { 0 }, tw = { 0 }, te = { 0 };
  const gl_array *cx = x, *cw = NULL, *ce = NULL;
  gl_status st = gl_op_as_contig(x, (gl_dtype)x->dtype, &tx, &cx);
  if (st == GL_OK && weights) st = gl_op_as_contig(weights, GL_FLOAT64, &tw, &cw);
  if (st == GL_OK && edges) st = gl_op_as_contig(edges, GL_FLOAT64, &te, &ce);
  if (st == GL_OK)
    st = gl_array_alloc(counts, weights ? GL_FLOAT64 : GL_INT64, 1, &nbins, gl_array_device(x));
  if (st == GL_OK && nbins > 0) {
    st = be->histogram(counts, cx, cw, ce, uniform);
    if (st != GL_OK) gl_array_release(counts);
  }
  gl_array_release(&tx);
  gl_array_release(&tw);
  gl_array_release(&te);
  return st;
}

gl_status gl_op_searchsorted(gl_array *out, const gl_array *a, const gl_array *v, bool right) {
  GL_TRY(gl_same_device(a, v));
  if (a->dtype != v->dtype)
    return gl_fail(GL_EINVAL, "searchsorted: a and v must have one dtype, got %s and %s", gl_dtypes[a->dtype].name,
                   gl_dtypes[v->dtype].name);
  if (gl_dtype_is_complex((gl_dtype)a->dtype))
    return gl_fail(GL_EINVAL, "searchsorted: %s values have no order", gl_dtypes[a->dtype].name);
  if (a->ndim != 1 || v->ndim != 1) return gl_fail(GL_EINVAL, "searchsorted: a and v must be 1-D");
  const gl_backend *be;
  GL_TRY(gl_backend_of(a, GL_OP_INDEX, &be));
  char dn[16];
  if (be->searchsorted == NULL)
    return gl_fail(GL_ENOTSUP, "searchsorted is not supported on %s", gl_device_name(gl_array_device(a), dn));
  int64_t m = v->size;
  GL_TRY(gl_array_alloc(out, GL_INT64, 1, &m, gl_array_device(a)));
  gl_status st = m > 0 ? be->searchsorted(out, a, v, right) : GL_OK;
  if (st != GL_OK) gl_array_release(out);
  return st;
}
