/*
** cpu_blas.c — OpenBLAS, loaded on first use.
**
** Linking libopenblas costs ~1.4 ms at every process start (its constructor sizes
** buffers and starts threads), which would double `gpulua -e ''`. So the library is
** opened with dlopen the first time a matmul (or gpu.config()) needs it, once per
** process under pthread_once, and the few CBLAS entry points are resolved with dlsym
** (sgemm and dgemm required, cgemm and zgemm for complex matmuls where the BLAS has them).
** The prototypes are declared here (enums passed as int, 32-bit blasint as in the
** distributions' builds), so no CBLAS header is needed to build.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"

#ifndef GL_BLAS_LIB
#define GL_BLAS_LIB "libopenblas.so.0"
#endif

/* Tried in order; the last one is the reference BLAS (with its cblas_ symbols), which
** is slow but correct. */
static const char *const blas_candidates[] = {
  GL_BLAS_LIB, "libopenblas.so.0", "libopenblas.so", "libblas.so.3",
};
#define NCANDIDATES (sizeof blas_candidates / sizeof blas_candidates[0])

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static gl_cpu_blas blas;            /* filled once; read-only afterwards */
static bool blas_ok;
static char blas_err[640];   /* room for the message and every name tried */

static void blas_load(void) {
  char tried[384] = "";
  size_t used = 0;
  for (size_t i = 0; i < NCANDIDATES; i++) {
    const char *name = blas_candidates[i];
    if (i > 0 && strcmp(name, blas_candidates[0]) == 0) continue;
    int n = snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", name);
    if (n > 0 && (size_t)n < sizeof tried - used) used += (size_t)n;
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) continue;
    blas.sgemm = (gl_sgemm_fn)dlsym(h, "cblas_sgemm");
    blas.dgemm = (gl_dgemm_fn)dlsym(h, "cblas_dgemm");
    if (blas.sgemm == NULL || blas.dgemm == NULL) {   /* a BLAS without CBLAS: next */
      dlclose(h);
      blas.sgemm = NULL;
      blas.dgemm = NULL;
      continue;
    }
    blas.cgemm = (gl_cgemm_fn)dlsym(h, "cblas_cgemm");
    blas.zgemm = (gl_cgemm_fn)dlsym(h, "cblas_zgemm");
    blas.get_config = (char *(*)(void))dlsym(h, "openblas_get_config");
    blas.get_num_threads = (int (*)(void))dlsym(h, "openblas_get_num_threads");
    blas.set_num_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
    blas.lib = name;
    blas.handle = h;
    blas_ok = true;
    return;
  }
  snprintf(blas_err, sizeof blas_err,
           "matmul needs OpenBLAS (or a BLAS with CBLAS symbols) and none could be loaded "
           "(looked for %s; install libopenblas0 or libopenblas-dev)", tried);
}

gl_status gl_cpu_blas_get(const gl_cpu_blas **out) {
  pthread_once(&blas_once, blas_load);
  if (!blas_ok) return gl_fail(GL_ENOTSUP, "%s", blas_err);
  *out = &blas;
  return GL_OK;
}

/* The team a gemm gets follows the load like every other parallel region (a team that
** waits at its barrier for a thread the scheduler does not run costs more than the
** gemm); OpenBLAS is told only when the count changes. */
void gl_cpu_blas_threads(const gl_cpu_blas *bl, int nt) {
  static _Atomic int current = 0;
  if (bl->set_num_threads == NULL || nt == current) return;
  current = nt;
  bl->set_num_threads(nt);
}
