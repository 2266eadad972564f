/*
** cpu_lapack.c — gl_backend.linalg on the CPU: the LAPACK inside OpenBLAS. Its Fortran
** entry points (sgetrf_, dgetrf_, ...) are resolved with dlsym from the handle that
** cpu_blas.c opened at first use, once per process; the drivers, written once for float
** and double, are cpu_lapack_t.h's (which also says how C order meets column-major).
**
** Threads: a batch of small matrices is split over an OpenMP team, each thread factoring
** whole matrices with OpenBLAS at one thread (as gemm batches do, cpu_matmul.c); a big
** matrix (or a single one) runs alone with OpenBLAS threading it. Each thread of a team
** allocates its scratch once, sized by one workspace query for the batch's shape.
*/
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"

typedef int la_int;                 /* LAPACK's INTEGER in the distributions' builds */

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

/* Runs the statement(s) after 'scratch' for i = 0 .. B-1, spread over la_team's threads,
** each with 'ws' pointing to 'scratch' bytes of its own; LA_BAD(i) notes a failed matrix,
** whose smallest index lands in *bad (-1: none). Returns GL_ENOMEM from the caller when a
** thread's scratch cannot be had. */
#define LA_BAD(i) la_note_bad(&la_first_, (i))
#define LA_BATCH(B, flops, scratch, ...) do {                                             \
    int64_t la_first_ = INT64_MAX, la_b_ = (B);                                            \
    size_t la_sz_ = (scratch);                                                             \
    int la_nt_ = la_team(la_b_, (flops)), la_nomem_ = 0;                                   \
    if (la_nt_ > 1) {                                                                      \
      _Pragma("omp parallel num_threads(la_nt_)")                                           \
      {                                                                                    \
        void *ws = la_sz_ ? malloc(la_sz_) : NULL;                                         \
        if (la_sz_ && ws == NULL) __atomic_store_n(&la_nomem_, 1, __ATOMIC_RELAXED);       \
        _Pragma("omp for schedule(static)")                                                 \
        for (int64_t i = 0; i < la_b_; i++) {                                              \
          if ((la_sz_ && ws == NULL) || gl_interrupted()) continue;                        \
          __VA_ARGS__                                                                      \
        }                                                                                  \
        free(ws);                                                                          \
      }                                                                                    \
      gl_cpu_team_done(la_nt_);                                                            \
    } else {        /* outside any parallel region, so OpenBLAS may thread each matrix */  \
      void *ws = la_sz_ ? malloc(la_sz_) : NULL;                                           \
      if (la_sz_ && ws == NULL) la_nomem_ = 1;                                             \
      for (int64_t i = 0; i < la_b_ && !la_nomem_ && !gl_interrupted(); i++) {             \
        __VA_ARGS__                                                                        \
      }                                                                                    \
      free(ws);                                                                            \
    }                                                                                      \
    if (la_nomem_) return gl_fail(GL_ENOMEM, "linalg: out of memory for LAPACK's workspace (%zu bytes)", la_sz_); \
    *bad = la_first_ == INT64_MAX ? -1 : la_first_;                                        \
    GL_TRY(gl_interrupt_check());                                                          \
  } while (0)

#define T float
#define P(x) s_##x
#define LA_PREFIX "s"
#include "cpu_lapack_t.h"
#undef T
#undef P
#undef LA_PREFIX

#define T double
#define P(x) d_##x
#define LA_PREFIX "d"
#include "cpu_lapack_t.h"
#undef T
#undef P
#undef LA_PREFIX

static pthread_once_t la_once = PTHREAD_ONCE_INIT;
static gl_status la_status = GL_OK;
static char la_err[256];

static void la_load(void) {
  if (gl_cpu_blas_get(&la_blas) != GL_OK) {
    snprintf(la_err, sizeof la_err, "%s", gl_errmsg());
    la_status = GL_ENOTSUP;
    return;
  }
  if (la_blas->handle == NULL || !s_resolve(la_blas->handle) || !d_resolve(la_blas->handle)) {
    snprintf(la_err, sizeof la_err, "gpu.linalg needs LAPACK, and %s has none "
             "(install libopenblas0, whose OpenBLAS includes LAPACK)", la_blas->lib);
    la_status = GL_ENOTSUP;
  }
}

gl_status gl_cpu_linalg(gl_la_op op, const gl_la_args *args, int64_t *bad) {
  pthread_once(&la_once, la_load);
  if (la_status != GL_OK) return gl_fail(la_status, "%s", la_err);
  *bad = -1;
  const gl_array *a = args->in[0];
  if (a->dtype == GL_FLOAT32) return s_run(op, args, bad);
  if (a->dtype == GL_FLOAT64) return d_run(op, args, bad);
  return gl_fail(GL_ENOTSUP, "linear algebra in %s is not supported on cpu", gl_dtypes[a->dtype].name);
}
