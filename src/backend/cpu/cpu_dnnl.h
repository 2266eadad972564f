/*
** cpu_dnnl.h — what cpu_dnnl.c (oneDNN's loader, its primitive cache and the cpu's gl_dnn
** table) shares with the files of each layer family: cpu_dnnl_conv.c (convolution),
** cpu_dnnl_pool.c (pooling), cpu_dnnl_norm.c (batch and layer norm) and cpu_dnnl_rnn.c
** (LSTM and GRU). Without oneDNN's header at build time GL_WITH_DNNL stays unset, only the
** table is declared and the family files are empty.
*/
#ifndef GL_CPU_DNNL_H
#define GL_CPU_DNNL_H

#include <stdbool.h>
#include <stdint.h>
#include <omp.h>
#include "cpu.h"

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define GL_WITH_DNNL 1
#endif
#endif

#ifdef GL_WITH_DNNL

/* ---- the library's entry points, resolved by dlsym when the first layer asks ------------------ */

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

typedef struct gl_dnnl_api {
#define GL_DNNL_FIELD(f) __typeof__(&f) f;
  DNNL_FUNCS(GL_DNNL_FIELD)
#undef GL_DNNL_FIELD
} gl_dnnl_api;

extern gl_dnnl_api gl_dnnl;
extern bool gl_dnnl_pool_onednn;       /* GPULUA_DNNL_POOL=1: oneDNN's pooling, not the direct loops */
extern bool gl_dnnl_refuse;            /* GPULUA_DNNL_REFUSE=1: every convolution and LSTM/GRU refused (testing) */

/* ---- the primitive cache ------------------------------------------------------------------- */

#define GL_DNNL_KEYLEN 24
#define GL_DNNL_NSLOT 20               /* an LSTM's backward takes 19 arguments */

/* The first word of every cache key: which operation (each family's keys differ from here). */
enum {
  OP_CONV_FWD = 1, OP_CONV_BWD_DATA, OP_CONV_BWD_WEIGHTS, OP_POOL_FWD, OP_POOL_FWD_TRAIN, OP_POOL_BWD,
  OP_BN_TRAIN, OP_BN_INFER, OP_BN_BWD, OP_LN_FWD, OP_LN_BWD,
  OP_LSTM_FWD = 20, OP_LSTM_BWD, OP_GRU_FWD, OP_GRU_BWD
};

/* One argument of a primitive as the caller holds it: a plain-layout memory whose handle
** is set at each call and, when the primitive wants another layout, that layout's memory
** (its buffer from the caching allocator at each call) and the reorder between the two. */
typedef struct gl_dnnl_slot {
  int arg;                      /* DNNL_ARG_* */
  bool out;
  bool zero;                    /* an output the primitive accumulates into: zeroed first */
  size_t user_bytes;
  dnnl_memory_t user;
  dnnl_memory_t inner;          /* NULL: the primitive takes the user layout */
  dnnl_primitive_t reorder;     /* user -> inner (inputs) or inner -> user (outputs) */
  size_t inner_bytes;
} gl_dnnl_slot;

/* A cached primitive: its key, its arguments in the order the caller hands their buffers. */
typedef struct gl_dnnl_entry {
  int64_t key[GL_DNNL_KEYLEN];
  uint64_t stamp;               /* last use; 0: empty */
  dnnl_primitive_desc_t pd, hint;   /* hint: the forward pd a backward one was made from */
  dnnl_primitive_t prim;
  int nslot;
  gl_dnnl_slot s[GL_DNNL_NSLOT];
  dnnl_memory_t scratch;
  size_t scratch_bytes;
} gl_dnnl_entry;

/* One argument to add to an entry: DNNL_ARG_*, whether an output, the caller's layout (NULL:
** whatever the primitive wants, as for a workspace), skip (not added), zero (see the slot). */
typedef struct gl_dnnl_arg {
  int arg;
  bool out;
  const dnnl_memory_desc_t *md;
  bool skip, zero;
} gl_dnnl_arg;

static inline gl_dnnl_arg gl_dnnl_io(int arg, bool out, const dnnl_memory_desc_t *md) {
  gl_dnnl_arg a = { .arg = arg, .out = out, .md = md };
  return a;
}
static inline gl_dnnl_arg gl_dnnl_in(int arg, const dnnl_memory_desc_t *md) { return gl_dnnl_io(arg, false, md); }
static inline gl_dnnl_arg gl_dnnl_out(int arg, const dnnl_memory_desc_t *md) { return gl_dnnl_io(arg, true, md); }
/* a, added only when 'use' holds. */
static inline gl_dnnl_arg gl_dnnl_when(bool use, gl_dnnl_arg a) {
  a.skip = !use;
  return a;
}

/* Builds entry e (empty) from ctx; dnnl_unimplemented: oneDNN has no implementation. */
typedef dnnl_status_t (*gl_dnnl_build)(gl_dnnl_entry *e, const void *ctx);

/* GL_ENOMEM or GL_ENOTSUP: "oneDNN <what> failed (status s)". */
gl_status gl_dnnl_fail(const char *what, dnnl_status_t s);
/* Makes e's primitive from forward op desc fd (scratchpad left to the caller). */
dnnl_status_t gl_dnnl_make(gl_dnnl_entry *e, const void *fd);
/* Makes e's primitive from backward op desc bd, with the hint made from forward op desc fd. */
dnnl_status_t gl_dnnl_make_bwd(gl_dnnl_entry *e, const void *fd, const void *bd);
/* Adds the arguments a[0..n) not skipped to e, in that order. */
dnnl_status_t gl_dnnl_args(gl_dnnl_entry *e, const gl_dnnl_arg *a, int n);

/* The cache's lock: gl_dnnl_entry_get and gl_dnnl_entry_run are called holding it. */
void gl_dnnl_lock(void);
void gl_dnnl_unlock(void);
/* The entry of key, built by build(e, ctx) on a miss; on failure *out is NULL and the
** build's status returned. */
dnnl_status_t gl_dnnl_entry_get(const int64_t *key, gl_dnnl_build build, const void *ctx, gl_dnnl_entry **out);
/* Runs e on the buffers data[i] (argument i, in the caller's layout). */
gl_status gl_dnnl_entry_run(gl_dnnl_entry *e, void *const *data);
/* Gets (or builds) the entry of key and runs it on data, under the lock; a failed build
** says "oneDNN <what> failed". */
gl_status gl_dnnl_run(const int64_t *key, gl_dnnl_build build, const void *ctx, const char *what, void *const *data);

/* OpenMP's thread count for oneDNN's regions: the free cores, as for any cpu kernel (the
** previous count restored by gl_dnnl_threads_end: OpenBLAS keeps its own there). */
static inline int gl_dnnl_threads_begin(int64_t work, int *saved) {
  *saved = omp_get_max_threads();
  int nt = gl_cpu_team_size(work);
  if (nt != *saved) omp_set_num_threads(nt);
  return nt;
}
static inline void gl_dnnl_threads_end(int nt, int saved) {
  if (nt != saved) omp_set_num_threads(saved);
  gl_cpu_team_done(nt);
}

/* Plain float32 memory descriptors: 4-D in layout tag, 1-D of n. */
static inline void gl_dnnl_md4(dnnl_memory_desc_t *md, const int64_t *shape, dnnl_format_tag_t tag) {
  dnnl_dims_t d = { shape[0], shape[1], shape[2], shape[3] };
  gl_dnnl.dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, tag);
}
static inline void gl_dnnl_md1(dnnl_memory_desc_t *md, int64_t n) {
  dnnl_dims_t d = { n };
  gl_dnnl.dnnl_memory_desc_init_by_tag(md, 1, d, dnnl_f32, dnnl_a);
}

/* ---- the families' gl_dnn entries ----------------------------------------------------------- */

gl_status gl_dnnl_conv2d(const gl_array *y, const gl_array *x, const gl_array *w, const gl_dnn_conv *c);
gl_status gl_dnnl_conv2d_bwd_data(const gl_array *dx, const gl_array *dy, const gl_array *w, const gl_dnn_conv *c);
gl_status gl_dnnl_conv2d_bwd_filter(const gl_array *dw, const gl_array *x, const gl_array *dy, const gl_dnn_conv *c);
gl_status gl_dnnl_pool2d(bool max, const gl_array *y, const gl_array *x, const int *k, const int *stride,
                         const int *pad);
gl_status gl_dnnl_pool2d_bwd(bool max, const gl_array *dx, const gl_array *x, const gl_array *y, const gl_array *dy,
                             const int *k, const int *stride, const int *pad);
gl_status gl_dnnl_bn_train(const gl_array *y, const gl_array *save_mean, const gl_array *save_invstd,
                           const gl_array *x, const gl_array *w, const gl_array *b, const gl_array *rmean,
                           const gl_array *rvar, double momentum, double eps);
gl_status gl_dnnl_bn_infer(const gl_array *y, const gl_array *x, const gl_array *w, const gl_array *b,
                           const gl_array *rmean, const gl_array *rvar, double eps);
gl_status gl_dnnl_bn_bwd(const gl_array *dx, const gl_array *dw, const gl_array *db, const gl_array *x,
                         const gl_array *dy, const gl_array *w, const gl_array *save_mean, const gl_array *save_invstd,
                         double eps);
gl_status gl_dnnl_ln(const gl_array *y, const gl_array *mean, const gl_array *rstd, const gl_array *x,
                     const gl_array *w, const gl_array *b, double eps);
gl_status gl_dnnl_ln_bwd(const gl_array *dx, const gl_array *dw, const gl_array *db, const gl_array *x,
                         const gl_array *dy, const gl_array *w, const gl_array *mean, const gl_array *rstd,
                         double eps);
gl_status gl_dnnl_rnn_workspace(const gl_dnn_rnn *r, size_t *bytes);
gl_status gl_dnnl_rnn_fwd(const gl_dnn_rnn *r);
gl_status gl_dnnl_rnn_bwd(const gl_dnn_rnn *r);

#endif /* GL_WITH_DNNL */
#endif
