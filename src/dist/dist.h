/*
** dist.h — collectives between processes (gpu.distributed), below the Lua binding.
**
** Plain C: no lua.h, no MPI or CUDA header. The engine is chosen once, at gl_dist_init:
**   local  no launcher in the environment: a world of one process, collectives are copies
**          (no library is loaded, so a script runs anywhere as before);
**   mpi    started by mpirun/srun: Open MPI's libmpi.so.40, opened with dlopen at init;
**   nccl   beside either, for cuda arrays: the cuda backend's collectives (NCCL), its unique
**          id sent from rank 0 over MPI.
** Buffers are contiguous host memory; counts are elements of one dtype. Every collective
** is started non-blocking and returns a request; gl_dist_wait then tests it until it
** completes, until the job's timeout passes (an error naming the collective), or until
** another rank reports that it failed (an error naming that rank and its message), so a
** job never hangs silently.
*/
#ifndef GL_DIST_H
#define GL_DIST_H

#include <stdbool.h>
#include <stdint.h>
#include "../core/dtype.h"
#include "../core/status.h"
#include "../backend/backend.h"

typedef enum gl_dist_op { GL_DIST_SUM, GL_DIST_PROD, GL_DIST_MAX, GL_DIST_MIN } gl_dist_op;

typedef struct gl_dist_info {
  int rank, size;               /* 0-based here; the Lua API adds one */
  int local_rank, local_size;   /* among the processes of this machine */
  const char *engine;           /* "local" or "mpi" */
  const char *library;          /* the library's version string ("" for local) */
} gl_dist_info;

/* Starts the engine (idempotent while initialized; after gl_dist_finalize it refuses, as
** MPI cannot start twice). timeout_s > 0 bounds every wait. */
gl_status gl_dist_init(double timeout_s, gl_dist_info *out);
bool gl_dist_initialized(void);
/* Whether the MPI library is mapped into the process (for the specs: gpulua -e '' must not). */
bool gl_dist_library_loaded(void);
/* Whether synchronous collectives are blocking MPI calls under the watchdog thread. */
bool gl_dist_watched(void);
void gl_dist_set_timeout(double timeout_s);
double gl_dist_timeout(void);
/* Ends the engine (MPI_Finalize); later calls refuse. Also run at exit if still open. */
gl_status gl_dist_finalize(void);

/* An operation in flight. */
typedef struct gl_dist_req gl_dist_req;

/* The collectives, by the names users call them (gl_dist_kind_names). */
typedef enum gl_dist_kind {
  GL_DIST_ALLREDUCE, GL_DIST_BCAST, GL_DIST_ALLGATHER, GL_DIST_REDUCE_SCATTER, GL_DIST_SEND, GL_DIST_RECV,
  GL_DIST_GATHER, GL_DIST_SCATTER, GL_DIST_BARRIER
} gl_dist_kind;
extern const char *const gl_dist_kind_names[GL_DIST_BARRIER + 1];   /* "all_reduce", "broadcast", ... */

/* One collective: what this rank sends and receives (contiguous memory where the engine
** works: host memory for MPI, the device's for NCCL), counts in elements of dtype, ranks
** 0-based. all_reduce and broadcast work in place on recv (send NULL); all_gather writes
** size*count elements into recv; reduce_scatter reduces size*count elements of send and
** leaves this rank's count in recv; gather and scatter use recv and send on the root only
** (NULL elsewhere); send sends send, recv receives into recv; barrier moves nothing. */
typedef struct gl_dist_args {
  gl_dist_kind kind;
  const void *send;
  void *recv;
  int64_t count;          /* at most INT_MAX through MPI */
  gl_dtype dtype;
  int op;                 /* all_reduce, reduce_scatter: gl_dist_op; 4 = mean through NCCL only */
  int peer;               /* broadcast, gather, scatter: the root; send, recv: the other rank */
  int tag;                /* send, recv through MPI (NCCL has none: its messages between two
                          ** ranks keep their order) */
  bool nccl;              /* through NCCL on dev (gl_dist_nccl_on) rather than MPI */
  gl_device dev;
} gl_dist_args;

/* Starts a. Through MPI: with req NULL a synchronous call, done when it returns (under
** Open MPI the blocking MPI function, watched by a thread that ends the job at the timeout
** or at another rank's failure note); else *req is a request in flight for gl_dist_wait /
** gl_dist_test. Through NCCL: queued on dev's stream, nothing to wait for (*req is NULL);
** an async (req not NULL) send or recv may wait in the open group of point-to-point calls
** until gl_dist_nccl_flush. */
gl_status gl_dist_start(const gl_dist_args *a, gl_dist_req **req);

/* Waits for req and frees it (also on failure; NULL: done). 'what' names the collective. */
gl_status gl_dist_wait(gl_dist_req *req, const char *what);
/* Whether req completed (it stays valid until gl_dist_wait). */
gl_status gl_dist_test(gl_dist_req *req, bool *done);

/* A rank failed with msg: tells the other ranks (they raise "rank N failed: msg" in their
** next wait), gives them a moment to print it, and aborts the job (MPI_Abort). Returns
** only when no engine of several processes is running. */
void gl_dist_fail(const char *msg);
/* Set when another rank's failure was received (this rank must not finalize, only exit). */
bool gl_dist_failed_remotely(void);

/* ---- NCCL: collectives on cuda arrays, queued on the device's stream --------------------- */

/* Starts NCCL on dev for every rank, when every rank's device is a cuda device whose
** backend has collectives (decided together: all or none). required: a failure is an
** error (backend "nccl"), else (backend "auto") it leaves cuda arrays to be staged. */
gl_status gl_dist_nccl_start(gl_device dev, bool required);
/* Whether arrays of dev go through NCCL. */
bool gl_dist_nccl_on(gl_device dev);
/* Whether NCCL reduces dt with op (gl_dist_args.op); a reduction it does not take goes
** through MPI on host copies. */
bool gl_dist_nccl_reduces(gl_dtype dt, int op);
/* Queues the open group of NCCL point-to-point calls (nothing when NCCL is not started). */
gl_status gl_dist_nccl_flush(void);

/* ---- the ranks compare their calls before the data moves --------------------------------- */

/* What a rank says it is starting. Every field is an int64 and the unused ones are 0, so
** the ranks compare it as a vector; a field a collective has no use for stays 0. */
typedef struct gl_dist_call {
  int64_t kind;                  /* gl_dist_kind */
  int64_t nccl;                  /* 1: the data goes through NCCL, 0: through MPI */
  int64_t dtype;
  int64_t ndim;
  int64_t shape[GL_MAXDIMS];
  int64_t root;                  /* 0-based */
  int64_t op;                    /* gl_dist_op, 4 = mean */
  int64_t async;                 /* a blocking and a non-blocking MPI collective do not match */
} gl_dist_call;

#define GL_DIST_MSG 512

typedef struct gl_dist_verdict {
  int rank;                      /* 0-based; -1: every rank agrees */
  bool failed;                   /* that rank raised before it could describe its call: msg */
  gl_dist_call first, theirs;    /* rank 0's call and that rank's */
  char msg[GL_DIST_MSG];
} gl_dist_verdict;

/* Every rank passes its call (failure: the message of the error this rank raised before it
** could describe it, else NULL); every rank gets the same verdict: the lowest rank that
** failed, else the lowest whose call differs from rank 0's. One all-reduce of the fields'
** largest and smallest values when they agree; a second exchange, of every rank's call and
** message, only when they do not. Both are blocking calls under the watchdog when it runs
** (the job ends at the timeout), whether the collective is async or not: each rank must
** make the same kind of call. A world of one agrees with itself. */
gl_status gl_dist_compare(const gl_dist_call *mine, const char *failure, const char *what, gl_dist_verdict *out);

#endif
