/*
** cuda_index.c — gather, scatter, boolean-mask selection and sort on the GPU: walks and
** scratch are set up here, kernels/index.cu and kernels/sort.cu move the elements.
**
** scatter with accumulate uses atomic adds for float32, float64, int32 and int64 (the
** order of float additions then varies from run to run, as in CuPy and PyTorch); the other
** dtypes (float16, bfloat16, uint8, bool) go one thread per lane, in order, which is exact
** but slow when there are few lanes. Plain scatters go one thread per lane too, so a
** repeated position takes the last value, as on the CPU.
*/
#include <string.h>
#include "cuda.h"

/* The walk over 'shape': strides of the direct array d and of the indexed one x. */
static void idx_walk(gl_kidx *w, const gl_array *shape_of, const gl_array *d, const gl_array *x, int axis) {
  memset(w, 0, sizeof *w);
  w->ndim = shape_of->ndim;
  w->axis = axis;
  w->n = shape_of->size;
  for (int k = 0; k < shape_of->ndim; k++) {
    w->shape[k] = shape_of->shape[k];
    w->sd[k] = d->strides[k];
    w->sx[k] = x->strides[k];
  }
}

/* The start of gather (a = dst, x = src) and scatter (a = src, x = dst): dev entered (its
** stream in *s), axis checked against a and x, and the walk over a in w; w->n is 0 where a is
** empty (nothing to move). */
static gl_status idx_begin(const char *fn, gl_device dev, cudaStream_t *s, gl_kidx *w, const gl_array *a,
                           const gl_array *x, int axis) {
  memset(w, 0, sizeof *w);
  GL_TRY(gl_cuda_enter(dev, s));
  if (a->size == 0) return GL_OK;
  if (axis < 0 || axis >= a->ndim || a->ndim != x->ndim)
    return gl_fail(GL_EINVAL, "%s: axis %d does not fit a %d-d array", fn, axis + 1, a->ndim);
  idx_walk(w, a, a, x, axis);
  return GL_OK;
}

gl_status gl_cuda_gather(const gl_array *dst, const gl_array *src, int axis, const gl_array *idx) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  gl_kidx w;
  GL_TRY(idx_begin("gather", dev, &s, &w, dst, src, axis));
  if (w.n == 0) return GL_OK;
  int rc = gl_klaunch_gather(s, &w, gl_array_data(dst), gl_array_data(src), gl_array_data(idx),
                             (int)gl_dtypes[dst->dtype].size);
  return gl_cuda_launched(dev, s, rc, "gather");
}

gl_status gl_cuda_scatter(const gl_array *dst, int axis, const gl_array *idx, const gl_array *src,
                          bool accumulate) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  gl_kidx w;
  GL_TRY(idx_begin("scatter", dev, &s, &w, src, dst, axis));
  if (w.n == 0) return GL_OK;
  int rc = gl_klaunch_scatter(s, &w, gl_array_data(dst), gl_array_data(src), gl_array_data(idx),
                              dst->dtype, (int)gl_dtypes[dst->dtype].size, accumulate);
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "scatter%s of %s arrays has no CUDA kernel", accumulate ? " with accumulate" : "",
                   gl_dtypes[dst->dtype].name);
  return gl_cuda_launched(dev, s, rc, accumulate ? "scatter (accumulate)" : "scatter");
}

gl_status gl_cuda_mask_select(const gl_array *dst, const gl_array *src, const gl_array *mask) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  if (dst->size == 0 || src->size == 0) return GL_OK;
  const gl_array *ops[2] = { src, mask };
  gl_kiter k;
  gl_cuda_kiter(&k, 2, ops, NULL);
  size_t nbytes = gl_kmask_scratch(k.n);
  void *scratch = NULL;
  GL_TRY(gl_cuda_alloc(dev, nbytes, &scratch));
  int rc = gl_klaunch_mask_select(s, &k, gl_array_data(dst), dst->ndim ? dst->strides[0] : 1,
                                  gl_array_data(src), gl_array_data(mask), (int)gl_dtypes[src->dtype].size,
                                  scratch, nbytes);
  gl_cuda_free(dev, scratch, nbytes);
  return gl_cuda_launched(dev, s, rc, "mask selection");
}

gl_status gl_cuda_sort(const gl_array *values, const gl_array *indices, const gl_array *src, int axis,
                       bool descending) {
  gl_device dev = gl_array_device(src);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  int64_t n = src->ndim ? src->shape[axis] : 1;
  if (src->size == 0 || n == 0 || (values == NULL && indices == NULL)) return GL_OK;
  if (src->size > INT32_MAX)
    return gl_fail(GL_ENOTSUP, "sort: %lld elements is more than a CUDA sort takes (2^31 - 1)",
                   (long long)src->size);
  gl_sort_args k;
  memset(&k, 0, sizeof k);
  k.n = n;
  k.lanes = src->size / n;
  k.src_stride = src->ndim ? src->strides[axis] : 1;
  k.values_stride = values && values->ndim ? values->strides[axis] : 1;
  k.indices_stride = indices && indices->ndim ? indices->strides[axis] : 1;
  for (int d = 0; d < src->ndim; d++) {
    if (d == axis) continue;
    k.shape[k.ndim] = src->shape[d];
    k.src_strides[k.ndim] = src->strides[d];
    k.values_strides[k.ndim] = values ? values->strides[d] : 0;
    k.indices_strides[k.ndim] = indices ? indices->strides[d] : 0;
    k.ndim++;
  }
  size_t nbytes = gl_sort_scratch(&k, src->dtype);
  if (nbytes == 0) return gl_fail(GL_EDEVICE, "sort: could not size CUB's scratch");
  void *scratch = NULL;
  GL_TRY(gl_cuda_alloc(dev, nbytes, &scratch));
  int rc = gl_klaunch_sort(s, &k, values ? gl_array_data(values) : NULL,
                           indices ? (int64_t *)gl_array_data(indices) : NULL, gl_array_data(src), src->dtype,
                           descending, scratch, nbytes);
  gl_cuda_free(dev, scratch, nbytes);
  return gl_cuda_launched(dev, s, rc, "sort");
}
