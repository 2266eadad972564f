/*
** dtypes.h — the element types: one row per dtype holding every fact about it, the only
** place those facts are written. Compiled by gcc (src/core's table, the CPU loops) and
** nvcc (the kernels' dtype codes and traits); src/ includes it, it includes nothing of
** src/. Adding a dtype is one row here, plus what a row cannot say: its promotions
** (src/core/dtype.c), its radix-sort key (kernels/sort.cu), for a float its cuBLAS type.
**
** GL_DTYPE_LIST(X) calls, in the order of the dtype numbers (GL_BOOL = GL_KD_BOOL = 0, ...):
**
**   X(E, id, S, kind, half, CT, UT, prec, lo, hi, name, npy, st, aliases)
**
**   E        enum suffix: GL_<E> (src/core), GL_KD_<E> (kernels)
**   id       an identifier for pasting into names (copy_float32_int64); "bool" is a macro
**            in C, so that row's id is boolean
**   S        the C type an element is stored as (float16/bfloat16: raw uint16 bits)
**   kind     BOOL, UINT, INT, FLOAT or COMPLEX (GL_KIND_<kind>)
**   half     none, or f16 / bf16: a storage-only float that computes in float32 through
**            kernels/half.h's gl_<half>_to_f32 / gl_f32_to_<half>
**   CT       the type an element computes in (what kernels/elem_ops.h's expressions see)
**   UT       the unsigned type integer expressions wrap in (uint8 wraps in uint32 and is
**            truncated when stored, as in C)
**   prec     significand bits of a float (random floats fill that many), 0 for integers
**   lo, hi   the range of an integer or bool dtype (0, 0 for floats)
**   name     the dtype's name, as Lua and files spell it
**   npy      NumPy's little-endian descr ("<f4"), NULL where NumPy has none
**   st       the safetensors dtype ("F32"), NULL where safetensors has none
**   aliases  other accepted names, space-separated ("" for none)
*/
#ifndef GL_KERNELS_DTYPES_H
#define GL_KERNELS_DTYPES_H

#include <stdint.h>

/* The complex dtypes' elements: a real and an imaginary part, interleaved, as C99's complex
** types, cuComplex, FFTW's fftw_complex and NumPy store them; aligned to their whole size
** (as cuComplex), so a view_as_complex must start on an even real element. */
#ifdef __cplusplus
#define GL_ALIGNAS_(n) alignas(n)
#else
#define GL_ALIGNAS_(n) _Alignas(n)
#endif
typedef struct gl_complex64 { GL_ALIGNAS_(8) float re; float im; } gl_complex64;
typedef struct gl_complex128 { GL_ALIGNAS_(16) double re; double im; } gl_complex128;
#ifdef __CUDACC__
#define GL_CX_HD_ __host__ __device__ __forceinline__
#else
#define GL_CX_HD_ static inline
#endif
GL_CX_HD_ gl_complex64 gl_make_complex64(float re, float im) { gl_complex64 z; z.re = re; z.im = im; return z; }
GL_CX_HD_ gl_complex128 gl_make_complex128(double re, double im) { gl_complex128 z; z.re = re; z.im = im; return z; }

#define GL_DTYPE_LIST(X) GL_DTYPE_ROWS_(GL_DT_CALL_, X)

/* The rows, with a context argument 'c' passed through to X (GL_DTYPE_PAIRS needs it). */
#define GL_DTYPE_ROWS_(X, c)                                                                          \
  /* E           id          S              kind     half  CT             UT        prec lo         hi          name          npy     st      aliases */ \
  X(c, BOOL,       boolean,    uint8_t,       BOOL,    none, uint8_t,       uint32_t, 0,  0,         1,          "bool",       "|b1",  "BOOL", "")             \
  X(c, UINT8,      uint8,      uint8_t,       UINT,    none, uint8_t,       uint32_t, 0,  0,         UINT8_MAX,  "uint8",      "|u1",  "U8",   "byte")         \
  X(c, INT8,       int8,       int8_t,        INT,     none, int8_t,        uint32_t, 0,  INT8_MIN,  INT8_MAX,   "int8",       "|i1",  "I8",   "")             \
  X(c, INT16,      int16,      int16_t,       INT,     none, int16_t,       uint32_t, 0,  INT16_MIN, INT16_MAX,  "int16",      "<i2",  "I16",  "short")        \
  X(c, UINT16,     uint16,     uint16_t,      UINT,    none, uint16_t,      uint32_t, 0,  0,         UINT16_MAX, "uint16",     "<u2",  "U16",  "")             \
  X(c, INT32,      int32,      int32_t,       INT,     none, int32_t,       uint32_t, 0,  INT32_MIN, INT32_MAX,  "int32",      "<i4",  "I32",  "int")          \
  X(c, UINT32,     uint32,     uint32_t,      UINT,    none, uint32_t,      uint32_t, 0,  0,         UINT32_MAX, "uint32",     "<u4",  "U32",  "")             \
  X(c, INT64,      int64,      int64_t,       INT,     none, int64_t,       uint64_t, 0,  INT64_MIN, INT64_MAX,  "int64",      "<i8",  "I64",  "long")         \
  X(c, UINT64,     uint64,     uint64_t,      UINT,    none, uint64_t,      uint64_t, 0,  0,         UINT64_MAX, "uint64",     "<u8",  "U64",  "")             \
  X(c, FLOAT16,    float16,    uint16_t,      FLOAT,   f16,  float,         uint32_t, 11, 0,         0,          "float16",    "<f2",  "F16",  "half fp16")    \
  X(c, BFLOAT16,   bfloat16,   uint16_t,      FLOAT,   bf16, float,         uint32_t, 8,  0,         0,          "bfloat16",   NULL,   "BF16", "bf16")         \
  X(c, FLOAT32,    float32,    float,         FLOAT,   none, float,         uint32_t, 24, 0,         0,          "float32",    "<f4",  "F32",  "float fp32")   \
  X(c, FLOAT64,    float64,    double,        FLOAT,   none, double,        uint64_t, 53, 0,         0,          "float64",    "<f8",  "F64",  "double fp64")  \
  X(c, COMPLEX64,  complex64,  gl_complex64,  COMPLEX, none, gl_complex64,  uint32_t, 24, 0,         0,          "complex64",  "<c8",  "C64",  "cfloat")       \
  X(c, COMPLEX128, complex128, gl_complex128, COMPLEX, none, gl_complex128, uint64_t, 53, 0,         0,          "complex128", "<c16", NULL,   "cdouble")

#define GL_DT_CALL_(X, ...) X(__VA_ARGS__)

/* GL_DTYPE_REAL_LIST(X): the rows whose kind is not COMPLEX, for the families that have no
** complex kernels (a family that takes complex stamps its complex rows itself). */
#define GL_DTYPE_REAL_LIST(X) GL_DTYPE_ROWS_(GL_DT_REAL_CALL_, X)
#define GL_DT_REAL_CALL_(X, E, id, S, kind, ...) GL_DT_IF_(GL_DT_IS_REAL_##kind, X(E, id, S, kind, __VA_ARGS__))
#define GL_DT_IS_REAL_BOOL 1
#define GL_DT_IS_REAL_UINT 1
#define GL_DT_IS_REAL_INT 1
#define GL_DT_IS_REAL_FLOAT 1
#define GL_DT_IS_REAL_COMPLEX 0
/* GL_DTYPE_REAL_ROWS_(X, c): the same with a context argument, X(c, E, id, ...). */
#define GL_DTYPE_REAL_ROWS_(X, c) GL_DTYPE_ROWS_(GL_DT_REAL_CTX_, (X, c))
#define GL_DT_REAL_CTX_(xc, E, id, S, kind, ...) \
  GL_DT_IF_(GL_DT_IS_REAL_##kind, GL_DT_CTX_CALL_(GL_DT_UNPAREN_ xc, E, id, S, kind, __VA_ARGS__))
#define GL_DT_CTX_CALL_(...) GL_DT_CTX_CALL__(__VA_ARGS__)
#define GL_DT_CTX_CALL__(X, c, ...) X(c, __VA_ARGS__)

/* The kernels' dtype codes, equal to src/core's gl_dtype numbers (both come from the rows). */
enum {
#define GL_DT_CODE_(E, ...) GL_KD_##E,
  GL_DTYPE_LIST(GL_DT_CODE_)
#undef GL_DT_CODE_
  GL_KD_N
};

/* Dtype kinds (a row's 'kind' is GL_KIND_<kind>). */
typedef enum gl_kind { GL_KIND_BOOL, GL_KIND_UINT, GL_KIND_INT, GL_KIND_FLOAT, GL_KIND_COMPLEX } gl_kind;

/* Sets of dtypes as bit masks (bit GL_KD_<E>), from the rows' facts: what a kernel family
** takes is one of these (or a union), named once in its header and read both by the kernels
** and by the backends' supports(). Enum constants, so they can be used inside a list's
** expansion. */
#define GL_DTSET(E) (1 << GL_KD_##E)
#define GL_DT_KIND_BIT_(k, E, id, S, kind, ...) | ((int)GL_KIND_##kind == (int)(k) ? GL_DTSET(E) : 0)
#define GL_DT_HALF_BIT_(E, id, S, kind, half, ...) | (GL_DT_IS_HALF_##half ? GL_DTSET(E) : 0)
#define GL_DT_IS_HALF_none 0
#define GL_DT_IS_HALF_f16 1
#define GL_DT_IS_HALF_bf16 1
enum {
  GL_DTSET_ALL = (1 << GL_KD_N) - 1,
  GL_DTSET_BOOL = 0 GL_DTYPE_ROWS_(GL_DT_KIND_BIT_, GL_KIND_BOOL),
  GL_DTSET_KIND_UINT_ = 0 GL_DTYPE_ROWS_(GL_DT_KIND_BIT_, GL_KIND_UINT),
  GL_DTSET_KIND_INT_ = 0 GL_DTYPE_ROWS_(GL_DT_KIND_BIT_, GL_KIND_INT),
  GL_DTSET_INT = GL_DTSET_KIND_UINT_ | GL_DTSET_KIND_INT_,          /* unsigned and signed */
  GL_DTSET_FLOAT = 0 GL_DTYPE_ROWS_(GL_DT_KIND_BIT_, GL_KIND_FLOAT),
  GL_DTSET_COMPLEX = 0 GL_DTYPE_ROWS_(GL_DT_KIND_BIT_, GL_KIND_COMPLEX),
  /* floats that compute in their own type (float32, float64; not the storage-only halves) */
  GL_DTSET_WIDE_FLOAT = GL_DTSET_FLOAT & ~(0 GL_DTYPE_LIST(GL_DT_HALF_BIT_))
};
/* The set of the dtypes whose kind is flagged in kinds = (bool, uint, int, float), each 0 or
** 1: GL_DTSET_OF_KINDS((0, 1, 1, 0)) is GL_DTSET_INT. Complex is in no such set: a family
** that takes complex adds GL_DTSET_COMPLEX to its set and stamps its complex rows itself. */
#define GL_DTSET_OF_KINDS(kinds) GL_DTSET_OF_KINDS_ kinds
#define GL_DTSET_OF_KINDS_(b, u, i, f) \
  ((b) * GL_DTSET_BOOL | (u) * GL_DTSET_KIND_UINT_ | (i) * GL_DTSET_KIND_INT_ | (f) * GL_DTSET_FLOAT)

/* GL_DT_WHEN(kind, kinds, code...): code when a row's kind is flagged in 'kinds' (as for
** GL_DTSET_OF_KINDS), else nothing: for stamping only the kernels a family takes. */
#define GL_DT_WHEN(kind, kinds, ...) GL_DT_WHEN_(kind, kinds, __VA_ARGS__)
#define GL_DT_WHEN_(kind, kinds, ...) GL_DT_IF_(GL_DT_PICK_##kind kinds, __VA_ARGS__)
#define GL_DT_PICK_BOOL(b, u, i, f) b
#define GL_DT_PICK_UINT(b, u, i, f) u
#define GL_DT_PICK_INT(b, u, i, f) i
#define GL_DT_PICK_FLOAT(b, u, i, f) f
#define GL_DT_PICK_COMPLEX(b, u, i, f) 0
#define GL_DT_IF_(c, ...) GL_DT_IF__(c, __VA_ARGS__)
#define GL_DT_IF__(c, ...) GL_DT_IF_##c(__VA_ARGS__)
#define GL_DT_IF_0(...)
#define GL_DT_IF_1(...) __VA_ARGS__

/* Whether dtype number dt is in the set. */
#define GL_DTSET_HAS(set, dt) ((unsigned)(dt) < (unsigned)GL_KD_N && (((set) >> (dt)) & 1))

/* GL_DTYPE_PAIRS(X): X(dst E, id, S, kind, half, src E, id, S, kind, half) for each of the
** GL_KD_N * GL_KD_N pairs, destination in the outer order: tables over two dtypes (the
** copy kernels). A list cannot expand inside its own expansion, so the inner pass is
** deferred (GL_DT_DEFER_) and run by the outer GL_DT_EXPAND_. */
#define GL_DTYPE_PAIRS(X) GL_DT_EXPAND_(GL_DTYPE_ROWS_(GL_DT_OUTER_, X))
#define GL_DT_EXPAND_(...) __VA_ARGS__
#define GL_DT_EMPTY_()
#define GL_DT_DEFER_(m) m GL_DT_EMPTY_()
#define GL_DT_ROWS_AGAIN_() GL_DTYPE_ROWS_
#define GL_DT_OUTER_(X, E, id, S, kind, half, ...) \
  GL_DT_DEFER_(GL_DT_ROWS_AGAIN_)()(GL_DT_INNER_, (X, E, id, S, kind, half))
#define GL_DT_INNER_(c, E, id, S, kind, half, ...) GL_DT_PAIR_(GL_DT_UNPAREN_ c, E, id, S, kind, half)
#define GL_DT_UNPAREN_(...) __VA_ARGS__
#define GL_DT_PAIR_(...) GL_DT_PAIR__(__VA_ARGS__)
#define GL_DT_PAIR__(X, ...) X(__VA_ARGS__)

#endif
