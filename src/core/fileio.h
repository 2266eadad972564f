/*
** fileio.h — what every file format shares: opening a file for reading only when it is
** a regular file, reading a whole file as one bounded buffer (parsers then can never
** read past it), writing a file atomically (a temporary beside it, fsync, rename), and
** byte swapping. Every loader and saver goes through these: none opens a path itself.
**
** Plain C, no Lua. Failures return GL_EIO with a message that names the fault but not
** the path (the caller adds "'path': ").
*/
#ifndef GL_FILEIO_H
#define GL_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "status.h"

/* Opens 'path' read-only, refusing anything but a regular file (a FIFO, a directory, a
** device, a socket: "not a regular file (a FIFO)") before a read could block or never
** end. A FIFO's open() itself blocks until a writer comes, so the path is stat'ed first
** and then opened O_NONBLOCK (which also keeps a read of a /proc file that waits, such
** as /proc/kmsg, from blocking), and the descriptor is checked again: the file read is
** the file checked. *fd (O_CLOEXEC) and the size stat reports (0 for /proc files). */
gl_status gl_open_regular(const char *path, int *fd, uint64_t *size);

/* A file's bytes: data[0 .. len). An empty file has len 0 and a non-NULL data. A file
** whose size stat gives (a /proc file reports 0) or that cannot be mapped is read to
** its end into memory instead of mapped. */
typedef struct gl_mapfile {
  const uint8_t *data;
  size_t len;
  void *map;            /* mmap base or malloc'd block, NULL when nothing is held */
  bool heap;            /* map is malloc'd (read, not mapped) */
} gl_mapfile;

gl_status gl_map_file(const char *path, gl_mapfile *m);
void gl_unmap_file(gl_mapfile *m);          /* idempotent */

/* An atomic save: bytes go to "<target>.tmp-XXXXXX" in the target's directory; commit
** fsyncs and renames it over the target; abort (or any failed commit) removes it, so
** an existing file is never left half-written. The target is 'path' with symbolic links
** resolved (a save through a link writes the file it points to and keeps the link). An
** existing target must be a regular file (a directory, FIFO or device is refused, never
** replaced) and the new file gets its permission bits (and, where allowed, its owner);
** a new file gets 0666 & ~umask. A dangling link is refused. */
typedef struct gl_outfile {
  FILE *f;
  char *tmp;            /* malloc'd temporary name, NULL when closed */
  char *path;           /* malloc'd target name (links resolved) */
  uint64_t pos;         /* bytes written so far */
} gl_outfile;

gl_status gl_out_open(gl_outfile *o, const char *path);
gl_status gl_out_write(gl_outfile *o, const void *p, size_t n);
/* Overwrites n bytes at 'at' (< pos) and returns to the end: zip headers are patched. */
gl_status gl_out_patch(gl_outfile *o, uint64_t at, const void *p, size_t n);
gl_status gl_out_commit(gl_outfile *o);
void gl_out_abort(gl_outfile *o);           /* idempotent */

/* Reverses the bytes of each of n items of 'size' bytes (1, 2, 4 or 8). */
void gl_bswap(void *p, int64_t n, unsigned size);

/* Little-endian reads and writes of unaligned integers. */
static inline uint16_t gl_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t gl_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t gl_rd64(const uint8_t *p) { return gl_rd32(p) | (uint64_t)gl_rd32(p + 4) << 32; }
static inline void gl_wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void gl_wr32(uint8_t *p, uint32_t v) { gl_wr16(p, (uint16_t)v); gl_wr16(p + 2, (uint16_t)(v >> 16)); }
static inline void gl_wr64(uint8_t *p, uint64_t v) { gl_wr32(p, (uint32_t)v); gl_wr32(p + 4, (uint32_t)(v >> 32)); }

/* A cursor over a text header in memory (.npy's dict, .safetensors' JSON): p up to end. */
typedef struct gl_cursor { const char *p, *end; } gl_cursor;
static inline void gl_cursor_ws(gl_cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}
/* Past white space, the character ch: consumed (true) or not there (false). */
static inline bool gl_cursor_eat(gl_cursor *c, char ch) {
  gl_cursor_ws(c);
  if (c->p < c->end && *c->p == ch) { c->p++; return true; }
  return false;
}

#endif
