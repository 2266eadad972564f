/*
** cuda_cudnn_rnn.c — cuDNN 9's RNN API (cudnnRNNForward, cudnnRNNBackwardData_v8,
** cudnnRNNBackwardWeights_v8) under nn.RNN, nn.LSTM and nn.GRU on cuda: gl_dnn's rnn entries.
**
** The entry points come from the library cuda_cudnn.c opened (libcudnn.so.9 forwards them to
** libcudnn_adv), resolved on the first RNN call; one missing says so through rnn_net_unavailable and
** nn keeps its own loop. Descriptors are made per call, as cuda_cudnn.c does.
**
** Weights: the layer hands one flat array in PyTorch's order (per layer, per direction:
** weight_ih (G H, in), weight_hh (G H, H), bias_ih (G H), bias_hh (G H)). Each call places it in
** cuDNN's weight space with cudnnGetRNNWeightParams: cuDNN's matrices for one gate are
** (H, in) row-major, its linear-layer ids 0..G-1 are the input GEMM's gates and G..2G-1 the
** recurrent one's, in PyTorch's gate order (LSTM i, f, g, o; GRU r, z, n; GRU's recurrent bias
** inside r * (...), as PyTorch), so gate g's matrix is rows g H..(g+1) H of weight_ih/hh and
** its biases the same slices of bias_ih/hh (what PyTorch's own cuDNN path copies). The weight
** gradient goes back the same way. The space is a temporary of the caching allocator: a
** cached copy per parameter version would save those copies (not done).
**
** Sequences are all of the layer's length: the packed seq-major layout with every length L
** is exactly the (L, N, features) array.
*/
#ifdef GL_WITH_CUDNN

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_cudnn.h"

#define GL_RNN_SYMS(X) \
  X(cudnnCreateRNNDescriptor) X(cudnnDestroyRNNDescriptor) X(cudnnSetRNNDescriptor_v8) \
  X(cudnnCreateRNNDataDescriptor) X(cudnnDestroyRNNDataDescriptor) X(cudnnSetRNNDataDescriptor) \
  X(cudnnGetRNNWeightSpaceSize) X(cudnnGetRNNWeightParams) X(cudnnGetRNNTempSpaceSizes) \
  X(cudnnRNNForward) X(cudnnRNNBackwardData_v8) X(cudnnRNNBackwardWeights_v8) \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensorNdDescriptor) X(cudnnGetTensorNdDescriptor) \
  X(cudnnDestroyTensorDescriptor) X(cudnnCreateDropoutDescriptor) X(cudnnDestroyDropoutDescriptor) \
  X(cudnnSetDropoutDescriptor)

static struct {
  pthread_once_t once;
  const char *why;
  char msg[200];
#define GL_FIELD(name) __typeof__(name) *name;
  GL_RNN_SYMS(GL_FIELD)
#undef GL_FIELD
} rnn = { .once = PTHREAD_ONCE_INIT };

static void rnn_load(void) {
  static const char *const names[] = { GL_RNN_SYMS(GL_CUDNN_NAME) };
#define GL_SLOT(name) (void *)&rnn.name,
  void *const slots[] = { GL_RNN_SYMS(GL_SLOT) };
#undef GL_SLOT
  int n = (int)(sizeof names / sizeof names[0]);
  rnn.why = gl_cuda_cudnn_load("RNN", names, slots, n, rnn.msg, sizeof rnn.msg);
}

const char *gl_cuda_rnn_unavailable(void) {
  pthread_once(&rnn.once, rnn_load);
  return rnn.why;
}

#define GL_RNN(op, fn, ...) gl_cuda_cudnn_check(rnn.fn(__VA_ARGS__), op, #fn)

static const int gates_of[] = { [GL_RNN_TANH] = 1, [GL_RNN_RELU] = 1, [GL_RNN_LSTM] = 4, [GL_RNN_GRU] = 3 };
static const cudnnRNNMode_t cell_of[] = { [GL_RNN_TANH] = CUDNN_RNN_TANH, [GL_RNN_RELU] = CUDNN_RNN_RELU,
                                          [GL_RNN_LSTM] = CUDNN_LSTM, [GL_RNN_GRU] = CUDNN_GRU };

/* Everything one call describes: the network, its data, the sizes cuDNN asks for, and the
** sequence lengths on the device (cudnnRNNForward reads them there). */
typedef struct rnn_descs {
  cudnnRNNDescriptor_t net;
  cudnnDropoutDescriptor_t drop;
  cudnnRNNDataDescriptor_t x, y;
  cudnnTensorDescriptor_t h, m, b;   /* h: (layers * dirs, N, H); m, b: filled by GetRNNWeightParams */
  int32_t *seq_dev;
  size_t seq_bytes, wbytes, work, reserve;
  gl_device dev;
} rnn_descs;

static void rnn_free(rnn_descs *d) {
  if (d->net) rnn.cudnnDestroyRNNDescriptor(d->net);
  if (d->drop) rnn.cudnnDestroyDropoutDescriptor(d->drop);
  if (d->x) rnn.cudnnDestroyRNNDataDescriptor(d->x);
  if (d->y) rnn.cudnnDestroyRNNDataDescriptor(d->y);
  if (d->h) rnn.cudnnDestroyTensorDescriptor(d->h);
  if (d->m) rnn.cudnnDestroyTensorDescriptor(d->m);
  if (d->b) rnn.cudnnDestroyTensorDescriptor(d->b);
  if (d->seq_dev) gl_cuda_free(d->dev, d->seq_dev, d->seq_bytes);
  memset(d, 0, sizeof *d);
}

/* The data type, compute precision and math of dtype dt (float16 computes in float32 on
** tensor cores, as PyTorch's); bfloat16 is refused. float32 takes CUDNN_FMA_MATH unless TF32
** is allowed: CUDNN_DEFAULT_MATH lets cuDNN use TF32 tensor cores on sm_80 and later (about
** 1e-3 relative error), as the convolutions and PyTorch's RNNs do not. */
static gl_status rnn_types(gl_dtype dt, const char *op, cudnnDataType_t *data, cudnnDataType_t *math,
                           cudnnMathType_t *mt) {
  if (dt != GL_FLOAT32 && dt != GL_FLOAT64 && dt != GL_FLOAT16)
    return gl_fail(GL_ENOTSUP, "%s: cuDNN's RNN takes float16, float32 or float64, not %s", op, gl_dtypes[dt].name);
  *data = gl_cuda_cudnn_type(dt);
  *math = gl_cuda_cudnn_type(gl_dtypes[dt].storage_only ? GL_FLOAT32 : dt);
  *mt = dt == GL_FLOAT16 ? CUDNN_TENSOR_OP_MATH
      : dt == GL_FLOAT32 && !gl_cuda_dnn_tf32() ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  return GL_OK;
}

/* Makes d for r in dt (mode: the forward's, for the temporary sizes); with_seq: the lengths
** on the device too (the calls that run need them, the size query does not). */
static gl_status rnn_make(rnn_descs *d, cudnnHandle_t h, const gl_dnn_rnn_net *r, gl_dtype dt, const char *op,
                          cudnnForwardMode_t mode, bool with_seq, gl_device dev) {
  memset(d, 0, sizeof *d);
  d->dev = dev;
  if (r->seq > INT_MAX || r->batch > INT_MAX || r->input > INT_MAX || r->hidden > INT_MAX ||
      r->seq * r->batch * r->dirs * r->hidden > INT_MAX || r->seq * r->batch * r->input > INT_MAX)
    return gl_fail(GL_ENOTSUP, "%s: extents past 2^31 are more than cuDNN's RNN takes", op);
  cudnnDataType_t data = CUDNN_DATA_FLOAT, math = CUDNN_DATA_FLOAT;
  cudnnMathType_t mt = CUDNN_DEFAULT_MATH;
  GL_TRY(rnn_types(dt, op, &data, &math, &mt));
  int L = (int)r->seq, N = (int)r->batch, H = (int)r->hidden;
  GL_TRY(GL_RNN(op, cudnnCreateDropoutDescriptor, &d->drop));
  GL_TRY(GL_RNN(op, cudnnSetDropoutDescriptor, d->drop, h, 0.0f, NULL, 0, 0));   /* no dropout: no states */
  GL_TRY(GL_RNN(op, cudnnCreateRNNDescriptor, &d->net));
  GL_TRY(GL_RNN(op, cudnnSetRNNDescriptor_v8, d->net, CUDNN_RNN_ALGO_STANDARD, cell_of[r->mode],
                r->bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
                r->dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, data, math, mt,
                (int32_t)r->input, (int32_t)H, (int32_t)H, (int32_t)r->layers, d->drop, CUDNN_RNN_PADDED_IO_DISABLED));
  int *lens = malloc((size_t)N * sizeof *lens);
  if (lens == NULL) return gl_fail(GL_ENOMEM, "%s: out of host memory for %d sequence lengths", op, N);
  for (int i = 0; i < N; i++) lens[i] = L;
  gl_status st = GL_RNN(op, cudnnCreateRNNDataDescriptor, &d->x);
  if (st == GL_OK) st = GL_RNN(op, cudnnCreateRNNDataDescriptor, &d->y);
  if (st == GL_OK)
    st = GL_RNN(op, cudnnSetRNNDataDescriptor, d->x, data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, L, N,
                (int)r->input, lens, NULL);
  if (st == GL_OK)
    st = GL_RNN(op, cudnnSetRNNDataDescriptor, d->y, data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, L, N,
                r->dirs * H, lens, NULL);
  if (st == GL_OK && with_seq) {
    d->seq_bytes = (size_t)N * sizeof(int32_t);
    st = gl_cuda_alloc(dev, d->seq_bytes, (void **)&d->seq_dev);
    if (st == GL_OK) st = gl_cuda_from_host(dev, d->seq_dev, lens, d->seq_bytes);
  }
  free(lens);
  GL_TRY(st);
  int dims[3] = { r->layers * r->dirs, N, H }, strides[3] = { N * H, H, 1 };
  GL_TRY(GL_RNN(op, cudnnCreateTensorDescriptor, &d->h));
  GL_TRY(GL_RNN(op, cudnnSetTensorNdDescriptor, d->h, data, 3, dims, strides));
  GL_TRY(GL_RNN(op, cudnnCreateTensorDescriptor, &d->m));
  GL_TRY(GL_RNN(op, cudnnCreateTensorDescriptor, &d->b));
  GL_TRY(GL_RNN(op, cudnnGetRNNWeightSpaceSize, h, d->net, &d->wbytes));
  return GL_RNN(op, cudnnGetRNNTempSpaceSizes, h, d->net, mode, d->x, &d->work, &d->reserve);
}

/* Elements of descriptor t (as GetRNNWeightParams filled it). */
static gl_status desc_elems(cudnnTensorDescriptor_t t, const char *op, int64_t *n) {
  cudnnDataType_t dt;
  int nd = 0, dims[8], strides[8];
  GL_TRY(GL_RNN(op, cudnnGetTensorNdDescriptor, t, 8, &dt, &nd, dims, strides));
  *n = 1;
  for (int i = 0; i < nd && i < 8; i++) *n *= dims[i];
  return GL_OK;
}

static gl_status copy_bytes(gl_device dev, cudaStream_t s, void *dst, const void *src, size_t n) {
  return gl_cuda_check(dev.index, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
}

/* Moves the flat PyTorch-order parameters into cuDNN's weight space (to_flat false) or the
** weight space's gradients back into the flat order (to_flat true). */
static gl_status rnn_weights(rnn_descs *d, cudnnHandle_t h, cudaStream_t s, const gl_dnn_rnn_net *r, size_t esz,
                             char *flat, char *space, bool to_flat, const char *op) {
  int64_t G = gates_of[r->mode], H = r->hidden, off = 0;
  for (int l = 0; l < r->layers; l++) {
    int64_t in = l == 0 ? r->input : r->dirs * H;
    for (int dir = 0; dir < r->dirs; dir++) {
      int64_t o_ih = off, o_hh = o_ih + G * H * in, o_bih = o_hh + G * H * H, o_bhh = o_bih + G * H;
      off = r->bias ? o_bhh + G * H : o_bih;
      for (int lin = 0; lin < 2 * G; lin++) {
        bool rec = lin >= G;
        int64_t g = lin % G, cols = rec ? H : in;
        void *m = NULL, *b = NULL;
        GL_TRY(GL_RNN(op, cudnnGetRNNWeightParams, h, d->net, l * r->dirs + dir, d->wbytes, space, lin, d->m, &m, d->b,
                      &b));
        int64_t nm = 0;
        GL_TRY(desc_elems(d->m, op, &nm));
        if (m == NULL || nm != H * cols)
          return gl_fail(GL_EDEVICE, "%s: cuDNN's weight space holds %lld elements for layer %d matrix %d, expected %lld",
                         op, (long long)nm, l, lin, (long long)(H * cols));
        char *pt = flat + (size_t)((rec ? o_hh : o_ih) + g * H * cols) * esz;
        size_t mb = (size_t)(H * cols) * esz;
        GL_TRY(to_flat ? copy_bytes(d->dev, s, pt, m, mb) : copy_bytes(d->dev, s, m, pt, mb));
        if (!r->bias) continue;
        if (b == NULL) return gl_fail(GL_EDEVICE, "%s: cuDNN's weight space has no bias for layer %d matrix %d", op, l, lin);
        char *pb = flat + (size_t)((rec ? o_bhh : o_bih) + g * H) * esz;
        GL_TRY(to_flat ? copy_bytes(d->dev, s, pb, b, (size_t)H * esz) : copy_bytes(d->dev, s, b, pb, (size_t)H * esz));
      }
    }
  }
  return GL_OK;
}

gl_status gl_cuda_rnn_reserve(gl_device dev, const gl_dnn_rnn_net *r, gl_dtype dt, size_t *bytes) {
  const char *op = "rnn";
  const char *why = gl_cuda_rnn_unavailable();
  if (why) return gl_fail(GL_ENOTSUP, "%s: %s", op, why);
  cudaStream_t s;
  cudnnHandle_t h = NULL;
  GL_TRY(gl_cuda_cudnn_enter(dev, op, &s, &h));
  rnn_descs d;
  gl_status st = rnn_make(&d, h, r, dt, op, CUDNN_FWD_MODE_TRAINING, false, dev);
  *bytes = d.reserve;
  rnn_free(&d);
  return st;
}

/* A temporary of n bytes (NULL for none) from the caching allocator. */
static gl_status temp(gl_device dev, size_t n, void **p) {
  *p = NULL;
  return n ? gl_workspace_alloc(dev, n, p) : GL_OK;
}

/* What a forward or backward call holds: the device's stream and handle, the descriptors,
** and the weight space (the flat weights placed in it) and work space from the allocator. */
typedef struct rnn_call {
  const char *op;
  gl_device dev;
  size_t esz;
  cudaStream_t s;
  cudnnHandle_t h;
  rnn_descs d;
  void *ws, *work;
} rnn_call;

/* Sets up c for r in w's dtype in 'mode' (reserve, when given, checked against cuDNN's size).
** rnn_end(c, ...) is right whatever this returns. */
static gl_status rnn_begin(rnn_call *c, const char *op, const gl_dnn_rnn_net *r, cudnnForwardMode_t mode,
                           const gl_array *w, const gl_array *reserve) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->dev = gl_array_device(w);
  gl_dtype dt = (gl_dtype)w->dtype;
  c->esz = gl_dtypes[dt].size;
  const char *why = gl_cuda_rnn_unavailable();
  if (why) return gl_fail(GL_ENOTSUP, "%s: %s", op, why);
  GL_TRY(gl_cuda_cudnn_enter(c->dev, op, &c->s, &c->h));
  GL_TRY(rnn_make(&c->d, c->h, r, dt, op, mode, true, c->dev));
  if (reserve && (size_t)reserve->size != c->d.reserve)
    return gl_fail(GL_EINVAL, "%s: reserve has %lld bytes, cuDNN asks for %zu", op, (long long)reserve->size,
                   c->d.reserve);
  GL_TRY(temp(c->dev, c->d.wbytes, &c->ws));
  GL_TRY(temp(c->dev, c->d.work, &c->work));
  return rnn_weights(&c->d, c->h, c->s, r, c->esz, gl_array_data(w), c->ws, false, op);
}

/* Ends c's call with status st: the launch checked, the temporaries back to the cache once
** queued (the stream orders their reuse), the descriptors destroyed. */
static gl_status rnn_end(rnn_call *c, gl_status st) {
  if (st == GL_OK) st = gl_cuda_launched(c->dev, c->s, 0, c->op);
  if (c->ws) gl_cuda_free(c->dev, c->ws, c->d.wbytes);
  if (c->work) gl_cuda_free(c->dev, c->work, c->d.work);
  rnn_free(&c->d);
  return st;
}

gl_status gl_cuda_rnn(const gl_dnn_rnn_net *r, const gl_array *out, const gl_array *reserve, const gl_array *x,
                      const gl_array *w, const gl_array *hx, const gl_array *cx) {
  cudnnForwardMode_t mode = reserve ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
  rnn_call c;
  gl_status st = rnn_begin(&c, "rnn", r, mode, w, reserve);
  if (st == GL_OK) {
    char *y = gl_array_data(out);
    size_t ny = (size_t)(r->seq * r->batch * r->dirs * r->hidden), nh = (size_t)(r->layers * r->dirs * r->batch * r->hidden);
    char *hy = y + ny * c.esz, *cy = r->mode == GL_RNN_LSTM ? hy + nh * c.esz : NULL;
    st = GL_RNN(c.op, cudnnRNNForward, c.h, c.d.net, mode, c.d.seq_dev, c.d.x, gl_array_data(x), c.d.y, y, c.d.h,
                gl_array_data(hx), hy, c.d.h, cx ? gl_array_data(cx) : NULL, cy, c.d.wbytes, c.ws, c.d.work, c.work,
                reserve ? c.d.reserve : 0, reserve ? gl_array_data(reserve) : NULL);
  }
  return rnn_end(&c, st);
}

gl_status gl_cuda_rnn_bwd(const gl_dnn_rnn_net *r, const gl_array *dx, const gl_array *dw, const gl_array *dhx,
                          const gl_array *dcx, const gl_array *g, const gl_array *out, const gl_array *reserve,
                          const gl_array *x, const gl_array *w, const gl_array *hx, const gl_array *cx) {
  rnn_call c;
  void *dws = NULL;
  gl_status st = rnn_begin(&c, "rnn_backward", r, CUDNN_FWD_MODE_TRAINING, w, reserve);
  if (st == GL_OK) st = temp(c.dev, c.d.wbytes, &dws);
  if (st == GL_OK && dws) st = gl_cuda_check(c.dev.index, cudaMemsetAsync(dws, 0, c.d.wbytes, c.s), "cudaMemsetAsync");
  size_t esz = c.esz, ny = (size_t)(r->seq * r->batch * r->dirs * r->hidden),
         nh = (size_t)(r->layers * r->dirs * r->batch * r->hidden);
  const char *y = gl_array_data(out), *dy = gl_array_data(g);
  bool lstm = r->mode == GL_RNN_LSTM;
  if (st == GL_OK)          /* data first: it reads the reserve as the forward left it */
    st = GL_RNN(c.op, cudnnRNNBackwardData_v8, c.h, c.d.net, c.d.seq_dev, c.d.y, y, dy, c.d.x, gl_array_data(dx), c.d.h,
                gl_array_data(hx), dy + ny * esz, gl_array_data(dhx), c.d.h, lstm ? gl_array_data(cx) : NULL,
                lstm ? dy + (ny + nh) * esz : NULL, lstm ? gl_array_data(dcx) : NULL, c.d.wbytes, c.ws, c.d.work,
                c.work, c.d.reserve, gl_array_data(reserve));
  if (st == GL_OK)
    st = GL_RNN(c.op, cudnnRNNBackwardWeights_v8, c.h, c.d.net, CUDNN_WGRAD_MODE_ADD, c.d.seq_dev, c.d.x,
                gl_array_data(x), c.d.h, gl_array_data(hx), c.d.y, y, c.d.wbytes, dws, c.d.work, c.work, c.d.reserve,
                gl_array_data(reserve));
  if (st == GL_OK) st = rnn_weights(&c.d, c.h, c.s, r, esz, gl_array_data(dw), dws, true, c.op);
  if (dws) gl_cuda_free(c.dev, dws, c.d.wbytes);
  return rnn_end(&c, st);
}

#endif /* GL_WITH_CUDNN */
