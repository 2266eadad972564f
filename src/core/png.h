/*
** png.h — PNG images through libpng, loaded on first use.
**
** libpng16 is opened with dlopen the first time an image is saved or loaded (as
** OpenBLAS is, src/backend/cpu/cpu_blas.c), so gpu.so gains no link dependency and
** start-up pays nothing for it; no libpng header is needed to build. A missing library
** is GL_ENOTSUP with a message naming the Debian package (libpng16-16).
**
** libpng reports errors by longjmp out of its own frames. Here the jump lands in the
** function that called libpng, which frees what it holds and returns a gl_status: no
** Lua error ever crosses libpng's frames (the Lua layer raises after these return).
**
** Pixels are 8-bit, interleaved, row-major: (height, width, channels) with channels
** 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA).
*/
#ifndef GL_PNG_H
#define GL_PNG_H

#include <stddef.h>
#include <stdint.h>
#include "fileio.h"
#include "status.h"

/* The widest and tallest image either direction accepts (PNG's own limit is 2^31 - 1;
** this one keeps every row's byte count and every product well inside int64). */
#define GL_PNG_MAX_SIDE 1000000
/* The most bytes of pixels a load may produce (after palette and bit-depth expansion). */
#define GL_PNG_MAX_BYTES ((uint64_t)1 << 31)

/* Writes h x w x channels 8-bit pixels as one PNG through o (the caller opens and
** commits it). GL_EINVAL for a bad size or channel count, GL_ENOTSUP without libpng,
** GL_EIO for a write or libpng failure. */
gl_status gl_png_encode(gl_outfile *o, const uint8_t *pixels, int64_t h, int64_t w, int channels);

/* A decoded image: pixels is malloc'd (free it with gl_png_free), h*w*channels bytes. */
typedef struct gl_png_image {
  uint8_t *pixels;
  int64_t h, w;
  int channels;
} gl_png_image;

/* Decodes buf[0 .. len) as one PNG: palette images become RGB (or RGBA with a tRNS
** chunk), gray below 8 bits becomes 8-bit, 16-bit samples keep their high byte.
** Not a PNG, a truncated or corrupt file, a size past the limits above or past what
** the compressed bytes could hold (deflate expands at most ~1032:1, so a tiny file
** claiming a huge image is refused before anything is allocated) are GL_EIO. */
gl_status gl_png_decode(const uint8_t *buf, size_t len, gl_png_image *out);
void gl_png_free(gl_png_image *img);        /* idempotent */

#endif
