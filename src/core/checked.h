/*
** checked.h — size arithmetic that cannot wrap.
**
** Every element count (a product of extents), every byte size (a count times an item
** size), every sum of extents and every count taken from a range goes through these.
** An int64 product or sum that would wrap is never formed: the result is a failure with
** one message, "array is too big (N elements of DTYPE)", where N is the exact count while
** it fits int64 and "about 1.21e+24" past that. The Lua layer prefixes the function's name.
**
** Limits. An array holds at most GL_MAXSIZE elements, and a contiguous one at most
** GL_MAXBYTES bytes; both are 2^62. So element offsets times item sizes fit int64, and an
** allocator may round a request up (to a size class, a segment) without wrapping. Views
** (expand of one element to 2^62 elements) need no bytes and are bound by GL_MAXSIZE only.
**
** The failures are GL_ETOOBIG. Not GL_ENOMEM: no freed cache or garbage collection makes
** such an array fit, so the out-of-memory ritual (empty caches, full collection, retry)
** is skipped, and nothing is allocated first. Not GL_EINVAL: the result is at fault, not
** one argument, so the Lua layer reads "matmul: array is too big (...)", never "bad
** argument #2 to 'matmul' (...)". The functions are implemented in array.c.
*/
#ifndef GL_CHECKED_H
#define GL_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dtype.h"
#include "status.h"

#define GL_MAXSIZE ((int64_t)1 << 62)      /* elements of an array or a view */
#define GL_MAXBYTES ((int64_t)1 << 62)     /* bytes of a contiguous array */

/* True (and *r unspecified) when a + b or a * b does not fit int64. */
static inline bool gl_add_overflow(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline bool gl_mul_overflow(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }

/* The failure itself, for a count the caller worked out (a long double: exact for every
** int64 where it has a 64-bit mantissa or more, as on x86-64 and arm64, and it holds
** counts past int64 approximately). */
gl_status gl_too_big(long double n, gl_dtype dt);

/* The product of a shape's non-zero extents as a long double, for the message of a
** count that did not fit. */
long double gl_shape_count(int ndim, const int64_t *shape);

/* Element count of a shape (extents >= 0, checked by the caller), or gl_too_big when the
** product of its non-zero extents passes GL_MAXSIZE. A zero extent makes the count 0,
** but the other extents still count: contiguous strides are products of them. */
gl_status gl_shape_size(int ndim, const int64_t *shape, gl_dtype dt, int64_t *size);

/* Bytes of n elements of dt, or gl_too_big past GL_MAXSIZE elements or GL_MAXBYTES bytes. */
gl_status gl_nbytes(int64_t n, gl_dtype dt, size_t *nbytes);

/* Bytes of a contiguous array of this shape: the shape checked (ndim, extents >= 0,
** GL_EINVAL), then gl_shape_size and gl_nbytes. What an allocation, or a host buffer
** for an array's elements, asks first. */
gl_status gl_shape_nbytes(int ndim, const int64_t *shape, gl_dtype dt, size_t *nbytes);

#endif
