/*
** philox.h — the one random number generator of gpulua: Philox4x32-10 (Salmon et al.,
** "Parallel random numbers: as easy as 1, 2, 3", SC'11), the generator of cuRAND's
** device API, and the transforms that turn its 32-bit words into uniforms, normals,
** bounded integers and Bernoulli draws. Written once for gcc (CPU backend, vectorised)
** and nvcc (kernels/random.cu), so both devices compute the same numbers.
**
** ---- the stream (how anyone can reproduce it) ---------------------------------------
** A generator state is (seed, offset): a 64-bit key and a 64-bit count of 128-bit
** counter blocks already used. Block b is
**
**     words(b) = Philox4x32-10(counter = (lo32(b), hi32(b), 0, 0),
**                              key     = (lo32(seed), hi32(seed)))     -> w0 w1 w2 w3
**
** bit for bit what cuRAND returns from `curand_init(seed, 0, 4 * b, &st); curand4(&st)`
** (subsequence 0; curand_init's offset counts 32-bit words, 4 per block; the round
** function, multipliers 0xD2511F53/0xCD9E8D57 and Weyl key increments 0x9E3779B9/
** 0xBB67AE85 are those of curand_philox4x32_x.h). Random123's philox4x32_10 with
** ctr = {b_lo, b_hi, 0, 0} and key = {seed_lo, seed_hi} gives the same words.
**
** A call that fills n elements with a state at offset o reads blocks o, o+1, ... and
** element i (C order of the new array) depends only on (seed, o, i) — never on threads
** or the launch configuration:
**
**   dist                      words/elt  element i reads                     -> value
**   uniform float32/16/bf16   1   w[i%4] of block o + i/4   u = top 24/11/8 bits * 2^-p, in [0,1)
**   uniform float64           2   block o + i/2, x = w[2k] << 32 | w[2k+1], k = i%2;
**                                                            u = (x >> 11) * 2^-53, in [0,1)
**        uniform(lo, hi) = lo + (hi - lo) * u, in the compute type (float32 or double).
**   normal float32/16/bf16    1   block o + i/4: pair (w0,w1) gives elements 4j, 4j+1 and
**                                 (w2,w3) gives 4j+2, 4j+3; Box-Muller:
**                                 u1 = float(w_even >> 1) * 2^-31 + 2^-32 in (0, 1],
**                                 t  = (w_odd >> 8) * 2^-24 in [0, 1),
**                                 r = sqrt(-2 ln u1): (r cos 2 pi t, r sin 2 pi t)
**   normal float64            2   block o + i/2 gives elements 2j, 2j+1: u1 from (w0,w1) and
**                                 t from (w2,w3), 53 bits each, the same transform in double
**        normal(mean, std) = mean + std * z.
**   integers lo..hi, m = hi - lo + 1 values:
**        m <= 2^32                2   x as for float64; value = lo + floor(x * m / 2^64)
**        m >  2^32                4   block o + i, X = w0:w1:w2:w3 (128 bits, w0 highest);
**                                      value = lo + floor(X * m / 2^128)   (m = 2^64: x's top
**                                      64 bits)   — bias below m/2^64 resp. m/2^128
**   bernoulli(p)              1   as float32 uniform's word: 1 when w * 2^-32 < p (in double)
**   permutation / choice      2   step i of a forward Fisher-Yates over 0..n-1 swaps i with
**                                 i + floor(x_i * (n - i) / 2^64), x_i as for float64 (done
**                                 on the host for every device: a serial walk)
** The offset then advances by the blocks the call touched: ceil(n * words / 4).
**   samplers (gamma, poisson, ...: kernels/random_dist.h)  element i reads block o + i
**                                 and its subsequences (counter word 2 = 1, 2, ...);
**                                 the offset advances by n blocks.
** Floats agree between devices to the last bits of log/sqrt/sin/cos (normal) and of the
** final fma; the integers, uniform bits and Bernoulli draws are identical.
*/
#ifndef GL_KERNELS_PHILOX_H
#define GL_KERNELS_PHILOX_H

#include <stdint.h>
#include "vmath.h"   /* GL_HD, gl_vlogf, gl_vm_sel, gl_bits_f32 */
#include "dtypes.h"

/* The dtypes each distribution fills (a kernels/dtypes.h set; dist numbered as
** gl_rand_dist: uniform, normal, integers, bernoulli, permutation), on every device. */
#define GL_RAND_DTYPES(dist)                                                       \
  ((dist) == 0 || (dist) == 1 ? GL_DTSET_FLOAT : (dist) == 2 ? GL_DTSET_INT        \
   : (dist) == 3 ? GL_DTSET_ALL : (dist) == 4 ? GL_DTSET(INT64)                     \
   : (dist) == 5 ? (GL_DTSET(FLOAT64) | GL_DTSET(INT64)) : 0)

#define GL_PHILOX_W0 0x9E3779B9u
#define GL_PHILOX_W1 0xBB67AE85u
#define GL_PHILOX_M0 0xD2511F53u
#define GL_PHILOX_M1 0xCD9E8D57u

/* One round on (c0..c3) with key (k0, k1), in place: cuRAND's _philox4x32round. */
GL_HD void gl_philox_round(uint32_t *c0, uint32_t *c1, uint32_t *c2, uint32_t *c3,
                           uint32_t k0, uint32_t k1) {
#ifdef __CUDA_ARCH__
  /* the same products as 32-bit high and low halves: nvcc otherwise keeps 64-bit values */
  uint32_t hi0 = __umulhi(GL_PHILOX_M0, *c0), lo0 = GL_PHILOX_M0 * *c0;
  uint32_t hi1 = __umulhi(GL_PHILOX_M1, *c2), lo1 = GL_PHILOX_M1 * *c2;
#else
  uint64_t p0 = (uint64_t)GL_PHILOX_M0 * *c0;
  uint64_t p1 = (uint64_t)GL_PHILOX_M1 * *c2;
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
#endif
  uint32_t n0 = hi1 ^ *c1 ^ k0, n2 = hi0 ^ *c3 ^ k1;
  *c0 = n0; *c1 = lo1; *c2 = n2; *c3 = lo0;
}

/* The four words of counter block b under key 'seed' (see the table above). */
GL_HD void gl_philox_block(uint64_t seed, uint64_t b, uint32_t w[4]) {
  uint32_t c0 = (uint32_t)b, c1 = (uint32_t)(b >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    gl_philox_round(&c0, &c1, &c2, &c3, k0, k1);
    k0 += GL_PHILOX_W0; k1 += GL_PHILOX_W1;
  }
  w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
}

/* The words of block b's subsequence 'sub' (counter (lo32(b), hi32(b), sub, 0)): sub 0 is
** gl_philox_block's; kernels/random_dist.h gives each element of a sampler its own. */
GL_HD void gl_philox_block_sub(uint64_t seed, uint64_t b, uint32_t sub, uint32_t w[4]) {
  uint32_t c0 = (uint32_t)b, c1 = (uint32_t)(b >> 32), c2 = sub, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    gl_philox_round(&c0, &c1, &c2, &c3, k0, k1);
    k0 += GL_PHILOX_W0; k1 += GL_PHILOX_W1;
  }
  w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
}

/* ---- words to numbers -------------------------------------------------------------- */

/* [0, 1) with the top 'bits' bits of w (24 for float32, 11 float16, 8 bfloat16): exact
** in the target format, so rounding can never give 1. */
GL_HD float gl_rand_u01f(uint32_t w, int bits) {
  return (float)(int32_t)(w >> (32 - bits)) * gl_bits_f32((uint32_t)(127 - bits) << 23);
}

GL_HD double gl_rand_u01d(uint64_t x) { return (double)(int64_t)(x >> 11) * 0x1p-53; }

/* (0, 1] from 31 bits, for the logarithm of Box-Muller: never 0. */
GL_HD float gl_rand_u01f_open(uint32_t w) {
  return GL_VM_FMA((float)(int32_t)(w >> 1), 0x1p-31f, 0x1p-32f);
}

/* cos and sin of 2 pi t for t in [0, 1), t = k/4 + r/4 with k = round(4t), |r| <= 1/2
** exact; the polynomials in x = r pi/2 (|x| <= pi/4) are Taylor series whose first
** omitted terms are below 2e-9. The quadrant k rotates (c, s). Branch-free. */
GL_HD void gl_rand_sincos2pi(float t, float *co, float *si) {
  float q = 4.0f * t;
  float kf = (q + 0x1.8p23f) - 0x1.8p23f;                 /* round to nearest */
  int32_t k = (int32_t)kf;
  float x = (q - kf) * 1.57079632679489662f;
  float x2 = x * x;
  float s = GL_VM_FMA(x2, 2.75573192e-6f, -1.98412698e-4f);
  s = GL_VM_FMA(s, x2, 8.33333333e-3f);
  s = GL_VM_FMA(s, x2, -1.66666667e-1f);
  s = GL_VM_FMA(s * x2, x, x);
  float c = GL_VM_FMA(x2, -2.75573192e-7f, 2.48015873e-5f);
  c = GL_VM_FMA(c, x2, -1.38888889e-3f);
  c = GL_VM_FMA(c, x2, 4.16666667e-2f);
  c = GL_VM_FMA(c, x2, -0.5f);
  c = GL_VM_FMA(c, x2, 1.0f);
  int32_t odd = k & 1;
  float C = gl_vm_sel(odd, s, c), S = gl_vm_sel(odd, c, s);
  uint32_t csign = (uint32_t)((k + 1) & 2) << 30, ssign = (uint32_t)(k & 2) << 30;
  *co = gl_bits_f32(gl_f32_bits(C) ^ csign);
  *si = gl_bits_f32(gl_f32_bits(S) ^ ssign);
}

/* Box-Muller on two words: the pair (r cos, r sin). */
GL_HD void gl_rand_normal2f(uint32_t wa, uint32_t wb, float *z0, float *z1) {
  float u1 = gl_rand_u01f_open(wa);
  float r2 = -2.0f * gl_vlogf(u1);
  float r = sqrtf(r2 > 0.0f ? r2 : 0.0f);
  float c, s;
  gl_rand_sincos2pi(gl_rand_u01f(wb, 24), &c, &s);
  *z0 = r * c;
  *z1 = r * s;
}

GL_HD uint64_t gl_rand_u64(uint32_t hi, uint32_t lo) { return ((uint64_t)hi << 32) | lo; }

/* Box-Muller in double from two 64-bit values; t reduced to a quarter turn as above. */
/* Box-Muller's radius r, and its angle as k quarter turns plus x in [-pi/4, pi/4]. */
GL_HD int gl_rand_bm_polar(uint64_t xa, uint64_t xb, double *r, double *x) {
  double u1 = (double)(int64_t)(xa >> 11) * 0x1p-53 + 0x1p-54;    /* (0, 1) */
  *r = sqrt(-2.0 * log(u1));
  double q = 4.0 * gl_rand_u01d(xb);
  double kf = floor(q + 0.5);
  *x = (q - kf) * 1.57079632679489661923;
  return (int)kf;
}

GL_HD void gl_rand_normal2d(uint64_t xa, uint64_t xb, double *z0, double *z1) {
  double r, x;
  int k = gl_rand_bm_polar(xa, xb, &r, &x);
  double s = sin(x), c = cos(x);
  double C = (k & 1) ? s : c, S = (k & 1) ? c : s;
  *z0 = r * (((k + 1) & 2) ? -C : C);
  *z1 = r * ((k & 2) ? -S : S);
}

/* gl_rand_normal2d's z0 alone, the same bits: one of sin and cos instead of both. */
GL_HD double gl_rand_normal1d(uint64_t xa, uint64_t xb) {
  double r, x;
  int k = gl_rand_bm_polar(xa, xb, &r, &x);
  double C = (k & 1) ? sin(x) : cos(x);
  return r * (((k + 1) & 2) ? -C : C);
}

/* floor(x * m / 2^64) for m <= 2^32: 64-bit arithmetic only (vectorises, no __int128). */
GL_HD uint64_t gl_rand_mulhi_small(uint64_t x, uint64_t m) {
  uint64_t lo = (x & 0xffffffffu) * m, hi = (x >> 32) * m;
  return (hi + (lo >> 32)) >> 32;
}

/* floor(x * m / 2^64), any m. */
GL_HD uint64_t gl_rand_mulhi64(uint64_t x, uint64_t m) {
#ifdef __CUDA_ARCH__
  return __umul64hi(x, m);
#else
  return (uint64_t)(((unsigned __int128)x * m) >> 64);
#endif
}

/* floor(X * m / 2^128) for X = xh:xl, m < 2^64 (m = 0 stands for 2^64: the top half). */
GL_HD uint64_t gl_rand_mulhi128(uint64_t xh, uint64_t xl, uint64_t m) {
  if (m == 0) return xh;
  uint64_t a = gl_rand_mulhi64(xl, m);        /* (xl m) >> 64 */
  uint64_t bl = xh * m, bh = gl_rand_mulhi64(xh, m);
  uint64_t s = bl + a;
  return bh + (s < bl);
}

/* 32-bit words one element reads: 'dist' numbered as gl_rand_dist in src/backend/backend.h
** (0 uniform, 1 normal, 2 integers, 3 bernoulli, 4 permutation), f64 for float64
** output, 'range' the integers' count of values (0: 2^64). */
GL_HD int gl_rand_words_per_element(int dist, int f64, uint64_t range) {
  switch (dist) {
    case 0: case 1: return f64 ? 2 : 1;
    case 2: return range != 0 && range <= ((uint64_t)1 << 32) ? 2 : 4;
    case 3: return 1;
    default: return 2;
  }
}

#endif
