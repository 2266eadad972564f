/*
** jit.c — compiling, caching and loading the C kernels of gpu.ElementwiseKernel,
** ReductionKernel and gpu.fuse (see jit.h).
**
** A kernel's key is a hash of everything its object depends on: the full source (prelude
** included), the flags, the compiler (its command, and the resolved program's path, size
** and time, so an upgraded gcc recompiles) and the CPU (-march=native). The object is
** <cache>/<key>.so and it also holds the whole key text as the symbol gl_jit_key, so an
** object is used only when the text inside it matches: a file left by another gpulua, or
** replaced, is compiled again. The cache directory is made 0700 and is used only when it
** and the object are owned by the user and writable by no one else: a kernel is code that
** runs in this process, so it must never come from a place others can write. When the
** directory cannot be used, kernels compile into a private temporary directory each run.
** Objects are written under a temporary name and renamed, so a second process never loads
** half a file.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "jit.h"

extern char **environ;

static const char jit_prelude[] =
#include "jit_prelude.inc"
  ;

/* The flags, and no contraction of a * b + c into one fma: a fused kernel rounds
** each op as the unfused ops do; a call of an undeclared function is an error here, not
** an undefined symbol at load time. */
#define JIT_FLAGS "-O3 -march=native -fopenmp -shared -fPIC -ffp-contract=off -Werror=implicit-function-declaration"

struct gl_jit_module {
  struct gl_jit_module *next;
  char hash[33];
  void *handle;
};

static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;
static gl_jit_module *jit_modules;    /* the memory cache: every module loaded so far */

double gl_jit_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* FNV-1a, 64 bits, from 'h'. Two runs with different seeds give the 128-bit key. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

void gl_jit_hash(const char *a, size_t na, const char *b, size_t nb, char hex[33]) {
  uint64_t h1 = fnv1a(fnv1a(14695981039346656037ull, a, na), b, nb);
  uint64_t h2 = fnv1a(fnv1a(0x9e3779b97f4a7c15ull, a, na), b, nb);
  snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

const char *gl_jit_compiler(void) {
  const char *cc = getenv("CC");
  return cc && *cc ? cc : "cc";
}

/* ---- the key ------------------------------------------------------------------------------ */

/* The CPU's identity for -march=native: model name and flags of the first processor. */
static uint64_t cpu_hash(void) {
  uint64_t h = 14695981039346656037ull;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return h;
  char line[4096];
  int seen = 0;
  while (fgets(line, sizeof line, f) && seen < 2) {
    if (strncmp(line, "model name", 10) == 0 || strncmp(line, "flags", 5) == 0) {
      h = fnv1a(h, line, strlen(line));
      seen++;
    }
  }
  fclose(f);
  return h;
}

/* The program the first word of the compiler command names, found on PATH: its path,
** size and modification time, into buf ("?" when not found). */
static void compiler_identity(const char *cc, char *buf, size_t len) {
  char prog[512];
  size_t n = strcspn(cc, " \t");
  if (n >= sizeof prog) n = sizeof prog - 1;
  memcpy(prog, cc, n);
  prog[n] = 0;
  char path[4096] = "";
  struct stat st;
  if (strchr(prog, '/')) snprintf(path, sizeof path, "%s", prog);
  else {
    const char *p = getenv("PATH");
    if (!p) p = "/usr/bin:/bin";
    while (*p) {
      size_t m = strcspn(p, ":");
      snprintf(path, sizeof path, "%.*s/%s", (int)m, p, prog);
      if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) break;
      path[0] = 0;
      p += m + (p[m] == ':');
    }
  }
  char real[4096];
  if (path[0] && realpath(path, real) && stat(real, &st) == 0)
    snprintf(buf, len, "%s %lld %lld", real, (long long)st.st_size, (long long)st.st_mtime);
  else snprintf(buf, len, "?");
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

/* The disk cache: $XDG_CACHE_HOME/gpulua/kernels, else $HOME/.cache/gpulua/kernels. */
static gl_status cache_path(char *buf, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') n = snprintf(buf, len, "%s/gpulua/kernels", xdg);
  else if (home && home[0] == '/') n = snprintf(buf, len, "%s/.cache/gpulua/kernels", home);
  else return gl_fail(GL_EIO, "no cache directory (neither XDG_CACHE_HOME nor HOME is set)");
  if (n < 0 || (size_t)n >= len) return gl_fail(GL_EIO, "cache directory path too long");
  return GL_OK;
}

gl_status gl_jit_cache_dir(char *buf, size_t len) { return cache_path(buf, len); }

/* The cache directory, made if missing, when it and its parent 'gpulua' are private;
** false otherwise (then the kernels go to a temporary directory). */
bool gl_jit_open_cache(char *dir, size_t len) {
  if (cache_path(dir, len) != GL_OK) return false;
  if (make_dirs(dir) != 0) return false;
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", dir);
  char *slash = strrchr(parent, '/');
  if (slash) *slash = 0;
  return private_dir(dir) && private_dir(parent);
}

/* An object we may load: a regular file of ours that no one else may write. */
bool gl_jit_private_file(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

/* ---- compiling --------------------------------------------------------------------------- */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *s = malloc(cap);
  size_t r;
  while (s && (r = fread(s + n, 1, cap - n - 1, f)) > 0) {
    n += r;
    if (cap - n < 2) {
      char *t = realloc(s, cap * 2);
      if (!t) { free(s); s = NULL; break; }
      s = t;
      cap *= 2;
    }
  }
  fclose(f);
  if (s) s[n] = 0;
  return s;
}

/* The compiler's log, then the kernel's source with line numbers (those the log cites:
** the prelude is before a #line 1). */
char *gl_jit_error_log(const char *log, const char *src) {
  size_t lines = 1;
  for (const char *p = src; *p; p++) lines += *p == '\n';
  size_t cap = strlen(log) + strlen(src) + lines * 8 + 64;
  char *out = malloc(cap);
  if (!out) return NULL;
  size_t n = (size_t)snprintf(out, cap, "%s\ngenerated source:\n", log);
  const char *p = src;
  for (size_t l = 1; *p; l++) {
    size_t m = strcspn(p, "\n");
    n += (size_t)snprintf(out + n, cap - n, "%4zu| %.*s\n", l, (int)m, p);
    p += m + (p[m] == '\n');
  }
  return out;
}

/* Runs the compiler on dir/base.c into dir/base.so; its output goes to dir/base.log. */
static gl_status run_compiler(const char *dir, const char *base, const char *src, char **log) {
  char cpath[4200], opath[4200], lpath[4200];
  snprintf(cpath, sizeof cpath, "%s/%s.c", dir, base);
  snprintf(opath, sizeof opath, "%s/%s.so", dir, base);
  snprintf(lpath, sizeof lpath, "%s/%s.log", dir, base);
  const char *cc = gl_jit_compiler();
  char ccbuf[1024];
  snprintf(ccbuf, sizeof ccbuf, "%s " JIT_FLAGS, cc);
  char *argv[64];
  int argc = 0;
  for (char *t = strtok(ccbuf, " \t"); t && argc < 58; t = strtok(NULL, " \t")) argv[argc++] = t;
  argv[argc++] = "-o";
  argv[argc++] = opath;
  argv[argc++] = cpath;
  argv[argc] = NULL;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, lpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    unlink(lpath);
    return gl_fail(GL_ENOTSUP, "no C compiler: '%s' could not be run (%s; set CC to a C compiler)", argv[0],
                   strerror(err));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  char *text = slurp(lpath);
  unlink(lpath);
  unlink(cpath);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {   /* a shell wrapper that found nothing */
    free(text);
    unlink(opath);
    return gl_fail(GL_ENOTSUP, "no C compiler: '%s' was not found (set CC to a C compiler)", argv[0]);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *log = gl_jit_error_log(text ? text : "", src);
    free(text);
    unlink(opath);
    return gl_fail(GL_EINVAL, "the C compiler ('%s') failed", cc);
  }
  free(text);
  return GL_OK;
}

static gl_status write_file(const char *path, const char *a, const char *b) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL, 0600);
  if (fd < 0) return gl_fail(GL_EIO, "cannot write %s: %s", path, strerror(errno));
  FILE *f = fdopen(fd, "w");
  if (!f) { close(fd); return gl_fail(GL_EIO, "cannot write %s", path); }
  bool ok = fputs(a, f) >= 0 && fputs(b, f) >= 0;
  ok = fclose(f) == 0 && ok;
  return ok ? GL_OK : gl_fail(GL_EIO, "cannot write %s", path);
}

/* Loads path and answers whether its gl_jit_key is 'key' (else it is closed again). */
static void *load_checked(const char *path, const char *key) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return NULL;
  const char *k = dlsym(h, "gl_jit_key");
  if (k && strcmp(k, key) == 0) return h;
  dlclose(h);
  return NULL;
}

/* Compiles in 'dir' and renames the object to 'final' (or, when final is NULL, loads it
** from the temporary name and removes the file). */
static gl_status compile_into(const char *dir, const char *hash, const char *full, const char *src, const char *key,
                              const char *final, void **handle, char **log) {
  static unsigned counter;
  char base[128], tmpc[4200], tmpo[4200];
  snprintf(base, sizeof base, "tmp-%s-%ld-%u", hash, (long)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  snprintf(tmpc, sizeof tmpc, "%s/%s.c", dir, base);
  snprintf(tmpo, sizeof tmpo, "%s/%s.so", dir, base);
  GL_TRY(write_file(tmpc, full, ""));
  gl_status st = run_compiler(dir, base, src, log);
  if (st != GL_OK) { unlink(tmpc); return st; }
  const char *path = tmpo;
  if (final) {
    if (rename(tmpo, final) != 0) {
      unlink(tmpo);
      return gl_fail(GL_EIO, "cannot rename the kernel into %s: %s", final, strerror(errno));
    }
    path = final;
  }
  *handle = load_checked(path, key);
  const char *why = *handle ? NULL : dlerror();
  if (!final) unlink(tmpo);
  if (!*handle) return gl_fail(GL_EIO, "cannot load the compiled kernel: %s", why ? why : "key mismatch");
  return GL_OK;
}

gl_status gl_jit_c_module(const char *src, gl_jit_module **out, gl_jit_result *res) {
  double t0 = gl_jit_now_ms();
  res->log = NULL;
  res->cached_on_disk = false;
  const char *cc = gl_jit_compiler();
  static char compiler_id[4200], cc_seen[1024];
  static uint64_t cpu;
  pthread_mutex_lock(&jit_lock);
  if (strcmp(cc_seen, cc) != 0) {
    compiler_identity(cc, compiler_id, sizeof compiler_id);
    snprintf(cc_seen, sizeof cc_seen, "%s", cc);
    cpu = cpu_hash();
  }
  /* the key text: what the object depends on (the source by its hash) */
  size_t slen = strlen(src);
  char srchash[33];
  gl_jit_hash(jit_prelude, sizeof jit_prelude - 1, src, slen, srchash);
  char key[8192];
  snprintf(key, sizeof key, "gpulua-jit/1 %s cc=[%s|%s] flags=[" JIT_FLAGS "] cpu=%016llx src=%s",
           GPULUA_VERSION, cc, compiler_id, (unsigned long long)cpu, srchash);
  for (char *c = key; *c; c++)      /* the key becomes a C string literal */
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
  char hash[33];
  gl_jit_hash(key, strlen(key), "", 0, hash);

  for (gl_jit_module *m = jit_modules; m; m = m->next)
    if (strcmp(m->hash, hash) == 0) {
      pthread_mutex_unlock(&jit_lock);
      *out = m;
      res->origin = GL_JIT_MEMORY;
      res->cached_on_disk = true;
      res->ms = gl_jit_now_ms() - t0;
      return GL_OK;
    }

  gl_jit_module *m = calloc(1, sizeof *m);
  size_t flen = sizeof jit_prelude + slen + strlen(key) + 128;
  char *full = malloc(flen);
  if (!m || !full) {
    pthread_mutex_unlock(&jit_lock);
    free(m);
    free(full);
    return gl_fail(GL_ENOMEM, "out of memory");
  }
  snprintf(full, flen, "%s#include <stdbool.h>\n#include <tgmath.h>\n#line 1 \"kernel.c\"\n%s\nconst char gl_jit_key[] = \"%s\";\n", jit_prelude, src, key);
  memcpy(m->hash, hash, sizeof hash);

  gl_status st = GL_OK;
  char dir[4096], obj[4200];
  if (gl_jit_open_cache(dir, sizeof dir)) {
    res->cached_on_disk = true;
    snprintf(obj, sizeof obj, "%s/%s.so", dir, hash);
    if (gl_jit_private_file(obj) && (m->handle = load_checked(obj, key)) != NULL) res->origin = GL_JIT_DISK;
    else {
      res->origin = GL_JIT_COMPILED;
      st = compile_into(dir, hash, full, src, key, obj, &m->handle, &res->log);
    }
  } else {
    /* no usable cache: a private temporary directory, removed once the object is loaded */
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gpulua-jit-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    res->origin = GL_JIT_COMPILED;
    if (!mkdtemp(dir)) st = gl_fail(GL_EIO, "cannot make a temporary directory: %s", strerror(errno));
    else {
      st = compile_into(dir, hash, full, src, key, NULL, &m->handle, &res->log);
      rmdir(dir);
    }
  }
  free(full);
  if (st != GL_OK) {
    pthread_mutex_unlock(&jit_lock);
    free(m);
    return st;
  }
  m->next = jit_modules;
  jit_modules = m;
  pthread_mutex_unlock(&jit_lock);
  *out = m;
  res->ms = gl_jit_now_ms() - t0;
  return GL_OK;
}

void *gl_jit_symbol(gl_jit_module *m, const char *name) { return dlsym(m->handle, name); }

gl_status gl_op_jit_run(gl_device dev, const gl_jit_launch *l) {
  const gl_backend *b;
  GL_TRY(gl_backend_for(dev, &b));
  if (!b->jit_run) {
    char name[16];
    return gl_fail(GL_ENOTSUP, "kernels compiled at run time are not supported on %s yet", gl_device_name(dev, name));
  }
  return b->jit_run(l);
}
