/*
** cuda_copy.c — transfers between host and device, and the data-movement ops on the
** device (copy with dtype conversion, fill, arange).
**
** A transfer up to 1 MiB is one cudaMemcpyAsync on the device's stream followed by a
** sync (the caller may free or read its host buffer as soon as we return). Bigger ones go
** through a pinned buffer of two 4 MiB slots kept per device: while one slot's chunk is
** in flight the host fills (or drains) the other, so pageable memory moves at nearly
** pinned speed without pinning the caller's memory.
**
** Every wait polls for a stop (gl_cuda_wait): the work queued before a transfer may take
** long. A stop never leaves a DMA on the caller's memory: the staged paths' DMAs touch
** only the pinned slots, and a direct transfer first waits for the queue, then moves its
** few bytes with the runtime's own wait (the caller's buffer may be pinned memory).
*/
#include <stdlib.h>
#include <string.h>
#include "cuda.h"

#define DIRECT_MAX ((size_t)1 << 20)
#define CHUNK ((size_t)4 << 20)

/* ---- walks ------------------------------------------------------------------------------------ */

void gl_cuda_kiter(gl_kiter *k, int nargs, const gl_array *const *arrays, const bool *scalar) {
  gl_iter it;
  gl_iter_init(&it, nargs, arrays);
  memset(k, 0, sizeof *k);
  k->ndim = it.ndim;
  k->n = it.rows * it.inner;
  bool contiguous = it.ndim == 1;
  for (int d = 0; d < it.ndim; d++) k->shape[d] = it.shape[d];
  for (int a = 0; a < nargs; a++) {
    for (int d = 0; d < it.ndim; d++) k->strides[a][d] = it.strides[a][d];
    if (!(scalar && scalar[a]) && it.strides[a][0] != 1) contiguous = false;
  }
  k->contiguous = contiguous;
}

/* ---- host <-> device ------------------------------------------------------------------------ */

static pthread_mutex_t staging_lock = PTHREAD_MUTEX_INITIALIZER;

/* The device's pinned slots, made on first use; false (and no error) when pinned memory
** cannot be had: the caller then copies directly. */
static bool staging_ready(int index) {
  gl_cuda_dev *d = &gl_cuda_devs[index];
  if (d->staging) return true;
  void *p = NULL;
  if (cudaHostAlloc(&p, 2 * CHUNK, cudaHostAllocDefault) != cudaSuccess) { cudaGetLastError(); return false; }
  if (cudaEventCreateWithFlags(&d->slot_done[0], cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    cudaFreeHost(p);
    return false;
  }
  if (cudaEventCreateWithFlags(&d->slot_done[1], cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    cudaEventDestroy(d->slot_done[0]);
    cudaFreeHost(p);
    return false;
  }
  d->pinned = p;
  d->staging = true;
  return true;
}

void gl_cuda_staging_release(gl_cuda_dev *d) {
  pthread_mutex_lock(&staging_lock);
  if (d->staging) {
    cudaEventDestroy(d->slot_done[0]);
    cudaEventDestroy(d->slot_done[1]);
    cudaFreeHost(d->pinned);
    cudaGetLastError();
    d->pinned = NULL;
    d->staging = false;
  }
  pthread_mutex_unlock(&staging_lock);
}

/* Host to device through the two pinned slots: chunk k waits for the slot's previous copy,
** is staged, and is queued on the stream. */
static gl_status staged_to_device(int index, cudaStream_t s, char *dst, const char *src, size_t n) {
  gl_cuda_dev *d = &gl_cuda_devs[index];
  for (size_t off = 0, k = 0; off < n; off += CHUNK, k++) {
    size_t c = n - off < CHUNK ? n - off : CHUNK;
    char *slot = (char *)d->pinned + (k & 1) * CHUNK;
    GL_TRY(gl_cuda_wait(index, NULL, d->slot_done[k & 1], "to device"));     /* slot's last copy done */
    memcpy(slot, src + off, c);
    GL_TRY(gl_cuda_check(index, cudaMemcpyAsync(dst + off, slot, c, cudaMemcpyHostToDevice, s), "to device"));
    GL_TRY(gl_cuda_check(index, cudaEventRecord(d->slot_done[k & 1], s), "to device"));
  }
  return GL_OK;
}

/* Waits for the copy into slot k's chunk and moves its c bytes to dst. */
static gl_status drain_slot(int index, size_t k, char *dst, size_t c) {
  gl_cuda_dev *d = &gl_cuda_devs[index];
  GL_TRY(gl_cuda_wait(index, NULL, d->slot_done[k & 1], "to host"));
  memcpy(dst, (char *)d->pinned + (k & 1) * CHUNK, c);
  return GL_OK;
}

/* Device to host: chunk k is queued into its slot while chunk k - 1 is drained. */
static gl_status staged_to_host(int index, cudaStream_t s, char *dst, const char *src, size_t n) {
  gl_cuda_dev *d = &gl_cuda_devs[index];
  size_t prev_off = 0, prev_c = 0, k = 0;
  for (size_t off = 0; off < n; off += CHUNK, k++) {
    size_t c = n - off < CHUNK ? n - off : CHUNK;
    char *slot = (char *)d->pinned + (k & 1) * CHUNK;
    GL_TRY(gl_cuda_check(index, cudaMemcpyAsync(slot, src + off, c, cudaMemcpyDeviceToHost, s), "to host"));
    GL_TRY(gl_cuda_check(index, cudaEventRecord(d->slot_done[k & 1], s), "to host"));
    if (k > 0) GL_TRY(drain_slot(index, k - 1, dst + prev_off, prev_c));   /* while this one is in flight */
    prev_off = off;
    prev_c = c;
  }
  return k > 0 ? drain_slot(index, k - 1, dst + prev_off, prev_c) : GL_OK;
}

/* A large copy through the pinned slots, when they can be had; *used says whether they were. */
static gl_status staged_copy(int index, cudaStream_t s, char *dst, const char *src, size_t n, bool to_device,
                             bool *used) {
  gl_status st = GL_OK;
  pthread_mutex_lock(&staging_lock);
  *used = staging_ready(index);
  if (*used) st = to_device ? staged_to_device(index, s, dst, src, n) : staged_to_host(index, s, dst, src, n);
  pthread_mutex_unlock(&staging_lock);
  return st;
}

/* n bytes between host memory and the device (to_device: host to device), after the work
** queued on the device's stream: large ones through the pinned slots when they can be had,
** the rest straight from or into pageable memory, synchronously. */
static gl_status host_copy(gl_device dev, void *dst, const void *src, size_t n, bool to_device) {
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  if (n == 0) return GL_OK;
  if (to_device) {
    GL_CUDA_COUNT(h2d_copies, 1);
    GL_CUDA_COUNT(h2d_bytes, n);
  } else {
    GL_CUDA_COUNT(d2h_copies, 1);
    GL_CUDA_COUNT(d2h_bytes, n);
  }
  const char *what = to_device ? "to device" : "to host";
  if (n > DIRECT_MAX) {
    bool used;
    gl_status st = staged_copy(dev.index, s, dst, src, n, to_device, &used);
    if (used) return st == GL_OK && to_device && gl_cuda_sync_each() ? gl_cuda_wait(dev.index, s, NULL, what) : st;
  }
  GL_TRY(gl_cuda_wait(dev.index, s, NULL, what));
  GL_TRY(gl_cuda_check(dev.index, cudaMemcpyAsync(dst, src, n, to_device ? cudaMemcpyHostToDevice
                                                                        : cudaMemcpyDeviceToHost, s), what));
  return gl_cuda_check(dev.index, cudaStreamSynchronize(s), what);
}

gl_status gl_cuda_to_host(void *dst, gl_device dev, const void *src, size_t n) {
  return host_copy(dev, dst, src, n, false);
}

gl_status gl_cuda_from_host(gl_device dev, void *dst, const void *src, size_t n) {
  return host_copy(dev, dst, src, n, true);
}

/* ---- copy, fill, arange -------------------------------------------------------------------- */

/* Byte range [lo, hi) an array's elements span inside its storage. */
static void span(const gl_array *a, int64_t *lo, int64_t *hi) {
  int64_t first = a->offset, last = a->offset;
  for (int d = 0; d < a->ndim; d++) {
    int64_t ext = (a->shape[d] - 1) * a->strides[d];
    if (ext < 0) first += ext; else last += ext;
  }
  int64_t sz = (int64_t)gl_dtypes[a->dtype].size;
  *lo = first * sz;
  *hi = (last + 1) * sz;
}

static bool overlap(const gl_array *a, const gl_array *b) {
  if (a->storage != b->storage || a->size == 0 || b->size == 0) return false;
  int64_t alo, ahi, blo, bhi;
  span(a, &alo, &ahi);
  span(b, &blo, &bhi);
  return alo < bhi && blo < ahi;
}

static gl_status copy_disjoint(cudaStream_t s, const gl_array *dst, const gl_array *src) {
  gl_device dev = gl_array_device(dst);
  const gl_array *ops[2] = { dst, src };
  gl_kiter k;
  gl_cuda_kiter(&k, 2, ops, NULL);
  if (k.n == 0) return GL_OK;
  if (dst->dtype == src->dtype && k.contiguous) {
    size_t n = (size_t)k.n * gl_dtypes[dst->dtype].size;
    GL_TRY(gl_cuda_check(dev.index, cudaMemcpyAsync(gl_array_data(dst), gl_array_data(src), n,
                                                    cudaMemcpyDeviceToDevice, s), "copy"));
    GL_CUDA_COUNT(d2d_copies, 1);
    GL_CUDA_COUNT(d2d_bytes, n);
    return gl_cuda_sync_each() ? gl_cuda_wait(dev.index, s, NULL, "copy") : GL_OK;
  }
  int rc = gl_klaunch_copy(s, &k, gl_array_data(dst), dst->dtype, gl_array_data(src), src->dtype);
  return gl_cuda_launched(dev, s, rc, "copy");
}

gl_status gl_cuda_copy(const gl_array *dst, const gl_array *src) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  if (dst->size == 0) return GL_OK;
  if (!overlap(dst, src)) return copy_disjoint(s, dst, src);
  /* source and destination share bytes: through a contiguous temporary (stream order
  ** makes freeing it right after safe) */
  gl_array tmp;
  gl_storage ts;
  memset(&tmp, 0, sizeof tmp);
  memset(&ts, 0, sizeof ts);
  GL_TRY(gl_array_init(&tmp, (gl_dtype)src->dtype, dst->ndim, dst->shape));
  ts.refcount = 1;
  ts.nbytes = (size_t)tmp.size * gl_dtypes[src->dtype].size;
  ts.device = dev;
  GL_TRY(gl_cuda_alloc(dev, ts.nbytes, &ts.data));
  tmp.storage = &ts;
  gl_status st = copy_disjoint(s, &tmp, src);
  if (st == GL_OK) st = copy_disjoint(s, dst, &tmp);
  gl_cuda_free(dev, ts.data, ts.nbytes);
  return st;
}

gl_status gl_cuda_fill(const gl_array *dst, gl_scalar v) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  const gl_array *ops[1] = { dst };
  gl_kiter k;
  gl_cuda_kiter(&k, 1, ops, NULL);
  if (k.n == 0) return GL_OK;
  uint64_t bits[2] = { 0, 0 };                  /* the element's bytes (up to 16) */
  gl_scalar_store((gl_dtype)dst->dtype, bits, v);
  int width = (int)gl_dtypes[dst->dtype].size;
  if (k.contiguous && ((bits[0] | bits[1]) == 0 || width == 1)) {
    GL_TRY(gl_cuda_check(dev.index, cudaMemsetAsync(gl_array_data(dst), (int)(bits[0] & 0xff),
                                                    (size_t)k.n * (size_t)width, s), "fill"));
    return gl_cuda_launched(dev, s, 0, "fill");
  }
  return gl_cuda_launched(dev, s, gl_klaunch_fill(s, &k, gl_array_data(dst), width, bits), "fill");
}

gl_status gl_cuda_arange(const gl_array *dst, double start, double step) {
  gl_device dev = gl_array_device(dst);
  cudaStream_t s;
  GL_TRY(gl_cuda_enter(dev, &s));
  if (!gl_array_is_contiguous(dst)) return gl_fail(GL_EINVAL, "arange needs a contiguous destination");
  int rc = gl_klaunch_arange(s, gl_array_data(dst), dst->dtype, dst->size, start, step);
  return gl_cuda_launched(dev, s, rc, "arange");
}
