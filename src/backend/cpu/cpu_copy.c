/*
** cpu_copy.c — strided copies with dtype conversion, fills and arange on the CPU.
**
** The copy kernel is stamped once per (destination, source) dtype pair by GL_COPY_PAIR,
** so the conversion inside the inner loop is a single inlined expression; the pair is
** chosen once per call, outside the loops.
*/
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"
#include "../../../kernels/convert.h"

typedef void (*copy_row_fn)(void *dst, int64_t ds, const void *src, int64_t ss, int64_t n);

/* The kernels, one per (destination, source) pair of kernels/dtypes.h's rows. */
#define GL_COPY_PAIR(DE, DN, DT, DK, DH, SE, SN, ST, SK, SH)                               \
  static void copy_##DN##_##SN(void *dst_, int64_t ds, const void *src_, int64_t ss,      \
                               int64_t n) {                                               \
    DT *dst = dst_;                                                                       \
    const ST *src = src_;                                                                 \
    if (ds == 1 && ss == 1)                                                               \
      for (int64_t i = 0; i < n; i++)                                                     \
        dst[i] = GL_DT_STORE(DK, DH, DT, DN, SK, GL_DT_LOAD(SH, src[i]));                 \
    else                                                                                  \
      for (int64_t i = 0; i < n; i++)                                                     \
        dst[i * ds] = GL_DT_STORE(DK, DH, DT, DN, SK, GL_DT_LOAD(SH, src[i * ss]));       \
  }
GL_DTYPE_PAIRS(GL_COPY_PAIR)

#define GL_COPY_ENTRY(DE, DN, DT, DK, DH, SE, SN, ST, SK, SH) [GL_##DE][GL_##SE] = copy_##DN##_##SN,
static const copy_row_fn copy_table[GL_NDTYPE][GL_NDTYPE] = { GL_DTYPE_PAIRS(GL_COPY_ENTRY) };

/* Copies where the two sides walk memory in different orders (a transpose) are done in
** TILE x TILE blocks, so the cache lines read along one side's rows are reused across
** the block instead of being fetched once per element; big copies use both cores. */
#define TILE 32
#define PAR_COPY 65536
/* Bytes a plain memcpy moves between two polls for a stop (a few ms). */
#define POLL_BYTES ((size_t)GL_POLL_SPAN * 64)

/* memmove in pieces of POLL_BYTES with a poll before each; when the ranges overlap the
** pieces go the way memmove's bytes would (front to back when d is below s). */
void gl_cpu_move_bytes(char *d, const char *s, size_t n) {
  bool down = d > s && d < s + n;
  for (size_t done = 0; done < n && !gl_interrupted(); done += POLL_BYTES) {
    size_t m = n - done < POLL_BYTES ? n - done : POLL_BYTES;
    size_t at = down ? n - done - m : done;
    memmove(d + at, s + at, m);
  }
}

/* One row of n elements through fn, in spans of GL_POLL_SPAN with a poll before each. */
static void copy_span(copy_row_fn fn, char *d, int64_t ds, int64_t dsz, const char *s, int64_t ss,
                      int64_t ssz, int64_t n) {
  for (int64_t i = 0; i < n && !gl_interrupted(); i += GL_POLL_SPAN)
    fn(d + i * ds * dsz, ds, s + i * ss * ssz, ss, n - i < GL_POLL_SPAN ? n - i : GL_POLL_SPAN);
}

static void copy_tiled(const gl_iter *it, copy_row_fn fn, char *d, size_t dsz, const char *s, size_t ssz) {
  int nd = it->ndim;
  int64_t R = it->shape[nd - 2], C = it->inner, outer = it->rows / R;
  int64_t dr = it->strides[0][nd - 2], dc = it->strides[0][nd - 1];
  int64_t sr = it->strides[1][nd - 2], sc = it->strides[1][nd - 1];
  int64_t bands = (R + TILE - 1) / TILE, jobs = outer * bands;
  int nt = outer * R * C >= PAR_COPY ? gl_cpu_team_size(outer * R * C) : 1;
  #pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t job = 0; job < jobs; job++) {
    int64_t o = job / bands, i0 = (job % bands) * TILE, i1 = i0 + TILE < R ? i0 + TILE : R;
    int64_t off[2];
    gl_iter_row(it, o * R, off);
    for (int64_t j0 = 0; j0 < C && !gl_interrupted(); j0 += TILE) {
      int64_t n = C - j0 < TILE ? C - j0 : TILE;
      for (int64_t i = i0; i < i1; i++)
        fn(d + (off[0] + i * dr + j0 * dc) * (int64_t)dsz, dc,
           s + (off[1] + i * sr + j0 * sc) * (int64_t)ssz, sc, n);
    }
  }
}

static void copy_any(const gl_array *dst, const gl_array *src);

gl_status gl_cpu_copy(const gl_array *dst, const gl_array *src) {
  copy_any(dst, src);
  return gl_interrupt_check();
}

static void copy_any(const gl_array *dst, const gl_array *src) {
  const gl_array *ops[2] = { dst, src };
  gl_iter it;
  gl_iter_init(&it, 2, ops);
  if (it.rows == 0 || it.inner == 0) return;
  size_t dsz = gl_dtypes[dst->dtype].size, ssz = gl_dtypes[src->dtype].size;
  char *d = gl_array_data(dst);
  const char *s = gl_array_data(src);
  int nd = it.ndim;
  if (dst->dtype == src->dtype && it.rows == 1 && it.strides[0][0] == 1 && it.strides[1][0] == 1) {
    size_t n = (size_t)it.inner * dsz;
    int team = n < (size_t)PAR_COPY * 16 || (d < s + n && s < d + n) ? 1 : gl_cpu_team_size((int64_t)(n / 4));
    if (team == 1) { gl_cpu_move_bytes(d, s, n); return; }
    #pragma omp parallel num_threads(team)
    {                                     /* one slice per thread */
      int nt = 1, t = 0;
#ifdef _OPENMP
      nt = omp_get_num_threads();
      t = omp_get_thread_num();
#endif
      size_t chunk = (n / (size_t)nt + 63) & ~(size_t)63, lo = (size_t)t * chunk;
      if (lo < n) gl_cpu_move_bytes(d + lo, s + lo, lo + chunk < n ? chunk : n - lo);
    }
    return;
  }
  copy_row_fn fn = copy_table[dst->dtype][src->dtype];
  bool transposed = nd >= 2 && it.strides[0][nd - 1] != it.strides[1][nd - 1] &&
                    (it.strides[1][nd - 2] == 1 || it.strides[0][nd - 2] == 1);
  if (transposed && it.inner >= TILE && it.shape[nd - 2] >= TILE) {
    copy_tiled(&it, fn, d, dsz, s, ssz);
    return;
  }
  int nt = it.rows * it.inner >= PAR_COPY && it.rows > 1 ? gl_cpu_team_size(it.rows * it.inner) : 1;
  #pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t r = 0; r < it.rows; r++) {
    if (gl_interrupted()) continue;
    int64_t off[2];
    gl_iter_row(&it, r, off);
    copy_span(fn, d + off[0] * (int64_t)dsz, it.strides[0][nd - 1], (int64_t)dsz, s + off[1] * (int64_t)ssz,
              it.strides[1][nd - 1], (int64_t)ssz, it.inner);
  }
}

/* ---- fill: write one bit pattern of the element's width ----------------------- */

#define GL_FILL_WIDTH(T)                                                            \
  static void fill_##T(T *d, int64_t stride, int64_t n, T v) {                      \
    if (stride == 1) for (int64_t i = 0; i < n; i++) d[i] = v;                      \
    else for (int64_t i = 0; i < n; i++) d[i * stride] = v;                         \
  }
GL_FILL_WIDTH(uint8_t)
GL_FILL_WIDTH(uint16_t)
GL_FILL_WIDTH(uint32_t)
GL_FILL_WIDTH(uint64_t)
GL_FILL_WIDTH(gl_complex128)

gl_status gl_cpu_fill(const gl_array *dst, gl_scalar v) {
  const gl_array *ops[1] = { dst };
  gl_iter it;
  gl_iter_init(&it, 1, ops);
  size_t sz = gl_dtypes[dst->dtype].size;
  union { uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64; gl_complex128 c128; } bits;
  memset(&bits, 0, sizeof bits);
  gl_scalar_store((gl_dtype)dst->dtype, &bits, v);
  char *d = gl_array_data(dst);
  int64_t st = it.strides[0][it.ndim - 1];
  for (int64_t r = 0; r < it.rows && !gl_interrupted(); r++) {
    int64_t off;
    gl_iter_row(&it, r, &off);
    for (int64_t i = 0; i < it.inner && !gl_interrupted(); i += GL_POLL_SPAN) {
      void *p = d + (off + i * st) * (int64_t)sz;
      int64_t n = it.inner - i < GL_POLL_SPAN ? it.inner - i : GL_POLL_SPAN;
      switch (sz) {
        case 1: fill_uint8_t(p, st, n, bits.u8); break;
        case 2: fill_uint16_t(p, st, n, bits.u16); break;
        case 4: fill_uint32_t(p, st, n, bits.u32); break;
        case 8: fill_uint64_t(p, st, n, bits.u64); break;
        default: fill_gl_complex128(p, st, n, bits.c128); break;
      }
    }
  }
  return gl_interrupt_check();
}

/* ---- arange ------------------------------------------------------------------- */

/* start + i * step with the product rounded before the sum, as NumPy computes it: a fused
** multiply-add would give linspace(-1, 1, 7)[4] = -5.6e-17, not 0. GCC contracts across
** statements (-ffp-contract=fast), so it is told not to here (clang contracts within an
** expression, and obeys the standard pragma); the GPU uses __dmul_rn. Elements lo .. hi-1,
** each from its own index, so spans give the same values. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#define GL_ARANGE(E, id, S, kind, half, ...)                                                \
  static void arange_##id(void *d_, int64_t lo, int64_t hi, double start, double step) {    \
    S *d = d_;                                                                             \
    for (int64_t i = lo; i < hi; i++) d[i] = GL_DT_STORE(kind, half, S, id, FLOAT, start + (double)i * step); \
  }
GL_DTYPE_LIST(GL_ARANGE)
#if defined(__clang__)
#pragma STDC FP_CONTRACT DEFAULT
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

typedef void (*arange_fn)(void *d, int64_t lo, int64_t hi, double start, double step);
#define GL_ARANGE_ENTRY(E, id, ...) [GL_##E] = arange_##id,
static const arange_fn aranges[GL_NDTYPE] = { GL_DTYPE_LIST(GL_ARANGE_ENTRY) };

gl_status gl_cpu_arange(const gl_array *dst, double start, double step) {
  void *d = gl_array_data(dst);
  int64_t n = dst->size;
  arange_fn fn = aranges[dst->dtype];
  for (int64_t lo = 0; fn != NULL && lo < n && !gl_interrupted(); lo += GL_POLL_SPAN) {
    int64_t hi = n - lo < GL_POLL_SPAN ? n : lo + GL_POLL_SPAN;
    fn(d, lo, hi, start, step);
  }
  return gl_interrupt_check();
}
