/*
** jit.c — compiling, caching and loading the C kernels of gpu.ElementwiseKernel,
** ReductionKernel and gpu.fuse (see jit.h).
**
** A kernel's key is a hash of everything its object depends on: the preprocessed source
** (the prelude, the kernel, and every header either includes, as the compiler read them:
** a changed header is a new key), the flags, the compiler (its command, and the resolved
** program's path, size and time, so an upgraded gcc recompiles) and the CPU
** (-march=native). The source is preprocessed first and that very text is what gets
** compiled, so the key describes the object exactly. The object is <cache>/<key>.so and it
** also holds the whole key text as the symbol gl_jit_key, so an object is used only when
** the text inside it matches: a file left by another gpulua, or replaced, is compiled
** again. The cache directory is made 0700 and is used only when it and the object are
** owned by the user and writable by no one else: a kernel is code that runs in this
** process, so it must never come from a place others can write.
**
** A cached file is sealed: written under a temporary name with a trailer holding its size
** and content hash, fsynced, renamed, and the directory fsynced. Nothing is loaded before
** its seal, and for an object its ELF headers, are checked: a file cut short by a crash
** or a full disk (which dlopen would map, and the first call die of SIGBUS) is compiled
** again. Temporaries a killed process left behind are removed once they are an hour old.
** When the directory cannot be used, kernels compile into a private temporary directory
** each run.
*/
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
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

const char *gl_jit_compiler(void) {
  const char *cc = getenv("CC");
  return cc && *cc ? cc : "cc";
}

/* ---- the key ------------------------------------------------------------------------------ */

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

/* ---- the cache directory ------------------------------------------------------------- */

gl_status gl_jit_cache_dir(char *buf, size_t len) { return gl_cache_path("kernels", buf, len); }

/* The kernels' cache directory (else the kernels go to a temporary directory). The first
** use in a process clears stale temporaries. */
bool gl_jit_open_cache(char *dir, size_t len) {
  if (!gl_cache_open("kernels", dir, len)) return false;
  static int swept;
  if (!__atomic_exchange_n(&swept, 1, __ATOMIC_ACQ_REL)) gl_cache_sweep(dir);
  return true;
}

/* A shared object of this machine's class and byte order whose program headers, and the
** bytes every loaded segment maps, lie inside the n bytes at p. */
static bool elf_object(const char *p, size_t n) {
  ElfW(Ehdr) eh;
  if (n < sizeof eh) return false;
  memcpy(&eh, p, sizeof eh);
  const unsigned char cls = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
  const unsigned char order = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != cls || eh.e_ident[EI_DATA] != order ||
      eh.e_type != ET_DYN || eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phoff > n ||
      eh.e_phnum > (n - eh.e_phoff) / sizeof(ElfW(Phdr)))
    return false;
  for (size_t i = 0; i < eh.e_phnum; i++) {
    ElfW(Phdr) ph;
    memcpy(&ph, p + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD && (ph.p_offset > n || ph.p_filesz > n - ph.p_offset)) return false;
  }
  return true;
}

/* ---- compiling --------------------------------------------------------------------------- */

/* A file's bytes, NUL-terminated; *n their count (without the NUL) when n is not NULL. */
static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
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
  if (len) *len = n;
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

/* Runs the compiler in dir: with 'preprocess' on base.c into base.i (-E), else on base.i
** into base.so; its output goes to base.log, read into *log (with src numbered) on a
** failure. */
static gl_status run_compiler(const char *dir, const char *base, bool preprocess, const char *src, char **log) {
  char inpath[4200], outpath[4200], lpath[4200];
  snprintf(inpath, sizeof inpath, "%s/%s.%s", dir, base, preprocess ? "c" : "i");
  snprintf(outpath, sizeof outpath, "%s/%s.%s", dir, base, preprocess ? "i" : "so");
  snprintf(lpath, sizeof lpath, "%s/%s.log", dir, base);
  const char *cc = gl_jit_compiler();
  char ccbuf[1024];
  snprintf(ccbuf, sizeof ccbuf, "%s " JIT_FLAGS, cc);
  char *argv[64];
  int argc = 0;
  for (char *t = strtok(ccbuf, " \t"); t && argc < 58; t = strtok(NULL, " \t")) argv[argc++] = t;
  if (preprocess) argv[argc++] = "-E";
  argv[argc++] = "-o";
  argv[argc++] = outpath;
  argv[argc++] = inpath;
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
  char *text = slurp(lpath, NULL);
  unlink(lpath);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {   /* a shell wrapper that found nothing */
    free(text);
    unlink(outpath);
    return gl_fail(GL_ENOTSUP, "no C compiler: '%s' was not found (set CC to a C compiler)", argv[0]);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *log = gl_jit_error_log(text ? text : "", src);
    free(text);
    unlink(outpath);
    return gl_fail(GL_EINVAL, "the C compiler ('%s') failed", cc);
  }
  free(text);
  return GL_OK;
}

static gl_status write_file(const char *path, const char *a, const char *b) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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

/* A cached object, loaded only when its seal holds (its size and content are those
** written), it is a whole shared object of this machine, and its key is 'key'. */
static void *load_sealed(const char *path, const char *key) {
  char *body;
  size_t n;
  if (!gl_cache_read_sealed(path, &body, &n)) return NULL;
  bool ok = elf_object(body, n);
  free(body);
  return ok ? load_checked(path, key) : NULL;
}

/* The hash of the n bytes at s less every occurrence of 'skip' (the temporary file's
** name, which the preprocessor's line markers cite and which differs each run). */
static void hash_skipping(const char *s, size_t n, const char *skip, char hex[33]) {
  uint64_t h1 = 14695981039346656037ull, h2 = 0x9e3779b97f4a7c15ull;
  size_t k = strlen(skip);
  const char *p = s, *end = s + n;
  while (p < end) {
    const char *q = memmem(p, (size_t)(end - p), skip, k);
    const char *stop = q ? q : end;
    h1 = gl_cache_fnv1a(h1, p, (size_t)(stop - p));
    h2 = gl_cache_fnv1a(h2, p, (size_t)(stop - p));
    p = q ? q + k : end;
  }
  snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

/* Preprocesses 'full' in dir, then loads the object its key names from the cache (when
** 'cache'), or compiles the preprocessed text, seals the object into the cache and loads
** it (without a cache, loads it from its temporary name). 'ident' is the key's text but
** the source (version, compiler, flags, CPU); 'tag' names the temporaries. */
static gl_status build(const char *dir, bool cache, const char *tag, const char *full, const char *src,
                       const char *ident, void **handle, gl_jit_result *res) {
  static unsigned counter;
  char base[128], cpath[4200], ipath[4200], opath[4200];
  snprintf(base, sizeof base, "tmp-%s-%ld-%u", tag, (long)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  snprintf(cpath, sizeof cpath, "%s/%s.c", dir, base);
  snprintf(ipath, sizeof ipath, "%s/%s.i", dir, base);
  snprintf(opath, sizeof opath, "%s/%s.so", dir, base);
  *handle = NULL;
  GL_TRY(write_file(cpath, full, ""));
  gl_status st = run_compiler(dir, base, true, src, &res->log);
  size_t plen = 0;
  char *pp = st == GL_OK ? slurp(ipath, &plen) : NULL;
  if (st == GL_OK && !pp) st = gl_fail(GL_EIO, "cannot read the preprocessed kernel %s", ipath);
  if (st == GL_OK) {
    char pphash[33], key[8192], hash[33], obj[4200];
    hash_skipping(pp, plen, base, pphash);
    snprintf(key, sizeof key, "gpulua-jit/2 %s pp=%s", ident, pphash);
    for (char *c = key; *c; c++)      /* the key becomes a C string literal */
      if (*c == '"' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
    gl_cache_hash(key, strlen(key), "", 0, hash);
    snprintf(obj, sizeof obj, "%s/%s.so", dir, hash);
    if (cache && (*handle = load_sealed(obj, key)) != NULL) res->origin = GL_JIT_DISK;
    else {
      res->origin = GL_JIT_COMPILED;
      unlink(ipath);
      char line[8300];
      snprintf(line, sizeof line, "const char gl_jit_key[] = \"%s\";\n", key);
      st = write_file(ipath, pp, line);
      if (st == GL_OK) st = run_compiler(dir, base, false, src, &res->log);
      size_t olen = 0;
      char *bytes = st == GL_OK && cache ? slurp(opath, &olen) : NULL;
      /* a cache that cannot take the object (a full disk) only costs a compile next time */
      if (bytes && gl_cache_store(dir, obj, bytes, olen) == GL_OK) *handle = load_sealed(obj, key);
      free(bytes);
      if (st == GL_OK && !*handle) *handle = load_checked(opath, key);
      if (st == GL_OK && !*handle) {
        const char *why = dlerror();
        st = gl_fail(GL_EIO, "cannot load the compiled kernel: %s", why ? why : "key mismatch");
      }
    }
  }
  free(pp);
  unlink(cpath);
  unlink(ipath);
  unlink(opath);
  return st;
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
    cpu = gl_cache_cpu_hash();
  }
  /* what the object depends on but its source; the memory cache is by the source as
  ** given (a process reads the headers once), the disk cache by the preprocessed text */
  char ident[8192];
  snprintf(ident, sizeof ident, "%s cc=[%s|%s] flags=[" JIT_FLAGS "] cpu=%016llx", GPULUA_VERSION, cc, compiler_id,
           (unsigned long long)cpu);
  size_t slen = strlen(src);
  char srchash[33], hash[33];
  gl_cache_hash(jit_prelude, sizeof jit_prelude - 1, src, slen, srchash);
  gl_cache_hash(ident, strlen(ident), srchash, sizeof srchash - 1, hash);

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
  size_t flen = sizeof jit_prelude + slen + 128;
  char *full = malloc(flen);
  if (!m || !full) {
    pthread_mutex_unlock(&jit_lock);
    free(m);
    free(full);
    return gl_fail(GL_ENOMEM, "out of memory");
  }
  snprintf(full, flen, "%s#include <stdbool.h>\n#include <tgmath.h>\n#line 1 \"kernel.c\"\n%s\n", jit_prelude, src);
  memcpy(m->hash, hash, sizeof hash);

  gl_status st = GL_OK;
  char dir[4096];
  if (gl_jit_open_cache(dir, sizeof dir)) {
    res->cached_on_disk = true;
    st = build(dir, true, hash, full, src, ident, &m->handle, res);
  } else {
    /* no usable cache: a private temporary directory, removed once the object is loaded */
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gpulua-jit-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    res->origin = GL_JIT_COMPILED;
    if (!mkdtemp(dir)) st = gl_fail(GL_EIO, "cannot make a temporary directory: %s", strerror(errno));
    else {
      st = build(dir, false, hash, full, src, ident, &m->handle, res);
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
