/*
** random.cu — random fills on the GPU: the Philox4x32-10 stream and the transforms of
** kernels/philox.h, the same code the CPU backend runs, so element i of a call gets the
** same counter block and words on both devices (the mapping table is in philox.h).
** philox.h's words equal cuRAND's curand_init(seed, 0, 4 * block) + curand4().
**
** One thread per counter block, grid-stride: a thread reads its block's 4 words and
** writes the 1, 2 or 4 elements they make with one store where dst is aligned. The result
** cannot depend on the launch configuration because nothing is carried from one block to
** the next.
*/
#include "cuda_common.cuh"
#include "philox.h"
#include "random_dist.h"

struct gl_krand {
  uint64_t seed, offset;
  double a, b;
  int64_t lo;
  uint64_t range;
  const double *p;
};

/* ---- stores --------------------------------------------------------------------------- */

/* A value as dtype DT stores it: floats rounded (halves to nearest even), integers wrapped
** to the width, flags as 0/1 of the dtype (convert.h's stores, as the CPU's). */
template <int DT> __device__ __forceinline__ typename gl_dt<DT>::S gl_rcvt_f(float v) { return gl_dt<DT>::store_f(v); }
template <int DT> __device__ __forceinline__ typename gl_dt<DT>::S gl_rcvt_i(uint64_t v) { return gl_dt<DT>::store_i(v); }
template <int DT> __device__ __forceinline__ typename gl_dt<DT>::S gl_rcvt_flag(bool v) {
  typedef typename gl_dt<DT>::S S;
  const S one = gl_dt<DT>::store_i(1), zero = gl_dt<DT>::store_i(0);
  return v ? one : zero;
}

/* Elements N g .. N g + N - 1 of dst (n in all) = v: one N-element access when 'whole'
** (dst aligned to N elements, checked by the launcher) and the group is complete, else
** element by element. */
template <class S, int N>
__device__ __forceinline__ void gl_rput(S *dst, int64_t g, int64_t n, const S (&v)[N], bool whole) {
  int64_t e = (int64_t)N * g;
  if (whole && e + N <= n) {
    gl_pack<S, N> pk;
#pragma unroll
    for (int k = 0; k < N; k++) pk.v[k] = v[k];
    ((gl_pack<S, N> *)dst)[g] = pk;
  } else {
#pragma unroll
    for (int k = 0; k < N; k++) if (e + k < n) dst[e + k] = v[k];
  }
}

/* Whether dst is aligned to groups of n elements of 'width' bytes (n * width a power of 2). */
static inline bool gl_rwhole(const void *dst, int n, int width) {
  return ((uintptr_t)dst & (uintptr_t)(n * width - 1)) == 0;
}

/* ---- kernels ---------------------------------------------------------------------------- */

/* Every kernel walks the counter blocks j of the call (block r.offset + j, philox.h's
** mapping), grid-stride on a grid of one wave, GL_KR_UNROLL blocks per thread and trip (so
** the independent Philox rounds of both interleave); a thread turns its block's 4 words
** into the 1, 2 or 4 elements they make and stores them with one access. Nothing is carried
** between blocks, so the numbers do not depend on the launch. */
#define GL_KR_UNROLL 2
#define GL_KR_LOOP(j, nb)                                                                        \
  for (int64_t j##0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j##0 < (nb);               \
       j##0 += (int64_t)GL_KR_UNROLL * blockDim.x * gridDim.x)                                   \
    _Pragma("unroll") for (int u_ = 0; u_ < GL_KR_UNROLL; u_++)                                  \
      if (int64_t j = j##0 + (int64_t)u_ * blockDim.x * gridDim.x; j < (nb))

/* uniform / normal into float32, float16, bfloat16: 4 elements per block. */
template <int DT, bool NORMAL>
__global__ void __launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)
gl_krandom_f(typename gl_dt<DT>::S *dst, int64_t n, gl_krand r, bool whole) {
  typedef typename gl_dt<DT>::S S;
  int64_t nb = (n + 3) / 4;
  float lo = (float)r.a, span = (float)(r.b - r.a), mean = (float)r.a, sd = (float)r.b;
  const int bits = gl_dt<DT>::prec;
  GL_KR_LOOP(j, nb) {
    uint32_t w[4];
    gl_philox_block(r.seed, r.offset + (uint64_t)j, w);
    S v[4];
    if (NORMAL) {
      float z0, z1, z2, z3;
      gl_rand_normal2f(w[0], w[1], &z0, &z1);
      gl_rand_normal2f(w[2], w[3], &z2, &z3);
      v[0] = gl_rcvt_f<DT>(fmaf(sd, z0, mean)); v[1] = gl_rcvt_f<DT>(fmaf(sd, z1, mean));
      v[2] = gl_rcvt_f<DT>(fmaf(sd, z2, mean)); v[3] = gl_rcvt_f<DT>(fmaf(sd, z3, mean));
    } else {
#pragma unroll
      for (int k = 0; k < 4; k++) v[k] = gl_rcvt_f<DT>(fmaf(span, gl_rand_u01f(w[k], bits), lo));
    }
    gl_rput<S, 4>(dst, j, n, v, whole);
  }
}

/* uniform / normal into float64: 2 elements per block. */
template <bool NORMAL>
__global__ void __launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)
gl_krandom_d(double *dst, int64_t n, gl_krand r, bool whole) {
  int64_t nb = (n + 1) / 2;
  GL_KR_LOOP(j, nb) {
    uint32_t w[4];
    gl_philox_block(r.seed, r.offset + (uint64_t)j, w);
    uint64_t x0 = gl_rand_u64(w[0], w[1]), x1 = gl_rand_u64(w[2], w[3]);
    double v[2];
    if (NORMAL) {
      double z0, z1;
      gl_rand_normal2d(x0, x1, &z0, &z1);
      v[0] = fma(r.b, z0, r.a); v[1] = fma(r.b, z1, r.a);
    } else {
      v[0] = fma(r.b - r.a, gl_rand_u01d(x0), r.a); v[1] = fma(r.b - r.a, gl_rand_u01d(x1), r.a);
    }
    gl_rput<double, 2>(dst, j, n, v, whole);
  }
}

/* integers lo + [0, range): 2 per block when range <= 2^32, else 1 (128 bits each). */
template <int DT>
__global__ void __launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)
gl_krandom_int(typename gl_dt<DT>::S *dst, int64_t n, gl_krand r, bool whole) {
  typedef typename gl_dt<DT>::S S;
  bool small = r.range != 0 && r.range <= ((uint64_t)1 << 32);
  int64_t nb = small ? (n + 1) / 2 : n;
  uint64_t lo = (uint64_t)r.lo;
  GL_KR_LOOP(j, nb) {
    uint32_t w[4];
    gl_philox_block(r.seed, r.offset + (uint64_t)j, w);
    uint64_t x0 = gl_rand_u64(w[0], w[1]), x1 = gl_rand_u64(w[2], w[3]);
    if (small) {
      S v[2] = { gl_rcvt_i<DT>(lo + gl_rand_mulhi_small(x0, r.range)),
                 gl_rcvt_i<DT>(lo + gl_rand_mulhi_small(x1, r.range)) };
      gl_rput<S, 2>(dst, j, n, v, whole);
    } else {
      dst[j] = gl_rcvt_i<DT>(lo + gl_rand_mulhi128(x0, x1, r.range));
    }
  }
}

/* 1 when w * 2^-32 < p (p scalar or per element): 4 per block. */
template <int DT>
__global__ void __launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)
gl_krandom_bernoulli(typename gl_dt<DT>::S *dst, int64_t n, gl_krand r, bool whole) {
  typedef typename gl_dt<DT>::S S;
  int64_t nb = (n + 3) / 4;
  GL_KR_LOOP(j, nb) {
    uint32_t w[4];
    gl_philox_block(r.seed, r.offset + (uint64_t)j, w);
    S v[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
      int64_t e = 4 * j + k;
      double p = r.p ? (e < n ? r.p[e] : 0.0) : r.a;
      v[k] = gl_rcvt_flag<DT>((double)w[k] * 0x1p-32 < p);
    }
    gl_rput<S, 4>(dst, j, n, v, whole);
  }
}

/* ---- launcher ------------------------------------------------------------------------------ */

/* The fill of one dtype: its kernel for the distribution, GL_KERR_NOTSUP where the
** distribution does not make that dtype (philox.h's GL_RAND_DTYPES, what supports() says). */
template <int DT>
static int random_dt(cudaStream_t s, unsigned grid, int dist, void *dst, int64_t n, const gl_krand &r, int epb) {
  typedef typename gl_dt<DT>::S S;
  if (!GL_DT_IN(GL_RAND_DTYPES(dist), DT)) return GL_KERR_NOTSUP;
  S *d = (S *)dst;
  bool whole = gl_rwhole(dst, epb, (int)sizeof(S));
  if (dist == GL_KR_UNIFORM || dist == GL_KR_NORMAL) {
    if constexpr (gl_dt<DT>::kind == GL_KIND_FLOAT) {
      bool normal = dist == GL_KR_NORMAL;
      if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT64) {
        if (normal) gl_krandom_d<true><<<grid, GL_KTHREADS, 0, s>>>(d, n, r, whole);
        else gl_krandom_d<false><<<grid, GL_KTHREADS, 0, s>>>(d, n, r, whole);
      } else {
        if (normal) gl_krandom_f<DT, true><<<grid, GL_KTHREADS, 0, s>>>(d, n, r, whole);
        else gl_krandom_f<DT, false><<<grid, GL_KTHREADS, 0, s>>>(d, n, r, whole);
      }
    }
  } else if (dist == GL_KR_INTEGERS) {
    if constexpr (GL_DT_IN(GL_DTSET_INT, DT)) gl_krandom_int<DT><<<grid, GL_KTHREADS, 0, s>>>(d, n, r, whole);
  } else {
    gl_krandom_bernoulli<DT><<<grid, GL_KTHREADS, 0, s>>>(d, n, r, whole);
  }
  return gl_klaunched();
}

extern "C" int gl_klaunch_random(void *stream, int dist, int dt, void *dst, int64_t n, uint64_t seed,
                                 uint64_t offset, double a, double b, int64_t lo, uint64_t range,
                                 const double *p) {
  if (n == 0) return 0;
  if (dist < GL_KR_UNIFORM || dist > GL_KR_BERNOULLI) return GL_KERR_NOTSUP;
  cudaStream_t s = (cudaStream_t)stream;
  gl_krand r = { seed, offset, a, b, lo, range, p };
  int epb = 4;                                    /* elements per block */
  if (dist == GL_KR_UNIFORM || dist == GL_KR_NORMAL) epb = dt == GL_KD_FLOAT64 ? 2 : 4;
  else if (dist == GL_KR_INTEGERS) epb = range != 0 && range <= ((uint64_t)1 << 32) ? 2 : 1;
  int64_t nb = (n + epb - 1) / epb;
  unsigned grid = gl_kgrid((nb + GL_KR_UNROLL - 1) / GL_KR_UNROLL);
  return GL_DISPATCH_DTYPE_ALL(dt, DT, random_dt<DT>(s, grid, dist, dst, n, r, epb));   /* bernoulli: complex too */
}

/* ---- samplers (kernels/random_dist.h) ---------------------------------------------------- */

/* Element i = sampler 'kind' from block offset + i: one thread per element, grid-stride;
** each parameter a scalar or, where its pointer is set, per element. */
__global__ void __launch_bounds__(GL_KTHREADS)
gl_krandom_sampler(void *dst, bool ints, int64_t n, int kind, uint64_t seed, uint64_t offset,
                   double a, double b, double c, const double *pa, const double *pb, const double *pc) {
  GL_KLOOP(i, n) {
    double v = gl_rdist_draw(kind, seed, offset + (uint64_t)i, pa ? pa[i] : a, pb ? pb[i] : b, pc ? pc[i] : c);
    if (ints) ((int64_t *)dst)[i] = (int64_t)v;
    else ((double *)dst)[i] = v;
  }
}

extern "C" int gl_klaunch_sampler(void *stream, int kind, int dt, void *dst, int64_t n, uint64_t seed,
                                  uint64_t offset, const double par[3], const double *const pa[3]) {
  if (n == 0) return 0;
  if (kind < 0 || kind >= GL_NRDIST || (dt != GL_KD_FLOAT64 && dt != GL_KD_INT64)) return GL_KERR_NOTSUP;
  cudaStream_t s = (cudaStream_t)stream;
  gl_krandom_sampler<<<gl_kblocks(n), GL_KTHREADS, 0, s>>>(dst, dt == GL_KD_INT64, n, kind, seed, offset, par[0],
                                                        par[1], par[2], pa[0], pa[1], pa[2]);
  return gl_klaunched();
}
