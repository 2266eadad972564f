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

#endif
