/*
** png.c — PNG encode and decode over libpng16, opened with dlopen on first use (see png.h).
**
** The few libpng entry points are declared here (its structs as opaque pointers), so no
** png.h is needed to build. Each call keeps its state in a malloc'd context: libpng's
** errors longjmp back into the function that called it, and what that function must free
** then (the libpng structs, the pixels, the row table) is read from the context, never
** from a local changed after setjmp (whose value a longjmp leaves indeterminate).
*/
#include "png.h"
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "checked.h"

/* ---- libpng, resolved by name ------------------------------------------------------------ */

typedef void (*png_msg_fn)(void *png, const char *msg);
typedef void (*png_rw_fn)(void *png, uint8_t *data, size_t n);
typedef void (*png_flush_fn)(void *png);

static struct {
  const char *(*get_libpng_ver)(const void *png);
  void *(*create_write_struct)(const char *ver, void *err_ptr, png_msg_fn err, png_msg_fn warn);
  void *(*create_read_struct)(const char *ver, void *err_ptr, png_msg_fn err, png_msg_fn warn);
  void *(*create_info_struct)(const void *png);
  void (*destroy_write_struct)(void **png, void **info);
  void (*destroy_read_struct)(void **png, void **info, void **end_info);
  void (*set_write_fn)(void *png, void *io, png_rw_fn write, png_flush_fn flush);
  void (*set_read_fn)(void *png, void *io, png_rw_fn read);
  void *(*get_io_ptr)(const void *png);
  void *(*get_error_ptr)(const void *png);
  void (*error)(const void *png, const char *msg);
  void (*set_IHDR)(const void *png, void *info, uint32_t w, uint32_t h, int depth, int color, int interlace,
                   int compression, int filter);
  void (*write_info)(void *png, const void *info);
  void (*write_row)(void *png, const uint8_t *row);
  void (*write_end)(void *png, void *info);
  void (*read_info)(void *png, void *info);
  uint32_t (*get_IHDR)(const void *png, const void *info, uint32_t *w, uint32_t *h, int *depth, int *color,
                       int *interlace, int *compression, int *filter);
  uint32_t (*get_valid)(const void *png, const void *info, uint32_t flag);
  void (*set_expand)(void *png);
  void (*set_strip_16)(void *png);
  int (*set_interlace_handling)(void *png);
  void (*set_user_limits)(void *png, uint32_t w, uint32_t h);
  void (*set_chunk_malloc_max)(void *png, size_t max);
  void (*set_keep_unknown_chunks)(void *png, int keep, const uint8_t *list, int n);
  void (*read_update_info)(void *png, void *info);
  uint8_t (*get_channels)(const void *png, const void *info);
  size_t (*get_rowbytes)(const void *png, const void *info);
  void (*read_image)(void *png, uint8_t **rows);
  void (*read_end)(void *png, void *info);
} lib;

#define COLOR_GRAY 0
#define COLOR_RGB 2
#define COLOR_PALETTE 3
#define COLOR_GRAY_ALPHA 4
#define COLOR_RGBA 6
#define INFO_tRNS 0x0010u
#define HANDLE_CHUNK_NEVER 1
#define PNG_CHUNK_MAX ((size_t)8 << 20)   /* the most one ancillary chunk may take (libpng's own builds: 8 MB) */

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static const char *lib_version;     /* non-NULL once every symbol resolved */
static char lib_err[256];

static void lib_load(void) {
  void *h = dlopen("libpng16.so.16", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(lib_err, sizeof lib_err, "PNG needs libpng and it could not be loaded (%s; install the Debian "
             "package libpng16-16)", dlerror());
    return;
  }
  struct { void **slot; const char *name; } syms[] = {
#define SYM(f) { (void **)&lib.f, "png_" #f }
    SYM(get_libpng_ver), SYM(create_write_struct), SYM(create_read_struct), SYM(create_info_struct),
    SYM(destroy_write_struct), SYM(destroy_read_struct), SYM(set_write_fn), SYM(set_read_fn),
    SYM(get_io_ptr), SYM(get_error_ptr), SYM(error), SYM(set_IHDR), SYM(write_info), SYM(write_row),
    SYM(write_end), SYM(read_info), SYM(get_IHDR), SYM(get_valid), SYM(set_expand), SYM(set_strip_16),
    SYM(set_interlace_handling), SYM(set_user_limits), SYM(set_chunk_malloc_max),
    SYM(set_keep_unknown_chunks), SYM(read_update_info), SYM(get_channels),
    SYM(get_rowbytes), SYM(read_image), SYM(read_end),
#undef SYM
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(h, syms[i].name);
    if (*syms[i].slot == NULL) {
      snprintf(lib_err, sizeof lib_err, "PNG needs libpng16 and libpng16.so.16 lacks %s (install the "
               "Debian package libpng16-16)", syms[i].name);
      dlclose(h);
      return;
    }
  }
  lib_version = lib.get_libpng_ver(NULL);
}

static gl_status lib_get(void) {
  pthread_once(&lib_once, lib_load);
  if (lib_version == NULL) return gl_fail(GL_ENOTSUP, "%s", lib_err);
  return GL_OK;
}

/* ---- one call's state -------------------------------------------------------------------- */

typedef struct png_ctx {
  jmp_buf jb;
  char msg[200];              /* libpng's error, or ours from the I/O callbacks */
  void *png, *info;
  uint8_t *pixels;
  uint8_t **rows;
  gl_outfile *out;            /* encode */
  const uint8_t *buf;         /* decode: the file's bytes and the read cursor */
  size_t len, pos;
} png_ctx;

static void on_error(void *png, const char *msg) {
  png_ctx *c = lib.get_error_ptr(png);
  if (c->msg[0] == '\0') snprintf(c->msg, sizeof c->msg, "%s", msg);
  longjmp(c->jb, 1);
}

static void on_warning(void *png, const char *msg) { (void)png; (void)msg; }

/* Keeps a callback's own message (gl_errmsg's fault, "truncated file") ahead of
** libpng's wording of it, then lets libpng unwind. */
static void fail_io(void *png, png_ctx *c, const char *why) {
  snprintf(c->msg, sizeof c->msg, "%s", why);
  lib.error(png, why);
}

static void write_cb(void *png, uint8_t *data, size_t n) {
  png_ctx *c = lib.get_io_ptr(png);
  if (gl_out_write(c->out, data, n) != GL_OK) fail_io(png, c, gl_errmsg());
}

static void flush_cb(void *png) { (void)png; }

static void read_cb(void *png, uint8_t *data, size_t n) {
  png_ctx *c = lib.get_io_ptr(png);
  if (n > c->len - c->pos) fail_io(png, c, "truncated file");
  memcpy(data, c->buf + c->pos, n);
  c->pos += n;
}

/* ---- encode ------------------------------------------------------------------------------ */

static const int color_of_channels[5] = { -1, COLOR_GRAY, COLOR_GRAY_ALPHA, COLOR_RGB, COLOR_RGBA };

gl_status gl_png_encode(gl_outfile *o, const uint8_t *pixels, int64_t h, int64_t w, int channels) {
  if (channels < 1 || channels > 4) return gl_fail(GL_EINVAL, "an image has 1, 2, 3 or 4 channels, not %d", channels);
  if (h < 1 || w < 1 || h > GL_PNG_MAX_SIDE || w > GL_PNG_MAX_SIDE)
    return gl_fail(GL_EINVAL, "an image is 1 to %d pixels high and wide, not %lld x %lld", GL_PNG_MAX_SIDE,
                   (long long)h, (long long)w);
  GL_TRY(lib_get());
  png_ctx *c = calloc(1, sizeof *c);
  if (c == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  c->out = o;
  gl_status st = GL_OK;
  if (setjmp(c->jb)) {
    st = gl_fail(GL_EIO, "%s", c->msg[0] ? c->msg : "libpng failed");
  } else {
    c->png = lib.create_write_struct(lib_version, c, on_error, on_warning);
    if (c->png != NULL) c->info = lib.create_info_struct(c->png);
    if (c->png == NULL || c->info == NULL) {
      st = gl_fail(GL_ENOMEM, "out of memory (libpng)");
    } else {
      lib.set_write_fn(c->png, c, write_cb, flush_cb);
      lib.set_IHDR(c->png, c->info, (uint32_t)w, (uint32_t)h, 8, color_of_channels[channels], 0, 0, 0);
      lib.write_info(c->png, c->info);
      size_t stride = (size_t)w * (size_t)channels;
      for (int64_t y = 0; y < h; y++) lib.write_row(c->png, pixels + (size_t)y * stride);
      lib.write_end(c->png, c->info);
    }
  }
  void *png = c->png, *info = c->info;
  if (png != NULL) lib.destroy_write_struct(&png, info ? &info : NULL);
  free(c);
  return st;
}

/* ---- decode ------------------------------------------------------------------------------ */

static const uint8_t png_signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

/* Samples per pixel as stored in the file, by color type (0 for a type PNG lacks). */
static int file_samples(int color) {
  switch (color) {
  case COLOR_GRAY: case COLOR_PALETTE: return 1;
  case COLOR_GRAY_ALPHA: return 2;
  case COLOR_RGB: return 3;
  case COLOR_RGBA: return 4;
  default: return 0;
  }
}

/* The header's promise checked against what len bytes of deflate could hold, and the
** decoded size against GL_PNG_MAX_BYTES, before anything the size of the image is
** allocated. */
static gl_status check_size(png_ctx *c, uint32_t w, uint32_t h, int depth, int color) {
  int samples = file_samples(color);
  if (samples == 0) return gl_fail(GL_EIO, "corrupt PNG (color type %d)", color);
  /* pixel bits per row, then bytes: w, h <= GL_PNG_MAX_SIDE, so no product wraps */
  uint64_t raw = (uint64_t)h * (((uint64_t)w * (uint64_t)samples * (uint64_t)depth + 7) / 8);
  if (raw > (uint64_t)c->len * 1032u + 4096u)
    return gl_fail(GL_EIO, "truncated or corrupt PNG (%u x %u pixels cannot come from %zu bytes)", w, h, c->len);
  return GL_OK;
}

gl_status gl_png_decode(const uint8_t *buf, size_t len, gl_png_image *out) {
  memset(out, 0, sizeof *out);
  if (len < sizeof png_signature || memcmp(buf, png_signature, sizeof png_signature) != 0)
    return gl_fail(GL_EIO, "not a PNG file (no PNG signature)");
  GL_TRY(lib_get());
  png_ctx *c = calloc(1, sizeof *c);
  if (c == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  c->buf = buf;
  c->len = len;
  gl_status st = GL_OK;
  if (setjmp(c->jb)) {
    st = gl_fail(GL_EIO, "corrupt PNG (%s)", c->msg[0] ? c->msg : "libpng failed");
    if (strcmp(c->msg, "truncated file") == 0) st = gl_fail(GL_EIO, "truncated PNG file");
  } else {
    c->png = lib.create_read_struct(lib_version, c, on_error, on_warning);
    if (c->png != NULL) c->info = lib.create_info_struct(c->png);
    if (c->png == NULL || c->info == NULL) {
      st = gl_fail(GL_ENOMEM, "out of memory (libpng)");
      goto done;
    }
    lib.set_read_fn(c->png, c, read_cb);
    lib.set_user_limits(c->png, GL_PNG_MAX_SIDE, GL_PNG_MAX_SIDE);
    /* only the pixels are read: every chunk but IHDR, PLTE, tRNS, IDAT and IEND is skipped
       unread (n < 0: known ones too), as libpng would otherwise malloc what a text, ICC or
       sPLT chunk's length says (up to 2 GiB, even past the malloc limit's warning) before
       finding the file too short; the limit still bounds the chunks that are kept */
    lib.set_keep_unknown_chunks(c->png, HANDLE_CHUNK_NEVER, NULL, -1);
    lib.set_chunk_malloc_max(c->png, PNG_CHUNK_MAX);
    lib.read_info(c->png, c->info);
    uint32_t w, h;
    int depth, color, interlace, comp, filter;
    lib.get_IHDR(c->png, c->info, &w, &h, &depth, &color, &interlace, &comp, &filter);
    if ((st = check_size(c, w, h, depth, color)) != GL_OK) goto done;
    /* everything to 8-bit gray, gray + alpha, RGB or RGBA */
    lib.set_expand(c->png);
    lib.set_strip_16(c->png);
    lib.set_interlace_handling(c->png);
    lib.read_update_info(c->png, c->info);
    int channels = lib.get_channels(c->png, c->info);
    size_t rowbytes = lib.get_rowbytes(c->png, c->info);
    if (channels < 1 || channels > 4 || rowbytes != (size_t)w * (size_t)channels) {
      st = gl_fail(GL_EIO, "corrupt PNG (%d channels, %zu bytes a row)", channels, rowbytes);
      goto done;
    }
    if ((uint64_t)rowbytes * h > GL_PNG_MAX_BYTES) {
      st = gl_fail(GL_EIO, "PNG image too big (%u x %u pixels of %d channels; at most %llu bytes)", w, h,
                   channels, (unsigned long long)GL_PNG_MAX_BYTES);
      goto done;
    }
    c->pixels = malloc(rowbytes * h);
    c->rows = malloc(sizeof *c->rows * h);
    if (c->pixels == NULL || c->rows == NULL) {
      st = gl_fail(GL_ENOMEM, "out of memory (a %u x %u image)", w, h);
      goto done;
    }
    for (uint32_t y = 0; y < h; y++) c->rows[y] = c->pixels + (size_t)y * rowbytes;
    lib.read_image(c->png, c->rows);
    lib.read_end(c->png, NULL);
    out->pixels = c->pixels;
    out->h = h;
    out->w = w;
    out->channels = channels;
    c->pixels = NULL;         /* now the caller's */
  }
done:;
  void *png = c->png, *info = c->info;
  if (png != NULL) lib.destroy_read_struct(&png, info ? &info : NULL, NULL);
  free(c->pixels);
  free(c->rows);
  free(c);
  return st;
}

void gl_png_free(gl_png_image *img) {
  free(img->pixels);
  img->pixels = NULL;
}
