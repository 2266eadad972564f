/*
** dtype.h — the element types. Facts about each dtype live in one table (gl_dtypes[]),
** made from the rows of kernels/dtypes.h, not in switches scattered over the code base.
*/
#ifndef GL_DTYPE_H
#define GL_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "../../kernels/dtypes.h"

/* The dtypes, numbered as kernels/dtypes.h's rows (the kernels' GL_KD_* codes). */
typedef enum gl_dtype {
#define GL_DT_ENUM_(E, ...) GL_##E = GL_KD_##E,
  GL_DTYPE_LIST(GL_DT_ENUM_)
#undef GL_DT_ENUM_
  GL_NDTYPE = GL_KD_N
} gl_dtype;

/* The dtype of floats made without one (constructors, Lua floats, weak scalars alone):
** float32 unless gpu.set_default_dtype changed it (torch.set_default_dtype): one setting
** for the process, as PyTorch's. */
gl_dtype gl_default_dtype(void);
void gl_set_default_dtype(gl_dtype t);     /* a float dtype */
#define GL_DEFAULT_DTYPE gl_default_dtype()

/* The rows of kernels/dtypes.h as a table (gl_kind comes from there too). */
typedef struct gl_dtype_info {
  const char *name;     /* "float32" */
  unsigned size;        /* bytes per element */
  gl_kind kind;
  bool storage_only;    /* float16/bfloat16: math is done in float32 */
  const char *npy;      /* NumPy descr, little-endian: "<f4" */
  const char *npc;      /* NumPy's one-letter type code: "f"; NULL where NumPy has none */
  const char *st;       /* safetensors dtype: "F32"; NULL where safetensors has none */
  int64_t min, max;     /* range of an integer or bool dtype (0, 0 for floats) */
  int prec;             /* significand bits of a float, 0 for integers */
  const char *aliases;  /* other accepted names, space-separated */
  const char *blas;     /* BLAS/LAPACK's type letter: "s" (sgemm, sgetrf_); NULL where BLAS has none */
  int idx;              /* IDX's type code (0x0D); 0 where IDX has none */
} gl_dtype_info;

extern const gl_dtype_info gl_dtypes[GL_NDTYPE];

/* Name (or one of the row's aliases: "float", "double", "half", ...) to dtype; -1 if unknown. */
int gl_dtype_from_name(const char *name);

/* The k-th (0-based) alias of dtype t, not NUL-terminated: *len bytes; NULL past the last. */
const char *gl_dtype_alias(gl_dtype t, int k, size_t *len);

/* The dtype names, comma-separated in dtype order, for error messages. */
const char *gl_dtype_names(void);

static inline bool gl_dtype_is_float(gl_dtype t) { return gl_dtypes[t].kind == GL_KIND_FLOAT; }
static inline bool gl_dtype_is_int(gl_dtype t) {
  return gl_dtypes[t].kind == GL_KIND_INT || gl_dtypes[t].kind == GL_KIND_UINT;
}
static inline bool gl_dtype_is_complex(gl_dtype t) { return gl_dtypes[t].kind == GL_KIND_COMPLEX; }
/* The bytes of one real number of an element: its size, half of it for a complex dtype (a
** byte order applies to each part). */
static inline unsigned gl_dtype_part_size(gl_dtype t) {
  return gl_dtype_is_complex(t) ? gl_dtypes[t].size / 2 : gl_dtypes[t].size;
}

/* A scalar value crossing layers (fill values, element reads). Integers travel exactly
** as int64; floats as double; complex values as two doubles (f the real part, im the
** imaginary). 'isint' and 'iscomplex' say which members are meaningful. A uint64 element
** above INT64_MAX is read as a float (Lua's integers are int64), its bits kept in i. */
typedef struct gl_scalar {
  bool isint;
  bool isbool;     /* a Lua boolean (isint too, i = 0 or 1) */
  bool iscomplex;  /* f + im*i (isint false) */
  int64_t i;
  double f;
  double im;
} gl_scalar;

static inline gl_scalar gl_scalar_int(int64_t i) {
  gl_scalar s; s.isint = true; s.isbool = false; s.iscomplex = false; s.i = i; s.f = (double)i; s.im = 0; return s;
}
static inline gl_scalar gl_scalar_float(double f) {
  gl_scalar s; s.isint = false; s.isbool = false; s.iscomplex = false; s.f = f; s.i = 0; s.im = 0; return s;
}
static inline gl_scalar gl_scalar_complex(double re, double im) {
  gl_scalar s = gl_scalar_float(re); s.iscomplex = true; s.im = im; return s;
}
static inline gl_scalar gl_scalar_bool(bool b) { gl_scalar s = gl_scalar_int(b); s.isbool = true; return s; }

/* NumPy 2 promotion of two array dtypes: the wider of one kind; a signed and an unsigned
** integer meet at a signed type wider than the unsigned one (uint64 and a signed one at
** float64); an integer and a float at a float that holds the integer's values (8-bit: 
** float16 or bfloat16; 16-bit: float32; wider: float64); float16 and bfloat16 meet at
** float32, as in ml_dtypes; a complex and a real at the complex type whose parts hold the
** real's (complex64 + float64 or int32 gives complex128). */
gl_dtype gl_promote(gl_dtype a, gl_dtype b);

/* The values an integer dtype holds (bool: 0..1); false for float dtypes. */
bool gl_dtype_int_range(gl_dtype t, int64_t *lo, int64_t *hi);

/* The one rule for a Lua number becoming an element of dtype t (fill values, x[k] = v,
** gpu.array from a table, ranges): an integer dtype takes integers in its range and finite
** floats whose truncation toward zero is in its range (1.9 -> 1, as C and NumPy); an
** out-of-range, NaN or infinite value is an error naming the value and the dtype, never a
** silent wrap. Bool and float dtypes take every value (floats round, may overflow to inf).
** astype is not this: it converts whole arrays as kernels/convert.h says. */
bool gl_scalar_fits(gl_dtype t, gl_scalar s);
int gl_scalar_check(gl_dtype t, gl_scalar s);                      /* gl_status */

/* NEP 50: a Lua number is a "weak" scalar that takes the array's kind where it can. A
** Lua integer that does not fit an integer array's dtype is an error (NumPy 2 too). A
** complex scalar keeps a complex array's dtype, makes a float array's complex of its
** precision (float32 -> complex64) and an integer or bool array's complex128. */
int gl_promote_scalar(gl_dtype arr, gl_scalar s, gl_dtype *out);   /* gl_status */
/* The same by kinds alone, as NumPy's result_type: no value is out of range. */
gl_dtype gl_promote_weak(gl_dtype arr, gl_scalar s);

/* The float dtype NumPy's float-only functions give for an input dtype (a complex dtype
** gives itself; gl_real_for gives its parts' float dtype). */
gl_dtype gl_float_for(gl_dtype t);
gl_dtype gl_real_for(gl_dtype t);      /* complex64 -> float32, complex128 -> float64, else t */
gl_dtype gl_complex_for(gl_dtype t);   /* the complex dtype of t's precision, as NumPy's fft */

/* Read/write one element of any dtype at 'p' (host memory). */
gl_scalar gl_scalar_load(gl_dtype t, const void *p);
void gl_scalar_store(gl_dtype t, void *p, gl_scalar v);

#endif
