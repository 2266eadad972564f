/*
** fft.c — the three transforms under gpu.fft (backend.h, gl_fft_kind): the axes checked,
** the dtypes chosen as NumPy 2 chooses them, the input converted where it must be, the
** output allocated on the input's device. What numpy.fft adds on top (n and s, which pad
** with zeros or crop; the norm modes; hfft, the frequencies, the shifts) is lua/gpu/fft.lua.
**
** Dtypes: complex64 and float32 compute in single precision, and so do float16 and
** bfloat16 (there is no complex32); everything else (float64, complex128, the integers,
** bool) in double, as NumPy promotes them. R2C takes real arrays only (NumPy 2 refuses a
** complex one). C2R gives the complex dtype's real part. A strided input of the compute
** dtype goes to the backend as it is; other dtypes are converted into a contiguous copy.
*/
#include <string.h>
#include "ops.h"

/* The complex dtype a transform of x computes in. */
static gl_dtype fft_complex_for(gl_dtype dt) {
  switch (dt) {
    case GL_COMPLEX64: case GL_FLOAT32: case GL_FLOAT16: case GL_BFLOAT16: return GL_COMPLEX64;
    default: return GL_COMPLEX128;
  }
}

static gl_dtype real_of(gl_dtype ct) { return ct == GL_COMPLEX64 ? GL_FLOAT32 : GL_FLOAT64; }

/* Axes 0-based, in range, distinct, at least one, each of a nonzero logical extent. */
static gl_status check_axes(const gl_array *x, int naxes, const int *axes) {
  if (naxes < 1 || naxes > x->ndim)
    return gl_fail(GL_EINVAL, "%d axes given for a %d-dimensional array (1 to %d)", naxes, x->ndim, x->ndim);
  unsigned seen = 0;                         /* a bit per axis */
  for (int i = 0; i < naxes; i++) {
    unsigned bit = axes[i] >= 0 && axes[i] < x->ndim ? 1u << axes[i] : 0;
    if (bit == 0)
      return gl_fail(GL_EINVAL, "axis %d is out of bounds for a %d-dimensional array", axes[i] + 1, x->ndim);
    if (seen & bit) return gl_fail(GL_EINVAL, "axis %d is repeated", axes[i] + 1);
    seen |= bit;
  }
  return GL_OK;
}

gl_status gl_op_fft(gl_array *out, const gl_array *x, gl_fft_kind kind, int naxes, const int *axes, int sign,
                    int64_t last_n, double scale) {
  GL_TRY(check_axes(x, naxes, axes));
  gl_dtype xt = (gl_dtype)x->dtype, ct = fft_complex_for(xt);
  bool xcomplex = gl_dtypes[xt].kind == GL_KIND_COMPLEX;
  if (kind == GL_FFT_R2C && xcomplex)
    return gl_fail(GL_EINVAL, "a real array expected, got %s (take its real part, or use the complex transform)",
                   gl_dtypes[xt].name);
  if (kind == GL_FFT_C2C && sign != 1 && sign != -1) return gl_fail(GL_EINVAL, "the sign must be 1 or -1");
  int last = axes[naxes - 1];
  int64_t shape[GL_MAXDIMS];
  memcpy(shape, x->shape, sizeof shape);
  if (kind == GL_FFT_R2C) shape[last] = x->shape[last] / 2 + 1;
  if (kind == GL_FFT_C2R) {
    if (last_n < 1) return gl_fail(GL_EINVAL, "invalid number of data points (%lld)", (long long)last_n);
    if (x->shape[last] != last_n / 2 + 1)
      return gl_fail(GL_EINVAL, "axis %d has %lld entries; %lld points take %lld", last + 1,
                     (long long)x->shape[last], (long long)last_n, (long long)(last_n / 2 + 1));
    shape[last] = last_n;
  }
  for (int i = 0; i < naxes; i++)
    if (x->shape[axes[i]] == 0)
      return gl_fail(GL_EINVAL, "invalid number of data points (0) along axis %d", axes[i] + 1);
  gl_dtype in_dt = kind == GL_FFT_R2C ? real_of(ct) : ct;
  gl_dtype out_dt = kind == GL_FFT_C2R ? real_of(ct) : ct;
  gl_device dev = gl_array_device(x);
  const gl_backend *be;
  GL_TRY(gl_backend_supporting(dev, GL_OP_FFT, (int)kind, ct, "gpu.fft", &be));
  GL_TRY(gl_array_alloc(out, out_dt, x->ndim, shape, dev));
  if (out->size == 0) return GL_OK;

  gl_array tmp = { 0 };
  const gl_array *in = x;
  gl_status st = GL_OK;
  if (xt != in_dt) {
    st = gl_op_copy(&tmp, x, in_dt, dev);
    in = &tmp;
  }
  gl_fft_args args = { .kind = kind, .sign = kind == GL_FFT_C2C ? sign : kind == GL_FFT_R2C ? -1 : 1,
                       .rank = naxes, .scale = scale };
  memcpy(args.axes, axes, sizeof(int) * (size_t)naxes);
  if (st == GL_OK) st = be->fft(out, in, &args);
  gl_array_release(&tmp);
  if (st != GL_OK) gl_array_release(out);
  return st;
}
