/*
** cpu_elem.c — elementwise kernels on the CPU.
**
** Each (op, dtype) pair gets a row kernel stamped from the expressions in
** kernels/elem_ops.h; the pair is chosen once per call. A row kernel has tight loops
** for the layouts that matter (all contiguous; one operand broadcast with stride 0,
** which is also how scalars arrive) that the compiler vectorises, and a strided loop
** for the rest. Large calls are split across OpenMP threads; small ones never start
** a thread.
*/
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The integer expressions are shared by signed and unsigned types, so "x < 0" is
** sometimes always false; that is intended. */
#pragma GCC diagnostic ignored "-Wtype-limits"

/* Below this many elements a call runs on one thread (a wake-up costs ~5 us). */
#define PAR_MIN 32768

#define CPU_ELEM_REAL 1
#define CPU_ELEM_COMPLEX 0
#include "cpu_elem_rows.h"

GL_UNARY_OPS(STAMP_U)
GL_BINARY_OPS(STAMP_B)

static const urow_fn unary_table[GL_NUNOP][GL_NDTYPE] = { GL_UNARY_OPS(TABLE_U) };
static const brow_fn binary_table[GL_NBINOP][GL_NDTYPE] = { GL_BINARY_OPS(TABLE_B) };

/* ---- digamma a block at a time ------------------------------------------------------------- */

/* Most of digamma's time is its series on [1, 2): forty-two dependent multiply-adds per
** element, then the recurrence's divisions. These rows reduce a block of elements one by
** one (kernels/special.h's gl_sf_digamma_reduce), then run the recurrence and the series
** over the whole block with the step outermost, loops the compiler vectorises across
** elements: each element sees the same
** operations in the same order as in gl_digamma, so the bits are the same. Built without
** fma contraction, as special.h is. */
#define DIGAMMA_BLOCK 256
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
static void digamma_block(double *out, int64_t n) {          /* in place: x in, psi(x) out */
  const double c[42] = GL_SF_PSI_12_COEFS;
  double xr[DIGAMMA_BLOCK], d[DIGAMMA_BLOCK], p[DIGAMMA_BLOCK], r[DIGAMMA_BLOCK], s[DIGAMMA_BLOCK];
  double steps[DIGAMMA_BLOCK];
  int series[DIGAMMA_BLOCK];
  for (int64_t i = 0; i < n; i++) {
    xr[i] = 1.5;
    steps[i] = 0;
    series[i] = gl_sf_digamma_reduce(out[i], &xr[i], &r[i], &steps[i]);
  }
  /* the recurrence's sum, gl_sf_psi_steps' terms in its order (k from steps - 1 down to 0;
  ** steps <= 8), a term computed in every lane and kept where it belongs */
  for (int64_t i = 0; i < n; i++) s[i] = 0;
  for (int k = 7; k >= 0; k--)
    for (int64_t i = 0; i < n; i++) {
      double t = s[i] + 1 / (xr[i] + (double)k);
      s[i] = (double)k < steps[i] ? t : s[i];
    }
  for (int64_t i = 0; i < n; i++) {
    d[i] = (xr[i] - GL_SF_PSI_X0_HI) - GL_SF_PSI_X0_LO;
    p[i] = c[41];
  }
  for (int k = 40; k >= 0; k--)
    for (int64_t i = 0; i < n; i++) p[i] = p[i] * d[i] + c[k];
  for (int64_t i = 0; i < n; i++) out[i] = series[i] ? r[i] + (p[i] * d[i] + s[i]) : r[i];
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#define DIGAMMA_ROW(fn, T)                                                         \
  static void fn(void *d_, int64_t ds, const void *s_, int64_t ss, int64_t n) {   \
    T *d = d_;                                                                     \
    const T *s = s_;                                                               \
    double v[DIGAMMA_BLOCK];                                                       \
    for (int64_t i0 = 0; i0 < n; i0 += DIGAMMA_BLOCK) {                            \
      int64_t m = n - i0 < DIGAMMA_BLOCK ? n - i0 : DIGAMMA_BLOCK;                 \
      for (int64_t i = 0; i < m; i++) v[i] = (double)s[(i0 + i) * ss];            \
      digamma_block(v, m);                                                         \
      for (int64_t i = 0; i < m; i++) d[(i0 + i) * ds] = (T)v[i];                 \
    }                                                                              \
  }
DIGAMMA_ROW(digamma_rows_float32, float)
DIGAMMA_ROW(digamma_rows_float64, double)

/* ---- float32 lgamma: the vector path, then libm where it does not apply ---------------------- */

/* gl_lgammaf's call of libm keeps its row scalar. This row runs kernels/vmath.h's branch-free
** positive path over a whole block (a loop the compiler vectorises), then gl_lgammaf for the
** few elements outside (0, inf): the same bits as the expression's row. */
#define LGAMMA_BLOCK 1024
static void lgamma_rows_float32(void *d_, int64_t ds, const void *s_, int64_t ss, int64_t n) {
  float *d = d_;
  const float *s = s_;
  float v[LGAMMA_BLOCK];
  for (int64_t i0 = 0; i0 < n; i0 += LGAMMA_BLOCK) {
    int64_t m = n - i0 < LGAMMA_BLOCK ? n - i0 : LGAMMA_BLOCK;
    const float *x = s + i0 * ss;
    if (ss == 1)
      for (int64_t i = 0; i < m; i++) v[i] = gl_vlgammaf_pos(x[i]);
    else
      for (int64_t i = 0; i < m; i++) v[i] = gl_vlgammaf_pos(x[i * ss]);
    for (int64_t i = 0; i < m; i++) {
      float xi = x[i * ss];
      d[(i0 + i) * ds] = xi > 0 && xi < INFINITY ? v[i] : gl_lgammaf(xi);
    }
  }
}

/* The row kernel of (op, dtype), NULL where there is none. */
static urow_fn unary_row(gl_unop op, gl_dtype dt) {
  if (op == GL_U_digamma && dt == GL_FLOAT32) return digamma_rows_float32;
  if (op == GL_U_digamma && dt == GL_FLOAT64) return digamma_rows_float64;
  if (op == GL_U_lgamma && dt == GL_FLOAT32) return lgamma_rows_float32;
  return gl_dtype_is_complex(dt) ? gl_cpu_unary_cx[op][dt] : unary_table[op][dt];
}
static brow_fn binary_row(gl_binop op, gl_dtype dt) {
  return gl_dtype_is_complex(dt) ? gl_cpu_binary_cx[op][dt] : binary_table[op][dt];
}

bool gl_cpu_has_unary(gl_unop op, gl_dtype dt) { return unary_row(op, dt) != NULL; }
bool gl_cpu_has_binary(gl_binop op, gl_dtype dt) { return binary_row(op, dt) != NULL; }

/* ---- drivers ----------------------------------------------------------------------------------- */

/* Runs row kernels over an iterator of 'nargs' operands (dst first). Rows are shared
** among threads; a single long row is cut into per-thread chunks. */
typedef struct rowjob {
  gl_iter it;
  char *base[3];
  int64_t isz[3];
  urow_fn u;
  brow_fn b;
} rowjob;

/* Elements lo .. hi-1 of row r, in spans of GL_POLL_SPAN with a poll for a stop before
** each (a row of an expanded view may hold 2^40 elements). */
static void run_span(const rowjob *j, int64_t r, int64_t lo, int64_t hi) {
  int64_t off[3];
  gl_iter_row(&j->it, r, off);
  int nd = j->it.ndim - 1;
  const int64_t *s0 = j->it.strides[0], *s1 = j->it.strides[1], *s2 = j->it.strides[2];
  for (int64_t i = lo; i < hi && !gl_interrupted(); i += GL_POLL_SPAN) {
    int64_t n = hi - i < GL_POLL_SPAN ? hi - i : GL_POLL_SPAN;
    char *d = j->base[0] + (off[0] + i * s0[nd]) * j->isz[0];
    const char *a = j->base[1] + (off[1] + i * s1[nd]) * j->isz[1];
    if (j->u) j->u(d, s0[nd], a, s1[nd], n);
    else {
      const char *b = j->base[2] + (off[2] + i * s2[nd]) * j->isz[2];
      j->b(d, s0[nd], a, s1[nd], b, s2[nd], n);
    }
  }
}

static void run_job(const rowjob *j) {
  int64_t rows = j->it.rows, inner = j->it.inner, total = rows * inner;
#ifdef _OPENMP
  int nt = total >= PAR_MIN ? gl_cpu_team_size(total) : 1;
  if (nt > 1) {
    if (rows == 1 || rows < nt) {
      for (int64_t r = 0; r < rows; r++) {
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (int t = 0; t < nt; t++) {
          int64_t chunk = (inner + nt - 1) / nt;
          chunk = (chunk + 15) & ~(int64_t)15;          /* keep chunks vector-aligned */
          int64_t lo = t * chunk, hi = lo + chunk < inner ? lo + chunk : inner;
          if (lo < hi) run_span(j, r, lo, hi);
        }
      }
      gl_cpu_team_done(nt);
      return;
    }
    /* after a stop the remaining rows cost a load each (no break out of an omp for) */
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t r = 0; r < rows; r++) if (!gl_interrupted()) run_span(j, r, 0, inner);
    gl_cpu_team_done(nt);
    return;
  }
#endif
  (void)total;
  for (int64_t r = 0; r < rows && !gl_interrupted(); r++) run_span(j, r, 0, inner);
}

#define SMALL_ROW GL_FLAT_MAX   /* elements: well under a team's worth and a poll span */

/* Small, C-ordered operands of one size (no broadcast, no scalar): one row, no iterator and
** no team (a 100-element op costs its row and little else). */
static bool one_small_row(const gl_array *dst, const gl_array *a, const gl_array *b) {
  return dst->size <= SMALL_ROW && a->size == dst->size && (b == NULL || b->size == dst->size) &&
         gl_array_is_contiguous(dst) && gl_array_is_contiguous(a) && (b == NULL || gl_array_is_contiguous(b));
}

gl_status gl_cpu_unary(gl_unop op, const gl_array *dst, const gl_array *src) {
  urow_fn fn = unary_row(op, (gl_dtype)src->dtype);
  if (fn == NULL)
    return gl_fail(GL_ENOTSUP, "%s is not defined for %s arrays", gl_unop_name[op], gl_dtypes[src->dtype].name);
  if (one_small_row(dst, src, NULL)) {
    fn(gl_array_data(dst), 1, gl_array_data(src), 1, dst->size);
    return GL_OK;
  }
  rowjob j;
  const gl_array *ops[2] = { dst, src };
  gl_iter_init(&j.it, 2, ops);
  j.base[0] = gl_array_data(dst);
  j.base[1] = gl_array_data(src);
  j.isz[0] = (int64_t)gl_array_itemsize(dst);
  j.isz[1] = (int64_t)gl_array_itemsize(src);
  j.u = fn;
  j.b = NULL;
  if (j.it.rows > 0 && j.it.inner > 0) run_job(&j);
  return gl_interrupt_check();
}

/* The flat forms: the row kernel, as one_small_row runs it. UP/UL ops read src in its own
** dtype (ct) and write bool, as gl_cpu_unary does. */
void gl_cpu_unary_flat(gl_unop op, gl_dtype ct, void *dst, const void *src, int64_t n) {
  unary_row(op, ct)(dst, 1, src, 1, n);
}

void gl_cpu_binary_flat(gl_binop op, gl_dtype ct, void *dst, const void *a, const void *b, int64_t n) {
  binary_row(op, ct)(dst, 1, a, 1, b, 1, n);
}

/* A scalar operand becomes a one-element "array" of stride 0 in the compute dtype, held in
** the caller's slots (one per operand). */
typedef struct scalar_slots {
  gl_array view[2];
  gl_storage st[2];
  gl_complex128 bits[2];     /* room for the widest element */
} scalar_slots;

static void scalar_operand(scalar_slots *sl, int k, gl_operand *o, gl_dtype ct, const gl_array *dst) {
  if (o->arr != NULL) return;
  gl_array *view = &sl->view[k];
  gl_storage *st = &sl->st[k];
  memset(&sl->bits[k], 0, sizeof sl->bits[k]);
  gl_scalar_store(ct, &sl->bits[k], o->s);
  st->refcount = 1;
  st->data = &sl->bits[k];
  st->nbytes = sizeof sl->bits[k];
  st->device = gl_cpu();
  memset(view, 0, sizeof *view);
  view->storage = st;
  view->dtype = (uint8_t)ct;
  view->ndim = dst->ndim;
  view->size = dst->size;
  memcpy(view->shape, dst->shape, sizeof view->shape);   /* strides all 0 */
  o->arr = view;
}

gl_status gl_cpu_binary(gl_binop op, gl_dtype ct, const gl_array *dst, gl_operand a, gl_operand b) {
  brow_fn fn = binary_row(op, ct);
  if (fn == NULL)
    return gl_fail(GL_ENOTSUP, "%s is not defined for %s arrays", gl_binop_name[op], gl_dtypes[ct].name);
  if (a.arr && b.arr && one_small_row(dst, a.arr, b.arr)) {
    fn(gl_array_data(dst), 1, gl_array_data(a.arr), 1, gl_array_data(b.arr), 1, dst->size);
    return GL_OK;
  }
  scalar_slots sl;
  scalar_operand(&sl, 0, &a, ct, dst);
  scalar_operand(&sl, 1, &b, ct, dst);
  rowjob j;
  const gl_array *ops[3] = { dst, a.arr, b.arr };
  gl_iter_init(&j.it, 3, ops);
  j.base[0] = gl_array_data(dst);
  j.base[1] = gl_array_data(a.arr);
  j.base[2] = gl_array_data(b.arr);
  j.isz[0] = (int64_t)gl_array_itemsize(dst);
  j.isz[1] = j.isz[2] = (int64_t)gl_dtypes[ct].size;
  j.u = NULL;
  j.b = fn;
  if (j.it.rows > 0 && j.it.inner > 0) run_job(&j);
  return gl_interrupt_check();
}

/* ---- where: a select of bit patterns, by element width ----------------------------------- */

/* One row of where for elements of type T (the widths 1, 2, 4, 8). Rows whose dst and cond
** are contiguous and whose operands are contiguous or scalars (stride 0) get loops the
** compiler vectorises (a blend per vector; same-index reads and writes, so dst may be an
** operand); a scalar operand is read once. */
#define WHERE_ROW(T)                                                                             \
  static void where_##T(T *d, int64_t ds, const uint8_t *c, int64_t cs, const T *a, int64_t as,  \
                        const T *b, int64_t bs, int64_t n) {                                     \
    if (ds != 1 || cs != 1 || as < 0 || as > 1 || bs < 0 || bs > 1)                              \
      for (int64_t i = 0; i < n; i++) d[i * ds] = c[i * cs] ? a[i * as] : b[i * bs];            \
    else if (as == 1 && bs == 1)                                                                 \
      _Pragma("omp simd") for (int64_t i = 0; i < n; i++) d[i] = c[i] ? a[i] : b[i];            \
    else if (as == 1)                                                                            \
      { const T bv = *b; _Pragma("omp simd") for (int64_t i = 0; i < n; i++) d[i] = c[i] ? a[i] : bv; } \
    else if (bs == 1)                                                                            \
      { const T av = *a; _Pragma("omp simd") for (int64_t i = 0; i < n; i++) d[i] = c[i] ? av : b[i]; } \
    else                                                                                         \
      { const T av = *a, bv = *b; _Pragma("omp simd") for (int64_t i = 0; i < n; i++) d[i] = c[i] ? av : bv; } \
  }
WHERE_ROW(uint8_t)
WHERE_ROW(uint16_t)
WHERE_ROW(uint32_t)
WHERE_ROW(uint64_t)
WHERE_ROW(gl_complex128)

gl_status gl_cpu_where(const gl_array *dst, const gl_array *cond, gl_operand a, gl_operand b) {
  gl_dtype dt = (gl_dtype)dst->dtype;
  scalar_slots sl;
  scalar_operand(&sl, 0, &a, dt, dst);
  scalar_operand(&sl, 1, &b, dt, dst);
  gl_iter it;
  const gl_array *ops[4] = { dst, cond, a.arr, b.arr };
  gl_iter_init(&it, 4, ops);
  size_t sz = gl_dtypes[dt].size;
  char *d = gl_array_data(dst);
  const char *c = gl_array_data(cond), *pa = gl_array_data(a.arr), *pb = gl_array_data(b.arr);
  int nd = it.ndim - 1;
  int64_t s0 = it.strides[0][nd], s1 = it.strides[1][nd], s2 = it.strides[2][nd], s3 = it.strides[3][nd];
  /* rows in parallel on the free cores; a single long row in chunks, one per thread, and
  ** any row longer than GL_POLL_SPAN in chunks of about that, with a poll before each */
  int64_t total = it.rows * it.inner;
  int nt = total >= PAR_MIN ? gl_cpu_team_size(total) : 1;
  int64_t chunks = it.rows == 1 && nt > 1 ? nt : 1;
  if (it.inner / chunks > GL_POLL_SPAN) chunks = (it.inner + GL_POLL_SPAN - 1) / GL_POLL_SPAN;
  int64_t per = (it.inner + chunks - 1) / chunks;
  per = (per + 63) & ~(int64_t)63;
  #pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t job = 0; job < it.rows * chunks; job++) {
    int64_t r = job / chunks, lo = (job % chunks) * per, hi = lo + per < it.inner ? lo + per : it.inner;
    if (lo >= hi || gl_interrupted()) continue;
    int64_t o[4];
    gl_iter_row(&it, r, o);
    void *dp = d + (o[0] + lo * s0) * (int64_t)sz;
    const uint8_t *cp = (const uint8_t *)c + o[1] + lo * s1;
    const void *ap = pa + (o[2] + lo * s2) * (int64_t)sz, *bp = pb + (o[3] + lo * s3) * (int64_t)sz;
    switch (sz) {
      case 1: where_uint8_t(dp, s0, cp, s1, ap, s2, bp, s3, hi - lo); break;
      case 2: where_uint16_t(dp, s0, cp, s1, ap, s2, bp, s3, hi - lo); break;
      case 4: where_uint32_t(dp, s0, cp, s1, ap, s2, bp, s3, hi - lo); break;
      case 8: where_uint64_t(dp, s0, cp, s1, ap, s2, bp, s3, hi - lo); break;
      default: where_gl_complex128(dp, s0, cp, s1, ap, s2, bp, s3, hi - lo); break;
    }
  }
  if (nt > 1) gl_cpu_team_done(nt);
  return gl_interrupt_check();
}
