/*
** fuzz_text.c — libFuzzer target for loadtxt's parser (src/core/text.c). The first byte
** picks the options (delimiter, comment, skip, dtype); the rest is the file, and also
** a savetxt format string (user input that reaches snprintf).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t k = data[0];
  static const char delims[4] = { 0, ',', ';', '\t' };
  gl_text_opts o = { delims[k & 3], (k & 4) ? '#' : 0, (k >> 3) & 3 };
  gl_dtype dt = (gl_dtype)((k >> 5) % GL_NDTYPE);
  void *out;
  int ndim;
  int64_t shape[2];
  if (gl_text_parse(data + 1, size - 1, &o, dt, &out, &ndim, shape) == GL_OK) {
    int64_t n = ndim == 0 ? 1 : ndim == 1 ? shape[0] : shape[0] * shape[1];
    if ((uint64_t)n > size) abort();
    free(out);
  }
  /* the same bytes as a savetxt format: what gl_text_fmt accepts must be safe for snprintf */
  char src[256], fmt[300], buf[512];
  size_t n = size - 1 < sizeof src - 1 ? size - 1 : sizeof src - 1;
  memcpy(src, data + 1, n);
  src[n] = 0;
  bool is_int;
  if (gl_text_fmt(src, fmt, sizeof fmt, &is_int) == GL_OK) {
    if (is_int) snprintf(buf, sizeof buf, fmt, -123456789012LL);
    else snprintf(buf, sizeof buf, fmt, -1.5e300);
  }
  return 0;
}
