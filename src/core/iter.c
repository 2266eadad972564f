/*
** iter.c — axis collapsing for strided loops.
*/
#include "iter.h"

void gl_iter_init(gl_iter *it, int nargs, const gl_array *const *arrays) {
  const gl_array *a0 = arrays[0];
  int n = 0;
  it->nargs = nargs;
  for (int d = 0; d < a0->ndim; d++) {
    if (a0->shape[d] == 1) continue;
    /* merge axis d into the previous kept axis when every operand steps evenly */
    bool merge = n > 0;
    for (int k = 0; k < nargs && merge; k++)
      merge = it->strides[k][n - 1] == arrays[k]->strides[d] * a0->shape[d];
    if (merge) {
      it->shape[n - 1] *= a0->shape[d];
      for (int k = 0; k < nargs; k++) it->strides[k][n - 1] = arrays[k]->strides[d];
    } else {
      it->shape[n] = a0->shape[d];
      for (int k = 0; k < nargs; k++) it->strides[k][n] = arrays[k]->strides[d];
      n++;
    }
  }
  if (n == 0) {                      /* 0-d or all size-1: one element */
    it->shape[0] = a0->size == 0 ? 0 : 1;
    for (int k = 0; k < nargs; k++) it->strides[k][0] = 1;
    n = 1;
  }
  for (int d = 0; d < n; d++)        /* an empty array has no rows at all */
    if (it->shape[d] == 0) { it->ndim = 1; it->shape[0] = 0; it->rows = 0; it->inner = 0; return; }
  it->ndim = n;
  it->inner = it->shape[n - 1];
  it->rows = 1;
  for (int d = 0; d < n - 1; d++) it->rows *= it->shape[d];
}

int gl_raxes_split(const gl_array *dst, const gl_array *src, gl_rdim *kd, int *nk, int64_t *M, gl_rdim *rd,
                   int *nr, int64_t *K) {
  *nk = *nr = 0;
  *M = *K = 1;
  for (int d = 0; d < src->ndim; d++) {
    int64_t n = src->shape[d];
    if (dst->shape[d] == n) {
      if (n == 1) continue;
      kd[(*nk)++] = (gl_rdim){ n, src->strides[d], dst->strides[d] };
      *M *= n;
    } else if (dst->shape[d] == 1) {
      rd[(*nr)++] = (gl_rdim){ n, src->strides[d], 0 };
      *K *= n;
    } else {
      return d;
    }
  }
  return -1;
}

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

int gl_rdims_sort_merge(gl_rdim *d, int n, bool withdst) {
  for (int i = 1; i < n; i++) {
    gl_rdim t = d[i];
    int k = i;
    while (k > 0 && iabs64(d[k - 1].ss) < iabs64(t.ss)) { d[k] = d[k - 1]; k--; }
    d[k] = t;
  }
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m > 0 && d[m - 1].ss == d[i].ss * d[i].n && (!withdst || d[m - 1].ds == d[i].ds * d[i].n)) {
      d[m - 1].n *= d[i].n;
      d[m - 1].ss = d[i].ss;
      d[m - 1].ds = d[i].ds;
    } else {
      d[m++] = d[i];
    }
  }
  return m;
}
