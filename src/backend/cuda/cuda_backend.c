/*
** cuda_backend.c — the CUDA backend's table: devices, memory and transfers.
**
** CUDA is initialised lazily: the first question about devices calls
** cudaGetDeviceCount once and remembers the answer (and the reason when there is no
** usable device), so programs that never touch a GPU make no CUDA call. cuDNN and cuBLAS
** are opened with dlopen on first use (linking them would cost ~50 ms at every start).
**
** Array math on the GPU (copy, fill, arange, elementwise, ...) is the CUDA-backend issue;
** until then those entries are NULL and the ops layer says "not supported on cuda:N".
*/
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include "../backend.h"
#ifdef GL_WITH_CUDNN
#include <cudnn_version.h>
#endif

static struct {
  pthread_once_t once;
  int count;
  char reason[160];
} cuda = { PTHREAD_ONCE_INIT, 0, "" };

static void probe(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(cuda.reason, sizeof cuda.reason, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    cudaGetLastError();          /* clear it */
    cuda.count = 0;
    return;
  }
  if (n == 0) snprintf(cuda.reason, sizeof cuda.reason, "no CUDA device found");
  cuda.count = n;
}

static int cuda_count(const char **reason) {
  pthread_once(&cuda.once, probe);
  if (cuda.count == 0 && reason) *reason = cuda.reason;
  return cuda.count;
}

static gl_status cuda_status(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return GL_OK;
  cudaGetLastError();
  return gl_fail(e == cudaErrorMemoryAllocation ? GL_ENOMEM : GL_EDEVICE, "%s failed: %s (%s)",
                 what, cudaGetErrorName(e), cudaGetErrorString(e));
}

static gl_status cuda_info(int index, gl_devinfo *out) {
  struct cudaDeviceProp p;
  GL_TRY(cuda_status(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties"));
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%.127s", p.name);
  out->total_memory = p.totalGlobalMem;
  out->major = p.major;
  out->minor = p.minor;
  out->multiprocessors = p.multiProcessorCount;
  return GL_OK;
}

static bool cuda_supports(gl_op op, gl_dtype dt) {
  (void)dt;
  (void)op;
  return false;     /* no GPU kernels yet */
}

static gl_status cuda_alloc(gl_device dev, size_t nbytes, void **out) {
  GL_TRY(cuda_status(cudaSetDevice(dev.index), "cudaSetDevice"));
  return cuda_status(cudaMalloc(out, nbytes ? nbytes : 1), "cudaMalloc");
}

static void cuda_free(gl_device dev, void *p, size_t nbytes) {
  (void)nbytes;
  if (cudaSetDevice(dev.index) == cudaSuccess) cudaFree(p);
}

static void cuda_empty_cache(gl_device dev) { (void)dev; }

static void cuda_memory(gl_device dev, gl_meminfo *m) {
  memset(m, 0, sizeof *m);
  size_t fr = 0, total = 0;
  if (cudaSetDevice(dev.index) == cudaSuccess && cudaMemGetInfo(&fr, &total) == cudaSuccess) {
    m->free = fr;
    m->total = total;
  }
}

static gl_status cuda_to_host(void *dst, gl_device dev, const void *src, size_t n) {
  GL_TRY(cuda_status(cudaSetDevice(dev.index), "cudaSetDevice"));
  return cuda_status(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)");
}

static gl_status cuda_from_host(gl_device dev, void *dst, const void *src, size_t n) {
  GL_TRY(cuda_status(cudaSetDevice(dev.index), "cudaSetDevice"));
  return cuda_status(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy (host to device)");
}

static gl_status cuda_synchronize(gl_device dev) {
  GL_TRY(cuda_status(cudaSetDevice(dev.index), "cudaSetDevice"));
  return cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

static void cuda_versions(gl_versions *v) {
  int x = 0;
  if (cudaRuntimeGetVersion(&x) == cudaSuccess) v->runtime = x;
  x = 0;
  if (cudaDriverGetVersion(&x) == cudaSuccess) v->driver = x;
#ifdef GL_WITH_CUDNN
  v->cudnn_header = CUDNN_VERSION;
  void *h = dlopen("libcudnn.so.9", RTLD_LAZY | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libcudnn.so", RTLD_LAZY | RTLD_LOCAL);
  if (h) {
    size_t (*get)(void) = (size_t (*)(void))dlsym(h, "cudnnGetVersion");
    if (get) v->cudnn = (int)get();
  }
#endif
}

const gl_backend gl_cuda_backend = {
  .name = "cuda",
  .versions = cuda_versions,
  .count = cuda_count,
  .info = cuda_info,
  .supports = cuda_supports,
  .alloc = cuda_alloc,
  .free = cuda_free,
  .empty_cache = cuda_empty_cache,
  .memory = cuda_memory,
  .to_host = cuda_to_host,
  .from_host = cuda_from_host,
  .synchronize = cuda_synchronize,
};
