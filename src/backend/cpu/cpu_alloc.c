/*
** cpu_alloc.c — the caching host allocator.
**
** Fresh pages cost a page fault each (about 2.8 us per 4 KiB on the development VM), so
** a loop that makes and drops a large result would spend most of its time faulting.
** Freed blocks are kept on per-size-class free lists and handed out again. Classes are
** 64 bytes and then four steps per power of two (waste at most 25%). The cache is capped;
** past the cap blocks go back to the system. gpu.empty_cache() releases everything cached.
** One mutex guards the lists: several Lua states in one process may share them.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cpu.h"

#define NCLASSES 256               /* enough for GL_MAXBYTES (class 224) */
#define CACHE_CAP ((size_t)2 << 30)      /* bytes kept for reuse at most */

typedef struct free_block { struct free_block *next; } free_block;

static struct {
  pthread_mutex_t lock;
  free_block *lists[NCLASSES];
  size_t allocated, cached, peak;
  uint64_t allocs, hits;
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Class index and rounded size of a request. */
static int size_class(size_t n, size_t *rounded) {
  if (n <= 64) { *rounded = 64; return 0; }
  int k = 63 - __builtin_clzll((unsigned long long)(n - 1));   /* 2^k < n <= 2^(k+1) */
  size_t base = (size_t)1 << k, quarter = base >> 2;
  size_t step = (n - base + quarter - 1) / quarter;             /* 1..4 */
  *rounded = base + step * quarter;
  return 1 + (k - 6) * 4 + (int)(step - 1);
}

/* Requests past GL_MAXBYTES are refused before size_class, whose rounding up would wrap
** near SIZE_MAX into a tiny block. Arrays never get here that big (gl_array_alloc says
** "array is too big" first); this guards scratch requests sized elsewhere. */
gl_status gl_cpu_alloc(gl_device dev, size_t nbytes, void **out) {
  (void)dev;
  if (nbytes > (size_t)GL_MAXBYTES)
    return gl_fail(GL_ETOOBIG, "cannot allocate %zu bytes of host memory (more than 2^62)", nbytes);
  size_t sz;
  int c = size_class(nbytes, &sz);
  pthread_mutex_lock(&pool.lock);
  pool.allocs++;
  free_block *b = pool.lists[c];
  if (b) {
    pool.lists[c] = b->next;
    pool.cached -= sz;
    pool.hits++;
  }
  pool.allocated += sz;
  if (pool.allocated > pool.peak) pool.peak = pool.allocated;
  pthread_mutex_unlock(&pool.lock);
  if (b == NULL) {
    void *p = NULL;
    if (posix_memalign(&p, 64, sz) != 0 || p == NULL) {
      gl_cpu_empty_cache(dev);              /* maybe the cache holds what we need */
      if (posix_memalign(&p, 64, sz) != 0 || p == NULL) {
        pthread_mutex_lock(&pool.lock);
        pool.allocated -= sz;
        pthread_mutex_unlock(&pool.lock);
        return gl_fail(GL_ENOMEM, "out of host memory: tried to allocate %zu bytes", nbytes);
      }
    }
    b = p;
  }
  *out = b;
  return GL_OK;
}

void gl_cpu_free(gl_device dev, void *p, size_t nbytes) {
  (void)dev;
  if (p == NULL) return;
  size_t sz;
  int c = size_class(nbytes, &sz);
  pthread_mutex_lock(&pool.lock);
  pool.allocated -= sz;
  bool keep = pool.cached + sz <= CACHE_CAP;
  if (keep) {
    free_block *b = p;
    b->next = pool.lists[c];
    pool.lists[c] = b;
    pool.cached += sz;
  }
  pthread_mutex_unlock(&pool.lock);
  if (!keep) free(p);
}

void gl_cpu_empty_cache(gl_device dev) {
  (void)dev;
  free_block *lists[NCLASSES];
  pthread_mutex_lock(&pool.lock);
  memcpy(lists, pool.lists, sizeof lists);
  memset(pool.lists, 0, sizeof pool.lists);
  pool.cached = 0;
  pthread_mutex_unlock(&pool.lock);
  for (int c = 0; c < NCLASSES; c++)
    while (lists[c]) { free_block *n = lists[c]->next; free(lists[c]); lists[c] = n; }
}

void gl_cpu_memory(gl_device dev, gl_meminfo *m) {
  (void)dev;
  pthread_mutex_lock(&pool.lock);
  m->allocated = pool.allocated;
  m->reserved = pool.allocated + pool.cached;
  m->peak = pool.peak;
  pthread_mutex_unlock(&pool.lock);
  long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  m->total = pages > 0 ? (size_t)pages * (size_t)psz : 0;
  m->free = avail > 0 ? (size_t)avail * (size_t)psz : 0;
}

void gl_cpu_alloc_counts(uint64_t *allocs, uint64_t *hits) {
  pthread_mutex_lock(&pool.lock);
  *allocs = pool.allocs;
  *hits = pool.hits;
  pthread_mutex_unlock(&pool.lock);
}
