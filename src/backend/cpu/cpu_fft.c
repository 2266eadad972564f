/*
** cpu_fft.c — gl_backend.fft on the cpu: FFTW 3 (backend.h, gl_fft_kind), single precision
** for complex64, double for complex128.
**
** FFTW is opened with dlopen the first time a transform asks for it (`gpulua -e ''` loads
** nothing), the OpenMP build first (libfftw3_omp.so.3, on the OpenMP runtime gpulua's own
** loops use, so its threads come from the same pool), else the plain library on one
** thread; a machine without it gets an error naming Debian's package. The entry points'
** types come from fftw3.h; a build without that header has no FFTW at all (supports() says
** so, and the ops layer refuses before allocating).
**
** Every call goes through FFTW's guru64 interface: one dimension per transformed axis and
** one "howmany" dimension per batch axis, each with the element strides of both arrays, so
** views (transposed, sliced, broadcast batches) are transformed where they lie. Only an
** input with a negative stride, or a C2R input (FFTW's multi-dimensional c2r overwrites
** its input), is first copied, contiguous, with the scale applied in that copy; otherwise
** the scale is one pass over the output after the transform.
**
** Plans are kept in a small LRU cache keyed by everything a plan depends on: kind,
** precision, sign, the dimensions and strides, the arrays' SIMD alignment
** (fftw_alignment_of: a plan runs on other arrays through the new-array execute functions
** only where they are aligned alike) and the thread count (every core for a large
** transform, one for a small one: fx_execute). FFTW's planner is not
** thread-safe: the cache's lock covers planning, execution and destruction, so Lua states
** in several threads take turns.
**
** The planner: FFTW_ESTIMATE reads no array and costs microseconds, but its plans may run
** at half the speed of FFTW_MEASURE's (2^20 complex64 points on one core here: 11 ms
** against 6.2 ms; the prime 1000003: 32 ms against 23 ms), while measuring costs seconds
** (2.4 s and 7.9 s for those). So a layout is first planned with FFTW_ESTIMATE (on the
** user's arrays, which it does not read or write), and only a plan whose runs have taken
** MEASURE_AFTER_S seconds in all is planned again with FFTW_MEASURE, as a rent-or-buy
** choice: measuring then costs at most a few times what was already spent, and pays back
** over the runs to come. Measuring overwrites the arrays it is given: it runs on scratch
** buffers of the user's alignment, never on the user's arrays, within MEASURE_LIMIT_S
** (past it FFTW keeps the estimated plan). GPULUA_FFTW_PLANNER=estimate keeps the first
** plans; =measure measures every layout at its first use, without a limit.
**
** What measuring finds outlives the process: after each measured plan FFTW's wisdom is
** stored (core/cache.h: $XDG_CACHE_HOME/gpulua/fftw, a private folder, a sealed file per
** precision and kind of CPU, merged with what other processes stored), and imported when
** the library loads, with the system's (/etc/fftw). FFTW's planner uses wisdom at any
** rigour, FFTW_ESTIMATE included, so a layout measured once is planned as measured from
** its first call in later runs (fft2 of 2048^2 here: 17 ms against 175 ms). Estimate mode
** neither reads nor writes wisdom.
*/
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpu.h"
#include "../../core/cache.h"

#if defined(__has_include)
#if __has_include(<fftw3.h>)
#include <fftw3.h>
#define GL_WITH_FFTW 1
#endif
#endif

#ifndef GL_WITH_FFTW

bool gl_cpu_has_fft(int kind, gl_dtype dt) { (void)kind; (void)dt; return false; }
gl_status gl_cpu_fft(const gl_array *out, const gl_array *in, const gl_fft_args *a) {
  (void)out; (void)in; (void)a;
  return gl_fail(GL_ENOTSUP, "gpulua was built without FFTW's header (install libfftw3-dev and rebuild)");
}
void gl_cpu_fftw_version(char *buf, size_t n) { if (n) buf[0] = 0; }

#else

/* ---- the two libraries (float, double), loaded once ------------------------------------- */

/* The entry points of one precision P ("fftw_" or "fftwf_"), whose types differ. */
#define FFTW_FUNCS(X, P)                                                                        \
  X(P, plan_guru64_dft) X(P, plan_guru64_dft_r2c) X(P, plan_guru64_dft_c2r) X(P, execute_dft)  \
  X(P, execute_dft_r2c) X(P, execute_dft_c2r) X(P, destroy_plan) X(P, alignment_of)            \
  X(P, set_timelimit) X(P, import_wisdom_from_string) X(P, export_wisdom_to_string)               \
  X(P, import_system_wisdom)
#define FFTW_FIELD(P, f) __typeof__(P##f) *f;
#define FFTW_NAME(P, f) #f,
#define FFTW_SLOT(P, f) (void *)&P.f,

typedef struct fx_dfns { FFTW_FUNCS(FFTW_FIELD, fftw_) } fx_dfns;
typedef struct fx_sfns { FFTW_FUNCS(FFTW_FIELD, fftwf_) } fx_sfns;
static fx_dfns fd;
static fx_sfns fs;

/* One precision's library: loaded or why not; its thread entry points (of one type in both
** precisions), NULL in the plain library; its version string. */
typedef struct fx_lib {
  pthread_once_t once;
  bool ok;
  bool threads;              /* the OpenMP build, its threads initialised */
  char why[300];
  __typeof__(fftw_init_threads) *init_threads;
  __typeof__(fftw_plan_with_nthreads) *plan_with_nthreads;
  const char *version;
} fx_lib;

static fx_lib lib_d = { .once = PTHREAD_ONCE_INIT }, lib_s = { .once = PTHREAD_ONCE_INIT };

/* *slot = the entry point prefix+name of h (dlsym's void * copied, which keeps the
** conversion to a function pointer defined); whether h has it. */
static bool fx_sym(void *h, const char *prefix, const char *name, void *slot) {
  char full[64];
  snprintf(full, sizeof full, "%s%s", prefix, name);
  void *p = dlsym(h, full);
  memcpy(slot, &p, sizeof p);
  return p != NULL;
}

/* Opens the OpenMP build of one precision (base "libfftw3" or "libfftw3f", entry points
** prefix+name), else the plain library, and resolves FFTW_FUNCS into slots (in order). */
static void fx_open(fx_lib *lib, const char *base, const char *prefix, const char *pkg, void *const *slots) {
  static const char *const names[] = { FFTW_FUNCS(FFTW_NAME, ) };
  char path[64];
  snprintf(path, sizeof path, "%s_omp.so.3", base);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  bool omp = h != NULL;
  if (h == NULL) {
    snprintf(path, sizeof path, "%s.so.3", base);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  if (h == NULL) {
    const char *e = dlerror();
    snprintf(lib->why, sizeof lib->why, "FFTW could not be loaded (%s: %s); install Debian's %s", path,
             e ? e : "not found", pkg);
    return;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!fx_sym(h, prefix, names[i], slots[i])) {
      snprintf(lib->why, sizeof lib->why, "%s lacks %s%s (FFTW 3.3 or later is needed: Debian's %s)", path, prefix,
               names[i], pkg);
      dlclose(h);
      return;
    }
  }
  fx_sym(h, prefix, "plan_with_nthreads", &lib->plan_with_nthreads);
  fx_sym(h, prefix, "version", &lib->version);
  lib->threads = omp && fx_sym(h, prefix, "init_threads", &lib->init_threads) && lib->plan_with_nthreads &&
                 lib->init_threads() != 0;
  lib->ok = true;
}

static void wisdom_load(bool dbl);

static void load_d(void) {
  void *const slots[] = { FFTW_FUNCS(FFTW_SLOT, fd) };
  fx_open(&lib_d, "libfftw3", "fftw_", "libfftw3-double3", slots);
  if (lib_d.ok) wisdom_load(true);
}
static void load_s(void) {
  void *const slots[] = { FFTW_FUNCS(FFTW_SLOT, fs) };
  fx_open(&lib_s, "libfftw3f", "fftwf_", "libfftw3-single3", slots);
  if (lib_s.ok) wisdom_load(false);
}
#undef FFTW_FIELD
#undef FFTW_NAME
#undef FFTW_SLOT

/* The library of one precision, loaded; GL_ENOTSUP with the loader's message. */
static gl_status fx_load(bool dbl) {
  fx_lib *lib = dbl ? &lib_d : &lib_s;
  pthread_once(&lib->once, dbl ? load_d : load_s);
  if (!lib->ok) return gl_fail(GL_ENOTSUP, "%s", lib->why);
  return GL_OK;
}

/* gpu.config().versions.fftw: "fftw-3.3.10 (openmp)", empty until a transform loaded it. */
void gl_cpu_fftw_version(char *buf, size_t n) {
  if (n == 0) return;
  buf[0] = 0;
  const fx_lib *lib = lib_d.ok ? &lib_d : &lib_s;
  if (lib->ok && lib->version) snprintf(buf, n, "%s%s", lib->version, lib->threads ? " (openmp)" : "");
}

bool gl_cpu_has_fft(int kind, gl_dtype dt) {
  return (unsigned)kind < GL_NFFT && (dt == GL_COMPLEX64 || dt == GL_COMPLEX128);
}

/* ---- a transform's description: FFTW's dimensions --------------------------------------- */

/* Everything a plan depends on, as one key: the header, then (n, is, os) per dimension,
** the transformed ones first. */
enum { K_KIND, K_DBL, K_SIGN, K_RANK, K_HRANK, K_THREADS, K_ALIGN_IN, K_ALIGN_OUT, K_HEAD };
#define KEYLEN (K_HEAD + 3 * 2 * GL_MAXDIMS)

typedef struct fx_desc {
  int64_t key[KEYLEN];
  fftw_iodim64 dims[GL_MAXDIMS], hdims[GL_MAXDIMS];
  int rank, hrank;
  int64_t work;               /* elements times passes: what decides the thread count */
} fx_desc;

/* The dimensions of a transform of in into out (C-contiguous): the transformed axes in
** the order given (the last one the halved axis of R2C and C2R), then the batch axes of
** extent > 1, outermost first, neighbours merged where both arrays are contiguous across
** them. */
static void fx_describe(fx_desc *d, const gl_fft_args *a, const gl_array *in, const gl_array *out) {
  memset(d, 0, sizeof *d);
  bool used[GL_MAXDIMS] = { false };
  const gl_array *logical = a->kind == GL_FFT_C2R ? out : in;     /* its extents are the n's */
  double passes = 1;
  for (int r = 0; r < a->rank; r++) {
    int ax = a->axes[r];
    used[ax] = true;
    d->dims[r] = (fftw_iodim64){ logical->shape[ax], in->strides[ax], out->strides[ax] };
    passes += log2((double)logical->shape[ax] + 1);
  }
  d->rank = a->rank;
  for (int ax = 0; ax < out->ndim; ax++) {
    if (used[ax] || out->shape[ax] == 1) continue;
    fftw_iodim64 h = { out->shape[ax], in->strides[ax], out->strides[ax] };
    fftw_iodim64 *prev = d->hrank ? &d->hdims[d->hrank - 1] : NULL;
    if (prev && prev->is == h.is * h.n && prev->os == h.os * h.n) {
      prev->n *= h.n;                                           /* one longer batch */
      prev->is = h.is;
      prev->os = h.os;
    } else {
      d->hdims[d->hrank++] = h;
    }
  }
  d->work = (int64_t)((double)out->size * passes);
  int64_t *k = d->key;
  k[K_KIND] = a->kind;
  k[K_DBL] = out->dtype == GL_COMPLEX128 || out->dtype == GL_FLOAT64;
  k[K_SIGN] = a->kind == GL_FFT_C2C ? a->sign : 0;
  k[K_RANK] = d->rank;
  k[K_HRANK] = d->hrank;
  int64_t *p = k + K_HEAD;
  for (int r = 0; r < d->rank; r++, p += 3) { p[0] = d->dims[r].n; p[1] = d->dims[r].is; p[2] = d->dims[r].os; }
  for (int r = 0; r < d->hrank; r++, p += 3) { p[0] = d->hdims[r].n; p[1] = d->hdims[r].is; p[2] = d->hdims[r].os; }
}

/* ---- the plan cache ------------------------------------------------------------------- */

#define CACHE_SIZE 32
#define MEASURE_AFTER_S 4.0      /* seconds of runs of one plan that make measuring worth it */
#define MEASURE_LIMIT_S 12.0     /* the most seconds measuring may take */

typedef struct fx_plan {
  int64_t key[KEYLEN];
  void *plan;                 /* fftw_plan or fftwf_plan; NULL: a free slot */
  uint64_t stamp;
  bool measured;              /* planned with FFTW_MEASURE (or tried) */
  double spent_s;             /* seconds its runs have taken */
} fx_plan;

static struct {
  pthread_mutex_t lock;
  fx_plan e[CACHE_SIZE];
  uint64_t clock;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* GPULUA_FFTW_PLANNER: 'a' (auto, the default), 'e' (estimate) or 'm' (measure). */
static char planner_mode(void) {
  static char mode;
  if (mode == 0) {
    const char *v = getenv("GPULUA_FFTW_PLANNER");
    mode = v == NULL || *v == '\0' ? 'a' : strcmp(v, "estimate") == 0 ? 'e' : strcmp(v, "measure") == 0 ? 'm' : '?';
  }
  return mode;
}

/* ---- wisdom: what measuring found, kept across runs ------------------------------------ */

/* <cache>/fftw/wisdom-<single|double>-<the CPU's hash>: FFTW's wisdom of one precision on
** this kind of CPU (core/cache.h: a private folder, a sealed file); dir gets the folder. */
static bool wisdom_path(bool dbl, char *dir, size_t dlen, char *path, size_t plen) {
  if (gl_cache_path("fftw", dir, dlen) != GL_OK) return false;
  int n = snprintf(path, plen, "%s/wisdom-%s-%016llx", dir, dbl ? "double" : "single",
                   (unsigned long long)gl_cache_cpu_hash());
  return n > 0 && (size_t)n < plen;
}

/* Adds the wisdom of path to FFTW's (a file from another FFTW version is refused by FFTW
** and ignored here). */
static void wisdom_import(bool dbl, const char *path) {
  char *body;
  size_t n;
  if (!gl_cache_read_sealed(path, &body, &n)) return;
  if (dbl) fd.import_wisdom_from_string(body);
  else fs.import_wisdom_from_string(body);
  free(body);
}

/* At the library's load (in its pthread_once, before any plan of that precision): the
** system's wisdom (/etc/fftw) and ours, so that a layout measured in an earlier run is
** planned as measured from its first call, FFTW_ESTIMATE included. Not in estimate mode. */
static void wisdom_load(bool dbl) {
  if (planner_mode() != 'a' && planner_mode() != 'm') return;
  if (dbl) fd.import_system_wisdom();
  else fs.import_system_wisdom();
  char dir[4096], path[4200];
  if (wisdom_path(dbl, dir, sizeof dir, path, sizeof path)) wisdom_import(dbl, path);
}

/* After a plan was measured (the cache's lock held): FFTW's wisdom, merged with what
** other processes stored meanwhile, stored again. Best effort: a cache that cannot be
** written only means measuring again in the next run. */
static void wisdom_save(bool dbl) {
  char dir[4096], path[4200];
  if (!wisdom_path(dbl, dir, sizeof dir, path, sizeof path) || !gl_cache_open("fftw", dir, sizeof dir)) return;
  static int swept;
  if (!swept) {
    swept = 1;
    gl_cache_sweep(dir);
  }
  wisdom_import(dbl, path);
  char *w = dbl ? fd.export_wisdom_to_string() : fs.export_wisdom_to_string();
  if (w == NULL) return;
  (void)gl_cache_store(dir, path, w, strlen(w));
  free(w);
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The work (output elements times passes) from which a transform runs on every core. */
#define FFT_PAR_MIN 32768

static void plan_destroy(bool dbl, void *p) {
  if (p == NULL) return;
  if (dbl) fd.destroy_plan((fftw_plan)p);
  else fs.destroy_plan((fftwf_plan)p);
}

/* A new plan for d over the arrays at ip and op (flags: FFTW_ESTIMATE, which reads
** neither, or FFTW_MEASURE on scratch arrays) within 'limit' seconds (< 0: none). */
static void *plan_new(const fx_desc *d, void *ip, void *op, unsigned flags, double limit) {
  int kind = (int)d->key[K_KIND], sign = (int)d->key[K_SIGN], nt = (int)d->key[K_THREADS];
  const fftw_iodim64 *dims = d->dims, *hd = d->hdims;
  int r = d->rank, hr = d->hrank;
  if (d->key[K_DBL]) {
    if (lib_d.threads) lib_d.plan_with_nthreads(nt);
    fd.set_timelimit(limit);
    if (kind == GL_FFT_C2C) return fd.plan_guru64_dft(r, dims, hr, hd, ip, op, sign, flags);
    if (kind == GL_FFT_R2C) return fd.plan_guru64_dft_r2c(r, dims, hr, hd, ip, op, flags);
    return fd.plan_guru64_dft_c2r(r, dims, hr, hd, ip, op, flags);
  }
  if (lib_s.threads) lib_s.plan_with_nthreads(nt);
  fs.set_timelimit(limit);
  if (kind == GL_FFT_C2C) return fs.plan_guru64_dft(r, dims, hr, hd, ip, op, sign, flags);
  if (kind == GL_FFT_R2C) return fs.plan_guru64_dft_r2c(r, dims, hr, hd, ip, op, flags);
  return fs.plan_guru64_dft_c2r(r, dims, hr, hd, ip, op, flags);
}

/* The bytes an array of the transform spans (its strides' reach, one element past). */
static size_t span_bytes(const fx_desc *d, bool input) {
  int kind = (int)d->key[K_KIND];
  size_t real = d->key[K_DBL] ? sizeof(double) : sizeof(float);
  bool complex_ = input ? kind != GL_FFT_R2C : kind != GL_FFT_C2R;
  int64_t reach = 0;
  for (int r = 0; r < d->rank; r++) {
    int64_t n = d->dims[r].n;
    bool halved = r == d->rank - 1 && complex_ && kind != GL_FFT_C2C;
    if (halved) n = n / 2 + 1;
    int64_t st = input ? d->dims[r].is : d->dims[r].os;
    reach += (n - 1) * (st < 0 ? -st : st);
  }
  for (int r = 0; r < d->hrank; r++) {
    int64_t st = input ? d->hdims[r].is : d->hdims[r].os;
    reach += (d->hdims[r].n - 1) * (st < 0 ? -st : st);
  }
  return (size_t)(reach + 1) * real * (complex_ ? 2 : 1);
}

/* A plan for d measured on scratch arrays aligned as d's (NULL when FFTW finds none or no
** scratch can be had). d's strides are non-negative (the caller copies others). */
static void *plan_measured(const fx_desc *d, bool preserve, double limit) {
  size_t ia = (size_t)d->key[K_ALIGN_IN], oa = (size_t)d->key[K_ALIGN_OUT];
  char *si = aligned_alloc(64, (span_bytes(d, true) + ia + 63) / 64 * 64);
  char *so = aligned_alloc(64, (span_bytes(d, false) + oa + 63) / 64 * 64);
  void *p = NULL;
  unsigned keep = preserve ? FFTW_PRESERVE_INPUT : FFTW_DESTROY_INPUT;
  if (si && so) p = plan_new(d, si + ia, so + oa, FFTW_MEASURE | keep, limit);
  free(si);
  free(so);
  return p;
}

static void plan_run(const fx_desc *d, void *plan, void *ip, void *op) {
  int kind = (int)d->key[K_KIND];
  if (d->key[K_DBL]) {
    if (kind == GL_FFT_C2C) fd.execute_dft(plan, ip, op);
    else if (kind == GL_FFT_R2C) fd.execute_dft_r2c(plan, ip, op);
    else fd.execute_dft_c2r(plan, ip, op);
  } else {
    if (kind == GL_FFT_C2C) fs.execute_dft(plan, ip, op);
    else if (kind == GL_FFT_R2C) fs.execute_dft_r2c(plan, ip, op);
    else fs.execute_dft_c2r(plan, ip, op);
  }
}

/* Runs the transform d from ip to op with a cached plan (made on a miss, measured when
** the planner says so), the cache's lock held throughout. preserve: in must be left as it
** is. FFTW may refuse a layout (no plan): GL_ENOTSUP, and the caller copies. */
static gl_status fx_execute(fx_desc *d, void *ip, void *op, bool preserve) {
  bool dbl = d->key[K_DBL] != 0;
  d->key[K_ALIGN_IN] = dbl ? fd.alignment_of(ip) : fs.alignment_of(ip);
  d->key[K_ALIGN_OUT] = dbl ? fd.alignment_of(op) : fs.alignment_of(op);
  /* every core for a large transform, whatever the load (as FFTW's own plans and SciPy's
  ** workers = -1 run): the thread count is part of a plan's key, so a count that followed
  ** the load would flip between layouts each planned (and measured) anew, and FFTW's
  ** threads lose little on a core another process shares */
  int nt = (dbl ? lib_d.threads : lib_s.threads) && d->work >= FFT_PAR_MIN ? gl_cpu_max_threads() : 1;
  d->key[K_THREADS] = nt;
  char mode = planner_mode();
  if (mode == '?')
    return gl_fail(GL_EINVAL, "GPULUA_FFTW_PLANNER: '%s' is neither estimate nor measure", getenv("GPULUA_FFTW_PLANNER"));
  pthread_mutex_lock(&cache.lock);
  fx_plan *hit = NULL, *lru = &cache.e[0];
  for (int i = 0; i < CACHE_SIZE && hit == NULL; i++) {
    fx_plan *e = &cache.e[i];
    if (e->plan && memcmp(e->key, d->key, sizeof d->key) == 0) hit = e;
    else if (lru->plan && (e->plan == NULL || e->stamp < lru->stamp)) lru = e;
  }
  if (hit == NULL) {
    unsigned keep = preserve ? FFTW_PRESERVE_INPUT : FFTW_DESTROY_INPUT;
    void *p = mode == 'm' ? plan_measured(d, preserve, FFTW_NO_TIMELIMIT) : NULL;
    if (p) wisdom_save(dbl);
    if (p == NULL) p = plan_new(d, ip, op, FFTW_ESTIMATE | keep, FFTW_NO_TIMELIMIT);
    if (p == NULL) {
      pthread_mutex_unlock(&cache.lock);
      return gl_fail(GL_ENOTSUP, "FFTW has no plan for this layout");
    }
    plan_destroy(lru->key[K_DBL] != 0, lru->plan);
    memset(lru, 0, sizeof *lru);
    memcpy(lru->key, d->key, sizeof d->key);
    lru->plan = p;
    lru->measured = mode != 'a';
    hit = lru;
  } else if (!hit->measured && hit->spent_s >= MEASURE_AFTER_S) {
    hit->measured = true;
    void *p = plan_measured(d, preserve, MEASURE_LIMIT_S);
    if (p) {
      wisdom_save(dbl);
      plan_destroy(dbl, hit->plan);
      hit->plan = p;
    }
  }
  hit->stamp = ++cache.clock;
  double t0 = mode == 'a' && !hit->measured ? seconds() : 0;
  plan_run(d, hit->plan, ip, op);
  if (t0 > 0) hit->spent_s += seconds() - t0;
  pthread_mutex_unlock(&cache.lock);
  if (nt > 1) gl_cpu_team_done(nt);
  return GL_OK;
}

/* ---- the backend entry ---------------------------------------------------------------- */

/* x as an array of reals, for the elementwise loops: itself when it is real, else
** (complex) its view_as_real, of x flattened first when 'flat' (x then C-contiguous). false
** when there is no such view (a complex array of GL_MAXDIMS axes, not flattened). */
static bool as_reals(const gl_array *x, bool flat, gl_array *v) {
  *v = *x;
  if (!gl_dtype_is_complex((gl_dtype)x->dtype)) return true;
  int64_t n = x->size;
  if (flat && gl_view_reshape(v, 1, &n) != GL_OK) return false;
  return v->ndim < GL_MAXDIMS && gl_view_as_real(v) == GL_OK;
}

/* dst = src * scale, as arrays of reals (dst may be src; both as_reals views of one shape). */
static gl_status mul_reals(const gl_array *dst, const gl_array *src, double scale) {
  gl_operand a = { src, gl_scalar_int(0) }, b = { NULL, gl_scalar_float(scale) };
  return gl_cpu_binary(GL_B_mul, (gl_dtype)dst->dtype, dst, a, b);
}

/* *tmp = a contiguous copy of in times scale, on which FFTW may do as it likes: one pass
** where views of reals allow, else a copy and a pass. */
static gl_status contiguous_copy(gl_array *tmp, const gl_array *in, double scale) {
  GL_TRY(gl_array_alloc(tmp, (gl_dtype)in->dtype, in->ndim, in->shape, gl_array_device(in)));
  gl_array d, s;
  gl_status st;
  if (scale != 1 && as_reals(tmp, false, &d) && as_reals(in, false, &s)) {
    st = mul_reals(&d, &s, scale);
  } else {
    st = gl_cpu_copy(tmp, in);
    if (st == GL_OK && scale != 1 && as_reals(tmp, true, &d)) st = mul_reals(&d, &d, scale);
  }
  if (st != GL_OK) gl_array_release(tmp);
  return st;
}

gl_status gl_cpu_fft(const gl_array *out, const gl_array *in, const gl_fft_args *a) {
  GL_TRY(fx_load(out->dtype == GL_COMPLEX128 || out->dtype == GL_FLOAT64));
  bool negative = false;
  for (int d = 0; d < in->ndim; d++) negative |= in->strides[d] < 0 && in->shape[d] > 1;
  gl_array tmp = { 0 };
  const gl_array *src = in;
  double post = a->scale;
  if (negative || a->kind == GL_FFT_C2R) {
    GL_TRY(contiguous_copy(&tmp, in, a->scale));
    src = &tmp;
    post = 1;
  }
  fx_desc d;
  fx_describe(&d, a, src, out);
  gl_status st = fx_execute(&d, gl_array_data(src), gl_array_data(out), src == in);
  if (st == GL_ENOTSUP && src == in) {           /* a layout FFTW will not leave intact */
    st = contiguous_copy(&tmp, in, a->scale);
    if (st == GL_OK) {
      src = &tmp;
      post = 1;
      fx_describe(&d, a, src, out);
      st = fx_execute(&d, gl_array_data(src), gl_array_data(out), false);
    }
  }
  gl_array_release(&tmp);
  gl_array v;
  if (st == GL_OK && post != 1 && as_reals(out, true, &v)) st = mul_reals(&v, &v, post);
  return st;
}

#endif
