/*
** copy.cu — data movement on the GPU: strided copy with dtype conversion (every pair of
** the 8 dtypes, conversions from convert.h so the CPU and GPU agree bit for bit), fill by
** element width, arange, and where (a select of bit patterns by width).
*/
#include "cuda_common.cuh"

/* ---- kernels ------------------------------------------------------------------------------ */

template <int DD, int SD, bool CONTIG>
__global__ void gl_k_copy(const gl_kiter it, typename gl_dt<DD>::S *dst, const typename gl_dt<SD>::S *src) {
  GL_KLOOP(i, it.n) {
    if (CONTIG) dst[i] = gl_convert<DD, SD>(src[i]);
    else {
      int64_t off[2];
      gl_offsets<2>(it, i, off);
      dst[off[0]] = gl_convert<DD, SD>(src[off[1]]);
    }
  }
}

template <class W, bool CONTIG>
__global__ void gl_k_fill(const gl_kiter it, W *dst, W v) {
  GL_KLOOP(i, it.n) {
    if (CONTIG) dst[i] = v;
    else {
      int64_t off[1];
      gl_offsets<1>(it, i, off);
      dst[off[0]] = v;
    }
  }
}

template <int DT>
__global__ void gl_k_arange(typename gl_dt<DT>::S *dst, int64_t n, double start, double step) {
  /* the product rounded, never fused into the sum: NumPy's values (and the CPU's) */
  GL_KLOOP(i, n) dst[i] = gl_dt<DT>::store_f(__dadd_rn(start, __dmul_rn((double)i, step)));
}

/* a or b NULL: that side is the scalar av / bv. */
template <class W, bool CONTIG>
__global__ void gl_k_where(const gl_kiter it, W *dst, const uint8_t *cond, const W *a, W av,
                           const W *b, W bv) {
  GL_KLOOP(i, it.n) {
    if (CONTIG) dst[i] = cond[i] ? (a ? a[i] : av) : (b ? b[i] : bv);
    else {
      int64_t off[4];
      gl_offsets<4>(it, i, off);
      dst[off[0]] = cond[off[1]] ? (a ? a[off[2]] : av) : (b ? b[off[3]] : bv);
    }
  }
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <int DD, int SD>
static int copy_pair(cudaStream_t s, const gl_kiter *it, void *dst, const void *src) {
  typedef typename gl_dt<DD>::S DS;
  typedef typename gl_dt<SD>::S SS;
  if (it->contiguous)
    gl_k_copy<DD, SD, true><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, (DS *)dst, (const SS *)src);
  else
    gl_k_copy<DD, SD, false><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, (DS *)dst, (const SS *)src);
  return gl_klaunched();
}

extern "C" int gl_klaunch_copy(void *stream, const gl_kiter *it, void *dst, int ddt, const void *src, int sdt) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE_ALL(ddt, DD, GL_DISPATCH_DTYPE_ALL(sdt, SD, copy_pair<DD, SD>(s, it, dst, src)));
}

template <class W>
static int fill_width(cudaStream_t s, const gl_kiter *it, void *dst, const void *bits) {
  W v;
  memcpy(&v, bits, sizeof v);
  if (it->contiguous) gl_k_fill<W, true><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, (W *)dst, v);
  else gl_k_fill<W, false><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, (W *)dst, v);
  return gl_klaunched();
}

extern "C" int gl_klaunch_fill(void *stream, const gl_kiter *it, void *dst, int width, const void *bits) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  switch (width) {
    case 1: return fill_width<uint8_t>(s, it, dst, bits);
    case 2: return fill_width<uint16_t>(s, it, dst, bits);
    case 4: return fill_width<uint32_t>(s, it, dst, bits);
    case 8: return fill_width<uint64_t>(s, it, dst, bits);
    case 16: return fill_width<gl_complex128>(s, it, dst, bits);
    default: return GL_KERR_NOTSUP;
  }
}

template <int DT>
static int arange_dt(cudaStream_t s, void *dst, int64_t n, double start, double step) {
  gl_k_arange<DT><<<gl_kblocks(n), GL_KTHREADS, 0, s>>>((typename gl_dt<DT>::S *)dst, n, start, step);
  return gl_klaunched();
}

extern "C" int gl_klaunch_arange(void *stream, void *dst, int dt, int64_t n, double start, double step) {
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE_ALL(dt, DT, arange_dt<DT>(s, dst, n, start, step));
}

template <class W>
static int where_width(cudaStream_t s, const gl_kiter *it, void *dst, const void *cond, gl_kval a, gl_kval b) {
  W av, bv;
  memcpy(&av, &a.bits, sizeof av);
  memcpy(&bv, &b.bits, sizeof bv);
  if (it->contiguous)
    gl_k_where<W, true><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, (W *)dst, (const uint8_t *)cond,
                                                                 (const W *)a.p, av, (const W *)b.p, bv);
  else
    gl_k_where<W, false><<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, (W *)dst, (const uint8_t *)cond,
                                                                  (const W *)a.p, av, (const W *)b.p, bv);
  return gl_klaunched();
}

extern "C" int gl_klaunch_where(void *stream, const gl_kiter *it, void *dst, int width, const void *cond,
                                gl_kval a, gl_kval b) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  switch (width) {
    case 1: return where_width<uint8_t>(s, it, dst, cond, a, b);
    case 2: return where_width<uint16_t>(s, it, dst, cond, a, b);
    case 4: return where_width<uint32_t>(s, it, dst, cond, a, b);
    case 8: return where_width<uint64_t>(s, it, dst, cond, a, b);
    case 16: return where_width<gl_complex128>(s, it, dst, cond, a, b);
    default: return GL_KERR_NOTSUP;
  }
}
