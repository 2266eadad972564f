/*
** convert.h — dtype conversions shared by the CPU loops and the CUDA kernels, so both
** backends agree bit for bit. Float to integer saturates to the target's range and maps
** NaN to 0 (what the GPU's conversion instructions do; C leaves it undefined).
*/
#ifndef GL_KERNELS_CONVERT_H
#define GL_KERNELS_CONVERT_H

#include <stdint.h>
#include "half.h"

GL_HD int64_t gl_f2i64(double f) {
  if (f != f) return 0;
  if (f >= 9223372036854775807.0) return INT64_MAX;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)f;
}
GL_HD int32_t gl_f2i32(double f) {
  if (f != f) return 0;
  if (f >= 2147483647.0) return INT32_MAX;
  if (f <= -2147483648.0) return INT32_MIN;
  return (int32_t)f;
}
GL_HD uint8_t gl_f2u8(double f) {
  if (f != f || f <= 0.0) return 0;
  if (f >= 255.0) return 255;
  return (uint8_t)f;
}

/* Loading a stored element as its compute value: f16/bf16 widen to float. */
#define GL_LOAD_boolean(x)     (x)
#define GL_LOAD_uint8(x)    (x)
#define GL_LOAD_int32(x)    (x)
#define GL_LOAD_int64(x)    (x)
#define GL_LOAD_float16(x)  gl_f16_to_f32(x)
#define GL_LOAD_bfloat16(x) gl_bf16_to_f32(x)
#define GL_LOAD_float32(x)  (x)
#define GL_LOAD_float64(x)  (x)

/* Storing a value of kind I (integer/bool) or F (floating) into each dtype. */
#define GL_STORE_boolean_I(v)     ((uint8_t)((v) != 0))
#define GL_STORE_boolean_F(v)     ((uint8_t)((v) != 0))
#define GL_STORE_uint8_I(v)    ((uint8_t)(v))
#define GL_STORE_uint8_F(v)    gl_f2u8((double)(v))
#define GL_STORE_int32_I(v)    ((int32_t)(v))
#define GL_STORE_int32_F(v)    gl_f2i32((double)(v))
#define GL_STORE_int64_I(v)    ((int64_t)(v))
#define GL_STORE_int64_F(v)    gl_f2i64((double)(v))
#define GL_STORE_float16_I(v)  gl_f32_to_f16((float)(v))
#define GL_STORE_float16_F(v)  gl_f32_to_f16((float)(v))
#define GL_STORE_bfloat16_I(v) gl_f32_to_bf16((float)(v))
#define GL_STORE_bfloat16_F(v) gl_f32_to_bf16((float)(v))
#define GL_STORE_float32_I(v)  ((float)(v))
#define GL_STORE_float32_F(v)  ((float)(v))
#define GL_STORE_float64_I(v)  ((double)(v))
#define GL_STORE_float64_F(v)  ((double)(v))

/* X-macro over the dtypes: X(name, storage C type, kind I/F, GL_ enum). */
#define GL_FOREACH_DTYPE(X) \
  X(boolean,  uint8_t,  I, GL_BOOL)     \
  X(uint8,    uint8_t,  I, GL_UINT8)    \
  X(int32,    int32_t,  I, GL_INT32)    \
  X(int64,    int64_t,  I, GL_INT64)    \
  X(float16,  uint16_t, F, GL_FLOAT16)  \
  X(bfloat16, uint16_t, F, GL_BFLOAT16) \
  X(float32,  float,    F, GL_FLOAT32)  \
  X(float64,  double,   F, GL_FLOAT64)

#endif
