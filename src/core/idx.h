/*
** idx.h — the IDX format of (Fashion-)MNIST (big-endian header: two zero bytes, a type
** code, the number of dimensions, then one uint32 per dimension; then the data in C
** order, big-endian), plain or gzip-compressed (read through zlib, which takes either).
**
** Reading is two calls so the caller can allocate between them without holding a file:
** gl_idx_header reads and checks the header (sizes are checked before anything is
** allocated), gl_idx_read reopens the file, checks the header is the same, and reads
** exactly the promised bytes into 'dst' (truncated or trailing data are errors).
** Files are opened by gl_open_regular (fileio.h): only a regular file is read. Messages
** name the fault, not the path (the caller adds it).
*/
#ifndef GL_IDX_H
#define GL_IDX_H

#include "array.h"

typedef struct gl_idx_info {
  gl_dtype dtype;              /* uint8, int32, float32 or float64 */
  int ndim;
  int64_t shape[GL_MAXDIMS];
  int64_t size;                /* product of shape */
  size_t nbytes;               /* size * itemsize */
  size_t header_bytes;         /* 4 + 4 * ndim */
} gl_idx_info;

/* Largest data an IDX file may promise (the MNIST training images are 47 MB). */
#define GL_IDX_MAX_BYTES ((size_t)1 << 33)

/* Parses an IDX header held in buf[0 .. len). GL_EIO with the fault otherwise. */
gl_status gl_idx_parse_header(const uint8_t *buf, size_t len, gl_idx_info *out);

/* Reads the header of the file at 'path' (gzip or plain). */
gl_status gl_idx_header(const char *path, gl_idx_info *out);

/* Reads the data of the file at 'path' into dst (info->nbytes bytes, native byte
** order); 'info' is what gl_idx_header returned. */
gl_status gl_idx_read(const char *path, const gl_idx_info *info, void *dst);

/* Files of fixed-size records and nothing else (CIFAR-10's binary batches: 3073 bytes
** each). gl_records_count checks the file holds a whole, nonzero number of 'record'-byte
** records (a truncated or padded file is refused, naming what is over) and gives it;
** gl_records_read reads its nbytes (count * record) into dst, checking the size again. */
gl_status gl_records_count(const char *path, size_t record, int64_t *count);
gl_status gl_records_read(const char *path, size_t nbytes, void *dst);

#endif
