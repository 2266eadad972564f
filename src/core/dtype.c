/*
** dtype.c — the dtype table and element load/store for host memory.
*/
#include <math.h>
#include <string.h>
#include "dtype.h"
#include "status.h"
#include "../../kernels/convert.h"

#define GL_DT_INFO_(E, id, S, kind, half, CT, UT, prec, lo, hi, name, npy, st, aliases) \
  [GL_##E] = { name, sizeof(S), GL_KIND_##kind, GL_DT_IS_HALF_##half, npy, st, lo, hi, prec, aliases },
const gl_dtype_info gl_dtypes[GL_NDTYPE] = { GL_DTYPE_LIST(GL_DT_INFO_) };
#undef GL_DT_INFO_

/* Whether 'name' is one of the space-separated words of 'list'. */
static bool is_word_of(const char *name, const char *list) {
  size_t n = strlen(name);
  for (const char *p = list; *p; ) {
    size_t w = strcspn(p, " ");
    if (w == n && n > 0 && memcmp(p, name, n) == 0) return true;
    p += w;
    p += strspn(p, " ");
  }
  return false;
}

int gl_dtype_from_name(const char *name) {
  for (int t = 0; t < GL_NDTYPE; t++)
    if (strcmp(name, gl_dtypes[t].name) == 0) return t;
  for (int t = 0; t < GL_NDTYPE; t++)
    if (is_word_of(name, gl_dtypes[t].aliases)) return t;
  return -1;
}

const char *gl_dtype_names(void) {
#define GL_DT_NAME_(E, id, S, kind, half, CT, UT, prec, lo, hi, name, ...) ", " name
  static const char names[] = "" GL_DTYPE_LIST(GL_DT_NAME_);
#undef GL_DT_NAME_
  return names + 2;                                 /* past the first ", " */
}

/* Element loads by kind: bool as 0/1, integers exactly, floats as double. */
#define LOAD_BOOL(S, half, p) gl_scalar_int(*(const S *)(p) != 0)
#define LOAD_UINT(S, half, p) gl_scalar_int(*(const S *)(p))
#define LOAD_INT LOAD_UINT
#define LOAD_FLOAT(S, half, p) gl_scalar_float((double)GL_DT_LOAD(half, *(const S *)(p)))

#define GL_DT_LOADER_(E, id, S, kind, half, ...) \
  static gl_scalar load_##id(const void *p) { return LOAD_##kind(S, half, p); }
GL_DTYPE_LIST(GL_DT_LOADER_)
#define GL_DT_LOAD_ENTRY_(E, id, ...) [GL_##E] = load_##id,
static gl_scalar (*const loads[GL_NDTYPE])(const void *p) = { GL_DTYPE_LIST(GL_DT_LOAD_ENTRY_) };

gl_scalar gl_scalar_load(gl_dtype t, const void *p) {
  return (unsigned)t < GL_NDTYPE && loads[t] ? loads[t](p) : gl_scalar_int(0);
}

/* Element stores by kind, one function per dtype row. A float stored into an integer dtype
** saturates to int64 first (NaN to 0, as the CUDA conversion instructions do; C leaves it
** undefined), then wraps to the width like an integer. */
static inline int64_t as_int(const gl_scalar *v) { return v->isint ? v->i : gl_sat_int64(v->f); }
static inline double as_double(const gl_scalar *v) { return v->isint ? (double)v->i : v->f; }
#define STORE_BOOL(S, half, id, p, v) (*(S *)(p) = (S)((v)->isint ? (v)->i != 0 : (v)->f != 0))
#define STORE_UINT(S, half, id, p, v) (*(S *)(p) = GL_DT_STORE(UINT, half, S, id, INT, as_int(v)))
#define STORE_INT(S, half, id, p, v) (*(S *)(p) = GL_DT_STORE(INT, half, S, id, INT, as_int(v)))
#define STORE_FLOAT(S, half, id, p, v) (*(S *)(p) = GL_DT_STORE(FLOAT, half, S, id, FLOAT, as_double(v)))

#define GL_DT_STORER_(E, id, S, kind, half, ...) \
  static void store_##id(void *p, const gl_scalar *v) { STORE_##kind(S, half, id, p, v); }
GL_DTYPE_LIST(GL_DT_STORER_)
#define GL_DT_STORE_ENTRY_(E, id, ...) [GL_##E] = store_##id,
static void (*const stores[GL_NDTYPE])(void *p, const gl_scalar *v) = { GL_DTYPE_LIST(GL_DT_STORE_ENTRY_) };

void gl_scalar_store(gl_dtype t, void *p, gl_scalar v) {
  if ((unsigned)t < GL_NDTYPE && stores[t]) stores[t](p, &v);
}

/* ---- promotion ------------------------------------------------------------------------- */

#define B GL_BOOL
#define U8 GL_UINT8
#define I32 GL_INT32
#define I64 GL_INT64
#define F16 GL_FLOAT16
#define BF GL_BFLOAT16
#define F32 GL_FLOAT32
#define F64 GL_FLOAT64
static const uint8_t promote_table[GL_NDTYPE][GL_NDTYPE] = {
  /*          b    u8   i32  i64  f16  bf16 f32  f64 */
  [B]   = {  B,   U8,  I32, I64, F16, BF,  F32, F64 },
  [U8]  = {  U8,  U8,  I32, I64, F16, BF,  F32, F64 },
  [I32] = {  I32, I32, I32, I64, F64, F64, F64, F64 },
  [I64] = {  I64, I64, I64, I64, F64, F64, F64, F64 },
  [F16] = {  F16, F16, F64, F64, F16, F32, F32, F64 },
  [BF]  = {  BF,  BF,  F64, F64, F32, BF,  F32, F64 },
  [F32] = {  F32, F32, F64, F64, F32, F32, F32, F64 },
  [F64] = {  F64, F64, F64, F64, F64, F64, F64, F64 },
};
#undef B
#undef U8
#undef I32
#undef I64
#undef F16
#undef BF
#undef F32
#undef F64

gl_dtype gl_promote(gl_dtype a, gl_dtype b) { return (gl_dtype)promote_table[a][b]; }

gl_dtype gl_float_for(gl_dtype t) {
  switch (t) {
    case GL_BOOL: case GL_UINT8: return GL_FLOAT16;
    case GL_INT32: case GL_INT64: return GL_FLOAT64;
    default: return t;
  }
}

int gl_promote_scalar(gl_dtype arr, gl_scalar s, gl_dtype *out) {
  gl_kind k = gl_dtypes[arr].kind;
  if (s.isbool) { *out = arr; return GL_OK; }
  if (!s.isint) { *out = k == GL_KIND_FLOAT ? arr : GL_FLOAT64; return GL_OK; }
  if (k == GL_KIND_BOOL) { *out = GL_INT64; return GL_OK; }
  GL_TRY(gl_scalar_check(arr, s));
  *out = arr;
  return GL_OK;
}

/* ---- scalars into elements ------------------------------------------------------------- */

bool gl_dtype_int_range(gl_dtype t, int64_t *lo, int64_t *hi) {
  if (gl_dtypes[t].kind == GL_KIND_FLOAT) return false;
  *lo = gl_dtypes[t].min;                    /* the table's (kernels/dtypes.h) */
  *hi = gl_dtypes[t].max;
  return true;
}

bool gl_scalar_fits(gl_dtype t, gl_scalar s) {
  int64_t lo, hi;
  if (!gl_dtype_is_int(t) || !gl_dtype_int_range(t, &lo, &hi)) return true;   /* bool, floats */
  if (s.isint) return s.i >= lo && s.i <= hi;
  /* trunc(f) in [lo, hi]; hi + 1 is a power of two, exact as a double where hi is not
  ** (INT64_MAX rounds up to 2^63, and '< 2^63' is the test wanted). NaN fails both. */
  double f = trunc(s.f);
  return f >= (double)lo && f < (double)hi + 1.0;
}

int gl_scalar_check(gl_dtype t, gl_scalar s) {
  if (gl_scalar_fits(t, s)) return GL_OK;
  const char *name = gl_dtypes[t].name;
  int64_t lo, hi;
  gl_dtype_int_range(t, &lo, &hi);
  if (s.isint)
    return gl_fail(GL_EINVAL, "value %lld is out of range for %s (%lld..%lld)", (long long)s.i, name,
                   (long long)lo, (long long)hi);
  if (s.f != s.f) return gl_fail(GL_EINVAL, "cannot convert NaN to %s", name);
  if (isinf(s.f)) return gl_fail(GL_EINVAL, "cannot convert %sinf to %s", s.f < 0 ? "-" : "", name);
  return gl_fail(GL_EINVAL, "value %.14g is out of range for %s (%lld..%lld)", s.f, name, (long long)lo,
                 (long long)hi);
}
