/*
** cuda_cudnn.c — convolution, pooling and batch norm through cuDNN 9 (its legacy API:
** cudnnConvolutionForward, cudnnPoolingForward, cudnnBatchNormalizationForwardTraining,
** ...), the table backend.h calls gl_dnn. Without cuDNN at build time this file is empty
** and the backend has no dnn table; without it at run time unavailable() says why and nn
** uses im2col + cuBLAS (cuda_conv.c).
**
** As with cuBLAS (cuda_matmul.c): dlopen at first use, only the entry points used here
** resolved (the header gives their types), one handle per device made lazily and bound
** to the device's stream, destroyed by gl_cuda_dnn_release at shutdown. Descriptors are
** made and destroyed per call (microseconds); workspaces come from the caching allocator
** and go back to it right after the call is queued (the stream orders their reuse).
**
** Convolution algorithms come from cuDNN's heuristics (..._v7), best first; one whose
** workspace cannot be allocated or that reports "not supported" is skipped for the next.
** The one that ran is remembered per device and shape (algo_cache), so a training loop
** asks the heuristics once per shape.
** float32 stays IEEE (FMA kernels) unless gpu.set_matmul_precision("tf32") allows tensor
** cores, as for matmul; float16/bfloat16 use tensor cores with float32 accumulation,
** float64 computes in double.
*/
#ifdef GL_WITH_CUDNN

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cudnn.h>
#include "cuda.h"
#include "cuda_cudnn.h"

/* ---- cuDNN, loaded on first use ------------------------------------------------------------ */

#define GL_DNN_SYMS(X) \
  X(cudnnGetVersion) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnDestroyTensorDescriptor) \
  X(cudnnCreateFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnDestroyFilterDescriptor) \
  X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType) \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnGetConvolutionForwardAlgorithm_v7) \
  X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(cudnnConvolutionBackwardData) \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) X(cudnnConvolutionBackwardFilter) \
  X(cudnnCreatePoolingDescriptor) X(cudnnSetPooling2dDescriptor) \
  X(cudnnDestroyPoolingDescriptor) X(cudnnPoolingForward) X(cudnnPoolingBackward) \
  X(cudnnDeriveBNTensorDescriptor) X(cudnnBatchNormalizationForwardTraining) \
  X(cudnnBatchNormalizationForwardInference) X(cudnnBatchNormalizationBackward) \
  X(cudnnSoftmaxForward) X(cudnnSoftmaxBackward)

static struct {
  pthread_once_t once;
  bool ok;
  void *lib;                    /* the dlopen handle, for gl_cuda_cudnn_load */
  char why[256];
#define GL_FIELD(name) __typeof__(name) *name;
  GL_DNN_SYMS(GL_FIELD)
#undef GL_FIELD
} dnn = { .once = PTHREAD_ONCE_INIT };

static cudnnHandle_t handles[GL_CUDA_MAXDEV];
static volatile int tf32_allowed;

/* Sets the function-pointer fields at slots[0..n) to the entry points names[0..n) of h:
** NULL, or the first name h lacks. */
static const char *resolve(void *h, const char *const *names, void *const *slots, int n) {
  for (int i = 0; i < n; i++) {
    gl_cuda_sym(h, slots[i], names[i]);
    void *p;
    memcpy(&p, slots[i], sizeof p);
    if (p == NULL) return names[i];
  }
  return NULL;
}

static void dnn_load(void) {
  void *h = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libcudnn.so", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    snprintf(dnn.why, sizeof dnn.why, "cuDNN not found: %s", e ? e : "cannot load libcudnn.so.9");
    return;
  }
  static const char *const names[] = { GL_DNN_SYMS(GL_CUDNN_NAME) };
#define GL_SLOT(name) (void *)&dnn.name,
  void *const slots[] = { GL_DNN_SYMS(GL_SLOT) };
#undef GL_SLOT
  const char *lacks = resolve(h, names, slots, (int)(sizeof names / sizeof names[0]));
  if (lacks) {
    snprintf(dnn.why, sizeof dnn.why, "cuDNN not usable: libcudnn.so.9 lacks %s", lacks);
    return;
  }
  /* the enums and status codes used here are cuDNN 9's (a plain libcudnn.so may be 8's) */
  size_t v = dnn.cudnnGetVersion();
  if (v / 10000 != CUDNN_MAJOR) {
    snprintf(dnn.why, sizeof dnn.why, "cuDNN not usable: version %zu found, this build needs cuDNN %d", v,
             CUDNN_MAJOR);
    return;
  }
  dnn.lib = h;
  dnn.ok = true;
}

static const char *dnn_unavailable(void) {
  pthread_once(&dnn.once, dnn_load);
  return dnn.ok ? NULL : dnn.why;
}

/* "op: call: CUDNN_STATUS_...: message" for a failed call. */
static gl_status dnn_check(cudnnStatus_t st, const char *op, const char *call) {
  if (st == CUDNN_STATUS_SUCCESS) return GL_OK;
  const char *name = dnn.cudnnGetErrorString ? dnn.cudnnGetErrorString(st) : NULL;
  int cat = (int)st / 1000;                /* cuDNN 9 groups its codes by thousands */
  gl_status code = (st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
                     st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) ? GL_ENOMEM
                    : cat == 3 ? GL_ENOTSUP : cat == 2 ? GL_EINVAL : GL_EDEVICE;
  return gl_fail(code, "%s: %s: %s (cuDNN status %d)", op, call, name ? name : "cuDNN error", (int)st);
}
#define GL_DNN(op, fn, ...) dnn_check(dnn.fn(__VA_ARGS__), op, #fn)

const char *gl_cuda_cudnn_unavailable(void) { return dnn_unavailable(); }

const char *gl_cuda_cudnn_load(const char *what, const char *const *names, void *const *slots, int n, char *msg,
                               size_t size) {
  const char *why = dnn_unavailable();
  if (why) return why;
  const char *lacks = resolve(dnn.lib, names, slots, n);
  if (lacks == NULL) return NULL;
  snprintf(msg, size, "cuDNN's %s not usable: libcudnn.so.9 lacks %s", what, lacks);
  return msg;
}

gl_status gl_cuda_cudnn_check(cudnnStatus_t st, const char *op, const char *call) { return dnn_check(st, op, call); }

/* The device's stream and handle (made on first use, on that stream). */
static gl_status dnn_enter(gl_device dev, const char *op, cudaStream_t *s, cudnnHandle_t *out) {
  GL_TRY(gl_cuda_enter(dev, s));
  if (dnn_unavailable()) return gl_fail(GL_ENOTSUP, "%s: %s", op, dnn.why);
  gl_status st = GL_OK;
  pthread_mutex_lock(&gl_cuda_lock);
  if (handles[dev.index] == NULL) {
    cudnnHandle_t h = NULL;
    st = dnn_check(dnn.cudnnCreate(&h), op, "cudnnCreate");
    if (st == GL_OK) {
      st = dnn_check(dnn.cudnnSetStream(h, *s), op, "cudnnSetStream");
      if (st == GL_OK) handles[dev.index] = h;
      else dnn.cudnnDestroy(h);
    }
  }
  *out = handles[dev.index];
  pthread_mutex_unlock(&gl_cuda_lock);
  return st;
}

gl_status gl_cuda_cudnn_enter(gl_device dev, const char *op, cudaStream_t *s, cudnnHandle_t *h) {
  return dnn_enter(dev, op, s, h);
}

static void algo_cache_free(int index);

void gl_cuda_dnn_release(int index) {
  if (index < 0 || index >= GL_CUDA_MAXDEV) return;
  algo_cache_free(index);
  gl_cuda_cudnn_attn_release(index);      /* its plans were made with the handle */
  if (handles[index] == NULL) return;
  if (dnn.cudnnDestroy) dnn.cudnnDestroy(handles[index]);
  handles[index] = NULL;
}

void gl_cuda_dnn_precision(bool tf32) { tf32_allowed = tf32; }
bool gl_cuda_dnn_tf32(void) { return tf32_allowed != 0; }

/* ---- descriptors ------------------------------------------------------------------------------ */

/* Everything one call makes; dnn_free destroys what is set. */
typedef struct dnn_descs {
  cudnnTensorDescriptor_t t[4];
  cudnnFilterDescriptor_t f;
  cudnnConvolutionDescriptor_t c;
  cudnnPoolingDescriptor_t p;
} dnn_descs;

static void dnn_free(dnn_descs *d) {
  for (int i = 0; i < 4; i++)
    if (d->t[i]) dnn.cudnnDestroyTensorDescriptor(d->t[i]);
  if (d->f) dnn.cudnnDestroyFilterDescriptor(d->f);
  if (d->c) dnn.cudnnDestroyConvolutionDescriptor(d->c);
  if (d->p) dnn.cudnnDestroyPoolingDescriptor(d->p);
}

#define CUDNN_DATA_none ((cudnnDataType_t)-1)
#define DNN_TYPE_(E, t) [GL_##E] = CUDNN_DATA_##t,
static const cudnnDataType_t dnn_types[GL_NDTYPE] = { GL_DTYPE_COLUMN(DNN_TYPE_, cudnn) };
#undef DNN_TYPE_
#undef CUDNN_DATA_none

cudnnDataType_t gl_cuda_cudnn_type(gl_dtype dt) { return dnn_types[dt]; }

/* The type the convolutions compute in: the halves' float32, else the data's own. */
static cudnnDataType_t dnn_compute_type(gl_dtype dt) {
  return dnn_types[gl_dtypes[dt].storage_only ? GL_FLOAT32 : dt];
}

/* cuDNN's 4-D descriptors take int extents and strides: the whole array must fit. */
static gl_status fits(const gl_array *a, const char *op) {
  if (a->size > INT_MAX)
    return gl_fail(GL_ENOTSUP, "%s: an operand of %lld elements is more than cuDNN's 4-D descriptors take "
                   "(2^31 - 1)", op, (long long)a->size);
  return GL_OK;
}

/* A contiguous NCHW descriptor of a (4-D) into *t. */
static gl_status tensor_desc(cudnnTensorDescriptor_t *t, const gl_array *a, const char *op) {
  GL_TRY(fits(a, op));
  GL_TRY(GL_DNN(op, cudnnCreateTensorDescriptor, t));
  return GL_DNN(op, cudnnSetTensor4dDescriptor, *t, CUDNN_TENSOR_NCHW, gl_cuda_cudnn_type((gl_dtype)a->dtype), (int)a->shape[0],
                                   (int)a->shape[1], (int)a->shape[2], (int)a->shape[3]);
}

/* Host scaling factors: double for float64 data, float otherwise. */
typedef struct dnn_scale { float f1, f0; double d1, d0; } dnn_scale;
static const dnn_scale scale = { 1.0f, 0.0f, 1.0, 0.0 };
#define GL_ONE(dt) ((dt) == GL_FLOAT64 ? (const void *)&scale.d1 : (const void *)&scale.f1)
#define GL_ZERO(dt) ((dt) == GL_FLOAT64 ? (const void *)&scale.d0 : (const void *)&scale.f0)

/* ---- one call ------------------------------------------------------------------------------- */

/* What a call holds: its name, device and dtype, the device's stream and handle, and the
** descriptors it makes. */
typedef struct dnn_call {
  const char *op;
  gl_device dev;
  int dt;
  cudaStream_t s;
  cudnnHandle_t h;
  dnn_descs d;
} dnn_call;

/* Starts call 'op' on a's device in a's dtype; call_end(c, ...) is right whatever this returns. */
static gl_status call_begin(dnn_call *c, const char *op, const gl_array *a) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->dev = gl_array_device(a);
  c->dt = a->dtype;
  return dnn_enter(c->dev, op, &c->s, &c->h);
}

/* Ends c with status st: the launch checked when st is GL_OK, the descriptors destroyed. */
static gl_status call_end(dnn_call *c, gl_status st) {
  if (st == GL_OK) st = gl_cuda_launched(c->dev, c->s, 0, c->op);
  dnn_free(&c->d);
  return st;
}

/* ---- convolution -------------------------------------------------------------------------- */

/* Descriptors of x (t[0]), y (t[1]), the filter and the convolution. */
static gl_status conv_descs(dnn_descs *d, const gl_array *x, const gl_array *w, const gl_array *y,
                            const gl_dnn_conv *c, const char *op) {
  int dt = x->dtype;
  GL_TRY(tensor_desc(&d->t[0], x, op));
  GL_TRY(tensor_desc(&d->t[1], y, op));
  GL_TRY(fits(w, op));
  GL_TRY(GL_DNN(op, cudnnCreateFilterDescriptor, &d->f));
  GL_TRY(GL_DNN(op, cudnnSetFilter4dDescriptor, d->f, gl_cuda_cudnn_type((gl_dtype)dt), CUDNN_TENSOR_NCHW, (int)w->shape[0], (int)w->shape[1],
                                   (int)w->shape[2], (int)w->shape[3]));
  GL_TRY(GL_DNN(op, cudnnCreateConvolutionDescriptor, &d->c));
  GL_TRY(GL_DNN(op, cudnnSetConvolution2dDescriptor, d->c, c->pad[0], c->pad[1], c->stride[0], c->stride[1], c->dil[0], c->dil[1],
                                 CUDNN_CROSS_CORRELATION, dnn_compute_type((gl_dtype)dt)));
  GL_TRY(GL_DNN(op, cudnnSetConvolutionGroupCount, d->c, c->groups));
  return GL_OK;
}

/* The math type asked for first, and whether an algorithm's math type may be used: IEEE
** float32 unless TF32 is allowed; never a down-conversion to float16 of wider data. */
static cudnnMathType_t first_math(int dt) {
  if (dt == GL_FLOAT16 || dt == GL_BFLOAT16) return CUDNN_TENSOR_OP_MATH;
  if (dt == GL_FLOAT32 && !tf32_allowed) return CUDNN_FMA_MATH;
  return CUDNN_DEFAULT_MATH;
}
static bool math_ok(int dt, cudnnMathType_t m) {
  if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && dt != GL_FLOAT16) return false;
  /* DEFAULT_MATH may use TF32 on Ampere and later: IEEE float32 needs FMA_MATH */
  return !(dt == GL_FLOAT32 && !tf32_allowed && m != CUDNN_FMA_MATH);
}

/* ---- chosen algorithms, per device -------------------------------------------------------
** A training loop convolves the same shapes every step: the algorithm that ran for a
** (direction, dtype, math, shapes, geometry) is kept, so cuDNN's heuristics are asked once
** per shape (PyTorch's cudnn.benchmark = False behaviour). GL_ALGO_CACHE entries per device,
** replaced oldest first; made on first use, freed with the handle (gl_cuda_dnn_release).
** Under gl_cuda_lock. An entry whose algorithm later fails to get its workspace or says
** "not supported" is dropped and the heuristics are asked again. */

#define GL_ALGO_CACHE 64

typedef struct dnn_key {
  int dir, dtype, math;                   /* math: first_math(dtype), so TF32 on/off differ */
  int x[4], w[4];                         /* the input (or dx) and the filter (or dw) */
  int pad[2], stride[2], dil[2], groups;
} dnn_key;

typedef struct dnn_algo {
  dnn_key key;
  int algo;
  cudnnMathType_t math;
  bool used;
} dnn_algo;

typedef struct dnn_algos {
  dnn_algo e[GL_ALGO_CACHE];
  unsigned next;                          /* the slot the next new entry takes */
} dnn_algos;

static dnn_algos *algo_cache[GL_CUDA_MAXDEV];

/* (gl_cuda_lock held, as gl_cuda_dnn_release is called) */
static void algo_cache_free(int index) {
  free(algo_cache[index]);
  algo_cache[index] = NULL;
}

/* The key of a convolution of x (N, C, H, W) by w in direction dir. memset first: the
** key is compared with memcmp. */
static void algo_key(dnn_key *k, int dir, int dt, const gl_array *x, const gl_array *w, const gl_dnn_conv *c) {
  memset(k, 0, sizeof *k);
  k->dir = dir;
  k->dtype = dt;
  k->math = (int)first_math(dt);
  for (int i = 0; i < 4; i++) {
    k->x[i] = (int)x->shape[i];
    k->w[i] = (int)w->shape[i];
  }
  for (int i = 0; i < 2; i++) {
    k->pad[i] = c->pad[i];
    k->stride[i] = c->stride[i];
    k->dil[i] = c->dil[i];
  }
  k->groups = c->groups;
}

static bool algo_lookup(int dev, const dnn_key *k, int *algo, cudnnMathType_t *math) {
  bool hit = false;
  pthread_mutex_lock(&gl_cuda_lock);
  dnn_algos *a = algo_cache[dev];
  for (int i = 0; a && i < GL_ALGO_CACHE && !hit; i++) {
    if (a->e[i].used && memcmp(&a->e[i].key, k, sizeof *k) == 0) {
      *algo = a->e[i].algo;
      *math = a->e[i].math;
      hit = true;
    }
  }
  pthread_mutex_unlock(&gl_cuda_lock);
  return hit;
}

static void algo_forget(int dev, const dnn_key *k) {
  pthread_mutex_lock(&gl_cuda_lock);
  dnn_algos *a = algo_cache[dev];
  for (int i = 0; a && i < GL_ALGO_CACHE; i++)
    if (a->e[i].used && memcmp(&a->e[i].key, k, sizeof *k) == 0) a->e[i].used = false;
  pthread_mutex_unlock(&gl_cuda_lock);
}

/* Best effort: without memory for the table, nothing is remembered. */
static void algo_remember(int dev, const dnn_key *k, int algo, cudnnMathType_t math) {
  pthread_mutex_lock(&gl_cuda_lock);
  dnn_algos *a = algo_cache[dev];
  if (a == NULL) a = algo_cache[dev] = calloc(1, sizeof *a);
  if (a) {
    dnn_algo *e = &a->e[a->next % GL_ALGO_CACHE];
    a->next = (a->next + 1) % GL_ALGO_CACHE;
    e->key = *k;
    e->algo = algo;
    e->math = math;
    e->used = true;
  }
  pthread_mutex_unlock(&gl_cuda_lock);
}

/* ---- convolution: the three directions ------------------------------------------------------ */

/* An algorithm asking for more workspace than this is passed over for the next one (FFT
** and Winograd variants can ask for gigabytes; a failed allocation would empty the cache). */
#define GL_DNN_MAX_WS ((size_t)1 << 30)

#define GL_NALGO 16

enum { DIR_FWD, DIR_BWD_DATA, DIR_BWD_FILTER };

/* The operands of a convolution by role, whatever the direction computes: x (or dx), w (or
** dw), y (or dy). conv_descs made t[0] for X, f for W and t[1] for Y. */
enum { ROLE_X, ROLE_W, ROLE_Y };

/* One of cuDNN's heuristic answers, whatever the direction's perf type (they differ only in
** the algorithm's enum). */
typedef struct conv_choice {
  int algo;
  cudnnStatus_t status;
  cudnnMathType_t math;
} conv_choice;

/* A direction: its cudnnGet...Algorithm_v7 (at most 'want' choices into ch, *n set),
** cudnnGet...WorkspaceSize and run call (on the operands' data by role), each with the
** direction's descriptor and operand order, and the calls' names for messages. */
typedef struct conv_dir {
  int dir;
  const char *algos_name, *run_name;
  cudnnStatus_t (*algos)(const dnn_call *c, int want, int *n, conv_choice *ch);
  cudnnStatus_t (*workspace)(const dnn_call *c, int algo, size_t *bytes);
  cudnnStatus_t (*run)(const dnn_call *c, void *const *data, int algo, void *ws, size_t bytes);
} conv_dir;

static cudnnStatus_t fwd_algos(const dnn_call *c, int want, int *n, conv_choice *ch) {
  cudnnConvolutionFwdAlgoPerf_t p[GL_NALGO];
  cudnnStatus_t st = dnn.cudnnGetConvolutionForwardAlgorithm_v7(c->h, c->d.t[0], c->d.f, c->d.c, c->d.t[1], want, n, p);
  for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < *n && i < want; i++)
    ch[i] = (conv_choice){ (int)p[i].algo, p[i].status, p[i].mathType };
  return st;
}
static cudnnStatus_t fwd_workspace(const dnn_call *c, int algo, size_t *bytes) {
  return dnn.cudnnGetConvolutionForwardWorkspaceSize(c->h, c->d.t[0], c->d.f, c->d.c, c->d.t[1],
                                                     (cudnnConvolutionFwdAlgo_t)algo, bytes);
}
static cudnnStatus_t fwd_run(const dnn_call *c, void *const *data, int algo, void *ws, size_t bytes) {
  return dnn.cudnnConvolutionForward(c->h, GL_ONE(c->dt), c->d.t[0], data[ROLE_X], c->d.f, data[ROLE_W], c->d.c,
                                     (cudnnConvolutionFwdAlgo_t)algo, ws, bytes, GL_ZERO(c->dt), c->d.t[1],
                                     data[ROLE_Y]);
}

static cudnnStatus_t bwd_data_algos(const dnn_call *c, int want, int *n, conv_choice *ch) {
  cudnnConvolutionBwdDataAlgoPerf_t p[GL_NALGO];
  cudnnStatus_t st =
      dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(c->h, c->d.f, c->d.t[1], c->d.c, c->d.t[0], want, n, p);
  for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < *n && i < want; i++)
    ch[i] = (conv_choice){ (int)p[i].algo, p[i].status, p[i].mathType };
  return st;
}
static cudnnStatus_t bwd_data_workspace(const dnn_call *c, int algo, size_t *bytes) {
  return dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(c->h, c->d.f, c->d.t[1], c->d.c, c->d.t[0],
                                                          (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
}
static cudnnStatus_t bwd_data_run(const dnn_call *c, void *const *data, int algo, void *ws, size_t bytes) {
  return dnn.cudnnConvolutionBackwardData(c->h, GL_ONE(c->dt), c->d.f, data[ROLE_W], c->d.t[1], data[ROLE_Y],
                                          c->d.c, (cudnnConvolutionBwdDataAlgo_t)algo, ws, bytes, GL_ZERO(c->dt),
                                          c->d.t[0], data[ROLE_X]);
}

static cudnnStatus_t bwd_filter_algos(const dnn_call *c, int want, int *n, conv_choice *ch) {
  cudnnConvolutionBwdFilterAlgoPerf_t p[GL_NALGO];
  cudnnStatus_t st =
      dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(c->h, c->d.t[0], c->d.t[1], c->d.c, c->d.f, want, n, p);
  for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < *n && i < want; i++)
    ch[i] = (conv_choice){ (int)p[i].algo, p[i].status, p[i].mathType };
  return st;
}
static cudnnStatus_t bwd_filter_workspace(const dnn_call *c, int algo, size_t *bytes) {
  return dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(c->h, c->d.t[0], c->d.t[1], c->d.c, c->d.f,
                                                            (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
}
static cudnnStatus_t bwd_filter_run(const dnn_call *c, void *const *data, int algo, void *ws, size_t bytes) {
  return dnn.cudnnConvolutionBackwardFilter(c->h, GL_ONE(c->dt), c->d.t[0], data[ROLE_X], c->d.t[1],
                                            data[ROLE_Y], c->d.c, (cudnnConvolutionBwdFilterAlgo_t)algo, ws, bytes,
                                            GL_ZERO(c->dt), c->d.f, data[ROLE_W]);
}

static const conv_dir conv_fwd = { DIR_FWD, "cudnnGetConvolutionForwardAlgorithm_v7", "cudnnConvolutionForward",
                                   fwd_algos, fwd_workspace, fwd_run };
static const conv_dir conv_bwd_data = { DIR_BWD_DATA, "cudnnGetConvolutionBackwardDataAlgorithm_v7",
                                        "cudnnConvolutionBackwardData", bwd_data_algos, bwd_data_workspace,
                                        bwd_data_run };
static const conv_dir conv_bwd_filter = { DIR_BWD_FILTER, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                                          "cudnnConvolutionBackwardFilter", bwd_filter_algos, bwd_filter_workspace,
                                          bwd_filter_run };

/* One attempt with algorithm 'algo' in math type 'math'. Returns false to go on to the next
** algorithm (the math type or workspace size refused, the workspace too big or not
** allocated, or cuDNN saying "not supported"), true once it ran or failed otherwise. *st is
** set by an attempt that allocated or ran, else left as it was. */
static bool conv_attempt(const conv_dir *dir, const dnn_call *c, void *const *data, int algo, cudnnMathType_t math,
                         gl_status *st) {
  size_t bytes = 0;
  void *ws = NULL;
  if (dnn.cudnnSetConvolutionMathType(c->d.c, math) != CUDNN_STATUS_SUCCESS) return false;
  if (dir->workspace(c, algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > GL_DNN_MAX_WS) return false;
  if (bytes > 0) {
    gl_status a = gl_workspace_alloc(c->dev, bytes, &ws);
    if (a != GL_OK) {
      *st = a;
      return false;
    }
  }
  cudnnStatus_t r = dir->run(c, data, algo, ws, bytes);
  if (ws) gl_cuda_free(c->dev, ws, bytes);
  *st = dnn_check(r, c->op, dir->run_name);
  if ((int)r / 1000 == 3) return false;           /* not supported: the next algorithm */
  if (*st == GL_OK) *st = gl_cuda_launched(c->dev, c->s, 0, c->op);
  return true;
}

static gl_status no_algo(const char *op) {
  return gl_fail(GL_ENOTSUP, "%s: cuDNN has no algorithm for this convolution", op);
}

/* Runs the convolution with the remembered algorithm of its key if any, else with the
** heuristics' algorithms in order, then algorithm 0 in the first math type; the one that
** ran is remembered. */
static gl_status conv_try(const conv_dir *dir, const dnn_call *c, const dnn_key *key, void *const *data) {
  gl_status st;
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  if (algo_lookup(c->dev.index, key, &algo, &math)) {
    st = no_algo(c->op);
    if (conv_attempt(dir, c, data, algo, math, &st)) return st;
    algo_forget(c->dev.index, key);
  }
  conv_choice ch[GL_NALGO];
  int n = 0;
  cudnnMathType_t m0 = first_math(c->dt);
  st = GL_DNN(c->op, cudnnSetConvolutionMathType, c->d.c, m0);
  if (st == GL_OK) st = dnn_check(dir->algos(c, GL_NALGO - 1, &n, ch), c->op, dir->algos_name);
  if (st != GL_OK) return st;
  if (n < 0 || n > GL_NALGO - 1) n = 0;
  ch[n++] = (conv_choice){ 0, CUDNN_STATUS_SUCCESS, m0 };
  st = no_algo(c->op);
  for (int i = 0; i < n; i++) {
    if (ch[i].status != CUDNN_STATUS_SUCCESS || !math_ok(c->dt, ch[i].math)) continue;
    if (conv_attempt(dir, c, data, ch[i].algo, ch[i].math, &st)) {
      if (st == GL_OK) algo_remember(c->dev.index, key, ch[i].algo, ch[i].math);
      break;
    }
  }
  return st;
}

/* A convolution in direction 'dir' over x (or dx), w (or dw) and y (or dy), which share a
** device and a dtype: the device's handle and stream, the descriptors, the algorithm cache's
** key, then conv_try (which checks the launch of what ran). */
static gl_status conv_direction(const conv_dir *dir, const char *op, const gl_array *x, const gl_array *w,
                                const gl_array *y, const gl_dnn_conv *cv) {
  void *data[3] = { [ROLE_X] = gl_array_data(x), [ROLE_W] = gl_array_data(w), [ROLE_Y] = gl_array_data(y) };
  dnn_key key;
  dnn_call c;
  gl_status st = call_begin(&c, op, x);
  algo_key(&key, dir->dir, c.dt, x, w, cv);
  if (st == GL_OK) st = conv_descs(&c.d, x, w, y, cv, op);
  if (st == GL_OK) st = conv_try(dir, &c, &key, data);
  dnn_free(&c.d);
  return st;
}

static gl_status dnn_conv2d(const gl_array *y, const gl_array *x, const gl_array *w, const gl_dnn_conv *c) {
  return conv_direction(&conv_fwd, "conv2d", x, w, y, c);
}

static gl_status dnn_conv2d_bwd_data(const gl_array *dx, const gl_array *dy, const gl_array *w,
                                     const gl_dnn_conv *c) {
  return conv_direction(&conv_bwd_data, "conv2d_backward_data", dx, w, dy, c);
}

static gl_status dnn_conv2d_bwd_filter(const gl_array *dw, const gl_array *x, const gl_array *dy,
                                       const gl_dnn_conv *c) {
  return conv_direction(&conv_bwd_filter, "conv2d_backward_filter", x, dw, dy, c);
}

/* ---- pooling ------------------------------------------------------------------------------- */

/* Starts pooling call op with the descriptors of x (t[0]), y (t[1]) and the window. */
static gl_status pool_begin(dnn_call *c, const char *op, bool max, const gl_array *x, const gl_array *y, const int *k,
                            const int *stride, const int *pad) {
  dnn_descs *d = &c->d;
  GL_TRY(call_begin(c, op, x));
  GL_TRY(tensor_desc(&d->t[0], x, op));
  GL_TRY(tensor_desc(&d->t[1], y, op));
  GL_TRY(GL_DNN(op, cudnnCreatePoolingDescriptor, &d->p));
  return GL_DNN(op, cudnnSetPooling2dDescriptor, d->p, max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                 CUDNN_PROPAGATE_NAN, k[0], k[1], pad[0], pad[1], stride[0], stride[1]);
}

static gl_status dnn_pool2d(bool max, const gl_array *y, const gl_array *x, const int *k, const int *stride,
                            const int *pad) {
  const char *op = max ? "max_pool2d" : "avg_pool2d";
  dnn_call c;
  gl_status st = pool_begin(&c, op, max, x, y, k, stride, pad);
  if (st == GL_OK)
    st = GL_DNN(op, cudnnPoolingForward, c.h, c.d.p, GL_ONE(c.dt), c.d.t[0], gl_array_data(x), GL_ZERO(c.dt),
                c.d.t[1], gl_array_data(y));
  return call_end(&c, st);
}

static gl_status dnn_pool2d_bwd(bool max, const gl_array *dx, const gl_array *x, const gl_array *y,
                                const gl_array *dy, const int *k, const int *stride, const int *pad) {
  const char *op = max ? "max_pool2d_backward" : "avg_pool2d_backward";
  dnn_call c;
  gl_status st = pool_begin(&c, op, max, x, y, k, stride, pad);
  if (st == GL_OK)          /* y, dy share t[1]; x, dx share t[0] */
    st = GL_DNN(op, cudnnPoolingBackward, c.h, c.d.p, GL_ONE(c.dt), c.d.t[1], gl_array_data(y), c.d.t[1],
                gl_array_data(dy), c.d.t[0], gl_array_data(x), GL_ZERO(c.dt), c.d.t[0], gl_array_data(dx));
  return call_end(&c, st);
}

/* ---- softmax ------------------------------------------------------------------------------- */

/* Starts softmax call op with one descriptor (t[0]) for x, y, dx and dy (rows, C) as (rows, C,
** 1, 1): CUDNN_SOFTMAX_MODE_INSTANCE normalises over C. */
static gl_status softmax_begin(dnn_call *c, const char *op, const gl_array *x) {
  GL_TRY(call_begin(c, op, x));
  GL_TRY(fits(x, op));
  GL_TRY(GL_DNN(op, cudnnCreateTensorDescriptor, &c->d.t[0]));
  return GL_DNN(op, cudnnSetTensor4dDescriptor, c->d.t[0], CUDNN_TENSOR_NCHW, gl_cuda_cudnn_type((gl_dtype)x->dtype), (int)x->shape[0],
                (int)x->shape[1], 1, 1);
}

static gl_status dnn_softmax(bool log, const gl_array *y, const gl_array *x) {
  const char *op = log ? "log_softmax" : "softmax";
  dnn_call c;
  gl_status st = softmax_begin(&c, op, x);
  if (st == GL_OK)
    st = GL_DNN(op, cudnnSoftmaxForward, c.h, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                CUDNN_SOFTMAX_MODE_INSTANCE, GL_ONE(c.dt), c.d.t[0], gl_array_data(x), GL_ZERO(c.dt), c.d.t[0],
                gl_array_data(y));
  return call_end(&c, st);
}

static gl_status dnn_softmax_bwd(bool log, const gl_array *dx, const gl_array *y, const gl_array *dy) {
  const char *op = log ? "log_softmax_backward" : "softmax_backward";
  dnn_call c;
  gl_status st = softmax_begin(&c, op, y);
  if (st == GL_OK)
    st = GL_DNN(op, cudnnSoftmaxBackward, c.h, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                CUDNN_SOFTMAX_MODE_INSTANCE, GL_ONE(c.dt), c.d.t[0], gl_array_data(y), c.d.t[0], gl_array_data(dy),
                GL_ZERO(c.dt), c.d.t[0], gl_array_data(dx));
  return call_end(&c, st);
}

/* ---- batch norm ---------------------------------------------------------------------------- */

/* Starts batch-norm call op with the descriptors of x (t[0], 4-D) and of the per-channel
** operands (t[1], derived). */
static gl_status bn_begin(dnn_call *c, const char *op, const gl_array *x) {
  GL_TRY(call_begin(c, op, x));
  GL_TRY(tensor_desc(&c->d.t[0], x, op));
  GL_TRY(GL_DNN(op, cudnnCreateTensorDescriptor, &c->d.t[1]));
  return GL_DNN(op, cudnnDeriveBNTensorDescriptor, c->d.t[1], c->d.t[0], CUDNN_BATCHNORM_SPATIAL);
}

static void *data_or_null(const gl_array *a) { return a ? gl_array_data(a) : NULL; }

static gl_status dnn_bn_train(const gl_array *y, const gl_array *save_mean, const gl_array *save_invstd,
                              const gl_array *x, const gl_array *w, const gl_array *b, const gl_array *rmean,
                              const gl_array *rvar, double momentum, double eps) {
  const char *op = "batch_norm";
  dnn_call c;
  gl_status st = bn_begin(&c, op, x);
  if (st == GL_OK)
    st = GL_DNN(op, cudnnBatchNormalizationForwardTraining, c.h, CUDNN_BATCHNORM_SPATIAL, GL_ONE(c.dt), GL_ZERO(c.dt),
                c.d.t[0], gl_array_data(x), c.d.t[0], gl_array_data(y), c.d.t[1], gl_array_data(w), gl_array_data(b),
                momentum, data_or_null(rmean), data_or_null(rvar), eps, gl_array_data(save_mean),
                gl_array_data(save_invstd));
  return call_end(&c, st);
}

static gl_status dnn_bn_infer(const gl_array *y, const gl_array *x, const gl_array *w, const gl_array *b,
                              const gl_array *rmean, const gl_array *rvar, double eps) {
  const char *op = "batch_norm";
  dnn_call c;
  gl_status st = bn_begin(&c, op, x);
  if (st == GL_OK)
    st = GL_DNN(op, cudnnBatchNormalizationForwardInference, c.h, CUDNN_BATCHNORM_SPATIAL, GL_ONE(c.dt), GL_ZERO(c.dt),
                c.d.t[0], gl_array_data(x), c.d.t[0], gl_array_data(y), c.d.t[1], gl_array_data(w), gl_array_data(b),
                gl_array_data(rmean), gl_array_data(rvar), eps);
  return call_end(&c, st);
}

static gl_status dnn_bn_bwd(const gl_array *dx, const gl_array *dw, const gl_array *db, const gl_array *x,
                            const gl_array *dy, const gl_array *w, const gl_array *save_mean,
                            const gl_array *save_invstd, double eps) {
  const char *op = "batch_norm_backward";
  dnn_call c;
  gl_status st = bn_begin(&c, op, x);
  if (st == GL_OK)
    st = GL_DNN(op, cudnnBatchNormalizationBackward, c.h, CUDNN_BATCHNORM_SPATIAL, GL_ONE(c.dt), GL_ZERO(c.dt),
                GL_ONE(c.dt), GL_ZERO(c.dt), c.d.t[0], gl_array_data(x), c.d.t[0], gl_array_data(dy), c.d.t[0],
                gl_array_data(dx), c.d.t[1], gl_array_data(w), gl_array_data(dw), gl_array_data(db), eps,
                gl_array_data(save_mean), gl_array_data(save_invstd));
  return call_end(&c, st);
}

const gl_dnn gl_cuda_dnn = {
  .name = "cudnn",
  .unavailable = dnn_unavailable,
  .conv2d = dnn_conv2d,
  .conv2d_bwd_data = dnn_conv2d_bwd_data,
  .conv2d_bwd_filter = dnn_conv2d_bwd_filter,
  .pool2d = dnn_pool2d,
  .pool2d_bwd = dnn_pool2d_bwd,
  .softmax = dnn_softmax,
  .softmax_bwd = dnn_softmax_bwd,
  .batch_norm_train = dnn_bn_train,
  .batch_norm_infer = dnn_bn_infer,
  .batch_norm_bwd = dnn_bn_bwd,
  .rnn_net_unavailable = gl_cuda_rnn_unavailable,
  .rnn_net_reserve = gl_cuda_rnn_reserve,
  .rnn_net = gl_cuda_rnn,
  .rnn_net_bwd = gl_cuda_rnn_bwd,
};

#endif /* GL_WITH_CUDNN */
