/*
** jit.h — kernels compiled at run time (gpu.ElementwiseKernel, ReductionKernel, gpu.fuse):
** C source compiled by the system C compiler into a shared object, loaded with dlopen,
** and cached in memory and on disk under $XDG_CACHE_HOME/gpulua/kernels (default
** ~/.cache/gpulua/kernels), keyed by the preprocessed source (every header it includes),
** the flags, the compiler and the CPU.
** The source is made by lua/gpu/kernel.lua; the launch is the backend's (jit_run).
*/
#ifndef GL_OPS_JIT_H
#define GL_OPS_JIT_H

#include "ops.h"
#include "../core/cache.h"

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

/* Compiles (cached as gl_jit_cuda_module_get) and launches CUDA source on dev
** (GL_ENOTSUP where the device has no run-time compiler: the cpu). jit_cuda.c. */
gl_status gl_op_raw_launch(gl_device dev, gl_raw_launch *l);

/* CUDA source (after the embedded CUDA prelude: kernels/jit_cuda.h and the headers of
** the C prelude) compiled by the device backend's run-time compiler (NVRTC) for sm_<arch>,
** or found in the memory or disk cache; without 'prelude' (RawKernel) src alone, (<cache>/<key>.cubin, the key text stored in the
** file and compared). Failures as gl_jit_c_module; GL_ENOTSUP when NVRTC cannot be loaded
** or the build has no CUDA. jit_cuda.c. */
typedef struct gl_jit_cuda_module gl_jit_cuda_module;   /* lives as long as the process */
gl_status gl_jit_cuda_module_get(const char *src, bool prelude, int arch, gl_jit_cuda_module **out, gl_jit_result *res);
/* The image's size in bytes, whether it is PTX, and the key text (for specs). */
size_t gl_jit_cuda_image(const gl_jit_cuda_module *m, bool *ptx, const char **key);
/* The architecture of dev (major * 10 + minor). */
gl_status gl_jit_cuda_arch(gl_device dev, int *arch);
/* Launches the function 'name' of m on dev: grid x block threads, args[k] points at the
** value of parameter k (the module is loaded on dev at its first launch there). */
gl_status gl_jit_cuda_launch(gl_device dev, gl_jit_cuda_module *m, const char *name, const unsigned grid[3],
                             const unsigned block[3], unsigned shared_mem, void **args);
/* NVRTC's version, "major.minor" (loads NVRTC) */
gl_status gl_jit_nvrtc_version(int *major, int *minor);

/* Shared by jit.c and jit_cuda.c: the kernels' cache directory (core/cache.h's "kernels",
** stale temporaries swept at the first use; false when it is not private to the user),
** the numbered-source error log, a clock. */
bool gl_jit_open_cache(char *dir, size_t len);
char *gl_jit_error_log(const char *log, const char *src);
double gl_jit_now_ms(void);

/* The compiler command ($CC, else cc). */
const char *gl_jit_compiler(void);

#endif
