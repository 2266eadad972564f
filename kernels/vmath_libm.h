/* Temporary: libm stand-ins for kernels/vmath.h while it is being written. */
#ifndef GL_VMATH_LIBM_H
#define GL_VMATH_LIBM_H
#include <math.h>
#include "half.h"
GL_HD float gl_vexpf(float x) { return expf(x); }
GL_HD float gl_vexpm1f(float x) { return expm1f(x); }
GL_HD float gl_vlogf(float x) { return logf(x); }
GL_HD float gl_vlog1pf(float x) { return log1pf(x); }
GL_HD float gl_vlog2f(float x) { return log2f(x); }
GL_HD float gl_vlog10f(float x) { return log10f(x); }
GL_HD float gl_vtanhf(float x) { return tanhf(x); }
GL_HD float gl_vsinf(float x) { return sinf(x); }
GL_HD float gl_vcosf(float x) { return cosf(x); }
GL_HD float gl_verff(float x) { return erff(x); }
GL_HD float gl_vsigmoidf(float x) { return x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x)); }
GL_HD float gl_vsoftplusf(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
GL_HD float gl_vgeluf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }
#endif
