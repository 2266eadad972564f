/*
** jit_cuda.c — CUDA kernels compiled at run time (gpu.ElementwiseKernel, ReductionKernel,
** gpu.fuse on cuda, and gpu.RawKernel / RawModule): the key, the memory cache and the disk
** cache of the images the device backend's run-time compiler (NVRTC, gl_backend.rtc)
** makes, and their launches. See jit.h.
**
** An image is compiled for the device's own sm_XY (a cubin; PTX when NVRTC is older than
** the device). Its key text holds everything the image depends on: gpulua's version,
** NVRTC's version, the architecture, the options and a hash of the full source (the
** prelude included); the file <cache>/<hash>.cubin starts with that text on its own line
** and is used only when it matches. The cache directory and the files obey jit.c's rules
** (made 0700; used only when they are the user's and no one else can write them; sealed
** with their size and content hash, fsynced and renamed, and read only when the seal
** holds).
**
** The load and launch paths (gl_jit_cuda_launch, gl_op_raw_launch) have NOT RUN ON A GPU.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "jit.h"

static const char cuda_prelude[] =
#include "jit_cuda_prelude.inc"
  ;

/* C++17 as NVRTC's default; no contraction of a * b + c into an fma, so a fused kernel
** rounds each op as the unfused ops do (the C path's -ffp-contract=off) */
static const char *const nvrtc_opts[] = { "--std=c++17", "--fmad=false" };
#define NVRTC_OPTS_TEXT "--std=c++17 --fmad=false"

typedef struct loaded_fn {
  struct loaded_fn *next;
  int device;
  char *name;
  void *fn;
} loaded_fn;

struct gl_jit_cuda_module {
  struct gl_jit_cuda_module *next;
  char hash[33];
  char *key;
  char *image;          /* cubin, or PTX (NUL-terminated) */
  size_t size;
  bool ptx;
  loaded_fn *fns;       /* functions loaded so far, per device */
};

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static gl_jit_cuda_module *cuda_modules;

/* The run-time compiler of CUDA source: the first backend of the registry that has one. */
static gl_status get_rtc(const gl_rtc **out) {
  for (int t = 0; t < gl_nbackends; t++)
    if (gl_backend_get(t)->rtc) {
      *out = gl_backend_get(t)->rtc;
      return GL_OK;
    }
  return gl_fail(GL_ENOTSUP, "CUDA kernels cannot be compiled: gpulua was built without CUDA (no NVRTC)");
}

gl_status gl_jit_nvrtc_version(int *major, int *minor) {
  const gl_rtc *rtc = NULL;
  GL_TRY(get_rtc(&rtc));
  return rtc->version(major, minor);
}

/* ---- the disk cache ------------------------------------------------------------------------ */

/* The image in path when the file is ours and private, its seal holds (jit.c) and its
** first line is key. */
static bool read_image(const char *path, const char *key, gl_jit_cuda_module *m) {
  char *buf;
  size_t n;
  if (!gl_cache_read_sealed(path, &buf, &n)) return false;
  bool ok = false;
  size_t klen = strlen(key);
  /* "<key>\n" then "cubin\n" or "ptx\n", then the image */
  if (n > klen + 1 && memcmp(buf, key, klen) == 0 && buf[klen] == '\n') {
    const char *kind = buf + klen + 1;
    size_t head = 0;
    if (n - klen - 1 > 6 && memcmp(kind, "cubin\n", 6) == 0) head = klen + 7;
    else if (n - klen - 1 > 4 && memcmp(kind, "ptx\n", 4) == 0) { head = klen + 5; m->ptx = true; }
    if (head) {
      m->size = n - head;
      m->image = malloc(m->size + 1);
      if (m->image) {
        memcpy(m->image, buf + head, m->size);
        m->image[m->size] = 0;
        ok = true;
      }
    }
  }
  free(buf);
  return ok;
}

/* Seals the image into path (jit.c's gl_cache_store); a failure only leaves it uncached. */
static void write_image(const char *dir, const char *path, const char *key, const gl_jit_cuda_module *m) {
  const char *kind = m->ptx ? "ptx\n" : "cubin\n";
  size_t klen = strlen(key), kdlen = strlen(kind), n = klen + 1 + kdlen + m->size;
  char *body = malloc(n);
  if (!body) return;
  memcpy(body, key, klen);
  body[klen] = '\n';
  memcpy(body + klen + 1, kind, kdlen);
  memcpy(body + klen + 1 + kdlen, m->image, m->size);
  (void)gl_cache_store(dir, path, body, n);
  free(body);
}

/* NVRTC's version for the key. Loading NVRTC to ask costs ~20 ms, more than a whole cache
** hit may; so the answer is remembered in the cache directory per library file (its
** identity: path, size, time): <cache>/nvrtc-<hash>.version holds "<identity>\n<major>.<minor>",
** sealed and read under the same rules as the images. Without a usable cache or identity, NVRTC is
** loaded and asked. */
static gl_status nvrtc_version_for_key(const gl_rtc *rtc, bool cache, const char *dir, int *major, int *minor) {
  char ident[4200], path[4300], hash[33];
  if (!cache || rtc->identity(ident, sizeof ident) != GL_OK) return rtc->version(major, minor);
  gl_cache_hash(ident, strlen(ident), "", 0, hash);
  snprintf(path, sizeof path, "%s/nvrtc-%s.version", dir, hash);
  char *body;
  size_t len;
  if (gl_cache_read_sealed(path, &body, &len)) {
    size_t n = strlen(ident);
    bool ok = len > n && strncmp(body, ident, n) == 0 && body[n] == '\n' &&
              sscanf(body + n + 1, "%d.%d", major, minor) == 2;
    free(body);
    if (ok) return GL_OK;
  }
  GL_TRY(rtc->version(major, minor));
  char text[4400];
  int n = snprintf(text, sizeof text, "%s\n%d.%d\n", ident, *major, *minor);
  if (n > 0 && (size_t)n < sizeof text) (void)gl_cache_store(dir, path, text, (size_t)n);
  return GL_OK;
}

/* ---- compiling --------------------------------------------------------------------------- */

/* Whether NVRTC may read files for src: an #include (or %:include) or #embed directive,
** or __has_include / __has_embed, can name a file on disk, and NVRTC does not say which
** files it read, so such an image cannot be keyed on them and is not cached on disk (a
** changed header would otherwise be missed). Line splices are removed first and blanks
** and comments between the '#' and the name skipped; a false alarm (a '#' in a string)
** only costs a compile per process. */
static bool may_read_files(const char *src) {
  char *t = malloc(strlen(src) + 1);
  if (!t) return true;
  size_t n = 0;
  for (const char *p = src; *p; p++) {
    if (p[0] == '\\' && p[1] == '\n') p++;
    else if (p[0] == '\\' && p[1] == '\r' && p[2] == '\n') p += 2;
    else t[n++] = *p;
  }
  t[n] = 0;
  bool reads = strstr(t, "__has_include") || strstr(t, "__has_embed");
  for (const char *p = t; *p && !reads; p++) {
    const char *q;
    if (*p == '#') q = p + 1;
    else if (p[0] == '%' && p[1] == ':') q = p + 2;
    else continue;
    for (;;) {
      const char *e;
      if (*q == ' ' || *q == '\t') q++;
      else if (q[0] == '/' && q[1] == '*' && (e = strstr(q + 2, "*/")) != NULL) q = e + 2;
      else break;
    }
    reads = strncmp(q, "include", 7) == 0 || strncmp(q, "embed", 5) == 0;
  }
  free(t);
  return reads;
}

static void free_module(gl_jit_cuda_module *m) {
  if (!m) return;
  free(m->key);
  free(m->image);
  free(m);
}

gl_status gl_jit_cuda_module_get(const char *src, bool prelude, int arch, gl_jit_cuda_module **out,
                                 gl_jit_result *res) {
  double t0 = gl_jit_now_ms();
  res->log = NULL;
  res->cached_on_disk = false;
  const gl_rtc *rtc = NULL;
  GL_TRY(get_rtc(&rtc));
  if (arch < 10 || arch > 10000) return gl_fail(GL_EINVAL, "bad CUDA architecture sm_%d", arch);
  char dir[4096], path[4200];
  bool cache = gl_jit_open_cache(dir, sizeof dir);
  int major, minor;
  GL_TRY(nvrtc_version_for_key(rtc, cache, dir, &major, &minor));
  const char *pre = prelude ? cuda_prelude : "";
  size_t plen = prelude ? sizeof cuda_prelude - 1 : 0, slen = strlen(src);
  char srchash[33], hash[33], key[512];
  gl_cache_hash(pre, plen, src, slen, srchash);
  snprintf(key, sizeof key, "gpulua-nvrtc/1 %s nvrtc=%d.%d arch=sm_%d opts=[" NVRTC_OPTS_TEXT "] src=%s", GPULUA_VERSION,
           major, minor, arch, srchash);
  gl_cache_hash(key, strlen(key), "", 0, hash);

  pthread_mutex_lock(&cuda_lock);
  for (gl_jit_cuda_module *m = cuda_modules; m; m = m->next)
    if (strcmp(m->hash, hash) == 0) {
      pthread_mutex_unlock(&cuda_lock);
      *out = m;
      res->origin = GL_JIT_MEMORY;
      res->cached_on_disk = true;
      res->ms = gl_jit_now_ms() - t0;
      return GL_OK;
    }

  gl_jit_cuda_module *m = calloc(1, sizeof *m);
  if (!m || !(m->key = strdup(key))) {
    pthread_mutex_unlock(&cuda_lock);
    free(m);
    return gl_fail(GL_ENOMEM, "out of memory");
  }
  memcpy(m->hash, hash, sizeof hash);
  bool disk = cache && !may_read_files(src);
  if (disk) snprintf(path, sizeof path, "%s/%s.cubin", dir, hash);
  res->cached_on_disk = disk;
  gl_status st = GL_OK;
  if (disk && read_image(path, key, m)) res->origin = GL_JIT_DISK;
  else {
    res->origin = GL_JIT_COMPILED;
    m->ptx = false;
    size_t flen = plen + slen + 64;
    char *full = malloc(flen);
    if (!full) st = gl_fail(GL_ENOMEM, "out of memory");
    else {
      snprintf(full, flen, "%s%s%s\n", pre, prelude ? "#line 1 \"kernel.cu\"\n" : "", src);
      char *log = NULL;
      st = rtc->compile(full, nvrtc_opts, (int)(sizeof nvrtc_opts / sizeof *nvrtc_opts), arch, &m->image, &m->size,
                        &m->ptx, &log);
      free(full);
      if (st != GL_OK && log) res->log = gl_jit_error_log(log, src);
      free(log);
      if (st == GL_OK && disk) write_image(dir, path, key, m);
    }
  }
  if (st != GL_OK) {
    pthread_mutex_unlock(&cuda_lock);
    free_module(m);
    return st;
  }
  m->next = cuda_modules;
  cuda_modules = m;
  pthread_mutex_unlock(&cuda_lock);
  *out = m;
  res->ms = gl_jit_now_ms() - t0;
  return GL_OK;
}

size_t gl_jit_cuda_image(const gl_jit_cuda_module *m, bool *ptx, const char **key) {
  if (ptx) *ptx = m->ptx;
  if (key) *key = m->key;
  return m->size;
}

/* ---- launching ------------------------------------------------------------------------------ */

/* dev's run-time compiler; 'what' names the refusal where it has none (the cpu) */
static gl_status device_rtc(gl_device dev, const gl_rtc **rtc, const char *what) {
  const gl_backend *b;
  GL_TRY(gl_backend_for(dev, &b));
  if (b->rtc == NULL) {
    char name[16];
    return gl_fail(GL_ENOTSUP, "%s, not on %s", what, gl_device_name(dev, name));
  }
  *rtc = b->rtc;
  return GL_OK;
}

gl_status gl_jit_cuda_arch(gl_device dev, int *arch) {
  const gl_rtc *rtc = NULL;
  GL_TRY(device_rtc(dev, &rtc, "CUDA kernels run on a GPU only"));
  return rtc->arch(dev, arch);
}

gl_status gl_jit_cuda_launch(gl_device dev, gl_jit_cuda_module *m, const char *name, const unsigned grid[3],
                             const unsigned block[3], unsigned shared_mem, void **args) {
  const gl_rtc *rtc = NULL;
  GL_TRY(device_rtc(dev, &rtc, "CUDA kernels run on a GPU only"));
  void *fn = NULL;
  pthread_mutex_lock(&cuda_lock);
  for (loaded_fn *f = m->fns; f; f = f->next)
    if (f->device == dev.index && strcmp(f->name, name) == 0) fn = f->fn;
  pthread_mutex_unlock(&cuda_lock);
  if (fn == NULL) {
    GL_TRY(rtc->load(dev, m->image, name, &fn));
    loaded_fn *f = calloc(1, sizeof *f);
    if (f && (f->name = strdup(name)) != NULL) {
      f->device = dev.index;
      f->fn = fn;
      pthread_mutex_lock(&cuda_lock);
      f->next = m->fns;
      m->fns = f;
      pthread_mutex_unlock(&cuda_lock);
    } else free(f);      /* not remembered: loaded again next time */
  }
  return rtc->launch(dev, fn, grid, block, shared_mem, args, name);
}

gl_status gl_op_raw_launch(gl_device dev, gl_raw_launch *l) {
  const gl_rtc *rtc = NULL;
  GL_TRY(device_rtc(dev, &rtc, "RawKernel is CUDA source and runs on a GPU only"));
  int arch;
  GL_TRY(rtc->arch(dev, &arch));
  gl_jit_cuda_module *m;
  gl_jit_result res;
  gl_status st = gl_jit_cuda_module_get(l->source, false, arch, &m, &res);
  if (st != GL_OK) {
    l->log = res.log;
    return st;
  }
  return gl_jit_cuda_launch(dev, m, l->name, l->grid, l->block, l->shared_mem, l->args);
}
