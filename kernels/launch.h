/*
** launch.h — the plain C face of the CUDA kernels (the .cu files in kernels/): what the host side of
** the CUDA backend (src/backend/cuda/) calls. No CUDA header here, only C types: a stream
** travels as void * (a cudaStream_t), an error as int (a cudaError_t value).
**
** Every launcher returns 0 when the kernel was queued, GL_KERR_NOTSUP when the (op,
** dtype) pair has no kernel, or the cudaError_t that cudaGetLastError() reported right
** after the launch. A launcher with nothing to do (n == 0) launches nothing and returns 0.
*/
#ifndef GL_KERNELS_LAUNCH_H
#define GL_KERNELS_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include "dtypes.h"          /* the dtype codes GL_KD_* every 'dt' below is one of */

#ifdef __cplusplus
extern "C" {
#endif

#define GL_KERR_NOTSUP (-1)
#define GL_KMAXDIMS 8
#define GL_KMAXARGS 4

/* Where each operand's elements are: a walk over 'shape' (axes already collapsed on the
** host by gl_iter), one stride row per operand, in elements. Passed to kernels by value.
** contiguous = 1: ndim == 1 and every array operand has stride 1. */
typedef struct gl_kiter {
  int32_t ndim;                                   /* 1..GL_KMAXDIMS */
  int32_t contiguous;
  int64_t n;                                      /* product of shape */
  int64_t shape[GL_KMAXDIMS];
  int64_t strides[GL_KMAXARGS][GL_KMAXDIMS];
} gl_kiter;

/* An elementwise operand: an array (p = its first element) or, when p is NULL, a scalar
** whose bits (already in the compute dtype, in the low bytes) are in 'bits'. */
typedef struct gl_kval {
  const void *p;
  uint64_t bits[2];      /* a scalar's bytes, in the low ones: up to 16 (complex128) */
} gl_kval;

/* dst = src converted from dtype sdt to ddt (operands: dst, src). */
int gl_klaunch_copy(void *stream, const gl_kiter *it, void *dst, int ddt, const void *src, int sdt);
/* Every element of dst (operand 0) = the 'width'-byte pattern at bits (host memory, up to 16 bytes). */
int gl_klaunch_fill(void *stream, const gl_kiter *it, void *dst, int width, const void *bits);
/* Contiguous dst[i] = start + i * step, computed in double, converted to dt. */
int gl_klaunch_arange(void *stream, void *dst, int dt, int64_t n, double start, double step);
/* dst = op(src); op is a gl_unop, dt src's dtype (operands: dst, src). */
int gl_klaunch_unary(void *stream, int op, int dt, const gl_kiter *it, void *dst, const void *src);
/* dst = a op b in compute dtype ct; op is a gl_binop (operands: dst, a, b). */
int gl_klaunch_binary(void *stream, int op, int ct, const gl_kiter *it, void *dst, gl_kval a, gl_kval b);
/* dst = cond ? a : b by element width (operands: dst, cond, a, b). */
int gl_klaunch_where(void *stream, const gl_kiter *it, void *dst, int width, const void *cond,
                     gl_kval a, gl_kval b);

/* ---- reductions and scans (reduce.cu) ---- */

/* Reductions, numbered as backend.h's gl_redop (the host checks). */
enum {
  GL_KR_SUM, GL_KR_PROD, GL_KR_MAX, GL_KR_MIN, GL_KR_ARGMAX, GL_KR_ARGMIN, GL_KR_ALL, GL_KR_ANY,
  GL_KR_MEAN, GL_KR_VAR, GL_KR_NORM, GL_KR_LOGSUMEXP
};
/* What one pass over the reduced elements computes (reduce.cu's own numbering). */
enum {
  GL_KRK_SUM, GL_KRK_SUMABS, GL_KRK_SUMSQ, GL_KRK_SUMDEV, GL_KRK_SUMEXP, GL_KRK_SUMPOW,
  GL_KRK_SUMNZ, GL_KRK_PROD, GL_KRK_MAX, GL_KRK_MIN, GL_KRK_MAXABS, GL_KRK_MINABS, GL_KRK_ALL,
  GL_KRK_ANY, GL_KRK_ARGMAX, GL_KRK_ARGMIN
};

/* The type a reduction or a scan computes in: float32 (also for float16 and bfloat16),
** float64, or int64 (integers and bool; sums and products wrap as uint64). */
typedef enum gl_kcompute { GL_KCOMPUTE_FLOAT32, GL_KCOMPUTE_FLOAT64, GL_KCOMPUTE_INT64 } gl_kcompute;

/* A reduction's walk: M outputs over the kept axes (extent, src and dst strides), each
** reducing K elements over the reduced axes (extent, src stride); C order, collapsed. */
typedef struct gl_reduce_args {
  int32_t nkept, nreduced;                        /* axes in each set */
  int64_t M, K;
  int64_t kept_shape[GL_KMAXDIMS], kept_src_strides[GL_KMAXDIMS], kept_dst_strides[GL_KMAXDIMS];
  int64_t reduced_shape[GL_KMAXDIMS], reduced_src_strides[GL_KMAXDIMS];
} gl_reduce_args;

/* Device scratch bytes gl_klaunch_reduce needs for r. */
size_t gl_reduce_scratch(const gl_reduce_args *r);
/* dst = reduction 'op' (GL_KR_*) of src in compute type ctk (a gl_kcompute);
** param: ddof (var) or the order (norm); scratch: gl_reduce_scratch(r) bytes. */
int gl_klaunch_reduce(void *stream, int op, const gl_reduce_args *r, void *dst, int ddt, const void *src,
                      int sdt, int ctk, double param, void *scratch);

/* A scan's walk: 'lines' lines over the other axes (extent, src and dst strides), each of
** K elements with strides src_stride and dst_stride. */
typedef struct gl_scan_args {
  int32_t ndim;
  int64_t lines, K, src_stride, dst_stride;       /* along the scanned axis */
  int64_t shape[GL_KMAXDIMS], src_strides[GL_KMAXDIMS], dst_strides[GL_KMAXDIMS];
} gl_scan_args;

/* Inclusive cumulative sum (prod = 0) or product along the lines, in compute type ctk (a
** gl_kcompute). */
int gl_klaunch_scan(void *stream, int prod, const gl_scan_args *sc, void *dst, int ddt, const void *src,
                    int sdt, int ctk);

/* ---- gather, scatter, mask selection (index.cu) ---- */

/* An indexed walk over 'shape' (ndim axes, the indexed one 'axis'): strides of the array
** read or written directly (d) and of the one indexed through idx (x). */
typedef struct gl_kidx {
  int32_t ndim, axis;
  int64_t n;                                      /* product of shape */
  int64_t shape[GL_KMAXDIMS], sd[GL_KMAXDIMS], sx[GL_KMAXDIMS];
} gl_kidx;

/* dst[i] (walked directly, strides sd) = src[i with idx[i_axis] on 'axis'] (strides sx). */
int gl_klaunch_gather(void *stream, const gl_kidx *w, void *dst, const void *src, const int64_t *idx,
                      int width);
/* dst[i with idx[i_axis] on 'axis'] (strides sx) = (or +=) src[i] (strides sd). Plain
** stores and adds in dtypes without atomics go one thread per lane, in order (the last
** repeat wins, adds are exact); float32/float64/int32/int64 adds use atomics. */
int gl_klaunch_scatter(void *stream, const gl_kidx *w, void *dst, const void *src, const int64_t *idx,
                       int dt, int width, int accumulate);

/* Scratch bytes of a mask selection of n elements. */
size_t gl_kmask_scratch(int64_t n);
/* dst[k * ds] = src of the k-th true mask element in C order over it's walk (operands:
** src, mask); scratch: gl_kmask_scratch(it->n) bytes. */
int gl_klaunch_mask_select(void *stream, const gl_kiter *it, void *dst, int64_t ds, const void *src,
                           const uint8_t *mask, int width, void *scratch, size_t scratch_bytes);

/* ---- sort (sort.cu) ---- */

/* Lanes of a sort: every axis but the sorted one ('ndim' of them: extents and the strides of
** src, values and indices), each of n elements with the strides *_stride along the axis. */
typedef struct gl_sort_args {
  int32_t ndim;
  int64_t lanes, n, src_stride, values_stride, indices_stride;
  int64_t shape[GL_KMAXDIMS], src_strides[GL_KMAXDIMS], values_strides[GL_KMAXDIMS],
          indices_strides[GL_KMAXDIMS];
} gl_sort_args;

/* Scratch bytes of a sort of lanes * n elements of dtype dt (lanes * n <= INT32_MAX). */
size_t gl_sort_scratch(const gl_sort_args *k, int dt);
/* Stable sort of each lane (NaN last in both orders); values (src's dtype) and/or int64
** indices may be NULL. */
int gl_klaunch_sort(void *stream, const gl_sort_args *k, void *values, int64_t *indices, const void *src,
                    int dt, int descending, void *scratch, size_t scratch_bytes);

/* ---- random fills (random.cu) ---- */

/* Distributions, numbered as backend.h's gl_rand_dist (the host checks). */
enum { GL_KR_UNIFORM = 0, GL_KR_NORMAL, GL_KR_INTEGERS, GL_KR_BERNOULLI };

/* dst (n contiguous elements of dtype dt) = kernels/philox.h's numbers of 'dist' from the
** counter blocks offset, offset + 1, ... of key seed: uniform a + (b - a) u, normal a + b z,
** integers lo + [0, range), bernoulli 1 with probability a (or p[i] when p is not NULL). */
int gl_klaunch_random(void *stream, int dist, int dt, void *dst, int64_t n, uint64_t seed,
                      uint64_t offset, double a, double b, int64_t lo, uint64_t range,
                      const double *p);

/* ---- integer matmul (matmul.cu) ---- */

/* A batched integer/bool matmul: dst (B, M, N) = a (B, M, K) @ b (B, K, N), any strides
** (batch offsets through the batch walk 'bw' with operands dst, a, b). */
typedef struct gl_matmul_args {
  int64_t M, N, K;
  int64_t dst_row_stride, dst_col_stride;         /* along M, along N */
  int64_t a_row_stride, a_col_stride;             /* along M, along K */
  int64_t b_row_stride, b_col_stride;             /* along K, along N */
} gl_matmul_args;
/* The dtypes gl_klaunch_matmul_int takes (floats go through cuBLAS). */
#define GL_KMATMUL_INT_DTYPES (GL_DTSET_INT | GL_DTSET_BOOL)
int gl_klaunch_matmul_int(void *stream, const gl_kiter *bw, const gl_matmul_args *m, void *dst,
                          const void *a, const void *b, int dt);

#ifdef __cplusplus
}
#endif

#endif
