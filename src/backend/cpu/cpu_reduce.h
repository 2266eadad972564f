/*
** cpu_reduce.h — what the CPU's reductions (cpu_reduce.c), scans (cpu_scan.c) and their
** lane kernels (cpu_reduce_kernels.c) share; private to src/backend/cpu.
**
** Every element is read in a "compute type" (CT): float for float32/float16/bfloat16
** results, double for float64, int64 for integer results (accumulated as uint64, so
** overflow wraps as in NumPy instead of being undefined). The kernels exist once per CT;
** an input whose storage is not the CT (float16, int32, a float64 input summed into
** float32, ...) is converted in chunks of CHUNK elements into a buffer first.
*/
#ifndef GL_CPU_REDUCE_H
#define GL_CPU_REDUCE_H

#include "cpu.h"

/* Lane vectors are LANE_BYTES: 64 floats, 32 doubles or int64s (four 512-bit registers,
** enough independent adds to hide their latency). */
#define LANE_BYTES 256
#define L32 (LANE_BYTES / 4)
#define L64 (LANE_BYTES / 8)
/* Conversion chunk (elements; a multiple of every block size) and outer-shape row width. */
#define CHUNK 2048
#define ROW_W 4096
/* Rows (of ROW_W elements at most) of a row-wise pass between two polls for a stop. */
#define ROW_POLL 64

typedef enum gl_ct { CT_F32, CT_F64, CT_I64, NCT } gl_ct;

/* The CT a dtype computes in. */
static inline gl_ct gl_ct_of(gl_dtype t) {
  if (t == GL_FLOAT64) return CT_F64;
  if (gl_dtype_is_float(t)) return CT_F32;
  return CT_I64;
}

static inline size_t gl_ct_size(gl_ct ct) { return ct == CT_F32 ? sizeof(float) : 8; }

/* A finished value: f for float CTs (float results already rounded to float), i for
** int64 ones. */
typedef union rval { double f; int64_t i; } rval;

/* Kernels by what they compute. */
typedef enum gl_rkernel {
  K_SUM, K_SUMABS, K_SUMSQ, K_SUMDEV, K_SUMEXP, K_SUMPOW, K_SUMNZ,  /* sums of a map */
  K_PROD, K_MAX, K_MIN, K_MAXABS, K_MINABS, K_ALL, K_ANY,
  NKID
} gl_rkernel;

static inline bool gl_rk_is_sum(gl_rkernel k) { return k <= K_SUMNZ; }

/* One lane vector of any CT (all/any keep int32 lanes for float32, int64 ones otherwise). */
typedef union lanes {
  _Alignas(64) float f[L32];
  double d[L64];
  uint64_t u[L64];
  int64_t i[L64];
  int32_t b[L32];
} lanes;

/* The state of one reduction pass over a vector: sums keep a cascade of lane vectors (bit
** k of n set: level k holds a partial of 2^k blocks); the other kernels one in lv[0]. */
typedef struct kstate {
  uint64_t n;
  lanes lv[64];
} kstate;

/* A buffer of CHUNK elements of any CT. */
typedef union ctbuf {
  _Alignas(64) float f[CHUNK];
  double d[CHUNK];
  int64_t i[CHUNK];
  uint64_t u[CHUNK];
} ctbuf;

/* ---- lane kernels (cpu_reduce_kernels.c); k is a gl_rkernel the CT has ---------------- */

/* A pass's state before its first element. */
void gl_rk_init(gl_ct ct, gl_rkernel k, kstate *st);
/* Reduces n elements x[0], x[s], ... (of the CT) into st; a: a per-output parameter (the
** mean of var, the shift of logsumexp), p: the norm's order. */
void gl_rk_vec(gl_ct ct, gl_rkernel k, kstate *st, const void *x, int64_t s, int64_t n, double a,
               double p);
/* The finished values of a pass: out[0] for a vector of one output, out[0..w) for one
** interleaving w outputs (a power of two up to L64; element i of output i mod w). */
void gl_rk_fin(gl_ct ct, gl_rkernel k, const kstate *st, int w, rval *out);
/* Row form (the outer shape): acc[j] (op)= map(x[j*s]) for j < w; first: acc[j] = map(x[j*s]).
** ac: per-column parameters (CT; NULL where the map takes none), p: the norm's order. acc
** holds the CT's accumulator, or uint8 for all/any. */
void gl_rk_row(gl_ct ct, gl_rkernel k, void *acc, const void *x, int64_t s, int64_t w,
               const void *ac, double p, bool first);
/* d[i] += s[i] for i < n, in the CT's accumulator. */
void gl_rk_vadd(gl_ct ct, void *d, const void *s, int64_t n);
/* Accumulators (the CT's) -> finished values. */
void gl_rk_to_rvals(gl_ct ct, rval *r, const void *acc, int64_t n);
/* The first i < n with x[i*s] == m (or NaN when m is NaN), -1 if none. */
int64_t gl_rk_find(gl_ct ct, const void *x, int64_t s, int64_t n, rval m);
/* best/idx over rows (argmax with max, else argmin): the first row (k == its number)
** initialises, later rows replace on a strict improvement (or a first NaN), so ties keep
** the first position as NumPy does. */
void gl_rk_argrow(gl_ct ct, bool max, void *best, int64_t *idx, const void *x, int64_t s,
                  int64_t w, int64_t k, bool first);

/* ---- conversions (cpu_reduce_kernels.c) ------------------------------------------------ */

/* n elements x[0], x[s], ... of dtype dt -> a contiguous CT buffer. */
typedef void (*gl_ct_load_fn)(void *out, const void *x, int64_t s, int64_t n);
/* A contiguous CT buffer (accumulator representation) -> d[0], d[ds], ... of a dtype. */
typedef void (*gl_ct_store_fn)(void *d, int64_t ds, const void *buf, int64_t n);
/* Finished values -> d[0], d[ds], ... of a dtype (isint: r holds int64s). */
typedef void (*gl_rval_store_fn)(void *d, int64_t ds, const rval *r, int64_t n, bool isint);
extern const gl_ct_load_fn gl_ct_loads[GL_NDTYPE][NCT];
extern const gl_ct_store_fn gl_ct_stores[GL_NDTYPE][NCT];
extern const gl_rval_store_fn gl_rval_stores[GL_NDTYPE];

/* ---- complex sources (cpu_reduce_complex.c) ---------------------------------------------- */

/* Whether gl_cpu_reduce_complex makes op: prod, max, min, argmax, argmin. */
bool gl_cpu_has_reduce_complex(gl_redop op);
/* op over a complex src into dst (complex, or int64 positions), as gl_cpu_reduce. */
gl_status gl_cpu_reduce_complex(gl_redop op, const gl_array *dst, const gl_array *src);
/* cumprod of a complex src, as gl_cpu_scan. */
gl_status gl_cpu_scan_complex(gl_redop op, const gl_array *dst, const gl_array *src, int axis);

/* Offsets (src, dst) of the o-th combination of dims d[0..n-1] in C order. */
static inline void gl_rdims_offset(const gl_rdim *d, int n, int64_t o, int64_t *so, int64_t *dof) {
  int64_t s = 0, t = 0;
  for (int k = n - 1; k >= 0 && o > 0; k--) {
    int64_t i = o % d[k].n;
    o /= d[k].n;
    s += i * d[k].ss;
    t += i * d[k].ds;
  }
  *so = s;
  *dof = t;
}

#endif
