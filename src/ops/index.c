/*
** index.c — integer-array and boolean-mask indexing, joining and tiling, sort.
**
** Index arrays are read on the host once (they must be checked before any kernel runs,
** and a mask's count fixes the output's size), turned into 0-based int64 positions and
** sent to the device; the backends then only move elements. Joining, tiling, repeating
** and rolling are strided views of the output assigned from views of the inputs, so
** they need no kernels of their own.
*/
#include <stdlib.h>
#include <string.h>
#include "ops.h"
#include "../core/interrupt.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static gl_status check_index_dtype(const gl_array *idx, const char *what) {
  if (idx->dtype != GL_INT32 && idx->dtype != GL_INT64)
    return gl_fail(GL_EINVAL, "%s must be an int32 or int64 array, got %s", what, gl_dtypes[idx->dtype].name);
  return GL_OK;
}

/* idx's elements in C order as int64 into h (host memory of idx->size slots). */
static gl_status read_int64(const gl_array *idx, int64_t *h) {
  gl_status st = GL_OK;
  if (idx->size > 0) st = gl_op_to_host(h, idx);
  if (st == GL_OK && idx->dtype == GL_INT32)          /* widen in place, back to front */
    for (int64_t i = idx->size - 1; i >= 0; i--) h[i] = ((int32_t *)h)[i];
  return st;
}

/* idx's elements in C order as int64 on the host (malloc'd, at least one slot). */
static gl_status host_int64(const gl_array *idx, int64_t **out) {
  size_t nbytes;                     /* idx may be a huge broadcast view */
  GL_TRY(gl_nbytes(idx->size > 0 ? idx->size : 1, GL_INT64, &nbytes));
  int64_t *h = malloc(nbytes);
  if (h == NULL) return gl_fail(GL_ENOMEM, "out of host memory for %lld indices", (long long)idx->size);
  gl_status st = read_int64(idx, h);
  if (st != GL_OK) { free(h); return st; }
  *out = h;
  return GL_OK;
}

/* 1-based positions (negatives from the end) into 0-based, each checked against n. A span
** is checked whole, then converted (two loops the compiler vectorises, over a span still
** in cache); the culprit is looked for only in a span that holds one. */
static gl_status normalise(int64_t *h, int64_t m, int64_t n, int axis) {
  for (int64_t i0 = 0; i0 < m; i0 += GL_POLL_SPAN) {
    GL_TRY(gl_interrupt_check());
    int64_t e = m - i0 < GL_POLL_SPAN ? m - i0 : GL_POLL_SPAN;
    int64_t *s = h + i0;
    int bad = 0;
    for (int64_t i = 0; i < e; i++) bad |= (s[i] == 0) | (s[i] > n) | (s[i] < -n);
    for (int64_t i = 0; bad && i < e; i++)
      if (s[i] == 0 || s[i] > n || s[i] < -n)
        return gl_fail(GL_EINVAL, "index %lld is out of range for axis %d with size %lld (indices are 1-based, negatives count from the end)",
                       (long long)s[i], axis + 1, (long long)n);
    for (int64_t i = 0; i < e; i++) s[i] = s[i] > 0 ? s[i] - 1 : s[i] + n;
  }
  return GL_OK;
}

/* Reads, checks and uploads idx: a 1-D int64 array of 0-based positions on dev. */
static gl_status device_positions(gl_array *out, const gl_array *idx, int64_t n, int axis, gl_device dev) {
  GL_TRY(check_index_dtype(idx, "indices"));
  int64_t m = idx->size;
  if (dev.type == GL_CPU) {          /* made in place in the result: one pass less, no staging */
    GL_TRY(gl_array_alloc(out, GL_INT64, 1, &m, dev));
    gl_status st = read_int64(idx, gl_array_data(out));
    if (st == GL_OK) st = normalise(gl_array_data(out), m, n, axis);
    if (st != GL_OK) gl_array_release(out);
    return st;
  }
  int64_t *h;
  GL_TRY(host_int64(idx, &h));
  gl_status st = normalise(h, m, n, axis);
  if (st == GL_OK) st = gl_op_from_host(out, h, GL_INT64, 1, &m, dev);
  free(h);
  return st;
}

/* On the cpu an index needs no array of positions of its own: a contiguous int64 index is
** read a span at a time into a small buffer (which stays in L1), checked and converted
** there and scattered from there, so the index is read once, as the scatter reads it. */
#define POS_SPAN 4096

static bool host_index(const gl_array *idx, gl_device dev) {
  return dev.type == GL_CPU && idx->dtype == GL_INT64 && gl_array_is_contiguous(idx);
}

/* be->scatter of 'view' (x's shape with raw->size on axis) through the 1-based positions of
** raw (a host_index), a span of POS_SPAN at a time. A position out of range is an error
** that leaves x as it was: x is copied first and put back (and its storage's count of
** writes set back to 'version', what it was before the scatter) when it is small beside
** the index, else every span is checked before any is scattered. */
static gl_status scatter_spans(const gl_backend *be, const gl_array *x, int axis, const gl_array *raw,
                               const gl_array *view, bool accumulate, uint64_t version) {
  int64_t buf[POS_SPAN];
  gl_storage hs = { .refcount = 1, .data = buf, .nbytes = sizeof buf, .device = gl_cpu() };
  const int64_t *h = gl_array_data(raw);
  int64_t n = x->shape[axis], m = raw->size, per = view->size / m;
  bool small = x->size <= m / 8;
  gl_array saved = { 0 };
  gl_status st = GL_OK;
  if (small) GL_TRY(gl_op_copy(&saved, x, (gl_dtype)x->dtype, gl_array_device(x)));
  for (int pass = small ? 1 : 0; pass < 2 && st == GL_OK; pass++) {    /* 0: check only */
    for (int64_t j0 = 0; j0 < m && st == GL_OK; j0 += POS_SPAN) {
      int64_t len = m - j0 < POS_SPAN ? m - j0 : POS_SPAN;
      const int64_t *span = h + j0;
      int bad = 0;                                /* normalise's two loops, reading the index */
      for (int64_t i = 0; i < len; i++) bad |= (span[i] == 0) | (span[i] > n) | (span[i] < -n);
      if (bad) {                                  /* normalise names the culprit */
        memcpy(buf, span, (size_t)len * sizeof *buf);
        st = normalise(buf, len, n, axis);
        continue;
      }
      for (int64_t i = 0; i < len; i++) buf[i] = span[i] > 0 ? span[i] - 1 : span[i] + n;
      if (j0 % GL_POLL_SPAN == 0) st = gl_interrupt_check();
      if (st != GL_OK || pass == 0) continue;
      gl_array pos = { 0 }, part = *view;
      st = gl_array_init(&pos, GL_INT64, 1, &len);
      pos.storage = &hs;
      part.shape[axis] = len;
      part.offset += j0 * part.strides[axis];
      part.size = per * len;
      if (st == GL_OK) st = be->scatter(x, axis, &pos, &part, accumulate);
    }
  }
  if (st == GL_EINVAL && small) {      /* undone: the bytes, and the count of writes */
    (void)gl_op_assign(x, &saved);      /* (the error's text stays) */
    x->storage->version = version;
  }
  gl_array_release(&saved);
  return st;
}

/* A view of 'a' reshaped, or a contiguous copy of it reshaped when the strides do not
** allow a view. */
static gl_status reshaped(gl_array *out, const gl_array *a, int ndim, const int64_t *shape) {
  gl_array_view_of(out, a);
  gl_status st = gl_view_reshape(out, ndim, shape);
  if (st != GL_ENOTSUP) {
    if (st != GL_OK) gl_array_release(out);
    return st;
  }
  gl_array_release(out);
  GL_TRY(gl_op_copy(out, a, (gl_dtype)a->dtype, gl_array_device(a)));
  st = gl_view_reshape(out, ndim, shape);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

static void set_size(gl_array *a) {
  a->size = 1;
  for (int i = 0; i < a->ndim; i++) a->size *= a->shape[i];
}

/* ---- take / index_put ---------------------------------------------------------------------- */

/* x's shape with the axis's extent replaced by idx->size (flat) and the axis replaced by
** idx's axes (full, whose length is returned; only its first GL_MAXDIMS are written). */
static int axis_shapes(const gl_array *x, int axis, const gl_array *idx, int64_t *flat, int64_t *full) {
  int nf = 0;
  for (int i = 0; i < x->ndim; i++) {
    flat[i] = i == axis ? idx->size : x->shape[i];
    for (int k = 0; k < (i == axis ? idx->ndim : 1); k++, nf++)
      if (nf < GL_MAXDIMS) full[nf] = i == axis ? idx->shape[k] : x->shape[i];
  }
  return nf;
}

gl_status gl_op_take(gl_array *out, const gl_array *x, int axis, const gl_array *idx) {
  GL_TRY(gl_same_device(x, idx));
  GL_TRY(check_index_dtype(idx, "indices"));
  if (x->ndim - 1 + idx->ndim > GL_MAXDIMS)
    return gl_fail(GL_EINVAL, "result would have %d dimensions (at most %d)", x->ndim - 1 + idx->ndim, GL_MAXDIMS);
  const gl_backend *be;
  GL_TRY(gl_backend_of(x, GL_OP_INDEX, &be));
  gl_array pos = { 0 };
  GL_TRY(device_positions(&pos, idx, x->shape[axis], axis, gl_array_device(x)));
  int64_t shape[GL_MAXDIMS], fin[GL_MAXDIMS];
  int nf = axis_shapes(x, axis, idx, shape, fin);
  gl_status st = gl_array_alloc(out, (gl_dtype)x->dtype, x->ndim, shape, gl_array_device(x));
  if (st == GL_OK && out->size > 0) st = be->gather(out, x, axis, &pos);
  if (st == GL_OK) st = gl_view_reshape(out, nf, fin);
  gl_array_release(&pos);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* Scatters 'values' (broadcast to x's shape with m positions on 'axis') through the
** 0-based positions 'pos' (1-D, on x's device), or, pos NULL, through the 1-based ones of
** raw (a host_index; scatter_spans checks them). */
static gl_status scatter_positions(const gl_array *x, int axis, const gl_array *pos, gl_operand v,
                                   bool accumulate, const gl_array *raw) {
  const gl_backend *be;
  GL_TRY(gl_backend_of(x, GL_OP_INDEX, &be));
  int64_t shape[GL_MAXDIMS];
  for (int i = 0; i < x->ndim; i++) shape[i] = i == axis ? (raw ? raw : pos)->size : x->shape[i];
  gl_array src = { 0 }, view;
  gl_status st;
  if (v.arr == NULL) {
    int64_t none = 0;                  /* a 0-d array: the shape is never read */
    st = gl_op_full(&src, (gl_dtype)x->dtype, 0, &none, gl_array_device(x), v.s);
  } else if (v.arr->dtype != x->dtype || v.arr->storage == x->storage) {
    st = gl_op_copy(&src, v.arr, (gl_dtype)x->dtype, gl_array_device(x));
  } else {
    gl_array_view_of(&src, v.arr);
    st = GL_OK;
  }
  if (st != GL_OK) return st;
  view = src;
  st = gl_view_expand(&view, x->ndim, shape);
  if (st != GL_OK) {
    char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
    st = gl_fail(GL_EINVAL, "values of shape %s cannot be broadcast to the indexed shape %s",
                 gl_shape_str(v.arr->ndim, v.arr->shape, b1), gl_shape_str(x->ndim, shape, b2));
  }
  uint64_t version = x->storage->version;
  if (st == GL_OK && view.size > 0) st = gl_array_begin_write(x);
  /* adds into a 1-D x through the raw positions: the backend's own loop when it has one
  ** (it checks them and leaves x as it was after an error) */
  bool adds = raw && accumulate && x->ndim == 1 && be->scatter_add && gl_array_is_contiguous(x) &&
              (x->dtype == GL_FLOAT32 || x->dtype == GL_FLOAT64 || x->dtype == GL_INT32 || x->dtype == GL_INT64);
  if (st == GL_OK && view.size > 0 && adds) {
    st = be->scatter_add(x, raw, &view);
    if (st == GL_EINVAL) x->storage->version = version;    /* unchanged: its count of writes too */
  } else if (st == GL_OK && view.size > 0) {
    st = raw ? scatter_spans(be, x, axis, raw, &view, accumulate, version) : be->scatter(x, axis, pos, &view, accumulate);
  }
  gl_array_release(&src);
  return st;
}

gl_status gl_op_index_put(const gl_array *x, int axis, const gl_array *idx, gl_operand v, bool accumulate) {
  GL_TRY(gl_array_writable(x, NULL));
  GL_TRY(gl_same_device(x, idx));
  if (v.arr) GL_TRY(gl_same_device(x, v.arr));
  else GL_TRY(gl_scalar_check((gl_dtype)x->dtype, v.s));     /* even when idx is empty */
  GL_TRY(check_index_dtype(idx, "indices"));
  gl_array pos = { 0 }, vv = { 0 };
  bool direct = host_index(idx, gl_array_device(x));
  if (!direct) GL_TRY(device_positions(&pos, idx, x->shape[axis], axis, gl_array_device(x)));
  gl_status st = GL_OK;
  if (v.arr && idx->ndim != 1) {
    /* values broadcast against x.shape[:axis] + idx.shape + x.shape[axis+1:], then the
    ** idx axes are merged into one */
    int64_t full[GL_MAXDIMS], flat[GL_MAXDIMS];
    int nf = axis_shapes(x, axis, idx, flat, full);
    if (nf > GL_MAXDIMS) st = gl_fail(GL_EINVAL, "too many dimensions (at most %d)", GL_MAXDIMS);
    gl_array tmp = { 0 };
    if (st == GL_OK) st = gl_array_alloc(&tmp, (gl_dtype)x->dtype, nf, full, gl_array_device(x));
    if (st == GL_OK) {
      st = gl_op_assign(&tmp, v.arr);
      if (st == GL_EINVAL) {
        char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
        st = gl_fail(GL_EINVAL, "values of shape %s cannot be broadcast to the indexed shape %s",
                     gl_shape_str(v.arr->ndim, v.arr->shape, b1), gl_shape_str(nf, full, b2));
      }
    }
    if (st == GL_OK) st = reshaped(&vv, &tmp, x->ndim, flat);
    gl_array_release(&tmp);
    v.arr = &vv;
  }
  if (st == GL_OK) st = scatter_positions(x, axis, direct ? NULL : &pos, v, accumulate, direct ? idx : NULL);
  gl_array_release(&vv);
  gl_array_release(&pos);
  return st;
}

/* The largest (max) or smallest of the elements of src sent to each of n positions by idx
** (1-based, negatives from the end; src has idx's size, both any shape, read in C order):
** out (src's dtype) and seen (bool), both (n), as the backend's scatter_extreme gives them. */
gl_status gl_op_scatter_extreme(gl_array *out, gl_array *seen, int64_t n, const gl_array *idx,
                                const gl_array *src, bool max) {
  GL_TRY(gl_same_device(src, idx));
  GL_TRY(check_index_dtype(idx, "indices"));
  if (gl_dtype_is_complex((gl_dtype)src->dtype))
    return gl_fail(GL_EINVAL, "%s values have no order", gl_dtypes[src->dtype].name);
  if (src->size != idx->size)
    return gl_fail(GL_EINVAL, "src must have the index's %lld elements, got %lld", (long long)idx->size,
                   (long long)src->size);
  if (n < 0) return gl_fail(GL_EINVAL, "the number of positions must be >= 0, got %lld", (long long)n);
  const gl_backend *be;
  GL_TRY(gl_backend_of(src, GL_OP_INDEX, &be));
  gl_device dev = gl_array_device(src);
  char dn[16];
  if (be->scatter_extreme == NULL)
    return gl_fail(GL_ENOTSUP, "scatter_extreme is not supported on %s", gl_device_name(dev, dn));
  int64_t m = src->size;
  gl_array ix = { 0 }, flat = { 0 };
  gl_status st = GL_OK;
  if (idx->dtype == GL_INT64 && gl_array_is_contiguous(idx)) gl_array_view_of(&ix, idx);
  else st = gl_op_copy(&ix, idx, GL_INT64, dev);
  if (st == GL_OK) st = gl_view_reshape(&ix, 1, &m);
  if (st == GL_OK) st = reshaped(&flat, src, 1, &m);
  if (st == GL_OK) st = gl_array_alloc(out, (gl_dtype)src->dtype, 1, &n, dev);
  if (st == GL_OK) {
    st = gl_array_alloc(seen, GL_BOOL, 1, &n, dev);
    if (st != GL_OK) gl_array_release(out);
  }
  if (st == GL_OK) {
    st = be->scatter_extreme(out, seen, &ix, &flat, max);
    if (st != GL_OK) { gl_array_release(out); gl_array_release(seen); }
  }
  gl_array_release(&flat);
  gl_array_release(&ix);
  return st;
}

/* ---- boolean masks ------------------------------------------------------------------------- */

/* Checks mask against x (bool, shape equal to x's leading axes) and counts its trues. */
static gl_status mask_check(const gl_array *x, const gl_array *mask, int64_t **pos, int64_t *count) {
  GL_TRY(gl_same_device(x, mask));
  char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
  if (mask->dtype != GL_BOOL)
    return gl_fail(GL_EINVAL, "mask must be a bool array, got %s (compare first, e.g. x:gt(0))",
                   gl_dtypes[mask->dtype].name);
  bool ok = mask->ndim <= x->ndim;
  for (int i = 0; ok && i < mask->ndim; i++) ok = mask->shape[i] == x->shape[i];
  if (!ok)
    return gl_fail(GL_EINVAL, "mask of shape %s does not match the array of shape %s",
                   gl_shape_str(mask->ndim, mask->shape, b1), gl_shape_str(x->ndim, x->shape, b2));
  uint8_t *h = malloc((size_t)(mask->size > 0 ? mask->size : 1));
  if (h == NULL) return gl_fail(GL_ENOMEM, "out of host memory for a mask of %lld elements", (long long)mask->size);
  gl_status st = mask->size > 0 ? gl_op_to_host(h, mask) : GL_OK;
  int64_t c = 0;
  for (int64_t i = 0; st == GL_OK && i < mask->size; i++) c += h[i] != 0;
  size_t nbytes;
  if (st == GL_OK && pos) st = gl_nbytes(c > 0 ? c : 1, GL_INT64, &nbytes);
  if (st == GL_OK && pos) {
    *pos = malloc(nbytes);
    if (*pos == NULL) st = gl_fail(GL_ENOMEM, "out of host memory for %lld positions", (long long)c);
    else for (int64_t i = 0, k = 0; i < mask->size; i++) if (h[i]) (*pos)[k++] = i;
  }
  free(h);
  *count = c;
  return st;
}

gl_status gl_op_mask_select(gl_array *out, const gl_array *x, const gl_array *mask) {
  int64_t count;
  GL_TRY(mask_check(x, mask, NULL, &count));
  const gl_backend *be;
  GL_TRY(gl_backend_of(x, GL_OP_INDEX, &be));
  int k = mask->ndim;
  int64_t shape[GL_MAXDIMS], inner = 1;
  shape[0] = count;
  for (int i = k; i < x->ndim; i++) { shape[1 + i - k] = x->shape[i]; inner *= x->shape[i]; }
  GL_TRY(gl_array_alloc(out, (gl_dtype)x->dtype, 1 + x->ndim - k, shape, gl_array_device(x)));
  /* the mask viewed over x's trailing axes with stride 0 */
  gl_array m = *mask;
  m.ndim = x->ndim;
  for (int i = k; i < x->ndim; i++) { m.shape[i] = x->shape[i]; m.strides[i] = 0; }
  set_size(&m);
  gl_array flat = *out;
  flat.ndim = 1;
  flat.shape[0] = count * inner;
  flat.strides[0] = 1;
  gl_status st = GL_OK;
  if (out->size > 0) st = be->mask_select(&flat, x, &m);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_mask_assign(const gl_array *x, const gl_array *mask, gl_operand v) {
  GL_TRY(gl_array_writable(x, NULL));          /* before x is copied to a contiguous form */
  if (v.arr) GL_TRY(gl_same_device(x, v.arr));
  else GL_TRY(gl_scalar_check((gl_dtype)x->dtype, v.s));     /* even when nothing is selected */
  int64_t count, *h = NULL;
  GL_TRY(mask_check(x, mask, &h, &count));
  int k = mask->ndim;
  /* x as (positions of the mask's axes, trailing axes...) */
  int64_t shape[GL_MAXDIMS], sel[GL_MAXDIMS];
  shape[0] = mask->size;
  sel[0] = count;
  for (int i = k; i < x->ndim; i++) sel[1 + i - k] = shape[1 + i - k] = x->shape[i];
  int nd = 1 + x->ndim - k;
  gl_array xv = { 0 }, pos = { 0 }, picked = { 0 };
  gl_operand val = v;
  bool copied = false;
  gl_status st = reshaped(&xv, x, nd, shape);
  if (st == GL_OK) copied = xv.storage != x->storage;
  if (st == GL_OK) st = gl_op_from_host(&pos, h, GL_INT64, 1, &count, gl_array_device(x));
  if (st == GL_OK && v.arr) {
    /* NumPy: values broadcast against the selection; else a same-shape array is read
    ** through the mask (x[mask] = v[mask]) */
    int64_t tmp[GL_MAXDIMS];
    int nt;
    bool fits = gl_broadcast_shapes(v.arr->ndim, v.arr->shape, nd, sel, &nt, tmp) == GL_OK && nt == nd &&
                memcmp(tmp, sel, (size_t)nd * sizeof *tmp) == 0;
    bool same = v.arr->ndim == x->ndim && memcmp(v.arr->shape, x->shape, (size_t)x->ndim * sizeof *tmp) == 0;
    char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ], b3[GL_SHAPE_BUFSZ];
    if (!fits && same) {
      st = gl_op_mask_select(&picked, v.arr, mask);
      val.arr = &picked;
    } else if (!fits) {
      st = gl_fail(GL_EINVAL, "values of shape %s fit neither the %lld selected elements %s nor the array's shape %s",
                   gl_shape_str(v.arr->ndim, v.arr->shape, b1), (long long)count,
                   gl_shape_str(nd, sel, b2), gl_shape_str(x->ndim, x->shape, b3));
    }
  }
  if (st == GL_OK && count > 0) st = scatter_positions(&xv, 0, &pos, val, false, NULL);
  if (st == GL_OK && copied) {          /* worked on a contiguous copy: write it back */
    st = gl_view_reshape(&xv, x->ndim, x->shape);
    if (st == GL_OK) st = gl_op_assign(x, &xv);
  }
  free(h);
  gl_array_release(&picked);
  gl_array_release(&pos);
  gl_array_release(&xv);
  return st;
}

/* ---- sizes of joined, tiled and repeated results ------------------------------------------------ */

/* Their extents are sums and products of the inputs' extents and of counts the user gave;
** each is formed with a checked add or multiply (checked.h). When one passes int64 the
** result is too big, and the message counts its elements as a long double: 'extent' on
** 'axis' times the other extents of 'shape'. */
static gl_status too_big_along(int ndim, int64_t *shape, int axis, long double extent, gl_dtype dt) {
  shape[axis] = 1;
  return gl_too_big(extent * gl_shape_count(ndim, shape), dt);
}

/* shape[axis] = the sum of the arrays' extents on 'axis'. */
static gl_status joined_extent(int n, const gl_array *const *xs, int axis, gl_dtype dt, int64_t *shape) {
  int64_t sum = 0;
  bool over = false;
  for (int i = 0; i < n && !over; i++) over = gl_add_overflow(sum, xs[i]->shape[axis], &sum);
  if (!over) { shape[axis] = sum; return GL_OK; }
  long double ext = 0;                   /* exact below 2^64 */
  for (int i = 0; i < n; i++) ext += (long double)xs[i]->shape[axis];
  return too_big_along(xs[0]->ndim, shape, axis, ext, dt);
}

/* shape[i] = xs[i] * rs[i] on each of the d axes. */
static gl_status tiled_shape(int d, const int64_t *xs, const int64_t *rs, gl_dtype dt, int64_t *shape) {
  bool over = false;
  for (int i = 0; i < d; i++) over = gl_mul_overflow(xs[i], rs[i], &shape[i]) || over;
  if (!over) return GL_OK;
  long double n = 1;
  for (int i = 0; i < d; i++)
    if (xs[i] != 0 && rs[i] != 0) n *= (long double)xs[i] * (long double)rs[i];
  return gl_too_big(n, dt);
}

/* ---- joining ------------------------------------------------------------------------------- */

gl_status gl_op_concat(gl_array *out, int n, const gl_array *const *xs, int axis) {
  if (n < 1) return gl_fail(GL_EINVAL, "need at least one array to concatenate");
  const gl_array *a = xs[0];
  if (a->ndim == 0) return gl_fail(GL_EINVAL, "array #1 is 0-d; 0-d arrays cannot be concatenated");
  gl_dtype dt = (gl_dtype)a->dtype;
  int64_t shape[GL_MAXDIMS];
  memcpy(shape, a->shape, sizeof shape);
  shape[axis] = 0;
  char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
  for (int i = 0; i < n; i++) {
    const gl_array *b = xs[i];
    GL_TRY(gl_same_device(a, b));
    bool ok = b->ndim == a->ndim;
    for (int d = 0; ok && d < a->ndim; d++) ok = d == axis || b->shape[d] == a->shape[d];
    if (!ok)
      return gl_fail(GL_EINVAL, "array #%d has shape %s but array #1 has shape %s (shapes must match except on axis %d)",
                     i + 1, gl_shape_str(b->ndim, b->shape, b1), gl_shape_str(a->ndim, a->shape, b2), axis + 1);
    dt = gl_promote(dt, (gl_dtype)b->dtype);
  }
  GL_TRY(joined_extent(n, xs, axis, dt, shape));
  GL_TRY(gl_array_alloc(out, dt, a->ndim, shape, gl_array_device(a)));
  int64_t at = 0;
  gl_status st = GL_OK;
  for (int i = 0; i < n && st == GL_OK; i++) {
    gl_array v = *out;
    gl_view_slice(&v, axis, at, 1, xs[i]->shape[axis]);
    at += xs[i]->shape[axis];
    if (v.size > 0) st = gl_op_assign(&v, xs[i]);
  }
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_stack(gl_array *out, int n, const gl_array *const *xs, int axis) {
  if (n < 1) return gl_fail(GL_EINVAL, "need at least one array to stack");
  const gl_array *a = xs[0];
  if (a->ndim + 1 > GL_MAXDIMS) return gl_fail(GL_EINVAL, "result would have %d dimensions (at most %d)", a->ndim + 1, GL_MAXDIMS);
  gl_dtype dt = (gl_dtype)a->dtype;
  char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
  for (int i = 0; i < n; i++) {
    const gl_array *b = xs[i];
    GL_TRY(gl_same_device(a, b));
    if (b->ndim != a->ndim || memcmp(b->shape, a->shape, (size_t)a->ndim * sizeof *a->shape) != 0)
      return gl_fail(GL_EINVAL, "array #%d has shape %s but array #1 has shape %s (stack needs equal shapes)",
                     i + 1, gl_shape_str(b->ndim, b->shape, b1), gl_shape_str(a->ndim, a->shape, b2));
    dt = gl_promote(dt, (gl_dtype)b->dtype);
  }
  int64_t shape[GL_MAXDIMS];
  for (int d = 0, s = 0; d <= a->ndim; d++) shape[d] = d == axis ? n : a->shape[s++];
  GL_TRY(gl_array_alloc(out, dt, a->ndim + 1, shape, gl_array_device(a)));
  gl_status st = GL_OK;
  for (int i = 0; i < n && st == GL_OK; i++) {
    gl_array v = *out;
    gl_view_select(&v, axis, i);
    if (v.size > 0) st = gl_op_assign(&v, xs[i]);
  }
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* ---- tile, repeat, roll ---------------------------------------------------------------------- */

gl_status gl_op_tile(gl_array *out, const gl_array *x, int nreps, const int64_t *reps) {
  int d = x->ndim > nreps ? x->ndim : nreps;
  if (d > GL_MAXDIMS) return gl_fail(GL_EINVAL, "%d repetitions for at most %d dimensions", nreps, GL_MAXDIMS);
  int64_t xs[GL_MAXDIMS], rs[GL_MAXDIMS], xst[GL_MAXDIMS], shape[GL_MAXDIMS];
  for (int i = 0; i < d; i++) {
    int xi = i - (d - x->ndim), ri = i - (d - nreps);
    xs[i] = xi >= 0 ? x->shape[xi] : 1;
    xst[i] = xi >= 0 ? x->strides[xi] : 0;
    rs[i] = ri >= 0 ? reps[ri] : 1;
    if (rs[i] < 0) return gl_fail(GL_EINVAL, "repetition %lld is negative", (long long)rs[i]);
  }
  GL_TRY(tiled_shape(d, xs, rs, (gl_dtype)x->dtype, shape));
  GL_TRY(gl_array_alloc(out, (gl_dtype)x->dtype, d, shape, gl_array_device(x)));
  if (out->size == 0) return GL_OK;
  /* out viewed as (r0, x0, r1, x1, ...) and x broadcast over the r axes */
  gl_array dv = *out, sv = *x;
  int n = 0;
  for (int i = 0; i < d; i++) {
    if (rs[i] > 1) {
      if (n == GL_MAXDIMS) goto toomany;
      dv.shape[n] = sv.shape[n] = rs[i];
      dv.strides[n] = xs[i] * out->strides[i];
      sv.strides[n++] = 0;
    }
    if (xs[i] > 1 || rs[i] == 1) {
      if (n == GL_MAXDIMS) goto toomany;
      dv.shape[n] = sv.shape[n] = xs[i];
      dv.strides[n] = out->strides[i];
      sv.strides[n++] = xst[i];
    }
  }
  dv.ndim = sv.ndim = (uint8_t)n;
  set_size(&dv);
  set_size(&sv);
  gl_status st = gl_op_assign(&dv, &sv);
  if (st != GL_OK) gl_array_release(out);
  return st;
toomany:
  gl_array_release(out);
  return gl_fail(GL_EINVAL, "tile: too many tiled axes (at most %d axes of repeats and data together)", GL_MAXDIMS);
}

gl_status gl_op_repeat(gl_array *out, const gl_array *x, int64_t n, int axis) {
  if (n < 0) return gl_fail(GL_EINVAL, "repeat count %lld is negative", (long long)n);
  if (x->ndim + 1 > GL_MAXDIMS) return gl_fail(GL_EINVAL, "repeat needs at most %d dimensions", GL_MAXDIMS - 1);
  int64_t shape[GL_MAXDIMS];
  memcpy(shape, x->shape, sizeof shape);
  if (gl_mul_overflow(x->shape[axis], n, &shape[axis]))
    return too_big_along(x->ndim, shape, axis, (long double)x->shape[axis] * (long double)n, (gl_dtype)x->dtype);
  GL_TRY(gl_array_alloc(out, (gl_dtype)x->dtype, x->ndim, shape, gl_array_device(x)));
  if (out->size == 0) return GL_OK;
  /* out as (..., x_axis, n, ...) and x with a stride-0 axis of n after 'axis' */
  gl_array dv = *out, sv = *x;
  for (int i = x->ndim; i > axis + 1; i--) {
    dv.shape[i] = dv.shape[i - 1]; dv.strides[i] = dv.strides[i - 1];
    sv.shape[i] = sv.shape[i - 1]; sv.strides[i] = sv.strides[i - 1];
  }
  dv.shape[axis] = sv.shape[axis] = x->shape[axis];
  dv.strides[axis] = out->strides[axis] * n;
  dv.shape[axis + 1] = sv.shape[axis + 1] = n;
  dv.strides[axis + 1] = out->strides[axis];
  sv.strides[axis + 1] = 0;
  dv.ndim = sv.ndim = (uint8_t)(x->ndim + 1);
  set_size(&dv);
  set_size(&sv);
  gl_status st = gl_op_assign(&dv, &sv);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

gl_status gl_op_repeat_counts(gl_array *out, const gl_array *x, const gl_array *counts, int axis) {
  GL_TRY(gl_same_device(x, counts));
  GL_TRY(check_index_dtype(counts, "repeat counts"));
  int64_t len = x->shape[axis];
  if (counts->size != len && counts->size != 1)
    return gl_fail(GL_EINVAL, "%lld repeat counts for an axis of size %lld", (long long)counts->size, (long long)len);
  int64_t *c;
  GL_TRY(host_int64(counts, &c));
  for (int64_t i = 0; i < counts->size; i++) {
    if (c[i] < 0) {
      long long bad = (long long)c[i];
      free(c);
      return gl_fail(GL_EINVAL, "repeat count %lld is negative", bad);
    }
  }
  if (counts->size == 1) {
    int64_t n = c[0];
    free(c);
    return gl_op_repeat(out, x, n, axis);
  }
  /* the result's extent on axis, its bytes and the host positions' bytes, all checked
  ** before anything is allocated */
  int64_t shape[GL_MAXDIMS], total = 0;
  memcpy(shape, x->shape, sizeof shape);
  bool over = false;
  for (int64_t i = 0; i < len && !over; i++) over = gl_add_overflow(total, c[i], &total);
  gl_status st;
  size_t obytes, pbytes;
  if (over) {
    long double sum = 0;                 /* exact below 2^64 */
    for (int64_t i = 0; i < len; i++) sum += (long double)c[i];
    st = too_big_along(x->ndim, shape, axis, sum, (gl_dtype)x->dtype);
  } else {
    shape[axis] = total;
    st = gl_shape_nbytes(x->ndim, shape, (gl_dtype)x->dtype, &obytes);
  }
  if (st == GL_OK) st = gl_nbytes(total > 0 ? total : 1, GL_INT64, &pbytes);
  int64_t *p = st == GL_OK ? malloc(pbytes) : NULL;
  if (st == GL_OK && p == NULL) st = gl_fail(GL_ENOMEM, "out of host memory for %lld positions", (long long)total);
  if (st != GL_OK) { free(c); return st; }
  for (int64_t i = 0, k = 0; i < len; i++) for (int64_t j = 0; j < c[i]; j++) p[k++] = i;
  free(c);
  gl_array pos = { 0 };
  st = gl_op_from_host(&pos, p, GL_INT64, 1, &total, gl_array_device(x));
  free(p);
  if (st != GL_OK) return st;
  const gl_backend *be;
  st = gl_backend_of(x, GL_OP_INDEX, &be);
  if (st == GL_OK) st = gl_array_alloc(out, (gl_dtype)x->dtype, x->ndim, shape, gl_array_device(x));
  if (st == GL_OK && out->size > 0) {
    st = be->gather(out, x, axis, &pos);
    if (st != GL_OK) gl_array_release(out);
  }
  gl_array_release(&pos);
  return st;
}

gl_status gl_op_roll(gl_array *out, const gl_array *x, int64_t shift, int axis) {
  GL_TRY(gl_array_alloc(out, (gl_dtype)x->dtype, x->ndim, x->shape, gl_array_device(x)));
  if (out->size == 0) return GL_OK;
  int64_t n = x->shape[axis], s = ((shift % n) + n) % n;
  gl_array d1 = *out, s1 = *x, d2 = *out, s2 = *x;
  gl_view_slice(&d1, axis, s, 1, n - s);      /* out[s:] = x[:n-s] */
  gl_view_slice(&s1, axis, 0, 1, n - s);
  gl_view_slice(&d2, axis, 0, 1, s);          /* out[:s] = x[n-s:] */
  gl_view_slice(&s2, axis, n - s, 1, s);
  gl_status st = gl_op_assign(&d1, &s1);
  if (st == GL_OK && s > 0) st = gl_op_assign(&d2, &s2);
  if (st != GL_OK) gl_array_release(out);
  return st;
}

/* ---- sort -------------------------------------------------------------------------------------- */

gl_status gl_op_sort(gl_array *values, gl_array *indices, const gl_array *x, int axis, bool descending) {
  const gl_backend *be;
  GL_TRY(gl_backend_of(x, GL_OP_SORT, &be));
  gl_array xv = *x;
  if (xv.ndim == 0) { xv.ndim = 1; xv.shape[0] = 1; xv.strides[0] = 1; axis = 0; }
  gl_status st = GL_OK;
  if (values) st = gl_array_alloc(values, (gl_dtype)x->dtype, xv.ndim, xv.shape, gl_array_device(x));
  if (st == GL_OK && indices) st = gl_array_alloc(indices, GL_INT64, xv.ndim, xv.shape, gl_array_device(x));
  if (st == GL_OK && x->size > 0) st = be->sort(values, indices, &xv, axis, descending);
  if (st == GL_OK && indices && x->size > 0) {
    gl_operand one = { NULL, gl_scalar_int(1) };
    st = gl_op_binary_(indices, GL_B_add, one);          /* 1-based positions */
  }
  if (st == GL_OK && x->ndim == 0) {
    if (values) values->ndim = 0;
    if (indices) indices->ndim = 0;
  }
  if (st != GL_OK) {
    if (values) gl_array_release(values);
    if (indices) gl_array_release(indices);
  }
  return st;
}

gl_status gl_op_topk(gl_array *values, gl_array *indices, const gl_array *x, int64_t k, int axis,
                     bool largest) {
  if (x->ndim == 0) return gl_fail(GL_EINVAL, "topk needs an array of at least 1 dimension");
  int64_t n = x->shape[axis];
  if (k < 0 || k > n)
    return gl_fail(GL_EINVAL, "k = %lld is out of range for axis %d of size %lld", (long long)k, axis + 1, (long long)n);
  gl_array sv = { 0 }, si = { 0 };
  GL_TRY(gl_op_sort(&sv, &si, x, axis, largest));
  gl_view_slice(&sv, axis, 0, 1, k);
  gl_view_slice(&si, axis, 0, 1, k);
  gl_status st = gl_op_copy(values, &sv, (gl_dtype)sv.dtype, gl_array_device(x));
  if (st == GL_OK) {
    st = gl_op_copy(indices, &si, GL_INT64, gl_array_device(x));
    if (st != GL_OK) gl_array_release(values);
  }
  gl_array_release(&sv);
  gl_array_release(&si);
  return st;
}
