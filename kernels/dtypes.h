/*
** dtypes.h — the element types: one row per dtype holding every fact about it, the only
** place those facts are written. Compiled by gcc (src/core's table, the CPU loops) and
** nvcc (the kernels' dtype codes and traits), without any library's header: a library's
** type code is a token its one user pastes (CUDA_##cuda), "none" where it has no type.
** src/ includes it, it includes nothing of src/.
**
** GL_DTYPE_LIST(X) calls, in the order of the dtype numbers (GL_BOOL = GL_KD_BOOL = 0, ...):
**
**   X(E, id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, nccl, cuda,
**     cudnn, blas, idx)
**
**   E        enum suffix: GL_<E> (src/core), GL_KD_<E> (kernels)
**   id       an identifier for pasting into names (copy_float32_int64); "bool" is a macro
**            in C, so that row's id is boolean
**   S        the C type an element is stored as (float16/bfloat16: raw uint16 bits; complex:
**            gl_complex64/128, the real and imaginary parts interleaved)
**   kind     BOOL, UINT, INT, FLOAT or COMPLEX (GL_KIND_<kind>)
**   half     none, or f16 / bf16: a storage-only float that computes in float32 through
**            kernels/half.h's gl_<half>_to_f32 / gl_f32_to_<half>
**   CT       the type an element computes in (what kernels/elem_ops.h's expressions see;
**            also the CPU sort's key width)
**   UT       the unsigned type integer expressions wrap in (uint8 wraps in uint32 and is
**            truncated when stored, as in C)
**   prec     significand bits of a float, or of a complex dtype's parts (random floats fill
**            that many; gpu.finfo derives eps, max and tiny from it), 0 for integers
**   lo, hi   the range of an integer or bool dtype (0, 0 for floats)
**   name     the dtype's name, as Lua and files spell it
**   npy      NumPy's little-endian descr ("<f4"; bfloat16: "<V2", NumPy's 2-byte void, as
**            NumPy saves ml_dtypes.bfloat16)
**   npc      NumPy's one-letter type code ("f"), also read in .npy headers; NULL if none
**   st       the safetensors dtype ("F32"), NULL where safetensors has none (complex128)
**   aliases  other accepted names, space-separated ("" for none): also gpu.<alias>
**   mpi      Open MPI's predefined datatype, ompi_mpi_<mpi> (MPI_FLOAT is ompi_mpi_float;
**            the halves travel as uint16_t and reduce by src/dist's user ops)
**   nccl     NCCL's ncclDataType_t, nccl<nccl> (complex: its parts' type, a complex
**            sum being the sum of the parts); none: moved as bytes, reduced through MPI
**   cuda     cudaDataType (library_types.h: cuBLAS, cuSOLVER, cuFFT's Xt), CUDA_<cuda>
**   cudnn    cudnnDataType_t, CUDNN_DATA_<cudnn> (none: not in cuDNN 9.0)
**   blas     BLAS and LAPACK's type letter ("s": sgemm, sgetrf_; cuFFT's R2C/C2C read
**            s/c as R/C, d/z as D/Z), NULL where BLAS has none
**   idx      the IDX file format's type code (0x0D), 0 where IDX has none
**
** A library's column is read through GL_DTYPE_COLUMN(X, col) by the file that speaks to it
** (src/dist/dist.c, cuda_nccl.c, cuda_matmul.c, cuda_cudnn.c); gpu._dtypes shows every
** column, and `make docs` writes them into doc/API.md and doc/HACKING.md.
**
** Adding a dtype is this row, and only where its row cannot say it:
**   1. a new kind of float: its half conversions (kernels/half.h), and its MPI reductions
**      if MPI has no such type (src/dist/dist.c's user ops, as for the halves);
**   2. its promotions, where src/core/dtype.c's rules (by kind and size) do not give
**      NumPy 2's: gl_promote, gl_float_for; then tools/gen_fixtures.py (BF16_WITH for a
**      dtype NumPy lacks) and `/usr/bin/python3 tools/gen_fixtures.py` for
**      spec/fixtures/promotion.lua;
**   3. for a new storage type S, the CPU sort's key of it (src/backend/cpu/cpu_sort.c);
**      kernels/sort.cu's keys come from kind and size;
**   4. which families take it: each family's dtype set (elem_ops.h's GL_KINDS_<kind>,
**      launch.h / conv.h / fused.h's GL_K*_DTYPES, philox.h's GL_RAND_DTYPES, index.cu's
**      GL_KSCATTER_ATOMIC_DTYPES), so supports() answers for it; a complex dtype is in a
**      family only once the family ORs GL_DTSET_COMPLEX in and stamps its complex kernels;
**   5. values for it in the specs' per-dtype tables (spec/files_spec.lua's and every table
**      h.assert_covers_dtypes checks), and `make docs`.
** spec/dtypes_spec.lua, spec/io_spec.lua, spec/promotion_spec.lua, spec/dtype_matrix_spec.lua
** and spec/api_tables_spec.lua fail until each step is done.
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
  /*  E           id          S              kind     half  CT             UT        prec lo         hi              \
  **  name          npy     npc   st      aliases            mpi               nccl      cuda    cudnn     blas idx */ \
  X(c, BOOL,       boolean,    uint8_t,       BOOL,    none, uint8_t,       uint32_t, 0,  0,         1,              \
      "bool",       "|b1",  "?",  "BOOL", "",                uint8_t,          Uint8,    none,   BOOLEAN,  NULL, 0)    \
  X(c, UINT8,      uint8,      uint8_t,       UINT,    none, uint8_t,       uint32_t, 0,  0,         UINT8_MAX,      \
      "uint8",      "|u1",  "B",  "U8",   "byte",            uint8_t,          Uint8,    R_8U,   UINT8,    NULL, 0x08) \
  X(c, INT8,       int8,       int8_t,        INT,     none, int8_t,        uint32_t, 0,  INT8_MIN,  INT8_MAX,       \
      "int8",       "|i1",  "b",  "I8",   "",                int8_t,           Int8,     R_8I,   INT8,     NULL, 0x09) \
  X(c, INT16,      int16,      int16_t,       INT,     none, int16_t,       uint32_t, 0,  INT16_MIN, INT16_MAX,      \
      "int16",      "<i2",  "h",  "I16",  "short",           int16_t,          none,     R_16I,  none,     NULL, 0x0B) \
  X(c, UINT16,     uint16,     uint16_t,      UINT,    none, uint16_t,      uint32_t, 0,  0,         UINT16_MAX,     \
      "uint16",     "<u2",  "H",  "U16",  "ushort",          uint16_t,         none,     R_16U,  none,     NULL, 0)    \
  X(c, INT32,      int32,      int32_t,       INT,     none, int32_t,       uint32_t, 0,  INT32_MIN, INT32_MAX,      \
      "int32",      "<i4",  "i",  "I32",  "int",             int32_t,          Int32,    R_32I,  INT32,    NULL, 0x0C) \
  X(c, UINT32,     uint32,     uint32_t,      UINT,    none, uint32_t,      uint32_t, 0,  0,         UINT32_MAX,     \
      "uint32",     "<u4",  "I",  "U32",  "",                uint32_t,         Uint32,   R_32U,  none,     NULL, 0)    \
  X(c, INT64,      int64,      int64_t,       INT,     none, int64_t,       uint64_t, 0,  INT64_MIN, INT64_MAX,      \
      "int64",      "<i8",  "l",  "I64",  "long",            int64_t,          Int64,    R_64I,  INT64,    NULL, 0)    \
  X(c, UINT64,     uint64,     uint64_t,      UINT,    none, uint64_t,      uint64_t, 0,  0,         UINT64_MAX,     \
      "uint64",     "<u8",  "L",  "U64",  "",                uint64_t,         Uint64,   R_64U,  none,     NULL, 0)    \
  X(c, FLOAT16,    float16,    uint16_t,      FLOAT,   f16,  float,         uint32_t, 11, 0,         0,              \
      "float16",    "<f2",  "e",  "F16",  "half fp16",       uint16_t,         Float16,  R_16F,  HALF,     NULL, 0)    \
  X(c, BFLOAT16,   bfloat16,   uint16_t,      FLOAT,   bf16, float,         uint32_t, 8,  0,         0,              \
      "bfloat16",   "<V2",  NULL, "BF16", "bf16",            uint16_t,         Bfloat16, R_16BF, BFLOAT16, NULL, 0)    \
  X(c, FLOAT32,    float32,    float,         FLOAT,   none, float,         uint32_t, 24, 0,         0,              \
      "float32",    "<f4",  "f",  "F32",  "float fp32",      float,            Float32,  R_32F,  FLOAT,    "s",  0x0D) \
  X(c, FLOAT64,    float64,    double,        FLOAT,   none, double,        uint64_t, 53, 0,         0,              \
      "float64",    "<f8",  "d",  "F64",  "double fp64",     double,           Float64,  R_64F,  DOUBLE,   "d",  0x0E) \
  X(c, COMPLEX64,  complex64,  gl_complex64,  COMPLEX, none, gl_complex64,  uint32_t, 24, 0,         0,              \
      "complex64",  "<c8",  "F",  "C64",  "cfloat",          c_float_complex,  Float32,  C_32F,  none,     "c",  0)    \
  X(c, COMPLEX128, complex128, gl_complex128, COMPLEX, none, gl_complex128, uint64_t, 53, 0,         0,              \
      "complex128", "<c16", "D",  NULL,   "cdouble",         c_double_complex, Float64,  C_64F,  none,     "z",  0)

#define GL_DT_CALL_(X, ...) X(__VA_ARGS__)

/* GL_DTYPE_COLUMN(X, col): X(E, value) for each row, value the row's entry in column col,
** one of mpi, nccl, cuda, cudnn, blas, idx: the library type codes, each read by the one file
** that speaks to that library (X may paste the value: CUDA_##v). */
#define GL_DTYPE_COLUMN(X, col) GL_DTYPE_ROWS_(GL_DT_COLUMN_, (X, GL_DT_COL_##col##_))
#define GL_DT_COLUMN_(xp, E, ...) GL_DT_COLUMN__(GL_DT_UNPAREN_ xp, E, __VA_ARGS__)
#define GL_DT_COLUMN__(...) GL_DT_COLUMN___(__VA_ARGS__)
#define GL_DT_COLUMN___(X, pick, E, ...) GL_DT_COLUMN_CALL_(X, E, pick(__VA_ARGS__))
#define GL_DT_COLUMN_CALL_(X, E, v) X(E, v)
#define GL_DT_COL_mpi_(id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, ...) mpi
#define GL_DT_COL_nccl_(id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, nccl, ...) nccl
#define GL_DT_COL_cuda_(id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, nccl, cuda, ...) cuda
#define GL_DT_COL_cudnn_(id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, nccl, cuda, cudnn, \
                         ...) cudnn
#define GL_DT_COL_blas_(id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, nccl, cuda, cudnn, \
                        blas, ...) blas
#define GL_DT_COL_idx_(id, S, kind, half, CT, UT, prec, lo, hi, name, npy, npc, st, aliases, mpi, nccl, cuda, cudnn, \
                       blas, idx) idx

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
