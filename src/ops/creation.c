/*
** creation.c — new arrays, copies between dtypes and devices, element reads.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops.h"

gl_status gl_op_full(gl_array *out, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev,
                     gl_scalar v) {
  GL_TRY(gl_array_alloc(out, dt, ndim, shape, dev));
  gl_status st = gl_op_fill(out, v);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* The values of a range lie between its first and its last, so an integer dtype that
** holds those two holds them all (a range never wraps). */
static gl_status range_fits(gl_dtype dt, int64_t n, double first, double last) {
  if (n == 0) return GL_OK;
  GL_TRY(gl_scalar_check(dt, gl_scalar_float(first)));
  return gl_scalar_check(dt, gl_scalar_float(last));
}

gl_status gl_op_arange(gl_array *out, double start, double stop, double step, gl_dtype dt,
                       gl_device dev) {
  if (step == 0) return gl_fail(GL_EINVAL, "step must not be zero");
  if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
    return gl_fail(GL_EINVAL, "arange bounds must be finite");
  double len = ceil((stop - start) / step);     /* a count from a range: a double until checked */
  if (len < 0) len = 0;
  if (!(len <= (double)GL_MAXSIZE)) return gl_too_big(len, dt);
  int64_t n = (int64_t)len;
  GL_TRY(range_fits(dt, n, start, start + (double)(n - 1) * step));
  const gl_backend *b;
  GL_TRY(gl_backend_supporting(dev, GL_OP_ARANGE, 0, dt, "arange", &b));
  GL_TRY(gl_array_alloc(out, dt, 1, &n, dev));
  gl_status st = n > 0 ? b->arange(out, start, step) : GL_OK;
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_linspace(gl_array *out, double start, double stop, int64_t n, gl_dtype dt,
                         gl_device dev) {
  if (n < 0) return gl_fail(GL_EINVAL, "number of samples must be non-negative, got %lld", (long long)n);
  if (!isfinite(start) || !isfinite(stop)) return gl_fail(GL_EINVAL, "linspace bounds must be finite");
  GL_TRY(range_fits(dt, n, start, stop));
  const gl_backend *b;
  GL_TRY(gl_backend_supporting(dev, GL_OP_ARANGE, 0, dt, "linspace", &b));
  GL_TRY(gl_array_alloc(out, dt, 1, &n, dev));
  /* start + i * step, as NumPy computes it. Where stop - start overflows (bounds near
  ** ±DBL_MAX, a float dtype since integer ones were checked above), the same at half
  ** scale, then doubled: scaling by 2 is exact, and each value lies between the bounds
  ** (bool keeps the halves: halving changes no value's truth). */
  bool halve = !isfinite(stop - start);
  double s0 = halve ? start / 2 : start, s1 = halve ? stop / 2 : stop;
  gl_status st = n > 0 ? b->arange(out, s0, n > 1 ? (s1 - s0) / (double)(n - 1) : 0.0) : GL_OK;
  if (st == GL_OK && n > 0 && halve && gl_dtype_is_float(dt)) {
    gl_operand two = { NULL, gl_scalar_int(2) };
    st = gl_op_binary_(out, GL_B_mul, two);
  }
  if (st == GL_OK && n > 1) {              /* the end point exactly, as NumPy does */
    gl_array last = *out;
    gl_view_slice(&last, 0, n - 1, 1, 1);
    st = b->fill(&last, gl_scalar_float(stop));
  }
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_eye(gl_array *out, int64_t n, int64_t m, int64_t k, gl_dtype dt, gl_device dev) {
  int64_t shape[2] = { n, m };
  GL_TRY(gl_op_full(out, dt, 2, shape, dev, gl_scalar_int(0)));
  /* the diagonal is a strided view: start at (max(0,-k), max(0,k)), step m + 1; a k
  ** outside (-n, m) has none (and -k is only formed inside, where it cannot overflow) */
  if (k <= -n || k >= m) return GL_OK;
  int64_t r0 = k < 0 ? -k : 0, c0 = k > 0 ? k : 0;
  int64_t len = (n - r0) < (m - c0) ? (n - r0) : (m - c0);
  gl_array diag = *out;
  diag.ndim = 1;
  diag.offset = r0 * m + c0;
  diag.shape[0] = len;
  diag.strides[0] = m + 1;
  diag.size = len;
  gl_status st = gl_op_fill(&diag, gl_scalar_int(1));
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_from_host(gl_array *out, const void *host, gl_dtype dt, int ndim,
                          const int64_t *shape, gl_device dev) {
  GL_TRY(gl_array_alloc(out, dt, ndim, shape, dev));
  const gl_backend *b = gl_backend_get(dev.type);
  gl_status st = b->from_host(dev, out->storage->data, host, out->storage->nbytes);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* ---- copies -------------------------------------------------------------------- */

static bool overlaps(const gl_array *a, const gl_array *b) {
  return a->storage == b->storage && a->size > 0 && b->size > 0;
}

gl_status gl_op_assign(const gl_array *dst, const gl_array *src) {
  GL_TRY(gl_same_device(dst, src));
  gl_array view = *src;
  if (gl_view_expand(&view, dst->ndim, dst->shape) != GL_OK) {
    char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EINVAL, "could not broadcast input array from shape %s into shape %s",
                   gl_shape_str(src->ndim, src->shape, b1), gl_shape_str(dst->ndim, dst->shape, b2));
  }
  const gl_backend *b;
  GL_TRY(gl_backend_of(dst, GL_OP_COPY, &b));
  GL_TRY(gl_array_begin_write(dst));
  if (!overlaps(dst, src)) return b->copy(dst, &view);
  /* the same storage on both sides: go through a temporary */
  gl_array tmp = { 0 };
  GL_TRY(gl_array_alloc(&tmp, (gl_dtype)src->dtype, src->ndim, src->shape, gl_array_device(src)));
  gl_status st = b->copy(&tmp, src);
  if (st == GL_OK) {
    gl_array tv = tmp;
    st = gl_view_expand(&tv, dst->ndim, dst->shape);
    if (st == GL_OK) st = b->copy(dst, &tv);
  }
  gl_array_release(&tmp);
  return st;
}

gl_status gl_op_fill(const gl_array *dst, gl_scalar v) {
  const gl_backend *b;
  GL_TRY(gl_scalar_check((gl_dtype)dst->dtype, v));
  GL_TRY(gl_backend_of(dst, GL_OP_FILL, &b));
  GL_TRY(gl_array_begin_write(dst));
  if (dst->size == 0) return GL_OK;
  return b->fill(dst, v);
}

gl_status gl_op_to_host(void *host, const gl_array *src) {
  const gl_backend *b;
  GL_TRY(gl_backend_for(gl_array_device(src), &b));
  size_t nbytes;
  GL_TRY(gl_nbytes(src->size, (gl_dtype)src->dtype, &nbytes));     /* a view may be huge */
  if (src->size == 0) return GL_OK;
  if (gl_array_is_contiguous(src)) return b->to_host(host, gl_array_device(src), gl_array_data(src), nbytes);
  if (src->storage->device.type == GL_CPU) {          /* strided copy straight into host */
    gl_storage hs = { .refcount = 1, .data = host, .nbytes = nbytes, .device = gl_cpu() };
    gl_array h = { 0 };
    GL_TRY(gl_array_init(&h, (gl_dtype)src->dtype, src->ndim, src->shape));
    h.storage = &hs;
    return b->copy(&h, src);
  }
  gl_array tmp = { 0 };
  GL_TRY(gl_op_copy(&tmp, src, (gl_dtype)src->dtype, gl_array_device(src)));
  gl_status st = b->to_host(host, gl_array_device(&tmp), gl_array_data(&tmp), nbytes);
  gl_array_release(&tmp);
  return st;
}

gl_status gl_op_copy(gl_array *out, const gl_array *src, gl_dtype dt, gl_device dev) {
  gl_device sdev = gl_array_device(src);
  if (gl_device_eq(sdev, dev)) {
    const gl_backend *b;
    GL_TRY(gl_backend_of(src, GL_OP_COPY, &b));
    GL_TRY(gl_array_alloc(out, dt, src->ndim, src->shape, dev));
    gl_status st = src->size ? b->copy(out, src) : GL_OK;
    if (st != GL_OK) gl_array_release(out);
    return st;
  }
  /* across devices: contiguous in the source dtype, through host memory, then convert
  ** on the destination (no conversion work is done on the slower side twice) */
  size_t nbytes;
  GL_TRY(gl_nbytes(src->size, (gl_dtype)src->dtype, &nbytes));
  gl_array staged = { 0 };
  if (dev.type == GL_CPU) {
    GL_TRY(gl_array_alloc(&staged, (gl_dtype)src->dtype, src->ndim, src->shape, dev));
    gl_status st = gl_op_to_host(staged.storage->data, src);
    if (st != GL_OK) { gl_array_release(&staged); return st; }
  } else {
    void *host = malloc(nbytes ? nbytes : 1);
    if (host == NULL) return gl_fail(GL_ENOMEM, "out of host memory staging %zu bytes", nbytes);
    gl_status st = gl_op_to_host(host, src);
    if (st == GL_OK)
      st = gl_op_from_host(&staged, host, (gl_dtype)src->dtype, src->ndim, src->shape, dev);
    free(host);
    GL_TRY(st);
  }
  if (dt == src->dtype) { *out = staged; return GL_OK; }
  gl_status st = gl_op_copy(out, &staged, dt, dev);
  gl_array_release(&staged);
  return st;
}

gl_status gl_op_as_contig(const gl_array *x, gl_dtype dt, gl_array *tmp, const gl_array **src) {
  if (x->dtype == dt && gl_array_is_contiguous(x)) { *src = x; return GL_OK; }
  GL_TRY(gl_op_copy(tmp, x, dt, gl_array_device(x)));
  *src = tmp;
  return GL_OK;
}

/* ---- elements -------------------------------------------------------------------- */

gl_status gl_op_get(const gl_array *a, int64_t offset, gl_scalar *out) {
  size_t sz = gl_dtypes[a->dtype].size;
  const char *p = (const char *)gl_array_data(a) + offset * (int64_t)sz;
  if (a->storage->device.type == GL_CPU) { *out = gl_scalar_load((gl_dtype)a->dtype, p); return GL_OK; }
  const gl_backend *b;
  GL_TRY(gl_backend_for(gl_array_device(a), &b));
  uint64_t buf = 0;
  GL_TRY(b->to_host(&buf, gl_array_device(a), p, sz));
  *out = gl_scalar_load((gl_dtype)a->dtype, &buf);
  return GL_OK;
}
