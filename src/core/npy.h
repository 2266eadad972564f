/*
** npy.h — NumPy's .npy format (versions 1, 2 and 3): parsing a header out of a bounded
** buffer, and writing a header byte-identical to np.save's.
**
** bfloat16 has no NumPy descr: gpulua writes '<V2' (2-byte void), which is what NumPy
** itself writes for ml_dtypes.bfloat16 arrays, and reads any 2-byte void as bfloat16.
** NumPy loads such a file as void bytes (view it with ml_dtypes.bfloat16 or '<u2').
*/
#ifndef GL_NPY_H
#define GL_NPY_H

#include "array.h"

typedef struct gl_npy_info {
  gl_dtype dtype;
  int ndim;
  int64_t shape[GL_MAXDIMS];
  int64_t size;               /* product of shape */
  bool fortran;               /* data in Fortran (column-major) order */
  bool swap;                  /* data is big-endian: swap each element on load */
  const uint8_t *data;        /* size * itemsize bytes, inside the parsed buffer */
  size_t nbytes;
  size_t data_offset;         /* where data starts in the buffer */
} gl_npy_info;

/* Longest header the parser accepts (NumPy's own default limit is 10000). */
#define GL_NPY_MAX_HEADER 65536
/* Longest header gl_npy_header writes (8 dims, 64-byte aligned). */
#define GL_NPY_HEADER_BUFSZ 512

/* Parses buf[0 .. len) as a whole .npy file: the data must be exactly what the header
** promises (truncated or trailing bytes are errors). GL_EIO with the fault otherwise. */
gl_status gl_npy_parse(const uint8_t *buf, size_t len, gl_npy_info *out);

/* Parses only the header (the buffer may end after it): out->data stays NULL and
** out->nbytes says how many data bytes must follow at out->data_offset. */
gl_status gl_npy_parse_header(const uint8_t *buf, size_t len, gl_npy_info *out);

/* np.save's header (version 1.0, C order) for a contiguous array: writes *len bytes
** into buf (GL_NPY_HEADER_BUFSZ bytes), data then follows at offset *len. */
gl_status gl_npy_header(char *buf, size_t *len, gl_dtype dt, int ndim, const int64_t *shape);

#endif
