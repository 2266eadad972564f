/*
** dist.c — the engines behind gpu.distributed: a world of one (no launcher) and Open MPI.
**
** Open MPI is opened with dlopen at gl_dist_init only, so gpulua starts and runs without
** it. Its handles are not integers but the addresses of global objects (MPI_COMM_WORLD is
** &ompi_mpi_comm_world, MPI_FLOAT &ompi_mpi_float, MPI_SUM &ompi_mpi_op_sum ...): they are
** resolved here with dlsym, so this file depends on Open MPI's ABI (libmpi.so.40, Open MPI
** 3.x to 5.x). MPICH and its derivatives use integer handles and another soname; they are
** refused with a message that says so. The library is opened RTLD_GLOBAL: Open MPI's own
** plugins (mca_*.so) resolve their symbols against it.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "dist.h"
#include "../../kernels/half.h"

/* ---- Open MPI's C ABI, as much as we call ------------------------------------------------ */

typedef void *mpi_h;   /* MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request, MPI_Info, MPI_Errhandler */
/* struct ompi_status_public_t: four ints and a size_t; padded in case a later one grows */
typedef struct mpi_status { int source, tag, error, cancelled; size_t ucount; char spare[32]; } mpi_status;
typedef void mpi_user_fn(void *in, void *inout, int *len, mpi_h *dt);
#define MPI_IN_PLACE_ ((void *)1)
#define MPI_ANY_SOURCE_ (-1)
#define MPI_THREAD_FUNNELED_ 1
#define MPI_THREAD_MULTIPLE_ 3
#define MPI_COMM_TYPE_SHARED_ 0
#define TAG_FAIL 7001

typedef struct mpi_lib {
  void *lib;
  int (*Init_thread)(int *, char ***, int, int *);
  int (*Initialized)(int *);
  int (*Finalized)(int *);
  int (*Finalize)(void);
  int (*Abort)(mpi_h, int);
  int (*Comm_rank)(mpi_h, int *);
  int (*Comm_size)(mpi_h, int *);
  int (*Comm_dup)(mpi_h, mpi_h *);
  int (*Comm_split_type)(mpi_h, int, int, mpi_h, mpi_h *);
  int (*Comm_free)(mpi_h *);
  int (*Comm_set_errhandler)(mpi_h, mpi_h);
  int (*Iallreduce)(const void *, void *, int, mpi_h, mpi_h, mpi_h, mpi_h *);
  int (*Ibcast)(void *, int, mpi_h, int, mpi_h, mpi_h *);
  int (*Iallgather)(const void *, int, mpi_h, void *, int, mpi_h, mpi_h, mpi_h *);
  int (*Ireduce_scatter_block)(const void *, void *, int, mpi_h, mpi_h, mpi_h, mpi_h *);
  int (*Igather)(const void *, int, mpi_h, void *, int, mpi_h, int, mpi_h, mpi_h *);
  int (*Iscatter)(const void *, int, mpi_h, void *, int, mpi_h, int, mpi_h, mpi_h *);
  int (*Isend)(const void *, int, mpi_h, int, int, mpi_h, mpi_h *);
  int (*Irecv)(void *, int, mpi_h, int, int, mpi_h, mpi_h *);
  int (*Ibarrier)(mpi_h, mpi_h *);
  int (*Allreduce)(const void *, void *, int, mpi_h, mpi_h, mpi_h);
  int (*Bcast)(void *, int, mpi_h, int, mpi_h);
  int (*Allgather)(const void *, int, mpi_h, void *, int, mpi_h, mpi_h);
  int (*Reduce_scatter_block)(const void *, void *, int, mpi_h, mpi_h, mpi_h);
  int (*Gather)(const void *, int, mpi_h, void *, int, mpi_h, int, mpi_h);
  int (*Scatter)(const void *, int, mpi_h, void *, int, mpi_h, int, mpi_h);
  int (*Send)(const void *, int, mpi_h, int, int, mpi_h);
  int (*Barrier)(mpi_h);
  int (*Test)(mpi_h *, int *, mpi_status *);
  int (*Iprobe)(int, int, mpi_h, int *, mpi_status *);
  int (*Recv)(void *, int, mpi_h, int, int, mpi_h, mpi_status *);
  int (*Get_count)(const mpi_status *, mpi_h, int *);
  int (*Op_create)(mpi_user_fn *, int, mpi_h *);
  int (*Error_string)(int, char *, int *);
  int (*Get_library_version)(char *, int *);
  mpi_h world, info_null, errors_return, char_type;
  mpi_h type[GL_NDTYPE];
  mpi_h op[4];              /* sum prod max min */
  mpi_h half_op[2][4];      /* float16, bfloat16: user ops computing in float */
  mpi_h data, ctl, local;   /* duplicates of COMM_WORLD: user collectives, failure notes */
} mpi_lib;
static mpi_lib M;

static struct {
  bool initialized, finalized, failed_remotely, mpi, atexit_set;
  bool watched;     /* MPI_THREAD_MULTIPLE: synchronous calls are blocking ones under the watchdog */
  double timeout;
  gl_dist_info info;
  char version[256];
} S = { .timeout = 1800 };

struct gl_dist_req { mpi_h r; bool local; };

static struct { const gl_collectives *c; gl_device dev; bool on; } NC;   /* NCCL, when started */

/* ---- float16 / bfloat16 reductions (MPI has no such types: uint16 with user ops) ------ */

#define HALF_OP(name, to, from, EXPR)                                             \
  static void name(void *in, void *inout, int *len, mpi_h *dt) {                  \
    (void)dt;                                                                     \
    const uint16_t *a = in; uint16_t *b = inout;                                  \
    for (int i = 0; i < *len; i++) {                                              \
      float x = to(a[i]), y = to(b[i]);                                           \
      b[i] = from(EXPR);                                                          \
    }                                                                             \
  }
HALF_OP(f16_sum, gl_f16_to_f32, gl_f32_to_f16, x + y)
HALF_OP(f16_prod, gl_f16_to_f32, gl_f32_to_f16, x * y)
HALF_OP(f16_max, gl_f16_to_f32, gl_f32_to_f16, (x > y || x != x) ? x : y)
HALF_OP(f16_min, gl_f16_to_f32, gl_f32_to_f16, (x < y || x != x) ? x : y)
HALF_OP(bf16_sum, gl_bf16_to_f32, gl_f32_to_bf16, x + y)
HALF_OP(bf16_prod, gl_bf16_to_f32, gl_f32_to_bf16, x * y)
HALF_OP(bf16_max, gl_bf16_to_f32, gl_f32_to_bf16, (x > y || x != x) ? x : y)
HALF_OP(bf16_min, gl_bf16_to_f32, gl_f32_to_bf16, (x < y || x != x) ? x : y)
static mpi_user_fn *const half_fns[2][4] = {
  { f16_sum, f16_prod, f16_max, f16_min }, { bf16_sum, bf16_prod, bf16_max, bf16_min },
};

/* ---- loading ------------------------------------------------------------------------------ */

static const char *mpi_errstr(int rc) {
  static char buf[256];
  int n = 0;
  if (!M.Error_string || M.Error_string(rc, buf, &n) != 0) snprintf(buf, sizeof buf, "MPI error %d", rc);
  return buf;
}

/* What load_mpi resolves: each field of M at 'at' from the symbol 'name' (MPI's functions,
** named MPI_ and the field's name, and Open MPI's predefined objects). */
#define MPI_FN(field) { offsetof(mpi_lib, field), "MPI_" #field }
#define OMPI_OBJ(field, symbol) { offsetof(mpi_lib, field), symbol }
static const struct { size_t at; const char *name; } mpi_symbols[] = {
  MPI_FN(Init_thread), MPI_FN(Initialized), MPI_FN(Finalized), MPI_FN(Finalize), MPI_FN(Abort), MPI_FN(Comm_rank),
  MPI_FN(Comm_size), MPI_FN(Comm_dup), MPI_FN(Comm_split_type), MPI_FN(Comm_free), MPI_FN(Comm_set_errhandler),
  MPI_FN(Iallreduce), MPI_FN(Ibcast), MPI_FN(Iallgather), MPI_FN(Ireduce_scatter_block), MPI_FN(Igather),
  MPI_FN(Iscatter), MPI_FN(Isend), MPI_FN(Irecv), MPI_FN(Ibarrier), MPI_FN(Test), MPI_FN(Iprobe), MPI_FN(Recv),
  MPI_FN(Get_count), MPI_FN(Op_create), MPI_FN(Error_string), MPI_FN(Get_library_version), MPI_FN(Allreduce),
  MPI_FN(Bcast), MPI_FN(Allgather), MPI_FN(Reduce_scatter_block), MPI_FN(Gather), MPI_FN(Scatter), MPI_FN(Send),
  MPI_FN(Barrier),
  OMPI_OBJ(world, "ompi_mpi_comm_world"), OMPI_OBJ(info_null, "ompi_mpi_info_null"),
  OMPI_OBJ(errors_return, "ompi_mpi_errors_return"), OMPI_OBJ(char_type, "ompi_mpi_char"),
  /* each dtype's MPI type: its row's mpi column, ompi_mpi_<mpi> (MPI_INT8_T is ompi_mpi_int8_t) */
#define MPI_TYPE_(E, mpi) OMPI_OBJ(type[GL_##E], "ompi_mpi_" #mpi),
  GL_DTYPE_COLUMN(MPI_TYPE_, mpi)
#undef MPI_TYPE_
  OMPI_OBJ(op[GL_DIST_SUM], "ompi_mpi_op_sum"), OMPI_OBJ(op[GL_DIST_PROD], "ompi_mpi_op_prod"),
  OMPI_OBJ(op[GL_DIST_MAX], "ompi_mpi_op_max"), OMPI_OBJ(op[GL_DIST_MIN], "ompi_mpi_op_min"),
};
#undef MPI_FN
#undef OMPI_OBJ

static gl_status load_mpi(void) {
  if (M.lib) return GL_OK;
  void *lib = dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL);
  if (!lib)
    return gl_fail(GL_ENOTSUP, "started by a launcher but Open MPI's libmpi.so.40 cannot be opened (%s); "
                   "install libopenmpi-dev (gpulua speaks Open MPI's ABI only: MPICH's integer handles are "
                   "not supported)", dlerror());
  if (!dlsym(lib, "ompi_mpi_comm_world")) {
    dlclose(lib);
    return gl_fail(GL_ENOTSUP, "libmpi.so.40 is not Open MPI (no ompi_mpi_comm_world); gpulua speaks "
                   "Open MPI's ABI only");
  }
  bool ok = true;
  for (size_t i = 0; i < sizeof mpi_symbols / sizeof *mpi_symbols; i++) {
    void *p = dlsym(lib, mpi_symbols[i].name);
    ok = ok && p != NULL;
    memcpy((char *)&M + mpi_symbols[i].at, &p, sizeof p);    /* a function pointer or an object's address */
  }
  if (!ok) {
    dlclose(lib);
    memset(&M, 0, sizeof M);
    return gl_fail(GL_ENOTSUP, "libmpi.so.40 lacks an MPI-3 function or object gpulua needs (Open MPI >= 3 required)");
  }
  M.lib = lib;
  return GL_OK;
}

/* At exit: MPI_Finalize if the script did not (torch.distributed's destroy_process_group
** is optional too); never after another rank failed (finalize would wait for it). */
static void dist_atexit(void) {
  if (S.mpi && S.initialized && !S.finalized && !S.failed_remotely) {
    int done = 0;
    M.Finalized(&done);
    if (!done) M.Finalize();
  }
}

/* Was this process started by a launcher? Open MPI's mpirun, a PMIx or PMI server (srun,
** hydra), or srun itself for more than one task. */
static bool launched(void) {
  const char *n = getenv("SLURM_NTASKS");
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") ||
         (getenv("SLURM_PROCID") && n && atoi(n) > 1);
}

static bool start_watchdog(void);

gl_status gl_dist_init(double timeout_s, gl_dist_info *out) {
  if (timeout_s > 0) S.timeout = timeout_s;
  if (S.finalized) return gl_fail(GL_EINVAL, "finalize was called: a process can initialize only once");
  if (S.initialized) { *out = S.info; return GL_OK; }
  gl_dist_info info = { 0, 1, 0, 1, "local", "" };
  if (launched()) {
    GL_TRY(load_mpi());
    int already = 0, provided = 0, rc;
    M.Initialized(&already);
    if (!already && (rc = M.Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE_, &provided)) != 0)
      return gl_fail(GL_EDEVICE, "MPI_Init_thread failed: %s", mpi_errstr(rc));
    M.Comm_set_errhandler(M.world, M.errors_return);
    if ((rc = M.Comm_dup(M.world, &M.data)) != 0 || (rc = M.Comm_dup(M.world, &M.ctl)) != 0 ||
        (rc = M.Comm_split_type(M.world, MPI_COMM_TYPE_SHARED_, 0, M.info_null, &M.local)) != 0)
      return gl_fail(GL_EDEVICE, "making the communicators failed: %s", mpi_errstr(rc));
    M.Comm_set_errhandler(M.data, M.errors_return);
    M.Comm_set_errhandler(M.ctl, M.errors_return);
    M.Comm_rank(M.world, &info.rank);
    M.Comm_size(M.world, &info.size);
    M.Comm_rank(M.local, &info.local_rank);
    M.Comm_size(M.local, &info.local_size);
    for (int h = 0; h < 2; h++)
      for (int o = 0; o < 4; o++)
        if ((rc = M.Op_create(half_fns[h][o], 1, &M.half_op[h][o])) != 0)
          return gl_fail(GL_EDEVICE, "MPI_Op_create failed: %s", mpi_errstr(rc));
    int n = (int)sizeof S.version;
    if (M.Get_library_version(S.version, &n) == 0) {
      char *nl = strchr(S.version, ','); if (nl) *nl = 0;   /* "Open MPI v4.1.4" */
    }
    /* the watchdog thread of the blocking calls (without it, synchronous calls are the
    ** non-blocking ones tested in a loop, as async handles are) */
    S.watched = !already && provided >= MPI_THREAD_MULTIPLE_ && start_watchdog();
    info.engine = "mpi";
    info.library = S.version;
    S.mpi = true;
    if (!S.atexit_set) { atexit(dist_atexit); S.atexit_set = true; }
  }
  S.info = info;
  S.initialized = true;
  *out = info;
  return GL_OK;
}

bool gl_dist_initialized(void) { return S.initialized; }
bool gl_dist_library_loaded(void) { return M.lib != NULL; }
bool gl_dist_watched(void) { return S.watched; }
void gl_dist_set_timeout(double t) { if (t > 0) S.timeout = t; }
double gl_dist_timeout(void) { return S.timeout; }
bool gl_dist_failed_remotely(void) { return S.failed_remotely; }


gl_status gl_dist_finalize(void) {
  if (!S.initialized) return GL_OK;
  S.initialized = false;
  S.finalized = true;
  if (NC.on) { NC.c->finalize(false); NC.on = false; }
  if (S.mpi) {
    int rc = M.Finalize();
    if (rc != 0) return gl_fail(GL_EDEVICE, "MPI_Finalize failed: %s", mpi_errstr(rc));
  }
  return GL_OK;
}

/* ---- requests and the watchdog ----------------------------------------------------------- */

static gl_status not_ready(void) {
  if (!S.initialized) return gl_fail(GL_EINVAL, "gpu.distributed is not initialized (call gpu.distributed.init() first)");
  return GL_OK;
}

static gl_status count_ok(int64_t count) {
  if (count > INT_MAX) return gl_fail(GL_ETOOBIG, "%lld elements in one collective (at most %d)", (long long)count, INT_MAX);
  return GL_OK;
}

static gl_status new_req(gl_dist_req **req, bool local) {
  *req = calloc(1, sizeof **req);
  if (!*req) return gl_fail(GL_ENOMEM, "out of memory");
  (*req)->local = local;
  return GL_OK;
}

static gl_status started(int rc, gl_dist_req **req, const char *what) {
  if (rc != 0) { free(*req); *req = NULL; return gl_fail(GL_EDEVICE, "%s failed: %s", what, mpi_errstr(rc)); }
  return GL_OK;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The watchdog of the blocking calls. A synchronous collective is one blocking MPI call
** (MPI_Allreduce, ...): Open MPI's tuned algorithms and its own progress loop make it
** 1.5-2x faster than a non-blocking one tested in a loop from 1 MB up, and 10-100x below
** 64 KB on a loaded machine. It cannot be interrupted, so a thread (MPI is initialized
** with MPI_THREAD_MULTIPLE) wakes every 20 ms (100 ms while nothing is watched) and, while
** a call is armed or NCCL has operations queued, looks for another rank's failure note
** and at the deadline; either ends the job: the message on stderr, then MPI_Abort.
** Arming is two atomic stores (no lock, no wake-up: a signal per call put the thread on
** a core the ranks were spinning on); take_note runs under the lock on either thread, so
** two probes never race for one note. */
static struct {
  pthread_mutex_t mu;                 /* serialises take_note */
  bool started;
  atomic_bool armed, nccl_busy;
  _Atomic double deadline;
  const char *_Atomic what;
} W = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Takes another rank's note that it failed (sent by gl_dist_fail on the control
** communicator), if one has come: its text into buf, the sender's 1-based rank into *from. */
static bool take_note(char *buf, int size, int *from) {
  int flag = 0;
  mpi_status st;
  if (M.Iprobe(MPI_ANY_SOURCE_, TAG_FAIL, M.ctl, &flag, &st) != 0 || !flag) return false;
  int n = 0;
  M.Get_count(&st, M.char_type, &n);
  if (n < 0 || n >= size) n = size - 1;
  M.Recv(buf, n, M.char_type, st.source, TAG_FAIL, M.ctl, &st);
  buf[n] = 0;
  *from = st.source + 1;
  return true;
}

static gl_status poll_failure(void) {
  char buf[1024];
  int from;
  pthread_mutex_lock(&W.mu);
  bool got = take_note(buf, (int)sizeof buf, &from);
  pthread_mutex_unlock(&W.mu);
  if (!got) return GL_OK;
  S.failed_remotely = true;
  return gl_fail(GL_EDEVICE, "rank %d failed: %s", from, buf);
}

#define TIMEOUT_FMT "%s timed out after %g s on rank %d of %d (another rank failed, stopped or called a " \
                    "different collective; the timeout is init's 'timeout' or GPULUA_DIST_TIMEOUT)"

static void end_job(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void end_job(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gpu.distributed: rank %d of %d: ", S.info.rank + 1, S.info.size);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("; aborting the job (MPI_Abort)\n", stderr);
  fflush(stderr);
  if (NC.on) NC.c->finalize(true);
  M.Abort(M.world, 1);
  _exit(1);
}

static void *watchdog(void *unused) {
  (void)unused;
  for (;;) {
    bool busy = atomic_load(&W.armed) || atomic_load(&W.nccl_busy);
    struct timespec ts = { 0, busy ? 20000000 : 100000000 };
    nanosleep(&ts, NULL);
    char buf[1024];
    int from;
    if (atomic_load(&W.nccl_busy)) {
      int st = NC.on && NC.c->poll ? NC.c->poll(S.timeout, buf, sizeof buf) : 0;
      if (st < 0) end_job("%s", buf);
      if (st == 0) {
        /* cleared, then looked at again: an operation queued meanwhile sets it itself */
        atomic_store(&W.nccl_busy, false);
        if (NC.c->poll(S.timeout, buf, sizeof buf) != 0) atomic_store(&W.nccl_busy, true);
      }
    }
    if (!atomic_load(&W.armed) && !atomic_load(&W.nccl_busy)) continue;
    pthread_mutex_lock(&W.mu);
    bool got = take_note(buf, (int)sizeof buf, &from);
    pthread_mutex_unlock(&W.mu);
    if (got) {
      S.failed_remotely = true;
      end_job("rank %d failed: %s", from, buf);
    }
    if (atomic_load(&W.armed) && now() > atomic_load(&W.deadline))
      end_job(TIMEOUT_FMT, atomic_load(&W.what), S.timeout, S.info.rank + 1, S.info.size);
  }
  return NULL;
}

static bool start_watchdog(void) {
  pthread_t t;
  if (W.started) return true;
  if (pthread_create(&t, NULL, watchdog, NULL) != 0) return false;
  pthread_detach(t);
  return W.started = true;
}

static void watch_begin(const char *what) {
  atomic_store(&W.what, what);
  atomic_store(&W.deadline, now() + S.timeout);
  atomic_store(&W.armed, true);
}

/* Ends the watch of a blocking call whose result is rc. */
static gl_status watch_end(int rc, const char *fn) {
  atomic_store(&W.armed, false);
  if (rc != 0) return gl_fail(GL_EDEVICE, "%s failed: %s", fn, mpi_errstr(rc));
  return poll_failure();
}

gl_status gl_dist_test(gl_dist_req *req, bool *done) {
  if (req == NULL || req->local) { *done = true; return GL_OK; }
  int flag = 0;
  mpi_status st;
  int rc = M.Test(&req->r, &flag, &st);
  if (rc != 0) return gl_fail(GL_EDEVICE, "MPI_Test failed: %s", mpi_errstr(rc));
  *done = flag != 0;
  return poll_failure();
}

/* Tests until done: spinning (yielding the core) while the wait is young, then sleeping
** 100 us between tests; every 64 tests it looks for another rank's failure and at the
** deadline. A request that timed out is left in flight (the job is ending). */
gl_status gl_dist_wait(gl_dist_req *req, const char *what) {
  if (req == NULL) return GL_OK;
  if (req->local) { free(req); return GL_OK; }
  double start = now(), deadline = start + S.timeout;
  for (unsigned long it = 1;; it++) {
    int flag = 0;
    mpi_status st;
    int rc = M.Test(&req->r, &flag, &st);
    if (rc != 0) { free(req); return gl_fail(GL_EDEVICE, "%s failed: %s", what, mpi_errstr(rc)); }
    if (flag) { free(req); return GL_OK; }
    if (it % 64 == 0) {
      if (poll_failure() != GL_OK) return GL_EDEVICE;
      double t = now();
      if (t > deadline)
        return gl_fail(GL_EDEVICE, TIMEOUT_FMT, what, S.timeout, S.info.rank + 1, S.info.size);
      if (t - start > 1.0) {
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
      } else {
        sched_yield();
      }
    }
  }
}

/* ---- collectives ---------------------------------------------------------------------------- */

static mpi_h reduce_op(gl_dtype dt, gl_dist_op op) {
  if (dt == GL_BOOL) op = (op == GL_DIST_SUM || op == GL_DIST_MAX) ? GL_DIST_MAX : GL_DIST_MIN;  /* or / and */
  if (dt == GL_FLOAT16) return M.half_op[0][op];
  if (dt == GL_BFLOAT16) return M.half_op[1][op];
  return M.op[op];
}

const char *const gl_dist_kind_names[GL_DIST_BARRIER + 1] = {
  "all_reduce", "broadcast", "all_gather", "reduce_scatter", "send", "recv", "gather", "scatter", "barrier"
};

/* The MPI functions of each collective: the blocking one, then the non-blocking one. */
static const char *const mpi_names[GL_DIST_BARRIER + 1][2] = {
  [GL_DIST_ALLREDUCE] = { "MPI_Allreduce", "MPI_Iallreduce" },
  [GL_DIST_BCAST] = { "MPI_Bcast", "MPI_Ibcast" },
  [GL_DIST_ALLGATHER] = { "MPI_Allgather", "MPI_Iallgather" },
  [GL_DIST_REDUCE_SCATTER] = { "MPI_Reduce_scatter_block", "MPI_Ireduce_scatter_block" },
  [GL_DIST_SEND] = { "MPI_Send", "MPI_Isend" },
  [GL_DIST_RECV] = { "MPI_Recv", "MPI_Irecv" },
  [GL_DIST_GATHER] = { "MPI_Gather", "MPI_Igather" },
  [GL_DIST_SCATTER] = { "MPI_Scatter", "MPI_Iscatter" },
  [GL_DIST_BARRIER] = { "MPI_Barrier", "MPI_Ibarrier" },
};

/* Makes a's MPI call on comm: the non-blocking one (its request into *r), or with r NULL
** the blocking one. Returns MPI's error code. */
static int mpi_call(const gl_dist_args *a, mpi_h comm, mpi_h *r) {
  int n = (int)a->count;
  mpi_h t = M.type[a->dtype], op;
  mpi_status st;
  switch (a->kind) {
  case GL_DIST_ALLREDUCE:
    op = reduce_op(a->dtype, (gl_dist_op)a->op);
    return r ? M.Iallreduce(MPI_IN_PLACE_, a->recv, n, t, op, comm, r)
             : M.Allreduce(MPI_IN_PLACE_, a->recv, n, t, op, comm);
  case GL_DIST_BCAST: return r ? M.Ibcast(a->recv, n, t, a->peer, comm, r) : M.Bcast(a->recv, n, t, a->peer, comm);
  case GL_DIST_ALLGATHER:
    return r ? M.Iallgather(a->send, n, t, a->recv, n, t, comm, r) : M.Allgather(a->send, n, t, a->recv, n, t, comm);
  case GL_DIST_REDUCE_SCATTER:
    op = reduce_op(a->dtype, (gl_dist_op)a->op);
    return r ? M.Ireduce_scatter_block(a->send, a->recv, n, t, op, comm, r)
             : M.Reduce_scatter_block(a->send, a->recv, n, t, op, comm);
  case GL_DIST_SEND:
    return r ? M.Isend(a->send, n, t, a->peer, a->tag, comm, r) : M.Send(a->send, n, t, a->peer, a->tag, comm);
  case GL_DIST_RECV:
    return r ? M.Irecv(a->recv, n, t, a->peer, a->tag, comm, r) : M.Recv(a->recv, n, t, a->peer, a->tag, comm, &st);
  case GL_DIST_GATHER:
    return r ? M.Igather(a->send, n, t, a->recv, n, t, a->peer, comm, r)
             : M.Gather(a->send, n, t, a->recv, n, t, a->peer, comm);
  case GL_DIST_SCATTER:
    return r ? M.Iscatter(a->send, n, t, a->recv, n, t, a->peer, comm, r)
             : M.Scatter(a->send, n, t, a->recv, n, t, a->peer, comm);
  case GL_DIST_BARRIER: return r ? M.Ibarrier(comm, r) : M.Barrier(comm);
  }
  return -1;
}

/* Starts a on comm as a non-blocking MPI call: *req, for gl_dist_wait / gl_dist_test. */
static gl_status mpi_start(const gl_dist_args *a, mpi_h comm, gl_dist_req **req) {
  GL_TRY(new_req(req, false));
  return started(mpi_call(a, comm, &(*req)->r), req, mpi_names[a->kind][1]);
}

/* Runs a on comm synchronously: the blocking MPI call under the watchdog when it runs, else
** the non-blocking one waited for here. 'what' names it in a timeout. */
static gl_status mpi_sync(const gl_dist_args *a, mpi_h comm, const char *what) {
  if (S.watched) {
    watch_begin(what);
    return watch_end(mpi_call(a, comm, NULL), mpi_names[a->kind][0]);
  }
  gl_dist_req *r;
  GL_TRY(mpi_start(a, comm, &r));
  return gl_dist_wait(r, what);
}

/* a in a world of one: the root's part of a gather or a scatter is a copy, there is no
** other rank to send to or receive from, and the rest moves nothing. */
static gl_status alone(const gl_dist_args *a, gl_dist_req **req) {
  if (a->kind == GL_DIST_SEND || a->kind == GL_DIST_RECV) return gl_fail(GL_EINVAL, "no other rank in a world of 1");
  if (req) GL_TRY(new_req(req, true));
  if (a->send && a->recv) memcpy(a->recv, a->send, (size_t)a->count * gl_dtypes[a->dtype].size);
  return GL_OK;
}

static gl_status nccl_run(const gl_dist_args *a, bool async);

gl_status gl_dist_start(const gl_dist_args *a, gl_dist_req **req) {
  GL_TRY(not_ready());
  if (a->nccl) {
    if (req) *req = NULL;
    return nccl_run(a, req != NULL);
  }
  GL_TRY(count_ok(a->count));
  if (!S.mpi) return alone(a, req);
  if (req) return mpi_start(a, M.data, req);
  return mpi_sync(a, M.data, gl_dist_kind_names[a->kind]);
}

/* ---- NCCL ------------------------------------------------------------------------------------- */

/* Whether every rank says yes (an MPI all-reduce of min on the control communicator). */
static gl_status all_agree(bool mine, bool *all) {
  *all = mine;
  if (!S.mpi) return GL_OK;
  int32_t v = mine;
  gl_dist_req *req;
  GL_TRY(mpi_start(&(gl_dist_args){ .kind = GL_DIST_ALLREDUCE, .recv = &v, .count = 1, .dtype = GL_INT32,
                                    .op = GL_DIST_MIN }, M.ctl, &req));
  GL_TRY(gl_dist_wait(req, "init"));
  *all = v != 0;
  return GL_OK;
}

gl_status gl_dist_nccl_start(gl_device dev, bool required) {
  GL_TRY(not_ready());
  if (NC.on) return GL_OK;
  const gl_backend *b = gl_backend_get(dev.type);
  const gl_collectives *c = b ? b->collectives : NULL;
  bool mine = c != NULL && c->load() == GL_OK, all;
  char why[256], dn[GL_DEVNAME_SIZE];
  if (c == NULL) snprintf(why, sizeof why, "this rank's default device is the %s", gl_device_name(dev, dn));
  else snprintf(why, sizeof why, "%s", mine ? "" : gl_errmsg());
  GL_TRY(all_agree(mine, &all));
  if (!all) {
    if (!required) return GL_OK;
    return gl_fail(GL_ENOTSUP, "backend 'nccl' is not available %s%s", *why ? "on this rank: " : "on another rank",
                   why);
  }
  unsigned char id[512] = { 0 };
  if (c->id_bytes > sizeof id) return gl_fail(GL_ENOTSUP, "NCCL's unique id is larger than gpulua expects");
  if (S.info.rank == 0) GL_TRY(c->unique_id(id));
  if (S.mpi) {
    gl_dist_req *req;
    GL_TRY(mpi_start(&(gl_dist_args){ .kind = GL_DIST_BCAST, .recv = id, .count = (int64_t)c->id_bytes,
                                      .dtype = GL_UINT8, .peer = 0 }, M.ctl, &req));
    GL_TRY(gl_dist_wait(req, "init"));
  }
  GL_TRY(c->init(dev, id, S.info.size, S.info.rank));
  NC.c = c;
  NC.dev = dev;
  NC.on = true;
  return GL_OK;
}

bool gl_dist_nccl_on(gl_device dev) { return NC.on && gl_device_eq(dev, NC.dev); }

bool gl_dist_nccl_reduces(gl_dtype dt, int op) { return NC.on && NC.c->reduces(dt, op); }

gl_status gl_dist_nccl_flush(void) {
  if (!NC.on || !NC.c->flush) return GL_OK;
  gl_status st = NC.c->flush();
  if (st == GL_OK && W.started) atomic_store(&W.nccl_busy, true);
  return st;
}

/* a through NCCL: queued on the stream; an async send or recv joins the open group. */
static gl_status nccl_run(const gl_dist_args *a, bool async) {
  if (!gl_dist_nccl_on(a->dev)) return gl_fail(GL_EINVAL, "NCCL is not started on this device");
  gl_device dev = a->dev;
  gl_status st;
  switch (a->kind) {
  case GL_DIST_ALLREDUCE: st = NC.c->all_reduce(dev, a->recv, a->count, a->dtype, a->op); break;
  case GL_DIST_BCAST: st = NC.c->broadcast(dev, a->recv, a->count, a->dtype, a->peer); break;
  case GL_DIST_ALLGATHER: st = NC.c->all_gather(dev, a->send, a->recv, a->count, a->dtype); break;
  case GL_DIST_REDUCE_SCATTER: st = NC.c->reduce_scatter(dev, a->send, a->recv, a->count, a->dtype, a->op); break;
  case GL_DIST_SEND: st = NC.c->send(dev, a->send, a->count, a->dtype, a->peer, async); break;
  case GL_DIST_RECV: st = NC.c->recv(dev, a->recv, a->count, a->dtype, a->peer, async); break;
  default: return gl_fail(GL_EINVAL, "unknown collective");
  }
  if (st == GL_OK && W.started) atomic_store(&W.nccl_busy, true);   /* the watchdog follows it */
  return st;
}

/* ---- the ranks compare their calls ----------------------------------------------------- */

typedef struct call_note { int64_t failed; gl_dist_call call; char msg[GL_DIST_MSG]; } call_note;

#define CALL_FIELDS ((int)(sizeof(gl_dist_call) / sizeof(int64_t)))

gl_status gl_dist_compare(const gl_dist_call *mine, const char *failure, const char *what, gl_dist_verdict *out) {
  GL_TRY(not_ready());
  memset(out, 0, sizeof *out);
  out->rank = -1;
  if (!S.mpi) return GL_OK;
  /* each field and its negation: one MAX gives every field's largest and smallest value */
  int64_t v[2 * (CALL_FIELDS + 1)];
  v[0] = failure != NULL;
  memcpy(v + 1, mine, sizeof *mine);
  for (int i = 0; i <= CALL_FIELDS; i++) v[CALL_FIELDS + 1 + i] = -v[i];
  /* on the control communicator, made as a synchronous collective is */
  GL_TRY(mpi_sync(&(gl_dist_args){ .kind = GL_DIST_ALLREDUCE, .recv = v, .count = 2 * (CALL_FIELDS + 1),
                                   .dtype = GL_INT64, .op = GL_DIST_MAX }, M.ctl, what));
  bool same = v[0] == 0;
  for (int i = 1; same && i <= CALL_FIELDS; i++) same = v[i] == -v[CALL_FIELDS + 1 + i];
  if (same) return GL_OK;
  /* they differ: every rank's note, so that every rank names the same one */
  int n = S.info.size;
  call_note note;
  memset(&note, 0, sizeof note);
  note.failed = failure != NULL;
  note.call = *mine;
  if (failure) snprintf(note.msg, sizeof note.msg, "%s", failure);
  call_note *all = calloc((size_t)n, sizeof *all);
  if (!all) return gl_fail(GL_ENOMEM, "out of memory");
  gl_status st = mpi_sync(&(gl_dist_args){ .kind = GL_DIST_ALLGATHER, .send = &note, .recv = all,
                                          .count = (int64_t)sizeof note, .dtype = GL_UINT8 }, M.ctl, what);
  if (st != GL_OK) { free(all); return st; }
  int r = 0;
  while (r < n && !all[r].failed) r++;
  if (r == n)
    for (r = 1; r < n - 1 && memcmp(&all[r].call, &all[0].call, sizeof all[0].call) == 0; r++) {}
  out->rank = r;
  out->failed = all[r].failed != 0;
  out->first = all[0].call;
  out->theirs = all[r].call;
  memcpy(out->msg, all[r].msg, sizeof out->msg);
  out->msg[sizeof out->msg - 1] = 0;
  free(all);
  return GL_OK;
}

/* ---- faults ------------------------------------------------------------------------------- */

void gl_dist_fail(const char *msg) {
  if (!S.mpi || !S.initialized || S.finalized) return;
  if (S.failed_remotely) return;       /* the failing rank aborts the job; say nothing more */
  int n = S.info.size, me = S.info.rank;
  char buf[1000];
  snprintf(buf, sizeof buf, "%s", msg ? msg : "(no message)");
  char *tb = strstr(buf, "\nstack traceback:");   /* the others need the message, not our stack */
  if (tb) *tb = 0;
  int len = (int)strlen(buf) + 1;
  mpi_h reqs[256];
  int nreq = 0;
  for (int r = 0; r < n && nreq < 256; r++)
    if (r != me && M.Isend(buf, len, M.char_type, r, TAG_FAIL, M.ctl, &reqs[nreq]) == 0) nreq++;
  /* let the notes leave and the others print them, then end the job */
  double until = now() + 2.0;
  int pending = nreq;
  while (pending > 0 && now() < until) {
    pending = 0;
    for (int i = 0; i < nreq; i++) {
      if (!reqs[i]) continue;
      int flag = 0;
      mpi_status st;
      if (M.Test(&reqs[i], &flag, &st) != 0 || flag) reqs[i] = NULL; else pending++;
    }
    struct timespec ts = { 0, 1000000 };
    nanosleep(&ts, NULL);
  }
  struct timespec ts = { 0, 500000000 };
  nanosleep(&ts, NULL);
  fprintf(stderr, "gpu.distributed: rank %d of %d failed; aborting the job (MPI_Abort)\n", me + 1, n);
  fflush(stderr);
  if (NC.on) NC.c->finalize(true);
  M.Abort(M.world, 1);
  _exit(1);
}
