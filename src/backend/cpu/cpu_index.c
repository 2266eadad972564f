/*
** cpu_index.c — gather, scatter and boolean-mask selection on the CPU.
**
** Gather, scatter and mask selection only move elements, so their loops are stamped per
** element width (1, 2, 4, 8 bytes), not per dtype; only scatter with accumulate needs
** the dtype's arithmetic. Sort is in cpu_sort.c.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"
#include "../../../kernels/convert.h"

/* Below this many elements a call runs on one thread. */
#define PAR_MIN 32768

/* Element offset in 'a' of the start of row r of the shape 'sh' (rows: every axis but
** the last), leaving out the axis 'ax', and the coordinate along 'ax' (-1 if it is the
** last axis). */
static int64_t row_offset(const int64_t *sh, const gl_array *a, int64_t r, int ax, int64_t *coord) {
  int64_t off = 0;
  *coord = -1;
  for (int d = a->ndim - 2; d >= 0; d--) {
    int64_t i = r % sh[d];
    r /= sh[d];
    if (d == ax) *coord = i;
    else off += i * a->strides[d];
  }
  return off;
}

/* ---- gather / scatter ------------------------------------------------------------------- */

/* One row of a gather or scatter: n elements, 'id' the destination's positions (NULL:
** j), 'is' the source's (NULL: j). */
#define GL_MOVE_ROW(T)                                                                  \
  static void move_row_##T(T *d, int64_t ds, const int64_t *id, const T *s, int64_t ss, \
                           const int64_t *is, int64_t n) {                              \
    if (id == NULL && is == NULL)                                                       \
      for (int64_t j = 0; j < n; j++) d[j * ds] = s[j * ss];                            \
    else if (id == NULL)                                                                \
      for (int64_t j = 0; j < n; j++) d[j * ds] = s[is[j] * ss];                        \
    else if (is == NULL)                                                                \
      for (int64_t j = 0; j < n; j++) d[id[j] * ds] = s[j * ss];                        \
    else                                                                                \
      for (int64_t j = 0; j < n; j++) d[id[j] * ds] = s[is[j] * ss];                    \
  }
GL_MOVE_ROW(uint8_t)
GL_MOVE_ROW(uint16_t)
GL_MOVE_ROW(uint32_t)
GL_MOVE_ROW(uint64_t)
GL_MOVE_ROW(gl_complex128)

static void move_row(size_t sz, void *d, int64_t ds, const int64_t *id, const void *s,
                     int64_t ss, const int64_t *is, int64_t n) {
  switch (sz) {
    case 1: move_row_uint8_t(d, ds, id, s, ss, is, n); break;
    case 2: move_row_uint16_t(d, ds, id, s, ss, is, n); break;
    case 4: move_row_uint32_t(d, ds, id, s, ss, is, n); break;
    case 8: move_row_uint64_t(d, ds, id, s, ss, is, n); break;
    default: move_row_gl_complex128(d, ds, id, s, ss, is, n); break;
  }
}

/* a + b of int32/int64 wrapping as the GPU's atomics do (a signed overflow in C is UB);
** other dtypes add plainly (uint8 and bool in int, stored back by the dtype's rule). */
static inline int32_t wrap_add32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline int64_t wrap_add64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
#define GL_WRAP_ADD(a, b) _Generic((a), int32_t: wrap_add32((int32_t)(a), (int32_t)(b)), \
                                        int64_t: wrap_add64((int64_t)(a), (int64_t)(b)), \
                                        default: (a) + (b))
/* complex: part by part */
#define GL_ADD_OF(kind, a, b) GL_ADD_OF_##kind(a, b)
#define GL_ADD_OF_BOOL GL_WRAP_ADD
#define GL_ADD_OF_UINT GL_WRAP_ADD
#define GL_ADD_OF_INT GL_WRAP_ADD
#define GL_ADD_OF_FLOAT GL_WRAP_ADD
#define GL_ADD_OF_COMPLEX(a, b) _Generic((a), gl_complex64: cadd64, default: cadd128)((a), (b))
static inline gl_complex64 cadd64(gl_complex64 a, gl_complex64 b) { return gl_make_complex64(a.re + b.re, a.im + b.im); }
static inline gl_complex128 cadd128(gl_complex128 a, gl_complex128 b) { return gl_make_complex128(a.re + b.re, a.im + b.im); }

/* dst[..., j, ...] += src[..., j or idx[j], ...] in the dtype's arithmetic (bool: or). */
#define GL_ADD_ROW(E, id, S, kind, half, ...)                                           \
  static void add_row_##id(void *d_, int64_t ds, const int64_t *id_, const void *s_,      \
                           int64_t ss, int64_t n) {                                      \
    S *d = d_;                                                                           \
    const S *s = s_;                                                                     \
    for (int64_t j = 0; j < n; j++) {                                                    \
      S *p = &d[(id_ ? id_[j] : j) * ds];                                                \
      *p = GL_DT_STORE(kind, half, S, id, kind,                                          \
                       GL_ADD_OF(kind, GL_DT_LOAD(half, *p), GL_DT_LOAD(half, s[j * ss]))); \
    }                                                                                    \
  }
GL_DTYPE_LIST(GL_ADD_ROW)

typedef void (*add_row_fn)(void *d, int64_t ds, const int64_t *id, const void *s, int64_t ss,
                           int64_t n);
#define GL_ADD_ENTRY(E, id, ...) [GL_##E] = add_row_##id,
static const add_row_fn add_rows[GL_NDTYPE] = { GL_DTYPE_LIST(GL_ADD_ENTRY) };

/* The shared walk of gather (indirect source) and scatter (indirect destination): 'ind'
** is the array whose 'axis' is indexed through idx, 'dir' the one walked directly; both
** have the shape of 'dir'. */
static void index_walk(const gl_array *dst, const gl_array *src, int axis, const int64_t *idx,
                       bool scatter, bool accumulate) {
  const gl_array *dir = scatter ? src : dst;
  int nd = dir->ndim;
  if (dir->size == 0) return;
  size_t sz = gl_dtypes[dst->dtype].size;
  int64_t inner = dir->shape[nd - 1];
  int64_t rows = dir->size / inner;
  char *d = gl_array_data(dst);
  const char *s = gl_array_data(src);
  int64_t ds = dst->strides[nd - 1], ss = src->strides[nd - 1];
  bool last = axis == nd - 1;
  add_row_fn add = add_rows[dst->dtype];
  /* gathers write disjoint rows, so they may run in parallel; scatters run in order so
  ** that repeated positions are deterministic (the last write wins, as in NumPy) */
  int nt = !scatter && dir->size >= PAR_MIN ? gl_cpu_team_size(dir->size) : 1;
  #pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t r = 0; r < rows; r++) {
    if (gl_interrupted()) continue;
    int64_t c;
    int64_t od = row_offset(dir->shape, dst, r, axis, &c), os = row_offset(dir->shape, src, r, axis, &c);
    if (!last) {              /* the indexed axis is one of the row's coordinates */
      if (scatter) { od += idx[c] * dst->strides[axis]; os += c * src->strides[axis]; }
      else { os += idx[c] * src->strides[axis]; od += c * dst->strides[axis]; }
    }
    /* the row in spans of GL_POLL_SPAN with a poll before each; j0 is where a span starts
    ** in the row, so in the index list too */
    for (int64_t j0 = 0; j0 < inner && !gl_interrupted(); j0 += GL_POLL_SPAN) {
      int64_t n = inner - j0 < GL_POLL_SPAN ? inner - j0 : GL_POLL_SPAN;
      const int64_t *id = last && scatter ? idx + j0 : NULL, *is = last && !scatter ? idx + j0 : NULL;
      char *dp = d + (od + (id ? 0 : j0 * ds)) * (int64_t)sz;
      const char *sp = s + (os + (is ? 0 : j0 * ss)) * (int64_t)sz;
      if (accumulate) add(dp, ds, id, sp, ss, n);
      else move_row(sz, dp, ds, id, sp, ss, is, n);
    }
  }
}

gl_status gl_cpu_gather(const gl_array *dst, const gl_array *src, int axis, const gl_array *idx) {
  index_walk(dst, src, axis, gl_array_data(idx), false, false);
  return gl_interrupt_check();
}

gl_status gl_cpu_scatter(const gl_array *dst, int axis, const gl_array *idx, const gl_array *src,
                         bool accumulate) {
  index_walk(dst, src, axis, gl_array_data(idx), true, accumulate);
  return gl_interrupt_check();
}

/* ---- adds through 1-based positions -------------------------------------------------------- */

/* Positions out of range are found as the adds go, so the adds go into sums of their own
** (zeroed, n elements a thread) and reach dst only when every position was in range: dst is
** unchanged after an error without a pass that checks the index first (the index of 1e7
** int64 is 80 MB, the sums of 1e4 float32 stay in L1). Each thread sums its share of the
** index; the sums are added to dst in thread order. Where dst is not small beside the index
** (n > m / 2) the positions are checked first and the adds made in place, in order. */

static inline float add_float(float a, float b) { return a + b; }
static inline double add_double(double a, double b) { return a + b; }

/* acc[k] += s[j] for j in [lo, hi) (s's stride ss), k from the 1-based idx[j]; the first j
** out of range stops it: j + 1 returned (0: none). */
#define GL_ADD_AT_FN(T, ADD)                                                                  \
  static int64_t add_at_##T(T *acc, int64_t n, const int64_t *idx, const T *s, int64_t ss,   \
                            int64_t lo, int64_t hi) {                                        \
    for (int64_t j = lo; j < hi; j++) {                                                      \
      int64_t k = idx[j] > 0 ? idx[j] - 1 : idx[j] + n;                                      \
      if ((uint64_t)k >= (uint64_t)n) return j + 1;                                          \
      acc[k] = ADD(acc[k], s[j * ss]);                                                       \
    }                                                                                        \
    return 0;                                                                                \
  }                                                                                          \
  static void add_sums_##T(T *d, const T *acc, int nt, int64_t n, int64_t lo, int64_t hi) { \
    for (int64_t k = lo; k < hi; k++) {                                                      \
      T v = d[k];                                                                            \
      for (int u = 0; u < nt; u++) v = ADD(v, acc[(size_t)u * (size_t)n + (size_t)k]);       \
      d[k] = v;                                                                              \
    }                                                                                        \
  }
GL_ADD_AT_FN(float, add_float)
GL_ADD_AT_FN(double, add_double)
GL_ADD_AT_FN(int32_t, wrap_add32)
GL_ADD_AT_FN(int64_t, wrap_add64)

/* The two loops of a dtype, on untyped pointers. */
static int64_t add_at(gl_dtype dt, void *acc, int64_t n, const int64_t *idx, const void *s, int64_t ss, int64_t lo,
                      int64_t hi) {
  switch (dt) {
    case GL_FLOAT32: return add_at_float(acc, n, idx, s, ss, lo, hi);
    case GL_FLOAT64: return add_at_double(acc, n, idx, s, ss, lo, hi);
    case GL_INT32: return add_at_int32_t(acc, n, idx, s, ss, lo, hi);
    default: return add_at_int64_t(acc, n, idx, s, ss, lo, hi);
  }
}
static void add_sums(gl_dtype dt, void *d, const void *acc, int nt, int64_t n, int64_t lo, int64_t hi) {
  switch (dt) {
    case GL_FLOAT32: add_sums_float(d, acc, nt, n, lo, hi); return;
    case GL_FLOAT64: add_sums_double(d, acc, nt, n, lo, hi); return;
    case GL_INT32: add_sums_int32_t(d, acc, nt, n, lo, hi); return;
    default: add_sums_int64_t(d, acc, nt, n, lo, hi); return;
  }
}

#define ADD_TEAM 256                /* the most threads of a team (cpu_team.c's MAX_THREADS) */

static gl_status add_at_error(const int64_t *ix, int64_t j, int64_t n) {
  return gl_fail(GL_EINVAL, "index %lld is out of range for axis 1 with size %lld (indices are 1-based, negatives count from the end)",
                 (long long)ix[j], (long long)n);
}

gl_status gl_cpu_scatter_add(const gl_array *dst, const gl_array *idx, const gl_array *src) {
  gl_dtype dt = (gl_dtype)dst->dtype;
  if (dt != GL_FLOAT32 && dt != GL_FLOAT64 && dt != GL_INT32 && dt != GL_INT64)
    return gl_fail(GL_ENOTSUP, "scatter_add of %s arrays", gl_dtypes[dt].name);
  int64_t n = dst->size, m = idx->size, ss = src->ndim ? src->strides[0] : 0;
  size_t sz = gl_dtypes[dt].size;
  const int64_t *ix = gl_array_data(idx);
  const char *s = gl_array_data(src);
  char *d = gl_array_data(dst);
  int nt = m >= PAR_MIN ? gl_cpu_team_size(m) : 1;
  if (nt > ADD_TEAM) nt = ADD_TEAM;
  char *acc = n <= m / 2 ? calloc((size_t)nt * (size_t)n, sz) : NULL;
  if (acc == NULL) {                      /* dst large beside the index: check, then add in place */
    gl_cpu_team_done(nt);
    for (int64_t j = 0; j < m; j++)
      if ((uint64_t)(ix[j] > 0 ? ix[j] - 1 : ix[j] + n) >= (uint64_t)n) return add_at_error(ix, j, n);
    for (int64_t j0 = 0; j0 < m && !gl_interrupted(); j0 += GL_POLL_SPAN)
      add_at(dt, d, n, ix, s, ss, j0, m - j0 < GL_POLL_SPAN ? m : j0 + GL_POLL_SPAN);
    return gl_interrupt_check();
  }
  int64_t bad[ADD_TEAM] = { 0 };
  bool stop = false;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int t = 0, tn = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    tn = omp_get_num_threads();
#endif
    int64_t lo = m * t / tn, hi = m * (t + 1) / tn;
    char *mine = acc + (size_t)t * (size_t)n * sz;
    for (int64_t j0 = lo; j0 < hi && !bad[t]; j0 += GL_POLL_SPAN) {
      if (gl_interrupted()) break;
      int64_t j1 = hi - j0 < GL_POLL_SPAN ? hi : j0 + GL_POLL_SPAN;
      bad[t] = add_at(dt, mine, n, ix, s, ss, j0, j1);
    }
    #pragma omp barrier
    #pragma omp single
    {
      stop = gl_interrupted();
      for (int u = 0; u < tn; u++) stop |= bad[u] != 0;
    }
    if (!stop) add_sums(dt, d, acc, tn, n, n * t / tn, n * (t + 1) / tn);
  }
  free(acc);
  gl_cpu_team_done(nt);
  for (int u = 0; u < nt; u++)            /* the first out of range: the earliest share's */
    if (bad[u]) return add_at_error(ix, bad[u] - 1, n);
  return gl_interrupt_check();
}

/* ---- the largest / smallest element sent to each position ---------------------------------- */

/* Whether v replaces c as the largest (smallest) so far, v coming later: NaN wins, and a
** tie goes to the later one (-0 and +0 are a tie), the order a stable sort by value gives.
** (A NaN c compares false with everything: then only a NaN v replaces it.) */
#define GL_TAKE_MAX_FLOAT(v, c) (((v) >= (c)) | ((v) != (v)))
#define GL_TAKE_MIN_FLOAT(v, c) (((v) <= (c)) | ((v) != (v)))
#define GL_TAKE_MAX_INT(v, c) ((v) >= (c))
#define GL_TAKE_MIN_INT(v, c) ((v) <= (c))
#define GL_TAKE_MAX_UINT GL_TAKE_MAX_INT
#define GL_TAKE_MIN_UINT GL_TAKE_MIN_INT
#define GL_TAKE_MAX_BOOL GL_TAKE_MAX_INT
#define GL_TAKE_MIN_BOOL GL_TAKE_MIN_INT
/* A start below (above) every value, so the first element sent to a position always
** replaces it, with no test of whether one came before. */
#define GL_LOWEST_FLOAT(S, id, half) GL_DT_STORE(FLOAT, half, S, id, FLOAT, -INFINITY)
#define GL_HIGHEST_FLOAT(S, id, half) GL_DT_STORE(FLOAT, half, S, id, FLOAT, INFINITY)
#define GL_HIGHEST_INT(S, id, half) ((S)(((uint64_t)1 << (sizeof(S) * 8 - 1)) - 1))
#define GL_LOWEST_INT(S, id, half) ((S)(-GL_HIGHEST_INT(S, id, half) - 1))
#define GL_LOWEST_UINT(S, id, half) ((S)0)
#define GL_HIGHEST_UINT(S, id, half) ((S)~(S)0)
#define GL_LOWEST_BOOL GL_LOWEST_UINT
#define GL_HIGHEST_BOOL GL_HIGHEST_UINT

/* One pass over src[lo..hi) in order into d: position k = idx[j] (1-based, negatives from
** the end); the first one out of range stops it, *bad = j + 1. src's stride is 1 or ss
** (STEP). */
#define GL_EXTREME_STEP(kind, half, S, DIR, STEP)                                                 \
  {                                                                                              \
    int64_t k = idx[j] > 0 ? idx[j] - 1 : idx[j] + n;                                            \
    if ((uint64_t)k >= (uint64_t)n) { *bad = j + 1; return; }                                    \
    S v = s[STEP];                                                                               \
    if (GL_TAKE_##DIR##_##kind(GL_DT_LOAD(half, v), GL_DT_LOAD(half, d[k]))) d[k] = v;          \
  }
#define GL_EXTREME_PASS(kind, half, S, DIR)                                                       \
  if (ss == 1) for (int64_t j = lo; j < hi; j++) GL_EXTREME_STEP(kind, half, S, DIR, j)          \
  else for (int64_t j = lo; j < hi; j++) GL_EXTREME_STEP(kind, half, S, DIR, j * ss)
/* Per dtype: the start of every position (below or above every value, so the first element
** sent replaces it with no test of whether one came before); a pass; the running values of
** later shares (np of them, n apart in 'later') folded into d in order, as the pass would. */
#define GL_EXTREME_FN(E, id, S, kind, half, ...) GL_DT_WHEN(kind, (1, 1, 1, 1),                  \
  static void extreme_start_##id(void *d_, int64_t n, bool max) {                                \
    S *d = d_, start = max ? GL_LOWEST_##kind(S, id, half) : GL_HIGHEST_##kind(S, id, half);     \
    for (int64_t k = 0; k < n; k++) d[k] = start;                                                \
  }                                                                                              \
  static void extreme_pass_##id(void *d_, int64_t n, const int64_t *idx, const void *s_,         \
                                int64_t ss, int64_t lo, int64_t hi, bool max, int64_t *bad) {    \
    S *d = d_;                                                                                   \
    const S *s = s_;                                                                             \
    if (max) { GL_EXTREME_PASS(kind, half, S, MAX) }                                             \
    else { GL_EXTREME_PASS(kind, half, S, MIN) }                                                 \
  }                                                                                              \
  static void extreme_fold_##id(void *d_, const void *later_, int np, int64_t n, int64_t lo,     \
                                int64_t hi, bool max) {                                          \
    S *d = d_;                                                                                   \
    const S *later = later_;                                                                     \
    for (int u = 0; u < np; u++)                                                                 \
      for (int64_t k = lo; k < hi; k++) {                                                        \
        S v = later[(size_t)u * (size_t)n + (size_t)k];                                          \
        if (max ? GL_TAKE_MAX_##kind(GL_DT_LOAD(half, v), GL_DT_LOAD(half, d[k]))                \
                : GL_TAKE_MIN_##kind(GL_DT_LOAD(half, v), GL_DT_LOAD(half, d[k]))) d[k] = v;     \
      }                                                                                          \
  })
GL_DTYPE_LIST(GL_EXTREME_FN)

typedef struct extreme_fns {
  void (*start)(void *d, int64_t n, bool max);
  void (*pass)(void *d, int64_t n, const int64_t *idx, const void *s, int64_t ss, int64_t lo, int64_t hi, bool max,
               int64_t *bad);
  void (*fold)(void *d, const void *later, int np, int64_t n, int64_t lo, int64_t hi, bool max);
} extreme_fns;
#define GL_EXTREME_ENTRY(E, id, S, kind, ...) \
  GL_DT_WHEN(kind, (1, 1, 1, 1), [GL_##E] = { extreme_start_##id, extreme_pass_##id, extreme_fold_##id },)
static const extreme_fns extremes[GL_NDTYPE] = { GL_DTYPE_LIST(GL_EXTREME_ENTRY) };

/* One pass in order: the elements sent to a position are few beside the whole (the
** position's running value stays in cache), and the pass reads each element once. With
** several threads and few positions beside the elements (n <= m / 2) each thread runs its
** share into running values of its own (the first thread into dst), folded into dst in
** thread order: a later share's value wins as a later element would. Which positions got
** an element is read from the values where it can be. */
gl_status gl_cpu_scatter_extreme(const gl_array *dst, const gl_array *seen, const gl_array *idx,
                                 const gl_array *src, bool max) {
  const extreme_fns *fn = &extremes[dst->dtype];
  if (fn->pass == NULL) return gl_fail(GL_ENOTSUP, "no order of %s values", gl_dtypes[dst->dtype].name);
  int64_t n = dst->size, m = idx->size, ss = src->strides[0];
  size_t sz = gl_dtypes[dst->dtype].size;
  const int64_t *ix = gl_array_data(idx);
  const void *s = gl_array_data(src);
  char *d = gl_array_data(dst);
  uint8_t *sn = gl_array_data(seen);
  int nt = m >= PAR_MIN && n <= m / 2 ? gl_cpu_team_size(m) : 1;
  if (nt > ADD_TEAM) nt = ADD_TEAM;
  int64_t bad[ADD_TEAM] = { 0 };
  char *later = nt > 1 ? malloc((size_t)(nt - 1) * (size_t)n * sz) : NULL;
  if (later == NULL) nt = 1;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int t = 0, tn = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    tn = omp_get_num_threads();
#endif
    int64_t lo = m * t / tn, hi = m * (t + 1) / tn;
    char *mine = t == 0 ? d : later + (size_t)(t - 1) * (size_t)n * sz;
    fn->start(mine, n, max);
    for (int64_t j0 = lo; j0 < hi && !bad[t] && !gl_interrupted(); j0 += GL_POLL_SPAN)
      fn->pass(mine, n, ix, s, ss, j0, hi - j0 < GL_POLL_SPAN ? hi : j0 + GL_POLL_SPAN, max, &bad[t]);
    #pragma omp barrier
    if (tn > 1) fn->fold(d, later, tn - 1, n, n * t / tn, n * (t + 1) / tn, max);
  }
  free(later);
  gl_cpu_team_done(nt);
  for (int u = 0; u < nt; u++)
    if (bad[u])
      return gl_fail(GL_EINVAL, "index %lld is out of range for axis 1 with size %lld (indices are 1-based, negatives count from the end)",
                     (long long)ix[bad[u] - 1], (long long)n);
  GL_TRY(gl_interrupt_check());
  /* a position still holding the start got nothing, or only elements equal to it: only
  ** then a pass over the positions says which */
  char start[16];
  fn->start(start, 1, max);
  bool unsure = false;
  for (int64_t k = 0; k < n; k++) {
    sn[k] = memcmp(d + (size_t)k * sz, start, sz) != 0;
    unsure |= !sn[k];
  }
  if (unsure)
    for (int64_t j = 0; j < m; j++) sn[ix[j] > 0 ? ix[j] - 1 : ix[j] + n] = 1;
  for (int64_t k = 0; k < n; k++)
    if (!sn[k]) memset(d + (size_t)k * sz, 0, sz);
  return GL_OK;
}

/* ---- mask selection ------------------------------------------------------------------------ */

#define GL_SELECT_ROW(T)                                                                 \
  static int64_t select_row_##T(T *d, int64_t ds, const T *s, int64_t ss, const uint8_t *m, \
                                int64_t ms, int64_t n) {                                  \
    int64_t k = 0;                                                                        \
    for (int64_t j = 0; j < n; j++)                                                       \
      if (m[j * ms]) d[(k++) * ds] = s[j * ss];                                           \
    return k;                                                                             \
  }
GL_SELECT_ROW(uint8_t)
GL_SELECT_ROW(uint16_t)
GL_SELECT_ROW(uint32_t)
GL_SELECT_ROW(uint64_t)
GL_SELECT_ROW(gl_complex128)

/* The same without a branch per element (d[k] is written whatever m[j] says, k moves on by
** it), up to the last selected element, so nothing is written past the selection: for
** runs of selected and unselected elements no predictor follows (gpu.unique's mask). */
#define GL_COMPACT_ROW(T)                                                                 \
  static int64_t compact_row_##T(T *d, const T *s, int64_t ss, const uint8_t *m, int64_t ms, \
                                 int64_t n) {                                             \
    while (n > 0 && !m[(n - 1) * ms]) n--;                                                \
    int64_t k = 0;                                                                        \
    for (int64_t j = 0; j < n; j++) {                                                     \
      d[k] = s[j * ss];                                                                   \
      k += m[j * ms] != 0;                                                                \
    }                                                                                     \
    return k;                                                                             \
  }
GL_COMPACT_ROW(uint8_t)
GL_COMPACT_ROW(uint16_t)
GL_COMPACT_ROW(uint32_t)
GL_COMPACT_ROW(uint64_t)
GL_COMPACT_ROW(gl_complex128)

static int64_t compact_row(size_t sz, void *d, const void *s, int64_t ss, const uint8_t *m, int64_t ms, int64_t n) {
  switch (sz) {
    case 1: return compact_row_uint8_t(d, s, ss, m, ms, n);
    case 2: return compact_row_uint16_t(d, s, ss, m, ms, n);
    case 4: return compact_row_uint32_t(d, s, ss, m, ms, n);
    case 8: return compact_row_uint64_t(d, s, ss, m, ms, n);
    default: return compact_row_gl_complex128(d, s, ss, m, ms, n);
  }
}

#define MASK_TEAM 256               /* the most threads of a team (cpu_team.c's MAX_THREADS) */

/* One long row (a 1-D selection: gpu.unique's): each thread counts the selected elements
** of its share, the counts summed in order give each thread where its part goes, and the
** shares are compacted side by side; spans of GL_POLL_SPAN with a poll before each. */
static void mask_select_row(char *d, const char *s, int64_t ss, const uint8_t *m, int64_t ms, int64_t n,
                            size_t sz, int nt) {
  int64_t at[MASK_TEAM + 1] = { 0 };
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int t = 0, tn = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    tn = omp_get_num_threads();
#endif
    int64_t lo = n * t / tn, hi = n * (t + 1) / tn, c = 0;
    for (int64_t j = lo; j < hi; j++) c += m[j * ms] != 0;
    at[t + 1] = c;
    #pragma omp barrier
    #pragma omp single
    for (int u = 0; u < tn; u++) at[u + 1] += at[u];
    int64_t k = at[t];
    for (int64_t j0 = lo; j0 < hi && !gl_interrupted(); j0 += GL_POLL_SPAN) {
      int64_t len = hi - j0 < GL_POLL_SPAN ? hi - j0 : GL_POLL_SPAN;
      k += compact_row(sz, d + k * (int64_t)sz, s + j0 * ss * (int64_t)sz, ss, m + j0 * ms, ms, len);
    }
  }
}

gl_status gl_cpu_mask_select(const gl_array *dst, const gl_array *src, const gl_array *mask) {
  const gl_array *ops[2] = { src, mask };
  gl_iter it;
  gl_iter_init(&it, 2, ops);
  size_t sz = gl_dtypes[src->dtype].size;
  if (it.rows == 1 && dst->strides[0] == 1) {
    int nt = it.inner >= PAR_MIN ? gl_cpu_team_size(it.inner) : 1;
    if (nt > MASK_TEAM) nt = MASK_TEAM;
    int64_t off[2];
    gl_iter_row(&it, 0, off);
    mask_select_row(gl_array_data(dst), (const char *)gl_array_data(src) + off[0] * (int64_t)sz, it.strides[0][it.ndim - 1],
                    (const uint8_t *)gl_array_data(mask) + off[1], it.strides[1][it.ndim - 1], it.inner, sz, nt);
    gl_cpu_team_done(nt);
    return gl_interrupt_check();
  }
  char *d = gl_array_data(dst);
  const char *s = gl_array_data(src);
  const uint8_t *m = gl_array_data(mask);
  int64_t ds = dst->strides[0], k = 0, nd = it.ndim;
  int64_t sst = it.strides[0][nd - 1], mst = it.strides[1][nd - 1];
  for (int64_t r = 0; r < it.rows && !gl_interrupted(); r++) {
    int64_t off[2];
    gl_iter_row(&it, r, off);
    for (int64_t j0 = 0; j0 < it.inner && !gl_interrupted(); j0 += GL_POLL_SPAN) {
      int64_t n = it.inner - j0 < GL_POLL_SPAN ? it.inner - j0 : GL_POLL_SPAN;
      char *dp = d + k * ds * (int64_t)sz;
      const char *sp = s + (off[0] + j0 * sst) * (int64_t)sz;
      const uint8_t *mp = m + off[1] + j0 * mst;
      switch (sz) {
        case 1: k += select_row_uint8_t((void *)dp, ds, (const void *)sp, sst, mp, mst, n); break;
        case 2: k += select_row_uint16_t((void *)dp, ds, (const void *)sp, sst, mp, mst, n); break;
        case 4: k += select_row_uint32_t((void *)dp, ds, (const void *)sp, sst, mp, mst, n); break;
        case 8: k += select_row_uint64_t((void *)dp, ds, (const void *)sp, sst, mp, mst, n); break;
        default: k += select_row_gl_complex128((void *)dp, ds, (const void *)sp, sst, mp, mst, n); break;
      }
    }
  }
  return gl_interrupt_check();
}
