/*
** cpu_matmul.c — dst (..., M, N) = a (..., M, K) @ b (..., K, N) on the CPU.
**
** float32 and float64 go to BLAS gemm, one call per matrix of the batch. BLAS reads a
** matrix with strides (s, 1) as row-major with ld = s and one with strides (1, s) as the
** transpose of a row-major matrix, so transposed and sliced operands are passed as they
** are; only other layouts (both strides != 1, negative or zero strides in the matrix
** axes) are copied, once for the whole operand, keeping broadcast batch axes broadcast.
** float16/bfloat16 are converted to float32, multiplied with sgemm and converted back.
** complex64 and complex128 go to cgemm and zgemm the same way.
** Integers and bool use a plain loop: integers wrap (accumulated in the unsigned type
** of the same width, as NumPy's int matmul does), bool is NumPy's logical matmul (or
** of ands).
*/
#include <limits.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"

/* Below this M*N*K OpenBLAS runs a gemm on one thread (its SMP threshold, 64^3), so
** a batch of such matrices is better spread over threads one matrix each. */
#define SMALL_GEMM ((int64_t)1 << 18)
/* Integer loops start threads above this many multiply-adds. */
#define PAR_MIN_MACS ((int64_t)1 << 16)
/* A gemm above PANEL_MACS multiply-adds goes to BLAS in panels of about that much work
** (gemm_one), with a poll for a stop between them: 2^31 take 40-80 ms at the 50-100
** GFLOP/s of the 2-core development machine. A skinny gemm is bound by memory, not
** arithmetic (1 x 40000 x 40000 ran 3 s), so an extent below PANEL_THIN counts as
** PANEL_THIN. Panels of K are PANEL_K deep at least (OpenBLAS's own blocks of K are
** 256-384), panels of rows or columns PANEL_MIN wide. */
#define PANEL_MACS ((int64_t)1 << 31)
#define PANEL_THIN 16
#define PANEL_K 256
#define PANEL_MIN 256

/* ---- layouts ------------------------------------------------------------------------ */

/* How BLAS reads an (R, C) matrix with element strides (sr, sc) in place. */
typedef struct mat_layout {
  int trans;       /* GL_CBLAS_NO_TRANS or GL_CBLAS_TRANS */
  int ld;
} mat_layout;

/* Row-major with ld = sr (strides (s, 1)), or the transpose of a row-major (C, R)
** matrix with ld = sc (strides (1, s)); false when neither fits. Extent-1 axes may have
** any stride. */
static bool blas_layout(int64_t R, int64_t C, int64_t sr, int64_t sc, mat_layout *out) {
  int64_t rmin = C > 1 ? C : 1, cmin = R > 1 ? R : 1, ld;
  if ((C == 1 || sc == 1) && (R == 1 || sr >= rmin)) {
    out->trans = GL_CBLAS_NO_TRANS;
    ld = R == 1 ? rmin : sr;
  } else if ((R == 1 || sr == 1) && (C == 1 || sc >= cmin)) {
    out->trans = GL_CBLAS_TRANS;
    ld = C == 1 ? cmin : sc;
  } else {
    return false;
  }
  if (ld > INT_MAX) return false;
  out->ld = (int)ld;
  return true;
}

/* A contiguous copy of x (..., R, C) in dtype dt, viewed back to x's shape in *view.
** Batch axes with stride 0 stay broadcast: they are copied once, not once per batch. */
static gl_status compact_copy(const gl_array *x, gl_dtype dt, gl_array *tmp, gl_array *view) {
  gl_array c = *x;
  c.size = 1;
  for (int d = 0; d < c.ndim; d++) {
    if (d < c.ndim - 2 && c.strides[d] == 0) c.shape[d] = 1;
    c.size *= c.shape[d];
  }
  GL_TRY(gl_array_alloc(tmp, dt, c.ndim, c.shape, gl_cpu()));
  gl_status st = gl_cpu_copy(tmp, &c);
  *view = *tmp;
  if (st == GL_OK) st = gl_view_expand(view, x->ndim, x->shape);
  if (st != GL_OK) gl_array_release(tmp);
  return st;
}

/* Element offsets of batch 'bi' (C order over dst's batch axes) in dst, a and b. */
static inline void batch_offsets(const gl_array *dst, const gl_array *a, const gl_array *b,
                                 int64_t bi, int64_t off[3]) {
  off[0] = off[1] = off[2] = 0;
  for (int d = dst->ndim - 3; d >= 0 && bi > 0; d--) {
    int64_t i = bi % dst->shape[d];
    bi /= dst->shape[d];
    off[0] += i * dst->strides[d];
    off[1] += i * a->strides[d];
    off[2] += i * b->strides[d];
  }
}

static int64_t batch_count(const gl_array *dst) {
  int64_t n = 1;
  for (int d = 0; d < dst->ndim - 2; d++) n *= dst->shape[d];
  return n;
}

/* ---- floats: BLAS ----------------------------------------------------------------------- */

/* One BLAS call: c (M, N) = a (M, K) @ b (K, N), plus c itself when 'add'; pointers at
** each matrix's first element. */
static void gemm_call(const gl_cpu_blas *bl, gl_dtype dt, const mat_layout *l, int64_t M, int64_t N,
                      int64_t K, const char *a, const char *b, char *c, bool add) {
  if (gl_dtype_is_complex(dt)) {
    static const gl_complex128 one128 = { 1, 0 }, zero128 = { 0, 0 };
    static const gl_complex64 one64 = { 1, 0 }, zero64 = { 0, 0 };
    bool z = dt == GL_COMPLEX128;
    const void *alpha = z ? (const void *)&one128 : (const void *)&one64;
    const void *beta = add ? alpha : z ? (const void *)&zero128 : (const void *)&zero64;
    (z ? bl->zgemm : bl->cgemm)(GL_CBLAS_ROW_MAJOR, l[1].trans, l[2].trans, (int)M, (int)N, (int)K, alpha, a,
                                l[1].ld, b, l[2].ld, beta, c, l[0].ld);
  } else if (dt == GL_FLOAT64)
    bl->dgemm(GL_CBLAS_ROW_MAJOR, l[1].trans, l[2].trans, (int)M, (int)N, (int)K, 1.0, (const double *)a,
              l[1].ld, (const double *)b, l[2].ld, add ? 1.0 : 0.0, (double *)c, l[0].ld);
  else
    bl->sgemm(GL_CBLAS_ROW_MAJOR, l[1].trans, l[2].trans, (int)M, (int)N, (int)K, 1.0f, (const float *)a,
              l[1].ld, (const float *)b, l[2].ld, add ? 1.0f : 0.0f, (float *)c, l[0].ld);
}

static int64_t thick(int64_t n) { return n < PANEL_THIN ? PANEL_THIN : n; }

/* 'want' rounded down to a multiple of 'unit', and at least one unit. */
static int64_t panel_step(int64_t want, int64_t unit) { return want < unit ? unit : want / unit * unit; }

/* Matrix 'bi' of the batch: one BLAS call, or past PANEL_MACS panels with a poll for a
** stop between them. Panels split K (c = a[:, k0..] @ b[k0.., :] + c): every element of
** a and b is still packed once, and OpenBLAS itself updates c once per block of K, so
** they cost next to nothing (a 4000^3 float64 gemm ran within 2% of one call; panels
** of rows ran 15% slower, packing all of b again for each). A K too short for two
** panels splits the longer of c's axes instead. */
static void gemm_one(const gl_cpu_blas *bl, const gl_array *c, const gl_array *a, const gl_array *b,
                     const mat_layout *l, int64_t bi) {
  int nd = c->ndim;
  int64_t M = c->shape[nd - 2], N = c->shape[nd - 1], K = a->shape[nd - 1];
  int64_t off[3], sz = (int64_t)gl_array_itemsize(c);
  batch_offsets(c, a, b, bi, off);
  const char *pa = (const char *)gl_array_data(a) + off[1] * sz, *pb = (const char *)gl_array_data(b) + off[2] * sz;
  char *pc = (char *)gl_array_data(c) + off[0] * sz;
  gl_dtype dt = (gl_dtype)c->dtype;
  int64_t per_k = thick(M) * thick(N);                 /* the work of one step of K; K > 0 */
  if (per_k <= PANEL_MACS / K) { gemm_call(bl, dt, l, M, N, K, pa, pb, pc, false); return; }
  if (K >= 2 * PANEL_K) {
    int64_t step = panel_step(PANEL_MACS / per_k, PANEL_K);
    int64_t as = a->strides[nd - 1], bs = b->strides[nd - 2];
    for (int64_t k = 0; k < K && !gl_interrupted(); k += step) {
      int64_t w = K - k < step ? K - k : step;
      gemm_call(bl, dt, l, M, N, w, pa + k * as * sz, pb + k * bs * sz, pc, k > 0);
    }
    return;
  }
  bool rows = M >= N;
  int64_t len = rows ? M : N, step = panel_step(PANEL_MACS / (thick(rows ? N : M) * K), PANEL_MIN);
  /* element steps of one row (column) of c, and of a (b) beside it */
  int64_t cs = rows ? c->strides[nd - 2] : c->strides[nd - 1];
  int64_t as = rows ? a->strides[nd - 2] : 0, bs = rows ? 0 : b->strides[nd - 1];
  for (int64_t i = 0; i < len && !gl_interrupted(); i += step) {
    int64_t w = len - i < step ? len - i : step;
    gemm_call(bl, dt, l, rows ? w : M, rows ? N : w, K, pa + i * as * sz, pb + i * bs * sz, pc + i * cs * sz,
              false);
  }
}

/* c, a, b of one dtype (float32, float64, complex64, complex128) with BLAS layouts l[0..2]
** (c's NoTrans).
** Big matrices: one gemm after another, each threaded by OpenBLAS. Many small ones:
** OpenMP threads take whole matrices (OpenBLAS runs those single-threaded anyway). */
static void gemm_batches(const gl_cpu_blas *bl, const gl_array *c, const gl_array *a,
                         const gl_array *b, const mat_layout *l) {
  int nd = c->ndim;
  int64_t nbatch = batch_count(c);
  int64_t macs = c->shape[nd - 2] * c->shape[nd - 1] * a->shape[nd - 1];
  /* the team for the whole job, in units of 64 multiply-adds (a 128x256x784 gemm: 2 threads
  ** on 2 free cores; anything near OpenBLAS's 64^3 SMP threshold: 1) */
  int nt = gl_cpu_team_size(nbatch * macs / 64);
#ifdef _OPENMP
  if (nbatch > 1 && macs < SMALL_GEMM && nbatch * macs >= PAR_MIN_MACS && nt > 1) {
    gl_cpu_blas_threads(bl, 1);
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t bi = 0; bi < nbatch; bi++) if (!gl_interrupted()) gemm_one(bl, c, a, b, l, bi);
    gl_cpu_team_done(nt);
    return;
  }
#endif
  gl_cpu_blas_threads(bl, nt);
  for (int64_t bi = 0; bi < nbatch && !gl_interrupted(); bi++) gemm_one(bl, c, a, b, l, bi);
  gl_cpu_team_done(nt);
}

/* The dtype BLAS multiplies dt in: its own, float32 for the halves. */
static gl_dtype blas_dtype(gl_dtype dt) {
  return dt == GL_FLOAT64 || gl_dtype_is_complex(dt) ? dt : GL_FLOAT32;
}

static gl_status blas_matmul(const gl_array *dst, const gl_array *a, const gl_array *b) {
  int nd = dst->ndim;
  int64_t M = dst->shape[nd - 2], N = dst->shape[nd - 1], K = a->shape[nd - 1];
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
    return gl_fail(GL_ENOTSUP, "matmul dimensions above %d are not supported by BLAS", INT_MAX);
  const gl_cpu_blas *bl;
  GL_TRY(gl_cpu_blas_get(&bl));
  gl_dtype ct = blas_dtype((gl_dtype)dst->dtype);
  if ((ct == GL_COMPLEX64 && !bl->cgemm) || (ct == GL_COMPLEX128 && !bl->zgemm))
    return gl_fail(GL_ENOTSUP, "matmul of %s needs cblas_%cgemm, which %s lacks", gl_dtypes[ct].name,
                   ct == GL_COMPLEX64 ? 'c' : 'z', bl->lib);
  gl_array ta = { 0 }, tb = { 0 }, tc = { 0 }, va = *a, vb = *b, vc = *dst;
  mat_layout l[3];
  gl_status st = GL_OK;
  if (a->dtype != ct || !blas_layout(M, K, a->strides[nd - 2], a->strides[nd - 1], &l[1])) {
    st = compact_copy(a, ct, &ta, &va);
    if (st == GL_OK) blas_layout(M, K, va.strides[nd - 2], va.strides[nd - 1], &l[1]);
  }
  if (st == GL_OK && (b->dtype != ct || !blas_layout(K, N, b->strides[nd - 2], b->strides[nd - 1], &l[2]))) {
    st = compact_copy(b, ct, &tb, &vb);
    if (st == GL_OK) blas_layout(K, N, vb.strides[nd - 2], vb.strides[nd - 1], &l[2]);
  }
  if (st == GL_OK && (dst->dtype != ct || !blas_layout(M, N, dst->strides[nd - 2], dst->strides[nd - 1], &l[0])
                      || l[0].trans != GL_CBLAS_NO_TRANS)) {
    st = gl_array_alloc(&tc, ct, nd, dst->shape, gl_cpu());
    vc = tc;
    l[0].trans = GL_CBLAS_NO_TRANS;
    l[0].ld = N > 1 ? (int)N : 1;
  }
  if (st == GL_OK) {
    gemm_batches(bl, &vc, &va, &vb, l);
    st = gl_interrupt_check();
    if (st == GL_OK && tc.storage) st = gl_cpu_copy(dst, &tc);
  }
  gl_array_release(&ta);
  gl_array_release(&tb);
  gl_array_release(&tc);
  return st;
}

/* ---- integers and bool: a loop ---------------------------------------------------------- */

/* One row of C: c[j] = sum_k a[k] * b[k, j], integers wrapping in their row's unsigned
** type UT, bool the or of ands. A poll for a stop every INT_POLL values of k (a row of a
** huge b may take seconds); stopped, the row is left unfinished. */
#define INT_POLL 256
typedef void (*int_row_fn)(char *c, int64_t csn, const char *a, int64_t ask, const char *b,
                           int64_t bsk, int64_t bsn, int64_t N, int64_t K);

/* The helpers below take the dtype as a constant (int_row is instantiated per dtype). */
#define INT_INLINE static inline __attribute__((always_inline))
/* The rows int_row takes: the integer and bool dtypes. */
#define INT_DTYPES(kind, ...) GL_DT_WHEN(kind, (1, 1, 1, 0), __VA_ARGS__)

INT_INLINE size_t int_size(gl_dtype dt) {
  switch (dt) {
#define INT_SIZE_CASE(E, id, S, kind, ...) INT_DTYPES(kind, case GL_##E: return sizeof(S);)
    GL_DTYPE_LIST(INT_SIZE_CASE)
    default: return 1;
  }
}

/* Per integer dtype: element i of a (its bits, sign-extended); c[i] += x * b[j] (bool:
** c[i] |= x & b[j]), wrapping in the row's UT. */
#define INT_ELEM_FNS(E, id, S, kind, half, CT, UT, ...) INT_DTYPES(kind,                          \
  INT_INLINE uint64_t int_load_##id(const char *a, int64_t i) { return (uint64_t)((const S *)a)[i]; } \
  INT_INLINE void int_mac_##id(char *c, int64_t i, uint64_t x, const char *b, int64_t j) {           \
    S *d = (S *)c + i, y = ((const S *)b)[j];                                                         \
    *d = GL_KIND_##kind == GL_KIND_BOOL ? (S)((UT)*d | ((UT)(S)x & (UT)y)) : (S)((UT)*d + (UT)(S)x * (UT)y); \
  })
GL_DTYPE_LIST(INT_ELEM_FNS)

/* The same for a dtype dt: each case passes on the arguments A it is given. */
INT_INLINE uint64_t int_load(gl_dtype dt, const char *a, int64_t i) {
#define INT_LOAD_CASE(A, E, id, S, kind, ...) INT_DTYPES(kind, case GL_##E: return int_load_##id A;)
  switch (dt) { GL_DTYPE_ROWS_(INT_LOAD_CASE, (a, i)) default: return 0; }
}

INT_INLINE void int_mac(gl_dtype dt, char *c, int64_t i, uint64_t x, const char *b, int64_t j) {
#define INT_MAC_CASE(A, E, id, S, kind, ...) INT_DTYPES(kind, case GL_##E: int_mac_##id A; return;)
  switch (dt) { GL_DTYPE_ROWS_(INT_MAC_CASE, (c, i, x, b, j)) default: return; }
}

INT_INLINE void int_row(gl_dtype dt, char *c, int64_t csn, const char *a, int64_t ask, const char *b,
                        int64_t bsk, int64_t bsn, int64_t N, int64_t K) {
  const int64_t sz = (int64_t)int_size(dt);
  if (csn == 1) memset(c, 0, (size_t)(N * sz));
  else for (int64_t j = 0; j < N; j++) memset(c + j * csn * sz, 0, (size_t)sz);
  for (int64_t k = 0; k < K; k++) {
    if (k % INT_POLL == 0 && gl_interrupted()) return;
    const uint64_t x = int_load(dt, a, k * ask);
    const char *bk = b + k * bsk * sz;
    if (csn == 1 && bsn == 1)
      for (int64_t j = 0; j < N; j++) int_mac(dt, c, j, x, bk, j);
    else
      for (int64_t j = 0; j < N; j++) int_mac(dt, c, j * csn, x, bk, j * bsn);
  }
}

#define INT_ROW_FN(E, id, S, kind, ...) INT_DTYPES(kind, static void row_##id(char *c, int64_t csn, \
  const char *a, int64_t ask, const char *b, int64_t bsk, int64_t bsn, int64_t N, int64_t K) {       \
  int_row(GL_##E, c, csn, a, ask, b, bsk, bsn, N, K); })
GL_DTYPE_LIST(INT_ROW_FN)
#define INT_ROW_ENTRY(E, id, S, kind, ...) INT_DTYPES(kind, [GL_##E] = row_##id,)
static const int_row_fn int_rows[GL_NDTYPE] = { GL_DTYPE_LIST(INT_ROW_ENTRY) };

static void int_one_row(int_row_fn fn, const gl_array *dst, const gl_array *a, const gl_array *b,
                        int64_t r) {
  int nd = dst->ndim;
  int64_t M = dst->shape[nd - 2], N = dst->shape[nd - 1], K = a->shape[nd - 1];
  int64_t off[3], bi = r / M, i = r % M;
  size_t sz = gl_array_itemsize(dst);
  batch_offsets(dst, a, b, bi, off);
  char *c = (char *)gl_array_data(dst) + (off[0] + i * dst->strides[nd - 2]) * (int64_t)sz;
  const char *pa = (const char *)gl_array_data(a) + (off[1] + i * a->strides[nd - 2]) * (int64_t)sz;
  const char *pb = (const char *)gl_array_data(b) + off[2] * (int64_t)sz;
  fn(c, dst->strides[nd - 1], pa, a->strides[nd - 1], pb, b->strides[nd - 2], b->strides[nd - 1], N, K);
}

static gl_status int_matmul(const gl_array *dst, const gl_array *a, const gl_array *b) {
  int_row_fn fn = int_rows[dst->dtype];
  if (fn == NULL) return gl_fail(GL_ENOTSUP, "matmul is not defined for %s arrays", gl_dtypes[dst->dtype].name);
  int nd = dst->ndim;
  int64_t rows = batch_count(dst) * dst->shape[nd - 2];
#ifdef _OPENMP
  int64_t macs = rows * dst->shape[nd - 1] * a->shape[nd - 1];
  int nt = rows > 1 && macs >= PAR_MIN_MACS ? gl_cpu_team_size(macs) : 1;
  if (nt > 1) {
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t r = 0; r < rows; r++) if (!gl_interrupted()) int_one_row(fn, dst, a, b, r);
    gl_cpu_team_done(nt);
    return gl_interrupt_check();
  }
#endif
  for (int64_t r = 0; r < rows && !gl_interrupted(); r++) int_one_row(fn, dst, a, b, r);
  return gl_interrupt_check();
}

/* ---- entry ------------------------------------------------------------------------------- */

bool gl_cpu_has_matmul(gl_dtype dt) {
  return (unsigned)dt < GL_NDTYPE && (gl_dtype_is_float(dt) || gl_dtype_is_complex(dt) || int_rows[dt] != NULL);
}

gl_status gl_cpu_matmul(const gl_array *dst, const gl_array *a, const gl_array *b) {
  int nd = dst->ndim;
  if (dst->size == 0) return GL_OK;
  if (a->shape[nd - 1] == 0) return gl_cpu_fill(dst, gl_scalar_int(0));   /* K = 0: sums of nothing */
  if (gl_dtype_is_float((gl_dtype)dst->dtype) || gl_dtype_is_complex((gl_dtype)dst->dtype))
    return blas_matmul(dst, a, b);
  return int_matmul(dst, a, b);
}
