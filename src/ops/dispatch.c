/*
** dispatch.c — the backend an op runs on: which backend has the op family and the dtype,
** what dtypes it does have (for messages), and the checks that two arrays share a device and
** that an operand has its input's device, dtype or an expected shape.
*/
#include <stdio.h>
#include <string.h>
#include "ops.h"

/* What an op family is called where no op name is given. */
static const char *const family_names[GL_NOP] = {
  [GL_OP_FILL] = "fill", [GL_OP_COPY] = "copy", [GL_OP_ARANGE] = "arange",
  [GL_OP_UNARY] = "elementwise math", [GL_OP_BINARY] = "elementwise math",
  [GL_OP_REDUCE] = "reduction", [GL_OP_MATMUL] = "matmul", [GL_OP_INDEX] = "indexing",
  [GL_OP_SORT] = "sort", [GL_OP_RANDOM] = "random numbers", [GL_OP_CONV] = "im2col",
  [GL_OP_FUSED] = "fused ops", [GL_OP_LINALG] = "gpu.linalg", [GL_OP_SELECT] = "partition",
  [GL_OP_HISTOGRAM] = "histogram", [GL_OP_FFT] = "gpu.fft",
};

static bool has_entry(const gl_backend *b, gl_op op) {
  switch (op) {
    case GL_OP_FILL: return b->fill != NULL;
    case GL_OP_COPY: return b->copy != NULL;
    case GL_OP_ARANGE: return b->arange != NULL;
    case GL_OP_UNARY: return b->unary != NULL;
    case GL_OP_BINARY: return b->binary != NULL && b->where != NULL;
    case GL_OP_REDUCE: return b->reduce != NULL && b->scan != NULL;
    case GL_OP_MATMUL: return b->matmul != NULL;
    case GL_OP_INDEX: return b->gather != NULL && b->scatter != NULL && b->mask_select != NULL;
    case GL_OP_SORT: return b->sort != NULL;
    case GL_OP_RANDOM: return b->random != NULL;
    case GL_OP_CONV: return b->im2col != NULL && b->col2im != NULL;
    case GL_OP_LINALG: return b->linalg != NULL;
    case GL_OP_SELECT: return b->partition != NULL;
    case GL_OP_HISTOGRAM: return b->histogram != NULL;
    case GL_OP_FFT: return b->fft != NULL;
    default: return true;
  }
}

/* How many ops a family numbers by 'which' (1: which is unused, 0 is passed). */
static int family_size(gl_op op) {
  switch (op) {
    case GL_OP_UNARY: return GL_NUNOP;
    case GL_OP_BINARY: return GL_NBINOP;
    case GL_OP_REDUCE: return GL_NREDOP;
    case GL_OP_RANDOM: return GL_NRAND;
    case GL_OP_LINALG: return GL_NLA;
    case GL_OP_FFT: return GL_NFFT;
    default: return 1;
  }
}

/* which < 0: whether any op of the family has a kernel for dt. */
static bool supported(const gl_backend *b, gl_op op, int which, gl_dtype dt) {
  if (which >= 0) return b->supports(op, which, dt);
  for (int w = 0; w < family_size(op); w++)
    if (b->supports(op, w, dt)) return true;
  return false;
}

const char *gl_supported_dtypes(gl_device dev, gl_op op, int which, char *buf, size_t size) {
  const gl_backend *b = gl_backend_get(dev.type);
  gl_dtype in[GL_NDTYPE];
  int n = 0;
  for (int t = 0; b && t < GL_NDTYPE; t++)
    if (supported(b, op, which, (gl_dtype)t)) in[n++] = (gl_dtype)t;
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && len < size; i++) {
    const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
    int w = snprintf(buf + len, size - len, "%s%s", sep, gl_dtypes[in[i]].name);
    if (w < 0) break;
    len += (size_t)w;
  }
  return n > 0 ? buf : "no dtype";
}

gl_status gl_backend_supporting(gl_device dev, gl_op op, int which, gl_dtype dt, const char *name,
                                const gl_backend **out) {
  const gl_backend *b;
  GL_TRY(gl_backend_for(dev, &b));
  char dn[16];
  if (name == NULL) name = family_names[op];
  if (!has_entry(b, op)) return gl_fail(GL_ENOTSUP, "%s is not supported on %s", name, gl_device_name(dev, dn));
  if (!supported(b, op, which, dt))
    return gl_fail(GL_ENOTSUP, "%s is not supported for %s on %s", name, gl_dtypes[dt].name,
                   gl_device_name(dev, dn));
  *out = b;
  return GL_OK;
}

gl_status gl_backend_of(const gl_array *a, gl_op op, const gl_backend **out) {
  return gl_backend_supporting(gl_array_device(a), op, -1, (gl_dtype)a->dtype, NULL, out);
}

gl_status gl_same_device(const gl_array *a, const gl_array *b) {
  if (gl_device_eq(gl_array_device(a), gl_array_device(b))) return GL_OK;
  char da[16], db[16];
  return gl_fail(GL_EINVAL, "arrays are on different devices (%s and %s); move one with :to('%s')",
                 gl_device_name(gl_array_device(a), da), gl_device_name(gl_array_device(b), db),
                 gl_device_name(gl_array_device(a), da));
}

gl_status gl_op_input_device(const char *fn, const gl_array *ref, const gl_array *x, const char *what) {
  if (gl_device_eq(gl_array_device(ref), gl_array_device(x))) return GL_OK;
  char d1[16], d2[16];
  return gl_fail(GL_EDEVICE, "%s: %s is on %s but the input is on %s (move it with :to())", fn, what,
                 gl_device_name(gl_array_device(x), d1), gl_device_name(gl_array_device(ref), d2));
}

gl_status gl_op_like_input(const char *fn, const gl_array *ref, const gl_array *x, const char *what) {
  GL_TRY(gl_op_input_device(fn, ref, x, what));
  if (x->dtype == ref->dtype) return GL_OK;
  return gl_fail(GL_EINVAL, "%s: %s is %s, expected %s like the input", fn, what, gl_dtypes[x->dtype].name,
                 gl_dtypes[ref->dtype].name);
}

gl_status gl_op_want_shape(const char *fn, const gl_array *x, const char *what, int nd, const int64_t *want) {
  if (x->ndim == nd && memcmp(x->shape, want, (size_t)nd * sizeof want[0]) == 0) return GL_OK;
  char s1[GL_SHAPE_BUFSZ], s2[GL_SHAPE_BUFSZ];
  return gl_fail(GL_EINVAL, "%s: %s has shape %s, expected %s", fn, what, gl_shape_str(x->ndim, x->shape, s1),
                 gl_shape_str(nd, want, s2));
}
