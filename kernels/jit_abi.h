/*
** jit_abi.h — what a kernel compiled at run time (gpu.ElementwiseKernel, ReductionKernel,
** gpu.fuse on the CPU) and the backend that launches it agree on. The generated C source
** starts with this file and half.h (both embedded in the binary as a string, since an
** installed gpulua has no source tree), so the layout below is the one both sides see.
**
** A launch hands the kernel one pointer per parameter (an array's first element, or a
** scalar's value) and this geometry: the loop axes (elementwise: the output's axes;
** reduction: the kept axes) and, for reductions, the reduced axes, with one stride per
** parameter, in elements, C order (the flat loop index of CuPy's 'i' is the C-order index
** over shape[0..nd-1]).
*/
#ifndef GL_KERNELS_JIT_ABI_H
#define GL_KERNELS_JIT_ABI_H

#include <stdint.h>

/* A function of the generated code (and of a user's preamble, on both devices): static
** inline in C, a device function under nvcc and NVRTC. */
#ifndef GL_JIT_FN
#ifdef __CUDACC__
#define GL_JIT_FN __device__ __forceinline__
#else
#define GL_JIT_FN static inline
#endif
#endif

#define GL_JIT_MAXARGS 32
#define GL_JIT_MAXDIMS 8

typedef struct gl_jit_geom {
  int nd, nr;                                   /* loop axes, reduced axes */
  int64_t shape[GL_JIT_MAXDIMS];                /* loop extents */
  int64_t rshape[GL_JIT_MAXDIMS];               /* reduced extents */
  int64_t str[GL_JIT_MAXARGS][GL_JIT_MAXDIMS];  /* per parameter, per loop axis */
  int64_t rstr[GL_JIT_MAXARGS][GL_JIT_MAXDIMS]; /* per parameter, per reduced axis */
  int64_t size;                                 /* product of shape: CuPy's _ind.size() */
} gl_jit_geom;

/* The entry points a generated module defines (symbol names are the kernel's name with
** these suffixes):
**   _contig(lo, hi, p)          elements lo..hi-1, every array parameter contiguous
**   _strided(lo, hi, g, p)      elements lo..hi-1 through g's strides
**   _init(acc)                  reduction: *acc = the identity
**   _part(o, lo, hi, g, p, acc) reduction: output o, reduced elements lo..hi-1, into *acc
**   _post(o, g, p, acc, n)      reduction: combines acc[0..n-1] and writes output o
** acc points at slots of 8 bytes (every accumulator type fits one). */
typedef void (*gl_jit_contig_fn)(int64_t lo, int64_t hi, char *const *p);
typedef void (*gl_jit_strided_fn)(int64_t lo, int64_t hi, const gl_jit_geom *g, char *const *p);
typedef void (*gl_jit_init_fn)(void *acc);
typedef void (*gl_jit_part_fn)(int64_t o, int64_t lo, int64_t hi, const gl_jit_geom *g, char *const *p, void *acc);
typedef void (*gl_jit_post_fn)(int64_t o, const gl_jit_geom *g, char *const *p, const void *acc, int n);

/* Moves the loop position (idx over nd axes, off one per parameter) n elements on along
** the innermost axis, carrying into the outer ones. n never passes the row's end. */
GL_JIT_FN void gl_jit_advance(int nargs, int64_t *idx, int64_t *off, int64_t n,
                                  int nd, const int64_t *shape, const int64_t (*str)[GL_JIT_MAXDIMS]) {
  int d = nd - 1;
  idx[d] += n;
  for (int k = 0; k < nargs; k++) off[k] += n * str[k][d];
  while (d > 0 && idx[d] >= shape[d]) {
    for (int k = 0; k < nargs; k++) off[k] -= idx[d] * str[k][d];
    idx[d] = 0;
    d--;
    idx[d]++;
    for (int k = 0; k < nargs; k++) off[k] += str[k][d];
  }
}

/* The position of flat element e: its index per axis and each parameter's offset. */
GL_JIT_FN void gl_jit_locate(int64_t e, int nargs, int64_t *idx, int64_t *off, int nd, const int64_t *shape,
                                 const int64_t (*str)[GL_JIT_MAXDIMS]) {
  for (int k = 0; k < nargs; k++) off[k] = 0;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = shape[d] > 0 ? e % shape[d] : 0;
    e = shape[d] > 0 ? e / shape[d] : 0;
    for (int k = 0; k < nargs; k++) off[k] += idx[d] * str[k][d];
  }
}

#endif
