/*
** dtype.c — the dtype table and element load/store for host memory.
*/
#include <math.h>
#include <string.h>
#include "dtype.h"
#include "status.h"
#include "../../kernels/half.h"

const gl_dtype_info gl_dtypes[GL_NDTYPE] = {
  [GL_BOOL]     = { "bool",     1, GL_KIND_BOOL,  false, "|b1" },
  [GL_UINT8]    = { "uint8",    1, GL_KIND_UINT,  false, "|u1" },
  [GL_INT32]    = { "int32",    4, GL_KIND_INT,   false, "<i4" },
  [GL_INT64]    = { "int64",    8, GL_KIND_INT,   false, "<i8" },
  [GL_FLOAT16]  = { "float16",  2, GL_KIND_FLOAT, true,  "<f2" },
  [GL_BFLOAT16] = { "bfloat16", 2, GL_KIND_FLOAT, true,  NULL  },
  [GL_FLOAT32]  = { "float32",  4, GL_KIND_FLOAT, false, "<f4" },
  [GL_FLOAT64]  = { "float64",  8, GL_KIND_FLOAT, false, "<f8" },
};

static const struct { const char *alias; gl_dtype t; } aliases[] = {
  { "float", GL_FLOAT32 }, { "double", GL_FLOAT64 }, { "half", GL_FLOAT16 },
  { "int", GL_INT32 }, { "long", GL_INT64 }, { "byte", GL_UINT8 }, { "bf16", GL_BFLOAT16 },
  { "fp16", GL_FLOAT16 }, { "fp32", GL_FLOAT32 }, { "fp64", GL_FLOAT64 },
};

int gl_dtype_from_name(const char *name) {
  for (int t = 0; t < GL_NDTYPE; t++)
    if (strcmp(name, gl_dtypes[t].name) == 0) return t;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].alias) == 0) return (int)aliases[i].t;
  return -1;
}

const char *gl_dtype_names(void) {
  return "float32, float64, float16, bfloat16, int32, int64, uint8, bool";
}

gl_scalar gl_scalar_load(gl_dtype t, const void *p) {
  switch (t) {
    case GL_BOOL:     return gl_scalar_int(*(const uint8_t *)p != 0);
    case GL_UINT8:    return gl_scalar_int(*(const uint8_t *)p);
    case GL_INT32:    return gl_scalar_int(*(const int32_t *)p);
    case GL_INT64:    return gl_scalar_int(*(const int64_t *)p);
    case GL_FLOAT16:  return gl_scalar_float((double)gl_f16_to_f32(*(const uint16_t *)p));
    case GL_BFLOAT16: return gl_scalar_float((double)gl_bf16_to_f32(*(const uint16_t *)p));
    case GL_FLOAT32:  return gl_scalar_float((double)*(const float *)p);
    case GL_FLOAT64:  return gl_scalar_float(*(const double *)p);
    default:          return gl_scalar_int(0);
  }
}

/* Float to integer conversion of out-of-range values is undefined in C; we clamp NaN to
** 0 and saturate, as the CUDA conversion instructions do, so both backends agree. */
static int64_t sat_i64(double f) {
  if (f != f) return 0;
  if (f >= 9223372036854775807.0) return INT64_MAX;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)f;
}

void gl_scalar_store(gl_dtype t, void *p, gl_scalar v) {
  int64_t i = v.isint ? v.i : sat_i64(v.f);
  double f = v.isint ? (double)v.i : v.f;
  switch (t) {
    case GL_BOOL:     *(uint8_t *)p = v.isint ? (v.i != 0) : (v.f != 0); break;
    case GL_UINT8:    *(uint8_t *)p = (uint8_t)i; break;
    case GL_INT32:    *(int32_t *)p = (int32_t)i; break;
    case GL_INT64:    *(int64_t *)p = i; break;
    case GL_FLOAT16:  *(uint16_t *)p = gl_f32_to_f16((float)f); break;
    case GL_BFLOAT16: *(uint16_t *)p = gl_f32_to_bf16((float)f); break;
    case GL_FLOAT32:  *(float *)p = (float)f; break;
    case GL_FLOAT64:  *(double *)p = f; break;
    default: break;
  }
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
  switch (t) {
    case GL_BOOL:  *lo = 0; *hi = 1; return true;
    case GL_UINT8: *lo = 0; *hi = UINT8_MAX; return true;
    case GL_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    case GL_INT64: *lo = INT64_MIN; *hi = INT64_MAX; return true;
    default: return false;
  }
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
