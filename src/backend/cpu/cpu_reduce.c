/*
** cpu_reduce.c — reductions (sum, prod, mean, var, max, min, argmax, argmin, all, any,
** norm, logsumexp) on the CPU: the plan and the two shapes it runs in. The lane kernels
** are in cpu_reduce_kernels.c, the compute types they read in cpu_reduce.h, the scans in
** cpu_scan.c.
**
** A reduction is planned on the axes it keeps (outputs) and the axes it reduces, each
** set sorted by stride and merged where contiguous (src/core/iter.h's idea), then run in
** one of two shapes:
**   inner: the reduced axes hold the fastest-moving elements: each output reduces a
**          vector with many independent lanes (the compiler vectorises them);
**   outer: a kept axis is the fastest: whole rows are accumulated into a row of outputs
**          (acc[j] += x[r, j]), vectorised along the row, never striding down columns.
** Sums are pairwise in both: over blocks of elements in the inner shape, over blocks of
** ROW_BLOCK rows in the outer one, so the error grows with log(n), not n. OpenMP splits
** independent outputs (or, for few outputs, the reduced range) across threads, on the
** cores that are free (gl_cpu_team_size).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu_reduce.h"

/* Rows added per block before the outer cascade. */
#define ROW_BLOCK 8
/* The most outputs one inner vector interleaves (a power of two dividing the lanes). */
#define MAX_INTERLEAVE 16

/* Is the stored dtype the CT itself (no conversion pass)? */
static bool is_native(gl_dtype t, gl_ct ct) {
  return (ct == CT_F32 && t == GL_FLOAT32) || (ct == CT_F64 && t == GL_FLOAT64) ||
         (ct == CT_I64 && t == GL_INT64);
}

/* ---- plans ------------------------------------------------------------------------ */

typedef gl_rdim rdim;   /* extent, src and dst strides (core/iter.h) */

typedef struct rjob {
  gl_redop op;
  double param;
  gl_ct ct;                   /* compute type */
  gl_ct rct;                  /* CT of the finished values (ALL/ANY/ARG: int) */
  gl_dtype sdt, ddt;
  bool native;
  const char *src;
  char *dst;
  int64_t ssz, dsz;
  int np, nr;
  rdim kd[GL_MAXDIMS];        /* kept axes, outer to inner by stride */
  rdim rd[GL_MAXDIMS];        /* reduced axes, outer to inner by stride */
  int64_t M, K;
  gl_ct_load_fn load;         /* the source's elements as the CT */
  bool flip;                  /* uint64 compared as int64: the load flips the sign bit */
  int w;                      /* outputs interleaved in each inner vector (1: none) */
  int64_t wds;                /* their dst stride */
  int nt;
} rjob;

/* An odometer over dims d[0..n-1]: 'off' is the src offset of the current position. */
typedef struct odo { int64_t idx[GL_MAXDIMS]; int64_t off; } odo;

static void odo_next(odo *o, const rdim *d, int n) {
  for (int k = n - 1; k >= 0; k--) {
    o->off += d[k].ss;
    if (++o->idx[k] < d[k].n) return;
    o->off -= d[k].ss * d[k].n;
    o->idx[k] = 0;
  }
}

/* uint64 elements as int64s of the same order (the sign bit flipped), for max, min and the
** arg positions, which compare in the int64 CT; unflip undoes it in their values. */
static void load_u64_ordered(void *out_, const void *x_, int64_t s, int64_t n) {
  const uint64_t *x = x_;
  int64_t *out = out_;
  for (int64_t i = 0; i < n; i++) out[i] = (int64_t)(x[i * s] ^ ((uint64_t)1 << 63));
}

static void unflip(const rjob *j, rval *v, int64_t n) {
  if (!j->flip || j->op == GL_R_ARGMAX || j->op == GL_R_ARGMIN) return;
  for (int64_t i = 0; i < n; i++) v[i].i = (int64_t)((uint64_t)v[i].i ^ ((uint64_t)1 << 63));
}

/* ---- the inner shape: one output reduces a (strided) vector, or rows of them ----- */

static const rdim one_elem = { 1, 1, 0 };

/* Runs kernel kid over n elements at x (stride s, source dtype), converting in chunks when
** the storage is not the CT. A poll for a stop every GL_POLL_SPAN elements (a multiple of
** every block, so the sums' blocks and their cascade are the same as in one call). */
static void vec_any(const rjob *j, gl_rkernel kid, kstate *st, const char *x, int64_t s, int64_t n,
                    double a, double p) {
  if (j->native) {
    for (int64_t i = 0; i < n && !gl_interrupted(); i += GL_POLL_SPAN)
      gl_rk_vec(j->ct, kid, st, x + i * s * j->ssz, s, n - i < GL_POLL_SPAN ? n - i : GL_POLL_SPAN, a, p);
    return;
  }
  ctbuf buf;
  gl_ct_load_fn load = j->load;
  for (int64_t i = 0; i < n; i += CHUNK) {
    if (i % GL_POLL_SPAN == 0 && gl_interrupted()) return;
    int64_t m = n - i < CHUNK ? n - i : CHUNK;
    load(&buf, x + i * s * j->ssz, s, m);
    gl_rk_vec(j->ct, kid, st, &buf, 1, m, a, p);
  }
}

/* Work units of the reduced region: elements of the one vector (nr <= 1), or its rows. */
static int64_t region_units(const rjob *j) {
  if (j->nr <= 1) return j->nr ? j->rd[0].n : 1;
  return j->K * j->w / j->rd[j->nr - 1].n;    /* an interleaved vector holds w outputs' */
}

static void region(const rjob *j, gl_rkernel kid, kstate *st, const char *base, double a, double p,
                   int64_t lo, int64_t hi) {
  const rdim *in = j->nr ? &j->rd[j->nr - 1] : &one_elem;
  if (j->nr <= 1) {
    vec_any(j, kid, st, base + lo * in->ss * j->ssz, in->ss, hi - lo, a, p);
    return;
  }
  for (int64_t r = lo; r < hi && !gl_interrupted(); r++) {
    int64_t so, unused;
    gl_rdims_offset(j->rd, j->nr - 1, r, &so, &unused);
    vec_any(j, kid, st, base + so * j->ssz, in->ss, in->n, a, p);
  }
}

static bool rv_isnan(rval v, gl_ct ct) { return ct != CT_I64 && v.f != v.f; }

/* Combines per-thread partials part[t * w + q] (t < n) of kernel 'kid' into res[q], q < w. */
static void combine(gl_rkernel kid, gl_ct ct, const rval *part, int n, int w, rval *res) {
  for (int q = 0; q < w; q++) {
    rval r = part[q];
    for (int t = 1; t < n; t++) {
      rval v = part[t * w + q];
      if (gl_rk_is_sum(kid)) {
        if (ct == CT_I64) r.i = (int64_t)((uint64_t)r.i + (uint64_t)v.i);
        else r.f += v.f;
      } else if (kid == K_PROD) {
        if (ct == CT_I64) r.i = (int64_t)((uint64_t)r.i * (uint64_t)v.i);
        else r.f *= v.f;
      } else if (kid == K_ALL) {
        r.i = r.i && v.i;
      } else if (kid == K_ANY) {
        r.i = r.i || v.i;
      } else {
        bool max = kid == K_MAX || kid == K_MAXABS;
        if (rv_isnan(r, ct)) continue;
        if (rv_isnan(v, ct)) { r = v; continue; }
        if (ct == CT_I64) r.i = (max ? v.i > r.i : v.i < r.i) ? v.i : r.i;
        else r.f = (max ? v.f > r.f : v.f < r.f) ? v.f : r.f;
      }
    }
    res[q] = r;
  }
}

/* One pass of kernel 'kid' over the reduced region at 'base' into res[0..j->w); with 'par'
** the region is split among threads and the partials combined. */
static void pass(const rjob *j, gl_rkernel kid, const char *base, double a, double p, bool par, rval *res) {
  int64_t units = region_units(j);
  if (!par || units < 2) {
    kstate st;
    gl_rk_init(j->ct, kid, &st);
    region(j, kid, &st, base, a, p, 0, units);
    gl_rk_fin(j->ct, kid, &st, j->w, res);
    return;
  }
  rval part[j->nt * j->w];
  int used = 1;
#ifdef _OPENMP
  #pragma omp parallel num_threads(j->nt)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    /* element ranges stay multiples of the conversion chunk (and so of every block) */
    int64_t grain = j->nr <= 1 ? CHUNK : 1;
    int64_t per = ((units + nt - 1) / nt + grain - 1) / grain * grain;
    int64_t lo = t * per, hi = lo + per < units ? lo + per : units;
    kstate st;
    gl_rk_init(j->ct, kid, &st);
    if (lo < hi) region(j, kid, &st, base, a, p, lo, hi);
    gl_rk_fin(j->ct, kid, &st, j->w, part + t * j->w);
    if (t == 0) used = nt;
  }
  gl_cpu_team_done(used);
#else
  {
    kstate st;
    gl_rk_init(j->ct, kid, &st);
    region(j, kid, &st, base, a, p, 0, units);
    gl_rk_fin(j->ct, kid, &st, j->w, part);
  }
#endif
  combine(kid, j->ct, part, used, j->w, res);
}

/* The value of a pass of one output (j->w == 1). */
static rval pass1(const rjob *j, gl_rkernel kid, const char *base, double a, double p, bool par) {
  rval r;
  pass(j, kid, base, a, p, par, &r);
  return r;
}

/* The index of the first element equal to m in the (one-axis) region at base. */
static int64_t find_first(const rjob *j, const char *base, rval m) {
  if (j->nr == 0) return 0;
  const rdim *in = &j->rd[0];
  if (j->native) {
    for (int64_t i = 0; i < in->n && !gl_interrupted(); i += GL_POLL_SPAN) {
      int64_t k = gl_rk_find(j->ct, base + i * in->ss * j->ssz, in->ss, in->n - i < GL_POLL_SPAN ? in->n - i : GL_POLL_SPAN, m);
      if (k >= 0) return i + k;
    }
    return 0;
  }
  ctbuf buf;
  gl_ct_load_fn load = j->load;
  for (int64_t i = 0; i < in->n; i += CHUNK) {
    if (i % GL_POLL_SPAN == 0 && gl_interrupted()) return 0;
    int64_t n = in->n - i < CHUNK ? in->n - i : CHUNK;
    load(&buf, base + i * in->ss * j->ssz, in->ss, n);
    int64_t k = gl_rk_find(j->ct, &buf, 1, n, m);
    if (k >= 0) return i + k;
  }
  return 0;
}

/* Rounds an intermediate to the CT, as if it had been computed there. */
static double rnd(const rjob *j, double v) { return j->ct == CT_F32 ? (double)(float)v : v; }

static double var_divisor(const rjob *j) {
  double d = (double)j->K - j->param;
  return d > 0 ? d : 0;
}

static void norm_values(const rjob *j, const char *base, bool par, rval *r) {
  double p = j->param;
  if (p == 2) {
    pass(j, K_SUMSQ, base, 0, 0, par, r);
    for (int q = 0; q < j->w; q++) r[q].f = rnd(j, sqrt(r[q].f));
  } else if (p == 1) {
    pass(j, K_SUMABS, base, 0, 0, par, r);
  } else if (isinf(p)) {
    pass(j, p > 0 ? K_MAXABS : K_MINABS, base, 0, 0, par, r);
  } else if (p == 0) {
    pass(j, K_SUMNZ, base, 0, 0, par, r);
  } else {
    pass(j, K_SUMPOW, base, 0, p, par, r);
    for (int q = 0; q < j->w; q++) r[q].f = rnd(j, pow(r[q].f, 1.0 / p));
  }
}

/* The finished values of the j->w outputs whose reduced region starts at base (var,
** logsumexp and the arg positions have one output a region: their passes take a parameter
** of the output, or search it). */
static void output_values(const rjob *j, const char *base, bool par, rval *r) {
  double K = (double)j->K;
  switch (j->op) {
    case GL_R_SUM: pass(j, K_SUM, base, 0, 0, par, r); return;
    case GL_R_PROD: pass(j, K_PROD, base, 0, 0, par, r); return;
    case GL_R_MAX: pass(j, K_MAX, base, 0, 0, par, r); return;
    case GL_R_MIN: pass(j, K_MIN, base, 0, 0, par, r); return;
    case GL_R_ALL: pass(j, K_ALL, base, 0, 0, par, r); return;
    case GL_R_ANY: pass(j, K_ANY, base, 0, 0, par, r); return;
    case GL_R_MEAN:
      pass(j, K_SUM, base, 0, 0, par, r);
      for (int q = 0; q < j->w; q++) r[q].f = rnd(j, r[q].f / K);
      return;
    case GL_R_VAR: {
      double mean = rnd(j, pass1(j, K_SUM, base, 0, 0, par).f / K);
      r->f = rnd(j, pass1(j, K_SUMDEV, base, mean, 0, par).f / var_divisor(j));
      return;
    }
    case GL_R_NORM: norm_values(j, base, par, r); return;
    case GL_R_LOGSUMEXP: {
      double m = pass1(j, K_MAX, base, 0, 0, par).f;
      double shift = isfinite(m) ? m : 0;       /* scipy: a non-finite max shifts by 0 */
      r->f = rnd(j, log(pass1(j, K_SUMEXP, base, shift, 0, par).f) + shift);
      return;
    }
    case GL_R_ARGMAX: case GL_R_ARGMIN: {
      rval m = pass1(j, j->op == GL_R_ARGMAX ? K_MAX : K_MIN, base, 0, 0, par);
      r->i = find_first(j, base, m);
      return;
    }
    default:
      r->i = 0;
      return;
  }
}

static void inner_output(const rjob *j, int64_t o, bool par) {
  int64_t so, dof;
  rval v[MAX_INTERLEAVE];
  gl_rdims_offset(j->kd, j->np, o, &so, &dof);
  output_values(j, j->src + so * j->ssz, par, v);
  unflip(j, v, j->w);
  gl_rval_stores[j->ddt](j->dst + dof * j->dsz, j->wds, v, j->w, j->rct == CT_I64);
}

static void run_inner(const rjob *j) {
  /* outputs are shared among threads when there are enough of them to balance;
  ** otherwise each output's own range is split */
  bool big = j->nt > 1;
  if (big && j->M >= 4 * j->nt) {
    #pragma omp parallel for schedule(static) num_threads(j->nt)
    for (int64_t o = 0; o < j->M; o++) if (!gl_interrupted()) inner_output(j, o, false);
    gl_cpu_team_done(j->nt);
    return;
  }
  for (int64_t o = 0; o < j->M && !gl_interrupted(); o++) inner_output(j, o, big);
}

/* ---- the outer shape: rows of the fastest kept axis accumulate into a row ----------- */

typedef struct ows {
  unsigned char *mem;
  void *lv[66];               /* cascade levels + the block being summed (swapped around) */
  void *acc, *aux, *buf;      /* ROW_W each (8 bytes per element) */
  int64_t *idx;
  rval *rv;
  int nlev;
} ows;

static bool ows_init(ows *w, int64_t K) {
  int64_t blocks = (K + ROW_BLOCK - 1) / ROW_BLOCK;
  int nlev = 1;
  while (((int64_t)1 << (nlev - 1)) < blocks && nlev < 64) nlev++;
  size_t row = (size_t)ROW_W * 8;
  w->mem = malloc(row * (size_t)(nlev + 1 + 5));
  if (w->mem == NULL) return false;
  w->nlev = nlev;
  for (int k = 0; k <= nlev; k++) w->lv[k] = w->mem + row * (size_t)k;
  unsigned char *p = w->mem + row * (size_t)(nlev + 1);
  w->acc = p;
  w->aux = p + row;
  w->buf = p + 2 * row;
  w->idx = (int64_t *)(void *)(p + 3 * row);
  w->rv = (rval *)(void *)(p + 4 * row);
  return true;
}

/* The row at offset 'off' (elements) of x as CT: in place when native, else converted. */
static const void *row_ct(const rjob *j, const ows *w, const char *x, int64_t off, int64_t s,
                          int64_t n, int64_t *stride) {
  if (j->native) { *stride = s; return x + off * j->ssz; }
  j->load(w->buf, x + off * j->ssz, s, n);
  *stride = 1;
  return w->buf;
}

/* A walk over the rows of the reduced region (the outer shape): row r starts at src offset
** o.off. */
typedef struct rowwalk { odo o; int64_t r; } rowwalk;

/* The walk's next row (n elements, stride s, at x) as CT with stride *rs, and its number
** *r; NULL after the last row, or when a stop was asked for. */
static const void *next_row(const rjob *j, ows *w, rowwalk *rw, const char *x, int64_t s, int64_t n,
                            int64_t *r, int64_t *rs) {
  if (rw->r > 0) odo_next(&rw->o, j->rd, j->nr);
  if (rw->r >= j->K || (rw->r % ROW_POLL == 0 && rw->r > 0 && gl_interrupted())) return NULL;
  *r = rw->r++;
  return row_ct(j, w, x, rw->o.off, s, n, rs);
}

/* Sum of a map over all rows of the reduced region into w->rv[0..n-1], pairwise over
** blocks of ROW_BLOCK rows. */
static void outer_sum(const rjob *j, ows *w, gl_rkernel kid, const char *x, int64_t s, int64_t n,
                      const void *aux, double p) {
  void *t = w->lv[w->nlev];                 /* the block being summed */
  uint64_t blocks = 0;
  rowwalk rw = { 0 };
  int64_t r, rs;
  for (const void *row; (row = next_row(j, w, &rw, x, s, n, &r, &rs)) != NULL;) {
    gl_rk_row(j->ct, kid, t, row, rs, n, aux, p, r % ROW_BLOCK == 0);
    if (r % ROW_BLOCK == ROW_BLOCK - 1 || r == j->K - 1) {
      int lev = 0;
      for (; (blocks >> lev) & 1; lev++) gl_rk_vadd(j->ct, t, w->lv[lev], n);
      void *tmp = w->lv[lev];
      w->lv[lev] = t;
      t = tmp;
      blocks++;
    }
  }
  w->lv[w->nlev] = t;
  bool have = false;
  for (int lev = 0; lev < 64; lev++) {
    if (!((blocks >> lev) & 1)) continue;
    if (!have) memcpy(w->acc, w->lv[lev], (size_t)n * gl_ct_size(j->ct));
    else gl_rk_vadd(j->ct, w->acc, w->lv[lev], n);
    have = true;
  }
  gl_rk_to_rvals(j->ct, w->rv, w->acc, n);
}

/* A non-sum kernel (prod, max, min, all, any) over all rows into w->rv. */
static void outer_rows(const rjob *j, ows *w, gl_rkernel kid, const char *x, int64_t s, int64_t n) {
  rowwalk rw = { 0 };
  int64_t r, rs;
  for (const void *row; (row = next_row(j, w, &rw, x, s, n, &r, &rs)) != NULL;)
    gl_rk_row(j->ct, kid, w->acc, row, rs, n, NULL, 0, r == 0);
  if (kid == K_ALL || kid == K_ANY) {
    const uint8_t *b = w->acc;
    for (int64_t i = 0; i < n; i++) w->rv[i].i = b[i];
  } else {
    gl_rk_to_rvals(j->ct, w->rv, w->acc, n);
  }
}

/* Finished values -> a CT row (parameters of a second pass). */
static void rv_to_ct(const rjob *j, void *dst, const rval *r, int64_t n) {
  if (j->ct == CT_F32) for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = (float)r[i].f;
  else for (int64_t i = 0; i < n; i++) ((double *)dst)[i] = r[i].f;
}

static void outer_norm(const rjob *j, ows *w, const char *x, int64_t s, int64_t n) {
  double p = j->param;
  if (p == 2) {
    outer_sum(j, w, K_SUMSQ, x, s, n, NULL, 0);
    for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, sqrt(w->rv[i].f));
  } else if (p == 1) {
    outer_sum(j, w, K_SUMABS, x, s, n, NULL, 0);
  } else if (isinf(p)) {
    outer_rows(j, w, p > 0 ? K_MAXABS : K_MINABS, x, s, n);
  } else if (p == 0) {
    outer_sum(j, w, K_SUMNZ, x, s, n, NULL, 0);
  } else {
    outer_sum(j, w, K_SUMPOW, x, s, n, NULL, p);
    for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, pow(w->rv[i].f, 1.0 / p));
  }
}

/* Item 'item' of the outer shape: a chunk of cw outputs along kept axis jk, at one
** position of the other kept axes. */
static void outer_item(const rjob *j, ows *w, int jk, int64_t cw, int64_t item) {
  const rdim *jd = &j->kd[jk];
  int64_t nchunk = (jd->n + cw - 1) / cw;
  int64_t rest = item / nchunk, c0 = item % nchunk * cw;
  int64_t n = jd->n - c0 < cw ? jd->n - c0 : cw;
  rdim others[GL_MAXDIMS];
  int no = 0;
  for (int k = 0; k < j->np; k++) if (k != jk) others[no++] = j->kd[k];
  int64_t so, dof;
  gl_rdims_offset(others, no, rest, &so, &dof);
  const char *x = j->src + (so + c0 * jd->ss) * j->ssz;
  char *d = j->dst + (dof + c0 * jd->ds) * j->dsz;
  int64_t s = jd->ss;
  double K = (double)j->K;
  switch (j->op) {
    case GL_R_SUM: outer_sum(j, w, K_SUM, x, s, n, NULL, 0); break;
    case GL_R_PROD: outer_rows(j, w, K_PROD, x, s, n); break;
    case GL_R_MAX: outer_rows(j, w, K_MAX, x, s, n); break;
    case GL_R_MIN: outer_rows(j, w, K_MIN, x, s, n); break;
    case GL_R_ALL: outer_rows(j, w, K_ALL, x, s, n); break;
    case GL_R_ANY: outer_rows(j, w, K_ANY, x, s, n); break;
    case GL_R_MEAN:
      outer_sum(j, w, K_SUM, x, s, n, NULL, 0);
      for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, w->rv[i].f / K);
      break;
    case GL_R_VAR:
      outer_sum(j, w, K_SUM, x, s, n, NULL, 0);
      for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, w->rv[i].f / K);
      rv_to_ct(j, w->aux, w->rv, n);
      outer_sum(j, w, K_SUMDEV, x, s, n, w->aux, 0);
      for (int64_t i = 0; i < n; i++) w->rv[i].f = rnd(j, w->rv[i].f / var_divisor(j));
      break;
    case GL_R_NORM: outer_norm(j, w, x, s, n); break;
    case GL_R_LOGSUMEXP: {
      outer_rows(j, w, K_MAX, x, s, n);
      for (int64_t i = 0; i < n; i++) if (!isfinite(w->rv[i].f)) w->rv[i].f = 0;
      rv_to_ct(j, w->aux, w->rv, n);
      outer_sum(j, w, K_SUMEXP, x, s, n, w->aux, 0);
      for (int64_t i = 0; i < n; i++) {
        double shift = j->ct == CT_F32 ? (double)((float *)w->aux)[i] : ((double *)w->aux)[i];
        w->rv[i].f = rnd(j, log(w->rv[i].f) + shift);
      }
      break;
    }
    case GL_R_ARGMAX: case GL_R_ARGMIN: {
      bool max = j->op == GL_R_ARGMAX;
      rowwalk rw = { 0 };
      int64_t r, rs;
      for (const void *row; (row = next_row(j, w, &rw, x, s, n, &r, &rs)) != NULL;)
        gl_rk_argrow(j->ct, max, w->acc, w->idx, row, rs, n, r, r == 0);
      for (int64_t i = 0; i < n; i++) w->rv[i].i = w->idx[i];
      break;
    }
    default: break;
  }
  unflip(j, w->rv, n);
  gl_rval_stores[j->ddt](d, jd->ds, w->rv, n, j->rct == CT_I64);
}

static gl_status run_outer(const rjob *j) {
  int jk = 0;                               /* the kept axis with the smallest stride */
  for (int k = 1; k < j->np; k++)
    if (llabs(j->kd[k].ss) <= llabs(j->kd[jk].ss)) jk = k;
  if (j->kd[jk].n < 16) {                   /* rows that narrow cost a call each: a long */
    int wide = -1;                          /* axis's rows instead, strided */
    for (int k = 0; k < j->np; k++)
      if (j->kd[k].n >= 64 && (wide < 0 || llabs(j->kd[k].ss) < llabs(j->kd[wide].ss))) wide = k;
    if (wide >= 0) jk = wide;
  }
  /* whole rows (up to ROW_W) stream best; narrower chunks when there would be fewer
  ** items than threads */
  int64_t W = j->kd[jk].n, cw = W < ROW_W ? W : ROW_W;
  bool big = j->nt > 1;
  if (big && j->M / W * ((W + cw - 1) / cw) < j->nt && W >= 512) {
    cw = (W + j->nt - 1) / j->nt;
    cw = (cw + 63) / 64 * 64;
  }
  int64_t items = j->M / W * ((W + cw - 1) / cw);
  bool par = big && items > 1;
  int failed = 0;
  #pragma omp parallel num_threads(par ? j->nt : 1) reduction(|: failed)
  {
    ows w;
    bool ok = ows_init(&w, j->K);
    failed = !ok;
    /* every thread meets the loop (a worksharing construct), even one without rows */
    #pragma omp for schedule(static)
    for (int64_t it = 0; it < items; it++) if (ok && !gl_interrupted()) outer_item(j, &w, jk, cw, it);
    if (ok) free(w.mem);
  }
  if (par) gl_cpu_team_done(j->nt);
  return failed ? gl_fail(GL_ENOMEM, "out of memory for a reduction's work rows") : gl_interrupt_check();
}

/* ---- interleaved outputs ------------------------------------------------------------- */

/* A narrow kept axis inside a run of reduced elements (the parts' axis of a complex array
** seen as real, the coordinates of an (n, 2) array summed over its rows): w outputs of
** stride 1, the reduced axis of stride w. Rows of w elements would cost the outer shape a
** call each; instead the run is one vector whose element i belongs to output i mod w, and
** the lane kernels keep each output in lanes of its own (gl_rk_fin). Only the kernels
** that take no per-output parameter: sums, means, products, max/min, all/any, norms. */
static void interleave(rjob *j) {
  bool eligible = j->op == GL_R_SUM || j->op == GL_R_MEAN || j->op == GL_R_PROD || j->op == GL_R_MAX ||
                  j->op == GL_R_MIN || j->op == GL_R_ALL || j->op == GL_R_ANY || j->op == GL_R_NORM;
  if (!eligible || j->np == 0 || j->nr == 0 || j->K == 0) return;
  const rdim *k = &j->kd[j->np - 1];          /* the smallest kept stride (sorted last) */
  rdim *r = &j->rd[j->nr - 1];
  int64_t w = k->n;
  if (k->ss != 1 || w < 2 || w > MAX_INTERLEAVE || (w & (w - 1)) != 0 || r->ss != w) return;
  if (j->np > 1 && r->n * w < 64) return;       /* short runs: the outer shape's rows */
  j->w = (int)w;
  j->wds = k->ds;
  r->n *= w;
  r->ss = 1;
  j->np--;
  j->M /= w;
}

/* ---- entry points ------------------------------------------------------------------ */

static bool is_arg(gl_redop op) { return op == GL_R_ARGMAX || op == GL_R_ARGMIN; }

/* An integer or bool result is made only by the ops that compute in int64 (sum, prod) or in
** the source's own type (max, min, argmax, argmin, all, any); a complex one only by those of
** cpu_reduce_complex.c (the ops layer reduces the rest over the parts). */
bool gl_cpu_has_reduce(gl_redop op, gl_dtype dt) {
  if ((unsigned)op >= GL_NREDOP || (unsigned)dt >= GL_NDTYPE) return false;
  if (gl_dtype_is_complex(dt)) return gl_cpu_has_reduce_complex(op);
  return gl_dtype_is_float(dt) || !(op == GL_R_MEAN || op == GL_R_VAR || op == GL_R_NORM || op == GL_R_LOGSUMEXP);
}

gl_status gl_cpu_reduce(gl_redop op, const gl_array *dst, const gl_array *src, double param) {
  if (dst->ndim != src->ndim)
    return gl_fail(GL_EINVAL, "reduce: dst has %d dims, src %d", dst->ndim, src->ndim);
  if (gl_dtype_is_complex((gl_dtype)src->dtype)) return gl_cpu_reduce_complex(op, dst, src);
  rjob j;
  memset(&j, 0, sizeof j);
  j.op = op;
  j.param = param;
  j.sdt = (gl_dtype)src->dtype;
  j.ddt = (gl_dtype)dst->dtype;
  /* the compute type: max/min/arg/all/any read the source's own type; the rest compute
  ** in the result's */
  bool by_src = op == GL_R_MAX || op == GL_R_MIN || is_arg(op) || op == GL_R_ALL || op == GL_R_ANY;
  j.ct = gl_ct_of(by_src ? j.sdt : j.ddt);
  j.rct = (is_arg(op) || op == GL_R_ALL || op == GL_R_ANY) ? CT_I64 : j.ct;
  if (!gl_cpu_has_reduce(op, j.ddt))
    return gl_fail(GL_ENOTSUP, "reduce: an integer result needs sum or prod, not op %d", (int)op);
  j.native = is_native(j.sdt, j.ct);
  j.flip = j.sdt == GL_UINT64 && j.ct == CT_I64 && by_src && op != GL_R_ALL && op != GL_R_ANY;
  j.load = j.flip ? load_u64_ordered : gl_ct_loads[j.sdt][j.ct];
  j.src = gl_array_data(src);
  j.dst = gl_array_data(dst);
  j.ssz = (int64_t)gl_array_itemsize(src);
  j.dsz = (int64_t)gl_array_itemsize(dst);
  int bad = gl_raxes_split(dst, src, j.kd, &j.np, &j.M, j.rd, &j.nr, &j.K);
  if (bad >= 0)
    return gl_fail(GL_EINVAL, "reduce: dst extent %lld on axis %d does not match src extent %lld",
                   (long long)dst->shape[bad], bad, (long long)src->shape[bad]);
  if (j.M == 0) return GL_OK;
  if (is_arg(op) && j.nr > 1) return gl_fail(GL_EINVAL, "reduce: argmax/argmin take one axis");
  if (j.K == 0 && (by_src && op != GL_R_ALL && op != GL_R_ANY))
    return gl_fail(GL_EINVAL, "zero-size array to a reduction which has no identity");
  j.np = gl_rdims_sort_merge(j.kd, j.np, true);
  j.nr = gl_rdims_sort_merge(j.rd, j.nr, false);
  if (j.K == 0) { j.nr = 1; j.rd[0] = (rdim){ 0, 1, 0 }; }
  j.w = 1;
  j.wds = 1;
  interleave(&j);
  j.nt = gl_cpu_team_size(j.M * j.w * (j.K > 0 ? j.K : 1));
  bool inner;
  if (j.np == 0 || j.K == 0 || j.w > 1) inner = true;
  else if (j.nr == 0) inner = false;
  else {
    const rdim *r = &j.rd[j.nr - 1];
    int64_t ks = INT64_MAX, kn = 0;
    for (int k = 0; k < j.np; k++)
      if (llabs(j.kd[k].ss) <= ks) { ks = llabs(j.kd[k].ss); kn = j.kd[k].n; }
    inner = llabs(r->ss) < ks && (r->n >= 64 || r->n >= kn);
  }
  if (inner) { run_inner(&j); return gl_interrupt_check(); }
  return run_outer(&j);
}
