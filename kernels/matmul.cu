/*
** matmul.cu — the integer and bool matmul on the GPU (floats go through cuBLAS in
** src/backend/cuda/cuda_matmul.c). src/backend/cpu/cpu_matmul.c is the reference.
*/
#include "cuda_common.cuh"

/* One thread per output element; integers wrap in the unsigned type of their width
** (uint8 in uint32 then truncated, as the CPU), bool is the or of ands. */
template <class T, class UT, bool LOGIC>
__global__ void gl_k_matmul_int(const gl_kiter bw, const gl_matmul_args m, T *dst, const T *a, const T *b) {
  int64_t per = m.M * m.N, total = bw.n * per;
  GL_KLOOP(i, total) {
    int64_t bi = i / per, e = i - bi * per, r = e / m.N, c = e - r * m.N;
    int64_t off[3];
    gl_offsets<3>(bw, bi, off);
    const T *ap = a + off[1] + r * m.a_row_stride;
    const T *bp = b + off[2] + c * m.b_col_stride;
    UT acc = 0;
    for (int64_t k = 0; k < m.K; k++) {
      if (LOGIC) acc |= (UT)(ap[k * m.a_col_stride] & bp[k * m.b_row_stride]);
      else acc = (UT)(acc + (UT)ap[k * m.a_col_stride] * (UT)bp[k * m.b_row_stride]);
    }
    dst[off[0] + r * m.dst_row_stride + c * m.dst_col_stride] = LOGIC ? (T)(acc != 0) : (T)acc;
  }
}

template <int DT>
static int matmul_int_dt(cudaStream_t s, const gl_kiter *bw, const gl_matmul_args *m, void *dst, const void *a,
                         const void *b, int64_t total) {
  if constexpr (!GL_DT_IN(GL_KMATMUL_INT_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    constexpr bool LOGIC = gl_dt<DT>::kind == GL_KIND_BOOL;
    gl_k_matmul_int<T, typename gl_dt<DT>::UT, LOGIC><<<gl_kblocks(total), GL_KTHREADS, 0, s>>>(
        *bw, *m, (T *)dst, (const T *)a, (const T *)b);
    return gl_klaunched();
  }
}

extern "C" int gl_klaunch_matmul_int(void *stream, const gl_kiter *bw, const gl_matmul_args *m, void *dst,
                                     const void *a, const void *b, int dt) {
  int64_t total = bw->n * m->M * m->N;
  if (total <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, matmul_int_dt<DT>(s, bw, m, dst, a, b, total));
}
