/*
** cpu_random.c — random fills on the CPU from kernels/philox.h: the stream and the
** element-to-counter mapping are documented there, and kernels/random.cu follows the same
** table, so both devices give the same numbers.
**
** The work goes in chunks of CHB counter blocks: the Philox rounds for a chunk run over
** lanes the compiler vectorises (8 blocks per AVX2 instruction), the words land in a
** 4 KB buffer that stays in L1, and a second vectorised loop turns them into numbers.
** Chunks are independent (each knows its first block), so OpenMP splits them among
** threads without changing a single value. The Makefile builds this file with
** -fno-math-errno, so the Box-Muller loop (sqrtf) vectorises. The samplers (gamma,
** poisson, ...) run kernels/random_dist.h element by element, from words made ahead in
** the same vectorised loop.
*/
#include <stdlib.h>
#include <string.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"
#include "../../../kernels/philox.h"
#include "../../../kernels/random_dist.h"
#include "../../../kernels/convert.h"

#define CHB 256                 /* counter blocks per chunk */
#define PAR_MIN 32768           /* below this many elements: one thread */

/* w[4j .. 4j+3] = the words of sub-block 'sub' of block b0 + j, j < nb (sub 0: the block's
** own words, kernels/philox.h). */
static void philox_sub_words(uint64_t seed, uint64_t b0, uint32_t sub, int nb, uint32_t *restrict w) {
  uint32_t c0[CHB], c1[CHB], c2[CHB], c3[CHB];
  for (int j = 0; j < nb; j++) {
    uint64_t b = b0 + (uint64_t)j;
    c0[j] = (uint32_t)b; c1[j] = (uint32_t)(b >> 32); c2[j] = sub; c3[j] = 0;
  }
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    for (int j = 0; j < nb; j++) gl_philox_round(&c0[j], &c1[j], &c2[j], &c3[j], k0, k1);
    k0 += GL_PHILOX_W0; k1 += GL_PHILOX_W1;
  }
  for (int j = 0; j < nb; j++) {
    w[4 * j] = c0[j]; w[4 * j + 1] = c1[j]; w[4 * j + 2] = c2[j]; w[4 * j + 3] = c3[j];
  }
}

static void philox_words(uint64_t seed, uint64_t b0, int nb, uint32_t *restrict w) {
  philox_sub_words(seed, b0, 0, nb, w);
}

/* ---- one chunk: words w (for elements e0 .. e0+ne-1) into dst ------------------------ */

/* Stores of ne finished values at d, one function per dtype row: floats (float32 and the
** halves; float64 fills keep their doubles), integers (wrapped to the width), flags (0 or
** 1 of the dtype). Same-width values are copied as they are. */
typedef void (*store_fn)(void *d, const void *values, int64_t ne);
#define STORE_FLOATS_FN(E, id, S, kind, half, ...) GL_DT_WHEN(kind, (0, 0, 0, 1),                 \
  static void store_floats_##id(void *d_, const void *f_, int64_t ne) {                          \
    S *d = d_;                                                                                   \
    const float *f = f_;                                                                         \
    if (GL_DT_IS_HALF_##half || sizeof(S) != sizeof *f)                                          \
      for (int64_t i = 0; i < ne; i++) d[i] = GL_DT_STORE(kind, half, S, id, FLOAT, f[i]);      \
    else memcpy(d, f, (size_t)ne * sizeof *f);                                                   \
  })
#define STORE_INTS_FN(E, id, S, kind, half, ...) GL_DT_WHEN(kind, (0, 1, 1, 0),                   \
  static void store_ints_##id(void *d_, const void *v_, int64_t ne) {                            \
    S *d = d_;                                                                                   \
    const uint64_t *v = v_;                                                                      \
    if (sizeof(S) != sizeof *v) for (int64_t i = 0; i < ne; i++) d[i] = (S)v[i];                 \
    else memcpy(d, v, (size_t)ne * sizeof *v);                                                   \
  })
/* (a 1-byte dtype's 0/1 bytes are its flags; a complex flag is 0/1 + 0i) */
#define STORE_FLAGS_FN(E, id, S, kind, half, ...)                                                \
  static void store_flags_##id(void *d_, const void *v_, int64_t ne) {                           \
    S *d = d_;                                                                                   \
    const uint8_t *v = v_;                                                                       \
    if (sizeof(S) != 1) for (int64_t i = 0; i < ne; i++) d[i] = GL_DT_STORE(kind, half, S, id, INT, v[i]); \
    else memcpy(d, v, (size_t)ne);                                                               \
  }
GL_DTYPE_LIST(STORE_FLOATS_FN)
GL_DTYPE_LIST(STORE_INTS_FN)
GL_DTYPE_LIST(STORE_FLAGS_FN)

#define STORE_FLOATS_ENTRY(E, id, S, kind, ...) GL_DT_WHEN(kind, (0, 0, 0, 1), [GL_##E] = store_floats_##id,)
#define STORE_INTS_ENTRY(E, id, S, kind, ...) GL_DT_WHEN(kind, (0, 1, 1, 0), [GL_##E] = store_ints_##id,)
#define STORE_FLAGS_ENTRY(E, id, ...) [GL_##E] = store_flags_##id,
static const store_fn store_floats[GL_NDTYPE] = { GL_DTYPE_LIST(STORE_FLOATS_ENTRY) };
static const store_fn store_ints[GL_NDTYPE] = { GL_DTYPE_LIST(STORE_INTS_ENTRY) };
static const store_fn store_flags[GL_NDTYPE] = { GL_DTYPE_LIST(STORE_FLAGS_ENTRY) };

/* ne values into dst from element e0 by the dtype's store in table (none: nothing). */
static void store(const store_fn *table, const gl_array *dst, int64_t e0, const void *values, int64_t ne) {
  store_fn fn = table[dst->dtype];
  if (fn) fn((char *)gl_array_data(dst) + e0 * (int64_t)gl_dtypes[dst->dtype].size, values, ne);
}

/* Scratch for one chunk: words, then numbers (4 per block at most). */
typedef struct chunk_buf {
  uint32_t w[4 * CHB];
  union { float f[4 * CHB]; double d[4 * CHB]; uint64_t u[4 * CHB]; uint8_t b[4 * CHB]; } v;
} chunk_buf;

static void run_chunk(gl_rand_dist dist, const gl_array *dst, const gl_rand_req *rq, int wpe,
                      int64_t c, chunk_buf *buf) {
  int epb = 4 / wpe;                                   /* elements per block */
  int64_t e0 = c * CHB * epb, ne = dst->size - e0;
  if (ne > (int64_t)CHB * epb) ne = (int64_t)CHB * epb;
  int nb = (int)((ne + epb - 1) / epb);
  philox_words(rq->seed, rq->offset + (uint64_t)(c * CHB), nb, buf->w);
  const uint32_t *restrict w = buf->w;
  gl_dtype dt = (gl_dtype)dst->dtype;
  int64_t nw = (int64_t)nb * 4;
  switch (dist) {
    case GL_RAND_UNIFORM:
      if (dt == GL_FLOAT64) {
        double *restrict d = buf->v.d, lo = rq->a, span = rq->b - rq->a;
        for (int64_t i = 0; i < nw / 2; i++)
          d[i] = fma(span, gl_rand_u01d(gl_rand_u64(w[2 * i], w[2 * i + 1])), lo);
        memcpy((double *)gl_array_data(dst) + e0, d, (size_t)ne * sizeof *d);
      } else {
        float *restrict f = buf->v.f, lo = (float)rq->a, span = (float)(rq->b - rq->a);
        int bits = gl_dtypes[dt].prec;
        for (int64_t i = 0; i < nw; i++) f[i] = GL_VM_FMA(span, gl_rand_u01f(w[i], bits), lo);
        store(store_floats, dst, e0, f, ne);
      }
      break;
    case GL_RAND_NORMAL:
      if (dt == GL_FLOAT64) {
        double *restrict d = buf->v.d, mean = rq->a, sd = rq->b;
        for (int64_t j = 0; j < nb; j++) {
          double z0, z1;
          gl_rand_normal2d(gl_rand_u64(w[4 * j], w[4 * j + 1]), gl_rand_u64(w[4 * j + 2], w[4 * j + 3]), &z0, &z1);
          d[2 * j] = fma(sd, z0, mean);
          d[2 * j + 1] = fma(sd, z1, mean);
        }
        memcpy((double *)gl_array_data(dst) + e0, d, (size_t)ne * sizeof *d);
      } else {
        float *restrict f = buf->v.f, mean = (float)rq->a, sd = (float)rq->b;
        for (int64_t i = 0; i < nw / 2; i++) {
          float z0, z1;
          gl_rand_normal2f(w[2 * i], w[2 * i + 1], &z0, &z1);
          f[2 * i] = GL_VM_FMA(sd, z0, mean);
          f[2 * i + 1] = GL_VM_FMA(sd, z1, mean);
        }
        store(store_floats, dst, e0, f, ne);
      }
      break;
    case GL_RAND_INTEGERS: {
      uint64_t *restrict u = buf->v.u, m = rq->range, lo = (uint64_t)rq->lo;
      if (wpe == 2)
        for (int64_t i = 0; i < nw / 2; i++)
          u[i] = lo + gl_rand_mulhi_small(gl_rand_u64(w[2 * i], w[2 * i + 1]), m);
      else
        for (int64_t i = 0; i < nb; i++)
          u[i] = lo + gl_rand_mulhi128(gl_rand_u64(w[4 * i], w[4 * i + 1]),
                                       gl_rand_u64(w[4 * i + 2], w[4 * i + 3]), m);
      store(store_ints, dst, e0, u, ne);
      break;
    }
    case GL_RAND_BERNOULLI: {
      uint8_t *restrict b = buf->v.b;
      if (rq->p) {
        const double *p = (const double *)gl_array_data(rq->p) + e0;
        for (int64_t i = 0; i < ne; i++) b[i] = (double)w[i] * 0x1p-32 < p[i];
      } else {
        double p = rq->a;
        for (int64_t i = 0; i < nw; i++) b[i] = (double)w[i] * 0x1p-32 < p;
      }
      store(store_flags, dst, e0, b, ne);
      break;
    }
    default: break;
  }
}

/* The first k steps of a forward Fisher-Yates shuffle of lo .. lo+n-1 (see philox.h):
** serial, so it runs on one thread; the keys come a chunk at a time. */
static gl_status permutation(const gl_array *dst, const gl_rand_req *rq) {
  int64_t n = (int64_t)rq->range, k = dst->size;
  int64_t *out = gl_array_data(dst), *a = out;
  if (k < n) {                        /* the walk needs all n values, the result keeps k */
    size_t nbytes;
    GL_TRY(gl_nbytes(n, GL_INT64, &nbytes));
    a = malloc(nbytes);
    if (a == NULL) return gl_fail(GL_ENOMEM, "out of host memory for a permutation of %lld", (long long)n);
  }
  for (int64_t i = 0; i < n; i++) {
    if (i % GL_POLL_SPAN == 0 && gl_interrupted()) break;   /* a fresh 2 GiB faults in for 1 s */
    a[i] = rq->lo + i;
  }
  chunk_buf *buf = malloc(sizeof *buf);
  if (buf == NULL) { if (a != out) free(a); return gl_fail(GL_ENOMEM, "out of host memory"); }
  int64_t steps = k < n ? k : n - 1;
  for (int64_t i0 = 0; i0 < steps && !gl_interrupted(); i0 += 2 * CHB) {
    int64_t ne = steps - i0 < 2 * CHB ? steps - i0 : 2 * CHB;
    philox_words(rq->seed, rq->offset + (uint64_t)(i0 / 2), (int)((ne + 1) / 2), buf->w);
    for (int64_t t = 0; t < ne; t++) {
      int64_t i = i0 + t;
      uint64_t x = gl_rand_u64(buf->w[2 * t], buf->w[2 * t + 1]);
      int64_t j = i + (int64_t)gl_rand_mulhi64(x, (uint64_t)(n - i));
      int64_t tmp = a[i]; a[i] = a[j]; a[j] = tmp;
    }
  }
  free(buf);
  if (a != out) { memcpy(out, a, (size_t)k * sizeof *a); free(a); }
  return gl_interrupt_check();
}

/* How many sub-blocks most draws of a sampler read (a sub-block holds two values):
** Poisson by multiplication about lam + 1 values, gamma a normal (two) and a uniform,
** binomial and PTRS one or two. */
#define PRE_MAX 3
static uint32_t sub_blocks(const gl_rand_req *rq) {
  switch (rq->kind) {
    case GL_RD_POISSON: return rq->pa[0] ? 2 : rq->a < 4 ? 2 : rq->a < 10 ? 3 : 1;
    case GL_RD_BINOMIAL: return 1;
    default: return 2;
  }
}

/* The constants of the last few parameters seen (binomial (n, p), Poisson lam) that came
** from arrays, by a hash of their bits: multinomial's binomials have few distinct counts,
** whose setup (a log1p and an exp) would otherwise cost more than the draw. */
#define SETUP_SLOTS 16
typedef struct setup_cache {
  bool used[SETUP_SLOTS];
  double a[SETUP_SLOTS], b[SETUP_SLOTS];
  gl_rs_binomial_c binomial[SETUP_SLOTS];
  gl_rs_poisson_c poisson[SETUP_SLOTS];
} setup_cache;

static int setup_slot(setup_cache *c, double a, double b, bool binomial) {
  uint64_t ua, ub;
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  uint64_t h = (ua ^ (ub * 0x9E3779B97F4A7C15u)) * 0xD6E8FEB86659FD93u;
  int k = (int)(h >> 60);
  if (!c->used[k] || memcmp(&c->a[k], &a, sizeof a) != 0 || memcmp(&c->b[k], &b, sizeof b) != 0) {
    c->used[k] = true; c->a[k] = a; c->b[k] = b;
    if (binomial) gl_rs_binomial_setup(&c->binomial[k], a, b);
    else gl_rs_poisson_setup(&c->poisson[k], a);
  }
  return k;
}

/* Gamma of one shape a >= 1 over a chunk, the same numbers as gl_rs_gamma_run: the first try of
** every element from the words made ahead (a normal from sub-block 0, the uniform from sub-block
** 1), independent calls of log and sincos that overlap, unlike one element's chain of tries;
** the few that the squeeze does not accept (about 2% at a = 2.5) take the whole stream again. */
static void gamma_chunk(double *d, const uint32_t *pre, uint32_t npre, const gl_rs_gamma_c *g, double scale,
                        uint64_t seed, uint64_t block0, int64_t ne) {
  double v[CHB];
  int ok[CHB];
  for (int64_t j = 0; j < ne; j++) {
    const uint32_t *w = pre + j * npre * 4;
    double z = gl_rand_normal_v(gl_rand_u64(w[0], w[1]), gl_rand_u64(w[2], w[3]));
    ok[j] = gl_rs_gamma_squeeze(g, z, gl_rand_uopen(gl_rand_u64(w[4], w[5])), &v[j]);
  }
  for (int64_t j = 0; j < ne; j++) {
    if (ok[j]) d[j] = g->d * v[j] * 1.0 * scale;
    else {
      gl_rstream st;
      gl_rs_init(&st, seed, block0 + (uint64_t)j);
      st.pre = pre + j * npre * 4;
      st.npre = npre;
      d[j] = gl_rs_gamma_run(&st, g) * scale;
    }
  }
}

/* A sampler of kernels/random_dist.h: element i from block offset + i and its
** subsequences, so threads split the elements without changing a value. The words of each
** element's first few sub-blocks (sub_blocks) are made ahead, CHB elements at a time in
** the vectorised loop of the fills; the draws read them as they would have made them. */
static gl_status sampler(const gl_array *dst, const gl_rand_req *rq) {
  int64_t n = dst->size;
  const double *pa = rq->pa[0] ? gl_array_data(rq->pa[0]) : NULL;
  const double *pb = rq->pa[1] ? gl_array_data(rq->pa[1]) : NULL;
  const double *pc = rq->pa[2] ? gl_array_data(rq->pa[2]) : NULL;
  bool ints = dst->dtype == GL_INT64;
  double *d = gl_array_data(dst);
  int64_t *l = gl_array_data(dst);
  int64_t chunks = (n + CHB - 1) / CHB;
  bool failed = false;
  uint32_t npre = sub_blocks(rq);
  /* with the same parameters for every element, Poisson's, binomial's and gamma's constants once */
  bool same = pa == NULL && pb == NULL && pc == NULL;
  gl_rs_poisson_c poisson;
  gl_rs_binomial_c binomial;
  if (same && rq->kind == GL_RD_POISSON) gl_rs_poisson_setup(&poisson, rq->a);
  if (same && rq->kind == GL_RD_BINOMIAL) gl_rs_binomial_setup(&binomial, rq->a, rq->b);
  gl_rs_gamma_c gamma;
  if (same && rq->kind == GL_RD_GAMMA) gl_rs_gamma_setup(&gamma, rq->a);
  int nt = n >= 4096 ? gl_cpu_team_size(n * 16) : 1;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    uint32_t *pre = malloc(sizeof(uint32_t) * 4 * PRE_MAX * CHB), *w = malloc(sizeof(uint32_t) * 4 * CHB);
    setup_cache *cache = calloc(1, sizeof *cache);
    if (pre == NULL || w == NULL || cache == NULL) {
      #pragma omp atomic write
      failed = true;
    }
    #pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
      if (pre == NULL || w == NULL || cache == NULL || gl_interrupted()) continue;
      int64_t i0 = c * CHB, ne = n - i0 < CHB ? n - i0 : CHB;
      for (uint32_t sub = 0; sub < npre; sub++) {
        philox_sub_words(rq->seed, rq->offset + (uint64_t)i0, sub, (int)ne, w);
        for (int64_t j = 0; j < ne; j++)
          for (int t = 0; t < 4; t++) pre[(j * npre + sub) * 4 + t] = w[4 * j + t];
      }
      if (same && rq->kind == GL_RD_GAMMA && rq->a >= 1 && !ints) {
        gamma_chunk(d + i0, pre, npre, &gamma, rq->b, rq->seed, rq->offset + (uint64_t)i0, ne);
        continue;
      }
      for (int64_t j = 0; j < ne; j++) {
        int64_t i = i0 + j;
        gl_rstream st;
        gl_rs_init(&st, rq->seed, rq->offset + (uint64_t)i);
        st.pre = pre + j * npre * 4;
        st.npre = npre;
        double v, a = pa ? pa[i] : rq->a, b = pb ? pb[i] : rq->b;
        if (same && rq->kind == GL_RD_POISSON) v = gl_rs_poisson_run(&st, &poisson);
        else if (same && rq->kind == GL_RD_BINOMIAL) v = gl_rs_binomial_run(&st, &binomial);
        else if (same && rq->kind == GL_RD_GAMMA) v = gl_rs_gamma_run(&st, &gamma) * rq->b;
        else if (rq->kind == GL_RD_POISSON) v = gl_rs_poisson_run(&st, &cache->poisson[setup_slot(cache, a, 0, false)]);
        else if (rq->kind == GL_RD_BINOMIAL) v = gl_rs_binomial_run(&st, &cache->binomial[setup_slot(cache, a, b, true)]);
        else v = gl_rdist_draw_from(&st, rq->kind, a, b, pc ? pc[i] : rq->c);
        if (ints) l[i] = (int64_t)v;
        else d[i] = v;
      }
    }
    free(pre);
    free(w);
    free(cache);
  }
  gl_cpu_team_done(nt);
  return failed ? gl_fail(GL_ENOMEM, "out of host memory for random numbers") : gl_interrupt_check();
}

gl_status gl_cpu_random(gl_rand_dist dist, const gl_array *dst, const gl_rand_req *rq) {
  if (dist == GL_RAND_PERMUTATION) return permutation(dst, rq);
  if (dist == GL_RAND_SAMPLER) return sampler(dst, rq);
  int64_t n = dst->size;
  if (n == 0) return GL_OK;
  int wpe = gl_rand_words_per_element((int)dist, dst->dtype == GL_FLOAT64, rq->range);
  int64_t per_chunk = (int64_t)CHB * (4 / wpe);
  int64_t chunks = (n + per_chunk - 1) / per_chunk;
  bool failed = false;
  int nt = n >= PAR_MIN ? gl_cpu_team_size(n) : 1;
  #pragma omp parallel num_threads(nt) if (nt > 1)
  {
    chunk_buf *buf = malloc(sizeof *buf);
    if (buf == NULL) {
      #pragma omp atomic write
      failed = true;
    }
    #pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; c++)
      if (buf && !gl_interrupted()) run_chunk(dist, dst, rq, wpe, c, buf);
    free(buf);
  }
  return failed ? gl_fail(GL_ENOMEM, "out of host memory for random numbers") : gl_interrupt_check();
}
