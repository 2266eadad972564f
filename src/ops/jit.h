/*
** jit.h — kernels compiled at run time (gpu.ElementwiseKernel, ReductionKernel, gpu.fuse):
** C source compiled by the system C compiler into a shared object, loaded with dlopen,
** and cached in memory and on disk under $XDG_CACHE_HOME/gpulua/kernels (default
** ~/.cache/gpulua/kernels), keyed by the source, the flags, the compiler and the CPU.
** The source is made by lua/gpu/kernel.lua; the launch is the backend's (jit_run).
*/
#ifndef GL_OPS_JIT_H
#define GL_OPS_JIT_H

#include "ops.h"

typedef struct gl_jit_module gl_jit_module;   /* lives as long as the process */

/* Where a module came from: compiled now, the disk cache, the memory cache. */
typedef enum gl_jit_origin { GL_JIT_COMPILED, GL_JIT_DISK, GL_JIT_MEMORY } gl_jit_origin;

typedef struct gl_jit_result {
  gl_jit_origin origin;
  double ms;            /* time spent in this call (compile, or load) */
  bool cached_on_disk;  /* false: the cache directory was refused or unusable (temp dir) */
  char *log;            /* malloc'd on a compile failure: the compiler's output and the
                        ** kernel's source with line numbers (the caller frees it) */
} gl_jit_result;

/* The kernel source 'src' (after the embedded prelude: kernels/half.h and
** kernels/jit_abi.h) compiled or found in a cache. Failures: GL_ENOTSUP when there is no
** compiler ("no C compiler: ..."), GL_EINVAL for a compile error (res->log holds it),
** GL_EIO for the file system. */
gl_status gl_jit_c_module(const char *src, gl_jit_module **out, gl_jit_result *res);

/* A symbol of the module, or NULL. */
void *gl_jit_symbol(gl_jit_module *m, const char *name);

/* The cache directory in use (for messages and specs): after a first gl_jit_c_module. */
gl_status gl_jit_cache_dir(char *buf, size_t len);

/* Runs a launch on dev's backend (GL_ENOTSUP where it has no jit_run). */
gl_status gl_op_jit_run(gl_device dev, const gl_jit_launch *l);

/* Compiles and launches CUDA source on dev (GL_ENOTSUP where it has no raw_launch). */
gl_status gl_op_raw_launch(gl_device dev, gl_raw_launch *l);

/* The compiler command ($CC, else cc). */
const char *gl_jit_compiler(void);

#endif
