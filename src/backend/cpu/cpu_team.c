/*
** cpu_team.c — how many threads an OpenMP team of the CPU backend gets: none beyond one
** below PAR_MIN elements of work, and none on cores other tasks keep busy.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu.h"

/* Below this many elements a call runs on one thread. */
#define PAR_MIN 32768
#define MAX_THREADS 256

#ifdef _OPENMP
static _Atomic int max_threads = 0;
#endif

/* OpenMP's thread count as it was at the first call: OpenBLAS's set_num_threads (which
** gl_cpu_blas_threads calls) changes omp_get_max_threads() afterwards. */
int gl_cpu_max_threads(void) {
#ifdef _OPENMP
  int v = max_threads;
  if (v == 0) {
    v = omp_get_max_threads();
    v = v > MAX_THREADS ? MAX_THREADS : v < 1 ? 1 : v;
    max_threads = v;
  }
  return v;
#else
  return 1;
#endif
}

/* Caps every team at n threads from now on (gl_backends_host_only: 1 in a forked worker,
** whose inherited OpenMP pool must not be woken). */
void gl_cpu_set_max_threads(int n) {
#ifdef _OPENMP
  max_threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
  omp_set_num_threads(max_threads);
#else
  (void)n;
#endif
}

#ifdef __linux__
static _Atomic int64_t load_read_ms = -1000, team_end_ms = -1000;
static _Atomic int load_others = 0, team_last = 1;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
#endif

/* The threads for 'work' elements: one below PAR_MIN, else OpenMP's count less the
** cores other runnable tasks hold. On a shared or loaded machine a team waits at its
** closing barrier for a thread the scheduler has not run yet, milliseconds where the
** work itself takes one or two, so busy cores are left alone. The busy count is
** /proc/loadavg's instantaneous "running" field (read at most every 20 ms) less this
** thread and, for a few ms after a parallel region, our own spinning workers. An
** explicit OMP_NUM_THREADS is obeyed as it is. */
int gl_cpu_team_size(int64_t work) {
  int nt = gl_cpu_max_threads();
  if (nt <= 1 || work < PAR_MIN) return 1;
#if defined(__linux__) && defined(_OPENMP)
  static int explicit_threads = -1;
  if (explicit_threads < 0) explicit_threads = getenv("OMP_NUM_THREADS") != NULL;
  if (explicit_threads) return nt;
  int64_t t = now_ms();
  if (t - load_read_ms >= 20) {
    load_read_ms = t;
    FILE *f = fopen("/proc/loadavg", "r");
    int running = 0;
    if (f) {
      if (fscanf(f, "%*f %*f %*f %d", &running) != 1) running = 0;
      fclose(f);
    }
    int ours = t - team_end_ms < 20 ? team_last : 1;
    load_others = running > ours ? running - ours : 0;
  }
  int free_cores = omp_get_num_procs() - load_others;
  if (free_cores < nt) nt = free_cores < 1 ? 1 : free_cores;
  if (nt > 1) { team_last = nt; team_end_ms = t; }   /* gl_cpu_team_done moves the time on */
#endif
  return nt;
}

/* Notes the end of a parallel region of nt threads (their workers spin for a while). */
void gl_cpu_team_done(int nt) {
#ifdef __linux__
  if (nt > 1) { team_last = nt; team_end_ms = now_ms(); }
#else
  (void)nt;
#endif
}
