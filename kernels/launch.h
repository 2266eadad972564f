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

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GL_KERR_NOTSUP (-1)
#define GL_KMAXDIMS 8
#define GL_KMAXARGS 4

/* Dtype numbers as the kernels know them; the host checks they equal src/core's gl_dtype. */
enum {
  GL_KD_BOOL = 0, GL_KD_UINT8, GL_KD_INT32, GL_KD_INT64,
  GL_KD_FLOAT16, GL_KD_BFLOAT16, GL_KD_FLOAT32, GL_KD_FLOAT64, GL_KD_N
};

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
  uint64_t bits;
} gl_kval;

/* dst = src converted from dtype sdt to ddt (operands: dst, src). */
int gl_klaunch_copy(void *stream, const gl_kiter *it, void *dst, int ddt, const void *src, int sdt);
/* Every element of dst (operand 0) = the 'width'-byte pattern in bits. */
int gl_klaunch_fill(void *stream, const gl_kiter *it, void *dst, int width, uint64_t bits);
/* Contiguous dst[i] = start + i * step, computed in double, converted to dt. */
int gl_klaunch_arange(void *stream, void *dst, int dt, int64_t n, double start, double step);
/* dst = op(src); op is a gl_unop, dt src's dtype (operands: dst, src). */
int gl_klaunch_unary(void *stream, int op, int dt, const gl_kiter *it, void *dst, const void *src);
/* dst = a op b in compute dtype ct; op is a gl_binop (operands: dst, a, b). */
int gl_klaunch_binary(void *stream, int op, int ct, const gl_kiter *it, void *dst, gl_kval a, gl_kval b);
/* dst = cond ? a : b by element width (operands: dst, cond, a, b). */
int gl_klaunch_where(void *stream, const gl_kiter *it, void *dst, int width, const void *cond,
                     gl_kval a, gl_kval b);

#ifdef __cplusplus
}
#endif

#endif
