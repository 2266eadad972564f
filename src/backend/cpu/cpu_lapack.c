/*
** cpu_lapack.c — gl_backend.linalg on the CPU: the LAPACK inside OpenBLAS. Its Fortran
** entry points (sgetrf_, zheevd_, ...) are resolved with dlsym from the handle that
** cpu_blas.c opened at first use, once per process, into one table of routines per element
** type (la_float, la_double, la_cfloat, la_cdouble: LAPACK's s, d, c and z). Each driver is
** written once over an la_type: its routines, its element and part sizes, and la_pget /
** la_pset to read and write its parts (a real element is one part, a complex one two: re,
** im) as doubles (exact both ways for the values a float holds). The arithmetic the drivers
** make themselves is made in double and rounded to the part type after each step (la_round).
** Complex elements are C99's layout (interleaved re, im), which is LAPACK's COMPLEX.
**
** Row-major and LAPACK's column-major: a C-order m x n matrix read column-major with
** leading dimension n is its transpose (n x m), the plain transpose for complex too (not
** the conjugate one). Where the transpose does no harm (the determinant, the inverse,
** Cholesky and SVD, see each) the C buffer goes to LAPACK as is; QR, eigenvectors, solve's
** right-hand sides, lstsq and eig copy through a transposed scratch.
**
** Threads: a batch of small matrices is split over an OpenMP team, each thread factoring
** whole matrices with OpenBLAS at one thread (as gemm batches do, cpu_matmul.c); a big
** matrix (or a single one) runs alone with OpenBLAS threading it. Each thread of a team
** allocates its scratch once, sized by one workspace query for the batch's shape.
*/
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"

typedef int la_int;                 /* LAPACK's INTEGER in the distributions' builds */

/* ---- element types and their routines ------------------------------------------------------ */

/* LAPACK's Fortran entry points for one element type (32-bit integers; the hidden lengths
** of character arguments, size_t each, passed as gfortran expects them). Every 'void *' is
** an array of the type's elements, every 'real' one of its parts (float or double: the
** singular values, Hermitian eigenvalues, rcond and the complex drivers' rwork). The
** routines whose complex twin takes other arguments have two fields: the real one
** (resolved for s and d) and the complex one (_cx, or heevd: resolved for c and z). */
typedef struct la_routines {
  void (*getrf)(const la_int *m, const la_int *n, void *a, const la_int *lda, la_int *ipiv, la_int *info);
  void (*getrs)(const char *tr, const la_int *n, const la_int *nrhs, const void *a, const la_int *lda,
                const la_int *ipiv, void *b, const la_int *ldb, la_int *info, size_t);
  void (*getri)(const la_int *n, void *a, const la_int *lda, const la_int *ipiv, void *work,
                const la_int *lwork, la_int *info);
  void (*potrf)(const char *uplo, const la_int *n, void *a, const la_int *lda, la_int *info, size_t);
  void (*geqrf)(const la_int *m, const la_int *n, void *a, const la_int *lda, void *tau, void *work,
                const la_int *lwork, la_int *info);
  /* orgqr (real), ungqr (complex): the same arguments */
  void (*orgqr)(const la_int *m, const la_int *n, const la_int *k, void *a, const la_int *lda,
                const void *tau, void *work, const la_int *lwork, la_int *info);
  void (*gesdd)(const char *jobz, const la_int *m, const la_int *n, void *a, const la_int *lda, void *s,
                void *u, const la_int *ldu, void *vt, const la_int *ldvt, void *work, const la_int *lwork,
                la_int *iwork, la_int *info, size_t);
  void (*gesdd_cx)(const char *jobz, const la_int *m, const la_int *n, void *a, const la_int *lda, void *s,
                   void *u, const la_int *ldu, void *vt, const la_int *ldvt, void *work, const la_int *lwork,
                   void *rwork, la_int *iwork, la_int *info, size_t);
  void (*syevd)(const char *jobz, const char *uplo, const la_int *n, void *a, const la_int *lda, void *w,
                void *work, const la_int *lwork, la_int *iwork, const la_int *liwork, la_int *info, size_t,
                size_t);
  void (*heevd)(const char *jobz, const char *uplo, const la_int *n, void *a, const la_int *lda, void *w,
                void *work, const la_int *lwork, void *rwork, const la_int *lrwork, la_int *iwork,
                const la_int *liwork, la_int *info, size_t, size_t);
  void (*gelsd)(const la_int *m, const la_int *n, const la_int *nrhs, void *a, const la_int *lda, void *b,
                const la_int *ldb, void *s, const void *rcond, la_int *rank, void *work, const la_int *lwork,
                la_int *iwork, la_int *info);
  void (*gelsd_cx)(const la_int *m, const la_int *n, const la_int *nrhs, void *a, const la_int *lda, void *b,
                   const la_int *ldb, void *s, const void *rcond, la_int *rank, void *work, const la_int *lwork,
                   void *rwork, la_int *iwork, la_int *info);
  void (*geev)(const char *jobvl, const char *jobvr, const la_int *n, void *a, const la_int *lda, void *wr,
               void *wi, void *vl, const la_int *ldvl, void *vr, const la_int *ldvr, void *work,
               const la_int *lwork, la_int *info, size_t, size_t);
  void (*geev_cx)(const char *jobvl, const char *jobvr, const la_int *n, void *a, const la_int *lda, void *w,
                  void *vl, const la_int *ldvl, void *vr, const la_int *ldvr, void *work, const la_int *lwork,
                  void *rwork, la_int *info, size_t, size_t);
} la_routines;

/* The routines' names after the type's prefix letter for the real types and for the
** complex ones (NULL: not resolved for those), and where each goes in la_routines. */
#define LA_ENTRY(real, cplx, field) { real, cplx, offsetof(la_routines, field) }
static const struct { const char *real, *cplx; size_t at; } la_entries[] = {
  LA_ENTRY("getrf", "getrf", getrf), LA_ENTRY("getrs", "getrs", getrs), LA_ENTRY("getri", "getri", getri),
  LA_ENTRY("potrf", "potrf", potrf), LA_ENTRY("geqrf", "geqrf", geqrf), LA_ENTRY("orgqr", "ungqr", orgqr),
  LA_ENTRY("gesdd", NULL, gesdd), LA_ENTRY(NULL, "gesdd", gesdd_cx), LA_ENTRY("syevd", NULL, syevd),
  LA_ENTRY(NULL, "heevd", heevd), LA_ENTRY("gelsd", NULL, gelsd), LA_ENTRY(NULL, "gelsd", gelsd_cx),
  LA_ENTRY("geev", NULL, geev), LA_ENTRY(NULL, "geev", geev_cx),
};

typedef struct la_type {
  char prefix;        /* LAPACK's letter: 's', 'd', 'c' or 'z' */
  bool single;        /* float parts (else double) */
  bool cplx;          /* complex elements: two parts, re and im */
  size_t size;        /* an element's bytes */
  size_t psize;       /* a part's bytes: the element of the real outputs (s, w, log|det|) */
  la_routines lib;
} la_type;

static la_type la_float = { 's', true, false, sizeof(float), sizeof(float), { 0 } };
static la_type la_double = { 'd', false, false, sizeof(double), sizeof(double), { 0 } };
static la_type la_cfloat = { 'c', true, true, 2 * sizeof(float), sizeof(float), { 0 } };
static la_type la_cdouble = { 'z', false, true, 2 * sizeof(double), sizeof(double), { 0 } };

/* One value of the type, for LAPACK's scalar arguments and workspace queries (a complex
** query writes a whole element; its real part comes first, where f and d read). */
typedef union la_scalar { float f; double d; double z[2]; } la_scalar;

/* Resolves every routine of t from the BLAS handle; false when one is missing. */
static bool la_resolve(la_type *t, void *h) {
  for (size_t i = 0; i < sizeof la_entries / sizeof la_entries[0]; i++) {
    const char *base = t->cplx ? la_entries[i].cplx : la_entries[i].real;
    if (base == NULL) continue;
    char name[16];
    snprintf(name, sizeof name, "%c%s_", t->prefix, base);
    void *f = dlsym(h, name);
    if (f == NULL) return false;
    memcpy((char *)&t->lib + la_entries[i].at, &f, sizeof f);   /* a defined void * to function pointer */
  }
  return true;
}

/* Element i of the buffer p, and part i of a buffer of parts (a real output, or the parts
** of complex elements: element i's re is part 2i, its im part 2i + 1). */
static inline void *la_at(const la_type *t, const void *p, int64_t i) {
  return (char *)(uintptr_t)p + i * (int64_t)t->size;
}
static inline void *la_pat(const la_type *t, const void *p, int64_t i) {
  return (char *)(uintptr_t)p + i * (int64_t)t->psize;
}
static inline double la_pget(const la_type *t, const void *p, int64_t i) {
  return t->single ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline void la_pset(const la_type *t, void *p, int64_t i, double v) {
  if (t->single) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}
/* How many parts an element has. */
static inline int64_t la_parts(const la_type *t) { return t->cplx ? 2 : 1; }

/* Element i = the real value v (im 0), and element i = every part v (NaN: a NaN element). */
static inline void la_set_real(const la_type *t, void *p, int64_t i, double v) {
  int64_t k = la_parts(t);
  la_pset(t, p, i * k, v);
  if (k == 2) la_pset(t, p, i * k + 1, 0);
}
static inline void la_set_all(const la_type *t, void *p, int64_t i, double v) {
  for (int64_t k = la_parts(t), q = 0; q < k; q++) la_pset(t, p, i * k + q, v);
}

/* dst[di] = src[si], elements. */
static inline void la_move(const la_type *t, void *dst, int64_t di, const void *src, int64_t si) {
  memcpy(la_at(t, dst, di), la_at(t, src, si), t->size);
}

/* v rounded to the part type: a float operation made in double and rounded so gives the
** float's own answer (double holds every product of two floats exactly). */
static inline double la_round(const la_type *t, double v) {
  return t->single ? (double)(float)v : v;
}

static la_scalar la_scalar_of(const la_type *t, double v) {
  la_scalar s;
  memset(&s, 0, sizeof s);
  if (t->single) s.f = (float)v;
  else s.d = v;
  return s;
}

/* The workspace size a LAPACK query (lwork = -1) reported in w. */
static la_int la_lwork_of(const la_type *t, la_scalar w) {
  double v = t->single ? (double)w.f : w.d;
  return v < 1 ? 1 : (la_int)v + 1;
}

/* dst[0..n) = src[0..n) (elements); nothing for n = 0 (either may be NULL then: empty
** matrices). */
static void la_copy(const la_type *t, void *dst, const void *src, int64_t n) {
  if (n > 0) memcpy(dst, src, t->size * (size_t)n);
}

/* dst (c x r, C order) = the transpose of src (r x c, C order): between C order and
** column-major. */
static void la_transpose(const la_type *t, void *dst, const void *src, int64_t r, int64_t c) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) la_move(t, dst, j * r + i, src, i * c + j);
}

/* Whether the n elements at x are all finite: the iterative drivers (gesdd, syevd, gelsd,
** geev) can loop for ever on an infinity, so a matrix that is not fails as "did not
** converge" before LAPACK sees it (NumPy's LinAlgError for those). */
static bool la_finite(const la_type *t, const void *x, int64_t n) {
  for (int64_t i = 0; i < n * la_parts(t); i++) if (!isfinite(la_pget(t, x, i))) return false;
  return true;
}

/* Whether the triangle of an n x n matrix (C order) that syevd or potrf reads is all
** finite (nan_only false), or holds a NaN (nan_only true). */
static bool la_tri_has(const la_type *t, const void *x, int64_t n, bool lower, bool nan_only) {
  int64_t k = la_parts(t);
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = lower ? 0 : r; c < (lower ? r + 1 : n); c++)
      for (int64_t q = 0; q < k; q++) {
        double v = la_pget(t, x, (r * n + c) * k + q);
        if (nan_only ? isnan(v) : !isfinite(v)) return true;
      }
  return false;
}

/* ---- batches ------------------------------------------------------------------------------- */

/* Leading-axis product: how many matrices an operand holds. */
static int64_t batch_of(const gl_array *a) {
  int64_t b = 1;
  for (int d = 0; d < a->ndim - 2; d++) b *= a->shape[d];
  return b;
}

/* *first = min(*first, i), from any thread of a team. */
static void la_note_bad(int64_t *first, int64_t i) {
  int64_t cur = __atomic_load_n(first, __ATOMIC_RELAXED);
  while (i < cur && !__atomic_compare_exchange_n(first, &cur, i, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

static const gl_cpu_blas *la_blas;  /* set by la_load */

/* The team for B matrices of about 'flops' each, and OpenBLAS's threads to go with it:
** above ~2e7 flops a matrix (n ~ 200) OpenBLAS's own threads pay, below them whole
** matrices per thread do. The work is counted in gl_cpu_team_size's elements: 64 flops
** each, plus 256 for a LAPACK call's fixed cost (~100 ns: a 3x3 solve is nearly all of it). */
static int la_team(int64_t B, double flops) {
  double total = (double)B * (flops / 64 + 256);
  int nt = gl_cpu_team_size(total > 1e15 ? (int64_t)1e15 : (int64_t)total);
  if (B <= 1 || flops > 2e7) { gl_cpu_blas_threads(la_blas, nt); return 1; }
  if (nt > B) nt = (int)B;
  gl_cpu_blas_threads(la_blas, 1);
  return nt;
}

/* One matrix of a batch: matrix i of the driver's 'job', with 'ws' the thread's scratch;
** false when the matrix failed (singular, not finite, did not converge). */
typedef bool (*la_item_fn)(const void *job, int64_t i, void *ws);

/* Runs item for i = 0 .. B-1, spread over la_team's threads, each with 'scratch' bytes of
** its own; *bad = the smallest i whose item failed (-1: none). GL_ENOMEM when a thread's
** scratch cannot be had. */
static gl_status la_batch(int64_t B, double flops, size_t scratch, la_item_fn item, const void *job, int64_t *bad) {
  int64_t first = INT64_MAX;
  int nt = la_team(B, flops), nomem = 0;
  if (nt > 1) {
    #pragma omp parallel num_threads(nt)
    {
      void *ws = scratch ? malloc(scratch) : NULL;
      if (scratch && ws == NULL) __atomic_store_n(&nomem, 1, __ATOMIC_RELAXED);
      #pragma omp for schedule(static)
      for (int64_t i = 0; i < B; i++) {
        if ((scratch && ws == NULL) || gl_interrupted()) continue;
        if (!item(job, i, ws)) la_note_bad(&first, i);
      }
      free(ws);
    }
    gl_cpu_team_done(nt);
  } else {          /* outside any parallel region, so OpenBLAS may thread each matrix */
    void *ws = scratch ? malloc(scratch) : NULL;
    if (scratch && ws == NULL) nomem = 1;
    for (int64_t i = 0; i < B && !nomem && !gl_interrupted(); i++)
      if (!item(job, i, ws)) la_note_bad(&first, i);
    free(ws);
  }
  if (nomem) return gl_fail(GL_ENOMEM, "linalg: out of memory for LAPACK's workspace (%zu bytes)", scratch);
  *bad = first == INT64_MAX ? -1 : first;
  return gl_interrupt_check();
}

/* ---- SOLVE: getrf of a as is (LAPACK factors a^T), getrs with 'T' solves (a^T)^T x = b;
** b goes in and x comes out through a column-major scratch ---------------------------- */

typedef struct la_solve_job {
  const la_type *t;
  const void *a, *b;
  void *x;
  la_int n, k;
  int64_t an, bn;
} la_solve_job;

static la_int la_solve_lapack(const la_type *t, const void *a, const void *b, void *x, la_int n, la_int k,
                              void *ws) {
  void *lu = ws, *rhs = la_at(t, lu, (int64_t)n * n);
  la_int *ipiv = la_at(t, rhs, (int64_t)n * k), info = 0, ld = n > 0 ? n : 1;
  la_copy(t, lu, a, (int64_t)n * n);
  t->lib.getrf(&n, &n, lu, &ld, ipiv, &info);
  if (info != 0) return info;
  la_transpose(t, rhs, b, n, k);
  t->lib.getrs("T", &n, &k, lu, &ld, ipiv, rhs, &ld, &info, 1);
  la_transpose(t, x, rhs, k, n);
  return info;
}

/* Small real systems (n <= LA_SMALL) skip LAPACK, whose call and transposes cost more than
** the arithmetic: getf2's algorithm (partial pivoting on the first largest |pivot|, a zero
** pivot making the matrix singular) on a C-order copy, then the two triangular solves. The
** copy is held in double, each result rounded to the type (la_round), so a float system
** gets float arithmetic. */
#define LA_SMALL 8
static la_int la_solve_small(const la_type *t, const void *a, const void *b, void *x, int n, int k, void *ws) {
  double *lu = ws, *y = lu + n * n;
  for (int e = 0; e < n * n; e++) lu[e] = la_pget(t, a, e);
  for (int e = 0; e < n * k; e++) y[e] = la_pget(t, b, e);
  for (int j = 0; j < n; j++) {
    int p = j;
    for (int r = j + 1; r < n; r++) if (fabs(lu[r * n + j]) > fabs(lu[p * n + j])) p = r;
    if (lu[p * n + j] == 0) return j + 1;
    if (p != j) {
      for (int c = 0; c < n; c++) { double v = lu[j * n + c]; lu[j * n + c] = lu[p * n + c]; lu[p * n + c] = v; }
      for (int c = 0; c < k; c++) { double v = y[j * k + c]; y[j * k + c] = y[p * k + c]; y[p * k + c] = v; }
    }
    double inv = la_round(t, 1 / lu[j * n + j]);
    for (int r = j + 1; r < n; r++) {
      double l = lu[r * n + j] = la_round(t, lu[r * n + j] * inv);
      for (int c = j + 1; c < n; c++) lu[r * n + c] = la_round(t, lu[r * n + c] - l * lu[j * n + c]);
      for (int c = 0; c < k; c++) y[r * k + c] = la_round(t, y[r * k + c] - l * y[j * k + c]);
    }
  }
  for (int r = n - 1; r >= 0; r--)
    for (int c = 0; c < k; c++) {
      double v = y[r * k + c];
      for (int q = r + 1; q < n; q++) v = la_round(t, v - lu[r * n + q] * y[q * k + c]);
      y[r * k + c] = la_round(t, v / lu[r * n + r]);
      la_pset(t, x, r * k + c, y[r * k + c]);
    }
  return 0;
}

static bool la_solve_one(const void *job, int64_t i, void *ws) {
  const la_solve_job *j = job;
  const void *a = la_at(j->t, j->a, i * j->an), *b = la_at(j->t, j->b, i * j->bn);
  void *x = la_at(j->t, j->x, i * j->bn);
  bool small = j->n <= LA_SMALL && !j->t->cplx;
  return (small ? la_solve_small(j->t, a, b, x, j->n, j->k, ws) : la_solve_lapack(j->t, a, b, x, j->n, j->k, ws)) == 0;
}

static gl_status la_solve(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1];
  la_solve_job j = { .t = t, .a = gl_array_data(a), .b = gl_array_data(b), .x = gl_array_data(g->out[0]),
                     .n = (la_int)a->shape[a->ndim - 1], .k = (la_int)b->shape[b->ndim - 1] };
  j.an = (int64_t)j.n * j.n;
  j.bn = (int64_t)j.n * j.k;
  size_t elem = t->size > sizeof(double) ? t->size : sizeof(double);    /* the small path's doubles */
  size_t scratch = elem * (size_t)(j.an + j.bn) + sizeof(la_int) * (size_t)j.n;
  return la_batch(batch_of(a), (double)j.n * j.n * j.n, scratch, la_solve_one, &j, bad);
}

/* ---- INV: getrf + getri in the output itself: LAPACK inverts a^T in place, which read
** in C order is (a^T)^-1 ^T = a^-1 ----------------------------------------------------- */

typedef struct la_square_job {        /* inv, slogdet, cholesky */
  const la_type *t;
  const void *a;
  void *out, *out2;
  la_int n, ld, lwork;
  int64_t an;
  bool upper;
} la_square_job;

static bool la_inv_one(const void *job, int64_t i, void *ws) {
  const la_square_job *j = job;
  la_int n = j->n, *ipiv = la_at(j->t, ws, j->lwork), inf = 0;
  void *xi = la_at(j->t, j->out, i * j->an);
  la_copy(j->t, xi, la_at(j->t, j->a, i * j->an), j->an);
  j->t->lib.getrf(&n, &n, xi, &j->ld, ipiv, &inf);
  if (inf == 0) j->t->lib.getri(&n, xi, &j->ld, ipiv, ws, &j->lwork, &inf);
  return inf == 0;
}

static la_square_job la_square(const la_type *t, const gl_la_args *g) {
  const gl_array *a = g->in[0];
  la_int n = (la_int)a->shape[a->ndim - 1];
  return (la_square_job){ .t = t, .a = gl_array_data(a), .out = gl_array_data(g->out[0]),
                          .out2 = g->out[1] ? gl_array_data(g->out[1]) : NULL, .n = n, .ld = n > 0 ? n : 1,
                          .an = (int64_t)n * n, .upper = (g->flags & GL_LA_UPPER) != 0 };
}

static gl_status la_inv(const la_type *t, const gl_la_args *g, int64_t *bad) {
  la_square_job j = la_square(t, g);
  la_int info = 0, query = -1, ipq = 0;
  la_scalar wq = { 0 };
  t->lib.getri(&j.n, j.out, &j.ld, &ipq, &wq, &query, &info);
  j.lwork = la_lwork_of(t, wq);
  size_t scratch = t->size * (size_t)j.lwork + sizeof(la_int) * (size_t)j.n;
  return la_batch(batch_of(g->in[0]), (double)j.n * j.n * j.n, scratch, la_inv_one, &j, bad);
}

/* ---- SLOGDET: det(a^T) = det(a), so getrf of a as is; the sign from U's diagonal and
** the row swaps (a complex sign: the product of d / |d|), the log from |U's diagonal|
** summed in the type (NumPy's way); a singular matrix is an answer here (sign 0, log
** -inf), not a failure. The sign has the input's type, the log its part type ---------- */

static bool la_slogdet_one(const void *job, int64_t i, void *ws) {
  const la_square_job *j = job;
  const la_type *t = j->t;
  la_int n = j->n, *ipiv = la_at(t, ws, j->an), inf = 0;
  la_copy(t, ws, la_at(t, j->a, i * j->an), j->an);
  if (n > 0) t->lib.getrf(&n, &n, ws, &j->ld, ipiv, &inf);
  double sr = 1, si = 0, logabs = 0;
  if (inf > 0) { sr = 0; logabs = -INFINITY; }
  else {
    for (la_int k = 0; k < n; k++) {
      int64_t e = ((int64_t)k * n + k) * la_parts(t);
      double dr = la_pget(t, ws, e), di = t->cplx ? la_pget(t, ws, e + 1) : 0, mag = hypot(dr, di);
      if (ipiv[k] != k + 1) { sr = -sr; si = -si; }
      if (t->cplx) {             /* sign *= d / |d| */
        double ur = la_round(t, dr / mag), ui = la_round(t, di / mag);
        double nr = la_round(t, sr * ur - si * ui), ni = la_round(t, sr * ui + si * ur);
        sr = nr;
        si = ni;
      } else if (dr < 0) sr = -sr;
      logabs = la_round(t, logabs + la_round(t, log(la_round(t, mag))));
    }
  }
  la_pset(t, j->out, i * la_parts(t), sr);
  if (t->cplx) la_pset(t, j->out, i * 2 + 1, si);
  la_pset(t, j->out2, i, logabs);
  return true;
}

static gl_status la_slogdet(const la_type *t, const gl_la_args *g, int64_t *bad) {
  la_square_job j = la_square(t, g);
  size_t scratch = t->size * (size_t)j.an + sizeof(la_int) * (size_t)j.n;
  return la_batch(batch_of(g->in[0]), (double)j.n * j.n * j.n, scratch, la_slogdet_one, &j, bad);
}

/* ---- CHOLESKY: a in C order is a^T column-major, so its lower triangle is LAPACK's
** upper: potrf('U') gives U with a^T = U^H U, which read in C order is L = U^T in the
** lower triangle with a = L L^H (for a Hermitian a, a^T is conj(a), and conjugating
** conj(a) = U^H U gives a = U^T conj(U)); potrf('L') gives the upper factor the same way.
** The other triangle still holds the input and is zeroed. A NaN in the triangle read
** gives a factor of NaN (in its triangle, every part), whatever potrf's blocking or
** scaling would make of it, so every dtype and device agree --------------------------- */

static bool la_cholesky_one(const void *job, int64_t i, void *ws) {
  const la_square_job *j = job;
  const la_type *t = j->t;
  const void *ai = la_at(t, j->a, i * j->an);
  void *li = la_at(t, j->out, i * j->an);
  la_int n = j->n, inf = 0;
  bool nan = la_tri_has(t, ai, n, !j->upper, true);
  (void)ws;
  la_copy(t, li, ai, j->an);
  if (!nan) t->lib.potrf(j->upper ? "L" : "U", &n, li, &j->ld, &inf, 1);
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < n; c++)
      if (j->upper ? r > c : r < c) la_set_real(t, li, r * n + c, 0);
      else if (nan) la_set_all(t, li, r * n + c, (double)NAN);
  return inf == 0;
}

static gl_status la_cholesky(const la_type *t, const gl_la_args *g, int64_t *bad) {
  la_square_job j = la_square(t, g);
  return la_batch(batch_of(g->in[0]), (double)j.n * j.n * j.n / 3, 0, la_cholesky_one, &j, bad);
}

/* ---- QR: geqrf on a column-major copy; R from its upper triangle, Q from orgqr (ungqr)
** over kq columns (columns past the reflectors start as the identity's, so "complete"
** works) ------------------------------------------------------------------------------ */

typedef struct la_qr_job {
  const la_type *t;
  const void *a;
  void *q, *r;
  la_int m, n, k, kq, ld, lwork;
  int64_t mc;
} la_qr_job;

static bool la_qr_one(const void *job, int64_t i, void *ws) {
  const la_qr_job *j = job;
  const la_type *t = j->t;
  la_int m = j->m, n = j->n, k = j->k, kq = j->kq, inf = 0;
  void *cm = ws, *tau = la_at(t, cm, j->mc), *work = la_at(t, tau, k);
  la_transpose(t, cm, la_at(t, j->a, i * (int64_t)m * n), m, n);
  if (m > 0 && n > 0) t->lib.geqrf(&m, &n, cm, &j->ld, tau, work, &j->lwork, &inf);
  void *ri = la_at(t, j->r, i * (int64_t)kq * n);
  for (int64_t row = 0; row < kq; row++)
    for (int64_t c = 0; c < n; c++) {
      if (row <= c && row < m) la_move(t, ri, row * n + c, cm, c * m + row);
      else la_set_real(t, ri, row * n + c, 0);
    }
  if (j->q) {
    void *qi = la_at(t, j->q, i * (int64_t)m * kq);
    if (m > 0 && kq > 0) t->lib.orgqr(&m, &kq, &k, cm, &j->ld, tau, work, &j->lwork, &inf);
    la_transpose(t, qi, cm, kq, m);
  }
  return inf == 0;
}

static gl_status la_qr(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *q = g->out[0], *r = g->out[1];
  la_qr_job j = { .t = t, .a = gl_array_data(a), .q = q ? gl_array_data(q) : NULL, .r = gl_array_data(r),
                  .m = (la_int)a->shape[a->ndim - 2], .n = (la_int)a->shape[a->ndim - 1],
                  .kq = (la_int)r->shape[r->ndim - 2] };
  j.k = j.m < j.n ? j.m : j.n;
  j.ld = j.m > 0 ? j.m : 1;
  la_int cols = j.n > j.kq ? j.n : j.kq, info = 0, query = -1;
  la_scalar w1 = { 0 }, w2 = { 0 }, dummy = { 0 };
  t->lib.geqrf(&j.m, &j.n, &dummy, &j.ld, &dummy, &w1, &query, &info);
  if (j.q) t->lib.orgqr(&j.m, &j.kq, &j.k, &dummy, &j.ld, &dummy, &w2, &query, &info);
  la_int l1 = la_lwork_of(t, w1), l2 = la_lwork_of(t, w2);
  j.lwork = l1 > l2 ? l1 : l2;
  j.mc = (int64_t)j.m * cols;
  size_t scratch = t->size * (size_t)(j.mc + j.k + j.lwork);
  return la_batch(batch_of(a), 2.0 * j.m * j.n * j.k, scratch, la_qr_one, &j, bad);
}

/* ---- SVD: gesdd on a as is, i.e. on a^T = V S U^T (plain transposes, for complex too):
** LAPACK's U (column-major n x kv) is V, which read in C order is vh (kv, n), and its VT
** (ku x m) read in C order is u (m, ku), so LAPACK writes both outputs in place,
** untransposed. s is real (parts) ------------------------------------------------------ */

typedef struct la_svd_job {
  const la_type *t;
  const void *a;
  void *u, *s, *v, *dummy;
  const char *jobz;
  la_int m, n, k, ku, kv, ldn, ldu, ldv, lwork;
  int64_t an, lrwork;
} la_svd_job;

/* The r x c matrix at p = the identity's first r rows and c columns. */
static void la_eye(const la_type *t, void *p, int64_t r, int64_t c) {
  for (int64_t e = 0; e < r * c; e++) la_set_real(t, p, e, 0);
  for (int64_t d = 0; d < r && d < c; d++) la_set_real(t, p, d * c + d, 1);
}

static bool la_svd_one(const void *job, int64_t i, void *ws) {
  const la_svd_job *j = job;
  const la_type *t = j->t;
  la_int m = j->m, n = j->n, inf = 0;
  void *ui = j->u ? la_at(t, j->u, i * (int64_t)m * j->ku) : j->dummy;
  void *vi = j->v ? la_at(t, j->v, i * (int64_t)j->kv * n) : j->dummy;
  const void *ai = la_at(t, j->a, i * j->an);
  if (j->k == 0) {          /* nothing to factor: the full factors are identities */
    if (j->u) la_eye(t, ui, m, j->ku);
    if (j->v) la_eye(t, vi, j->kv, n);
    return true;
  }
  if (!la_finite(t, ai, j->an)) return false;
  void *cm = ws, *work = la_at(t, cm, j->an), *rwork = la_at(t, work, j->lwork);
  la_int *iwork = la_pat(t, rwork, j->lrwork);
  void *si = la_pat(t, j->s, i * j->k);
  la_copy(t, cm, ai, j->an);
  if (t->cplx)
    t->lib.gesdd_cx(j->jobz, &n, &m, cm, &j->ldn, si, vi, &j->ldv, ui, &j->ldu, work, &j->lwork, rwork, iwork, &inf, 1);
  else
    t->lib.gesdd(j->jobz, &n, &m, cm, &j->ldn, si, vi, &j->ldv, ui, &j->ldu, work, &j->lwork, iwork, &inf, 1);
  return inf == 0;
}

/* The real workspace cgesdd / zgesdd need for an m x n matrix (LAPACK's LRWORK, the
** larger bound of the releases before 3.7 for jobz 'N'). */
static int64_t la_gesdd_lrwork(int64_t m, int64_t n, bool vectors) {
  int64_t mn = m < n ? m : n, mx = m < n ? n : m;
  if (!vectors) return 7 * mn;
  int64_t a = 5 * mn * mn + 5 * mn, b = 2 * mx * mn + 2 * mn * mn + mn;
  return a > b ? a : b;
}

static gl_status la_svd(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *u = g->out[0], *vh = g->out[2];
  la_scalar dummy = { 0 }, wq = { 0 };
  la_svd_job j = { .t = t, .a = gl_array_data(a), .u = u ? gl_array_data(u) : NULL,
                   .s = gl_array_data(g->out[1]), .v = vh ? gl_array_data(vh) : NULL, .dummy = &dummy,
                   .jobz = u == NULL ? "N" : (g->flags & GL_LA_FULL) ? "A" : "S",
                   .m = (la_int)a->shape[a->ndim - 2], .n = (la_int)a->shape[a->ndim - 1],
                   .ku = u ? (la_int)u->shape[u->ndim - 1] : 1, .kv = vh ? (la_int)vh->shape[vh->ndim - 2] : 1 };
  j.k = j.m < j.n ? j.m : j.n;
  j.ldn = j.ldv = j.n > 0 ? j.n : 1;
  j.ldu = j.ku > 0 ? j.ku : 1;
  j.an = (int64_t)j.m * j.n;
  j.lrwork = t->cplx ? la_gesdd_lrwork(j.m, j.n, u != NULL) : 0;
  la_int info = 0, query = -1, iw[1];
  la_scalar rq = { 0 };
  if (j.k > 0 && t->cplx)
    t->lib.gesdd_cx(j.jobz, &j.n, &j.m, &dummy, &j.ldn, &dummy, &dummy, &j.ldv, &dummy, &j.ldu, &wq, &query, &rq,
                    iw, &info, 1);
  else if (j.k > 0)
    t->lib.gesdd(j.jobz, &j.n, &j.m, &dummy, &j.ldn, &dummy, &dummy, &j.ldv, &dummy, &j.ldu, &wq, &query, iw,
                 &info, 1);
  j.lwork = la_lwork_of(t, wq);
  size_t scratch = t->size * (size_t)(j.an + j.lwork) + t->psize * (size_t)j.lrwork +
                   sizeof(la_int) * (size_t)(8 * (int64_t)j.k + 1);
  return la_batch(batch_of(a), 4.0 * j.m * j.n * j.k, scratch, la_svd_one, &j, bad);
}

/* ---- EIGH: a as is is a^T (for a Hermitian a: conj(a)), so the lower triangle of a is
** LAPACK's upper: syevd / heevd('U'). The eigenvalues (real) are those of a; the
** eigenvectors come back as columns of a column-major matrix and are transposed to C order
** in place, and conjugated for complex (conj(a) V = V W gives a conj(V) = conj(V) W) ---- */

typedef struct la_eigh_job {
  const la_type *t;
  const void *a;
  void *w, *v;
  const char *jobz, *uplo;
  la_int n, ld, lwork, lrwork, liwork;
  int64_t an;
  bool lower;
} la_eigh_job;

static bool la_eigh_one(const void *job, int64_t i, void *ws) {
  const la_eigh_job *j = job;
  const la_type *t = j->t;
  la_int n = j->n, inf = 0;
  void *cm = j->v ? la_at(t, j->v, i * j->an) : ws, *work = la_at(t, ws, j->an), *rwork = la_at(t, work, j->lwork);
  la_int *iwork = la_pat(t, rwork, j->lrwork);
  void *wi = la_pat(t, j->w, i * n);
  la_copy(t, cm, la_at(t, j->a, i * j->an), j->an);
  if (la_tri_has(t, cm, n, j->lower, false)) return false;
  if (n > 0 && t->cplx)
    t->lib.heevd(j->jobz, j->uplo, &n, cm, &j->ld, wi, work, &j->lwork, rwork, &j->lrwork, iwork, &j->liwork, &inf,
                 1, 1);
  else if (n > 0)
    t->lib.syevd(j->jobz, j->uplo, &n, cm, &j->ld, wi, work, &j->lwork, iwork, &j->liwork, &inf, 1, 1);
  if (j->v) {
    for (int64_t r = 0; r < n; r++)
      for (int64_t c = r + 1; c < n; c++) {
        char x[sizeof(double) * 2];
        memcpy(x, la_at(t, cm, r * n + c), t->size);
        la_move(t, cm, r * n + c, cm, c * n + r);
        memcpy(la_at(t, cm, c * n + r), x, t->size);
      }
    if (t->cplx)
      for (int64_t e = 0; e < j->an; e++) la_pset(t, cm, 2 * e + 1, -la_pget(t, cm, 2 * e + 1));
  }
  return inf == 0;
}

static gl_status la_eigh(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *v = g->out[1];
  bool upper = (g->flags & GL_LA_UPPER) != 0;
  la_eigh_job j = { .t = t, .a = gl_array_data(a), .w = gl_array_data(g->out[0]),
                    .v = v ? gl_array_data(v) : NULL, .jobz = v ? "V" : "N", .uplo = upper ? "L" : "U",
                    .n = (la_int)a->shape[a->ndim - 1], .lower = !upper };
  j.ld = j.n > 0 ? j.n : 1;
  j.an = (int64_t)j.n * j.n;
  la_int info = 0, query = -1, iq = 0;
  la_scalar wq = { 0 }, rq = { 0 }, dummy = { 0 };
  if (j.n > 0 && t->cplx)
    t->lib.heevd(j.jobz, j.uplo, &j.n, &dummy, &j.ld, &dummy, &wq, &query, &rq, &query, &iq, &query, &info, 1, 1);
  else if (j.n > 0)
    t->lib.syevd(j.jobz, j.uplo, &j.n, &dummy, &j.ld, &dummy, &wq, &query, &iq, &query, &info, 1, 1);
  j.lwork = la_lwork_of(t, wq);
  j.lrwork = t->cplx ? la_lwork_of(t, rq) : 0;
  j.liwork = iq > 1 ? iq : 1;
  size_t scratch = t->size * (size_t)(j.an + j.lwork) + t->psize * (size_t)j.lrwork + sizeof(la_int) * (size_t)j.liwork;
  return la_batch(batch_of(a), 9.0 * j.n * j.n * j.n, scratch, la_eigh_one, &j, bad);
}

/* ---- EIG: geev on a column-major copy of a (as NumPy: its right eigenvectors are a's),
** no left eigenvectors. The outputs are complex whatever the input: a complex input's w
** and vr come back as they are (vr transposed to C order); a real input's eigenvalues come
** as wr + i wi and its eigenvectors in LAPACK's packing, a real eigenvalue's vector in its
** column of vr, a conjugate pair (wi[j] > 0, wi[j + 1] < 0) as vr[:, j] +- i vr[:, j + 1],
** unpacked here. Eigenvectors of unit 2-norm with their largest component real (LAPACK's
** normalisation). A matrix that is not finite fails as "did not converge" ------------ */

typedef struct la_eig_job {
  const la_type *t;
  const void *a;
  void *w, *v;             /* complex outputs: parts of t's part type */
  const char *jobvr;
  la_int n, ld, lwork;
  int64_t an;
} la_eig_job;

/* Matrix v (C order, complex, n x n) from LAPACK's real packed vr (column-major) and wi. */
static void la_eig_unpack(const la_type *t, void *v, const void *vr, const void *wi, int64_t n) {
  for (int64_t c = 0; c < n; c++) {
    double im = la_pget(t, wi, c);
    int64_t re_col = im < 0 ? c - 1 : c, im_col = im > 0 ? c + 1 : c;
    double sign = im > 0 ? 1 : im < 0 ? -1 : 0;
    for (int64_t r = 0; r < n; r++) {
      la_pset(t, v, 2 * (r * n + c), la_pget(t, vr, re_col * n + r));
      la_pset(t, v, 2 * (r * n + c) + 1, sign == 0 ? 0 : sign * la_pget(t, vr, im_col * n + r));
    }
  }
}

static bool la_eig_one(const void *job, int64_t i, void *ws) {
  const la_eig_job *j = job;
  const la_type *t = j->t;
  la_int n = j->n, one = 1, inf = 0;
  const void *ai = la_at(t, j->a, i * j->an);
  void *cm = ws, *vr = la_at(t, cm, j->an), *work = la_at(t, vr, j->an), *extra = la_at(t, work, j->lwork);
  void *wo = la_pat(t, j->w, 2 * i * n), *vo = j->v ? la_pat(t, j->v, 2 * i * j->an) : NULL;
  if (n == 0) return true;
  if (!la_finite(t, ai, j->an)) return false;
  la_transpose(t, cm, ai, n, n);
  if (t->cplx) {            /* w straight into the output; rwork: 2n parts */
    t->lib.geev_cx("N", j->jobvr, &n, cm, &j->ld, wo, vr, &one, vr, &j->ld, work, &j->lwork, extra, &inf, 1, 1);
    if (inf == 0 && vo) la_transpose(t, vo, vr, n, n);
    return inf == 0;
  }
  void *wr = extra, *wi = la_pat(t, extra, n);      /* n parts each */
  t->lib.geev("N", j->jobvr, &n, cm, &j->ld, wr, wi, vr, &one, vr, &j->ld, work, &j->lwork, &inf, 1, 1);
  if (inf != 0) return false;
  for (int64_t c = 0; c < n; c++) {
    la_pset(t, wo, 2 * c, la_pget(t, wr, c));
    la_pset(t, wo, 2 * c + 1, la_pget(t, wi, c));
  }
  if (vo) la_eig_unpack(t, vo, vr, wi, n);
  return true;
}

static gl_status la_eig(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *v = g->out[1];
  la_eig_job j = { .t = t, .a = gl_array_data(a), .w = gl_array_data(g->out[0]), .v = v ? gl_array_data(v) : NULL,
                   .jobvr = v ? "V" : "N", .n = (la_int)a->shape[a->ndim - 1] };
  j.ld = j.n > 0 ? j.n : 1;
  j.an = (int64_t)j.n * j.n;
  la_int info = 0, query = -1, one = 1;
  la_scalar wq = { 0 }, dummy = { 0 };
  if (j.n > 0 && t->cplx)
    t->lib.geev_cx("N", j.jobvr, &j.n, &dummy, &j.ld, &dummy, &dummy, &one, &dummy, &j.ld, &wq, &query, &dummy,
                   &info, 1, 1);
  else if (j.n > 0)
    t->lib.geev("N", j.jobvr, &j.n, &dummy, &j.ld, &dummy, &dummy, &dummy, &one, &dummy, &j.ld, &wq, &query,
                &info, 1, 1);
  j.lwork = la_lwork_of(t, wq);
  size_t scratch = t->size * (size_t)(2 * j.an + j.lwork) + t->psize * (size_t)(2 * (int64_t)j.n);
  return la_batch(batch_of(a), 25.0 * j.n * j.n * j.n, scratch, la_eig_one, &j, bad);
}

/* ---- LSTSQ: gelsd on column-major copies of a and b (b padded to max(m, n) rows); the
** residuals (real), summed in the type, are the squared moduli of the rows of the solution
** past n; s is real ---------------------------------------------------------------------- */
static gl_status la_lstsq(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1];
  la_int m = (la_int)a->shape[0], n = (la_int)a->shape[1], k = (la_int)b->shape[1], mn = m < n ? m : n;
  la_int lda = m > 0 ? m : 1, ldb = m > n ? m : n, rank = 0, info = 0, query = -1, iq = 0;
  if (ldb < 1) ldb = 1;
  la_scalar rcond = la_scalar_of(t, g->rcond), wq = { 0 }, rq = { 0 };
  size_t na = (size_t)lda * (size_t)(n > 0 ? n : 1), nb = (size_t)ldb * (size_t)(k > 0 ? k : 1);
  void *ca = malloc(t->size * (na + nb + (size_t)mn + 1));
  if (ca == NULL) return gl_fail(GL_ENOMEM, "lstsq: out of memory for LAPACK's workspace");
  void *cb = la_at(t, ca, (int64_t)na), *sv = la_at(t, cb, (int64_t)nb);
  const void *A = gl_array_data(a), *Bv = gl_array_data(b);
  if (!la_finite(t, A, (int64_t)m * n) || !la_finite(t, Bv, (int64_t)m * k)) {
    free(ca);
    *bad = 0;
    return GL_OK;
  }
  la_transpose(t, ca, A, m, n);
  for (int64_t c = 0; c < k; c++)
    for (int64_t r = 0; r < ldb; r++) {
      if (r < m) la_move(t, cb, c * ldb + r, Bv, r * k + c);
      else la_set_real(t, cb, c * ldb + r, 0);
    }
  if (t->cplx)
    t->lib.gelsd_cx(&m, &n, &k, ca, &lda, cb, &ldb, sv, &rcond, &rank, &wq, &query, &rq, &iq, &info);
  else
    t->lib.gelsd(&m, &n, &k, ca, &lda, cb, &ldb, sv, &rcond, &rank, &wq, &query, &iq, &info);
  la_int lwork = la_lwork_of(t, wq), lrwork = t->cplx ? la_lwork_of(t, rq) : 0, liwork = iq > 1 ? iq : 1;
  void *work = malloc(t->size * (size_t)lwork + t->psize * (size_t)lrwork + sizeof(la_int) * (size_t)liwork);
  if (work == NULL) { free(ca); return gl_fail(GL_ENOMEM, "lstsq: out of memory for LAPACK's workspace"); }
  void *rwork = la_at(t, work, lwork);
  la_int *iwork = la_pat(t, rwork, lrwork);
  info = 0;
  if (mn > 0 && t->cplx)
    t->lib.gelsd_cx(&m, &n, &k, ca, &lda, cb, &ldb, sv, &rcond, &rank, work, &lwork, rwork, iwork, &info);
  else if (mn > 0)
    t->lib.gelsd(&m, &n, &k, ca, &lda, cb, &ldb, sv, &rcond, &rank, work, &lwork, iwork, &info);
  *bad = info != 0 ? 0 : -1;
  void *X = gl_array_data(g->out[0]), *S = gl_array_data(g->out[2]), *Res = gl_array_data(g->out[3]);
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < k; c++) la_move(t, X, r * k + c, cb, c * ldb + r);
  if (mn > 0) memcpy(S, sv, t->psize * (size_t)mn);
  for (int64_t c = 0; c < k; c++) {
    double acc = 0;
    for (int64_t r = n; r < m; r++)
      for (int64_t q = 0; q < la_parts(t); q++) {
        double e = la_pget(t, cb, (c * ldb + r) * la_parts(t) + q);
        acc = la_round(t, acc + e * e);
      }
    la_pset(t, Res, c, rank == n && m > n ? acc : (double)NAN);
  }
  *(int64_t *)gl_array_data(g->out[1]) = rank;
  free(work);
  free(ca);
  return GL_OK;
}

/* ---- LU: getrf of a's transpose made column-major (a itself), the factors read back in
** C order; LAPACK's pivots are 1-based already. A zero pivot (info > 0) is an answer: the
** caller decides whether a singular U is a failure (lu_factor) or not (lu). ------------- */

typedef struct la_lu_job {
  const la_type *t;
  const void *a;
  void *lu;
  int32_t *piv;
  la_int m, n, k;
  int64_t an;
} la_lu_job;

static bool la_lu_one(const void *job, int64_t i, void *ws) {
  const la_lu_job *j = job;
  la_int m = j->m, n = j->n, ld = m > 0 ? m : 1, info = 0, *ipiv = la_at(j->t, ws, j->an);
  la_transpose(j->t, ws, la_at(j->t, j->a, i * j->an), m, n);
  j->t->lib.getrf(&m, &n, ws, &ld, ipiv, &info);
  la_transpose(j->t, la_at(j->t, j->lu, i * j->an), ws, n, m);
  for (la_int q = 0; q < j->k; q++) j->piv[i * j->k + q] = (int32_t)ipiv[q];
  return info >= 0;
}

static gl_status la_lu(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  la_lu_job j = { .t = t, .a = gl_array_data(a), .lu = gl_array_data(g->out[0]),
                  .piv = gl_array_data(g->out[1]), .m = (la_int)a->shape[a->ndim - 2],
                  .n = (la_int)a->shape[a->ndim - 1] };
  j.k = j.m < j.n ? j.m : j.n;
  j.an = (int64_t)j.m * j.n;
  if (j.an == 0) return GL_OK;
  size_t scratch = t->size * (size_t)j.an + sizeof(la_int) * (size_t)j.k;
  return la_batch(batch_of(a), (double)j.m * j.n * j.k, scratch, la_lu_one, &j, bad);
}

/* ---- LU_SOLVE: the C-order factors transposed to column-major (the factors LAPACK's getrf
** would have made of a), b in and x out through a column-major scratch, getrs with 'N', or
** 'C' ('T' for real types) for the adjoint. ------------------------------------------------ */

typedef struct la_lu_solve_job {
  const la_type *t;
  const void *lu, *b;
  const int32_t *piv;
  void *x;
  la_int n, k;
  int64_t an, bn;
  const char *trans;
} la_lu_solve_job;

static bool la_lu_solve_one(const void *job, int64_t i, void *ws) {
  const la_lu_solve_job *j = job;
  la_int n = j->n, k = j->k, ld = n > 0 ? n : 1, info = 0;
  void *f = ws, *rhs = la_at(j->t, ws, j->an);
  la_int *ipiv = la_at(j->t, rhs, j->bn);
  la_transpose(j->t, f, la_at(j->t, j->lu, i * j->an), n, n);
  la_transpose(j->t, rhs, la_at(j->t, j->b, i * j->bn), n, k);
  for (la_int q = 0; q < n; q++) ipiv[q] = (la_int)j->piv[i * n + q];
  j->t->lib.getrs(j->trans, &n, &k, f, &ld, ipiv, rhs, &ld, &info, 1);
  la_transpose(j->t, la_at(j->t, j->x, i * j->bn), rhs, k, n);
  return info == 0;
}

static gl_status la_lu_solve(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *lu = g->in[0], *b = g->in[1];
  bool adjoint = (g->flags & GL_LA_ADJOINT) != 0;
  la_lu_solve_job j = { .t = t, .lu = gl_array_data(lu), .b = gl_array_data(b), .piv = gl_array_data(g->in[2]),
                        .x = gl_array_data(g->out[0]), .n = (la_int)lu->shape[lu->ndim - 1],
                        .k = (la_int)b->shape[b->ndim - 1], .trans = !adjoint ? "N" : t->cplx ? "C" : "T" };
  j.an = (int64_t)j.n * j.n;
  j.bn = (int64_t)j.n * j.k;
  if (j.bn == 0) return GL_OK;
  size_t scratch = t->size * (size_t)(j.an + j.bn) + sizeof(la_int) * (size_t)j.n;
  return la_batch(batch_of(lu), (double)j.n * j.n * j.k, scratch, la_lu_solve_one, &j, bad);
}

/* ---- entry ---------------------------------------------------------------------------------- */

static pthread_once_t la_once = PTHREAD_ONCE_INIT;
static gl_status la_status = GL_OK;
static char la_err[256];

static void la_load(void) {
  if (gl_cpu_blas_get(&la_blas) != GL_OK) {
    snprintf(la_err, sizeof la_err, "%s", gl_errmsg());
    la_status = GL_ENOTSUP;
    return;
  }
  la_type *types[] = { &la_float, &la_double, &la_cfloat, &la_cdouble };
  bool ok = la_blas->handle != NULL;
  for (size_t i = 0; ok && i < sizeof types / sizeof types[0]; i++) ok = la_resolve(types[i], la_blas->handle);
  if (!ok) {
    snprintf(la_err, sizeof la_err, "gpu.linalg needs LAPACK, and %s has none "
             "(install libopenblas0, whose OpenBLAS includes LAPACK)", la_blas->lib);
    la_status = GL_ENOTSUP;
  }
}

bool gl_cpu_has_linalg(int which, gl_dtype dt) {
  return (unsigned)which < GL_NLA && GL_DTSET_HAS(GL_LA_DTYPES, dt);
}

gl_status gl_cpu_linalg(gl_la_op op, const gl_la_args *args, int64_t *bad) {
  pthread_once(&la_once, la_load);
  if (la_status != GL_OK) return gl_fail(la_status, "%s", la_err);
  *bad = -1;
  gl_dtype dt = (gl_dtype)args->in[0]->dtype;
  const la_type *t = dt == GL_FLOAT32 ? &la_float : dt == GL_FLOAT64 ? &la_double
                   : dt == GL_COMPLEX64 ? &la_cfloat : dt == GL_COMPLEX128 ? &la_cdouble : NULL;
  if (t == NULL) return gl_fail(GL_ENOTSUP, "linear algebra in %s is not supported on cpu", gl_dtypes[dt].name);
  switch (op) {
    case GL_LA_SOLVE: return la_solve(t, args, bad);
    case GL_LA_INV: return la_inv(t, args, bad);
    case GL_LA_SLOGDET: return la_slogdet(t, args, bad);
    case GL_LA_CHOLESKY: return la_cholesky(t, args, bad);
    case GL_LA_QR: return la_qr(t, args, bad);
    case GL_LA_SVD: return la_svd(t, args, bad);
    case GL_LA_EIGH: return la_eigh(t, args, bad);
    case GL_LA_LSTSQ: return la_lstsq(t, args, bad);
    case GL_LA_EIG: return la_eig(t, args, bad);
    case GL_LA_LU: return la_lu(t, args, bad);
    case GL_LA_LU_SOLVE: return la_lu_solve(t, args, bad);
    default: return gl_fail(GL_ENOTSUP, "linear algebra op %d is not supported on cpu", (int)op);
  }
}
