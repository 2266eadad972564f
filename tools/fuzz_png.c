/*
** fuzz_png.c — libFuzzer target for the PNG decoder (src/core/png.c over libpng16, opened
** with dlopen): every input either fails with a status or gives h * w * channels bytes
** of pixels, all readable, within the decoder's limits. `make fuzz` builds and runs it.
*/
#include <stdlib.h>
#include "core/png.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gl_png_image img;
  if (gl_png_decode(data, size, &img) != GL_OK) {
    if (img.pixels != NULL) abort();                  /* a failure holds nothing */
    return 0;
  }
  if (img.h < 1 || img.w < 1 || img.h > GL_PNG_MAX_SIDE || img.w > GL_PNG_MAX_SIDE || img.channels < 1 ||
      img.channels > 4)
    abort();
  size_t n = (size_t)img.h * (size_t)img.w * (size_t)img.channels;
  if (n > GL_PNG_MAX_BYTES) abort();
  volatile unsigned sum = 0;
  for (size_t i = 0; i < n; i++) sum += img.pixels[i];   /* every byte is there (ASan) */
  gl_png_free(&img);
  return 0;
}
