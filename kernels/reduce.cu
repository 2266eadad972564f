/*
** reduce.cu — reductions (sum prod max min argmax argmin all any mean var norm logsumexp)
** and scans (cumsum, cumprod) on the GPU. src/backend/cpu/cpu_reduce.c and cpu_scan.c are
** the reference: the same compute types (float for float32/float16/bfloat16 results,
** double for float64, int64 wrapping for integers), the same NaN rules (max/min propagate
** NaN, argmax/argmin give the first NaN, all/any count NaN as true), the same compositions
** (var = mean then the sum of squared deviations; logsumexp shifted by a finite max).
**
** A reduction is a few "passes" and "finishes". A pass splits each output's K reduced
** elements into P parts; a group of G threads (1, a warp, or a block) reduces one (output,
** part) item into a partial: float sums accumulate in double per thread, then a
** warp-shuffle/shared-memory tree. A finish (one thread per output) folds the P partials
** in order and writes either the result or a per-output parameter of the next pass (the
** mean of var, the shift of logsumexp). G = 1 serves reductions over a slow axis (adjacent
** threads read adjacent outputs, so loads coalesce); P > 1 spreads few outputs with many
** elements (a full sum) over the whole GPU. Complex sources have passes of their own
** ("complex sources" below).
*/
#include "cuda_common.cuh"
#include "complex.h"
#include <cub/block/block_scan.cuh>

/* The integer expressions are shared by signed and unsigned types ("x < 0" on uint8). */
#pragma nv_diag_suppress 186

/* ---- compute types --------------------------------------------------------------------- */

/* VT: the value an element is computed in; AT: sums and products accumulate in it. */
template <int CTK> struct gl_ct;
template <> struct gl_ct<GL_KCOMPUTE_FLOAT32> { typedef float VT; typedef double AT; };
template <> struct gl_ct<GL_KCOMPUTE_FLOAT64> { typedef double VT; typedef double AT; };
template <> struct gl_ct<GL_KCOMPUTE_INT64> { typedef int64_t VT; typedef uint64_t AT; };

/* A stored element of dtype SDT as compute type CTK (as cpu_reduce_kernels.c's conversions). */
template <int SDT, int CTK>
__device__ __forceinline__ typename gl_ct<CTK>::VT gl_rconv(typename gl_dt<SDT>::S x) {
  auto v = gl_dt<SDT>::load(x);
  if constexpr (CTK == GL_KCOMPUTE_INT64) {
    if constexpr (gl_dt<SDT>::compute == GL_KCOMPUTE_INT64) return (int64_t)v;
    else return gl_sat_int64((double)v);
  } else {
    return (typename gl_ct<CTK>::VT)v;
  }
}

template <int SDT, int CTK>
__device__ __forceinline__ typename gl_ct<CTK>::VT gl_rload(const typename gl_dt<SDT>::S *p, int64_t off) {
  return gl_rconv<SDT, CTK>(p[off]);
}

/* A uint64 element as an int64 of the same order (its sign bit flipped), for max, min and
** the arg positions, which compare in the int64 compute type; gl_rfinish_one flips the
** values back. Every other dtype as it is. */
template <int SDT, class V> __device__ __forceinline__ V gl_ordered(V v) {
  if constexpr (SDT == GL_KD_UINT64 && std::is_integral<V>::value) return (V)((uint64_t)v ^ 0x8000000000000000ull);
  else return v;
}

template <class V> __device__ __forceinline__ bool gl_isnan(V v) { return v != v; }

/* A partial: f (float sums, float values), i (integer sums as uint64 bits, integer
** values, all/any), idx (argmax/argmin positions). */
struct gl_part { double f; int64_t i; int64_t idx; };

/* ---- the walk ------------------------------------------------------------------------- */

/* The src and dst offsets of position o of a C-order walk over nd axes (extents, src and dst
** strides). */
__device__ __forceinline__ void gl_walk_offsets(int nd, const int64_t *shape, const int64_t *ss,
                                                const int64_t *ds, int64_t o, int64_t *so, int64_t *dof) {
  int64_t s = 0, d = 0;
  for (int k = nd - 1; k >= 0; k--) {
    int64_t n = shape[k], q = o / n, c = o - q * n;
    o = q;
    s += c * ss[k];
    d += c * ds[k];
  }
  *so = s;
  *dof = d;
}

/* Output o's offsets in src and dst (the kept axes). */
__device__ __forceinline__ void gl_kept_offsets(const gl_reduce_args &r, int64_t o, int64_t *so, int64_t *dof) {
  gl_walk_offsets(r.nkept, r.kept_shape, r.kept_src_strides, r.kept_dst_strides, o, so, dof);
}

__device__ __forceinline__ int64_t gl_red_offset(const gl_reduce_args &r, int64_t k) {
  if (r.nreduced == 1) return k * r.reduced_src_strides[0];
  int64_t s = 0;
  for (int d = r.nreduced - 1; d >= 0; d--) {
    int64_t n = r.reduced_shape[d], q = k / n, c = k - q * n;
    k = q;
    s += c * r.reduced_src_strides[d];
  }
  return s;
}

/* ---- group combination: G = 1, 32 or 256 threads (uniform over a warp or block) ------- */

#define GL_FULL 0xffffffffu

/* Folds v over the group with f; the result is valid in the group's first thread. */
template <class T, class F>
__device__ __forceinline__ T gl_group(T v, int G, F f, T *smem) {
  if (G == 1) return v;
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) v = f(v, __shfl_down_sync(GL_FULL, v, o));
  if (G == 32) return v;
  int w = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) smem[w] = v;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int k = 1; k < (int)(blockDim.x / 32); k++) v = f(v, smem[k]);
  __syncthreads();
  return v;
}

/* ---- element maps and combinations -------------------------------------------------------- */

template <class V> __device__ __forceinline__ V gl_abs(V v) { return v < 0 ? -v : v; }
__device__ __forceinline__ float gl_exp(float v) { return expf(v); }
__device__ __forceinline__ double gl_exp(double v) { return exp(v); }
__device__ __forceinline__ float gl_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double gl_pow(double a, double b) { return pow(a, b); }

/* The sum maps (kind GL_KR_SUM .. GL_KR_SUMNZ); a: the output's parameter, p: the order. */
template <class V>
__device__ __forceinline__ V gl_map(int kind, V v, V a, V p) {
  switch (kind) {
    case GL_KRK_SUMABS: return gl_abs(v);
    case GL_KRK_SUMSQ: return v * v;
    case GL_KRK_SUMDEV: return (v - a) * (v - a);
    case GL_KRK_SUMEXP: return gl_exp(v - a);
    case GL_KRK_SUMPOW: return gl_pow(gl_abs(v), p);
    case GL_KRK_SUMNZ: return v != 0 ? (V)1 : (V)0;
    default: return v;
  }
}

/* max/min with NaN winning (kept once there). */
template <class V> __device__ __forceinline__ V gl_ext(V m, V v, bool max) {
  if (gl_isnan(m)) return m;
  if (gl_isnan(v)) return v;
  return (max ? v > m : v < m) ? v : m;
}

/* argmax/argmin: the first NaN, else the best value, ties to the lower position. */
template <class V>
__device__ __forceinline__ void gl_argpick(V &bv, int64_t &bi, V v, int64_t i, bool max) {
  bool bn = gl_isnan(bv), vn = gl_isnan(v), take;
  if (bn || vn) take = vn && (!bn || i < bi);
  else take = (max ? v > bv : v < bv) || (v == bv && i < bi);
  if (take) { bv = v; bi = i; }
}

/* ---- the pass kernel --------------------------------------------------------------------- */

template <int SDT, int CTK>
__global__ void __launch_bounds__(GL_KTHREADS)
gl_k_rpass(const gl_reduce_args r, int kind, const typename gl_dt<SDT>::S *src, gl_part *part,
           const double *param, double p_, int64_t P, int64_t chunk, int G) {
  typedef typename gl_ct<CTK>::VT V;
  typedef typename gl_ct<CTK>::AT A;
  __shared__ double sf[GL_KTHREADS / 32];
  __shared__ uint64_t su[GL_KTHREADS / 32];
  __shared__ int64_t si[GL_KTHREADS / 32];
  const int lane = threadIdx.x % G, gpb = blockDim.x / G;
  const int64_t items = r.M * P;
  const V p = (V)p_;
  for (int64_t item = (int64_t)blockIdx.x * gpb + threadIdx.x / G; item - threadIdx.x / G < items;
       item += (int64_t)gridDim.x * gpb) {
    /* the loop is uniform over a group (G >= 32 takes whole warps or the block); a thread
    ** past the end still joins the group's shuffles, with identities */
    bool live = item < items;
    int64_t o = live ? item % r.M : 0, pi = live ? item / r.M : 0;
    int64_t so = 0, dof = 0;
    if (live) gl_kept_offsets(r, o, &so, &dof);
    int64_t lo = pi * chunk, hi = live ? (lo + chunk < r.K ? lo + chunk : r.K) : 0;
    const typename gl_dt<SDT>::S *x = src + so;
    gl_part out = { 0.0, 0, 0 };
    if (kind <= GL_KRK_SUMNZ) {
      V a = param ? (V)param[live ? o : 0] : (V)0;
      A acc = 0;
      for (int64_t k = lo + lane; k < hi; k += G) {
        V v = gl_rload<SDT, CTK>(x, gl_red_offset(r, k));
        if constexpr (CTK == GL_KCOMPUTE_INT64) acc += (A)v;
        else acc += (A)gl_map<V>(kind, v, a, p);
      }
      acc = gl_group<A>(acc, G, [](A u, A w) { return u + w; }, sizeof(A) == 8 && CTK == GL_KCOMPUTE_INT64 ? (A *)su : (A *)sf);
      if constexpr (CTK == GL_KCOMPUTE_INT64) out.i = (int64_t)acc; else out.f = (double)acc;
    } else if (kind == GL_KRK_PROD) {
      A acc = 1;
      for (int64_t k = lo + lane; k < hi; k += G) acc *= (A)gl_rload<SDT, CTK>(x, gl_red_offset(r, k));
      acc = gl_group<A>(acc, G, [](A u, A w) { return u * w; }, CTK == GL_KCOMPUTE_INT64 ? (A *)su : (A *)sf);
      if constexpr (CTK == GL_KCOMPUTE_INT64) out.i = (int64_t)acc; else out.f = (double)acc;
    } else if (kind <= GL_KRK_MINABS) {
      bool max = kind == GL_KRK_MAX || kind == GL_KRK_MAXABS, abs = kind >= GL_KRK_MAXABS;
      V m;
      if constexpr (CTK == GL_KCOMPUTE_INT64) m = max ? INT64_MIN : INT64_MAX;
      else m = max ? (V)-INFINITY : (V)INFINITY;
      for (int64_t k = lo + lane; k < hi; k += G) {
        V v = gl_ordered<SDT>(gl_rload<SDT, CTK>(x, gl_red_offset(r, k)));
        m = gl_ext<V>(m, abs ? gl_abs(v) : v, max);
      }
      if constexpr (CTK == GL_KCOMPUTE_INT64) {
        int64_t mi = gl_group<int64_t>((int64_t)m, G, [max](int64_t u, int64_t w) { return gl_ext<int64_t>(u, w, max); }, si);
        out.i = mi;
      } else {
        double md = gl_group<double>((double)m, G, [max](double u, double w) { return gl_ext<double>(u, w, max); }, sf);
        out.f = md;
      }
    } else if (kind <= GL_KRK_ANY) {
      bool all = kind == GL_KRK_ALL;
      int64_t acc = all ? 1 : 0;
      for (int64_t k = lo + lane; k < hi; k += G) {
        V v = gl_rload<SDT, CTK>(x, gl_red_offset(r, k));
        if (all) acc &= (int64_t)(v != 0);
        else acc |= (int64_t)(v != 0);
      }
      acc = gl_group<int64_t>(acc, G, [all](int64_t u, int64_t w) { return all ? (u & w) : (u | w); }, si);
      out.i = acc;
    } else {                                  /* argmax / argmin */
      bool max = kind == GL_KRK_ARGMAX;
      V bv;
      if constexpr (CTK == GL_KCOMPUTE_INT64) bv = max ? INT64_MIN : INT64_MAX;
      else bv = max ? (V)-INFINITY : (V)INFINITY;
      int64_t bi = INT64_MAX;
      for (int64_t k = lo + lane; k < hi; k += G)
        gl_argpick<V>(bv, bi, gl_ordered<SDT>(gl_rload<SDT, CTK>(x, gl_red_offset(r, k))), k, max);
      if (G > 1) {
        /* pairs travel as two shuffles; the block step goes through shared memory */
#pragma unroll
        for (int s = 16; s >= 1; s /= 2) {
          V ov = __shfl_down_sync(GL_FULL, bv, s);
          int64_t oi = __shfl_down_sync(GL_FULL, bi, s);
          gl_argpick<V>(bv, bi, ov, oi, max);
        }
        if (G > 32) {
          int w = threadIdx.x / 32;
          if (threadIdx.x % 32 == 0) {
            if constexpr (CTK == GL_KCOMPUTE_INT64) su[w] = (uint64_t)bv; else sf[w] = (double)bv;
            si[w] = bi;
          }
          __syncthreads();
          if (threadIdx.x == 0)
            for (int k = 1; k < (int)(blockDim.x / 32); k++) {
              V ov;
              if constexpr (CTK == GL_KCOMPUTE_INT64) ov = (V)su[k]; else ov = (V)sf[k];
              gl_argpick<V>(bv, bi, ov, si[k], max);
            }
          __syncthreads();
        }
      }
      if constexpr (CTK == GL_KCOMPUTE_INT64) out.i = (int64_t)bv; else out.f = (double)bv;
      out.idx = bi;
    }
    if (live && lane == 0) part[pi * r.M + o] = out;
  }
}

/* ---- the full-reduction pass: one contiguous run of K elements ------------------------------ */

/* Whether gl_k_rfull has a kernel for (kind, source dtype, compute type): the compute type
** a source dtype gets by default (float for float32/float16/bfloat16, double for float64,
** int64 for integers and bool) and the kinds of sum, mean, var, max, min, all, any,
** logsumexp and the 1- and 2-norms. The rest (prod, argmax, other norms, other compute
** types) take gl_k_rpass. */
static bool gl_rfull_has(int kind, int sdt, int ctk) {
  /* the natural compute type of a dtype is its family: float, double, int64 */
  if (GL_DISPATCH_DTYPE(sdt, DT, gl_dt<DT>::compute) != ctk) return false;
  switch (kind) {
    case GL_KRK_SUM: case GL_KRK_MAX: case GL_KRK_MIN: case GL_KRK_ALL: case GL_KRK_ANY: return true;
    case GL_KRK_SUMABS: case GL_KRK_SUMSQ: case GL_KRK_SUMDEV: case GL_KRK_SUMEXP: return ctk != GL_KCOMPUTE_INT64;
    default: return false;
  }
}

/* One partial per block (part[blockIdx.x]) of a reduction of x[0..K) — the same element
** maps, accumulators and NaN rules as gl_k_rpass, read 16 bytes at a time: the elements
** before x's first 16-byte boundary and after the last whole vector take one thread each,
** the vectors go grid-stride, U of them in flight per thread before any is folded in (4, or
** 2 where 16 bytes hold 8 or 16 elements or exp is costly: more would spill registers).
** Float sums accumulate in double per thread (as gl_k_rpass), then warp shuffles and the
** block's tree; the grid (and so the result) depends only on K and the device. */
template <int SDT, int CTK, int KIND>
__global__ void __launch_bounds__(GL_KTHREADS, GL_KBLOCKS_PER_SM)
gl_k_rfull(const typename gl_dt<SDT>::S *x, int64_t K, gl_part *part, const double *param, double p_) {
  typedef typename gl_dt<SDT>::S S;
  typedef typename gl_ct<CTK>::VT V;
  typedef typename gl_ct<CTK>::AT A;
  constexpr int VEC = gl_vw<S>::n, U = VEC >= 8 || KIND == GL_KRK_SUMEXP ? 2 : 4;
  typedef gl_pack<S, VEC> PI;
  constexpr bool SUMS = KIND <= GL_KRK_SUMNZ, EXT = KIND >= GL_KRK_MAX && KIND <= GL_KRK_MINABS;
  constexpr bool MAX = KIND == GL_KRK_MAX || KIND == GL_KRK_MAXABS, ABS = KIND == GL_KRK_MAXABS || KIND == GL_KRK_MINABS;
  __shared__ double sf[GL_KTHREADS / 32];
  __shared__ uint64_t su[GL_KTHREADS / 32];
  __shared__ int64_t si[GL_KTHREADS / 32];
  const V a = param ? (V)param[0] : (V)0, p = (V)p_;
  A acc = 0;                                          /* sums */
  int64_t fl = KIND == GL_KRK_ALL ? 1 : 0;            /* all, any */
  V m;                                                /* max, min */
  if constexpr (CTK == GL_KCOMPUTE_INT64) m = MAX ? INT64_MIN : INT64_MAX;
  else m = MAX ? (V)-INFINITY : (V)INFINITY;
  auto step = [&](S s) {
    V v = gl_rconv<SDT, CTK>(s);
    if constexpr (SUMS) {
      if constexpr (CTK == GL_KCOMPUTE_INT64) acc += (A)v;
      else acc += (A)gl_map<V>(KIND, v, a, p);
    } else if constexpr (EXT) {
      m = gl_ext<V>(m, ABS ? gl_abs(gl_ordered<SDT>(v)) : gl_ordered<SDT>(v), MAX);
    } else if constexpr (KIND == GL_KRK_ALL) {
      fl &= (int64_t)(v != 0);
    } else {
      fl |= (int64_t)(v != 0);
    }
  };
  int64_t head = (int64_t)(((16u - ((uintptr_t)x & 15u)) & 15u) / sizeof(S));
  if (head > K) head = K;
  const PI *xv = (const PI *)(x + head);
  const int64_t nv = (K - head) / VEC, rest = head + nv * VEC;
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (int64_t)blockDim.x * gridDim.x;
  for (int64_t i = t; i < nv; i += U * stride) {
    PI w[U];
#pragma unroll
    for (int u = 0; u < U; u++)
      if (i + u * stride < nv) w[u] = xv[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; u++)
      if (i + u * stride < nv) {
#pragma unroll
        for (int k = 0; k < VEC; k++) step(w[u].v[k]);
      }
  }
  if (t < head) step(x[t]);
  if (rest + t < K) step(x[rest + t]);
  gl_part out = { 0.0, 0, 0 };
  if constexpr (EXT) {
    if constexpr (CTK == GL_KCOMPUTE_INT64)
      out.i = gl_group<int64_t>((int64_t)m, GL_KTHREADS, [](int64_t u, int64_t w) { return gl_ext<int64_t>(u, w, MAX); }, si);
    else
      out.f = gl_group<double>((double)m, GL_KTHREADS, [](double u, double w) { return gl_ext<double>(u, w, MAX); }, sf);
  } else if constexpr (SUMS) {
    if constexpr (CTK == GL_KCOMPUTE_INT64) out.i = (int64_t)gl_group<A>(acc, GL_KTHREADS, [](A u, A w) { return u + w; }, (A *)su);
    else out.f = (double)gl_group<A>(acc, GL_KTHREADS, [](A u, A w) { return u + w; }, (A *)sf);
  } else if constexpr (KIND == GL_KRK_ALL) {
    out.i = gl_group<int64_t>(fl, GL_KTHREADS, [](int64_t u, int64_t w) { return u & w; }, si);
  } else {
    out.i = gl_group<int64_t>(fl, GL_KTHREADS, [](int64_t u, int64_t w) { return u | w; }, si);
  }
  if (threadIdx.x == 0) part[blockIdx.x] = out;
}

/* ---- the finish kernel ------------------------------------------------------------------- */

/* Two partials of a pass of 'kind' as one. */
__device__ __forceinline__ gl_part gl_combine(gl_part a, gl_part b, int kind, int ctk) {
  if (kind <= GL_KRK_SUMNZ) {
    if (ctk == GL_KCOMPUTE_INT64) a.i = (int64_t)((uint64_t)a.i + (uint64_t)b.i); else a.f += b.f;
  } else if (kind == GL_KRK_PROD) {
    if (ctk == GL_KCOMPUTE_INT64) a.i = (int64_t)((uint64_t)a.i * (uint64_t)b.i); else a.f *= b.f;
  } else if (kind <= GL_KRK_MINABS) {
    bool max = kind == GL_KRK_MAX || kind == GL_KRK_MAXABS;
    if (ctk == GL_KCOMPUTE_INT64) a.i = gl_ext<int64_t>(a.i, b.i, max); else a.f = gl_ext<double>(a.f, b.f, max);
  } else if (kind == GL_KRK_ALL) {
    a.i = a.i & b.i;
  } else if (kind == GL_KRK_ANY) {
    a.i = a.i | b.i;
  } else {
    bool max = kind == GL_KRK_ARGMAX;
    if (ctk == GL_KCOMPUTE_INT64) gl_argpick<int64_t>(a.i, a.idx, b.i, b.idx, max);
    else gl_argpick<double>(a.f, a.idx, b.f, b.idx, max);
  }
  return a;
}

/* Folds the P partials of output o (part-major) with the pass's kind, in order. */
__device__ __forceinline__ gl_part gl_fold(const gl_part *part, int64_t M, int64_t P, int64_t o,
                                           int kind, int ctk) {
  gl_part a = part[o];
  for (int64_t q = 1; q < P; q++) a = gl_combine(a, part[q * M + o], kind, ctk);
  return a;
}

/* What a finish computes from the folded partial. */
enum {
  GL_KF_VALUE,      /* the partial's value (sum, prod, max, min, norms 1/inf/0) */
  GL_KF_INT,        /* its integer (all, any, integer sums) */
  GL_KF_INDEX,      /* argmax/argmin */
  GL_KF_MEAN,       /* value / K */
  GL_KF_VAR,        /* value / max(K - param, 0) */
  GL_KF_SQRT,       /* sqrt(value) (norm 2) */
  GL_KF_ROOT,       /* value^(1 / param) (norm p) */
  GL_KF_LSE,        /* log(value) + shift[o] */
  GL_KF_SHIFT       /* parameter: the value where finite, else 0 */
};

/* Output o from its folded partial a: the result into dst, or (pout) a parameter of the
** next pass. */
template <int DDT>
__device__ __forceinline__ void gl_rfinish_one(const gl_reduce_args &r, gl_part a, int64_t o, int kind, int ctk,
                                               int how, double param, double *pout, const double *shift,
                                               typename gl_dt<DDT>::S *dst) {
  bool f32 = ctk == GL_KCOMPUTE_FLOAT32;
  double v = a.f;
  if (f32) v = (double)(float)v;                /* the sum as the CT had it */
  bool isint = false;
  int64_t iv = 0;
  switch (how) {
    case GL_KF_VALUE:
      if (ctk == GL_KCOMPUTE_INT64) { isint = true; iv = a.i; }
      if (isint && (kind == GL_KRK_MAX || kind == GL_KRK_MIN)) iv = gl_ordered<DDT>(iv);
      break;
    case GL_KF_INT: isint = true; iv = a.i; break;
    case GL_KF_INDEX: isint = true; iv = a.idx; break;
    case GL_KF_MEAN: v = v / (double)r.K; break;
    case GL_KF_VAR: {
      double d = (double)r.K - param;
      v = v / (d > 0 ? d : 0.0);
      break;
    }
    case GL_KF_SQRT: v = sqrt(v); break;
    case GL_KF_ROOT: v = pow(v, 1.0 / param); break;
    case GL_KF_LSE: v = log(v) + shift[o]; break;
    case GL_KF_SHIFT: v = isfinite(v) ? v : 0.0; break;
    default: break;
  }
  if (f32) v = (double)(float)v;
  if (pout) { pout[o] = v; return; }
  int64_t so, dof;
  gl_kept_offsets(r, o, &so, &dof);
  if (isint) dst[dof] = gl_dt<DDT>::store_i(iv);
  else dst[dof] = gl_dt<DDT>::store_f(v);
}

/* One thread per output, folding its P partials in order. */
template <int DDT>
__global__ void gl_k_rfinish(const gl_reduce_args r, const gl_part *part, int64_t P, int kind, int ctk,
                             int how, double param, double *pout, const double *shift,
                             typename gl_dt<DDT>::S *dst) {
  GL_KLOOP(o, r.M)
    gl_rfinish_one<DDT>(r, gl_fold(part, r.M, P, o, kind, ctk), o, kind, ctk, how, param, pout, shift, dst);
}

/* A single output (M = 1, a full reduction): one block folds the P partials, each thread a
** fixed share, then a tree in shared memory, in an order fixed by P alone (deterministic).
** A thread that drew no partial stays out of the tree. */
template <int DDT>
__global__ void __launch_bounds__(GL_KTHREADS)
gl_k_rfinish1(const gl_reduce_args r, const gl_part *part, int64_t P, int kind, int ctk, int how, double param,
              double *pout, const double *shift, typename gl_dt<DDT>::S *dst) {
  __shared__ gl_part sp[GL_KTHREADS];
  __shared__ bool sh[GL_KTHREADS];
  const int t = threadIdx.x;
  gl_part a = { 0.0, 0, 0 };
  bool have = false;
  for (int64_t q = t; q < P; q += GL_KTHREADS) {
    a = have ? gl_combine(a, part[q], kind, ctk) : part[q];
    have = true;
  }
  sp[t] = a;
  sh[t] = have;
  __syncthreads();
  for (int w = GL_KTHREADS / 2; w > 0; w /= 2) {
    if (t < w && sh[t + w]) {
      sp[t] = sh[t] ? gl_combine(sp[t], sp[t + w], kind, ctk) : sp[t + w];
      sh[t] = true;
    }
    __syncthreads();
  }
  if (t == 0) gl_rfinish_one<DDT>(r, sp[0], 0, kind, ctk, how, param, pout, shift, dst);
}

/* ---- planning ------------------------------------------------------------------------------ */

typedef struct gl_rplan { int G; bool full; int64_t P, chunk; } gl_rplan;

/* Group size and parts: G = 1 when the fastest kept axis is faster than the fastest
** reduced one (or nothing is reduced); else a warp, or a block for long reductions. Parts
** until about 2^18 threads are busy, each part at least 16 elements per thread.
** A full reduction of one contiguous run (M = 1, stride 1: 'full') takes one part per
** block of gl_k_rfull's grid instead: one wave of the device, at most 1024, at least
** 16 elements per thread; gl_k_rpass then runs with the same parts when the kind has no
** gl_k_rfull kernel. */
static gl_rplan plan(const gl_reduce_args *r) {
  gl_rplan pl;
  pl.full = r->M == 1 && r->nreduced == 1 && r->reduced_src_strides[0] == 1 && r->K > 0;
  int64_t kmin = INT64_MAX, rmin = INT64_MAX;
  for (int k = 0; k < r->nkept; k++) { int64_t s = r->kept_src_strides[k] < 0 ? -r->kept_src_strides[k] : r->kept_src_strides[k]; if (s < kmin) kmin = s; }
  for (int k = 0; k < r->nreduced; k++) { int64_t s = r->reduced_src_strides[k] < 0 ? -r->reduced_src_strides[k] : r->reduced_src_strides[k]; if (s < rmin) rmin = s; }
  if (r->nreduced == 0 || (r->nkept > 0 && kmin < rmin && r->M >= 256)) pl.G = 1;
  else pl.G = r->K >= 4096 ? 256 : 32;
  int64_t want = ((int64_t)1 << 18) / pl.G;          /* groups that fill the GPU */
  int64_t pmax = r->K / ((int64_t)pl.G * 16);
  int64_t P = want / (r->M > 0 ? r->M : 1);
  if (P > pmax) P = pmax;
  if (P > 65536) P = 65536;
  if (pl.full) {
    P = (r->K + GL_KTHREADS * 16 - 1) / (GL_KTHREADS * 16);
    if (P > 32) {
      int64_t wave = (int64_t)gl_ksm_count() * GL_KBLOCKS_PER_SM;
      if (P > wave) P = wave;
      if (P > 1024) P = 1024;
    }
  }
  if (P < 1) P = 1;
  pl.chunk = r->K > 0 ? (r->K + P - 1) / P : 0;
  pl.P = pl.chunk > 0 ? (r->K + pl.chunk - 1) / pl.chunk : 1;
  return pl;
}

extern "C" size_t gl_reduce_scratch(const gl_reduce_args *r) {
  gl_rplan pl = plan(r);
  /* a full reduction's part count follows the SM count: size for its cap, so a second
  ** plan() that saw another count can never write past the scratch */
  int64_t P = pl.full && pl.P < 1024 ? 1024 : pl.P;
  return (size_t)(r->M * P) * sizeof(gl_part) + (size_t)r->M * sizeof(double) + 256;
}

/* ---- launchers ------------------------------------------------------------------------------ */

template <int SDT, int CTK>
static int rpass_dt(cudaStream_t s, const gl_reduce_args *r, const gl_rplan *pl, unsigned blocks, int kind,
                    const void *src, gl_part *part, const double *param, double p) {
  gl_k_rpass<SDT, CTK><<<blocks, GL_KTHREADS, 0, s>>>(*r, kind, (const typename gl_dt<SDT>::S *)src, part, param,
                                                     p, pl->P, pl->chunk, pl->G);
  return gl_klaunched();
}

template <int CTK>
static int rpass_ct(cudaStream_t s, const gl_reduce_args *r, const gl_rplan *pl, int kind, const void *src,
                    int sdt, gl_part *part, const double *param, double p) {
  int64_t items = r->M * pl->P, gpb = GL_KTHREADS / pl->G;
  int64_t b = (items + gpb - 1) / gpb;
  unsigned blocks = (unsigned)(b > GL_KMAXBLOCKS ? GL_KMAXBLOCKS : b < 1 ? 1 : b);
  return GL_DISPATCH_DTYPE(sdt, DT, rpass_dt<DT, CTK>(s, r, pl, blocks, kind, src, part, param, p));
}

/* The vector pass of one source dtype: stamped for the natural compute type of SDT (its
** family) and, for integers, the kinds gl_rfull_has lists. */
template <int SDT, int CTK, int KIND>
static int rfull_dt(cudaStream_t s, const gl_rplan *pl, const void *src, int64_t K, gl_part *part,
                    const double *param, double p) {
  constexpr bool INT_KIND = KIND == GL_KRK_SUM || KIND == GL_KRK_MAX || KIND == GL_KRK_MIN || KIND == GL_KRK_ALL ||
                            KIND == GL_KRK_ANY;
  if constexpr (gl_dt<SDT>::compute != CTK || (CTK == GL_KCOMPUTE_INT64 && !INT_KIND)) {
    return GL_KERR_NOTSUP;
  } else {
    gl_k_rfull<SDT, CTK, KIND><<<(unsigned)pl->P, GL_KTHREADS, 0, s>>>((const typename gl_dt<SDT>::S *)src, K, part,
                                                                      param, p);
    return gl_klaunched();
  }
}

template <int CTK, int KIND>
static int rfull_kind(cudaStream_t s, const gl_rplan *pl, const void *src, int sdt, int64_t K, gl_part *part,
                      const double *param, double p) {
  return GL_DISPATCH_DTYPE(sdt, DT, rfull_dt<DT, CTK, KIND>(s, pl, src, K, part, param, p));
}

template <int CTK>
static int rfull_ct(cudaStream_t s, const gl_rplan *pl, int kind, const void *src, int sdt, int64_t K,
                    gl_part *part, const double *param, double p) {
  switch (kind) {
    case GL_KRK_SUM: return rfull_kind<CTK, GL_KRK_SUM>(s, pl, src, sdt, K, part, param, p);
    case GL_KRK_SUMABS: return rfull_kind<CTK, GL_KRK_SUMABS>(s, pl, src, sdt, K, part, param, p);
    case GL_KRK_SUMSQ: return rfull_kind<CTK, GL_KRK_SUMSQ>(s, pl, src, sdt, K, part, param, p);
    case GL_KRK_SUMDEV: return rfull_kind<CTK, GL_KRK_SUMDEV>(s, pl, src, sdt, K, part, param, p);
    case GL_KRK_SUMEXP: return rfull_kind<CTK, GL_KRK_SUMEXP>(s, pl, src, sdt, K, part, param, p);
    case GL_KRK_MAX: return rfull_kind<CTK, GL_KRK_MAX>(s, pl, src, sdt, K, part, param, p);
    case GL_KRK_MIN: return rfull_kind<CTK, GL_KRK_MIN>(s, pl, src, sdt, K, part, param, p);
    case GL_KRK_ALL: return rfull_kind<CTK, GL_KRK_ALL>(s, pl, src, sdt, K, part, param, p);
    case GL_KRK_ANY: return rfull_kind<CTK, GL_KRK_ANY>(s, pl, src, sdt, K, part, param, p);
    default: return GL_KERR_NOTSUP;
  }
}

static int rpass(cudaStream_t s, const gl_reduce_args *r, const gl_rplan *pl, int kind, const void *src,
                 int sdt, int ctk, gl_part *part, const double *param, double p) {
  if (ctk == GL_KCOMPUTE_INT64 && kind > GL_KRK_SUM && kind <= GL_KRK_SUMNZ) return GL_KERR_NOTSUP;
  if (pl->full && gl_rfull_has(kind, sdt, ctk)) {
    switch (ctk) {
      case GL_KCOMPUTE_FLOAT32: return rfull_ct<GL_KCOMPUTE_FLOAT32>(s, pl, kind, src, sdt, r->K, part, param, p);
      case GL_KCOMPUTE_FLOAT64: return rfull_ct<GL_KCOMPUTE_FLOAT64>(s, pl, kind, src, sdt, r->K, part, param, p);
      default: return rfull_ct<GL_KCOMPUTE_INT64>(s, pl, kind, src, sdt, r->K, part, param, p);
    }
  }
  switch (ctk) {
    case GL_KCOMPUTE_FLOAT32: return rpass_ct<GL_KCOMPUTE_FLOAT32>(s, r, pl, kind, src, sdt, part, param, p);
    case GL_KCOMPUTE_FLOAT64: return rpass_ct<GL_KCOMPUTE_FLOAT64>(s, r, pl, kind, src, sdt, part, param, p);
    case GL_KCOMPUTE_INT64: return rpass_ct<GL_KCOMPUTE_INT64>(s, r, pl, kind, src, sdt, part, param, p);
    default: return GL_KERR_NOTSUP;
  }
}

template <int DDT>
static int rfinish_dt(cudaStream_t s, const gl_reduce_args *r, const gl_rplan *pl, const gl_part *part, int kind,
                      int ctk, int how, double param, double *pout, const double *shift, void *dst) {
  typedef typename gl_dt<DDT>::S S;
  if (r->M == 1)
    gl_k_rfinish1<DDT><<<1, GL_KTHREADS, 0, s>>>(*r, part, pl->P, kind, ctk, how, param, pout, shift, (S *)dst);
  else
    gl_k_rfinish<DDT><<<gl_kblocks(r->M), GL_KTHREADS, 0, s>>>(*r, part, pl->P, kind, ctk, how, param, pout,
                                                               shift, (S *)dst);
  return gl_klaunched();
}

static int rfinish(cudaStream_t s, const gl_reduce_args *r, const gl_rplan *pl, const gl_part *part,
                   int kind, int ctk, int how, double param, double *pout, const double *shift,
                   void *dst, int ddt) {
  return GL_DISPATCH_DTYPE(ddt, DT, rfinish_dt<DT>(s, r, pl, part, kind, ctk, how, param, pout, shift, dst));
}

#define GL_RTRY(call) do { int rc_ = (call); if (rc_ != 0) return rc_; } while (0)

/* ---- complex sources ------------------------------------------------------------------------ */

/* The complex reductions whose parts cannot be reduced apart (src/ops/reduce.c reduces the
** rest over the parts with the kernels above): prod, and max, min, argmax, argmin in NumPy's
** order, by the real parts then the imaginary ones, an element with a NaN in either part
** winning (the first such one), ties to the lower position; cpu_reduce_complex.c is the
** reference. Products accumulate in double, as float32's do here. The passes and finishes
** are those of the real reductions with a partial of a complex value and its position. */

struct gl_cpart { double re, im; int64_t idx; };     /* idx INT64_MAX: nothing seen yet */
static_assert(sizeof(gl_cpart) == sizeof(gl_part), "complex partials fill the real scratch");

__device__ __forceinline__ bool gl_cnan(const gl_cpart &a) { return a.re != a.re || a.im != a.im; }

/* a, b for prod: their product; for the others the better of two partials (an empty one
** loses, a NaN wins, then the lexicographic order, ties to the lower position): the same
** answer in any order of folding. */
__device__ __forceinline__ gl_cpart gl_ccombine(gl_cpart a, gl_cpart b, int op) {
  if (op == GL_KR_PROD) {
    gl_cz p = gl_complex128_mul(gl_cz_make(a.re, a.im), gl_cz_make(b.re, b.im));
    return { p.re, p.im, 0 };
  }
  if (b.idx == INT64_MAX) return a;
  if (a.idx == INT64_MAX) return b;
  bool an = gl_cnan(a), bn = gl_cnan(b), take;
  if (an || bn) {
    take = bn && (!an || b.idx < a.idx);
  } else {
    bool max = op == GL_KR_MAX || op == GL_KR_ARGMAX;
    const gl_cpart &lo = max ? a : b, &hi = max ? b : a;          /* b better: lo before hi */
    bool better = lo.re < hi.re || (lo.re == hi.re && lo.im < hi.im);
    take = better || (a.re == b.re && a.im == b.im && b.idx < a.idx);
  }
  return take ? b : a;
}

__device__ __forceinline__ gl_cpart gl_cshfl_down(const gl_cpart &a, int o) {
  return { __shfl_down_sync(GL_FULL, a.re, o), __shfl_down_sync(GL_FULL, a.im, o),
           __shfl_down_sync(GL_FULL, a.idx, o) };
}

/* Pass: as gl_k_rpass, one (output, part) item per group of G threads. */
template <int SDT>
__global__ void __launch_bounds__(GL_KTHREADS)
gl_k_cpass(const gl_reduce_args r, int op, const typename gl_dt<SDT>::S *src, gl_cpart *part, int64_t P,
           int64_t chunk, int G) {
  __shared__ gl_cpart sp[GL_KTHREADS / 32];
  const int lane = threadIdx.x % G, gpb = blockDim.x / G;
  const int64_t items = r.M * P;
  const gl_cpart none = { op == GL_KR_PROD ? 1.0 : 0.0, 0.0, op == GL_KR_PROD ? 0 : INT64_MAX };
  for (int64_t item = (int64_t)blockIdx.x * gpb + threadIdx.x / G; item - threadIdx.x / G < items;
       item += (int64_t)gridDim.x * gpb) {
    bool live = item < items;                 /* a thread past the end joins with 'none' */
    int64_t o = live ? item % r.M : 0, pi = live ? item / r.M : 0;
    int64_t so = 0, dof = 0;
    if (live) gl_kept_offsets(r, o, &so, &dof);
    int64_t lo = pi * chunk, hi = live ? (lo + chunk < r.K ? lo + chunk : r.K) : 0;
    gl_cpart acc = none;
    for (int64_t k = lo + lane; k < hi; k += G) {
      typename gl_dt<SDT>::S z = src[so + gl_red_offset(r, k)];
      acc = gl_ccombine(acc, { (double)z.re, (double)z.im, k }, op);
    }
    if (G > 1) {
#pragma unroll
      for (int s = 16; s >= 1; s /= 2) acc = gl_ccombine(acc, gl_cshfl_down(acc, s), op);
      if (G > 32) {
        if (threadIdx.x % 32 == 0) sp[threadIdx.x / 32] = acc;
        __syncthreads();
        if (threadIdx.x == 0)
          for (int k = 1; k < (int)(blockDim.x / 32); k++) acc = gl_ccombine(acc, sp[k], op);
        __syncthreads();
      }
    }
    if (live && lane == 0) part[pi * r.M + o] = acc;
  }
}

/* Finish: one thread per output folds its P partials in order and stores the value (prod,
** max, min) or the position (argmax, argmin). */
template <int DDT>
__global__ void gl_k_cfinish(const gl_reduce_args r, const gl_cpart *part, int64_t P, int op,
                             typename gl_dt<DDT>::S *dst) {
  GL_KLOOP(o, r.M) {
    gl_cpart a = part[o];
    for (int64_t q = 1; q < P; q++) a = gl_ccombine(a, part[q * r.M + o], op);
    int64_t so, dof;
    gl_kept_offsets(r, o, &so, &dof);
    if constexpr (gl_dt<DDT>::kind == GL_KIND_COMPLEX) dst[dof] = gl_dt<DDT>::store_c(gl_make_complex128(a.re, a.im));
    else dst[dof] = gl_dt<DDT>::store_i(a.idx);
  }
}

template <int SDT>
static int cpass_dt(cudaStream_t s, const gl_reduce_args *r, const gl_rplan *pl, int op, const void *src,
                    gl_cpart *part) {
  if constexpr (gl_dt<SDT>::kind != GL_KIND_COMPLEX) {
    return GL_KERR_NOTSUP;
  } else {
    int64_t items = r->M * pl->P, gpb = GL_KTHREADS / pl->G, b = (items + gpb - 1) / gpb;
    unsigned blocks = (unsigned)(b > GL_KMAXBLOCKS ? GL_KMAXBLOCKS : b < 1 ? 1 : b);
    gl_k_cpass<SDT><<<blocks, GL_KTHREADS, 0, s>>>(*r, op, (const typename gl_dt<SDT>::S *)src, part, pl->P,
                                                    pl->chunk, pl->G);
    return gl_klaunched();
  }
}

template <int DDT>
static int cfinish_dt(cudaStream_t s, const gl_reduce_args *r, const gl_rplan *pl, int op, const gl_cpart *part,
                      void *dst) {
  constexpr bool positions = DDT == GL_KD_INT64, values = gl_dt<DDT>::kind == GL_KIND_COMPLEX;
  if constexpr (!positions && !values) {
    return GL_KERR_NOTSUP;
  } else {
    gl_k_cfinish<DDT><<<gl_kblocks(r->M), GL_KTHREADS, 0, s>>>(*r, part, pl->P, op, (typename gl_dt<DDT>::S *)dst);
    return gl_klaunched();
  }
}

static bool gl_is_complex(int dt) {
  return GL_DISPATCH_DTYPE_ALL(dt, DT, (int)(gl_dt<DT>::kind == GL_KIND_COMPLEX)) == 1;
}

static int creduce(cudaStream_t s, int op, const gl_reduce_args *r, void *dst, int ddt, const void *src, int sdt,
                   void *scratch) {
  bool arg = op == GL_KR_ARGMAX || op == GL_KR_ARGMIN;
  if (op != GL_KR_PROD && op != GL_KR_MAX && op != GL_KR_MIN && !arg) return GL_KERR_NOTSUP;
  if (arg != (ddt == GL_KD_INT64)) return GL_KERR_NOTSUP;
  gl_rplan pl = plan(r);
  gl_cpart *part = (gl_cpart *)scratch;
  GL_RTRY(GL_DISPATCH_DTYPE_ALL(sdt, DT, cpass_dt<DT>(s, r, &pl, op, src, part)));
  return GL_DISPATCH_DTYPE_ALL(ddt, DT, cfinish_dt<DT>(s, r, &pl, op, part, dst));
}



extern "C" int gl_klaunch_reduce(void *stream, int op, const gl_reduce_args *r, void *dst, int ddt,
                                 const void *src, int sdt, int ctk, double param, void *scratch) {
  if (r->M <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (gl_is_complex(sdt)) return creduce(s, op, r, dst, ddt, src, sdt, scratch);
  gl_rplan pl = plan(r);
  gl_part *part = (gl_part *)scratch;
  double *pbuf = (double *)((char *)scratch + (size_t)(r->M * pl.P) * sizeof(gl_part));
  bool ci = ctk == GL_KCOMPUTE_INT64;
  /* one pass of kind k, finished as 'how' into dst */
  auto one_pass = [&](int k, int how) -> int {
    GL_RTRY(rpass(s, r, &pl, k, src, sdt, ctk, part, NULL, 0));
    return rfinish(s, r, &pl, part, k, ctk, how, 0, NULL, NULL, dst, ddt);
  };
  switch (op) {
    case GL_KR_SUM: return one_pass(GL_KRK_SUM, GL_KF_VALUE);
    case GL_KR_PROD: return one_pass(GL_KRK_PROD, GL_KF_VALUE);
    case GL_KR_MAX: return one_pass(GL_KRK_MAX, GL_KF_VALUE);
    case GL_KR_MIN: return one_pass(GL_KRK_MIN, GL_KF_VALUE);
    case GL_KR_ARGMAX: return one_pass(GL_KRK_ARGMAX, GL_KF_INDEX);
    case GL_KR_ARGMIN: return one_pass(GL_KRK_ARGMIN, GL_KF_INDEX);
    case GL_KR_ALL: return one_pass(GL_KRK_ALL, GL_KF_INT);
    case GL_KR_ANY: return one_pass(GL_KRK_ANY, GL_KF_INT);
    case GL_KR_MEAN: return ci ? GL_KERR_NOTSUP : one_pass(GL_KRK_SUM, GL_KF_MEAN);
    case GL_KR_VAR:
      if (ci) return GL_KERR_NOTSUP;
      GL_RTRY(rpass(s, r, &pl, GL_KRK_SUM, src, sdt, ctk, part, NULL, 0));
      GL_RTRY(rfinish(s, r, &pl, part, GL_KRK_SUM, ctk, GL_KF_MEAN, 0, pbuf, NULL, NULL, ddt));
      GL_RTRY(rpass(s, r, &pl, GL_KRK_SUMDEV, src, sdt, ctk, part, pbuf, 0));
      return rfinish(s, r, &pl, part, GL_KRK_SUMDEV, ctk, GL_KF_VAR, param, NULL, NULL, dst, ddt);
    case GL_KR_NORM: {
      if (ci) return GL_KERR_NOTSUP;
      int k, how;
      if (param == 2) { k = GL_KRK_SUMSQ; how = GL_KF_SQRT; }
      else if (param == 1) { k = GL_KRK_SUMABS; how = GL_KF_VALUE; }
      else if (isinf(param)) { k = param > 0 ? GL_KRK_MAXABS : GL_KRK_MINABS; how = GL_KF_VALUE; }
      else if (param == 0) { k = GL_KRK_SUMNZ; how = GL_KF_VALUE; }
      else { k = GL_KRK_SUMPOW; how = GL_KF_ROOT; }
      GL_RTRY(rpass(s, r, &pl, k, src, sdt, ctk, part, NULL, param));
      return rfinish(s, r, &pl, part, k, ctk, how, param, NULL, NULL, dst, ddt);
    }
    case GL_KR_LOGSUMEXP:
      if (ci) return GL_KERR_NOTSUP;
      GL_RTRY(rpass(s, r, &pl, GL_KRK_MAX, src, sdt, ctk, part, NULL, 0));
      GL_RTRY(rfinish(s, r, &pl, part, GL_KRK_MAX, ctk, GL_KF_SHIFT, 0, pbuf, NULL, NULL, ddt));
      GL_RTRY(rpass(s, r, &pl, GL_KRK_SUMEXP, src, sdt, ctk, part, pbuf, 0));
      return rfinish(s, r, &pl, part, GL_KRK_SUMEXP, ctk, GL_KF_LSE, 0, NULL, pbuf, dst, ddt);
    default:
      return GL_KERR_NOTSUP;
  }
}

/* ---- scans ------------------------------------------------------------------------------- */

/* Runtime-typed loads and stores: a scan is bound by memory, and stamping it per (source,
** destination) pair would make 64 copies for nothing. */
template <class A>
__device__ __forceinline__ A gl_sload(const void *p, int64_t off, int sdt, int ctk) {
  double f = 0;
  int64_t i = 0;
  bool isf = false;
  gl_dispatch_dtype(sdt, 0, [&](auto c) -> int {
    constexpr int DT = decltype(c)::value;
    auto v = gl_dt<DT>::load(((const typename gl_dt<DT>::S *)p)[off]);
    if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_INT64) i = (int64_t)v;
    else { f = (double)v; isf = true; }
    return 0;
  });
  if (ctk == GL_KCOMPUTE_INT64) return (A)(isf ? gl_sat_int64(f) : i);
  if (ctk == GL_KCOMPUTE_FLOAT32) return (A)(isf ? (float)f : (float)i);
  return (A)(isf ? f : (double)i);
}

/* An integer or bool destination takes the value as an integer, a float one as a float. */
template <class A>
__device__ __forceinline__ void gl_sstore(void *p, int64_t off, int ddt, A v) {
  gl_dispatch_dtype(ddt, 0, [&](auto c) -> int {
    constexpr int DT = decltype(c)::value;
    typedef typename gl_dt<DT>::S S;
    if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_INT64) ((S *)p)[off] = gl_dt<DT>::store_i(v);
    else ((S *)p)[off] = gl_dt<DT>::store_f(v);
    return 0;
  });
}

/* The line's offsets in src and dst: every axis but the scanned one. */
__device__ __forceinline__ void gl_line_offsets(const gl_scan_args &sc, int64_t l, int64_t *so, int64_t *dof) {
  gl_walk_offsets(sc.ndim, sc.shape, sc.src_strides, sc.dst_strides, l, so, dof);
}

/* Float scans run in the CT (float for float32) as the CPU's sequential loop does. */
template <int CTK> struct gl_sacc { typedef typename gl_ct<CTK>::VT T; };
template <> struct gl_sacc<GL_KCOMPUTE_INT64> { typedef uint64_t T; };

template <int CTK, bool PROD>
__global__ void gl_k_scan_lines(const gl_scan_args sc, void *dst, int ddt, const void *src, int sdt) {
  typedef typename gl_sacc<CTK>::T A;
  GL_KLOOP(l, sc.lines) {
    int64_t so, dof;
    gl_line_offsets(sc, l, &so, &dof);
    A c = PROD ? (A)1 : (A)0;
    for (int64_t k = 0; k < sc.K; k++) {
      A v = gl_sload<A>(src, so + k * sc.src_stride, sdt, CTK);
      c = PROD ? (A)(c * v) : (A)(c + v);
      gl_sstore<A>(dst, dof + k * sc.dst_stride, ddt, c);
    }
  }
}

template <class A, bool PROD> struct gl_sop {
  __device__ __forceinline__ A operator()(const A &a, const A &b) const { return PROD ? (A)(a * b) : (A)(a + b); }
};

/* One block per line, 256 elements at a time through cub::BlockScan, with a carry. */
template <int CTK, bool PROD>
__global__ void __launch_bounds__(GL_KTHREADS)
gl_k_scan_block(const gl_scan_args sc, void *dst, int ddt, const void *src, int sdt) {
  typedef typename gl_sacc<CTK>::T A;
  typedef cub::BlockScan<A, GL_KTHREADS> BS;
  __shared__ typename BS::TempStorage tmp;
  gl_sop<A, PROD> op;
  for (int64_t l = blockIdx.x; l < sc.lines; l += gridDim.x) {
    int64_t so, dof;
    gl_line_offsets(sc, l, &so, &dof);
    A carry = PROD ? (A)1 : (A)0;
    for (int64_t k0 = 0; k0 < sc.K; k0 += GL_KTHREADS) {
      int64_t k = k0 + threadIdx.x;
      A v = k < sc.K ? gl_sload<A>(src, so + k * sc.src_stride, sdt, CTK) : (PROD ? (A)1 : (A)0);
      A out, agg;
      BS(tmp).InclusiveScan(v, out, op, agg);
      out = op(carry, out);
      if (k < sc.K) gl_sstore<A>(dst, dof + k * sc.dst_stride, ddt, out);
      carry = op(carry, agg);
      __syncthreads();
    }
  }
}

/* cumprod of a complex source: a thread per line, the running product in double (the cpu
** rounds each step to the result's precision). */
template <int SDT, int DDT>
__global__ void gl_k_cscan_lines(const gl_scan_args sc, typename gl_dt<DDT>::S *dst,
                                 const typename gl_dt<SDT>::S *src) {
  GL_KLOOP(l, sc.lines) {
    int64_t so, dof;
    gl_line_offsets(sc, l, &so, &dof);
    double cr = 1, ci = 0;
    for (int64_t k = 0; k < sc.K; k++) {
      typename gl_dt<SDT>::S z = src[so + k * sc.src_stride];
      double zr = (double)z.re, zi = (double)z.im, t = cr * zr - ci * zi;
      ci = cr * zi + ci * zr;
      cr = t;
      dst[dof + k * sc.dst_stride] = gl_dt<DDT>::store_c(gl_make_complex128(cr, ci));
    }
  }
}

template <int SDT, int DDT>
static int cscan_dt(cudaStream_t s, const gl_scan_args *sc, void *dst, const void *src) {
  if constexpr (gl_dt<SDT>::kind != GL_KIND_COMPLEX || gl_dt<DDT>::kind != GL_KIND_COMPLEX) {
    return GL_KERR_NOTSUP;
  } else {
    gl_k_cscan_lines<SDT, DDT><<<gl_kblocks(sc->lines), GL_KTHREADS, 0, s>>>(
        *sc, (typename gl_dt<DDT>::S *)dst, (const typename gl_dt<SDT>::S *)src);
    return gl_klaunched();
  }
}

template <int CTK>
static int scan_ct(cudaStream_t s, bool prod, const gl_scan_args *sc, void *dst, int ddt, const void *src, int sdt) {
  /* a block per line when lines are few and long; else a thread per line */
  bool block = sc->K >= 512 && sc->lines < 4096;
  if (block) {
    unsigned b = (unsigned)(sc->lines > GL_KMAXBLOCKS ? GL_KMAXBLOCKS : sc->lines);
    if (prod) gl_k_scan_block<CTK, true><<<b, GL_KTHREADS, 0, s>>>(*sc, dst, ddt, src, sdt);
    else gl_k_scan_block<CTK, false><<<b, GL_KTHREADS, 0, s>>>(*sc, dst, ddt, src, sdt);
  } else {
    if (prod) gl_k_scan_lines<CTK, true><<<gl_kblocks(sc->lines), GL_KTHREADS, 0, s>>>(*sc, dst, ddt, src, sdt);
    else gl_k_scan_lines<CTK, false><<<gl_kblocks(sc->lines), GL_KTHREADS, 0, s>>>(*sc, dst, ddt, src, sdt);
  }
  return gl_klaunched();
}

extern "C" int gl_klaunch_scan(void *stream, int prod, const gl_scan_args *sc, void *dst, int ddt,
                               const void *src, int sdt, int ctk) {
  if (sc->lines <= 0 || sc->K <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (gl_is_complex(ddt)) {                      /* a complex cumsum is the parts' */
    if (!prod) return GL_KERR_NOTSUP;
    return GL_DISPATCH_DTYPE_ALL(sdt, SD, GL_DISPATCH_DTYPE_ALL(ddt, DD, cscan_dt<SD, DD>(s, sc, dst, src)));
  }
  switch (ctk) {
    case GL_KCOMPUTE_FLOAT32: return scan_ct<GL_KCOMPUTE_FLOAT32>(s, prod != 0, sc, dst, ddt, src, sdt);
    case GL_KCOMPUTE_FLOAT64: return scan_ct<GL_KCOMPUTE_FLOAT64>(s, prod != 0, sc, dst, ddt, src, sdt);
    case GL_KCOMPUTE_INT64: return scan_ct<GL_KCOMPUTE_INT64>(s, prod != 0, sc, dst, ddt, src, sdt);
    default: return GL_KERR_NOTSUP;
  }
}
