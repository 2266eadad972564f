/*
** kemu.cpp — the runtime of kemu (see kemu.h): the threads of one block at a time, the
** block barrier over live threads, warp exchanges with the checks real hardware would fail
** on, launch configuration checks and the few runtime calls the launchers make. An emulator
** for tests, never part of gpulua.
**
** The threads of a kernel that synchronises are fibers (ucontext) on the calling thread by
** default: a thread runs until it waits at a barrier or shuffle or returns, then the next
** runnable one; deterministic, and a deadlock is seen at once. Under ThreadSanitizer, or
** with KEMU_PTHREADS=1, they are a pool of pthreads instead (slow: every wait is a futex),
** so that TSan sees the shared-memory accesses of different threads as racing.
*/
#include "kemu.h"
#include <pthread.h>
#include <semaphore.h>
#include <ucontext.h>
#include <sys/mman.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define KEMU_ASAN 1
#else
#define KEMU_ASAN 0
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vector>

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

namespace kemu {

/* ---- state ---------------------------------------------------------------------------------- */

static const int WAIT_S = 30;                /* a wait this long is a deadlock */

struct warp_state {
  pthread_cond_t cv;
  uint32_t exists, exited, arrived, mask;    /* lanes: in the block, returned, waiting */
  unsigned gen;
  const char *what;
  uint64_t slot[2][32];
};

/* Each worker waits on its own semaphore (no thundering herd on a shared condition); the
** last thread of a block to finish posts 'done'. */
struct pool_state {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv_bar = PTHREAD_COND_INITIALIZER;
  std::vector<pthread_t> workers;
  std::vector<sem_t *> start;
  sem_t done_sem;
  int nthreads = 0, done = 0;
  /* the block being run */
  const config *cfg = nullptr;
  uint3 bidx;
  void (*body)(void *) = nullptr;
  void *ctx = nullptr;
  int live = 0, bar_arrived = 0;
  unsigned bar_gen = 0;
  warp_state warps[32];
};
static pool_state P;

static thread_local int my_tid = -1;        /* linear thread index in the block, -1 on the host */
static bool sequential;                      /* the block's threads run one after another */
static bool fibers;                          /* the block's threads are fibers (else pthreads) */

/* ---- fibers ------------------------------------------------------------------------------------ */

static const size_t FIBER_STACK = 256 * 1024;
enum { F_RUN, F_WAIT, F_DONE };
struct fiber {
  ucontext_t uc;
  char *stack;
  int state;
  const void *waits_on;                      /* the condition it waits for (F_WAIT) */
  void *fake;                                /* ASan's fake stack while switched out */
  bool started;
  void *jb[5];                               /* where it resumes (__builtin_setjmp) */
};
static std::vector<fiber> fib;
static void *sched_jb[5];
#if KEMU_ASAN
static const void *sched_bottom;             /* the scheduler's stack, for ASan */
static size_t sched_size;
#endif

static void lock(void) { if (!fibers) pthread_mutex_lock(&P.mu); }
static void unlock(void) { if (!fibers) pthread_mutex_unlock(&P.mu); }

/* Wakes every thread waiting on cv (P.mu held, or on a fiber). */
static void wake_all(pthread_cond_t *cv) {
  if (!fibers) { pthread_cond_broadcast(cv); return; }
  for (fiber &f : fib)
    if (f.state == F_WAIT && f.waits_on == cv) f.state = F_RUN;
}

/* Switches go by __builtin_setjmp/__builtin_longjmp (a fiber's first start by setcontext):
** no system call per switch, unlike swapcontext, and nothing for ASan to intercept. The
** longjmp must be in another function than its setjmp. */
__attribute__((noinline)) static void jump_to(void **jb) { __builtin_longjmp(jb, 1); }

/* The current fiber gives the CPU back to the scheduler (state F_WAIT or F_DONE first). */
__attribute__((noinline)) static void to_scheduler(fiber *f) {
#if KEMU_ASAN
  __sanitizer_start_switch_fiber(f->state == F_DONE ? nullptr : &f->fake, sched_bottom, sched_size);
#endif
  if (__builtin_setjmp(f->jb) == 0) jump_to(sched_jb);
#if KEMU_ASAN
  __sanitizer_finish_switch_fiber(f->fake, nullptr, nullptr);
#endif
}
static cudaError_t last_error = cudaSuccess;
static const config *current = nullptr;

void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "kemu: error");
  if (current) fprintf(stderr, " in %s (launched at %s)", current->name, current->where);
  if (my_tid >= 0)
    fprintf(stderr, ", block (%u,%u,%u) thread (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
            threadIdx.y, threadIdx.z);
  fprintf(stderr, ": ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  abort();
}

/* Waits on cv (P.mu held, or on a fiber); a pthread's wait of WAIT_S seconds is reported as
** a deadlock (fibers: the scheduler sees one at once). The caller re-checks its condition. */
static void wait_on(pthread_cond_t *cv, const char *what) {
  if (fibers) {
    fiber *f = &fib[my_tid];
    f->state = F_WAIT;
    f->waits_on = cv;
    int id = my_tid;
    to_scheduler(f);
    my_tid = id;
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += WAIT_S;
  if (pthread_cond_timedwait(cv, &P.mu, &ts) == ETIMEDOUT)
    fail("deadlock: %s waited %d s (a thread waits at a barrier or shuffle the others never reach)", what, WAIT_S);
}

/* ---- block barrier ------------------------------------------------------------------------ */

static void bar_release_if_full(void) {
  if (P.bar_arrived > 0 && P.bar_arrived == P.live) {
    P.bar_arrived = 0;
    P.bar_gen++;
    wake_all(&P.cv_bar);
  }
}

static void no_sync(const char *what) {
  fail("%s in a kernel that tools/kemu/rewrite.py found free of synchronisation (its threads run one "
       "after another): teach rewrite.py about the function that synchronises, or run with KEMU_THREADS=1", what);
}

void syncthreads(void) {
  if (my_tid < 0) fail("__syncthreads called on the host");
  if (sequential) no_sync("__syncthreads");
  lock();
  unsigned g = P.bar_gen;
  P.bar_arrived++;
  bar_release_if_full();
  while (P.bar_gen == g) wait_on(&P.cv_bar, "__syncthreads");
  unlock();
}

/* ---- warps ---------------------------------------------------------------------------------- */

/* Fails when a lane of the pending exchange's mask has returned: on the GPU that shuffle
** reads an exited lane (undefined) or hangs. */
static void warp_check(warp_state *w, int wi) {
  uint32_t gone = w->mask & w->exited & ~w->arrived;
  if (w->arrived && gone)
    fail("%s with mask 0x%08x in warp %d while lane(s) 0x%08x of the mask have returned", w->what, w->mask, wi,
         gone);
}

void warp_exchange(unsigned mask, uint64_t bits, uint64_t all[32], const char *what) {
  if (my_tid < 0) fail("%s called on the host", what);
  if (sequential) no_sync(what);
  int wi = my_tid / 32, lane = my_tid % 32;
  lock();
  warp_state *w = &P.warps[wi];
  if (!(mask >> lane & 1u)) fail("%s: the calling lane %d is not in the mask 0x%08x", what, lane, mask);
  if (mask & ~w->exists)
    fail("%s: mask 0x%08x names lanes 0x%08x that the block does not have", what, mask, mask & ~w->exists);
  if (w->arrived && (w->mask != mask || w->what != what))
    fail("%s with mask 0x%08x meets a pending %s with mask 0x%08x in warp %d (divergent lanes)", what, mask,
         w->what, w->mask, wi);
  w->mask = mask;
  w->what = what;
  unsigned g = w->gen;
  w->slot[g & 1][lane] = bits;
  w->arrived |= 1u << lane;
  warp_check(w, wi);
  if (w->arrived == mask) {
    w->arrived = 0;
    w->gen++;
    wake_all(&w->cv);
  } else {
    while (w->gen == g) {
      wait_on(&w->cv, what);
      if (w->gen == g) warp_check(w, wi);
    }
  }
  memcpy(all, w->slot[g & 1], sizeof w->slot[0]);
  unlock();
}

/* ---- the pool --------------------------------------------------------------------------------- */

/* Sets the built-in variables of thread 'id' of the block being run. */
static void enter_thread(const config *c, uint3 b, int id) {
  my_tid = id;
  blockDim = c->block;
  gridDim = c->grid;
  blockIdx = b;
  threadIdx.x = (unsigned)id % c->block.x;
  threadIdx.y = (unsigned)id / c->block.x % c->block.y;
  threadIdx.z = (unsigned)id / (c->block.x * c->block.y);
}

/* Thread id of the block has returned (P.mu held, or on a fiber); whether it was the last. */
static bool thread_exit(int id) {
  P.live--;
  warp_state *w = &P.warps[id / 32];
  w->exited |= 1u << (id % 32);
  if (w->arrived) wake_all(&w->cv);                    /* waiters re-check for exited lanes */
  bar_release_if_full();
  return ++P.done == P.nthreads;
}

struct worker_arg { int id; sem_t *start; };

static void *worker(void *arg) {
  int id = ((worker_arg *)arg)->id;
  sem_t *start = ((worker_arg *)arg)->start;      /* not through P.start: it grows meanwhile */
  delete (worker_arg *)arg;
  for (;;) {
    while (sem_wait(start) != 0) {}
    enter_thread(P.cfg, P.bidx, id);
    P.body(P.ctx);
    my_tid = -1;
    pthread_mutex_lock(&P.mu);
    bool last = thread_exit(id);
    pthread_mutex_unlock(&P.mu);
    if (last) sem_post(&P.done_sem);
  }
  return nullptr;
}

static void fiber_main(int id) {
#if KEMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &sched_bottom, &sched_size);
#endif
  P.body(P.ctx);
  thread_exit(my_tid);
  fiber *f = &fib[my_tid];
  (void)id;
  f->state = F_DONE;
  to_scheduler(f);
  fail("a finished fiber was resumed");
}

/* Into fiber f until it waits or returns. */
__attribute__((noinline)) static void resume(fiber *f) {
  if (__builtin_setjmp(sched_jb) == 0) {
    if (!f->started) {
      f->started = true;
      setcontext(&f->uc);
    }
    jump_to(f->jb);
  }
}

/* Runs the block set up in P as fibers until every thread has returned. */
static void run_fibers(const config &c, uint3 b, int nt) {
  if ((int)fib.size() < nt) {
    size_t old = fib.size();
    fib.resize(nt);
    for (size_t i = old; i < fib.size(); i++) {      /* mmap: a guard page below, no leak report */
      char *m = (char *)mmap(nullptr, FIBER_STACK + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) fail("no memory for a fiber stack");
      mprotect(m, 4096, PROT_NONE);
      fib[i].stack = m + 4096;
    }
  }
  for (int id = 0; id < nt; id++) {
    fiber &f = fib[id];
    getcontext(&f.uc);
    f.uc.uc_stack.ss_sp = f.stack;
    f.uc.uc_stack.ss_size = FIBER_STACK;
    f.uc.uc_link = nullptr;
    makecontext(&f.uc, (void (*)(void))fiber_main, 1, id);
    f.state = F_RUN;
    f.fake = nullptr;
    f.started = false;
  }
  for (;;) {
    bool any = false, ran = false;
    for (int id = 0; id < nt; id++) {
      fiber &f = fib[id];
      if (f.state == F_DONE) continue;
      any = true;
      if (f.state != F_RUN) continue;
      ran = true;
      enter_thread(&c, b, id);
#if KEMU_ASAN
      void *fake = nullptr;
      __sanitizer_start_switch_fiber(&fake, f.stack, FIBER_STACK);
#endif
      resume(&f);
#if KEMU_ASAN
      __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
      my_tid = -1;
    }
    if (!any) break;
    if (!ran) {
      int w = 0;
      for (int id = 0; id < nt; id++) w += fib[id].state == F_WAIT;
      fail("deadlock in block (%u,%u,%u): %d threads wait at a barrier or shuffle the others never reach "
           "(%d at __syncthreads, %d returned)", b.x, b.y, b.z, w, P.bar_arrived, nt - P.live);
    }
  }
}

static void ensure_workers(int n) {
  while ((int)P.workers.size() < n) {
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 1 << 20);
    pthread_t t;
    sem_t *sm = new sem_t;
    sem_init(sm, 0, 0);
    P.start.push_back(sm);
    if (pthread_create(&t, &at, worker, new worker_arg{ (int)P.workers.size(), sm }) != 0) fail("pthread_create failed");
    pthread_attr_destroy(&at);
    P.workers.push_back(t);
  }
}

static int launches;
static int all_threads = -1;                  /* KEMU_THREADS: every kernel as a synchronising one */

void force_threads(bool on) { all_threads = on; }

void run(const config &c, void (*body)(void *), void *ctx) {
  if (my_tid >= 0) fail("kernel %s launched from device code", c.name);
  uint64_t nt = (uint64_t)c.block.x * c.block.y * c.block.z;
  const char *bad = nullptr;
  if (c.block.x == 0 || c.block.y == 0 || c.block.z == 0 || nt > 1024) bad = "block of 0 or over 1024 threads";
  else if (c.block.x > 1024 || c.block.y > 1024 || c.block.z > 64) bad = "block dimension over its limit";
  else if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0) bad = "grid dimension of 0";
  else if (c.grid.x > 2147483647u || c.grid.y > 65535 || c.grid.z > 65535) bad = "grid dimension over its limit";
  else if (c.shmem > 48 * 1024) bad = "dynamic shared memory over 48 KiB";
  if (bad) {
    if (getenv("KEMU_VERBOSE"))
      fprintf(stderr, "kemu: launch of %s at %s refused: %s (grid %u,%u,%u block %u,%u,%u)\n", c.name, c.where, bad,
              c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z);
    if (last_error == cudaSuccess) last_error = cudaErrorInvalidConfiguration;
    return;
  }
  uint64_t blocks = (uint64_t)c.grid.x * c.grid.y * c.grid.z;
  if (blocks > ((uint64_t)1 << 22))
    fail("grid of %llu blocks is too many to emulate in a test", (unsigned long long)blocks);
  launches++;
  current = &c;
  if (all_threads < 0) all_threads = getenv("KEMU_THREADS") && atoi(getenv("KEMU_THREADS")) > 0;
  static int use_pthreads = -1;
  if (use_pthreads < 0) {
#if defined(__SANITIZE_THREAD__)
    use_pthreads = 1;
#else
    use_pthreads = getenv("KEMU_PTHREADS") && atoi(getenv("KEMU_PTHREADS")) > 0;
#endif
  }
  sequential = !c.sync && !all_threads;
  fibers = !sequential && !use_pthreads;
  if (!sequential && !fibers) ensure_workers((int)nt);
  for (unsigned bz = 0; bz < c.grid.z; bz++)
    for (unsigned by = 0; by < c.grid.y; by++)
      for (unsigned bx = 0; bx < c.grid.x; bx++) {
        uint3 b = { bx, by, bz };
        if (sequential) {
          for (int id = 0; id < (int)nt; id++) {
            enter_thread(&c, b, id);
            body(ctx);
          }
          my_tid = -1;
          continue;
        }
        lock();
        P.cfg = &c;
        P.bidx = b;
        P.body = body;
        P.ctx = ctx;
        P.nthreads = (int)nt;
        P.done = 0;
        P.live = (int)nt;
        P.bar_arrived = 0;
        for (int wi = 0; wi < 32; wi++) {
          warp_state *w = &P.warps[wi];
          int lanes = (int)nt - wi * 32;
          w->exists = lanes >= 32 ? 0xffffffffu : lanes <= 0 ? 0u : (1u << lanes) - 1u;
          w->exited = w->arrived = w->mask = 0;
        }
        unlock();
        if (fibers) {
          run_fibers(c, b, (int)nt);
          continue;
        }
        for (int id = 0; id < (int)nt; id++) sem_post(P.start[id]);
        while (sem_wait(&P.done_sem) != 0) {}
      }
  sequential = fibers = false;
  current = nullptr;
}

__attribute__((constructor)) static void init_pool(void) {
  for (int wi = 0; wi < 32; wi++) pthread_cond_init(&P.warps[wi].cv, nullptr);
  sem_init(&P.done_sem, 0, 0);
}

int launch_count(void) { return launches; }

}  // namespace kemu

/* ---- runtime calls ------------------------------------------------------------------------- */

extern "C" {
cudaError_t cudaGetLastError(void) {
  cudaError_t e = kemu::last_error;
  kemu::last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return kemu::last_error; }
cudaError_t cudaGetDevice(int *dev) { *dev = 0; return cudaSuccess; }
/* A small device: 2 multiprocessors, so one-wave grids are a few blocks and grid-stride
** loops take many trips. */
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int dev) {
  (void)dev;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *v = 2; return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; return cudaSuccess;
    default: return cudaErrorInvalidValue;
  }
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    default: return "kemu error";
  }
}
}
