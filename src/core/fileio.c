/*
** fileio.c — opening regular files, whole-file reads, atomic saves, byte swapping
** (see fileio.h).
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fileio.h"

/* ---- reading ------------------------------------------------------------------------------ */

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "of an unknown kind";
}

static gl_status not_regular(mode_t m) { return gl_fail(GL_EIO, "not a regular file (%s)", file_kind(m)); }

/* Only a regular file is ever replaced: renaming over a device, a FIFO or a link would
** swap the special file for a plain one instead of writing where the user meant. */
static gl_status refuse_replace(mode_t m) {
  return gl_fail(GL_EIO, "not a regular file (%s): refusing to replace it", file_kind(m));
}

gl_status gl_open_regular(const char *path, int *fd, uint64_t *size) {
  *fd = -1;
  *size = 0;
  struct stat st;
  if (stat(path, &st) != 0) return gl_fail(GL_EIO, "cannot open (%s)", strerror(errno));
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (f < 0) return gl_fail(GL_EIO, "cannot open (%s)", strerror(errno));
  if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {     /* replaced since the stat */
    int e = errno;
    close(f);
    return S_ISREG(st.st_mode) ? gl_fail(GL_EIO, "cannot stat (%s)", strerror(e)) : not_regular(st.st_mode);
  }
  *fd = f;
  *size = (uint64_t)st.st_size;
  return GL_OK;
}

/* Reads fd to its end into a malloc'd block: for what reports no size (/proc files say
** 0) or cannot be mapped. 'hint' is the expected size. */
static gl_status read_all(int fd, size_t hint, gl_mapfile *m) {
  size_t cap = hint < 4096 ? 4096 : hint + 1, n = 0;
  uint8_t *p = malloc(cap);
  if (p == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  for (;;) {
    if (n == cap) {
      uint8_t *q = cap > SIZE_MAX / 4 ? NULL : realloc(p, cap * 2);
      if (q == NULL) { free(p); return gl_fail(GL_ENOMEM, "out of memory (file too large)"); }
      p = q;
      cap *= 2;
    }
    ssize_t r = read(fd, p + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      free(p);
      return gl_fail(GL_EIO, "cannot read (%s)", strerror(e));
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  m->map = p;
  m->heap = true;
  m->data = p;
  m->len = n;
  return GL_OK;
}

gl_status gl_map_file(const char *path, gl_mapfile *m) {
  memset(m, 0, sizeof *m);
  int fd;
  uint64_t size;
  GL_TRY(gl_open_regular(path, &fd, &size));
  gl_status st = GL_OK;
  if (size > (uint64_t)SIZE_MAX / 2) st = gl_fail(GL_EIO, "file too large");
  else if (size == 0) st = read_all(fd, 0, m);                  /* empty, or a /proc file */
  else {
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) st = read_all(fd, (size_t)size, m);    /* a file system without mmap */
    else {
      m->map = p;
      m->data = p;
      m->len = (size_t)size;
    }
  }
  close(fd);
  return st;
}

void gl_unmap_file(gl_mapfile *m) {
  if (m->map && m->heap) free(m->map);
  else if (m->map) munmap(m->map, m->len);
  memset(m, 0, sizeof *m);
}

/* ---- atomic saves ---------------------------------------------------------------------- */

/* The file a save to 'path' replaces: *target (malloc'd) is 'path' with links resolved;
** *mode the permission bits the new file gets; *st the existing file's stat (st_nlink 0
** when there is none). */
static gl_status save_target(const char *path, char **target, mode_t *mode, struct stat *st) {
  *target = NULL;
  if (stat(path, st) == 0) {
    if (!S_ISREG(st->st_mode)) return refuse_replace(st->st_mode);
    *target = realpath(path, NULL);
    if (*target == NULL) return gl_fail(GL_EIO, "cannot resolve the path (%s)", strerror(errno));
    /* the permission bits only: a rewritten file does not carry set-user-ID or
    ** set-group-ID bits over (it is no longer the program that held them) */
    *mode = st->st_mode & 0777;
    return GL_OK;
  }
  int e = errno;
  struct stat lst;
  if (e == ENOENT && lstat(path, &lst) == 0)
    return gl_fail(GL_EIO, "a symbolic link to a missing file (refusing to guess where to write)");
  if (e != ENOENT) return gl_fail(GL_EIO, "cannot create (%s)", strerror(e));
  memset(st, 0, sizeof *st);
  *target = strdup(path);
  if (*target == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  mode_t um = umask(0);                         /* umask can only be read by setting it */
  umask(um);
  *mode = 0666 & ~um;
  return GL_OK;
}

gl_status gl_out_open(gl_outfile *o, const char *path) {
  memset(o, 0, sizeof *o);
  if (path[0] == 0) return gl_fail(GL_EIO, "empty path");
  mode_t mode = 0;
  struct stat st;
  GL_TRY(save_target(path, &o->path, &mode, &st));
  size_t n = strlen(o->path);
  o->tmp = malloc(n + sizeof ".tmp-XXXXXX");
  if (o->tmp == NULL) {
    gl_out_abort(o);
    return gl_fail(GL_ENOMEM, "out of memory");
  }
  memcpy(o->tmp, o->path, n);
  memcpy(o->tmp + n, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    int e = errno;
    free(o->tmp);
    o->tmp = NULL;
    gl_out_abort(o);
    return gl_fail(GL_EIO, "cannot create (%s)", strerror(e));
  }
  /* mkstemp makes 0600 files owned by us: give the replacement the old file's owner
  ** (where allowed: root, or a group we are in) and mode; chown first, as it may clear
  ** mode bits */
  if (st.st_nlink && (st.st_uid != geteuid() || st.st_gid != getegid()))
    (void)!fchown(fd, st.st_uid, st.st_gid);
  fchmod(fd, mode);
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

/* The rename is durable only once the directory holding the new name is synced too. */
static void sync_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  if (dir == NULL) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

gl_status gl_out_commit(gl_outfile *o) {
  const char *what = NULL;
  int e = 0;
  if (fflush(o->f) != 0) what = "write failed";
  else if (fsync(fileno(o->f)) != 0) what = "fsync failed";
  if (what) e = errno;
  if (fclose(o->f) != 0 && !what) { what = "close failed"; e = errno; }
  o->f = NULL;
  /* the target was checked at open; something may have taken its place since */
  struct stat st;
  if (!what && lstat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
    gl_out_abort(o);
    return refuse_replace(st.st_mode);
  }
  if (!what && rename(o->tmp, o->path) != 0) { what = "cannot rename the temporary file"; e = errno; }
  if (what) {
    gl_out_abort(o);
    return gl_fail(GL_EIO, "%s (%s)", what, strerror(e));
  }
  sync_dir(o->path);
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
