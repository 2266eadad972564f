/*
** cuda_nccl.c — gpu.distributed's collectives on cuda arrays: NCCL (libnccl.so.2 of the
** CUDA toolkit), opened with dlopen when gpu.distributed.init asks for it, never before.
** One communicator per process, on the device the job gave this rank; every operation is
** queued on that device's stream (the stream of every op of gpulua), so the ops queued
** after it see its result in order, without a host wait. src/dist makes rank 0's unique id
** reach the others over MPI and chooses this engine for cuda arrays.
**
** Point-to-point calls are grouped: NCCL queues an ungrouped ncclSend or ncclRecv on the
** stream alone, so a ring whose ranks all receive before they send (an async recv, then a
** send) waits forever on every rank. An async send or recv opens a group
** (ncclGroupStart) or joins the open one; the next call that is not async, a collective,
** a wait on a handle or finalize closes it (ncclGroupEnd), and NCCL then queues its
** operations together, progressing them at once. Compiled only where <nccl.h> is found
** (the Makefile's NCCL check); without it cuda arrays have no NCCL engine.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <nccl.h>
#include "cuda.h"

static struct {
  void *lib;
  __typeof__(ncclGetUniqueId) *get_unique_id;
  __typeof__(ncclCommInitRank) *comm_init_rank;
  __typeof__(ncclCommDestroy) *comm_destroy;
  __typeof__(ncclCommAbort) *comm_abort;
  __typeof__(ncclGetErrorString) *error_string;
  __typeof__(ncclCommGetAsyncError) *async_error;
  __typeof__(ncclAllReduce) *all_reduce;
  __typeof__(ncclBroadcast) *broadcast;
  __typeof__(ncclAllGather) *all_gather;
  __typeof__(ncclReduceScatter) *reduce_scatter;
  __typeof__(ncclSend) *send;
  __typeof__(ncclRecv) *recv;
  __typeof__(ncclGroupStart) *group_start;
  __typeof__(ncclGroupEnd) *group_end;
  ncclComm_t comm;
  gl_device dev;
  bool grouped;                 /* between ncclGroupStart and ncclGroupEnd */
  cudaStream_t group_stream;    /* the stream of the open group's operations */
} N;

/* The operations in flight, for the watchdog (nccl_poll): an event recorded after each,
** oldest first, in a ring. The enqueuing thread and the watchdog share it under Q.mu. */
#define QCAP 256
static struct {
  pthread_mutex_t mu;
  struct { cudaEvent_t ev; double t; const char *what; } op[QCAP];
  int head, n;
} Q = { .mu = PTHREAD_MUTEX_INITIALIZER };

static double mono_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Frees the finished operations at the front; the state of the oldest still running. */
static cudaError_t reap(void) {
  while (Q.n > 0) {
    cudaError_t r = cudaEventQuery(Q.op[Q.head].ev);
    if (r != cudaSuccess) return r;
    cudaEventDestroy(Q.op[Q.head].ev);
    Q.head = (Q.head + 1) % QCAP;
    Q.n--;
  }
  return cudaSuccess;
}

/* After an operation was queued on s: its event joins the ring. A full ring first waits for
** its oldest (the watchdog still watches that wait's deadline). */
static gl_status track(cudaStream_t s, const char *what) {
  cudaEvent_t ev;
  if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventRecord(ev, s) != cudaSuccess)
    return gl_fail(GL_EDEVICE, "%s: recording its event failed", what);
  pthread_mutex_lock(&Q.mu);
  reap();
  while (Q.n == QCAP) {
    cudaEvent_t oldest = Q.op[Q.head].ev;
    pthread_mutex_unlock(&Q.mu);
    cudaEventSynchronize(oldest);
    pthread_mutex_lock(&Q.mu);
    reap();
  }
  int i = (Q.head + Q.n) % QCAP;
  Q.op[i].ev = ev;
  Q.op[i].t = mono_now();
  Q.op[i].what = what;
  Q.n++;
  pthread_mutex_unlock(&Q.mu);
  return GL_OK;
}

static int nccl_poll(double timeout, char *msg, size_t size) {
  if (!N.comm) return 0;
  ncclResult_t ae = ncclSuccess;
  if (N.async_error(N.comm, &ae) == ncclSuccess && ae != ncclSuccess && ae != ncclInProgress) {
    snprintf(msg, size, "NCCL reports an asynchronous error: %s", N.error_string(ae));
    return -1;
  }
  pthread_mutex_lock(&Q.mu);
  cudaError_t r = reap();
  int state = Q.n == 0 ? 0 : 1;
  if (r != cudaSuccess && r != cudaErrorNotReady) {
    snprintf(msg, size, "NCCL %s failed on the device: %s", Q.op[Q.head].what, cudaGetErrorString(r));
    state = -1;
  } else if (state && mono_now() - Q.op[Q.head].t > timeout) {
    snprintf(msg, size, "NCCL %s timed out after %g s (another rank failed, stopped or called a different "
             "collective; the timeout is init's 'timeout' or GPULUA_DIST_TIMEOUT)", Q.op[Q.head].what, timeout);
    state = -1;
  }
  pthread_mutex_unlock(&Q.mu);
  return state;
}

static gl_status nccl_check(ncclResult_t r, const char *what) {
  if (r == ncclSuccess) return GL_OK;
  return gl_fail(GL_EDEVICE, "%s failed: %s", what, N.error_string ? N.error_string(r) : "NCCL error");
}

static const gl_cuda_entry nccl_entries[] = {
  { "ncclGetUniqueId", &N.get_unique_id }, { "ncclCommInitRank", &N.comm_init_rank },
  { "ncclCommDestroy", &N.comm_destroy }, { "ncclCommAbort", &N.comm_abort },
  { "ncclGetErrorString", &N.error_string }, { "ncclCommGetAsyncError", &N.async_error },
  { "ncclAllReduce", &N.all_reduce }, { "ncclBroadcast", &N.broadcast }, { "ncclAllGather", &N.all_gather },
  { "ncclReduceScatter", &N.reduce_scatter }, { "ncclSend", &N.send }, { "ncclRecv", &N.recv },
  { "ncclGroupStart", &N.group_start }, { "ncclGroupEnd", &N.group_end },
};

static gl_status nccl_load(void) {
  if (N.lib) return GL_OK;
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    return gl_fail(GL_ENOTSUP, "cannot load NCCL (libnccl.so.2): %s", e ? e : "not found");
  }
  if (gl_cuda_syms(h, nccl_entries, sizeof nccl_entries / sizeof nccl_entries[0]) != NULL) {
    dlclose(h);
    return gl_fail(GL_ENOTSUP, "libnccl.so.2 lacks a function gpulua needs (NCCL >= 2.7 required)");
  }
  N.lib = h;
  return GL_OK;
}

static gl_status nccl_unique_id(void *id) {
  GL_TRY(nccl_load());
  ncclUniqueId u;
  GL_TRY(nccl_check(N.get_unique_id(&u), "ncclGetUniqueId"));
  memcpy(id, &u, sizeof u);
  return GL_OK;
}

static gl_status nccl_init(gl_device dev, const void *id, int nranks, int rank) {
  GL_TRY(nccl_load());
  if (N.comm) return GL_OK;
  GL_TRY(gl_cuda_enter(dev, NULL));
  ncclUniqueId u;
  memcpy(&u, id, sizeof u);
  GL_TRY(nccl_check(N.comm_init_rank(&N.comm, nranks, u, rank), "ncclCommInitRank"));
  N.dev = dev;
  return GL_OK;
}

/* The stream of dev, which must be the communicator's device. */
static gl_status stream_of(gl_device dev, cudaStream_t *s) {
  if (!N.comm) return gl_fail(GL_EINVAL, "NCCL is not initialized");
  if (dev.index != N.dev.index) {
    char a[16], b[16];
    return gl_fail(GL_EINVAL, "the array is on %s but this rank's NCCL communicator on %s (one device per rank)",
                   gl_device_name(dev, a), gl_device_name(N.dev, b));
  }
  return gl_cuda_enter(dev, s);
}

/* Each dtype's NCCL type: its row's nccl column (ncclFloat32 ...); a complex dtype's is its
** parts' type, NCCL having no complex numbers; ncclnone (no such type: int16, uint16). */
#define ncclnone ncclNumTypes
#define NCCL_TYPE_(E, t) [GL_##E] = nccl##t,
static const ncclDataType_t nccl_types[GL_NDTYPE] = { GL_DTYPE_COLUMN(NCCL_TYPE_, nccl) };
#undef NCCL_TYPE_
#undef ncclnone

/* What NCCL moves for count elements of dt: a complex element as two of its parts' type
** (a complex sum is the sum of its parts), a dtype without a NCCL type as its bytes (for
** the collectives that only move data; nccl_reduces refuses them). */
typedef struct nccl_data { size_t count; ncclDataType_t type; } nccl_data;
static nccl_data nccl_as(gl_dtype dt, int64_t count) {
  if (nccl_types[dt] == ncclNumTypes) return (nccl_data){ (size_t)count * gl_dtypes[dt].size, ncclUint8 };
  return (nccl_data){ (size_t)count * (gl_dtype_is_complex(dt) ? 2 : 1), nccl_types[dt] };
}

/* Whether NCCL reduces dt with op (0 sum, 1 prod, 2 max, 3 min, 4 mean): a dtype with a
** NCCL type, and for complex only the sum and the mean, which act on each part alone. */
static bool nccl_reduces(gl_dtype dt, int op) {
  if (nccl_types[dt] == ncclNumTypes) return false;
  return !gl_dtype_is_complex(dt) || op == 0 || op == 4;
}

/* bool reduces as or (sum, max) and and (prod, min), on its 0/1 bytes */
static ncclRedOp_t nccl_op(gl_dtype dt, int op) {
  if (dt == GL_BOOL) return (op == 0 || op == 2) ? ncclMax : ncclMin;
  static const ncclRedOp_t ops[] = { ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg };
  return ops[op];
}

/* A reduction NCCL has no kernel for (src/dist asks nccl_reduces first and sends it
** through MPI). */
static gl_status no_reduction(gl_dtype dt, int op, const char *what) {
  static const char *const names[] = { "sum", "prod", "max", "min", "mean" };
  return gl_fail(GL_ENOTSUP, "%s: NCCL has no %s of %s", what, names[op], gl_dtypes[dt].name);
}

/* Ends the open group of point-to-point calls: NCCL queues them now, together; their event
** goes to the watchdog's ring. Nothing to do without one. */
static gl_status nccl_flush(void) {
  if (!N.grouped) return GL_OK;
  N.grouped = false;
  GL_TRY(nccl_check(N.group_end(), "ncclGroupEnd"));
  return track(N.group_stream, "send/recv");
}

/* One point-to-point call: inside the open group (opened here if none), closed at once
** unless 'async' (the caller promises a wait, or another call, before the result is used). */
static gl_status nccl_p2p(gl_device dev, void *buf, int64_t count, gl_dtype dt, int peer, bool sending, bool async) {
  cudaStream_t s;
  GL_TRY(stream_of(dev, &s));
  if (!N.grouped) {
    GL_TRY(nccl_check(N.group_start(), "ncclGroupStart"));
    N.grouped = true;
    N.group_stream = s;
  }
  nccl_data d = nccl_as(dt, count);
  ncclResult_t r = sending ? N.send(buf, d.count, d.type, peer, N.comm, s) : N.recv(buf, d.count, d.type, peer, N.comm, s);
  gl_status st = nccl_check(r, sending ? "ncclSend" : "ncclRecv");
  if (st != GL_OK) {
    N.grouped = false;         /* the group ends without the failed call */
    N.group_end();
    return st;
  }
  return async ? GL_OK : nccl_flush();
}

/* A collective's way in (grouped point-to-point calls flushed first; the communicator's
** stream) and out (NCCL's answer, and the stream's event to the watchdog's ring). */
static gl_status collective_enter(gl_device dev, cudaStream_t *s) {
  GL_TRY(nccl_flush());
  return stream_of(dev, s);
}

static gl_status collective_done(ncclResult_t r, cudaStream_t s, const char *call, const char *what) {
  GL_TRY(nccl_check(r, call));
  return track(s, what);
}

static gl_status nccl_all_reduce(gl_device dev, void *buf, int64_t count, gl_dtype dt, int op) {
  if (!nccl_reduces(dt, op)) return no_reduction(dt, op, "all_reduce");
  cudaStream_t s;
  GL_TRY(collective_enter(dev, &s));
  nccl_data d = nccl_as(dt, count);
  return collective_done(N.all_reduce(buf, buf, d.count, d.type, nccl_op(dt, op), N.comm, s), s, "ncclAllReduce",
                         "all_reduce");
}

static gl_status nccl_broadcast(gl_device dev, void *buf, int64_t count, gl_dtype dt, int root) {
  cudaStream_t s;
  GL_TRY(collective_enter(dev, &s));
  nccl_data d = nccl_as(dt, count);
  return collective_done(N.broadcast(buf, buf, d.count, d.type, root, N.comm, s), s, "ncclBroadcast", "broadcast");
}

static gl_status nccl_all_gather(gl_device dev, const void *send, void *recv, int64_t count, gl_dtype dt) {
  cudaStream_t s;
  GL_TRY(collective_enter(dev, &s));
  nccl_data d = nccl_as(dt, count);
  return collective_done(N.all_gather(send, recv, d.count, d.type, N.comm, s), s, "ncclAllGather", "all_gather");
}

static gl_status nccl_reduce_scatter(gl_device dev, const void *send, void *recv, int64_t count, gl_dtype dt, int op) {
  if (!nccl_reduces(dt, op)) return no_reduction(dt, op, "reduce_scatter");
  cudaStream_t s;
  GL_TRY(collective_enter(dev, &s));
  nccl_data d = nccl_as(dt, count);
  return collective_done(N.reduce_scatter(send, recv, d.count, d.type, nccl_op(dt, op), N.comm, s), s,
                         "ncclReduceScatter", "reduce_scatter");
}

static gl_status nccl_send(gl_device dev, const void *buf, int64_t count, gl_dtype dt, int peer, bool async) {
  return nccl_p2p(dev, (void *)buf, count, dt, peer, true, async);
}

static gl_status nccl_recv(gl_device dev, void *buf, int64_t count, gl_dtype dt, int peer, bool async) {
  return nccl_p2p(dev, buf, count, dt, peer, false, async);
}

static void nccl_finalize(bool abort) {
  if (!N.comm) return;
  if (abort) { if (N.grouped) N.group_end(); N.grouped = false; }
  else nccl_flush();
  if (!abort) {                 /* the queued operations end before the communicator */
    pthread_mutex_lock(&Q.mu);
    while (Q.n > 0) { cudaEventSynchronize(Q.op[Q.head].ev); reap(); }
    pthread_mutex_unlock(&Q.mu);
  }
  if (abort) N.comm_abort(N.comm); else N.comm_destroy(N.comm);
  N.comm = NULL;
}

const gl_collectives gl_cuda_nccl = {
  .id_bytes = sizeof(ncclUniqueId),
  .load = nccl_load,
  .unique_id = nccl_unique_id,
  .init = nccl_init,
  .all_reduce = nccl_all_reduce,
  .broadcast = nccl_broadcast,
  .all_gather = nccl_all_gather,
  .reduce_scatter = nccl_reduce_scatter,
  .reduces = nccl_reduces,
  .send = nccl_send,
  .recv = nccl_recv,
  .flush = nccl_flush,
  .finalize = nccl_finalize,
  .poll = nccl_poll,
};
