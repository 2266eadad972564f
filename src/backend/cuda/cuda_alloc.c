/*
** cuda_alloc.c — the caching device allocator, one pool per device.
**
** cudaMalloc and cudaFree cost tens of microseconds and cudaFree synchronises the device,
** so freed blocks stay cached and are handed out again. Requests are rounded to 512
** bytes; those up to 1 MiB come from 2 MiB segments ("small" pool), bigger ones from
** 20 MiB segments (or their own, rounded to 2 MiB, above 10 MiB) — the split CUDA
** caching allocators use to keep small blocks from fragmenting large ones. A block found
** in the cache is split when the rest is worth keeping; a freed block merges with free
** neighbours of its segment. Free blocks sit in size-class bins (16 exact classes up to
** 8 KiB, then 4 per power of two), searched best-fit in the first fitting bin.
**
** Every op of a device runs in order on its one stream, so a block freed while kernels
** that use it are still queued can be handed out at once: the next user's kernels run
** after them. Only returning memory to CUDA (empty_cache, an allocation that failed)
** waits for the stream first. Freeing never calls CUDA, which makes a __gc after
** shutdown harmless.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"

#define ROUND 512
#define SMALL_MAX ((size_t)1 << 20)          /* requests up to this use the small pool */
#define SMALL_SEG ((size_t)2 << 20)
#define LARGE_SEG ((size_t)20 << 20)
#define LARGE_OWN ((size_t)10 << 20)         /* from here a request gets its own segment */
#define LARGE_ROUND ((size_t)2 << 20)
#define LARGE_SPLIT ((size_t)1 << 20)        /* split a large block when more than this is left */
#define NBINS 256

typedef struct blk {
  char *ptr;
  size_t size;
  bool is_free, large;
  struct blk *prev, *next;                   /* neighbours in the segment, by address */
  struct blk *fprev, *fnext;                 /* its bin's free list */
  struct blk *hnext;                         /* hash chain while allocated */
} blk;

struct gl_cuda_pool {
  blk *bins[2][NBINS];                       /* [large][bin] */
  uint64_t nonempty[2][NBINS / 64];          /* bit b: bins[large][b] has a block */
  blk **hash;                                /* allocated blocks by address */
  size_t hcap, hcount;
  size_t allocated, reserved, peak;
  size_t limit;                              /* 0: none */
  bool limit_bad;                            /* GPULUA_MEMORY_LIMIT did not parse */
};

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static int bin_of(size_t size) {
  size_t u = size / ROUND;                   /* >= 1 */
  if (u < 16) return (int)u - 1;
  int e = 63 - __builtin_clzll((unsigned long long)u);
  int b = 15 + (e - 4) * 4 + (int)((u >> (e - 2)) & 3);
  return b < NBINS ? b : NBINS - 1;
}

/* ---- free lists and the address table ------------------------------------------------------ */

static void free_insert(gl_cuda_pool *p, blk *x) {
  int b = bin_of(x->size);
  blk **head = &p->bins[x->large][b];
  p->nonempty[x->large][b / 64] |= (uint64_t)1 << (b % 64);
  x->is_free = true;
  x->fprev = NULL;
  x->fnext = *head;
  if (*head) (*head)->fprev = x;
  *head = x;
}

static void free_remove(gl_cuda_pool *p, blk *x) {
  if (x->fprev) x->fprev->fnext = x->fnext;
  else {
    int b = bin_of(x->size);
    p->bins[x->large][b] = x->fnext;
    if (x->fnext == NULL) p->nonempty[x->large][b / 64] &= ~((uint64_t)1 << (b % 64));
  }
  if (x->fnext) x->fnext->fprev = x->fprev;
  x->fprev = x->fnext = NULL;
  x->is_free = false;
}

static size_t hash_of(const void *ptr, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)ptr / ROUND * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 32) & (cap - 1);
}

static void hash_grow(gl_cuda_pool *p) {
  size_t cap = p->hcap * 2;
  blk **t = calloc(cap, sizeof *t);
  if (t == NULL) return;                     /* longer chains, still correct */
  for (size_t i = 0; i < p->hcap; i++)
    for (blk *x = p->hash[i], *nx; x; x = nx) {
      nx = x->hnext;
      size_t h = hash_of(x->ptr, cap);
      x->hnext = t[h];
      t[h] = x;
    }
  free(p->hash);
  p->hash = t;
  p->hcap = cap;
}

static void hash_insert(gl_cuda_pool *p, blk *x) {
  if (p->hcount >= p->hcap) hash_grow(p);
  size_t h = hash_of(x->ptr, p->hcap);
  x->hnext = p->hash[h];
  p->hash[h] = x;
  p->hcount++;
}

static blk *hash_remove(gl_cuda_pool *p, const void *ptr) {
  for (blk **pp = &p->hash[hash_of(ptr, p->hcap)]; *pp; pp = &(*pp)->hnext)
    if ((*pp)->ptr == ptr) {
      blk *x = *pp;
      *pp = x->hnext;
      x->hnext = NULL;
      p->hcount--;
      return x;
    }
  return NULL;
}

/* ---- the pool ------------------------------------------------------------------------------ */

/* GPULUA_MEMORY_LIMIT: bytes (with an optional K, M, G or T suffix, powers of 1024), or a
** fraction of the device's memory written with a point ("0.5"). */
static void read_limit(gl_cuda_pool *p) {
  const char *v = getenv("GPULUA_MEMORY_LIMIT");
  if (v == NULL || *v == '\0') return;
  char *end;
  double x = strtod(v, &end);
  bool fraction = strchr(v, '.') != NULL && *end == '\0';
  double mult = 1.0;
  switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024.0; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024.0 * 1024.0; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024.0 * 1024.0 * 1024.0; end++; break;
    default: break;
  }
  if (mult > 1.0 && (*end == 'i' || *end == 'I')) end++;
  if (mult > 1.0 && (*end == 'b' || *end == 'B')) end++;
  if (end == v || *end != '\0' || !(x > 0) || x > 1e19 / mult) { p->limit_bad = true; return; }
  if (fraction && x <= 1.0) {
    size_t fr = 0, total = 0;
    if (cudaMemGetInfo(&fr, &total) != cudaSuccess) { cudaGetLastError(); p->limit_bad = true; return; }
    p->limit = (size_t)(x * (double)total);
  } else {
    p->limit = (size_t)(x * mult);
  }
  if (p->limit == 0) p->limit = 1;
}

static gl_cuda_pool *pool_get(int index) {
  gl_cuda_dev *d = &gl_cuda_devs[index];
  if (d->pool) return d->pool;
  gl_cuda_pool *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->hcap = 256;
  p->hash = calloc(p->hcap, sizeof *p->hash);
  if (p->hash == NULL) { free(p); return NULL; }
  read_limit(p);
  d->pool = p;
  return p;
}

void gl_cuda_pool_trim(int index) {
  gl_cuda_pool *p = gl_cuda_devs[index].pool;
  if (p == NULL) return;
  for (int l = 0; l < 2; l++)
    for (int b = 0; b < NBINS; b++)
      for (blk *x = p->bins[l][b], *nx; x; x = nx) {
        nx = x->fnext;
        if (x->prev || x->next) continue;    /* part of a segment still in use */
        free_remove(p, x);
        cudaFree(x->ptr);
        p->reserved -= x->size;
        free(x);
      }
  cudaGetLastError();
}

/* Returns cached memory to CUDA after the device's queued work is done. */
static void trim_synced(int index) {
  gl_cuda_dev *d = &gl_cuda_devs[index];
  if (!d->started || d->broken[0]) return;
  if (cudaStreamSynchronize(d->stream) != cudaSuccess) { cudaGetLastError(); return; }
  gl_cuda_pool_trim(index);
}

/* The first bin from 'from' on that holds a free block, or -1. */
static int next_bin(const gl_cuda_pool *p, bool large, int from) {
  for (int w = from / 64; w < NBINS / 64; w++) {
    uint64_t m = p->nonempty[large][w];
    if (w == from / 64) m &= ~(uint64_t)0 << (from % 64);
    if (m) return w * 64 + __builtin_ctzll(m);
  }
  return -1;
}

/* Best fit in the first non-empty bin that has a block big enough (an exact fit at once):
** the bitmap skips the empty bins, which are most of them on a per-op allocation. */
static blk *find_cached(gl_cuda_pool *p, bool large, size_t req) {
  for (int b = next_bin(p, large, bin_of(req)); b >= 0; b = next_bin(p, large, b + 1)) {
    blk *best = NULL;
    for (blk *x = p->bins[large][b]; x; x = x->fnext) {
      if (x->size == req) return x;
      if (x->size >= req && (best == NULL || x->size < best->size)) best = x;
    }
    if (best) return best;
  }
  return NULL;
}

static gl_status oom(int index, gl_cuda_pool *p, size_t nbytes, const char *why) {
  char b1[32], b2[32], b3[32], b4[32], b5[32];
  size_t fr = 0, total = 0;
  if (cudaMemGetInfo(&fr, &total) != cudaSuccess) cudaGetLastError();
  if (why)
    return gl_fail(GL_ENOMEM, "out of memory on cuda:%d: tried to allocate %s over the GPULUA_MEMORY_LIMIT of %s "
                   "(allocated %s, reserved %s, free %s)", index, gl_cuda_bytes(nbytes, b1),
                   gl_cuda_bytes(p->limit, b5), gl_cuda_bytes(p->allocated, b2),
                   gl_cuda_bytes(p->reserved, b3), gl_cuda_bytes(fr, b4));
  return gl_fail(GL_ENOMEM, "out of memory on cuda:%d: tried to allocate %s (allocated %s, reserved %s, free %s)",
                 index, gl_cuda_bytes(nbytes, b1), gl_cuda_bytes(p->allocated, b2),
                 gl_cuda_bytes(p->reserved, b3), gl_cuda_bytes(fr, b4));
}

/* A fresh segment for a request of 'req' bytes (already rounded), within the limit; on
** failure the cache is given back and the call tried once more. */
static gl_status new_segment(int index, gl_cuda_pool *p, bool large, size_t req, size_t nbytes, blk **out) {
  size_t seg = !large ? SMALL_SEG : req < LARGE_OWN ? LARGE_SEG : round_up(req, LARGE_ROUND);
  size_t least = large ? round_up(req, LARGE_ROUND) : SMALL_SEG;
  if (p->limit && p->reserved + seg > p->limit) {
    trim_synced(index);
    if (p->reserved + seg > p->limit) seg = least;
    if (p->reserved + seg > p->limit) return oom(index, p, nbytes, "limit");
  }
  void *ptr = NULL;
  cudaError_t e = cudaMalloc(&ptr, seg);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    trim_synced(index);
    e = cudaMalloc(&ptr, seg);
    if (e == cudaErrorMemoryAllocation && seg > least) {
      cudaGetLastError();
      seg = least;
      e = cudaMalloc(&ptr, seg);
    }
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return oom(index, p, nbytes, NULL);
    }
  }
  GL_TRY(gl_cuda_check(index, e, "cudaMalloc"));
  blk *x = calloc(1, sizeof *x);
  if (x == NULL) {
    cudaFree(ptr);
    return gl_fail(GL_ENOMEM, "out of host memory for the allocator's books");
  }
  x->ptr = ptr;
  x->size = seg;
  x->large = large;
  p->reserved += seg;
  GL_CUDA_COUNT(device_mallocs, 1);
  free_insert(p, x);
  *out = x;
  return GL_OK;
}

/* Takes free block x for 'req' bytes, splitting off a rest worth keeping. */
static void take(gl_cuda_pool *p, blk *x, size_t req) {
  free_remove(p, x);
  size_t rest = x->size - req;
  if (x->large ? rest > LARGE_SPLIT : rest >= ROUND) {
    blk *r = calloc(1, sizeof *r);
    if (r) {                                 /* without it the block just stays whole */
      r->ptr = x->ptr + req;
      r->size = rest;
      r->large = x->large;
      r->prev = x;
      r->next = x->next;
      if (x->next) x->next->prev = r;
      x->next = r;
      x->size = req;
      free_insert(p, r);
    }
  }
  hash_insert(p, x);
  p->allocated += x->size;
  if (p->allocated > p->peak) p->peak = p->allocated;
}

gl_status gl_cuda_alloc(gl_device dev, size_t nbytes, void **out) {
  GL_TRY(gl_cuda_enter(dev, NULL));
  if (nbytes > (size_t)GL_MAXBYTES) {           /* round_up below must not wrap */
    char b[32];
    return gl_fail(GL_ETOOBIG, "cannot allocate %s on cuda:%d (more than 2^62 bytes)", gl_cuda_bytes(nbytes, b), dev.index);
  }
  size_t req = round_up(nbytes ? nbytes : 1, ROUND);
  bool large = req > SMALL_MAX;
  gl_status st = GL_OK;
  pthread_mutex_lock(&gl_cuda_lock);
  gl_cuda_pool *p = pool_get(dev.index);
  GL_CUDA_COUNT(allocs, 1);
  blk *x = NULL;
  if (p == NULL) st = gl_fail(GL_ENOMEM, "out of host memory for the allocator's books");
  else if (p->limit_bad)
    st = gl_fail(GL_EINVAL, "GPULUA_MEMORY_LIMIT='%s' is neither a byte count (like 4G) nor a fraction "
                 "of the device memory (like 0.5)", getenv("GPULUA_MEMORY_LIMIT"));
  else {
    x = find_cached(p, large, req);
    if (x) GL_CUDA_COUNT(cache_hits, 1);
    else st = new_segment(dev.index, p, large, req, nbytes, &x);
    if (st == GL_OK) take(p, x, req);
  }
  pthread_mutex_unlock(&gl_cuda_lock);
  GL_TRY(st);
  *out = x->ptr;
  return GL_OK;
}

void gl_cuda_free(gl_device dev, void *ptr, size_t nbytes) {
  (void)nbytes;
  if (ptr == NULL || !gl_cuda_owns(dev) || dev.index >= GL_CUDA_MAXDEV) return;
  pthread_mutex_lock(&gl_cuda_lock);
  gl_cuda_free_locked(dev.index, ptr);
  pthread_mutex_unlock(&gl_cuda_lock);
}

/* Block a takes in the block after it (their bytes are adjacent), whose record goes. */
static void absorb_next(blk *a) {
  blk *b = a->next;
  a->size += b->size;
  a->next = b->next;
  if (b->next) b->next->prev = a;
  free(b);
}

void gl_cuda_free_locked(int index, void *ptr) {
  if (ptr == NULL || index < 0 || index >= GL_CUDA_MAXDEV) return;
  gl_cuda_pool *p = gl_cuda_devs[index].pool;
  blk *x = p ? hash_remove(p, ptr) : NULL;
  if (x) {
    p->allocated -= x->size;
    if (x->prev && x->prev->is_free) {         /* merge with the free block before */
      x = x->prev;
      free_remove(p, x);
      absorb_next(x);
    }
    if (x->next && x->next->is_free) {         /* and the one after */
      free_remove(p, x->next);
      absorb_next(x);
    }
    free_insert(p, x);
  }
}

void gl_cuda_empty_cache(gl_device dev) {
  if (!gl_cuda_owns(dev) || dev.index >= GL_CUDA_MAXDEV) return;
  pthread_mutex_lock(&gl_cuda_lock);
  gl_cuda_dev *d = &gl_cuda_devs[dev.index];
  if (d->pool && d->started && !d->broken[0] && gl_cuda_set_device(dev.index) == cudaSuccess)
    trim_synced(dev.index);
  cudaGetLastError();
  pthread_mutex_unlock(&gl_cuda_lock);
}

void gl_cuda_memory(gl_device dev, gl_meminfo *m) {
  memset(m, 0, sizeof *m);
  if (!gl_cuda_owns(dev) || dev.index >= GL_CUDA_MAXDEV) return;
  pthread_mutex_lock(&gl_cuda_lock);
  gl_cuda_pool *p = gl_cuda_devs[dev.index].pool;
  if (p) {
    m->allocated = p->allocated;
    m->reserved = p->reserved;
    m->peak = p->peak;
  }
  bool broken = gl_cuda_devs[dev.index].broken[0] != '\0';
  pthread_mutex_unlock(&gl_cuda_lock);
  size_t fr = 0, total = 0;
  if (!broken && gl_cuda_set_device(dev.index) == cudaSuccess && cudaMemGetInfo(&fr, &total) == cudaSuccess) {
    m->free = fr;
    m->total = total;
  }
  cudaGetLastError();
}
