/*
** bench/fftw_direct.c — the limit for bench/fft.lua: FFTW 3 called directly on the same
** five single-precision transforms, each planned once with FFTW_MEASURE on all the
** machine's cores (fftwf threads), out of place, then fftwf_execute timed over repeats
** (best and median of 7, each repeat >= 0.2 s; 3 of >= 0.05 s with BENCH_QUICK=1).
** No allocation, no plan lookup, no argument checks: what any wrapper of FFTW can at best
** reach. Prints bench records (bench/lib/bench.lua's format) in the column "FFTW".
**   cc -O2 bench/fftw_direct.c -lfftw3f_threads -lfftw3f -lpthread -lm -o fftw_direct
*/
#include <fftw3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPEATS_MAX 7

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Deterministic inputs in [-1, 1): the values do not change FFTW's speed, but zeros or
   denormals could. */
static void fill(float *p, size_t n) {
  unsigned long long s = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((s >> 40) * (1.0 / (1 << 23))) - 1.0f;
  }
}

/* One case: plan (timed apart, reported in the note), run once, time the repeats. The
   input is filled after planning, since FFTW_MEASURE overwrites the arrays it plans on. */
static int run_case(const char *name, int rank, const int *n, int howmany, int real_input,
                    int nthreads, int repeats, double min_time) {
  size_t len = 1;
  for (int d = 0; d < rank; d++) len *= (size_t)n[d];
  size_t out_len = real_input ? len / n[rank - 1] * (n[rank - 1] / 2 + 1) : len;
  size_t in_floats = (real_input ? 1 : 2) * len * (size_t)howmany;
  float *in = fftwf_malloc(in_floats * sizeof *in);
  fftwf_complex *out = fftwf_malloc(out_len * (size_t)howmany * sizeof *out);
  if (!in || !out) { fprintf(stderr, "fftw_direct: %s: out of memory\n", name); return 1; }
  memset(in, 0, in_floats * sizeof *in);

  double t0 = now();
  int dist_in = (int)len, dist_out = (int)out_len;
  fftwf_plan p = real_input
    ? fftwf_plan_many_dft_r2c(rank, n, howmany, in, NULL, 1, dist_in, out, NULL, 1, dist_out, FFTW_MEASURE)
    : fftwf_plan_many_dft(rank, n, howmany, (fftwf_complex *)in, NULL, 1, dist_in, out, NULL, 1, dist_out,
                          FFTW_FORWARD, FFTW_MEASURE);
  double plan_s = now() - t0;
  if (!p) { fprintf(stderr, "fftw_direct: %s: no plan\n", name); return 1; }
  fill(in, in_floats);

  t0 = now();
  fftwf_execute(p);
  double once = now() - t0;
  long iters = (long)(min_time / (once > 1e-7 ? once : 1e-7)) + 1;
  double ts[REPEATS_MAX];
  for (int r = 0; r < repeats; r++) {
    t0 = now();
    for (long i = 0; i < iters; i++) fftwf_execute(p);
    ts[r] = (now() - t0) / iters;
  }
  qsort(ts, repeats, sizeof ts[0], cmp_double);
  printf("result\tfft\t%s\tFFTW\t%.1f\t%.1f\tFFTW %s fftwf_execute, FFTW_MEASURE, %d threads, planned in %.2f s\n",
         name, ts[0] * 1e9, ts[(repeats - 1) / 2] * 1e9, fftwf_version, nthreads, plan_s);
  fflush(stdout);
  fftwf_destroy_plan(p);
  fftwf_free(in);
  fftwf_free(out);
  return 0;
}

int main(void) {
  const char *quick = getenv("BENCH_QUICK");
  int is_quick = quick && strcmp(quick, "1") == 0;
  int repeats = is_quick ? 3 : REPEATS_MAX;
  double min_time = is_quick ? 0.05 : 0.2;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nthreads = cores > 0 ? (int)cores : 1;
  if (!fftwf_init_threads()) { fprintf(stderr, "fftw_direct: fftwf_init_threads failed\n"); return 1; }
  fftwf_plan_with_nthreads(nthreads);

  /* the case names are bench/fft.lua's */
  int n1[] = {1 << 20}, nb[] = {1024}, n2[] = {2048, 2048}, np[] = {1000003};
  int fails = 0;
  fails += run_case("fft: 2^20 complex64", 1, n1, 1, 0, nthreads, repeats, min_time);
  fails += run_case("rfft: 2^20 float32", 1, n1, 1, 1, nthreads, repeats, min_time);
  fails += run_case("fft: 1024x1024 complex64, last axis", 1, nb, 1024, 0, nthreads, repeats, min_time);
  fails += run_case("fft2: 2048x2048 complex64", 2, n2, 1, 0, nthreads, repeats, min_time);
  fails += run_case("fft: 1000003 (prime) complex64", 1, np, 1, 0, nthreads, repeats, min_time);
  fftwf_cleanup_threads();
  return fails ? 1 : 0;
}
