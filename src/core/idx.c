/*
** idx.c — IDX files (MNIST, Fashion-MNIST), plain or gzip-compressed, through zlib.
** Hostile files are refused before anything is allocated: a bad magic or type code,
** zero or too many dimensions, a size that overflows or exceeds what the file can hold
** (a plain file must be exactly header + data; a gzip stream inflates at most ~1032:1).
*/
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "idx.h"
#include "fileio.h"

/* deflate's best case is about 1032:1; a gzip file smaller than data/1032 is lying */
#define GZ_MAX_RATIO 1032

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

gl_status gl_idx_parse_header(const uint8_t *buf, size_t len, gl_idx_info *out) {
  memset(out, 0, sizeof *out);
  if (len < 4) return gl_fail(GL_EIO, "truncated IDX header (%zu bytes)", len);
  if (buf[0] != 0 || buf[1] != 0) return gl_fail(GL_EIO, "not an IDX file (bad magic)");
  int dt = 0;                                          /* the row with this IDX type code */
  while (dt < GL_NDTYPE && gl_dtypes[dt].idx != buf[2]) dt++;
  if (dt == GL_NDTYPE) return gl_fail(GL_EIO, "not an IDX file (unknown type code 0x%02X)", buf[2]);
  out->dtype = (gl_dtype)dt;
  int ndim = buf[3];
  if (ndim < 1 || ndim > GL_MAXDIMS)
    return gl_fail(GL_EIO, "IDX file with %d dimensions (gpulua reads 1 to %d)", ndim, GL_MAXDIMS);
  size_t hb = 4 + 4 * (size_t)ndim;
  if (len < hb) return gl_fail(GL_EIO, "truncated IDX header (%zu of %zu bytes)", len, hb);
  size_t item = gl_dtypes[out->dtype].size;
  size_t total = item;
  for (int i = 0; i < ndim; i++) {
    uint32_t d = be32(buf + 4 + 4 * i);
    out->shape[i] = d;
    if (d != 0 && total > GL_IDX_MAX_BYTES / d)
      return gl_fail(GL_EIO, "IDX file promises more than %zu bytes of data", GL_IDX_MAX_BYTES);
    total *= d;
  }
  out->ndim = ndim;
  out->nbytes = total;
  out->size = (int64_t)(total / item);
  out->header_bytes = hb;
  return GL_OK;
}

/* The header from an open gz stream; 'fsize' (the file's size) bounds the data. */
static gl_status read_header(gzFile f, size_t fsize, gl_idx_info *out) {
  uint8_t buf[4 + 4 * GL_MAXDIMS];
  int n = gzread(f, buf, 4);
  if (n < 0) return gl_fail(GL_EIO, "cannot read (corrupt gzip stream)");
  if (n < 4 || buf[3] < 1 || buf[3] > GL_MAXDIMS) return gl_idx_parse_header(buf, (size_t)n, out);
  size_t rest = 4 * (size_t)buf[3];
  n = gzread(f, buf + 4, (unsigned)rest);
  if (n < 0) return gl_fail(GL_EIO, "cannot read (corrupt gzip stream)");
  GL_TRY(gl_idx_parse_header(buf, 4 + (size_t)n, out));
  if (gzdirect(f)) {
    if (fsize != out->header_bytes + out->nbytes)
      return gl_fail(GL_EIO, "the header promises %zu data bytes but the file holds %zu", out->nbytes,
                     fsize > out->header_bytes ? fsize - out->header_bytes : 0);
  } else if (out->nbytes / GZ_MAX_RATIO > fsize) {
    return gl_fail(GL_EIO, "the header promises %zu data bytes, more than a %zu-byte gzip file can hold",
                   out->nbytes, fsize);
  }
  return GL_OK;
}

/* Through gl_open_regular, as every loader: a FIFO or a device is refused before zlib
** could block reading it. gzdopen takes the descriptor. */
static gl_status open_file(const char *path, gzFile *f, size_t *fsize) {
  int fd;
  uint64_t size;
  GL_TRY(gl_open_regular(path, &fd, &size));
  if (size > SIZE_MAX / 2) {
    close(fd);
    return gl_fail(GL_EIO, "file too large");
  }
  *fsize = (size_t)size;
  *f = gzdopen(fd, "rb");
  if (*f == NULL) {
    close(fd);
    return gl_fail(GL_ENOMEM, "out of memory (zlib)");
  }
  gzbuffer(*f, 1 << 17);
  return GL_OK;
}

gl_status gl_idx_header(const char *path, gl_idx_info *out) {
  gzFile f = NULL;
  size_t fsize = 0;
  GL_TRY(open_file(path, &f, &fsize));
  gl_status st = read_header(f, fsize, out);
  gzclose(f);
  return st;
}

static void swap_bytes(uint8_t *p, size_t n, size_t item) {
  for (size_t i = 0; i < n; i += item)
    for (size_t a = 0, b = item - 1; a < b; a++, b--) {
      uint8_t t = p[i + a];
      p[i + a] = p[i + b];
      p[i + b] = t;
    }
}

gl_status gl_idx_read(const char *path, const gl_idx_info *info, void *dst) {
  gzFile f = NULL;
  size_t fsize = 0;
  GL_TRY(open_file(path, &f, &fsize));
  gl_idx_info again;
  gl_status st = read_header(f, fsize, &again);
  if (st == GL_OK && (again.nbytes != info->nbytes || again.dtype != info->dtype || again.ndim != info->ndim))
    st = gl_fail(GL_EIO, "the file changed while it was read");
  size_t done = 0;
  while (st == GL_OK && done < info->nbytes) {
    size_t want = info->nbytes - done;
    if (want > (1u << 30)) want = 1u << 30;
    int n = gzread(f, (uint8_t *)dst + done, (unsigned)want);
    if (n < 0) {
      int err;
      const char *msg = gzerror(f, &err);
      st = gl_fail(GL_EIO, "corrupt gzip stream (%s)", msg ? msg : "?");
    } else if (n == 0) {
      st = gl_fail(GL_EIO, "truncated (%zu of %zu data bytes)", done, info->nbytes);
    }
    else done += (size_t)n;
  }
  if (st == GL_OK) {
    uint8_t extra;
    int n = gzread(f, &extra, 1);
    if (n > 0) st = gl_fail(GL_EIO, "trailing bytes after the %zu data bytes the header promises", info->nbytes);
    else if (n < 0) st = gl_fail(GL_EIO, "corrupt gzip stream at the end");
  }
  gzclose(f);
  if (st == GL_OK && gl_dtypes[info->dtype].size > 1) {
    uint16_t one = 1;
    if (*(uint8_t *)&one == 1) swap_bytes(dst, info->nbytes, gl_dtypes[info->dtype].size);
  }
  return st;
}

/* ---- fixed-size records (CIFAR-10's binary batches) ------------------------------------ */

gl_status gl_records_count(const char *path, size_t record, int64_t *count) {
  int fd;
  uint64_t size;
  GL_TRY(gl_open_regular(path, &fd, &size));
  close(fd);
  if (record == 0) return gl_fail(GL_EINVAL, "a record must have at least one byte");
  if (size == 0) return gl_fail(GL_EIO, "empty (no records of %zu bytes)", record);
  if (size > GL_IDX_MAX_BYTES) return gl_fail(GL_EIO, "too large (%llu bytes)", (unsigned long long)size);
  if (size % record != 0)
    return gl_fail(GL_EIO, "truncated or malformed: %llu bytes is not a whole number of %zu-byte records "
                   "(%llu records and %llu bytes over)", (unsigned long long)size, record,
                   (unsigned long long)(size / record), (unsigned long long)(size % record));
  *count = (int64_t)(size / record);
  return GL_OK;
}

gl_status gl_records_read(const char *path, size_t nbytes, void *dst) {
  int fd;
  uint64_t size;
  GL_TRY(gl_open_regular(path, &fd, &size));
  gl_status st = GL_OK;
  if (size != nbytes) st = gl_fail(GL_EIO, "the file changed while it was read");
  size_t done = 0;
  while (st == GL_OK && done < nbytes) {
    ssize_t n = read(fd, (uint8_t *)dst + done, nbytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) st = gl_fail(GL_EIO, "cannot read (%s)", strerror(errno));
    else if (n == 0) st = gl_fail(GL_EIO, "truncated while read (%zu of %zu bytes)", done, nbytes);
    else done += (size_t)n;
  }
  close(fd);
  return st;
}
