/*
** cuda_fft.c — gl_backend.fft on the GPU: cuFFT, the CUDA twin of cpu_fft.c with the same
** contract (backend.h, gl_fft_kind).
**
** cuFFT is opened with dlopen at the first transform on a cuda array (libcufft.so.12 from
** the toolkit), only the entry points used resolved, their types from cufft.h. A plan
** (cufftMakePlanMany64, 64-bit extents) transforms up to 3 axes over one batch dimension,
** its advanced layout one stride per array for the innermost transformed axis, "embed"
** extents for the others and one batch distance. A call is split into such plans:
**   C2C  groups of at most 3 axes, the first from the input into the output, the others in
**        place on the output;
**   R2C  the last 3 axes (the halved one last) from the input, then the others in place;
**   C2R  on a copy of the input (cuFFT overwrites a C2R input): the C2C inverse in place
**        over every axis but the last, then a 1-D C2R into the output. Done as NumPy does it
**        (irfftn is ifft over the leading axes, then irfft), so that an input that is not
**        conjugate symmetric gives NumPy's result, which a multi-dimensional C2R plan
**        does not promise.
** A batch that does not collapse into one distance takes one execution per position of
** its other axes (the plan takes the longest); an input whose strides fit no layout
** (a negative or zero stride on a transformed axis, axes whose strides do not nest) is
** copied contiguous first. The output is always C-contiguous.
**
** Plans are cached per device (LRU) by type, extents, layout and batch, made with
** automatic allocation off: each execution takes its work area from the caching allocator
** (cufftSetWorkArea; freed in stream order after the launch) and runs on the device's stream
** (cufftSetStream). The scale is one elementwise pass over the output (the backend's own
** multiply, over the output viewed as reals). gl_cuda_fft_release destroys a device's
** plans at shutdown.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <cufft.h>
#include "cuda.h"

/* ---- cuFFT, loaded on first use ------------------------------------------------------- */

/* The entry points used: (field, cuFFT's name). */
#define CF_FUNCS(X)                                                                              \
  X(create, cufftCreate) X(destroy, cufftDestroy) X(set_auto_allocation, cufftSetAutoAllocation) \
  X(make_plan_many64, cufftMakePlanMany64) X(set_work_area, cufftSetWorkArea)                   \
  X(set_stream, cufftSetStream) X(exec_c2c, cufftExecC2C) X(exec_z2z, cufftExecZ2Z)              \
  X(exec_r2c, cufftExecR2C) X(exec_d2z, cufftExecD2Z) X(exec_c2r, cufftExecC2R)                  \
  X(exec_z2d, cufftExecZ2D)
#define CF_FIELD(f, name) __typeof__(name) *f;
#define CF_ENTRY(f, name) { #name, &cf.f },

static struct {
  pthread_once_t once;
  bool ok;
  char why[256];
  CF_FUNCS(CF_FIELD)
} cf = { .once = PTHREAD_ONCE_INIT };

static const gl_cuda_entry cf_entries[] = { CF_FUNCS(CF_ENTRY) };

static void cf_load(void) {
  static const char *const libs[] = { "libcufft.so.12", "libcufft.so" };
  void *h = NULL;
  for (size_t i = 0; i < sizeof libs / sizeof libs[0] && h == NULL; i++)
    h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
  const char *missing = h ? gl_cuda_syms(h, cf_entries, sizeof cf_entries / sizeof cf_entries[0]) : NULL;
  const char *e = h ? NULL : dlerror();
  if (h == NULL)
    snprintf(cf.why, sizeof cf.why, "cannot load cuFFT (%s, from the CUDA toolkit): %s", libs[0], e ? e : "not found");
  else if (missing)
    snprintf(cf.why, sizeof cf.why, "cuFFT (%s) lacks %s", libs[0], missing);
  cf.ok = h != NULL && missing == NULL;
}

static const char *cf_result_name(cufftResult r) {
  switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "cuFFT error";
  }
}

static gl_status cf_check(cufftResult r, const char *what) {
  if (r == CUFFT_SUCCESS) return GL_OK;
  return gl_fail(r == CUFFT_ALLOC_FAILED ? GL_ENOMEM : GL_EDEVICE, "fft: %s failed: %s (cuFFT result %d)", what,
                 cf_result_name(r), (int)r);
}

bool gl_cuda_has_fft(int kind, gl_dtype dt) {
  return (unsigned)kind < GL_NFFT && (dt == GL_COMPLEX64 || dt == GL_COMPLEX128);
}

/* ---- one plan: up to 3 transformed dimensions over one batch dimension ------------------ */

/* A dimension: its extent and the element strides in the input and the output. */
typedef struct cf_dim { int64_t n, is, os; } cf_dim;

/* What a plan is made of (the cache's key, compared whole; unused fields zero). */
typedef struct cf_key {
  int dev, type, rank;
  long long n[3], inembed[3], onembed[3];
  long long istride, idist, ostride, odist, batch;
} cf_key;

#define CACHE_SIZE 32

typedef struct cf_plan {
  cf_key key;
  cufftHandle h;
  size_t work;               /* the work area's bytes */
  int users;                 /* executions under way: not evicted while > 0 */
  uint64_t stamp;            /* 0: a free slot */
} cf_plan;

static struct {
  cf_plan e[CACHE_SIZE];
  uint64_t clock;
} cache;                     /* under gl_cuda_lock */

/* The plan for k (made on a miss, automatic allocation off), its user count raised; a plan
** that could not be cached (every slot busy) is returned with *owned set. */
static gl_status plan_get(const cf_key *k, cf_plan **out, cf_plan *spare, bool *owned) {
  *owned = false;
  pthread_mutex_lock(&gl_cuda_lock);
  cf_plan *slot = NULL;
  for (int i = 0; i < CACHE_SIZE; i++) {
    cf_plan *e = &cache.e[i];
    if (e->stamp && memcmp(&e->key, k, sizeof *k) == 0) {
      e->stamp = ++cache.clock;
      e->users++;
      *out = e;
      pthread_mutex_unlock(&gl_cuda_lock);
      return GL_OK;
    }
    if (e->users == 0 && (slot == NULL || e->stamp < slot->stamp)) slot = e;
  }
  if (slot == NULL) {
    slot = spare;
    *owned = true;
  } else if (slot->stamp) {
    cf.destroy(slot->h);
  }
  memset(slot, 0, sizeof *slot);
  slot->key = *k;
  long long n[3], ie[3], oe[3];
  memcpy(n, k->n, sizeof n);
  memcpy(ie, k->inembed, sizeof ie);
  memcpy(oe, k->onembed, sizeof oe);
  gl_status st = cf_check(cf.create(&slot->h), "cufftCreate");
  if (st == GL_OK) st = cf_check(cf.set_auto_allocation(slot->h, 0), "cufftSetAutoAllocation");
  if (st == GL_OK)
    st = cf_check(cf.make_plan_many64(slot->h, k->rank, n, ie, k->istride, k->idist, oe, k->ostride, k->odist,
                                      (cufftType)k->type, k->batch, &slot->work),
                  "cufftMakePlanMany64");
  if (st != GL_OK) {
    if (slot->h) cf.destroy(slot->h);
    memset(slot, 0, sizeof *slot);
    *owned = false;
  } else {
    slot->stamp = ++cache.clock;
    slot->users = 1;
    *out = slot;
  }
  pthread_mutex_unlock(&gl_cuda_lock);
  return st;
}

static void plan_put(cf_plan *p, bool owned) {
  pthread_mutex_lock(&gl_cuda_lock);
  if (owned) cf.destroy(p->h);
  else p->users--;
  pthread_mutex_unlock(&gl_cuda_lock);
}

/* (gl_cuda_lock held, the device current and its stream synchronised) */
void gl_cuda_fft_release(int index) {
  if (!cf.ok) return;
  for (int i = 0; i < CACHE_SIZE; i++) {
    cf_plan *e = &cache.e[i];
    if (e->stamp && e->key.dev == index) {
      cf.destroy(e->h);
      memset(e, 0, sizeof *e);
    }
  }
}

/* ---- a step: one layout, any batch ------------------------------------------------------ */

typedef struct cf_step {
  gl_device dev;
  cudaStream_t s;
  int type;                  /* CUFFT_C2C ... */
  int direction;             /* C2C: CUFFT_FORWARD or CUFFT_INVERSE */
  int rank, nb;
  cf_dim d[3];               /* transformed, outermost first; n is the logical extent */
  cf_dim b[GL_MAXDIMS];      /* batch */
  size_t isz, osz;           /* element bytes of the input and the output */
} cf_step;

/* The extent of the last transformed dimension as the input and the output hold it. */
static int64_t held_in(const cf_step *p, int r) {
  return r == p->rank - 1 && (p->type == CUFFT_C2R || p->type == CUFFT_Z2D) ? p->d[r].n / 2 + 1 : p->d[r].n;
}
static int64_t held_out(const cf_step *p, int r) {
  return r == p->rank - 1 && (p->type == CUFFT_R2C || p->type == CUFFT_D2Z) ? p->d[r].n / 2 + 1 : p->d[r].n;
}

/* Whether strides st[0..rank-1] (outermost first, extents held[]) nest as cuFFT's embed
** layout: positive, each a multiple of the next and at least its extent times it. */
static bool nests(const int64_t *st, const int64_t *held, int rank, long long *embed) {
  for (int r = 0; r < rank; r++) if (st[r] <= 0) return false;
  embed[0] = held[0];
  for (int r = 1; r < rank; r++) {
    if (st[r - 1] % st[r] != 0 || st[r - 1] / st[r] < held[r]) return false;
    embed[r] = st[r - 1] / st[r];
  }
  return true;
}

/* Whether the step's layout is one cuFFT takes (the key in *k, the plan's batch the longest
** batch dimension of positive strides, *loop its index or -1). */
static bool step_key(const cf_step *p, cf_key *k, int *loop) {
  memset(k, 0, sizeof *k);
  int64_t is[3] = { 0 }, os[3] = { 0 }, hin[3] = { 0 }, hout[3] = { 0 };
  for (int r = 0; r < p->rank; r++) {
    is[r] = p->d[r].is;
    os[r] = p->d[r].os;
    hin[r] = held_in(p, r);
    hout[r] = held_out(p, r);
    k->n[r] = p->d[r].n;
  }
  if (!nests(is, hin, p->rank, k->inembed) || !nests(os, hout, p->rank, k->onembed)) return false;
  k->dev = p->dev.index;
  k->type = p->type;
  k->rank = p->rank;
  k->istride = is[p->rank - 1];
  k->ostride = os[p->rank - 1];
  k->batch = 1;                                   /* one signal: the distances of a packed batch */
  k->idist = is[0] * hin[0];
  k->odist = os[0] * hout[0];
  *loop = -1;
  for (int i = 0; i < p->nb; i++)
    if (p->b[i].is > 0 && p->b[i].os > 0 && (*loop < 0 || p->b[i].n > p->b[*loop].n)) *loop = i;
  if (*loop >= 0) {
    k->batch = p->b[*loop].n;
    k->idist = p->b[*loop].is;
    k->odist = p->b[*loop].os;
  }
  return true;
}

static cufftResult exec_one(const cf_step *p, cufftHandle h, void *ip, void *op) {
  switch (p->type) {
    case CUFFT_C2C: return cf.exec_c2c(h, ip, op, p->direction);
    case CUFFT_Z2Z: return cf.exec_z2z(h, ip, op, p->direction);
    case CUFFT_R2C: return cf.exec_r2c(h, ip, op);
    case CUFFT_D2Z: return cf.exec_d2z(h, ip, op);
    case CUFFT_C2R: return cf.exec_c2r(h, ip, op);
    default: return cf.exec_z2d(h, ip, op);
  }
}

/* Runs the step from ip to op (GL_ENOTSUP when the layout fits no plan: the caller copies),
** one execution per position of the batch dimensions the plan does not take. */
static gl_status step_run(const cf_step *p, char *ip, char *op) {
  cf_key k;
  int loop;
  if (!step_key(p, &k, &loop)) return GL_ENOTSUP;
  cf_plan spare, *plan;
  bool owned;
  GL_TRY(plan_get(&k, &plan, &spare, &owned));
  void *work = NULL;
  gl_status st = plan->work ? gl_workspace_alloc(p->dev, plan->work, &work) : GL_OK;
  if (st == GL_OK) st = cf_check(cf.set_work_area(plan->h, work), "cufftSetWorkArea");
  if (st == GL_OK) st = cf_check(cf.set_stream(plan->h, p->s), "cufftSetStream");
  int64_t outer = 1;
  for (int i = 0; i < p->nb; i++) if (i != loop) outer *= p->b[i].n;
  for (int64_t j = 0; j < outer && st == GL_OK; j++) {
    int64_t io = 0, oo = 0, rest = j;
    for (int i = p->nb - 1; i >= 0; i--) {
      if (i == loop) continue;
      int64_t x = rest % p->b[i].n;
      rest /= p->b[i].n;
      io += x * p->b[i].is;
      oo += x * p->b[i].os;
    }
    st = cf_check(exec_one(p, plan->h, ip + io * (int64_t)p->isz, op + oo * (int64_t)p->osz), "cufftExec");
    if (st == GL_OK) st = gl_cuda_launched(p->dev, p->s, 0, "fft");
  }
  if (work) gl_cuda_free(p->dev, work, plan->work);
  plan_put(owned ? &spare : plan, owned);
  return st;
}

/* ---- the backend entry ---------------------------------------------------------------- */

/* The step over transformed axes ax[0..rank-1] of in -> out (batch: every other axis of
** extent > 1, merged where both arrays are contiguous across it). The logical extents
** come from 'logical' (C2R: the real output). */
static void step_of(cf_step *p, const gl_array *in, const gl_array *out, const gl_array *logical, const int *ax,
                    int rank) {
  bool used[GL_MAXDIMS] = { false };
  p->rank = rank;
  for (int r = 0; r < rank; r++) {
    used[ax[r]] = true;
    p->d[r] = (cf_dim){ logical->shape[ax[r]], in->strides[ax[r]], out->strides[ax[r]] };
  }
  p->nb = 0;
  for (int a = 0; a < out->ndim; a++) {
    if (used[a] || out->shape[a] == 1) continue;
    cf_dim d = { out->shape[a], in->strides[a], out->strides[a] };
    cf_dim *prev = p->nb ? &p->b[p->nb - 1] : NULL;
    if (prev && prev->is == d.is * d.n && prev->os == d.os * d.n) {
      prev->n *= d.n;
      prev->is = d.is;
      prev->os = d.os;
    } else {
      p->b[p->nb++] = d;
    }
  }
  p->isz = gl_dtypes[in->dtype].size;
  p->osz = gl_dtypes[out->dtype].size;
}

/* Sorts ax[0..n-1] by the output's strides, largest first (the order cuFFT's layout nests). */
static void by_stride(int *ax, int n, const gl_array *out) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && out->strides[ax[j - 1]] < out->strides[ax[j]]; j--) {
      int t = ax[j];
      ax[j] = ax[j - 1];
      ax[j - 1] = t;
    }
}

/* C2C over the axes ax[0..n-1] of in into out, in groups of at most 3 (after the first
** group the transform runs in place on out). A first group whose input layout fits no plan
** runs from a contiguous copy of in. */
static gl_status c2c_groups(gl_device dev, cudaStream_t s, const gl_array *in, const gl_array *out, int *ax, int n,
                            int direction) {
  bool dbl = out->dtype == GL_COMPLEX128;
  by_stride(ax, n, out);
  for (int g = 0; g < n; g += 3) {
    const gl_array *src = g == 0 ? in : out;
    cf_step p = { .dev = dev, .s = s, .type = dbl ? CUFFT_Z2Z : CUFFT_C2C, .direction = direction };
    step_of(&p, src, out, out, ax + g, n - g < 3 ? n - g : 3);
    gl_status st = step_run(&p, gl_array_data(src), gl_array_data(out));
    if (st == GL_ENOTSUP && g == 0) {
      gl_array tmp = { 0 };
      st = gl_array_alloc(&tmp, (gl_dtype)in->dtype, in->ndim, in->shape, dev);
      if (st == GL_OK) st = gl_cuda_copy(&tmp, in);
      if (st == GL_OK) {
        step_of(&p, &tmp, out, out, ax, n < 3 ? n : 3);
        st = step_run(&p, gl_array_data(&tmp), gl_array_data(out));
        if (st == GL_ENOTSUP) st = gl_fail(GL_ENOTSUP, "fft: internal: cuFFT takes no layout for this transform");
      }
      gl_array_release(&tmp);
    }
    GL_TRY(st);
  }
  return GL_OK;
}

/* x flattened, as reals ((n, 2) when complex: its view_as_real); x is C-contiguous. */
static gl_array flat_reals(const gl_array *x) {
  gl_array v = *x;
  int64_t n = x->size;
  gl_view_reshape(&v, 1, &n);                                   /* contiguous: a view */
  if (gl_dtype_is_complex((gl_dtype)x->dtype)) gl_view_as_real(&v);   /* 2-d: room */
  return v;
}

static gl_status scale_out(const gl_array *out, double scale) {
  if (scale == 1) return GL_OK;
  gl_array v = flat_reals(out);
  gl_operand a = { &v, gl_scalar_int(0) }, b = { NULL, gl_scalar_float(scale) };
  return gl_cuda_binary(GL_B_mul, (gl_dtype)v.dtype, &v, a, b);
}

/* R2C along the one axis 'axis' of in into out (from a contiguous copy of in when its
** strides fit no plan). */
static gl_status r2c_1d(gl_device dev, cudaStream_t s, const gl_array *out, const gl_array *in, int axis) {
  cf_step p = { .dev = dev, .s = s, .type = out->dtype == GL_COMPLEX128 ? CUFFT_D2Z : CUFFT_R2C };
  step_of(&p, in, out, in, &axis, 1);
  gl_status st = step_run(&p, gl_array_data(in), gl_array_data(out));
  if (st != GL_ENOTSUP) return st;
  gl_array tmp = { 0 };
  GL_TRY(gl_array_alloc(&tmp, (gl_dtype)in->dtype, in->ndim, in->shape, dev));
  st = gl_cuda_copy(&tmp, in);
  if (st == GL_OK) {
    step_of(&p, &tmp, out, &tmp, &axis, 1);
    st = step_run(&p, gl_array_data(&tmp), gl_array_data(out));
    if (st == GL_ENOTSUP) st = gl_fail(GL_ENOTSUP, "fft: internal: cuFFT takes no layout for this transform");
  }
  gl_array_release(&tmp);
  return st;
}

/* One R2C plan over the last (at most 3) axes when both layouts nest with the halved axis
** innermost, else a 1-D R2C along the halved axis; then C2C in place over the rest. */
static gl_status r2c(gl_device dev, cudaStream_t s, const gl_array *out, const gl_array *in, const gl_fft_args *a) {
  int ax[GL_MAXDIMS];
  memcpy(ax, a->axes, sizeof(int) * (size_t)a->rank);
  int nr = a->rank < 3 ? a->rank : 3, first = a->rank - nr;     /* the plan's axes: the last nr */
  by_stride(ax + first, nr - 1, out);
  cf_step p = { .dev = dev, .s = s, .type = out->dtype == GL_COMPLEX128 ? CUFFT_D2Z : CUFFT_R2C };
  step_of(&p, in, out, in, ax + first, nr);
  gl_status st = nr > 1 ? step_run(&p, gl_array_data(in), gl_array_data(out)) : GL_ENOTSUP;
  if (st == GL_ENOTSUP) {
    first = a->rank - 1;
    st = r2c_1d(dev, s, out, in, ax[first]);
  }
  if (st == GL_OK && first > 0) st = c2c_groups(dev, s, out, out, ax, first, CUFFT_FORWARD);
  return st;
}

/* The imaginary parts of entry k along 'axis' of x (complex, C-contiguous) = 0. */
static gl_status zero_imag(const gl_array *x, int axis, int64_t k) {
  gl_array v = { 0 };
  v.storage = x->storage;
  v.dtype = (uint8_t)(x->dtype == GL_COMPLEX128 ? GL_FLOAT64 : GL_FLOAT32);
  v.offset = 2 * (x->offset + k * x->strides[axis]) + 1;
  v.size = 1;
  for (int d = 0; d < x->ndim; d++) {
    if (d == axis) continue;
    v.shape[v.ndim] = x->shape[d];
    v.strides[v.ndim] = 2 * x->strides[d];
    v.size *= x->shape[d];
    v.ndim++;
  }
  return gl_cuda_fill(&v, gl_scalar_float(0));
}

static gl_status c2r(gl_device dev, cudaStream_t s, const gl_array *out, const gl_array *in, const gl_fft_args *a) {
  bool dbl = in->dtype == GL_COMPLEX128;
  gl_array tmp = { 0 };
  GL_TRY(gl_array_alloc(&tmp, (gl_dtype)in->dtype, in->ndim, in->shape, dev));
  gl_status st = gl_cuda_copy(&tmp, in);
  int ax[GL_MAXDIMS];
  memcpy(ax, a->axes, sizeof(int) * (size_t)a->rank);
  if (st == GL_OK && a->rank > 1) st = c2c_groups(dev, s, &tmp, &tmp, ax, a->rank - 1, CUFFT_INVERSE);
  /* what FFTW and NumPy ignore, and a C2R plan need not */
  int last = a->axes[a->rank - 1];
  int64_t n = out->shape[last];
  if (st == GL_OK) st = zero_imag(&tmp, last, 0);
  if (st == GL_OK && n % 2 == 0) st = zero_imag(&tmp, last, n / 2);
  if (st == GL_OK) {
    cf_step p = { .dev = dev, .s = s, .type = dbl ? CUFFT_Z2D : CUFFT_C2R };
    step_of(&p, &tmp, out, out, a->axes + a->rank - 1, 1);
    st = step_run(&p, gl_array_data(&tmp), gl_array_data(out));
    if (st == GL_ENOTSUP) st = gl_fail(GL_ENOTSUP, "fft: internal: cuFFT takes no layout for this transform");
  }
  gl_array_release(&tmp);
  return st;
}

gl_status gl_cuda_fft(const gl_array *out, const gl_array *in, const gl_fft_args *a) {
  gl_device dev = gl_array_device(out);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  pthread_once(&cf.once, cf_load);
  if (!cf.ok) return gl_fail(GL_ENOTSUP, "%s", cf.why);
  gl_status st;
  if (a->kind == GL_FFT_C2C) {
    int ax[GL_MAXDIMS];
    memcpy(ax, a->axes, sizeof(int) * (size_t)a->rank);
    st = c2c_groups(dev, s, in, out, ax, a->rank, a->sign < 0 ? CUFFT_FORWARD : CUFFT_INVERSE);
  } else if (a->kind == GL_FFT_R2C) {
    st = r2c(dev, s, out, in, a);
  } else {
    st = c2r(dev, s, out, in, a);
  }
  if (st == GL_OK) st = scale_out(out, a->scale);
  return st;
}
