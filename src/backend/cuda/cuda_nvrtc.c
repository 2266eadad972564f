/*
** cuda_nvrtc.c — CUDA source compiled at run time (gpu.RawKernel, gpu.RawModule): NVRTC
** (libnvrtc) compiles it for the device's own architecture into a cubin, the driver API
** (libcuda) loads it as a module and launches the kernel on the device's stream.
**
** Both libraries are opened with dlopen at the first RawKernel launch, like cuBLAS: a
** build with CUDA starts without them, and `gpulua -e ''` loads nothing. Compiled modules
** are cached in memory for the process, keyed by the source, the kernel's name, the
** device's architecture and NVRTC's version (the disk cache of the cpu's kernels is not
** used here yet). NOT RUN ON A GPU YET: no GPU was lent while this was written.
*/
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"

static struct {
  pthread_once_t once;
  bool ok;
  char why[256];
  __typeof__(nvrtcCreateProgram) *create;
  __typeof__(nvrtcCompileProgram) *compile;
  __typeof__(nvrtcGetProgramLogSize) *log_size;
  __typeof__(nvrtcGetProgramLog) *log;
  __typeof__(nvrtcGetCUBINSize) *cubin_size;
  __typeof__(nvrtcGetCUBIN) *cubin;
  __typeof__(nvrtcDestroyProgram) *destroy;
  __typeof__(nvrtcGetErrorString) *error_string;
  __typeof__(nvrtcVersion) *version;
  __typeof__(cuModuleLoadData) *module_load;
  __typeof__(cuModuleGetFunction) *get_function;
  __typeof__(cuLaunchKernel) *launch;
  __typeof__(cuGetErrorName) *error_name;
  int major, minor;
} rt = { .once = PTHREAD_ONCE_INIT };

/* dlsym returns void *; memcpy keeps the conversion to a function pointer defined */
static void sym(void *h, void *field, const char *name) {
  void *p = dlsym(h, name);
  memcpy(field, &p, sizeof p);
}

static void rt_load(void) {
  void *nv = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
  if (nv == NULL) nv = dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
  if (nv == NULL) {
    const char *e = dlerror();
    snprintf(rt.why, sizeof rt.why, "cannot load NVRTC (libnvrtc.so.13): %s", e ? e : "not found");
    return;
  }
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cu == NULL) {
    const char *e = dlerror();
    snprintf(rt.why, sizeof rt.why, "cannot load the CUDA driver (libcuda.so.1): %s", e ? e : "not found");
    return;
  }
  sym(nv, &rt.create, "nvrtcCreateProgram");
  sym(nv, &rt.compile, "nvrtcCompileProgram");
  sym(nv, &rt.log_size, "nvrtcGetProgramLogSize");
  sym(nv, &rt.log, "nvrtcGetProgramLog");
  sym(nv, &rt.cubin_size, "nvrtcGetCUBINSize");
  sym(nv, &rt.cubin, "nvrtcGetCUBIN");
  sym(nv, &rt.destroy, "nvrtcDestroyProgram");
  sym(nv, &rt.error_string, "nvrtcGetErrorString");
  sym(nv, &rt.version, "nvrtcVersion");
  sym(cu, &rt.module_load, "cuModuleLoadData");
  sym(cu, &rt.get_function, "cuModuleGetFunction");
  sym(cu, &rt.launch, "cuLaunchKernel");
  sym(cu, &rt.error_name, "cuGetErrorName");
  if (!rt.create || !rt.compile || !rt.log_size || !rt.log || !rt.cubin_size || !rt.cubin || !rt.destroy ||
      !rt.error_string || !rt.version || !rt.module_load || !rt.get_function || !rt.launch || !rt.error_name) {
    snprintf(rt.why, sizeof rt.why, "NVRTC or the CUDA driver lacks an entry point gpulua needs");
    return;
  }
  if (rt.version(&rt.major, &rt.minor) != NVRTC_SUCCESS) rt.major = rt.minor = 0;
  rt.ok = true;
}

static gl_status cu_check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return GL_OK;
  const char *name = NULL;
  if (rt.error_name(r, &name) != CUDA_SUCCESS) name = NULL;
  return gl_fail(r == CUDA_ERROR_OUT_OF_MEMORY ? GL_ENOMEM : GL_EDEVICE, "%s: %s", what, name ? name : "CUDA driver error");
}

/* ---- the memory cache ------------------------------------------------------------------------ */

typedef struct raw_module {
  struct raw_module *next;
  char *source, *name;
  int device, arch;
  CUfunction fn;
} raw_module;

static raw_module *modules;

/* Compiles source for sm_<arch>; on success a malloc'd cubin, else the status (and *log). */
static gl_status compile(const char *source, int arch, char **cubin, size_t *size, char **log) {
  nvrtcProgram prog;
  nvrtcResult r = rt.create(&prog, source, "kernel.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) return gl_fail(GL_EDEVICE, "nvrtcCreateProgram: %s", rt.error_string(r));
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%d", arch);
  const char *opts[] = { archopt, "--std=c++17" };
  r = rt.compile(prog, 2, opts);
  gl_status st = GL_OK;
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    if (rt.log_size(prog, &n) == NVRTC_SUCCESS && n > 0 && (*log = malloc(n + 1)) != NULL) {
      if (rt.log(prog, *log) != NVRTC_SUCCESS) (*log)[0] = 0;
      (*log)[n] = 0;
    }
    st = gl_fail(GL_EINVAL, "NVRTC failed to compile the kernel (%s)", rt.error_string(r));
  } else if ((r = rt.cubin_size(prog, size)) != NVRTC_SUCCESS || (*cubin = malloc(*size)) == NULL) {
    st = r != NVRTC_SUCCESS ? gl_fail(GL_EDEVICE, "nvrtcGetCUBINSize: %s", rt.error_string(r))
                            : gl_fail(GL_ENOMEM, "out of memory");
  } else if ((r = rt.cubin(prog, *cubin)) != NVRTC_SUCCESS) {
    free(*cubin);
    st = gl_fail(GL_EDEVICE, "nvrtcGetCUBIN: %s", rt.error_string(r));
  }
  rt.destroy(&prog);
  return st;
}

static gl_status find_function(gl_device dev, gl_raw_launch *l, CUfunction *fn) {
  int major = 0, minor = 0;
  GL_TRY(gl_cuda_check(dev.index, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev.index),
                       "cudaDeviceGetAttribute"));
  GL_TRY(gl_cuda_check(dev.index, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev.index),
                       "cudaDeviceGetAttribute"));
  int arch = major * 10 + minor;
  pthread_mutex_lock(&gl_cuda_lock);
  for (raw_module *m = modules; m; m = m->next)
    if (m->device == dev.index && m->arch == arch && strcmp(m->name, l->name) == 0 && strcmp(m->source, l->source) == 0) {
      *fn = m->fn;
      pthread_mutex_unlock(&gl_cuda_lock);
      return GL_OK;
    }
  pthread_mutex_unlock(&gl_cuda_lock);
  char *cubin = NULL;
  size_t size = 0;
  GL_TRY(compile(l->source, arch, &cubin, &size, &l->log));
  CUmodule mod;
  gl_status st = cu_check(rt.module_load(&mod, cubin), "cuModuleLoadData");
  free(cubin);
  GL_TRY(st);
  GL_TRY(cu_check(rt.get_function(fn, mod, l->name), "cuModuleGetFunction"));
  raw_module *m = calloc(1, sizeof *m);
  if (m && (m->source = strdup(l->source)) != NULL && (m->name = strdup(l->name)) != NULL) {
    m->device = dev.index;
    m->arch = arch;
    m->fn = *fn;
    pthread_mutex_lock(&gl_cuda_lock);
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&gl_cuda_lock);
  } else if (m) {
    free(m->source);
    free(m);
  }
  return GL_OK;
}

gl_status gl_cuda_raw_launch(gl_device dev, gl_raw_launch *l) {
  pthread_once(&rt.once, rt_load);
  if (!rt.ok) return gl_fail(GL_ENOTSUP, "%s", rt.why);
  cudaStream_t stream;
  GL_TRY(gl_cuda_enter(dev, &stream));
  CUfunction fn;
  GL_TRY(find_function(dev, l, &fn));
  CUresult r = rt.launch(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->shared_mem,
                         (CUstream)stream, l->args, NULL);
  GL_TRY(cu_check(r, "cuLaunchKernel"));
  return gl_cuda_launched(dev, stream, 0, l->name);
}
