/*
** cache.h — the disk caches: $XDG_CACHE_HOME/gpulua/<sub> (default ~/.cache/gpulua/<sub>),
** one folder per kind of content: "kernels" (src/ops/jit.c, jit_cuda.c: compiled kernels)
** and "fftw" (src/backend/cpu/cpu_fft.c: FFTW's wisdom). What is in them is loaded into
** this process (code, or plans), so a folder is used only when it and its parent are the
** user's and writable by no one else, and a file only when it is the user's, writable by
** no one else, and its seal holds.
**
** A sealed file is written under a temporary name ("tmp-...") with a trailer holding its
** size and content hash, fsynced, renamed, and the folder fsynced: a file cut short by a
** crash or a full disk is never read as whole. Temporaries a killed process left behind
** are removed by gl_cache_sweep once they are an hour old.
**
** Plain C, no Lua.
*/
#ifndef GL_CACHE_H
#define GL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "status.h"

/* The folder of the cache <sub> (GL_EIO when neither XDG_CACHE_HOME nor HOME is set). */
gl_status gl_cache_path(const char *sub, char *buf, size_t len);

/* That folder, made (0700) when missing; false when it or its parent is not private. */
bool gl_cache_open(const char *sub, char *dir, size_t len);

/* Removes the temporaries of ours in dir older than an hour. */
void gl_cache_sweep(const char *dir);

/* A regular file of ours that no one else may write. */
bool gl_cache_private_file(const char *path);

/* FNV-1a, 64 bits, of s[0 .. n) from the state h. */
uint64_t gl_cache_fnv1a(uint64_t h, const char *s, size_t n);

/* A 128-bit hash of a then b, as 32 hex digits (FNV-1a twice, with two seeds). */
void gl_cache_hash(const char *a, size_t na, const char *b, size_t nb, char hex[33]);

/* The CPU's identity (model name and flags) as a hash: for what is only good on this kind
** of CPU. */
uint64_t gl_cache_cpu_hash(void);

/* store writes 'body' sealed at path (a temporary in dir first); read_sealed gives the
** body (malloc'd, NUL-terminated, *n bytes) of a private file whose seal holds, else
** false. */
gl_status gl_cache_store(const char *dir, const char *path, const void *body, size_t n);
bool gl_cache_read_sealed(const char *path, char **body, size_t *n);

#endif
