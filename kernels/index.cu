/*
** index.cu — gather, scatter and boolean-mask selection on the GPU (elements only move,
** so kernels are stamped per element width). src/backend/cpu/cpu_index.c is the reference.
*/
#include "cuda_common.cuh"
#include <cub/device/device_scan.cuh>

/* A storage type of each width. */
template <int W> struct gl_w;
template <> struct gl_w<1> { typedef uint8_t T; };
template <> struct gl_w<2> { typedef uint16_t T; };
template <> struct gl_w<4> { typedef uint32_t T; };
template <> struct gl_w<8> { typedef uint64_t T; };
template <> struct gl_w<16> { typedef gl_complex128 T; };

/* Offsets of linear index i over w's shape: direct (sd), indexed (sx, with idx on the axis). */
__device__ __forceinline__ void gl_idx_offsets(const gl_kidx &w, int64_t i, const int64_t *idx,
                                               int64_t *od, int64_t *ox) {
  int64_t d = 0, x = 0;
  for (int k = w.ndim - 1; k >= 0; k--) {
    int64_t n = w.shape[k], q = i / n, c = i - q * n;
    i = q;
    d += c * w.sd[k];
    x += (k == w.axis ? idx[c] : c) * w.sx[k];
  }
  *od = d;
  *ox = x;
}

/* ---- gather ----------------------------------------------------------------------------- */

template <int W>
__global__ void gl_k_gather(const gl_kidx w, typename gl_w<W>::T *dst, const typename gl_w<W>::T *src,
                            const int64_t *idx) {
  GL_KLOOP(i, w.n) {
    int64_t od, ox;
    gl_idx_offsets(w, i, idx, &od, &ox);
    dst[od] = src[ox];
  }
}

extern "C" int gl_klaunch_gather(void *stream, const gl_kidx *w, void *dst, const void *src,
                                 const int64_t *idx, int width) {
  if (w->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned b = gl_kblocks(w->n);
  switch (width) {
    case 1: gl_k_gather<1><<<b, GL_KTHREADS, 0, s>>>(*w, (uint8_t *)dst, (const uint8_t *)src, idx); break;
    case 2: gl_k_gather<2><<<b, GL_KTHREADS, 0, s>>>(*w, (uint16_t *)dst, (const uint16_t *)src, idx); break;
    case 4: gl_k_gather<4><<<b, GL_KTHREADS, 0, s>>>(*w, (uint32_t *)dst, (const uint32_t *)src, idx); break;
    case 8: gl_k_gather<8><<<b, GL_KTHREADS, 0, s>>>(*w, (uint64_t *)dst, (const uint64_t *)src, idx); break;
    case 16: gl_k_gather<16><<<b, GL_KTHREADS, 0, s>>>(*w, (gl_complex128 *)dst, (const gl_complex128 *)src, idx); break;
    default: return GL_KERR_NOTSUP;
  }
  return gl_klaunched();
}

/* ---- scatter ---------------------------------------------------------------------------- */

/* One thread per lane (a position of every axis but the indexed one), walking the indexed
** axis in order: repeated positions of a lane are only ever touched by its thread, so the
** last write wins and adds are exact in any dtype. */
template <int DT, bool ADD>
__global__ void gl_k_scatter_lanes(const gl_kidx w, typename gl_dt<DT>::S *dst,
                                   const typename gl_dt<DT>::S *src, const int64_t *idx) {
  int64_t na = w.shape[w.axis], lanes = na > 0 ? w.n / na : 0;
  GL_KLOOP(l, lanes) {
    int64_t d = 0, x = 0, r = l;
    for (int k = w.ndim - 1; k >= 0; k--) {
      if (k == w.axis) continue;
      int64_t n = w.shape[k], q = r / n, c = r - q * n;
      r = q;
      d += c * w.sd[k];
      x += c * w.sx[k];
    }
    for (int64_t j = 0; j < na; j++) {
      typename gl_dt<DT>::S v = src[d + j * w.sd[w.axis]];
      typename gl_dt<DT>::S *p = &dst[x + idx[j] * w.sx[w.axis]];
      if (ADD) {
        if constexpr (gl_dt<DT>::kind == GL_KIND_COMPLEX) {
          typename gl_dt<DT>::S a = *p;
          a.re += v.re;
          a.im += v.im;
          *p = a;
        } else {
          auto sum = gl_dt<DT>::load(*p) + gl_dt<DT>::load(v);
          if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_INT64) *p = gl_dt<DT>::store_i(sum);
          else *p = gl_dt<DT>::store_f(sum);
        }
      } else {
        *p = v;
      }
    }
  }
}

/* One thread per element with a hardware atomic add, in the dtypes that have one. */
#define GL_KSCATTER_ATOMIC_DTYPES \
  (GL_DTSET(FLOAT32) | GL_DTSET(FLOAT64) | GL_DTSET(INT32) | GL_DTSET(UINT32) | GL_DTSET(INT64) | GL_DTSET(UINT64))
__device__ __forceinline__ void gl_atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void gl_atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void gl_atomic_add(int32_t *p, int32_t v) { atomicAdd((int *)p, (int)v); }
__device__ __forceinline__ void gl_atomic_add(uint32_t *p, uint32_t v) { atomicAdd((unsigned int *)p, (unsigned int)v); }
__device__ __forceinline__ void gl_atomic_add(int64_t *p, int64_t v) {
  atomicAdd((unsigned long long *)p, (unsigned long long)v);      /* wraps as the CPU's add */
}
__device__ __forceinline__ void gl_atomic_add(uint64_t *p, uint64_t v) {
  atomicAdd((unsigned long long *)p, (unsigned long long)v);
}

template <class T>
__global__ void gl_k_scatter_atomic(const gl_kidx w, T *dst, const T *src, const int64_t *idx) {
  GL_KLOOP(i, w.n) {
    int64_t od, ox;
    gl_idx_offsets(w, i, idx, &od, &ox);
    gl_atomic_add(&dst[ox], src[od]);
  }
}

template <int DT>
static int scatter_dt(cudaStream_t s, const gl_kidx *w, void *dst, const void *src, const int64_t *idx,
                      bool add) {
  typedef typename gl_dt<DT>::S S;
  if constexpr (GL_DT_IN(GL_KSCATTER_ATOMIC_DTYPES, DT)) {
    if (add) {
      gl_k_scatter_atomic<S><<<gl_kblocks(w->n), GL_KTHREADS, 0, s>>>(*w, (S *)dst, (const S *)src, idx);
      return gl_klaunched();
    }
  }
  int64_t na = w->shape[w->axis], lanes = na > 0 ? w->n / na : 0;
  if (lanes <= 0) return 0;
  if (add) gl_k_scatter_lanes<DT, true><<<gl_kblocks(lanes), GL_KTHREADS, 0, s>>>(*w, (S *)dst, (const S *)src, idx);
  else gl_k_scatter_lanes<DT, false><<<gl_kblocks(lanes), GL_KTHREADS, 0, s>>>(*w, (S *)dst, (const S *)src, idx);
  return gl_klaunched();
}

extern "C" int gl_klaunch_scatter(void *stream, const gl_kidx *w, void *dst, const void *src,
                                  const int64_t *idx, int dt, int width, int accumulate) {
  if (w->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  bool add = accumulate != 0;
  if (!add) {                     /* plain stores only move bytes: stamp by width */
    switch (width) {
      case 1: return scatter_dt<GL_KD_UINT8>(s, w, dst, src, idx, false);
      case 2: return scatter_dt<GL_KD_FLOAT16>(s, w, dst, src, idx, false);
      case 4: return scatter_dt<GL_KD_INT32>(s, w, dst, src, idx, false);
      case 8: return scatter_dt<GL_KD_INT64>(s, w, dst, src, idx, false);
      case 16: return scatter_dt<GL_KD_COMPLEX128>(s, w, dst, src, idx, false);
      default: return GL_KERR_NOTSUP;
    }
  }
  return GL_DISPATCH_DTYPE_ALL(dt, DT, scatter_dt<DT>(s, w, dst, src, idx, true));
}

/* ---- mask selection ------------------------------------------------------------------- */

/* pos[i] = 1 where the mask is set (C order over the walk), else 0. */
__global__ void gl_k_mask_flags(const gl_kiter it, const uint8_t *mask, int64_t *pos) {
  GL_KLOOP(i, it.n) {
    int64_t off[2];
    gl_offsets<2>(it, i, off);
    pos[i] = mask[off[1]] != 0;
  }
}

/* After the inclusive sum, a set element i goes to dst[pos[i] - 1]. */
template <int W>
__global__ void gl_k_mask_compact(const gl_kiter it, typename gl_w<W>::T *dst, int64_t ds,
                                  const typename gl_w<W>::T *src, const uint8_t *mask, const int64_t *pos) {
  GL_KLOOP(i, it.n) {
    int64_t off[2];
    gl_offsets<2>(it, i, off);
    if (mask[off[1]]) dst[(pos[i] - 1) * ds] = src[off[0]];
  }
}

static size_t mask_cub_bytes(int64_t n) {
  size_t bytes = 0;
  cub::DeviceScan::InclusiveSum((void *)NULL, bytes, (const int64_t *)NULL, (int64_t *)NULL, n);
  return bytes;
}

extern "C" size_t gl_kmask_scratch(int64_t n) {
  return (size_t)n * sizeof(int64_t) + mask_cub_bytes(n) + 256;
}

extern "C" int gl_klaunch_mask_select(void *stream, const gl_kiter *it, void *dst, int64_t ds,
                                      const void *src, const uint8_t *mask, int width, void *scratch,
                                      size_t scratch_bytes) {
  if (it->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t *pos = (int64_t *)scratch;
  size_t head = ((size_t)it->n * sizeof(int64_t) + 255) / 256 * 256;
  if (scratch_bytes < head) return (int)cudaErrorInvalidValue;
  void *tmp = (char *)scratch + head;
  size_t tmp_bytes = scratch_bytes - head;
  gl_k_mask_flags<<<gl_kblocks(it->n), GL_KTHREADS, 0, s>>>(*it, mask, pos);
  int rc = gl_klaunched();
  if (rc) return rc;
  cudaError_t e = cub::DeviceScan::InclusiveSum(tmp, tmp_bytes, pos, pos, it->n, s);
  if (e != cudaSuccess) return (int)e;
  unsigned b = gl_kblocks(it->n);
  switch (width) {
    case 1: gl_k_mask_compact<1><<<b, GL_KTHREADS, 0, s>>>(*it, (uint8_t *)dst, ds, (const uint8_t *)src, mask, pos); break;
    case 2: gl_k_mask_compact<2><<<b, GL_KTHREADS, 0, s>>>(*it, (uint16_t *)dst, ds, (const uint16_t *)src, mask, pos); break;
    case 4: gl_k_mask_compact<4><<<b, GL_KTHREADS, 0, s>>>(*it, (uint32_t *)dst, ds, (const uint32_t *)src, mask, pos); break;
    case 8: gl_k_mask_compact<8><<<b, GL_KTHREADS, 0, s>>>(*it, (uint64_t *)dst, ds, (const uint64_t *)src, mask, pos); break;
    case 16:
      gl_k_mask_compact<16><<<b, GL_KTHREADS, 0, s>>>(*it, (gl_complex128 *)dst, ds, (const gl_complex128 *)src, mask, pos);
      break;
    default: return GL_KERR_NOTSUP;
  }
  return gl_klaunched();
}
