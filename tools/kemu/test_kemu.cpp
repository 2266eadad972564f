/*
** test_kemu.cpp — runs the launchers of kernels/*.cu under kemu (the CPU emulator of
** tools/kemu/kemu.h) on host buffers and compares every result with a plain loop. Buffers
** are allocated to their exact size (bytes before a view's first element poisoned), so
** AddressSanitizer catches a kernel that reads or writes outside them; UBSan catches
** misaligned vector accesses. A developer tool: passing here is no substitute for the GPU.
*/
#include "kemu.h"
#include "cuda_common.cuh"
#include "elem.h"
#include "conv.h"
#include "fused.h"
#include "rnn.h"
#include "attention.h"
#include "philox.h"
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <vector>
#include <string>
#include <algorithm>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- bookkeeping ------------------------------------------------------------------------- */

static int n_pass, n_fail;
static std::string cur;               /* the case being checked */
static int cur_bad;                    /* mismatches reported in it */
static double cur_t0;
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void begin(const char *fmt, ...) {
  char b[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  cur = b;
  cur_bad = 0;
  cur_t0 = now();
}
static void bad(const char *fmt, ...) {
  if (cur_bad++ < 4) {
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL %s: %s\n", cur.c_str(), b);
  }
}
static void end(void) {
  if (cur_bad) n_fail++; else n_pass++;
  if (getenv("KEMU_TIMES") && now() - cur_t0 > 0.1) fprintf(stderr, "%.2f s %s\n", now() - cur_t0, cur.c_str());
  if (cur_bad > 4) fprintf(stderr, "FAIL %s: ... %d mismatches in all\n", cur.c_str(), cur_bad);
}

/* ---- buffers: exact size, 'pad' poisoned bytes before the first element ------------------ */

struct buf {
  char *base = nullptr;
  size_t pad = 0, bytes = 0;
  char *p(void) const { return base + pad; }
};
static std::vector<buf> live_bufs;
static char *alloc(size_t bytes, size_t pad = 0) {
  buf b;
  b.pad = pad;
  b.bytes = bytes;
  b.base = (char *)malloc(pad + bytes + 1);       /* +1: malloc(0) */
  if (!b.base) { fprintf(stderr, "out of memory\n"); exit(2); }
  memset(b.base, 0x5a, pad + bytes);
  POISON(b.base, pad);
  POISON(b.base + pad + bytes, 1);
  live_bufs.push_back(b);
  return b.p();
}
static void free_all(void) {
  for (auto &b : live_bufs) { UNPOISON(b.base, b.pad + b.bytes + 1); free(b.base); }
  live_bufs.clear();
}

/* ---- dtypes ---------------------------------------------------------------------------------- */

/* each dtype's name and element size, by dtype code (the rows of kernels/dtypes.h) */
#define DT_NAME_(E, id, S, kind, half, CT, UT, prec, lo, hi, name, ...) name,
#define DT_SIZE_(E, id, S, ...) (int)sizeof(S),
static const char *dtn[] = { GL_DTYPE_LIST(DT_NAME_) };
static const int dts[] = { GL_DTYPE_LIST(DT_SIZE_) };
#undef DT_NAME_
#undef DT_SIZE_
static constexpr bool isflt(int dt) { return GL_DT_IN(GL_DTSET_FLOAT, dt); }
static constexpr bool iscplx(int dt) { return GL_DT_IN(GL_DTSET_COMPLEX, dt); }

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
  return rng_state;
}
static double urand(void) { return (double)(rnd() >> 11) * 0x1p-53; }

/* Element i of a dtype-dt buffer as double (integers exact below 2^53; complex: the real
** part), and v stored into one (integers wrapped to the width, complex with im = 0). */
#define GETD_CASE_(E, id, S, kind, half, ...) \
  case GL_KD_##E: return part_of(GL_DT_LOAD(half, ((const S *)p)[i]));
#define SETD_CASE_(E, id, S, kind, half, ...) \
  case GL_KD_##E: ((S *)p)[i] = SETD_##kind(half, S, id, v); break;
#define SETD_BOOL(half, S, id, v) GL_DT_STORE(BOOL, half, S, id, FLOAT, v)
#define SETD_UINT(half, S, id, v) GL_DT_STORE(UINT, half, S, id, INT, (int64_t)(v))
#define SETD_INT SETD_UINT
#define SETD_FLOAT(half, S, id, v) GL_DT_STORE(FLOAT, half, S, id, FLOAT, v)
#define SETD_COMPLEX(half, S, id, v) GL_DT_STORE(COMPLEX, half, S, id, FLOAT, v)
static double part_of(double v) { return v; }
static double part_of(gl_complex64 v) { return v.re; }
static double part_of(gl_complex128 v) { return v.re; }
template <class T> static double part_of(T v) { return (double)v; }
static double getd(int dt, const void *p, int64_t i) {
  switch (dt) { GL_DTYPE_LIST(GETD_CASE_) default: return 0; }
}
static void setd(int dt, void *p, int64_t i, double v) {
  switch (dt) { GL_DTYPE_LIST(SETD_CASE_) default: break; }
}
#undef GETD_CASE_
#undef SETD_CASE_
/* A test value for dtype dt: mostly small, sometimes an edge (NaN, inf, -0, extremes). */
static double testval(int dt, bool edges) {
  uint64_t r = rnd();
  if (dt == GL_KD_BOOL) return (double)(r & 1);
  if (dt == GL_KD_UINT8) return (double)(r & 255);
  if (edges && (r & 15) == 0) {
    static const double fe[] = { NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-40, 65504.0, 1e30, -1.0, 0.5 };
    static const double ie[] = { 0, -1, 1, 2147483647.0, -2147483648.0, -7, 31, 32, 64, -100 };
    return isflt(dt) ? fe[(r >> 8) % 10] : ie[(r >> 8) % 10];
  }
  if (isflt(dt)) return (double)(int64_t)(r % 4001 - 2000) / 100.0;
  return (double)(int64_t)(r % 61) - 30;
}
static char *make_vals(int dt, int64_t n, size_t pad = 0, bool edges = true) {
  char *p = alloc((size_t)n * dts[dt], pad);
  for (int64_t i = 0; i < n; i++) setd(dt, p, i, testval(dt, edges));
  return p;
}
static bool same_elem(int dt, const void *a, const void *b, int64_t i) {
  int w = dts[dt];
  if (memcmp((const char *)a + i * w, (const char *)b + i * w, w) == 0) return true;
  if (isflt(dt)) {
    double x = getd(dt, a, i), y = getd(dt, b, i);
    return x != x && y != y;
  }
  return false;
}
static bool close_to(double got, double want, double rtol, double atol) {
  if (want != want) return got != got;
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

/* ---- walks -------------------------------------------------------------------------------------- */

/* A C-order walk over 'shape' with one stride row per operand, as gl_iter would pass it. */
static gl_kiter make_iter(int ndim, const int64_t *shape, int nops, const int64_t (*st)[GL_KMAXDIMS]) {
  gl_kiter it;
  memset(&it, 0, sizeof it);
  it.ndim = ndim;
  it.n = 1;
  for (int d = 0; d < ndim; d++) { it.shape[d] = shape[d]; it.n *= shape[d]; }
  for (int k = 0; k < nops; k++)
    for (int d = 0; d < ndim; d++) it.strides[k][d] = st[k][d];
  bool c = ndim == 1;
  for (int k = 0; k < nops && c; k++) if (st[k][0] != 1) c = false;
  it.contiguous = c;
  return it;
}
static void walk_off(const gl_kiter &it, int64_t i, int k, int64_t *off) {
  int64_t o = 0;
  for (int d = it.ndim - 1; d >= 0; d--) { o += (i % it.shape[d]) * it.strides[k][d]; i /= it.shape[d]; }
  *off = o;
}
/* Elements from the lowest to the highest offset of operand k (min offset into *lo). */
static int64_t span_of(const gl_kiter &it, int k, int64_t *lo) {
  int64_t mn = 0, mx = 0;
  for (int d = 0; d < it.ndim; d++) {
    int64_t e = (it.shape[d] - 1) * it.strides[k][d];
    if (e < 0) mn += e; else mx += e;
  }
  *lo = mn;
  return it.n > 0 ? mx - mn + 1 : 0;
}
/* An operand buffer for walk operand k of dtype dt: returns the first element's address. */
static char *operand(const gl_kiter &it, int k, int dt, size_t pad, bool fill, bool edges = true) {
  int64_t lo, n = span_of(it, k, &lo);
  char *p = fill ? make_vals(dt, n, pad, edges) : alloc((size_t)n * dts[dt], pad);
  return p - lo * dts[dt];
}
static char *clone_operand(const gl_kiter &it, int k, int dt, const char *src) {
  int64_t lo, n = span_of(it, k, &lo);
  char *p = alloc((size_t)n * dts[dt]);
  memcpy(p, src + lo * dts[dt], (size_t)n * dts[dt]);
  return p - lo * dts[dt];
}

/* Walk shapes each elementwise test runs over: name, ndim, shape, strides of up to 4 operands
** (0 = broadcast, negative = reversed), element padding (misalignment) per operand. */
struct wcase {
  const char *name;
  int ndim;
  int64_t shape[3];
  int64_t st[4][GL_KMAXDIMS];
  int pad[4];
};
static std::vector<wcase> walks(int nops) {
  std::vector<wcase> w;
  static const int64_t sizes[] = { 1, 3, 15, 16, 17, 1000, 4099 };
  for (int64_t n : sizes) {
    wcase c = { "contig", 1, { n }, {}, {} };
    for (int k = 0; k < nops; k++) c.st[k][0] = 1;
    w.push_back(c);
    c.name = "contig+misaligned";
    for (int k = 0; k < nops; k++) c.pad[k] = k == 0 ? 1 : 0;
    w.push_back(c);
    c.name = "contig+src misaligned";
    for (int k = 0; k < nops; k++) c.pad[k] = k == nops - 1 ? 3 : 0;
    w.push_back(c);
  }
  /* more than 32 blocks of work: the vector paths cap their grid at one wave (8 blocks on
  ** kemu's 2-SM device) and loop */
  wcase big = { "contig, grid capped", 1, { 140001 }, {}, {} };
  for (int k = 0; k < nops; k++) big.st[k][0] = 1;
  w.push_back(big);
  wcase s = { "strided 2d", 2, { 7, 13 }, {}, {} };
  for (int k = 0; k < nops; k++) { s.st[k][0] = 13 * (k + 1) + 2; s.st[k][1] = k + 1; }
  w.push_back(s);
  wcase b = { "broadcast 3d", 3, { 3, 5, 70 }, {}, {} };
  for (int k = 0; k < nops; k++) {
    b.st[k][0] = k == 0 ? 350 : k == 1 ? 0 : 70;
    b.st[k][1] = k == 0 ? 70 : k == 1 ? 70 : 0;
    b.st[k][2] = k == 0 ? 1 : k == 1 ? 1 : 1;
  }
  w.push_back(b);
  wcase z = { "0-d", 0, {}, {}, {} };
  w.push_back(z);
  wcase r = { "reversed", 1, { 300 }, {}, {} };
  for (int k = 0; k < nops; k++) r.st[k][0] = k == 0 ? 1 : -2;
  w.push_back(r);
  return w;
}

/* ---- elementwise: the ops as in binary.cu / unary.cu ----------------------------------------- */

enum { KK_BA, KK_BD, KK_BC, KK_BL, KK_BB, KK_BS };
enum { KK_UF, KK_US, KK_UP, KK_UL, KK_UB };
#define GL_X(name, kind, F, D, I)                                                             \
  struct tb_##name {                                                                          \
    static constexpr int kind_ = KK_##kind, dtypes_ = GL_DTYPES_##kind;                       \
    static auto f(float a, float b) { (void)a; (void)b; return F; }                           \
    static auto d(double a, double b) { (void)a; (void)b; return D; }                         \
    template <class T, class UT> static auto i(T a, T b) { (void)a; (void)b; return I; }      \
  };
GL_BINARY_OPS(GL_X)
#undef GL_X
#define GL_X(name, kind, F, D, I)                                                             \
  struct tu_##name {                                                                          \
    static constexpr int kind_ = KK_##kind, dtypes_ = GL_DTYPES_##kind;                       \
    static auto f(float x) { (void)x; return F; }                                             \
    static auto d(double x) { (void)x; return D; }                                            \
    template <class T, class UT> static auto i(T x) { (void)x; return I; }                    \
  };
GL_UNARY_OPS(GL_X)
#undef GL_X

template <int DT, class V> static void store_out(void *dst, int64_t off, bool outbool, V v) {
  if (outbool) { ((uint8_t *)dst)[off] = (uint8_t)(v != 0); return; }
  typedef typename gl_dt<DT>::S S;
  S s;
  if constexpr (DT == GL_KD_FLOAT16) s = gl_f32_to_f16((float)v);
  else if constexpr (DT == GL_KD_BFLOAT16) s = gl_f32_to_bf16((float)v);
  else s = (S)v;
  ((S *)dst)[off] = s;
}

template <class Op, int DT> static auto tapply2(typename gl_dt<DT>::S sa, typename gl_dt<DT>::S sb) {
  auto a = gl_dt<DT>::load(sa);
  auto b = gl_dt<DT>::load(sb);
  if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT32) return Op::f(a, b);
  else if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT64) return Op::d(a, b);
  else return Op::template i<typename gl_dt<DT>::T, typename gl_dt<DT>::UT>(a, b);
}
template <class Op, int DT> static auto tapply1(typename gl_dt<DT>::S sx) {
  auto x = gl_dt<DT>::load(sx);
  if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT32) return Op::f(x);
  else if constexpr (gl_dt<DT>::compute == GL_KCOMPUTE_FLOAT64) return Op::d(x);
  else return Op::template i<typename gl_dt<DT>::T, typename gl_dt<DT>::UT>(x);
}

/* The dtypes an op's kind takes (elem_ops.h's GL_DTYPES_<kind>, what the kernels stamp). */
static constexpr bool takes(int dtypes, int dt) { return GL_DT_IN(dtypes, dt); }

template <class Op, int DT>
static void test_binary_dt(int op, const char *name) {
  typedef typename gl_dt<DT>::S S;
  const bool ob = Op::kind_ == KK_BC || Op::kind_ == KK_BL;
  const int odt = ob ? GL_KD_BOOL : DT;
  for (const wcase &w : walks(3)) {
    for (int scal = 0; scal < 3; scal++) {         /* 0 arrays, 1 a scalar, 2 b scalar */
      if (scal && w.shape[0] > 5000) continue;
      gl_kiter it = make_iter(w.ndim, w.shape, 3, w.st);
      begin("binary %s %s n=%lld %s%s", name, dtn[DT], (long long)it.n, w.name,
            scal == 1 ? " a=scalar" : scal == 2 ? " b=scalar" : "");
      char *a = operand(it, 1, DT, w.pad[1] * dts[DT], true);
      char *b = operand(it, 2, DT, w.pad[2] * dts[DT], true);
      char *d = operand(it, 0, odt, w.pad[0] * dts[odt], false);
      char *ref = clone_operand(it, 0, odt, d);
      gl_kval va = { a, { 0, 0 } }, vb = { b, { 0, 0 } };
      S sa, sb;
      if (scal == 1) { sa = ((S *)a)[0]; va.p = NULL; memcpy(&va.bits, &sa, sizeof sa); }
      if (scal == 2) { sb = ((S *)b)[0]; vb.p = NULL; memcpy(&vb.bits, &sb, sizeof sb); }
      int rc = gl_klaunch_binary(NULL, op, DT, &it, d, va, vb);
      if (!takes(Op::dtypes_, DT)) {
        if (rc != GL_KERR_NOTSUP) bad("rc %d, want NOTSUP", rc);
        end();
        free_all();
        return;
      }
      if (rc != 0) bad("rc %d", rc);
      if constexpr (takes(Op::dtypes_, DT)) {
        for (int64_t i = 0; i < it.n; i++) {
          int64_t o0, o1, o2;
          walk_off(it, i, 0, &o0); walk_off(it, i, 1, &o1); walk_off(it, i, 2, &o2);
          S x = scal == 1 ? sa : ((S *)a)[o1], y = scal == 2 ? sb : ((S *)b)[o2];
          store_out<DT>(ref, o0, ob, tapply2<Op, DT>(x, y));
          if (!same_elem(odt, d, ref, o0)) bad("element %lld: got %g want %g", (long long)i, getd(odt, d, o0), getd(odt, ref, o0));
        }
      }
      end();
      free_all();
    }
  }
  /* in place: dst is a (the vector path reads before it writes) */
  if (takes(Op::dtypes_, DT) && !ob) {
    begin("binary %s %s in place n=1001", name, dtn[DT]);
    int64_t n = 1001, sh[1] = { n }, st[3][GL_KMAXDIMS] = { { 1 }, { 1 }, { 1 } };
    gl_kiter it = make_iter(1, sh, 3, st);
    char *a = make_vals(DT, n), *b = make_vals(DT, n), *a0 = alloc(n * sizeof(S));
    memcpy(a0, a, n * sizeof(S));
    int rc = gl_klaunch_binary(NULL, op, DT, &it, a, gl_kval{ a, { 0, 0 } }, gl_kval{ b, { 0, 0 } });
    if (rc) bad("rc %d", rc);
    if constexpr (takes(Op::dtypes_, DT)) {
      char *ref = alloc(n * sizeof(S));
      for (int64_t i = 0; i < n; i++) {
        store_out<DT>(ref, i, false, tapply2<Op, DT>(((S *)a0)[i], ((S *)b)[i]));
        if (!same_elem(DT, a, ref, i)) bad("element %lld", (long long)i);
      }
    }
    end();
    free_all();
  }
}

template <class Op, int DT>
static void test_unary_dt(int op, const char *name) {
  typedef typename gl_dt<DT>::S S;
  const bool ob = Op::kind_ == KK_UP || Op::kind_ == KK_UL;
  const int odt = ob ? GL_KD_BOOL : DT;
  for (const wcase &w : walks(2)) {
    gl_kiter it = make_iter(w.ndim, w.shape, 2, w.st);
    begin("unary %s %s n=%lld %s", name, dtn[DT], (long long)it.n, w.name);
    char *x = operand(it, 1, DT, w.pad[1] * dts[DT], true);
    char *d = operand(it, 0, odt, w.pad[0] * dts[odt], false);
    char *ref = clone_operand(it, 0, odt, d);
    int rc = gl_klaunch_unary(NULL, op, DT, &it, d, x);
    if (!takes(Op::dtypes_, DT)) {
      if (rc != GL_KERR_NOTSUP) bad("rc %d, want NOTSUP", rc);
      end();
      free_all();
      return;
    }
    if (rc != 0) bad("rc %d", rc);
    if constexpr (takes(Op::dtypes_, DT)) {
      for (int64_t i = 0; i < it.n; i++) {
        int64_t o0, o1;
        walk_off(it, i, 0, &o0); walk_off(it, i, 1, &o1);
        store_out<DT>(ref, o0, ob, tapply1<Op, DT>(((S *)x)[o1]));
        if (!same_elem(odt, d, ref, o0)) bad("element %lld: got %g want %g", (long long)i, getd(odt, d, o0), getd(odt, ref, o0));
      }
    }
    end();
    free_all();
  }
}

/* ---- copy, fill, arange, where -------------------------------------------------------------- */

/* The CPU's conversion of element i of src (dtype sdt) into dst (dtype ddt). */
template <int DD, int SD> static void conv1(void *dst, int64_t od, const void *src, int64_t os) {
  ((typename gl_dt<DD>::S *)dst)[od] = gl_convert<DD, SD>(((const typename gl_dt<SD>::S *)src)[os]);
}
static void conv_any(int ddt, int sdt, void *dst, int64_t od, const void *src, int64_t os) {
  GL_DISPATCH_DTYPE_ALL(ddt, DD, GL_DISPATCH_DTYPE_ALL(sdt, SD, (conv1<DD, SD>(dst, od, src, os), 0)));
}

static void test_copy(void) {
  for (int ddt = 0; ddt < GL_KD_N; ddt++)
    for (int sdt = 0; sdt < GL_KD_N; sdt++)
      for (const wcase &w : walks(2)) {
        if (w.ndim == 1 && w.shape[0] > 17 && w.shape[0] != 4099) continue;
        gl_kiter it = make_iter(w.ndim, w.shape, 2, w.st);
        begin("copy %s <- %s n=%lld %s", dtn[ddt], dtn[sdt], (long long)it.n, w.name);
        char *s = operand(it, 1, sdt, w.pad[1] * dts[sdt], true);
        char *d = operand(it, 0, ddt, w.pad[0] * dts[ddt], false);
        char *ref = clone_operand(it, 0, ddt, d);
        int rc = gl_klaunch_copy(NULL, &it, d, ddt, s, sdt);
        if (rc) bad("rc %d", rc);
        for (int64_t i = 0; i < it.n; i++) {
          int64_t o0, o1;
          walk_off(it, i, 0, &o0); walk_off(it, i, 1, &o1);
          conv_any(ddt, sdt, ref, o0, s, o1);
          if (!same_elem(ddt, d, ref, o0)) bad("element %lld: got %g want %g", (long long)i, getd(ddt, d, o0), getd(ddt, ref, o0));
        }
        end();
        free_all();
      }
}

static void test_fill_where(void) {
  static const int widths[] = { 1, 2, 4, 8, 16 };
  static const int wdt[] = { GL_KD_UINT8, GL_KD_FLOAT16, GL_KD_INT32, GL_KD_INT64, GL_KD_COMPLEX128 };
  for (int wi = 0; wi < 5; wi++) {
    int W = widths[wi], dt = wdt[wi];
    for (const wcase &w : walks(1)) {
      gl_kiter it = make_iter(w.ndim, w.shape, 1, w.st);
      begin("fill width %d n=%lld %s", W, (long long)it.n, w.name);
      char *d = operand(it, 0, dt, w.pad[0] * W, true);
      char *ref = clone_operand(it, 0, dt, d);
      uint64_t bits[2] = { 0x0123456789abcdefull, 0x7edcba9876543210ull };
      int rc = gl_klaunch_fill(NULL, &it, d, W, bits);
      if (rc) bad("rc %d", rc);
      for (int64_t i = 0; i < it.n; i++) {
        int64_t o;
        walk_off(it, i, 0, &o);
        memcpy(ref + o * W, bits, W);
        if (memcmp(ref + o * W, d + o * W, W)) bad("element %lld", (long long)i);
      }
      end();
      free_all();
    }
    for (const wcase &w : walks(4)) {
      for (int scal = 0; scal < 3; scal++) {
        if (scal && w.shape[0] > 5000) continue;
        gl_kiter it = make_iter(w.ndim, w.shape, 4, w.st);
        begin("where width %d n=%lld %s scal=%d", W, (long long)it.n, w.name, scal);
        char *d = operand(it, 0, dt, w.pad[0] * W, false);
        char *c = operand(it, 1, GL_KD_BOOL, w.pad[1], true);
        char *a = operand(it, 2, dt, w.pad[2] * W, true);
        char *b = operand(it, 3, dt, w.pad[3] * W, true);
        char *ref = clone_operand(it, 0, dt, d);
        gl_kval va = { a, { 0, 0 } }, vb = { b, { 0, 0 } };
        if (scal == 1) { va.p = NULL; va.bits[0] = va.bits[1] = 0x1111111111111111ull; }
        if (scal == 2) { vb.p = NULL; vb.bits[0] = vb.bits[1] = 0x2222222222222222ull; }
        int rc = gl_klaunch_where(NULL, &it, d, W, c, va, vb);
        if (rc) bad("rc %d", rc);
        for (int64_t i = 0; i < it.n; i++) {
          int64_t o[4];
          for (int k = 0; k < 4; k++) walk_off(it, i, k, &o[k]);
          if (c[o[1]]) memcpy(ref + o[0] * W, va.p ? a + o[2] * W : (const char *)va.bits, W);
          else memcpy(ref + o[0] * W, vb.p ? b + o[3] * W : (const char *)vb.bits, W);
          if (memcmp(ref + o[0] * W, d + o[0] * W, W)) bad("element %lld", (long long)i);
        }
        end();
        free_all();
      }
    }
  }
  for (int dt = 0; dt < GL_KD_N; dt++)
    for (int64_t n : { 1, 5, 1000, 4099 }) {
      begin("arange %s n=%lld", dtn[dt], (long long)n);
      char *d = alloc((size_t)n * dts[dt]);
      char *ref = alloc((size_t)n * dts[dt]);
      double start = -3.5, step = 0.25;
      int rc = gl_klaunch_arange(NULL, d, dt, n, start, step);
      if (rc) bad("rc %d", rc);
      for (int64_t i = 0; i < n; i++) {
        double v = start + (double)i * step;
        switch (dt) {
#define GL_C(E, id, S, kind, half, ...) case GL_KD_##E: ((S *)ref)[i] = GL_DT_STORE(kind, half, S, id, FLOAT, v); break;
          GL_DTYPE_LIST(GL_C)
#undef GL_C
        }
        if (!same_elem(dt, d, ref, i)) bad("element %lld: got %g want %g", (long long)i, getd(dt, d, i), getd(dt, ref, i));
      }
      end();
      free_all();
    }
}

/* ---- reductions ------------------------------------------------------------------------------- */

static const char *redn[] = { "sum", "prod", "max", "min", "argmax", "argmin", "all", "any", "mean", "var", "norm", "logsumexp" };

/* The reduction of src (ndim axes 'shape', strides 'ss' in elements, the axes in 'mask'
** reduced) as gl_iter/cuda_reduce.c would describe it; dst contiguous over the kept axes. */
static gl_reduce_args make_red(int ndim, const int64_t *shape, const int64_t *ss, unsigned mask) {
  gl_reduce_args r;
  memset(&r, 0, sizeof r);
  r.M = r.K = 1;
  int64_t kshape[GL_KMAXDIMS], kss[GL_KMAXDIMS];
  int nk = 0;
  for (int d = 0; d < ndim; d++) {
    if (mask >> d & 1u) { r.reduced_shape[r.nreduced] = shape[d]; r.reduced_src_strides[r.nreduced++] = ss[d]; r.K *= shape[d]; }
    else { kshape[nk] = shape[d]; kss[nk++] = ss[d]; r.M *= shape[d]; }
  }
  int64_t ds = 1;
  for (int k = nk - 1; k >= 0; k--) { r.kept_shape[k] = kshape[k]; r.kept_src_strides[k] = kss[k]; r.kept_dst_strides[k] = ds; ds *= kshape[k]; }
  r.nkept = nk;
  return r;
}

struct rref { double f; int64_t i; bool isint; };

/* The CPU's result of reduction op over the K values of one output (vals as the compute type
** has them: f for float compute types, iv for int64). */
static rref ref_reduce(int op, int ctk, const std::vector<double> &f, const std::vector<int64_t> &iv, double param) {
  rref o = { 0, 0, false };
  size_t K = ctk == GL_KCOMPUTE_INT64 ? iv.size() : f.size();
  bool f32 = ctk == GL_KCOMPUTE_FLOAT32;
  auto rf = [&](long double v) { return f32 ? (double)(float)v : (double)v; };
  auto ext = [&](bool max, bool absv) {
    double m = max ? -INFINITY : INFINITY;
    for (double v : f) {
      if (absv) v = fabs(v);
      if (m != m) break;
      if (v != v || (max ? v > m : v < m)) m = v;
    }
    return m;
  };
  if (op == GL_KR_ARGMAX || op == GL_KR_ARGMIN) {
    o.isint = true;
    bool max = op == GL_KR_ARGMAX;
    int64_t bi = 0;
    for (size_t k = 0; k < K; k++) {
      if (ctk == GL_KCOMPUTE_INT64) { if (max ? iv[k] > iv[bi] : iv[k] < iv[bi]) bi = (int64_t)k; }
      else {
        if (f[bi] != f[bi]) break;
        if (f[k] != f[k] || (max ? f[k] > f[bi] : f[k] < f[bi])) bi = (int64_t)k;
      }
    }
    o.i = bi;
    return o;
  }
  if (op == GL_KR_ALL || op == GL_KR_ANY) {
    o.isint = true;
    bool all = op == GL_KR_ALL, r = all;
    for (size_t k = 0; k < K; k++) {
      bool nz = ctk == GL_KCOMPUTE_INT64 ? iv[k] != 0 : f[k] != 0;
      if (all) r = r && nz; else r = r || nz;
    }
    o.i = r;
    return o;
  }
  if (ctk == GL_KCOMPUTE_INT64) {
    o.isint = true;
    uint64_t a = op == GL_KR_PROD ? 1 : 0;
    int64_t m = op == GL_KR_MAX ? INT64_MIN : INT64_MAX;
    for (int64_t v : iv) {
      if (op == GL_KR_SUM) a += (uint64_t)v;
      else if (op == GL_KR_PROD) a *= (uint64_t)v;
      else if (op == GL_KR_MAX) m = v > m ? v : m;
      else m = v < m ? v : m;
    }
    o.i = op == GL_KR_SUM || op == GL_KR_PROD ? (int64_t)a : m;
    return o;
  }
  long double s = 0;
  switch (op) {
    case GL_KR_SUM: case GL_KR_MEAN:
      for (double v : f) s += v;
      o.f = op == GL_KR_MEAN ? rf(s / (long double)K) : rf(s);
      break;
    case GL_KR_PROD:
      s = 1;
      for (double v : f) s *= v;
      o.f = rf(s);
      break;
    case GL_KR_MAX: o.f = ext(true, false); break;
    case GL_KR_MIN: o.f = ext(false, false); break;
    case GL_KR_VAR: {
      for (double v : f) s += v;
      double mean = rf(s / (long double)K);
      long double q = 0;
      for (double v : f) { double d = f32 ? (double)((float)v - (float)mean) : v - mean; q += d * d; }
      double den = (double)K - param;
      o.f = rf(q / (den > 0 ? den : 0.0));
      break;
    }
    case GL_KR_NORM:
      if (param == 2) { for (double v : f) s += v * v; o.f = rf(sqrtl(s)); }
      else if (param == 1) { for (double v : f) s += fabs(v); o.f = rf(s); }
      else if (isinf(param)) o.f = ext(param > 0, true);
      else if (param == 0) { for (double v : f) s += v != 0; o.f = rf(s); }
      else { for (double v : f) s += powl(fabsl(v), param); o.f = rf(powl(s, 1.0L / param)); }
      break;
    case GL_KR_LOGSUMEXP: {
      double m = ext(true, false), sh = isfinite(m) ? rf(m) : 0.0;
      for (double v : f) s += expl((long double)v - sh);
      o.f = rf(logl(s) + sh);
      break;
    }
  }
  return o;
}

static int red_ddt = -1;              /* an output dtype other than the natural one */

/* One reduction case: src of dtype sdt over (ndim, shape, ss) with 'pad' elements before it
** (misaligned), axes 'mask' reduced. gen: 0 test values, 1 near 1 (prod), 2 with a NaN at
** position nanpos of every output's run, 3 with edges (inf, -0, ...). */
static void test_reduce_case(int op, int sdt, int ctk, int ndim, const int64_t *shape, const int64_t *ss,
                             unsigned mask, int pad, double param, int gen, int64_t nanpos, const char *tag) {
  gl_reduce_args r = make_red(ndim, shape, ss, mask);
  int ddt = op == GL_KR_ARGMAX || op == GL_KR_ARGMIN ? GL_KD_INT64 : op == GL_KR_ALL || op == GL_KR_ANY ? GL_KD_BOOL
          : ctk == GL_KCOMPUTE_INT64 ? GL_KD_INT64 : ctk == GL_KCOMPUTE_FLOAT64 ? GL_KD_FLOAT64 : GL_KD_FLOAT32;
  if (red_ddt >= 0 && op != GL_KR_ARGMAX && op != GL_KR_ARGMIN && op != GL_KR_ALL && op != GL_KR_ANY) ddt = red_ddt;
  begin("reduce %s(%g) %s ct%d -> %s M=%lld K=%lld %s pad=%d gen=%d", redn[op], param, dtn[sdt], ctk, dtn[ddt],
        (long long)r.M, (long long)r.K, tag, pad, gen);
  int64_t mn = 0, mx = 0, span;
  bool empty = false;
  for (int d = 0; d < ndim; d++) {
    int64_t e = (shape[d] - 1) * ss[d];
    if (shape[d] == 0) empty = true;
    if (e < 0) mn += e; else mx += e;
  }
  span = empty ? 1 : mx - mn + 1;
  char *src = alloc((size_t)span * dts[sdt], (size_t)pad * dts[sdt]);
  for (int64_t i = 0; i < span; i++) {
    double v = gen == 1 ? (isflt(sdt) ? 0.9 + 0.2 * urand() : (double)(1 + (rnd() & 1)))
             : testval(sdt, gen == 3);
    setd(sdt, src, i, v);
  }
  src -= mn * dts[sdt];                              /* the first element of a reversed view */
  size_t sbytes = gl_reduce_scratch(&r);
  char *scratch = alloc(sbytes);
  char *dst = alloc((size_t)r.M * dts[ddt]);
  /* the offsets of each output's K elements, in the kernels' order (C order over rshape) */
  std::vector<int64_t> roff(r.K);
  for (int64_t k = 0; k < r.K; k++) {
    int64_t q = k, o = 0;
    for (int d = r.nreduced - 1; d >= 0; d--) { o += (q % r.reduced_shape[d]) * r.reduced_src_strides[d]; q /= r.reduced_shape[d]; }
    roff[k] = o;
  }
  if (gen == 2 && isflt(sdt))
    for (int64_t m = 0; m < r.M; m++) {
      int64_t q = m, so = 0;
      for (int d = r.nkept - 1; d >= 0; d--) { so += (q % r.kept_shape[d]) * r.kept_src_strides[d]; q /= r.kept_shape[d]; }
      setd(sdt, src, so + roff[nanpos % r.K], NAN);
      if (r.K > 3) setd(sdt, src, so + roff[(nanpos * 7 + 1) % r.K], NAN);
    }
  int rc = gl_klaunch_reduce(NULL, op, &r, dst, ddt, src, sdt, ctk, param, scratch);
  bool ci = ctk == GL_KCOMPUTE_INT64;
  bool notsup = ci && (op == GL_KR_MEAN || op == GL_KR_VAR || op == GL_KR_NORM || op == GL_KR_LOGSUMEXP);
  if (notsup) {
    if (rc != GL_KERR_NOTSUP) bad("rc %d, want NOTSUP", rc);
    end();
    free_all();
    return;
  }
  if (rc) bad("rc %d", rc);
  std::vector<double> f(r.K);
  std::vector<int64_t> iv(r.K);
  for (int64_t m = 0; m < r.M && !rc; m++) {
    int64_t q = m, so = 0, dof = 0;
    for (int d = r.nkept - 1; d >= 0; d--) { so += (q % r.kept_shape[d]) * r.kept_src_strides[d]; dof += (q % r.kept_shape[d]) * r.kept_dst_strides[d]; q /= r.kept_shape[d]; }
    double sabs = 0;
    for (int64_t k = 0; k < r.K; k++) {
      int64_t e = so + roff[k];
      double v = getd(sdt, src, e);
      if (ctk == GL_KCOMPUTE_FLOAT32) f[k] = (double)(float)v;
      else if (ctk == GL_KCOMPUTE_FLOAT64) f[k] = v;
      else if (sdt == GL_KD_INT64) iv[k] = ((int64_t *)src)[e];
      else iv[k] = isflt(sdt) ? gl_sat_int64(v) : (int64_t)v;
      if (ctk != 2 && f[k] == f[k] && !isinf(f[k])) sabs += fabs(f[k]);
    }
    if (ctk == GL_KCOMPUTE_INT64) f.clear(); else iv.clear();
    rref want = ref_reduce(op, ctk, f, iv, param);
    f.resize(r.K);
    iv.resize(r.K);
    if (want.isint) {
      int64_t got = ddt == GL_KD_INT64 ? ((int64_t *)dst)[dof] : (int64_t)getd(ddt, dst, dof);
      if (got != want.i) bad("output %lld: got %lld want %lld", (long long)m, (long long)got, (long long)want.i);
    } else {
      double got = getd(ddt, dst, dof);
      if (ddt == GL_KD_FLOAT16 || ddt == GL_KD_BFLOAT16) {     /* the result as the output stores it */
        char tmp[2];
        setd(ddt, tmp, 0, want.f);
        want.f = getd(ddt, tmp, 0);
      }
      bool exact = op == GL_KR_MAX || op == GL_KR_MIN || (op == GL_KR_NORM && isinf(param));
      double rt = ddt == GL_KD_FLOAT16 || ddt == GL_KD_BFLOAT16 ? 8e-3 : ctk == GL_KCOMPUTE_FLOAT32 ? 1e-5 : 1e-12, at = (ctk == GL_KCOMPUTE_FLOAT32 ? 1e-6 : 1e-13) * (sabs + 1);
      if (op == GL_KR_VAR) at *= 50 * (sabs / (double)r.K + 1);
      if (op == GL_KR_NORM && param != 1 && param != 0) at = rt * (fabs(want.f) + 1);
      if (exact ? !(got == want.f || (got != got && want.f != want.f)) : !close_to(got, want.f, rt, at))
        bad("output %lld: got %.17g want %.17g", (long long)m, got, want.f);
    }
  }
  end();
  free_all();
}

static int natural_ct(int sdt) { return sdt == GL_KD_FLOAT64 ? 1 : isflt(sdt) ? 0 : 2; }

static void test_reduce(bool quick) {
  /* full reductions of one contiguous run: gl_k_rfull (and gl_k_rpass for the kinds it lacks) */
  static const int64_t Ks_all[] = { 1, 2, 7, 255, 256, 257, 4095, 4096, 4097, 65537, 300001 };
  static const int64_t Ks_few[] = { 1, 257, 4097, 70001 };
  /* the dtypes whose values the reference reads exactly (complex sources and uint64's order:
  ** test_complex_reduce) */
  for (int sdt : { GL_KD_BOOL, GL_KD_UINT8, GL_KD_INT32, GL_KD_INT64, GL_KD_FLOAT16, GL_KD_BFLOAT16, GL_KD_FLOAT32,
                   GL_KD_FLOAT64 }) {
    bool f32 = sdt == GL_KD_FLOAT32;
    const int64_t *Ks = f32 ? Ks_all : Ks_few;
    int nK = f32 ? 11 : 4;
    for (int ki = 0; ki < nK; ki++) {
      int64_t K = Ks[ki], sh[1] = { K }, st[1] = { 1 };
      if (quick && K > 5000) continue;
      for (int op = 0; op <= GL_KR_LOGSUMEXP; op++) {
        int ct = natural_ct(sdt);
        if (op == GL_KR_NORM) {
          for (double p : { 2.0, 1.0, (double)INFINITY, -(double)INFINITY, 0.0, 3.0 })
            test_reduce_case(op, sdt, ct, 1, sh, st, 1, 0, p, 0, 0, "full");
          continue;
        }
        double param = op == GL_KR_VAR ? 1 : 0;
        test_reduce_case(op, sdt, ct, 1, sh, st, 1, 0, param, op == GL_KR_PROD, 0, "full");
        if (ki % 2 == 1 || f32) test_reduce_case(op, sdt, ct, 1, sh, st, 1, 1 + (int)(K % 3), param, op == GL_KR_PROD, 0, "full");
        if (isflt(sdt) && op != GL_KR_PROD) test_reduce_case(op, sdt, ct, 1, sh, st, 1, 0, param, 2, K / 3, "full nan");
      }
    }
  }
  /* a float32 source in double and int32 in double (non-natural compute types: gl_k_rpass) */
  {
    int64_t sh[1] = { 5000 }, st[1] = { 1 };
    for (int op = 0; op <= GL_KR_LOGSUMEXP; op++) {
      test_reduce_case(op, GL_KD_FLOAT32, 1, 1, sh, st, 1, 0, op == GL_KR_NORM ? 2 : 0, op == GL_KR_PROD, 0, "full f32 in f64");
      test_reduce_case(op, GL_KD_INT32, 1, 1, sh, st, 1, 0, op == GL_KR_NORM ? 2 : 0, op == GL_KR_PROD, 0, "full int32 in f64");
    }
  }
  /* other output dtypes; empty reductions (K = 0); reversed views; many outputs of long runs */
  {
    int64_t sh[2] = { 3, 700 }, st[2] = { 700, 1 }, rst[2] = { -700, -1 }, e0[2] = { 5, 0 }, est[2] = { 1, 1 };
    for (int odt : { GL_KD_FLOAT16, GL_KD_BFLOAT16, GL_KD_FLOAT64 }) {
      red_ddt = odt;
      for (int op : { GL_KR_SUM, GL_KR_MEAN, GL_KR_MAX, GL_KR_VAR, GL_KR_NORM, GL_KR_LOGSUMEXP }) {
        test_reduce_case(op, GL_KD_FLOAT32, 0, 2, sh, st, 2, 0, op == GL_KR_NORM ? 2 : 0, 0, 0, "rows");
        test_reduce_case(op, GL_KD_FLOAT32, 0, 1, sh + 1, st + 1, 1, 1, op == GL_KR_NORM ? 2 : 0, 0, 0, "full");
      }
    }
    red_ddt = GL_KD_INT32;
    for (int op : { GL_KR_SUM, GL_KR_PROD, GL_KR_MAX, GL_KR_MIN })
      test_reduce_case(op, GL_KD_INT64, 2, 2, sh, st, 2, 0, 0, op == GL_KR_PROD, 0, "rows to int32");
    red_ddt = -1;
    for (int op : { GL_KR_SUM, GL_KR_PROD, GL_KR_ALL, GL_KR_ANY }) {
      test_reduce_case(op, GL_KD_FLOAT32, 0, 2, e0, est, 2, 0, 0, 0, 0, "empty axis");
      test_reduce_case(op, GL_KD_INT32, 2, 2, e0, est, 2, 0, 0, 0, 0, "empty axis");
    }
    for (int op = 0; op <= GL_KR_LOGSUMEXP; op++) {
      test_reduce_case(op, GL_KD_FLOAT32, 0, 2, sh, rst, 2, 0, op == GL_KR_VAR ? 1 : 0, op == GL_KR_PROD, 0, "reversed rows");
      test_reduce_case(op, GL_KD_FLOAT32, 0, 2, sh, rst, 3, 0, op == GL_KR_VAR ? 1 : 0, op == GL_KR_PROD, 0, "reversed all");
      test_reduce_case(op, GL_KD_FLOAT64, 1, 2, sh, rst, 1, 0, op == GL_KR_VAR ? 1 : 0, op == GL_KR_PROD, 0, "reversed cols");
    }
    int64_t big[2] = { 2, 40000 }, bst[2] = { 40000, 1 };
    for (int op : { GL_KR_SUM, GL_KR_ARGMAX, GL_KR_VAR, GL_KR_LOGSUMEXP, GL_KR_ANY })
      test_reduce_case(op, GL_KD_FLOAT32, 0, 2, big, bst, 2, 0, 0, 0, 0, "2 long rows");
    /* var with ddof >= K: division by 0 */
    int64_t k3[1] = { 3 }, s1[1] = { 1 };
    test_reduce_case(GL_KR_VAR, GL_KD_FLOAT32, 0, 1, k3, s1, 1, 0, 3, 0, 0, "ddof = K");
    test_reduce_case(GL_KR_VAR, GL_KD_FLOAT64, 1, 1, k3, s1, 1, 0, 5, 0, 0, "ddof > K");
  }
  /* per-axis reductions: rows (G = 32 / 256), columns (G = 1), several axes, strided views */
  struct pc { const char *tag; int ndim; int64_t shape[3]; int64_t ss[3]; unsigned mask; };
  std::vector<pc> cs = {
    { "rows 260x300 axis 1", 2, { 260, 300 }, { 300, 1 }, 2 },
    { "cols 300x260 axis 0", 2, { 300, 260 }, { 260, 1 }, 1 },
    { "rows 3x9000 axis 1", 2, { 3, 9000 }, { 9000, 1 }, 2 },
    { "cols 5000x7 axis 0", 2, { 5000, 7 }, { 7, 1 }, 1 },
    { "3d 4x50x33 axes 0,2", 3, { 4, 50, 33 }, { 1650, 33, 1 }, 5 },
    { "3d 4x50x33 axis 1", 3, { 4, 50, 33 }, { 1650, 33, 1 }, 2 },
    { "strided 1x5000 (stride 2)", 2, { 1, 5000 }, { 10000, 2 }, 2 },
    { "all of 2d 70x90", 2, { 70, 90 }, { 90, 1 }, 3 },
    { "transposed 90x70 axis 1", 2, { 90, 70 }, { 1, 90 }, 2 },
  };
  for (const pc &c : cs)
    for (int sdt : { GL_KD_FLOAT32, GL_KD_FLOAT64, GL_KD_INT32, GL_KD_FLOAT16 }) {
      if (quick && sdt == GL_KD_FLOAT16) continue;
      for (int op = 0; op <= GL_KR_LOGSUMEXP; op++) {
        int ct = natural_ct(sdt);
        double param = op == GL_KR_VAR ? 0 : op == GL_KR_NORM ? 2 : 0;
        test_reduce_case(op, sdt, ct, c.ndim, c.shape, c.ss, c.mask, 0, param, op == GL_KR_PROD, 0, c.tag);
        if (sdt == GL_KD_FLOAT32 && op != GL_KR_PROD) test_reduce_case(op, sdt, ct, c.ndim, c.shape, c.ss, c.mask, 0, param, 2, 5, c.tag);
      }
      if (sdt == GL_KD_FLOAT32)
        for (double p : { 1.0, (double)INFINITY, 0.0, 3.0 })
          test_reduce_case(GL_KR_NORM, sdt, 0, c.ndim, c.shape, c.ss, c.mask, 0, p, 0, 0, c.tag);
    }
}

/* ---- scans --------------------------------------------------------------------------------------- */

/* A scan of 'lines' contiguous lines of K elements, or (axis0) of a (K, lines) array along
** its first axis. */
static gl_scan_args make_scan(int64_t lines, int64_t K, bool axis0) {
  gl_scan_args s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.lines = lines;
  s.K = K;
  s.shape[0] = lines;
  if (axis0) { s.src_stride = s.dst_stride = lines; s.src_strides[0] = s.dst_strides[0] = 1; }
  else { s.src_stride = s.dst_stride = 1; s.src_strides[0] = s.dst_strides[0] = K; }
  return s;
}

static void test_scan(void) {
  struct sc { int64_t lines, K; bool axis0; };
  std::vector<sc> cs = { { 1, 1, false }, { 3, 7, false }, { 1, 5000, false }, { 5, 513, false }, { 5, 513, true },
                         { 300, 40, false }, { 40, 300, true }, { 2, 256, false } };
  for (const sc &c : cs)
    for (int sdt : { GL_KD_FLOAT32, GL_KD_FLOAT64, GL_KD_INT32, GL_KD_INT64, GL_KD_BOOL, GL_KD_FLOAT16 })
      for (int prod = 0; prod < 2; prod++) {
        int ctk = natural_ct(sdt);
        int ddt = ctk == GL_KCOMPUTE_INT64 ? GL_KD_INT64 : ctk == GL_KCOMPUTE_FLOAT64 ? GL_KD_FLOAT64 : sdt;
        begin("scan %s %s lines=%lld K=%lld%s", prod ? "cumprod" : "cumsum", dtn[sdt], (long long)c.lines,
              (long long)c.K, c.axis0 ? " (axis 0)" : "");
        int64_t n = c.lines * c.K;
        char *src = alloc((size_t)n * dts[sdt]);
        for (int64_t i = 0; i < n; i++)
          setd(sdt, src, i, prod ? (isflt(sdt) ? 0.99 + 0.02 * urand() : (double)(1 + (rnd() % 3 == 0))) : testval(sdt, false));
        char *dst = alloc((size_t)n * dts[ddt]);
        gl_scan_args s = make_scan(c.lines, c.K, c.axis0);
        int rc = gl_klaunch_scan(NULL, prod, &s, dst, ddt, src, sdt, ctk);
        if (rc) bad("rc %d", rc);
        for (int64_t l = 0; l < c.lines && !rc; l++) {
          long double acc = prod ? 1 : 0;
          uint64_t ia = prod ? 1 : 0;
          for (int64_t k = 0; k < c.K; k++) {
            int64_t o = l * s.src_strides[0] + k * s.src_stride;
            double v = getd(sdt, src, o);
            if (ctk == GL_KCOMPUTE_INT64) {
              int64_t x = sdt == GL_KD_INT64 ? ((int64_t *)src)[o] : (int64_t)v;
              ia = prod ? ia * (uint64_t)x : ia + (uint64_t)x;
              int64_t got = ((int64_t *)dst)[o];
              if (got != (int64_t)ia) { bad("line %lld k %lld: got %lld want %lld", (long long)l, (long long)k, (long long)got, (long long)ia); break; }
            } else {
              if (ctk == GL_KCOMPUTE_FLOAT32) v = (double)(float)v;
              acc = prod ? acc * v : acc + v;
              double want = ctk == GL_KCOMPUTE_FLOAT32 ? (double)(float)acc : (double)acc, got = getd(ddt, dst, o);
              double tol = (ctk == GL_KCOMPUTE_FLOAT32 ? 2e-5 : 1e-12) * (prod ? 1 : (double)(k + 1) * 20) +
                           (sdt == GL_KD_FLOAT16 ? fabs(want) * 1e-3 : 0);
              if (!close_to(got, want, ctk == GL_KCOMPUTE_FLOAT32 ? 1e-4 : 1e-12, tol)) { bad("line %lld k %lld: got %.9g want %.9g", (long long)l, (long long)k, got, want); break; }
            }
          }
        }
        end();
        free_all();
      }
}

/* ---- random ------------------------------------------------------------------------------------- */

/* Element i of a fill by the table in kernels/philox.h, computed as cpu_random.c does. */
static void rand_ref(int dist, int dt, void *dst, int64_t i, uint64_t seed, uint64_t off, double a, double b,
                     int64_t lo, uint64_t range, const double *p) {
  uint32_t w[4];
  bool f64 = dt == GL_KD_FLOAT64;
  if (dist == 0 || dist == 1) {
    if (f64) {
      gl_philox_block(seed, off + (uint64_t)(i / 2), w);
      double v;
      if (dist == 0) v = fma(b - a, gl_rand_u01d(gl_rand_u64(w[2 * (i % 2)], w[2 * (i % 2) + 1])), a);
      else {
        double z0, z1;
        gl_rand_normal2d(gl_rand_u64(w[0], w[1]), gl_rand_u64(w[2], w[3]), &z0, &z1);
        v = fma(b, i % 2 ? z1 : z0, a);
      }
      ((double *)dst)[i] = v;
    } else {
      gl_philox_block(seed, off + (uint64_t)(i / 4), w);
      float v;
      if (dist == 0) {
        int bits = dt == GL_KD_FLOAT16 ? 11 : dt == GL_KD_BFLOAT16 ? 8 : 24;
        v = GL_VM_FMA((float)(b - a), gl_rand_u01f(w[i % 4], bits), (float)a);
      } else {
        float z0, z1;
        int k = (int)(i % 4) / 2 * 2;
        gl_rand_normal2f(w[k], w[k + 1], &z0, &z1);
        v = GL_VM_FMA((float)b, i % 2 ? z1 : z0, (float)a);
      }
      if (dt == GL_KD_FLOAT16) ((uint16_t *)dst)[i] = gl_f32_to_f16(v);
      else if (dt == GL_KD_BFLOAT16) ((uint16_t *)dst)[i] = gl_f32_to_bf16(v);
      else ((float *)dst)[i] = v;
    }
  } else if (dist == 2) {
    uint64_t u;
    if (range != 0 && range <= ((uint64_t)1 << 32)) {
      gl_philox_block(seed, off + (uint64_t)(i / 2), w);
      u = (uint64_t)lo + gl_rand_mulhi_small(gl_rand_u64(w[2 * (i % 2)], w[2 * (i % 2) + 1]), range);
    } else {
      gl_philox_block(seed, off + (uint64_t)i, w);
      u = (uint64_t)lo + gl_rand_mulhi128(gl_rand_u64(w[0], w[1]), gl_rand_u64(w[2], w[3]), range);
    }
    switch (dt) {                                 /* wrapped to the width, as the CPU's store */
#define RAND_INT_CASE_(E, id, S, kind, ...) GL_DT_WHEN(kind, (0, 1, 1, 0), case GL_KD_##E: ((S *)dst)[i] = (S)u; break;)
      GL_DTYPE_LIST(RAND_INT_CASE_)
#undef RAND_INT_CASE_
      default: break;
    }
  } else {
    gl_philox_block(seed, off + (uint64_t)(i / 4), w);
    bool hit = (double)w[i % 4] * 0x1p-32 < (p ? p[i] : a);
    setd(dt, dst, i, hit ? 1 : 0);
  }
}

static void test_random(void) {
  struct rc_ { int dist, dt; double a, b; int64_t lo; uint64_t range; bool parr; };
  std::vector<rc_> cs = {
    { 0, GL_KD_FLOAT32, -2, 3, 0, 0, false }, { 0, GL_KD_FLOAT16, 0, 1, 0, 0, false },
    { 0, GL_KD_BFLOAT16, 0, 1, 0, 0, false }, { 0, GL_KD_FLOAT64, -1, 1, 0, 0, false },
    { 1, GL_KD_FLOAT32, 1, 2, 0, 0, false }, { 1, GL_KD_FLOAT16, 0, 1, 0, 0, false },
    { 1, GL_KD_BFLOAT16, 0, 1, 0, 0, false }, { 1, GL_KD_FLOAT64, 0.5, 3, 0, 0, false },
    { 2, GL_KD_INT64, 0, 0, -5, 11, false }, { 2, GL_KD_INT32, 0, 0, 100, 1000000, false },
    { 2, GL_KD_UINT8, 0, 0, 0, 256, false }, { 2, GL_KD_INT64, 0, 0, -3, ((uint64_t)1 << 40) + 7, false },
    { 2, GL_KD_INT64, 0, 0, INT64_MIN, 0, false }, { 2, GL_KD_INT32, 0, 0, 0, ((uint64_t)1 << 32), false },
    { 3, GL_KD_BOOL, 0.3, 0, 0, 0, false }, { 3, GL_KD_FLOAT32, 0.7, 0, 0, 0, false },
    { 3, GL_KD_FLOAT16, 0.5, 0, 0, 0, false }, { 3, GL_KD_BFLOAT16, 0.5, 0, 0, 0, false },
    { 3, GL_KD_INT64, 0.5, 0, 0, 0, false }, { 3, GL_KD_FLOAT64, 0, 0, 0, 0, true },
    { 3, GL_KD_UINT8, 0, 0, 0, 0, true }, { 3, GL_KD_INT32, 0.9, 0, 0, 0, false },
    { 2, GL_KD_INT8, 0, 0, -128, 256, false }, { 2, GL_KD_INT16, 0, 0, -5, 11, false },
    { 2, GL_KD_UINT16, 0, 0, 0, 65536, false }, { 2, GL_KD_UINT32, 0, 0, 0, (uint64_t)1 << 32, false },
    { 2, GL_KD_UINT64, 0, 0, 0, 0, false }, { 2, GL_KD_UINT64, 0, 0, INT64_MIN, 1000, false },
    { 3, GL_KD_INT8, 0.5, 0, 0, 0, false }, { 3, GL_KD_UINT16, 0.5, 0, 0, 0, false },
    { 3, GL_KD_COMPLEX64, 0.5, 0, 0, 0, false }, { 3, GL_KD_COMPLEX128, 0, 0, 0, 0, true },
  };
  for (const rc_ &c : cs)
    for (int64_t n : { 1, 2, 3, 5, 8, 13, 1000, 4099 })
      for (int pad = 0; pad < 2; pad++) {
        uint64_t seed = 0x1234567890abcdefull + (uint64_t)n, off = 3 + (uint64_t)(7 * n) + ((uint64_t)pad << 33);
        begin("random dist %d %s n=%lld pad=%d", c.dist, dtn[c.dt], (long long)n, pad);
        char *d = alloc((size_t)n * dts[c.dt], (size_t)pad * dts[c.dt]);
        char *ref = alloc((size_t)n * dts[c.dt]);
        double *p = NULL;
        if (c.parr) {
          p = (double *)alloc((size_t)n * sizeof(double));
          for (int64_t i = 0; i < n; i++) p[i] = urand();
        }
        int rc = gl_klaunch_random(NULL, c.dist, c.dt, d, n, seed, off, c.a, c.b, c.lo, c.range, p);
        if (rc) bad("rc %d", rc);
        for (int64_t i = 0; i < n; i++) {
          rand_ref(c.dist, c.dt, ref, i, seed, off, c.a, c.b, c.lo, c.range, p);
          if (memcmp(ref + i * dts[c.dt], d + i * dts[c.dt], dts[c.dt]))
            bad("element %lld: got %g want %g", (long long)i, getd(c.dt, d, i), getd(c.dt, ref, i));
        }
        end();
        free_all();
      }
}

/* ---- rnn: the fused LSTM cell (one time step, forward and backward) ------------------------- */

static double sigm(double x) { return 1 / (1 + exp(-x)); }

template <class T> static void test_lstm_t(int dt) {
  struct lc { int64_t N, H; };
  for (lc c : { lc{ 1, 1 }, lc{ 2, 3 }, lc{ 5, 17 }, lc{ 32, 64 }, lc{ 3, 300 } }) {
    int64_t N = c.N, H = c.H, ld = 2 * H;                 /* h and c interleaved as in hc (L, N, 2, H) */
    begin("lstm %s N=%lld H=%lld", dtn[dt], (long long)N, (long long)H);
    T *xp = (T *)alloc(N * 4 * H * sizeof(T)), *hw = (T *)alloc(N * 4 * H * sizeof(T));
    T *gates = (T *)alloc(N * 4 * H * sizeof(T)), *cp = (T *)alloc(N * H * sizeof(T));
    T *hc = (T *)alloc(N * ld * sizeof(T)), *dout = (T *)alloc(N * ld * sizeof(T));
    T *dhn = (T *)alloc(N * H * sizeof(T)), *dcn = (T *)alloc(N * H * sizeof(T)), *dg = (T *)alloc(N * 4 * H * sizeof(T));
    for (int64_t i = 0; i < N * 4 * H; i++) { xp[i] = (T)(urand() * 4 - 2); hw[i] = (T)(urand() * 2 - 1); }
    for (int64_t i = 0; i < N * H; i++) { cp[i] = (T)(urand() * 2 - 1); dhn[i] = (T)(urand() - 0.5); dcn[i] = (T)(urand() - 0.5); }
    for (int64_t i = 0; i < N * ld; i++) dout[i] = (T)(urand() - 0.5);
    gl_lstm_cell s = {};
    s.N = N; s.H = H; s.xp = xp; s.hw = hw; s.gates = gates; s.c_prev = cp; s.c_prev_ld = H;
    s.h = hc; s.c = hc + H; s.hc_ld = ld;
    int rc = gl_klaunch_lstm_cell(NULL, dt, 0, &s);
    if (rc) bad("rc %d", rc);
    double tol = sizeof(T) == 4 ? 2e-6 : 1e-13;
    std::vector<double> dcn0(dcn, dcn + N * H);
    for (int64_t r = 0; r < N; r++)
      for (int64_t j = 0; j < H; j++) {
        int64_t g0 = r * 4 * H + j;
        double i = sigm((double)xp[g0] + hw[g0]), f = sigm((double)xp[g0 + H] + hw[g0 + H]);
        double g = tanh((double)xp[g0 + 2 * H] + hw[g0 + 2 * H]), o = sigm((double)xp[g0 + 3 * H] + hw[g0 + 3 * H]);
        double cc = f * cp[r * H + j] + i * g, hh = o * tanh(cc);
        if (!close_to(hc[r * ld + H + j], cc, tol, tol)) bad("c[%lld,%lld]: got %.9g want %.9g", (long long)r, (long long)j, (double)hc[r * ld + H + j], cc);
        if (!close_to(hc[r * ld + j], hh, tol, tol)) bad("h[%lld,%lld]: got %.9g want %.9g", (long long)r, (long long)j, (double)hc[r * ld + j], hh);
        if (!close_to(gates[g0 + 3 * H], o, tol, tol)) bad("o[%lld,%lld]", (long long)r, (long long)j);
      }
    s.dh_out = dout; s.dc_out = dout + H; s.dh_next = dhn; s.dc_next = dcn; s.dgates = dg;
    rc = gl_klaunch_lstm_cell(NULL, dt, 1, &s);
    if (rc) bad("bwd rc %d", rc);
    for (int64_t r = 0; r < N; r++)
      for (int64_t j = 0; j < H; j++) {
        int64_t g0 = r * 4 * H + j, k = r * H + j;
        double i = gates[g0], f = gates[g0 + H], g = gates[g0 + 2 * H], o = gates[g0 + 3 * H];
        double tc = tanh((double)hc[r * ld + H + j]);
        double dh = (double)dout[r * ld + j] + dhn[k];
        double dc = (double)dout[r * ld + H + j] + dcn0[k] + dh * o * (1 - tc * tc);
        double want[4] = { dc * g * i * (1 - i), dc * cp[k] * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o) };
        for (int q = 0; q < 4; q++)
          if (!close_to(dg[g0 + q * H], want[q], tol * 10, tol * 10)) bad("dgate %d [%lld,%lld]: got %.9g want %.9g", q, (long long)r, (long long)j, (double)dg[g0 + q * H], want[q]);
        if (!close_to(dcn[k], dc * f, tol * 10, tol * 10)) bad("dc_prev[%lld,%lld]", (long long)r, (long long)j);
      }
    end();
    free_all();
  }
}

/* The fused GRU cell (PyTorch's r, z, n with b_hn inside r * (...)) and the Elman RNN cell,
** one step forward and backward, against plain double loops. */
template <class T> static void test_gru_t(int dt) {
  struct lc { int64_t N, H; int bias; };
  for (lc c : { lc{ 1, 1, 1 }, lc{ 2, 3, 0 }, lc{ 5, 17, 1 }, lc{ 32, 64, 1 }, lc{ 3, 300, 0 } }) {
    int64_t N = c.N, H = c.H;
    begin("gru %s N=%lld H=%lld bias=%d", dtn[dt], (long long)N, (long long)H, c.bias);
    T *xp = (T *)alloc(N * 3 * H * sizeof(T)), *hw = (T *)alloc(N * 3 * H * sizeof(T)), *b = (T *)alloc(3 * H * sizeof(T));
    T *gates = (T *)alloc(N * 4 * H * sizeof(T)), *hp = (T *)alloc(N * H * sizeof(T)), *h = (T *)alloc(N * H * sizeof(T));
    T *dout = (T *)alloc(N * H * sizeof(T)), *dmm = (T *)alloc(N * H * sizeof(T)), *dcar = (T *)alloc(N * H * sizeof(T));
    T *dx = (T *)alloc(N * 3 * H * sizeof(T)), *dw = (T *)alloc(N * 3 * H * sizeof(T));
    for (int64_t i = 0; i < N * 3 * H; i++) { xp[i] = (T)(urand() * 4 - 2); hw[i] = (T)(urand() * 2 - 1); }
    for (int64_t i = 0; i < 3 * H; i++) b[i] = (T)(urand() - 0.5);
    for (int64_t i = 0; i < N * H; i++) {
      hp[i] = (T)(urand() * 2 - 1); dout[i] = (T)(urand() - 0.5); dmm[i] = (T)(urand() - 0.5); dcar[i] = (T)(urand() - 0.5);
    }
    gl_gru_cell s = {};
    s.N = N; s.H = H; s.xp = xp; s.hw = hw; s.b = c.bias ? b : NULL; s.gates = gates; s.h_prev = hp; s.h = h;
    int rc = gl_klaunch_gru_cell(NULL, dt, 0, &s);
    if (rc) bad("rc %d", rc);
    double tol = sizeof(T) == 4 ? 2e-6 : 1e-13;
    std::vector<double> dcar0(dcar, dcar + N * H);
    s.dh_out = dout; s.dh_mm = dmm; s.dh_carry = dcar; s.dxp = dx; s.dhw = dw;
    rc = gl_klaunch_gru_cell(NULL, dt, 1, &s);
    if (rc) bad("bwd rc %d", rc);
    for (int64_t r = 0; r < N; r++)
      for (int64_t j = 0; j < H; j++) {
        int64_t g0 = r * 3 * H + j, k = r * H + j;
        double br = c.bias ? b[j] : 0, bz = c.bias ? b[j + H] : 0, bn = c.bias ? b[j + 2 * H] : 0;
        double rg = sigm((double)xp[g0] + hw[g0] + br), z = sigm((double)xp[g0 + H] + hw[g0 + H] + bz);
        double hn = (double)hw[g0 + 2 * H] + bn, n = tanh((double)xp[g0 + 2 * H] + rg * hn);
        double hh = (1 - z) * n + z * hp[k];
        if (!close_to(h[k], hh, tol, tol)) bad("h[%lld,%lld]: got %.9g want %.9g", (long long)r, (long long)j, (double)h[k], hh);
        double dh = (double)dout[k] + dcar0[k] + dmm[k];
        double dn = dh * (1 - z) * (1 - n * n), dz = dh * (hp[k] - n) * z * (1 - z), dr = dn * hn * rg * (1 - rg);
        double wx[3] = { dr, dz, dn }, ww[3] = { dr, dz, dn * rg };
        for (int q = 0; q < 3; q++) {
          if (!close_to(dx[g0 + q * H], wx[q], tol * 10, tol * 10)) bad("dxp %d [%lld,%lld]: got %.9g want %.9g", q, (long long)r, (long long)j, (double)dx[g0 + q * H], wx[q]);
          if (!close_to(dw[g0 + q * H], ww[q], tol * 10, tol * 10)) bad("dhw %d [%lld,%lld]: got %.9g want %.9g", q, (long long)r, (long long)j, (double)dw[g0 + q * H], ww[q]);
        }
        if (!close_to(dcar[k], dh * z, tol * 10, tol * 10)) bad("dh_carry[%lld,%lld]", (long long)r, (long long)j);
      }
    end();
    free_all();
  }
}

template <class T> static void test_rnn_cell_t(int dt) {
  struct lc { int64_t N, H; int relu; };
  for (lc c : { lc{ 1, 1, 0 }, lc{ 2, 3, 1 }, lc{ 5, 17, 0 }, lc{ 32, 64, 1 }, lc{ 3, 300, 0 } }) {
    int64_t N = c.N, H = c.H, n = N * H;
    begin("rnn cell %s N=%lld H=%lld relu=%d", dtn[dt], (long long)N, (long long)H, c.relu);
    T *xp = (T *)alloc(n * sizeof(T)), *hw = (T *)alloc(n * sizeof(T)), *h = (T *)alloc(n * sizeof(T));
    T *dout = (T *)alloc(n * sizeof(T)), *dnext = (T *)alloc(n * sizeof(T)), *dx = (T *)alloc(n * sizeof(T));
    for (int64_t i = 0; i < n; i++) {
      xp[i] = (T)(urand() * 4 - 2); hw[i] = (T)(urand() * 2 - 1); dout[i] = (T)(urand() - 0.5); dnext[i] = (T)(urand() - 0.5);
    }
    gl_rnn_cell s = {};
    s.N = N; s.H = H; s.relu = c.relu; s.xp = xp; s.hw = hw; s.h = h; s.dh_out = dout; s.dh_next = dnext; s.dxp = dx;
    int rc = gl_klaunch_rnn_cell(NULL, dt, 0, &s);
    if (!rc) rc = gl_klaunch_rnn_cell(NULL, dt, 1, &s);
    if (rc) bad("rc %d", rc);
    double tol = sizeof(T) == 4 ? 2e-6 : 1e-13;
    for (int64_t k = 0; k < n; k++) {
      double a = (double)xp[k] + hw[k], hh = c.relu ? (a > 0 ? a : 0) : tanh(a);
      double dh = (double)dout[k] + dnext[k], da = c.relu ? (hh > 0 ? dh : 0) : dh * (1 - hh * hh);
      if (!close_to(h[k], hh, tol, tol)) bad("h[%lld]: got %.9g want %.9g", (long long)k, (double)h[k], hh);
      if (!close_to(dx[k], da, tol * 10, tol * 10)) bad("dxp[%lld]: got %.9g want %.9g", (long long)k, (double)dx[k], da);
    }
    end();
    free_all();
  }
}

/* ---- fused: optimizer steps, softmax cross-entropy --------------------------------------------- */

/* The element steps of kernels/optim.h by type, for the plain-loop reference. */
template <class T> struct optim_steps;
#define OPTIM_STEPS(T, SFX)                                                                                   \
  template <> struct optim_steps<T> {                                                                        \
    static void run(int kind, int64_t n, T *p, const T *g, T *s0, T *s1, T *s2, const gl_optim_hp *hp) {      \
      gl_optim_args_##SFX k = gl_optim_args_##SFX##_of(hp);                                                          \
      for (int64_t i = 0; i < n; i++) {                                                                      \
        switch (kind) {                                                                                      \
          case GL_OPTIM_SGD: p[i] = gl_sgd_##SFX(p[i], g[i], s0 ? s0 + i : NULL, hp->first, hp->nesterov, k); break; \
          case GL_OPTIM_ADAM: p[i] = gl_adam_##SFX(p[i], g[i], s0 + i, s1 + i, s2 ? s2 + i : NULL, k); break;  \
          case GL_OPTIM_RMSPROP: p[i] = gl_rmsprop_##SFX(p[i], g[i], s0 + i, s1 ? s1 + i : NULL, s2 ? s2 + i : NULL, k); break; \
          case GL_OPTIM_ADAGRAD: p[i] = gl_adagrad_##SFX(p[i], g[i], s0 + i, k); break;                      \
          case GL_OPTIM_ADADELTA: p[i] = gl_adadelta_##SFX(p[i], g[i], s0 + i, s1 + i, k); break;            \
          case GL_OPTIM_ADAMAX: p[i] = gl_adamax_##SFX(p[i], g[i], s0 + i, s1 + i, k); break;                \
          case GL_OPTIM_NADAM: p[i] = gl_nadam_##SFX(p[i], g[i], s0 + i, s1 + i, k); break;                  \
          case GL_OPTIM_RADAM: p[i] = gl_radam_##SFX(p[i], g[i], s0 + i, s1 + i, hp->rectify, k); break;     \
        }                                                                                                    \
      }                                                                                                      \
    }                                                                                                        \
  };
OPTIM_STEPS(float, f32)
OPTIM_STEPS(double, f64)
#undef OPTIM_STEPS

/* Which of the three state arrays a kind takes under variant var's options. */
static void optim_uses(int kind, const gl_optim_hp *hp, bool use[3]) {
  use[0] = kind != GL_OPTIM_SGD || hp->momentum != 0;
  use[1] = kind == GL_OPTIM_ADAM || (kind == GL_OPTIM_RMSPROP && hp->momentum > 0) || kind >= GL_OPTIM_ADADELTA;
  use[2] = (kind == GL_OPTIM_ADAM && hp->amsgrad) || (kind == GL_OPTIM_RMSPROP && hp->centered);
}

template <class T> static void test_optim_t(int dt) {
  for (int kind = 0; kind < GL_OPTIM_KINDS; kind++)
    for (int var = 0; var < 3; var++)
      for (int64_t n : { 1, 17, 1000, 4099 }) {
        gl_optim_hp hp;
        memset(&hp, 0, sizeof hp);
        hp.lr = 0.01; hp.weight_decay = var == 1 ? 0.1 : 0; hp.eps = 1e-8; hp.beta1 = 0.9; hp.beta2 = 0.999;
        hp.bc1 = 0.19; hp.bc2 = 0.002; hp.momentum = var ? 0.9 : 0; hp.dampening = var == 2 ? 0.1 : 0;
        hp.alpha = 0.99; hp.decoupled = var == 2; hp.amsgrad = var == 1; hp.nesterov = var == 1;
        hp.maximize = var == 2; hp.first = var == 2; hp.centered = var == 2;
        hp.rho = 0.9; hp.grad_step = 0.003; hp.avg_step = 0.02; hp.rectify = var != 0;
        if (kind == GL_OPTIM_NADAM || kind == GL_OPTIM_RADAM) hp.maximize = 0;   /* neither rule has it */
        begin("optim kind %d variant %d %s n=%lld", kind, var, dtn[dt], (long long)n);
        bool use[3];
        optim_uses(kind, &hp, use);
        T *p = (T *)alloc(n * sizeof(T)), *g = (T *)alloc(n * sizeof(T));
        T *s[3], *rs[3];
        T *rp = (T *)alloc(n * sizeof(T));
        for (int k = 0; k < 3; k++) {
          s[k] = use[k] ? (T *)alloc(n * sizeof(T)) : NULL;
          rs[k] = use[k] ? (T *)alloc(n * sizeof(T)) : NULL;
        }
        for (int64_t i = 0; i < n; i++) {
          p[i] = rp[i] = (T)(urand() - 0.5);
          g[i] = (T)(urand() - 0.5);
          for (int k = 0; k < 3; k++) if (s[k]) s[k][i] = rs[k][i] = (T)(k == 0 && kind == 0 ? urand() : urand() * 0.01);
        }
        int rc = gl_klaunch_optim(NULL, kind, dt, n, p, g, s[0], s[1], s[2], &hp);
        if (rc) bad("rc %d", rc);
        optim_steps<T>::run(kind, n, rp, g, rs[0], rs[1], rs[2], &hp);
        for (int64_t i = 0; i < n; i++) {
          if (memcmp(&p[i], &rp[i], sizeof(T))) bad("p[%lld]: got %.9g want %.9g", (long long)i, (double)p[i], (double)rp[i]);
          for (int k = 0; k < 3; k++)
            if (s[k] && memcmp(&s[k][i], &rs[k][i], sizeof(T))) bad("state %d [%lld]", k, (long long)i);
        }
        end();
        free_all();
      }
}

template <class T> static void test_xent_t(int dt) {
  struct xc { int64_t N, C; };
  for (xc c : { xc{ 1, 1 }, xc{ 3, 5 }, xc{ 9, 31 }, xc{ 17, 32 }, xc{ 8, 33 }, xc{ 5, 100 }, xc{ 3, 1025 }, xc{ 2, 2000 }, xc{ 70, 10 } })
    for (int mode = 0; mode < 3; mode++) {          /* 0 labels, 1 labels + smoothing, 2 target rows */
      double sm = mode == 1 ? 0.1 : 0;
      int64_t N = c.N, C = c.C;
      begin("xent %s N=%lld C=%lld mode %d", dtn[dt], (long long)N, (long long)C, mode);
      T *z = (T *)alloc(N * C * sizeof(T)), *probs = (T *)alloc(N * C * sizeof(T)), *loss = (T *)alloc(N * sizeof(T));
      int64_t *lab = mode < 2 ? (int64_t *)alloc(N * sizeof(int64_t)) : NULL;
      T *tg = mode == 2 ? (T *)alloc(N * C * sizeof(T)) : NULL;
      for (int64_t i = 0; i < N * C; i++) z[i] = (T)(urand() * 20 - 10);
      if (N > 2 && C > 3) { z[C + 1] = (T)-INFINITY; z[2 * C] = (T)50; }
      for (int64_t i = 0; i < N; i++) {
        if (lab) lab[i] = i == 1 && N > 2 ? 0 : i == 2 && N > 3 ? C + 1 : 1 + (int64_t)(rnd() % (uint64_t)C);
        if (tg) {
          double s = 0;
          for (int64_t k = 0; k < C; k++) { tg[i * C + k] = (T)urand(); s += tg[i * C + k]; }
          for (int64_t k = 0; k < C; k++) tg[i * C + k] = (T)(tg[i * C + k] / s);
        }
      }
      int rc = gl_klaunch_xent(NULL, dt, N, C, loss, probs, z, lab, tg, sm);
      if (rc) bad("rc %d", rc);
      double tol = sizeof(T) == 4 ? 2e-5 : 1e-12;
      for (int64_t i = 0; i < N; i++) {
        const T *zi = z + i * C;
        double m = -INFINITY;
        for (int64_t k = 0; k < C; k++) m = zi[k] > m ? zi[k] : m;
        long double s = 0, zs = 0, tz = 0;
        for (int64_t k = 0; k < C; k++) { s += expl((long double)zi[k] - m); zs += zi[k]; if (tg) tz += (long double)tg[i * C + k] * zi[k]; }
        double lse = m + (double)logl(s);
        for (int64_t k = 0; k < C; k++) {
          double want = (double)(expl((long double)zi[k] - m) / s);
          if (!close_to(probs[i * C + k], want, tol, tol * 1e-3)) bad("probs[%lld,%lld]: got %.9g want %.9g", (long long)i, (long long)k, (double)probs[i * C + k], want);
        }
        double want;
        if (lab) {
          int64_t l = lab[i];
          want = l >= 1 && l <= C ? lse - ((1 - sm) * zi[l - 1] + sm / (double)C * (double)zs) : NAN;
        } else want = lse - (double)tz;
        if (!close_to(loss[i], want, tol * 10, tol * 10 * (fabs(m) + 10))) bad("loss[%lld]: got %.9g want %.9g", (long long)i, (double)loss[i], want);
      }
      /* backward from these probabilities */
      for (int gs = 0; gs < 2; gs++) {
        T *gout = (T *)alloc((gs ? N : 1) * sizeof(T)), *dz = (T *)alloc(N * C * sizeof(T));
        for (int64_t i = 0; i < (gs ? N : 1); i++) gout[i] = (T)(0.5 + i);
        double scale = 1.0 / (double)N;
        rc = gl_klaunch_xent_bwd(NULL, dt, N, C, dz, probs, lab, tg, sm, gout, gs, scale);
        if (rc) bad("bwd rc %d", rc);
        T on = (T)(1 - sm), off = (T)(sm / (double)C);
        for (int64_t i = 0; i < N; i++) {
          T k = gout[i * gs] * (T)scale;
          for (int64_t c2 = 0; c2 < C; c2++) {
            T want;
            T pv = probs[i * C + c2];
            if (lab) {
              int64_t l = lab[i];
              if (l >= 1 && l <= C) {
                T d = (pv - off) * k;
                want = c2 == l - 1 ? d - on * k : d;
              } else want = (T)NAN;
            } else want = (pv - tg[i * C + c2]) * k;
            T got = dz[i * C + c2];
            if (memcmp(&got, &want, sizeof(T)) && !(got != got && want != want))
              bad("bwd gs=%d [%lld,%lld]: got %.9g want %.9g", gs, (long long)i, (long long)c2, (double)got, (double)want);
          }
        }
      }
      end();
      free_all();
    }
}

/* ---- layer norm ------------------------------------------------------------------------------ */

template <class T> static void test_layer_norm_t(int dt) {
  struct lc { int64_t R, D; int affine; };
  for (lc c : { lc{ 1, 1, 1 }, lc{ 3, 5, 1 }, lc{ 9, 31, 0 }, lc{ 17, 32, 1 }, lc{ 8, 33, 1 }, lc{ 70, 128, 1 },
                lc{ 3, 1025, 0 }, lc{ 2, 2000, 1 } }) {
    int64_t R = c.R, D = c.D;
    begin("layer_norm %s R=%lld D=%lld affine %d", dtn[dt], (long long)R, (long long)D, c.affine);
    T *x = (T *)alloc(R * D * sizeof(T)), *y = (T *)alloc(R * D * sizeof(T));
    T *mean = (T *)alloc(R * sizeof(T)), *rstd = (T *)alloc(R * sizeof(T));
    T *w = c.affine ? (T *)alloc(D * sizeof(T)) : NULL, *b = c.affine ? (T *)alloc(D * sizeof(T)) : NULL;
    T *g = (T *)alloc(R * D * sizeof(T)), *gx = (T *)alloc(R * D * sizeof(T));
    T *gw = (T *)alloc(D * sizeof(T)), *gb = (T *)alloc(D * sizeof(T));
    for (int64_t i = 0; i < R * D; i++) { x[i] = (T)(urand() * 8 - 3); g[i] = (T)(urand() * 2 - 1); }
    for (int64_t j = 0; c.affine && j < D; j++) { w[j] = (T)(urand() * 2 - 1); b[j] = (T)(urand() - 0.5); }
    const double eps = 1e-5;
    int rc = gl_klaunch_layer_norm(NULL, dt, R, D, y, mean, rstd, x, w, b, eps);
    if (rc) bad("rc %d", rc);
    rc = gl_klaunch_layer_norm_bwd(NULL, dt, R, D, gx, gw, gb, g, x, mean, rstd, w);
    if (rc) bad("bwd rc %d", rc);
    double tol = sizeof(T) == 4 ? 2e-4 : 1e-10;
    std::vector<long double> sw(D, 0), sb(D, 0);
    for (int64_t i = 0; i < R; i++) {
      long double m = 0, v = 0, a = 0, cc = 0;
      for (int64_t j = 0; j < D; j++) m += x[i * D + j];
      m /= D;
      for (int64_t j = 0; j < D; j++) v += (x[i * D + j] - m) * (x[i * D + j] - m);
      long double r = 1 / sqrtl(v / D + eps);
      if (!close_to(mean[i], (double)m, tol, tol)) bad("mean[%lld]: got %.9g want %.9g", (long long)i, (double)mean[i], (double)m);
      if (!close_to(rstd[i], (double)r, tol, tol)) bad("rstd[%lld]: got %.9g want %.9g", (long long)i, (double)rstd[i], (double)r);
      for (int64_t j = 0; j < D; j++) {
        long double xh = (x[i * D + j] - m) * r, gh = g[i * D + j] * (w ? (long double)w[j] : 1.0L);
        long double want = xh * (w ? w[j] : 1) + (b ? b[j] : 0);
        if (!close_to(y[i * D + j], (double)want, tol, tol)) bad("y[%lld,%lld]: got %.9g want %.9g", (long long)i, (long long)j, (double)y[i * D + j], (double)want);
        a += gh; cc += gh * xh;
        sw[j] += g[i * D + j] * xh; sb[j] += g[i * D + j];
      }
      a /= D; cc /= D;
      for (int64_t j = 0; j < D; j++) {
        long double xh = (x[i * D + j] - m) * r, gh = g[i * D + j] * (w ? (long double)w[j] : 1.0L);
        double want = (double)(r * (gh - a - xh * cc));
        if (!close_to(gx[i * D + j], want, tol * 10, tol * 10)) bad("gx[%lld,%lld]: got %.9g want %.9g", (long long)i, (long long)j, (double)gx[i * D + j], want);
      }
    }
    for (int64_t j = 0; j < D; j++) {
      if (!close_to(gw[j], (double)sw[j], tol * 10, tol * 10 * (double)R)) bad("gw[%lld]: got %.9g want %.9g", (long long)j, (double)gw[j], (double)sw[j]);
      if (!close_to(gb[j], (double)sb[j], tol * 10, tol * 10 * (double)R)) bad("gb[%lld]: got %.9g want %.9g", (long long)j, (double)gb[j], (double)sb[j]);
    }
    end();
    free_all();
  }
}

/* ---- attention ------------------------------------------------------------------------------- */

template <class T> static void test_attention_t(int dt) {
  struct ac { int64_t B, L, S, E, Ev; int causal; };
  for (ac c : { ac{ 1, 1, 1, 1, 1, 0 }, ac{ 2, 3, 5, 4, 3, 0 }, ac{ 3, 9, 9, 33, 40, 1 }, ac{ 2, 17, 70, 8, 64, 0 },
                ac{ 1, 5, 3, 16, 256, 1 }, ac{ 2, 40, 40, 32, 32, 1 } }) {
    begin("attention %s B=%lld L=%lld S=%lld E=%lld Ev=%lld causal %d", dtn[dt], (long long)c.B, (long long)c.L,
          (long long)c.S, (long long)c.E, (long long)c.Ev, c.causal);
    int64_t B = c.B, L = c.L, S = c.S, E = c.E, Ev = c.Ev;
    T *q = (T *)alloc(B * L * E * sizeof(T)), *k = (T *)alloc(B * S * E * sizeof(T)), *v = (T *)alloc(B * S * Ev * sizeof(T));
    T *out = (T *)alloc(B * L * Ev * sizeof(T)), *lse = (T *)alloc(B * L * sizeof(T));
    for (int64_t i = 0; i < B * L * E; i++) q[i] = (T)(urand() * 4 - 2);
    for (int64_t i = 0; i < B * S * E; i++) k[i] = (T)(urand() * 4 - 2);
    for (int64_t i = 0; i < B * S * Ev; i++) v[i] = (T)(urand() * 2 - 1);
    double scale = 1 / sqrt((double)E);
    int rc = gl_klaunch_attention(NULL, dt, B, L, S, E, Ev, out, lse, q, k, v, scale, c.causal);
    if (rc) bad("rc %d", rc);
    double tol = sizeof(T) == 4 ? 2e-5 : 1e-12;
    std::vector<long double> sc(S);
    for (int64_t b = 0; b < B; b++)
      for (int64_t i = 0; i < L; i++) {
        int64_t send = c.causal ? (i + 1 < S ? i + 1 : S) : S;
        long double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < send; j++) {
          long double d = 0;
          for (int64_t e = 0; e < E; e++) d += (long double)q[(b * L + i) * E + e] * k[(b * S + j) * E + e];
          sc[j] = d * scale;
          if (sc[j] > m) m = sc[j];
        }
        for (int64_t j = 0; j < send; j++) sum += expl(sc[j] - m);
        double want_lse = (double)(m + logl(sum));
        if (!close_to(lse[b * L + i], want_lse, tol, tol)) bad("lse[%lld,%lld]: got %.9g want %.9g", (long long)b, (long long)i, (double)lse[b * L + i], want_lse);
        for (int64_t col = 0; col < Ev; col++) {
          long double o = 0;
          for (int64_t j = 0; j < send; j++) o += expl(sc[j] - m) / sum * v[(b * S + j) * Ev + col];
          T got = out[(b * L + i) * Ev + col];
          if (!close_to(got, (double)o, tol * 10, tol * 10)) bad("out[%lld,%lld,%lld]: got %.9g want %.9g", (long long)b, (long long)i, (long long)col, (double)got, (double)o);
        }
      }
    end();
    free_all();
  }
  begin("attention %s refuses Ev > %d", dtn[dt], GL_KATT_MAX_EV);
  if (gl_klaunch_attention(NULL, dt, 1, 1, 1, 1, GL_KATT_MAX_EV + 1, NULL, NULL, NULL, NULL, NULL, 1, 0) != GL_KERR_NOTSUP)
    bad("a row wider than GL_KATT_MAX_EV was launched");
  end();
}

/* The backward against long-double loops from q, k, v and g alone (its own logsumexp); out and
** lse come from the forward launcher. A row given lse = -inf and out = NaN (a row without keys)
** must get a zero gq row and add nothing to gk, gv. */
template <class T> static void test_attention_bwd_t(int dt) {
  struct ac { int64_t B, L, S, E, Ev; int causal, dead_row; };
  for (ac c : { ac{ 1, 1, 1, 1, 1, 0, -1 }, ac{ 2, 3, 5, 4, 3, 0, -1 }, ac{ 2, 17, 33, 5, 7, 1, -1 },
                ac{ 1, 40, 20, 33, 40, 1, 3 }, ac{ 3, 9, 40, 8, 64, 0, 8 }, ac{ 1, 20, 7, 3, 2, 1, -1 },
                ac{ 2, 16, 16, 16, 16, 1, 0 }, ac{ 1, 5, 6, 0, 3, 0, -1 } }) {
    begin("attention_bwd %s B=%lld L=%lld S=%lld E=%lld Ev=%lld causal %d dead row %d", dtn[dt], (long long)c.B,
          (long long)c.L, (long long)c.S, (long long)c.E, (long long)c.Ev, c.causal, c.dead_row);
    int64_t B = c.B, L = c.L, S = c.S, E = c.E, Ev = c.Ev;
    T *q = (T *)alloc(B * L * E * sizeof(T)), *k = (T *)alloc(B * S * E * sizeof(T)), *v = (T *)alloc(B * S * Ev * sizeof(T));
    T *out = (T *)alloc(B * L * Ev * sizeof(T)), *lse = (T *)alloc(B * L * sizeof(T)), *g = (T *)alloc(B * L * Ev * sizeof(T));
    T *gq = (T *)alloc(B * L * E * sizeof(T)), *gk = (T *)alloc(B * S * E * sizeof(T)), *gv = (T *)alloc(B * S * Ev * sizeof(T));
    T *dsum = (T *)alloc(B * L * sizeof(T));
    for (int64_t i = 0; i < B * L * E; i++) q[i] = (T)(urand() * 4 - 2);
    for (int64_t i = 0; i < B * S * E; i++) k[i] = (T)(urand() * 4 - 2);
    for (int64_t i = 0; i < B * S * Ev; i++) v[i] = (T)(urand() * 2 - 1);
    for (int64_t i = 0; i < B * L * Ev; i++) g[i] = (T)(urand() * 2 - 1);
    double scale = E > 0 ? 1 / sqrt((double)E) : 1;
    int rc = gl_klaunch_attention(NULL, dt, B, L, S, E, Ev, out, lse, q, k, v, scale, c.causal);
    if (rc) bad("forward rc %d", rc);
    std::vector<bool> dead(B * L, false);
    if (c.dead_row >= 0)
      for (int64_t b = 0; b < B; b++) {
        int64_t r = b * L + c.dead_row;
        dead[r] = true;
        lse[r] = -(T)INFINITY;
        for (int64_t col = 0; col < Ev; col++) out[r * Ev + col] = (T)NAN;
      }
    rc = gl_klaunch_attention_bwd(NULL, dt, B, L, S, E, Ev, gq, gk, gv, dsum, g, q, k, v, out, lse, scale, c.causal);
    if (rc) bad("rc %d", rc);
    double tol = sizeof(T) == 4 ? 1e-4 : 1e-11;
    std::vector<long double> wq(B * L * E, 0), wk(B * S * E, 0), wv(B * S * Ev, 0), p(S), dp(S);
    for (int64_t b = 0; b < B; b++)
      for (int64_t i = 0; i < L; i++) {
        if (dead[b * L + i]) continue;
        int64_t send = c.causal ? (i + 1 < S ? i + 1 : S) : S;
        long double m = -INFINITY, sum = 0, dd = 0;
        for (int64_t j = 0; j < send; j++) {
          long double d = 0;
          for (int64_t e = 0; e < E; e++) d += (long double)q[(b * L + i) * E + e] * k[(b * S + j) * E + e];
          p[j] = d * scale;
          if (p[j] > m) m = p[j];
        }
        for (int64_t j = 0; j < send; j++) sum += expl(p[j] - m);
        for (int64_t j = 0; j < send; j++) p[j] = expl(p[j] - m) / sum;
        for (int64_t j = 0; j < send; j++) {
          dp[j] = 0;
          for (int64_t col = 0; col < Ev; col++) dp[j] += (long double)g[(b * L + i) * Ev + col] * v[(b * S + j) * Ev + col];
          dd += p[j] * dp[j];
        }
        for (int64_t j = 0; j < send; j++) {
          long double gs = p[j] * (dp[j] - dd) * scale;
          for (int64_t col = 0; col < Ev; col++) wv[(b * S + j) * Ev + col] += p[j] * g[(b * L + i) * Ev + col];
          for (int64_t e = 0; e < E; e++) {
            wq[(b * L + i) * E + e] += gs * k[(b * S + j) * E + e];
            wk[(b * S + j) * E + e] += gs * q[(b * L + i) * E + e];
          }
        }
      }
    struct { const char *name; const T *got; const std::vector<long double> *want; } outs[3] = {
      { "gq", gq, &wq }, { "gk", gk, &wk }, { "gv", gv, &wv } };
    for (auto &o : outs)
      for (size_t x = 0; x < o.want->size(); x++) {
        double want = (double)(*o.want)[x], got = (double)o.got[x];
        if (!close_to(got, want, tol, tol)) bad("%s[%zu]: got %.9g want %.9g", o.name, x, got, want);
      }
    end();
    free_all();
  }
  begin("attention_bwd %s launches nothing without keys", dtn[dt]);
  if (gl_klaunch_attention_bwd(NULL, dt, 1, 3, 0, 2, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, 0))
    bad("S = 0 was launched");
  end();
}

/* ---- conv: im2col / col2im ------------------------------------------------------------------ */

template <class T> static void test_conv_t(int dt) {
  struct cc { int64_t N, C, H, W; int k0, k1, s0, s1, p0, p1, d0, d1; };
  std::vector<cc> cs = { { 1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 1, 1 }, { 2, 3, 7, 6, 3, 2, 2, 1, 1, 0, 1, 1 },
                         { 1, 2, 9, 11, 3, 3, 2, 3, 2, 1, 2, 1 }, { 2, 1, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1 },
                         { 1, 2, 6, 5, 4, 4, 3, 2, 2, 3, 1, 2 }, { 3, 4, 13, 10, 5, 3, 1, 2, 2, 1, 1, 3 } };
  for (const cc &c : cs) {
    gl_kconv g;
    memset(&g, 0, sizeof g);
    g.N = c.N; g.C = c.C; g.H = c.H; g.W = c.W;
    g.k[0] = c.k0; g.k[1] = c.k1; g.s[0] = c.s0; g.s[1] = c.s1; g.p[0] = c.p0; g.p[1] = c.p1; g.d[0] = c.d0; g.d[1] = c.d1;
    g.OH = (c.H + 2 * c.p0 - c.d0 * (c.k0 - 1) - 1) / c.s0 + 1;
    g.OW = (c.W + 2 * c.p1 - c.d1 * (c.k1 - 1) - 1) / c.s1 + 1;
    int64_t L = g.OH * g.OW, KK = (int64_t)c.k0 * c.k1, ni = c.N * c.C * c.H * c.W, nc = c.N * c.C * KK * L;
    begin("im2col/col2im %s N%lld C%lld %lldx%lld k%dx%d s%d,%d p%d,%d d%d,%d", dtn[dt], (long long)c.N, (long long)c.C,
          (long long)c.H, (long long)c.W, c.k0, c.k1, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1);
    T *img = (T *)alloc(ni * sizeof(T)), *cols = (T *)alloc(nc * sizeof(T)), *rc_ = (T *)alloc(nc * sizeof(T));
    for (int64_t i = 0; i < ni; i++) img[i] = (T)(urand() - 0.5);
    double padv = -7.0;
    int rc = gl_klaunch_im2col(NULL, &g, cols, img, dt, padv);
    if (rc) bad("im2col rc %d", rc);
    T *back = (T *)alloc(ni * sizeof(T)), *rb = (T *)alloc(ni * sizeof(T));
    for (int64_t i = 0; i < ni; i++) rb[i] = 0;
    for (int64_t pc = 0; pc < c.N * c.C; pc++)
      for (int ki = 0; ki < c.k0; ki++)
        for (int kj = 0; kj < c.k1; kj++)
          for (int64_t oh = 0; oh < g.OH; oh++)
            for (int64_t ow = 0; ow < g.OW; ow++) {
              int64_t ih = oh * c.s0 - c.p0 + ki * c.d0, iw = ow * c.s1 - c.p1 + kj * c.d1;
              int64_t ci = ((pc * KK + ki * c.k1 + kj) * L) + oh * g.OW + ow;
              bool in = ih >= 0 && ih < c.H && iw >= 0 && iw < c.W;
              rc_[ci] = in ? img[(pc * c.H + ih) * c.W + iw] : (T)padv;
              if (cols[ci] != rc_[ci]) bad("im2col col %lld: got %g want %g", (long long)ci, (double)cols[ci], (double)rc_[ci]);
            }
    rc = gl_klaunch_col2im(NULL, &g, back, cols, dt);
    if (rc) bad("col2im rc %d", rc);
    /* the CPU's order: kernel row, kernel column, then the output grid */
    for (int64_t pc = 0; pc < c.N * c.C; pc++)
      for (int ki = 0; ki < c.k0; ki++)
        for (int kj = 0; kj < c.k1; kj++)
          for (int64_t oh = 0; oh < g.OH; oh++)
            for (int64_t ow = 0; ow < g.OW; ow++) {
              int64_t ih = oh * c.s0 - c.p0 + ki * c.d0, iw = ow * c.s1 - c.p1 + kj * c.d1;
              if (ih >= 0 && ih < c.H && iw >= 0 && iw < c.W)
                rb[(pc * c.H + ih) * c.W + iw] += cols[((pc * KK + ki * c.k1 + kj) * L) + oh * g.OW + ow];
            }
    for (int64_t i = 0; i < ni; i++)
      if (!close_to(back[i], rb[i], 1e-6, 1e-6)) bad("col2im pixel %lld: got %g want %g", (long long)i, (double)back[i], (double)rb[i]);
    end();
    free_all();
  }
}

/* ---- index: gather, scatter, mask selection, integer matmul; sort ---------------------------- */

static void test_index(void) {
  static const int wdt[] = { GL_KD_UINT8, GL_KD_FLOAT16, GL_KD_INT32, GL_KD_INT64 };
  /* src (4, 10, 3) indexed on axis 1 by 7 indices (repeats included); dst (4, 7, 3) */
  for (int axis = 0; axis < 3; axis++)
    for (int wi = 0; wi < 4; wi++) {
      int dt = wdt[wi], W = dts[dt];
      int64_t ss[3] = { 10, 7, 3 };                   /* extent of src on each axis when indexed */
      int64_t shape[3] = { 4, 5, 3 };
      shape[axis] = 7;
      int64_t sshape[3] = { shape[0], shape[1], shape[2] };
      sshape[axis] = ss[axis];
      gl_kidx w;
      memset(&w, 0, sizeof w);
      w.ndim = 3; w.axis = axis; w.n = shape[0] * shape[1] * shape[2];
      for (int d = 0; d < 3; d++) w.shape[d] = shape[d];
      w.sd[2] = 1; w.sd[1] = shape[2]; w.sd[0] = shape[1] * shape[2];
      w.sx[2] = 1; w.sx[1] = sshape[2]; w.sx[0] = sshape[1] * sshape[2];
      int64_t nsrc = sshape[0] * sshape[1] * sshape[2];
      int64_t *idx = (int64_t *)alloc(7 * sizeof(int64_t));
      for (int k = 0; k < 7; k++) idx[k] = (int64_t)((k * 5 + 3) % ss[axis]);
      idx[6] = idx[2];                                /* a repeat */
      begin("gather width %d axis %d", W, axis);
      char *src = make_vals(dt, nsrc), *dst = alloc(w.n * W);
      int rc = gl_klaunch_gather(NULL, &w, dst, src, idx, W);
      if (rc) bad("rc %d", rc);
      for (int64_t i = 0; i < w.n; i++) {
        int64_t c[3] = { i / (shape[1] * shape[2]), i / shape[2] % shape[1], i % shape[2] };
        int64_t xs = 0;
        for (int d = 0; d < 3; d++) xs += (d == axis ? idx[c[d]] : c[d]) * w.sx[d];
        if (memcmp(dst + i * W, src + xs * W, W)) bad("element %lld", (long long)i);
      }
      end();
      for (int acc = 0; acc < 2; acc++) {
        int dts_acc[] = { GL_KD_BOOL, GL_KD_UINT8, GL_KD_INT32, GL_KD_INT64, GL_KD_FLOAT16, GL_KD_BFLOAT16, GL_KD_FLOAT32,
                          GL_KD_FLOAT64, GL_KD_INT8, GL_KD_INT16, GL_KD_UINT16, GL_KD_UINT32, GL_KD_UINT64 };
        for (int sdt : dts_acc) {
          if (!acc && dts[sdt] != W) continue;
          if (acc && wi != 0) continue;                /* accumulate: every dtype once */
          int Wd = dts[sdt];
          begin("scatter %s %s axis %d", acc ? "add" : "set", dtn[sdt], axis);
          char *sv = make_vals(sdt, w.n, 0, false), *d2 = make_vals(sdt, nsrc, 0, false);
          char *ref = alloc(nsrc * Wd);
          memcpy(ref, d2, nsrc * Wd);
          rc = gl_klaunch_scatter(NULL, &w, d2, sv, idx, sdt, Wd, acc);
          if (rc) bad("rc %d", rc);
          /* lanes in order along the axis: the last repeat wins, adds in order */
          for (int64_t l0 = 0; l0 < w.n; l0++) {
            int64_t c[3] = { l0 / (shape[1] * shape[2]), l0 / shape[2] % shape[1], l0 % shape[2] };
            if (c[axis] != 0) continue;
            for (int64_t j = 0; j < shape[axis]; j++) {
              c[axis] = j;
              int64_t ds_ = 0, xs = 0;
              for (int d = 0; d < 3; d++) { ds_ += c[d] * w.sd[d]; xs += (d == axis ? idx[j] : c[d]) * w.sx[d]; }
              if (!acc) memcpy(ref + xs * Wd, sv + ds_ * Wd, Wd);
              else {
                switch (sdt) {
#define GL_C(E, id, S, kind, half, ...) case GL_KD_##E: { \
                    auto s_ = GL_DT_LOAD(half, ((S *)ref)[xs]) + GL_DT_LOAD(half, ((S *)sv)[ds_]); \
                    ((S *)ref)[xs] = GL_DT_STORE(kind, half, S, id, kind, s_); break; }
                  GL_DTYPE_REAL_LIST(GL_C)
#undef GL_C
                }
              }
            }
          }
          for (int64_t i = 0; i < nsrc; i++) {
            bool ok = same_elem(sdt, d2, ref, i);
            if (!ok && acc && isflt(sdt)) ok = close_to(getd(sdt, d2, i), getd(sdt, ref, i), 1e-6, 1e-6);
            if (!ok) bad("element %lld: got %g want %g", (long long)i, getd(sdt, d2, i), getd(sdt, ref, i));
          }
          end();
        }
      }
      free_all();
    }
  /* mask selection over a strided walk (operands src, mask) */
  for (int64_t n : { 1, 7, 1000, 5000 })
    for (int wi = 0; wi < 4; wi++) {
      int dt = wdt[wi], W = dts[dt];
      begin("mask_select width %d n=%lld", W, (long long)n);
      int64_t sh[2] = { n > 7 ? n / 10 : 1, n > 7 ? 10 : n };
      int64_t st[2][GL_KMAXDIMS] = { { sh[1], 1 }, { 1, sh[0] } };     /* mask walked transposed */
      gl_kiter it = make_iter(2, sh, 2, st);
      int64_t tot = sh[0] * sh[1];
      char *src = make_vals(dt, tot);
      uint8_t *mask = (uint8_t *)alloc(tot);
      int64_t cnt = 0;
      for (int64_t i = 0; i < tot; i++) { mask[i] = (rnd() % 3) == 0; cnt += mask[i]; }
      char *dst = alloc((size_t)(cnt ? cnt : 1) * 2 * W);
      size_t sb = gl_kmask_scratch(tot);
      char *scr = alloc(sb);
      int rc = gl_klaunch_mask_select(NULL, &it, dst, 2, src, mask, W, scr, sb);
      if (rc) bad("rc %d", rc);
      int64_t k = 0;
      for (int64_t i = 0; i < tot; i++) {
        int64_t o0, o1;
        walk_off(it, i, 0, &o0); walk_off(it, i, 1, &o1);
        if (mask[o1]) { if (memcmp(dst + 2 * k * W, src + o0 * W, W)) bad("selected %lld", (long long)k); k++; }
      }
      end();
      free_all();
    }
  /* integer matmul: batch 3 of (5 x 4) @ (4 x 6), b transposed, int32/int64/uint8/bool */
  for (int dt : { GL_KD_INT32, GL_KD_INT64, GL_KD_UINT8, GL_KD_BOOL }) {
    begin("matmul_int %s", dtn[dt]);
    int64_t B = 3, M = 5, N = 6, K = 4, W = dts[dt];
    char *a = make_vals(dt, B * M * K), *b = make_vals(dt, B * K * N), *d = alloc(B * M * N * W);
    gl_matmul_args m = { M, N, K, N, 1, K, 1, 1, K };        /* dst (M,N) rows; a (M,K) rows; b stored (N,K) */
    int64_t sh[1] = { B }, st[3][GL_KMAXDIMS] = { { M * N }, { M * K }, { K * N } };
    gl_kiter bw = make_iter(1, sh, 3, st);
    bw.contiguous = 0;
    int rc = gl_klaunch_matmul_int(NULL, &bw, &m, d, a, b, dt);
    if (rc) bad("rc %d", rc);
    for (int64_t bi = 0; bi < B; bi++)
      for (int64_t r = 0; r < M; r++)
        for (int64_t c = 0; c < N; c++) {
          uint64_t acc = 0;
          for (int64_t k = 0; k < K; k++) {
            int64_t x = (int64_t)getd(dt, a, bi * M * K + r * K + k), y = (int64_t)getd(dt, b, bi * K * N + c * K + k);
            if (dt == GL_KD_BOOL) acc |= (uint64_t)(x & y);
            else if (dt == GL_KD_INT64) acc += (uint64_t)((int64_t *)a)[bi * M * K + r * K + k] * (uint64_t)((int64_t *)b)[bi * K * N + c * K + k];
            else acc = (uint32_t)(acc + (uint32_t)x * (uint32_t)y);
          }
          double want = dt == GL_KD_BOOL ? (acc != 0) : dt == GL_KD_UINT8 ? (double)(uint8_t)acc
                      : dt == GL_KD_INT32 ? (double)(int32_t)(uint32_t)acc : (double)(int64_t)acc;
          double got = getd(dt, d, bi * M * N + r * N + c);
          if (got != want) bad("[%lld,%lld,%lld]: got %g want %g", (long long)bi, (long long)r, (long long)c, got, want);
        }
    end();
    free_all();
  }
}

/* ---- complex and uint64 reductions, scans and sorts -------------------------------------------- */

/* A complex buffer of n elements of dtype dt (complex64 or complex128) from (re, im) pairs. */
static char *cplx_buf(int dt, int64_t n) { return alloc((size_t)n * dts[dt]); }
static void cplx_set(int dt, void *p, int64_t i, double re, double im) {
  if (dt == GL_KD_COMPLEX64) ((gl_complex64 *)p)[i] = gl_make_complex64((float)re, (float)im);
  else ((gl_complex128 *)p)[i] = gl_make_complex128(re, im);
}
static void cplx_get(int dt, const void *p, int64_t i, double *re, double *im) {
  if (dt == GL_KD_COMPLEX64) { *re = ((const gl_complex64 *)p)[i].re; *im = ((const gl_complex64 *)p)[i].im; }
  else { *re = ((const gl_complex128 *)p)[i].re; *im = ((const gl_complex128 *)p)[i].im; }
}

/* NumPy's rule for complex max/min/argmax/argmin over a run: the first element with a NaN in
** either part, else the first of the lexicographic best. */
static int64_t cbest(const std::vector<double> &re, const std::vector<double> &im, bool max) {
  int64_t b = 0;
  for (int64_t k = 0; k < (int64_t)re.size(); k++) {
    bool kn = re[k] != re[k] || im[k] != im[k];
    if (kn) return k;
    if (k == 0) continue;
    bool better = max ? (re[k] > re[b] || (re[k] == re[b] && im[k] > im[b])) : (re[k] < re[b] || (re[k] == re[b] && im[k] < im[b]));
    if (better) b = k;
  }
  return b;
}

static void test_complex_reduce_case(int op, int sdt, int ndim, const int64_t *shape, const int64_t *ss, unsigned mask,
                                     bool nans, const char *tag) {
  gl_reduce_args r = make_red(ndim, shape, ss, mask);
  bool arg = op == GL_KR_ARGMAX || op == GL_KR_ARGMIN, prod = op == GL_KR_PROD;
  int ddt = arg ? GL_KD_INT64 : sdt;
  begin("reduce %s %s M=%lld K=%lld %s%s", redn[op], dtn[sdt], (long long)r.M, (long long)r.K, tag, nans ? " nan" : "");
  int64_t span = 1;
  for (int d = 0; d < ndim; d++) span += (shape[d] - 1) * ss[d];
  char *src = cplx_buf(sdt, span);
  for (int64_t i = 0; i < span; i++) {
    if (prod) {                                  /* near the unit circle: no overflow */
      double a = 6.283185307179586 * urand(), m = 0.99 + 0.02 * urand();
      cplx_set(sdt, src, i, m * cos(a), m * sin(a));
    } else {                                     /* a small grid: ties in either part */
      cplx_set(sdt, src, i, (double)(int64_t)(rnd() % 5) - 2, (double)(int64_t)(rnd() % 5) - 2);
      if (nans && rnd() % 97 == 0) cplx_set(sdt, src, i, rnd() & 1 ? NAN : 1.0, rnd() & 1 ? 2.0 : NAN);
    }
  }
  char *scratch = alloc(gl_reduce_scratch(&r));
  char *dst = alloc((size_t)r.M * dts[ddt]);
  int rc = gl_klaunch_reduce(NULL, op, &r, dst, ddt, src, sdt, 2, 0, scratch);
  if (rc) bad("rc %d", rc);
  std::vector<double> re(r.K), im(r.K);
  for (int64_t m = 0; m < r.M && !rc; m++) {
    int64_t q = m, so = 0, dof = 0;
    for (int d = r.nkept - 1; d >= 0; d--) { so += (q % r.kept_shape[d]) * r.kept_src_strides[d]; dof += (q % r.kept_shape[d]) * r.kept_dst_strides[d]; q /= r.kept_shape[d]; }
    for (int64_t k = 0; k < r.K; k++) {
      int64_t q2 = k, o = 0;
      for (int d = r.nreduced - 1; d >= 0; d--) { o += (q2 % r.reduced_shape[d]) * r.reduced_src_strides[d]; q2 /= r.reduced_shape[d]; }
      cplx_get(sdt, src, so + o, &re[k], &im[k]);
    }
    if (prod) {
      long double pr = 1, pi = 0;
      for (int64_t k = 0; k < r.K; k++) { long double t = pr * re[k] - pi * im[k]; pi = pr * im[k] + pi * re[k]; pr = t; }
      double gr, gi, tol = (sdt == GL_KD_COMPLEX64 ? 1e-6 : 1e-13) * (double)(r.K + 1);
      cplx_get(ddt, dst, dof, &gr, &gi);
      if (!close_to(gr, (double)pr, 1e-5, tol) || !close_to(gi, (double)pi, 1e-5, tol))
        bad("output %lld: got %.9g%+.9gi want %.9Lg%+.9Lgi", (long long)m, gr, gi, pr, pi);
      continue;
    }
    int64_t b = cbest(re, im, op == GL_KR_MAX || op == GL_KR_ARGMAX);
    if (arg) {
      if (((int64_t *)dst)[dof] != b) bad("output %lld: got %lld want %lld", (long long)m, (long long)((int64_t *)dst)[dof], (long long)b);
    } else {
      double gr, gi;
      cplx_get(ddt, dst, dof, &gr, &gi);
      bool same = (gr == re[b] || (gr != gr && re[b] != re[b])) && (gi == im[b] || (gi != gi && im[b] != im[b]));
      if (!same) bad("output %lld: got %g%+gi want %g%+gi", (long long)m, gr, gi, re[b], im[b]);
    }
  }
  end();
  free_all();
}

static void test_uint64_reduce(void) {
  /* values on both sides of 2^63: the int64 compute type must compare them unsigned */
  for (int op : { GL_KR_MAX, GL_KR_MIN, GL_KR_ARGMAX, GL_KR_ARGMIN })
    for (int64_t K : { (int64_t)5, (int64_t)4097, (int64_t)70001 })
      for (int rows = 0; rows < 2; rows++) {
        int64_t M = rows ? 3 : 1, shape[2] = { M, K }, ss[2] = { K, 1 };
        gl_reduce_args r = make_red(2, shape, ss, 2);
        bool arg = op == GL_KR_ARGMAX || op == GL_KR_ARGMIN;
        begin("reduce %s uint64 M=%lld K=%lld", redn[op], (long long)M, (long long)K);
        uint64_t *src = (uint64_t *)alloc((size_t)(M * K) * 8);
        for (int64_t i = 0; i < M * K; i++) src[i] = rnd() >> (rnd() % 3 == 0 ? 0 : 40);
        char *scratch = alloc(gl_reduce_scratch(&r));
        uint64_t *dst = (uint64_t *)alloc((size_t)M * 8);
        int rc = gl_klaunch_reduce(NULL, op, &r, dst, arg ? GL_KD_INT64 : GL_KD_UINT64, src, GL_KD_UINT64, 2, 0, scratch);
        if (rc) bad("rc %d", rc);
        for (int64_t m = 0; m < M && !rc; m++) {
          int64_t b = 0;
          for (int64_t k = 1; k < K; k++) {
            uint64_t v = src[m * K + k], w = src[m * K + b];
            if (op == GL_KR_MAX || op == GL_KR_ARGMAX ? v > w : v < w) b = k;
          }
          uint64_t want = arg ? (uint64_t)b : src[m * K + b];
          if (dst[m] != want) bad("output %lld: got %llu want %llu", (long long)m, (unsigned long long)dst[m], (unsigned long long)want);
        }
        end();
        free_all();
      }
}

static void test_complex_scan(void) {
  struct sc { int64_t lines, K; bool axis0; };
  for (int sdt : { GL_KD_COMPLEX64, GL_KD_COMPLEX128 })
    for (const sc &c : { sc{ 1, 1, false }, sc{ 3, 700, false }, sc{ 5, 513, true }, sc{ 300, 40, false } }) {
      begin("scan cumprod %s lines=%lld K=%lld%s", dtn[sdt], (long long)c.lines, (long long)c.K, c.axis0 ? " (axis 0)" : "");
      int64_t n = c.lines * c.K;
      char *src = cplx_buf(sdt, n), *dst = cplx_buf(sdt, n);
      for (int64_t i = 0; i < n; i++) {
        double a = 6.283185307179586 * urand(), m = 0.99 + 0.02 * urand();
        cplx_set(sdt, src, i, m * cos(a), m * sin(a));
      }
      gl_scan_args s = make_scan(c.lines, c.K, c.axis0);
      int rc = gl_klaunch_scan(NULL, 1, &s, dst, sdt, src, sdt, 2);
      if (rc) bad("rc %d", rc);
      for (int64_t l = 0; l < c.lines && !rc; l++) {
        long double pr = 1, pi = 0;
        for (int64_t k = 0; k < c.K; k++) {
          int64_t o = l * s.src_strides[0] + k * s.src_stride;
          double zr, zi, gr, gi;
          cplx_get(sdt, src, o, &zr, &zi);
          long double t = pr * zr - pi * zi;
          pi = pr * zi + pi * zr;
          pr = t;
          cplx_get(sdt, dst, o, &gr, &gi);
          double tol = (sdt == GL_KD_COMPLEX64 ? 1e-6 : 1e-13) * (double)(k + 2);
          if (!close_to(gr, (double)pr, 1e-5, tol) || !close_to(gi, (double)pi, 1e-5, tol)) {
            bad("line %lld k %lld: got %g%+gi want %Lg%+Lgi", (long long)l, (long long)k, gr, gi, pr, pi);
            break;
          }
        }
      }
      if (gl_klaunch_scan(NULL, 0, &s, dst, sdt, src, sdt, 2) != GL_KERR_NOTSUP) bad("a complex cumsum ran (it is the parts')");
      end();
      free_all();
    }
}

static void test_complex_reduce(void) {
  for (int sdt : { GL_KD_COMPLEX64, GL_KD_COMPLEX128 })
    for (int op : { GL_KR_PROD, GL_KR_MAX, GL_KR_MIN, GL_KR_ARGMAX, GL_KR_ARGMIN }) {
      for (int64_t K : { (int64_t)1, (int64_t)7, (int64_t)300, (int64_t)5000, (int64_t)70001 }) {
        const int64_t sh[1] = { K }, st[1] = { 1 };
        test_complex_reduce_case(op, sdt, 1, sh, st, 1, false, "full");
        if (op != GL_KR_PROD) test_complex_reduce_case(op, sdt, 1, sh, st, 1, true, "full");
      }
      const int64_t rows[2] = { 5, 1000 }, rst[2] = { 1000, 1 }, cols[2] = { 300, 40 }, cst[2] = { 40, 1 };
      test_complex_reduce_case(op, sdt, 2, rows, rst, 2, op != GL_KR_PROD, "rows");
      test_complex_reduce_case(op, sdt, 2, cols, cst, 1, op != GL_KR_PROD, "columns");
      test_complex_reduce_case(op, sdt, 2, cols, cst, 1, false, "columns");
      if (op != GL_KR_ARGMAX && op != GL_KR_ARGMIN) {
        const int64_t sh3[3] = { 4, 30, 6 }, st3[3] = { 180, 6, 1 };
        test_complex_reduce_case(op, sdt, 3, sh3, st3, 5, op != GL_KR_PROD, "axes 1, 3");
      }
    }
  /* the ops the parts do are not a kernel here */
  begin("reduce sum complex64: not a complex kernel");
  const int64_t sh[1] = { 8 }, st[1] = { 1 };
  gl_reduce_args r = make_red(1, sh, st, 1);
  char *src = cplx_buf(GL_KD_COMPLEX64, 8), *dst = cplx_buf(GL_KD_COMPLEX64, 1), *scratch = alloc(gl_reduce_scratch(&r));
  if (gl_klaunch_reduce(NULL, GL_KR_SUM, &r, dst, GL_KD_COMPLEX64, src, GL_KD_COMPLEX64, 2, 0, scratch) != GL_KERR_NOTSUP)
    bad("a complex sum ran");
  end();
  free_all();
  test_uint64_reduce();
  test_complex_scan();
}

/* One sort case: lanes of n elements of dtype dt, made by fill (the whole buffer), sorted
** (desc: descending) and compared with std::stable_sort under less(a, b) of two elements
** (pointers into the source): the positions, and the values bit for bit. */
template <class Fill, class Less>
static void sort_case(int dt, int64_t lanes, int64_t n, bool desc, Fill fill, Less less) {
  begin("sort %s lanes=%lld n=%lld %s", dtn[dt], (long long)lanes, (long long)n, desc ? "desc" : "asc");
  int W = dts[dt];
  gl_sort_args k;
  memset(&k, 0, sizeof k);
  k.ndim = 1; k.lanes = lanes; k.n = n; k.src_stride = 1; k.values_stride = 1; k.indices_stride = lanes;        /* indices transposed */
  k.shape[0] = lanes; k.src_strides[0] = n; k.values_strides[0] = n; k.indices_strides[0] = 1;
  char *src = fill();
  char *vals = alloc(lanes * n * W);
  int64_t *ix = (int64_t *)alloc(lanes * n * sizeof(int64_t));
  size_t sb = gl_sort_scratch(&k, dt);
  char *scr = alloc(sb);
  int rc = gl_klaunch_sort(NULL, &k, vals, ix, src, dt, desc, scr, sb);
  if (rc) bad("rc %d", rc);
  for (int64_t l = 0; l < lanes && !rc; l++) {
    std::vector<int64_t> ord(n);
    for (int64_t j = 0; j < n; j++) ord[j] = j;
    std::stable_sort(ord.begin(), ord.end(), [&](int64_t x, int64_t y) {
      if (desc) std::swap(x, y);
      return less(src + (l * n + x) * W, src + (l * n + y) * W);
    });
    for (int64_t j = 0; j < n; j++) {
      if (ix[j * lanes + l] != ord[j]) { bad("lane %lld pos %lld: index %lld want %lld", (long long)l, (long long)j, (long long)ix[j * lanes + l], (long long)ord[j]); break; }
      if (memcmp(vals + (l * n + j) * W, src + (l * n + ord[j]) * W, W)) { bad("lane %lld pos %lld: value", (long long)l, (long long)j); break; }
    }
  }
  end();
  free_all();
}

/* NumPy's sort order of complex numbers: the groups [R + Rj, R + nanj, nan + Rj, nan + nanj],
** each by its non-NaN parts, real first. */
static bool cplx_less(double ar, double ai, double br, double bi) {
  int ga = 2 * (ar != ar) + (ai != ai), gb = 2 * (br != br) + (bi != bi);
  if (ga != gb) return ga < gb;
  if (ga < 2 && ar != br) return ar < br;
  if ((ga == 0 || ga == 2) && ai != bi) return ai < bi;
  return false;
}

static void test_sort(void) {
  for (int dt : { GL_KD_FLOAT32, GL_KD_FLOAT64, GL_KD_INT32, GL_KD_INT64, GL_KD_FLOAT16, GL_KD_BFLOAT16, GL_KD_UINT8,
                  GL_KD_BOOL, GL_KD_INT8, GL_KD_INT16, GL_KD_UINT16, GL_KD_UINT32, GL_KD_UINT64, GL_KD_COMPLEX64,
                  GL_KD_COMPLEX128 })
    for (int64_t lanes : { 1, 3 })
      for (int64_t n : { 1, 7, 1000 })
        for (int desc = 0; desc < 2; desc++) {
          if (iscplx(dt)) {                      /* small parts (ties), NaN in either, -0 */
            sort_case(dt, lanes, n, desc, [&] {
              char *src = alloc(lanes * n * dts[dt]);
              for (int64_t i = 0; i < lanes * n; i++) {
                double re = (double)(int64_t)(rnd() % 7) - 3, im = (double)(int64_t)(rnd() % 7) - 3;
                if (rnd() % 9 == 0) re = NAN;
                if (rnd() % 9 == 0) im = NAN;
                if (rnd() % 11 == 0) re = -0.0;
                cplx_set(dt, src, i, re, im);
              }
              return src;
            }, [&](const char *a, const char *b) {
              double ar, ai, br, bi;
              cplx_get(dt, a, 0, &ar, &ai);
              cplx_get(dt, b, 0, &br, &bi);
              return cplx_less(ar, ai, br, bi);
            });
          } else if (dt == GL_KD_UINT64) {       /* both sides of 2^63: keys of 8 bytes */
            sort_case(dt, lanes, n, desc, [&] {
              uint64_t *src = (uint64_t *)alloc(lanes * n * 8);
              for (int64_t i = 0; i < lanes * n; i++) src[i] = rnd() >> (rnd() % 2 ? 0 : 50);
              return (char *)src;
            }, [](const char *a, const char *b) { return *(const uint64_t *)a < *(const uint64_t *)b; });
          } else {
            sort_case(dt, lanes, n, desc, [&] {
              char *src = make_vals(dt, lanes * n);
              if (isflt(dt) && n > 3) { setd(dt, src, 1, -0.0); setd(dt, src, 2, 0.0); }
              for (int64_t l = 0; isflt(dt) && n > 5 && l < lanes; l++) {     /* NaNs in every lane */
                setd(dt, src, l * n + 3, NAN);
                setd(dt, src, l * n + 5, NAN);
              }
              return src;
            }, [&](const char *pa, const char *pb) {
              double a = getd(dt, pa, 0), b = getd(dt, pb, 0);
              if (a != a) return false;         /* NaN above every number */
              if (b != b) return true;
              return a < b;
            });
          }
        }
}

/* ---- launch configuration checks (the emulator's own) ----------------------------------------- */

static void test_launch_errors(void) {
  begin("an empty launch returns 0");
  gl_kiter it;
  memset(&it, 0, sizeof it);
  it.ndim = 1;
  it.contiguous = 1;
  if (gl_klaunch_fill(NULL, &it, NULL, 4, "\0\0\0") != 0) bad("n = 0 launched something");
  if (cudaGetLastError() != cudaSuccess) bad("error left behind");
  end();
}

/* ---- the emulator's own checks: deliberate bugs (selftest.cu) must be caught -------------------- */

extern "C" int kemu_selftest(int which, float *buf, int n);

/* Runs selftest 'which' in a child; its exit status (or 128 + signal). */
static int child_status(int which) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    if (!getenv("KEMU_VERBOSE")) { FILE *f = freopen("/dev/null", "w", stderr); (void)f; }
    kemu::force_threads(true);              /* the race kernel has no barrier: real threads */
    int n = 1000;
    float *buf = (float *)malloc((size_t)n * sizeof(float));
    int rc = kemu_selftest(which, buf, n);
    _exit(rc == 0 ? 0 : 3);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_self(void) {
  begin("self: a full-mask shuffle after lanes returned is an error");
  if (child_status(0) == 0) bad("not caught");
  end();
#if defined(__SANITIZE_ADDRESS__)
  begin("self: a write past the end is caught by ASan");
  if (child_status(1) == 0) bad("not caught");
  end();
  begin("self: a misaligned 16-byte load is caught by UBSan");
  if (child_status(2) == 0) bad("not caught");
  end();
#endif
#if defined(__SANITIZE_THREAD__)
  begin("self: a shared-memory race is caught by TSan");
  if (child_status(3) == 0) bad("not caught");
  end();
#endif
  begin("self: barrier and shuffle give the right values");
  float *buf = (float *)alloc(2 * GL_KTHREADS * sizeof(float));
  int rc = kemu_selftest(4, buf, 0);
  if (rc) bad("rc %d", rc);
  for (int b = 0; b < 2; b++)
    for (int t = 0; t < GL_KTHREADS; t++) {
      float want = (float)((t + 1) % GL_KTHREADS) + (float)(((t ^ 1) + 1) % GL_KTHREADS);
      if (buf[b * GL_KTHREADS + t] != want) bad("thread %d: got %g want %g", t, buf[b * GL_KTHREADS + t], want);
    }
  end();
  begin("self: invalid launch configurations are refused");
  if ((rc = kemu_selftest(5, buf, 0)) != cudaErrorInvalidConfiguration) bad("2048 threads: rc %d", rc);
  if ((rc = kemu_selftest(6, buf, 0)) != cudaErrorInvalidConfiguration) bad("grid.y 70000: rc %d", rc);
  if (cudaGetLastError() != cudaSuccess) bad("the error stayed");
  end();
  free_all();
}

/* ---- main ---------------------------------------------------------------------------------------- */

template <int DT> static void all_binary(void) {
  int op = 0;
#define GL_X(name, kind, F, D, I) test_binary_dt<tb_##name, DT>(op++, #name);
  GL_BINARY_OPS(GL_X)
#undef GL_X
}
template <int DT> static void all_unary(void) {
  int op = 0;
#define GL_X(name, kind, F, D, I) test_unary_dt<tu_##name, DT>(op++, #name);
  GL_UNARY_OPS(GL_X)
#undef GL_X
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  bool quick = getenv("KEMU_QUICK") != NULL;
  struct { const char *name; void (*fn)(void); } suites[] = {
    { "self", test_self },          /* first: TSan's check forks before any thread exists */
    { "binary", [] { all_binary<GL_KD_BOOL>(); all_binary<GL_KD_UINT8>(); all_binary<GL_KD_INT32>(); all_binary<GL_KD_INT64>();
                     all_binary<GL_KD_FLOAT16>(); all_binary<GL_KD_BFLOAT16>(); all_binary<GL_KD_FLOAT32>(); all_binary<GL_KD_FLOAT64>(); } },
    { "unary", [] { all_unary<GL_KD_BOOL>(); all_unary<GL_KD_UINT8>(); all_unary<GL_KD_INT32>(); all_unary<GL_KD_INT64>();
                    all_unary<GL_KD_FLOAT16>(); all_unary<GL_KD_BFLOAT16>(); all_unary<GL_KD_FLOAT32>(); all_unary<GL_KD_FLOAT64>(); } },
    { "copy", test_copy },
    { "fill", test_fill_where },
    { "reduce", [] { test_reduce(getenv("KEMU_QUICK") != NULL); } },
    { "scan", test_scan },
    { "random", test_random },
    { "optim", [] { test_optim_t<float>(GL_KD_FLOAT32); test_optim_t<double>(GL_KD_FLOAT64); } },
    { "xent", [] { test_xent_t<float>(GL_KD_FLOAT32); test_xent_t<double>(GL_KD_FLOAT64); } },
    { "attention", [] {
        test_attention_t<float>(GL_KD_FLOAT32); test_attention_t<double>(GL_KD_FLOAT64);
        test_attention_bwd_t<float>(GL_KD_FLOAT32); test_attention_bwd_t<double>(GL_KD_FLOAT64);
      } },
    { "layer_norm", [] { test_layer_norm_t<float>(GL_KD_FLOAT32); test_layer_norm_t<double>(GL_KD_FLOAT64); } },
    { "conv", [] { test_conv_t<float>(GL_KD_FLOAT32); test_conv_t<double>(GL_KD_FLOAT64); } },
    { "rnn", [] {
        test_lstm_t<float>(GL_KD_FLOAT32); test_lstm_t<double>(GL_KD_FLOAT64);
        test_gru_t<float>(GL_KD_FLOAT32); test_gru_t<double>(GL_KD_FLOAT64);
        test_rnn_cell_t<float>(GL_KD_FLOAT32); test_rnn_cell_t<double>(GL_KD_FLOAT64);
      } },
    { "index", test_index },
    { "sort", test_sort },
    { "complex", test_complex_reduce },
    { "launch", test_launch_errors },
  };
  (void)quick;
  printf("kemu: kernels/*.cu on the CPU emulator (grids of at most %d blocks, vector launches of %lld elements)%s\n",
         (int)GL_KMAXBLOCKS, (long long)GL_KCHUNK, quick ? ", quick" : "");
  for (auto &s : suites) {
    if (only && strcmp(only, s.name)) continue;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int p0 = n_pass, f0 = n_fail;
    s.fn();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("kemu: %-7s %5d passed, %d failed (%.1f s)\n", s.name, n_pass - p0, n_fail - f0,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    fflush(stdout);
  }
  printf("kemu: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
