/*
** backend.h — what a device must provide. One table of function pointers per device
** type (ggml's ggml-backend-impl.h is the model). The ops layer validates arguments,
** computes output shapes and dtypes, allocates, and then calls these; a backend may
** assume its inputs are valid and live on its device.
**
** Entries marked (optional) may be NULL; the ops layer then reports "not supported on
** <device>" before anything runs. supports() answers per (op, dtype) the same way.
*/
#ifndef GL_BACKEND_H
#define GL_BACKEND_H

#include "../core/array.h"

/* Op families, for supports(). */
typedef enum gl_op {
  GL_OP_FILL,
  GL_OP_COPY,       /* strided copy with dtype conversion */
  GL_OP_ARANGE,
  GL_OP_UNARY,
  GL_OP_BINARY,
  GL_OP_REDUCE,
  GL_OP_MATMUL,
  GL_OP_INDEX,
  GL_OP_SORT,
  GL_OP_RANDOM,
  GL_NOP
} gl_op;

typedef struct gl_devinfo {
  char name[128];
  size_t total_memory;
  int major, minor;     /* compute capability; 0.0 for cpu */
  int multiprocessors;
} gl_devinfo;

/* Memory figures of one device, as gpu.memory() reports them. */
typedef struct gl_meminfo {
  size_t allocated;     /* bytes held by live arrays */
  size_t reserved;      /* allocated + cached for reuse */
  size_t peak;          /* highest 'allocated' since start (or reset) */
  size_t free, total;   /* of the device (host: of the machine) */
} gl_meminfo;

/* Library versions a backend reports (0 where unknown or not built in). */
typedef struct gl_versions {
  int runtime, driver, blas_loaded;   /* CUDA runtime/driver as 12040 etc. */
  int cublas, cudnn, cudnn_header;
  char blas[128];                     /* BLAS configuration string, if loaded */
} gl_versions;

typedef struct gl_backend {
  const char *name;                                   /* "cpu", "cuda" */
  void (*versions)(gl_versions *out);                 /* (optional) */

  /* Devices. count() returns how many usable devices there are (0 with a reason). */
  int (*count)(const char **reason);
  gl_status (*info)(int index, gl_devinfo *out);

  bool (*supports)(gl_op op, gl_dtype dt);

  /* Memory. alloc returns 64-byte-aligned blocks from a cache. */
  gl_status (*alloc)(gl_device dev, size_t nbytes, void **out);
  void (*free)(gl_device dev, void *p, size_t nbytes);
  void (*empty_cache)(gl_device dev);
  void (*memory)(gl_device dev, gl_meminfo *out);

  /* Host <-> device bytes (for cpu: memcpy). */
  gl_status (*to_host)(void *dst, gl_device dev, const void *src, size_t nbytes);
  gl_status (*from_host)(gl_device dev, void *dst, const void *src, size_t nbytes);
  gl_status (*synchronize)(gl_device dev);

  /* dst[...] = src[...] over dst's shape (src already broadcast to it), converting
  ** dtypes; any strides on both sides. */
  gl_status (*copy)(const gl_array *dst, const gl_array *src);
  /* Every element of dst (any strides) = v converted to dst's dtype. */
  gl_status (*fill)(const gl_array *dst, gl_scalar v);
  /* Contiguous dst: dst[i] = start + i * step, computed in double then converted. */
  gl_status (*arange)(const gl_array *dst, double start, double step);
} gl_backend;

extern const gl_backend gl_cpu_backend;
#ifdef GL_WITH_CUDA
extern const gl_backend gl_cuda_backend;
#endif

/* The backend for a device type; NULL when it is not built in. */
const gl_backend *gl_backend_get(gl_devtype t);

/* Backend of d, or a GL_EDEVICE failure naming why the device is unusable. */
gl_status gl_backend_for(gl_device d, const gl_backend **out);

/* ---- storage: made and freed by the device's allocator ----------------------- */

/* New storage of nbytes on 'dev' (refcount 1). */
gl_status gl_storage_new(gl_device dev, size_t nbytes, gl_storage **out);
/* Drops one reference; frees at zero. NULL is fine. */
void gl_storage_release(gl_storage *s);

/* A new, uninitialised C-contiguous array on 'dev'. 'a' must be closed. */
gl_status gl_array_alloc(gl_array *a, gl_dtype dt, int ndim, const int64_t *shape, gl_device dev);
/* Drops the storage reference; idempotent. */
void gl_array_release(gl_array *a);

#endif
