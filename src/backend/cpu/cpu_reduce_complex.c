/*
** cpu_reduce_complex.c — the complex reductions whose parts cannot be reduced apart (the
** ops layer, src/ops/reduce.c, reduces sums, means, variances, 2-norms and any over the
** parts with the real kernels): prod, max, min, argmax and argmin in NumPy's order, and
** cumprod.
**
** NumPy orders complex numbers by their real parts, then by their imaginary ones; an
** element with a NaN in either part wins a max or a min (the first such one, as a real NaN
** does) and argmax/argmin give its position; ties keep the first position. Products run
** in the result's precision: each step computed in double and rounded to the parts' type
** (float for complex64). Each output walks its elements in C order; few outputs over many
** elements split them among threads and fold the threads' partials in order.
*/
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu_reduce.h"
#include "../../../kernels/complex.h"

/* Values in double (kernels/complex.h's gl_complex128), whatever the element's precision. */
typedef gl_cz cval;

static inline cval cload(gl_dtype dt, const char *p, int64_t i) {
  if (dt == GL_COMPLEX64) return gl_complex64_widen(((const gl_complex64 *)(const void *)p)[i]);
  return ((const gl_complex128 *)(const void *)p)[i];
}

static inline void cstore(gl_dtype dt, char *p, int64_t i, cval v) {
  if (dt == GL_COMPLEX64) ((gl_complex64 *)(void *)p)[i] = gl_complex128_narrow(v);
  else ((gl_complex128 *)(void *)p)[i] = v;
}

static inline bool cnan(cval v) { return v.re != v.re || v.im != v.im; }

/* v before w in NumPy's order, neither holding a NaN. */
static inline bool cbefore(cval v, cval w) { return v.re < w.re || (v.re == w.re && v.im < w.im); }

/* a * b, rounded to float parts with f32. */
static inline cval cmul(cval a, cval b, bool f32) {
  cval r = gl_complex128_mul(a, b);
  if (f32) { r.re = (double)(float)r.re; r.im = (double)(float)r.im; }
  return r;
}

/* A partial: the product, or the best value and its position (have: one was seen). */
typedef struct cpart { cval v; int64_t idx; bool have; } cpart;

/* acc takes v (at position i) when acc is empty, or v holds the first NaN, or v is
** strictly better; a NaN already taken stays. */
static inline void cpick(cpart *acc, cval v, int64_t i, bool max) {
  if (acc->have && (cnan(acc->v) || !(cnan(v) || (max ? cbefore(acc->v, v) : cbefore(v, acc->v))))) return;
  acc->v = v;
  acc->idx = i;
  acc->have = true;
}

typedef struct cjob {
  gl_redop op;
  gl_dtype sdt, ddt;
  bool f32;                        /* products rounded to complex64 */
  const char *src;
  char *dst;
  int nk, nr;
  gl_rdim kd[GL_MAXDIMS], rd[GL_MAXDIMS];   /* kept and reduced axes, in C order */
  int64_t M, K;
} cjob;

static bool is_prod(const cjob *j) { return j->op == GL_R_PROD; }
static bool is_max(const cjob *j) { return j->op == GL_R_MAX || j->op == GL_R_ARGMAX; }

static cpart empty(const cjob *j) {
  cpart p = { { 1, 0 }, 0, is_prod(j) };         /* a product starts at 1 */
  return p;
}

/* Elements lo..hi-1 (C order over the reduced axes) of the region at base folded into acc. */
static void fold_range(const cjob *j, const char *base, int64_t lo, int64_t hi, cpart *acc) {
  if (lo >= hi) return;                          /* (an empty axis would divide by 0 below) */
  int64_t idx[GL_MAXDIMS], off = 0, rest = lo;
  for (int d = j->nr - 1; d >= 0; d--) {
    idx[d] = rest % j->rd[d].n;
    rest /= j->rd[d].n;
    off += idx[d] * j->rd[d].ss;
  }
  bool max = is_max(j);
  for (int64_t i = lo; i < hi; i++) {
    if ((i - lo) % GL_POLL_SPAN == GL_POLL_SPAN - 1 && gl_interrupted()) return;
    cval v = cload(j->sdt, base, off);
    if (is_prod(j)) acc->v = cmul(acc->v, v, j->f32);
    else cpick(acc, v, i, max);
    for (int d = j->nr - 1; d >= 0; d--) {     /* the next position */
      off += j->rd[d].ss;
      if (++idx[d] < j->rd[d].n) break;
      off -= j->rd[d].ss * j->rd[d].n;
      idx[d] = 0;
    }
  }
}

/* Later partial b folded into a. */
static void fold_part(const cjob *j, cpart *a, const cpart *b) {
  if (is_prod(j)) a->v = cmul(a->v, b->v, j->f32);
  else if (b->have) cpick(a, b->v, b->idx, is_max(j));
}

static void store(const cjob *j, int64_t dof, const cpart *p) {
  if (j->op == GL_R_ARGMAX || j->op == GL_R_ARGMIN) ((int64_t *)(void *)j->dst)[dof] = p->idx;
  else cstore(j->ddt, j->dst, dof, p->v);
}

/* Output o, its elements split among nt threads when nt > 1. */
static void one_output(const cjob *j, int64_t o, int nt) {
  int64_t so, dof;
  gl_rdims_offset(j->kd, j->nk, o, &so, &dof);
  const char *base = j->src + so * (int64_t)gl_dtypes[j->sdt].size;
  cpart acc = empty(j);
  if (nt <= 1) {
    fold_range(j, base, 0, j->K, &acc);
    store(j, dof, &acc);
    return;
  }
  cpart part[nt];
  int used = 1;
  #pragma omp parallel num_threads(nt)
  {
    int t = 0, n = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    n = omp_get_num_threads();
#endif
    part[t] = empty(j);
    fold_range(j, base, j->K * t / n, j->K * (t + 1) / n, &part[t]);
    if (t == 0) used = n;
  }
  for (int t = 0; t < used; t++) fold_part(j, &acc, &part[t]);
  store(j, dof, &acc);
}

bool gl_cpu_has_reduce_complex(gl_redop op) {
  return op == GL_R_PROD || op == GL_R_MAX || op == GL_R_MIN || op == GL_R_ARGMAX || op == GL_R_ARGMIN;
}

gl_status gl_cpu_reduce_complex(gl_redop op, const gl_array *dst, const gl_array *src) {
  if (!gl_cpu_has_reduce_complex(op))
    return gl_fail(GL_ENOTSUP, "reduce: %s of complex arrays has no kernel", gl_redop_name[op]);
  cjob j;
  memset(&j, 0, sizeof j);
  j.op = op;
  j.sdt = (gl_dtype)src->dtype;
  j.ddt = (gl_dtype)dst->dtype;
  j.f32 = j.ddt == GL_COMPLEX64;
  j.src = gl_array_data(src);
  j.dst = gl_array_data(dst);
  int bad = gl_raxes_split(dst, src, j.kd, &j.nk, &j.M, j.rd, &j.nr, &j.K);
  if (bad >= 0)
    return gl_fail(GL_EINVAL, "reduce: dst extent %lld on axis %d does not match src extent %lld",
                   (long long)dst->shape[bad], bad, (long long)src->shape[bad]);
  if (j.M == 0) return GL_OK;
  if (op != GL_R_PROD && j.K == 0) return gl_fail(GL_EINVAL, "zero-size array to a reduction which has no identity");
  int nt = gl_cpu_team_size(j.M * (j.K > 0 ? j.K : 1));
  if (nt > 1 && j.M >= nt) {
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t o = 0; o < j.M; o++) if (!gl_interrupted()) one_output(&j, o, 1);
  } else {
    for (int64_t o = 0; o < j.M && !gl_interrupted(); o++) one_output(&j, o, j.K >= GL_POLL_SPAN / 64 ? nt : 1);
  }
  gl_cpu_team_done(nt);
  return gl_interrupt_check();
}

/* cumprod along 'axis': each line (every other axis) a running product. */
gl_status gl_cpu_scan_complex(gl_redop op, const gl_array *dst, const gl_array *src, int axis) {
  if (op != GL_R_PROD) return gl_fail(GL_ENOTSUP, "scan: a complex cumsum is the parts' (not a kernel here)");
  gl_dtype sdt = (gl_dtype)src->dtype, ddt = (gl_dtype)dst->dtype;
  bool f32 = ddt == GL_COMPLEX64;
  int64_t K = src->shape[axis], sa = src->strides[axis], da = dst->strides[axis];
  gl_rdim d[GL_MAXDIMS];
  int n = 0;
  for (int k = 0; k < src->ndim; k++)
    if (k != axis && src->shape[k] != 1) d[n++] = (gl_rdim){ src->shape[k], src->strides[k], dst->strides[k] };
  int64_t lines = dst->size / (K > 0 ? K : 1);
  const char *sb = gl_array_data(src);
  char *db = gl_array_data(dst);
  int nt = gl_cpu_team_size(dst->size);
  #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && lines > 1)
  for (int64_t l = 0; l < lines; l++) {
    if (gl_interrupted()) continue;
    int64_t so, dof;
    gl_rdims_offset(d, n, l, &so, &dof);
    cval c = gl_cz_make(1, 0);
    for (int64_t k = 0; k < K; k++) {
      if (k % GL_POLL_SPAN == GL_POLL_SPAN - 1 && gl_interrupted()) break;
      c = cmul(c, cload(sdt, sb, so + k * sa), f32);
      cstore(ddt, db, dof + k * da, c);
    }
  }
  gl_cpu_team_done(nt);
  return gl_interrupt_check();
}
