/*
** cpu_dnnl.c — oneDNN (the library PyTorch's CPU backend uses) under nn's convolutions,
** pooling, batch and layer norm and LSTM/GRU layers on the cpu: the library's loader, the
** primitive cache every family runs through, and the cpu's gl_dnn table. The families are
** cpu_dnnl_conv.c, cpu_dnnl_pool.c, cpu_dnnl_norm.c and cpu_dnnl_rnn.c (cpu_dnnl.h).
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_dnnl.h"

#ifndef GL_WITH_DNNL

static const char *dnnl_unavailable(void) { return "built without oneDNN's header (install libdnnl-dev)"; }
const gl_dnn gl_cpu_dnn = { .name = "onednn", .unavailable = dnnl_unavailable };
void gl_cpu_dnnl_version(char *buf, size_t n) { if (n) buf[0] = 0; }

#else

#ifndef GL_DNNL_LIB
#define GL_DNNL_LIB "libdnnl.so.2"
#endif

/* ---- the library, loaded once ------------------------------------------------------------- */

gl_dnnl_api gl_dnnl;
bool gl_dnnl_pool_onednn;
bool gl_dnnl_refuse;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error;          /* NULL once loaded */
static char load_msg[256];
static dnnl_engine_t engine;
static dnnl_stream_t stream;

static void dnnl_load(void) {
  const char *env = getenv("GPULUA_DNNL");
  if (env && strcmp(env, "0") == 0) {
    load_error = "GPULUA_DNNL=0 turns oneDNN off";
    return;
  }
  const char *po = getenv("GPULUA_DNNL_POOL");
  gl_dnnl_pool_onednn = po && strcmp(po, "1") == 0;
  const char *rf = getenv("GPULUA_DNNL_REFUSE");
  gl_dnnl_refuse = rf && strcmp(rf, "1") == 0;
  void *h = dlopen(GL_DNNL_LIB, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(load_msg, sizeof load_msg, "oneDNN could not be loaded (%s; install libdnnl2)", GL_DNNL_LIB);
    load_error = load_msg;
    return;
  }
#define GL_DNNL_NAME(f) #f,
#define GL_DNNL_SLOT(f) (void *)&gl_dnnl.f,
  static const char *const names[] = { DNNL_FUNCS(GL_DNNL_NAME) };
  void *const slots[] = { DNNL_FUNCS(GL_DNNL_SLOT) };
#undef GL_DNNL_NAME
#undef GL_DNNL_SLOT
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *p = dlsym(h, names[i]);      /* void *: memcpy keeps the conversion defined */
    if (p == NULL) {
      snprintf(load_msg, sizeof load_msg, "%s lacks %s (oneDNN 2.6 or later is needed)", GL_DNNL_LIB, names[i]);
      load_error = load_msg;
      dlclose(h);
      return;
    }
    memcpy(slots[i], &p, sizeof p);
  }
  if (gl_dnnl.dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
      gl_dnnl.dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
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
  const dnnl_version_t *v = gl_dnnl.dnnl_version();
  snprintf(buf, n, "%d.%d.%d", v->major, v->minor, v->patch);
}

static bool dnnl_takes(gl_dnn_family f, gl_dtype dt) {
  return dt == GL_FLOAT32 && f != GL_DNN_SOFTMAX;
}

/* ---- the primitive cache ------------------------------------------------------------------ */

#define CACHE_SIZE 64

static struct {
  pthread_mutex_t lock;         /* a cache per process; states in threads take turns */
  gl_dnnl_entry e[CACHE_SIZE];
  uint64_t clock;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void entry_clear(gl_dnnl_entry *e) {
  for (int i = 0; i < e->nslot; i++) {
    gl_dnnl_slot *s = &e->s[i];
    if (s->reorder) gl_dnnl.dnnl_primitive_destroy(s->reorder);
    if (s->inner) gl_dnnl.dnnl_memory_destroy(s->inner);
    if (s->user) gl_dnnl.dnnl_memory_destroy(s->user);
  }
  if (e->scratch) gl_dnnl.dnnl_memory_destroy(e->scratch);
  if (e->prim) gl_dnnl.dnnl_primitive_destroy(e->prim);
  if (e->pd) gl_dnnl.dnnl_primitive_desc_destroy(e->pd);
  if (e->hint) gl_dnnl.dnnl_primitive_desc_destroy(e->hint);
  memset(e, 0, sizeof *e);
}

/* The entry for key (lock held): a hit, or the least recently used slot emptied (stamp 0:
** the caller builds it). */
static gl_dnnl_entry *cache_find(const int64_t *key) {
  gl_dnnl_entry *lru = &cache.e[0];
  for (int i = 0; i < CACHE_SIZE; i++) {
    gl_dnnl_entry *e = &cache.e[i];
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

gl_status gl_dnnl_fail(const char *what, dnnl_status_t s) {
  return gl_fail(s == dnnl_out_of_memory ? GL_ENOMEM : GL_ENOTSUP, "oneDNN %s failed (status %d)", what, (int)s);
}

/* Makes e's primitive from op desc 'od' (hint: a forward pd for a backward op, owned by e
** from here on), with the scratchpad left to the caller. dnnl_unimplemented: oneDNN has no
** implementation for the case. */
static dnnl_status_t entry_make(gl_dnnl_entry *e, const void *od, dnnl_primitive_desc_t hint) {
  dnnl_primitive_attr_t attr;
  e->hint = hint;
  dnnl_status_t s = gl_dnnl.dnnl_primitive_attr_create(&attr);
  if (s != dnnl_success) return s;
  s = gl_dnnl.dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (s == dnnl_success) s = gl_dnnl.dnnl_primitive_desc_create(&e->pd, od, attr, engine, hint);
  gl_dnnl.dnnl_primitive_attr_destroy(attr);
  if (s == dnnl_success) s = gl_dnnl.dnnl_primitive_create(&e->prim, e->pd);
  if (s != dnnl_success) return s;
  const dnnl_memory_desc_t *sp = gl_dnnl.dnnl_primitive_desc_query_md(e->pd, dnnl_query_scratchpad_md, 0);
  e->scratch_bytes = sp ? gl_dnnl.dnnl_memory_desc_get_size(sp) : 0;
  if (e->scratch_bytes > 0) s = gl_dnnl.dnnl_memory_create(&e->scratch, sp, engine, NULL);
  return s;
}

/* The hint (the forward pd of fd, owned by e from here on), then e's primitive from bd. */
dnnl_status_t gl_dnnl_make_bwd(gl_dnnl_entry *e, const void *fd, const void *bd) {
  dnnl_primitive_desc_t hint;
  dnnl_primitive_attr_t attr;
  dnnl_status_t s = gl_dnnl.dnnl_primitive_attr_create(&attr);
  if (s != dnnl_success) return s;
  s = gl_dnnl.dnnl_primitive_desc_create(&hint, fd, attr, engine, NULL);
  gl_dnnl.dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success) return s;
  return entry_make(e, bd, hint);
}

dnnl_status_t gl_dnnl_make(gl_dnnl_entry *e, const void *fd) { return entry_make(e, fd, NULL); }

/* Adds argument 'arg' to e, the caller holding it in layout 'user' (NULL: whatever the
** primitive wants, as for a workspace). */
static dnnl_status_t slot_add(gl_dnnl_entry *e, int arg, bool out, const dnnl_memory_desc_t *user) {
  gl_dnnl_slot *s = &e->s[e->nslot++];
  s->arg = arg;
  s->out = out;
  const dnnl_memory_desc_t *want = gl_dnnl.dnnl_primitive_desc_query_md(e->pd, dnnl_query_exec_arg_md, arg);
  if (want == NULL) return dnnl_runtime_error;
  if (user == NULL) user = want;
  s->user_bytes = gl_dnnl.dnnl_memory_desc_get_size(user);
  dnnl_status_t st = gl_dnnl.dnnl_memory_create(&s->user, user, engine, NULL);
  if (st != dnnl_success || gl_dnnl.dnnl_memory_desc_equal(user, want)) return st;
  s->inner_bytes = gl_dnnl.dnnl_memory_desc_get_size(want);
  st = gl_dnnl.dnnl_memory_create(&s->inner, want, engine, NULL);
  dnnl_primitive_desc_t rpd;
  if (st == dnnl_success)
    st = out ? gl_dnnl.dnnl_reorder_primitive_desc_create(&rpd, want, engine, user, engine, NULL)
             : gl_dnnl.dnnl_reorder_primitive_desc_create(&rpd, user, engine, want, engine, NULL);
  if (st != dnnl_success) return st;
  st = gl_dnnl.dnnl_primitive_create(&s->reorder, rpd);
  gl_dnnl.dnnl_primitive_desc_destroy(rpd);
  return st;
}

dnnl_status_t gl_dnnl_args(gl_dnnl_entry *e, const gl_dnnl_arg *a, int n) {
  for (int i = 0; i < n; i++) {
    if (a[i].skip) continue;
    dnnl_status_t s = slot_add(e, a[i].arg, a[i].out, a[i].md);
    if (s != dnnl_success) return s;
    e->s[e->nslot - 1].zero = a[i].zero;
  }
  return dnnl_success;
}

static void reorder_run(gl_dnnl_slot *s) {
  dnnl_exec_arg_t a[2] = { { DNNL_ARG_FROM, s->out ? s->inner : s->user }, { DNNL_ARG_TO, s->out ? s->user : s->inner } };
  gl_dnnl.dnnl_primitive_execute(s->reorder, stream, 2, a);
}

/* Runs e on the buffers data[i] (slot i, in the caller's layout): inputs reordered in,
** the primitive, outputs reordered out; every temporary from the caching allocator. */
gl_status gl_dnnl_entry_run(gl_dnnl_entry *e, void *const *data) {
  void *tmp[GL_DNNL_NSLOT] = { 0 }, *scratch = NULL;
  gl_status st = GL_OK;
  dnnl_exec_arg_t args[GL_DNNL_NSLOT + 1];
  int n = 0;
  for (int i = 0; i < e->nslot && st == GL_OK; i++) {
    gl_dnnl_slot *s = &e->s[i];
    gl_dnnl.dnnl_memory_set_data_handle(s->user, data[i]);
    if (s->inner) {
      st = gl_cpu_alloc(gl_cpu(), s->inner_bytes, &tmp[i]);
      if (st != GL_OK) break;
      gl_dnnl.dnnl_memory_set_data_handle(s->inner, tmp[i]);
      if (!s->out) reorder_run(s);
    }
    if (s->zero) memset(s->inner ? tmp[i] : data[i], 0, s->inner ? s->inner_bytes : s->user_bytes);
    args[n].arg = s->arg;
    args[n++].memory = s->inner ? s->inner : s->user;
  }
  if (st == GL_OK && e->scratch) {
    st = gl_cpu_alloc(gl_cpu(), e->scratch_bytes, &scratch);
    if (st == GL_OK) {
      gl_dnnl.dnnl_memory_set_data_handle(e->scratch, scratch);
      args[n].arg = DNNL_ARG_SCRATCHPAD;
      args[n++].memory = e->scratch;
    }
  }
  if (st == GL_OK) {
    dnnl_status_t s = gl_dnnl.dnnl_primitive_execute(e->prim, stream, n, args);
    if (s != dnnl_success) st = gl_dnnl_fail("execute", s);
  }
  for (int i = 0; i < e->nslot && st == GL_OK; i++)
    if (e->s[i].inner && e->s[i].out) reorder_run(&e->s[i]);
  gl_dnnl.dnnl_stream_wait(stream);
  for (int i = 0; i < e->nslot; i++)
    if (tmp[i]) gl_cpu_free(gl_cpu(), tmp[i], e->s[i].inner_bytes);
  if (scratch) gl_cpu_free(gl_cpu(), scratch, e->scratch_bytes);
  return st;
}


void gl_dnnl_lock(void) { pthread_mutex_lock(&cache.lock); }
void gl_dnnl_unlock(void) { pthread_mutex_unlock(&cache.lock); }

dnnl_status_t gl_dnnl_entry_get(const int64_t *key, gl_dnnl_build build, const void *ctx, gl_dnnl_entry **out) {
  gl_dnnl_entry *e = cache_find(key);
  dnnl_status_t s = dnnl_success;
  if (e->stamp == 0) {
    s = build(e, ctx);
    if (s == dnnl_success) e->stamp = ++cache.clock;
    else entry_clear(e);
  }
  *out = s == dnnl_success ? e : NULL;
  return s;
}

gl_status gl_dnnl_run(const int64_t *key, gl_dnnl_build build, const void *ctx, const char *what, void *const *data) {
  gl_dnnl_entry *e;
  gl_dnnl_lock();
  dnnl_status_t s = gl_dnnl_entry_get(key, build, ctx, &e);
  gl_status st = s == dnnl_success ? gl_dnnl_entry_run(e, data) : gl_dnnl_fail(what, s);
  gl_dnnl_unlock();
  return st;
}

const gl_dnn gl_cpu_dnn = {
  .name = "onednn",
  .unavailable = dnnl_unavailable,
  .takes = dnnl_takes,
  .conv2d = gl_dnnl_conv2d,
  .conv2d_bwd_data = gl_dnnl_conv2d_bwd_data,
  .conv2d_bwd_filter = gl_dnnl_conv2d_bwd_filter,
  .pool2d = gl_dnnl_pool2d,
  .pool2d_bwd = gl_dnnl_pool2d_bwd,
  .batch_norm_train = gl_dnnl_bn_train,
  .batch_norm_infer = gl_dnnl_bn_infer,
  .batch_norm_bwd = gl_dnnl_bn_bwd,
  .rnn_workspace = gl_dnnl_rnn_workspace,
  .rnn_fwd = gl_dnnl_rnn_fwd,
  .rnn_bwd = gl_dnnl_rnn_bwd,
  .layer_norm = gl_dnnl_ln,
  .layer_norm_bwd = gl_dnnl_ln_bwd,
};

#endif
