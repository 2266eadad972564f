/*
** cpu_histogram.c — bin counts in one pass on the CPU (histogram, bincount), and the
** binary search of searchsorted.
**
** Each thread counts its share of the elements into bins of its own, and the shares are
** summed at the end: no atomics, and the counts do not depend on the team's size (the
** weighted sums do, by rounding, as any parallel sum). With equal bins the bin is found as
** NumPy finds it: the scaled offset from the first edge, truncated, then moved by one where
** rounding put it beside the edge it crosses; with other edges by a binary search.
*/
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"
#include "../../../kernels/convert.h"

enum { BIN_DIRECT, BIN_UNIFORM, BIN_SEARCH };

/* The bin of v among the nb bins of edges e (-1: none), by 'mode'. */
static inline int64_t bin_of(double v, const double *e, int64_t nb, int mode, double scale) {
  if (mode == BIN_DIRECT) return v >= 0 && v < (double)nb ? (int64_t)v : -1;
  if (!(v >= e[0] && v <= e[nb])) return -1;                 /* outside, or NaN */
  int64_t k;
  if (mode == BIN_UNIFORM) {
    k = (int64_t)((v - e[0]) * scale);
    if (k >= nb) k = nb - 1;
    if (v < e[k]) k--;
    else if (k != nb - 1 && v >= e[k + 1]) k++;
  } else {
    int64_t a = 0, b = nb + 1;                               /* the first edge > v */
    while (a < b) {
      int64_t m = a + (b - a) / 2;
      if (e[m] <= v) a = m + 1;
      else b = m;
    }
    k = a - 1 < nb ? a - 1 : nb - 1;                         /* the last edge: last bin */
  }
  return k;
}

/* Elements [lo, hi) of x into ci (counts) or cw (weights w summed). */
typedef void (*hist_fn)(const void *x, int64_t lo, int64_t hi, const double *w, const double *e,
                        int64_t nb, int mode, double scale, int64_t *ci, double *cw);
/* Element i, of value v, into its bin: counted (cw NULL) or weighted. */
static inline void hist_add(double v, int64_t i, const double *w, const double *e, int64_t nb, int mode,
                            double scale, int64_t *ci, double *cw) {
  int64_t k = bin_of(v, e, nb, mode, scale);
  if (k < 0) return;
  if (cw) cw[k] += w[i];
  else ci[k]++;
}

/* One function per dtype row, with a loop for each mode, counted or weighted (the mode and
** the choice constants in each, so each loop is its own). */
#define HIST_DEF(E, id, S, kind, half, CT, ...) HIST_DEF_(id, S, GL_DT_WIDEN_##half)
#define HIST_DEF_(DN, S, LOAD)                                                                    \
  static void hist_##DN(const void *x_, int64_t lo, int64_t hi, const double *w, const double *e,    \
                        int64_t nb, int mode, double scale, int64_t *ci, double *cw) {             \
    const S *x = x_;                                                                              \
    if (mode == BIN_UNIFORM && cw) for (int64_t i = lo; i < hi; i++) hist_add((double)LOAD(x[i]), i, w, e, nb, BIN_UNIFORM, scale, NULL, cw); \
    else if (mode == BIN_UNIFORM) for (int64_t i = lo; i < hi; i++) hist_add((double)LOAD(x[i]), i, w, e, nb, BIN_UNIFORM, scale, ci, NULL); \
    else if (mode == BIN_SEARCH && cw) for (int64_t i = lo; i < hi; i++) hist_add((double)LOAD(x[i]), i, w, e, nb, BIN_SEARCH, scale, NULL, cw); \
    else if (mode == BIN_SEARCH) for (int64_t i = lo; i < hi; i++) hist_add((double)LOAD(x[i]), i, w, e, nb, BIN_SEARCH, scale, ci, NULL); \
    else if (cw) for (int64_t i = lo; i < hi; i++) hist_add((double)LOAD(x[i]), i, w, e, nb, BIN_DIRECT, scale, NULL, cw); \
    else for (int64_t i = lo; i < hi; i++) hist_add((double)LOAD(x[i]), i, w, e, nb, BIN_DIRECT, scale, ci, NULL); \
  }
GL_DTYPE_REAL_LIST(HIST_DEF)
#undef HIST_DEF
#undef HIST_DEF_

#define HIST_ENTRY(E, id, ...) [GL_##E] = hist_##id,
static const hist_fn hist_fns[GL_NDTYPE] = { GL_DTYPE_REAL_LIST(HIST_ENTRY) };
#undef HIST_ENTRY

gl_status gl_cpu_histogram(const gl_array *counts, const gl_array *x, const gl_array *weights,
                           const gl_array *edges, bool uniform) {
  int64_t nb = counts->size, n = x->size;
  int64_t *ci = weights ? NULL : gl_array_data(counts);
  double *cw = weights ? gl_array_data(counts) : NULL;
  const double *w = weights ? gl_array_data(weights) : NULL;
  const double *e = edges ? gl_array_data(edges) : NULL;
  int mode = e == NULL ? BIN_DIRECT : uniform ? BIN_UNIFORM : BIN_SEARCH;
  double scale = e ? (double)nb / (e[nb] - e[0]) : 1.0;
  hist_fn fn = hist_fns[x->dtype];
  if (!fn) return gl_fail(GL_ENOTSUP, "histogram is not supported for %s", gl_dtypes[x->dtype].name);
  const char *xd = gl_array_data(x);
  size_t csz = weights ? sizeof(double) : sizeof(int64_t);
  memset(gl_array_data(counts), 0, (size_t)nb * csz);
  int64_t blocks = (n + GL_POLL_SPAN - 1) / GL_POLL_SPAN;
  /* per-thread bins cost nb each: a team only where the elements outnumber them */
  int nt = n >= 4 * nb ? gl_cpu_team_size(n) : 1;
  if (blocks < nt) nt = (int)blocks;
  if (nt < 1) nt = 1;
  bool failed = false;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int t = 0;
#ifdef _OPENMP
    t = omp_get_thread_num();
#endif
    void *mine = t == 0 ? gl_array_data(counts) : calloc((size_t)nb, csz);
    if (mine == NULL) {
      #pragma omp atomic write
      failed = true;
    }
    #pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
      if (mine == NULL || gl_interrupted()) continue;
      int64_t lo = b * GL_POLL_SPAN, hi = lo + GL_POLL_SPAN < n ? lo + GL_POLL_SPAN : n;
      fn(xd, lo, hi, w, e, nb, mode, scale, weights ? NULL : mine, weights ? mine : NULL);
    }
    if (t != 0 && mine != NULL) {
      #pragma omp critical (gl_histogram_merge)
      for (int64_t k = 0; k < nb; k++) {
        if (weights) cw[k] += ((const double *)mine)[k];
        else ci[k] += ((const int64_t *)mine)[k];
      }
      free(mine);
    }
  }
  gl_cpu_team_done(nt);
  if (failed) return gl_fail(GL_ENOMEM, "histogram: out of host memory for %lld bins", (long long)nb);
  return gl_interrupt_check();
}

/* ---- searchsorted ------------------------------------------------------------------------- */

/* Whether a (an element of the sorted array) goes before v: a < v (right: a <= v), NaN
** after every number; for floats as the whole-array search in lua/gpu/routines/bins.lua
** decides it, so both give the same counts. */
#define GL_BEFORE_FLOAT(a, v, right) \
  ((right) ? ((((a) <= (v)) & ((a) == (a))) | ((v) != (v))) : ((((a) < (v)) | ((v) != (v))) & ((a) == (a))))
#define GL_BEFORE_INT(a, v, right) ((right) ? (a) <= (v) : (a) < (v))
#define GL_BEFORE_UINT GL_BEFORE_INT
#define GL_BEFORE_BOOL GL_BEFORE_INT

/* Whether a is sorted as the search takes it (NaN last): then "before v" holds for a prefix
** of a, and counting the elements it holds for gives the search's answer. */
#define GL_SORTED_FLOAT(x, y) ((y) != (y) || ((x) == (x) && (x) <= (y)))
#define GL_SORTED_INT(x, y) ((x) <= (y))
#define GL_SORTED_UINT GL_SORTED_INT
#define GL_SORTED_BOOL GL_SORTED_INT
/* Below this many elements in a (and sorted), each element of v counts instead of searching:
** a vectorised pass over a costs less than a search's mispredicted steps. */
#define COUNT_MAX 256

#define GL_SEARCH_FN(E, id, S, kind, half, ...) GL_DT_WHEN(kind, (1, 1, 1, 1),                    \
  static bool sorted_##id(const S *a, int64_t n) {                                               \
    for (int64_t j = 0; j + 1 < n; j++)                                                          \
      if (!GL_SORTED_##kind(GL_DT_LOAD(half, a[j]), GL_DT_LOAD(half, a[j + 1]))) return false;   \
    return true;                                                                                 \
  }                                                                                              \
  static void search_##id(int64_t *d, const void *a_, int64_t as, int64_t n, const void *v_,     \
                          int64_t vs, int64_t lo_i, int64_t hi_i, bool right) {                  \
    const S *a = a_, *v = v_;                                                                    \
    if (n <= COUNT_MAX && as == 1 && sorted_##id(a, n)) {                                        \
      for (int64_t i = lo_i; i < hi_i; i++) {   /* the count of a's before v: no branches */    \
        int64_t c = 0;                                                                           \
        for (int64_t j = 0; j < n; j++)                                                          \
          c += GL_BEFORE_##kind(GL_DT_LOAD(half, a[j]), GL_DT_LOAD(half, v[i * vs]), right);     \
        d[i] = c;                                                                                \
      }                                                                                          \
      return;                                                                                    \
    }                                                                                            \
    for (int64_t i = lo_i; i < hi_i; i++) {                                                      \
      int64_t lo = 0, hi = n;                                                                    \
      while (lo < hi) {                                                                          \
        int64_t mid = (lo + hi) / 2;                                                             \
        if (GL_BEFORE_##kind(GL_DT_LOAD(half, a[mid * as]), GL_DT_LOAD(half, v[i * vs]), right)) \
          lo = mid + 1;                                                                          \
        else hi = mid;                                                                           \
      }                                                                                          \
      d[i] = lo;                                                                                 \
    }                                                                                            \
  })
GL_DTYPE_LIST(GL_SEARCH_FN)

typedef void (*search_fn)(int64_t *d, const void *a, int64_t as, int64_t n, const void *v, int64_t vs,
                          int64_t lo, int64_t hi, bool right);
#define GL_SEARCH_ENTRY(E, id, S, kind, ...) GL_DT_WHEN(kind, (1, 1, 1, 1), [GL_##E] = search_##id,)
static const search_fn searches[GL_NDTYPE] = { GL_DTYPE_LIST(GL_SEARCH_ENTRY) };

/* The elements of v are independent: spans of them go to the team's threads. */
gl_status gl_cpu_searchsorted(const gl_array *dst, const gl_array *a, const gl_array *v, bool right) {
  search_fn fn = searches[a->dtype];
  if (fn == NULL) return gl_fail(GL_ENOTSUP, "searchsorted: %s values have no order", gl_dtypes[a->dtype].name);
  int64_t m = v->size, n = a->size, blocks = (m + GL_POLL_SPAN - 1) / GL_POLL_SPAN;
  int64_t *d = gl_array_data(dst);
  const void *ad = gl_array_data(a), *vd = gl_array_data(v);
  int64_t as = a->strides[0], vs = v->strides[0];
  /* (each element costs a search, log2(n) steps: a block is worth splitting sooner) */
  int nt = gl_cpu_team_size(m * 8);
  #pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t b = 0; b < blocks; b++) {
    if (gl_interrupted()) continue;
    int64_t lo = b * GL_POLL_SPAN, hi = lo + GL_POLL_SPAN < m ? lo + GL_POLL_SPAN : m;
    fn(d, ad, as, n, vd, vs, lo, hi, right);
  }
  gl_cpu_team_done(nt);
  return gl_interrupt_check();
}
