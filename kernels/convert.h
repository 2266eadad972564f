/*
** convert.h — dtype conversions shared by the CPU loops and the CUDA kernels, so both
** backends agree bit for bit, generated from the rows of kernels/dtypes.h. Float to integer
** saturates to the target's range and maps NaN to 0 (what the GPU's conversion instructions
** do; C leaves it undefined).
*/
#ifndef GL_KERNELS_CONVERT_H
#define GL_KERNELS_CONVERT_H

#include <stdint.h>
#include "half.h"
#include "dtypes.h"

/* gl_sat_<id>(f): the integer dtype's value nearest to f, NaN to 0 (gl_sat_int32, ...). A
** lower bound of 0 shares NaN's answer, so unsigned dtypes test both at once. */
#define GL_DT_SAT_DEF_(E, id, S, kind, half, CT, UT, prec, lo, hi, ...) GL_DT_SAT_DEF_##kind(id, S, lo, hi)
#define GL_DT_SAT_DEF_BOOL(id, S, lo, hi)
#define GL_DT_SAT_DEF_FLOAT(id, S, lo, hi)
#define GL_DT_SAT_DEF_COMPLEX(id, S, lo, hi)
#define GL_DT_SAT_DEF_INT GL_DT_SAT_DEF_UINT
#define GL_DT_SAT_DEF_UINT(id, S, lo, hi)             \
  GL_HD S gl_sat_##id(double f) {                      \
    if (f != f || ((lo) == 0 && f <= 0.0)) return 0;   \
    if (f >= (double)(hi)) return (S)(hi);             \
    if ((lo) != 0 && f <= (double)(lo)) return (S)(lo); \
    return (S)f;                                       \
  }
GL_DTYPE_LIST(GL_DT_SAT_DEF_)

/* GL_DT_LOAD(half, x): a stored element x as its compute value (float16/bfloat16 widen to
** float). 'half' is the element's row's. */
#define GL_DT_LOAD(half, x) GL_DT_WIDEN_##half(x)
#define GL_DT_WIDEN_none(x) (x)
#define GL_DT_WIDEN_f16(x) gl_f16_to_f32(x)
#define GL_DT_WIDEN_bf16(x) gl_bf16_to_f32(x)

/* GL_DT_STORE(kind, half, S, id, vkind, v): v, a value of kind 'vkind' (BOOL, UINT or INT:
** an integer; FLOAT: a float or double; COMPLEX: a gl_complex64 or gl_complex128), as the
** dtype whose row holds kind, half, S, id stores it: bool is v != 0 (a complex: either part
** nonzero); an integer dtype converts an integer as C does (wrapping) and saturates a float
** (gl_sat_<id>); a float dtype rounds (the halves through float32, to nearest even); a
** complex dtype takes a real value as its real part. A complex value stored into a real
** dtype gives up its imaginary part first, as NumPy's astype does. */
#define GL_DT_STORE(kind, half, S, id, vkind, v) GL_DT_STORE_(kind, GL_DT_VK_##vkind, half, S, id, v)
#define GL_DT_STORE_(kind, vk, half, S, id, v) GL_DT_STORE__(kind, vk, half, S, id, v)
#define GL_DT_STORE__(kind, vk, half, S, id, v) GL_DT_ST_##kind##_##vk(half, S, id, v)
#define GL_DT_VK_BOOL I
#define GL_DT_VK_UINT I
#define GL_DT_VK_INT I
#define GL_DT_VK_FLOAT F
#define GL_DT_VK_COMPLEX C
#define GL_DT_ST_BOOL_I(half, S, id, v) ((uint8_t)((v) != 0))
#define GL_DT_ST_BOOL_F(half, S, id, v) ((uint8_t)((v) != 0))
#define GL_DT_ST_UINT_I(half, S, id, v) ((S)(v))
#define GL_DT_ST_UINT_F(half, S, id, v) gl_sat_##id((double)(v))
#define GL_DT_ST_INT_I GL_DT_ST_UINT_I
#define GL_DT_ST_INT_F GL_DT_ST_UINT_F
#define GL_DT_ST_FLOAT_I(half, S, id, v) GL_DT_NARROW_##half(S, v)
#define GL_DT_ST_FLOAT_F GL_DT_ST_FLOAT_I
#define GL_DT_ST_BOOL_C(half, S, id, v) ((uint8_t)((v).re != 0 || (v).im != 0))
#define GL_DT_ST_UINT_C(half, S, id, v) GL_DT_ST_UINT_F(half, S, id, (v).re)
#define GL_DT_ST_INT_C GL_DT_ST_UINT_C
#define GL_DT_ST_FLOAT_C(half, S, id, v) GL_DT_ST_FLOAT_F(half, S, id, (v).re)
#define GL_DT_ST_COMPLEX_I(half, S, id, v) gl_make_##id(v, 0)
#define GL_DT_ST_COMPLEX_F GL_DT_ST_COMPLEX_I
#define GL_DT_ST_COMPLEX_C(half, S, id, v) gl_make_##id((v).re, (v).im)
#define GL_DT_NARROW_none(S, v) ((S)(v))
#define GL_DT_NARROW_f16(S, v) gl_f32_to_f16((float)(v))
#define GL_DT_NARROW_bf16(S, v) gl_f32_to_bf16((float)(v))

#endif
