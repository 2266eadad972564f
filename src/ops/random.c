/*
** random.c — random arrays: check the distribution's parameters and dtype, allocate,
** let the device's backend fill from the generator's counter blocks, then advance the
** generator by the blocks the call used. kernels/philox.h documents which block and
** which words each element reads, so the same (seed, call sequence) gives the same
** numbers on every device.
*/
#include <math.h>
#include <string.h>
#include "ops.h"
#include "../../kernels/philox.h"
#include "../../kernels/random_dist.h"

/* What a distribution makes, for messages. */
static const char *const dist_what[GL_NRAND] = {
  "uniform numbers", "normal numbers", "random integers", "bernoulli draws", "a permutation",
  "samples",
};

/* The backend of dev, when it has random fills at all. */
static gl_status random_entry(gl_device dev, const gl_backend **out) {
  GL_TRY(gl_backend_for(dev, out));
  if ((*out)->random != NULL) return GL_OK;
  char dn[16];
  return gl_fail(GL_ENOTSUP, "random numbers are not supported on %s", gl_device_name(dev, dn));
}

/* The backend of dev, when it fills dtype dt from 'dist' (its supports() says), before
** anything is allocated. */
static gl_status random_backend(gl_device dev, gl_rand_dist dist, gl_dtype dt, const gl_backend **out) {
  GL_TRY(random_entry(dev, out));
  if (!(*out)->supports(GL_OP_RANDOM, (int)dist, dt)) {
    char dn[16];
    char list[160];
    return gl_fail(GL_EINVAL, "dtype %s is not supported for %s on %s (expected %s)", gl_dtypes[dt].name,
                   dist_what[dist], gl_device_name(dev, dn),
                   gl_supported_dtypes(dev, GL_OP_RANDOM, (int)dist, list, sizeof list));
  }
  return GL_OK;
}

/* Counter blocks a fill of n elements reads: ceil(n * words / 4). */
static uint64_t blocks_used(gl_rand_dist dist, gl_dtype dt, int64_t n, uint64_t range) {
  uint64_t w = (uint64_t)gl_rand_words_per_element((int)dist, dt == GL_FLOAT64, range);
  return ((uint64_t)n * w + 3) / 4;
}

/* Allocates 'out' on dev and fills it with b (random_backend's); the generator advances
** only on success. */
static gl_status fill_new(const gl_backend *b, gl_array *out, gl_rng *g, gl_rand_dist dist, gl_rand_req *rq,
                          gl_dtype dt, int ndim, const int64_t *shape, gl_device dev) {
  GL_TRY(gl_array_alloc(out, dt, ndim, shape, dev));
  rq->seed = g->seed;
  rq->offset = g->offset;
  gl_status st = out->size ? b->random(dist, out, rq) : GL_OK;
  if (st != GL_OK) { gl_array_release(out); return st; }
  g->offset += blocks_used(dist, dt, out->size, rq->range);
  return GL_OK;
}

gl_status gl_op_random(gl_array *out, gl_rng *g, gl_rand_dist dist, double a, double b, gl_dtype dt,
                       int ndim, const int64_t *shape, gl_device dev) {
  if (dist != GL_RAND_UNIFORM && dist != GL_RAND_NORMAL)
    return gl_fail(GL_EINVAL, "%s is not a float distribution", gl_rand_dist_name[dist]);
  const gl_backend *be;
  GL_TRY(random_backend(dev, dist, dt, &be));
  if (dist == GL_RAND_UNIFORM) {
    if (!isfinite(a) || !isfinite(b) || !isfinite(b - a))
      return gl_fail(GL_EINVAL, "bounds must be finite (got %g and %g)", a, b);
    if (a > b) return gl_fail(GL_EINVAL, "lo (%g) is greater than hi (%g)", a, b);
  } else {
    if (!isfinite(a)) return gl_fail(GL_EINVAL, "mean must be finite (got %g)", a);
    if (!isfinite(b) || b < 0) return gl_fail(GL_EINVAL, "std must be finite and >= 0 (got %g)", b);
  }
  gl_rand_req rq = { 0 };
  rq.a = a;
  rq.b = b;
  return fill_new(be, out, g, dist, &rq, dt, ndim, shape, dev);
}

gl_status gl_op_randint(gl_array *out, gl_rng *g, int64_t lo, int64_t hi, gl_dtype dt, int ndim,
                        const int64_t *shape, gl_device dev) {
  const gl_backend *be;
  GL_TRY(random_backend(dev, GL_RAND_INTEGERS, dt, &be));
  if (gl_dtypes[dt].kind == GL_KIND_UINT && gl_dtypes[dt].size == 8) {     /* bounds past INT64_MAX */
    if ((uint64_t)lo > (uint64_t)hi)
      return gl_fail(GL_EINVAL, "lo (%llu) is greater than hi (%llu)", (unsigned long long)lo, (unsigned long long)hi);
  } else {
    if (lo > hi) return gl_fail(GL_EINVAL, "lo (%lld) is greater than hi (%lld)", (long long)lo, (long long)hi);
    if (lo < gl_dtypes[dt].min || hi > gl_dtypes[dt].max)
      return gl_fail(GL_EINVAL, "bounds %lld..%lld do not fit %s", (long long)lo, (long long)hi, gl_dtypes[dt].name);
  }
  gl_rand_req rq = { 0 };
  rq.lo = lo;
  rq.range = (uint64_t)hi - (uint64_t)lo + 1;       /* 0 stands for 2^64 */
  return fill_new(be, out, g, GL_RAND_INTEGERS, &rq, dt, ndim, shape, dev);
}

/* p as a contiguous float64 array of 'shape' on dev, checked to lie in [0, 1]. */
static gl_status prepare_p(gl_array *pd, const gl_array *p, int ndim, const int64_t *shape, gl_device dev) {
  if (!gl_device_eq(gl_array_device(p), dev)) {
    char da[16], db[16];
    return gl_fail(GL_EINVAL, "p is on %s but the result goes to %s; move it with :to('%s')",
                   gl_device_name(gl_array_device(p), da), gl_device_name(dev, db), gl_device_name(dev, db));
  }
  if (p->dtype == GL_BOOL || !(gl_dtype_is_float((gl_dtype)p->dtype) || gl_dtype_is_int((gl_dtype)p->dtype)))
    return gl_fail(GL_EINVAL, "p must be a numeric array, got %s", gl_dtypes[p->dtype].name);
  gl_array v = { 0 };
  gl_array_view_of(&v, p);
  gl_status st = gl_view_expand(&v, ndim, shape);
  if (st == GL_OK) st = gl_op_copy(pd, &v, GL_FLOAT64, dev);
  gl_array_release(&v);
  GL_TRY(st);
  if (pd->size == 0) return GL_OK;
  gl_array lo = { 0 }, hi = { 0 };
  gl_scalar slo, shi;
  st = gl_op_reduce(&lo, GL_R_MIN, pd, NULL, -1, false, -1, 0);
  if (st == GL_OK) st = gl_op_reduce(&hi, GL_R_MAX, pd, NULL, -1, false, -1, 0);
  if (st == GL_OK) st = gl_op_get(&lo, 0, &slo);
  if (st == GL_OK) st = gl_op_get(&hi, 0, &shi);
  gl_array_release(&lo);
  gl_array_release(&hi);
  if (st == GL_OK && !(slo.f >= 0 && shi.f <= 1))
    st = gl_fail(GL_EINVAL, "probabilities must lie in [0, 1] (got values from %g to %g)", slo.f, shi.f);
  if (st != GL_OK) gl_array_release(pd);
  return st;
}

gl_status gl_op_bernoulli(gl_array *out, gl_rng *g, double p, const gl_array *parr, gl_dtype dt,
                          int ndim, const int64_t *shape, gl_device dev) {
  const gl_backend *be;
  GL_TRY(random_backend(dev, GL_RAND_BERNOULLI, dt, &be));
  gl_rand_req rq = { 0 };
  gl_array pd = { 0 };
  if (parr) {
    GL_TRY(prepare_p(&pd, parr, ndim, shape, dev));
    rq.p = &pd;
  } else {
    if (!(p >= 0 && p <= 1)) return gl_fail(GL_EINVAL, "p must lie in [0, 1] (got %g)", p);
    rq.a = p;
  }
  gl_status st = fill_new(be, out, g, GL_RAND_BERNOULLI, &rq, dt, ndim, shape, dev);
  gl_array_release(&pd);
  return st;
}

gl_status gl_op_permutation(gl_array *out, gl_rng *g, int64_t n, int64_t k, gl_device dev) {
  if (n < 0) return gl_fail(GL_EINVAL, "n must be >= 0 (got %lld)", (long long)n);
  if (k < 0) return gl_fail(GL_EINVAL, "sample size must be >= 0 (got %lld)", (long long)k);
  if (k > n)
    return gl_fail(GL_EINVAL, "cannot take %lld samples from %lld without replacement", (long long)k, (long long)n);
  const gl_backend *b;
  GL_TRY(random_entry(dev, &b));
  /* a serial walk: always on the host (the cpu backend), then copied to dev; it needs
  ** all n values even when k are kept, so n must be a possible int64 array */
  size_t walk;
  GL_TRY(gl_nbytes(n, GL_INT64, &walk));
  const gl_backend *cpu = gl_backend_get(GL_CPU);
  gl_array h = { 0 };
  GL_TRY(gl_array_alloc(&h, GL_INT64, 1, &k, gl_cpu()));
  gl_rand_req rq = { 0 };
  rq.seed = g->seed;
  rq.offset = g->offset;
  rq.lo = 1;
  rq.range = (uint64_t)n;
  gl_status st = n > 0 ? cpu->random(GL_RAND_PERMUTATION, &h, &rq) : GL_OK;
  if (st == GL_OK && dev.type != GL_CPU) {
    st = gl_op_copy(out, &h, GL_INT64, dev);
    gl_array_release(&h);
  } else if (st == GL_OK) {
    *out = h;
  } else {
    gl_array_release(&h);
  }
  if (st == GL_OK) {
    int64_t steps = k < n ? k : n - 1;
    if (steps > 0) g->offset += blocks_used(GL_RAND_PERMUTATION, GL_INT64, steps, 0);
  }
  return st;
}

gl_status gl_op_shuffle(const gl_array *x, gl_rng *g) {
  if (x->ndim == 0) return gl_fail(GL_EINVAL, "cannot shuffle a 0-d array");
  GL_TRY(gl_array_writable(x, NULL));          /* refused before the work; assign counts the write */
  if (x->shape[0] < 2) return GL_OK;
  gl_array perm = { 0 }, tmp = { 0 };
  gl_rng g2 = *g;
  GL_TRY(gl_op_permutation(&perm, &g2, x->shape[0], x->shape[0], gl_array_device(x)));
  gl_status st = gl_op_take(&tmp, x, 0, &perm);
  if (st == GL_OK) st = gl_op_assign(x, &tmp);
  gl_array_release(&perm);
  gl_array_release(&tmp);
  if (st == GL_OK) *g = g2;
  return st;
}

/* ---- samplers (kernels/random_dist.h) ------------------------------------------------ */

/* The samplers, numbered as GL_RD_*: name, parameter count and names, whether integer. */
static const struct sampler {
  const char *name;
  int np;
  bool discrete;
  const char *par[3];
} samplers[GL_NRDIST] = {
  [GL_RD_GAMMA] = { "gamma", 2, false, { "shape", "scale" } },
  [GL_RD_BETA] = { "beta", 2, false, { "a", "b" } },
  [GL_RD_POISSON] = { "poisson", 1, true, { "lam" } },
  [GL_RD_BINOMIAL] = { "binomial", 2, true, { "n", "p" } },
  [GL_RD_EXPONENTIAL] = { "exponential", 1, false, { "scale" } },
  [GL_RD_CHISQUARE] = { "chisquare", 1, false, { "df" } },
  [GL_RD_NONCENTRAL_CHISQUARE] = { "noncentral_chisquare", 2, false, { "df", "nonc" } },
  [GL_RD_F] = { "f", 2, false, { "dfnum", "dfden" } },
  [GL_RD_GEOMETRIC] = { "geometric", 1, true, { "p" } },
  [GL_RD_GUMBEL] = { "gumbel", 2, false, { "loc", "scale" } },
  [GL_RD_HYPERGEOMETRIC] = { "hypergeometric", 3, true, { "ngood", "nbad", "nsample" } },
  [GL_RD_LAPLACE] = { "laplace", 2, false, { "loc", "scale" } },
  [GL_RD_LOGISTIC] = { "logistic", 2, false, { "loc", "scale" } },
  [GL_RD_LOGNORMAL] = { "lognormal", 2, false, { "mean", "sigma" } },
  [GL_RD_LOGSERIES] = { "logseries", 1, true, { "p" } },
  [GL_RD_NEGATIVE_BINOMIAL] = { "negative_binomial", 2, true, { "n", "p" } },
  [GL_RD_PARETO] = { "pareto", 1, false, { "a" } },
  [GL_RD_POWER] = { "power", 1, false, { "a" } },
  [GL_RD_RAYLEIGH] = { "rayleigh", 1, false, { "scale" } },
  [GL_RD_STANDARD_CAUCHY] = { "standard_cauchy", 0, false, { NULL } },
  [GL_RD_STANDARD_T] = { "standard_t", 1, false, { "df" } },
  [GL_RD_TRIANGULAR] = { "triangular", 3, false, { "left", "mode", "right" } },
  [GL_RD_VONMISES] = { "vonmises", 2, false, { "mu", "kappa" } },
  [GL_RD_WALD] = { "wald", 2, false, { "mean", "scale" } },
  [GL_RD_WEIBULL] = { "weibull", 1, false, { "a" } },
  [GL_RD_ZIPF] = { "zipf", 1, true, { "a" } },
  [GL_RD_NORMAL] = { "normal", 2, false, { "loc", "scale" } },
};

int gl_sampler_count(void) { return GL_NRDIST; }
const char *gl_sampler_name(int kind) { return kind >= 0 && kind < GL_NRDIST ? samplers[kind].name : NULL; }
int gl_sampler_nparams(int kind) { return samplers[kind].np; }
const char *gl_sampler_param(int kind, int k) { return samplers[kind].par[k]; }
bool gl_sampler_discrete(int kind) { return samplers[kind].discrete; }

#define POISSON_LAM_MAX 9.2233720064847708e18     /* NumPy's: INT64_MAX - 10 sqrt(INT64_MAX) */

/* Checks one set of parameters (v[0..2]) of sampler kind, as NumPy's: GL_OK or a message. */
static gl_status check_params(int kind, const double *v) {
  const struct sampler *s = &samplers[kind];
  for (int k = 0; k < s->np; k++)
    if (isnan(v[k])) return gl_fail(GL_EINVAL, "%s must not be NaN", s->par[k]);
#define NEED(cond, k, what) \
  if (!(cond)) return gl_fail(GL_EINVAL, "%s must be %s (got %g)", s->par[k], what, v[k])
  double a = v[0], b = v[1], c = v[2];
  switch (kind) {
    case GL_RD_GAMMA: NEED(a >= 0 && isfinite(a), 0, ">= 0"); NEED(b >= 0 && isfinite(b), 1, ">= 0"); break;
    case GL_RD_BETA: NEED(a > 0 && isfinite(a), 0, "> 0"); NEED(b > 0 && isfinite(b), 1, "> 0"); break;
    case GL_RD_POISSON: NEED(a >= 0 && a <= POISSON_LAM_MAX, 0, "in [0, 9.2e18]"); break;
    case GL_RD_BINOMIAL:
      NEED(a >= 0 && a == floor(a) && a < 0x1p63, 0, "an integer >= 0"); NEED(b >= 0 && b <= 1, 1, "in [0, 1]"); break;
    case GL_RD_EXPONENTIAL: case GL_RD_RAYLEIGH: NEED(a >= 0 && isfinite(a), 0, ">= 0"); break;
    case GL_RD_CHISQUARE: case GL_RD_STANDARD_T: NEED(a > 0, 0, "> 0"); break;
    case GL_RD_NONCENTRAL_CHISQUARE: NEED(a > 0, 0, "> 0"); NEED(b >= 0 && isfinite(b), 1, ">= 0"); break;
    case GL_RD_F: NEED(a > 0, 0, "> 0"); NEED(b > 0, 1, "> 0"); break;
    case GL_RD_GEOMETRIC: NEED(a > 0 && a <= 1, 0, "in (0, 1]"); break;
    case GL_RD_GUMBEL: case GL_RD_LAPLACE: case GL_RD_LOGISTIC: case GL_RD_LOGNORMAL: case GL_RD_NORMAL:
      NEED(isfinite(a), 0, "finite"); NEED(b >= 0 && isfinite(b), 1, ">= 0"); break;
    case GL_RD_HYPERGEOMETRIC:
      NEED(a >= 0 && a == floor(a), 0, "an integer >= 0"); NEED(b >= 0 && b == floor(b), 1, "an integer >= 0");
      NEED(c >= 0 && c == floor(c), 2, "an integer >= 0");
      if (!(a + b < 1e9)) return gl_fail(GL_EINVAL, "ngood + nbad must be below 1e9 (got %g)", a + b);
      if (c > a + b) return gl_fail(GL_EINVAL, "nsample (%g) is greater than ngood + nbad (%g)", c, a + b);
      break;
    case GL_RD_LOGSERIES: NEED(a >= 0 && a < 1, 0, "in [0, 1)"); break;
    case GL_RD_NEGATIVE_BINOMIAL: NEED(a > 0 && isfinite(a), 0, "> 0"); NEED(b > 0 && b <= 1, 1, "in (0, 1]"); break;
    case GL_RD_PARETO: case GL_RD_POWER: NEED(a > 0, 0, "> 0"); break;
    case GL_RD_TRIANGULAR:
      for (int k = 0; k < 3; k++) NEED(isfinite(v[k]), k, "finite");
      if (!(a <= b && b <= c)) return gl_fail(GL_EINVAL, "need left <= mode <= right (got %g, %g, %g)", a, b, c);
      if (!(a < c)) return gl_fail(GL_EINVAL, "left must be less than right (got %g and %g)", a, c);
      break;
    case GL_RD_VONMISES: NEED(isfinite(a), 0, "finite"); NEED(b >= 0 && isfinite(b), 1, ">= 0"); break;
    case GL_RD_WALD: NEED(a > 0 && isfinite(a), 0, "> 0"); NEED(b > 0 && isfinite(b), 1, "> 0"); break;
    case GL_RD_WEIBULL: NEED(a >= 0 && isfinite(a), 0, ">= 0"); break;
    case GL_RD_ZIPF: NEED(a > 1, 0, "> 1"); break;
    default: break;
  }
#undef NEED
  return GL_OK;
}

gl_status gl_op_sample(gl_array *out, gl_rng *g, int kind, const double par[3], const gl_array *const parr[3],
                       gl_dtype dt, int ndim, const int64_t *shape, gl_device dev) {
  if (kind < 0 || kind >= GL_NRDIST) return gl_fail(GL_EINVAL, "unknown sampler %d", kind);
  const struct sampler *sm = &samplers[kind];
  const gl_backend *be;
  gl_dtype made = sm->discrete ? GL_INT64 : GL_FLOAT64;
  GL_TRY(random_backend(dev, GL_RAND_SAMPLER, made, &be));
  if (!(gl_dtype_is_float(dt) || (gl_dtype_is_int(dt) && dt != GL_BOOL)) || (!sm->discrete && !gl_dtype_is_float(dt))) {
    char dn[16];
    return gl_fail(GL_EINVAL, "dtype %s is not supported by %s on %s (expected %s)", gl_dtypes[dt].name, sm->name,
                   gl_device_name(dev, dn), sm->discrete ? "an integer or float dtype" : "a float dtype");
  }
  double v[3] = { par[0], par[1], par[2] };
  gl_array pd[3] = { { 0 } }, ph[3] = { { 0 } };
  gl_rand_req rq = { 0 };
  gl_status st = GL_OK;
  int64_t n;
  GL_TRY(gl_shape_size(ndim, shape, dt, &n));        /* "array is too big" before any product wraps */
  /* per-element parameters: float64 of the result's shape on dev, and on the host to check */
  for (int k = 0; k < sm->np && st == GL_OK; k++) {
    if (!parr[k]) continue;
    const gl_array *p = parr[k];
    if (!gl_device_eq(gl_array_device(p), dev)) {
      char da[16], db[16];
      st = gl_fail(GL_EINVAL, "%s is on %s but the result goes to %s; move it with :to('%s')", sm->par[k],
                   gl_device_name(gl_array_device(p), da), gl_device_name(dev, db), gl_device_name(dev, db));
      break;
    }
    if (p->dtype == GL_BOOL || gl_dtype_is_complex((gl_dtype)p->dtype) ||
        !(gl_dtype_is_float((gl_dtype)p->dtype) || gl_dtype_is_int((gl_dtype)p->dtype))) {
      st = gl_fail(GL_EINVAL, "%s must be a real numeric array, got %s", sm->par[k], gl_dtypes[p->dtype].name);
      break;
    }
    gl_array vw = { 0 };
    gl_array_view_of(&vw, p);
    st = gl_view_expand(&vw, ndim, shape);
    if (st == GL_OK) st = gl_op_copy(&pd[k], &vw, GL_FLOAT64, dev);
    gl_array_release(&vw);
    if (st == GL_OK) {
      if (dev.type != GL_CPU) st = gl_op_copy(&ph[k], &pd[k], GL_FLOAT64, gl_cpu());
      else gl_array_view_of(&ph[k], &pd[k]);
    }
    rq.pa[k] = &pd[k];
  }
  if (st == GL_OK) {
    bool any = false;
    for (int k = 0; k < sm->np; k++) any = any || parr[k];
    if (!any) st = check_params(kind, v);         /* (array parameters of no elements: nothing to check) */
    for (int64_t i = 0; any && i < n && st == GL_OK; i++) {
      for (int k = 0; k < sm->np; k++) if (parr[k]) v[k] = ((const double *)gl_array_data(&ph[k]))[i];
      st = check_params(kind, v);
    }
  }
  if (st == GL_OK) {
    rq.kind = kind;
    rq.a = par[0];
    rq.b = par[1];
    rq.c = par[2];
    rq.seed = g->seed;
    rq.offset = g->offset;
    gl_array tmp = { 0 };
    st = gl_array_alloc(dt == made ? out : &tmp, made, ndim, shape, dev);
    if (st == GL_OK && n > 0) st = be->random(GL_RAND_SAMPLER, dt == made ? out : &tmp, &rq);
    if (st == GL_OK && dt != made) st = gl_op_copy(out, &tmp, dt, dev);
    if (dt != made) gl_array_release(&tmp);
    else if (st != GL_OK) gl_array_release(out);
    if (st == GL_OK) g->offset += (uint64_t)n;
  }
  for (int k = 0; k < 3; k++) { gl_array_release(&pd[k]); gl_array_release(&ph[k]); }
  return st;
}
