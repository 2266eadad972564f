/*
** cpu_scan.c — inclusive scans (cumsum, cumprod) along an axis on the CPU.
**
** Elements are read in their compute type (cpu_reduce.h) through a conversion buffer of
** CHUNK elements and stored back converted. Two shapes: lines (the scanned axis is the
** innermost of the walk: each line is scanned in chunks from a carry), and rows (a kept
** axis is faster than the scanned one: whole rows are added into a row of running values,
** vectorised along the row). OpenMP splits the lines, or the rows' chunks, across threads.
*/
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu_reduce.h"

/* The loops below take the CT and the op as constants. */
#define SCAN_INLINE static inline __attribute__((always_inline))

/* The running value of a line between its chunks. */
typedef union scan_carry { float f; double d; uint64_t u; } scan_carry;

/* buf[i] = the running value, from and into *carry. */
SCAN_INLINE void scan_line(gl_ct ct, bool prod, ctbuf *buf, int64_t n, scan_carry *carry) {
  if (ct == CT_F32) {
    float c = carry->f;
    for (int64_t i = 0; i < n; i++) buf->f[i] = c = prod ? c * buf->f[i] : c + buf->f[i];
    carry->f = c;
  } else if (ct == CT_F64) {
    double c = carry->d;
    for (int64_t i = 0; i < n; i++) buf->d[i] = c = prod ? c * buf->d[i] : c + buf->d[i];
    carry->d = c;
  } else {
    uint64_t c = carry->u;
    for (int64_t i = 0; i < n; i++) buf->u[i] = c = prod ? c * buf->u[i] : c + buf->u[i];
    carry->u = c;
  }
}

/* acc[j] = x[j] (first) or acc[j] (op) x[j], for j < w. */
SCAN_INLINE void scan_row(gl_ct ct, bool prod, ctbuf *acc, const ctbuf *x, int64_t w, bool first) {
  if (first) memcpy(acc, x, (size_t)w * gl_ct_size(ct));
  else if (ct == CT_F32) for (int64_t j = 0; j < w; j++) acc->f[j] = prod ? acc->f[j] * x->f[j] : acc->f[j] + x->f[j];
  else if (ct == CT_F64) for (int64_t j = 0; j < w; j++) acc->d[j] = prod ? acc->d[j] * x->d[j] : acc->d[j] + x->d[j];
  else for (int64_t j = 0; j < w; j++) acc->u[j] = prod ? acc->u[j] * x->u[j] : acc->u[j] + x->u[j];
}

/* The instances, one per (CT, product or sum); X(C, P, A) gets A, the call's arguments. */
#define SCAN_LIST(X, A) X(F32, 0, A) X(F32, 1, A) X(F64, 0, A) X(F64, 1, A) X(I64, 0, A) X(I64, 1, A)

static void scan_line_any(gl_ct ct, bool prod, ctbuf *buf, int64_t n, scan_carry *carry) {
#define SCAN_LINE_CASE(C, P, A) case CT_##C * 2 + P: scan_line(CT_##C, P, GL_DT_UNPAREN_ A); return;
  switch (ct * 2 + prod) { SCAN_LIST(SCAN_LINE_CASE, (buf, n, carry)) default: return; }
}

static void scan_row_any(gl_ct ct, bool prod, ctbuf *acc, const ctbuf *x, int64_t w, bool first) {
#define SCAN_ROW_CASE(C, P, A) case CT_##C * 2 + P: scan_row(CT_##C, P, GL_DT_UNPAREN_ A); return;
  switch (ct * 2 + prod) { SCAN_LIST(SCAN_ROW_CASE, (acc, x, w, first)) default: return; }
}

gl_status gl_cpu_scan(gl_redop op, const gl_array *dst, const gl_array *src, int axis) {
  if (op != GL_R_SUM && op != GL_R_PROD) return gl_fail(GL_ENOTSUP, "scan: op %d is not a scan", (int)op);
  if (dst->size == 0) return GL_OK;
  if (gl_dtype_is_complex((gl_dtype)src->dtype)) return gl_cpu_scan_complex(op, dst, src, axis);
  gl_dtype sdt = (gl_dtype)src->dtype, ddt = (gl_dtype)dst->dtype;
  gl_ct ct = gl_ct_of(ddt);
  bool isprod = op == GL_R_PROD;
  int64_t K = src->shape[axis], sa = src->strides[axis], da = dst->strides[axis];
  int64_t ssz = (int64_t)gl_array_itemsize(src), dsz = (int64_t)gl_array_itemsize(dst);
  gl_rdim d[GL_MAXDIMS];
  int n = 0;
  for (int k = 0; k < src->ndim; k++)
    if (k != axis && src->shape[k] != 1) d[n++] = (gl_rdim){ src->shape[k], src->strides[k], dst->strides[k] };
  n = gl_rdims_sort_merge(d, n, true);
  /* rows (the scan axis outside a contiguous one) or lines (the scan axis innermost) */
  bool rows = n > 0 && llabs(d[n - 1].ss) < llabs(sa) && d[n - 1].n > 1;
  gl_rdim in = rows ? d[n - 1] : (gl_rdim){ 1, 1, 1 };
  int nout = rows ? n - 1 : n;
  int64_t outer = 1;
  for (int k = 0; k < nout; k++) outer *= d[k].n;
  int64_t nchunk = (in.n + CHUNK - 1) / CHUNK, items = outer * nchunk;
  const char *sb = gl_array_data(src);
  char *db = gl_array_data(dst);
  gl_ct_load_fn load = gl_ct_loads[sdt][ct];
  gl_ct_store_fn store = gl_ct_stores[ddt][ct];
  int nt = gl_cpu_team_size(dst->size);
  bool par = nt > 1 && items > 1;
  #pragma omp parallel for schedule(static) num_threads(par ? nt : 1)
  for (int64_t it = 0; it < items; it++) {
    if (gl_interrupted()) continue;
    ctbuf buf, acc;
    int64_t so, dof, c0 = it % nchunk * CHUNK;
    gl_rdims_offset(d, nout, it / nchunk, &so, &dof);
    const char *x = sb + (so + c0 * in.ss) * ssz;
    char *y = db + (dof + c0 * in.ds) * dsz;
    if (rows) {
      int64_t w = in.n - c0 < CHUNK ? in.n - c0 : CHUNK;
      for (int64_t k = 0; k < K; k++) {
        if (k % ROW_POLL == 0 && k > 0 && gl_interrupted()) break;
        load(&buf, x + k * sa * ssz, in.ss, w);
        scan_row_any(ct, isprod, &acc, &buf, w, k == 0);
        store(y + k * da * dsz, in.ds, &acc, w);
      }
    } else {
      scan_carry carry;                     /* the identity in the CT */
      if (ct == CT_F32) carry.f = isprod ? 1.0f : 0.0f;
      else if (ct == CT_F64) carry.d = isprod ? 1.0 : 0.0;
      else carry.u = isprod ? 1 : 0;
      for (int64_t k = 0; k < K; k += CHUNK) {
        if (k % GL_POLL_SPAN == 0 && k > 0 && gl_interrupted()) break;
        int64_t m = K - k < CHUNK ? K - k : CHUNK;
        load(&buf, x + k * sa * ssz, sa, m);
        scan_line_any(ct, isprod, &buf, m, &carry);
        store(y + k * da * dsz, da, &buf, m);
      }
    }
  }
  if (par) gl_cpu_team_done(nt);
  return gl_interrupt_check();
}
