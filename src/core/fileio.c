/*
** fileio.c — read-only mappings, atomic saves, byte swapping (see fileio.h).
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fileio.h"

static const uint8_t empty_file[1];

gl_status gl_map_file(const char *path, gl_mapfile *m) {
  m->data = NULL;
  m->len = 0;
  m->map = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return gl_fail(GL_EIO, "cannot open (%s)", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return gl_fail(GL_EIO, "cannot stat (%s)", strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return gl_fail(GL_EIO, "not a regular file");
  }
  if (st.st_size == 0) {
    close(fd);
    m->data = empty_file;
    return GL_OK;
  }
  if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX / 2) {
    close(fd);
    return gl_fail(GL_EIO, "file too large");
  }
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return gl_fail(GL_EIO, "cannot map (%s)", strerror(e));
  m->map = p;
  m->data = p;
  m->len = (size_t)st.st_size;
  return GL_OK;
}

void gl_unmap_file(gl_mapfile *m) {
  if (m->map) munmap(m->map, m->len);
  m->map = NULL;
  m->data = NULL;
  m->len = 0;
}

/* ---- atomic saves ---------------------------------------------------------------------- */

gl_status gl_out_open(gl_outfile *o, const char *path) {
  memset(o, 0, sizeof *o);
  size_t n = strlen(path);
  if (n == 0) return gl_fail(GL_EIO, "empty path");
  o->path = malloc(n + 1);
  o->tmp = malloc(n + sizeof ".tmp-XXXXXX");
  if (o->path == NULL || o->tmp == NULL) {
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    return gl_fail(GL_ENOMEM, "out of memory");
  }
  memcpy(o->path, path, n + 1);
  memcpy(o->tmp, path, n);
  memcpy(o->tmp + n, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    int e = errno;
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    return gl_fail(GL_EIO, "cannot create (%s)", strerror(e));
  }
  /* mkstemp makes 0600; a saved array should get the usual umask-governed mode */
  mode_t um = umask(0);
  umask(um);
  fchmod(fd, 0666 & ~um);
  o->f = fdopen(fd, "wb");
  if (o->f == NULL) {
    int e = errno;
    close(fd);
    gl_out_abort(o);
    return gl_fail(GL_EIO, "cannot open (%s)", strerror(e));
  }
  return GL_OK;
}

gl_status gl_out_write(gl_outfile *o, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, o->f) != n) return gl_fail(GL_EIO, "write failed (%s)", strerror(errno));
  o->pos += n;
  return GL_OK;
}

gl_status gl_out_patch(gl_outfile *o, uint64_t at, const void *p, size_t n) {
  if (fseeko(o->f, (off_t)at, SEEK_SET) != 0 || fwrite(p, 1, n, o->f) != n ||
      fseeko(o->f, (off_t)o->pos, SEEK_SET) != 0)
    return gl_fail(GL_EIO, "write failed (%s)", strerror(errno));
  return GL_OK;
}

gl_status gl_out_commit(gl_outfile *o) {
  const char *what = NULL;
  int e = 0;
  if (fflush(o->f) != 0) what = "write failed";
  else if (fsync(fileno(o->f)) != 0) what = "fsync failed";
  if (what) e = errno;
  if (fclose(o->f) != 0 && !what) { what = "close failed"; e = errno; }
  o->f = NULL;
  if (!what && rename(o->tmp, o->path) != 0) { what = "cannot rename the temporary file"; e = errno; }
  if (what) {
    gl_out_abort(o);
    return gl_fail(GL_EIO, "%s (%s)", what, strerror(e));
  }
  free(o->tmp);
  free(o->path);
  o->tmp = o->path = NULL;
  return GL_OK;
}

void gl_out_abort(gl_outfile *o) {
  if (o->f) fclose(o->f);
  o->f = NULL;
  if (o->tmp) unlink(o->tmp);
  free(o->tmp);
  free(o->path);
  o->tmp = o->path = NULL;
}

/* ---- bytes ------------------------------------------------------------------------------- */

void gl_bswap(void *p, int64_t n, unsigned size) {
  uint8_t *b = p;
  switch (size) {
    case 2: for (int64_t i = 0; i < n; i++, b += 2) { uint16_t v; memcpy(&v, b, 2); v = __builtin_bswap16(v); memcpy(b, &v, 2); } break;
    case 4: for (int64_t i = 0; i < n; i++, b += 4) { uint32_t v; memcpy(&v, b, 4); v = __builtin_bswap32(v); memcpy(b, &v, 4); } break;
    case 8: for (int64_t i = 0; i < n; i++, b += 8) { uint64_t v; memcpy(&v, b, 8); v = __builtin_bswap64(v); memcpy(b, &v, 8); } break;
    default: break;
  }
}
