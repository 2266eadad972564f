/*
** cuda_nvrtc.c — CUDA source compiled at run time (gpu.RawKernel, gpu.RawModule, and
** gpu.ElementwiseKernel, ReductionKernel and gpu.fuse on cuda): NVRTC (libnvrtc) compiles
** it for the device's own architecture, the driver API (libcuda) loads the image as a
** module and launches a function of it on the device's stream. src/ops/jit_cuda.c makes
** the keys and keeps the caches (memory and disk); this file is the thin layer over the
** two libraries (gl_cuda_rtc).
**
** Both libraries are opened with dlopen at their first use, like cuBLAS: a build with
** CUDA starts without them, and `gpulua -e ''` loads nothing. NVRTC alone is enough to
** compile (gpu._jit.cuda_compile, which runs on a machine without a GPU); libcuda is opened
** at the first load. The load and launch paths have NOT RUN ON A GPU YET: no GPU was lent
** while they were written.
*/
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
  __typeof__(nvrtcGetPTXSize) *ptx_size;
  __typeof__(nvrtcGetPTX) *ptx;
  __typeof__(nvrtcDestroyProgram) *destroy;
  __typeof__(nvrtcGetErrorString) *error_string;
  __typeof__(nvrtcVersion) *version;
  __typeof__(nvrtcGetNumSupportedArchs) *num_archs;
  __typeof__(nvrtcGetSupportedArchs) *archs;
  int major, minor;
  int max_arch;                 /* the newest sm_XY NVRTC compiles for */
} nv = { .once = PTHREAD_ONCE_INIT };

static struct {
  pthread_once_t once;
  bool ok;
  char why[256];
  __typeof__(cuModuleLoadData) *module_load;
  __typeof__(cuModuleGetFunction) *get_function;
  __typeof__(cuLaunchKernel) *launch;
  __typeof__(cuFuncSetAttribute) *set_attribute;
  __typeof__(cuFuncGetAttribute) *get_attribute;
  __typeof__(cuGetErrorName) *error_name;
} drv = { .once = PTHREAD_ONCE_INIT };

static const gl_cuda_entry nv_entries[] = {
  { "nvrtcCreateProgram", &nv.create }, { "nvrtcCompileProgram", &nv.compile },
  { "nvrtcGetProgramLogSize", &nv.log_size }, { "nvrtcGetProgramLog", &nv.log },
  { "nvrtcGetCUBINSize", &nv.cubin_size }, { "nvrtcGetCUBIN", &nv.cubin },
  { "nvrtcGetPTXSize", &nv.ptx_size }, { "nvrtcGetPTX", &nv.ptx }, { "nvrtcDestroyProgram", &nv.destroy },
  { "nvrtcGetErrorString", &nv.error_string }, { "nvrtcVersion", &nv.version },
  { "nvrtcGetNumSupportedArchs", &nv.num_archs }, { "nvrtcGetSupportedArchs", &nv.archs },
};

static const gl_cuda_entry drv_entries[] = {
  { "cuModuleLoadData", &drv.module_load }, { "cuModuleGetFunction", &drv.get_function },
  { "cuLaunchKernel", &drv.launch }, { "cuFuncSetAttribute", &drv.set_attribute },
  { "cuFuncGetAttribute", &drv.get_attribute }, { "cuGetErrorName", &drv.error_name },
};

/* Where libnvrtc.so.13 is, searched as the dynamic loader would in the usual places
** (LD_LIBRARY_PATH, the toolkit, the system's directories), so a process that finds its
** kernels in the disk cache can key them without loading NVRTC (~20 ms): its real path,
** size and time identify it. Empty when not found (NVRTC is then loaded by name). */
static pthread_once_t nv_found_once = PTHREAD_ONCE_INIT;
static char nv_path[4096], nv_ident[4200];

static void nv_find(void) {
  char dirs[8192];
  const char *ld = getenv("LD_LIBRARY_PATH");
  snprintf(dirs, sizeof dirs, "%s%s/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/lib/x86_64-linux-gnu:/usr/lib64:/usr/lib",
           ld && *ld ? ld : "", ld && *ld ? ":" : "");
  for (char *d = strtok(dirs, ":"); d; d = strtok(NULL, ":")) {
    if (d[0] != '/') continue;
    char path[4200], real[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/libnvrtc.so.13", d);
    if (realpath(path, real) && stat(real, &st) == 0 && S_ISREG(st.st_mode)) {
      snprintf(nv_path, sizeof nv_path, "%s", real);
      snprintf(nv_ident, sizeof nv_ident, "%s %lld %lld", real, (long long)st.st_size, (long long)st.st_mtime);
      return;
    }
  }
}

static gl_status rtc_identity(char *buf, size_t len) {
  pthread_once(&nv_found_once, nv_find);
  if (!nv_ident[0]) return gl_fail(GL_ENOTSUP, "libnvrtc.so.13 not found in the usual directories");
  snprintf(buf, len, "%s", nv_ident);
  return GL_OK;
}

/* The entries of library h (NULL: it did not open, dlerror says why), resolved; false,
** with 'why' saying what failed, when it did not open or lacks an entry. */
static bool resolve(void *h, const char *lib, const gl_cuda_entry *e, size_t n, const char *lacks, char *why,
                    size_t whylen) {
  if (h == NULL) {
    const char *err = dlerror();
    snprintf(why, whylen, "cannot load %s: %s", lib, err ? err : "not found");
    return false;
  }
  if (gl_cuda_syms(h, e, n) != NULL) {
    snprintf(why, whylen, "%s", lacks);
    return false;
  }
  return true;
}

static void nv_load(void) {
  pthread_once(&nv_found_once, nv_find);
  void *h = nv_path[0] ? dlopen(nv_path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (h == NULL) h = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libnvrtc.so.12", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
  if (!resolve(h, "NVRTC (libnvrtc.so.13)", nv_entries, sizeof nv_entries / sizeof nv_entries[0],
               "NVRTC lacks an entry point gpulua needs (it is older than CUDA 11.2)", nv.why, sizeof nv.why))
    return;
  if (nv.version(&nv.major, &nv.minor) != NVRTC_SUCCESS) {
    snprintf(nv.why, sizeof nv.why, "nvrtcVersion failed");
    return;
  }
  int n = 0, archs[128];
  if (nv.num_archs(&n) != NVRTC_SUCCESS || n < 1 || n > 128 || nv.archs(archs) != NVRTC_SUCCESS) {
    snprintf(nv.why, sizeof nv.why, "nvrtcGetSupportedArchs failed");
    return;
  }
  for (int k = 0; k < n; k++)
    if (archs[k] > nv.max_arch) nv.max_arch = archs[k];
  nv.ok = true;
}

static void drv_load(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  drv.ok = resolve(h, "the CUDA driver (libcuda.so.1)", drv_entries, sizeof drv_entries / sizeof drv_entries[0],
                   "the CUDA driver lacks an entry point gpulua needs", drv.why, sizeof drv.why);
}

static gl_status nv_ready(void) {
  pthread_once(&nv.once, nv_load);
  return nv.ok ? GL_OK : gl_fail(GL_ENOTSUP, "%s", nv.why);
}

static gl_status drv_ready(void) {
  pthread_once(&drv.once, drv_load);
  return drv.ok ? GL_OK : gl_fail(GL_ENOTSUP, "%s", drv.why);
}

static gl_status cu_check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return GL_OK;
  const char *name = NULL;
  if (drv.error_name(r, &name) != CUDA_SUCCESS) name = NULL;
  return gl_fail(r == CUDA_ERROR_OUT_OF_MEMORY ? GL_ENOMEM : GL_EDEVICE, "%s: %s", what, name ? name : "CUDA driver error");
}

static gl_status rtc_version(int *major, int *minor) {
  GL_TRY(nv_ready());
  *major = nv.major;
  *minor = nv.minor;
  return GL_OK;
}

/* Compiles src for sm_<arch> (or compute_<newest> PTX when NVRTC is older than arch). */
static gl_status rtc_compile(const char *src, const char *const *opts, int nopts, int arch, char **image, size_t *size,
                             bool *ptx, char **log) {
  GL_TRY(nv_ready());
  *image = NULL;
  *size = 0;
  *ptx = arch > nv.max_arch;
  if (nopts > 30) return gl_fail(GL_EINVAL, "too many NVRTC options");
  const char *all[32];
  char archopt[64];
  if (*ptx) snprintf(archopt, sizeof archopt, "--gpu-architecture=compute_%d", nv.max_arch);
  else snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%d", arch);
  all[0] = archopt;
  for (int k = 0; k < nopts; k++) all[k + 1] = opts[k];
  nvrtcProgram prog;
  nvrtcResult r = nv.create(&prog, src, "kernel.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) return gl_fail(GL_EDEVICE, "nvrtcCreateProgram: %s", nv.error_string(r));
  r = nv.compile(prog, nopts + 1, all);
  gl_status st = GL_OK;
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    if (log && nv.log_size(prog, &n) == NVRTC_SUCCESS && n > 0 && (*log = malloc(n + 1)) != NULL) {
      if (nv.log(prog, *log) != NVRTC_SUCCESS) (*log)[0] = 0;
      (*log)[n] = 0;
    }
    st = r == NVRTC_ERROR_COMPILATION ? gl_fail(GL_EINVAL, "NVRTC failed to compile the kernel")
                                      : gl_fail(GL_EDEVICE, "nvrtcCompileProgram: %s", nv.error_string(r));
  } else if ((r = *ptx ? nv.ptx_size(prog, size) : nv.cubin_size(prog, size)) != NVRTC_SUCCESS) {
    st = gl_fail(GL_EDEVICE, "nvrtcGet%sSize: %s", *ptx ? "PTX" : "CUBIN", nv.error_string(r));
  } else if ((*image = malloc(*size + 1)) == NULL) {
    st = gl_fail(GL_ENOMEM, "out of memory");
  } else if ((r = *ptx ? nv.ptx(prog, *image) : nv.cubin(prog, *image)) != NVRTC_SUCCESS) {
    free(*image);
    *image = NULL;
    st = gl_fail(GL_EDEVICE, "nvrtcGet%s: %s", *ptx ? "PTX" : "CUBIN", nv.error_string(r));
  } else {
    (*image)[*size] = 0;     /* PTX is loaded as a C string */
  }
  nv.destroy(&prog);
  return st;
}

static gl_status rtc_arch(gl_device dev, int *arch) {
  GL_TRY(gl_cuda_enter(dev, NULL));
  int major = 0, minor = 0;
  GL_TRY(gl_cuda_check(dev.index, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev.index),
                       "cudaDeviceGetAttribute"));
  GL_TRY(gl_cuda_check(dev.index, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev.index),
                       "cudaDeviceGetAttribute"));
  *arch = major * 10 + minor;
  return GL_OK;
}

/* The module goes into the device's primary context, which gl_cuda_enter makes current
** (cudart's cudaSetDevice); it is never unloaded (the caller caches the function). */
static gl_status rtc_load(gl_device dev, const void *image, const char *name, void **fn) {
  GL_TRY(drv_ready());
  GL_TRY(gl_cuda_enter(dev, NULL));
  CUmodule mod;
  GL_TRY(cu_check(drv.module_load(&mod, image), "cuModuleLoadData"));
  CUfunction f;
  char what[300];
  snprintf(what, sizeof what, "cuModuleGetFunction('%.200s')", name);
  GL_TRY(cu_check(drv.get_function(&f, mod, name), what));
  *fn = f;
  return GL_OK;
}

/* Dynamic shared memory above 48 KiB must be opted into per function
** (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) before the launch, up to the device's
** opt-in maximum less the function's static shared memory; without it the launch fails. */
static gl_status opt_in_shared(gl_device dev, CUfunction f, unsigned bytes, const char *name) {
  if (bytes <= 48u * 1024u) return GL_OK;
  int current = 0;
  if (drv.get_attribute(&current, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS &&
      current >= 0 && (unsigned)current >= bytes)
    return GL_OK;
  if (drv.set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes) == CUDA_SUCCESS) return GL_OK;
  int optin = 0, fixed = 0;
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev.index);
  drv.get_attribute(&fixed, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
  return gl_fail(GL_EINVAL, "%s: shared_mem %u bytes is more than this device allows a block (%d bytes, less the "
                 "kernel's %d bytes of static shared memory)", name, bytes, optin, fixed);
}

static gl_status rtc_launch(gl_device dev, void *fn, const unsigned grid[3], const unsigned block[3], unsigned shared_mem,
                            void **args, const char *name) {
  GL_TRY(drv_ready());
  cudaStream_t stream;
  GL_TRY(gl_cuda_enter(dev, &stream));
  GL_TRY(opt_in_shared(dev, (CUfunction)fn, shared_mem, name));
  CUresult r = drv.launch((CUfunction)fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_mem,
                          (CUstream)stream, args, NULL);
  if (r != CUDA_SUCCESS) {
    /* an error of an earlier kernel may surface here; if it is sticky, the context is lost
    ** and the runtime reports it on the stream too, which marks the device unusable */
    cudaError_t q = cudaStreamQuery(stream);
    if (q != cudaSuccess && q != cudaErrorNotReady) return gl_cuda_check(dev.index, q, name);
    return cu_check(r, "cuLaunchKernel");
  }
  return gl_cuda_launched(dev, stream, 0, name);
}

const gl_rtc gl_cuda_rtc = {
  .identity = rtc_identity,
  .version = rtc_version,
  .compile = rtc_compile,
  .arch = rtc_arch,
  .load = rtc_load,
  .launch = rtc_launch,
};
