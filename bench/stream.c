/*
** bench/stream.c — the machine's memory bandwidth for c[i] = a[i] + b[i] over 1e7
** float32 (STREAM's "add"), two OpenMP threads, warm pages: the ceiling for gpulua's
** `c = a + b`. Prints one bench record (bench/lib/bench.lua's format).
**   cc -O3 -march=native -fopenmp bench/stream.c -o stream && ./stream
*/
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 10000000

int main(void) {
  float *a = aligned_alloc(64, N * sizeof *a), *b = aligned_alloc(64, N * sizeof *b),
        *c = aligned_alloc(64, N * sizeof *c);
  if (!a || !b || !c) return 1;
  #pragma omp parallel for schedule(static)
  for (long i = 0; i < N; i++) { a[i] = 1.0f; b[i] = 2.0f; c[i] = 0.0f; }
  double best = 1e30, times[15];
  for (int r = 0; r < 15; r++) {
    double t = omp_get_wtime();
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) c[i] = a[i] + b[i];
    times[r] = omp_get_wtime() - t;
    if (times[r] < best) best = times[r];
  }
  for (int i = 0; i < 15; i++)                 /* median by insertion sort */
    for (int j = i; j > 0 && times[j] < times[j - 1]; j--) { double x = times[j]; times[j] = times[j - 1]; times[j - 1] = x; }
  printf("result\telementwise\tc = a + b: 1e7 float32\tSTREAM\t%.1f\t%.1f\tSTREAM add, %d threads, %.1f GB/s\n",
         best * 1e9, times[7] * 1e9, omp_get_max_threads(), 3.0 * N * sizeof(float) / best / 1e9);
  return c[N / 2] == 3.0f ? 0 : 1;
}
