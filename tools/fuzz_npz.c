/*
** fuzz_npz.c — libFuzzer target for the zip reader and inflater (src/core/npz.c) and
** the .npy parser behind them, as gpu.loadz uses them.
*/
#include <stdlib.h>
#include "core/npz.h"
#include "core/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gl_zip z;
  if (gl_zip_open(data, size, &z) != GL_OK) return 0;
  for (size_t i = 0; i < z.n; i++) {
    const uint8_t *p;
    size_t n;
    void *owned;
    if (gl_zip_extract(data, size, &z.m[i], &p, &n, &owned) != GL_OK) continue;
    if (n > size * 1032 + 64) abort();                /* never more than deflate allows */
    gl_npy_info info;
    (void)gl_npy_parse(p, n, &info);
    free(owned);
  }
  gl_zip_free(&z);
  return 0;
}
