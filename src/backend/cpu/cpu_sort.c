/*
** cpu_sort.c — sort and argsort along an axis on the CPU: an LSD radix sort on
** order-preserving unsigned keys; and partition (kth order statistics) on the same keys.
**
** Each lane (all axes but the sorted one) is turned into keys whose unsigned order is the
** value order of the dtype: integers flip their sign bit, floats flip the sign bit of a
** positive number and every bit of a negative one (kernels/sort.cu's gl_key does the same
** on the GPU), -0.0 becomes +0.0 (they are equal: ties keep their order) and every NaN the
** largest key (NaN is larger than every number, PyTorch's rule). A descending sort takes
** the complement of each key, so it stays stable and puts the NaNs first. The halves key
** as float32 (their values are exact there). Eight bits a pass, least significant first;
** a pass whose digit is the same for every key is skipped (the high bytes of small
** integers, the low bytes of a half's float32 key).
**
** Argsort (or sort with positions) carries 32-bit positions beside the keys (64-bit in a
** lane of 2^32 elements or more) and gathers the values from the source by position, so
** NaN payloads and the sign of zero survive. Sort alone carries no positions: it rebuilds
** each value from its key, then rewrites the runs that a key cannot rebuild (the zeros,
** when a -0.0 was seen, and the NaNs) from the source in their original order.
**
** Lanes run in parallel over the free cores; one long lane (fewer lanes than threads)
** runs its passes in parallel instead: each thread counts the digits of its share, the
** counts are summed per (digit, thread) in order, and each thread scatters its share, so
** the sort stays stable. Each pass polls for a stop and then abandons the lane.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"
#include "../../../kernels/convert.h"

/* Lanes shorter than this are sorted by insertion; a lane longer than this (and fewer
** lanes than threads) has its passes run by the whole team. */
#define SORT_INSERTION 32
#define SORT_PAR_LANE 65536

/* ---- keys ----------------------------------------------------------------------------------- */

static inline uint32_t key_of_float(float f) {
  if (f != f) return UINT32_MAX;
  if (f == 0.0f) f = 0.0f;                                   /* -0 sorts with +0 */
  uint32_t b;
  memcpy(&b, &f, 4);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
static inline float float_of_key(uint32_t k) {
  uint32_t b = k ^ (((k >> 31) - 1u) | 0x80000000u);
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static inline uint64_t key_of_double(double f) {
  if (f != f) return UINT64_MAX;
  if (f == 0.0) f = 0.0;
  uint64_t b;
  memcpy(&b, &f, 8);
  return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
static inline double double_of_key(uint64_t k) {
  uint64_t b = k ^ (((k >> 63) - 1u) | 0x8000000000000000ull);
  double f;
  memcpy(&f, &b, 8);
  return f;
}
static inline uint32_t key_of_int32_t(int32_t v) { return (uint32_t)v ^ 0x80000000u; }
static inline int32_t int32_t_of_key(uint32_t k) { return (int32_t)(k ^ 0x80000000u); }
static inline uint64_t key_of_int64_t(int64_t v) { return (uint64_t)v ^ 0x8000000000000000ull; }
static inline int64_t int64_t_of_key(uint64_t k) { return (int64_t)(k ^ 0x8000000000000000ull); }
static inline uint8_t key_of_uint8_t(uint8_t v) { return v; }
static inline uint8_t uint8_t_of_key(uint8_t k) { return k; }

/* Whether v is -0.0 (what a key cannot rebuild, beside NaN's payload). */
static inline bool is_negzero_float(float v) { return v == 0 && signbit(v); }
static inline bool is_negzero_double(double v) { return v == 0 && signbit(v); }
static inline bool is_negzero_int32_t(int32_t v) { (void)v; return false; }
static inline bool is_negzero_int64_t(int64_t v) { (void)v; return false; }
static inline bool is_negzero_uint8_t(uint8_t v) { (void)v; return false; }

/* The key type of a compute type, and whether its keys lose anything (-0.0, NaN payloads). */
#define KEY_T_float uint32_t
#define KEY_T_double uint64_t
#define KEY_T_int32_t uint32_t
#define KEY_T_int64_t uint64_t
#define KEY_T_uint8_t uint8_t
#define KEY_LOSSY_float 1
#define KEY_LOSSY_double 1
#define KEY_LOSSY_int32_t 0
#define KEY_LOSSY_int64_t 0
#define KEY_LOSSY_uint8_t 0

/* ---- the radix sort ----------------------------------------------------------------------- */

/* The calling thread's share [lo, hi) of n elements; its number in the team. */
static int team_share(int64_t n, int64_t *lo, int64_t *hi) {
  int t = 0, nt = 1;
#ifdef _OPENMP
  t = omp_get_thread_num();
  nt = omp_get_num_threads();
#endif
  *lo = n * t / nt;
  *hi = n * (t + 1) / nt;
  return t;
}

static int team_count(void) {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

/* Sorts keys k[0..n) ascending, stably, carrying positions p (NULL: none), with scratch
** (k2, p2) of the same sizes; returns whether the result ended in the scratch. Every
** thread of the enclosing team calls it (the barriers bind to that team; one thread
** outside a parallel region). 'counts' (shared) holds 256 counts per thread and a flag.
** A stop is polled once a pass: the team then returns at once (*stop set), the lane
** unsorted. */
#define SORT_RADIX(K, PN, P)                                                                 \
  static bool radix_##K##_##PN(K *k, P *p, K *k2, P *p2, int64_t n, int64_t *counts,        \
                               bool *stop) {                                                \
    int64_t lo, hi;                                                                         \
    int t = team_share(n, &lo, &hi), nt = team_count();                                     \
    K *ka = k, *kb = k2;                                                                    \
    P *pa = p, *pb = p2;                                                                    \
    bool swapped = false;                                                                   \
    int64_t *c = counts + 256 * t, *skip = counts + 256 * nt;                              \
    for (int shift = 0; shift < 8 * (int)sizeof(K); shift += 8) {                           \
      memset(c, 0, 256 * sizeof *c);                                                        \
      for (int64_t i = lo; i < hi; i++) c[(ka[i] >> shift) & 255]++;                        \
      _Pragma("omp barrier")                                                                \
      _Pragma("omp single")                                                                 \
      {                                                                                     \
        *stop = gl_interrupted();                                                           \
        int64_t off = 0;                                                                    \
        *skip = *stop;                                                                      \
        for (int d = 0; d < 256 && !*skip; d++) {                                           \
          int64_t s = 0;                                                                    \
          for (int u = 0; u < nt; u++) s += counts[256 * u + d];                            \
          if (s == n) *skip = 1;                /* one digit for all: nothing moves */      \
        }                                                                                   \
        for (int d = 0; d < 256 && !*skip; d++)                                             \
          for (int u = 0; u < nt; u++) {                                                    \
            int64_t s = counts[256 * u + d];                                                \
            counts[256 * u + d] = off;                                                      \
            off += s;                                                                       \
          }                                                                                 \
      }                                                                                     \
      if (*stop) return swapped;                                                            \
      if (*skip) {                                                                          \
        _Pragma("omp barrier")                 /* all have read the flag */                 \
        continue;                                                                           \
      }                                                                                     \
      if (pa)                                                                               \
        for (int64_t i = lo; i < hi; i++) {                                                 \
          int64_t o = c[(ka[i] >> shift) & 255]++;                                          \
          kb[o] = ka[i];                                                                    \
          pb[o] = pa[i];                                                                    \
        }                                                                                   \
      else                                                                                  \
        for (int64_t i = lo; i < hi; i++) kb[c[(ka[i] >> shift) & 255]++] = ka[i];          \
      _Pragma("omp barrier")                                                                \
      K *kt = ka; ka = kb; kb = kt;                                                         \
      P *pt = pa; pa = pb; pb = pt;                                                         \
      swapped = !swapped;                                                                   \
    }                                                                                       \
    return swapped;                                                                         \
  }                                                                                         \
  /* The same for n <= SORT_INSERTION, on one thread: an insertion sort in place. */        \
  static void insertion_##K##_##PN(K *k, P *p, int64_t n) {                                 \
    for (int64_t i = 1; i < n; i++) {                                                       \
      K kv = k[i];                                                                          \
      P pv = p ? p[i] : 0;                                                                  \
      int64_t j = i;                                                                        \
      for (; j > 0 && kv < k[j - 1]; j--) {                                                 \
        k[j] = k[j - 1];                                                                    \
        if (p) p[j] = p[j - 1];                                                             \
      }                                                                                     \
      k[j] = kv;                                                                            \
      if (p) p[j] = pv;                                                                     \
    }                                                                                       \
  }
SORT_RADIX(uint8_t, u32, uint32_t)
SORT_RADIX(uint8_t, u64, uint64_t)
SORT_RADIX(uint32_t, u32, uint32_t)
SORT_RADIX(uint32_t, u64, uint64_t)
SORT_RADIX(uint64_t, u32, uint32_t)
SORT_RADIX(uint64_t, u64, uint64_t)
#undef SORT_RADIX

/* ---- lanes ---------------------------------------------------------------------------------- */

/* The first position in sorted keys k[0..n) whose key is >= v. */
#define SORT_LOWER(K)                                                        \
  static int64_t lower_##K(const K *k, int64_t n, K v) {                     \
    int64_t a = 0, b = n;                                                    \
    while (a < b) {                                                          \
      int64_t m = a + (b - a) / 2;                                           \
      if (k[m] < v) a = m + 1;                                               \
      else b = m;                                                            \
    }                                                                        \
    return a;                                                                \
  }
SORT_LOWER(uint8_t)
SORT_LOWER(uint32_t)
SORT_LOWER(uint64_t)
#undef SORT_LOWER

/* One lane of n elements from src (stride ss) into vout (stride vs; NULL: none) and the
** 0-based positions into iout (stride is; NULL: none), sorted by 'nt' threads (the lane
** function makes the team). 'buf' holds 2n keys and, with positions, 2n positions;
** 'counts' 256 per thread + 1. Returns false when stopped. */
typedef bool (*sort_lane_fn)(void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src,
                             int64_t ss, int64_t n, bool desc, void *buf, int64_t *counts, int nt);

#define SORT_LANE(E, id, S, kind, half, CT, ...) \
  SORT_LANE_X(id, S, CT, KEY_T_##CT, KEY_LOSSY_##CT, GL_DT_WIDEN_##half, kind, half)
#define SORT_LANE_X(...) SORT_LANE_(__VA_ARGS__)       /* expands KEY_T_<CT> before pasting */
#define SORT_LANE_(DN, S, CT, K, LOSSY, LOAD, kind, half)                                     \
  static bool sort_lane_##DN(void *vout, int64_t vs, int64_t *iout, int64_t is,               \
                             const void *src_, int64_t ss, int64_t n, bool desc, void *buf,   \
                             int64_t *counts, int nt) {                                       \
    const S *src = src_;                                                                      \
    bool wide = n > (int64_t)UINT32_MAX, negzero = false, stop = false, in2 = false;         \
    size_t psz = iout ? (wide ? 8 : 4) : 0;                                                   \
    void *p = iout ? buf : NULL, *p2 = iout ? (char *)buf + (size_t)n * psz : NULL;           \
    K *k = (K *)(void *)((char *)buf + 2 * (size_t)n * psz), *k2 = k + n;                      \
    if (n <= SORT_INSERTION) nt = 1;                                                          \
    _Pragma("omp parallel num_threads(nt) if (nt > 1)")                                      \
    {                                                                                         \
      int64_t lo, hi;                                                                         \
      team_share(n, &lo, &hi);                                                                \
      bool nz = false;                                                                        \
      for (int64_t j = lo; j < hi; j++) {                                                     \
        CT v = (CT)LOAD(src[j * ss]);                                                         \
        K key = key_of_##CT(v);                                                               \
        if (LOSSY && is_negzero_##CT(v)) nz = true;                                          \
        k[j] = desc ? (K)~key : key;                                                          \
        if (p && wide) ((uint64_t *)p)[j] = (uint64_t)j;                                      \
        else if (p) ((uint32_t *)p)[j] = (uint32_t)j;                                         \
      }                                                                                       \
      if (nz) {                                                                               \
        _Pragma("omp atomic write")                                                           \
        negzero = true;                                                                       \
      }                                                                                       \
      _Pragma("omp barrier")                                                                  \
      bool sw;                                                                                \
      if (n <= SORT_INSERTION) {                                                              \
        if (wide) insertion_##K##_u64(k, p, n);         /* never: n is small */              \
        else insertion_##K##_u32(k, p, n);                                                    \
        sw = false;                                                                           \
      } else if (wide) sw = radix_##K##_u64(k, p, k2, p2, n, counts, &stop);                  \
      else sw = radix_##K##_u32(k, p, k2, p2, n, counts, &stop);                              \
      if (!stop) {                                                                            \
        const K *kr = sw ? k2 : k;                                                            \
        const void *pr = sw ? p2 : p;                                                         \
        _Pragma("omp single nowait")                                                          \
        in2 = sw;                                                                             \
        for (int64_t j = lo; j < hi; j++) {                                                   \
          if (pr) {                                                                           \
            int64_t q = wide ? (int64_t)((const uint64_t *)pr)[j] : ((const uint32_t *)pr)[j]; \
            if (vout) ((S *)vout)[j * vs] = src[q * ss];                                      \
            iout[j * is] = q;                                                                 \
          } else {                                                                            \
            K key = desc ? (K)~kr[j] : kr[j];                                                 \
            ((S *)vout)[j * vs] = GL_DT_STORE(kind, half, S, DN, kind, CT##_of_key(key));    \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    if (stop) return false;                                                                   \
    if (LOSSY && !iout) {                 /* rebuild the zeros and NaNs from the source */    \
      const K *kr = in2 ? k2 : k;                                                             \
      K zero = key_of_##CT(0);                                                                \
      if (desc) zero = (K)~zero;                                                              \
      int64_t a = desc ? 0 : lower_##K(kr, n, (K)~(K)0), b = desc ? lower_##K(kr, n, 1) : n;  \
      for (int64_t j = 0, o = a; o < b && j < n; j++) {                                       \
        CT v = (CT)LOAD(src[j * ss]);                                                         \
        if (v != v) ((S *)vout)[(o++) * vs] = src[j * ss];                                    \
      }                                                                                       \
      if (negzero) {                                                                          \
        int64_t z0 = lower_##K(kr, n, zero), z1 = lower_##K(kr, n, (K)(zero + 1));            \
        for (int64_t j = 0, o = z0; o < z1 && j < n; j++) {                                   \
          CT v = (CT)LOAD(src[j * ss]);                                                       \
          if (v == 0) ((S *)vout)[(o++) * vs] = src[j * ss];                                  \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    return true;                                                                              \
  }
GL_DTYPE_LIST(SORT_LANE)
#undef SORT_LANE
#undef SORT_LANE_X
#undef SORT_LANE_

#define SORT_ENTRY(E, id, ...) [GL_##E] = sort_lane_##id,
static const sort_lane_fn sort_lanes[GL_NDTYPE] = { GL_DTYPE_LIST(SORT_ENTRY) };
#undef SORT_ENTRY

/* Element offset of lane r of 'a': every axis but 'axis', in C order. */
static int64_t lane_offset(const gl_array *a, int axis, int64_t r) {
  int64_t off = 0;
  for (int d = a->ndim - 1; d >= 0 && r > 0; d--) {
    if (d == axis) continue;
    off += (r % a->shape[d]) * a->strides[d];
    r /= a->shape[d];
  }
  return off;
}

gl_status gl_cpu_sort(const gl_array *values, const gl_array *indices, const gl_array *src,
                      int axis, bool descending) {
  int64_t n = src->ndim ? src->shape[axis] : 1;
  if (src->size == 0 || n == 0) return GL_OK;
  int64_t lanes = src->size / n;
  size_t sz = gl_dtypes[src->dtype].size;
  /* keys of at most 8 bytes, twice, and positions, twice */
  size_t bufsz = (size_t)n * 2 * (8 + (indices ? 8 : 0));
  sort_lane_fn fn = sort_lanes[src->dtype];
  const char *s = gl_array_data(src);
  char *v = values ? gl_array_data(values) : NULL;
  int64_t *ip = indices ? gl_array_data(indices) : NULL;
  int64_t ss = src->ndim ? src->strides[axis] : 1;
  int64_t vs = values && values->ndim ? values->strides[axis] : 1;
  int64_t is = indices && indices->ndim ? indices->strides[axis] : 1;
  int nt = src->size >= GL_POLL_SPAN / 8 ? gl_cpu_team_size(src->size) : 1;
  bool failed = false;
  if (nt > 1 && lanes < nt && n >= SORT_PAR_LANE) {
    /* few long lanes: the team sorts each in turn */
    void *buf = malloc(bufsz);
    int64_t *counts = malloc((256 * (size_t)nt + 1) * sizeof *counts);
    failed = buf == NULL || counts == NULL;
    for (int64_t r = 0; r < lanes && !failed; r++) {
      void *vo = v ? v + lane_offset(values, axis, r) * (int64_t)sz : NULL;
      int64_t *io = ip ? ip + lane_offset(indices, axis, r) : NULL;
      if (!fn(vo, vs, io, is, s + lane_offset(src, axis, r) * (int64_t)sz, ss, n, descending, buf, counts, nt))
        break;
    }
    free(buf);
    free(counts);
  } else {
    #pragma omp parallel num_threads(nt) if (nt > 1)
    {
      void *buf = malloc(bufsz);     /* per thread; every thread still meets the 'for' */
      int64_t counts[257];
      if (buf == NULL) {
        #pragma omp atomic write
        failed = true;
      }
      #pragma omp for schedule(static)
      for (int64_t r = 0; r < lanes; r++) {
        if (buf == NULL || gl_interrupted()) continue;
        void *vo = v ? v + lane_offset(values, axis, r) * (int64_t)sz : NULL;
        int64_t *io = ip ? ip + lane_offset(indices, axis, r) : NULL;
        fn(vo, vs, io, is, s + lane_offset(src, axis, r) * (int64_t)sz, ss, n, descending, buf, counts, 1);
      }
      free(buf);
    }
  }
  gl_cpu_team_done(nt);
  if (failed) return gl_fail(GL_ENOMEM, "sort: out of host memory for a lane of %lld elements", (long long)n);
  return gl_interrupt_check();
}

/* ---- partition -------------------------------------------------------------------------------- */

/* Quickselect over keys and positions (p NULL: none): the range holding the wanted position
** is split around the median of three (Hoare's two-pointer scan, the median first in the
** range so the split always moves) until it is short, then sorted by insertion; the first
** or last position of a range is a plain minimum or maximum scan; a range still long after
** 2 log2 n + 8 splits (a bad pivot run) is radix-sorted instead. For several positions
** (ascending), each is selected right of the one before. Returns false when stopped. */
#define SELECT_SWAP(K, P, k, p, i, j)                  \
  do {                                                 \
    K kt_ = k[i]; k[i] = k[j]; k[j] = kt_;             \
    if (p) { P pt_ = p[i]; p[i] = p[j]; p[j] = pt_; }  \
  } while (0)
#define SELECT_DEF(K, PN, P)                                                                     \
  static bool select_##K##_##PN(K *k, P *p, K *k2, P *p2, int64_t n, const int64_t *kth, int nk) { \
    int64_t left = 0;                                                                          \
    for (int w = 0; w < nk; w++) {                                                             \
      int64_t want = kth[w], lo = left, hi = n;                                                \
      int depth = 8;                                                                           \
      for (int64_t m = n; m > 1; m >>= 1) depth += 2;                                          \
      while (hi - lo > SORT_INSERTION) {                                                       \
        if (gl_interrupted()) return false;                                                    \
        if (want == lo || want == hi - 1) {          /* a minimum or a maximum */              \
          int64_t best = lo;                                                                   \
          if (want == lo) { for (int64_t i = lo + 1; i < hi; i++) if (k[i] < k[best]) best = i; } \
          else { for (int64_t i = lo + 1; i < hi; i++) if (k[i] >= k[best]) best = i; }       \
          SELECT_SWAP(K, P, k, p, want, best);                                                 \
          lo = hi;                                                                             \
          break;                                                                               \
        }                                                                                      \
        if (depth-- == 0) {                                                                    \
          int64_t counts[257];                                                                 \
          bool stop = false, sw = false;                                                       \
          _Pragma("omp parallel num_threads(1)")     /* a team of one for the barriers */       \
          sw = radix_##K##_##PN(k + lo, p ? p + lo : NULL, k2, p2, hi - lo, counts, &stop);    \
          if (stop) return false;                                                              \
          if (sw) {                                                                            \
            memcpy(k + lo, k2, (size_t)(hi - lo) * sizeof *k);                                 \
            if (p) memcpy(p + lo, p2, (size_t)(hi - lo) * sizeof *p);                          \
          }                                                                                    \
          lo = hi;                                                                             \
          break;                                                                               \
        }                                                                                      \
        int64_t mid = lo + (hi - lo) / 2, last = hi - 1;                                       \
        if (k[mid] < k[lo]) SELECT_SWAP(K, P, k, p, mid, lo);                                  \
        if (k[last] < k[mid]) {                                                                \
          SELECT_SWAP(K, P, k, p, last, mid);                                                  \
          if (k[mid] < k[lo]) SELECT_SWAP(K, P, k, p, mid, lo);                                \
        }                                                                                      \
        SELECT_SWAP(K, P, k, p, lo, mid);            /* the median to the front */             \
        K pv = k[lo];                                                                          \
        int64_t i = lo - 1, j = hi;                                                            \
        for (;;) {                                                                             \
          do i++; while (k[i] < pv);                                                           \
          do j--; while (k[j] > pv);                                                           \
          if (i >= j) break;                                                                   \
          SELECT_SWAP(K, P, k, p, i, j);                                                       \
        }                                                                                      \
        if (want <= j) hi = j + 1;                   /* [lo, j] <= pv <= [j + 1, hi) */        \
        else lo = j + 1;                                                                       \
      }                                                                                        \
      if (hi > lo) insertion_##K##_##PN(k + lo, p ? p + lo : NULL, hi - lo);                   \
      left = want + 1;                                                                         \
    }                                                                                          \
    return true;                                                                               \
  }
SELECT_DEF(uint8_t, u32, uint32_t)
SELECT_DEF(uint8_t, u64, uint64_t)
SELECT_DEF(uint32_t, u32, uint32_t)
SELECT_DEF(uint32_t, u64, uint64_t)
SELECT_DEF(uint64_t, u32, uint32_t)
SELECT_DEF(uint64_t, u64, uint64_t)
#undef SELECT_DEF
#undef SELECT_SWAP

/* Keys that rebuild their value exactly, for a partition of values alone (equal values
** may land in any order there): -0.0 keys below +0.0 and a NaN above +inf by its payload;
** a NaN with its sign bit set would key below -inf, so it is flagged (the lane then takes
** the positions' path). The halves always take that path (their float32 keys). */
static inline uint32_t exact_key_float(float f, bool *negnan) {
  uint32_t b;
  memcpy(&b, &f, 4);
  *negnan |= (f != f) & (b >> 31);
  return b ^ ((0u - (b >> 31)) | 0x80000000u);
}
static inline uint64_t exact_key_double(double f, bool *negnan) {
  uint64_t b;
  memcpy(&b, &f, 8);
  *negnan |= (f != f) & (b >> 63);
  return b ^ ((0ull - (b >> 63)) | 0x8000000000000000ull);
}
static inline uint32_t exact_key_int32_t(int32_t v, bool *negnan) { (void)negnan; return key_of_int32_t(v); }
static inline uint64_t exact_key_int64_t(int64_t v, bool *negnan) { (void)negnan; return key_of_int64_t(v); }
static inline uint8_t exact_key_uint8_t(uint8_t v, bool *negnan) { (void)negnan; return v; }
#define KEY_EXACT_none 1
#define KEY_EXACT_f16 0
#define KEY_EXACT_bf16 0

/* One lane: keys and positions, the selection, then values gathered from the source by
** position (payloads and signs kept) and the positions. The keys are the exact ones (-0.0
** below +0.0) with every NaN the largest, so that partition and argpartition of one array
** make the same moves, and a gradient through argpartition reaches the elements partition
** placed. 'buf' as a sort lane's with
** positions. Returns false when stopped. */
typedef bool (*part_lane_fn)(void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src,
                             int64_t ss, int64_t n, const int64_t *kth, int nk, void *buf);
#define PART_LANE(E, id, S, kind, half, CT, ...) PART_LANE_X(id, S, CT, KEY_T_##CT, GL_DT_WIDEN_##half, half)
#define PART_LANE_X(...) PART_LANE_(__VA_ARGS__)
#define PART_LANE_(DN, S, CT, K, LOAD, half)                                                        \
  static bool part_lane_##DN(void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src_, \
                             int64_t ss, int64_t n, const int64_t *kth, int nk, void *buf) {     \
    const S *src = src_;                                                                        \
    if (!iout && KEY_EXACT_##half) {       /* values alone: exact keys, no positions */        \
      /* the keys in vout itself where they fit; the scratch only for the radix fallback */  \
      bool inplace = vs == 1 && sizeof(S) == sizeof(K);                                         \
      K *k = inplace ? (K *)vout : (K *)buf, *k2 = (K *)buf + (inplace ? 0 : n);                \
      bool negnan = false;                                                                      \
      for (int64_t j = 0; j < n; j++) {                                                         \
        CT v = (CT)LOAD(src[j * ss]);                                                           \
        k[j] = exact_key_##CT(v, &negnan);                                                      \
      }                                                                                         \
      if (!negnan) {                                                                            \
        if (!select_##K##_u32(k, NULL, k2, NULL, n, kth, nk)) return false;                     \
        if (inplace) for (int64_t j = 0; j < n; j++) { CT v = CT##_of_key(k[j]); memcpy(k + j, &v, sizeof v); } \
        else for (int64_t j = 0; j < n; j++) ((S *)vout)[j * vs] = (S)CT##_of_key(k[j]);        \
        return true;                                                                            \
      }                                                                                         \
    }                                                                                           \
    bool wide = n > (int64_t)UINT32_MAX;                                                        \
    size_t psz = wide ? 8 : 4;                                                                  \
    void *p = buf, *p2 = (char *)buf + (size_t)n * psz;                                         \
    K *k = (K *)(void *)((char *)buf + 2 * (size_t)n * psz), *k2 = k + n;                        \
    for (int64_t j = 0; j < n; j++) {                                                           \
      CT v = (CT)LOAD(src[j * ss]);                                                             \
      bool nan_ = false;                                                                        \
      K key = exact_key_##CT(v, &nan_);                                                         \
      k[j] = v != v ? (K)~(K)0 : key;        /* the values' path order, every NaN last */       \
      if (wide) ((uint64_t *)p)[j] = (uint64_t)j;                                               \
      else ((uint32_t *)p)[j] = (uint32_t)j;                                                    \
    }                                                                                           \
    if (!(wide ? select_##K##_u64(k, p, k2, p2, n, kth, nk) : select_##K##_u32(k, p, k2, p2, n, kth, nk))) \
      return false;                                                                             \
    for (int64_t j = 0; j < n; j++) {                                                           \
      int64_t q = wide ? (int64_t)((const uint64_t *)p)[j] : ((const uint32_t *)p)[j];          \
      if (vout) ((S *)vout)[j * vs] = src[q * ss];                                              \
      if (iout) iout[j * is] = q;                                                               \
    }                                                                                           \
    return true;                                                                                \
  }
GL_DTYPE_LIST(PART_LANE)
#undef PART_LANE
#undef PART_LANE_X
#undef PART_LANE_

#define PART_ENTRY(E, id, ...) [GL_##E] = part_lane_##id,
static const part_lane_fn part_lanes[GL_NDTYPE] = { GL_DTYPE_LIST(PART_ENTRY) };
#undef PART_ENTRY

gl_status gl_cpu_partition(const gl_array *values, const gl_array *indices, const gl_array *src,
                           int axis, const int64_t *kth, int nk) {
  int64_t n = src->shape[axis];
  if (src->size == 0 || n == 0) return GL_OK;
  int64_t lanes = src->size / n;
  size_t sz = gl_dtypes[src->dtype].size;
  size_t bufsz = (size_t)n * 2 * (8 + 8);
  part_lane_fn fn = part_lanes[src->dtype];
  const char *s = gl_array_data(src);
  char *v = values ? gl_array_data(values) : NULL;
  int64_t *ip = indices ? gl_array_data(indices) : NULL;
  int64_t ss = src->strides[axis];
  int64_t vs = values ? values->strides[axis] : 1;
  int64_t is = indices ? indices->strides[axis] : 1;
  bool failed = false;
  int nt = src->size >= GL_POLL_SPAN / 8 && lanes > 1 ? gl_cpu_team_size(src->size) : 1;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    void *buf = malloc(bufsz);
    if (buf == NULL) {
      #pragma omp atomic write
      failed = true;
    }
    #pragma omp for schedule(static)
    for (int64_t r = 0; r < lanes; r++) {
      if (buf == NULL || gl_interrupted()) continue;
      void *vo = v ? v + lane_offset(values, axis, r) * (int64_t)sz : NULL;
      int64_t *io = ip ? ip + lane_offset(indices, axis, r) : NULL;
      fn(vo, vs, io, is, s + lane_offset(src, axis, r) * (int64_t)sz, ss, n, kth, nk, buf);
    }
    free(buf);
  }
  gl_cpu_team_done(nt);
  if (failed) return gl_fail(GL_ENOMEM, "partition: out of host memory for a lane of %lld elements", (long long)n);
  return gl_interrupt_check();
}
