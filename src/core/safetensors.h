/*
** safetensors.h — the safetensors format (Hugging Face): an 8-byte little-endian header
** length, a JSON header {"name": {"dtype", "shape", "data_offsets"}, "__metadata__":
** {string: string}}, then the tensors' bytes. The JSON reader is our own, bounded in
** depth and length; the checks are those of the reference implementation: offsets
** inside the data, sizes matching shape and dtype, tensors tiling the data buffer
** exactly with no gap and no overlap.
*/
#ifndef GL_SAFETENSORS_H
#define GL_SAFETENSORS_H

#include "array.h"

/* The reference implementation's header limit. */
#define GL_ST_MAX_HEADER 100000000u

typedef struct gl_st_tensor {
  char *name;                     /* malloc'd (parse) or borrowed (header writing) */
  gl_dtype dtype;
  int ndim;
  int64_t shape[GL_MAXDIMS];
  int64_t size;
  uint64_t begin, end;            /* byte offsets into the data buffer */
} gl_st_tensor;

typedef struct gl_st_meta { char *key, *value; } gl_st_meta;

typedef struct gl_safetensors {
  gl_st_tensor *t;                /* in header order */
  size_t nt;
  gl_st_meta *meta;
  size_t nmeta;
  const uint8_t *data;            /* the data buffer, inside the parsed bytes */
  size_t data_len;
} gl_safetensors;

/* Parses buf[0 .. len) as a whole file. On failure *out is empty (nothing to free). */
gl_status gl_st_parse(const uint8_t *buf, size_t len, gl_safetensors *out);
void gl_st_free(gl_safetensors *s);                /* idempotent */

/* The file's first part for tensors t[0 .. nt) laid out in that order (their begin/end
** are set here) and metadata m[0 .. nm): 8-byte length + JSON padded with spaces to a
** multiple of 8. Returns a malloc'd block in *out (the caller frees it). */
gl_status gl_st_header(uint8_t **out, size_t *len, gl_st_tensor *t, size_t nt,
                       const gl_st_meta *m, size_t nm);

#endif
