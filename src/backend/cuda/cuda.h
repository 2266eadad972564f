/*
** cuda.h — pieces of the CUDA backend shared between its files: per-device state (stream,
** pool, staging buffer, broken flag), error mapping, the op epilogue, counters.
*/
#ifndef GL_CUDA_H
#define GL_CUDA_H

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include "../backend.h"
#include "../../core/interrupt.h"
#include "../../core/iter.h"
#include "../../../kernels/launch.h"

#define GL_CUDA_MAXDEV 64

typedef struct gl_cuda_pool gl_cuda_pool;        /* cuda_alloc.c */

typedef struct gl_cuda_dev {
  bool started;                  /* stream made (and not shut down since) */
  cudaStream_t stream;           /* non-blocking: every op of this device, in order */
  char broken[256];              /* non-empty: a sticky error made the device unusable */
  gl_cuda_pool *pool;            /* caching allocator (made on first allocation) */
  void *pinned;                  /* staging buffer for big transfers: 2 slots */
  cudaEvent_t slot_done[2];      /* last use of each slot */
  bool staging;                  /* pinned and the events exist */
} gl_cuda_dev;

/* One lock for devices, pools and counters: ops are serial per Lua state, so it is never
** contended in practice; it keeps two states in two threads from corrupting the pool. */
extern pthread_mutex_t gl_cuda_lock;
extern gl_cuda_dev gl_cuda_devs[GL_CUDA_MAXDEV];

/* This backend's table (cuda_backend.c), and whether d is one of its devices (the registry
** in src/backend/backend.c numbers the backends). */
extern const gl_backend gl_cuda_backend;
static inline bool gl_cuda_owns(gl_device d) { return gl_backend_get(d.type) == &gl_cuda_backend; }

/* Makes dev current and started (stream created on first use), or says why it cannot
** be used. The stream may be NULL. */
gl_status gl_cuda_enter(gl_device dev, cudaStream_t *stream);

/* cudaSetDevice(index), skipped when cudaGetDevice says the device is already current:
** every op enters its device, and cudaSetDevice costs far more than that question. */
cudaError_t gl_cuda_set_device(int index);

/* GL_OK for cudaSuccess; else clears the error, marks the device broken when the error
** is sticky, and fails with "<what>: <cudaErrorName>: <string>" (GL_ENOMEM for
** cudaErrorMemoryAllocation, GL_EDEVICE otherwise). */
gl_status gl_cuda_check(int index, cudaError_t e, const char *what);

/* After a launcher: maps its return code (GL_KERR_NOTSUP, a cudaError_t), counts the
** launch, and under GPULUA_SYNC=1 synchronises the stream and names 'op' on failure. */
gl_status gl_cuda_launched(gl_device dev, cudaStream_t s, int rc, const char *op);

/* Whether GPULUA_SYNC=1 (read once). */
bool gl_cuda_sync_each(void);

/* Waits for event e (or, when e is NULL, for everything queued on stream s) as
** cudaEventSynchronize / cudaStreamSynchronize would, but polls, so a stop request
** (core/interrupt.h) ends the wait with GL_EINTR. The device goes on with its queue:
** a kernel cannot be recalled, and what it writes is ordered on the stream before any
** later use of that memory. Errors as gl_cuda_check, naming 'what'. */
gl_status gl_cuda_wait(int index, cudaStream_t s, cudaEvent_t e, const char *what);

/* Counters (under gl_cuda_lock, or with atomics). */
extern gl_stats gl_cuda_counters;
#define GL_CUDA_COUNT(field, v) __atomic_fetch_add(&gl_cuda_counters.field, (uint64_t)(v), __ATOMIC_RELAXED)

/* "1.50 GiB" etc. into buf (at least 32 bytes). */
const char *gl_cuda_bytes(size_t n, char *buf);

/* cuda_alloc.c */
gl_status gl_cuda_alloc(gl_device dev, size_t nbytes, void **out);
void gl_cuda_free(gl_device dev, void *p, size_t nbytes);
/* The same with gl_cuda_lock held (a handle released at shutdown gives back its workspace). */
void gl_cuda_free_locked(int index, void *p);
void gl_cuda_empty_cache(gl_device dev);
void gl_cuda_memory(gl_device dev, gl_meminfo *m);
/* cudaFree of every wholly cached segment of device 'index' (gl_cuda_lock held, the
** device current, its stream synchronised). */
void gl_cuda_pool_trim(int index);

/* cuda_nvrtc.c: NVRTC and the driver API (opened at the first use), for the kernels
** compiled at run time (src/ops/jit_cuda.c) */
extern const gl_rtc gl_cuda_rtc;

/* cuda_copy.c */
gl_status gl_cuda_to_host(void *dst, gl_device dev, const void *src, size_t n);
gl_status gl_cuda_from_host(gl_device dev, void *dst, const void *src, size_t n);
gl_status gl_cuda_copy(const gl_array *dst, const gl_array *src);
gl_status gl_cuda_fill(const gl_array *dst, gl_scalar v);
gl_status gl_cuda_arange(const gl_array *dst, double start, double step);
/* Frees the staging buffer and events of d (the device current, its stream synchronised). */
void gl_cuda_staging_release(gl_cuda_dev *d);
/* The launcher's walk over the operands (same shape; dst first). */
void gl_cuda_kiter(gl_kiter *k, int nargs, const gl_array *const *arrays, const bool *scalar);

/* cuda_elem.c */
gl_status gl_cuda_unary(gl_unop op, const gl_array *dst, const gl_array *src);
gl_status gl_cuda_binary(gl_binop op, gl_dtype ct, const gl_array *dst, gl_operand a, gl_operand b);
gl_status gl_cuda_where(const gl_array *dst, const gl_array *cond, gl_operand a, gl_operand b);

/* cuda_random.c (kernels/random.cu): random fills, kernels/philox.h's stream */
gl_status gl_cuda_random(gl_rand_dist dist, const gl_array *dst, const gl_rand_req *req);

/* cuda_reduce.c (kernels/reduce.cu): reductions and scans */
gl_status gl_cuda_reduce(gl_redop op, const gl_array *dst, const gl_array *src, double param);
/* Whether kernels/reduce.cu has op into a result of dtype dt. */
bool gl_cuda_has_reduce(gl_redop op, gl_dtype dt);
gl_status gl_cuda_scan(gl_redop op, const gl_array *dst, const gl_array *src, int axis);

/* cuda_index.c (kernels/index.cu, sort.cu): gather, scatter, mask selection, sort */
gl_status gl_cuda_gather(const gl_array *dst, const gl_array *src, int axis, const gl_array *idx);
gl_status gl_cuda_scatter(const gl_array *dst, int axis, const gl_array *idx, const gl_array *src,
                          bool accumulate);
gl_status gl_cuda_mask_select(const gl_array *dst, const gl_array *src, const gl_array *mask);
gl_status gl_cuda_sort(const gl_array *values, const gl_array *indices, const gl_array *src, int axis,
                       bool descending);

/* cuda_matmul.c: cuBLAS (dlopen'ed on first use) and the integer kernel */
gl_status gl_cuda_matmul(const gl_array *dst, const gl_array *a, const gl_array *b);
/* Whether gl_cuda_matmul has a path for dtype dt (cuBLAS or kernels/matmul.cu's loop). */
bool gl_cuda_has_matmul(gl_dtype dt);
/* Whether float32 matmuls may use TF32 tensor cores (gpu.set_matmul_precision). */
void gl_cuda_matmul_precision(bool tf32);
/* Destroys device 'index''s cuBLAS handle (the device current, its stream synchronised). */
void gl_cuda_blas_release(int index);
/* cuBLAS's version once loaded and a handle exists, else 0. */
int gl_cuda_blas_version(void);

/* cuda_solver.c: gpu.linalg through cuSOLVER (dlopen'ed on first use), backend.h's gl_la_op */
gl_status gl_cuda_linalg(gl_la_op op, const gl_la_args *args, int64_t *bad);
/* Whether gl_cuda_linalg has gl_la_op 'which' in dtype dt (float32, float64). */
bool gl_cuda_has_linalg(int which, gl_dtype dt);
/* Destroys device 'index''s cuSOLVER handle (the device current, its stream synchronised). */
void gl_cuda_solver_release(int index);

/* cuda_fft.c: gpu.fft through cuFFT (dlopen'ed on first use), backend.h's gl_fft_kind */
gl_status gl_cuda_fft(const gl_array *out, const gl_array *in, const gl_fft_args *args);
bool gl_cuda_has_fft(int kind, gl_dtype dt);
/* Destroys device 'index''s cuFFT plans (gl_cuda_lock held, the device current, its stream
** synchronised). */
void gl_cuda_fft_release(int index);

/* cuda_rnn.c (kernels/rnn.cu): the fused LSTM cell of one time step */
gl_status gl_cuda_lstm_cell(gl_device dev, bool backward, gl_dtype dt, const gl_lstm_cell *s);
gl_status gl_cuda_gru_cell(gl_device dev, bool backward, gl_dtype dt, const gl_gru_cell *s);
gl_status gl_cuda_rnn_cell(gl_device dev, bool backward, gl_dtype dt, const gl_rnn_cell *s);
/* cuda_fused.c (kernels/fused.cu): gpu.fused's optimizer steps and cross-entropy */
gl_status gl_cuda_optim_step(gl_optim_kind kind, const gl_array *p, const gl_array *g,
                             const gl_array *const st[3], const gl_optim_hp *hp);
gl_status gl_cuda_xent(const gl_array *loss, const gl_array *probs, const gl_array *logits,
                       const gl_array *labels, const gl_array *target, double smoothing);
gl_status gl_cuda_xent_bwd(const gl_array *dst, const gl_array *probs, const gl_array *labels,
                           const gl_array *target, double smoothing, const gl_array *gout, double scale);
gl_status gl_cuda_attention(const gl_array *out, const gl_array *lse, const gl_array *q, const gl_array *k,
                            const gl_array *v, double scale, bool causal);
gl_status gl_cuda_attention_bwd(const gl_array *gq, const gl_array *gk, const gl_array *gv, const gl_array *g,
                                const gl_array *q, const gl_array *k, const gl_array *v, const gl_array *out,
                                const gl_array *lse, double scale, bool causal);
gl_status gl_cuda_layer_norm(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                             const gl_array *w, const gl_array *b, double eps);
gl_status gl_cuda_layer_norm_bwd(const gl_array *gx, const gl_array *gw, const gl_array *gb, const gl_array *g,
                                 const gl_array *x, const gl_array *mean, const gl_array *rstd, const gl_array *w);
/* cuda_conv.c (kernels/conv.cu): im2col / col2im, backend.h's contract */
gl_status gl_cuda_im2col(const gl_array *dst, const gl_array *src, const int *k, const int *stride,
                         const int *pad, const int *dil, double padval);
gl_status gl_cuda_col2im(const gl_array *dst, const gl_array *cols, const int *k, const int *stride,
                         const int *pad, const int *dil);

#ifdef GL_WITH_CUDNN
/* cuda_cudnn.c: convolution, pooling and batch norm through cuDNN (dlopen'ed on first use) */
extern const gl_dnn gl_cuda_dnn;
/* Destroys device 'index''s cuDNN handle (the device current, its stream synchronised). */
void gl_cuda_dnn_release(int index);
/* Whether float32 convolutions may use TF32 tensor cores (gpu.set_matmul_precision). */
void gl_cuda_dnn_precision(bool tf32);
/* Whether float32 cuDNN work may use TF32 tensor cores (else CUDNN_FMA_MATH, IEEE float32). */
bool gl_cuda_dnn_tf32(void);
/* cuda_cudnn_attn.c: backend.h's attention for float16/bfloat16 through cuDNN's fused SDPA
** graph; GL_ENOTSUP whenever cuDNN cannot (the ops layer then computes in float32). */
gl_status gl_cuda_cudnn_attention(const gl_array *out, const gl_array *lse, const gl_array *q, const gl_array *k,
                                  const gl_array *v, double scale, bool causal);
#endif

/* cuda_nccl.c: gpu.distributed's collectives on device memory (NCCL, dlopen at load);
** built only where <nccl.h> is found (GL_WITH_NCCL) */
#ifdef GL_WITH_NCCL
extern const gl_collectives gl_cuda_nccl;
#endif
/* cuda_nvml.c: power, energy, temperature and use of a device from NVML (backend.h's telemetry) */
void gl_cuda_telemetry(int index, gl_telemetry *t);

/* *field = the entry point 'name' of the library h, or NULL (dlsym returns void *; memcpy keeps
** the conversion to a function pointer defined). The loaders of NVRTC and NVML use it. */
static inline void gl_cuda_sym(void *h, void *field, const char *name) {
  void *p = dlsym(h, name);
  memcpy(field, &p, sizeof p);
}

/* A table of entry points: gl_cuda_syms fills each field and answers the name of the first
** one h lacks (NULL: none). */
typedef struct gl_cuda_entry { const char *name; void *field; } gl_cuda_entry;
static inline const char *gl_cuda_syms(void *h, const gl_cuda_entry *e, size_t n) {
  const char *missing = NULL;
  for (size_t i = 0; i < n; i++) {
    gl_cuda_sym(h, e[i].field, e[i].name);
    if (missing == NULL && dlsym(h, e[i].name) == NULL) missing = e[i].name;
  }
  return missing;
}

#endif
