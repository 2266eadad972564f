/*
** cache.c — the disk caches under $XDG_CACHE_HOME/gpulua (see cache.h): their
** directories, the hashes that name what they hold, and sealed files.
*/
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cache.h"

/* FNV-1a, 64 bits, from 'h'. Two runs with different seeds give the 128-bit key. */
uint64_t gl_cache_fnv1a(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

void gl_cache_hash(const char *a, size_t na, const char *b, size_t nb, char hex[33]) {
  uint64_t h1 = gl_cache_fnv1a(gl_cache_fnv1a(14695981039346656037ull, a, na), b, nb);
  uint64_t h2 = gl_cache_fnv1a(gl_cache_fnv1a(0x9e3779b97f4a7c15ull, a, na), b, nb);
  snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

/* Model name and flags of the first processor. */
uint64_t gl_cache_cpu_hash(void) {
  uint64_t h = 14695981039346656037ull;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return h;
  char line[4096];
  int seen = 0;
  while (fgets(line, sizeof line, f) && seen < 2) {
    if (strncmp(line, "model name", 10) == 0 || strncmp(line, "flags", 5) == 0) {
      h = gl_cache_fnv1a(h, line, strlen(line));
      seen++;
    }
  }
  fclose(f);
  return h;
}

/* ---- the cache directory ---------------------------------------------------------------- */

/* A directory of ours that no one else may write: mode & 022 == 0, owner the user, not
** a symbolic link. */
static bool private_dir(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

/* mkdir -p with mode 0700 for what it creates. */
static int make_dirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    int r = mkdir(path, 0700);
    *p = '/';
    if (r != 0 && errno != EEXIST) return -1;
  }
  return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

gl_status gl_cache_path(const char *sub, char *buf, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') n = snprintf(buf, len, "%s/gpulua/%s", xdg, sub);
  else if (home && home[0] == '/') n = snprintf(buf, len, "%s/.cache/gpulua/%s", home, sub);
  else return gl_fail(GL_EIO, "no cache directory (neither XDG_CACHE_HOME nor HOME is set)");
  if (n < 0 || (size_t)n >= len) return gl_fail(GL_EIO, "cache directory path too long");
  return GL_OK;
}

/* A compile takes seconds; a temporary this old belongs to a process that is gone. */
#define STALE_TEMPORARY_S 3600

void gl_cache_sweep(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "tmp-", 4) != 0) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
        st.st_uid == geteuid() && now - st.st_mtime > STALE_TEMPORARY_S)
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

bool gl_cache_open(const char *sub, char *dir, size_t len) {
  if (gl_cache_path(sub, dir, len) != GL_OK) return false;
  if (make_dirs(dir) != 0) return false;
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", dir);
  char *slash = strrchr(parent, '/');
  if (slash) *slash = 0;
  return private_dir(dir) && private_dir(parent);
}

bool gl_cache_private_file(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

/* ---- sealed files ------------------------------------------------------------------------ */

/* The seal after a cached file's body: "\n" SEAL_TAG " <size> <hash>\n", the size in 16
** hex digits and the hash (gl_cache_hash) in 32, both of the body. */
#define SEAL_TAG "gpulua-sealed"
#define SEAL_LEN (sizeof SEAL_TAG - 1 + 52)

static bool write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t r = write(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= (size_t)r;
  }
  return true;
}

static void sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

gl_status gl_cache_store(const char *dir, const char *path, const void *body, size_t n) {
  static unsigned counter;
  char tmp[4300], hex[33], seal[SEAL_LEN + 1];
  snprintf(tmp, sizeof tmp, "%s/tmp-store-%ld-%u", dir, (long)getpid(),
           __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  gl_cache_hash(body, n, "", 0, hex);
  snprintf(seal, sizeof seal, "\n" SEAL_TAG " %016llx %s\n", (unsigned long long)n, hex);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return gl_fail(GL_EIO, "cannot write in %s: %s", dir, strerror(errno));
  bool ok = write_all(fd, body, n) && write_all(fd, seal, SEAL_LEN) && fsync(fd) == 0;
  int e = errno;
  if (close(fd) != 0 && ok) { ok = false; e = errno; }
  if (ok && rename(tmp, path) != 0) { ok = false; e = errno; }
  if (!ok) {
    unlink(tmp);
    return gl_fail(GL_EIO, "cannot write %s: %s", path, strerror(e));
  }
  sync_dir(dir);
  return GL_OK;
}

bool gl_cache_read_sealed(const char *path, char **body, size_t *n) {
  *body = NULL;
  *n = 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  char *buf = NULL;
  bool ok = false;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0 &&
      (size_t)st.st_size >= SEAL_LEN && (size_t)st.st_size < ((size_t)1 << 31) &&
      (buf = malloc((size_t)st.st_size + 1)) != NULL) {
    size_t got = 0, size = (size_t)st.st_size;
    while (got < size) {
      ssize_t r = read(fd, buf + got, size - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    size_t len = size - SEAL_LEN;
    char hex[33], seal[SEAL_LEN + 1];
    if (got == size) {
      gl_cache_hash(buf, len, "", 0, hex);
      snprintf(seal, sizeof seal, "\n" SEAL_TAG " %016llx %s\n", (unsigned long long)len, hex);
      ok = memcmp(buf + len, seal, SEAL_LEN) == 0;
    }
    if (ok) {
      buf[len] = 0;
      *body = buf;
      *n = len;
    }
  }
  if (!ok) free(buf);
  close(fd);
  return ok;
}
