/*
** fuzz_idx.c — libFuzzer target for the IDX reader (src/core/idx.c), plain and gzip, as
** gpu.load_idx uses it: header, then the data into a buffer of the promised size.
**
** The reader takes a path (zlib streams the file), so each input is written to one
** in-memory file (memfd_create), read as /proc/self/fd/N: a file on disk made the
** target ten times slower. The first byte picks the form: even, the rest is the file as it is
** (plain IDX, or gzip bytes the fuzzer mutates directly: corrupt streams); odd, the rest
** is gzip-compressed first, so the fuzzer also explores what a well-formed gzip stream
** holds (the size checks that only a compressed file reaches).
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include "core/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static int memfd = -1;

/* The file's bytes, gzip-compressed into a malloc'd block (*n bytes). */
static uint8_t *gzip_bytes(const uint8_t *p, size_t len, size_t *n) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
  size_t cap = deflateBound(&zs, (uLong)len) + 32;
  uint8_t *out = malloc(cap);
  if (out == NULL) abort();
  zs.next_in = (Bytef *)p;
  zs.avail_in = (uInt)len;
  zs.next_out = out;
  zs.avail_out = (uInt)cap;
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) abort();
  *n = cap - zs.avail_out;
  deflateEnd(&zs);
  return out;
}

static void write_file(const uint8_t *p, size_t n) {
  if (memfd < 0) {
    memfd = memfd_create("fuzz_idx", MFD_CLOEXEC);
    if (memfd < 0) abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
  }
  if (ftruncate(memfd, 0) != 0 || (n && pwrite(memfd, p, n, 0) != (ssize_t)n)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t n = size - 1;
  uint8_t *gz = NULL;
  const uint8_t *file = data + 1;
  if (data[0] & 1) file = gz = gzip_bytes(data + 1, size - 1, &n);
  write_file(file, n);
  free(gz);
  gl_idx_info info;
  if (gl_idx_header(path, &info) != GL_OK) return 0;
  /* what the header may promise is bounded by the file: exactly for a plain file,
  ** deflate's best ratio for a gzip one */
  if (info.nbytes > (n + 1) * 1032 + 64) abort();
  void *dst = malloc(info.nbytes + 1);
  if (dst == NULL) abort();
  (void)gl_idx_read(path, &info, dst);
  free(dst);
  return 0;
}
