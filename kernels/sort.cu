/*
** sort.cu — stable sort along an axis on the GPU (sort, argsort, topk), the CPU's order:
** ascending or descending, ties in their original order, NaN larger than every number
** (last ascending, first descending).
**
** Each element becomes an unsigned radix key whose ascending order is the wanted order:
** floats (float16/bfloat16 widened to float32) flip as usual (negatives fully, positives
** by the sign bit; -0 counts as +0, as the CPU's comparisons do), integers flip the sign
** bit, every NaN gets the largest key, and descending complements the key. CUB's radix
** sorts are stable, so equal keys (ties, NaNs) keep their positions' order. One lane goes
** through DeviceRadixSort, several through DeviceSegmentedRadixSort; the sorted positions
** then gather values from the source (NaN payloads survive) and become the indices.
**
** Complex lanes sort in NumPy's order, as src/backend/cpu/cpu_sort.c's: the groups [R + Rj,
** R + nanj, nan + Rj, nan + nanj] (R: not NaN), each by its real then its imaginary parts,
** as three stable passes least significant first: by the imaginary parts' keys, the real
** parts' keys, then a one-byte group key, each pass's keys made in the last one's order.
*/
#include "cuda_common.cuh"
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

/* Offsets of lane l in src, values, indices (every axis but the sorted one). */
__device__ __forceinline__ void gl_lane_offsets(const gl_sort_args &k, int64_t l, int64_t *so, int64_t *vo,
                                                int64_t *io) {
  int64_t s = 0, v = 0, i = 0;
  for (int d = k.ndim - 1; d >= 0; d--) {
    int64_t n = k.shape[d], q = l / n, c = l - q * n;
    l = q;
    s += c * k.src_strides[d];
    v += c * k.values_strides[d];
    i += c * k.indices_strides[d];
  }
  *so = s;
  *vo = v;
  *io = i;
}

/* The ascending radix key of a value, 'nan' set for NaN, from the dtype's row: 32 bits for
** elements of up to 4 bytes, else 64 (K); unsigned integers and bool as they are, signed
** ones with the sign bit of their width flipped, floats (the halves widened to float32) by
** gl_fkey / gl_dkey. */
__device__ __forceinline__ uint32_t gl_fkey(float f, bool &nan) {
  nan = f != f;
  if (f == 0.0f) f = 0.0f;                                 /* -0 sorts with +0 */
  uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ uint64_t gl_dkey(double f, bool &nan) {
  nan = f != f;
  if (f == 0.0) f = 0.0;
  uint64_t b = (uint64_t)__double_as_longlong(f);
  return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
template <int DT> struct gl_key {
  typedef typename gl_dt<DT>::S S;
  typedef typename std::conditional<sizeof(S) <= 4, uint32_t, uint64_t>::type K;
  static __device__ __forceinline__ K of(S v, bool &nan) {
    nan = false;
    if constexpr (gl_dt<DT>::kind == GL_KIND_FLOAT) {
      if constexpr (sizeof(typename gl_dt<DT>::T) == 8) return gl_dkey(v, nan);
      else return gl_fkey(gl_dt<DT>::load(v), nan);
    } else if constexpr (gl_dt<DT>::kind == GL_KIND_INT) {
      typedef typename std::make_unsigned<S>::type U;
      return (K)(U)((U)v ^ (U)((U)1 << (8 * sizeof(S) - 1)));
    } else {
      return (K)v;
    }
  }
};

/* The key of one part of a complex element (its float's, every NaN the largest). */
__device__ __forceinline__ uint32_t gl_part_key(float v) {
  bool nan;
  uint32_t k = gl_fkey(v, nan);
  return nan ? ~0u : k;
}
__device__ __forceinline__ uint64_t gl_part_key(double v) {
  bool nan;
  uint64_t k = gl_key<GL_KD_FLOAT64>::of(v, nan);
  return nan ? ~0ull : k;
}

enum { GL_CKEY_IMAG, GL_CKEY_REAL, GL_CKEY_GROUP };

/* Keys 'which' of the complex elements at positions pos[e] (NULL: e's own) of each lane, and
** those positions: a part's key (K as wide as a part) or the NaN group's (K = uint8_t). */
template <int DT, class K>
__global__ void gl_k_sort_ckeys(const gl_sort_args k, const typename gl_dt<DT>::S *src, bool desc, int which,
                                const int32_t *pos, K *keys, int32_t *pin) {
  int64_t total = k.lanes * k.n;
  GL_KLOOP(e, total) {
    int64_t l = e / k.n, j = e - l * k.n, so, vo, io;
    gl_lane_offsets(k, l, &so, &vo, &io);
    int32_t p = pos ? pos[e] : (int32_t)j;
    typename gl_dt<DT>::S z = src[so + p * k.src_stride];
    K key;
    if constexpr (sizeof(K) == 1) key = (K)(2 * (z.re != z.re) + (z.im != z.im));
    else key = (K)gl_part_key(which == GL_CKEY_REAL ? z.re : z.im);
    keys[e] = desc ? (K)~key : key;
    pin[e] = p;
  }
}

template <int DT>
__global__ void gl_k_sort_keys(const gl_sort_args k, const typename gl_dt<DT>::S *src, bool desc,
                               typename gl_key<DT>::K *keys, int32_t *pos) {
  typedef typename gl_key<DT>::K K;
  int64_t total = k.lanes * k.n;
  GL_KLOOP(e, total) {
    int64_t l = e / k.n, j = e - l * k.n, so, vo, io;
    gl_lane_offsets(k, l, &so, &vo, &io);
    bool nan;
    K key = gl_key<DT>::of(src[so + j * k.src_stride], nan);
    if (nan) key = (K)~(K)0;                  /* above +inf, whose key has bits to spare */
    if (desc) key = ~key;
    keys[e] = key;
    pos[e] = (int32_t)j;
  }
}

__global__ void gl_k_sort_offsets(int64_t lanes, int64_t n, int32_t *off) {
  GL_KLOOP(l, lanes + 1) off[l] = (int32_t)(l * n);
}

template <int W>
__global__ void gl_k_sort_write(const gl_sort_args k, const int32_t *pos, const void *src_, void *values_,
                                int64_t *indices) {
  typedef typename std::conditional<W == 1, uint8_t, typename std::conditional<W == 2, uint16_t,
          typename std::conditional<W == 4, uint32_t, typename std::conditional<W == 8, uint64_t,
          gl_complex128>::type>::type>::type>::type T;
  const T *src = (const T *)src_;
  T *values = (T *)values_;
  int64_t total = k.lanes * k.n;
  GL_KLOOP(e, total) {
    int64_t l = e / k.n, j = e - l * k.n, so, vo, io;
    gl_lane_offsets(k, l, &so, &vo, &io);
    int64_t p = pos[e];
    if (values) values[vo + j * k.values_stride] = src[so + p * k.src_stride];
    if (indices) indices[io + j * k.indices_stride] = p;
  }
}

/* ---- launchers ------------------------------------------------------------------------ */

static size_t al256(size_t n) { return (n + 255) / 256 * 256; }

/* Scratch layout: keys in/out, positions in/out, lane offsets, then CUB's temporary. */
struct gl_sort_layout { size_t keys_in, keys_out, pos_in, pos_out, offs, tmp, tmp_bytes, total; };

template <class K>
static cudaError_t sort_cub(void *tmp, size_t &bytes, const K *kin, K *kout, const int32_t *pin,
                            int32_t *pout, int64_t lanes, int64_t n, const int32_t *offs, cudaStream_t s) {
  int total = (int)(lanes * n);
  if (lanes == 1)
    return cub::DeviceRadixSort::SortPairs(tmp, bytes, kin, kout, pin, pout, total, 0, (int)(sizeof(K) * 8), s);
  return cub::DeviceSegmentedRadixSort::SortPairs(tmp, bytes, kin, kout, pin, pout, total, (int)lanes,
                                                  offs, offs + 1, 0, (int)(sizeof(K) * 8), s);
}

static bool gl_is_complex(int dt) {
  return GL_DISPATCH_DTYPE_ALL(dt, DT, (int)(gl_dt<DT>::kind == GL_KIND_COMPLEX)) == 1;
}

/* The bytes of a key of dtype DT: its gl_key's, a complex dtype's part's. */
template <int DT> constexpr int gl_key_bytes() {
  if constexpr (gl_dt<DT>::kind == GL_KIND_COMPLEX) return (int)sizeof(typename gl_dt<DT>::S) / 2;
  else return (int)sizeof(typename gl_key<DT>::K);
}
static size_t key_bytes(int dt) { return (size_t)GL_DISPATCH_DTYPE_ALL(dt, DT, gl_key_bytes<DT>()); }

static bool layout(const gl_sort_args *k, int dt, gl_sort_layout *L) {
  size_t total = (size_t)(k->lanes * k->n), kb = key_bytes(dt);
  size_t o = 0;
  L->keys_in = o; o += al256(total * kb);
  L->keys_out = o; o += al256(total * kb);
  L->pos_in = o; o += al256(total * 4);
  L->pos_out = o; o += al256(total * 4);
  L->offs = o; o += al256((size_t)(k->lanes + 1) * 4);
  L->tmp = o;
  L->tmp_bytes = 0;
  cudaError_t e;
  if (kb == 8) e = sort_cub<uint64_t>(NULL, L->tmp_bytes, NULL, NULL, NULL, NULL, k->lanes, k->n, NULL, 0);
  else e = sort_cub<uint32_t>(NULL, L->tmp_bytes, NULL, NULL, NULL, NULL, k->lanes, k->n, NULL, 0);
  if (e == cudaSuccess && gl_is_complex(dt)) {       /* and the group pass's one-byte keys */
    size_t gb = 0;
    e = sort_cub<uint8_t>(NULL, gb, NULL, NULL, NULL, NULL, k->lanes, k->n, NULL, 0);
    if (gb > L->tmp_bytes) L->tmp_bytes = gb;
  }
  L->total = o + al256(L->tmp_bytes);
  return e == cudaSuccess;
}

extern "C" size_t gl_sort_scratch(const gl_sort_args *k, int dt) {
  gl_sort_layout L;
  if (k->lanes <= 0 || k->n <= 0) return 0;
  if (!layout(k, dt, &L)) return 0;
  return L.total;
}

template <int DT>
static int sort_dt(cudaStream_t s, const gl_sort_args *k, bool desc, const void *src, char *scratch,
                   const gl_sort_layout *L) {
  typedef typename gl_key<DT>::K K;
  int64_t total = k->lanes * k->n;
  K *kin = (K *)(scratch + L->keys_in), *kout = (K *)(scratch + L->keys_out);
  int32_t *pin = (int32_t *)(scratch + L->pos_in), *pout = (int32_t *)(scratch + L->pos_out);
  int32_t *offs = (int32_t *)(scratch + L->offs);
  gl_k_sort_keys<DT><<<gl_kblocks(total), GL_KTHREADS, 0, s>>>(*k, (const typename gl_dt<DT>::S *)src, desc, kin, pin);
  int rc = gl_klaunched();
  if (rc) return rc;
  if (k->lanes > 1) {
    gl_k_sort_offsets<<<gl_kblocks(k->lanes + 1), GL_KTHREADS, 0, s>>>(k->lanes, k->n, offs);
    if ((rc = gl_klaunched()) != 0) return rc;
  }
  size_t bytes = L->tmp_bytes;
  cudaError_t e = sort_cub<K>(scratch + L->tmp, bytes, kin, kout, pin, pout, k->lanes, k->n, offs, s);
  return (int)e;
}

/* A complex sort's three passes; the positions end in the layout's pos_out. */
template <int DT>
static int sort_complex_dt(cudaStream_t s, const gl_sort_args *k, bool desc, const void *src, char *scratch,
                           const gl_sort_layout *L) {
  if constexpr (gl_dt<DT>::kind != GL_KIND_COMPLEX) {
    return GL_KERR_NOTSUP;
  } else {
    typedef typename std::conditional<DT == GL_KD_COMPLEX64, uint32_t, uint64_t>::type K;
    typedef typename gl_dt<DT>::S S;
    int64_t total = k->lanes * k->n;
    unsigned b = gl_kblocks(total);
    int32_t *pin = (int32_t *)(scratch + L->pos_in), *pout = (int32_t *)(scratch + L->pos_out);
    int32_t *offs = (int32_t *)(scratch + L->offs);
    int rc;
    if (k->lanes > 1) {
      gl_k_sort_offsets<<<gl_kblocks(k->lanes + 1), GL_KTHREADS, 0, s>>>(k->lanes, k->n, offs);
      if ((rc = gl_klaunched()) != 0) return rc;
    }
    for (int which = GL_CKEY_IMAG; which <= GL_CKEY_GROUP; which++) {
      const int32_t *order = which == GL_CKEY_IMAG ? NULL : pout;
      size_t bytes = L->tmp_bytes;
      cudaError_t e;
      if (which == GL_CKEY_GROUP) {
        uint8_t *kin = (uint8_t *)(scratch + L->keys_in), *kout = (uint8_t *)(scratch + L->keys_out);
        gl_k_sort_ckeys<DT, uint8_t><<<b, GL_KTHREADS, 0, s>>>(*k, (const S *)src, desc, which, order, kin, pin);
        if ((rc = gl_klaunched()) != 0) return rc;
        e = sort_cub<uint8_t>(scratch + L->tmp, bytes, kin, kout, pin, pout, k->lanes, k->n, offs, s);
      } else {
        K *kin = (K *)(scratch + L->keys_in), *kout = (K *)(scratch + L->keys_out);
        gl_k_sort_ckeys<DT, K><<<b, GL_KTHREADS, 0, s>>>(*k, (const S *)src, desc, which, order, kin, pin);
        if ((rc = gl_klaunched()) != 0) return rc;
        e = sort_cub<K>(scratch + L->tmp, bytes, kin, kout, pin, pout, k->lanes, k->n, offs, s);
      }
      if (e != cudaSuccess) return (int)e;
    }
    return 0;
  }
}

extern "C" int gl_klaunch_sort(void *stream, const gl_sort_args *k, void *values, int64_t *indices,
                               const void *src, int dt, int descending, void *scratch, size_t scratch_bytes) {
  if (k->lanes <= 0 || k->n <= 0 || (values == NULL && indices == NULL)) return 0;
  if (k->lanes * k->n > (int64_t)INT32_MAX) return GL_KERR_NOTSUP;
  cudaStream_t s = (cudaStream_t)stream;
  gl_sort_layout L;
  if (!layout(k, dt, &L) || scratch_bytes < L.total) return (int)cudaErrorInvalidValue;
  char *sc = (char *)scratch;
  bool desc = descending != 0;
  int rc = gl_is_complex(dt) ? GL_DISPATCH_DTYPE_ALL(dt, DT, sort_complex_dt<DT>(s, k, desc, src, sc, &L))
                            : GL_DISPATCH_DTYPE(dt, DT, sort_dt<DT>(s, k, desc, src, sc, &L));
  if (rc) return rc;
  int width = GL_DISPATCH_DTYPE_ALL(dt, DT, (int)sizeof(typename gl_dt<DT>::S));
  const int32_t *pout = (const int32_t *)(sc + L.pos_out);
  int64_t total = k->lanes * k->n;
  unsigned b = gl_kblocks(total);
  switch (width) {
    case 1: gl_k_sort_write<1><<<b, GL_KTHREADS, 0, s>>>(*k, pout, src, values, indices); break;
    case 2: gl_k_sort_write<2><<<b, GL_KTHREADS, 0, s>>>(*k, pout, src, values, indices); break;
    case 4: gl_k_sort_write<4><<<b, GL_KTHREADS, 0, s>>>(*k, pout, src, values, indices); break;
    case 8: gl_k_sort_write<8><<<b, GL_KTHREADS, 0, s>>>(*k, pout, src, values, indices); break;
    default: gl_k_sort_write<16><<<b, GL_KTHREADS, 0, s>>>(*k, pout, src, values, indices); break;
  }
  return gl_klaunched();
}
