/*
** half.h — float16 and bfloat16 as storage types: bit-exact conversions to and from
** float32 (round to nearest even, NaN kept quiet, overflow to inf), written once for gcc
** and nvcc. Arrays of these dtypes hold raw uint16 bits; math widens to float32.
*/
#ifndef GL_KERNELS_HALF_H
#define GL_KERNELS_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define GL_HD __host__ __device__ __forceinline__
#else
#define GL_HD static inline __attribute__((always_inline))
#endif

GL_HD uint32_t gl_f32_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u; memcpy(&u, &f, 4); return u;
#endif
}

GL_HD float gl_bits_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f; memcpy(&f, &u, 4); return f;
#endif
}

GL_HD float gl_bf16_to_f32(uint16_t h) { return gl_bits_f32((uint32_t)h << 16); }

GL_HD uint16_t gl_f32_to_bf16(float f) {
  uint32_t u = gl_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)          /* NaN: keep sign, force quiet */
    return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);               /* round to nearest even */
  return (uint16_t)(u >> 16);
}

GL_HD float gl_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1fu) u = sign | 0x7f800000u | (man << 13);          /* inf / NaN */
  else if (exp != 0) u = sign | ((exp + 112u) << 23) | (man << 13); /* normal */
  else if (man == 0) u = sign;                                      /* zero */
  else {                                                            /* subnormal */
    int e = -1;
    do { e++; man <<= 1; } while ((man & 0x400u) == 0);
    u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  return gl_bits_f32(u);
}

GL_HD uint16_t gl_f32_to_f16(float f) {
  uint32_t u = gl_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);   /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {                                     /* below 2^-14: subnormal */
    if (a < 0x33000000u) return sign;                        /* below half of 2^-24: zero */
    uint32_t e = a >> 23, man = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;                               /* 14..24 */
    uint32_t r = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = a - 0x38000000u;                              /* rebias 127 -> 15 */
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

#endif
