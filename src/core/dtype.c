/*
** dtype.c — the dtype table and element load/store for host memory.
*/
#include <math.h>
#include <string.h>
#include "dtype.h"
#include "status.h"
#include "../../kernels/convert.h"

/* max is the largest value a Lua integer can store in the dtype (uint64's is INT64_MAX). */
#define GL_DT_INFO_(E, id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, nccl, cuda, cudnn, \
                    blas, idx)                                                                                     \
  [GL_##E] = { name, sizeof(S), GL_KIND_##kind, GL_DT_IS_HALF_##half, npy, npc, st, lo,                           \
               (uint64_t)(hi) > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(hi), prec, aliases, blas, idx },
const gl_dtype_info gl_dtypes[GL_NDTYPE] = { GL_DTYPE_LIST(GL_DT_INFO_) };
#undef GL_DT_INFO_

const char *gl_dtype_alias(gl_dtype t, int k, size_t *len) {
  const char *p = gl_dtypes[t].aliases;
  for (;;) {
    p += strspn(p, " ");
    if (*p == '\0') return NULL;
    *len = strcspn(p, " ");
    if (k-- == 0) return p;
    p += *len;
  }
}

int gl_dtype_from_name(const char *name) {
  for (int t = 0; t < GL_NDTYPE; t++)
    if (strcmp(name, gl_dtypes[t].name) == 0) return t;
  size_t n = strlen(name), len;
  for (int t = 0; t < GL_NDTYPE; t++)
    for (int k = 0; gl_dtype_alias((gl_dtype)t, k, &len); k++)
      if (len == n && memcmp(gl_dtype_alias((gl_dtype)t, k, &len), name, n) == 0) return t;
  return -1;
}

const char *gl_dtype_names(void) {
#define GL_DT_NAME_(E, id, S, kind, half, CT, UT, prec, lo, hi, name, ...) ", " name
  static const char names[] = "" GL_DTYPE_LIST(GL_DT_NAME_);
#undef GL_DT_NAME_
  return names + 2;                                 /* past the first ", " */
}

/* Element loads by kind: bool as 0/1, integers exactly (a uint64 above INT64_MAX as the
** nearest double: Lua has no wider integer), floats as double, complex as two doubles. */
static inline gl_scalar load_u64(uint64_t u) {
  if (u <= (uint64_t)INT64_MAX) return gl_scalar_int((int64_t)u);
  gl_scalar s = gl_scalar_float((double)u);
  s.i = (int64_t)u;                                 /* the exact bits, for printing */
  return s;
}
#define LOAD_BOOL(S, half, p) gl_scalar_int(*(const S *)(p) != 0)
#define LOAD_UINT(S, half, p) (sizeof(S) == 8 ? load_u64(*(const S *)(p)) : gl_scalar_int((int64_t)*(const S *)(p)))
#define LOAD_INT(S, half, p) gl_scalar_int(*(const S *)(p))
#define LOAD_FLOAT(S, half, p) gl_scalar_float((double)GL_DT_LOAD(half, *(const S *)(p)))
/* complex through memcpy: a host buffer (a Lua userdata's) may be 8-byte aligned only,
** where S (complex128) asks for 16 */
static inline gl_scalar load_c64(const void *p) { gl_complex64 z; memcpy(&z, p, sizeof z); return gl_scalar_complex(z.re, z.im); }
static inline gl_scalar load_c128(const void *p) { gl_complex128 z; memcpy(&z, p, sizeof z); return gl_scalar_complex(z.re, z.im); }
#define LOAD_COMPLEX(S, half, p) (sizeof(S) == 8 ? load_c64(p) : load_c128(p))

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
static inline double as_imag(const gl_scalar *v) { return v->iscomplex ? v->im : 0.0; }
#define STORE_BOOL(S, half, id, p, v) \
  (*(S *)(p) = (S)((v)->isint ? (v)->i != 0 : (v)->f != 0 || as_imag(v) != 0))
/* uint64 takes floats past INT64_MAX (to 2^64) through its own saturating conversion */
#define STORE_UINT(S, half, id, p, v)                                                          \
  (*(S *)(p) = sizeof(S) == 8 && !(v)->isint ? GL_DT_STORE(UINT, half, S, id, FLOAT, as_double(v)) \
                                             : GL_DT_STORE(UINT, half, S, id, INT, as_int(v)))
#define STORE_INT(S, half, id, p, v) (*(S *)(p) = GL_DT_STORE(INT, half, S, id, INT, as_int(v)))
#define STORE_FLOAT(S, half, id, p, v) (*(S *)(p) = GL_DT_STORE(FLOAT, half, S, id, FLOAT, as_double(v)))
#define STORE_COMPLEX(S, half, id, p, v) \
  do { S z_ = gl_make_##id(as_double(v), as_imag(v)); memcpy((p), &z_, sizeof z_); } while (0)

#define GL_DT_STORER_(E, id, S, kind, half, ...) \
  static void store_##id(void *p, const gl_scalar *v) { STORE_##kind(S, half, id, p, v); }
GL_DTYPE_LIST(GL_DT_STORER_)
#define GL_DT_STORE_ENTRY_(E, id, ...) [GL_##E] = store_##id,
static void (*const stores[GL_NDTYPE])(void *p, const gl_scalar *v) = { GL_DTYPE_LIST(GL_DT_STORE_ENTRY_) };

void gl_scalar_store(gl_dtype t, void *p, gl_scalar v) {
  if ((unsigned)t < GL_NDTYPE && stores[t]) stores[t](p, &v);
}

/* ---- promotion ------------------------------------------------------------------------- */

/* The float an integer (or bool) dtype's values need: 8 bits fit float16, 16 bits float32,
** wider float64. bfloat16 takes float16's place where the other side is bfloat16. */
static gl_dtype float_holding(gl_dtype t) {
  switch (gl_dtypes[t].kind) {
    case GL_KIND_BOOL: return GL_FLOAT16;
    case GL_KIND_UINT: case GL_KIND_INT:
      return gl_dtypes[t].size == 1 ? GL_FLOAT16 : gl_dtypes[t].size == 2 ? GL_FLOAT32 : GL_FLOAT64;
    default: return t;
  }
}

static gl_dtype int_of(bool is_signed, unsigned size) {
  static const gl_dtype s[9] = { [1] = GL_INT8, [2] = GL_INT16, [4] = GL_INT32, [8] = GL_INT64 };
  static const gl_dtype u[9] = { [1] = GL_UINT8, [2] = GL_UINT16, [4] = GL_UINT32, [8] = GL_UINT64 };
  return is_signed ? s[size] : u[size];
}

static gl_dtype promote_floats(gl_dtype a, gl_dtype b) {
  if (a == b) return a;
  if (gl_dtypes[a].storage_only && gl_dtypes[b].storage_only) return GL_FLOAT32;  /* f16 + bf16 */
  return gl_dtypes[a].size >= gl_dtypes[b].size ? a : b;
}

static int default_dtype = GL_FLOAT32;

gl_dtype gl_default_dtype(void) { return (gl_dtype)__atomic_load_n(&default_dtype, __ATOMIC_RELAXED); }
void gl_set_default_dtype(gl_dtype t) { __atomic_store_n(&default_dtype, (int)t, __ATOMIC_RELAXED); }

gl_dtype gl_promote(gl_dtype a, gl_dtype b) {
  const gl_dtype_info *x = &gl_dtypes[a], *y = &gl_dtypes[b];
  if (a == b || y->kind == GL_KIND_BOOL) return a;
  if (x->kind == GL_KIND_BOOL) return b;
  if (x->kind == GL_KIND_COMPLEX || y->kind == GL_KIND_COMPLEX) {
    gl_dtype part = promote_floats(float_holding(gl_real_for(a)), float_holding(gl_real_for(b)));
    return gl_complex_for(part);
  }
  if (x->kind == GL_KIND_FLOAT || y->kind == GL_KIND_FLOAT) {
    if (x->kind == GL_KIND_FLOAT && y->kind == GL_KIND_FLOAT) return promote_floats(a, b);
    gl_dtype f = x->kind == GL_KIND_FLOAT ? a : b, i = f == a ? b : a;
    gl_dtype need = float_holding(i);
    if (need == GL_FLOAT16 && f == GL_BFLOAT16) return GL_BFLOAT16;
    return promote_floats(f, need);
  }
  if (x->kind == y->kind) return x->size >= y->size ? a : b;       /* both signed or unsigned */
  const gl_dtype_info *u = x->kind == GL_KIND_UINT ? x : y, *s = u == x ? y : x;
  if (s->size > u->size) return u == x ? b : a;
  return u->size == 8 ? GL_FLOAT64 : int_of(true, 2 * u->size);
}

gl_dtype gl_float_for(gl_dtype t) {
  switch (gl_dtypes[t].kind) {
    case GL_KIND_BOOL: case GL_KIND_UINT: case GL_KIND_INT: return float_holding(t);
    default: return t;
  }
}

gl_dtype gl_real_for(gl_dtype t) {
  if (t == GL_COMPLEX64) return GL_FLOAT32;
  if (t == GL_COMPLEX128) return GL_FLOAT64;
  return t;
}

gl_dtype gl_complex_for(gl_dtype t) {
  gl_dtype f = gl_float_for(gl_real_for(t));
  return f == GL_FLOAT64 ? GL_COMPLEX128 : GL_COMPLEX64;
}

gl_dtype gl_promote_weak(gl_dtype arr, gl_scalar s) {
  gl_kind k = gl_dtypes[arr].kind;
  if (s.isbool) return arr;
  if (s.iscomplex) return k == GL_KIND_COMPLEX ? arr : k == GL_KIND_FLOAT ? gl_complex_for(arr) : GL_COMPLEX128;
  if (!s.isint) return k == GL_KIND_FLOAT || k == GL_KIND_COMPLEX ? arr : GL_FLOAT64;
  return k == GL_KIND_BOOL ? GL_INT64 : arr;
}

int gl_promote_scalar(gl_dtype arr, gl_scalar s, gl_dtype *out) {
  *out = gl_promote_weak(arr, s);
  if (s.isint && !s.isbool && gl_dtype_is_int(arr)) GL_TRY(gl_scalar_check(arr, s));
  return GL_OK;
}

/* ---- scalars into elements ------------------------------------------------------------- */

bool gl_dtype_int_range(gl_dtype t, int64_t *lo, int64_t *hi) {
  if (gl_dtypes[t].kind == GL_KIND_FLOAT || gl_dtypes[t].kind == GL_KIND_COMPLEX) return false;
  *lo = gl_dtypes[t].min;                    /* the table's (kernels/dtypes.h) */
  *hi = gl_dtypes[t].max;
  return true;
}

/* The largest value of an integer dtype (uint64's past what gl_dtype_info.max holds). */
static uint64_t int_max(gl_dtype t) {
  return gl_dtypes[t].kind == GL_KIND_UINT && gl_dtypes[t].size == 8 ? UINT64_MAX : (uint64_t)gl_dtypes[t].max;
}

bool gl_scalar_fits(gl_dtype t, gl_scalar s) {
  int64_t lo, hi;
  if (s.iscomplex && !gl_dtype_is_complex(t)) return false;       /* NumPy: TypeError */
  if (!gl_dtype_is_int(t) || !gl_dtype_int_range(t, &lo, &hi)) return true;   /* bool, floats */
  if (s.isint) return s.i >= lo && s.i <= hi;
  /* trunc(f) in [lo, max]; max + 1 is a power of two, exact as a double where max is not
  ** (INT64_MAX rounds up to 2^63, and '< 2^63' is the test wanted). NaN fails both. */
  double f = trunc(s.f);
  return f >= (double)lo && f < (double)int_max(t) + 1.0;
}

int gl_scalar_check(gl_dtype t, gl_scalar s) {
  if (gl_scalar_fits(t, s)) return GL_OK;
  const char *name = gl_dtypes[t].name;
  if (s.iscomplex) return gl_fail(GL_EINVAL, "cannot convert a complex value to %s", name);
  int64_t lo, hi;
  gl_dtype_int_range(t, &lo, &hi);
  unsigned long long max = int_max(t);
  if (s.isint)
    return gl_fail(GL_EINVAL, "value %lld is out of range for %s (%lld..%llu)", (long long)s.i, name, (long long)lo,
                   max);
  if (s.f != s.f) return gl_fail(GL_EINVAL, "cannot convert NaN to %s", name);
  if (isinf(s.f)) return gl_fail(GL_EINVAL, "cannot convert %sinf to %s", s.f < 0 ? "-" : "", name);
  return gl_fail(GL_EINVAL, "value %.14g is out of range for %s (%lld..%llu)", s.f, name, (long long)lo, max);
}
