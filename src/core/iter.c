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
