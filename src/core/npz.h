/*
** npz.h — the zip container of NumPy's .npz (np.savez / np.savez_compressed): reading
** the central directory of a bounded buffer, extracting stored and deflated members
** (zlib), and writing an archive member by member. Zip64 is read and written.
**
** A member's uncompressed size is trusted only as far as the file can justify it: a
** deflated member may claim at most 1032 times its compressed size (deflate's limit),
** and what it inflates to must match the claimed size and CRC-32 exactly.
*/
#ifndef GL_NPZ_H
#define GL_NPZ_H

#include "fileio.h"

typedef struct gl_zip_member {
  char *name;               /* malloc'd, NUL-terminated */
  uint16_t method;          /* 0 stored, 8 deflated */
  uint32_t crc;
  uint64_t csize, usize;
  uint64_t data_off;        /* of the member's bytes in the archive */
} gl_zip_member;

typedef struct gl_zip {
  gl_zip_member *m;
  size_t n;
} gl_zip;

/* Reads the member list of buf[0 .. len). On failure *z is empty (nothing to free). */
gl_status gl_zip_open(const uint8_t *buf, size_t len, gl_zip *z);
void gl_zip_free(gl_zip *z);                       /* idempotent */

/* The bytes of a member: stored ones point into buf (*owned NULL); deflated ones are
** inflated into a malloc'd block returned in *owned (the caller frees it). */
gl_status gl_zip_extract(const uint8_t *buf, size_t len, const gl_zip_member *m,
                         const uint8_t **data, size_t *n, void **owned);

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct gl_zipw_entry {
  char *name;
  uint16_t method;
  uint32_t crc;
  uint64_t csize, usize, off;
} gl_zipw_entry;

typedef struct gl_zipw {
  gl_outfile *out;
  gl_zipw_entry *e;
  size_t n, cap;
} gl_zipw;

void gl_zipw_init(gl_zipw *w, gl_outfile *out);
/* One member whose bytes are head[0 .. hlen) followed by data[0 .. dlen). */
gl_status gl_zipw_add(gl_zipw *w, const char *name, bool deflate, const void *head, size_t hlen,
                      const void *data, size_t dlen);
/* The central directory and end records; then commit the outfile. */
gl_status gl_zipw_finish(gl_zipw *w);
void gl_zipw_free(gl_zipw *w);                     /* idempotent */

#endif
