/*
** array.h — the array descriptor: a refcounted storage plus shape, strides and offset.
**
** Strides and offset count elements, not bytes (every view is element-aligned). A view
** is a second descriptor on the same storage. Descriptors are plain values: the Lua
** binding embeds one in each userdata, so creating an array costs one userdata, one
** small header and one block from the device's caching allocator.
*/
#ifndef GL_ARRAY_H
#define GL_ARRAY_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include "checked.h"
#include "dtype.h"
#include "status.h"

#define GL_MAXDIMS 8

/* A device: a backend of the registry (src/backend/backend.c numbers them; its names,
** counts and versions come from the backend's table) and a device of that backend. */
typedef struct gl_device {
  uint8_t type;    /* the backend's place in the registry */
  uint8_t index;   /* ordinal within the backend (cuda:N); 0 where it has one device */
} gl_device;

/* The host: the registry's first backend, whose arrays are host memory. */
#define GL_CPU 0

static inline gl_device gl_cpu(void) { gl_device d = { GL_CPU, 0 }; return d; }
static inline bool gl_device_eq(gl_device a, gl_device b) { return a.type == b.type && a.index == b.index; }

/* Memory shared by an array and its views. The bytes belong to the device's
** allocator; 'refcount' counts descriptors (arrays, views) that use it. 'version' counts
** writes into the bytes once they exist (gl_array_begin_write, PyTorch's version
** counter): autograd compares it to tell that an array it saved was changed since. */
typedef struct gl_storage {
  long refcount;
  void *data;
  size_t nbytes;
  gl_device device;
  bool inline_data;    /* cpu: header and bytes are one block (small arrays) */
  bool lua_owned;      /* header and bytes live inside a Lua userdata (the binding's light
                       ** arrays): Lua frees them; release only counts down, and whoever
                       ** retains it must keep that userdata alive (gl_lua_owned_retains) */
  uint64_t version;    /* counts writes into the storage (autograd's check of saved arrays) */
  const char *writer;  /* the op that wrote it last (a name that lives as long as the op), or NULL */
} gl_storage;

typedef struct gl_array {
  gl_storage *storage;               /* NULL: closed (or not yet made) */
  int64_t offset;                    /* elements from storage->data */
  int64_t size;                      /* product of shape */
  int64_t shape[GL_MAXDIMS];
  int64_t strides[GL_MAXDIMS];       /* elements; 0 on broadcast axes */
  uint8_t ndim;
  uint8_t dtype;                     /* gl_dtype */
  uint8_t lua_ref;                   /* the storage is lua_owned (a light array's, or a view of
                                     ** one): releasing the descriptor never touches it, so a
                                     ** view finalised after the bytes' userdata is safe */
} gl_array;

/* Storage is made and freed by the device's backend (gl_storage_new/release in
** backend.h); the core only counts references. */
/* Retains of lua_owned storage on this thread, ever: the binding compares it around an op
** to learn, for one load, whether the op made a view of such an array (which must then
** anchor the userdata that holds the bytes; see src/lua/larray.c). */
extern _Thread_local unsigned long gl_lua_owned_retains;
static inline void gl_storage_retain(gl_storage *s) {
  s->refcount++;
  if (s->lua_owned) gl_lua_owned_retains++;
}

/* ---- descriptors --------------------------------------------------------------- */

/* Validates a shape (non-negative, ndim <= GL_MAXDIMS, product <= GL_MAXSIZE) and
** stores its element count in *size. For shapes of no dtype yet (file headers); with a
** dtype, gl_shape_size (checked.h) says which in its message. */
gl_status gl_shape_check(int ndim, const int64_t *shape, int64_t *size);

/* Fills shape/contiguous strides/size of 'a' (no storage), after checking that an array
** of that shape and dtype could exist: count and bytes within checked.h's limits. */
gl_status gl_array_init(gl_array *a, gl_dtype dt, int ndim, const int64_t *shape);

/* gl_array_init for the shape of an existing array 'like', without the checks: dt must
** be no wider than like's dtype (then the bytes are within the limits like's are). */
void gl_array_init_like(gl_array *a, gl_dtype dt, const gl_array *like);

/* Makes 'dst' a view sharing src's storage (retains it). dst must be closed. */
void gl_array_view_of(gl_array *dst, const gl_array *src);

static inline gl_device gl_array_device(const gl_array *a) { return a->storage->device; }
static inline size_t gl_array_itemsize(const gl_array *a) { return gl_dtypes[a->dtype].size; }
static inline void *gl_array_data(const gl_array *a) {
  return (char *)a->storage->data + a->offset * (int64_t)gl_dtypes[a->dtype].size;
}
bool gl_array_is_contiguous(const gl_array *a);   /* C order, no gaps */
void gl_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);

/* Whether two different indices of 'a' may name the same element, as in a broadcast view
** (expand: an axis of extent > 1 and stride 0). Exact for every view gl_view_* can make;
** for strides no view makes it may answer true for an array without overlap (it asks that
** each axis, taken by growing |stride|, step past all the elements the smaller ones
** reach). A 0- or 1-element array never overlaps. */
bool gl_array_overlaps_self(const gl_array *a);

/* Writes into an existing array go through these, before they touch a byte:
** gl_array_writable refuses an array whose elements overlap (GL_EINVAL: a write would
** race and its result depend on the order of the threads; 'what' names it in the
** message, NULL for "array"), and gl_array_begin_write does the same check then counts
** the write in a->storage->version (shared with every view of the storage). Ops call
** begin_write once per write, after their own checks; writable alone serves where an op
** must refuse early but writes later (or not at all). */
gl_status gl_array_writable(const gl_array *a, const char *what);
gl_status gl_array_begin_write(const gl_array *a);

/* Formats "(3,4)" or "()" into buf (at least 8 + 21*ndim bytes); returns buf. */
const char *gl_shape_str(int ndim, const int64_t *shape, char *buf);
#define GL_SHAPE_BUFSZ (GL_MAXDIMS * 22 + 8)

/* ---- views (all O(ndim), no data touched) ------------------------------------- */

/* Normalises a 1-based axis (negatives count from the end) into 0..ndim-1. */
gl_status gl_axis_norm(int64_t axis, int ndim, int *out);

/* A view with the new shape if the strides allow one; GL_ENOTSUP if a copy is needed
** (reshape then copies), GL_EINVAL if the sizes differ. One entry may be -1. */
gl_status gl_view_reshape(gl_array *v, int ndim, const int64_t *shape);
gl_status gl_view_permute(gl_array *v, const int *perm);     /* perm: 0-based axes */
gl_status gl_view_transpose(gl_array *v, int a0, int a1);    /* 0-based axes */
gl_status gl_view_squeeze(gl_array *v, int axis);            /* -1: all size-1 axes */
gl_status gl_view_unsqueeze(gl_array *v, int axis);          /* new axis at 0..ndim */
gl_status gl_view_expand(gl_array *v, int ndim, const int64_t *shape);
/* PyTorch's unfold along 0-based 'axis': the windows of 'size' elements every 'step' on
** axis, each window along a new last axis. */
gl_status gl_view_unfold(gl_array *v, int axis, int64_t size, int64_t step);
/* Keeps elements start, start+step, ... (count of them) along 0-based 'axis'. */
void gl_view_slice(gl_array *v, int axis, int64_t start, int64_t step, int64_t count);
/* Picks index i along 'axis' and drops the axis. */
void gl_view_select(gl_array *v, int axis, int64_t i);
/* A complex array as its parts: a new last axis of 2 (real, imaginary) in the float dtype
** of the parts (torch.view_as_real). */
gl_status gl_view_as_real(gl_array *v);
/* The inverse: a float32/float64 array whose last axis is 2 with stride 1, its other
** strides and offset even (a whole complex element each), as complex64/complex128. */
gl_status gl_view_as_complex(gl_array *v);
/* One part of a complex array (part 0 the real parts, 1 the imaginary ones) as a float
** array of the same shape: NumPy's x.real and x.imag. */
gl_status gl_view_part(gl_array *v, int part);

/* ---- broadcasting ------------------------------------------------------------- */

/* NumPy broadcasting of two shapes; message names both shapes on failure. */
gl_status gl_broadcast_shapes(int na, const int64_t *sa, int nb, const int64_t *sb,
                              int *nout, int64_t *out);

#endif
