/*
** backend.c — the registry of backends (device names, counts, the numbering of devices)
** and storage lifetime.
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"

const uint8_t gl_unop_kind[GL_NUNOP] = {
#define GL_X(name, kind, ...) GL_K_##kind,
  GL_UNARY_OPS(GL_X)
};
const uint8_t gl_binop_kind[GL_NBINOP] = {
  GL_BINARY_OPS(GL_X)
#undef GL_X
};
const char *const gl_unop_name[GL_NUNOP] = {
#define GL_X(name, ...) #name,
  GL_UNARY_OPS(GL_X)
};
const char *const gl_binop_name[GL_NBINOP] = {
  GL_BINARY_OPS(GL_X)
#undef GL_X
};
const uint32_t gl_unop_dtypes[GL_NUNOP] = {
#define GL_X(name, kind, f, d, i, cx) GL_OP_DTYPES(kind, cx),
  GL_UNARY_OPS(GL_X)
};
const uint32_t gl_binop_dtypes[GL_NBINOP] = {
  GL_BINARY_OPS(GL_X)
#undef GL_X
};
const uint8_t gl_unop_cxout[GL_NUNOP] = {
#define GL_X(name, kind, f, d, i, cx) GL_CX_OUT(cx),
  GL_UNARY_OPS(GL_X)
};
const uint8_t gl_binop_cxout[GL_NBINOP] = {
  GL_BINARY_OPS(GL_X)
#undef GL_X
};
const char *const gl_redop_name[GL_NREDOP] = {
  [GL_R_SUM] = "sum", [GL_R_PROD] = "prod", [GL_R_MAX] = "max", [GL_R_MIN] = "min",
  [GL_R_ARGMAX] = "argmax", [GL_R_ARGMIN] = "argmin", [GL_R_ALL] = "all", [GL_R_ANY] = "any",
  [GL_R_MEAN] = "mean", [GL_R_VAR] = "var", [GL_R_NORM] = "norm", [GL_R_LOGSUMEXP] = "logsumexp",
};
const char *const gl_rand_dist_name[GL_NRAND] = {
  [GL_RAND_UNIFORM] = "uniform", [GL_RAND_NORMAL] = "normal", [GL_RAND_INTEGERS] = "randint",
  [GL_RAND_BERNOULLI] = "bernoulli", [GL_RAND_PERMUTATION] = "permutation",
  [GL_RAND_SAMPLER] = "sampler",
};

/* ---- the registry ---------------------------------------------------------------- */

/* The backends' tables (only this file names them). */
extern const gl_backend gl_cpu_backend;
void gl_cpu_set_max_threads(int n);       /* cpu/cpu_team.c */
const gl_backend *gl_cpu_test_backend(void);
#ifdef GL_WITH_CUDA
extern const gl_backend gl_cuda_backend;
#else
/* Without CUDA "cuda" still names a device, one that says why it is missing. */
static const gl_backend cuda_absent = {
  .name = "cuda", .numbered = true, .kind = "gpu", .absent = "gpulua was built without CUDA",
};
#endif

/* Every backend of the build, the host's first (GL_CPU). A new backend is one line here
** (and its table, src/backend/<name>/). */
const gl_backend *gl_backends[GL_MAX_BACKENDS] = {
  &gl_cpu_backend,
#ifdef GL_WITH_CUDA
  &gl_cuda_backend,
#else
  &cuda_absent,
#endif
};
int gl_nbackends;

static char device_syntax[160];
static int slot_base[GL_MAX_BACKENDS + 1];

/* Counts the entries, adds the test backend where GPULUA_TEST_BACKEND asks for it (a
** second cpu named "testcpu", for spec/registry_spec.lua: it goes through every path an
** accelerator's arrays take), and writes the name syntax and the device numbering. Runs
** when the library loads, before any thread can ask. */
__attribute__((constructor)) static void registry_init(void) {
  int n = 0;
  while (n < GL_MAX_BACKENDS && gl_backends[n]) n++;
  const char *env = getenv("GPULUA_TEST_BACKEND");
  if (env && strcmp(env, "1") == 0 && n < GL_MAX_BACKENDS) gl_backends[n++] = gl_cpu_test_backend();
  gl_nbackends = n;
  /* 'cpu', 'cuda', 'cuda:N' in registry order, the last two joined by "or" */
  const char *names[2 * GL_MAX_BACKENDS];
  char numbered[GL_MAX_BACKENDS][24];
  int k = 0;
  for (int t = 0; t < n; t++) {
    names[k++] = gl_backends[t]->name;
    if (gl_backends[t]->numbered) {
      snprintf(numbered[t], sizeof numbered[t], "%s:N", gl_backends[t]->name);
      names[k++] = numbered[t];
    }
  }
  size_t len = 0;
  for (int i = 0; i < k && len < sizeof device_syntax; i++)
    len += (size_t)snprintf(device_syntax + len, sizeof device_syntax - len, "%s'%s'",
                            i == 0 ? "" : i == k - 1 ? " or " : ", ", names[i]);
  for (int t = 0; t < n; t++) slot_base[t + 1] = slot_base[t] + (gl_backends[t]->numbered ? 256 : 1);
}

const char *gl_device_syntax(void) { return device_syntax; }
int gl_device_slots(void) { return slot_base[gl_nbackends]; }
int gl_device_slot(gl_device d) { return slot_base[d.type] + d.index; }

/* Why this process uses the host only (gl_backends_host_only), or NULL. */
static const char *host_only;

void gl_backends_host_only(const char *why) {
  host_only = why;
  gl_cpu_set_max_threads(1);
}

int gl_backend_devices(const gl_backend *b, const char **why) {
  const char *reason = b->absent;
  if (host_only && b != &gl_cpu_backend) reason = host_only;
  int n = reason ? 0 : b->count(&reason);
  if (why) *why = n > 0 ? NULL : reason ? reason : "no device";
  return n;
}

gl_status gl_device_parse(const char *name, gl_device *out) {
  for (int t = 0; t < gl_nbackends; t++) {
    const gl_backend *b = gl_backends[t];
    size_t len = strlen(b->name);
    if (strncmp(name, b->name, len) != 0) continue;
    const char *p = name + len;
    long idx = 0;
    if (*p == ':' && b->numbered) {
      char *end;
      if (p[1] < '0' || p[1] > '9') break;
      idx = strtol(p + 1, &end, 10);
      if (*end != '\0' || idx > 255) break;
    } else if (*p != '\0') continue;
    out->type = (uint8_t)t;
    out->index = (uint8_t)idx;
    return GL_OK;
  }
  return gl_fail(GL_EINVAL, "unknown device '%s' (expected %s)", name, device_syntax);
}

const char *gl_device_name(gl_device d, char *buf) {
  const gl_backend *b = gl_backend_get(d.type);
  if (b == NULL) snprintf(buf, GL_DEVNAME_SIZE, "device %d:%d", d.type, d.index);
  else if (b->numbered) snprintf(buf, GL_DEVNAME_SIZE, "%s:%d", b->name, d.index);
  else snprintf(buf, GL_DEVNAME_SIZE, "%s", b->name);
  return buf;
}

gl_status gl_backend_for(gl_device d, const gl_backend **out) {
  const gl_backend *b = gl_backend_get(d.type);
  char dn[GL_DEVNAME_SIZE];
  if (b == NULL) return gl_fail(GL_EDEVICE, "no backend for device type %d", d.type);
  if (d.type == GL_CPU) { *out = b; return GL_OK; }        /* the host is always there */
  const char *why;
  int n = gl_backend_devices(b, &why);
  if (host_only) n = 0;
  if (d.index >= n) {
    gl_device_name(d, dn);
    if (n == 0) return gl_fail(GL_EDEVICE, "device %s is not available (%s)", dn, why);
    char label[16];        /* the backend's name in capitals: "CUDA" */
    size_t i = 0;
    for (; b->name[i] && i < sizeof label - 1; i++) label[i] = (char)toupper((unsigned char)b->name[i]);
    label[i] = '\0';
    return gl_fail(GL_EDEVICE, "device %s is not available (%d %s device%s found)", dn, n, label, n == 1 ? "" : "s");
  }
  *out = b;
  return GL_OK;
}

/* The next pair of v, named and zeroed; NULL when v is full. */
static gl_version *add_version(gl_versions *v, const char *name) {
  if (v->n >= GL_MAXVERSIONS) return NULL;
  gl_version *it = &v->item[v->n++];
  memset(it, 0, sizeof *it);
  it->name = name;
  return it;
}

void gl_versions_text(gl_versions *v, const char *name, const char *fmt, ...) {
  gl_version *it = add_version(v, name);
  if (it == NULL) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(it->text, sizeof it->text, fmt, ap);
  va_end(ap);
}

void gl_versions_number(gl_versions *v, const char *name, long long x) {
  gl_version *it = add_version(v, name);
  if (it) it->number = x;
}

/* Small CPU arrays get their header and bytes in one block of the caching allocator:
** one allocation instead of two on the path that decides per-op overhead. */
#define INLINE_MAX 512
#define INLINE_HEAD 64          /* keeps the data 64-byte aligned */
_Static_assert(sizeof(gl_storage) <= INLINE_HEAD, "storage header must fit its slot");

/* The out-of-memory ritual, once for every array any op makes: when an allocation fails
** for want of memory, the hook (set by the Lua binding: empty the device's cache and run
** a full collection, since dropped arrays may be garbage Lua has not collected yet) runs
** and the allocation is tried once more. */
static gl_reclaim_fn reclaim_hook;
void gl_set_reclaim(gl_reclaim_fn fn) { reclaim_hook = fn; }

static gl_status storage_new_once(gl_device dev, size_t nbytes, gl_storage **out);

gl_status gl_storage_new(gl_device dev, size_t nbytes, gl_storage **out) {
  gl_status st = storage_new_once(dev, nbytes, out);
  if (st == GL_ENOMEM && reclaim_hook) {
    reclaim_hook(dev);
    st = storage_new_once(dev, nbytes, out);
  }
  return st;
}

/* A library's workspace (cuBLAS, cuDNN, cuSOLVER, oneDNN) goes through the same ritual:
** under memory pressure the cache and Lua's garbage hold what it needs. */
gl_status gl_workspace_alloc(gl_device dev, size_t nbytes, void **out) {
  const gl_backend *b = gl_backend_get(dev.type);
  if (b == NULL) return gl_fail(GL_EDEVICE, "no backend for this device");
  gl_status st = b->alloc(dev, nbytes, out);
  if (st == GL_ENOMEM && reclaim_hook) {
    reclaim_hook(dev);
    st = b->alloc(dev, nbytes, out);
  }
  return st;
}

/* A fresh storage header in s: one reference, never written, not Lua's. */
static gl_storage *storage_init(gl_storage *s, void *data, size_t nbytes, gl_device dev, bool inline_data) {
  *s = (gl_storage){ .refcount = 1, .data = data, .nbytes = nbytes, .device = dev, .inline_data = inline_data,
                     .lua_owned = false, .version = 0, .writer = NULL };
  return s;
}

static gl_status storage_new_once(gl_device dev, size_t nbytes, gl_storage **out) {
  if (dev.type == GL_CPU && nbytes <= INLINE_MAX) {
    void *block;
    GL_TRY(gl_cpu_backend.alloc(dev, INLINE_HEAD + nbytes, &block));
    *out = storage_init(block, (char *)block + INLINE_HEAD, nbytes, dev, true);
    return GL_OK;
  }
  const gl_backend *b;
  GL_TRY(gl_backend_for(dev, &b));
  gl_storage *s = malloc(sizeof *s);
  if (s == NULL) return gl_fail(GL_ENOMEM, "out of host memory");
  void *data;
  gl_status st = b->alloc(dev, nbytes, &data);
  if (st != GL_OK) { free(s); return st; }
  *out = storage_init(s, data, nbytes, dev, false);
  return GL_OK;
}

void gl_storage_release(gl_storage *s) {
  if (s == NULL || --s->refcount > 0 || s->lua_owned) return;
  if (s->inline_data) { gl_cpu_backend.free(s->device, s, INLINE_HEAD + s->nbytes); return; }
  const gl_backend *b = gl_backend_get(s->device.type);
  /* a device's memory belongs to the process that forked this one: left alone here */
  if (b && (s->device.type == GL_CPU || host_only == NULL)) b->free(s->device, s->data, s->nbytes);
  free(s);
}

gl_status gl_array_alloc(gl_array *a, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev) {
  size_t nbytes;
  GL_TRY(gl_array_init(a, dt, ndim, shape));          /* refuses counts and bytes past the limits */
  GL_TRY(gl_nbytes(a->size, dt, &nbytes));
  return gl_storage_new(dev, nbytes, &a->storage);
}

void gl_array_release(gl_array *a) {
  gl_storage *s = a->storage;
  a->storage = NULL;
  if (a->lua_ref) return;           /* bytes in a Lua userdata: its collector frees them */
  gl_storage_release(s);
}
