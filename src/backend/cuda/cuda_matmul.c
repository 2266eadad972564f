/*
** cuda_matmul.c — matmul on the GPU: floats and complex numbers through cuBLAS, integers
** and bool through a plain kernel (kernels/matmul.cu).
**
** cuBLAS is opened with dlopen at the first float matmul (linking it costs ~50 ms at every
** process start) and only the few entry points used here are resolved; the header gives
** the types. One handle per device, made lazily, bound to the device's stream, destroyed
** by gl_cuda_blas_release at shutdown.
**
** cuBLAS is column-major and our arrays are row-major: C = A B is computed as
** C^T = B^T A^T, which cuBLAS sees without any copy when each matrix has a unit stride on
** one of its two axes (a transposed view just flips the op). Batches go in one
** cublasGemmStridedBatchedEx call when each operand's batch axes collapse to one stride
** (0 for a broadcast operand); otherwise one call per batch. Anything else (a matrix with
** no unit stride, a destination whose last axis is not contiguous) goes through a
** contiguous temporary.
**
** float32 is IEEE by default (CUBLAS_COMPUTE_32F); gpu.set_matmul_precision("tf32") allows
** TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32). float16/bfloat16 run on tensor cores
** with float32 accumulation, float64 in double. complex64 and complex128 are CUDA_C_32F and
** CUDA_C_64F, computed as float32 (TF32 where allowed, as float32) and float64.
*/
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <cublas_v2.h>
#include "cuda.h"

/* ---- cuBLAS, loaded on first use ------------------------------------------------------ */

static struct {
  pthread_once_t once;
  bool ok;
  char why[256];
  __typeof__(cublasCreate_v2) *create;
  __typeof__(cublasDestroy_v2) *destroy;
  __typeof__(cublasSetStream_v2) *set_stream;
  __typeof__(cublasSetWorkspace_v2) *set_workspace;  /* optional */
  __typeof__(cublasGemmStridedBatchedEx) *gemm;
  __typeof__(cublasGetStatusName) *status_name;       /* optional */
  __typeof__(cublasGetVersion_v2) *version;           /* optional */
} blas = { .once = PTHREAD_ONCE_INIT };

static cublasHandle_t handles[GL_CUDA_MAXDEV];
static void *workspaces[GL_CUDA_MAXDEV];
static volatile int tf32_allowed;

static void blas_load(void) {
  void *h = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    snprintf(blas.why, sizeof blas.why, "cannot load cuBLAS (libcublas.so.13): %s", e ? e : "not found");
    return;
  }
  /* dlsym returns void *; the union keeps the conversion to a function pointer defined */
#define GL_SYM(field, name)                                                                \
  do {                                                                                     \
    void *p_ = dlsym(h, name);                                                             \
    memcpy(&blas.field, &p_, sizeof p_);                                                   \
  } while (0)
  GL_SYM(create, "cublasCreate_v2");
  GL_SYM(destroy, "cublasDestroy_v2");
  GL_SYM(set_stream, "cublasSetStream_v2");
  GL_SYM(set_workspace, "cublasSetWorkspace_v2");
  GL_SYM(gemm, "cublasGemmStridedBatchedEx");
  GL_SYM(status_name, "cublasGetStatusName");
  GL_SYM(version, "cublasGetVersion_v2");
#undef GL_SYM
  if (!blas.create || !blas.destroy || !blas.set_stream || !blas.gemm) {
    snprintf(blas.why, sizeof blas.why, "cuBLAS lacks cublasGemmStridedBatchedEx or cublasCreate_v2");
    return;
  }
  blas.ok = true;
}

static gl_status blas_check(cublasStatus_t st, const char *what) {
  if (st == CUBLAS_STATUS_SUCCESS) return GL_OK;
  const char *name = blas.status_name ? blas.status_name(st) : NULL;
  return gl_fail(st == CUBLAS_STATUS_ALLOC_FAILED ? GL_ENOMEM : GL_EDEVICE, "%s: %s (cuBLAS status %d)", what,
                 name ? name : "cuBLAS error", (int)st);
}

/* cuBLAS's workspace comes from the caching pool, so memory pressure reaches it through the
** reclaim hook and gpu.memory() counts it; without one, cuBLAS cudaMallocs its own at a
** handle's first call on a stream. The size cuBLAS's documentation recommends: 32 MiB from
** Hopper (sm_90) on, 4 MiB before. */
static size_t blas_workspace_bytes(int index) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) != cudaSuccess) cudaGetLastError();
  return (size_t)(major >= 9 ? 32 : 4) << 20;
}

/* The device's handle (made on first use, on the device's stream, with its workspace). The
** workspace is allocated outside gl_cuda_lock (the reclaim hook takes it); a thread that
** made the handle first wins, and the other's workspace goes back to the pool. */
static gl_status blas_handle(gl_device dev, cudaStream_t s, cublasHandle_t *out) {
  pthread_once(&blas.once, blas_load);
  if (!blas.ok) return gl_fail(GL_ENOTSUP, "matmul: %s", blas.why);
  pthread_mutex_lock(&gl_cuda_lock);
  *out = handles[dev.index];
  pthread_mutex_unlock(&gl_cuda_lock);
  if (*out) return GL_OK;
  size_t wsb = blas_workspace_bytes(dev.index);
  void *ws = NULL;
  if (blas.set_workspace && gl_workspace_alloc(dev, wsb, &ws) != GL_OK) ws = NULL;   /* cuBLAS's own then */
  gl_status st = GL_OK;
  pthread_mutex_lock(&gl_cuda_lock);
  if (handles[dev.index] == NULL) {
    cublasHandle_t h = NULL;
    st = blas_check(blas.create(&h), "matmul: cublasCreate");
    if (st == GL_OK) st = blas_check(blas.set_stream(h, s), "matmul: cublasSetStream");
    if (st == GL_OK && ws) st = blas_check(blas.set_workspace(h, ws, wsb), "matmul: cublasSetWorkspace");
    if (st == GL_OK) {
      handles[dev.index] = h;
      workspaces[dev.index] = ws;
      ws = NULL;
    } else if (h) {
      blas.destroy(h);
    }
  }
  *out = handles[dev.index];
  pthread_mutex_unlock(&gl_cuda_lock);
  if (ws) gl_cuda_free(dev, ws, wsb);
  return st;
}

/* (gl_cuda_lock held, the device current and its stream synchronised) */
void gl_cuda_blas_release(int index) {
  if (index < 0 || index >= GL_CUDA_MAXDEV || handles[index] == NULL) return;
  if (blas.destroy) blas.destroy(handles[index]);
  handles[index] = NULL;
  gl_cuda_free_locked(index, workspaces[index]);
  workspaces[index] = NULL;
}

int gl_cuda_blas_version(void) {
  pthread_once(&blas.once, blas_load);
  int v = 0;
  if (blas.ok && blas.version && handles[0]) blas.version(handles[0], &v);
  return v;
}

void gl_cuda_matmul_precision(bool tf32) { tf32_allowed = tf32; }

/* ---- layouts ----------------------------------------------------------------------------- */

/* How cuBLAS reads a row-major r x c matrix X (strides sr, sc) as the column-major
** matrix X^T: op N with ld = sr when rows are contiguous, op T with ld = sc when columns
** are. A stride on an axis of extent 1 never matters. */
static bool layout(int64_t r, int64_t c, int64_t sr, int64_t sc, cublasOperation_t *op, int *ld) {
  bool rfree = r == 1, cfree = c == 1;
  int64_t l;
  if ((cfree || sc == 1) && (rfree || sr >= c)) { *op = CUBLAS_OP_N; l = rfree ? c : sr; }
  else if ((rfree || sr == 1) && (cfree || sc >= r)) { *op = CUBLAS_OP_T; l = cfree ? r : sc; }
  else return false;
  if (l < 1 || l > INT_MAX) return false;
  *ld = (int)l;
  return true;
}

/* The single stride of x's batch axes (the first nb), when they collapse to one. */
static bool batch_stride(const gl_array *x, int nb, int64_t *out) {
  int64_t s = 0;
  int last = -1;
  for (int d = nb - 1; d >= 0; d--) {
    if (x->shape[d] == 1) continue;
    if (last < 0) s = x->strides[d];
    else if (x->strides[d] != x->strides[last] * x->shape[last]) return false;
    last = d;
  }
  *out = s;
  return true;
}

/* Element offset of batch b (C order over dst's batch axes) in x. */
static int64_t batch_offset(const gl_array *shape_of, const gl_array *x, int nb, int64_t b) {
  int64_t off = 0;
  for (int d = nb - 1; d >= 0 && b > 0; d--) {
    int64_t n = shape_of->shape[d];
    off += (b % n) * x->strides[d];
    b /= n;
  }
  return off;
}

/* A contiguous temporary like x (storage on the stack of the caller). */
static gl_status temp_like(gl_device dev, const gl_array *x, gl_array *t, gl_storage *ts) {
  memset(t, 0, sizeof *t);
  memset(ts, 0, sizeof *ts);
  GL_TRY(gl_array_init(t, (gl_dtype)x->dtype, x->ndim, x->shape));
  ts->refcount = 1;
  ts->nbytes = (size_t)t->size * gl_dtypes[x->dtype].size;
  ts->device = dev;
  GL_TRY(gl_workspace_alloc(dev, ts->nbytes ? ts->nbytes : 1, &ts->data));
  t->storage = ts;
  return GL_OK;
}

static void temp_free(gl_device dev, gl_storage *ts) {
  if (ts->data) gl_cuda_free(dev, ts->data, ts->nbytes ? ts->nbytes : 1);
  ts->data = NULL;
}

/* ---- floats through cuBLAS ----------------------------------------------------------------- */

/* Each dtype's cudaDataType: its row's cuda column (CUDA_R_32F ...). */
#define CUDA_none ((cudaDataType_t)-1)
#define CUDA_TYPE_(E, t) [GL_##E] = CUDA_##t,
static const cudaDataType_t cuda_types[GL_NDTYPE] = { GL_DTYPE_COLUMN(CUDA_TYPE_, cuda) };
#undef CUDA_TYPE_
#undef CUDA_none

/* cuBLAS's data and compute types for dtype dt (its floats and complex types, computed in
** float32, or float64 for float64 and complex128; TF32 where allowed for float32 and
** complex64); false where gemm takes none. */
static bool blas_types(gl_dtype dt, cudaDataType_t *ty, cublasComputeType_t *ct) {
  if (!GL_DTSET_HAS(GL_DTSET_FLOAT | GL_DTSET_COMPLEX, dt)) return false;
  *ty = cuda_types[dt];
  *ct = gl_dtypes[dt].prec > 24 ? CUBLAS_COMPUTE_64F
      : (dt == GL_FLOAT32 || dt == GL_COMPLEX64) && tf32_allowed ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  return true;
}

static gl_status gemm(gl_device dev, cudaStream_t s, const gl_array *dst, const gl_array *a, const gl_array *b) {
  int nd = dst->ndim, nb = nd - 2;
  int64_t M = dst->shape[nd - 2], N = dst->shape[nd - 1], K = a->shape[nd - 1];
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
    return gl_fail(GL_ENOTSUP, "matmul: a dimension above 2^31 - 1 is more than cuBLAS takes");
  cublasOperation_t opa, opb, opc;
  int lda, ldb, ldc;
  /* cuBLAS's A is our b (N x K as b^T), its B our a (K x M as a^T), its C our dst^T */
  if (!layout(K, N, b->strides[nd - 2], b->strides[nd - 1], &opa, &lda) ||
      !layout(M, K, a->strides[nd - 2], a->strides[nd - 1], &opb, &ldb) ||
      !layout(M, N, dst->strides[nd - 2], dst->strides[nd - 1], &opc, &ldc) || opc != CUBLAS_OP_N)
    return gl_fail(GL_EINVAL, "matmul: internal: layout not usable by cuBLAS");
  cudaDataType_t ty;
  cublasComputeType_t ct;
  float f1 = 1.0f, f0 = 0.0f;
  double d1 = 1.0, d0 = 0.0;
  const void *alpha = &f1, *beta = &f0;
  if (!blas_types((gl_dtype)dst->dtype, &ty, &ct))
    return gl_fail(GL_ENOTSUP, "matmul: %s has no cuBLAS path", gl_dtypes[dst->dtype].name);
  if (ct == CUBLAS_COMPUTE_64F) { alpha = &d1; beta = &d0; }
  cublasHandle_t h = NULL;
  GL_TRY(blas_handle(dev, s, &h));
  /* the scale type of a complex gemm is its data type: alpha and beta are complex */
  static const cuComplex c1 = { 1.0f, 0.0f }, c0 = { 0.0f, 0.0f };
  static const cuDoubleComplex z1 = { 1.0, 0.0 }, z0 = { 0.0, 0.0 };
  if (dst->dtype == GL_COMPLEX64) { alpha = &c1; beta = &c0; }
  if (dst->dtype == GL_COMPLEX128) { alpha = &z1; beta = &z0; }
  int64_t nbatch = 1;
  for (int d = 0; d < nb; d++) nbatch *= dst->shape[d];
  size_t esz = gl_dtypes[dst->dtype].size;
  char *pc = gl_array_data(dst);
  const char *pa = gl_array_data(a), *pb = gl_array_data(b);
  int64_t sa, sb, sc;
  if (batch_stride(a, nb, &sa) && batch_stride(b, nb, &sb) && batch_stride(dst, nb, &sc) && nbatch <= INT_MAX) {
    GL_TRY(blas_check(blas.gemm(h, opa, opb, (int)N, (int)M, (int)K, alpha, pb, ty, lda, (long long)sb, pa, ty,
                                ldb, (long long)sa, beta, pc, ty, ldc, (long long)sc, (int)nbatch, ct,
                                CUBLAS_GEMM_DEFAULT), "matmul: cublasGemmStridedBatchedEx"));
    return gl_cuda_launched(dev, s, 0, "matmul");
  }
  for (int64_t i = 0; i < nbatch; i++) {
    GL_TRY(gl_interrupt_check());       /* a full launch queue blocks: stop between launches */
    int64_t oa = batch_offset(dst, a, nb, i), ob = batch_offset(dst, b, nb, i), oc = batch_offset(dst, dst, nb, i);
    GL_TRY(blas_check(blas.gemm(h, opa, opb, (int)N, (int)M, (int)K, alpha, pb + ob * (int64_t)esz, ty, lda, 0,
                                pa + oa * (int64_t)esz, ty, ldb, 0, beta, pc + oc * (int64_t)esz, ty, ldc, 0, 1,
                                ct, CUBLAS_GEMM_DEFAULT), "matmul: cublasGemmStridedBatchedEx"));
    GL_CUDA_COUNT(kernels, 1);
  }
  return gl_cuda_sync_each() ? gl_cuda_wait(dev.index, s, NULL, "matmul") : GL_OK;
}

/* ---- integers and bool: a kernel -------------------------------------------------------------- */

static gl_status matmul_int(gl_device dev, cudaStream_t s, const gl_array *dst, const gl_array *a,
                            const gl_array *b) {
  int nd = dst->ndim, nb = nd - 2;
  gl_array bd = *dst, ba = *a, bbv = *b;        /* the batch axes only */
  bd.ndim = ba.ndim = bbv.ndim = (uint8_t)nb;
  int64_t nbatch = 1;
  for (int d = 0; d < nb; d++) nbatch *= dst->shape[d];
  bd.size = ba.size = bbv.size = nbatch;
  const gl_array *ops[3] = { &bd, &ba, &bbv };
  gl_kiter bw;
  gl_cuda_kiter(&bw, 3, ops, NULL);
  bw.n = nbatch;
  gl_matmul_args m;
  m.M = dst->shape[nd - 2];
  m.N = dst->shape[nd - 1];
  m.K = a->shape[nd - 1];
  m.dst_row_stride = dst->strides[nd - 2];
  m.dst_col_stride = dst->strides[nd - 1];
  m.a_row_stride = a->strides[nd - 2];
  m.a_col_stride = a->strides[nd - 1];
  m.b_row_stride = b->strides[nd - 2];
  m.b_col_stride = b->strides[nd - 1];
  int rc = gl_klaunch_matmul_int(s, &bw, &m, gl_array_data(dst), gl_array_data(a), gl_array_data(b), dst->dtype);
  if (rc == GL_KERR_NOTSUP) return gl_fail(GL_ENOTSUP, "matmul of %s arrays has no CUDA kernel", gl_dtypes[dst->dtype].name);
  return gl_cuda_launched(dev, s, rc, "matmul");
}

bool gl_cuda_has_matmul(gl_dtype dt) {
  cudaDataType_t ty;
  cublasComputeType_t ct;
  if (gl_dtype_is_float(dt) || gl_dtype_is_complex(dt)) return blas_types(dt, &ty, &ct);
  return GL_DTSET_HAS(GL_KMATMUL_INT_DTYPES, dt);
}

gl_status gl_cuda_matmul(const gl_array *dst, const gl_array *a, const gl_array *b) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  int nd = dst->ndim;
  if (nd < 2 || a->ndim != nd || b->ndim != nd)
    return gl_fail(GL_EINVAL, "matmul: operands must share dst's ndim (>= 2), got %d, %d, %d", nd, a->ndim, b->ndim);
  if (dst->size == 0) return GL_OK;
  if (!gl_dtype_is_float((gl_dtype)dst->dtype) && !gl_dtype_is_complex((gl_dtype)dst->dtype))
    return matmul_int(dev, s, dst, a, b);
  int64_t M = dst->shape[nd - 2], N = dst->shape[nd - 1], K = a->shape[nd - 1];
  cublasOperation_t op;
  int ld;
  gl_array ta, tb, tc;
  gl_storage sa, sb, sc;
  memset(&sa, 0, sizeof sa);
  memset(&sb, 0, sizeof sb);
  memset(&sc, 0, sizeof sc);
  const gl_array *ua = a, *ub = b, *uc = dst;
  gl_status st = GL_OK;
  if (!layout(M, K, a->strides[nd - 2], a->strides[nd - 1], &op, &ld)) {
    st = temp_like(dev, a, &ta, &sa);
    if (st == GL_OK) st = gl_cuda_copy(&ta, a);
    ua = &ta;
  }
  if (st == GL_OK && !layout(K, N, b->strides[nd - 2], b->strides[nd - 1], &op, &ld)) {
    st = temp_like(dev, b, &tb, &sb);
    if (st == GL_OK) st = gl_cuda_copy(&tb, b);
    ub = &tb;
  }
  if (st == GL_OK && (!layout(M, N, dst->strides[nd - 2], dst->strides[nd - 1], &op, &ld) || op != CUBLAS_OP_N)) {
    st = temp_like(dev, dst, &tc, &sc);
    uc = &tc;
  }
  if (st == GL_OK) st = gemm(dev, s, uc, ua, ub);
  if (st == GL_OK && uc != dst) st = gl_cuda_copy(dst, uc);
  temp_free(dev, &sa);
  temp_free(dev, &sb);
  temp_free(dev, &sc);
  return st;
}
