/*
** cuda_cudnn_attn.c — cuDNN's fused scaled dot-product attention (its flash-attention engines,
** reached through the backend graph API) for float16/bfloat16 gpu.fused.attention on cuda.
**
** The graph, one head per batch entry (q as (B, 1, L, E), k^T as (B, 1, E, S), ...):
**   S = Q K^T (matmul, float32) -> S * scale (by value) -> causal: row = GEN_INDEX(S, axis 2),
**   col = GEN_INDEX(S, axis 3), keep = row >= col, S = keep ? S : -FLT_MAX ->
**   m = max_j S, e = exp(S - m), l = sum_j e, stats = m + log l (the forward's lse, float32),
**   P = e / l -> O = P V (matmul, float32 accumulation).
** Engines want particular types for P: the graph is tried with P in the data's dtype and in
** float32, each with and without the F16x16 reordering TransformerEngine's graphs use, and
** the first that yields a plan is kept. cuDNN's heuristics (mode A) rank the engine
** configurations; the first of them whose execution plan finalizes is kept per (device,
** dtype, B, L, S, E, Ev, causal) together with every descriptor it was built from, so a
** training loop builds each shape's plan once; a shape cuDNN refuses is remembered as
** refused. Any failure answers GL_ENOTSUP, and src/ops/fused.c then runs the own kernel in
** float32: never an error for the user.
**
** The backward is not done here: the half backward runs in float32 (src/ops/fused.c).
*/
#ifdef GL_WITH_CUDNN

#include <float.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_cudnn.h"

#define GL_ATT_SYMS(X) \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute) \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute) X(cudnnGetErrorString)

static struct {
  pthread_once_t once;
  const char *why;
  char msg[200];
#define GL_FIELD(name) __typeof__(name) *name;
  GL_ATT_SYMS(GL_FIELD)
#undef GL_FIELD
} att = { .once = PTHREAD_ONCE_INIT };

static void att_load(void) {
  static const char *const names[] = { GL_ATT_SYMS(GL_CUDNN_NAME) };
#define GL_SLOT(name) (void *)&att.name,
  void *const slots[] = { GL_ATT_SYMS(GL_SLOT) };
#undef GL_SLOT
  int n = (int)(sizeof names / sizeof names[0]);
  att.why = gl_cuda_cudnn_load("graph API", names, slots, n, att.msg, sizeof att.msg);
}

/* ---- building a graph: descriptors with a sticky failure ------------------------------------ */

#define GL_ATT_TRIES 8                     /* engine configurations tried per graph */
/* Descriptors of one graph and its plan: the forward's tensors and operations (47 with the
** causal mask: 19 tensors, 14 operations of two descriptors each), then the operation
** graph, the heuristics, GL_ATT_TRIES engine configurations and up to as many plans. */
#define GL_ATT_NGRAPH 48
#define GL_ATT_NDESC (GL_ATT_NGRAPH + 2 + 2 * GL_ATT_TRIES)
#define GL_ATT_NOPS 20

/* Tensor uids: the variant pack's; 100 and up are virtual. */
enum { UID_Q = 1, UID_KT, UID_V, UID_O, UID_STATS, UID_SCALE, UID_MASKVAL, UID_VIRTUAL = 100 };

typedef struct att_graph {
  cudnnStatus_t st;                        /* the first failure; later calls do nothing */
  const char *call;                        /* and what failed */
  int nd, nops;
  cudnnBackendDescriptor_t d[GL_ATT_NDESC];    /* everything made, destroyed together */
  cudnnBackendDescriptor_t ops[GL_ATT_NOPS];
  int64_t next_uid;
  int refs;                                /* holders of a cached graph: its entry, running calls */
} att_graph;

static void fail(att_graph *g, cudnnStatus_t st, const char *call) {
  if (g->st == CUDNN_STATUS_SUCCESS && st != CUDNN_STATUS_SUCCESS) {
    g->st = st;
    g->call = call;
  }
}

static cudnnBackendDescriptor_t make(att_graph *g, cudnnBackendDescriptorType_t type) {
  if (g->st != CUDNN_STATUS_SUCCESS) return NULL;
  if (g->nd == GL_ATT_NDESC) {
    fail(g, CUDNN_STATUS_NOT_SUPPORTED, "(too many descriptors)");
    return NULL;
  }
  cudnnBackendDescriptor_t x = NULL;
  fail(g, att.cudnnBackendCreateDescriptor(type, &x), "cudnnBackendCreateDescriptor");
  if (g->st == CUDNN_STATUS_SUCCESS) g->d[g->nd++] = x;
  return g->st == CUDNN_STATUS_SUCCESS ? x : NULL;
}

static void set(att_graph *g, cudnnBackendDescriptor_t x, cudnnBackendAttributeName_t name,
                cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  if (g->st == CUDNN_STATUS_SUCCESS) fail(g, att.cudnnBackendSetAttribute(x, name, type, n, v), "cudnnBackendSetAttribute");
}

static void finalize(att_graph *g, cudnnBackendDescriptor_t x) {
  if (g->st == CUDNN_STATUS_SUCCESS) fail(g, att.cudnnBackendFinalize(x), "cudnnBackendFinalize");
}

/* Sets attribute 'name' of x to descriptor d. */
static void set_desc(att_graph *g, cudnnBackendDescriptor_t x, cudnnBackendAttributeName_t name,
                     cudnnBackendDescriptor_t d) {
  set(g, x, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
}

/* Finalizes operation op and adds it to the graph's operations. */
static void add_op(att_graph *g, cudnnBackendDescriptor_t op) {
  finalize(g, op);
  if (g->st != CUDNN_STATUS_SUCCESS) return;
  if (g->nops == GL_ATT_NOPS) fail(g, CUDNN_STATUS_NOT_SUPPORTED, "(too many operations)");
  else g->ops[g->nops++] = op;
}

static void graph_free(att_graph *g) {
  for (int i = g->nd - 1; i >= 0; i--) att.cudnnBackendDestroyDescriptor(g->d[i]);
  g->nd = g->nops = 0;
}

enum { T_VIRTUAL = 1, T_BY_VALUE = 2, T_F16X16 = 4 };

/* A 4-D tensor of extents dim and strides str; uid 0 takes the next virtual uid. */
static cudnnBackendDescriptor_t tensor_strided(att_graph *g, int64_t uid, cudnnDataType_t type, const int64_t dim[4],
                                               const int64_t str[4], int flags) {
  int64_t align = 16;
  bool is_virtual = (flags & T_VIRTUAL) != 0, by_value = (flags & T_BY_VALUE) != 0;
  if (uid == 0) uid = g->next_uid++;
  cudnnBackendDescriptor_t t = make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
  set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str);
  set(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  if (flags & T_F16X16) {
    cudnnBackendTensorReordering_t r = CUDNN_TENSOR_REORDERING_F16x16;
    set(g, t, CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 1, &r);
  }
  finalize(g, t);
  return t;
}

/* A contiguous (d0, d1, d2, d3) tensor. */
static cudnnBackendDescriptor_t tensor(att_graph *g, int64_t uid, cudnnDataType_t type, int64_t d0, int64_t d1,
                                       int64_t d2, int64_t d3, int flags) {
  const int64_t dim[4] = { d0, d1, d2, d3 }, str[4] = { d1 * d2 * d3, d2 * d3, d3, 1 };
  return tensor_strided(g, uid, type, dim, str, flags);
}

/* y = mode(x [, b [, t]]) computed in 'prec'; axis >= 0 for GEN_INDEX. */
static void pointwise(att_graph *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, int64_t axis,
                      cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                      cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t pw = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  if (axis >= 0) set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  finalize(g, pw);
  cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  if (t) set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
  set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  add_op(g, op);
}

/* Sets x's compute type (attribute 'comp') to float32 and finalizes it. */
static void finalize_f32(att_graph *g, cudnnBackendDescriptor_t x, cudnnBackendAttributeName_t comp) {
  cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  set(g, x, comp, CUDNN_TYPE_DATA_TYPE, 1, &f32);
  finalize(g, x);
}

/* y (B, 1, L, 1) = reduce_j x (B, 1, L, S) in float32. */
static void reduction(att_graph *g, cudnnReduceTensorOp_t how, cudnnBackendDescriptor_t x,
                      cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t rd = make(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how);
  finalize_f32(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE);
  cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
  set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
  set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, rd);
  add_op(g, op);
}

/* c = a b, batched over the leading axes, float32 accumulation. */
static void matmul(att_graph *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
  cudnnBackendDescriptor_t mm = make(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  finalize_f32(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE);
  cudnnBackendDescriptor_t op = make(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
  set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
  set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  add_op(g, op);
}

/* The forward's operations (see the top of the file); p_flags: the type and reordering of P. */
static void forward_ops(att_graph *g, cudnnDataType_t io, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev,
                        bool causal, bool p_io, bool p_f16x16) {
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32, b8 = CUDNN_DATA_BOOLEAN;
  g->next_uid = UID_VIRTUAL;
  cudnnBackendDescriptor_t q = tensor(g, UID_Q, io, B, 1, L, E, 0);
  const int64_t kt_dim[4] = { B, 1, E, S }, kt_str[4] = { S * E, S * E, 1, E };   /* K^T over k's (B, S, E) rows */
  cudnnBackendDescriptor_t kt = tensor_strided(g, UID_KT, io, kt_dim, kt_str, 0);
  cudnnBackendDescriptor_t v = tensor(g, UID_V, io, B, 1, S, Ev, 0);
  cudnnBackendDescriptor_t o = tensor(g, UID_O, io, B, 1, L, Ev, 0);
  cudnnBackendDescriptor_t stats = tensor(g, UID_STATS, f32, B, 1, L, 1, 0);
  cudnnBackendDescriptor_t scale = tensor(g, UID_SCALE, f32, 1, 1, 1, 1, T_BY_VALUE);
  cudnnBackendDescriptor_t s = tensor(g, 0, f32, B, 1, L, S, T_VIRTUAL);
  matmul(g, q, kt, s);
  cudnnBackendDescriptor_t ss = tensor(g, 0, f32, B, 1, L, S, T_VIRTUAL);
  pointwise(g, CUDNN_POINTWISE_MUL, f32, -1, s, scale, NULL, ss);
  if (causal) {
    cudnnBackendDescriptor_t row = tensor(g, 0, i32, B, 1, L, S, T_VIRTUAL);
    cudnnBackendDescriptor_t col = tensor(g, 0, i32, B, 1, L, S, T_VIRTUAL);
    cudnnBackendDescriptor_t keep = tensor(g, 0, b8, B, 1, L, S, T_VIRTUAL);
    cudnnBackendDescriptor_t maskval = tensor(g, UID_MASKVAL, f32, 1, 1, 1, 1, T_BY_VALUE);
    cudnnBackendDescriptor_t sm = tensor(g, 0, f32, B, 1, L, S, T_VIRTUAL);
    pointwise(g, CUDNN_POINTWISE_GEN_INDEX, i32, 2, ss, NULL, NULL, row);
    pointwise(g, CUDNN_POINTWISE_GEN_INDEX, i32, 3, ss, NULL, NULL, col);
    pointwise(g, CUDNN_POINTWISE_CMP_GE, b8, -1, row, col, NULL, keep);
    pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, f32, -1, ss, maskval, keep, sm);
    ss = sm;
  }
  cudnnBackendDescriptor_t m = tensor(g, 0, f32, B, 1, L, 1, T_VIRTUAL);
  cudnnBackendDescriptor_t d = tensor(g, 0, f32, B, 1, L, S, T_VIRTUAL);
  cudnnBackendDescriptor_t e = tensor(g, 0, f32, B, 1, L, S, T_VIRTUAL);
  cudnnBackendDescriptor_t l = tensor(g, 0, f32, B, 1, L, 1, T_VIRTUAL);
  cudnnBackendDescriptor_t logl = tensor(g, 0, f32, B, 1, L, 1, T_VIRTUAL);
  cudnnBackendDescriptor_t p = tensor(g, 0, p_io ? io : f32, B, 1, L, S, T_VIRTUAL | (p_f16x16 ? T_F16X16 : 0));
  reduction(g, CUDNN_REDUCE_TENSOR_MAX, ss, m);
  pointwise(g, CUDNN_POINTWISE_SUB, f32, -1, ss, m, NULL, d);
  pointwise(g, CUDNN_POINTWISE_EXP, f32, -1, d, NULL, NULL, e);
  reduction(g, CUDNN_REDUCE_TENSOR_ADD, e, l);
  pointwise(g, CUDNN_POINTWISE_LOG, f32, -1, l, NULL, NULL, logl);
  pointwise(g, CUDNN_POINTWISE_ADD, f32, -1, m, logl, NULL, stats);
  pointwise(g, CUDNN_POINTWISE_DIV, f32, -1, e, l, NULL, p);
  matmul(g, p, v, o);
}

/* The deprecated handle attributes are the ones every cuDNN 9 takes (the device-property
** descriptor that replaces them came in 9.8); the warning is silenced for these two uses. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void set_handle(att_graph *g, cudnnBackendDescriptor_t x, bool plan, cudnnHandle_t h) {
  set(g, x, plan ? CUDNN_ATTR_EXECUTION_PLAN_HANDLE : CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
}
#pragma GCC diagnostic pop

/* The operation graph of g's ops, cuDNN's heuristics, and the first engine configuration
** whose plan finalizes (*plan, and its workspace). */
static void make_plan(att_graph *g, cudnnHandle_t h, cudnnBackendDescriptor_t *plan, int64_t *ws) {
  *plan = NULL;
  cudnnBackendDescriptor_t graph = make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set_handle(g, graph, false, h);
  set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops);
  finalize(g, graph);
  cudnnBackendDescriptor_t heur = make(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set_desc(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  finalize(g, heur);
  cudnnBackendDescriptor_t cfg[GL_ATT_TRIES];
  int64_t n = 0;
  for (int i = 0; i < GL_ATT_TRIES; i++) cfg[i] = make(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  if (g->st == CUDNN_STATUS_SUCCESS)
    fail(g, att.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         GL_ATT_TRIES, &n, cfg), "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)");
  if (g->st == CUDNN_STATUS_SUCCESS && n == 0) fail(g, CUDNN_STATUS_NOT_SUPPORTED, "(no engine for the graph)");
  for (int64_t i = 0; i < n && i < GL_ATT_TRIES && g->st == CUDNN_STATUS_SUCCESS; i++) {
    cudnnBackendDescriptor_t p = make(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set_handle(g, p, true, h);
    set_desc(g, p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg[i]);
    if (g->st != CUDNN_STATUS_SUCCESS) return;
    if (att.cudnnBackendFinalize(p) != CUDNN_STATUS_SUCCESS) continue;   /* this engine cannot: the next */
    int64_t got = 0;
    fail(g, att.cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, ws),
         "cudnnBackendGetAttribute(EXECUTION_PLAN_WORKSPACE_SIZE)");
    if (g->st == CUDNN_STATUS_SUCCESS) *plan = p;
    return;
  }
  fail(g, CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendFinalize(EXECUTION_PLAN) of every engine configuration");
}

/* ---- plans by shape, per device ------------------------------------------------------------- */

#define GL_ATT_CACHE 16

typedef struct att_key { int64_t dtype, causal, B, L, S, E, Ev; } att_key;

typedef struct att_entry {
  att_key key;
  bool used;
  att_graph *g;                            /* NULL: cuDNN refused this shape */
  cudnnBackendDescriptor_t plan;
  int64_t workspace;
} att_entry;

typedef struct att_cache { att_entry e[GL_ATT_CACHE]; unsigned next; } att_cache;

static att_cache *caches[GL_CUDA_MAXDEV];

/* Drops one holder of g; the last one destroys its descriptors (gl_cuda_lock held). */
static void graph_unref(att_graph *g) {
  if (g && --g->refs == 0) {
    graph_free(g);
    free(g);
  }
}

static void entry_free(att_entry *e) {
  graph_unref(e->g);
  memset(e, 0, sizeof *e);
}

/* A call done with the plan it took from the cache or built. */
static void graph_release(att_graph *g) {
  pthread_mutex_lock(&gl_cuda_lock);
  graph_unref(g);
  pthread_mutex_unlock(&gl_cuda_lock);
}

/* (gl_cuda_lock held, as gl_cuda_dnn_release is called) */
void gl_cuda_cudnn_attn_release(int index) {
  att_cache *c = caches[index];
  if (c == NULL) return;
  for (int i = 0; i < GL_ATT_CACHE; i++) entry_free(&c->e[i]);
  free(c);
  caches[index] = NULL;
}

/* The cached entry of k: 1 a plan, 0 refused, -1 none. On 1, *g holds a reference to the
** graph (graph_release gives it back), so an eviction by another thread while the plan runs
** cannot destroy it. */
static int cache_find(int dev, const att_key *k, att_graph **g, cudnnBackendDescriptor_t *plan, int64_t *ws) {
  int r = -1;
  pthread_mutex_lock(&gl_cuda_lock);
  att_cache *c = caches[dev];
  for (int i = 0; c && i < GL_ATT_CACHE && r < 0; i++) {
    att_entry *e = &c->e[i];
    if (e->used && memcmp(&e->key, k, sizeof *k) == 0) {
      r = e->g != NULL;
      if (e->g) e->g->refs++;
      *g = e->g;
      *plan = e->plan;
      *ws = e->workspace;
    }
  }
  pthread_mutex_unlock(&gl_cuda_lock);
  return r;
}

/* Keeps g (its plan) or, with g NULL, the refusal; best effort (without memory nothing is
** kept). The caller's reference to g stays the caller's. */
static void cache_put(int dev, const att_key *k, att_graph *g, cudnnBackendDescriptor_t plan, int64_t ws) {
  pthread_mutex_lock(&gl_cuda_lock);
  att_cache *c = caches[dev];
  if (c == NULL) c = caches[dev] = calloc(1, sizeof *c);
  if (c) {
    att_entry *e = &c->e[c->next % GL_ATT_CACHE];
    c->next = (c->next + 1) % GL_ATT_CACHE;
    entry_free(e);
    e->key = *k;
    e->used = true;
    e->g = g;
    if (g) g->refs++;
    e->plan = plan;
    e->workspace = ws;
  }
  pthread_mutex_unlock(&gl_cuda_lock);
}

/* A plan that failed to run: its shape is refused from now on. */
static void cache_refuse(int dev, const att_key *k) {
  pthread_mutex_lock(&gl_cuda_lock);
  att_cache *c = caches[dev];
  for (int i = 0; c && i < GL_ATT_CACHE; i++) {
    att_entry *e = &c->e[i];
    if (e->used && memcmp(&e->key, k, sizeof *k) == 0) {
      entry_free(e);
      e->key = *k;
      e->used = true;
    }
  }
  pthread_mutex_unlock(&gl_cuda_lock);
}

/* Builds the plan of k, trying P's types (see the top); NULL with a refusal. The graph comes
** with one reference, the caller's. */
static att_graph *build(cudnnHandle_t h, const att_key *k, cudnnBackendDescriptor_t *plan, int64_t *ws,
                        char *why, size_t whylen) {
  static const bool p_io[4] = { true, false, true, false }, p_f16x16[4] = { true, true, false, false };
  cudnnDataType_t io = gl_cuda_cudnn_type((gl_dtype)k->dtype);           /* float16 or bfloat16 */
  for (int variant = 0; variant < 4; variant++) {
    att_graph *g = calloc(1, sizeof *g);
    if (g == NULL) {
      snprintf(why, whylen, "out of host memory");
      return NULL;
    }
    forward_ops(g, io, k->B, k->L, k->S, k->E, k->Ev, k->causal != 0, p_io[variant], p_f16x16[variant]);
    make_plan(g, h, plan, ws);
    if (g->st == CUDNN_STATUS_SUCCESS) {
      g->refs = 1;                         /* the caller's */
      return g;
    }
    const char *name = att.cudnnGetErrorString ? att.cudnnGetErrorString(g->st) : NULL;
    snprintf(why, whylen, "%s: %s (cuDNN status %d)", g->call, name ? name : "cuDNN error", (int)g->st);
    graph_free(g);
    free(g);
  }
  return NULL;
}

/* ---- the call ------------------------------------------------------------------------------- */

static bool aligned16(const gl_array *a) { return ((uintptr_t)gl_array_data(a) & 15) == 0; }

gl_status gl_cuda_cudnn_attention(const gl_array *out, const gl_array *lse, const gl_array *q, const gl_array *k,
                                  const gl_array *v, double scale, bool causal) {
  static const char *const op = "attention (cuDNN)";
  pthread_once(&att.once, att_load);
  if (att.why) return gl_fail(GL_ENOTSUP, "%s: %s", op, att.why);
  int nd = q->ndim;
  att_key key;
  memset(&key, 0, sizeof key);            /* compared with memcmp */
  key.dtype = q->dtype;
  key.causal = causal;
  key.L = q->shape[nd - 2];
  key.E = q->shape[nd - 1];
  key.S = k->shape[nd - 2];
  key.Ev = v->shape[nd - 1];
  key.B = lse->size / key.L;
  /* what cuDNN's flash engines take: head sizes multiples of 8 up to 256, 16-byte aligned rows */
  if (key.E % 8 || key.Ev % 8 || key.E > 256 || key.Ev > 256 || !aligned16(q) || !aligned16(k) || !aligned16(v) ||
      !aligned16(out) || !aligned16(lse))
    return gl_fail(GL_ENOTSUP, "%s: head sizes %lld and %lld (or an unaligned operand) are not cuDNN's", op,
                   (long long)key.E, (long long)key.Ev);
  gl_device dev = gl_array_device(q);
  cudaStream_t s;
  cudnnHandle_t h;
  GL_TRY(gl_cuda_cudnn_enter(dev, op, &s, &h));
  cudnnBackendDescriptor_t plan = NULL;
  int64_t ws = 0;
  att_graph *g = NULL;
  int found = cache_find(dev.index, &key, &g, &plan, &ws);
  if (found == 0) return gl_fail(GL_ENOTSUP, "%s: cuDNN refused this shape before", op);
  if (found < 0) {
    char why[200];
    g = build(h, &key, &plan, &ws, why, sizeof why);
    cache_put(dev.index, &key, g, plan, ws);
    if (g == NULL) return gl_fail(GL_ENOTSUP, "%s: %s", op, why);
  }
  void *work = NULL;
  if (ws > 0) {
    gl_status wst = gl_workspace_alloc(dev, (size_t)ws, &work);
    if (wst != GL_OK) {
      graph_release(g);
      return wst;
    }
  }
  float fscale = (float)scale, maskval = -FLT_MAX;
  int64_t uids[7] = { UID_Q, UID_KT, UID_V, UID_O, UID_STATS, UID_SCALE, UID_MASKVAL };
  void *ptrs[7] = { gl_array_data(q), gl_array_data(k), gl_array_data(v), gl_array_data(out), gl_array_data(lse),
                    &fscale, &maskval };
  int64_t n = causal ? 7 : 6;
  att_graph pack = { 0 };
  cudnnBackendDescriptor_t vp = make(&pack, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(&pack, vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
  set(&pack, vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
  set(&pack, vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &work);
  finalize(&pack, vp);
  if (pack.st == CUDNN_STATUS_SUCCESS) fail(&pack, att.cudnnBackendExecute(h, plan, vp), "cudnnBackendExecute");
  graph_free(&pack);
  graph_release(g);
  if (work) gl_cuda_free(dev, work, (size_t)ws);     /* stream order: later users wait for us */
  if (pack.st != CUDNN_STATUS_SUCCESS) {
    cache_refuse(dev.index, &key);
    const char *name = att.cudnnGetErrorString ? att.cudnnGetErrorString(pack.st) : NULL;
    return gl_fail(GL_ENOTSUP, "%s: %s: %s (cuDNN status %d)", op, pack.call, name ? name : "cuDNN error",
                   (int)pack.st);
  }
  return gl_cuda_launched(dev, s, 0, op);
}

#endif
