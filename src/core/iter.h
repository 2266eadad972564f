/*
** iter.h — walking several same-shaped strided arrays together.
**
** gl_iter_init drops size-1 axes and merges adjacent axes that are contiguous with each
** other in every operand, so a contiguous array becomes one long row and a transposed
** one two nested loops. Backends then loop over "rows" (all axes but the last) and run a
** tight inner loop over the last axis with one stride per operand.
*/
#ifndef GL_ITER_H
#define GL_ITER_H

#include "array.h"

#define GL_ITER_MAXARGS 4

typedef struct gl_iter {
  int ndim;                                  /* >= 1 after init */
  int nargs;
  int64_t shape[GL_MAXDIMS];
  int64_t strides[GL_ITER_MAXARGS][GL_MAXDIMS];
  int64_t rows;                              /* product of shape[0..ndim-2] */
  int64_t inner;                             /* shape[ndim-1] */
} gl_iter;

/* All arrays must have 'ndim'/'shape' (broadcast views have 0 strides). */
void gl_iter_init(gl_iter *it, int nargs, const gl_array *const *arrays);

/* Element offsets (relative to each array's data pointer) of the start of row r. */
static inline void gl_iter_row(const gl_iter *it, int64_t r, int64_t *offs) {
  for (int k = 0; k < it->nargs; k++) offs[k] = 0;
  for (int d = it->ndim - 2; d >= 0 && r > 0; d--) {
    int64_t i = r % it->shape[d];
    r /= it->shape[d];
    for (int k = 0; k < it->nargs; k++) offs[k] += i * it->strides[k][d];
  }
}

/* ---- reductions: the axes of src split into kept and reduced ones --------------------- */

/* An axis of a reduction: extent, src stride, dst stride (0 for a reduced axis). */
typedef struct gl_rdim { int64_t n, ss, ds; } gl_rdim;

/* Splits src's axes by dst's shape (dst keeps src's ndim, with extent 1 on the reduced
** axes): kept axes of extent > 1 into kd (their count in *nk, the product of extents in *M),
** reduced ones into rd (*nr, *K). Returns -1, or the 0-based axis whose dst extent is
** neither src's nor 1. */
int gl_raxes_split(const gl_array *dst, const gl_array *src, gl_rdim *kd, int *nk, int64_t *M, gl_rdim *rd,
                   int *nr, int64_t *K);

/* Sorts d[0..n-1] by |src stride|, largest first (stable), then merges neighbours that
** are contiguous with each other (in dst too when 'withdst'); returns the new count. */
int gl_rdims_sort_merge(gl_rdim *d, int n, bool withdst);

#endif
