/*
** attention.cu — FlashAttention's forward, flash-style on the GPU: one warp per query row
** walks the keys with an online softmax (running maximum, running sum, running output
** rescaled when the maximum grows), so the (L, S) scores are never stored. Each lane holds
** Ev / 32 (at most GL_KATT_MAX_EV / 32) output columns in registers; the dot product of a
** key is a warp sum. The same arithmetic as the CPU's (src/backend/cpu/cpu_fused.c), one
** key at a time instead of blocks of 64.
**
** The backward (FlashAttention-2's) works on tiles of GL_ATT_BT query rows x GL_ATT_BT keys
** held in shared memory: the scores and dP of a tile are tiled dot products (column chunks
** of the operands staged in shared memory), P = exp(S - lse) from the forward's logsumexp.
** Two kernels, no atomics: one block per key tile sums gk and gv over the query tiles, one
** block per query tile sums gq over the key tiles (P and dS are computed twice, the price
** of a deterministic result). Correctness first: the accumulations read their operands
** from global memory, not from staged tiles.
*/
#include "warp.cuh"
#include "attention.h"


/* ---- kernels --------------------------------------------------------------------------------- */

#define GL_ATT_PER_LANE (GL_KATT_MAX_EV / 32)

/* One warp per row r of the B * L query rows; 8 rows per block of 256 threads. */
template <class T>
__global__ void gl_k_attention(int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, T *out, T *lse, const T *q,
                               const T *k, const T *v, T scale, int causal) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < B * L; r += warps) {
    const int64_t b = r / L, i = r - b * L;
    const T *qi = q + r * E, *kb = k + b * S * E, *vb = v + b * S * Ev;
    T acc[GL_ATT_PER_LANE];
#pragma unroll
    for (int c = 0; c < GL_ATT_PER_LANE; c++) acc[c] = 0;
    T m = -(T)INFINITY, l = 0;
    const int64_t send = causal ? (i + 1 < S ? i + 1 : S) : S;
    for (int64_t j = 0; j < send; j++) {
      const T *kj = kb + j * E;
      T d = 0;
      for (int64_t e = lane; e < E; e += 32) d += qi[e] * kj[e];
      const T s = gl_warp_sum(d) * scale;
      if (s > m) {
        const T f = m == -(T)INFINITY ? (T)0 : gl_expt(m - s);
        l *= f;
#pragma unroll
        for (int c = 0; c < GL_ATT_PER_LANE; c++) acc[c] *= f;
        m = s;
      }
      if (m == -(T)INFINITY) continue;
      const T p = gl_expt(s - m);
      l += p;
      const T *vj = vb + j * Ev;
#pragma unroll
      for (int c = 0; c < GL_ATT_PER_LANE; c++) {
        const int64_t col = lane + 32 * (int64_t)c;
        if (col < Ev) acc[c] += p * vj[col];
      }
    }
    const T rl = (T)1 / l;
#pragma unroll
    for (int c = 0; c < GL_ATT_PER_LANE; c++) {
      const int64_t col = lane + 32 * (int64_t)c;
      if (col < Ev) out[r * Ev + col] = acc[c] * rl;
    }
    if (lane == 0) lse[r] = m + gl_logt(l);
  }
}

/* ---- backward kernels ----------------------------------------------------------------------- */

#define GL_ATT_BT 16                       /* tile edge: one (row, key) pair per thread */
#define GL_ATT_CW 32                       /* columns of a staged chunk */
#define GL_ATT_BWD_THREADS (GL_ATT_BT * GL_ATT_BT)

/* D[r] = rowsum(g * out) of each of the B * L rows (0 for a row without keys, lse = -inf: its
** out may be NaN), one warp per row. */
template <class T>
__global__ void gl_k_attention_dsum(int64_t rows, int64_t Ev, T *dsum, const T *g, const T *out, const T *lse) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
    T d = 0;
    for (int64_t c = lane; c < Ev; c += 32) d += g[r * Ev + c] * out[r * Ev + c];
    d = gl_warp_sum(d);
    if (lane == 0) dsum[r] = lse[r] == -(T)INFINITY ? (T)0 : d;
  }
}

/* The block's thread (r, j) = (threadIdx.x / BT, threadIdx.x % BT) gets sum_c a[r][c] b[j][c]
** over W columns, a: na (<= BT) rows of W from 'a', b: nb rows from 'b'; chunks of GL_ATT_CW
** columns staged in sa, sb (BT x CW each). Every thread of the block calls it. */
template <class T>
__device__ T gl_att_tile_dot(const T *a, int64_t na, const T *b, int64_t nb, int64_t W, T *sa, T *sb) {
  const int t = threadIdx.x, r = t / GL_ATT_BT, j = t % GL_ATT_BT;
  T acc = 0;
  for (int64_t c0 = 0; c0 < W; c0 += GL_ATT_CW) {
    for (int x = t; x < GL_ATT_BT * GL_ATT_CW; x += GL_ATT_BWD_THREADS) {
      const int rr = x / GL_ATT_CW;
      const int64_t c = c0 + x % GL_ATT_CW;
      sa[x] = rr < na && c < W ? a[rr * W + c] : (T)0;
      sb[x] = rr < nb && c < W ? b[rr * W + c] : (T)0;
    }
    __syncthreads();
#pragma unroll 8
    for (int cc = 0; cc < GL_ATT_CW; cc++) acc += sa[r * GL_ATT_CW + cc] * sb[j * GL_ATT_CW + cc];
    __syncthreads();
  }
  return acc;
}

/* The P and dS = scale * P * (dP - D) of one tile, query rows i0.. (mq of them) of head b
** against keys j0.. (nk), into p and ds (BT x BT, zero outside the tile, past a row's
** causal limit and on rows without keys); returns after a barrier. */
template <class T>
__device__ void gl_att_tile_pds(int64_t b, int64_t i0, int64_t mq, int64_t j0, int64_t nk, int64_t L, int64_t S,
                                int64_t E, int64_t Ev, const T *g, const T *q, const T *k, const T *v, const T *lse,
                                const T *dsum, T scale, int causal, T *sa, T *sb, T *p, T *ds) {
  const int t = threadIdx.x, r = t / GL_ATT_BT, j = t % GL_ATT_BT;
  const T s = gl_att_tile_dot(q + (b * L + i0) * E, mq, k + (b * S + j0) * E, nk, E, sa, sb);
  const T dp = gl_att_tile_dot(g + (b * L + i0) * Ev, mq, v + (b * S + j0) * Ev, nk, Ev, sa, sb);
  T pv = 0, dsv = 0;
  if (r < mq && j < nk && !(causal && j0 + j > i0 + r)) {
    const T m = lse[b * L + i0 + r];
    if (m != -(T)INFINITY) {
      pv = gl_expt(s * scale - m);
      dsv = scale * pv * (dp - dsum[b * L + i0 + r]);
    }
  }
  p[t] = pv;
  ds[t] = dsv;
  __syncthreads();
}

/* gk, gv of key tile kt of head b, one block per (b, kt), grid-striding: gv_j = sum_i P_ij g_i,
** gk_j = sum_i dS_ij q_i over the query tiles (causal: those with rows >= j0 only). Each
** thread owns the same entries of the tile's rows throughout, so it adds into global memory
** without a race (and zeroes them first). */
template <class T>
__global__ void __launch_bounds__(GL_ATT_BWD_THREADS)
gl_k_attention_bwd_kv(int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, T *gk, T *gv, const T *g, const T *q,
                      const T *k, const T *v, const T *lse, const T *dsum, T scale, int causal) {
  __shared__ T sa[GL_ATT_BT * GL_ATT_CW], sb[GL_ATT_BT * GL_ATT_CW], p[GL_ATT_BWD_THREADS], ds[GL_ATT_BWD_THREADS];
  const int64_t nkt = (S + GL_ATT_BT - 1) / GL_ATT_BT, nqt = (L + GL_ATT_BT - 1) / GL_ATT_BT;
  for (int64_t blk = blockIdx.x; blk < B * nkt; blk += gridDim.x) {
    const int64_t b = blk / nkt, j0 = (blk - b * nkt) * GL_ATT_BT;
    const int64_t nk = S - j0 < GL_ATT_BT ? S - j0 : GL_ATT_BT;
    T *gkt = gk + (b * S + j0) * E, *gvt = gv + (b * S + j0) * Ev;
    for (int64_t x = threadIdx.x; x < nk * E; x += blockDim.x) gkt[x] = 0;
    for (int64_t x = threadIdx.x; x < nk * Ev; x += blockDim.x) gvt[x] = 0;
    for (int64_t it = causal ? j0 / GL_ATT_BT : 0; it < nqt; it++) {
      const int64_t i0 = it * GL_ATT_BT, mq = L - i0 < GL_ATT_BT ? L - i0 : GL_ATT_BT;
      gl_att_tile_pds(b, i0, mq, j0, nk, L, S, E, Ev, g, q, k, v, lse, dsum, scale, causal, sa, sb, p, ds);
      const T *gi = g + (b * L + i0) * Ev, *qi = q + (b * L + i0) * E;
      for (int64_t x = threadIdx.x; x < nk * Ev; x += blockDim.x) {
        const int64_t jj = x / Ev, c = x - jj * Ev;
        T acc = 0;
        for (int64_t rr = 0; rr < mq; rr++) acc += p[rr * GL_ATT_BT + jj] * gi[rr * Ev + c];
        gvt[x] += acc;
      }
      for (int64_t x = threadIdx.x; x < nk * E; x += blockDim.x) {
        const int64_t jj = x / E, e = x - jj * E;
        T acc = 0;
        for (int64_t rr = 0; rr < mq; rr++) acc += ds[rr * GL_ATT_BT + jj] * qi[rr * E + e];
        gkt[x] += acc;
      }
      __syncthreads();                         /* p and ds are rewritten by the next tile */
    }
  }
}

/* gq of query tile it of head b, one block per (b, it): gq_i = sum_j dS_ij k_j over the key
** tiles (causal: up to the tile's last row). */
template <class T>
__global__ void __launch_bounds__(GL_ATT_BWD_THREADS)
gl_k_attention_bwd_q(int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, T *gq, const T *g, const T *q,
                     const T *k, const T *v, const T *lse, const T *dsum, T scale, int causal) {
  __shared__ T sa[GL_ATT_BT * GL_ATT_CW], sb[GL_ATT_BT * GL_ATT_CW], p[GL_ATT_BWD_THREADS], ds[GL_ATT_BWD_THREADS];
  const int64_t nqt = (L + GL_ATT_BT - 1) / GL_ATT_BT;
  for (int64_t blk = blockIdx.x; blk < B * nqt; blk += gridDim.x) {
    const int64_t b = blk / nqt, i0 = (blk - b * nqt) * GL_ATT_BT;
    const int64_t mq = L - i0 < GL_ATT_BT ? L - i0 : GL_ATT_BT;
    const int64_t send = causal ? (i0 + mq < S ? i0 + mq : S) : S;
    T *gqt = gq + (b * L + i0) * E;
    for (int64_t x = threadIdx.x; x < mq * E; x += blockDim.x) gqt[x] = 0;
    for (int64_t j0 = 0; j0 < send; j0 += GL_ATT_BT) {
      const int64_t nk = send - j0 < GL_ATT_BT ? send - j0 : GL_ATT_BT;
      gl_att_tile_pds(b, i0, mq, j0, nk, L, S, E, Ev, g, q, k, v, lse, dsum, scale, causal, sa, sb, p, ds);
      const T *kj = k + (b * S + j0) * E;
      for (int64_t x = threadIdx.x; x < mq * E; x += blockDim.x) {
        const int64_t rr = x / E, e = x - rr * E;
        T acc = 0;
        for (int64_t jj = 0; jj < nk; jj++) acc += ds[rr * GL_ATT_BT + jj] * kj[jj * E + e];
        gqt[x] += acc;
      }
      __syncthreads();
    }
  }
}

/* ---- launchers ------------------------------------------------------------------------------- */

template <int DT>
static int attention_dt(cudaStream_t s, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, void *out, void *lse,
                        const void *q, const void *k, const void *v, double scale, int causal) {
  if constexpr (!GL_DT_IN(GL_KATT_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    unsigned nb = gl_warp_row_blocks(B * L);
    gl_k_attention<T><<<nb, 256, 0, s>>>(B, L, S, E, Ev, (T *)out, (T *)lse, (const T *)q, (const T *)k,
                                         (const T *)v, (T)scale, causal);
    return (int)cudaGetLastError();
  }
}

extern "C" int gl_klaunch_attention(void *stream, int dt, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev,
                                    void *out, void *lse, const void *q, const void *k, const void *v, double scale,
                                    int causal) {
  if (Ev > GL_KATT_MAX_EV) return GL_KERR_NOTSUP;
  if (B <= 0 || L <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, attention_dt<DT>(s, B, L, S, E, Ev, out, lse, q, k, v, scale, causal));
}

template <int DT>
static int attention_bwd_dt(cudaStream_t s, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, void *gq,
                            void *gk, void *gv, void *dsum, const void *g, const void *q, const void *k, const void *v,
                            const void *out, const void *lse, double scale, int causal) {
  if constexpr (!GL_DT_IN(GL_KATT_DTYPES, DT)) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename gl_dt<DT>::S T;
    const T *tg = (const T *)g, *tq = (const T *)q, *tk = (const T *)k, *tv = (const T *)v;
    const T *tlse = (const T *)lse;
    int64_t rows = B * L;
    unsigned nb = gl_warp_row_blocks(rows);
    gl_k_attention_dsum<T><<<nb, 256, 0, s>>>(rows, Ev, (T *)dsum, tg, (const T *)out, tlse);
    int rc = (int)cudaGetLastError();
    if (rc) return rc;
    nb = gl_kcap(B * ((S + GL_ATT_BT - 1) / GL_ATT_BT));
    gl_k_attention_bwd_kv<T><<<nb, GL_ATT_BWD_THREADS, 0, s>>>(B, L, S, E, Ev, (T *)gk, (T *)gv, tg, tq, tk, tv, tlse,
                                                               (const T *)dsum, (T)scale, causal);
    rc = (int)cudaGetLastError();
    if (rc) return rc;
    nb = gl_kcap(B * ((L + GL_ATT_BT - 1) / GL_ATT_BT));
    gl_k_attention_bwd_q<T><<<nb, GL_ATT_BWD_THREADS, 0, s>>>(B, L, S, E, Ev, (T *)gq, tg, tq, tk, tv, tlse,
                                                              (const T *)dsum, (T)scale, causal);
    return (int)cudaGetLastError();
  }
}

extern "C" int gl_klaunch_attention_bwd(void *stream, int dt, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev,
                                        void *gq, void *gk, void *gv, void *dsum, const void *g, const void *q,
                                        const void *k, const void *v, const void *out, const void *lse, double scale,
                                        int causal) {
  if (B <= 0 || L <= 0 || S <= 0 || Ev <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  return GL_DISPATCH_DTYPE(dt, DT, attention_bwd_dt<DT>(s, B, L, S, E, Ev, gq, gk, gv, dsum, g, q, k, v, out, lse,
                                                        scale, causal));
}
