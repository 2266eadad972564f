/*
** cuda_backend.c — the CUDA backend's table: devices, their streams, errors, counters,
** teardown. Memory is cuda_alloc.c's, transfers and copies cuda_copy.c's, elementwise
** math cuda_elem.c's; the kernels are the .cu files in kernels/, behind kernels/launch.h.
**
** CUDA is initialised lazily: the first question about devices calls
** cudaGetDeviceCount once and remembers the answer (and the reason when there is no
** usable device), so programs that never touch a GPU make no CUDA call. Each device gets
** one non-blocking stream at its first use; every op of that device is queued on it, in
** order, so a block freed into the allocator's cache can be reused at once. cuDNN and
** cuBLAS are opened with dlopen on first use (linking them would cost ~50 ms at every
** start).
*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cuda.h"
#include "../../../kernels/conv.h"      /* GL_KCONV_DTYPES */
#include "../../../kernels/fused.h"     /* GL_KFUSED_DTYPES */
#include "../../../kernels/philox.h"    /* GL_RAND_DTYPES */
#ifdef GL_WITH_CUDNN
#include <cudnn_version.h>
#endif

/* The kernels' dtype codes and gl_dtype both come from kernels/dtypes.h's rows. */
_Static_assert((int)GL_KD_N == (int)GL_NDTYPE, "kernel dtype numbers");
_Static_assert(GL_KMAXDIMS == GL_MAXDIMS && GL_KMAXARGS == GL_ITER_MAXARGS, "kernel walk sizes");

pthread_mutex_t gl_cuda_lock = PTHREAD_MUTEX_INITIALIZER;
gl_cuda_dev gl_cuda_devs[GL_CUDA_MAXDEV];
gl_stats gl_cuda_counters;

static struct {
  pthread_once_t once;
  int count;
  char reason[160];
} cuda = { PTHREAD_ONCE_INIT, 0, "" };

static void probe(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(cuda.reason, sizeof cuda.reason, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    cudaGetLastError();          /* clear it */
    cuda.count = 0;
    return;
  }
  if (n == 0) snprintf(cuda.reason, sizeof cuda.reason, "no CUDA device found");
  cuda.count = n > GL_CUDA_MAXDEV ? GL_CUDA_MAXDEV : n;
}

static int cuda_count(const char **reason) {
  pthread_once(&cuda.once, probe);
  if (cuda.count == 0 && reason) *reason = cuda.reason;
  return cuda.count;
}

/* ---- errors ------------------------------------------------------------------------------ */

/* Errors after which the context is corrupt: every later call returns them again. */
static bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchTimeout: case cudaErrorAssert:
    case cudaErrorHardwareStackError: case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace: case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure: case cudaErrorECCUncorrectable: case cudaErrorContained:
    case cudaErrorTensorMemoryLeak: case cudaErrorExternalDevice: case cudaErrorMpsClientTerminated:
      return true;
    default:
      return false;
  }
}

gl_status gl_cuda_check(int index, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return GL_OK;
  cudaGetLastError();
  bool dead = sticky(e);
  if (dead && index >= 0 && index < GL_CUDA_MAXDEV)
    snprintf(gl_cuda_devs[index].broken, sizeof gl_cuda_devs[index].broken,
             "cuda:%d is unusable after an earlier error (%s: %s); restart the process",
             index, cudaGetErrorName(e), cudaGetErrorString(e));
  return gl_fail(e == cudaErrorMemoryAllocation ? GL_ENOMEM : GL_EDEVICE, "%s: %s: %s%s", what,
                 cudaGetErrorName(e), cudaGetErrorString(e),
                 dead ? " (the device is now unusable; restart the process)" : "");
}

static pthread_once_t sync_once = PTHREAD_ONCE_INIT;
static bool sync_each;
static void read_sync(void) {
  const char *v = getenv("GPULUA_SYNC");
  sync_each = v && *v && strcmp(v, "0") != 0;
}
bool gl_cuda_sync_each(void) {
  pthread_once(&sync_once, read_sync);
  return sync_each;
}

gl_status gl_cuda_launched(gl_device dev, cudaStream_t s, int rc, const char *op) {
  if (rc == GL_KERR_NOTSUP) return gl_fail(GL_ENOTSUP, "%s has no CUDA kernel for these dtypes", op);
  if (rc != 0) return gl_cuda_check(dev.index, (cudaError_t)rc, op);
  GL_CUDA_COUNT(kernels, 1);
  if (gl_cuda_sync_each()) return gl_cuda_wait(dev.index, s, NULL, op);
  return GL_OK;
}

/* The polling wait spins for its first SPIN_NS, as the runtime's own wait does on a
** machine with a free core, so short waits (an item() after a small kernel) keep their
** latency; after that it sleeps SLEEP_NS between questions, which costs a long wait at
** most that much and gives the core back. */
#define SPIN_NS 2000000L
#define SLEEP_NS 100000L

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

gl_status gl_cuda_wait(int index, cudaStream_t s, cudaEvent_t e, const char *what) {
  int64_t t0 = 0;
  for (;;) {
    cudaError_t r = e ? cudaEventQuery(e) : cudaStreamQuery(s);
    if (r != cudaErrorNotReady) return gl_cuda_check(index, r, what);
    cudaGetLastError();                 /* "not ready" is no error: keep it from a later check */
    if (gl_interrupted()) return gl_interrupt_check();
    int64_t t = mono_ns();
    if (t0 == 0) t0 = t;
    if (t - t0 >= SPIN_NS) {
      struct timespec nap = { 0, SLEEP_NS };
      nanosleep(&nap, NULL);            /* a signal cuts it short: the next poll sees it */
    }
  }
}

const char *gl_cuda_bytes(size_t n, char *buf) {
  static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
  if (n < 1024) { snprintf(buf, 32, "%zu bytes", n); return buf; }
  double v = (double)n / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) { v /= 1024.0; u++; }
  snprintf(buf, 32, "%.2f %s", v, unit[u]);
  return buf;
}

/* ---- devices ------------------------------------------------------------------------------- */

/* The runtime is asked which device is current (cheap, unlike cudaSetDevice): a copy of
** that answer kept here would go stale when another library in the process, or the
** program embedding gpu.so, calls cudaSetDevice on this thread. */
cudaError_t gl_cuda_set_device(int index) {
  int cur = -1;
  cudaError_t e = cudaGetDevice(&cur);
  if (e == cudaSuccess && cur == index) return cudaSuccess;
  if (e != cudaSuccess) cudaGetLastError();
  return cudaSetDevice(index);
}

gl_status gl_cuda_enter(gl_device dev, cudaStream_t *stream) {
  int n = cuda_count(NULL);
  if (!gl_cuda_owns(dev) || dev.index >= n) {
    const gl_backend *b;
    GL_TRY(gl_backend_for(dev, &b));            /* says why the device is unusable */
    char dn[GL_DEVNAME_SIZE];
    return gl_fail(GL_EDEVICE, "%s is not a CUDA device", gl_device_name(dev, dn));
  }
  gl_cuda_dev *d = &gl_cuda_devs[dev.index];
  if (d->broken[0]) return gl_fail(GL_EDEVICE, "%s", d->broken);
  GL_TRY(gl_cuda_check(dev.index, gl_cuda_set_device(dev.index), "cudaSetDevice"));
  /* checked without the lock: the acquire pairs with the release below, so a thread that
  ** sees the device started also sees its stream (weakly ordered hosts, aarch64, included) */
  if (!__atomic_load_n(&d->started, __ATOMIC_ACQUIRE)) {
    gl_status st = GL_OK;
    pthread_mutex_lock(&gl_cuda_lock);
    if (!d->started) {
      cudaError_t e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
      if (e == cudaSuccess) __atomic_store_n(&d->started, true, __ATOMIC_RELEASE);
      else st = gl_cuda_check(dev.index, e, "cudaStreamCreate");
    }
    pthread_mutex_unlock(&gl_cuda_lock);
    GL_TRY(st);
  }
  if (stream) *stream = d->stream;
  return GL_OK;
}

static gl_status cuda_info(int index, gl_devinfo *out) {
  struct cudaDeviceProp p;
  GL_TRY(gl_cuda_check(index, cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties"));
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%.127s", p.name);
  out->total_memory = p.totalGlobalMem;
  out->major = p.major;
  out->minor = p.minor;
  out->units = p.multiProcessorCount;
  return GL_OK;
}

/* What the kernels in kernels/ (and cuBLAS) implement: each family's set of dtypes is the
** one its .cu stamps templates for (elem_ops.h's kinds, the launch headers' GL_K*_DTYPES,
** philox.h's distributions); fill, copy, arange, indexing and sort take every dtype row
** (complex sorts in NumPy's order). A
** permutation is made on the host (the ops layer), never here. */
static bool cuda_supports(gl_op op, int which, gl_dtype dt) {
  if ((unsigned)dt >= GL_NDTYPE) return false;
  switch (op) {
    case GL_OP_UNARY:
      return (unsigned)which < GL_NUNOP && GL_DTSET_HAS(gl_opkind_dtypes[gl_unop_kind[which]], dt);
    case GL_OP_BINARY:
      return (unsigned)which < GL_NBINOP && GL_DTSET_HAS(gl_opkind_dtypes[gl_binop_kind[which]], dt);
    case GL_OP_REDUCE: return gl_cuda_has_reduce((gl_redop)which, dt);
    case GL_OP_MATMUL: return gl_cuda_has_matmul(dt);
    case GL_OP_RANDOM:
      return (unsigned)which < GL_NRAND && which != GL_RAND_PERMUTATION && GL_DTSET_HAS(GL_RAND_DTYPES(which), dt);
    case GL_OP_CONV: return GL_DTSET_HAS(GL_KCONV_DTYPES, dt);
    case GL_OP_FUSED: return GL_DTSET_HAS(GL_KFUSED_DTYPES, dt);
    case GL_OP_FILL: case GL_OP_COPY: case GL_OP_ARANGE: case GL_OP_INDEX: case GL_OP_SORT: return true;
    case GL_OP_LINALG: return gl_cuda_has_linalg(which, dt);
    case GL_OP_FFT: return gl_cuda_has_fft(which, dt);
    case GL_OP_SELECT: case GL_OP_HISTOGRAM: return false;   /* no .partition, .histogram yet */
    default: return false;
  }
}

static gl_status cuda_synchronize(gl_device dev) {
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  return gl_cuda_wait(dev.index, s, NULL, "synchronize");
}

/* "12.4" from CUDA's 12040 */
static void add_cuda_version(gl_versions *v, const char *name, int x) {
  if (x > 0) gl_versions_text(v, name, "%d.%d", x / 1000, (x % 1000) / 10);
}

/* gpu.config().versions: the CUDA runtime and driver, and cuDNN's library and header. */
static void cuda_versions(gl_versions *v) {
  int x = 0;
  if (cudaRuntimeGetVersion(&x) == cudaSuccess) add_cuda_version(v, "cuda_runtime", x);
  x = 0;
  if (cudaDriverGetVersion(&x) == cudaSuccess) add_cuda_version(v, "cuda_driver", x);
  cudaGetLastError();          /* a failed question must not become a later launch's error */
#ifdef GL_WITH_CUDNN
  void *h = dlopen("libcudnn.so.9", RTLD_LAZY | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libcudnn.so", RTLD_LAZY | RTLD_LOCAL);
  if (h) {
    size_t (*get)(void) = (size_t (*)(void))dlsym(h, "cudnnGetVersion");
    size_t version = get ? get() : 0;
    if (version > 0) gl_versions_number(v, "cudnn", (long long)version);
  }
  gl_versions_number(v, "cudnn_header", CUDNN_VERSION);
#endif
}

/* ---- timing: CUDA events on the device's stream ---------------------------------------------- */

/* An event remembers its device so elapsed() can make it current. */
typedef struct gl_cuda_event { cudaEvent_t e; gl_device dev; } gl_cuda_event;

static gl_status cuda_event_new(gl_device dev, void **out) {
  GL_TRY(gl_cuda_enter(dev, NULL));
  gl_cuda_event *ev = calloc(1, sizeof *ev);
  if (ev == NULL) return gl_fail(GL_ENOMEM, "event: out of host memory");
  gl_status st = gl_cuda_check(dev.index, cudaEventCreate(&ev->e), "event: cudaEventCreate");
  if (st != GL_OK) { free(ev); return st; }
  ev->dev = dev;
  *out = ev;
  return GL_OK;
}

static gl_status cuda_event_record(gl_device dev, void *p) {
  gl_cuda_event *ev = p;
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  return gl_cuda_check(dev.index, cudaEventRecord(ev->e, s), "event: cudaEventRecord");
}

static gl_status cuda_event_elapsed(void *start, void *end, double *ms) {
  gl_cuda_event *a = start, *b = end;
  GL_TRY(gl_cuda_enter(b->dev, NULL));
  GL_TRY(gl_cuda_wait(b->dev.index, NULL, b->e, "event: cudaEventSynchronize"));
  float t = 0;
  GL_TRY(gl_cuda_check(b->dev.index, cudaEventElapsedTime(&t, a->e, b->e), "event: cudaEventElapsedTime"));
  *ms = (double)t;
  return GL_OK;
}

/* After shutdown (or a sticky error) the event is just forgotten: no CUDA call. */
static void cuda_event_free(void *p) {
  gl_cuda_event *ev = p;
  if (ev == NULL) return;
  gl_cuda_dev *d = &gl_cuda_devs[ev->dev.index];
  if (d->started && !d->broken[0] && gl_cuda_set_device(ev->dev.index) == cudaSuccess) cudaEventDestroy(ev->e);
  cudaGetLastError();
  free(ev);
}

static void cuda_matmul_precision(bool tf32) {
  gl_cuda_matmul_precision(tf32);
#ifdef GL_WITH_CUDNN
  gl_cuda_dnn_precision(tf32);
#endif
}

/* ---- counters and teardown ------------------------------------------------------------- */

#define GL_STATS_FIELDS(X) X(h2d_bytes) X(h2d_copies) X(d2h_bytes) X(d2h_copies) X(d2d_bytes) \
  X(d2d_copies) X(kernels) X(allocs) X(cache_hits) X(device_mallocs)

static void cuda_stats(gl_stats *out, bool reset) {
#define GL_READ(f) out->f = __atomic_load_n(&gl_cuda_counters.f, __ATOMIC_RELAXED);
#define GL_ZERO(f) __atomic_store_n(&gl_cuda_counters.f, 0, __ATOMIC_RELAXED);
  if (out) { GL_STATS_FIELDS(GL_READ) }
  if (reset) { GL_STATS_FIELDS(GL_ZERO) }
#undef GL_READ
#undef GL_ZERO
}

/* Waits for each started device, returns its cached memory, staging buffer and stream.
** Live blocks stay in the books: freeing them later makes no CUDA call, and a later op
** starts the device again. A device broken by a sticky error gets no call at all. */
static void gl_cuda_shutdown(void) {
  if (cuda.count == 0) return;          /* never probed, or no device: nothing to do */
  pthread_mutex_lock(&gl_cuda_lock);
  for (int i = 0; i < cuda.count; i++) {
    gl_cuda_dev *d = &gl_cuda_devs[i];
    if (!d->started) continue;
    if (!d->broken[0] && gl_cuda_set_device(i) == cudaSuccess && cudaStreamSynchronize(d->stream) == cudaSuccess) {
      gl_cuda_blas_release(i);
      gl_cuda_solver_release(i);
      gl_cuda_fft_release(i);
#ifdef GL_WITH_CUDNN
      gl_cuda_dnn_release(i);
#endif
      gl_cuda_pool_trim(i);
      gl_cuda_staging_release(d);
      cudaStreamDestroy(d->stream);
    }
    cudaGetLastError();
    __atomic_store_n(&d->started, false, __ATOMIC_RELEASE);
    d->stream = NULL;
  }
  pthread_mutex_unlock(&gl_cuda_lock);
}

#ifndef GL_WITH_NCCL
/* Without NCCL the collectives only say so, when src/dist asks for them. */
static gl_status no_nccl(void) { return gl_fail(GL_ENOTSUP, "this build has no NCCL"); }
static const gl_collectives gl_cuda_nccl = { .load = no_nccl };
#endif

const gl_backend gl_cuda_backend = {
  .name = "cuda",
  .numbered = true,
  .kind = "gpu",
  .units = "multiprocessors",
  .dnn_paths = { .missing = "built without cuDNN", .no_layer_norm = "cuDNN has no layer norm entry here",
                 .conv_fallback = "im2col + cublas (%s)", .rnn_fallback = "fused loop (cublas + kernels/rnn.cu; %s)" },
  .versions = cuda_versions,
  .count = cuda_count,
  .info = cuda_info,
  .supports = cuda_supports,
  .alloc = gl_cuda_alloc,
  .free = gl_cuda_free,
  .empty_cache = gl_cuda_empty_cache,
  .memory = gl_cuda_memory,
  .to_host = gl_cuda_to_host,
  .from_host = gl_cuda_from_host,
  .synchronize = cuda_synchronize,
  .copy = gl_cuda_copy,
  .fill = gl_cuda_fill,
  .arange = gl_cuda_arange,
  .unary = gl_cuda_unary,
  .binary = gl_cuda_binary,
  .where = gl_cuda_where,
  .random = gl_cuda_random,
  .reduce = gl_cuda_reduce,
  .scan = gl_cuda_scan,
  .matmul = gl_cuda_matmul,
  .gather = gl_cuda_gather,
  .scatter = gl_cuda_scatter,
  .mask_select = gl_cuda_mask_select,
  .sort = gl_cuda_sort,
  .event_new = cuda_event_new,
  .event_record = cuda_event_record,
  .event_elapsed = cuda_event_elapsed,
  .event_free = cuda_event_free,
  .matmul_precision = cuda_matmul_precision,
  .stats = cuda_stats,
  .shutdown = gl_cuda_shutdown,
  .optim_step = gl_cuda_optim_step,
  .xent = gl_cuda_xent,
  .xent_bwd = gl_cuda_xent_bwd,
  .lstm_cell = gl_cuda_lstm_cell,
  .gru_cell = gl_cuda_gru_cell,
  .rnn_cell = gl_cuda_rnn_cell,
  .layer_norm = gl_cuda_layer_norm,
  .layer_norm_bwd = gl_cuda_layer_norm_bwd,
  .attention = gl_cuda_attention,
  .attention_bwd = gl_cuda_attention_bwd,
  .im2col = gl_cuda_im2col,
  .col2im = gl_cuda_col2im,
  .linalg = gl_cuda_linalg,
  .fft = gl_cuda_fft,
  .collectives = &gl_cuda_nccl,
#ifdef GL_WITH_CUDNN
  .dnn = &gl_cuda_dnn,
#endif
  .rtc = &gl_cuda_rtc,
  .telemetry = gl_cuda_telemetry,
};
