/*
** backend.c — the device-type registry and storage lifetime.
*/
#include <stdlib.h>
#include "backend.h"

const uint8_t gl_unop_kind[GL_NUNOP] = {
#define GL_X(name, kind, f, d, i) GL_K_##kind,
  GL_UNARY_OPS(GL_X)
#undef GL_X
};
const uint8_t gl_binop_kind[GL_NBINOP] = {
#define GL_X(name, kind, f, d, i) GL_K_##kind,
  GL_BINARY_OPS(GL_X)
#undef GL_X
};
const char *const gl_unop_name[GL_NUNOP] = {
#define GL_X(name, kind, f, d, i) #name,
  GL_UNARY_OPS(GL_X)
#undef GL_X
};
const char *const gl_binop_name[GL_NBINOP] = {
#define GL_X(name, kind, f, d, i) #name,
  GL_BINARY_OPS(GL_X)
#undef GL_X
};

const uint32_t gl_opkind_dtypes[GL_NOPKIND] = {
#define GL_X(kind) [GL_K_##kind] = GL_DTYPES_##kind,
  GL_OP_KINDS(GL_X)
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
};

const gl_backend *gl_backend_get(gl_devtype t) {
  switch (t) {
    case GL_CPU: return &gl_cpu_backend;
#ifdef GL_WITH_CUDA
    case GL_CUDA: return &gl_cuda_backend;
#endif
    default: return NULL;
  }
}

gl_status gl_backend_for(gl_device d, const gl_backend **out) {
  const gl_backend *b = gl_backend_get((gl_devtype)d.type);
  if (b == NULL)
    return gl_fail(GL_EDEVICE, "device cuda:%d is not available (gpulua was built without CUDA)", d.index);
  if (d.type != GL_CPU) {
    const char *why = NULL;
    int n = b->count(&why);
    if (d.index >= n) {
      if (n == 0) return gl_fail(GL_EDEVICE, "device cuda:%d is not available (%s)", d.index, why ? why : "no device");
      return gl_fail(GL_EDEVICE, "device cuda:%d is not available (%d CUDA device%s found)", d.index, n, n == 1 ? "" : "s");
    }
  }
  *out = b;
  return GL_OK;
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
  const gl_backend *b = gl_backend_get((gl_devtype)dev.type);
  if (b == NULL) return gl_fail(GL_EDEVICE, "no backend for this device");
  gl_status st = b->alloc(dev, nbytes, out);
  if (st == GL_ENOMEM && reclaim_hook) {
    reclaim_hook(dev);
    st = b->alloc(dev, nbytes, out);
  }
  return st;
}

static gl_status storage_new_once(gl_device dev, size_t nbytes, gl_storage **out) {
  if (dev.type == GL_CPU && nbytes <= INLINE_MAX) {
    void *block;
    GL_TRY(gl_cpu_backend.alloc(dev, INLINE_HEAD + nbytes, &block));
    gl_storage *s = block;
    s->refcount = 1;
    s->data = (char *)block + INLINE_HEAD;
    s->nbytes = nbytes;
    s->device = dev;
    s->inline_data = true;
    s->lua_owned = false;
    s->version = 0;
    s->writer = NULL;
    *out = s;
    return GL_OK;
  }
  const gl_backend *b;
  GL_TRY(gl_backend_for(dev, &b));
  gl_storage *s = malloc(sizeof *s);
  if (s == NULL) return gl_fail(GL_ENOMEM, "out of host memory");
  gl_status st = b->alloc(dev, nbytes, &s->data);
  if (st != GL_OK) { free(s); return st; }
  s->refcount = 1;
  s->nbytes = nbytes;
  s->device = dev;
  s->inline_data = false;
  s->lua_owned = false;
  s->version = 0;
  s->writer = NULL;
  *out = s;
  return GL_OK;
}

void gl_storage_release(gl_storage *s) {
  if (s == NULL || --s->refcount > 0 || s->lua_owned) return;
  if (s->inline_data) { gl_cpu_backend.free(s->device, s, INLINE_HEAD + s->nbytes); return; }
  const gl_backend *b = gl_backend_get((gl_devtype)s->device.type);
  if (b) b->free(s->device, s->data, s->nbytes);
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
