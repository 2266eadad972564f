/*
** cpu_lapack.c — gl_backend.linalg on the CPU: the LAPACK inside OpenBLAS. Its Fortran
** entry points (sgetrf_, dgetrf_, ...) are resolved with dlsym from the handle that
** cpu_blas.c opened at first use, once per process, into one table of routines per element
** type (la_float, la_double). Each driver is written once over an la_type: its routines,
** its element size, and la_get/la_set to read and write its elements as doubles (exact
** both ways for the values a float holds). The arithmetic the drivers make themselves is
** made in double and rounded to the type after each step (la_round).
**
** Row-major and LAPACK's column-major: a C-order m x n matrix read column-major with
** leading dimension n is its transpose (n x m). Where the transpose does no harm (the
** determinant, the inverse, Cholesky and SVD, see each) the C buffer goes to LAPACK as is;
** QR, eigenvectors, solve's right-hand sides and lstsq copy through a transposed scratch.
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
** of character arguments, size_t each, passed as gfortran expects them). Every 'void *'
** is the type's float * or double *. */
typedef struct la_routines {
  void (*getrf)(const la_int *m, const la_int *n, void *a, const la_int *lda, la_int *ipiv, la_int *info);
  void (*getrs)(const char *tr, const la_int *n, const la_int *nrhs, const void *a, const la_int *lda,
                const la_int *ipiv, void *b, const la_int *ldb, la_int *info, size_t);
  void (*getri)(const la_int *n, void *a, const la_int *lda, const la_int *ipiv, void *work,
                const la_int *lwork, la_int *info);
  void (*potrf)(const char *uplo, const la_int *n, void *a, const la_int *lda, la_int *info, size_t);
  void (*geqrf)(const la_int *m, const la_int *n, void *a, const la_int *lda, void *tau, void *work,
                const la_int *lwork, la_int *info);
  void (*orgqr)(const la_int *m, const la_int *n, const la_int *k, void *a, const la_int *lda,
                const void *tau, void *work, const la_int *lwork, la_int *info);
  void (*gesdd)(const char *jobz, const la_int *m, const la_int *n, void *a, const la_int *lda, void *s,
                void *u, const la_int *ldu, void *vt, const la_int *ldvt, void *work, const la_int *lwork,
                la_int *iwork, la_int *info, size_t);
  void (*syevd)(const char *jobz, const char *uplo, const la_int *n, void *a, const la_int *lda, void *w,
                void *work, const la_int *lwork, la_int *iwork, const la_int *liwork, la_int *info, size_t,
                size_t);
  void (*gelsd)(const la_int *m, const la_int *n, const la_int *nrhs, void *a, const la_int *lda, void *b,
                const la_int *ldb, void *s, const void *rcond, la_int *rank, void *work, const la_int *lwork,
                la_int *iwork, la_int *info);
} la_routines;

/* The routines' names after the type's prefix letter, and where each goes in la_routines. */
static const struct { const char *name; size_t at; } la_entries[] = {
  { "getrf", offsetof(la_routines, getrf) }, { "getrs", offsetof(la_routines, getrs) },
  { "getri", offsetof(la_routines, getri) }, { "potrf", offsetof(la_routines, potrf) },
  { "geqrf", offsetof(la_routines, geqrf) }, { "orgqr", offsetof(la_routines, orgqr) },
  { "gesdd", offsetof(la_routines, gesdd) }, { "syevd", offsetof(la_routines, syevd) },
  { "gelsd", offsetof(la_routines, gelsd) },
};

typedef struct la_type {
  char prefix;        /* LAPACK's letter: 's' or 'd' */
  bool single;        /* float (else double) */
  size_t size;
  la_routines lib;
} la_type;

static la_type la_float = { 's', true, sizeof(float), { 0 } };
static la_type la_double = { 'd', false, sizeof(double), { 0 } };

/* One value of the type, for LAPACK's scalar arguments and workspace queries. */
typedef union la_scalar { float f; double d; } la_scalar;

/* Resolves every routine of t from the BLAS handle; false when one is missing. */
static bool la_resolve(la_type *t, void *h) {
  for (size_t i = 0; i < sizeof la_entries / sizeof la_entries[0]; i++) {
    char name[16];
    snprintf(name, sizeof name, "%c%s_", t->prefix, la_entries[i].name);
    void *f = dlsym(h, name);
    if (f == NULL) return false;
    memcpy((char *)&t->lib + la_entries[i].at, &f, sizeof f);   /* a defined void * to function pointer */
  }
  return true;
}

/* Element i of the buffer p: its address, its value, a new value (rounded to the type). */
static inline void *la_at(const la_type *t, const void *p, int64_t i) {
  return (char *)(uintptr_t)p + i * (int64_t)t->size;
}
static inline double la_get(const la_type *t, const void *p, int64_t i) {
  return t->single ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline void la_set(const la_type *t, void *p, int64_t i, double v) {
  if (t->single) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

/* v rounded to the type: a float operation made in double and rounded so gives the
** float's own answer (double holds every product of two floats exactly). */
static inline double la_round(const la_type *t, double v) {
  return t->single ? (double)(float)v : v;
}

static la_scalar la_scalar_of(const la_type *t, double v) {
  la_scalar s;
  if (t->single) s.f = (float)v;
  else s.d = v;
  return s;
}

/* The workspace size a LAPACK query (lwork = -1) reported in w. */
static la_int la_lwork_of(const la_type *t, la_scalar w) {
  double v = t->single ? (double)w.f : w.d;
  return v < 1 ? 1 : (la_int)v + 1;
}

/* dst[0..n) = src[0..n); nothing for n = 0 (either may be NULL then: empty matrices). */
static void la_copy(const la_type *t, void *dst, const void *src, int64_t n) {
  if (n > 0) memcpy(dst, src, t->size * (size_t)n);
}

/* dst (c x r, C order) = the transpose of src (r x c, C order): between C order and
** column-major. */
static void la_transpose(const la_type *t, void *dst, const void *src, int64_t r, int64_t c) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) la_set(t, dst, j * r + i, la_get(t, src, i * c + j));
}

/* Whether the n elements at x are all finite: the iterative drivers (gesdd, syevd, gelsd)
** can loop for ever on an infinity, so a matrix that is not fails as "did not converge"
** before LAPACK sees it (NumPy's LinAlgError for those). */
static bool la_finite(const la_type *t, const void *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) if (!isfinite(la_get(t, x, i))) return false;
  return true;
}

/* Whether the triangle of an n x n matrix (C order) that syevd or potrf reads is all
** finite (nan_only false), or holds a NaN (nan_only true). */
static bool la_tri_has(const la_type *t, const void *x, int64_t n, bool lower, bool nan_only) {
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = lower ? 0 : r; c < (lower ? r + 1 : n); c++) {
      double v = la_get(t, x, r * n + c);
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

/* Small systems (n <= LA_SMALL) skip LAPACK, whose call and transposes cost more than
** the arithmetic: getf2's algorithm (partial pivoting on the first largest |pivot|, a zero
** pivot making the matrix singular) on a C-order copy, then the two triangular solves. The
** copy is held in double, each result rounded to the type (la_round), so a float system
** gets float arithmetic. */
#define LA_SMALL 8
static la_int la_solve_small(const la_type *t, const void *a, const void *b, void *x, int n, int k, void *ws) {
  double *lu = ws, *y = lu + n * n;
  for (int e = 0; e < n * n; e++) lu[e] = la_get(t, a, e);
  for (int e = 0; e < n * k; e++) y[e] = la_get(t, b, e);
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
      la_set(t, x, r * k + c, y[r * k + c]);
    }
  return 0;
}

static bool la_solve_one(const void *job, int64_t i, void *ws) {
  const la_solve_job *j = job;
  const void *a = la_at(j->t, j->a, i * j->an), *b = la_at(j->t, j->b, i * j->bn);
  void *x = la_at(j->t, j->x, i * j->bn);
  return (j->n <= LA_SMALL ? la_solve_small(j->t, a, b, x, j->n, j->k, ws)
                           : la_solve_lapack(j->t, a, b, x, j->n, j->k, ws)) == 0;
}

static gl_status la_solve(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1];
  la_solve_job j = { .t = t, .a = gl_array_data(a), .b = gl_array_data(b), .x = gl_array_data(g->out[0]),
                     .n = (la_int)a->shape[a->ndim - 1], .k = (la_int)b->shape[b->ndim - 1] };
  j.an = (int64_t)j.n * j.n;
  j.bn = (int64_t)j.n * j.k;
  size_t scratch = sizeof(double) * (size_t)(j.an + j.bn) + sizeof(la_int) * (size_t)j.n;
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
** the row swaps, the log from |U's diagonal| summed in the type (NumPy's way); a singular
** matrix is an answer here (sign 0, log -inf), not a failure --------------------------- */

static bool la_slogdet_one(const void *job, int64_t i, void *ws) {
  const la_square_job *j = job;
  const la_type *t = j->t;
  la_int n = j->n, *ipiv = la_at(t, ws, j->an), inf = 0;
  la_copy(t, ws, la_at(t, j->a, i * j->an), j->an);
  if (n > 0) t->lib.getrf(&n, &n, ws, &j->ld, ipiv, &inf);
  double sign = 1, logabs = 0;
  if (inf > 0) { sign = 0; logabs = -INFINITY; }
  else {
    for (la_int k = 0; k < n; k++) {
      double d = la_get(t, ws, (int64_t)k * n + k), term = log(fabs(d));
      if (ipiv[k] != k + 1) sign = -sign;
      if (d < 0) sign = -sign;
      logabs = la_round(t, logabs + la_round(t, term));
    }
  }
  la_set(t, j->out, i, sign);
  la_set(t, j->out2, i, logabs);
  return true;
}

static gl_status la_slogdet(const la_type *t, const gl_la_args *g, int64_t *bad) {
  la_square_job j = la_square(t, g);
  size_t scratch = t->size * (size_t)j.an + sizeof(la_int) * (size_t)j.n;
  return la_batch(batch_of(g->in[0]), (double)j.n * j.n * j.n, scratch, la_slogdet_one, &j, bad);
}

/* ---- CHOLESKY: a in C order is a^T column-major, so its lower triangle is LAPACK's
** upper: potrf('U') gives U with a^T = U^T U, which read in C order is L = U^T in the lower
** triangle (and potrf('L') gives the upper factor the same way); the other triangle still
** holds the input and is zeroed. A NaN in the triangle read gives a factor of NaN (in its
** triangle), whatever potrf's blocking or scaling would make of it, so every dtype and
** device agree --------------------------------------------------------------------------- */

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
      if (j->upper ? r > c : r < c) la_set(t, li, r * n + c, 0);
      else if (nan) la_set(t, li, r * n + c, (double)NAN);
  return inf == 0;
}

static gl_status la_cholesky(const la_type *t, const gl_la_args *g, int64_t *bad) {
  la_square_job j = la_square(t, g);
  return la_batch(batch_of(g->in[0]), (double)j.n * j.n * j.n / 3, 0, la_cholesky_one, &j, bad);
}

/* ---- QR: geqrf on a column-major copy; R from its upper triangle, Q from orgqr over
** kq columns (columns past the reflectors start as the identity's, so "complete" works) */

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
    for (int64_t c = 0; c < n; c++) la_set(t, ri, row * n + c, row <= c && row < m ? la_get(t, cm, c * m + row) : 0);
  if (j->q) {
    void *qi = la_at(t, j->q, i * (int64_t)m * kq);
    if (m > 0 && kq > 0) t->lib.orgqr(&m, &kq, &k, cm, &j->ld, tau, work, &j->lwork, &inf);
    for (int64_t row = 0; row < m; row++)
      for (int64_t c = 0; c < kq; c++) la_set(t, qi, row * kq + c, la_get(t, cm, c * m + row));
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

/* ---- SVD: gesdd on a as is, i.e. on a^T = V S U^T: LAPACK's U (column-major n x kv) is V,
** which read in C order is vh (kv, n), and its VT (ku x m) read in C order is u (m, ku),
** so LAPACK writes both outputs in place, untransposed ------------------------------ */

typedef struct la_svd_job {
  const la_type *t;
  const void *a;
  void *u, *s, *v, *dummy;
  const char *jobz;
  la_int m, n, k, ku, kv, ldn, ldu, ldv, lwork;
  int64_t an;
} la_svd_job;

/* The r x c matrix at p = the identity's first r rows and c columns. */
static void la_eye(const la_type *t, void *p, int64_t r, int64_t c) {
  for (int64_t e = 0; e < r * c; e++) la_set(t, p, e, 0);
  for (int64_t d = 0; d < r && d < c; d++) la_set(t, p, d * c + d, 1);
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
  void *cm = ws, *work = la_at(t, cm, j->an);
  la_copy(t, cm, ai, j->an);
  t->lib.gesdd(j->jobz, &n, &m, cm, &j->ldn, la_at(t, j->s, i * j->k), vi, &j->ldv, ui, &j->ldu, work,
               &j->lwork, la_at(t, work, j->lwork), &inf, 1);
  return inf == 0;
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
  la_int info = 0, query = -1, iw[1];
  if (j.k > 0)
    t->lib.gesdd(j.jobz, &j.n, &j.m, &dummy, &j.ldn, &dummy, &dummy, &j.ldv, &dummy, &j.ldu, &wq, &query, iw,
                 &info, 1);
  j.lwork = la_lwork_of(t, wq);
  size_t scratch = t->size * (size_t)(j.an + j.lwork) + sizeof(la_int) * (size_t)(8 * (int64_t)j.k + 1);
  return la_batch(batch_of(a), 4.0 * j.m * j.n * j.k, scratch, la_svd_one, &j, bad);
}

/* ---- EIGH: a as is is a^T, so the lower triangle of a is LAPACK's upper: syevd('U');
** the eigenvectors come back as columns of a column-major matrix and are transposed to
** C order in place ---------------------------------------------------------------------- */

typedef struct la_eigh_job {
  const la_type *t;
  const void *a;
  void *w, *v;
  const char *jobz, *uplo;
  la_int n, ld, lwork, liwork;
  int64_t an;
  bool lower;
} la_eigh_job;

static bool la_eigh_one(const void *job, int64_t i, void *ws) {
  const la_eigh_job *j = job;
  const la_type *t = j->t;
  la_int n = j->n, inf = 0;
  void *cm = j->v ? la_at(t, j->v, i * j->an) : ws, *work = la_at(t, ws, j->an);
  la_copy(t, cm, la_at(t, j->a, i * j->an), j->an);
  if (la_tri_has(t, cm, n, j->lower, false)) return false;
  if (n > 0)
    t->lib.syevd(j->jobz, j->uplo, &n, cm, &j->ld, la_at(t, j->w, i * n), work, &j->lwork, la_at(t, work, j->lwork),
                 &j->liwork, &inf, 1, 1);
  if (j->v)
    for (int64_t r = 0; r < n; r++)
      for (int64_t c = r + 1; c < n; c++) {
        double x = la_get(t, cm, r * n + c);
        la_set(t, cm, r * n + c, la_get(t, cm, c * n + r));
        la_set(t, cm, c * n + r, x);
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
  la_scalar wq = { 0 }, dummy = { 0 };
  if (j.n > 0) t->lib.syevd(j.jobz, j.uplo, &j.n, &dummy, &j.ld, &dummy, &wq, &query, &iq, &query, &info, 1, 1);
  j.lwork = la_lwork_of(t, wq);
  j.liwork = iq > 1 ? iq : 1;
  size_t scratch = t->size * (size_t)(j.an + j.lwork) + sizeof(la_int) * (size_t)j.liwork;
  return la_batch(batch_of(a), 9.0 * j.n * j.n * j.n, scratch, la_eigh_one, &j, bad);
}

/* ---- LSTSQ: gelsd on column-major copies of a and b (b padded to max(m, n) rows); the
** residuals, summed in the type, are the squares of the rows of the solution past n ---- */
static gl_status la_lstsq(const la_type *t, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1];
  la_int m = (la_int)a->shape[0], n = (la_int)a->shape[1], k = (la_int)b->shape[1], mn = m < n ? m : n;
  la_int lda = m > 0 ? m : 1, ldb = m > n ? m : n, rank = 0, info = 0, query = -1, iq = 0;
  if (ldb < 1) ldb = 1;
  la_scalar rcond = la_scalar_of(t, g->rcond), wq = { 0 };
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
    for (int64_t r = 0; r < ldb; r++) la_set(t, cb, c * ldb + r, r < m ? la_get(t, Bv, r * k + c) : 0);
  t->lib.gelsd(&m, &n, &k, ca, &lda, cb, &ldb, sv, &rcond, &rank, &wq, &query, &iq, &info);
  la_int lwork = la_lwork_of(t, wq), liwork = iq > 1 ? iq : 1;
  void *work = malloc(t->size * (size_t)lwork + sizeof(la_int) * (size_t)liwork);
  if (work == NULL) { free(ca); return gl_fail(GL_ENOMEM, "lstsq: out of memory for LAPACK's workspace"); }
  info = 0;
  if (mn > 0) t->lib.gelsd(&m, &n, &k, ca, &lda, cb, &ldb, sv, &rcond, &rank, work, &lwork, la_at(t, work, lwork), &info);
  *bad = info != 0 ? 0 : -1;
  void *X = gl_array_data(g->out[0]), *S = gl_array_data(g->out[2]), *Res = gl_array_data(g->out[3]);
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < k; c++) la_set(t, X, r * k + c, la_get(t, cb, c * ldb + r));
  la_copy(t, S, sv, mn);
  for (int64_t c = 0; c < k; c++) {
    double acc = 0;
    for (int64_t r = n; r < m; r++) {
      double e = la_get(t, cb, c * ldb + r);
      acc = la_round(t, acc + e * e);
    }
    la_set(t, Res, c, rank == n && m > n ? acc : (double)NAN);
  }
  *(int64_t *)gl_array_data(g->out[1]) = rank;
  free(work);
  free(ca);
  return GL_OK;
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
  if (la_blas->handle == NULL || !la_resolve(&la_float, la_blas->handle) || !la_resolve(&la_double, la_blas->handle)) {
    snprintf(la_err, sizeof la_err, "gpu.linalg needs LAPACK, and %s has none "
             "(install libopenblas0, whose OpenBLAS includes LAPACK)", la_blas->lib);
    la_status = GL_ENOTSUP;
  }
}

gl_status gl_cpu_linalg(gl_la_op op, const gl_la_args *args, int64_t *bad) {
  pthread_once(&la_once, la_load);
  if (la_status != GL_OK) return gl_fail(la_status, "%s", la_err);
  *bad = -1;
  gl_dtype dt = (gl_dtype)args->in[0]->dtype;
  if (dt != GL_FLOAT32 && dt != GL_FLOAT64)
    return gl_fail(GL_ENOTSUP, "linear algebra in %s is not supported on cpu", gl_dtypes[dt].name);
  const la_type *t = dt == GL_FLOAT32 ? &la_float : &la_double;
  switch (op) {
    case GL_LA_SOLVE: return la_solve(t, args, bad);
    case GL_LA_INV: return la_inv(t, args, bad);
    case GL_LA_SLOGDET: return la_slogdet(t, args, bad);
    case GL_LA_CHOLESKY: return la_cholesky(t, args, bad);
    case GL_LA_QR: return la_qr(t, args, bad);
    case GL_LA_SVD: return la_svd(t, args, bad);
    case GL_LA_EIGH: return la_eigh(t, args, bad);
    case GL_LA_LSTSQ: return la_lstsq(t, args, bad);
    default: return gl_fail(GL_ENOTSUP, "linear algebra op %d is not supported on cpu", (int)op);
  }
}
