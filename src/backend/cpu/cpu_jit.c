/*
** cpu_jit.c — launching the kernels compiled at run time (gpu.ElementwiseKernel,
** ReductionKernel, gpu.fuse; src/ops/jit.c compiles them).
**
** The generated code holds only the loops over a range of elements; the threads are ours:
** the same OpenMP team and team size (gl_cpu_team_size) as the built-in kernels, so a user
** kernel takes the free cores and no more, and shares the built-in kernels' worker threads
** instead of starting a second pool. Each thread runs its share in spans of GL_POLL_SPAN
** elements and polls for Ctrl-C between them, so a long kernel stops like a built-in one.
*/
#include <string.h>
#include "cpu.h"

/* Elements lo..hi-1 of an elementwise kernel, a span at a time. */
static void map_range(const gl_jit_launch *l, int64_t lo, int64_t hi) {
  for (int64_t s = lo; s < hi && !gl_interrupted(); s += GL_POLL_SPAN) {
    int64_t e = hi - s < GL_POLL_SPAN ? hi : s + GL_POLL_SPAN;
    if (l->contiguous) l->contig(s, e, l->ptr);
    else l->strided(s, e, &l->geom, l->ptr);
  }
}

static void run_map(const gl_jit_launch *l) {
  int64_t n = l->geom.size;
  int nt = gl_cpu_team_size(n);
  if (nt <= 1) {
    map_range(l, 0, n);
    return;
  }
  int64_t chunk = ((n + nt - 1) / nt + 15) & ~(int64_t)15;   /* vector-aligned shares */
  #pragma omp parallel for num_threads(nt) schedule(static)
  for (int t = 0; t < nt; t++) {
    int64_t lo = t * chunk, hi = lo + chunk < n ? lo + chunk : n;
    if (lo < hi) map_range(l, lo, hi);
  }
  gl_cpu_team_done(nt);
}

/* Reduced elements lo..hi-1 of output o into *acc, a span at a time. */
static void part_range(const gl_jit_launch *l, int64_t o, int64_t lo, int64_t hi, void *acc) {
  for (int64_t s = lo; s < hi && !gl_interrupted(); s += GL_POLL_SPAN) {
    int64_t e = hi - s < GL_POLL_SPAN ? hi : s + GL_POLL_SPAN;
    l->part(o, s, e, &l->geom, l->ptr, acc);
  }
}

static void run_reduce(const gl_jit_launch *l) {
  int64_t m = l->geom.size, k = 1;
  for (int d = 0; d < l->geom.nr; d++) k *= l->geom.rshape[d];
  int nt = gl_cpu_team_size(m * (k > 0 ? k : 1));
  if (m >= nt || k < 32768) {
    /* outputs shared among the threads, each reduced by one */
    #pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t o = 0; o < m; o++) {
      uint64_t acc;
      if (gl_interrupted()) continue;
      l->init(&acc);
      part_range(l, o, 0, k, &acc);
      l->post(o, &l->geom, l->ptr, &acc, 1);
    }
  } else {
    /* few outputs, long reductions: each output's elements shared, partials combined */
    uint64_t acc[256];
    if (nt > 256) nt = 256;
    int64_t chunk = (k + nt - 1) / nt;
    for (int64_t o = 0; o < m && !gl_interrupted(); o++) {
      #pragma omp parallel for num_threads(nt) schedule(static)
      for (int t = 0; t < nt; t++) {
        int64_t lo = t * chunk, hi = lo + chunk < k ? lo + chunk : k;
        l->init(&acc[t]);
        if (lo < hi) part_range(l, o, lo, hi, &acc[t]);
      }
      l->post(o, &l->geom, l->ptr, acc, nt);
    }
  }
  if (nt > 1) gl_cpu_team_done(nt);
}

gl_status gl_cpu_jit_run(const gl_jit_launch *l) {
  if (l->part) run_reduce(l);
  else if (l->geom.size > 0) run_map(l);
  return gl_interrupt_check();
}
