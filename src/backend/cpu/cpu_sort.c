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
** Complex lanes sort in NumPy's order, by the real parts' keys then the imaginary parts'
** (two stable passes; see "complex lanes" below).
**
** Long lanes of float32, int32 or uint32 values alone sort by buckets instead (see "the
** bucketed sort" below): one scatter out of cache, then each bucket in cache.
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

/* A float's bits b (w of them, the sign on top) as a key and back, in the low w bits of the
** result: a positive number's sign bit set, every bit of a negative one flipped. */
static inline uint64_t key_of_bits(uint64_t b, int w) {
  return b ^ ((0 - (b >> (w - 1))) | (uint64_t)1 << (w - 1));
}
static inline uint64_t bits_of_key(uint64_t k, int w) {
  return k ^ (((k >> (w - 1)) - 1u) | (uint64_t)1 << (w - 1));
}

/* -0 keys as +0 (they sort together); every NaN is the largest key. */
static inline uint32_t key_of_float(float f) {
  uint32_t b;
  f = f == 0.0f ? 0.0f : f;
  memcpy(&b, &f, 4);
  return f != f ? UINT32_MAX : (uint32_t)key_of_bits(b, 32);
}
static inline uint64_t key_of_double(double f) {
  uint64_t b;
  f = f == 0.0 ? 0.0 : f;
  memcpy(&b, &f, 8);
  return f != f ? UINT64_MAX : key_of_bits(b, 64);
}
static inline float float_of_key(uint32_t k) {
  uint32_t b = (uint32_t)bits_of_key(k, 32);
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static inline double double_of_key(uint64_t k) {
  uint64_t b = bits_of_key(k, 64);
  double f;
  memcpy(&f, &b, 8);
  return f;
}
static inline uint32_t key_of_int32_t(int32_t v) { return (uint32_t)v ^ 0x80000000u; }
static inline int32_t int32_t_of_key(uint32_t k) { return (int32_t)(k ^ 0x80000000u); }
static inline uint64_t key_of_int64_t(int64_t v) { return (uint64_t)v ^ 0x8000000000000000ull; }
static inline int64_t int64_t_of_key(uint64_t k) { return (int64_t)(k ^ 0x8000000000000000ull); }
static inline uint8_t key_of_int8_t(int8_t v) { return (uint8_t)((uint8_t)v ^ 0x80u); }
static inline int8_t int8_t_of_key(uint64_t k) { return (int8_t)((uint8_t)k ^ 0x80u); }
static inline uint16_t key_of_int16_t(int16_t v) { return (uint16_t)((uint16_t)v ^ 0x8000u); }
static inline int16_t int16_t_of_key(uint64_t k) { return (int16_t)((uint16_t)k ^ 0x8000u); }
/* unsigned integers are their own keys */
#define UNSIGNED_KEYS(T) \
  static inline T key_of_##T(T v) { return v; } \
  static inline T T##_of_key(uint64_t k) { return (T)k; } \
  static inline bool is_negzero_##T(T v) { (void)v; return false; } \
  static inline T exact_key_##T(T v, bool *negnan) { (void)negnan; return v; }
UNSIGNED_KEYS(uint8_t)
UNSIGNED_KEYS(uint16_t)
UNSIGNED_KEYS(uint32_t)
UNSIGNED_KEYS(uint64_t)

/* Whether v is -0.0 (what a key cannot rebuild, beside NaN's payload). */
static inline bool is_negzero_float(float v) { return v == 0 && signbit(v); }
static inline bool is_negzero_double(double v) { return v == 0 && signbit(v); }
static inline bool is_negzero_int32_t(int32_t v) { (void)v; return false; }
static inline bool is_negzero_int64_t(int64_t v) { (void)v; return false; }
static inline bool is_negzero_int8_t(int8_t v) { (void)v; return false; }
static inline bool is_negzero_int16_t(int16_t v) { (void)v; return false; }

/* Keys that rebuild their value exactly, for a partition of values alone (equal values
** may land in any order there): -0.0 keys below +0.0 and a NaN above +inf by its payload;
** a NaN with its sign bit set would key below -inf, so it is flagged (the lane then takes
** the positions' path). The halves always take that path (their float32 keys). */
static inline uint32_t exact_key_float(float f, bool *negnan) {
  uint32_t b;
  memcpy(&b, &f, 4);
  *negnan |= (f != f) & (b >> 31);
  return (uint32_t)key_of_bits(b, 32);
}
static inline uint64_t exact_key_double(double f, bool *negnan) {
  uint64_t b;
  memcpy(&b, &f, 8);
  *negnan |= (f != f) & (b >> 63);
  return key_of_bits(b, 64);
}
static inline uint32_t exact_key_int32_t(int32_t v, bool *negnan) { (void)negnan; return key_of_int32_t(v); }
static inline uint64_t exact_key_int64_t(int64_t v, bool *negnan) { (void)negnan; return key_of_int64_t(v); }
static inline uint8_t exact_key_int8_t(int8_t v, bool *negnan) { (void)negnan; return key_of_int8_t(v); }
static inline uint16_t exact_key_int16_t(int16_t v, bool *negnan) { (void)negnan; return key_of_int16_t(v); }

/* ---- a dtype's keys ------------------------------------------------------------------------- */

/* The helpers below take the dtype (and the key and position widths) as constants: each lane
** function is instantiated per dtype, so their switches fold into the typed code. */
#define SORT_INLINE static inline __attribute__((always_inline))

/* A key's width in bytes (its CT's: 1 for bool, uint8 and int8, 2 for int16 and uint16, 4
** for int32, uint32 and the float32 keys of float32 and the halves, 8 for the 64-bit ones). */
SORT_INLINE int key_width(gl_dtype dt) {
  switch (dt) {
#define KEY_WIDTH_CASE(E, id, S, kind, half, CT, ...) case GL_##E: return (int)sizeof(CT);
    GL_DTYPE_REAL_LIST(KEY_WIDTH_CASE)
    default: return 8;
  }
}

/* Whether keys lose something of the values (-0.0, NaN payloads): the floats'. */
SORT_INLINE bool key_lossy(gl_dtype dt) { return gl_dtype_is_float(dt); }
/* Whether the exact keys rebuild the values (not the halves: their keys are float32's). */
SORT_INLINE bool key_exact(gl_dtype dt) { return dt != GL_FLOAT16 && dt != GL_BFLOAT16; }

SORT_INLINE size_t elem_size(gl_dtype dt) {
  switch (dt) {
#define ELEM_SIZE_CASE(E, id, S, ...) case GL_##E: return sizeof(S);
    GL_DTYPE_REAL_LIST(ELEM_SIZE_CASE)
    default: return 8;
  }
}

/* Per dtype: element i of x as its compute value; as its sort key (*negzero set where it is
** -0.0); as partition's exact key (*negnan set for a NaN with its sign bit); and x[i] = the
** value key k stands for. */
#define ELEM_VALUE_FN(E, id, S, kind, half, CT, ...) \
  SORT_INLINE CT value_##id(const void *x, int64_t i) { return (CT)GL_DT_LOAD(half, ((const S *)x)[i]); }
#define ELEM_KEY_FN(E, id, S, kind, half, CT, ...)                                             \
  SORT_INLINE uint64_t key_##id(const void *x, int64_t i, bool *negzero) {                     \
    CT v = value_##id(x, i);                                                                   \
    *negzero = is_negzero_##CT(v);                                                             \
    return key_of_##CT(v);                                                                     \
  }                                                                                            \
  SORT_INLINE uint64_t exact_key_##id(const void *x, int64_t i, bool *negnan) {                \
    return exact_key_##CT(value_##id(x, i), negnan);                                           \
  }
#define STORE_KEY_FN(E, id, S, kind, half, CT, ...)                                            \
  SORT_INLINE void store_key_##id(void *x, int64_t i, uint64_t k) {                            \
    S v = GL_DT_STORE(kind, half, S, id, kind, CT##_of_key(k));                                \
    memcpy((S *)x + i, &v, sizeof v);                                                          \
  }
GL_DTYPE_REAL_LIST(ELEM_VALUE_FN)
GL_DTYPE_REAL_LIST(ELEM_KEY_FN)
GL_DTYPE_REAL_LIST(STORE_KEY_FN)

/* The same for a dtype dt: each case passes on the arguments A it is given. */
SORT_INLINE double elem_value(gl_dtype dt, const void *x, int64_t i) {
#define ELEM_VALUE_CASE(A, E, id, ...) case GL_##E: return (double)value_##id A;
  switch (dt) { GL_DTYPE_REAL_ROWS_(ELEM_VALUE_CASE, (x, i)) default: return 0; }
}

SORT_INLINE uint64_t elem_key(gl_dtype dt, const void *x, int64_t i, bool *negzero) {
#define ELEM_KEY_CASE(A, E, id, ...) case GL_##E: return key_##id A;
  switch (dt) { GL_DTYPE_REAL_ROWS_(ELEM_KEY_CASE, (x, i, negzero)) default: return 0; }
}

SORT_INLINE uint64_t elem_exact_key(gl_dtype dt, const void *x, int64_t i, bool *negnan) {
#define EXACT_KEY_CASE(A, E, id, ...) case GL_##E: return exact_key_##id A;
  switch (dt) { GL_DTYPE_REAL_ROWS_(EXACT_KEY_CASE, (x, i, negnan)) default: return 0; }
}

SORT_INLINE void elem_store_key(gl_dtype dt, void *x, int64_t i, uint64_t k) {
#define STORE_KEY_CASE(A, E, id, ...) case GL_##E: store_key_##id A; return;
  switch (dt) { GL_DTYPE_REAL_ROWS_(STORE_KEY_CASE, (x, i, k)) default: return; }
}

/* The key of zero. */
SORT_INLINE uint64_t zero_key(gl_dtype dt) {
  switch (dt) {
#define ZERO_KEY_CASE(E, id, S, kind, half, CT, ...) case GL_##E: return key_of_##CT(0);
    GL_DTYPE_REAL_LIST(ZERO_KEY_CASE)
    default: return 0;
  }
}

/* d[i] = s[j], the element's bits as they are. */
SORT_INLINE void elem_copy(gl_dtype dt, void *d, int64_t i, const void *s, int64_t j) {
  size_t sz = elem_size(dt);
  memcpy((char *)d + i * (int64_t)sz, (const char *)s + j * (int64_t)sz, sz);
}

/* ---- keys and positions of a width -------------------------------------------------------------- */

/* Key i of an array of kw-byte keys. */
SORT_INLINE uint64_t key_get(int kw, const void *k, int64_t i) {
  if (kw == 1) return ((const uint8_t *)k)[i];
  if (kw == 2) return ((const uint16_t *)k)[i];
  if (kw == 4) return ((const uint32_t *)k)[i];
  return ((const uint64_t *)k)[i];
}

SORT_INLINE void key_put(int kw, void *k, int64_t i, uint64_t v) {
  if (kw == 1) ((uint8_t *)k)[i] = (uint8_t)v;
  else if (kw == 2) ((uint16_t *)k)[i] = (uint16_t)v;
  else if (kw == 4) ((uint32_t *)k)[i] = (uint32_t)v;
  else ((uint64_t *)k)[i] = v;
}

/* The byte of key i at bit 'shift', in the key's own width (a 64-bit shift of a 32-bit key
** would cost the radix loops an instruction an element). */
SORT_INLINE unsigned key_digit(int kw, const void *k, int64_t i, int shift) {
  if (kw == 1) return ((const uint8_t *)k)[i];
  if (kw == 2) return ((const uint16_t *)k)[i] >> shift & 255;
  if (kw == 4) return ((const uint32_t *)k)[i] >> shift & 255;
  return (unsigned)(((const uint64_t *)k)[i] >> shift & 255);
}

/* Whether key i is below v (above v with 'above'), compared in the key's own width. */
SORT_INLINE bool key_beyond(int kw, const void *k, int64_t i, uint64_t v, bool above) {
  if (kw == 1) return above ? ((const uint8_t *)k)[i] > (uint8_t)v : ((const uint8_t *)k)[i] < (uint8_t)v;
  if (kw == 2) return above ? ((const uint16_t *)k)[i] > (uint16_t)v : ((const uint16_t *)k)[i] < (uint16_t)v;
  if (kw == 4) return above ? ((const uint32_t *)k)[i] > (uint32_t)v : ((const uint32_t *)k)[i] < (uint32_t)v;
  return above ? ((const uint64_t *)k)[i] > v : ((const uint64_t *)k)[i] < v;
}

/* kb[o] = ka[i]. */
SORT_INLINE void key_copy(int kw, void *kb, int64_t o, const void *ka, int64_t i) {
  if (kw == 1) ((uint8_t *)kb)[o] = ((const uint8_t *)ka)[i];
  else if (kw == 2) ((uint16_t *)kb)[o] = ((const uint16_t *)ka)[i];
  else if (kw == 4) ((uint32_t *)kb)[o] = ((const uint32_t *)ka)[i];
  else ((uint64_t *)kb)[o] = ((const uint64_t *)ka)[i];
}

/* The largest kw-byte key (every NaN's). */
SORT_INLINE uint64_t key_max(int kw) { return kw == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * kw)) - 1; }

/* Position i of an array of pw-byte positions (4 or 8). */
SORT_INLINE uint64_t pos_get(int pw, const void *p, int64_t i) {
  return pw == 4 ? ((const uint32_t *)p)[i] : ((const uint64_t *)p)[i];
}

SORT_INLINE void pos_put(int pw, void *p, int64_t i, uint64_t v) {
  if (pw == 4) ((uint32_t *)p)[i] = (uint32_t)v;
  else ((uint64_t *)p)[i] = v;
}

/* Swaps keys (and positions, p not NULL) i and j. */
SORT_INLINE void swap_at(int kw, int pw, void *k, void *p, int64_t i, int64_t j) {
  uint64_t t = key_get(kw, k, i);
  key_put(kw, k, i, key_get(kw, k, j));
  key_put(kw, k, j, t);
  if (p) {
    uint64_t q = pos_get(pw, p, i);
    pos_put(pw, p, i, pos_get(pw, p, j));
    pos_put(pw, p, j, q);
  }
}

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

/* The counts of one pass summed over the team into each thread's scatter offsets (one
** thread runs it); *skip set when the pass moves nothing (one digit for all) or a stop was
** asked for (*stop set). */
static void radix_offsets(int64_t *counts, int nt, int64_t n, int64_t *skip, bool *stop) {
  *stop = gl_interrupted();
  *skip = *stop;
  for (int d = 0; d < 256 && !*skip; d++) {
    int64_t s = 0;
    for (int u = 0; u < nt; u++) s += counts[256 * u + d];
    if (s == n) *skip = 1;
  }
  int64_t off = 0;
  for (int d = 0; d < 256 && !*skip; d++)
    for (int u = 0; u < nt; u++) {
      int64_t s = counts[256 * u + d];
      counts[256 * u + d] = off;
      off += s;
    }
}

/* Sorts kw-byte keys k[0..n) ascending, stably, carrying pw-byte positions p (NULL: none),
** with scratch (k2, p2) of the same sizes; returns whether the result ended in the scratch.
** Every thread of the enclosing team calls it (the barriers bind to that team; one thread
** outside a parallel region). 'counts' (shared) holds 256 counts per thread and a flag.
** A stop is polled once a pass: the team then returns at once (*stop set), the lane
** unsorted. */
SORT_INLINE bool radix(int kw, int pw, void *k, void *p, void *k2, void *p2, int64_t n,
                       int64_t *counts, bool *stop) {
  int64_t lo, hi;
  int t = team_share(n, &lo, &hi), nt = team_count();
  void *ka = k, *kb = k2, *pa = p, *pb = p2;
  bool swapped = false;
  int64_t *c = counts + 256 * t, *skip = counts + 256 * nt;
  for (int shift = 0; shift < 8 * kw; shift += 8) {
    memset(c, 0, 256 * sizeof *c);
    for (int64_t i = lo; i < hi; i++) c[key_digit(kw, ka, i, shift)]++;
    #pragma omp barrier
    #pragma omp single
    radix_offsets(counts, nt, n, skip, stop);
    if (*stop) return swapped;
    if (*skip) {
      #pragma omp barrier                   /* all have read the flag */
      continue;
    }
    if (pa)
      for (int64_t i = lo; i < hi; i++) {
        int64_t o = c[key_digit(kw, ka, i, shift)]++;
        key_copy(kw, kb, o, ka, i);
        pos_put(pw, pb, o, pos_get(pw, pa, i));
      }
    else
      for (int64_t i = lo; i < hi; i++) key_copy(kw, kb, c[key_digit(kw, ka, i, shift)]++, ka, i);
    #pragma omp barrier
    void *kt = ka, *pt = pa;
    ka = kb, kb = kt, pa = pb, pb = pt;
    swapped = !swapped;
  }
  return swapped;
}

/* The same for n <= SORT_INSERTION, on one thread: an insertion sort in place. */
SORT_INLINE void insertion(int kw, int pw, void *k, void *p, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    uint64_t kv = key_get(kw, k, i), pv = p ? pos_get(pw, p, i) : 0;
    int64_t j = i;
    for (; j > 0 && kv < key_get(kw, k, j - 1); j--) {
      key_put(kw, k, j, key_get(kw, k, j - 1));
      if (p) pos_put(pw, p, j, pos_get(pw, p, j - 1));
    }
    key_put(kw, k, j, kv);
    if (p) pos_put(pw, p, j, pv);
  }
}

/* The instances of the radix and insertion sorts (and the selection below), per key and
** position width. */
/* X(KW, PW, A) for each pair of widths, A the arguments of the call it makes. */
#define WIDTH_LIST(X, A) X(1, 4, A) X(1, 8, A) X(2, 4, A) X(2, 8, A) X(4, 4, A) X(4, 8, A) X(8, 4, A) X(8, 8, A)
#define WIDTH_CASE(KW, PW) ((KW) * 16 + (PW))

static bool radix_any(int kw, int pw, void *k, void *p, void *k2, void *p2, int64_t n,
                      int64_t *counts, bool *stop) {
#define RADIX_CASE(KW, PW, A) case WIDTH_CASE(KW, PW): return radix(KW, PW, GL_DT_UNPAREN_ A);
  switch (WIDTH_CASE(kw, pw)) { WIDTH_LIST(RADIX_CASE, (k, p, k2, p2, n, counts, stop)) default: return false; }
}

static void insertion_any(int kw, int pw, void *k, void *p, int64_t n) {
#define INSERTION_CASE(KW, PW, A) case WIDTH_CASE(KW, PW): insertion(KW, PW, GL_DT_UNPAREN_ A); return;
  switch (WIDTH_CASE(kw, pw)) { WIDTH_LIST(INSERTION_CASE, (k, p, n)) default: return; }
}

/* ---- partial sorts ------------------------------------------------------------------------ */

/* Quickselect over keys and positions (p NULL: none): the range holding the wanted position
** is split around the median of three (Hoare's two-pointer scan, the median first in the
** range so the split always moves) until it is short, then sorted by insertion; the first
** or last position of a range is a plain minimum or maximum scan; a range still long after
** 2 log2 n + 8 splits (a bad pivot run) is radix-sorted instead. For several positions
** (ascending), each is selected right of the one before. Returns false when stopped. */
SORT_INLINE bool select_kth(int kw, int pw, void *k, void *p, void *k2, void *p2, int64_t n,
                            const int64_t *kth, int nk) {
  int64_t left = 0;
  for (int w = 0; w < nk; w++) {
    int64_t want = kth[w], lo = left, hi = n;
    int depth = 8;
    for (int64_t m = n; m > 1; m >>= 1) depth += 2;
    while (hi - lo > SORT_INSERTION) {
      if (gl_interrupted()) return false;
      if (want == lo || want == hi - 1) {          /* a minimum or a maximum */
        int64_t best = lo;
        if (want == lo) {
          for (int64_t i = lo + 1; i < hi; i++) if (key_get(kw, k, i) < key_get(kw, k, best)) best = i;
        } else {
          for (int64_t i = lo + 1; i < hi; i++) if (key_get(kw, k, i) >= key_get(kw, k, best)) best = i;
        }
        swap_at(kw, pw, k, p, want, best);
        lo = hi;
        break;
      }
      if (depth-- == 0) {
        int64_t counts[257];
        bool stop = false, sw = false;
        void *kl = (char *)k + lo * kw, *pl = p ? (char *)p + lo * pw : NULL;
        #pragma omp parallel num_threads(1)     /* a team of one for the barriers */
        sw = radix_any(kw, pw, kl, pl, k2, p2, hi - lo, counts, &stop);
        if (stop) return false;
        if (sw) {
          memcpy(kl, k2, (size_t)(hi - lo) * (size_t)kw);
          if (p) memcpy(pl, p2, (size_t)(hi - lo) * (size_t)pw);
        }
        lo = hi;
        break;
      }
      int64_t mid = lo + (hi - lo) / 2, last = hi - 1;
      if (key_get(kw, k, mid) < key_get(kw, k, lo)) swap_at(kw, pw, k, p, mid, lo);
      if (key_get(kw, k, last) < key_get(kw, k, mid)) {
        swap_at(kw, pw, k, p, last, mid);
        if (key_get(kw, k, mid) < key_get(kw, k, lo)) swap_at(kw, pw, k, p, mid, lo);
      }
      swap_at(kw, pw, k, p, lo, mid);              /* the median to the front */
      uint64_t pv = key_get(kw, k, lo);
      int64_t i = lo - 1, j = hi;
      for (;;) {
        do i++; while (key_beyond(kw, k, i, pv, false));
        do j--; while (key_beyond(kw, k, j, pv, true));
        if (i >= j) break;
        swap_at(kw, pw, k, p, i, j);
      }
      if (want <= j) hi = j + 1;                   /* [lo, j] <= pv <= [j + 1, hi) */
      else lo = j + 1;
    }
    if (hi > lo) insertion(kw, pw, (char *)k + lo * kw, p ? (char *)p + lo * pw : NULL, hi - lo);
    left = want + 1;
  }
  return true;
}

static bool select_any(int kw, int pw, void *k, void *p, void *k2, void *p2, int64_t n,
                       const int64_t *kth, int nk) {
#define SELECT_CASE(KW, PW, A) case WIDTH_CASE(KW, PW): return select_kth(KW, PW, GL_DT_UNPAREN_ A);
  switch (WIDTH_CASE(kw, pw)) { WIDTH_LIST(SELECT_CASE, (k, p, k2, p2, n, kth, nk)) default: return false; }
}

/* ---- lanes ---------------------------------------------------------------------------------- */

/* The keys (desc: complemented) of elements [lo, hi) of a lane and, with p, their
** positions; returns whether one of them was -0.0. */
SORT_INLINE bool lane_keys(gl_dtype dt, const void *src, int64_t ss, int64_t lo, int64_t hi,
                           bool desc, void *k, void *p, int pw) {
  const int kw = key_width(dt);
  bool nz = false;
  for (int64_t j = lo; j < hi; j++) {
    bool jz;
    uint64_t key = elem_key(dt, src, j * ss, &jz);
    nz |= jz;
    key_put(kw, k, j, desc ? ~key : key);
    if (p) pos_put(pw, p, j, (uint64_t)j);
  }
  return nz;
}

/* Elements [lo, hi) of a sorted lane: with positions pr, the values gathered from src (vout
** not NULL) and the positions; else the values rebuilt from the keys kr. */
SORT_INLINE void lane_write(gl_dtype dt, void *vout, int64_t vs, int64_t *iout, int64_t is,
                            const void *src, int64_t ss, int64_t lo, int64_t hi, bool desc,
                            const void *kr, const void *pr, int pw) {
  const int kw = key_width(dt);
  for (int64_t j = lo; j < hi; j++) {
    if (pr) {
      int64_t q = (int64_t)pos_get(pw, pr, j);
      if (vout) elem_copy(dt, vout, j * vs, src, q * ss);
      iout[j * is] = q;
    } else {
      uint64_t key = key_get(kw, kr, j);
      elem_store_key(dt, vout, j * vs, desc ? ~key & key_max(kw) : key);
    }
  }
}

/* The counts a lane's radix sort keeps for a team of nt (int64s): per thread the counts of
** every digit of its share of the source (8 x 256), the counts of the next pass's digit by
** the thread that will read it (nt x 256) and its scatter offsets (256); the shares' bounds. */
#define RADIX_COUNTS(nt) ((size_t)(nt) * 256 * (16 + (size_t)(nt) + 1) + (size_t)(nt) + 2)

/* One radix pass over a thread's share [lo, hi) of a lane: from the source (keys made on
** the way) or from keys kin and positions pin, scattered by the digit at bit 'sh' to the
** offsets c into keys kout and positions pout, or (to_out) into the lane's outputs: values
** rebuilt from the keys, or with positions the values gathered from the source and the
** positions. Unless to_out it counts the next pass's digit (bit shn) into nx by the thread
** that will read each element there (its share's bounds in 'bound'; own: where each
** digit's offset is among them). The flags are constants at every call, so each call is
** its own loop. */
SORT_INLINE void radix_scatter(gl_dtype dt, bool from_src, bool to_out, bool with_pos, int pw,
                               const void *src, int64_t ss, int64_t lo, int64_t hi, bool desc,
                               const void *kin, const void *pin, void *kout, void *pout,
                               void *vout, int64_t vs, int64_t *iout, int64_t is, int sh, int shn,
                               int64_t *c, int64_t *nx, int tn, const int64_t *bound, int *own) {
  const int kw = key_width(dt);
  const uint64_t kmax = key_max(kw);
  for (int64_t j = lo; j < hi; j++) {
    uint64_t key, q = (uint64_t)j;
    if (from_src) {
      bool jz;
      key = elem_key(dt, src, j * ss, &jz);
      if (desc) key = ~key & kmax;
    } else {
      key = key_get(kw, kin, j);
      if (with_pos) q = pos_get(pw, pin, j);
    }
    unsigned dg = (unsigned)(key >> sh) & 255;
    int64_t o = c[dg]++;
    if (to_out) {
      if (with_pos) {
        if (vout) elem_copy(dt, vout, o * vs, src, (int64_t)q * ss);
        iout[o * is] = (int64_t)q;
      } else {
        elem_store_key(dt, vout, o * vs, desc ? ~key & kmax : key);
      }
    } else {
      key_put(kw, kout, o, key);
      if (with_pos) pos_put(pw, pout, o, q);
      unsigned dn = (unsigned)(key >> shn) & 255;
      if (tn == 1) {
        nx[dn]++;
      } else {
        while (o >= bound[own[dg] + 1]) own[dg]++;
        nx[own[dg] * 256 + dn]++;
      }
    }
  }
}

/* A thread's part of a lane's radix sort (sort_lane's team runs it; its arguments there;
** passes and m shared by the team). */
SORT_INLINE void lane_radix(gl_dtype dt, void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src,
                            int64_t ss, int64_t n, bool desc, void *k, void *k2, void *p, void *p2, int pw,
                            int64_t *counts, int *passes, int *m, bool *negzero, bool *stop) {
  const int kw = key_width(dt);
  const uint64_t kmax = key_max(kw);
  int64_t lo, hi;
  int t = team_share(n, &lo, &hi), tn = team_count();
  int64_t *hist = counts, *next = hist + (size_t)tn * 16 * 256, *offs = next + (size_t)tn * tn * 256;
  int64_t *bound = offs + (size_t)tn * 256, *h = hist + (size_t)t * 16 * 256;
  memset(h, 0, (size_t)kw * 256 * sizeof *h);
  int64_t *h2 = h + 8 * 256;                /* a second set for every other element, so */
  memset(h2, 0, (size_t)kw * 256 * sizeof *h2);  /* runs of one digit make two short chains */
  bool nz = false;
  int64_t j = lo;
  for (; j + 1 < hi; j += 2) {
    bool jz, jz2;
    uint64_t key = elem_key(dt, src, j * ss, &jz), key2 = elem_key(dt, src, (j + 1) * ss, &jz2);
    if (desc) key = ~key & kmax, key2 = ~key2 & kmax;
    nz |= jz | jz2;
    for (int d = 0; d < kw; d++) {
      h[d * 256 + (key >> (8 * d) & 255)]++;
      h2[d * 256 + (key2 >> (8 * d) & 255)]++;
    }
  }
  for (; j < hi; j++) {
    bool jz;
    uint64_t key = elem_key(dt, src, j * ss, &jz);
    if (desc) key = ~key & kmax;
    nz |= jz;
    for (int d = 0; d < kw; d++) h[d * 256 + (key >> (8 * d) & 255)]++;
  }
  for (int d = 0; d < kw * 256; d++) h[d] += h2[d];
  if (nz) {
    #pragma omp atomic write
    *negzero = true;
  }
  #pragma omp barrier
  #pragma omp single
  {
    for (int d = 0; d < kw; d++) {
      bool one = false;                    /* one digit for every key: no pass */
      for (int v = 0; v < 256 && !one; v++) {
        int64_t sum = 0;
        for (int u = 0; u < tn; u++) sum += hist[(size_t)u * 16 * 256 + d * 256 + v];
        one = sum == n;
      }
      if (!one) passes[(*m)++] = d;
    }
    if (*m == 0) passes[(*m)++] = 0;           /* every key equal: a pass that keeps the order */
    for (int u = 0; u <= tn; u++) bound[u] = n * u / tn;
  }
  const void *kin = NULL, *pin = NULL;
  void *kout = k, *pout = p;
  for (int i = 0; i < *m; i++) {
    int sh = 8 * passes[i], shn = i + 1 < *m ? 8 * passes[i + 1] : 0;
    bool first = i == 0, last = i == *m - 1;
    #pragma omp single
    {
      int64_t off = 0;
      for (int v = 0; v < 256; v++)
        for (int u = 0; u < tn; u++) {
          int64_t cnt = 0;
          if (first) cnt = hist[(size_t)u * 16 * 256 + passes[0] * 256 + v];
          else for (int w = 0; w < tn; w++) cnt += next[((size_t)w * tn + u) * 256 + v];
          offs[u * 256 + v] = off;
          off += cnt;
        }
      *stop = gl_interrupted();
    }
    if (*stop) break;
    int64_t *c = offs + (size_t)t * 256, *nx = next + (size_t)t * tn * 256;
    int own[256];
    if (!last) {
      memset(nx, 0, (size_t)tn * 256 * sizeof *nx);
      for (int v = 0; v < 256; v++) {
        int u = 0;
        while (u + 1 < tn && c[v] >= bound[u + 1]) u++;
        own[v] = u;
      }
    }
#define SCATTER(FROM, OUT, POS) \
    radix_scatter(dt, FROM, OUT, POS, pw, src, ss, lo, hi, desc, kin, pin, kout, pout, vout, vs, \
                  iout, is, sh, shn, c, nx, tn, bound, own)
    if (iout) {
      if (first && last) SCATTER(true, true, true);
      else if (first) SCATTER(true, false, true);
      else if (last) SCATTER(false, true, true);
      else SCATTER(false, false, true);
    } else {
      if (first && last) SCATTER(true, true, false);
      else if (first) SCATTER(true, false, false);
      else if (last) SCATTER(false, true, false);
      else SCATTER(false, false, false);
    }
#undef SCATTER
    #pragma omp barrier
    kin = kout, pin = pout;
    kout = kout == (void *)k ? (void *)k2 : (void *)k;
    pout = pout == p ? p2 : p;
  }
}

/* The same for a dtype known at run time (inside a parallel region, whose body the compiler
** outlines before it could see the dtype as a constant). */
static void lane_radix_any(gl_dtype dt, void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src,
                           int64_t ss, int64_t n, bool desc, void *k, void *k2, void *p, void *p2, int pw,
                           int64_t *counts, int *passes, int *m, bool *negzero, bool *stop) {
#define LANE_RADIX_CASE(A, E, ...) case GL_##E: lane_radix(GL_##E, GL_DT_UNPAREN_ A); return;
  switch (dt) {
    GL_DTYPE_REAL_ROWS_(LANE_RADIX_CASE, (vout, vs, iout, is, src, ss, n, desc, k, k2, p, p2, pw, counts, passes,
                                          m, negzero, stop))
    default: return;
  }
}

/* The first position in [lo, hi) of a sorted lane of values v (stride vs) where 'test'
** holds (hi when none); the test must be false and then true along the lane. */
enum { AT_NAN, AT_NUMBER, AT_GE0, AT_GT0, AT_LE0, AT_LT0 };
SORT_INLINE int64_t first_where(gl_dtype dt, const void *v, int64_t vs, int64_t lo, int64_t hi, int test) {
  while (lo < hi) {
    int64_t m = lo + (hi - lo) / 2;
    double x = elem_value(dt, v, m * vs);
    bool yes = test == AT_NAN ? x != x : test == AT_NUMBER ? x == x : test == AT_GE0 ? x >= 0
             : test == AT_GT0 ? x > 0 : test == AT_LE0 ? x <= 0 : x < 0;
    if (yes) hi = m;
    else lo = m + 1;
  }
  return lo;
}

/* ---- the bucketed sort of 32-bit values ---------------------------------------------------- */

/* A long lane of float32, int32 or uint32 values alone (no positions) takes one pass out of
** cache and the rest in cache: the keys are split by their top 16 bits into buckets of about
** 'target' keys, contiguous ranges of those digits cut where the counts say (a float lane's
** top bits are few exponents, so fixed digits would make a few huge buckets), scattered
** stably by the team, and each bucket is then radix-sorted by one thread in L2 on the bits
** its keys do not share (two passes of up to 11 bits, or three), its values staged in
** cache and copied out.
**
** The counts come from a sample (every BUCKET_STRIDE-th key of each thread's share): each
** thread scatters into regions of k and k2 (one 2n array) sized by its estimates with a
** margin, so the lane is read twice (the sample is a small part of a read) rather than
** three times. A region that fills up sends the team back to exact counts (a full counting
** pass, regions of the exact sizes). On 1e7 randn float32 one thread takes ~40 ms against
** the four-pass radix sort's ~90 ms (NumPy 2.4's AVX-512 sort ~35 ms on this 2-core Zen 4).
** A lane whose largest bucket holds more than an eighth of it (few distinct top digits:
** small integers, many equal values) takes the radix sort. */

#define BUCKET_MIN 65536           /* shorter lanes take the radix sort */
#define BUCKET_DIGITS 65536        /* the top 16 bits of a key */
#define BUCKET_MAX 4096            /* buckets at most (2 n / target + 2 with the targets below) */
#define BUCKET_STRIDE 64           /* one key in this many is sampled */
#define BUCKET_TEAM 256            /* the most threads of a team (cpu_team.c's MAX_THREADS) */

/* A bucketed sort's state, shared by the team: per thread the counts of its share's top
** digits (sampled or exact); the digit-to-bucket map; each bucket's first digit, its place
** in the output, and per thread its region in k: start, end (the capacity) and
** fill (where the scatter got to). */
typedef struct bucket_plan {
  uint32_t *hist;                  /* (nt, BUCKET_DIGITS) */
  int64_t *start, *end, *fill;     /* (nt, BUCKET_MAX) */
  uint16_t *map;                   /* (BUCKET_DIGITS) */
  uint32_t *scratch;               /* (nt, 2 most): a bucket's passes, kept in L2 */
  size_t scratch_size;             /* (the plan and the scratch come from the caching
                                   ** allocator: fresh pages each sort cost page faults) */
  int64_t target, most;
  int64_t out[BUCKET_MAX + 1];
  uint32_t first[BUCKET_MAX];
  int nb, stride;
  bool fallback, overflow, negzero, stop;
} bucket_plan;

/* The key of a 32-bit value's bits b (desc: complemented), as key_of_float, key_of_int32_t
** and the unsigned one do it but without branches (a float's -0.0 as +0.0, every NaN the
** largest key); *nz |= b is -0.0. And the bits of the value a key stands for. */
SORT_INLINE uint32_t bucket_key(gl_dtype dt, uint32_t b, bool desc, bool *nz) {
  uint32_t key = b;
  if (dt == GL_FLOAT32) {
    uint32_t a = b & 0x7fffffffu;
    *nz |= b == 0x80000000u;
    b = a == 0 ? 0 : b;
    key = a > 0x7f800000u ? UINT32_MAX : (uint32_t)key_of_bits(b, 32);
  } else if (dt == GL_INT32) {
    key = b ^ 0x80000000u;
  }
  return desc ? ~key : key;
}
SORT_INLINE uint32_t bucket_value(gl_dtype dt, uint32_t key, bool desc) {
  if (desc) key = ~key;
  if (dt == GL_FLOAT32) return (uint32_t)bits_of_key(key, 32);
  return dt == GL_INT32 ? key ^ 0x80000000u : key;
}

/* Sorts the keys of one bucket, in np pieces (piece u: m[u] keys at a[u]), into the values
** out; x and y are scratch of as many keys. LSD passes over the bits where the bucket's
** smallest and largest keys differ, of at most 11 bits each (the counts stay in L1) and as
** few as cover them, a pass whose digit is the same for every key skipped; the first
** reads the pieces, the last writes the values into x or y (in cache), copied to out at
** the end. */
SORT_INLINE void bucket_radix(gl_dtype dt, uint32_t *const *a, const int64_t *m, int np, uint32_t *x, uint32_t *y,
                              uint32_t *out, bool desc) {
  uint32_t lo = UINT32_MAX, hi = 0;
  int64_t total = 0;
  for (int u = 0; u < np; u++) {
    const uint32_t *p = a[u];
    total += m[u];
    for (int64_t i = 0; i < m[u]; i++) {
      lo = p[i] < lo ? p[i] : lo;
      hi = p[i] > hi ? p[i] : hi;
    }
  }
  if (total == 0) return;
  if (lo == hi) {                           /* every key equal */
    for (int64_t i = 0; i < total; i++) out[i] = bucket_value(dt, lo, desc);
    return;
  }
  int bits = 32 - __builtin_clz(lo ^ hi);
  int ndig = bits <= 11 ? 1 : bits <= 22 ? 2 : 3, w = (bits + ndig - 1) / ndig;
  uint32_t mask = ((uint32_t)1 << w) - 1, cnt[3][2048];
  memset(cnt, 0, sizeof cnt[0] * (size_t)ndig);
  for (int u = 0; u < np; u++) {
    const uint32_t *p = a[u];
    if (ndig == 1)
      for (int64_t i = 0; i < m[u]; i++) cnt[0][p[i] & mask]++;
    else if (ndig == 2)
      for (int64_t i = 0; i < m[u]; i++) { cnt[0][p[i] & mask]++; cnt[1][p[i] >> w & mask]++; }
    else
      for (int64_t i = 0; i < m[u]; i++) { cnt[0][p[i] & mask]++; cnt[1][p[i] >> w & mask]++; cnt[2][p[i] >> 2 * w & mask]++; }
  }
  int act[3], na = 0;
  for (int d = 0; d < ndig; d++)
    if (cnt[d][lo >> d * w & mask] != (uint32_t)total) act[na++] = d;
  const uint32_t *from = NULL;
  uint32_t *to = x;
  for (int q = 0; q < na; q++) {
    int sh = act[q] * w;
    bool last = q == na - 1;
    uint32_t *c = cnt[act[q]], off = 0;
    for (uint32_t v = 0; v <= mask; v++) { uint32_t s = c[v]; c[v] = off; off += s; }
    for (int u = 0; u < (q == 0 ? np : 1); u++) {
      const uint32_t *f = q == 0 ? a[u] : from;
      int64_t len = q == 0 ? m[u] : total;
      if (last)
        for (int64_t i = 0; i < len; i++) to[c[f[i] >> sh & mask]++] = bucket_value(dt, f[i], desc);
      else
        for (int64_t i = 0; i < len; i++) to[c[f[i] >> sh & mask]++] = f[i];
    }
    from = to;
    to = to == x ? y : x;
  }
  memcpy(out, from, (size_t)total * sizeof *out);
}

/* The counts of the top digits of every stride-th key of a thread's share [lo, hi) of a
** lane (stride ss) into h; then the share's scatter into its regions of k by the bucket of
** each digit (fill: where each region is written to; end: its capacity, checked when
** 'check'): false when a region is full (the scatter then stops). ss is a constant at
** each call (1, or any). */
SORT_INLINE void bucket_count(gl_dtype dt, const uint32_t *src, int64_t ss, int64_t lo, int64_t hi, int stride,
                              bool desc, uint32_t *h) {
  bool nz = false;
  for (int64_t j = lo; j < hi; j += stride) h[bucket_key(dt, src[j * ss], desc, &nz) >> 16]++;
}
SORT_INLINE bool bucket_scatter(gl_dtype dt, const uint32_t *src, int64_t ss, int64_t lo, int64_t hi, bool desc,
                                uint32_t *k, int64_t *fill, const int64_t *end, const uint16_t *map, bool check,
                                bool *nz) {
  for (int64_t j = lo; j < hi; j++) {
    uint32_t key = bucket_key(dt, src[j * ss], desc, nz);
    int b = map[key >> 16];
    int64_t o = fill[b]++;
    if (check && o >= end[b]) return false;
    k[o] = key;
  }
  return true;
}

/* Cuts the digits into buckets of about 'target' keys by the counts (each count standing
** for 'stride' keys; a digit of more keys alone) and gives each thread a region of k per
** bucket, in (bucket, thread) order: its count, with a margin when sampled. One thread. */
static void bucket_split(bucket_plan *bp, int nt, int64_t n) {
  int nb = 0, s = bp->stride;
  int64_t fill = 0, at = 0, prev = 0;
  for (uint32_t d = 0; d < BUCKET_DIGITS; d++) {
    int64_t c = 0;
    for (int u = 0; u < nt; u++) c += bp->hist[(size_t)u * BUCKET_DIGITS + d];
    c *= s;
    if (c && (nb == 0 || fill + c > bp->target)) {
      if (nb == BUCKET_MAX) { bp->fallback = true; return; }
      if (nb && at - prev > n / 8 && at - prev > 4 * bp->target) { bp->fallback = true; return; }
      prev = at;
      bp->first[nb++] = d;
      fill = 0;
    }
    if (nb) bp->map[d] = (uint16_t)(nb - 1);
    fill += c;
    at += c;
  }
  if (nb == 0 || (at - prev > n / 8 && at - prev > 4 * bp->target)) { bp->fallback = true; return; }
  for (uint32_t d = 0; d < bp->first[0]; d++) bp->map[d] = 0;   /* unsampled digits below the first */
  bp->nb = nb;
  for (int u = 0; u < nt; u++)
    for (int b = 0; b < nb; b++) bp->end[(size_t)u * BUCKET_MAX + b] = 0;
  for (uint32_t d = 0; d < BUCKET_DIGITS; d++)    /* per thread, its keys in each bucket */
    for (int u = 0; u < nt; u++) {
      uint32_t c = bp->hist[(size_t)u * BUCKET_DIGITS + d];
      if (c) bp->end[(size_t)u * BUCKET_MAX + bp->map[d]] += (int64_t)c * s;
    }
  int64_t off = 0;
  for (int b = 0; b < nb; b++)
    for (int u = 0; u < nt; u++) {
      size_t i = (size_t)u * BUCKET_MAX + b;
      int64_t c = bp->end[i];
      if (s > 1) {                              /* a margin of about five deviations */
        int64_t dev = 1;
        while (dev * dev < c * s) dev++;
        c += 5 * dev + 2 * s + 64;
      }
      bp->start[i] = bp->fill[i] = off;
      off += c;
      bp->end[i] = off;
    }
  if (off > 2 * n) bp->overflow = true;         /* more than k and k2 hold */
}

/* After the scatter: each bucket's place in the output, the largest bucket, the scratch.
** One thread. */
static void bucket_place(bucket_plan *bp, int nt) {
  int64_t at = 0;
  bp->most = 0;
  for (int b = 0; b < bp->nb; b++) {
    int64_t m = 0;
    for (int u = 0; u < nt; u++) m += bp->fill[(size_t)u * BUCKET_MAX + b] - bp->start[(size_t)u * BUCKET_MAX + b];
    bp->out[b] = at;
    at += m;
    if (m > bp->most) bp->most = m;
  }
  bp->out[bp->nb] = at;
  bp->scratch_size = (size_t)nt * 2 * (size_t)bp->most * sizeof *bp->scratch;
  if (gl_cpu_alloc(gl_cpu(), bp->scratch_size, (void **)&bp->scratch) != GL_OK) {
    bp->scratch = NULL;
    bp->fallback = true;
  }
}

/* A thread's part of a bucketed sort (the team of sort_lane runs it): the counts (sampled,
** or exact after a region filled up), the scatter into k (k2 follows it: one 2n array),
** then whole buckets. */
SORT_INLINE void bucket_team(gl_dtype dt, uint32_t *vout, const uint32_t *src, int64_t ss, int64_t n, bool desc,
                             uint32_t *k, bucket_plan *bp) {
  int64_t lo, hi;
  int t = team_share(n, &lo, &hi), nt = team_count();
  uint32_t *h = bp->hist + (size_t)t * BUCKET_DIGITS;
  int64_t *fill = bp->fill + (size_t)t * BUCKET_MAX, *end = bp->end + (size_t)t * BUCKET_MAX;
  bool nz = false;
  for (int exact = bp->stride == 1; ; exact = 1) {
    memset(h, 0, BUCKET_DIGITS * sizeof *h);
    int s = exact ? 1 : BUCKET_STRIDE;
    if (ss == 1) bucket_count(dt, src, 1, lo, hi, s, desc, h);
    else bucket_count(dt, src, ss, lo, hi, s, desc, h);
    #pragma omp barrier
    #pragma omp single
    {
      bp->stride = s;
      bp->overflow = false;
      bucket_split(bp, nt, n);
      bp->stop = gl_interrupted();
    }
    if (bp->fallback || bp->stop) return;
    if (!bp->overflow) {
      bool ok = ss == 1 ? bucket_scatter(dt, src, 1, lo, hi, desc, k, fill, end, bp->map, !exact, &nz)
                        : bucket_scatter(dt, src, ss, lo, hi, desc, k, fill, end, bp->map, !exact, &nz);
      if (!ok) {
        #pragma omp atomic write
        bp->overflow = true;
      }
    }
    #pragma omp barrier
    if (exact || !bp->overflow) break;
    #pragma omp barrier                       /* all have read the flag */
  }
  if (nz) {
    #pragma omp atomic write
    bp->negzero = true;
  }
  #pragma omp single
  bucket_place(bp, nt);
  if (bp->fallback) return;
  uint32_t *x = bp->scratch + (size_t)t * 2 * (size_t)bp->most, *y = x + bp->most;
  #pragma omp for schedule(dynamic, 1)
  for (int b = 0; b < bp->nb; b++) {
    if (bp->stop) continue;
    if (gl_interrupted()) bp->stop = true;
    uint32_t *pieces[BUCKET_TEAM];
    int64_t m[BUCKET_TEAM];
    for (int u = 0; u < nt; u++) {
      size_t i = (size_t)u * BUCKET_MAX + b;
      pieces[u] = k + bp->start[i];
      m[u] = bp->fill[i] - bp->start[i];
    }
    bucket_radix(dt, pieces, m, nt, x, y, vout + bp->out[b], desc);
  }
}

static void bucket_team_any(gl_dtype dt, uint32_t *vout, const uint32_t *src, int64_t ss, int64_t n, bool desc,
                            uint32_t *k, bucket_plan *bp) {
  switch (dt) {
    case GL_FLOAT32: bucket_team(GL_FLOAT32, vout, src, ss, n, desc, k, bp); return;
    case GL_INT32: bucket_team(GL_INT32, vout, src, ss, n, desc, k, bp); return;
    case GL_UINT32: bucket_team(GL_UINT32, vout, src, ss, n, desc, k, bp); return;
    default: bp->fallback = true; return;
  }
}

/* Whether a lane sorts by buckets: 32-bit values alone, long, into contiguous values. */
static bool bucket_fits(gl_dtype dt, int64_t n, int64_t vs, const int64_t *iout) {
  return (dt == GL_FLOAT32 || dt == GL_INT32 || dt == GL_UINT32) && !iout && vs == 1 && n >= BUCKET_MIN &&
         n <= (int64_t)UINT32_MAX;
}

/* The bucketed sort of a lane by nt threads (k: 2n keys); false when it does not suit the
** lane (the values then unwritten) or its plan could not be had; *stop, *negzero as
** sort_lane's. */
static bool bucket_sort(gl_dtype dt, void *vout, const void *src, int64_t ss, int64_t n, bool desc,
                        uint32_t *k, int nt, bool *negzero, bool *stop) {
  if (nt > BUCKET_TEAM) return false;
  bucket_plan *bp = calloc(1, sizeof *bp);
  if (bp == NULL) return false;
  /* the counts, the regions and the map in one block from the caching allocator */
  size_t hist_size = (size_t)nt * BUCKET_DIGITS * sizeof *bp->hist;
  size_t regions_size = (size_t)nt * BUCKET_MAX * 3 * sizeof *bp->start;
  size_t plan_size = hist_size + regions_size + BUCKET_DIGITS * sizeof *bp->map;
  char *plan = NULL;
  if (gl_cpu_alloc(gl_cpu(), plan_size, (void **)&plan) != GL_OK) {
    free(bp);
    return false;
  }
  bp->start = (int64_t *)plan;
  bp->end = bp->start + (size_t)nt * BUCKET_MAX;
  bp->fill = bp->end + (size_t)nt * BUCKET_MAX;
  bp->hist = (uint32_t *)(plan + regions_size);
  bp->map = (uint16_t *)(plan + regions_size + hist_size);
  bp->target = n / 256 > 8192 ? n / 256 : 8192;
  bp->stride = n / nt >= 1024 * BUCKET_STRIDE ? BUCKET_STRIDE : 1;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  bucket_team_any(dt, vout, src, ss, n, desc, k, bp);
  bool ok = !bp->fallback;
  *negzero = bp->negzero;
  *stop = bp->stop;
  gl_cpu_free(gl_cpu(), plan, plan_size);
  if (bp->scratch) gl_cpu_free(gl_cpu(), bp->scratch, bp->scratch_size);
  free(bp);
  return ok || *stop;
}

/* One lane of n elements from src (stride ss) into vout (stride vs; NULL: none) and the
** 0-based positions into iout (stride is; NULL: none), sorted by 'nt' threads (the lane
** function makes the team). 'buf' holds 2n keys and, with positions, 2n positions;
** 'counts' RADIX_COUNTS(nt). Returns false when stopped.
**
** A short lane is sorted by insertion. Otherwise one read of the source counts every
** digit (a pass whose digit is the same for every key is dropped); the first pass makes
** the keys from the source as it scatters them, and the last writes the outputs (values
** rebuilt from keys, or gathered by position) instead of keys. Each pass counts the next
** pass's digits as it writes them, by the thread that will read them, so no pass reads
** its keys twice. */
SORT_INLINE bool sort_lane(gl_dtype dt, void *vout, int64_t vs, int64_t *iout, int64_t is,
                           const void *src, int64_t ss, int64_t n, bool desc, void *buf,
                           int64_t *counts, int nt) {
  const int kw = key_width(dt);
  bool wide = n > (int64_t)UINT32_MAX, negzero = false, stop = false;
  int pw = wide ? 8 : 4;
  size_t psz = iout ? (size_t)pw : 0;
  void *p = iout ? buf : NULL, *p2 = iout ? (char *)buf + (size_t)n * psz : NULL;
  char *k = (char *)buf + 2 * (size_t)n * psz, *k2 = k + (size_t)n * (size_t)kw;
  if (n <= SORT_INSERTION) {
    negzero = lane_keys(dt, src, ss, 0, n, desc, k, p, pw);
    insertion(kw, pw, k, p, n);
    lane_write(dt, vout, vs, iout, is, src, ss, 0, n, desc, k, p, pw);
  } else if (bucket_fits(dt, n, vs, iout) &&
             bucket_sort(dt, vout, src, ss, n, desc, (uint32_t *)k, nt, &negzero, &stop)) {
    /* sorted by buckets (or stopped) */
  } else {
    int passes[8], m = 0;
    #pragma omp parallel num_threads(nt) if (nt > 1)
    lane_radix_any(dt, vout, vs, iout, is, src, ss, n, desc, k, k2, p, p2, pw, counts, passes, &m, &negzero, &stop);
  }
  if (stop) return false;
  if (key_lossy(dt) && !iout) {               /* rebuild the NaNs and zeros from the source */
    /* the NaNs are last (first, descending), the zeros between the negatives and positives */
    int64_t a = desc ? 0 : first_where(dt, vout, vs, 0, n, AT_NAN);
    int64_t b = desc ? first_where(dt, vout, vs, 0, n, AT_NUMBER) : n;
    for (int64_t j = 0, o = a; o < b && j < n; j++) {
      double v = elem_value(dt, src, j * ss);
      if (v != v) elem_copy(dt, vout, (o++) * vs, src, j * ss);
    }
    if (negzero) {
      int64_t lo = desc ? b : 0, hi = desc ? n : a;
      int64_t z0 = first_where(dt, vout, vs, lo, hi, desc ? AT_LE0 : AT_GE0);
      int64_t z1 = first_where(dt, vout, vs, lo, hi, desc ? AT_LT0 : AT_GT0);
      for (int64_t j = 0, o = z0; o < z1 && j < n; j++)
        if (elem_value(dt, src, j * ss) == 0) elem_copy(dt, vout, (o++) * vs, src, j * ss);
    }
  }
  return true;
}

/* ---- complex lanes ------------------------------------------------------------------------ */

/* NumPy sorts complex numbers in four groups by where their NaNs are: [R + Rj, R + nanj,
** nan + Rj, nan + nanj], the first by the real parts then the imaginary ones, the second by
** the real parts, the third by the imaginary ones (R: not NaN). A lane takes three stable
** passes, least significant first: positions sorted by the imaginary parts' keys, then by
** the real parts' keys, then by the group (a one-byte key); the floats' keys above make
** every NaN the largest (so a group's NaN part ties) and -0 equal to +0. The values are
** gathered by position. */

enum { KEY_IMAG, KEY_REAL, KEY_GROUP };

/* The key of element q of a complex lane (stride ss): of a part, or of its group. */
SORT_INLINE uint64_t complex_key(gl_dtype dt, const void *src, int64_t ss, int64_t q, int which) {
  double re, im;
  if (dt == GL_COMPLEX64) {
    const float *z = (const float *)src + 2 * q * ss;
    if (which == KEY_REAL) return key_of_float(z[0]);
    if (which == KEY_IMAG) return key_of_float(z[1]);
    re = z[0], im = z[1];
  } else {
    const double *z = (const double *)src + 2 * q * ss;
    if (which == KEY_REAL) return key_of_double(z[0]);
    if (which == KEY_IMAG) return key_of_double(z[1]);
    re = z[0], im = z[1];
  }
  return (uint64_t)(2 * (re != re) + (im != im));
}

/* Keys 'which' (kw bytes; desc: complemented) of elements [lo, hi) of a lane in the order
** of positions 'order' (NULL: 0, 1, ...) into k, and those positions into p. */
SORT_INLINE void complex_keys(gl_dtype dt, const void *src, int64_t ss, int64_t lo, int64_t hi, bool desc,
                              int which, int kw, const void *order, void *k, void *p, int pw) {
  for (int64_t j = lo; j < hi; j++) {
    uint64_t q = order ? pos_get(pw, order, j) : (uint64_t)j, key = complex_key(dt, src, ss, (int64_t)q, which);
    key_put(kw, k, j, desc ? ~key & key_max(kw) : key);
    pos_put(pw, p, j, q);
  }
}

/* A sort of one complex lane, as sort_lane (positions always: 'buf' holds 2n keys and 2n
** positions). */
static bool sort_lane_complex(gl_dtype dt, void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src,
                              int64_t ss, int64_t n, bool desc, void *buf, int64_t *counts, int nt) {
  const int pkw = dt == GL_COMPLEX64 ? 4 : 8;
  const size_t esz = gl_dtypes[dt].size;
  int pw = n > (int64_t)UINT32_MAX ? 8 : 4;
  char *p = buf, *p2 = p + (size_t)n * (size_t)pw, *k = p2 + (size_t)n * (size_t)pw, *k2 = k + (size_t)n * 8;
  bool stop = false;
  if (n <= SORT_INSERTION) nt = 1;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int64_t lo, hi;
    team_share(n, &lo, &hi);
    /* each pass makes its keys in (ka, pa) from the last pass's positions; the sort
    ** leaves its result in (ka, pa) or, swapped, in (kb, pb) */
    char *ka = k, *pa = p, *kb = k2, *pb = p2;
    const char *order = NULL;
    for (int which = KEY_IMAG; which <= KEY_GROUP && !stop; which++) {
      int kw = which == KEY_GROUP ? 1 : pkw;
      complex_keys(dt, src, ss, lo, hi, desc, which, kw, order, ka, pa, pw);
      #pragma omp barrier
      bool sw = false;
      if (n <= SORT_INSERTION) insertion_any(kw, pw, ka, pa, n);
      else sw = radix_any(kw, pw, ka, pa, kb, pb, n, counts, &stop);
      if (!sw) {                          /* the result in (kb, pb), the next keys in (ka, pa) */
        char *t = ka; ka = kb; kb = t;
        t = pa; pa = pb; pb = t;
      }
      order = pb;
      #pragma omp barrier                 /* the next keys overwrite what others may read */
    }
    if (!stop)
      for (int64_t j = lo; j < hi; j++) {
        int64_t q = (int64_t)pos_get(pw, order, j);
        if (vout) memcpy((char *)vout + j * vs * (int64_t)esz, (const char *)src + q * ss * (int64_t)esz, esz);
        if (iout) iout[j * is] = q;
      }
  }
  return !stop;
}

typedef bool (*sort_lane_fn)(void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src,
                             int64_t ss, int64_t n, bool desc, void *buf, int64_t *counts, int nt);
#define SORT_LANE_FN(E, id, ...) static bool sort_lane_##id(void *vout, int64_t vs, int64_t *iout, \
  int64_t is, const void *src, int64_t ss, int64_t n, bool desc, void *buf, int64_t *counts, int nt) { \
  return sort_lane(GL_##E, vout, vs, iout, is, src, ss, n, desc, buf, counts, nt); }
GL_DTYPE_REAL_LIST(SORT_LANE_FN)
static bool sort_lane_complex64(void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src, int64_t ss,
                                int64_t n, bool desc, void *buf, int64_t *counts, int nt) {
  return sort_lane_complex(GL_COMPLEX64, vout, vs, iout, is, src, ss, n, desc, buf, counts, nt);
}
static bool sort_lane_complex128(void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src, int64_t ss,
                                 int64_t n, bool desc, void *buf, int64_t *counts, int nt) {
  return sort_lane_complex(GL_COMPLEX128, vout, vs, iout, is, src, ss, n, desc, buf, counts, nt);
}
#define SORT_LANE_ENTRY(E, id, ...) [GL_##E] = sort_lane_##id,
static const sort_lane_fn sort_lanes[GL_NDTYPE] = { GL_DTYPE_LIST(SORT_LANE_ENTRY) };

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

/* Where the lanes of a sort or partition along 'axis' are: their elements in src, values
** and indices (NULL: not asked for) and the strides along the axis. */
typedef struct lane_walk {
  const gl_array *values, *indices, *src;
  int axis;
  size_t sz;
  const char *s;
  char *v;
  int64_t *ip;
  int64_t ss, vs, is;
} lane_walk;

static lane_walk lane_walk_of(const gl_array *values, const gl_array *indices, const gl_array *src,
                              int axis) {
  lane_walk w = { values, indices, src, axis, gl_dtypes[src->dtype].size, gl_array_data(src),
                  values ? gl_array_data(values) : NULL, indices ? gl_array_data(indices) : NULL,
                  src->ndim ? src->strides[axis] : 1, values && values->ndim ? values->strides[axis] : 1,
                  indices && indices->ndim ? indices->strides[axis] : 1 };
  return w;
}

/* Lane r's first element in src (returned), values (*vo) and indices (*io). */
static const char *lane_at(const lane_walk *w, int64_t r, void **vo, int64_t **io) {
  *vo = w->v ? w->v + lane_offset(w->values, w->axis, r) * (int64_t)w->sz : NULL;
  *io = w->ip ? w->ip + lane_offset(w->indices, w->axis, r) : NULL;
  return w->s + lane_offset(w->src, w->axis, r) * (int64_t)w->sz;
}

/* Runs one(job, r, buf) for each lane r < lanes on a team of nt threads, each thread with a
** scratch of bufsz bytes of its own; false when a scratch could not be had. */
typedef void (*lane_fn)(const void *job, int64_t r, void *buf);
static bool each_lane(int nt, int64_t lanes, size_t bufsz, lane_fn one, const void *job) {
  bool failed = false;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    /* per thread, from the caching allocator (a long lane's fresh pages would cost more
    ** page faults than its passes); every thread still meets the 'for' */
    void *buf = NULL;
    if (gl_cpu_alloc(gl_cpu(), bufsz, &buf) != GL_OK) {
      #pragma omp atomic write
      failed = true;
    }
    #pragma omp for schedule(static)
    for (int64_t r = 0; r < lanes; r++)
      if (buf != NULL && !gl_interrupted()) one(job, r, buf);
    gl_cpu_free(gl_cpu(), buf, bufsz);
  }
  return !failed;
}

/* A sort of lanes of n elements: a lane's scratch is bufsz bytes of keys and positions, then
** the RADIX_COUNTS(1) counts of a one-thread radix sort. */
typedef struct sort_job { lane_walk w; sort_lane_fn fn; int64_t n; size_t bufsz; bool desc; } sort_job;

static void sort_one(const void *job, int64_t r, void *buf) {
  const sort_job *j = job;
  void *vo;
  int64_t *io;
  const char *so = lane_at(&j->w, r, &vo, &io);
  j->fn(vo, j->w.vs, io, j->w.is, so, j->w.ss, j->n, j->desc, buf, (int64_t *)((char *)buf + j->bufsz), 1);
}

gl_status gl_cpu_sort(const gl_array *values, const gl_array *indices, const gl_array *src,
                      int axis, bool descending) {
  int64_t n = src->ndim ? src->shape[axis] : 1;
  if (src->size == 0 || n == 0) return GL_OK;
  int64_t lanes = src->size / n;
  /* keys of at most 8 bytes, twice, and positions, twice (a complex lane's always) */
  bool positions = indices || gl_dtype_is_complex((gl_dtype)src->dtype);
  size_t bufsz = (size_t)n * 2 * (8 + (positions ? 8 : 0));
  /* a long lane's scratch by its widths (a lane of float32 values alone: 2n 4-byte keys) */
  size_t kw = gl_dtype_is_complex((gl_dtype)src->dtype) ? 8 : (size_t)key_width((gl_dtype)src->dtype);
  size_t longsz = (size_t)n * 2 * (kw + (positions ? (n > (int64_t)UINT32_MAX ? 8 : 4) : 0));
  sort_job job = { lane_walk_of(values, indices, src, axis), sort_lanes[src->dtype], n, bufsz, descending };
  int nt = src->size >= GL_POLL_SPAN / 8 ? gl_cpu_team_size(src->size) : 1;
  bool failed = false;
  if (nt > 1 && lanes < nt && n >= SORT_PAR_LANE) {
    /* few long lanes: the team sorts each in turn, in scratch from the caching allocator
    ** (fresh pages of a 1e7 lane would cost more page faults than its radix passes) */
    void *buf = NULL, *vo;
    int64_t *counts = malloc(RADIX_COUNTS(nt) * sizeof *counts), *io;
    if (counts == NULL || gl_cpu_alloc(gl_cpu(), longsz, &buf) != GL_OK) {
      free(counts);
      return gl_fail(GL_ENOMEM, "sort: out of host memory for a lane of %lld elements", (long long)n);
    }
    for (int64_t r = 0; r < lanes; r++) {
      const char *so = lane_at(&job.w, r, &vo, &io);
      if (!job.fn(vo, job.w.vs, io, job.w.is, so, job.w.ss, n, descending, buf, counts, nt)) break;
    }
    gl_cpu_free(gl_cpu(), buf, longsz);
    free(counts);
  } else {
    failed = !each_lane(nt, lanes, bufsz + RADIX_COUNTS(1) * sizeof(int64_t), sort_one, &job);
  }
  gl_cpu_team_done(nt);
  if (failed) return gl_fail(GL_ENOMEM, "sort: out of host memory for a lane of %lld elements", (long long)n);
  return gl_interrupt_check();
}

/* ---- partition -------------------------------------------------------------------------------- */

/* One lane: keys and positions, the selection, then values gathered from the source by
** position (payloads and signs kept) and the positions. The keys are the exact ones (-0.0
** below +0.0) with every NaN the largest, so that partition and argpartition of one array
** make the same moves, and a gradient through argpartition reaches the elements partition
** placed. 'buf' as a sort lane's with positions. Returns false when stopped. */
SORT_INLINE bool part_lane(gl_dtype dt, void *vout, int64_t vs, int64_t *iout, int64_t is,
                           const void *src, int64_t ss, int64_t n, const int64_t *kth, int nk,
                           void *buf) {
  const int kw = key_width(dt);
  if (!iout && key_exact(dt)) {              /* values alone: exact keys, no positions */
    /* the keys in vout itself where they fit; the scratch only for the radix fallback */
    bool inplace = vs == 1 && elem_size(dt) == (size_t)kw;
    char *k = inplace ? (char *)vout : (char *)buf;
    char *k2 = (char *)buf + (inplace ? 0 : (size_t)n * (size_t)kw);
    bool negnan = false;
    for (int64_t j = 0; j < n; j++) key_put(kw, k, j, elem_exact_key(dt, src, j * ss, &negnan));
    if (!negnan) {
      if (!select_any(kw, 4, k, NULL, k2, NULL, n, kth, nk)) return false;
      for (int64_t j = 0; j < n; j++) elem_store_key(dt, vout, j * vs, key_get(kw, k, j));
      return true;
    }
  }
  bool wide = n > (int64_t)UINT32_MAX;
  int pw = wide ? 8 : 4;
  void *p = buf, *p2 = (char *)buf + (size_t)n * (size_t)pw;
  char *k = (char *)buf + 2 * (size_t)n * (size_t)pw, *k2 = k + (size_t)n * (size_t)kw;
  for (int64_t j = 0; j < n; j++) {
    bool nan_ = false;
    uint64_t key = elem_exact_key(dt, src, j * ss, &nan_);
    double v = elem_value(dt, src, j * ss);
    key_put(kw, k, j, v != v ? key_max(kw) : key);  /* the values' path order, every NaN last */
    pos_put(pw, p, j, (uint64_t)j);
  }
  if (!select_any(kw, pw, k, p, k2, p2, n, kth, nk)) return false;
  for (int64_t j = 0; j < n; j++) {
    int64_t q = (int64_t)pos_get(pw, p, j);
    if (vout) elem_copy(dt, vout, j * vs, src, q * ss);
    if (iout) iout[j * is] = q;
  }
  return true;
}

typedef bool (*part_lane_fn)(void *vout, int64_t vs, int64_t *iout, int64_t is, const void *src,
                             int64_t ss, int64_t n, const int64_t *kth, int nk, void *buf);
#define PART_LANE_FN(E, id, ...) static bool part_lane_##id(void *vout, int64_t vs, int64_t *iout, \
  int64_t is, const void *src, int64_t ss, int64_t n, const int64_t *kth, int nk, void *buf) { \
  return part_lane(GL_##E, vout, vs, iout, is, src, ss, n, kth, nk, buf); }
GL_DTYPE_REAL_LIST(PART_LANE_FN)
#define PART_LANE_ENTRY(E, id, ...) [GL_##E] = part_lane_##id,
static const part_lane_fn part_lanes[GL_NDTYPE] = { GL_DTYPE_REAL_LIST(PART_LANE_ENTRY) };

/* A partition of lanes of n elements at positions kth[0..nk). */
typedef struct part_job { lane_walk w; part_lane_fn fn; int64_t n; const int64_t *kth; int nk; } part_job;

static void part_one(const void *job, int64_t r, void *buf) {
  const part_job *j = job;
  void *vo;
  int64_t *io;
  const char *so = lane_at(&j->w, r, &vo, &io);
  j->fn(vo, j->w.vs, io, j->w.is, so, j->w.ss, j->n, j->kth, j->nk, buf);
}

gl_status gl_cpu_partition(const gl_array *values, const gl_array *indices, const gl_array *src,
                           int axis, const int64_t *kth, int nk) {
  int64_t n = src->shape[axis];
  if (src->size == 0 || n == 0) return GL_OK;
  int64_t lanes = src->size / n;
  part_job job = { lane_walk_of(values, indices, src, axis), part_lanes[src->dtype], n, kth, nk };
  int nt = src->size >= GL_POLL_SPAN / 8 && lanes > 1 ? gl_cpu_team_size(src->size) : 1;
  bool failed = !each_lane(nt, lanes, (size_t)n * 2 * (8 + 8), part_one, &job);
  gl_cpu_team_done(nt);
  if (failed) return gl_fail(GL_ENOMEM, "partition: out of host memory for a lane of %lld elements", (long long)n);
  return gl_interrupt_check();
}
