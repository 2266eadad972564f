/*
** cuda_solver.c — gl_backend.linalg on the GPU: cuSOLVER's dense drivers (cusolverDn),
** the CUDA twin of cpu_lapack.c with the same contract (backend.h, gl_la_op).
**
** cuSOLVER is opened with dlopen at the first linalg call on a cuda array (linking it
** would cost every process start, and a CUDA build must run where the library is
** missing); only the entry points used are resolved, with their types taken from
** cusolverDn.h. One handle per device, made lazily, bound to the device's stream,
** destroyed by gl_cuda_solver_release at shutdown. Each driver is written once for the
** four element types (float, double, cuComplex, cuDoubleComplex: cuSOLVER's S, D, C, Z):
** the call's context carries the element type and its part type (the real outputs' and a
** complex element's halves), and each cuSOLVER routine is reached through a function
** (sv_getrf, ...) that calls its S, D, C or Z entry point. The general eigensolver is the
** 64-bit API's cusolverDnXgeev (cuSOLVER 11.7, CUDA 12.6, on), resolved apart: a library
** without it leaves eig to the ops layer, which computes it on the host. Beside them: the
** handle, scratch from the caching allocator, views over scratch for the backend's own
** copy, fill, where and reduce (transposes, triangles, diagonals, conjugates: no kernel of
** our own; checks on complex elements run on their real views), and the one read-back of
** the per-matrix info codes.
*/
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cusolverDn.h>
#include "cuda.h"

/* ---- cuSOLVER, loaded on first use ------------------------------------------------------ */

/* The legacy routines used, by field: X(field, S and D name, C and Z name), the complex
** twins named apart where cuSOLVER names them so (orgqr: ungqr, syevd: heevd). */
#define SV_ROUTINES(X)                                                                           \
  X(getrf_bufferSize, getrf_bufferSize, getrf_bufferSize) X(getrf, getrf, getrf)                 \
  X(getrs, getrs, getrs) X(potrf_bufferSize, potrf_bufferSize, potrf_bufferSize)                 \
  X(potrf, potrf, potrf) X(potrfBatched, potrfBatched, potrfBatched)                             \
  X(geqrf_bufferSize, geqrf_bufferSize, geqrf_bufferSize) X(geqrf, geqrf, geqrf)                 \
  X(orgqr_bufferSize, orgqr_bufferSize, ungqr_bufferSize) X(orgqr, orgqr, ungqr)                 \
  X(gesvd_bufferSize, gesvd_bufferSize, gesvd_bufferSize) X(gesvd, gesvd, gesvd)                 \
  X(gesvdjBatched_bufferSize, gesvdjBatched_bufferSize, gesvdjBatched_bufferSize)                \
  X(gesvdjBatched, gesvdjBatched, gesvdjBatched)                                                 \
  X(syevd_bufferSize, syevd_bufferSize, heevd_bufferSize) X(syevd, syevd, heevd)                 \
  X(syevjBatched_bufferSize, syevjBatched_bufferSize, heevjBatched_bufferSize)                   \
  X(syevjBatched, syevjBatched, heevjBatched)

#define SV_FIELD_S(f, rn, cn) __typeof__(cusolverDnS##rn) *f;
#define SV_FIELD_D(f, rn, cn) __typeof__(cusolverDnD##rn) *f;
#define SV_FIELD_C(f, rn, cn) __typeof__(cusolverDnC##cn) *f;
#define SV_FIELD_Z(f, rn, cn) __typeof__(cusolverDnZ##cn) *f;

typedef struct sv_sfns { SV_ROUTINES(SV_FIELD_S) } sv_sfns;
typedef struct sv_dfns { SV_ROUTINES(SV_FIELD_D) } sv_dfns;
typedef struct sv_cfns { SV_ROUTINES(SV_FIELD_C) } sv_cfns;
typedef struct sv_zfns { SV_ROUTINES(SV_FIELD_Z) } sv_zfns;

static struct {
  pthread_once_t once;
  bool ok;
  char why[256];
  __typeof__(cusolverDnCreate) *create;
  __typeof__(cusolverDnDestroy) *destroy;
  __typeof__(cusolverDnSetStream) *set_stream;
  __typeof__(cusolverDnCreateGesvdjInfo) *gesvdj_new;
  __typeof__(cusolverDnDestroyGesvdjInfo) *gesvdj_free;
  __typeof__(cusolverDnCreateSyevjInfo) *syevj_new;
  __typeof__(cusolverDnDestroySyevjInfo) *syevj_free;
  sv_sfns s;
  sv_dfns d;
  sv_cfns c;
  sv_zfns z;
  /* the general eigensolver and its parameter object (NULL: the library has no Xgeev) */
  __typeof__(cusolverDnCreateParams) *params_new;
  __typeof__(cusolverDnDestroyParams) *params_free;
  __typeof__(cusolverDnXgeev_bufferSize) *xgeev_bufferSize;
  __typeof__(cusolverDnXgeev) *xgeev;
} sv = { .once = PTHREAD_ONCE_INIT };

static cusolverDnHandle_t sv_handles[GL_CUDA_MAXDEV];

#define SV_ENTRY_S(f, rn, cn) { "cusolverDnS" #rn, &sv.s.f },
#define SV_ENTRY_D(f, rn, cn) { "cusolverDnD" #rn, &sv.d.f },
#define SV_ENTRY_C(f, rn, cn) { "cusolverDnC" #cn, &sv.c.f },
#define SV_ENTRY_Z(f, rn, cn) { "cusolverDnZ" #cn, &sv.z.f },
static const gl_cuda_entry sv_entries[] = {
  { "cusolverDnCreate", &sv.create }, { "cusolverDnDestroy", &sv.destroy },
  { "cusolverDnSetStream", &sv.set_stream },
  { "cusolverDnCreateGesvdjInfo", &sv.gesvdj_new }, { "cusolverDnDestroyGesvdjInfo", &sv.gesvdj_free },
  { "cusolverDnCreateSyevjInfo", &sv.syevj_new }, { "cusolverDnDestroySyevjInfo", &sv.syevj_free },
  SV_ROUTINES(SV_ENTRY_S) SV_ROUTINES(SV_ENTRY_D) SV_ROUTINES(SV_ENTRY_C) SV_ROUTINES(SV_ENTRY_Z)
};
static const gl_cuda_entry sv_geev_entries[] = {
  { "cusolverDnCreateParams", &sv.params_new }, { "cusolverDnDestroyParams", &sv.params_free },
  { "cusolverDnXgeev_bufferSize", &sv.xgeev_bufferSize }, { "cusolverDnXgeev", &sv.xgeev },
};

static void sv_load(void) {
  void *h = dlopen("libcusolver.so.12", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libcusolver.so", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    snprintf(sv.why, sizeof sv.why, "cannot load cuSOLVER (libcusolver.so.12, from the CUDA toolkit): %s",
             e ? e : "not found");
    return;
  }
  const char *missing = gl_cuda_syms(h, sv_entries, sizeof sv_entries / sizeof sv_entries[0]);
  if (missing != NULL) {
    snprintf(sv.why, sizeof sv.why, "cuSOLVER (libcusolver.so.12) lacks %s", missing);
    return;
  }
  if (gl_cuda_syms(h, sv_geev_entries, sizeof sv_geev_entries / sizeof sv_geev_entries[0]) != NULL)
    sv.xgeev = NULL;            /* before CUDA 12.6: eig on the host (linalg_lapack.c) */
  sv.ok = true;
}

static gl_status sv_check(cusolverStatus_t st, const char *what) {
  if (st == CUSOLVER_STATUS_SUCCESS) return GL_OK;
  return gl_fail(st == CUSOLVER_STATUS_ALLOC_FAILED ? GL_ENOMEM : GL_EDEVICE, "linalg: %s failed (cuSOLVER status %d)",
                 what, (int)st);
}

/* The device's handle (made on first use, on the device's stream). */
static gl_status sv_handle(gl_device dev, cudaStream_t s, cusolverDnHandle_t *out) {
  pthread_once(&sv.once, sv_load);
  if (!sv.ok) return gl_fail(GL_ENOTSUP, "%s", sv.why);
  gl_status st = GL_OK;
  pthread_mutex_lock(&gl_cuda_lock);
  if (sv_handles[dev.index] == NULL) {
    cusolverDnHandle_t h = NULL;
    st = sv_check(sv.create(&h), "cusolverDnCreate");
    if (st == GL_OK) {
      st = sv_check(sv.set_stream(h, s), "cusolverDnSetStream");
      if (st == GL_OK) sv_handles[dev.index] = h;
      else sv.destroy(h);
    }
  }
  *out = sv_handles[dev.index];
  pthread_mutex_unlock(&gl_cuda_lock);
  return st;
}

void gl_cuda_solver_release(int index) {
  if (index < 0 || index >= GL_CUDA_MAXDEV || sv_handles[index] == NULL) return;
  if (sv.destroy) sv.destroy(sv_handles[index]);
  sv_handles[index] = NULL;
}

/* ---- one call's context: handle, stream, scratch ------------------------------------------ */

#define SV_MAXSCRATCH 32

typedef struct sv_ctx {
  gl_device dev;
  cudaStream_t s;
  cusolverDnHandle_t h;
  gl_dtype dt;             /* the element type: float32, float64, complex64 or complex128 */
  gl_dtype part;           /* its part type: dt, or float32 / float64 for complex */
  size_t esz, psize;       /* their sizes */
  int parts;               /* parts an element has: 1, or 2 (re, im) */
  void *blk[SV_MAXSCRATCH];
  size_t blkn[SV_MAXSCRATCH];
  int nblk;
} sv_ctx;

/* n bytes of device scratch from the caching allocator, freed by sv_done (stream-ordered
** like every block of the pool, so freeing after the last queued use is safe). */
static gl_status sv_scratch(sv_ctx *c, size_t n, void **p) {
  if (c->nblk == SV_MAXSCRATCH) return gl_fail(GL_EINVAL, "linalg: internal: too many scratch blocks");
  if (n == 0) n = 1;
  n = (n + 255) & ~(size_t)255;
  GL_TRY(gl_workspace_alloc(c->dev, n, p));
  c->blk[c->nblk] = *p;
  c->blkn[c->nblk++] = n;
  return GL_OK;
}

static void sv_done(sv_ctx *c) {
  for (int i = 0; i < c->nblk; i++) gl_cuda_free(c->dev, c->blk[i], c->blkn[i]);
  c->nblk = 0;
}

/* A 3-D view (B, r, k) with element strides (sb, sr, sk) of dtype dt over device memory
** at p (wrapped in the caller's storage 'st'), for the backend's copy/fill/where/reduce. */
static void sv_view(gl_array *v, gl_storage *st, const sv_ctx *c, const void *p, gl_dtype dt, int64_t B,
                    int64_t r, int64_t k, int64_t sb, int64_t sr, int64_t sk) {
  memset(v, 0, sizeof *v);
  memset(st, 0, sizeof *st);
  int64_t last = 0;
  if (B > 0 && r > 0 && k > 0) last = (B - 1) * sb + (r - 1) * sr + (k - 1) * sk + 1;
  st->refcount = 1;
  st->data = (void *)(uintptr_t)p;
  st->nbytes = (size_t)last * gl_dtypes[dt].size;
  st->device = c->dev;
  v->storage = st;
  v->ndim = 3;
  v->dtype = (uint8_t)dt;
  v->shape[0] = B; v->shape[1] = r; v->shape[2] = k;
  v->strides[0] = sb; v->strides[1] = sr; v->strides[2] = sk;
  v->size = B * r * k;
}

/* dst view = src view (shape (B, r, k), each with its strides): transposes between C
** order and column-major, diagonals, sub-blocks. */
static gl_status sv_copy(sv_ctx *c, gl_dtype dt, int64_t B, int64_t r, int64_t k, void *d, const int64_t ds[3],
                         const void *s, const int64_t ss[3]) {
  if (B * r * k == 0) return GL_OK;
  gl_array vd, vs;
  gl_storage sd, sst;
  sv_view(&vd, &sd, c, d, dt, B, r, k, ds[0], ds[1], ds[2]);
  sv_view(&vs, &sst, c, s, dt, B, r, k, ss[0], ss[1], ss[2]);
  return gl_cuda_copy(&vd, &vs);
}

/* Every element of the view (B, r, k) with strides st at p = v. */
static gl_status sv_fill(sv_ctx *c, gl_dtype dt, int64_t B, int64_t r, int64_t k, void *p, const int64_t st[3],
                         double v) {
  if (B * r * k == 0) return GL_OK;
  gl_array vd;
  gl_storage sd;
  sv_view(&vd, &sd, c, p, dt, B, r, k, st[0], st[1], st[2]);
  return gl_cuda_fill(&vd, gl_scalar_float(v));
}

/* Contiguous d (B, n, n) = B identity matrices. */
static gl_status sv_eye(sv_ctx *c, gl_dtype dt, int64_t B, int64_t r, int64_t k, void *p) {
  const int64_t all[3] = { r * k, k, 1 }, diag[3] = { r * k, 0, k + 1 };
  GL_TRY(sv_fill(c, dt, B, r, k, p, all, 0));
  return sv_fill(c, dt, B, 1, r < k ? r : k, p, diag, 1);
}

/* A bool mask (r, k * parts) in device scratch: column j * parts + q (each part of
** element j) true on and above the diagonal (upper) or on and below it (lower), made on
** the host and copied once. */
static gl_status sv_trimask(sv_ctx *c, int64_t r, int64_t k, int parts, bool upper, void **out) {
  size_t n = (size_t)(r * k * parts);
  GL_TRY(sv_scratch(c, n, out));
  if (n == 0) return GL_OK;
  unsigned char *m = malloc(n);
  if (m == NULL) return gl_fail(GL_ENOMEM, "linalg: out of memory for a triangle mask");
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < k * parts; j++) m[i * k * parts + j] = (unsigned char)(upper ? j / parts >= i : j / parts <= i);
  gl_status st = gl_cuda_from_host(c->dev, *out, m, n);
  free(m);
  return st;
}

/* The contiguous (B, r, k) matrices of the call's element type at p, as real parts: a
** (B, r, k * parts) view of the part type, for the checks and fills that read or write each
** part alike. */
static void sv_parts_view(gl_array *v, gl_storage *st, const sv_ctx *c, const void *p, int64_t B, int64_t r,
                          int64_t k) {
  int64_t kp = k * c->parts;
  sv_view(v, st, c, p, c->part, B, r, kp, r * kp, kp, 1);
}

/* Zeroes the triangle of the contiguous (B, r, k) matrices at p that the kept triangle
** (upper: j >= i, else j <= i) leaves out: where(mask, x, 0). */
static gl_status sv_keep_tri(sv_ctx *c, int64_t B, int64_t r, int64_t k, void *p, bool upper) {
  if (B * r * k == 0) return GL_OK;
  void *mask;
  GL_TRY(sv_trimask(c, r, k, c->parts, upper, &mask));
  gl_array vx, vm;
  gl_storage sx, sm;
  int64_t kp = k * c->parts;
  sv_parts_view(&vx, &sx, c, p, B, r, k);
  sv_view(&vm, &sm, c, mask, GL_BOOL, B, r, kp, 0, kp, 1);
  gl_operand a = { &vx, gl_scalar_int(0) }, z = { NULL, gl_scalar_float(0) };
  return gl_cuda_where(&vx, &vm, a, z);
}

/* Conjugates the contiguous (B, r, k) matrices at p in place (nothing for a real type):
** their imaginary parts, a strided view of the part type, times -1. */
static gl_status sv_conj(sv_ctx *c, int64_t B, int64_t r, int64_t k, void *p) {
  if (c->parts == 1 || B * r * k == 0) return GL_OK;
  gl_array vi;
  gl_storage si;
  sv_view(&vi, &si, c, (char *)p + c->psize, c->part, B, r, k, 2 * r * k, 2 * k, 2);
  gl_operand a = { &vi, gl_scalar_int(0) }, m = { NULL, gl_scalar_float(-1) };
  return gl_cuda_binary(GL_B_mul, c->part, &vi, a, m);
}

/* flags[i] (bool, device) = red (all or any) of the predicate op over every part of matrix
** i of the contiguous (B, r, k) at p; with tri (0 none, 1 lower, 2 upper) only that
** triangle counts, the rest reading 'outside'. */
static gl_status sv_tri_flags(sv_ctx *c, int64_t B, int64_t r, int64_t k, const void *p, int tri, gl_unop op,
                              gl_redop red, bool outside, void *flags) {
  if (B == 0) return GL_OK;
  const int64_t one[3] = { 1, 0, 0 };
  if (r * k == 0) return sv_fill(c, GL_BOOL, B, 1, 1, flags, one, outside ? 1 : 0);
  int64_t kp = k * c->parts;
  void *fin;
  GL_TRY(sv_scratch(c, (size_t)(B * r * kp), &fin));
  gl_array vx, vf, vd;
  gl_storage sx, sf, sd;
  sv_parts_view(&vx, &sx, c, p, B, r, k);
  sv_view(&vf, &sf, c, fin, GL_BOOL, B, r, kp, r * kp, kp, 1);
  GL_TRY(gl_cuda_unary(op, &vf, &vx));
  if (tri) {
    void *mask;
    GL_TRY(sv_trimask(c, r, k, c->parts, tri == 2, &mask));
    gl_array vm;
    gl_storage sm;
    sv_view(&vm, &sm, c, mask, GL_BOOL, B, r, kp, 0, kp, 1);
    gl_operand a = { &vf, gl_scalar_int(0) }, t = { NULL, gl_scalar_bool(outside) };
    GL_TRY(gl_cuda_where(&vf, &vm, a, t));
  }
  sv_view(&vd, &sd, c, flags, GL_BOOL, B, 1, 1, 1, 1, 1);
  return gl_cuda_reduce(red, &vd, &vf, 0);
}

/* flags[i] = whether matrix i (or its triangle) is all finite. The iterative drivers then
** refuse a matrix that is not, as the CPU's do ("did not converge"), so both devices
** raise the same LinAlgError. */
static gl_status sv_finite(sv_ctx *c, int64_t B, int64_t r, int64_t k, const void *p, int tri, void *flags) {
  return sv_tri_flags(c, B, r, k, p, tri, GL_U_isfinite, GL_R_ALL, true, flags);
}

/* flags[i] = whether matrix i (or its triangle) holds a NaN. */
static gl_status sv_has_nan(sv_ctx *c, int64_t B, int64_t r, int64_t k, const void *p, int tri, void *flags) {
  return sv_tri_flags(c, B, r, k, p, tri, GL_U_isnan, GL_R_ANY, false, flags);
}

/* The matrices i of the contiguous (B, r, k) at p with flags[i] become NaN in every part,
** and their int32 info codes 0: a NaN input's answer, not a failure. */
static gl_status sv_nan_where(sv_ctx *c, int64_t B, int64_t r, int64_t k, void *p, const void *flags, int *info) {
  if (B == 0) return GL_OK;
  gl_array vx, vf, vi, vfi;
  gl_storage sx, sf, si, sfi;
  int64_t kp = k * c->parts;
  sv_view(&vf, &sf, c, flags, GL_BOOL, B, r, kp, 1, 0, 0);
  if (r * k > 0) {
    sv_parts_view(&vx, &sx, c, p, B, r, k);
    gl_operand nan = { NULL, gl_scalar_float((double)NAN) }, x = { &vx, gl_scalar_int(0) };
    GL_TRY(gl_cuda_where(&vx, &vf, nan, x));
  }
  sv_view(&vi, &si, c, info, GL_INT32, B, 1, 1, 1, 1, 1);
  sv_view(&vfi, &sfi, c, flags, GL_BOOL, B, 1, 1, 1, 1, 1);
  gl_operand zero = { NULL, gl_scalar_int(0) }, in = { &vi, gl_scalar_int(0) };
  return gl_cuda_where(&vi, &vfi, zero, in);
}

/* The status block: B int32 info codes then (when fin) B bool finiteness flags, in one
** scratch block so that sv_first_bad reads them back with one device-to-host copy. */
typedef struct sv_status {
  int *info;
  unsigned char *fin;      /* NULL: no finiteness check */
  int64_t B;
} sv_status;

static gl_status sv_status_new(sv_ctx *c, int64_t B, bool fin, sv_status *out) {
  void *p;
  size_t ni = sizeof(int) * (size_t)(B > 0 ? B : 1);
  GL_TRY(sv_scratch(c, ni + (size_t)B, &p));
  out->info = p;
  out->fin = fin ? (unsigned char *)p + ni : NULL;
  out->B = B;
  GL_TRY(gl_cuda_check(c->dev.index, cudaMemsetAsync(p, 0, ni, c->s), "linalg: info"));
  if (fin && B > 0) GL_TRY(gl_cuda_check(c->dev.index, cudaMemsetAsync(out->fin, 1, (size_t)B, c->s), "linalg: info"));
  return GL_OK;
}

/* *bad = the first matrix whose info is not 0 or (with flags) that is not finite, else -1;
** one copy back for the whole batch (the only synchronisation of most drivers). */
static gl_status sv_first_bad(sv_ctx *c, const sv_status *x, int64_t *bad) {
  *bad = -1;
  if (x->B == 0) return GL_OK;
  size_t ni = sizeof(int) * (size_t)x->B, n = ni + (x->fin ? (size_t)x->B : 0);
  unsigned char *h = malloc(n);
  if (h == NULL) return gl_fail(GL_ENOMEM, "linalg: out of memory for the info codes");
  gl_status st = gl_cuda_to_host(h, c->dev, x->info, n);
  if (st == GL_OK) {
    for (int64_t i = 0; i < x->B; i++) {
      int v;
      memcpy(&v, h + sizeof(int) * (size_t)i, sizeof v);
      if (v != 0 || (x->fin && h[ni + (size_t)i] == 0)) { *bad = i; break; }
    }
  }
  free(h);
  return st;
}

/* Leading-axis product: how many matrices an operand holds. */
static int64_t sv_batch(const gl_array *a) {
  int64_t b = 1;
  for (int d = 0; d < a->ndim - 2; d++) b *= a->shape[d];
  return b;
}

/* Device pointer of a contiguous array's first element. */
static void *sv_data(const gl_array *a) { return a ? gl_array_data(a) : NULL; }

/* cudaMemcpyAsync device to device on the call's stream. */
static gl_status sv_d2d(sv_ctx *c, void *d, const void *s, size_t n) {
  if (n == 0) return GL_OK;
  return gl_cuda_check(c->dev.index, cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, c->s), "linalg: copy");
}

/* Matrices of at most this order go to the batched Jacobi drivers (gesvdjBatched,
** syevjBatched: cuSOLVER's limit is 32) when there are several. */
#define SV_JACOBI_MAX 32

/* ---- cuSOLVER's routines for the call's element type ------------------------------------------ */

/* Each runs the S, D, C or Z routine (c->dt) on the call's handle and names the routine in
** the error of a failed status. Every 'void *' is the type's element pointer on the device
** (float *, ..., cuDoubleComplex *), or its part type's where the routine takes reals (the
** singular values, Hermitian eigenvalues, gesvd's rwork). SV_CALL(ctx, f, args) is
** the status of routine f of ctx's type: the same arguments fit all four, whose pointer
** parameters differ only in the element type. */
#define SV_CALL(ctx, f, ...)                                                                       \
  ((ctx)->dt == GL_FLOAT32 ? sv.s.f(__VA_ARGS__) : (ctx)->dt == GL_FLOAT64 ? sv.d.f(__VA_ARGS__)  \
   : (ctx)->dt == GL_COMPLEX64 ? sv.c.f(__VA_ARGS__) : sv.z.f(__VA_ARGS__))

static gl_status sv_getrf_bufferSize(const sv_ctx *c, int m, int n, void *A, int lda, int *lwork) {
  return sv_check(SV_CALL(c, getrf_bufferSize, c->h, m, n, A, lda, lwork), "getrf_bufferSize");
}

static gl_status sv_getrf(const sv_ctx *c, int m, int n, void *A, int lda, void *work, int *ipiv, int *info) {
  return sv_check(SV_CALL(c, getrf, c->h, m, n, A, lda, work, ipiv, info), "getrf");
}

static gl_status sv_getrs(const sv_ctx *c, cublasOperation_t op, int n, int nrhs, const void *A, int lda,
                          const int *ipiv, void *B, int ldb, int *info) {
  return sv_check(SV_CALL(c, getrs, c->h, op, n, nrhs, A, lda, ipiv, B, ldb, info), "getrs");
}

static gl_status sv_potrf_bufferSize(const sv_ctx *c, cublasFillMode_t uplo, int n, void *A, int lda, int *lwork) {
  return sv_check(SV_CALL(c, potrf_bufferSize, c->h, uplo, n, A, lda, lwork), "potrf_bufferSize");
}

static gl_status sv_potrf(const sv_ctx *c, cublasFillMode_t uplo, int n, void *A, int lda, void *work, int lwork,
                          int *info) {
  return sv_check(SV_CALL(c, potrf, c->h, uplo, n, A, lda, work, lwork, info), "potrf");
}

/* A: a device array of 'batch' device pointers to the matrices (its element pointer type
** is the routine's own, hence the casts). */
static gl_status sv_potrfBatched(const sv_ctx *c, cublasFillMode_t uplo, int n, void **A, int lda, int *info,
                                 int batch) {
  cusolverStatus_t st;
  switch (c->dt) {
    case GL_FLOAT32: st = sv.s.potrfBatched(c->h, uplo, n, (float **)A, lda, info, batch); break;
    case GL_FLOAT64: st = sv.d.potrfBatched(c->h, uplo, n, (double **)A, lda, info, batch); break;
    case GL_COMPLEX64: st = sv.c.potrfBatched(c->h, uplo, n, (cuComplex **)A, lda, info, batch); break;
    default: st = sv.z.potrfBatched(c->h, uplo, n, (cuDoubleComplex **)A, lda, info, batch); break;
  }
  return sv_check(st, "potrfBatched");
}

static gl_status sv_geqrf_bufferSize(const sv_ctx *c, int m, int n, void *A, int lda, int *lwork) {
  return sv_check(SV_CALL(c, geqrf_bufferSize, c->h, m, n, A, lda, lwork), "geqrf_bufferSize");
}

static gl_status sv_geqrf(const sv_ctx *c, int m, int n, void *A, int lda, void *tau, void *work, int lwork,
                          int *info) {
  return sv_check(SV_CALL(c, geqrf, c->h, m, n, A, lda, tau, work, lwork, info), "geqrf");
}

static gl_status sv_orgqr_bufferSize(const sv_ctx *c, int m, int n, int k, const void *A, int lda,
                                     const void *tau, int *lwork) {
  return sv_check(SV_CALL(c, orgqr_bufferSize, c->h, m, n, k, A, lda, tau, lwork), "orgqr_bufferSize");
}

static gl_status sv_orgqr(const sv_ctx *c, int m, int n, int k, void *A, int lda, const void *tau, void *work,
                          int lwork, int *info) {
  return sv_check(SV_CALL(c, orgqr, c->h, m, n, k, A, lda, tau, work, lwork, info), "orgqr");
}

static gl_status sv_gesvd_bufferSize(const sv_ctx *c, int m, int n, int *lwork) {
  return sv_check(SV_CALL(c, gesvd_bufferSize, c->h, m, n, lwork), "gesvd_bufferSize");
}

static gl_status sv_gesvd(const sv_ctx *c, signed char jobu, signed char jobvt, int m, int n, void *A, int lda,
                          void *S, void *U, int ldu, void *VT, int ldvt, void *work, int lwork, void *rwork,
                          int *info) {
  return sv_check(SV_CALL(c, gesvd, c->h, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, work, lwork, rwork, info),
                  "gesvd");
}

static gl_status sv_gesvdjBatched_bufferSize(const sv_ctx *c, cusolverEigMode_t jobz, int m, int n, const void *A,
                                             int lda, const void *S, const void *U, int ldu, const void *V, int ldv,
                                             int *lwork, gesvdjInfo_t params, int batch) {
  return sv_check(SV_CALL(c, gesvdjBatched_bufferSize, c->h, jobz, m, n, A, lda, S, U, ldu, V, ldv, lwork, params,
                          batch), "gesvdjBatched_bufferSize");
}

static gl_status sv_gesvdjBatched(const sv_ctx *c, cusolverEigMode_t jobz, int m, int n, void *A, int lda, void *S,
                                  void *U, int ldu, void *V, int ldv, void *work, int lwork, int *info,
                                  gesvdjInfo_t params, int batch) {
  return sv_check(SV_CALL(c, gesvdjBatched, c->h, jobz, m, n, A, lda, S, U, ldu, V, ldv, work, lwork, info, params,
                          batch), "gesvdjBatched");
}

static gl_status sv_syevd_bufferSize(const sv_ctx *c, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n,
                                     const void *A, int lda, const void *W, int *lwork) {
  return sv_check(SV_CALL(c, syevd_bufferSize, c->h, jobz, uplo, n, A, lda, W, lwork), "syevd_bufferSize");
}

static gl_status sv_syevd(const sv_ctx *c, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, void *A, int lda,
                          void *W, void *work, int lwork, int *info) {
  return sv_check(SV_CALL(c, syevd, c->h, jobz, uplo, n, A, lda, W, work, lwork, info), "syevd");
}

static gl_status sv_syevjBatched_bufferSize(const sv_ctx *c, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n,
                                            const void *A, int lda, const void *W, int *lwork, syevjInfo_t params,
                                            int batch) {
  return sv_check(SV_CALL(c, syevjBatched_bufferSize, c->h, jobz, uplo, n, A, lda, W, lwork, params, batch),
                  "syevjBatched_bufferSize");
}

static gl_status sv_syevjBatched(const sv_ctx *c, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, void *A,
                                 int lda, void *W, void *work, int lwork, int *info, syevjInfo_t params, int batch) {
  return sv_check(SV_CALL(c, syevjBatched, c->h, jobz, uplo, n, A, lda, W, work, lwork, info, params, batch),
                  "syevjBatched");
}

/* ---- elements ------------------------------------------------------------------------------ */

/* Element i of the device or host buffer p, and part i of a buffer of parts. */
static void *sv_at(const sv_ctx *c, const void *p, int64_t i) {
  return (char *)(uintptr_t)p + i * (int64_t)c->esz;
}
static void *sv_pat(const sv_ctx *c, const void *p, int64_t i) {
  return (char *)(uintptr_t)p + i * (int64_t)c->psize;
}

/* n elements, and n parts, of device scratch. */
static gl_status sv_elems(sv_ctx *c, int64_t n, void **p) { return sv_scratch(c, c->esz * (size_t)n, p); }
static gl_status sv_parts(sv_ctx *c, int64_t n, void **p) { return sv_scratch(c, c->psize * (size_t)n, p); }

static bool sv_single(const sv_ctx *c) { return c->part == GL_FLOAT32; }

/* The value of part i of a host buffer, and a new one (rounded to the part type). */
static double sv_host_get(const sv_ctx *c, const void *p, int64_t i) {
  return sv_single(c) ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static void sv_host_set(const sv_ctx *c, void *p, int64_t i, double v) {
  if (sv_single(c)) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

/* v rounded to the part type: a float operation made in double and rounded so gives the
** float's own answer. */
static double sv_round(const sv_ctx *c, double v) { return sv_single(c) ? (double)(float)v : v; }

/* ---- the drivers ---------------------------------------------------------------------------- */
/* C order and cuSOLVER's column-major: a C-order m x n matrix read column-major with
** leading dimension n is its transpose (n x m), as in cpu_lapack.c; each driver says how
** it uses that. Transposes that cannot be avoided are the backend's strided copies
** (gl_cuda_copy over sv_view's views). Batches: the Jacobi batched drivers for small
** matrices (SV_JACOBI_MAX), potrfBatched, else one call per matrix, each writing its own
** info code; the codes are read back once per call (sv_first_bad). */

/* For each of the B n x n matrices of a (C order, so cuSOLVER reads a^T): getrf into
** scratch, then getrs with op on that matrix's n x k right-hand sides in rhs (column-major,
** ld n, one block after another), which become the solutions; getrf's info codes go to
** st. One pivot vector and one workspace serve the whole batch: the stream orders the
** calls. */
static gl_status sv_lu_solve(sv_ctx *c, const gl_array *a, int64_t B, int n, int k, cublasOperation_t op,
                             void *rhs, sv_status *st) {
  int64_t an = (int64_t)n * n, bn = (int64_t)n * k;
  int lwork = 0, *ipiv, *info2;
  void *lu, *work;
  GL_TRY(sv_elems(c, B * an, &lu));
  GL_TRY(sv_scratch(c, sizeof(int) * (size_t)(n + 1), (void **)&ipiv));
  info2 = ipiv + n;
  GL_TRY(sv_getrf_bufferSize(c, n, n, lu, n, &lwork));
  GL_TRY(sv_elems(c, lwork > 0 ? lwork : 1, &work));
  GL_TRY(sv_d2d(c, lu, sv_data(a), c->esz * (size_t)(B * an)));
  for (int64_t i = 0; i < B; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_getrf(c, n, n, sv_at(c, lu, i * an), n, work, ipiv, st->info + i));
    if (k > 0) GL_TRY(sv_getrs(c, op, n, k, sv_at(c, lu, i * an), n, ipiv, sv_at(c, rhs, i * bn), n, info2));
  }
  return GL_OK;
}

/* ---- SOLVE: getrf of a as is (cuSOLVER factors a^T), getrs with OP_T solves
** (a^T)^T x = a x = b; b goes in and x comes out through a column-major scratch. */
static gl_status sv_solve(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1];
  int n = (int)a->shape[a->ndim - 1], k = (int)b->shape[b->ndim - 1];
  int64_t B = sv_batch(a), bn = (int64_t)n * k;
  if (B == 0 || n == 0) return GL_OK;
  void *rhs;
  sv_status st;
  GL_TRY(sv_elems(c, B * bn, &rhs));
  GL_TRY(sv_status_new(c, B, false, &st));
  const int64_t cmaj[3] = { bn, 1, n }, rmaj[3] = { bn, k, 1 };
  GL_TRY(sv_copy(c, c->dt, B, n, k, rhs, cmaj, sv_data(b), rmaj));
  GL_TRY(sv_lu_solve(c, a, B, n, k, CUBLAS_OP_T, rhs, &st));
  GL_TRY(sv_copy(c, c->dt, B, n, k, sv_data(g->out[0]), rmaj, rhs, cmaj));
  return sv_first_bad(c, &st, bad);
}

/* ---- INV: cuSOLVER has no getri: getrf of a as is (a^T), then getrs with OP_N solves
** a^T Y = I into the output, which read in C order is Y^T = a^-1. */
static gl_status sv_inv(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  int n = (int)a->shape[a->ndim - 1];
  int64_t B = sv_batch(a);
  if (B == 0 || n == 0) return GL_OK;
  void *X = sv_data(g->out[0]);
  sv_status st;
  GL_TRY(sv_status_new(c, B, false, &st));
  GL_TRY(sv_eye(c, c->dt, B, n, n, X));
  GL_TRY(sv_lu_solve(c, a, B, n, n, CUBLAS_OP_N, X, &st));
  return sv_first_bad(c, &st, bad);
}

/* ---- SLOGDET: det(a^T) = det(a), so getrf of a as is; the info codes, pivots and U's
** diagonals come back in one copy and the sign (complex: the product of d / |d|) and
** log|det| (real) are made on the host as the CPU makes them (the log summed in the type;
** a zero pivot: sign 0, -inf), then copied to the outputs. */
static gl_status sv_slogdet(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  int n = (int)a->shape[a->ndim - 1], lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)n * n;
  void *S = sv_data(g->out[0]), *Lg = sv_data(g->out[1]);
  (void)bad;
  if (B == 0) return GL_OK;
  const int64_t flat[3] = { 1, 0, 0 };
  if (n == 0) {
    GL_TRY(sv_fill(c, c->dt, B, 1, 1, S, flat, 1));
    return sv_fill(c, c->part, B, 1, 1, Lg, flat, 0);
  }
  size_t oi = sizeof(int) * (size_t)B, od = (oi + sizeof(int) * (size_t)(B * n) + 15) & ~(size_t)15;
  size_t total = od + c->esz * (size_t)(B * n);
  char *blk;
  void *lu, *work;
  GL_TRY(sv_scratch(c, total, (void **)&blk));
  GL_TRY(sv_elems(c, B * an, &lu));
  GL_TRY(sv_getrf_bufferSize(c, n, n, lu, n, &lwork));
  GL_TRY(sv_elems(c, lwork > 0 ? lwork : 1, &work));
  GL_TRY(sv_d2d(c, lu, sv_data(a), c->esz * (size_t)(B * an)));
  int *info = (int *)(void *)blk, *ipiv = (int *)(void *)(blk + oi);
  for (int64_t i = 0; i < B; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_getrf(c, n, n, sv_at(c, lu, i * an), n, work, ipiv + i * n, info + i));
  }
  const int64_t dd[3] = { n, 0, 1 }, ds[3] = { an, 0, n + 1 };
  GL_TRY(sv_copy(c, c->dt, B, 1, n, blk + od, dd, lu, ds));
  char *h = malloc(total + (c->esz + c->psize) * (size_t)B);
  if (h == NULL) return gl_fail(GL_ENOMEM, "slogdet: out of memory for the pivots");
  gl_status rc = gl_cuda_to_host(h, c->dev, blk, total);
  void *hs = h + total, *hl = sv_at(c, hs, B);
  for (int64_t i = 0; rc == GL_OK && i < B; i++) {
    int inf, p;
    memcpy(&inf, h + sizeof(int) * (size_t)i, sizeof inf);
    double sr = 1, si = 0, logabs = 0;
    if (inf > 0) { sr = 0; logabs = -INFINITY; }
    else {
      for (int j = 0; j < n; j++) {
        memcpy(&p, h + oi + sizeof(int) * (size_t)(i * n + j), sizeof p);
        int64_t e = (i * n + j) * c->parts;
        double dr = sv_host_get(c, h + od, e), di = c->parts == 2 ? sv_host_get(c, h + od, e + 1) : 0;
        double mag = hypot(dr, di);
        if (p != j + 1) { sr = -sr; si = -si; }
        if (c->parts == 2) {         /* sign *= d / |d|, each step rounded to the part type */
          double ur = sv_round(c, dr / mag), ui = sv_round(c, di / mag);
          double nr = sv_round(c, sr * ur - si * ui);
          si = sv_round(c, sr * ui + si * ur);
          sr = nr;
        } else if (dr < 0) sr = -sr;
        logabs = sv_round(c, logabs + sv_round(c, log(sv_round(c, mag))));
      }
    }
    sv_host_set(c, hs, i * c->parts, sr);
    if (c->parts == 2) sv_host_set(c, hs, i * 2 + 1, si);
    sv_host_set(c, hl, i, logabs);
  }
  if (rc == GL_OK) rc = gl_cuda_from_host(c->dev, S, hs, c->esz * (size_t)B);
  if (rc == GL_OK) rc = gl_cuda_from_host(c->dev, Lg, hl, c->psize * (size_t)B);
  free(h);
  return rc;     /* a singular matrix is an answer here (sign 0), not a failure */
}

/* ---- CHOLESKY: a in C order is a^T column-major, so its lower triangle is cuSOLVER's
** upper: potrf(UPPER) gives U with a^T = U^H U, which read in C order is L in the lower
** triangle with a = L L^H (for a Hermitian a, a^T = conj(a): see cpu_lapack.c); LOWER
** gives the upper factor the same way. Factored in the output; the
** other triangle, still the input's, is zeroed. Several matrices: potrfBatched, which
** takes an array of device pointers and one info code per matrix. A NaN in the triangle
** read gives a factor of NaN, as on the cpu, whatever potrf made of it. */
static gl_status sv_cholesky(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  int n = (int)a->shape[a->ndim - 1], lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)n * n;
  void *L = sv_data(g->out[0]);
  bool upper = (g->flags & GL_LA_UPPER) != 0;
  cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  if (B == 0 || n == 0) return GL_OK;
  if (B > INT_MAX) return gl_fail(GL_ETOOBIG, "cholesky: a batch of more than 2^31 - 1 matrices");
  sv_status st;
  void *nan;
  GL_TRY(sv_status_new(c, B, false, &st));
  GL_TRY(sv_scratch(c, (size_t)B, &nan));
  GL_TRY(sv_has_nan(c, B, n, n, sv_data(a), upper ? 2 : 1, nan));
  GL_TRY(sv_d2d(c, L, sv_data(a), c->esz * (size_t)(B * an)));
  if (B == 1) {
    void *work;
    GL_TRY(sv_potrf_bufferSize(c, uplo, n, L, n, &lwork));
    GL_TRY(sv_elems(c, lwork > 0 ? lwork : 1, &work));
    GL_TRY(sv_potrf(c, uplo, n, L, n, work, lwork, st.info));
  } else {
    void **hp = malloc(sizeof(void *) * (size_t)B), **dp;
    if (hp == NULL) return gl_fail(GL_ENOMEM, "cholesky: out of memory for the batch's pointers");
    for (int64_t i = 0; i < B; i++) hp[i] = sv_at(c, L, i * an);
    gl_status rc = sv_scratch(c, sizeof(void *) * (size_t)B, (void **)&dp);
    if (rc == GL_OK) rc = gl_cuda_from_host(c->dev, dp, hp, sizeof(void *) * (size_t)B);
    free(hp);
    GL_TRY(rc);
    GL_TRY(sv_potrfBatched(c, uplo, n, dp, n, st.info, (int)B));
  }
  GL_TRY(sv_nan_where(c, B, n, n, L, nan, st.info));
  GL_TRY(sv_keep_tri(c, B, n, n, L, upper));
  return sv_first_bad(c, &st, bad);
}

/* ---- QR: geqrf on a column-major copy (ld m, max(n, kq) columns); R is the upper
** triangle of its first kq rows, read back to C order; Q from orgqr (ungqr) over kq columns. The
** columns past a's (mode "complete", m > n) start as the identity's, as LAPACK's orgqr
** makes them, whatever cuSOLVER does with them. */
static gl_status sv_qr(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *q = g->out[0], *r = g->out[1];
  int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = m < n ? m : n;
  int kq = (int)r->shape[r->ndim - 2], cols = n > kq ? n : kq, lw1 = 0, lw2 = 0;
  int64_t B = sv_batch(a), mc = (int64_t)m * cols;
  if (B == 0) return GL_OK;
  void *cm, *tau, *work;
  int *info2;
  sv_status st;
  GL_TRY(sv_elems(c, B * mc, &cm));
  GL_TRY(sv_elems(c, B * (k > 0 ? k : 1), &tau));
  GL_TRY(sv_scratch(c, sizeof(int), (void **)&info2));
  GL_TRY(sv_status_new(c, B, false, &st));
  if (mc > 0) GL_TRY(gl_cuda_check(c->dev.index, cudaMemsetAsync(cm, 0, c->esz * (size_t)(B * mc), c->s), "qr: scratch"));
  const int64_t cmaj[3] = { mc, 1, m }, rmaj[3] = { (int64_t)m * n, n, 1 };
  GL_TRY(sv_copy(c, c->dt, B, m, n, cm, cmaj, sv_data(a), rmaj));
  if (cols > n) {
    const int64_t diag[3] = { mc, 0, m + 1 };
    GL_TRY(sv_fill(c, c->dt, B, 1, cols - n, sv_at(c, cm, (int64_t)n * m + n), diag, 1));
  }
  if (m > 0 && n > 0) GL_TRY(sv_geqrf_bufferSize(c, m, n, cm, m, &lw1));
  if (q && m > 0 && kq > 0 && k > 0) GL_TRY(sv_orgqr_bufferSize(c, m, kq, k, cm, m, tau, &lw2));
  int lwork = lw1 > lw2 ? lw1 : lw2;
  GL_TRY(sv_elems(c, lwork > 0 ? lwork : 1, &work));
  for (int64_t i = 0; i < B && m > 0 && n > 0; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_geqrf(c, m, n, sv_at(c, cm, i * mc), m, sv_at(c, tau, i * k), work, lwork, st.info + i));
  }
  const int64_t rout[3] = { (int64_t)kq * n, n, 1 };
  GL_TRY(sv_copy(c, c->dt, B, kq, n, sv_data(r), rout, cm, cmaj));
  GL_TRY(sv_keep_tri(c, B, kq, n, sv_data(r), true));
  if (q) {
    for (int64_t i = 0; i < B && m > 0 && kq > 0 && k > 0; i++) {
      GL_TRY(gl_interrupt_check());
      GL_TRY(sv_orgqr(c, m, kq, k, sv_at(c, cm, i * mc), m, sv_at(c, tau, i * k), work, lwork, info2));
    }
    const int64_t qout[3] = { (int64_t)m * kq, kq, 1 };
    GL_TRY(sv_copy(c, c->dt, B, m, kq, sv_data(q), qout, cm, cmaj));
  }
  return sv_first_bad(c, &st, bad);
}

/* SVD of B small matrices (order <= SV_JACOBI_MAX) with gesvdjBatched on a as is (X = a^T,
** n x m, = U_x S V_x^H, so a = conj(V_x) S U_x^T: u is V_x read back to C order and
** conjugated, vh the first kv columns of U_x as they lie); it always makes the full U_x,
** V_x. X: the batch's copy. */
static gl_status sv_svd_jacobi(sv_ctx *c, const gl_la_args *g, void *X, sv_status *st) {
  const gl_array *a = g->in[0], *u = g->out[0], *vh = g->out[2];
  int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], lwork = 0;
  int ku = u ? (int)u->shape[u->ndim - 1] : 0, kv = vh ? (int)vh->shape[vh->ndim - 2] : 0;
  int64_t B = sv_batch(a);
  void *S = sv_data(g->out[1]), *Ux, *Vx, *work;
  GL_TRY(sv_elems(c, B * n * n, &Ux));
  GL_TRY(sv_elems(c, B * m * m, &Vx));
  GL_TRY(sv_d2d(c, X, sv_data(a), c->esz * (size_t)(B * m * n)));
  cusolverEigMode_t jobz = u ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  gesvdjInfo_t params = NULL;
  GL_TRY(sv_check(sv.gesvdj_new(&params), "cusolverDnCreateGesvdjInfo"));
  gl_status rc = sv_gesvdjBatched_bufferSize(c, jobz, n, m, X, n, S, Ux, n, Vx, m, &lwork, params, (int)B);
  if (rc == GL_OK) rc = sv_elems(c, lwork > 0 ? lwork : 1, &work);
  if (rc == GL_OK) rc = sv_gesvdjBatched(c, jobz, n, m, X, n, S, Ux, n, Vx, m, work, lwork, st->info, params, (int)B);
  sv.gesvdj_free(params);
  GL_TRY(rc);
  if (u) {
    const int64_t uo[3] = { (int64_t)m * ku, ku, 1 }, ui[3] = { (int64_t)m * m, 1, m };
    const int64_t vo[3] = { (int64_t)kv * n, n, 1 }, vi[3] = { (int64_t)n * n, n, 1 };
    GL_TRY(sv_copy(c, c->dt, B, m, ku, sv_data(u), uo, Vx, ui));
    GL_TRY(sv_conj(c, B, m, ku, sv_data(u)));
    GL_TRY(sv_copy(c, c->dt, B, kv, n, sv_data(vh), vo, Ux, vi));
  }
  return GL_OK;
}

/* SVD with gesvd, one call per matrix, which wants rows >= columns: for n >= m on a as is
** (X = a^T), where its U_x (n x kv) read in C order is vh and its VT_x (m x m) read in C
** order is u, both written in place; for m > n on a column-major copy (X = a), U_x and
** VT_x then read back to C order (plain transposes, for complex too: VT_x is V_x^H). X: the
** batch's copy. */
static gl_status sv_svd_gesvd(sv_ctx *c, const gl_la_args *g, void *X, sv_status *st) {
  const gl_array *a = g->in[0], *u = g->out[0], *vh = g->out[2];
  int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = m < n ? m : n, lwork = 0;
  int ku = u ? (int)u->shape[u->ndim - 1] : 0, kv = vh ? (int)vh->shape[vh->ndim - 2] : 0;
  bool vec = u != NULL, full = (g->flags & GL_LA_FULL) != 0;
  int64_t B = sv_batch(a), an = (int64_t)m * n;
  void *A = sv_data(a), *U = sv_data(u), *S = sv_data(g->out[1]), *V = sv_data(vh), *work, *rwork, *dummy;
  GL_TRY(sv_parts(c, k, &rwork));
  GL_TRY(sv_elems(c, 1, &dummy));
  signed char jobu = (signed char)(vec ? (full ? 'A' : 'S') : 'N'), jobvt = (signed char)(vec ? 'A' : 'N');
  bool wide = n >= m;        /* gesvd on a as is */
  int rows = wide ? n : m, cols = wide ? m : n;
  void *Ux = dummy, *VTx = dummy;
  if (wide) GL_TRY(sv_d2d(c, X, A, c->esz * (size_t)(B * an)));
  else {
    const int64_t cmaj[3] = { an, 1, m }, rmaj[3] = { an, n, 1 };
    if (vec) {
      GL_TRY(sv_elems(c, B * m * ku, &Ux));
      GL_TRY(sv_elems(c, B * n * n, &VTx));
    }
    GL_TRY(sv_copy(c, c->dt, B, m, n, X, cmaj, A, rmaj));
  }
  GL_TRY(sv_gesvd_bufferSize(c, rows, cols, &lwork));
  GL_TRY(sv_elems(c, lwork > 0 ? lwork : 1, &work));
  for (int64_t i = 0; i < B; i++) {
    GL_TRY(gl_interrupt_check());
    /* the left and right factors gesvd writes, with their leading dimensions */
    void *lf = !vec ? dummy : wide ? sv_at(c, V, i * kv * n) : sv_at(c, Ux, i * m * ku);
    void *rf = !vec ? dummy : wide ? sv_at(c, U, i * m * ku) : sv_at(c, VTx, i * n * n);
    GL_TRY(sv_gesvd(c, jobu, jobvt, rows, cols, sv_at(c, X, i * an), rows, sv_pat(c, S, i * k), lf, rows, rf, cols,
                    work, lwork, rwork, st->info + i));
  }
  if (vec && !wide) {
    const int64_t uo[3] = { (int64_t)m * ku, ku, 1 }, ui[3] = { (int64_t)m * ku, 1, m };
    const int64_t vo[3] = { (int64_t)n * n, n, 1 }, vi[3] = { (int64_t)n * n, 1, n };
    GL_TRY(sv_copy(c, c->dt, B, m, ku, U, uo, Ux, ui));
    GL_TRY(sv_copy(c, c->dt, B, n, n, V, vo, VTx, vi));
  }
  return GL_OK;
}

/* ---- SVD: several matrices of order <= 32 with the batched Jacobi driver, else gesvd per
** matrix (above). A matrix with an infinity or NaN fails as the CPU's does. */
static gl_status sv_svd(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *u = g->out[0], *vh = g->out[2];
  int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = m < n ? m : n;
  int ku = u ? (int)u->shape[u->ndim - 1] : 0, kv = vh ? (int)vh->shape[vh->ndim - 2] : 0;
  int64_t B = sv_batch(a);
  if (B == 0) return GL_OK;
  if (k == 0) {      /* nothing to factor: the full factors are identities */
    if (u) GL_TRY(sv_eye(c, c->dt, B, m, ku, sv_data(u)));
    if (u) GL_TRY(sv_eye(c, c->dt, B, kv, n, sv_data(vh)));
    return GL_OK;
  }
  sv_status st;
  void *X;
  GL_TRY(sv_status_new(c, B, true, &st));
  GL_TRY(sv_finite(c, B, m, n, sv_data(a), 0, st.fin));
  GL_TRY(sv_elems(c, B * m * n, &X));
  if (B > 1 && B <= INT_MAX && m <= SV_JACOBI_MAX && n <= SV_JACOBI_MAX) GL_TRY(sv_svd_jacobi(c, g, X, &st));
  else GL_TRY(sv_svd_gesvd(c, g, X, &st));
  return sv_first_bad(c, &st, bad);
}

/* ---- EIGH: a as is is a^T (for a Hermitian a: conj(a)), so the lower triangle of a is
** cuSOLVER's upper. Several matrices of order <= 32: syevjBatched (heevjBatched); else
** syevd (heevd) per matrix. Eigenvalues (real) come out ascending into w as they are; the
** eigenvectors, columns of a column-major matrix, are read back to C order and conjugated
** (those of conj(a) are the conjugates of a's). A read triangle with an infinity or NaN
** fails as on the CPU. */
static gl_status sv_eigh(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *v = g->out[1];
  int n = (int)a->shape[a->ndim - 1], lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)n * n;
  bool upper = (g->flags & GL_LA_UPPER) != 0;
  cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  cusolverEigMode_t jobz = v ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  void *A = sv_data(a), *W = sv_data(g->out[0]), *cm, *work;
  if (B == 0 || n == 0) return GL_OK;
  sv_status st;
  GL_TRY(sv_status_new(c, B, true, &st));
  GL_TRY(sv_finite(c, B, n, n, A, upper ? 2 : 1, st.fin));
  GL_TRY(sv_elems(c, B * an, &cm));
  GL_TRY(sv_d2d(c, cm, A, c->esz * (size_t)(B * an)));
  if (B > 1 && B <= INT_MAX && n <= SV_JACOBI_MAX) {
    syevjInfo_t params = NULL;
    GL_TRY(sv_check(sv.syevj_new(&params), "cusolverDnCreateSyevjInfo"));
    gl_status rc = sv_syevjBatched_bufferSize(c, jobz, uplo, n, cm, n, W, &lwork, params, (int)B);
    if (rc == GL_OK) rc = sv_elems(c, lwork > 0 ? lwork : 1, &work);
    if (rc == GL_OK) rc = sv_syevjBatched(c, jobz, uplo, n, cm, n, W, work, lwork, st.info, params, (int)B);
    sv.syevj_free(params);
    GL_TRY(rc);
  } else {
    GL_TRY(sv_syevd_bufferSize(c, jobz, uplo, n, cm, n, W, &lwork));
    GL_TRY(sv_elems(c, lwork > 0 ? lwork : 1, &work));
    for (int64_t i = 0; i < B; i++) {
      GL_TRY(gl_interrupt_check());
      GL_TRY(sv_syevd(c, jobz, uplo, n, sv_at(c, cm, i * an), n, sv_pat(c, W, i * n), work, lwork, st.info + i));
    }
  }
  if (v) {
    const int64_t vo[3] = { an, n, 1 }, vi[3] = { an, 1, n };
    GL_TRY(sv_copy(c, c->dt, B, n, n, sv_data(v), vo, cm, vi));
    GL_TRY(sv_conj(c, B, n, n, sv_data(v)));
  }
  return sv_first_bad(c, &st, bad);
}

/* ---- LSTSQ through the SVD, as gelsd on the CPU: a = u diag(s) vh (reduced), singular
** values at or below rcond * s[0] count as zero (rank = the others), x = vh^H diag(1/s)
** u^H b (the minimum-norm solution; u and vh conjugated in place, so their transposed
** views are the conjugate transposes), products by cuBLAS (gl_cuda_matmul), the real
** scaling and the residuals on the parts' views. The residuals (|a x - b|^2 per column,
** real) only when rank == n < m, else NaN. s comes back to the host to count the rank
** (the ops layer reads the rank back anyway). */
static gl_status sv_lstsq(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *b = g->in[1];
  int64_t m = a->shape[0], n = a->shape[1], kr = b->shape[1], mn = m < n ? m : n, kp = kr * c->parts;
  void *X = sv_data(g->out[0]), *Res = sv_data(g->out[3]);
  gl_dtype dt = c->dt;
  const int64_t flat[3] = { 0, 0, 1 };
  sv_status st;
  GL_TRY(sv_status_new(c, 2, true, &st));
  GL_TRY(sv_finite(c, 1, m, n, sv_data(a), 0, st.fin));
  GL_TRY(sv_finite(c, 1, m, kr, sv_data(b), 0, st.fin + 1));
  GL_TRY(sv_first_bad(c, &st, bad));
  if (*bad >= 0) { *bad = 0; return GL_OK; }
  int64_t rank = 0;
  gl_array vb, vx;
  gl_storage sb, sx;
  sv_view(&vb, &sb, c, sv_data(b), dt, 1, m, kr, m * kr, kr, 1);
  sv_view(&vx, &sx, c, X, dt, 1, n, kr, n * kr, kr, 1);
  if (mn == 0 || kr == 0) GL_TRY(sv_fill(c, dt, 1, 1, n * kr, X, flat, 0));
  if (mn > 0) {
    void *u, *sinv, *vh, *cb, *S = sv_data(g->out[2]);
    GL_TRY(sv_elems(c, m * mn, &u));
    GL_TRY(sv_parts(c, mn, &sinv));
    GL_TRY(sv_elems(c, mn * n, &vh));
    GL_TRY(sv_elems(c, mn * (kr > 0 ? kr : 1), &cb));
    gl_array vu, vs, vv;
    gl_storage su, ss, svv;
    sv_view(&vu, &su, c, u, dt, 1, m, mn, m * mn, mn, 1);
    sv_view(&vs, &ss, c, S, c->part, 1, 1, mn, mn, mn, 1);
    sv_view(&vv, &svv, c, vh, dt, 1, mn, n, mn * n, n, 1);
    gl_la_args sa;
    memset(&sa, 0, sizeof sa);
    sa.in[0] = a;
    sa.out[0] = &vu; sa.out[1] = &vs; sa.out[2] = &vv;
    GL_TRY(sv_svd(c, &sa, bad));
    if (*bad >= 0) { *bad = 0; return GL_OK; }
    void *hs = malloc(2 * c->psize * (size_t)mn);
    if (hs == NULL) return gl_fail(GL_ENOMEM, "lstsq: out of memory");
    gl_status rc = gl_cuda_to_host(hs, c->dev, S, c->psize * (size_t)mn);
    void *hinv = sv_pat(c, hs, mn);
    double thr = sv_round(c, sv_round(c, g->rcond) * sv_host_get(c, hs, 0));
    for (int64_t j = 0; j < mn; j++) {
      double sj = sv_host_get(c, hs, j);
      bool keep = sj > thr;
      rank += keep;
      sv_host_set(c, hinv, j, keep ? 1 / sj : 0);
    }
    if (rc == GL_OK) rc = gl_cuda_from_host(c->dev, sinv, hinv, c->psize * (size_t)mn);
    free(hs);
    GL_TRY(rc);
    if (kr > 0) {
      gl_array vut, vc, vcp, vsi, vvt;
      gl_storage sut, sc, scp, ssi, svt;
      GL_TRY(sv_conj(c, 1, m, mn, u));
      GL_TRY(sv_conj(c, 1, mn, n, vh));
      sv_view(&vut, &sut, c, u, dt, 1, mn, m, m * mn, 1, mn);        /* u^H */
      sv_view(&vc, &sc, c, cb, dt, 1, mn, kr, mn * kr, kr, 1);
      sv_parts_view(&vcp, &scp, c, cb, 1, mn, kr);
      sv_view(&vsi, &ssi, c, sinv, c->part, 1, mn, kp, 0, 1, 0);     /* 1/s down the rows */
      sv_view(&vvt, &svt, c, vh, dt, 1, n, mn, mn * n, 1, n);         /* vh^H */
      GL_TRY(gl_cuda_matmul(&vc, &vut, &vb));
      gl_operand oc = { &vcp, gl_scalar_int(0) }, os = { &vsi, gl_scalar_int(0) };
      GL_TRY(gl_cuda_binary(GL_B_mul, c->part, &vcp, oc, os));
      GL_TRY(gl_cuda_matmul(&vx, &vvt, &vc));
    }
  }
  GL_TRY(gl_cuda_from_host(c->dev, sv_data(g->out[1]), &rank, sizeof rank));
  if (kr == 0) return GL_OK;
  if (!(rank == n && m > n)) return sv_fill(c, c->part, 1, 1, kr, Res, flat, (double)NAN);
  /* residuals: the squares of (a x - b)'s parts, summed over the rows and the parts */
  void *r;
  GL_TRY(sv_elems(c, m * kr, &r));
  gl_array vr, vrp, vbp, vsq, vres;
  gl_storage sr, srp, sbp, ssq, sres;
  sv_view(&vr, &sr, c, r, dt, 1, m, kr, m * kr, kr, 1);
  sv_parts_view(&vrp, &srp, c, r, 1, m, kr);
  sv_parts_view(&vbp, &sbp, c, sv_data(b), 1, m, kr);
  gl_operand orr = { &vrp, gl_scalar_int(0) }, ob = { &vbp, gl_scalar_int(0) };
  if (n > 0) {
    gl_array va;
    gl_storage sa2;
    sv_view(&va, &sa2, c, sv_data(a), dt, 1, m, n, m * n, n, 1);
    GL_TRY(gl_cuda_matmul(&vr, &va, &vx));
    GL_TRY(gl_cuda_binary(GL_B_sub, c->part, &vrp, orr, ob));
  } else {
    GL_TRY(sv_d2d(c, r, sv_data(b), c->esz * (size_t)(m * kr)));
  }
  GL_TRY(gl_cuda_binary(GL_B_mul, c->part, &vrp, orr, orr));
  sv_view(&vsq, &ssq, c, r, c->part, m, kr, c->parts, kp, c->parts, 1);
  sv_view(&vres, &sres, c, Res, c->part, 1, kr, 1, kr, 1, 1);
  return gl_cuda_reduce(GL_R_SUM, &vres, &vsq, 0);
}

/* The cudaDataType of the call's element type, and of its complex type. */
static cudaDataType sv_cuda_type(gl_dtype dt) {
  switch (dt) {
    case GL_FLOAT32: return CUDA_R_32F;
    case GL_FLOAT64: return CUDA_R_64F;
    case GL_COMPLEX64: return CUDA_C_32F;
    default: return CUDA_C_64F;
  }
}

/* A real matrix's eigenvectors, unpacked on the host from LAPACK's packing: B matrices of
** complex v (C order, n x n) from their real column-major vr and their eigenvalues w
** (complex): a real eigenvalue's vector is its column, a conjugate pair (imaginary part
** > 0, then < 0) takes vr[:, j] +- i vr[:, j + 1]. */
static void sv_eig_unpack(const sv_ctx *c, void *v, const void *vr, const void *w, int64_t B, int64_t n) {
  for (int64_t i = 0; i < B; i++)
    for (int64_t col = 0; col < n; col++) {
      double im = sv_host_get(c, w, 2 * (i * n + col) + 1);
      int64_t rc = i * n * n + (im < 0 ? col - 1 : col) * n, ic = i * n * n + (im > 0 ? col + 1 : col) * n;
      double sign = im > 0 ? 1 : im < 0 ? -1 : 0;
      for (int64_t r = 0; r < n; r++) {
        int64_t o = 2 * ((i * n + r) * n + col);
        sv_host_set(c, v, o, sv_host_get(c, vr, rc + r));
        sv_host_set(c, v, o + 1, sign == 0 ? 0 : sign * sv_host_get(c, vr, ic + r));
      }
    }
}

/* ---- EIG: cusolverDnXgeev per matrix on a column-major copy of a (its right
** eigenvectors are a's, as NumPy's), no left ones; w straight into the output (complex for
** every input: Xgeev gives a real matrix's eigenvalues as complex when W's type is, a
** conjugate pair positive imaginary part first), the eigenvectors into a column-major
** scratch of a's type: a complex one read back to C order, a real one's in LAPACK's
** packing unpacked on the host (sv_eig_unpack; Xgeev's Hessenberg QR runs on the host
** too). Xgeev takes host workspace beside the device's, kept until the info codes are
** back. A matrix that is not finite fails as "did not converge", as on the CPU. */
static gl_status sv_eig(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0], *v = g->out[1];
  int64_t n = a->shape[a->ndim - 1], B = sv_batch(a), an = n * n;
  void *W = sv_data(g->out[0]), *V = sv_data(v), *cm, *vr = NULL, *dwork;
  cudaDataType ta = sv_cuda_type(c->dt), tw = sv_cuda_type(gl_complex_for(c->dt));
  cusolverEigMode_t jobvr = v ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  if (B == 0 || n == 0) return GL_OK;
  sv_status st;
  GL_TRY(sv_status_new(c, B, true, &st));
  GL_TRY(sv_finite(c, B, n, n, sv_data(a), 0, st.fin));
  GL_TRY(sv_elems(c, B * an, &cm));
  const int64_t cmaj[3] = { an, 1, n }, rmaj[3] = { an, n, 1 };
  GL_TRY(sv_copy(c, c->dt, B, n, n, cm, cmaj, sv_data(a), rmaj));
  if (v) GL_TRY(sv_elems(c, B * an, &vr));
  cusolverDnParams_t params = NULL;
  size_t dsize = 0, hsize = 0;
  void *hwork = NULL;
  GL_TRY(sv_check(sv.params_new(&params), "cusolverDnCreateParams"));
  gl_status rc = sv_check(sv.xgeev_bufferSize(c->h, params, CUSOLVER_EIG_MODE_NOVECTOR, jobvr, n, ta, cm, n, tw, W,
                                              ta, NULL, n, ta, vr, n, ta, &dsize, &hsize), "Xgeev_bufferSize");
  if (rc == GL_OK) rc = sv_scratch(c, dsize, &dwork);
  if (rc == GL_OK && (hwork = malloc(hsize > 0 ? hsize : 1)) == NULL)
    rc = gl_fail(GL_ENOMEM, "eig: out of memory for cuSOLVER's host workspace (%zu bytes)", hsize);
  for (int64_t i = 0; i < B && rc == GL_OK; i++) {
    rc = gl_interrupt_check();
    if (rc == GL_OK)
      rc = sv_check(sv.xgeev(c->h, params, CUSOLVER_EIG_MODE_NOVECTOR, jobvr, n, ta, sv_at(c, cm, i * an), n, tw,
                             sv_pat(c, W, 2 * i * n), ta, NULL, n, ta, vr ? sv_at(c, vr, i * an) : NULL, n, ta, dwork,
                             dsize, hwork, hsize, st.info + i), "Xgeev");
  }
  if (rc == GL_OK) rc = sv_first_bad(c, &st, bad);       /* waits for the calls: hwork is free */
  free(hwork);
  sv.params_free(params);
  GL_TRY(rc);
  if (v == NULL || *bad >= 0) return GL_OK;
  if (c->parts == 2) return sv_copy(c, c->dt, B, n, n, V, rmaj, vr, cmaj);
  size_t nw = 2 * c->psize * (size_t)(B * n), nv = c->psize * (size_t)(B * an);
  char *h = malloc(nw + 3 * nv);
  if (h == NULL) return gl_fail(GL_ENOMEM, "eig: out of memory for the eigenvectors");
  rc = gl_cuda_to_host(h, c->dev, W, nw);
  if (rc == GL_OK) rc = gl_cuda_to_host(h + nw, c->dev, vr, nv);
  if (rc == GL_OK) {
    sv_eig_unpack(c, h + nw + nv, h + nw, h, B, n);
    rc = gl_cuda_from_host(c->dev, V, h + nw + nv, 2 * nv);
  }
  free(h);
  return rc;
}

/* ---- LU: a (C order) copied to column-major scratch (a itself for cuSOLVER), getrf per
** matrix with its pivots written straight into the int32 output (1-based, as LAPACK's),
** the factors copied back to C order. A zero pivot is an answer (info ignored): the caller
** decides whether a singular U fails. */
static gl_status sv_lu(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *a = g->in[0];
  int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = m < n ? m : n, lwork = 0;
  int64_t B = sv_batch(a), an = (int64_t)m * n;
  (void)bad;
  if (B == 0 || an == 0) return GL_OK;
  void *lu, *work;
  int *info, *piv = sv_data(g->out[1]);
  GL_TRY(sv_elems(c, B * an, &lu));
  GL_TRY(sv_scratch(c, sizeof(int) * (size_t)B, (void **)&info));
  const int64_t cmaj[3] = { an, 1, m }, rmaj[3] = { an, n, 1 };
  GL_TRY(sv_copy(c, c->dt, B, m, n, lu, cmaj, sv_data(a), rmaj));
  GL_TRY(sv_getrf_bufferSize(c, m, n, lu, m, &lwork));
  GL_TRY(sv_elems(c, lwork > 0 ? lwork : 1, &work));
  for (int64_t i = 0; i < B; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_getrf(c, m, n, sv_at(c, lu, i * an), m, work, piv + i * k, info + i));
  }
  return sv_copy(c, c->dt, B, m, n, sv_data(g->out[0]), rmaj, lu, cmaj);
}

/* ---- LU_SOLVE: the C-order factors copied to column-major scratch (getrf's own layout),
** b in and x out through a column-major scratch, getrs per matrix with OP_N, or OP_C (OP_T
** for real types) for the adjoint, each with its int32 pivots read where they are. */
static gl_status sv_lu_solve_factored(sv_ctx *c, const gl_la_args *g, int64_t *bad) {
  const gl_array *lu = g->in[0], *b = g->in[1];
  int n = (int)lu->shape[lu->ndim - 1], k = (int)b->shape[b->ndim - 1];
  int64_t B = sv_batch(lu), an = (int64_t)n * n, bn = (int64_t)n * k;
  (void)bad;
  if (B == 0 || bn == 0) return GL_OK;
  cublasOperation_t op = !(g->flags & GL_LA_ADJOINT) ? CUBLAS_OP_N : c->parts == 2 ? CUBLAS_OP_C : CUBLAS_OP_T;
  void *f, *rhs;
  int *info;
  const int *piv = sv_data(g->in[2]);
  GL_TRY(sv_elems(c, B * an, &f));
  GL_TRY(sv_elems(c, B * bn, &rhs));
  GL_TRY(sv_scratch(c, sizeof(int), (void **)&info));
  const int64_t fc[3] = { an, 1, n }, fr[3] = { an, n, 1 }, cmaj[3] = { bn, 1, n }, rmaj[3] = { bn, k, 1 };
  GL_TRY(sv_copy(c, c->dt, B, n, n, f, fc, sv_data(lu), fr));
  GL_TRY(sv_copy(c, c->dt, B, n, k, rhs, cmaj, sv_data(b), rmaj));
  for (int64_t i = 0; i < B; i++) {
    GL_TRY(gl_interrupt_check());
    GL_TRY(sv_getrs(c, op, n, k, sv_at(c, f, i * an), n, piv + i * n, sv_at(c, rhs, i * bn), n, info));
  }
  return sv_copy(c, c->dt, B, n, k, sv_data(g->out[0]), rmaj, rhs, cmaj);
}

static gl_status sv_run(sv_ctx *c, gl_la_op op, const gl_la_args *g, int64_t *bad) {
  switch (op) {
    case GL_LA_SOLVE: return sv_solve(c, g, bad);
    case GL_LA_INV: return sv_inv(c, g, bad);
    case GL_LA_SLOGDET: return sv_slogdet(c, g, bad);
    case GL_LA_CHOLESKY: return sv_cholesky(c, g, bad);
    case GL_LA_QR: return sv_qr(c, g, bad);
    case GL_LA_SVD: return sv_svd(c, g, bad);
    case GL_LA_EIGH: return sv_eigh(c, g, bad);
    case GL_LA_LSTSQ: return sv_lstsq(c, g, bad);
    case GL_LA_EIG: return sv_eig(c, g, bad);
    case GL_LA_LU: return sv_lu(c, g, bad);
    case GL_LA_LU_SOLVE: return sv_lu_solve_factored(c, g, bad);
    default: return gl_fail(GL_ENOTSUP, "linear algebra op %d is not supported on cuda", (int)op);
  }
}

/* Every op in GL_LA_DTYPES; EIG only where cuSOLVER has Xgeev (the ops layer computes it
** on the host elsewhere), which loads the library to find out. */
bool gl_cuda_has_linalg(int which, gl_dtype dt) {
  if ((unsigned)which >= GL_NLA || !GL_DTSET_HAS(GL_LA_DTYPES, dt)) return false;
  if (which != GL_LA_EIG) return true;
  pthread_once(&sv.once, sv_load);
  return sv.ok && sv.xgeev != NULL;
}

gl_status gl_cuda_linalg(gl_la_op op, const gl_la_args *args, int64_t *bad) {
  *bad = -1;
  const gl_array *a = args->in[0];
  sv_ctx c;
  memset(&c, 0, sizeof c);
  c.dev = gl_array_device(a);
  GL_TRY(gl_cuda_enter(c.dev, &c.s));
  GL_TRY(sv_handle(c.dev, c.s, &c.h));
  c.dt = (gl_dtype)a->dtype;
  c.part = gl_real_for(c.dt);
  c.esz = gl_dtypes[c.dt].size;
  c.psize = gl_dtypes[c.part].size;
  c.parts = gl_dtype_is_complex(c.dt) ? 2 : 1;
  gl_status st;
  if (GL_DTSET_HAS(GL_LA_DTYPES, c.dt)) st = sv_run(&c, op, args, bad);
  else st = gl_fail(GL_ENOTSUP, "linear algebra in %s is not supported on cuda", gl_dtypes[c.dt].name);
  if (st == GL_OK) st = gl_cuda_launched(c.dev, c.s, 0, "linalg");
  sv_done(&c);
  return st;
}
