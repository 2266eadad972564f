/* vmath_test.c — accuracy and speed check of kernels/vmath.h against double-precision libm.
   cc -O2 -march=native -Ikernels tools/vmath_test.c -lm && ./a.out [stride]
   Exit status 1 if any function is above 2 ULP or gets a special value wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include "vmath.h"

static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double r_gelu(double x) { return isinf(x) ? (x > 0 ? x : -0.0) : 0.5 * x * erfc(-x / sqrt(2.0)); }

typedef struct { const char *name; float (*f)(float); double (*ref)(double); } fn_t;
#define W(nm) static float w_##nm(float x) { return gl_v##nm(x); }
W(expf) W(exp2f) W(expm1f) W(logf) W(log1pf) W(log2f) W(log10f) W(tanhf) W(sigmoidf) W(softplusf) W(geluf) W(erff)
static fn_t fns[] = {
  {"expf", w_expf, exp}, {"exp2f", w_exp2f, exp2}, {"expm1f", w_expm1f, expm1},
  {"logf", w_logf, log}, {"log1pf", w_log1pf, log1p}, {"log2f", w_log2f, log2},
  {"log10f", w_log10f, log10}, {"tanhf", w_tanhf, tanh}, {"sigmoidf", w_sigmoidf, r_sigmoid},
  {"softplusf", w_softplusf, r_softplus}, {"geluf", w_geluf, r_gelu}, {"erff", w_erff, erf},
};
#define NF (int)(sizeof fns / sizeof fns[0])

typedef struct { double maxulp; float worst; long nbad_special; float bad_x; } stat_t;
static stat_t st[NF];

/* error of y in ULPs of the float nearest to r; special (inf/NaN/signed zero) mismatches flagged */
static void check(int k, float x) {
  float y = fns[k].f(x);
  double r = fns[k].ref((double)x);
  float rf = (float)r;
  int special = 0; double e = 0;
  if (isnan(r)) special = !isnan(y);
  else if (isinf(rf)) special = !(isinf(y) && signbit(y) == signbit(rf));
  else if (isnan(y) || isinf(y)) special = 1;
  else {
    if (rf == 0 && y == 0 && signbit(rf) != signbit(y)) special = 1;
    int ex = ilogb(rf == 0 ? 0x1p-149 : (double)rf);
    if (ex < -126) ex = -126;
    e = fabs((double)y - r) / ldexp(1.0, ex - 23);
  }
  if (special) { if (!st[k].nbad_special++) st[k].bad_x = x; return; }
  if (e > st[k].maxulp) { st[k].maxulp = e; st[k].worst = x; }
}

static float bf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void around(int k, float c, int n) {  /* n floats each side of c */
  uint32_t u; memcpy(&u, &c, 4);
  for (int i = -n; i <= n; i++) { check(k, bf(u + (uint32_t)i)); }
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

#define N 10000000
static float *X, *Y;
#define BENCH(nm, expr) \
  __attribute__((noinline, optimize("O3"))) static void b_##nm(void) { \
    for (int i = 0; i < N; i++) { float x = X[i]; Y[i] = (expr); } }
BENCH(vexp, gl_vexpf(x)) BENCH(lexp, expf(x))
BENCH(vexp2, gl_vexp2f(x)) BENCH(lexp2, exp2f(x))
BENCH(vexpm1, gl_vexpm1f(x)) BENCH(lexpm1, expm1f(x))
BENCH(vlog, gl_vlogf(x)) BENCH(llog, logf(x))
BENCH(vlog1p, gl_vlog1pf(x)) BENCH(llog1p, log1pf(x))
BENCH(vlog2, gl_vlog2f(x)) BENCH(llog2, log2f(x))
BENCH(vlog10, gl_vlog10f(x)) BENCH(llog10, log10f(x))
BENCH(vtanh, gl_vtanhf(x)) BENCH(ltanh, tanhf(x))
BENCH(vsig, gl_vsigmoidf(x)) BENCH(lsig, 1.0f / (1.0f + expf(-x)))
BENCH(vsoft, gl_vsoftplusf(x)) BENCH(lsoft, x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)))
BENCH(vgelu, gl_vgeluf(x)) BENCH(lgelu, 0.5f * x * erfcf(-x * 0.70710678f))
BENCH(verf, gl_verff(x)) BENCH(lerf, erff(x))
BENCH(copy, x)

static double tbest(void (*b)(void)) {
  double best = 1e9;
  for (int r = 0; r < 3; r++) { double t0 = now(); b(); double t = now() - t0; if (t < best) best = t; }
  return best;
}

int main(int argc, char **argv) {
  uint32_t stride = argc > 1 ? (uint32_t)strtoul(argv[1], 0, 0) : 263;
  int bench = !(argc > 2 && !strcmp(argv[2], "nobench"));
  double t0 = now();
  for (int k = 0; k < NF; k++) {
    for (uint64_t u = 0; u <= 0xffffffffu; u += stride) check(k, bf((uint32_t)u));
    static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f,
      0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1.fffffep127f, -0x1.fffffep127f, 88.72283f, 88.72284f,
      -87.33655f, -103.97208f, -103.97209f, 128.0f, -150.0f, -149.0f, 0.5f, 2.0f, 10.0f};
    for (unsigned i = 0; i < sizeof sp / sizeof sp[0]; i++) around(k, sp[i], 2000);
    static const float cen[] = {1.0f, -1.0f, 0.0f, 0x1p-126f, 0x1p-20f, -0x1p-20f, 0.5f, 0.55f, -0.55f,
      0.921875f, -0.921875f, 0.75f, -0.75f, 0.3466f, -0.3466f, 0.7071f, 1.4142f, 2.0f, 0x1p-3f};
    for (unsigned i = 0; i < sizeof cen / sizeof cen[0]; i++) around(k, cen[i], 200000);
  }
  int fail = 0;
  printf("%-10s %9s  %-16s %s\n", "function", "max ULP", "at x", "special-value failures");
  for (int k = 0; k < NF; k++) {
    int bad = st[k].maxulp > 2.0 || st[k].nbad_special;
    fail |= bad;
    printf("%-10s %9.3f  %-16a %ld%s", fns[k].name, st[k].maxulp, st[k].worst, st[k].nbad_special, bad ? "  FAIL" : "");
    if (st[k].nbad_special) printf(" (first at %a -> %a, want %a)", st[k].bad_x, fns[k].f(st[k].bad_x), fns[k].ref(st[k].bad_x));
    printf("\n");
  }
  printf("accuracy sweep (stride %u): %.1f s\n", stride, now() - t0);
  if (!bench) return fail;

  X = malloc(N * sizeof(float)); Y = malloc(N * sizeof(float));
  struct { const char *nm; void (*v)(void), (*l)(void); float lo, hi; int logu; } bs[] = {
    {"exp", b_vexp, b_lexp, -80, 80, 0}, {"exp2", b_vexp2, b_lexp2, -120, 120, 0},
    {"expm1", b_vexpm1, b_lexpm1, -20, 20, 0}, {"log", b_vlog, b_llog, -30, 30, 1},
    {"log1p", b_vlog1p, b_llog1p, -30, 30, 1}, {"log2", b_vlog2, b_llog2, -30, 30, 1},
    {"log10", b_vlog10, b_llog10, -30, 30, 1}, {"tanh", b_vtanh, b_ltanh, -10, 10, 0},
    {"sigmoid", b_vsig, b_lsig, -20, 20, 0}, {"softplus", b_vsoft, b_lsoft, -20, 20, 0},
    {"gelu", b_vgelu, b_lgelu, -6, 6, 0}, {"erf", b_verf, b_lerf, -4, 4, 0}};
  srand(1);
  for (int i = 0; i < N; i++) X[i] = 0;
  double tc = tbest(b_copy);
  printf("\nthroughput over %d floats (elements/ns; plain copy loop: %.2f)\n", N, N / tc * 1e-9);
  printf("%-9s %8s %8s %8s\n", "function", "vmath", "libm", "speedup");
  for (unsigned j = 0; j < sizeof bs / sizeof bs[0]; j++) {
    for (int i = 0; i < N; i++) {
      float u = bs[j].lo + (bs[j].hi - bs[j].lo) * (float)rand() / (float)RAND_MAX;
      X[i] = bs[j].logu ? powf(10.0f, u) : u;
    }
    double tv = tbest(bs[j].v), tl = tbest(bs[j].l);
    printf("%-9s %8.3f %8.3f %7.1fx\n", bs[j].nm, N / tv * 1e-9, N / tl * 1e-9, tl / tv);
  }
  return fail;
}
