/*
** cpu_dnnl.c — oneDNN (the library PyTorch's CPU backend uses) under nn's convolutions,
** pooling and batch norm on the cpu: the cpu's gl_dnn table.
**
** The library is opened with dlopen the first time a layer asks for it (never at start:
** `gpulua -e ''` loads nothing), its C API resolved with dlsym, so a machine without
** libdnnl2 runs the im2col + GEMM path instead, and so does GPULUA_DNNL=0. Debian's
** oneDNN is built on the OpenMP runtime gpulua uses (libgomp): its parallel regions run on
** the same pool, and each call gets the free cores as every other cpu kernel does
** (gl_cpu_team_size), set as OpenMP's thread count around the call.
**
** Creating a primitive costs far more than running a small one, so primitives are kept
** in a bounded LRU cache keyed by the operation, shapes, dtype, geometry and thread count
** (oneDNN partitions the work when the primitive is made). Arrays keep their plain
** layouts (NCHW, OIHW); a convolution lets oneDNN choose its own (blocked) layouts and
** reorders in and out at each call (measured on the bench CNN, 1 thread: a 2560-image
** epoch took 2.60 s CPU time so, 2.77 s with plain layouts throughout, where oneDNN falls
** back to its gemm-based kernels). Scratchpads come from the cpu's caching
** allocator. oneDNN computes in float32 only here: takes() says so, and float64 stays on
** im2col + GEMM. A convolution oneDNN refuses (no implementation for the case) runs
** through im2col + GEMM here.
*/
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "cpu.h"

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define GL_WITH_DNNL 1
#endif
#endif

#ifndef GL_WITH_DNNL

static const char *dnnl_unavailable(void) { return "built without oneDNN's header (install libdnnl-dev)"; }
const gl_dnn gl_cpu_dnn = { .name = "onednn", .unavailable = dnnl_unavailable };
void gl_cpu_dnnl_version(char *buf, size_t n) { if (n) buf[0] = 0; }

#else

#ifndef GL_DNNL_LIB
#define GL_DNNL_LIB "libdnnl.so.2"
#endif

/* ---- the library, loaded once ------------------------------------------------------------- */

#define DNNL_FUNCS(X)                                                                              \
  X(dnnl_engine_create) X(dnnl_stream_create) X(dnnl_stream_wait)                                  \
  X(dnnl_memory_desc_init_by_tag) X(dnnl_memory_desc_equal) X(dnnl_memory_desc_get_size)           \
  X(dnnl_memory_create) X(dnnl_memory_set_data_handle) X(dnnl_memory_destroy)                      \
  X(dnnl_primitive_attr_create) X(dnnl_primitive_attr_destroy)                                     \
  X(dnnl_primitive_attr_set_scratchpad_mode)                                                       \
  X(dnnl_primitive_desc_create) X(dnnl_primitive_desc_destroy) X(dnnl_primitive_desc_query_md)     \
  X(dnnl_primitive_create) X(dnnl_primitive_destroy) X(dnnl_primitive_execute)                     \
  X(dnnl_reorder_primitive_desc_create)                                                            \
  X(dnnl_dilated_convolution_forward_desc_init) X(dnnl_dilated_convolution_backward_data_desc_init) \
  X(dnnl_dilated_convolution_backward_weights_desc_init)                                           \
  X(dnnl_pooling_v2_forward_desc_init) X(dnnl_pooling_v2_backward_desc_init)                       \
  X(dnnl_batch_normalization_forward_desc_init) X(dnnl_batch_normalization_backward_desc_init)     \
  X(dnnl_lstm_forward_desc_init) X(dnnl_lstm_backward_desc_init)                                   \
  X(dnnl_lbr_gru_forward_desc_init) X(dnnl_lbr_gru_backward_desc_init)                             \
  X(dnnl_layer_normalization_forward_desc_init) X(dnnl_layer_normalization_backward_desc_init)     \
  X(dnnl_version)

static struct {
#define FIELD(f) __typeof__(&f) f;
  DNNL_FUNCS(FIELD)
#undef FIELD
} D;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error;          /* NULL once loaded */
static char load_msg[256];
static dnnl_engine_t engine;
static dnnl_stream_t stream;
static bool pool_onednn;              /* GPULUA_DNNL_POOL=1 */
static bool refuse_conv;              /* GPULUA_DNNL_REFUSE=1: every convolution and LSTM/GRU refused (testing) */

static void dnnl_load(void) {
  const char *env = getenv("GPULUA_DNNL");
  if (env && strcmp(env, "0") == 0) {
    load_error = "GPULUA_DNNL=0 turns oneDNN off";
    return;
  }
  const char *po = getenv("GPULUA_DNNL_POOL");
  pool_onednn = po && strcmp(po, "1") == 0;
  const char *rf = getenv("GPULUA_DNNL_REFUSE");
  refuse_conv = rf && strcmp(rf, "1") == 0;
  void *h = dlopen(GL_DNNL_LIB, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(load_msg, sizeof load_msg, "oneDNN could not be loaded (%s; install libdnnl2)", GL_DNNL_LIB);
    load_error = load_msg;
    return;
  }
#define RESOLVE(f)                                                                                 \
  if ((*(void **)&D.f = dlsym(h, #f)) == NULL) {                                                   \
    snprintf(load_msg, sizeof load_msg, "%s lacks %s (oneDNN 2.6 or later is needed)", GL_DNNL_LIB, #f); \
    load_error = load_msg;                                                                         \
    dlclose(h);                                                                                    \
    return;                                                                                        \
  }
  DNNL_FUNCS(RESOLVE)
#undef RESOLVE
  if (D.dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
      D.dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
    load_error = "oneDNN could not create its cpu engine";
    return;
  }
}

static const char *dnnl_unavailable(void) {
  pthread_once(&load_once, dnnl_load);
  return load_error;
}

/* gpu.config().versions.onednn: "2.6.3" (empty when not loaded). Loads the library. */
void gl_cpu_dnnl_version(char *buf, size_t n) {
  if (n == 0) return;
  buf[0] = 0;
  if (dnnl_unavailable() != NULL) return;
  const dnnl_version_t *v = D.dnnl_version();
  snprintf(buf, n, "%d.%d.%d", v->major, v->minor, v->patch);
}

static bool dnnl_takes(gl_dnn_family f, gl_dtype dt) {
  return dt == GL_FLOAT32 && f != GL_DNN_SOFTMAX;
}

/* ---- the primitive cache ------------------------------------------------------------------ */

#define KEYLEN 24
#define NSLOT 20                      /* an LSTM's backward takes 19 arguments */
#define CACHE_SIZE 64

/* One argument of a primitive as the caller holds it: a plain-layout memory whose handle
** is set at each call and, when the primitive wants another layout, that layout's memory
** (its buffer from the caching allocator at each call) and the reorder between the two. */
typedef struct slot {
  int arg;                      /* DNNL_ARG_* */
  bool out;
  bool zero;                    /* an output the primitive accumulates into: zeroed first */
  size_t user_bytes;
  dnnl_memory_t user;
  dnnl_memory_t inner;          /* NULL: the primitive takes the user layout */
  dnnl_primitive_t reorder;     /* user -> inner (inputs) or inner -> user (outputs) */
  size_t inner_bytes;
} slot;

typedef struct entry {
  int64_t key[KEYLEN];
  uint64_t stamp;               /* last use; 0: empty */
  dnnl_primitive_desc_t pd, hint;   /* hint: the forward pd a backward one was made from */
  dnnl_primitive_t prim;
  int nslot;
  slot s[NSLOT];
  dnnl_memory_t scratch;
  size_t scratch_bytes;
} entry;

static struct {
  pthread_mutex_t lock;         /* a cache per process; states in threads take turns */
  entry e[CACHE_SIZE];
  uint64_t clock;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void entry_clear(entry *e) {
  for (int i = 0; i < e->nslot; i++) {
    slot *s = &e->s[i];
    if (s->reorder) D.dnnl_primitive_destroy(s->reorder);
    if (s->inner) D.dnnl_memory_destroy(s->inner);
    if (s->user) D.dnnl_memory_destroy(s->user);
  }
  if (e->scratch) D.dnnl_memory_destroy(e->scratch);
  if (e->prim) D.dnnl_primitive_destroy(e->prim);
  if (e->pd) D.dnnl_primitive_desc_destroy(e->pd);
  if (e->hint) D.dnnl_primitive_desc_destroy(e->hint);
  memset(e, 0, sizeof *e);
}

/* The entry for key (lock held): a hit, or the least recently used slot emptied (stamp 0:
** the caller builds it). */
static entry *cache_find(const int64_t *key) {
  entry *lru = &cache.e[0];
  for (int i = 0; i < CACHE_SIZE; i++) {
    entry *e = &cache.e[i];
    if (e->stamp && memcmp(e->key, key, sizeof e->key) == 0) {
      e->stamp = ++cache.clock;
      return e;
    }
    if (e->stamp < lru->stamp) lru = e;
  }
  if (lru->stamp) entry_clear(lru);
  memcpy(lru->key, key, sizeof lru->key);
  return lru;
}

static gl_status dnnl_fail(const char *what, dnnl_status_t s) {
  return gl_fail(s == dnnl_out_of_memory ? GL_ENOMEM : GL_ENOTSUP, "oneDNN %s failed (status %d)", what, (int)s);
}

/* Makes e's primitive from op desc 'od' (hint: a forward pd for a backward op, owned by e
** from here on), with the scratchpad left to the caller. dnnl_unimplemented: oneDNN has no
** implementation for the case. */
static dnnl_status_t entry_make(entry *e, const void *od, dnnl_primitive_desc_t hint) {
  dnnl_primitive_attr_t attr;
  e->hint = hint;
  dnnl_status_t s = D.dnnl_primitive_attr_create(&attr);
  if (s != dnnl_success) return s;
  s = D.dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (s == dnnl_success) s = D.dnnl_primitive_desc_create(&e->pd, od, attr, engine, hint);
  D.dnnl_primitive_attr_destroy(attr);
  if (s == dnnl_success) s = D.dnnl_primitive_create(&e->prim, e->pd);
  if (s != dnnl_success) return s;
  const dnnl_memory_desc_t *sp = D.dnnl_primitive_desc_query_md(e->pd, dnnl_query_scratchpad_md, 0);
  e->scratch_bytes = sp ? D.dnnl_memory_desc_get_size(sp) : 0;
  if (e->scratch_bytes > 0) s = D.dnnl_memory_create(&e->scratch, sp, engine, NULL);
  return s;
}

/* Adds argument 'arg' to e, the caller holding it in layout 'user' (NULL: whatever the
** primitive wants, as for a workspace). */
static dnnl_status_t slot_add(entry *e, int arg, bool out, const dnnl_memory_desc_t *user) {
  slot *s = &e->s[e->nslot++];
  s->arg = arg;
  s->out = out;
  const dnnl_memory_desc_t *want = D.dnnl_primitive_desc_query_md(e->pd, dnnl_query_exec_arg_md, arg);
  if (want == NULL) return dnnl_runtime_error;
  if (user == NULL) user = want;
  s->user_bytes = D.dnnl_memory_desc_get_size(user);
  dnnl_status_t st = D.dnnl_memory_create(&s->user, user, engine, NULL);
  if (st != dnnl_success || D.dnnl_memory_desc_equal(user, want)) return st;
  s->inner_bytes = D.dnnl_memory_desc_get_size(want);
  st = D.dnnl_memory_create(&s->inner, want, engine, NULL);
  dnnl_primitive_desc_t rpd;
  if (st == dnnl_success)
    st = out ? D.dnnl_reorder_primitive_desc_create(&rpd, want, engine, user, engine, NULL)
             : D.dnnl_reorder_primitive_desc_create(&rpd, user, engine, want, engine, NULL);
  if (st != dnnl_success) return st;
  st = D.dnnl_primitive_create(&s->reorder, rpd);
  D.dnnl_primitive_desc_destroy(rpd);
  return st;
}

static void reorder_run(slot *s) {
  dnnl_exec_arg_t a[2] = { { DNNL_ARG_FROM, s->out ? s->inner : s->user }, { DNNL_ARG_TO, s->out ? s->user : s->inner } };
  D.dnnl_primitive_execute(s->reorder, stream, 2, a);
}

/* Runs e on the buffers data[i] (slot i, in the caller's layout): inputs reordered in,
** the primitive, outputs reordered out; every temporary from the caching allocator. */
static gl_status entry_run(entry *e, void *const *data) {
  void *tmp[NSLOT] = { 0 }, *scratch = NULL;
  gl_status st = GL_OK;
  dnnl_exec_arg_t args[NSLOT + 1];
  int n = 0;
  for (int i = 0; i < e->nslot && st == GL_OK; i++) {
    slot *s = &e->s[i];
    D.dnnl_memory_set_data_handle(s->user, data[i]);
    if (s->inner) {
      st = gl_cpu_alloc(gl_cpu(), s->inner_bytes, &tmp[i]);
      if (st != GL_OK) break;
      D.dnnl_memory_set_data_handle(s->inner, tmp[i]);
      if (!s->out) reorder_run(s);
    }
    if (s->zero) memset(s->inner ? tmp[i] : data[i], 0, s->inner ? s->inner_bytes : s->user_bytes);
    args[n].arg = s->arg;
    args[n++].memory = s->inner ? s->inner : s->user;
  }
  if (st == GL_OK && e->scratch) {
    st = gl_cpu_alloc(gl_cpu(), e->scratch_bytes, &scratch);
    if (st == GL_OK) {
      D.dnnl_memory_set_data_handle(e->scratch, scratch);
      args[n].arg = DNNL_ARG_SCRATCHPAD;
      args[n++].memory = e->scratch;
    }
  }
  if (st == GL_OK) {
    dnnl_status_t s = D.dnnl_primitive_execute(e->prim, stream, n, args);
    if (s != dnnl_success) st = dnnl_fail("execute", s);
  }
  for (int i = 0; i < e->nslot && st == GL_OK; i++)
    if (e->s[i].inner && e->s[i].out) reorder_run(&e->s[i]);
  D.dnnl_stream_wait(stream);
  for (int i = 0; i < e->nslot; i++)
    if (tmp[i]) gl_cpu_free(gl_cpu(), tmp[i], e->s[i].inner_bytes);
  if (scratch) gl_cpu_free(gl_cpu(), scratch, e->scratch_bytes);
  return st;
}

/* OpenMP's thread count for oneDNN's regions: the free cores, as for any cpu kernel (the
** previous count restored by thread_end: OpenBLAS keeps its own there). */
static int thread_begin(int64_t work, int *saved) {
  *saved = omp_get_max_threads();
  int nt = gl_cpu_team_size(work);
  if (nt != *saved) omp_set_num_threads(nt);
  return nt;
}
static void thread_end(int nt, int saved) {
  if (nt != saved) omp_set_num_threads(saved);
  gl_cpu_team_done(nt);
}

static void md4(dnnl_memory_desc_t *md, const int64_t *shape, dnnl_format_tag_t tag) {
  dnnl_dims_t d = { shape[0], shape[1], shape[2], shape[3] };
  D.dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, tag);
}
static void md1(dnnl_memory_desc_t *md, int64_t n) {
  dnnl_dims_t d = { n };
  D.dnnl_memory_desc_init_by_tag(md, 1, d, dnnl_f32, dnnl_a);
}

/* ---- convolution -------------------------------------------------------------------------- */

enum { OP_CONV_FWD = 1, OP_CONV_BWD_DATA, OP_CONV_BWD_WEIGHTS, OP_POOL_FWD, OP_POOL_FWD_TRAIN, OP_POOL_BWD,
       OP_BN_TRAIN, OP_BN_INFER, OP_BN_BWD, OP_LN_FWD, OP_LN_BWD };

/* The geometry of a convolution of x (N, C, H, W) by w (O, C/G, kh, kw) giving y (N, O, OH,
** OW), in oneDNN's terms: dilation counted from 0, the right/bottom padding whatever makes
** the output extents PyTorch's (negative where the last rows are never read). */
typedef struct conv_geom {
  int64_t x[4], w[4], y[4];
  dnnl_dims_t stride, dil, pl, pr;
  int groups;
} conv_geom;

static void conv_geom_of(conv_geom *g, const int64_t *xs, const int64_t *ws, const int64_t *ys, const gl_dnn_conv *c) {
  memset(g, 0, sizeof *g);
  memcpy(g->x, xs, sizeof g->x);
  memcpy(g->w, ws, sizeof g->w);
  memcpy(g->y, ys, sizeof g->y);
  for (int i = 0; i < 2; i++) {
    g->stride[i] = c->stride[i];
    g->dil[i] = c->dil[i] - 1;
    g->pl[i] = c->pad[i];
    g->pr[i] = (ys[2 + i] - 1) * c->stride[i] + (ws[2 + i] - 1) * c->dil[i] + 1 - xs[2 + i] - c->pad[i];
  }
  g->groups = c->groups;
}

static void conv_key(int64_t *key, int op, const conv_geom *g, int nt) {
  memset(key, 0, KEYLEN * sizeof key[0]);
  int k = 0;
  key[k++] = op;
  key[k++] = nt;
  for (int i = 0; i < 4; i++) { key[k++] = g->x[i]; key[k++] = g->w[i]; }
  for (int i = 0; i < 2; i++) { key[k++] = g->stride[i]; key[k++] = g->dil[i]; key[k++] = g->pl[i]; }
  key[k++] = g->groups;
}

/* The weights' plain layout: OIHW, or for groups (G, O/G, I/G, kh, kw), the same bytes. */
static void weights_md(dnnl_memory_desc_t *md, const conv_geom *g, bool any) {
  if (g->groups == 1) {
    md4(md, g->w, any ? dnnl_format_tag_any : dnnl_oihw);
    return;
  }
  dnnl_dims_t d = { g->groups, g->w[0] / g->groups, g->w[1], g->w[2], g->w[3] };
  D.dnnl_memory_desc_init_by_tag(md, 5, d, dnnl_f32, any ? dnnl_format_tag_any : dnnl_goihw);
}

static dnnl_status_t conv_fwd_desc(dnnl_convolution_desc_t *cd, const conv_geom *g, bool any) {
  dnnl_memory_desc_t x, w, y;
  md4(&x, g->x, any ? dnnl_format_tag_any : dnnl_nchw);
  weights_md(&w, g, any);
  md4(&y, g->y, any ? dnnl_format_tag_any : dnnl_nchw);
  return D.dnnl_dilated_convolution_forward_desc_init(cd, dnnl_forward_training, dnnl_convolution_direct, &x, &w,
                                                      NULL, &y, g->stride, g->dil, g->pl, g->pr);
}

/* Builds the entry of convolution direction op (stamp 0 on entry). */
static dnnl_status_t conv_build(entry *e, int op, const conv_geom *g) {
  const bool any = true;              /* oneDNN picks its layouts (see the top) */
  dnnl_memory_desc_t x, w, y, xa, wa, ya;
  md4(&x, g->x, dnnl_nchw);
  weights_md(&w, g, false);
  md4(&y, g->y, dnnl_nchw);
  md4(&xa, g->x, any ? dnnl_format_tag_any : dnnl_nchw);
  weights_md(&wa, g, any);
  md4(&ya, g->y, any ? dnnl_format_tag_any : dnnl_nchw);
  dnnl_convolution_desc_t fd, bd;
  dnnl_status_t s = conv_fwd_desc(&fd, g, any);
  if (s != dnnl_success) return s;
  if (op == OP_CONV_FWD) {
    if ((s = entry_make(e, &fd, NULL)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_SRC, false, &x)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_WEIGHTS, false, &w)) != dnnl_success) return s;
    return slot_add(e, DNNL_ARG_DST, true, &y);
  }
  dnnl_primitive_desc_t hint;
  dnnl_primitive_attr_t attr;
  if ((s = D.dnnl_primitive_attr_create(&attr)) != dnnl_success) return s;
  s = D.dnnl_primitive_desc_create(&hint, &fd, attr, engine, NULL);
  D.dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success) return s;
  if (op == OP_CONV_BWD_DATA)
    s = D.dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, &ya, g->stride,
                                                           g->dil, g->pl, g->pr);
  else
    s = D.dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, NULL, &ya,
                                                              g->stride, g->dil, g->pl, g->pr);
  if (s != dnnl_success) {
    D.dnnl_primitive_desc_destroy(hint);
    return s;
  }
  if ((s = entry_make(e, &bd, hint)) != dnnl_success) return s;
  if (op == OP_CONV_BWD_DATA) {
    if ((s = slot_add(e, DNNL_ARG_DIFF_DST, false, &y)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_WEIGHTS, false, &w)) != dnnl_success) return s;
    return slot_add(e, DNNL_ARG_DIFF_SRC, true, &x);
  }
  if ((s = slot_add(e, DNNL_ARG_SRC, false, &x)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_DIFF_DST, false, &y)) != dnnl_success) return s;
  return slot_add(e, DNNL_ARG_DIFF_WEIGHTS, true, &w);
}

/* The path for a case oneDNN has no implementation for: im2col + sgemm per image and
** group, as nn's own convolution does (K = C/G * kh * kw, L = OH * OW). */
static gl_status conv_im2col(int op, const conv_geom *g, float *a0, float *a1, float *out, const gl_dnn_conv *c) {
  const gl_cpu_blas *bl;
  GL_TRY(gl_cpu_blas_get(&bl));
  int64_t N = g->x[0], C = g->x[1], O = g->w[0], G = g->groups, Og = O / G;
  int64_t K = g->w[1] * g->w[2] * g->w[3], L = g->y[2] * g->y[3], CHW = C * g->x[2] * g->x[3];
  int k[2] = { (int)g->w[2], (int)g->w[3] };
  gl_array cols, img;
  memset(&cols, 0, sizeof cols);
  int64_t cs[4] = { 1, C * k[0] * k[1], L }, is[4] = { 1, C, g->x[2], g->x[3] };
  GL_TRY(gl_array_alloc(&cols, GL_FLOAT32, 3, cs, gl_cpu()));
  gl_status st = gl_array_init(&img, GL_FLOAT32, 4, is);
  gl_storage xs = { .refcount = 1, .nbytes = (size_t)CHW * sizeof(float), .device = gl_cpu() };
  img.storage = &xs;
  float *cd = gl_array_data(&cols);
  gl_cpu_blas_threads(bl, gl_cpu_team_size(Og * K * L));
  for (int64_t n = 0; n < N && st == GL_OK; n++) {
    /* fwd: a0 x, a1 w, out y; bwd_data: a0 dy, a1 w, out dx; bwd_weights: a0 x, a1 dy, out dw */
    if (op != OP_CONV_BWD_DATA) {
      xs.data = a0 + n * CHW;
      st = gl_cpu_im2col(&cols, &img, k, c->stride, c->pad, c->dil, 0.0);
    }
    for (int64_t gi = 0; gi < G && st == GL_OK; gi++) {
      float *cg = cd + gi * K * L;
      if (op == OP_CONV_FWD)
        bl->sgemm(GL_CBLAS_ROW_MAJOR, GL_CBLAS_NO_TRANS, GL_CBLAS_NO_TRANS, (int)Og, (int)L, (int)K, 1.0f,
                  a1 + gi * Og * K, (int)K, cg, (int)L, 0.0f, out + (n * O + gi * Og) * L, (int)L);
      else if (op == OP_CONV_BWD_DATA)
        bl->sgemm(GL_CBLAS_ROW_MAJOR, GL_CBLAS_TRANS, GL_CBLAS_NO_TRANS, (int)K, (int)L, (int)Og, 1.0f,
                  a1 + gi * Og * K, (int)K, a0 + (n * O + gi * Og) * L, (int)L, 0.0f, cg, (int)L);
      else
        bl->sgemm(GL_CBLAS_ROW_MAJOR, GL_CBLAS_NO_TRANS, GL_CBLAS_TRANS, (int)Og, (int)K, (int)L, 1.0f,
                  a1 + (n * O + gi * Og) * L, (int)L, cg, (int)L, n == 0 ? 0.0f : 1.0f, out + gi * Og * K, (int)K);
    }
    if (op == OP_CONV_BWD_DATA && st == GL_OK) {
      xs.data = out + n * CHW;
      st = gl_cpu_col2im(&img, &cols, k, c->stride, c->pad, c->dil);
    }
  }
  gl_array_release(&cols);
  return st == GL_OK ? gl_interrupt_check() : st;
}

/* One convolution direction: a0, a1 the operands, out the result (see conv_im2col). */
static gl_status conv_run(int op, const gl_array *x_or_dy, const gl_array *a1, const gl_array *out,
                          const int64_t *xs, const int64_t *ws, const int64_t *ys, const gl_dnn_conv *c) {
  conv_geom g;
  conv_geom_of(&g, xs, ws, ys, c);
  int saved, nt = thread_begin(ys[0] * ys[1] * ys[2] * ys[3] * ws[1] * ws[2] * ws[3], &saved);
  int64_t key[KEYLEN];
  conv_key(key, op, &g, nt);
  pthread_mutex_lock(&cache.lock);
  entry *e = cache_find(key);
  dnnl_status_t s = dnnl_success;
  if (e->stamp == 0) {
    /* oneDNN has reference kernels for every geometry seen so far: the refusal path is
    ** reached in the specs through GPULUA_DNNL_REFUSE=1 */
    s = refuse_conv ? dnnl_unimplemented : conv_build(e, op, &g);
    if (s == dnnl_success) e->stamp = ++cache.clock;
    else entry_clear(e);
  }
  gl_status st;
  float *a0 = gl_array_data(x_or_dy), *b = gl_array_data(a1), *o = gl_array_data(out);
  if (s == dnnl_success) {
    void *data[3] = { a0, b, o };
    st = entry_run(e, data);
  } else if (s == dnnl_unimplemented) {
    st = conv_im2col(op, &g, a0, b, o, c);
  } else {
    st = dnnl_fail("convolution setup", s);
  }
  pthread_mutex_unlock(&cache.lock);
  thread_end(nt, saved);
  return st == GL_OK ? gl_interrupt_check() : st;
}

static gl_status dnnl_conv2d(const gl_array *y, const gl_array *x, const gl_array *w, const gl_dnn_conv *c) {
  return conv_run(OP_CONV_FWD, x, w, y, x->shape, w->shape, y->shape, c);
}
static gl_status dnnl_conv2d_bwd_data(const gl_array *dx, const gl_array *dy, const gl_array *w, const gl_dnn_conv *c) {
  return conv_run(OP_CONV_BWD_DATA, dy, w, dx, dx->shape, w->shape, dy->shape, c);
}
static gl_status dnnl_conv2d_bwd_filter(const gl_array *dw, const gl_array *x, const gl_array *dy, const gl_dnn_conv *c) {
  return conv_run(OP_CONV_BWD_WEIGHTS, x, dy, dw, x->shape, dw->shape, dy->shape, c);
}

/* ---- pooling ------------------------------------------------------------------------------- */

/* Pooling runs in direct loops over the plain NCHW planes: measured on the 2-core EPYC
** (float32, the bench CNN's 128x32x28x28 max pool, 1 thread, CPU time), oneDNN's pooling on
** plain layouts (its simple_nchw kernel) took 43 ms forward where nn's im2col path took 13
** and these loops take a few; its blocked kernel needs a reorder in and out and was no faster
** than im2col. GPULUA_DNNL_POOL=1 takes oneDNN's blocked pooling instead (to measure it
** again on another machine). Max pooling propagates NaN (oneDNN's lets a NaN lose) and
** its backward sends each window's gradient to the first position holding the maximum
** (the first NaN), as nn's own path does. */

/* The output columns [lo, hi) whose tap kj reads inside a row of W: 0 <= ow*s - p + kj < W. */
static void tap_range(int64_t OW, int64_t W, int s, int p, int kj, int64_t *lo, int64_t *hi) {
  int64_t a = (int64_t)p - kj, b = W - 1 + p - kj;
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  *hi = b < 0 ? 0 : b / s + 1;
  if (*hi > OW) *hi = OW;
  if (*lo > *hi) *lo = *hi;
}

/* Whether x (n floats) holds a NaN. */
static bool has_nan(const float *x, int64_t n) {
  int nt = gl_cpu_team_size(n);
  int found = 0;
  _Pragma("omp parallel for num_threads(nt) schedule(static) reduction(|:found) if (nt > 1)")
  for (int64_t i = 0; i < n; i++) found |= x[i] != x[i];
  gl_cpu_team_done(nt);
  return found != 0;
}

typedef struct pool_geom {
  int64_t planes, H, W, OH, OW;
  const int *k, *s, *p;
} pool_geom;

/* y = the maxima (x without NaN) or the means (padding counted as zeros) of each window. */
static void pool_fwd_direct(bool max, float *y, const float *x, const pool_geom *g) {
  const int *k = g->k, *s = g->s, *p = g->p;
  float scale = 1.0f / (float)(k[0] * k[1]);
  int nt = gl_cpu_team_size(g->planes * g->OH * g->OW * k[0] * k[1]);
  _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
  for (int64_t pc = 0; pc < g->planes; pc++) {
    const float *in = x + pc * g->H * g->W;
    for (int64_t oh = 0; oh < g->OH; oh++) {
      float *yr = y + (pc * g->OH + oh) * g->OW;
      for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] = max ? -INFINITY : 0.0f;
      for (int ki = 0; ki < k[0]; ki++) {
        int64_t ih = oh * s[0] - p[0] + ki;
        if (ih < 0 || ih >= g->H) continue;
        const float *r = in + ih * g->W;
        for (int kj = 0; kj < k[1]; kj++) {
          int64_t lo, hi, off = (int64_t)kj - p[1];
          tap_range(g->OW, g->W, s[1], p[1], kj, &lo, &hi);
          if (max)
            for (int64_t ow = lo; ow < hi; ow++) {
              float v = r[ow * s[1] + off];
              yr[ow] = v > yr[ow] ? v : yr[ow];
            }
          else
            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += r[ow * s[1] + off];
        }
      }
      if (!max)
        for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] *= scale;
    }
  }
  gl_cpu_team_done(nt);
}

/* Max pooling of planes holding a NaN: each window's first NaN, else its maximum. */
static void max_pool_nan(float *y, const float *x, const pool_geom *g) {
  const int *k = g->k, *s = g->s, *p = g->p;
  int nt = gl_cpu_team_size(g->planes * g->OH * g->OW * k[0] * k[1]);
  _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
  for (int64_t pc = 0; pc < g->planes; pc++) {
    const float *in = x + pc * g->H * g->W;
    for (int64_t oh = 0; oh < g->OH; oh++)
      for (int64_t ow = 0; ow < g->OW; ow++) {
        float m = -INFINITY;
        for (int ki = 0; ki < k[0] && m == m; ki++) {
          int64_t ih = oh * s[0] - p[0] + ki;
          for (int kj = 0; kj < k[1] && ih >= 0 && ih < g->H && m == m; kj++) {
            int64_t iw = ow * s[1] - p[1] + kj;
            if (iw < 0 || iw >= g->W) continue;
            float v = in[ih * g->W + iw];
            if (v > m || v != v) m = v;
          }
        }
        y[(pc * g->OH + oh) * g->OW + ow] = m;
      }
  }
  gl_cpu_team_done(nt);
}

/* dx from dy: max sends each window's gradient to the first position equal to its output
** y (the first NaN where y is NaN); avg spreads it evenly over the window. */
static void pool_bwd_direct(bool max, float *dx, const float *x, const float *y, const float *dy,
                            const pool_geom *g) {
  const int *k = g->k, *s = g->s, *p = g->p;
  float scale = 1.0f / (float)(k[0] * k[1]);
  int nt = gl_cpu_team_size(g->planes * g->OH * g->OW * k[0] * k[1]);
  _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
  for (int64_t pc = 0; pc < g->planes; pc++) {
    const float *in = x + pc * g->H * g->W;
    float *d = dx + pc * g->H * g->W;
    memset(d, 0, sizeof(float) * (size_t)(g->H * g->W));
    for (int64_t oh = 0; oh < g->OH; oh++) {
      const float *yr = y ? y + (pc * g->OH + oh) * g->OW : NULL, *gr = dy + (pc * g->OH + oh) * g->OW;
      if (!max) {
        for (int ki = 0; ki < k[0]; ki++) {
          int64_t ih = oh * s[0] - p[0] + ki;
          if (ih < 0 || ih >= g->H) continue;
          float *r = d + ih * g->W;
          for (int kj = 0; kj < k[1]; kj++) {
            int64_t lo, hi, off = (int64_t)kj - p[1];
            tap_range(g->OW, g->W, s[1], p[1], kj, &lo, &hi);
            for (int64_t ow = lo; ow < hi; ow++) r[ow * s[1] + off] += gr[ow] * scale;
          }
        }
        continue;
      }
      /* tap by tap over a chunk of outputs: each output's first maximum in window order
      ** (ki, kj), as the forward met it, then its gradient to that spot; where y is NaN, the
      ** first NaN */
      for (int64_t c0 = 0; c0 < g->OW; c0 += 256) {
        int64_t c1 = g->OW - c0 < 256 ? g->OW : c0 + 256;
        float best[256];
        int64_t at[256];
        for (int64_t i = 0; i < c1 - c0; i++) at[i] = -1;
        for (int ki = 0; ki < k[0]; ki++) {
          int64_t ih = oh * s[0] - p[0] + ki;
          if (ih < 0 || ih >= g->H) continue;
          const float *r = in + ih * g->W;
          for (int kj = 0; kj < k[1]; kj++) {
            int64_t lo, hi, off = (int64_t)kj - p[1];
            tap_range(g->OW, g->W, s[1], p[1], kj, &lo, &hi);
            if (lo < c0) lo = c0;
            if (hi > c1) hi = c1;
            for (int64_t ow = lo; ow < hi; ow++) {
              int64_t i = ow - c0, pos = ih * g->W + ow * s[1] + off;
              float v = r[ow * s[1] + off], m = yr[ow];
              bool take = at[i] < 0 || (m == m ? v > best[i] : (v != v && best[i] == best[i]));
              best[i] = take ? v : best[i];
              at[i] = take ? pos : at[i];
            }
          }
        }
        for (int64_t ow = c0; ow < c1; ow++)
          if (at[ow - c0] >= 0) d[at[ow - c0]] += gr[ow];
      }
    }
  }
  gl_cpu_team_done(nt);
}

/* oneDNN's pooling (GPULUA_DNNL_POOL=1): blocked nChw8c, reordered in and out; its backward
** reads the forward's workspace (where each maximum was), so the forward runs again in
** training mode: the dnn interface hands backward x, y and dy. */
static dnnl_status_t pool_desc(dnnl_pooling_v2_desc_t *pd, int op, bool max, const int64_t *xs, const int64_t *ys,
                               const int *k, const int *stride, const int *pad) {
  dnnl_memory_desc_t x, y;
  md4(&x, xs, dnnl_nChw8c);
  md4(&y, ys, dnnl_nChw8c);
  dnnl_dims_t st = { stride[0], stride[1] }, kk = { k[0], k[1] }, dil = { 0, 0 }, pl = { pad[0], pad[1] }, pr;
  for (int i = 0; i < 2; i++) pr[i] = (ys[2 + i] - 1) * stride[i] + k[i] - xs[2 + i] - pad[i];
  dnnl_alg_kind_t alg = max ? dnnl_pooling_max : dnnl_pooling_avg_include_padding;
  if (op == OP_POOL_BWD) return D.dnnl_pooling_v2_backward_desc_init(pd, alg, &x, &y, st, kk, dil, pl, pr);
  return D.dnnl_pooling_v2_forward_desc_init(pd, op == OP_POOL_FWD ? dnnl_forward_inference : dnnl_forward_training,
                                             alg, &x, &y, st, kk, dil, pl, pr);
}

static dnnl_status_t pool_build(entry *e, int op, bool max, const int64_t *xs, const int64_t *ys, const int *k,
                                const int *stride, const int *pad) {
  dnnl_memory_desc_t x, y;
  md4(&x, xs, dnnl_nchw);
  md4(&y, ys, dnnl_nchw);
  dnnl_pooling_v2_desc_t fd, bd;
  dnnl_status_t s = pool_desc(&fd, op == OP_POOL_FWD ? OP_POOL_FWD : OP_POOL_FWD_TRAIN, max, xs, ys, k, stride, pad);
  if (s != dnnl_success) return s;
  if (op != OP_POOL_BWD) {
    if ((s = entry_make(e, &fd, NULL)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_SRC, false, &x)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_DST, true, &y)) != dnnl_success) return s;
    if (op == OP_POOL_FWD_TRAIN && max) s = slot_add(e, DNNL_ARG_WORKSPACE, true, NULL);
    return s;
  }
  dnnl_primitive_desc_t hint;
  dnnl_primitive_attr_t attr;
  if ((s = D.dnnl_primitive_attr_create(&attr)) != dnnl_success) return s;
  s = D.dnnl_primitive_desc_create(&hint, &fd, attr, engine, NULL);
  D.dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success) return s;
  if ((s = pool_desc(&bd, OP_POOL_BWD, max, xs, ys, k, stride, pad)) != dnnl_success) {
    D.dnnl_primitive_desc_destroy(hint);
    return s;
  }
  if ((s = entry_make(e, &bd, hint)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_DIFF_DST, false, &y)) != dnnl_success) return s;
  if (max && (s = slot_add(e, DNNL_ARG_WORKSPACE, false, NULL)) != dnnl_success) return s;
  return slot_add(e, DNNL_ARG_DIFF_SRC, true, &x);
}

static void pool_key(int64_t *key, int op, bool max, int nt, const int64_t *xs, const int64_t *ys, const int *k,
                     const int *stride, const int *pad) {
  memset(key, 0, KEYLEN * sizeof key[0]);
  int n = 0;
  key[n++] = op;
  key[n++] = max;
  key[n++] = nt;
  for (int i = 0; i < 4; i++) { key[n++] = xs[i]; key[n++] = ys[i]; }
  for (int i = 0; i < 2; i++) { key[n++] = k[i]; key[n++] = stride[i]; key[n++] = pad[i]; }
}

/* The cached (or new) entry of a pooling op, lock held; NULL with *st set on failure. */
static entry *pool_entry(int op, bool max, int nt, const int64_t *xs, const int64_t *ys, const int *k,
                         const int *stride, const int *pad, gl_status *st) {
  int64_t key[KEYLEN];
  pool_key(key, op, max, nt, xs, ys, k, stride, pad);
  entry *e = cache_find(key);
  if (e->stamp) return e;
  dnnl_status_t s = pool_build(e, op, max, xs, ys, k, stride, pad);
  if (s == dnnl_success) {
    e->stamp = ++cache.clock;
    return e;
  }
  entry_clear(e);
  *st = dnnl_fail("pooling setup", s);
  return NULL;
}

static pool_geom pool_geom_of(const gl_array *x, const gl_array *y, const int *k, const int *stride, const int *pad) {
  pool_geom g = { x->shape[0] * x->shape[1], x->shape[2], x->shape[3], y->shape[2], y->shape[3], k, stride, pad };
  return g;
}

static gl_status dnnl_pool2d(bool max, const gl_array *y, const gl_array *x, const int *k, const int *stride,
                             const int *pad) {
  pool_geom g = pool_geom_of(x, y, k, stride, pad);
  if (max && has_nan(gl_array_data(x), x->size)) {
    max_pool_nan(gl_array_data(y), gl_array_data(x), &g);
    return gl_interrupt_check();
  }
  if (!pool_onednn) {
    pool_fwd_direct(max, gl_array_data(y), gl_array_data(x), &g);
    return gl_interrupt_check();
  }
  int saved, nt = thread_begin(y->size * k[0] * k[1], &saved);
  gl_status st = GL_OK;
  pthread_mutex_lock(&cache.lock);
  entry *e = pool_entry(OP_POOL_FWD, max, nt, x->shape, y->shape, k, stride, pad, &st);
  if (e) {
    void *data[2] = { gl_array_data(x), gl_array_data(y) };
    st = entry_run(e, data);
  }
  pthread_mutex_unlock(&cache.lock);
  thread_end(nt, saved);
  return st == GL_OK ? gl_interrupt_check() : st;
}

static gl_status dnnl_pool2d_bwd(bool max, const gl_array *dx, const gl_array *x, const gl_array *y,
                                 const gl_array *dy, const int *k, const int *stride, const int *pad) {
  pool_geom g = pool_geom_of(x, dy, k, stride, pad);
  if (!pool_onednn || (max && has_nan(gl_array_data(x), x->size))) {
    pool_bwd_direct(max, gl_array_data(dx), gl_array_data(x), gl_array_data(y), gl_array_data(dy), &g);
    return gl_interrupt_check();
  }
  int saved, nt = thread_begin(dy->size * k[0] * k[1], &saved);
  gl_status st = GL_OK;
  pthread_mutex_lock(&cache.lock);
  entry *f = max ? pool_entry(OP_POOL_FWD_TRAIN, max, nt, x->shape, dy->shape, k, stride, pad, &st) : NULL;
  void *y2 = NULL, *ws = NULL;
  size_t ybytes = (size_t)dy->size * sizeof(float), wsbytes = 0;
  if (f) {                              /* the maxima's positions, into a workspace */
    wsbytes = D.dnnl_memory_desc_get_size(D.dnnl_primitive_desc_query_md(f->pd, dnnl_query_workspace_md, 0));
    st = gl_cpu_alloc(gl_cpu(), ybytes, &y2);
    if (st == GL_OK) st = gl_cpu_alloc(gl_cpu(), wsbytes ? wsbytes : 1, &ws);
    if (st == GL_OK) {
      void *data[3] = { gl_array_data(x), y2, ws };
      st = entry_run(f, data);
    }
  }
  entry *e = st == GL_OK ? pool_entry(OP_POOL_BWD, max, nt, x->shape, dy->shape, k, stride, pad, &st) : NULL;
  if (e) {
    void *data[3] = { gl_array_data(dy), max ? ws : gl_array_data(dx), gl_array_data(dx) };
    st = entry_run(e, data);
  }
  pthread_mutex_unlock(&cache.lock);
  if (y2) gl_cpu_free(gl_cpu(), y2, ybytes);
  if (ws) gl_cpu_free(gl_cpu(), ws, wsbytes ? wsbytes : 1);
  thread_end(nt, saved);
  return st == GL_OK ? gl_interrupt_check() : st;
}

/* ---- batch norm ------------------------------------------------------------------------------ */

/* oneDNN's batch norm with separate scale and shift, on plain NCHW. Training writes the
** batch mean straight into save_mean and the biased variance into a temporary, from which
** save_invstd and the running statistics (unbiased, PyTorch's momentum) are made here;
** backward rebuilds the variance from save_invstd. */
static dnnl_status_t bn_build(entry *e, int op, const int64_t *xs, float eps) {
  dnnl_memory_desc_t x, c;
  md4(&x, xs, dnnl_nchw);
  md1(&c, xs[1]);
  unsigned flags = dnnl_use_scale | dnnl_use_shift | (op == OP_BN_INFER ? dnnl_use_global_stats : 0);
  dnnl_batch_normalization_desc_t fd, bd;
  dnnl_status_t s = D.dnnl_batch_normalization_forward_desc_init(
      &fd, op == OP_BN_INFER ? dnnl_forward_inference : dnnl_forward_training, &x, eps, flags);
  if (s != dnnl_success) return s;
  if (op != OP_BN_BWD) {
    if ((s = entry_make(e, &fd, NULL)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_SRC, false, &x)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_SCALE, false, &c)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_SHIFT, false, &c)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_MEAN, op == OP_BN_TRAIN, &c)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_VARIANCE, op == OP_BN_TRAIN, &c)) != dnnl_success) return s;
    return slot_add(e, DNNL_ARG_DST, true, &x);
  }
  dnnl_primitive_desc_t hint;
  dnnl_primitive_attr_t attr;
  if ((s = D.dnnl_primitive_attr_create(&attr)) != dnnl_success) return s;
  s = D.dnnl_primitive_desc_create(&hint, &fd, attr, engine, NULL);
  D.dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success) return s;
  s = D.dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &x, &x, eps, flags);
  if (s != dnnl_success) {
    D.dnnl_primitive_desc_destroy(hint);
    return s;
  }
  if ((s = entry_make(e, &bd, hint)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_SRC, false, &x)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_DIFF_DST, false, &x)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_SCALE, false, &c)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_SHIFT, false, &c)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_MEAN, false, &c)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_VARIANCE, false, &c)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_DIFF_SRC, true, &x)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_DIFF_SCALE, true, &c)) != dnnl_success) return s;
  return slot_add(e, DNNL_ARG_DIFF_SHIFT, true, &c);
}

/* Runs batch-norm op on data[] (slot order of bn_build), lock taken here. */
static gl_status bn_run(int op, const int64_t *xs, double eps, void *const *data) {
  int saved, nt = thread_begin(xs[0] * xs[1] * xs[2] * xs[3], &saved);
  int64_t key[KEYLEN];
  memset(key, 0, sizeof key);
  key[0] = op;
  key[1] = nt;
  for (int i = 0; i < 4; i++) key[2 + i] = xs[i];
  float feps = (float)eps;
  memcpy(&key[6], &feps, sizeof feps);
  gl_status st = GL_OK;
  pthread_mutex_lock(&cache.lock);
  entry *e = cache_find(key);
  if (e->stamp == 0) {
    dnnl_status_t s = bn_build(e, op, xs, feps);
    if (s == dnnl_success) e->stamp = ++cache.clock;
    else { entry_clear(e); st = dnnl_fail("batch norm setup", s); }
  }
  if (st == GL_OK) st = entry_run(e, data);
  pthread_mutex_unlock(&cache.lock);
  thread_end(nt, saved);
  return st == GL_OK ? gl_interrupt_check() : st;
}

static gl_status dnnl_bn_train(const gl_array *y, const gl_array *save_mean, const gl_array *save_invstd,
                               const gl_array *x, const gl_array *w, const gl_array *b, const gl_array *rmean,
                               const gl_array *rvar, double momentum, double eps) {
  int64_t C = x->shape[1], n = x->size / C;
  float *var = gl_array_data(save_invstd);      /* the variance first, then 1/sqrt(var + eps) */
  void *data[6] = { gl_array_data(x), gl_array_data(w), gl_array_data(b), gl_array_data(save_mean), var,
                    gl_array_data(y) };
  GL_TRY(bn_run(OP_BN_TRAIN, x->shape, eps, data));
  const float *mean = gl_array_data(save_mean);
  float *rm = rmean ? gl_array_data(rmean) : NULL, *rv = rvar ? gl_array_data(rvar) : NULL;
  double unbias = (double)n / (double)(n - 1);
  for (int64_t c = 0; c < C; c++) {
    if (rm) {
      rm[c] = (float)((1 - momentum) * (double)rm[c] + momentum * (double)mean[c]);
      rv[c] = (float)((1 - momentum) * (double)rv[c] + momentum * (double)var[c] * unbias);
    }
    var[c] = (float)(1.0 / sqrt((double)var[c] + eps));
  }
  return GL_OK;
}

static gl_status dnnl_bn_infer(const gl_array *y, const gl_array *x, const gl_array *w, const gl_array *b,
                               const gl_array *rmean, const gl_array *rvar, double eps) {
  void *data[6] = { gl_array_data(x), gl_array_data(w), gl_array_data(b), gl_array_data(rmean), gl_array_data(rvar),
                    gl_array_data(y) };
  return bn_run(OP_BN_INFER, x->shape, eps, data);
}

static gl_status dnnl_bn_bwd(const gl_array *dx, const gl_array *dw, const gl_array *db, const gl_array *x,
                             const gl_array *dy, const gl_array *w, const gl_array *save_mean,
                             const gl_array *save_invstd, double eps) {
  int64_t C = x->shape[1];
  size_t bytes = (size_t)C * sizeof(float);
  float *var;
  GL_TRY(gl_cpu_alloc(gl_cpu(), bytes ? bytes : 1, (void **)&var));
  const float *inv = gl_array_data(save_invstd);
  for (int64_t c = 0; c < C; c++) var[c] = (float)(1.0 / ((double)inv[c] * (double)inv[c]) - eps);
  /* (oneDNN checks a shift is given, and does not read it) */
  void *data[9] = { gl_array_data(x), gl_array_data(dy), gl_array_data(w), gl_array_data(w), gl_array_data(save_mean), var,
                    gl_array_data(dx), gl_array_data(dw), gl_array_data(db) };
  gl_status st = bn_run(OP_BN_BWD, x->shape, eps, data);
  gl_cpu_free(gl_cpu(), var, bytes ? bytes : 1);
  return st;
}

/* ---- recurrent layers: LSTM and GRU --------------------------------------------------------
** One layer and direction per primitive (nn's loop over layers and directions stays in Lua),
** forward training (the workspace kept for the backward) and backward. Weights arrive in
** PyTorch's (G, H, in) order, oneDNN's ldgoi; the primitive picks its own layout (any) and
** the call reorders. The backward accumulates into its weight and bias gradients: those
** outputs are zeroed first (slot.zero). The last h (dst_iter) goes to a scratch buffer
** forward and is read from y's last step backward (the same values); its gradient is zero
** (nn reads h_n from y). */

enum { OP_LSTM_FWD = 20, OP_LSTM_BWD, OP_GRU_FWD, OP_GRU_BWD };

static void rnn_key(int64_t *key, int op, const gl_dnn_rnn *r, int nt) {
  memset(key, 0, KEYLEN * sizeof key[0]);
  int64_t k[] = { op, nt, r->L, r->N, r->I, r->H, r->reverse };
  memcpy(key, k, sizeof k);
}

/* The memory descriptors of one layer and direction in the caller's layouts. */
typedef struct rnn_mds {
  dnnl_memory_desc_t x, st, wi, wh, b, y;
} rnn_mds;

static void rnn_mds_of(rnn_mds *m, const gl_dnn_rnn *r, bool any) {
  int G = r->kind == GL_DNN_LSTM ? 4 : 3;
  dnnl_dims_t x = { r->L, r->N, r->I }, st = { 1, 1, r->N, r->H }, wi = { 1, 1, r->I, G, r->H };
  dnnl_dims_t wh = { 1, 1, r->H, G, r->H }, b = { 1, 1, 4, r->H }, y = { r->L, r->N, r->H };
  D.dnnl_memory_desc_init_by_tag(&m->x, 3, x, dnnl_f32, dnnl_tnc);
  D.dnnl_memory_desc_init_by_tag(&m->st, 4, st, dnnl_f32, dnnl_ldnc);
  D.dnnl_memory_desc_init_by_tag(&m->wi, 5, wi, dnnl_f32, any ? dnnl_format_tag_any : dnnl_ldgoi);
  D.dnnl_memory_desc_init_by_tag(&m->wh, 5, wh, dnnl_f32, any ? dnnl_format_tag_any : dnnl_ldgoi);
  D.dnnl_memory_desc_init_by_tag(&m->b, 4, b, dnnl_f32, dnnl_ldgo);
  D.dnnl_memory_desc_init_by_tag(&m->y, 3, y, dnnl_f32, dnnl_tnc);
}

static dnnl_status_t rnn_fwd_desc(dnnl_rnn_desc_t *d, const gl_dnn_rnn *r, const rnn_mds *a) {
  dnnl_rnn_direction_t dir = r->reverse ? dnnl_unidirectional_right2left : dnnl_unidirectional_left2right;
  if (r->kind == GL_DNN_LSTM)
    return D.dnnl_lstm_forward_desc_init(d, dnnl_forward_training, dir, &a->x, &a->st, &a->st, &a->wi, &a->wh, &a->b,
                                         &a->y, &a->st, &a->st, 0);
  return D.dnnl_lbr_gru_forward_desc_init(d, dnnl_forward_training, dir, &a->x, &a->st, &a->wi, &a->wh, &a->b, &a->y,
                                          &a->st, 0);
}

/* Builds the entry of a forward (slots x, h0, [c0,] w_ih, w_hh, b, y, hn, [cn,] ws) or a
** backward (the forward's inputs and outputs, then dy, dhn, [dcn,] dx, dh0, [dc0,] dw_ih,
** dw_hh, db). */
static dnnl_status_t rnn_build(entry *e, bool backward, const gl_dnn_rnn *r) {
  bool lstm = r->kind == GL_DNN_LSTM;
  rnn_mds u, a;
  rnn_mds_of(&u, r, false);
  rnn_mds_of(&a, r, true);
  dnnl_rnn_desc_t fd, bd;
  dnnl_status_t s = rnn_fwd_desc(&fd, r, &a);
  if (s != dnnl_success) return s;
  dnnl_primitive_desc_t hint = NULL;
  if (!backward) {
    if ((s = entry_make(e, &fd, NULL)) != dnnl_success) return s;
  } else {
    dnnl_primitive_attr_t attr;
    if ((s = D.dnnl_primitive_attr_create(&attr)) != dnnl_success) return s;
    s = D.dnnl_primitive_desc_create(&hint, &fd, attr, engine, NULL);
    D.dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) return s;
    dnnl_rnn_direction_t dir = r->reverse ? dnnl_unidirectional_right2left : dnnl_unidirectional_left2right;
    if (lstm)
      s = D.dnnl_lstm_backward_desc_init(&bd, dnnl_backward, dir, &a.x, &a.st, &a.st, &a.wi, &a.wh, &a.b, &a.y, &a.st,
                                         &a.st, &a.x, &a.st, &a.st, &a.wi, &a.wh, &a.b, &a.y, &a.st, &a.st, 0);
    else
      s = D.dnnl_lbr_gru_backward_desc_init(&bd, dnnl_backward, dir, &a.x, &a.st, &a.wi, &a.wh, &a.b, &a.y, &a.st,
                                            &a.x, &a.st, &a.wi, &a.wh, &a.b, &a.y, &a.st, 0);
    if (s != dnnl_success) {
      D.dnnl_primitive_desc_destroy(hint);
      return s;
    }
    if ((s = entry_make(e, &bd, hint)) != dnnl_success) return s;
  }
  struct { int arg; bool out; const dnnl_memory_desc_t *md; bool lstm_only; } f[] = {
    { DNNL_ARG_SRC_LAYER, false, &u.x, false }, { DNNL_ARG_SRC_ITER, false, &u.st, false },
    { DNNL_ARG_SRC_ITER_C, false, &u.st, true }, { DNNL_ARG_WEIGHTS_LAYER, false, &u.wi, false },
    { DNNL_ARG_WEIGHTS_ITER, false, &u.wh, false }, { DNNL_ARG_BIAS, false, &u.b, false },
    { DNNL_ARG_DST_LAYER, !backward, &u.y, false }, { DNNL_ARG_DST_ITER, !backward, &u.st, false },
    { DNNL_ARG_DST_ITER_C, !backward, &u.st, true }, { DNNL_ARG_WORKSPACE, !backward, NULL, false },
  };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if ((!f[i].lstm_only || lstm) && (s = slot_add(e, f[i].arg, f[i].out, f[i].md)) != dnnl_success) return s;
  if (!backward) return dnnl_success;
  struct { int arg; bool out; const dnnl_memory_desc_t *md; bool lstm_only; } b[] = {
    { DNNL_ARG_DIFF_DST_LAYER, false, &u.y, false }, { DNNL_ARG_DIFF_DST_ITER, false, &u.st, false },
    { DNNL_ARG_DIFF_DST_ITER_C, false, &u.st, true }, { DNNL_ARG_DIFF_SRC_LAYER, true, &u.x, false },
    { DNNL_ARG_DIFF_SRC_ITER, true, &u.st, false }, { DNNL_ARG_DIFF_SRC_ITER_C, true, &u.st, true },
    { DNNL_ARG_DIFF_WEIGHTS_LAYER, true, &u.wi, false }, { DNNL_ARG_DIFF_WEIGHTS_ITER, true, &u.wh, false },
    { DNNL_ARG_DIFF_BIAS, true, &u.b, false },
  };
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
    if (b[i].lstm_only && !lstm) continue;
    if ((s = slot_add(e, b[i].arg, b[i].out, b[i].md)) != dnnl_success) return s;
    if (b[i].arg == DNNL_ARG_DIFF_WEIGHTS_LAYER || b[i].arg == DNNL_ARG_DIFF_WEIGHTS_ITER ||
        b[i].arg == DNNL_ARG_DIFF_BIAS)
      e->s[e->nslot - 1].zero = true;
  }
  return dnnl_success;
}

/* The entry of op for r (lock held), built on a miss; *e NULL with the status on failure. */
static gl_status rnn_entry(bool backward, const gl_dnn_rnn *r, int nt, entry **out) {
  int op = r->kind == GL_DNN_LSTM ? (backward ? OP_LSTM_BWD : OP_LSTM_FWD) : (backward ? OP_GRU_BWD : OP_GRU_FWD);
  int64_t key[KEYLEN];
  rnn_key(key, op, r, nt);
  entry *e = cache_find(key);
  if (e->stamp == 0) {
    /* GPULUA_DNNL_REFUSE=1 reaches nn's fallback (the fused loop) in the specs */
    dnnl_status_t s = refuse_conv ? dnnl_unimplemented : rnn_build(e, backward, r);
    if (s != dnnl_success) {
      entry_clear(e);
      *out = NULL;
      return s == dnnl_unimplemented ? gl_fail(GL_ENOTSUP, "oneDNN has no %s %s for this shape",
                                               r->kind == GL_DNN_LSTM ? "LSTM" : "GRU", backward ? "backward" : "forward")
                                     : dnnl_fail("recurrent layer setup", s);
    }
    e->stamp = ++cache.clock;
  }
  *out = e;
  return GL_OK;
}

static int64_t rnn_work(const gl_dnn_rnn *r) { return r->L * r->N * r->H * (r->I + r->H) * 4; }

static gl_status dnnl_rnn_workspace(const gl_dnn_rnn *r, size_t *bytes) {
  int saved, nt = thread_begin(rnn_work(r), &saved);
  pthread_mutex_lock(&cache.lock);
  entry *e;
  gl_status st = rnn_entry(false, r, nt, &e);
  if (st == GL_OK) {
    *bytes = 0;
    for (int i = 0; i < e->nslot; i++)
      if (e->s[i].arg == DNNL_ARG_WORKSPACE) *bytes = e->s[i].user_bytes;
  }
  pthread_mutex_unlock(&cache.lock);
  thread_end(nt, saved);
  return st;
}

/* Runs the forward or backward of r: the slots' buffers in rnn_build's order, with a
** scratch (N, H) for the last h forward (and its zero gradient backward). */
static gl_status rnn_run(bool backward, const gl_dnn_rnn *r) {
  bool lstm = r->kind == GL_DNN_LSTM;
  size_t sb = (size_t)(r->N * r->H) * sizeof(float);
  void *hbuf;
  GL_TRY(gl_cpu_alloc(gl_cpu(), sb ? sb : 1, &hbuf));
  if (backward) memset(hbuf, 0, sb);
  void *last = (float *)r->y + (r->reverse ? 0 : (r->L - 1) * r->N * r->H);   /* h_n: y's last step */
  void *data[NSLOT];
  int n = 0;
  data[n++] = (void *)r->x;
  data[n++] = (void *)r->h0;
  if (lstm) data[n++] = (void *)r->c0;
  data[n++] = (void *)r->w_ih;
  data[n++] = (void *)r->w_hh;
  data[n++] = (void *)r->b;
  data[n++] = r->y;
  data[n++] = backward ? last : hbuf;
  if (lstm) data[n++] = r->cn;
  data[n++] = r->ws;
  if (backward) {
    data[n++] = (void *)r->dy;
    data[n++] = hbuf;
    if (lstm) data[n++] = (void *)r->dcn;
    data[n++] = r->dx;
    data[n++] = r->dh0;
    if (lstm) data[n++] = r->dc0;
    data[n++] = r->dw_ih;
    data[n++] = r->dw_hh;
    data[n++] = r->db;
  }
  int saved, nt = thread_begin(rnn_work(r), &saved);
  pthread_mutex_lock(&cache.lock);
  entry *e;
  gl_status st = rnn_entry(backward, r, nt, &e);
  if (st == GL_OK) st = entry_run(e, data);
  pthread_mutex_unlock(&cache.lock);
  thread_end(nt, saved);
  gl_cpu_free(gl_cpu(), hbuf, sb ? sb : 1);
  return st == GL_OK ? gl_interrupt_check() : st;
}

static gl_status dnnl_rnn_fwd(const gl_dnn_rnn *r) { return rnn_run(false, r); }
static gl_status dnnl_rnn_bwd(const gl_dnn_rnn *r) { return rnn_run(true, r); }

/* ---- layer norm ------------------------------------------------------------------------------ */

/* The forward primitive descriptor of op desc fd, the hint a backward one is made from. */
static dnnl_status_t forward_hint(dnnl_primitive_desc_t *hint, const void *fd) {
  dnnl_primitive_attr_t attr;
  dnnl_status_t s = D.dnnl_primitive_attr_create(&attr);
  if (s != dnnl_success) return s;
  s = D.dnnl_primitive_desc_create(hint, fd, attr, engine, NULL);
  D.dnnl_primitive_attr_destroy(attr);
  return s;
}

/* oneDNN's layer normalization over the last axis of x (R, D), plain layouts, scale and
** shift each optional (flags). Training writes the mean and the biased variance, from which
** rstd is made here (the fused op's form, so either backward takes either forward's
** statistics); backward rebuilds the variance from rstd. */
static dnnl_status_t ln_build(entry *e, int op, int64_t R, int64_t Dn, float eps, unsigned flags) {
  dnnl_memory_desc_t x, st, c;
  dnnl_dims_t dx = { R, Dn }, ds = { R }, dc = { Dn };
  D.dnnl_memory_desc_init_by_tag(&x, 2, dx, dnnl_f32, dnnl_ab);
  D.dnnl_memory_desc_init_by_tag(&st, 1, ds, dnnl_f32, dnnl_a);
  D.dnnl_memory_desc_init_by_tag(&c, 1, dc, dnnl_f32, dnnl_a);
  dnnl_layer_normalization_desc_t fd, bd;
  dnnl_status_t s = D.dnnl_layer_normalization_forward_desc_init(&fd, dnnl_forward_training, &x, &st, eps, flags);
  if (s != dnnl_success) return s;
  if (op == OP_LN_FWD) {
    if ((s = entry_make(e, &fd, NULL)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_SRC, false, &x)) != dnnl_success) return s;
    if ((flags & dnnl_use_scale) && (s = slot_add(e, DNNL_ARG_SCALE, false, &c)) != dnnl_success) return s;
    if ((flags & dnnl_use_shift) && (s = slot_add(e, DNNL_ARG_SHIFT, false, &c)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_MEAN, true, &st)) != dnnl_success) return s;
    if ((s = slot_add(e, DNNL_ARG_VARIANCE, true, &st)) != dnnl_success) return s;
    return slot_add(e, DNNL_ARG_DST, true, &x);
  }
  dnnl_primitive_desc_t hint;
  if ((s = forward_hint(&hint, &fd)) != dnnl_success) return s;
  s = D.dnnl_layer_normalization_backward_desc_init(&bd, dnnl_backward, &x, &x, &st, eps, flags);
  if (s != dnnl_success) {
    D.dnnl_primitive_desc_destroy(hint);
    return s;
  }
  if ((s = entry_make(e, &bd, hint)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_SRC, false, &x)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_DIFF_DST, false, &x)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_MEAN, false, &st)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_VARIANCE, false, &st)) != dnnl_success) return s;
  if ((flags & dnnl_use_scale) && (s = slot_add(e, DNNL_ARG_SCALE, false, &c)) != dnnl_success) return s;
  if ((flags & dnnl_use_shift) && (s = slot_add(e, DNNL_ARG_SHIFT, false, &c)) != dnnl_success) return s;
  if ((s = slot_add(e, DNNL_ARG_DIFF_SRC, true, &x)) != dnnl_success) return s;
  if ((flags & dnnl_use_scale) && (s = slot_add(e, DNNL_ARG_DIFF_SCALE, true, &c)) != dnnl_success) return s;
  if (flags & dnnl_use_shift) s = slot_add(e, DNNL_ARG_DIFF_SHIFT, true, &c);
  return s;
}

/* Runs layer-norm op on data[] (the non-NULL buffers in ln_build's slot order). */
static gl_status ln_run(int op, int64_t R, int64_t Dn, double eps, unsigned flags, void *const *data) {
  int saved, nt = thread_begin(R * Dn * 4, &saved);
  int64_t key[KEYLEN];
  memset(key, 0, sizeof key);
  key[0] = op;
  key[1] = nt;
  key[2] = R;
  key[3] = Dn;
  key[4] = flags;
  float feps = (float)eps;
  memcpy(&key[5], &feps, sizeof feps);
  gl_status st = GL_OK;
  pthread_mutex_lock(&cache.lock);
  entry *e = cache_find(key);
  if (e->stamp == 0) {
    dnnl_status_t s = ln_build(e, op, R, Dn, feps, flags);
    if (s == dnnl_success) e->stamp = ++cache.clock;
    else { entry_clear(e); st = dnnl_fail("layer norm setup", s); }
  }
  if (st == GL_OK) st = entry_run(e, data);
  pthread_mutex_unlock(&cache.lock);
  thread_end(nt, saved);
  return st == GL_OK ? gl_interrupt_check() : st;
}

/* Moves the non-NULL pointers of p[0..n) to the front (the slots ln_build made). */
static void ln_pack(void **p, int n) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (p[i]) p[k++] = p[i];
}

static unsigned ln_flags(const gl_array *w, const gl_array *b) {
  return (w ? (unsigned)dnnl_use_scale : 0u) | (b ? (unsigned)dnnl_use_shift : 0u);
}

static gl_status dnnl_ln(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                         const gl_array *w, const gl_array *b, double eps) {
  int64_t Dn = x->shape[x->ndim - 1], R = x->size / Dn;
  float *var = gl_array_data(rstd);             /* the variance first, then 1/sqrt(var + eps) */
  void *data[6] = { gl_array_data(x), w ? gl_array_data(w) : NULL, b ? gl_array_data(b) : NULL,
                    gl_array_data(mean), var, gl_array_data(y) };
  ln_pack(data, 6);
  GL_TRY(ln_run(OP_LN_FWD, R, Dn, eps, ln_flags(w, b), data));
  for (int64_t r = 0; r < R; r++) var[r] = (float)(1.0 / sqrt((double)var[r] + eps));
  return GL_OK;
}

static gl_status dnnl_ln_bwd(const gl_array *dx, const gl_array *dw, const gl_array *db, const gl_array *x,
                             const gl_array *dy, const gl_array *w, const gl_array *mean, const gl_array *rstd,
                             double eps) {
  /* On one thread the own kernel: oneDNN's backward measured 0.99-1.19x its time there, and
  ** about 0.55x at 2 threads (doc/STATUS-cudnn.md), as the own pooling loops replace oneDNN's. */
  int nt = gl_cpu_team_size(x->size * 4);
  gl_cpu_team_done(nt);
  if (nt == 1) return gl_cpu_layer_norm_bwd(dx, dw, db, dy, x, mean, rstd, w);
  int64_t Dn = x->shape[x->ndim - 1], R = x->size / Dn;
  size_t bytes = (size_t)R * sizeof(float);
  float *var;
  GL_TRY(gl_cpu_alloc(gl_cpu(), bytes ? bytes : 1, (void **)&var));
  const float *inv = gl_array_data(rstd);
  for (int64_t r = 0; r < R; r++) var[r] = (float)(1.0 / ((double)inv[r] * (double)inv[r]) - eps);
  /* oneDNN computes diff_scale/diff_shift whenever the flags ask: the flags follow the
  ** gradients wanted (dw without w: the scale taken as ones) */
  float *ones = NULL;
  size_t obytes = (size_t)Dn * sizeof(float);
  gl_status st = GL_OK;
  if (dw && !w) {
    st = gl_cpu_alloc(gl_cpu(), obytes, (void **)&ones);
    if (st == GL_OK) for (int64_t i = 0; i < Dn; i++) ones[i] = 1.0f;
  }
  unsigned flags = (dw ? (unsigned)dnnl_use_scale : 0u) | (db ? (unsigned)dnnl_use_shift : 0u);
  void *scale = w ? gl_array_data(w) : ones;
  if (!dw && w) {
    /* no parameter gradients wanted but a scale: oneDNN needs use_scale to apply it */
    flags |= dnnl_use_scale;
  }
  float *gw_tmp = NULL;
  if (st == GL_OK && (flags & dnnl_use_scale) && !dw) st = gl_cpu_alloc(gl_cpu(), obytes, (void **)&gw_tmp);
  float *gb_tmp = NULL;
  if (st == GL_OK && (flags & dnnl_use_shift) && !db) st = gl_cpu_alloc(gl_cpu(), obytes, (void **)&gb_tmp);
  if (st == GL_OK) {
    void *dshift = (flags & dnnl_use_shift) ? (db ? gl_array_data(db) : (void *)gb_tmp) : NULL;
    /* (oneDNN checks a shift is given when use_shift is set, and does not read it) */
    void *data[9] = { gl_array_data(x), gl_array_data(dy), gl_array_data(mean), var,
                      (flags & dnnl_use_scale) ? scale : NULL, dshift, gl_array_data(dx),
                      (flags & dnnl_use_scale) ? (dw ? gl_array_data(dw) : (void *)gw_tmp) : NULL, dshift };
    ln_pack(data, 9);
    st = ln_run(OP_LN_BWD, R, Dn, eps, flags, data);
  }
  if (gw_tmp) gl_cpu_free(gl_cpu(), gw_tmp, obytes);
  if (gb_tmp) gl_cpu_free(gl_cpu(), gb_tmp, obytes);
  if (ones) gl_cpu_free(gl_cpu(), ones, obytes);
  gl_cpu_free(gl_cpu(), var, bytes ? bytes : 1);
  return st;
}

const gl_dnn gl_cpu_dnn = {
  .name = "onednn",
  .unavailable = dnnl_unavailable,
  .takes = dnnl_takes,
  .conv2d = dnnl_conv2d,
  .conv2d_bwd_data = dnnl_conv2d_bwd_data,
  .conv2d_bwd_filter = dnnl_conv2d_bwd_filter,
  .pool2d = dnnl_pool2d,
  .pool2d_bwd = dnnl_pool2d_bwd,
  .batch_norm_train = dnnl_bn_train,
  .batch_norm_infer = dnnl_bn_infer,
  .batch_norm_bwd = dnnl_bn_bwd,
  .rnn_workspace = dnnl_rnn_workspace,
  .rnn_fwd = dnnl_rnn_fwd,
  .rnn_bwd = dnnl_rnn_bwd,
  .layer_norm = dnnl_ln,
  .layer_norm_bwd = dnnl_ln_bwd,
};

#endif
