/*
** cuda_solver.c — gl_backend.linalg on the GPU: cuSOLVER's dense drivers (cusolverDn),
** the CUDA twin of cpu_lapack.c with the same contract (backend.h, gl_la_op).
**
** cuSOLVER is opened with dlopen at the first linalg call on a cuda array (linking it
** would cost every process start, and a CUDA build must run where the library is
** missing); only the entry points used are resolved, with their types taken from
** cusolverDn.h. One handle per device, made lazily, bound to the device's stream,
** destroyed by gl_cuda_solver_release at shutdown. The drivers, written once for float
** and double, are cuda_solver_t.h's; this file has what they share: the handle,
** scratch from the caching allocator, views over scratch for the backend's own copy,
** fill, where and reduce (transposes, triangles, diagonals: no kernel of our own), and
** the one read-back of the per-matrix info codes.
**
** cusolverDn is column-major: a C-order m x n matrix is, read column-major with leading
** dimension n, its transpose. Each driver says how it uses that (as cpu_lapack_t.h).
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

#define SV_PER_TYPE(X, P)                                                                  \
  X(P, getrf_bufferSize) X(P, getrf) X(P, getrs) X(P, potrf_bufferSize) X(P, potrf)        \
  X(P, potrfBatched) X(P, geqrf_bufferSize) X(P, geqrf) X(P, orgqr_bufferSize) X(P, orgqr) \
  X(P, gesvd_bufferSize) X(P, gesvd) X(P, gesvdjBatched_bufferSize) X(P, gesvdjBatched)    \
  X(P, syevd_bufferSize) X(P, syevd) X(P, syevjBatched_bufferSize) X(P, syevjBatched)

#define SV_FIELD(P, f) __typeof__(cusolverDn##P##f) *f;

typedef struct sv_sfns { SV_PER_TYPE(SV_FIELD, S) } sv_sfns;
typedef struct sv_dfns { SV_PER_TYPE(SV_FIELD, D) } sv_dfns;

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
} sv = { .once = PTHREAD_ONCE_INIT };

static cusolverDnHandle_t sv_handles[GL_CUDA_MAXDEV];

static void sv_load(void) {
  void *h = dlopen("libcusolver.so.12", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libcusolver.so", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    snprintf(sv.why, sizeof sv.why, "cannot load cuSOLVER (libcusolver.so.12, from the CUDA toolkit): %s",
             e ? e : "not found");
    return;
  }
  bool all = true;
  /* dlsym returns void *; memcpy keeps the conversion to a function pointer defined */
#define SV_SYM(field, name)                                                                \
  do {                                                                                     \
    void *p_ = dlsym(h, name);                                                             \
    memcpy(&(field), &p_, sizeof p_);                                                      \
    if (p_ == NULL && all) {                                                               \
      all = false;                                                                         \
      snprintf(sv.why, sizeof sv.why, "cuSOLVER (libcusolver.so.12) lacks %s", name);      \
    }                                                                                      \
  } while (0);
  SV_SYM(sv.create, "cusolverDnCreate")
  SV_SYM(sv.destroy, "cusolverDnDestroy")
  SV_SYM(sv.set_stream, "cusolverDnSetStream")
  SV_SYM(sv.gesvdj_new, "cusolverDnCreateGesvdjInfo")
  SV_SYM(sv.gesvdj_free, "cusolverDnDestroyGesvdjInfo")
  SV_SYM(sv.syevj_new, "cusolverDnCreateSyevjInfo")
  SV_SYM(sv.syevj_free, "cusolverDnDestroySyevjInfo")
#define SV_RESOLVE_S(P, f) SV_SYM(sv.s.f, "cusolverDn" #P #f)
#define SV_RESOLVE_D(P, f) SV_SYM(sv.d.f, "cusolverDn" #P #f)
  SV_PER_TYPE(SV_RESOLVE_S, S)
  SV_PER_TYPE(SV_RESOLVE_D, D)
#undef SV_RESOLVE_S
#undef SV_RESOLVE_D
#undef SV_SYM
  sv.ok = all;
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

/* A bool mask (r, k) in device scratch: true on and above the diagonal (upper) or on and
** below it (lower), made on the host (r * k bytes) and copied once. */
static gl_status sv_trimask(sv_ctx *c, int64_t r, int64_t k, bool upper, void **out) {
  size_t n = (size_t)(r * k);
  GL_TRY(sv_scratch(c, n, out));
  if (n == 0) return GL_OK;
  unsigned char *m = malloc(n);
  if (m == NULL) return gl_fail(GL_ENOMEM, "linalg: out of memory for a triangle mask");
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < k; j++) m[i * k + j] = (unsigned char)(upper ? j >= i : j <= i);
  gl_status st = gl_cuda_from_host(c->dev, *out, m, n);
  free(m);
  return st;
}

/* Zeroes the triangle of the contiguous (B, r, k) matrices at p that the kept triangle
** (upper: j >= i, else j <= i) leaves out: where(mask, x, 0). */
static gl_status sv_keep_tri(sv_ctx *c, gl_dtype dt, int64_t B, int64_t r, int64_t k, void *p, bool upper) {
  if (B * r * k == 0) return GL_OK;
  void *mask;
  GL_TRY(sv_trimask(c, r, k, upper, &mask));
  gl_array vx, vm;
  gl_storage sx, sm;
  sv_view(&vx, &sx, c, p, dt, B, r, k, r * k, k, 1);
  sv_view(&vm, &sm, c, mask, GL_BOOL, B, r, k, 0, k, 1);
  gl_operand a = { &vx, gl_scalar_int(0) }, z = { NULL, gl_scalar_float(0) };
  return gl_cuda_where(&vx, &vm, a, z);
}

/* flags[i] (bool, device) = red (all or any) of the predicate op over matrix i of the
** contiguous (B, r, k) at p; with tri (0 none, 1 lower, 2 upper) only that triangle
** counts, the rest reading 'outside'. */
static gl_status sv_tri_flags(sv_ctx *c, gl_dtype dt, int64_t B, int64_t r, int64_t k, const void *p, int tri,
                              gl_unop op, gl_redop red, bool outside, void *flags) {
  if (B == 0) return GL_OK;
  const int64_t one[3] = { 1, 0, 0 };
  if (r * k == 0) return sv_fill(c, GL_BOOL, B, 1, 1, flags, one, outside ? 1 : 0);
  void *fin;
  GL_TRY(sv_scratch(c, (size_t)(B * r * k), &fin));
  gl_array vx, vf, vd;
  gl_storage sx, sf, sd;
  sv_view(&vx, &sx, c, p, dt, B, r, k, r * k, k, 1);
  sv_view(&vf, &sf, c, fin, GL_BOOL, B, r, k, r * k, k, 1);
  GL_TRY(gl_cuda_unary(op, &vf, &vx));
  if (tri) {
    void *mask;
    GL_TRY(sv_trimask(c, r, k, tri == 2, &mask));
    gl_array vm;
    gl_storage sm;
    sv_view(&vm, &sm, c, mask, GL_BOOL, B, r, k, 0, k, 1);
    gl_operand a = { &vf, gl_scalar_int(0) }, t = { NULL, gl_scalar_bool(outside) };
    GL_TRY(gl_cuda_where(&vf, &vm, a, t));
  }
  sv_view(&vd, &sd, c, flags, GL_BOOL, B, 1, 1, 1, 1, 1);
  return gl_cuda_reduce(red, &vd, &vf, 0);
}

/* flags[i] = whether matrix i (or its triangle) is all finite. The iterative drivers then
** refuse a matrix that is not, as the CPU's do ("did not converge"), so both devices
** raise the same LinAlgError. */
static gl_status sv_finite(sv_ctx *c, gl_dtype dt, int64_t B, int64_t r, int64_t k, const void *p, int tri,
                           void *flags) {
  return sv_tri_flags(c, dt, B, r, k, p, tri, GL_U_isfinite, GL_R_ALL, true, flags);
}

/* flags[i] = whether matrix i (or its triangle) holds a NaN. */
static gl_status sv_has_nan(sv_ctx *c, gl_dtype dt, int64_t B, int64_t r, int64_t k, const void *p, int tri,
                            void *flags) {
  return sv_tri_flags(c, dt, B, r, k, p, tri, GL_U_isnan, GL_R_ANY, false, flags);
}

/* The matrices i of the contiguous (B, r, k) at p with flags[i] become all NaN, and their
** int32 info codes 0: a NaN input's answer, not a failure. */
static gl_status sv_nan_where(sv_ctx *c, gl_dtype dt, int64_t B, int64_t r, int64_t k, void *p, const void *flags,
                              int *info) {
  if (B == 0) return GL_OK;
  gl_array vx, vf, vi, vfi;
  gl_storage sx, sf, si, sfi;
  sv_view(&vf, &sf, c, flags, GL_BOOL, B, r, k, 1, 0, 0);
  if (r * k > 0) {
    sv_view(&vx, &sx, c, p, dt, B, r, k, r * k, k, 1);
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

#define T float
#define P(x) s_##x
#define SV_DT GL_FLOAT32
#define SV_FN(f) sv.s.f
#include "cuda_solver_t.h"
#undef T
#undef P
#undef SV_DT
#undef SV_FN

#define T double
#define P(x) d_##x
#define SV_DT GL_FLOAT64
#define SV_FN(f) sv.d.f
#include "cuda_solver_t.h"
#undef T
#undef P
#undef SV_DT
#undef SV_FN

bool gl_cuda_has_linalg(int which, gl_dtype dt) {
  return (unsigned)which < GL_NLA && (dt == GL_FLOAT32 || dt == GL_FLOAT64);
}

gl_status gl_cuda_linalg(gl_la_op op, const gl_la_args *args, int64_t *bad) {
  *bad = -1;
  const gl_array *a = args->in[0];
  sv_ctx c;
  memset(&c, 0, sizeof c);
  c.dev = gl_array_device(a);
  GL_TRY(gl_cuda_enter(c.dev, &c.s));
  GL_TRY(sv_handle(c.dev, c.s, &c.h));
  gl_status st;
  if (a->dtype == GL_FLOAT32) st = s_run(&c, op, args, bad);
  else if (a->dtype == GL_FLOAT64) st = d_run(&c, op, args, bad);
  else st = gl_fail(GL_ENOTSUP, "linear algebra in %s is not supported on cuda", gl_dtypes[a->dtype].name);
  if (st == GL_OK) st = gl_cuda_launched(c.dev, c.s, 0, "linalg");
  sv_done(&c);
  return st;
}
