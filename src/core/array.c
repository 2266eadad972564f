/*
** array.c — descriptors, views and broadcasting. Nothing here touches element data.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"

/* ---- sizes (checked.h) ------------------------------------------------------- */

/* "array is too big (N elements of DT)"; dtname NULL leaves the dtype out. */
static gl_status too_big(long double n, const char *dtname) {
  const char *of = dtname ? " elements of " : " elements";
  if (dtname == NULL) dtname = "";
  if (n < 0x1p63L)
    return gl_fail(GL_ETOOBIG, "array is too big (%lld%s%s)", (long long)n, of, dtname);
  return gl_fail(GL_ETOOBIG, "array is too big (about %.3Lg%s%s)", n, of, dtname);
}

gl_status gl_too_big(long double n, gl_dtype dt) { return too_big(n, gl_dtypes[dt].name); }

long double gl_shape_count(int ndim, const int64_t *shape) {
  long double n = 1;
  for (int i = 0; i < ndim; i++)
    if (shape[i] != 0) n *= (long double)shape[i];
  return n;
}

/* The product of the non-zero extents, checked against GL_MAXSIZE; 0 if any is 0. */
static gl_status shape_count(int ndim, const int64_t *shape, const char *dtname, int64_t *size) {
  int64_t n = 1;
  bool zero = false;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] == 0) { zero = true; continue; }
    if (gl_mul_overflow(n, shape[i], &n) || n > GL_MAXSIZE)
      return too_big(gl_shape_count(ndim, shape), dtname);
  }
  *size = zero ? 0 : n;
  return GL_OK;
}

gl_status gl_shape_size(int ndim, const int64_t *shape, gl_dtype dt, int64_t *size) {
  return shape_count(ndim, shape, gl_dtypes[dt].name, size);
}

gl_status gl_nbytes(int64_t n, gl_dtype dt, size_t *nbytes) {
  int64_t b;
  if (n < 0 || n > GL_MAXSIZE || gl_mul_overflow(n, (int64_t)gl_dtypes[dt].size, &b) || b > GL_MAXBYTES)
    return gl_too_big((long double)n, dt);
  *nbytes = (size_t)b;
  return GL_OK;
}

static gl_status shape_valid(int ndim, const int64_t *shape) {
  if (ndim < 0 || ndim > GL_MAXDIMS)
    return gl_fail(GL_EINVAL, "%d dimensions (at most %d)", ndim, GL_MAXDIMS);
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0)
      return gl_fail(GL_EINVAL, "negative dimension %lld", (long long)shape[i]);
  return GL_OK;
}

gl_status gl_shape_nbytes(int ndim, const int64_t *shape, gl_dtype dt, size_t *nbytes) {
  int64_t n;
  GL_TRY(shape_valid(ndim, shape));
  GL_TRY(gl_shape_size(ndim, shape, dt, &n));
  return gl_nbytes(n, dt, nbytes);
}

/* ---- shapes ------------------------------------------------------------------ */

const char *gl_shape_str(int ndim, const int64_t *shape, char *buf) {
  char *p = buf;
  *p++ = '(';
  for (int i = 0; i < ndim; i++)
    p += sprintf(p, i ? ",%lld" : "%lld", (long long)shape[i]);
  if (ndim == 1) *p++ = ',';      /* like Python: (3,) */
  *p++ = ')';
  *p = '\0';
  return buf;
}

gl_status gl_shape_check(int ndim, const int64_t *shape, int64_t *size) {
  GL_TRY(shape_valid(ndim, shape));
  return shape_count(ndim, shape, NULL, size);
}

void gl_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
}

/* The descriptor of a contiguous array of a checked shape (no storage yet). */
static void init_checked(gl_array *a, gl_dtype dt, int ndim, const int64_t *shape, int64_t size) {
  a->ndim = (uint8_t)ndim;
  a->dtype = (uint8_t)dt;
  a->lua_ref = 0;                    /* storage to come is the allocator's */
  a->offset = 0;
  a->size = size;
  memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
  gl_contiguous_strides(ndim, shape, a->strides);
}

gl_status gl_array_init(gl_array *a, gl_dtype dt, int ndim, const int64_t *shape) {
  size_t nbytes;
  GL_TRY(gl_shape_nbytes(ndim, shape, dt, &nbytes));
  init_checked(a, dt, ndim, shape, (int64_t)(nbytes / gl_dtypes[dt].size));   /* exact */
  return GL_OK;
}

void gl_array_init_like(gl_array *a, gl_dtype dt, const gl_array *like) {
  init_checked(a, dt, like->ndim, like->shape, like->size);
}


_Thread_local unsigned long gl_lua_owned_retains;     /* array.h's counter */

void gl_array_view_of(gl_array *dst, const gl_array *src) {
  *dst = *src;
  gl_storage_retain(dst->storage);
}

bool gl_array_is_contiguous(const gl_array *a) {
  int64_t s = 1;
  for (int i = a->ndim - 1; i >= 0; i--) {
    if (a->shape[i] != 1 && a->strides[i] != s) return a->size == 0;
    s *= a->shape[i];
  }
  return true;
}

/* The axes of extent > 1 sorted by |stride| must each start past the last element that
** the smaller ones reach together: then every index names its own element. A stride of
** 0 fails at once. Views of a contiguous block (slices, steps, permutations, reshapes)
** always pass, so only broadcast views are refused. */
bool gl_array_overlaps_self(const gl_array *a) {
  if (a->size <= 1 || gl_array_is_contiguous(a)) return false;
  int64_t ext[GL_MAXDIMS], str[GL_MAXDIMS];
  int n = 0;
  for (int i = 0; i < a->ndim; i++) {
    if (a->shape[i] == 1) continue;
    int64_t s = a->strides[i] < 0 ? -a->strides[i] : a->strides[i];
    int k = n++;
    for (; k > 0 && str[k - 1] > s; k--) { str[k] = str[k - 1]; ext[k] = ext[k - 1]; }
    str[k] = s;
    ext[k] = a->shape[i];
  }
  int64_t reach = 0;                 /* the farthest offset the smaller axes reach */
  for (int k = 0; k < n; k++) {
    if (str[k] <= reach) return true;
    reach += (ext[k] - 1) * str[k];
  }
  return false;
}

gl_status gl_array_writable(const gl_array *a, const char *what) {
  if (!gl_array_overlaps_self(a)) return GL_OK;
  return gl_fail(GL_EINVAL, "%s is a broadcast view whose elements overlap (read-only): "
                 "copy it first (x:copy())", what ? what : "array");
}

gl_status gl_array_begin_write(const gl_array *a) {
  GL_TRY(gl_array_writable(a, NULL));
  a->storage->version++;
  return GL_OK;
}

/* ---- views ------------------------------------------------------------------- */

gl_status gl_axis_norm(int64_t axis, int ndim, int *out) {
  int64_t a = axis < 0 ? axis + ndim : axis - 1;
  if (ndim == 0) return gl_fail(GL_EINVAL, "axis %lld is out of range: a 0-d array has no axes", (long long)axis);
  if (ndim == 1 && (axis == 0 || a < 0 || a >= ndim))
    return gl_fail(GL_EINVAL, "axis %lld is out of range for a 1-d array (its axis is 1 or -1)", (long long)axis);
  if (axis == 0 || a < 0 || a >= ndim)
    return gl_fail(GL_EINVAL, "axis %lld is out of range for %d-d array (axes are 1..%d or -%d..-1)",
                   (long long)axis, ndim, ndim, ndim);
  *out = (int)a;
  return GL_OK;
}

/* Computes strides for viewing 'v' with a new shape, NumPy's _attempt_nocopy_reshape:
** walk both shapes in chunks whose products agree; inside each chunk of the old shape
** the axes must be contiguous with each other. */
static bool nocopy_strides(const gl_array *v, int nd, const int64_t *shape, int64_t *out) {
  int64_t oshape[GL_MAXDIMS], ostr[GL_MAXDIMS];
  int ond = 0;
  for (int i = 0; i < v->ndim; i++)          /* drop size-1 axes of the old shape */
    if (v->shape[i] != 1) { oshape[ond] = v->shape[i]; ostr[ond] = v->strides[i]; ond++; }
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nd && oi < ond) {
    int64_t np = shape[ni], op = oshape[oi];
    while (np != op) {
      if (np < op) np *= shape[nj++];
      else op *= oshape[oj++];
    }
    for (int k = oi; k < oj - 1; k++)
      if (ostr[k] != oshape[k + 1] * ostr[k + 1]) return false;
    out[nj - 1] = ostr[oj - 1];
    for (int k = nj - 1; k > ni; k--) out[k - 1] = out[k] * shape[k];
    ni = nj++; oi = oj++;
  }
  int64_t last = ni > 0 ? out[ni - 1] : 1;
  for (int k = ni; k < nd; k++) out[k] = last;   /* trailing size-1 axes */
  return true;
}

gl_status gl_view_reshape(gl_array *v, int ndim, const int64_t *shape_in) {
  int64_t shape[GL_MAXDIMS];
  if (ndim > GL_MAXDIMS) return gl_fail(GL_EINVAL, "%d dimensions (at most %d)", ndim, GL_MAXDIMS);
  int infer = -1;
  for (int i = 0; i < ndim; i++) {
    shape[i] = shape_in[i];
    if (shape[i] == -1) {
      if (infer >= 0) return gl_fail(GL_EINVAL, "can only specify one unknown dimension (-1)");
      infer = i;
    } else if (shape[i] < 0) {
      return gl_fail(GL_EINVAL, "negative dimension %lld", (long long)shape[i]);
    }
  }
  /* the known extents alone must make a valid shape (-1 counts as 1 here) */
  if (infer >= 0) shape[infer] = 1;
  int64_t known;
  GL_TRY(gl_shape_size(ndim, shape, (gl_dtype)v->dtype, &known));
  char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
  if (infer >= 0) {
    if (known == 0 || v->size % known != 0) {
      shape[infer] = -1;
      return gl_fail(GL_EINVAL, "cannot reshape array of size %lld into shape %s",
                     (long long)v->size, gl_shape_str(ndim, shape, b1));
    }
    shape[infer] = v->size / known;
    known = v->size;
  }
  if (known != v->size)
    return gl_fail(GL_EINVAL, "cannot reshape array of size %lld into shape %s",
                   (long long)v->size, gl_shape_str(ndim, shape, b1));
  int64_t strides[GL_MAXDIMS];
  if (v->size == 0 || v->size == 1) gl_contiguous_strides(ndim, shape, strides);
  else if (!nocopy_strides(v, ndim, shape, strides))
    return gl_fail(GL_ENOTSUP, "view of shape %s as %s needs a copy (use reshape or contiguous)",
                   gl_shape_str(v->ndim, v->shape, b2), gl_shape_str(ndim, shape, b1));
  v->ndim = (uint8_t)ndim;
  memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
  memcpy(v->strides, strides, (size_t)ndim * sizeof *strides);
  return GL_OK;
}

gl_status gl_view_permute(gl_array *v, const int *perm) {
  int64_t shape[GL_MAXDIMS], strides[GL_MAXDIMS];
  bool seen[GL_MAXDIMS] = { false };
  for (int i = 0; i < v->ndim; i++) {
    int p = perm[i];
    if (p < 0 || p >= v->ndim || seen[p])
      return gl_fail(GL_EINVAL, "axes do not form a permutation of 1..%d", v->ndim);
    seen[p] = true;
    shape[i] = v->shape[p];
    strides[i] = v->strides[p];
  }
  memcpy(v->shape, shape, sizeof shape);
  memcpy(v->strides, strides, sizeof strides);
  return GL_OK;
}

gl_status gl_view_transpose(gl_array *v, int a0, int a1) {
  if (a0 < 0 || a0 >= v->ndim || a1 < 0 || a1 >= v->ndim)
    return gl_fail(GL_EINVAL, "axis out of range for %d-d array", v->ndim);
  int64_t t = v->shape[a0]; v->shape[a0] = v->shape[a1]; v->shape[a1] = t;
  t = v->strides[a0]; v->strides[a0] = v->strides[a1]; v->strides[a1] = t;
  return GL_OK;
}

gl_status gl_view_squeeze(gl_array *v, int axis) {
  if (axis >= 0) {
    if (axis >= v->ndim) return gl_fail(GL_EINVAL, "axis out of range for %d-d array", v->ndim);
    if (v->shape[axis] != 1)
      return gl_fail(GL_EINVAL, "cannot squeeze axis %d of size %lld (only size-1 axes)",
                     axis + 1, (long long)v->shape[axis]);
  }
  int n = 0;
  for (int i = 0; i < v->ndim; i++) {
    bool drop = axis >= 0 ? i == axis : v->shape[i] == 1;
    if (!drop) { v->shape[n] = v->shape[i]; v->strides[n] = v->strides[i]; n++; }
  }
  v->ndim = (uint8_t)n;
  return GL_OK;
}

gl_status gl_view_unsqueeze(gl_array *v, int axis) {
  if (v->ndim >= GL_MAXDIMS) return gl_fail(GL_EINVAL, "too many dimensions (at most %d)", GL_MAXDIMS);
  if (axis < 0 || axis > v->ndim) return gl_fail(GL_EINVAL, "axis out of range for %d-d array", v->ndim);
  for (int i = v->ndim; i > axis; i--) { v->shape[i] = v->shape[i - 1]; v->strides[i] = v->strides[i - 1]; }
  v->ndim++;
  v->shape[axis] = 1;
  v->strides[axis] = axis + 1 < v->ndim ? v->strides[axis + 1] * v->shape[axis + 1] : 1;
  return GL_OK;
}

gl_status gl_view_expand(gl_array *v, int ndim, const int64_t *shape) {
  char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
  if (ndim < v->ndim || ndim > GL_MAXDIMS) goto bad;
  int64_t nshape[GL_MAXDIMS], nstr[GL_MAXDIMS];
  int lead = ndim - v->ndim;
  for (int i = 0; i < ndim; i++) {
    int64_t want = shape[i];
    if (i < lead) {
      if (want < 0) goto bad;
      nshape[i] = want; nstr[i] = 0;
      continue;
    }
    int64_t have = v->shape[i - lead];
    if (want == -1) want = have;
    if (want == have) { nshape[i] = have; nstr[i] = v->strides[i - lead]; }
    else if (have == 1 && want >= 0) { nshape[i] = want; nstr[i] = 0; }
    else goto bad;
  }
  int64_t size;
  GL_TRY(gl_shape_size(ndim, nshape, (gl_dtype)v->dtype, &size));
  v->ndim = (uint8_t)ndim;
  v->size = size;
  memcpy(v->shape, nshape, (size_t)ndim * sizeof *nshape);
  memcpy(v->strides, nstr, (size_t)ndim * sizeof *nstr);
  return GL_OK;
bad:
  return gl_fail(GL_EINVAL, "cannot expand shape %s to %s",
                 gl_shape_str(v->ndim, v->shape, b1), gl_shape_str(ndim, shape, b2));
}

/* PyTorch's unfold: axis holds the (n - size) / step + 1 windows, a new last axis the size
** elements of each (the axis's stride). Windows that overlap (step < size) make a view
** whose elements overlap, read-only as expand's are (gl_array_writable). */
gl_status gl_view_unfold(gl_array *v, int axis, int64_t size, int64_t step) {
  if (v->ndim >= GL_MAXDIMS) return gl_fail(GL_EINVAL, "unfold would give %d dimensions (at most %d)", v->ndim + 1, GL_MAXDIMS);
  if (axis < 0 || axis >= v->ndim) return gl_fail(GL_EINVAL, "unfold: axis %d is out of range", axis + 1);
  if (step < 1) return gl_fail(GL_EINVAL, "step must be >= 1, got %lld", (long long)step);
  int64_t n = v->shape[axis];
  if (size < 0 || size > n)
    return gl_fail(GL_EINVAL, "size %lld is out of range for axis %d of size %lld", (long long)size, axis + 1, (long long)n);
  int64_t nshape[GL_MAXDIMS], nsize;
  memcpy(nshape, v->shape, (size_t)v->ndim * sizeof *nshape);
  nshape[axis] = (n - size) / step + 1;
  nshape[v->ndim] = size;
  GL_TRY(gl_shape_size(v->ndim + 1, nshape, (gl_dtype)v->dtype, &nsize));
  v->strides[v->ndim] = v->strides[axis];
  if (nshape[axis] > 1) v->strides[axis] *= step;     /* (step < n then: no overflow) */
  v->shape[axis] = nshape[axis];
  v->shape[v->ndim] = size;
  v->ndim++;
  v->size = nsize;
  return GL_OK;
}

static int64_t shape_size(int ndim, const int64_t *shape) {
  int64_t s = 1;
  for (int i = 0; i < ndim; i++) s *= shape[i];
  return s;
}

/* With two elements or more the new stride spans no more than the axis did, so it fits;
** with one or none it is never used, and a huge step (x[{{1, 3, 2^62}}]) must not be
** multiplied into it. The offset moves only when the view has elements: an empty array
** has no storage to reach, and (0, 2^62):flip() would move it 2^62 - 1 elements out (its
** bytes past int64). */
void gl_view_slice(gl_array *v, int axis, int64_t start, int64_t step, int64_t count) {
  int64_t stride = v->strides[axis];
  v->shape[axis] = count;
  v->size = shape_size(v->ndim, v->shape);
  if (v->size > 0) v->offset += start * stride;
  if (count > 1) v->strides[axis] *= step;
}

void gl_view_select(gl_array *v, int axis, int64_t i) {
  int64_t stride = v->strides[axis];
  for (int k = axis; k < v->ndim - 1; k++) { v->shape[k] = v->shape[k + 1]; v->strides[k] = v->strides[k + 1]; }
  v->ndim--;
  v->size = shape_size(v->ndim, v->shape);
  if (v->size > 0) v->offset += i * stride;
}

/* ---- broadcasting ------------------------------------------------------------ */

gl_status gl_broadcast_shapes(int na, const int64_t *sa, int nb, const int64_t *sb,
                              int *nout, int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int64_t a = i < n - na ? 1 : sa[i - (n - na)];
    int64_t b = i < n - nb ? 1 : sb[i - (n - nb)];
    if (a != b && a != 1 && b != 1) {
      char b1[GL_SHAPE_BUFSZ], b2[GL_SHAPE_BUFSZ];
      return gl_fail(GL_EINVAL, "shapes %s and %s cannot be broadcast together",
                     gl_shape_str(na, sa, b1), gl_shape_str(nb, sb, b2));
    }
    out[i] = a == 1 ? b : a;
  }
  *nout = n;
  return GL_OK;
}

/* A complex array's strides counted in its parts: twice as many elements. A stride that
** doubles past int64 belongs to an axis no element steps along (an empty array's, or an
** extent of 1 whose stride a slice kept): 0 serves there as well. */
static void double_strides(gl_array *v) {
  for (int d = 0; d < v->ndim; d++)
    if (gl_mul_overflow(v->strides[d], 2, &v->strides[d])) v->strides[d] = 0;
}

static gl_status need_complex(const gl_array *v) {
  if (gl_dtype_is_complex((gl_dtype)v->dtype)) return GL_OK;
  return gl_fail(GL_EINVAL, "expected a complex array, got %s", gl_dtypes[v->dtype].name);
}

gl_status gl_view_as_real(gl_array *v) {
  GL_TRY(need_complex(v));
  if (v->ndim >= GL_MAXDIMS) return gl_fail(GL_EINVAL, "a complex array of %d dims has no room for the parts' axis", v->ndim);
  /* the parts' count may pass the limit (an empty (2^62, 0) array gives (2^62, 0, 2)) */
  int64_t shape[GL_MAXDIMS], size;
  memcpy(shape, v->shape, (size_t)v->ndim * sizeof *shape);
  shape[v->ndim] = 2;
  gl_dtype part = gl_real_for((gl_dtype)v->dtype);
  GL_TRY(gl_shape_size(v->ndim + 1, shape, part, &size));
  double_strides(v);
  v->shape[v->ndim] = 2;
  v->strides[v->ndim] = 1;
  v->ndim++;
  v->offset *= 2;
  v->size = size;
  v->dtype = (uint8_t)part;
  return GL_OK;
}

gl_status gl_view_part(gl_array *v, int part) {
  GL_TRY(need_complex(v));
  double_strides(v);
  v->offset = v->offset * 2 + part;
  v->dtype = (uint8_t)gl_real_for((gl_dtype)v->dtype);
  return GL_OK;
}

gl_status gl_view_as_complex(gl_array *v) {
  gl_dtype dt = (gl_dtype)v->dtype;
  if (dt != GL_FLOAT32 && dt != GL_FLOAT64)
    return gl_fail(GL_EINVAL, "expected a float32 or float64 array, got %s", gl_dtypes[dt].name);
  int last = v->ndim - 1;
  if (last < 0 || v->shape[last] != 2)
    return gl_fail(GL_EINVAL, "the last axis must have size 2 (real, imaginary)");
  if (v->strides[last] != 1) return gl_fail(GL_EINVAL, "the last axis must have stride 1");
  for (int d = 0; d < last; d++)
    if (v->strides[d] % 2 != 0) return gl_fail(GL_EINVAL, "axis %d has an odd stride (%lld)", d + 1, (long long)v->strides[d]);
  if (v->offset % 2 != 0) return gl_fail(GL_EINVAL, "the array starts at an odd element (offset %lld)", (long long)v->offset);
  for (int d = 0; d < last; d++) v->strides[d] /= 2;
  v->ndim--;
  v->offset /= 2;
  v->size /= 2;
  v->dtype = (uint8_t)(dt == GL_FLOAT32 ? GL_COMPLEX64 : GL_COMPLEX128);
  return GL_OK;
}
