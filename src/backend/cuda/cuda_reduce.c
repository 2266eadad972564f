/*
** cuda_reduce.c — reductions and scans on the GPU: the axes are planned here (kept and
** reduced axes sorted by stride and merged where contiguous, as cpu_reduce.c does), the
** compute type chosen as the CPU chooses it, scratch taken from the caching allocator, and
** kernels/reduce.cu does the rest.
*/
#include <string.h>
#include "cuda.h"

_Static_assert(GL_KR_SUM == (int)GL_R_SUM && GL_KR_PROD == (int)GL_R_PROD && GL_KR_MAX == (int)GL_R_MAX &&
               GL_KR_MIN == (int)GL_R_MIN && GL_KR_ARGMAX == (int)GL_R_ARGMAX &&
               GL_KR_ARGMIN == (int)GL_R_ARGMIN && GL_KR_ALL == (int)GL_R_ALL && GL_KR_ANY == (int)GL_R_ANY &&
               GL_KR_MEAN == (int)GL_R_MEAN && GL_KR_VAR == (int)GL_R_VAR && GL_KR_NORM == (int)GL_R_NORM &&
               GL_KR_LOGSUMEXP == (int)GL_R_LOGSUMEXP, "kernel reduction numbers");

/* The type a reduction of dtype t computes in. */
static gl_kcompute compute_of(gl_dtype t) {
  if (t == GL_FLOAT64) return GL_KCOMPUTE_FLOAT64;
  if (gl_dtype_is_float(t)) return GL_KCOMPUTE_FLOAT32;
  return GL_KCOMPUTE_INT64;
}

/* reduce.cu makes an integer or bool result only for the ops that compute in int64 (sum,
** prod) or in the source's type (max, min, argmax, argmin, all, any); mean, var, norm and
** logsumexp refuse the int64 compute type. Every source dtype is read; a complex one only
** by prod, max, min, argmax and argmin (the ops layer reduces the others over the parts). */
bool gl_cuda_has_reduce(gl_redop op, gl_dtype dt) {
  if ((unsigned)op >= GL_NREDOP || (unsigned)dt >= GL_NDTYPE) return false;
  if (gl_dtype_is_complex(dt))
    return op == GL_R_PROD || op == GL_R_MAX || op == GL_R_MIN || op == GL_R_ARGMAX || op == GL_R_ARGMIN;
  return gl_dtype_is_float(dt) || !(op == GL_R_MEAN || op == GL_R_VAR || op == GL_R_NORM || op == GL_R_LOGSUMEXP);
}

gl_status gl_cuda_reduce(gl_redop op, const gl_array *dst, const gl_array *src, double param) {
  if ((unsigned)op >= GL_NREDOP) return gl_fail(GL_EINVAL, "reduce: unknown op %d", (int)op);
  const char *name = gl_redop_name[op];
  if (dst->ndim != src->ndim)
    return gl_fail(GL_EINVAL, "%s: dst has %d dims, src %d", name, dst->ndim, src->ndim);
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  gl_dtype sdt = (gl_dtype)src->dtype, ddt = (gl_dtype)dst->dtype;
  bool is_arg = op == GL_R_ARGMAX || op == GL_R_ARGMIN;
  bool by_src = op == GL_R_MAX || op == GL_R_MIN || is_arg || op == GL_R_ALL || op == GL_R_ANY;
  int ctk = compute_of(by_src ? sdt : ddt);
  if (!gl_cuda_has_reduce(op, ddt)) return gl_fail(GL_ENOTSUP, "%s: an integer result needs sum or prod", name);
  gl_rdim kd[GL_MAXDIMS], rd[GL_MAXDIMS];
  int nk, nr;
  int64_t M, K;
  int bad = gl_raxes_split(dst, src, kd, &nk, &M, rd, &nr, &K);
  if (bad >= 0)
    return gl_fail(GL_EINVAL, "%s: dst extent %lld on axis %d does not match src extent %lld", name,
                   (long long)dst->shape[bad], bad + 1, (long long)src->shape[bad]);
  if (M == 0) return GL_OK;
  if (is_arg && nr > 1) return gl_fail(GL_EINVAL, "%s takes one axis", name);
  if (K == 0 && by_src && op != GL_R_ALL && op != GL_R_ANY)
    return gl_fail(GL_EINVAL, "zero-size array to reduction '%s' which has no identity", name);
  nk = gl_rdims_sort_merge(kd, nk, true);
  nr = gl_rdims_sort_merge(rd, nr, false);
  if (K == 0) nr = 0;
  gl_reduce_args r;
  memset(&r, 0, sizeof r);
  r.nkept = nk;
  r.nreduced = nr;
  r.M = M;
  r.K = K;
  for (int k = 0; k < nk; k++) { r.kept_shape[k] = kd[k].n; r.kept_src_strides[k] = kd[k].ss; r.kept_dst_strides[k] = kd[k].ds; }
  for (int k = 0; k < nr; k++) { r.reduced_shape[k] = rd[k].n; r.reduced_src_strides[k] = rd[k].ss; }
  size_t nbytes = gl_reduce_scratch(&r);
  void *scratch = NULL;
  GL_TRY(gl_cuda_alloc(dev, nbytes, &scratch));
  int rc = gl_klaunch_reduce(s, (int)op, &r, gl_array_data(dst), (int)ddt, gl_array_data(src), (int)sdt,
                             ctk, param, scratch);
  gl_cuda_free(dev, scratch, nbytes);          /* stream order: later users wait for us */
  if (rc == GL_KERR_NOTSUP)
    return gl_fail(GL_ENOTSUP, "%s of %s into %s has no CUDA kernel", name, gl_dtypes[sdt].name, gl_dtypes[ddt].name);
  return gl_cuda_launched(dev, s, rc, name);
}

gl_status gl_cuda_scan(gl_redop op, const gl_array *dst, const gl_array *src, int axis) {
  if (op != GL_R_SUM && op != GL_R_PROD) return gl_fail(GL_ENOTSUP, "scan: op %d is not a scan", (int)op);
  const char *name = op == GL_R_SUM ? "cumsum" : "cumprod";
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  if (dst->size == 0) return GL_OK;
  if (axis < 0 || axis >= src->ndim) return gl_fail(GL_EINVAL, "%s: axis %d out of range", name, axis + 1);
  gl_rdim d[GL_MAXDIMS];
  int n = 0;
  for (int k = 0; k < src->ndim; k++)
    if (k != axis && src->shape[k] != 1) d[n++] = (gl_rdim){ src->shape[k], src->strides[k], dst->strides[k] };
  n = gl_rdims_sort_merge(d, n, true);
  gl_scan_args sc;
  memset(&sc, 0, sizeof sc);
  sc.ndim = n;
  sc.lines = 1;
  for (int k = 0; k < n; k++) {
    sc.shape[k] = d[k].n;
    sc.src_strides[k] = d[k].ss;
    sc.dst_strides[k] = d[k].ds;
    sc.lines *= d[k].n;
  }
  sc.K = src->shape[axis];
  sc.src_stride = src->strides[axis];
  sc.dst_stride = dst->strides[axis];
  int rc = gl_klaunch_scan(s, op == GL_R_PROD, &sc, gl_array_data(dst), dst->dtype, gl_array_data(src),
                           src->dtype, compute_of((gl_dtype)dst->dtype));
  return gl_cuda_launched(dev, s, rc, name);
}
