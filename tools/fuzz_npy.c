/*
** fuzz_npy.c — libFuzzer target for the .npy parser (src/core/npy.c), with what the Lua
** layer then does to the bytes (copy, byte swap). `make fuzz` builds and runs it.
*/
#include <stdlib.h>
#include <string.h>
#include "core/npy.h"
#include "core/fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gl_npy_info info;
  if (gl_npy_parse(data, size, &info) != GL_OK) return 0;
  if (info.nbytes > ((size_t)1 << 28)) abort();     /* cannot happen: bounded by size */
  void *copy = malloc(info.nbytes + 1);
  if (copy == NULL) return 0;
  memcpy(copy, info.data, info.nbytes);
  if (info.swap) gl_bswap(copy, info.size, gl_dtypes[info.dtype].size);
  free(copy);
  char hdr[GL_NPY_HEADER_BUFSZ];
  size_t hlen;
  if (gl_npy_header(hdr, &hlen, info.dtype, info.ndim, info.shape) != GL_OK) abort();
  gl_npy_info again;                                  /* what we write parses back the same */
  if (gl_npy_parse_header((const uint8_t *)hdr, hlen, &again) != GL_OK || again.ndim != info.ndim ||
      again.dtype != info.dtype || memcmp(again.shape, info.shape, sizeof(int64_t) * (size_t)info.ndim) != 0)
    abort();
  return 0;
}
