/*
** random.cu — random fills on the GPU: the Philox4x32-10 stream and the transforms of
** kernels/philox.h, the same code the CPU backend runs, so element i of a call gets the
** same counter block and words on both devices (the mapping table is in philox.h).
** philox.h's words equal cuRAND's curand_init(seed, 0, 4 * block) + curand4().
**
** One thread per counter block, grid-stride: a thread reads its block's 4 words and
** writes the 1, 2 or 4 elements they make. The result cannot depend on the launch
** configuration because nothing is carried from one block to the next.
*/
#include "cuda_common.cuh"
#include "philox.h"

/* Numbered as gl_rand_dist in src/backend/backend.h (checked in cuda_random.c). */
enum { GL_KR_UNIFORM = 0, GL_KR_NORMAL, GL_KR_INTEGERS, GL_KR_BERNOULLI };

struct gl_krand {
  uint64_t seed, offset;
  double a, b;
  int64_t lo;
  uint64_t range;
  const double *p;
};

/* ---- stores --------------------------------------------------------------------------- */

template <int DT> __device__ __forceinline__ void gl_rstore_f(void *d, int64_t i, float v);
template <> __device__ __forceinline__ void gl_rstore_f<GL_KD_FLOAT32>(void *d, int64_t i, float v) { ((float *)d)[i] = v; }
template <> __device__ __forceinline__ void gl_rstore_f<GL_KD_FLOAT16>(void *d, int64_t i, float v) { ((uint16_t *)d)[i] = gl_f32_to_f16(v); }
template <> __device__ __forceinline__ void gl_rstore_f<GL_KD_BFLOAT16>(void *d, int64_t i, float v) { ((uint16_t *)d)[i] = gl_f32_to_bf16(v); }

template <int DT> __device__ __forceinline__ void gl_rstore_i(void *d, int64_t i, uint64_t v);
template <> __device__ __forceinline__ void gl_rstore_i<GL_KD_INT64>(void *d, int64_t i, uint64_t v) { ((int64_t *)d)[i] = (int64_t)v; }
template <> __device__ __forceinline__ void gl_rstore_i<GL_KD_INT32>(void *d, int64_t i, uint64_t v) { ((int32_t *)d)[i] = (int32_t)(uint32_t)v; }
template <> __device__ __forceinline__ void gl_rstore_i<GL_KD_UINT8>(void *d, int64_t i, uint64_t v) { ((uint8_t *)d)[i] = (uint8_t)v; }

template <int DT> __device__ __forceinline__ void gl_rstore_flag(void *d, int64_t i, bool v) {
  typedef typename gl_dt<DT>::S S;
  if constexpr (DT == GL_KD_FLOAT16) ((uint16_t *)d)[i] = v ? 0x3c00 : 0;
  else if constexpr (DT == GL_KD_BFLOAT16) ((uint16_t *)d)[i] = v ? 0x3f80 : 0;
  else ((S *)d)[i] = (S)(v ? 1 : 0);
}

__device__ __forceinline__ int gl_rbits(int dt) { return dt == GL_KD_FLOAT16 ? 11 : dt == GL_KD_BFLOAT16 ? 8 : 24; }

/* ---- kernels ---------------------------------------------------------------------------- */

/* uniform / normal into float32, float16, bfloat16: 4 elements per block. */
template <int DT, bool NORMAL>
__global__ void gl_krandom_f(void *dst, int64_t n, gl_krand r) {
  int64_t nb = (n + 3) / 4;
  float lo = (float)r.a, span = (float)(r.b - r.a), mean = (float)r.a, sd = (float)r.b;
  int bits = gl_rbits(DT);
  GL_KLOOP(j, nb) {
    uint32_t w[4];
    gl_philox_block(r.seed, r.offset + (uint64_t)j, w);
    float v[4];
    if (NORMAL) {
      float z0, z1, z2, z3;
      gl_rand_normal2f(w[0], w[1], &z0, &z1);
      gl_rand_normal2f(w[2], w[3], &z2, &z3);
      v[0] = fmaf(sd, z0, mean); v[1] = fmaf(sd, z1, mean);
      v[2] = fmaf(sd, z2, mean); v[3] = fmaf(sd, z3, mean);
    } else {
#pragma unroll
      for (int k = 0; k < 4; k++) v[k] = fmaf(span, gl_rand_u01f(w[k], bits), lo);
    }
    int64_t e = 4 * j;
    if (DT == GL_KD_FLOAT32 && e + 3 < n && ((uintptr_t)dst & 15) == 0) {
      ((float4 *)dst)[j] = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int k = 0; k < 4; k++) if (e + k < n) gl_rstore_f<DT>(dst, e + k, v[k]);
    }
  }
}

/* uniform / normal into float64: 2 elements per block. */
template <bool NORMAL>
__global__ void gl_krandom_d(double *dst, int64_t n, gl_krand r) {
  int64_t nb = (n + 1) / 2;
  GL_KLOOP(j, nb) {
    uint32_t w[4];
    gl_philox_block(r.seed, r.offset + (uint64_t)j, w);
    uint64_t x0 = gl_rand_u64(w[0], w[1]), x1 = gl_rand_u64(w[2], w[3]);
    double v0, v1;
    if (NORMAL) {
      double z0, z1;
      gl_rand_normal2d(x0, x1, &z0, &z1);
      v0 = fma(r.b, z0, r.a); v1 = fma(r.b, z1, r.a);
    } else {
      v0 = fma(r.b - r.a, gl_rand_u01d(x0), r.a); v1 = fma(r.b - r.a, gl_rand_u01d(x1), r.a);
    }
    dst[2 * j] = v0;
    if (2 * j + 1 < n) dst[2 * j + 1] = v1;
  }
}

/* integers lo + [0, range): 2 per block when range <= 2^32, else 1 (128 bits each). */
template <int DT>
__global__ void gl_krandom_int(void *dst, int64_t n, gl_krand r) {
  bool small = r.range != 0 && r.range <= ((uint64_t)1 << 32);
  int64_t nb = small ? (n + 1) / 2 : n;
  uint64_t lo = (uint64_t)r.lo;
  GL_KLOOP(j, nb) {
    uint32_t w[4];
    gl_philox_block(r.seed, r.offset + (uint64_t)j, w);
    uint64_t x0 = gl_rand_u64(w[0], w[1]), x1 = gl_rand_u64(w[2], w[3]);
    if (small) {
      gl_rstore_i<DT>(dst, 2 * j, lo + gl_rand_mulhi_small(x0, r.range));
      if (2 * j + 1 < n) gl_rstore_i<DT>(dst, 2 * j + 1, lo + gl_rand_mulhi_small(x1, r.range));
    } else {
      gl_rstore_i<DT>(dst, j, lo + gl_rand_mulhi128(x0, x1, r.range));
    }
  }
}

/* 1 when w * 2^-32 < p (p scalar or per element): 4 per block. */
template <int DT>
__global__ void gl_krandom_bernoulli(void *dst, int64_t n, gl_krand r) {
  int64_t nb = (n + 3) / 4;
  GL_KLOOP(j, nb) {
    uint32_t w[4];
    gl_philox_block(r.seed, r.offset + (uint64_t)j, w);
#pragma unroll
    for (int k = 0; k < 4; k++) {
      int64_t e = 4 * j + k;
      if (e < n) gl_rstore_flag<DT>(dst, e, (double)w[k] * 0x1p-32 < (r.p ? r.p[e] : r.a));
    }
  }
}

/* ---- launcher ------------------------------------------------------------------------------ */

extern "C" int gl_klaunch_random(void *stream, int dist, int dt, void *dst, int64_t n, uint64_t seed,
                                 uint64_t offset, double a, double b, int64_t lo, uint64_t range,
                                 const double *p) {
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  gl_krand r = { seed, offset, a, b, lo, range, p };
  int epb = 4;                                    /* elements per block */
  if (dist == GL_KR_UNIFORM || dist == GL_KR_NORMAL) epb = dt == GL_KD_FLOAT64 ? 2 : 4;
  else if (dist == GL_KR_INTEGERS) epb = range != 0 && range <= ((uint64_t)1 << 32) ? 2 : 1;
  unsigned grid = gl_kblocks((n + epb - 1) / epb);
  bool normal = dist == GL_KR_NORMAL;
  switch (dist) {
    case GL_KR_UNIFORM: case GL_KR_NORMAL:
      switch (dt) {
        case GL_KD_FLOAT32:
          if (normal) gl_krandom_f<GL_KD_FLOAT32, true><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r);
          else gl_krandom_f<GL_KD_FLOAT32, false><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r);
          break;
        case GL_KD_FLOAT16:
          if (normal) gl_krandom_f<GL_KD_FLOAT16, true><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r);
          else gl_krandom_f<GL_KD_FLOAT16, false><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r);
          break;
        case GL_KD_BFLOAT16:
          if (normal) gl_krandom_f<GL_KD_BFLOAT16, true><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r);
          else gl_krandom_f<GL_KD_BFLOAT16, false><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r);
          break;
        case GL_KD_FLOAT64:
          if (normal) gl_krandom_d<true><<<grid, GL_KTHREADS, 0, s>>>((double *)dst, n, r);
          else gl_krandom_d<false><<<grid, GL_KTHREADS, 0, s>>>((double *)dst, n, r);
          break;
        default: return GL_KERR_NOTSUP;
      }
      break;
    case GL_KR_INTEGERS:
      switch (dt) {
        case GL_KD_INT64: gl_krandom_int<GL_KD_INT64><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r); break;
        case GL_KD_INT32: gl_krandom_int<GL_KD_INT32><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r); break;
        case GL_KD_UINT8: gl_krandom_int<GL_KD_UINT8><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r); break;
        default: return GL_KERR_NOTSUP;
      }
      break;
    case GL_KR_BERNOULLI:
      switch (dt) {
#define GL_BERN(DN, DTY, DK, DE) \
        case DE: gl_krandom_bernoulli<DE><<<grid, GL_KTHREADS, 0, s>>>(dst, n, r); break;
        GL_FOREACH_DTYPE(GL_BERN)
#undef GL_BERN
        default: return GL_KERR_NOTSUP;
      }
      break;
    default: return GL_KERR_NOTSUP;
  }
  return gl_klaunched();
}
